"""The MLPerf Inference v5.1 Offline extracts (Llama-2-70B, Mixtral-8x7B, Llama-3.1-8B, Llama-3.1-405B, DeepSeek-R1:
tests/data/mlperf_inference_v5.1_*_offline.csv, mlcommons/inference_results_v5.1) and the benchmark that scores them
(benchmarks/mlperf_inference.py): each header names its origin and the results it leaves out, every row parses and its
numbers agree with each other, and every row's printed ``ironlaw serve`` command is the library call the benchmark
makes. One row per new benchmark and engine is priced (the benchmark scores them all)."""
from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import mlperf_inference as bench  # noqa: E402

COMMIT = "965182b03376a00fcae415c54e560e1c83937932"
# generated tokens per sample (tokens_s / samples_s) each benchmark's rows fall in
OUTPUT = {"llama2-70b": (250, 320), "mixtral-8x7b": (130, 160), "llama3.1-8b": (120, 140),
          "llama3.1-405b": (600, 700), "deepseek-r1": (3500, 3900)}
# the Offline results of summary_results.json on a catalog accelerator or CPU that each new extract's header lists as
# left out (its reason beside it)
LEFT_OUT = {"llama3.1-8b": ("5.1-0014", "5.1-0056", "-0017", "-0055", "-0058", "-0059", "-0063", "-0084"),
            "llama3.1-405b": ("5.1-0013", "-0015", "-0016", "-0071", "-0072", "5.1-0100", "-0101"),
            "deepseek-r1": ("5.1-0071", "-0072", "-0097", "5.1-0375")}


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return bench.load()


@pytest.mark.parametrize("name", sorted(bench.BENCHMARKS))
def test_header_names_origin_commit_and_workload(name):
    path, _, prompt = bench.BENCHMARKS[name]
    head = " ".join(line[1:].strip() for line in open(path) if line.startswith("#"))
    assert "mlcommons/inference_results_v5.1" in head and COMMIT in head
    mean = re.search(r"mean prompt ([\d.]+) tokens", head)
    assert "mlperf_log_summary.txt" in head and round(float(mean.group(1))) == prompt    # 222.33, 427.39, 870.73, ...
    assert "71007029fb5bced1d79808e7e64dc4c2af82ea55" in head          # the prompt lengths' source


@pytest.mark.parametrize("name", sorted(LEFT_OUT))
def test_header_lists_the_results_it_leaves_out_and_none_is_a_row(name, rows):
    head = " ".join(line[1:].strip() for line in open(bench.BENCHMARKS[name][0]) if line.startswith("#"))
    ids = {r["id"] for r in rows if r["benchmark"] == name}
    for left in LEFT_OUT[name]:
        assert left in head.split("Left out:", 1)[1], (name, left)
        assert ("5.1" + left if left.startswith("-") else left) not in ids


def test_every_row_parses_and_agrees_with_itself(rows):
    from ironlaw.machine import hardware
    assert len(rows) >= 80 and {r["gpu"] for r in rows} == set(bench.GPUS)
    assert {r["benchmark"] for r in rows} == set(bench.BENCHMARKS)
    assert len({(r["benchmark"], r["id"]) for r in rows}) == len(rows)
    for gpu in {r["gpu"] for r in rows}:
        hardware.get(gpu)                                                # a catalog name
    for r in rows:
        assert r["id"].startswith("5.1-") and r["division"] in ("closed", "open")
        assert r["results"].endswith("/Offline") and f"/{r['benchmark']}" in r["results"], r["id"]
        assert r["submitter"] in r["results"]
        assert r["engine"] == ("trtllm" if r["software"].startswith("TensorRT") else "vllm")
        assert r["gpus"] % (r["tp"] * r["pp"]) == 0 and r["instances"] * r["tp"] * r["pp"] == r["gpus"]
        assert r["ep"] in (1, r["tp"]) and (not r["attention_dp"] or r["ep"] > 1), r["id"]
        lo, hi = OUTPUT[r["benchmark"]]
        assert lo <= r["output"] <= hi, r["id"]
        assert r["requests"] * r["instances"] <= r["samples_per_query"]
        assert 0.85 <= r["memory_fraction"] <= 0.99 and r["max_num_tokens"] >= 1024


