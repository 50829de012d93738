"""A demanding new user, from the README onward: names typed in another case, shares typed as percentages, a step
token budget no engine runs, the ranges of analyze and sweep, kernel tables that predate a column. Each pinned by
the test that failed before its fix."""
import pytest

from conftest import one_line_error, run_cli


# ------------------------------------------------------------------ dtype, phase and engine in any case
def test_dtype_and_phase_are_read_in_any_case():
    """`--dtype FP8` said "unknown dtype 'FP8' (did you mean: fp8 …)" and `--phase Decode` the same: the names
    are read in any case, the estimate the lower-case one's."""
    import ironlaw
    typed = ironlaw.analyze("llama3-8b", on="h100", dtype="FP8", phase="Decode", seq=128)
    lower = ironlaw.analyze("llama3-8b", on="h100", dtype="fp8", phase="decode", seq=128)
    assert typed.time_s == lower.time_s and typed.graph.dtype == "fp8" and typed.graph.phase == "decode"


def test_engine_and_kv_dtype_are_read_in_any_case():
    import ironlaw
    srv = ironlaw.serve("llama3-8b", on="h100", engine="VLLM", kv_dtype="FP8", dtype="FP8")
    assert srv.engine.name == "vllm" and srv.to_dict()["kv_dtype"] == "fp8"


def test_an_unknown_name_is_quoted_as_typed():
    line = one_line_error(run_cli("analyze", "llama3-8b", "--on", "h100", "--dtype", "FP9"))
    assert "unknown dtype 'FP9'" in line and "fp8" in line


def test_the_command_line_reads_the_names_in_any_case():
    r = run_cli("analyze", "llama3-8b", "--on", "h100", "--dtype", "BF16", "--phase", "DECODE", "--seq", "128",
                "--format", "json")
    assert r.rc == 0, r.err
    assert '"phase": "decode"' in r.out


# ------------------------------------------------------------------ a share as a percentage
def test_prefix_hit_takes_a_percentage():
    """`serve --prefix-hit 50%` said "Invalid value for '--prefix-hit': '50%' is not a valid float."; 50% is 0.5,
    and a value that is neither names both spellings."""
    r = run_cli("serve", "llama3-8b", "--on", "h100", "--prefix-hit", "50%", "--format", "json")
    assert r.rc == 0, r.err
    import json
    assert json.loads(r.out)["prefix"]["new_tokens"] == 512
    line = one_line_error(run_cli("serve", "llama3-8b", "--on", "h100", "--prefix-hit", "half"))
    assert "takes a fraction such as 0.5 or a percentage such as 50%, got 'half'" in line


def test_a_percentage_out_of_range_is_refused_as_typed():
    line = one_line_error(run_cli("serve", "llama3-8b", "--on", "h100", "--prefix-hit", "150%"))
    assert line.endswith("got 150%")


# ------------------------------------------------------------------ a step token budget no engine runs
def test_a_budget_under_one_kv_block_is_refused_for_tensorrt_llm():
    """`serve --max-throughput --max-num-tokens 1` printed a run of 395 sequences in flight at 6 tokens/s, each
    step "0 decode + 1 prompt tokens": TensorRT-LLM chunks a prompt in whole KV blocks, so a budget under one
    holds no chunk."""
    import ironlaw
    from ironlaw.core.errors import IronlawError
    with pytest.raises(IronlawError, match=r"^--max-num-tokens 1 holds no chunk of a 1024-token prompt: .*"
                                           r"give --max-num-tokens 32 or more$"):
        ironlaw.serve("llama3-8b", on="h100", max_throughput=True, max_num_tokens=1)


def test_a_budget_under_vllms_max_num_seqs_is_refused():
    import ironlaw
    from ironlaw.core.errors import IronlawError
    with pytest.raises(IronlawError, match=r"^--max-num-tokens 100 is fewer tokens than --max-batch 128: .*"
                                           r"give --max-num-tokens 128 or more, or --max-batch 100 or less$"):
        ironlaw.serve("llama3-8b", on="h100", max_throughput=True, engine="vllm", max_num_tokens=100, max_batch=128)


def test_the_command_line_refuses_the_budget_in_one_line():
    line = one_line_error(run_cli("serve", "llama3-8b", "--on", "h100", "--max-throughput", "--max-num-tokens", "1"))
    assert "--max-num-tokens 1 holds no chunk" in line


# ------------------------------------------------------------------ analyze and sweep take one range
def test_sweep_takes_the_sequence_range_analyze_takes():
    """`sweep --seq 5000000` passed the list's range (1 … 16,777,216) and was refused by the model as
    "--seq array([[5000000.]]) is absurd (limit 4,194,304)"; the list takes analyze's range, and a grid given as
    an array names its entry."""
    line = one_line_error(run_cli("sweep", "llama3-8b", "--on", "h100", "--phase", "decode", "--seq", "5000000",
                                  "--batch", "1"))
    assert line == "ironlaw: error: --seq '5000000': 5000000 is out of range (1 … 4,194,304)"
    import numpy as np
    import ironlaw
    from ironlaw.core.errors import IronlawError
    with pytest.raises(IronlawError, match=r"^--seq 5000000 is out of range \(1 … 4,194,304\)$"):
        ironlaw.analyze("llama3-8b", on="h100", phase="decode", seq=np.array([128, 5_000_000]))
    with pytest.raises(IronlawError, match=r"^--batch must be a positive whole number, got 0$"):
        ironlaw.analyze("llama3-8b", on="h100", phase="decode", seq=128, batch=np.array([1, 0, 3]))


def test_a_series_past_the_range_names_its_last_value():
    line = one_line_error(run_cli("sweep", "llama3-8b", "--batch", "1,2,...,20000000"))
    assert line == "ironlaw: error: --batch '1,2,...,20000000': 20000000 is out of range (1 … 16,777,216)"


# ------------------------------------------------------------------ kernel tables that predate sliding windows
def _windowless_table(root):
    """A vLLM 0.14.0 context-attention table of the A100 without window_size, as aiconfigurator-core 0.12.0's."""
    attn = root / "a100_sxm" / "attention" / "vllm" / "0.14.0" / "context_attention_perf.csv"
    attn.parent.mkdir(parents=True)
    rows = ["device,batch_size,isl,num_heads,num_key_value_heads,head_dim,attn_dtype,kv_cache_dtype,step,latency"]
    for b in (1, 2, 4, 8):
        for s in (512, 1024, 2048, 4096):
            t_ms = 0.01 + 4 * b * s * s * 32 * 128 / 2 / 200e12 * 1e3
            rows.append(f"NVIDIA A100-SXM4-80GB,{b},{s},32,8,128,bfloat16,bfloat16,0,{t_ms:.6f}")
    attn.write_text("\n".join(rows) + "\n")
    return attn


def test_an_attention_table_without_a_window_column_reads_as_global_attention(tmp_path):
    """`calibrate --kernels DATA/a100_sxm --framework sglang` (or vllm) said "missing column window_size for a
    context_attention table": aiconfigurator-core's A100 tables of SGLang 0.5.10 and vLLM 0.14.0 carry none, and
    time global attention, window 0."""
    pytest.importorskip("pandas")
    from ironlaw.measure.calibrate import kerneltable
    _windowless_table(tmp_path)
    (t,) = kerneltable.read(tmp_path, ops=("context_attention",), gpu="a100", framework="vllm")
    assert len(t.rows) == 16 and set(t.rows["window_size"]) == {0}
    r = run_cli("calibrate", "--kernels", str(tmp_path), "--gpu", "a100", "--framework", "vllm", "--format", "json")
    assert r.rc == 0, r.err
    assert "context" in r.out


# ------------------------------------------------------------------ the library's switches and file names
@pytest.mark.parametrize("fn, kw", [("analyze", dict(serial="no")), ("serve", dict(max_throughput="no")),
                                    ("compare", dict(serial="yes", what_if="fusion=elementwise"))])
def test_a_switch_given_a_text_is_refused(fn, kw):
    """`ironlaw.analyze(…, serial="no")` priced the serial composition ("no" is a true value) and
    `serve(…, max_throughput="no")` ran the offline scenario: a switch takes True or False."""
    import ironlaw
    from ironlaw.core.errors import IronlawError
    (key, value), = [(k, v) for k, v in kw.items() if k != "what_if"]
    with pytest.raises(IronlawError, match=rf"^{key}= is a switch, True or False, got '{value}'$"):
        getattr(ironlaw, fn)("llama3-8b", on="h100", **kw)


def test_a_switch_takes_numpys_bool():
    import numpy as np
    import ironlaw
    assert ironlaw.analyze("llama3-8b", on="h100", serial=np.bool_(True)).time_s > 0


def test_a_plot_that_is_no_file_name_is_refused():
    """`ironlaw.analyze(…, plot=5)` raised TypeError ("expected str, bytes or os.PathLike object")."""
    import ironlaw
    from ironlaw.core.errors import IronlawError
    with pytest.raises(IronlawError, match=r"^--plot takes a file name, got 5$"):
        ironlaw.analyze("llama3-8b", on="h100", plot=5)


# ------------------------------------------------------------------ --format in another case
def test_format_is_read_in_any_case():
    """`--format JSON` said "--format must be one of text, json, md, got 'JSON'" (and an error then printed no
    JSON document)."""
    r = run_cli("hardware", "show", "h100", "--format", "JSON")
    assert r.rc == 0 and '"schema": "ironlaw.hardware/1"' in r.out, r.err
    r = run_cli("analyze", "llama3-8b", "--on", "h1000", "--format=Json")
    assert r.rc == 2 and '"schema": "ironlaw.error/1"' in r.out


# ------------------------------------------------------------------ a list given to analyze's one batch
def test_a_list_of_batches_to_analyze_names_the_sweep():
    """`analyze llama3-8b --batch 1,2,4` said "Invalid value for '--batch': '1,2,4' is not a valid integer."."""
    line = one_line_error(run_cli("analyze", "llama3-8b", "--on", "h100", "--batch", "1,2,4"))
    assert line == ("ironlaw: error: --batch 1,2,4: analyze takes one batch; a list is swept: ironlaw sweep SPEC "
                    "--on HW --batch 1,2,4 (or ironlaw.analyze(…, batch=numpy array))")
    line = one_line_error(run_cli("analyze", "llama3-8b", "--on", "h100", "--batch", "1.5"))
    assert "'1.5' is not a valid integer" in line