def test_each_command_is_the_call_the_benchmark_makes(rows):
    """The printed command, parsed by the CLI, gives ``ironlaw.serve`` the keywords the benchmark passes."""
    import typer
    from ironlaw.cli import app
    serve = typer.main.get_command(app).commands["serve"]
    for r in rows:
        argv = shlex.split(bench.command(r), comments=True)     # a library keyword follows as a comment
        assert argv[:3] == ["ironlaw", "serve", bench.BENCHMARKS[r["benchmark"]][1]]
        params = serve.make_context("serve", argv[2:]).params
        assert params["on"] == r["gpu"]
        for k, v in bench.serve_kwargs(r).items():
            if k == "long_prefill_token_threshold":
                assert f"# and ironlaw.serve(..., {k}={v})" in bench.command(r), r["id"]
                continue
            assert params[k] == v, (r["id"], k)
        kw = bench.serve_kwargs(r)          # the submission's memory knob, as --memory-fraction, on every engine
        assert kw["memory_fraction"] == r["memory_fraction"] and "kv_fraction" not in kw, r["id"]


def test_tensorrt_llm_rows_run_the_release_the_submissions_built(rows):
    """Every TensorRT-LLM row is priced on TensorRT-LLM 1.0's kernels (the submissions' 1.0-mlpinf branch) where the
    catalog holds that release's tables (H200, B200, GB200), on the catalog's 1.3.0rc20 kernels on RTX PRO 6000; no
    vLLM row names a release."""
    for r in rows:
        want = "1.0" if r["engine"] == "trtllm" and r["gpu"] in ("h200", "b200", "gb200") else None
        assert bench.serve_kwargs(r).get("release") == want, r["id"]
    assert {"h200", "b200", "gb200"} <= bench.RELEASE_GPUS and "rtx-pro-6000" not in bench.RELEASE_GPUS


def test_llama2_70b_config_builds_with_the_published_parameter_count():
    """Llama-2-70B from its Hugging Face config: 68,976,648,192 parameters (embeddings and head 2 x 32,000 x 8,192;
    per layer q and o 8,192^2 each, k and v 8,192 x 1,024 each, the SwiGLU MLP 3 x 8,192 x 28,672, two norms; 80
    layers; the final norm), the '69B' of its Hugging Face model page; GQA 64 query / 8 KV heads of 128."""
    from ironlaw.models.workloads import Request, resolve
    g = resolve(Request(bench.BENCHMARKS["llama2-70b"][1].replace("hf:", f"hf:{ROOT}/"), phase="decode", seq=16,
                        dtype="bf16"))
    per_layer = 2 * 8192 ** 2 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192
    assert g.meta["params"] == 2 * 32000 * 8192 + 80 * per_layer + 8192 == 68_976_648_192


@pytest.mark.parametrize("grid", [True, False])
@pytest.mark.parametrize("factor", [True, False])
def test_what_if_prices_mi325x_on_the_gfx942_terms_with_or_without_the_carry_factor(rows, tmp_path, grid, factor):
    """``--what-if``'s catalog copy: MI325X's datasheet (256 GiB, its name changed) under the MI300X's fitted fp8
    GEMM terms at CARRIED_GEMM's factor (the stored mi325x terms) or at 1, with or without their grid."""
    from ironlaw.machine import hardware
    from ironlaw.measure.calibrate.kernelfit import rules
    hw = hardware.get(bench.gfx942_terms(next(r for r in rows if r["gpu"] == "mi325x"), tmp_path, grid=grid,
                                         factor=factor))
    assert hw.name == "mi325x-gfx942" + ("" if factor else "-x1") + ("" if grid else "-nogrid")
    assert hw.memory[hw.device_tier].capacity_bytes == 256 * 2 ** 30
    fp8 = hw.calibration.shapes["matmul"]["fp8"]
    own = hardware.get("mi300x").calibration.shapes["matmul"]["fp8"]["eta_max"]
    want = round(own * rules.CARRIED_GEMM["mi325x"][1], 4) if factor else own
    assert fp8["eta_max"] == want
    assert ("grid_log" in fp8) == grid
    if factor and grid:
        assert fp8["eta_max"] == hardware.get("mi325x").calibration.shapes["matmul"]["fp8"]["eta_max"]


def test_what_if_runs_vllm_without_mixed_steps(rows, monkeypatch):
    """``--what-if``'s V0 case prices the row with vLLM's prompt tokens in steps of their own; outside it vLLM mixes."""
    from ironlaw.machine import hardware
    from ironlaw.models.serving import frameworks
    monkeypatch.setattr(bench, "predict", lambda r: frameworks.vllm(hardware.get(r["gpu"]), True).mixed_steps)
    r = next(r for r in rows if r["gpu"] == "mi355x")
    assert bench.unmixed(r) is False and bench.predict(r) is True


def test_what_if_caps_amds_llama2_rows_at_their_schedulers_decode_target(rows, monkeypatch):
    """``--what-if``'s scheduler case names a target decode batch for every AMD Llama-2-70B row, below its
    max_num_seqs (AMD's patch caps a decode step there), and prices the row with that batch limit."""
    amd = [r for r in rows if r["benchmark"] == "llama2-70b" and r["gpu"].startswith("mi")]
    assert sorted(r["id"] for r in amd) == sorted(bench.DECODE_TARGET)
    assert all(bench.DECODE_TARGET[r["id"]] < r["max_batch"] for r in amd)
    monkeypatch.setattr(bench, "predict", lambda r, **kw: kw)
    r = next(r for r in amd if r["gpu"] == "mi355x")
    assert bench.at_decode_target(r) == {"max_batch": 3072}


def test_h200_nvl_rows_are_priced_on_its_datasheet_and_what_if_carries_the_h200_calibration(rows, tmp_path):
    """The H200 NVL rows (5.1-0005, -0023, -0080) run on the catalog's h200-nvl, which holds no calibration (no
    release tables either: the catalog's kernels); ``--what-if`` prices them on the H200 SXM's calibration laid on
    the NVL's datasheet (600 W, 0.844 of the SXM's Tensor Core peaks), storing nothing."""
    from ironlaw.machine import hardware
    nvl = [r for r in rows if r["gpu"] == "h200-nvl"]
    assert [r["id"] for r in nvl if r["benchmark"] == "llama2-70b"] == ["5.1-0005", "5.1-0023", "5.1-0080"]
    assert [r["id"] for r in nvl if r["benchmark"] == "llama3.1-8b"] == ["5.1-0011", "5.1-0080"]
    assert all("release" not in bench.serve_kwargs(r) and r["tp"] == 1 for r in nvl)
    assert hardware.get("h200-nvl").calibration is None
    hw = hardware.get(bench.h200_carried(nvl[0], tmp_path))
    assert hw.name == "h200-nvl-h200" and hw.tdp_w == 600
    assert hw.peak_flops["fp8"] == hardware.get("h200-nvl").peak_flops["fp8"]
    assert hw.calibration.shapes["matmul"]["fp8"] == hardware.get("h200").calibration.shapes["matmul"]["fp8"]


def test_parallel_layout_reaches_serve_and_the_per_gpu_figure(rows, monkeypatch):
    """The 405B rows run TP x PP instances (B200 and GB200 2 x 2, H200 4 x 2) and DeepSeek-R1 TP 8 with EP 8 and
    attention DP, as their configs say; serve gets pp / ep / attention_dp, and the per-GPU figure divides one
    instance's tokens/s by its TP x PP GPUs."""
    import ironlaw
    got = []
    monkeypatch.setattr(ironlaw, "serve",
                        lambda spec, gpu, **kw: got.append(kw) or type("E", (), {"output_tokens_per_s": 2000.0}))
    big = [r for r in rows if r["benchmark"] == "llama3.1-405b"]
    assert {(r["gpu"], r["tp"], r["pp"]) for r in big} == {("b200", 2, 2), ("gb200", 2, 2), ("h200", 4, 2)}
    for r in big:
        assert r["instances"] == r["gpus"] // (r["tp"] * r["pp"])
        assert bench.predict(r) == 2000.0 / (r["tp"] * r["pp"])
        assert got[-1]["pp"] == r["pp"] and "ep" not in got[-1] and "attention_dp" not in got[-1]
    for r in (r for r in rows if r["benchmark"] == "deepseek-r1"):
        bench.predict(r)
        assert (got[-1]["tp"], got[-1]["ep"], got[-1]["attention_dp"]) == (8, 8, True) and "pp" not in got[-1]
        assert r["instances"] == 1 and r["requests"] == r["samples_per_query"] == 26328