def test_a_list_of_sequences_to_search_says_it_searches_one():
    """`search llama3-8b --seq 1,2` said click's "Invalid value for '--seq': '1,2' is not a valid integer."."""
    line = one_line_error(run_cli("search", "llama3-8b", "--on", "h100", "--seq", "1,2"))
    assert line == ("ironlaw: error: --seq 1,2: search takes one seq and searches the layouts for it; run one search "
                    "per value")


def test_every_name_valued_keyword_is_read_in_any_case():
    """`--recompute Full` said "--recompute must be one of none, selective, full, got 'Full'", `--rank
    USD-per-million-tokens` "unknown --rank key", `calibrate --framework VLLM` "--framework must be one of …": each
    name is read in any case; one that is no name in any case stays as typed."""
    from ironlaw.api.options import spelled
    given = {"recompute": "Full", "rank": "USD-per-million-tokens", "framework": "VLLM", "moe_dispatcher": "DeepEP",
             "moe_routing": "Balanced", "stat": "Median", "dtype": "FP9", "kv_dtype": " fp8 ", "batch": "X"}
    assert spelled(given) == {"recompute": "full", "rank": "usd-per-million-tokens", "framework": "vllm",
                              "moe_dispatcher": "deepep", "moe_routing": "balanced", "stat": "median",
                              "dtype": "FP9", "kv_dtype": "fp8", "batch": "X"}


def test_calibrate_reads_its_framework_in_any_case(tmp_path):
    pytest.importorskip("pandas")
    _windowless_table(tmp_path)
    r = run_cli("calibrate", "--kernels", str(tmp_path), "--gpu", "a100", "--framework", "VLLM", "--format", "json")
    assert r.rc == 0, r.err


# ------------------------------------------------------------------ a probed CPU without a bf16 fast path
def test_a_dtype_without_a_fast_path_names_the_fastest():
    """`analyze resnet50 --on local` on a CPU profile whose probe found no bf16 fast path printed 204 s with no
    word of why beyond "175 MFLOP/s bf16 peak"; the line names the device's fastest dtype and the option."""
    from test_probe import fake_probe
    import ironlaw
    from ironlaw.machine import hardware
    from ironlaw.measure.calibrate import build
    from ironlaw.report.text import slow_dtype_line
    hw = hardware.parse_hardware(build.profile(fake_probe()), "probe")
    slow = ironlaw.analyze("resnet50", on=hw, dtype="fp16")
    line = slow_dtype_line(slow)
    assert line.startswith(f"slow dtype: fp16 has no fast path on {hw.name} (") and line.endswith("--dtype bf16")
    assert slow_dtype_line(ironlaw.analyze("resnet50", on=hw, dtype="bf16")) is None
    assert slow_dtype_line(ironlaw.analyze("resnet50", on="h100")) is None
    from ironlaw.report.markdown import render
    assert "- slow dtype: fp16 has no fast path" in render(slow)


def test_a_profile_saved_elsewhere_is_not_said_to_be_read_by_local(tmp_path, monkeypatch):
    """`probe --out /tmp/p.toml` said "use it with `--on local`", and `--on local` then said "no profile yet"."""
    from ironlaw.cli.probe import use_line
    monkeypatch.setenv("IRONLAW_HOME", str(tmp_path / "home"))
    assert use_line(tmp_path / "p.toml") == (f"use it with `--on {tmp_path / 'p.toml'}`; `--on local` reads the "
                                             f"newest profile in {tmp_path / 'home' / 'profiles'}")
    inside = tmp_path / "home" / "profiles" / "x.toml"
    assert use_line(inside) == f"use it with `--on local` or `--on {inside}`"


def test_a_dtypes_other_names_are_read_as_its_own():
    """`--dtype bfloat16` (torch's name) and `--dtype nvfp4` (the help's "fp4 (NVFP4)") were unknown dtypes."""
    from ironlaw.api.options import spelled
    assert spelled({"dtype": "bfloat16", "kv_dtype": "Float16"}) == {"dtype": "bf16", "kv_dtype": "fp16"}
    assert spelled({"dtype": "NVFP4", "phase": "float16"}) == {"dtype": "fp4", "phase": "float16"}


def test_a_hardware_name_with_spaces_or_in_capitals_is_read(tmp_path, monkeypatch):
    """`--on "h100 "` said "unknown hardware 'h100 '" and `--on Local` "unknown hardware 'Local'"."""
    from ironlaw.core.errors import IronlawError
    from ironlaw.machine import hardware
    assert hardware.get(" h100 ").name == "h100"
    monkeypatch.setenv("IRONLAW_HOME", str(tmp_path))
    with pytest.raises(IronlawError, match="^no profile yet; run `ironlaw probe`"):
        hardware.get("Local")


# ------------------------------------------------------------------ a prefix hit that does not shorten the prefill
def test_a_host_bound_cached_prefill_says_so():
    """`serve llama3-8b --on h100 --prefix-hit 50%` printed "prefill 512 of 1024 tokens in 38.7 ms (was 38.7 ms)"
    with its prefill_bottleneck "bandwidth": the eager prefill is bound by its host's launches, as many with the
    cache as without; the document and the line say host."""
    import ironlaw
    d = ironlaw.serve("llama3-8b", on="h100", prefix_hit=0.5).to_dict()["prefix"]
    assert d["prefill_s"] == d["baseline_prefill_s"] and d["prefill_bottleneck"] == "host"
    r = run_cli("serve", "llama3-8b", "--on", "h100", "--prefix-hit", "0.5")
    assert r.rc == 0 and "(was 38.7 ms; host-bound: the step launches as many kernels)" in r.out, r.out
    longer = ironlaw.serve("llama3-8b", on="h100", prefix_hit=0.5, prompt=7000).to_dict()["prefix"]
    assert longer["prefill_s"] < longer["baseline_prefill_s"] and longer["prefill_bottleneck"] != "host"