def test_one_row_of_each_new_benchmark_and_engine_is_priced(rows):
    """Llama-3.1-8B on TensorRT-LLM (B200) and on vLLM (H100), Llama-3.1-405B at TP 4 x PP 2 (H200), DeepSeek-R1 at
    EP 8 with attention DP (B200): each prices to a finite, positive figure within 2x of the published one."""
    picks = {("llama3.1-8b", "b200"), ("llama3.1-8b", "h100"), ("llama3.1-405b", "h200"), ("deepseek-r1", "b200")}
    seen = {}
    for r in rows:
        seen.setdefault((r["benchmark"], r["gpu"]), r)
    for key in sorted(picks):
        r = seen[key]
        assert 0.5 < bench.predict(r) / r["published"] < 2.0, key


def test_what_if_prices_on_the_pytorch_executor_and_at_one_length(rows, monkeypatch):
    """``--what-if``'s PyTorch-executor case prices a C++-executor row with ``runtime="pytorch"`` (the row itself
    runs ``cpp``); its DeepSeek-R1 case prices one length per request (the dataset's mean prompt, the run's generated
    tokens) where the rows run the dataset's lengths (``LENGTHS``: ``serve --lengths``)."""
    monkeypatch.setattr(bench, "predict", lambda r, **given: ({**bench.serve_kwargs(r), **given}.get("runtime"),
                                                              bench.serve_kwargs(r)))
    r = next(r for r in rows if r["benchmark"] == "llama3.1-8b" and r["gpu"] == "h200")
    assert bench.on_pytorch_executor(r)[0] == "pytorch" and bench.predict(r)[0] == "cpp"
    dell = next(r for r in rows if r["benchmark"] == "deepseek-r1" and r["id"] == "5.1-0024")
    assert bench.predict(dell)[1]["lengths"] == "tests/data/mlperf_deepseek_r1_lengths.csv"
    one = bench.at_one_length(dell)[1]
    assert (one["prompt"], one["output"]) == (804, 3650) and "lengths" not in one


def test_cpp_executor_rows_run_the_cpp_runtime(rows):
    """The TensorRT-LLM rows of Llama-2-70B, Mixtral, Llama-3.1-8B and 405B (NVIDIA's harness: the C++ executor over
    TensorRT engines) are priced with ``runtime="cpp"``; DeepSeek-R1's (trtllm-serve, PyTorch backend) and the vLLM
    rows name no runtime (the default)."""
    for r in rows:
        cpp = r["engine"] == "trtllm" and r["benchmark"] != "deepseek-r1"
        assert bench.serve_kwargs(r).get("runtime") == ("cpp" if cpp else None), r["id"]
        assert ("--runtime cpp" in bench.command(r)) == cpp


def test_auto_quantize_placements_fit_the_checkpoint_bits_and_slow_the_mixtral_rows(rows):
    """Each ``AUTO_QUANTIZE`` placement keeps Mixtral's searched weights (every linear but lm_head, from the
    catalog model's shapes) within effective_bits 8.75 (fp8 8 bits, bf16 16) and fills most of it; its what-if
    prices the KV-bound RTX PRO 6000 row slower (bf16 expert GEMMs, the weights' extra bytes taken from the KV
    cache); so do its attention at the dataset's token-weighted decode context and its prompts' attention in
    bf16 (use_fp8_context_fmha disabled); ``MOE_ROWS`` moves its MoE layers onto the measured rows."""
    from ironlaw.models import workloads
    meta = workloads.resolve(workloads.Request("mixtral-8x7b", phase="decode", batch=1, seq=1)).meta
    h, n, layers = meta["hidden"], meta["experts"], meta["layers"]
    searched = meta["params"] - 2 * meta["vocab"] * h              # all but the embedding and lm_head (and norms)
    attention = h * (meta["heads"] + 2 * meta["kv_heads"]) * meta["head_dim"] + meta["heads"] * meta["head_dim"] * h
    experts_per_layer = searched // layers - attention - h * n    # the router's h x n
    assert abs(experts_per_layer - 8 * 3 * 4096 * 14336) < 3 * h     # the norms' few thousand weights
    for experts, attn, bf16 in bench.AUTO_QUANTIZE.values():
        assert abs(bf16 - layers * (experts * experts_per_layer + attn * attention)) < layers * 3 * h
        assert 0.9 * 0.75 / 8 < bf16 / searched <= 0.75 / 8
    r = next(dict(r, one_length=True) for r in rows                 # one length per request: fast, as the
             if r["benchmark"] == "mixtral-8x7b" and r["gpu"] == "rtx-pro-6000")    # weighted-context case runs
    base, placement = bench.predict(r), next(iter(bench.AUTO_QUANTIZE))
    assert bench.auto_quantized(r, placement) < 0.97 * base
    assert bench.at_weighted_context(r) < base
    assert bench.bf16_context_fmha(r) < base                      # bf16 context attention, slower than fp8's
    # on its 1.3 fused-MoE rows (slower than the law there: 6.1 ms a layer at the step's 5,553 tokens, the law 6.4)
    # the row speeds up; times the H200's measured 1.0 / 1.3 ratio it slows
    assert bench.auto_quantized(r, None, bench.MOE_ROWS["rtx-pro-6000"]) > base
    assert bench.auto_quantized(r, None, bench.release_10(r)) < 0.9 * base