# ------------------------------------------------------------------ the library's arguments by position
def test_an_option_given_by_position_is_one_line():
    """`ironlaw.analyze("llama3-8b", "h100", 8)` raised Python's bare "analyze() takes from 1 to 2 positional
    arguments but 3 were given", no IronlawError; it now says what goes by position (still a TypeError)."""
    import ironlaw
    with pytest.raises(ironlaw.IronlawError, match=r"^analyze\(\): too many positional arguments; it takes spec, on "
                                                   r"by position and every other option by its keyword \(batch=…\)$"):
        ironlaw.analyze("llama3-8b", "h100", 8)
    with pytest.raises(TypeError, match=r"^serve\(\): missing a required argument: 'spec'"):
        ironlaw.serve(on="h100")


# ------------------------------------------------------------------ calibrate's text in 80 columns
def test_calibrate_text_fits_80_columns_with_long_class_names(tmp_path):
    """`calibrate` printed "context attention bf16, KV bf16, one head per KV head    612 rows    2.1% /" and wrapped
    "9.0%" onto a line of its own at 80 columns: a long class name takes a line of its own."""
    pytest.importorskip("pandas")
    attn = _windowless_table(tmp_path)
    head, *rows = attn.read_text().splitlines()
    rows += [r.replace(",32,8,128,", ",8,8,128,") for r in rows]            # one head per KV head: a long name
    attn.write_text("\n".join([head.replace("head_dim,", "head_dim,window_size,")]
                              + [r.replace(",128,bfloat16,", ",128,0,bfloat16,") for r in rows]) + "\n")
    r = run_cli("calibrate", "--kernels", str(tmp_path), "--gpu", "a100", "--framework", "vllm", env={"COLUMNS": "80"})
    assert r.rc == 0, r.err
    lines = r.out.splitlines()
    assert all(len(line) <= 80 for line in lines), r.out
    i = next(i for i, line in enumerate(lines) if "one head per KV head" in line)
    assert lines[i].strip() == "context attention bf16, KV bf16, one head per KV head", r.out
    assert "8 rows" in lines[i + 1] and lines[i + 1].rstrip().endswith("%"), r.out


# ------------------------------------------------------------------ validate: the user's file before the profile
def test_validate_names_a_missing_model_file_before_the_profile(tmp_path):
    """`validate py:nothere.py:f` without a profile said "no profile yet; run `ironlaw probe`", and after a probe
    that the file is missing: the spec is read first."""
    line = one_line_error(run_cli("validate", "py:nothere.py:f", env={"IRONLAW_HOME": str(tmp_path)}))
    assert "no such file 'nothere.py'" in line and "profile" not in line


# ------------------------------------------------------------------ calibrate: what it assumed of a table
def test_calibrate_names_the_window_it_assumed(tmp_path, shared_kernel_fits):
    """A table without window_size was read as window 0 without a word: one line names the file and the
    assumption, in the text and in the JSON document's ``assumed``."""
    pytest.importorskip("pandas")
    _windowless_table(tmp_path)
    r = run_cli("calibrate", "--kernels", str(tmp_path), "--gpu", "a100", "--framework", "vllm")
    assert r.rc == 0, r.err
    said = [line for line in r.out.splitlines() if "window_size" in line]
    assert said == ["no window_size column in a100_sxm/attention/vllm/0.14.0/context_attention_perf.csv: read as "
                    "window 0 (global attention)"], r.out
    import ironlaw
    assert ironlaw.calibrate(str(tmp_path), gpu="a100", framework="vllm").to_dict()["assumed"] == said
    with_column = tmp_path / "a100_sxm" / "attention" / "vllm" / "0.14.0" / "context_attention_perf.csv"
    head, *rows = with_column.read_text().splitlines()
    with_column.write_text("\n".join([head.replace("head_dim,", "head_dim,window_size,")]
                                     + [r.replace(",128,bfloat16,", ",128,0,bfloat16,") for r in rows]) + "\n")
    assert ironlaw.calibrate(str(tmp_path), gpu="a100", framework="vllm").to_dict()["assumed"] == []


# ------------------------------------------------------------------ the provenance names the split it used
def _two_head_dims(root):
    """A vLLM context-attention table whose shape-sorted even rows are all head dim 64, its odd rows all 128."""
    attn = root / "a100_sxm" / "attention" / "vllm" / "0.14.0" / "context_attention_perf.csv"
    attn.parent.mkdir(parents=True)
    rows = ["device,batch_size,isl,num_heads,num_key_value_heads,head_dim,window_size,attn_dtype,kv_cache_dtype,"
            "step,latency"]
    for b in (1, 2, 4, 8):
        for s in (512, 1024, 2048, 4096):
            for d in (64, 128):
                t_ms = 0.01 + 4 * b * s * s * 32 * d / 2 / 200e12 * 1e3
                rows.append(f"NVIDIA A100-SXM4-80GB,{b},{s},32,8,{d},0,bfloat16,bfloat16,0,{t_ms:.6f}")
    attn.write_text("\n".join(rows) + "\n")