def test_deepseek_r1_lengths_are_the_datasets():
    """The extract of the DeepSeek-R1 set's per-sample lengths (tests/data/mlperf_deepseek_r1_lengths.csv) names its
    origin and license, holds the 4,388 samples with the extract's mean prompt (803.79: ``BENCHMARKS``), outputs
    capped at the runs' max_output_len 20,000, and the mix's decode context, 4,979 tokens (one length: 2,747)."""
    from ironlaw.models.serving.lengths import read
    path = ROOT / bench.LENGTHS["deepseek-r1"]
    head = path.read_text()[:1200]
    assert "openshift-psap/performance-dashboard" in head and "71007029fb5bced1d79808e7e64dc4c2af82ea55" in head
    assert "Apache License 2.0" in head
    mix = read(path)
    assert mix.requests == 4388 and round(sum(mix.prompts) / 4388, 2) == 803.79 == round(803.7912, 2)
    assert mix.prompt == bench.BENCHMARKS["deepseek-r1"][2] and max(mix.outputs) == 20000
    assert round(sum(mix.outputs) / 4388, 2) == 3886.23 and mix.decode_context == 4979


def test_the_l40s_vllm_row_runs_its_submissions_prefill_threshold(rows):
    """RedHat's L40S Offline run sets --long-prefill-token-threshold 256 (its README); no other row sets one."""
    for r in rows:
        want = 256 if r["id"] == "5.1-0082" else None
        assert bench.serve_kwargs(r).get("long_prefill_token_threshold") == want, r["id"]


# benchmark: (samples, the harness's max output length, output mean, prompt mean) of each further extract kept
KEPT = {"mixtral-8x7b": (15000, 1024, 144.84, 427.39), "llama3.1-405b": (8313, 2000, 684.68, 9428.64)}


@pytest.mark.parametrize("name", sorted(KEPT))
def test_kept_lengths_are_the_datasets(name):
    """Each further extract of a set's per-sample lengths (``LENGTHS``) names its origin, license and the max output
    length its rows' harness ran in the v5.1 tree (generation_config.json's max_output_len), says its outputs are
    token counts, and holds the set's samples with the offline extract's mean prompt (``BENCHMARKS``)."""
    from ironlaw.models.serving.lengths import read
    samples, cap, output, prompt = KEPT[name]
    path = ROOT / bench.LENGTHS[name]
    head = " ".join(line[1:].strip() for line in open(path) if line.startswith("#"))
    assert "openshift-psap/performance-dashboard" in head and "71007029fb5bced1d79808e7e64dc4c2af82ea55" in head
    assert "Apache License 2.0" in head and "mlcommons/inference_results_v5.1 at 965182b0" in head
    assert f'"max_output_len": {cap} at line 4' in head and bench.TOKEN_COUNTS in head.lower()
    mix = read(path)
    assert mix.requests == samples and mix.prompt == bench.BENCHMARKS[name][2]
    assert round(sum(mix.prompts) / samples, 2) == prompt and round(sum(mix.outputs) / samples, 2) == output
    assert max(mix.outputs) <= cap


def test_rows_run_a_dataset_file_only_where_it_passes_the_rule(rows):
    """DeepSeek-R1, Mixtral and Llama-3.1-405B rows run their files (token counts, means within 10% of every run's
    generated tokens); Llama-2-70B and Llama-3.1-8B one length per request, and no lengths file is kept unread."""
    on = {r["benchmark"] for r in rows if bench.on_dataset_lengths(r)}
    off = {r["benchmark"] for r in rows if not bench.on_dataset_lengths(r)}
    assert on == {"deepseek-r1", "mixtral-8x7b", "llama3.1-405b"} and off == {"llama2-70b", "llama3.1-8b"}
    kept = {str(p.relative_to(ROOT)) for p in (ROOT / "tests/data").glob("mlperf_*_lengths.csv")}
    assert kept == {str(p) for p in bench.LENGTHS.values()}


@pytest.mark.parametrize("mean, header, used", [(219, True, False), (280, True, True), (280, False, False),
                                                (325, True, False)])
def test_a_file_failing_the_rule_is_not_used(rows, monkeypatch, tmp_path, mean, header, used):
    """A Llama-2-70B file (the runs: 273-302 generated tokens per sample) is used only where its header says its
    outputs are token counts and their mean is within 10% of the row's run: the reference answers' 219 tokens and
    325 fail, 280 passes; 280 in a file that does not say token counts fails."""
    path = tmp_path / f"70b-{mean}-{header}.csv"
    path.write_text(("# Outputs are token counts.\n" if header else "# Outputs: characters / 4.\n")
                    + "prompt,output\n" + f"222,{mean - 1}\n222,{mean + 1}\n")
    monkeypatch.setitem(bench.LENGTHS, "llama2-70b", path)
    r = next(r for r in rows if r["benchmark"] == "llama2-70b" and r["gpu"] == "h200")
    assert 273 <= r["output"] <= 302
    kw = bench.serve_kwargs(r)
    assert ("lengths" in kw) == used and ("prompt" in kw) == (not used)


def test_what_if_at_run_output_keeps_the_prompts_and_sets_every_output(rows, monkeypatch, tmp_path):
    """``--what-if``'s run-output case prices a row on a file of its dataset's prompts, every output the run's
    generated tokens per sample."""
    from ironlaw.models.serving.lengths import read
    monkeypatch.setattr(bench, "predict", lambda r, **given: given["lengths"])
    r = next(r for r in rows if r["benchmark"] == "mixtral-8x7b")
    mix, own = read(bench.at_run_output(r, tmp_path)), read(ROOT / bench.LENGTHS["mixtral-8x7b"])
    assert mix.prompts == own.prompts and set(mix.outputs) == {r["output"]} != set(own.outputs)


def test_rows_making_the_same_call_are_priced_once(rows, monkeypatch):
    """``scored`` prices each distinct ``serve`` call once and gives every row making it the same figure: on a
    dataset file the B200 Llama-3.1-405B rows' own generated tokens do not reach the call."""
    calls = []
    monkeypatch.setattr(bench, "predict", lambda r: calls.append(r["id"]) or 1000.0)
    b200 = [r for r in rows if r["benchmark"] == "llama3.1-405b" and r["gpu"] == "b200"]
    keys = {(r["tp"], r["pp"], tuple(sorted(bench.serve_kwargs(r).items()))) for r in b200}
    assert len({r["output"] for r in b200}) > len(keys)
    out = bench.scored(b200)
    assert len(calls) == len(keys) < len(b200) and {r["pred"] for r in out} == {1000.0}


def test_kv_once_prices_each_sequence_length_once(monkeypatch):
    """Within ``kv_once`` the KV bytes of a sequence of so many tokens are priced once per model, GPU and dtypes
    (the same figure each time); outside it the engine's own function runs again."""
    from types import SimpleNamespace

    from ironlaw.models.serving import engine
    calls = []
    monkeypatch.setattr(engine, "kv_sequence_bytes", lambda *a: calls.append(a[5]) or 2.0 * a[5])
    h200, b200 = SimpleNamespace(name="h200"), SimpleNamespace(name="b200")
    with bench.kv_once():
        got = [engine.kv_sequence_bytes("m", h200, {}, "fp8", "fp8", t, None) for t in (64, 64, 128, 64)]
        other = engine.kv_sequence_bytes("m", b200, {}, "fp8", "fp8", 64, None)
    assert got == [128.0, 128.0, 256.0, 128.0] and other == 128.0 and calls == [64, 128, 64]
    assert engine.kv_sequence_bytes("m", h200, {}, "fp8", "fp8", 64, None) == 128.0 and len(calls) == 4