def test_a_class_split_within_each_head_dim_says_so(tmp_path):
    """The provenance said "(odd rows)" of a class whose split alternates within each head dim
    (``kernelfit.rows.STRATA``), and a class fitted over the catalog's kept both entries."""
    pytest.importorskip("pandas")
    import ironlaw
    _two_head_dims(tmp_path)
    res = ironlaw.calibrate(str(tmp_path), gpu="a100", framework="vllm")
    name = "context attention bf16, KV bf16"
    assert [e for e in res.calibration["fitted"] if e.startswith(name + " (")] == [
        f"{name} (even rows of each head dim)"]
    assert [e for e in res.calibration["held_out"] if e.startswith(name + " (")] == [
        f"{name} (odd rows of each head dim)"]
    r = run_cli("calibrate", "--kernels", str(tmp_path), "--gpu", "a100", "--framework", "vllm")
    assert r.rc == 0 and f"split within each head dim (the even/odd rows held most of one head dim out): {name}" \
        in r.out.replace("\n", " "), r.out


def test_the_stored_split_labels_match_the_stored_rows():
    """The stored classes whose split alternates within each head dim (vLLM H100's one-head FP8-cache decode, its
    rows_held_out those of that split) say so, as ``kernelfit.fit`` now writes it."""
    from ironlaw.machine import engines
    cal = engines.load("h100", "vllm")
    name = "generation attention bf16, KV fp8, one head per KV head"
    assert f"{name} (odd rows of each head dim)" in cal["held_out"]
    assert f"{name} (odd rows)" not in cal["held_out"]


def test_a_catalogs_source_claims_no_split_its_classes_do_not_name():
    """The catalogs' kernel-fit source said "fitted to the even rows" where a class's own entries name another
    split ("even rows of each head dim"): the source points to each class's entries, and no stored number moved
    with it (the strings only)."""
    import tomllib
    from pathlib import Path
    from ironlaw.measure.calibrate.kernelfit import KERNEL_SOURCE
    catalog = Path(__file__).resolve().parents[1] / "src" / "ironlaw" / "machine" / "catalog"
    seen = 0
    for p in sorted(catalog.rglob("*.toml")):
        cal = tomllib.loads(p.read_text()).get("calibration", {})
        if KERNEL_SOURCE not in cal.get("source", ""):
            continue
        seen += 1
        assert "fitted to the even rows of measured" not in cal["source"], p
        splits = {e.rsplit(" (", 1)[1] for e in cal.get("fitted", []) if e.endswith(" rows)")}
        assert splits and splits <= {"even rows)", "even rows of each head dim)"}, (p, splits)
    assert seen >= 30


def test_the_catalog_names_only_files_that_exist():
    """The catalogs' provenance named models/serving/step.py after it became the package models/serving/step/."""
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    catalog = root / "src" / "ironlaw" / "machine" / "catalog"
    named = {m for p in catalog.rglob("*.toml") for m in re.findall(r"\b((?:models|law|measure|machine|core)/[\w/]+\.py)",
                                                                     p.read_text())}
    assert named and all((root / "src" / "ironlaw" / m).is_file() for m in named), named
    named = {m for p in catalog.rglob("*.toml") for m in re.findall(r"\b((?:benchmarks|tests)/[\w/]+\.py)",
                                                                     p.read_text())}
    assert all((root / m).is_file() for m in named), named


# ------------------------------------------------------------------ probe: a peak from small shapes says so
def test_a_peak_from_small_gemms_only_says_it_is_a_floor():
    """A dtype without a fast path (or a quick probe's fp16) runs only GEMMs far too small to reach a peak; its
    source said "fastest of 1 large GEMM shapes: 128x128x128" and the probe's table said nothing."""
    from ironlaw.cli.probe import peak_note
    from ironlaw.measure.calibrate import build
    small = {"m": 128, "n": 128, "k": 128, "flops_per_s": 5e8, "cv": 0.001, "dtype": "bf16"}
    large = {"m": 1024, "n": 1024, "k": 1024, "flops_per_s": 5e10, "cv": 0.01, "dtype": "fp32"}
    peaks = build.compute_peaks({"gemm": [small, large], "date": "d", "host": "h", "torch": "t", "threads": 2})
    bf16, fp32 = peaks["bf16"]["source"], peaks["fp32"]["source"]
    assert "small shapes only (each under 0.2 GFLOP): fastest of 1 GEMM shape, 128x128x128" in bf16
    assert "a floor under the peak, not the peak" in bf16 and "large" not in bf16
    assert peak_note(bf16) == "NO FAST PATH; floor: small shapes (128x128x128)" and peak_note(fp32) == ""


# ------------------------------------------------------------------ no dead names
def test_every_name_the_serving_step_exports_is_read():
    """``QUANTIZED_MATMUL_DTYPES`` was exported and read nowhere: each name ``models.serving.step`` re-exports is
    read somewhere beyond its definition and the export."""
    import re
    from pathlib import Path
    import ironlaw.models.serving.step as step
    root = Path(__file__).resolve().parents[1]
    texts = [p.read_text() for d in ("src", "benchmarks", "tests") for p in (root / d).rglob("*.py")
             if p not in (root / "src/ironlaw/models/serving/step/__init__.py", Path(__file__).resolve())]
    unread = [n for n in step.__all__ if sum(len(re.findall(rf"\b{n}\b", t)) for t in texts) < 2]
    assert unread == []


# ------------------------------------------------------------------ the scheduler line names the limits given
def test_the_scheduler_line_says_the_limits_given():
    """`serve --max-throughput --engine vllm --max-batch 64 --max-num-tokens 4096` printed "scheduler:
    max_num_seqs 1024, max_num_batched_tokens 16384" above "engine limits max batch 64, max tokens/step 4,096
    (given)": the scheduler line and its JSON say the values the run was given."""
    import ironlaw
    d = ironlaw.serve("llama3-8b", on="h100", max_throughput=True, engine="vllm", max_batch=64,
                      max_num_tokens=4096).to_dict()["engine"]
    assert d["summary"][1].startswith("scheduler: max_num_seqs 64 (given), max_num_batched_tokens 4096 (given), ")
    assert d["scheduler"]["max_num_seqs"] == 64 and d["scheduler"]["sources"]["max_num_seqs"] == "given (--max-batch)"
    s = ironlaw.serve("llama3-8b", on="h100", max_throughput=True, engine="sglang", max_num_tokens=4096).to_dict()
    assert s["engine"]["summary"][1].startswith("scheduler: max_running_requests 2048, chunked_prefill_size 4096 "
                                                  "(given), ")
    plain = ironlaw.serve("llama3-8b", on="h100", max_throughput=True, engine="sglang").to_dict()["engine"]
    assert "(given)" not in plain["summary"][1] and plain["scheduler"]["max_num_batched_tokens"] == 8192


# ------------------------------------------------------------------ validate's per-op table in 80 columns
def test_validate_per_op_table_leaves_columns_out_rather_than_cutting_every_cell():
    """At 80 columns `validate`'s per-op table printed "aten::…", "predic…", "compu…": every column cut. It leaves
    out shapes (then CV, kind, #), says so, and shows whole op names and bounds."""
    pytest.importorskip("torch")
    r = run_cli("validate", "mlp", "--on", "epyc-9654", "--repeats", "1", "--warmup", "0", env={"COLUMNS": "80"})
    assert r.rc == 0, r.err
    lines = r.out.splitlines()
    assert all(len(line) <= 80 for line in lines), r.out
    table = lines[next(i for i, line in enumerate(lines) if "by measured time" in line):]
    assert "aten::addmm" in r.out and "predicted" in table[2] and "…" not in "".join(table[:14]), r.out
    assert "(not shown at this width: shapes" in r.out.replace("\n", " ")


# ------------------------------------------------------------------ sweep names the sequence it ran at
def test_a_sweep_without_seq_states_the_workloads_own():
    """`sweep llama3-8b --batch 1,2` priced prefills of 1,024 tokens (analyze's header says "seq 1024") and wrote
    "seq": null in every point and an empty CSV column: the points and the header state the sequence."""
    import ironlaw
    d = ironlaw.sweep("llama3-8b", on="h100", batch="1,2").to_dict()
    assert [p["seq"] for p in d["points"]] == [1024, 1024] and d["seq"] is None
    r = run_cli("sweep", "llama3-8b", "--on", "h100", "--batch", "1,2")
    assert r.rc == 0 and r.out.splitlines()[0] == "llama3-8b · prefill · bf16 · seq 1024: 2 points", r.out
    csv = run_cli("sweep", "llama3-8b", "--on", "h100", "--batch", "1,2", "--format", "csv").out.splitlines()
    assert csv[1].startswith("h100,1,1024,"), csv
    assert [p["seq"] for p in ironlaw.sweep("resnet50", on="h100", batch="1,2").to_dict()["points"]] == [None, None]


def test_one_request_in_flight_is_singular():
    """`serve --disaggregate prefill=1,decode=1` said "a closed loop of 1 requests in flight"."""
    r = run_cli("serve", "llama3-8b", "--on", "h100", "--disaggregate", "prefill=1,decode=1")
    assert r.rc == 0 and "a closed loop of 1 request in flight" in r.out.replace("\n", " "), r.out


def test_the_reports_count_one_in_the_singular(tmp_path):
    """`serve llama3-8b --html` (concurrency 1, the default) headed its decode step "Decode step: 1 sequences", and a
    one-GPU training report "1 GPUs"."""
    import ironlaw
    ironlaw.serve("llama3-8b", on="h100", html=str(tmp_path / "s.html"))
    assert "Decode step: 1 sequence at the mean context" in (tmp_path / "s.html").read_text()
    assert "The step takes 38.7 ms, host-bound: 38.7 ms of host work" in (tmp_path / "s.html").read_text()
    ironlaw.analyze("gpt2", on="h100", phase="train", gpus=1, global_batch=8, html=str(tmp_path / "t.html"))
    assert "train · bf16 · 1 GPU: tp 1" in (tmp_path / "t.html").read_text()


# ------------------------------------------------------------------ each engine's scheduler limits as it applies them
def test_sglangs_token_budget_caps_its_prefill_batches_alone():
    """SGLang's max_num_tokens (chunked_prefill_size) was charged with the decode tokens as vLLM's is, so a
    budget of 1,024 held the run to 2.7 requests a step and 1,107 sequences "limited by max_num_tokens": SGLang
    charges only a prefill batch's tokens to it (``PrefillAdder``; the decode batch only under
    enable_mixed_chunk), vLLM's max_num_batched_tokens a step's decode and prompt tokens together."""
    import ironlaw
    kw = dict(on="h100", max_throughput=True, max_num_tokens=1024, prompt=128, output=256)
    sgl = ironlaw.serve("llama3-8b", engine="sglang", **kw)
    s = sgl.steady
    assert sgl.batch_limit != "max_num_tokens" and s["decode_tokens_per_step"] > 1024
    assert s["prompt_tokens_per_step"] <= 1024
    vll = ironlaw.serve("llama3-8b", engine="vllm", **kw)
    v = vll.steady
    assert vll.batch_limit == "max_num_tokens"
    assert v["decode_tokens_per_step"] + v["prompt_tokens_per_step"] <= 1024 + 1


def test_a_one_wave_ramp_admits_sglangs_prefill_batches_whole():
    from ironlaw.models.serving import throughput
    assert throughput.ramp(128, 256, 20, 1024, mixed=False) == [(0, 8), (8, 8), (16, 4)]
    assert throughput.ramp(128, 256, 20, 1024) == [(0, 8), (8, 7), (15, 5)]


def test_a_given_max_batch_sets_vllms_cuda_graphs():
    """`serve --engine vllm --max-batch 8` kept the CUDA graphs of vLLM's default 1,024 sequences (up to 512):
    vLLM captures up to min(2 · max_num_seqs, 512, max_num_batched_tokens) (VllmConfig._set_cudagraph_sizes)."""
    import ironlaw
    est = ironlaw.serve("llama3-8b", on="h100", engine="vllm", max_throughput=True, max_batch=8, prompt=32,
                        output=32)
    sched = est.to_dict()["engine"]["scheduler"]
    assert sched["cuda_graph_batches"] == [1, 2, 4, 8, 16] and est.constants.cuda_graph_batches[-1] == 16
    assert "from the limits given" in sched["sources"]["cuda_graph_batches"]
    assert "CUDA graphs up to 16," in est.engine_lines()[1]


def test_a_given_max_batch_out_of_range_is_refused_before_vllm_derives_its_graphs():
    import ironlaw
    from ironlaw.core.errors import IronlawError
    with pytest.raises(IronlawError, match="--max-batch must be a whole number between 1 and"):
        ironlaw.serve("llama3-8b", on="h100", engine="vllm", max_throughput=True, max_batch=0)


def test_attention_dp_with_another_ep_offers_the_layout_asked_for():
    """`serve mixtral-8x7b --max-throughput --ep 2 --attention-dp` said "use --ep 1 with --tp 1", undoing the
    --ep the user gave: EP equals TP under attention DP, so it offers --tp 2 --ep 2 first."""
    import ironlaw
    from ironlaw.core.errors import IronlawError
    with pytest.raises(IronlawError, match=r"so --ep equals --tp: use --tp 2 --ep 2$"):
        ironlaw.serve("mixtral-8x7b", on="h100", max_throughput=True, ep=2, attention_dp=True)


@pytest.mark.parametrize("fn", ["analyze", "serve", "contract"])
def test_format_given_to_the_library_names_to_dict(fn):
    """`ironlaw.analyze("llama3-8b", on="h100", format="json")` said "(the builder options of llama3-8b: none)":
    --format has no keyword; the result's .to_dict() is the JSON document."""
    import ironlaw
    from ironlaw.core.errors import IronlawError
    args = () if fn == "contract" else ("llama3-8b",)
    with pytest.raises(IronlawError, match=r"'format' \(--format is the command line's: the result's \.to_dict\(\)"):
        getattr(ironlaw, fn)(*args, on="h100", format="json")


def test_no_size_or_time_prints_an_exponent():
    """`analyze deepseek-v3 --on tpu-v5e --phase prefill` said "exceeds all memory tiers together (1.01e+03
    GiB)": a value that rounds to 1,000 of a prefix takes the next one (999.9 TFLOP/s is 1 PFLOP/s), and past the
    largest (GiB below a TiB, seconds) prints in whole units."""
    from ironlaw.core.units import fmt, fmt_size, fmt_time
    assert fmt_size(1010 * 2**30) == "1,010 GiB" and fmt_time(1500.0) == "1,500 s"
    assert fmt(999.9e12, "FLOP/s") == "1 PFLOP/s" and fmt_time(0.9999) == "1 s" and fmt(3.35e12, "B/s") == "3.35 TB/s"
    import ironlaw
    from ironlaw.core.errors import IronlawError
    with pytest.raises(IronlawError) as e:
        ironlaw.analyze("deepseek-v3", on="tpu-v5e", phase="prefill", seq=512, dtype="bf16")
    assert "e+03" not in str(e.value) and "(1,011 GiB)" in str(e.value), str(e.value)


def test_an_unknown_what_if_lists_every_transform():
    """`--what-if bogus=1` listed twelve names, aliases among them, then "…": the transforms, all of them, as the
    empty --what-if lists them."""
    from ironlaw.core.errors import IronlawError
    from ironlaw.models import whatif
    with pytest.raises(IronlawError) as e:
        whatif.parse("bogus=1")
    line = str(e.value)
    assert "…" not in line and line.endswith("; transforms: batch, dp, eager-attention, flash-attention, fusion, "
                                             "hardware, network, overlap-comm, pp, prefetch, quant, recompute, seq, "
                                             "sparsity, tp"), line


def test_unknown_lists_the_callers_names_uncut_when_none_is_near():
    """`core.errors.unknown` cut every list at 12 names and listed the choices it matched against (aliases among them),
    so the what-if parser built its own message beside it: the names to list, when none is near, are the caller's."""
    from ironlaw.core.errors import unknown
    names = [f"name{i:02d}" for i in range(15)]
    line = str(unknown("thing", "zzz", names + ["alias"], listed=names, listed_as="things"))
    assert line == f"unknown thing 'zzz'; things: {', '.join(names)}", line
    assert str(unknown("thing", "name1", names, listed=names)).startswith("unknown thing 'name1' (did you mean:")


def test_out_on_a_command_that_writes_html_names_html():
    """`ironlaw report llama3-8b --on h100 --out r.html` said "No such option '--out'. (Did you mean one of: '--on',
    '--top'?)": the page is --html FILE."""
    line = one_line_error(run_cli("report", "llama3-8b", "--on", "h100", "--out", "r.html"))
    assert line.endswith("report takes no --out: it writes its HTML page with --html FILE.html"), line


def test_a_tp_what_if_in_a_sweep_counts_every_device_as_analyze_does(capsys):
    """`sweep … --what-if tp=2` priced each token's energy and cost on one H100 (2.35 J, $6.92/M) where
    `analyze --tp 2 --gpus 2` prices the same step on two (4.70 J, $13.84/M), and its header and JSON did not
    name the what-if."""
    import ironlaw
    s = ironlaw.sweep("llama3-8b", on="h100", phase="decode", batch="1", what_if="tp=2").to_dict()
    a = ironlaw.analyze("llama3-8b", on="h100", phase="decode", batch=1, tp=2, gpus=2).to_dict()
    p = s["points"][0]
    assert p["time_s"] == a["time_s"] and s["what_if"] == ["tp=2"] and s["devices"] == 2
    assert p["joules_per_unit"] == pytest.approx(a["energy"]["joules_per_token"], rel=1e-12)
    assert p["usd_per_million_units"] == pytest.approx(a["energy"]["usd_per_million_tokens"], rel=1e-12)
    from ironlaw.cli.sweep import text
    text(ironlaw.sweep("llama3-8b", on="h100", phase="decode", batch="1", what_if="tp=2"))
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("llama3-8b · decode · bf16 · seq 1024 · what-if tp=2: "), out


def test_sglangs_engine_limits_name_a_prefill_batchs_tokens(capsys):
    """SGLang's run printed "max tokens/step 8,192" for its chunked_prefill_size, which caps a prefill batch, not
    a step (``throughput.budget_tokens``)."""
    import ironlaw
    from ironlaw.cli.serve_throughput import show
    est = ironlaw.serve("llama3-8b", on="h100", max_throughput=True, engine="sglang", prompt=128, output=128)
    show(est, "llama3-8b", 128, 128, "md")
    out = capsys.readouterr().out
    assert "max prefill tokens/batch 8,192" in out and "max tokens/step" not in out, out


def test_sglangs_prefill_budget_does_not_cap_its_decode_graphs(monkeypatch):
    """The largest CUDA-graph decode batch was min(max_batch_size, max_num_tokens) for every engine, so SGLang with
    --max-num-tokens 64 padded its decode batches to 64 at most: SGLang's chunked_prefill_size caps prefill batches
    alone, its decode graphs go up to cuda_graph_max_bs."""
    import ironlaw
    from ironlaw.models.serving import throughput
    seen = []
    real = throughput.step_seconds

    def spy(run, *a, **k):
        seen.append(run.max_batch)
        return real(run, *a, **k)
    monkeypatch.setattr(throughput, "step_seconds", spy)
    ironlaw.serve("llama3-8b", on="h100", engine="sglang", max_throughput=True, max_num_tokens=64, prompt=32,
                  output=32)
    assert seen and set(seen) == {2048}
    seen.clear()
    ironlaw.serve("llama3-8b", on="h100", engine="vllm", max_throughput=True, max_num_tokens=64, max_batch=64,
                  prompt=32, output=32)
    assert seen and set(seen) == {64}


def _h100_device_bytes() -> float:
    from ironlaw.machine import hardware
    hw = hardware.get("h100")
    return hw.memory[hw.device_tier].capacity_bytes


def test_a_serving_layouts_memory_counts_sglangs_workspace_once():
    """`search llama3-8b --phase serve --on h100 --gpus 2 --serve-engine sglang` printed "mem/GPU 82 GiB" on an
    80 GiB H100: SGLang's reserve (1 − mem_fraction_static) holds its activations, and the workspace was added
    beside it."""
    import ironlaw
    from ironlaw.models.search.serve import held_bytes
    for engine in ("sglang", "vllm"):
        m = ironlaw.serve("llama3-8b", on="h100", max_throughput=True, engine=engine, dtype="fp8").memory
        assert held_bytes(m) == pytest.approx(_h100_device_bytes(), rel=1e-9), engine
