"""What a demanding ML engineer meets trying every command: an engine on a GPU it does not run on, units that
differ between commands, a device named as what it is not, bytes split by the wrong count. Each pinned by the
test that failed before its fix."""
import sys
from pathlib import Path

import pytest

from conftest import one_line_error, run_cli

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))


# ------------------------------------------------------------------ TensorRT-LLM runs on NVIDIA GPUs only
@pytest.mark.parametrize("on", ["mi300x", "gaudi3"])
def test_serve_refuses_tensorrt_llm_off_nvidia(on):
    line = one_line_error(run_cli("serve", "llama3-8b", "--on", on, "--engine", "trtllm"))
    assert "--engine trtllm: TensorRT-LLM" in line and "NVIDIA GPUs only" in line and on in line
    assert "--engine vllm or --engine sglang" in line and "vLLM is the default there" in line


@pytest.mark.parametrize("on, maker", [("mi300x", "AMD"), ("gaudi3", "Intel")])
def test_serve_without_an_engine_runs_vllm_off_nvidia_and_says_so(on, maker):
    import ironlaw
    note = f"engine: vLLM (the default on {maker} GPUs: TensorRT-LLM runs on NVIDIA GPUs only)"
    for argv in ((), ("--max-throughput",)):
        r = run_cli("serve", "llama3-8b", "--on", on, *argv)
        assert r.rc == 0 and note in " ".join(r.out.split()), r.err or r.out
    lib = ironlaw.serve("llama3-8b", on=on, max_throughput=True).to_dict()
    ref = ironlaw.serve("llama3-8b", on=on, max_throughput=True, engine="vllm").to_dict()
    assert lib["engine"]["name"] == "vllm" and lib["time_s"] == ref["time_s"]
    assert "NVIDIA" not in ironlaw.serve("llama3-8b", on="h100").to_dict()["engine"]["summary"][0]
    line = one_line_error(run_cli("serve", "llama3-8b", "--on", on, "--release", "1.0"))
    assert "--release 1.0: a TensorRT-LLM release" in line and "vLLM" in line


def test_search_without_an_engine_runs_each_devices_default():
    import ironlaw
    r = run_cli("search", "llama3-8b", "--phase", "serve", "--on", "mi355x", "--gpus", "2")
    assert r.rc == 0 and "serving framework: vLLM" in r.out, r.err
    line = one_line_error(run_cli("search", "llama3-8b", "--phase", "serve", "--on", "mi355x", "--gpus", "2",
                                  "--serve-engine", "trtllm"))
    assert "--serve-engine trtllm:" in line and "NVIDIA GPUs only" in line
    both = ironlaw.search("llama3-8b", phase="serve", on="h100,mi300x", gpus=1, top=5).to_dict()
    assert both["settings"] == {"serve_engine": "per-device", "serve_engines": {"h100": "trtllm", "mi300x": "vllm"}}
    r = run_cli("search", "llama3-8b", "--phase", "serve", "--on", "h100,mi300x", "--gpus", "1")
    assert "serving framework: TensorRT-LLM on h100, vLLM on mi300x" in " ".join(r.out.split()), r.out
    line = one_line_error(run_cli("search", "llama3-8b", "--serve-engine", "trtllm"))
    assert "--serve-engine belongs to the serving search" in line


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_vllm_and_sglang_on_amd_name_the_tables_that_price_them(engine):
    import ironlaw
    res = ironlaw.serve("llama3-8b", on="mi300x", engine=engine, max_throughput=True)
    line = res.to_dict()["engine"]["kernels"]["source"]
    assert "aiter" in line and "gemm fp8" in line and "TensorRT-LLM" not in line


# ------------------------------------------------------------------ fit prints times as every command does
def test_fit_prints_seconds_as_seconds():
    from ironlaw.cli.fit import row_cells
    cells = row_cells({"case": "resnet18 b8", "measured_s": 2.28297, "cv": 0.02, "predicted_s": 0.0413,
                       "error": -0.1, "naive_error": 0.5, "within_25pct_share": 0.8})
    assert cells[1] == "2.28 s" and cells[3] == "41.3 ms", cells


# ------------------------------------------------------------------ a CPU is not a GPU
def test_search_on_a_cpu_counts_cpus():
    r = run_cli("search", "llama3-8b", "--phase", "serve", "--on", "xeon-8480", "--gpus", "2", "--slo",
                "ttft=20s,itl=1s", "--top", "2")
    assert r.rc == 0, r.err
    assert "up to 2 CPUs" in r.out and "tok/s/CPU" in r.out and "mem/CPU" in r.out and "/GPU" not in r.out and "GPUs," not in r.out, r.out
    assert "serving framework: none" in r.out and "TensorRT-LLM" not in r.out, r.out


def test_training_two_sockets_on_one_node_needs_no_network():
    """Two CPUs, --nodes 1, pp 1: the stage-to-stage pair past the last stage was built as a two-node group and
    refused for want of a network link, 'use --nodes 1', which was given."""
    import ironlaw
    step = ironlaw.train("llama3-8b", on="xeon-8480", gpus=2, nodes=1, global_batch=8, seq=1024)
    assert step.time_s > 0
    res = ironlaw.search("llama3-8b", on="xeon-8480", gpus=2, global_batch=8, seq=1024, top=1)
    assert res.to_dict()["device_unit"] == "CPU"


# ------------------------------------------------------------------ tensor parallel past the KV heads
def _attention(tp: int):
    import ironlaw
    est = ironlaw.analyze("llama3-8b", on="h100", phase="decode", seq=1024, batch=8, tp=tp, gpus=tp)
    return next(op for op in est.graph.ops if op.kind == "attention")


def test_a_rank_holding_one_kv_head_reads_that_heads_new_k_and_v():
    """Llama-3-8B (32 query heads, 8 KV heads, head dim 128) on TP 32: each rank holds one KV head, four ranks
    each. Its attention reads its query head, that KV head's new K and V, and writes its output head and that
    K/V to the cache: q/32 + 2·kv/8 + o/32 of the whole, not all over 32."""
    whole, rank = _attention(1), _attention(32)
    q, kv, o = 4096, 2 * 1024, 4096
    assert rank.bytes["activations"] == pytest.approx(whole.bytes["activations"] * (q / 32 + kv / 8 + o / 32)
                                                      / (q + kv + o))
    assert rank.bytes_written == pytest.approx(whole.bytes_written * (o / 32 + kv / 8) / (o + kv))
    assert rank.bytes["kv_cache"] == pytest.approx(whole.bytes["kv_cache"] / 8)


def test_a_decode_moved_to_mmha_by_tp_states_its_history_as_the_builder_does():
    """One query head per KV head (TP 32 on 8 KV heads) runs TensorRT-LLM's MMHA kernel, whose launch splits the
    whole sequence: the builder states it (``history``) for such a model on one GPU; the TP rule did not."""
    import ironlaw
    rank = _attention(32)
    assert rank.attrs["kernel"].endswith("_mha") and rank.attrs["history"] == 1025.0
    mha = ironlaw.analyze("gpt2", on="h100", phase="decode", seq=1023, batch=8)        # 12 heads on 12 KV heads
    assert next(op for op in mha.graph.ops if op.kind == "attention").attrs["history"] == 1024.0


@pytest.mark.parametrize("tp", [4, 8])
def test_mxfp4_experts_under_tp_take_no_negative_time(tp):
    """gpt-oss's MXFP4 experts on a measured MoE layer drop their dequantization FLOPs (the layer's time holds
    them); under TP the op's vector FLOPs were split, its dequantization FLOPs were not: a negative time."""
    import ironlaw
    est = ironlaw.analyze("gpt-oss-20b", on="h100", phase="decode", seq=1024, batch=8, tp=tp, gpus=tp)
    assert est.time_s > 0 and all(o["flops"] >= 0 and o["time_s"] > 0 for o in est.to_dict()["ops"])


# ------------------------------------------------------------------ the eager prefill's host term, explained
def test_the_prefill_host_term_says_what_it_is_made_of():
    """A 128-token prompt's TTFT on H100 is mostly the eager prefill's launches: the line and the document say
    how many kernels at what cost, and that the cost is a constant fitted on TensorRT-LLM's H100 cells."""
    import ironlaw
    from ironlaw.models.serving.engine import FITTED
    d = ironlaw.serve("llama3.1-8b", on="h100", prompt=128).to_dict()
    h = d["prefill_host"]
    assert h["eager"] and h["kernels"] > 0 and h["launch_s_per_kernel"] == FITTED.launch_s
    assert h["launch_s"] == pytest.approx(h["kernels"] * FITTED.launch_s)
    assert f"kernels, {h['kernels']:,} × 109 µs" in h["why"] and "fitted on TensorRT-LLM's H100" in h["why"]
    assert d["decode_host"]["kernels"] == 0 and "one replayed CUDA graph" in d["decode_host"]["why"]


# ------------------------------------------------------------------ the user's numbers, the user's flags
def test_a_serving_search_past_the_context_names_prompt_and_output():
    """`search gpt2 --phase serve` (default prompt 1024, output 256 on a 1,024-position model) said "--seq 1024
    exceeds the 1024 learned positions": an option the user never gave, a sum it never checked."""
    line = one_line_error(run_cli("search", "gpt2", "--phase", "serve", "--on", "h100", "--gpus", "1"))
    assert "--prompt 1024 + --output 256 = 1,280 tokens exceed the 1,024-token context of gpt2" in line, line
    assert "--seq" not in line


def test_vllm_replays_piecewise_graphs_for_a_short_prefill():
    """vLLM V1 replays piecewise CUDA graphs around its attention for a step of up to its largest capture size
    (512 tokens on H100): a 128-token prompt's host pays its attention kernels and the graphs between them, not
    every kernel; a 2,000-token prompt runs eagerly. TensorRT-LLM and SGLang run every prefill eagerly."""
    import ironlaw
    short = ironlaw.serve("llama3.1-8b", on="h100", prompt=128, engine="vllm").to_dict()["prefill_host"]
    assert short["piecewise"] and short["kernels"] == 2 * 32 + 1 and "piecewise CUDA graphs" in short["why"]
    long = ironlaw.serve("llama3.1-8b", on="h100", prompt=2000, engine="vllm").to_dict()["prefill_host"]
    assert not long["piecewise"] and long["kernels"] > 300
    for engine in ("trtllm", "sglang"):
        h = ironlaw.serve("llama3.1-8b", on="h100", prompt=128, engine=engine).to_dict()["prefill_host"]
        assert not h["piecewise"] and h["kernels"] == long["kernels"]


# ------------------------------------------------------------------ the speed benchmark counts what it searched
def test_serve_search_speed_names_a_skipped_device_and_does_not_count_it():
    """benchmarks/serve_search_speed.py labelled a four-device search "on 4 devices" and gave it 4 × 2 s though
    the search skipped mi355x (TensorRT-LLM runs on NVIDIA GPUs only)."""
    import ironlaw
    from serve_search_speed import searched
    res = ironlaw.search("llama3-8b", phase="serve", on="h100,mi355x", gpus=1, top=1, serve_engine="trtllm")
    assert searched("llama3-8b on 2 devices", "h100,mi355x", res.to_dict()["skipped"]) == \
        ("llama3-8b on 2 devices (1 searched; skipped mi355x)", 1)
    assert searched("x", "h100,h200", []) == ("x", 2)


# ------------------------------------------------------------------ a refusal quotes the what-if as written
@pytest.mark.parametrize("target", ["all", "activations+weights"])
def test_a_quant_refusal_quotes_the_users_target(target):
    line = one_line_error(run_cli("compare", "llama3-8b", "--phase", "decode", "--on", "a100", "--what-if",
                                  f"quant=fp8,target={target}"))
    assert line.startswith(f"ironlaw: error: quant=fp8,target={target}: a100 has no fp8 matrix unit"), line


# ------------------------------------------------------------------ a user's own kernel table names no framework
def _user_gemm(folder, framework=None):
    folder.mkdir(parents=True, exist_ok=True)
    rows = [("framework,version," if framework else "") + "device,gemm_dtype,m,n,k,latency"]
    for m in (16, 256, 4096):
        for n, k in ((4096, 4096), (14336, 4096)):
            t_ms = 0.006 + 2 * m * n * k / 600e12 * 1e3 + 2 * (m + n) * k / 3e12 * 1e3
            rows.append((f"{framework},0.1," if framework else "") + f"NVIDIA H100 80GB HBM3,bfloat16,{m},{n},{k},"
                        f"{t_ms:.6f}")
    (folder / "gemm_perf.csv").write_text("\n".join(rows) + "\n")
    return str(folder)


def test_calibrate_labels_a_users_table_with_the_framework_it_names(tmp_path, shared_kernel_fits):
    """`calibrate --kernels MYDIR` printed "(trtllm)" over a table that names no framework, and its JSON said
    framework "trtllm"; a table whose rows name SGLang is labelled sglang (--framework on an unnamed one:
    tests/test_first_steps.py)."""
    pytest.importorskip("pandas")
    import ironlaw
    mine = _user_gemm(tmp_path / "mine")
    r = run_cli("calibrate", "--kernels", mine)
    assert r.rc == 0 and "(framework unstated: the tables name none)" in " ".join(r.out.split()), r.err or r.out
    assert "trtllm" not in r.out
    res = ironlaw.calibrate(mine)
    assert res.framework == "unstated"
    assert res.calibration["provenance"]["gemm bf16"]["version"] == f"kernel tables in {mine}"
    assert "( )" not in res.calibration["source"]
    named = _user_gemm(tmp_path / "sg", framework="sglang")
    assert ironlaw.calibrate(named, framework="sglang").framework == "sglang"


# ------------------------------------------------------------------ an engine named for a CPU is not ignored
@pytest.mark.parametrize("engine", ["trtllm", "vllm"])
def test_an_engine_named_for_a_cpu_is_refused_not_ignored(engine):
    """`serve --on xeon-8480 --engine trtllm` answered on the CPU's own steps ("serving framework: none") and
    dropped the option; vLLM was refused. Both are now; without --engine the CPU's own steps price it."""
    line = one_line_error(run_cli("serve", "llama3-8b", "--on", "xeon-8480", "--engine", engine))
    assert f"--engine {engine}:" in line and "modelled on GPUs" in line and "leave --engine out" in line
    line = one_line_error(run_cli("search", "llama3-8b", "--phase", "serve", "--on", "epyc-9654", "--serve-engine",
                                  engine, "--slo", "ttft=10s,itl=1s"))
    assert line.startswith(f"ironlaw: error: --serve-engine {engine}:") and "modelled on GPUs" in line
    assert run_cli("serve", "llama3-8b", "--on", "xeon-8480").rc == 0


# ------------------------------------------------------------------ a refusal names what the user gave
def test_a_refusal_names_the_default_engine_as_a_default_not_as_a_flag():
    """`serve --on a100 --kv-dtype fp8` said "--kv-dtype fp8 --engine trtllm: …" and `serve mixtral-8x7b --on
    mi300x --redundant-experts 2 …` said "--engine vllm is not modelled", flags the user never typed; and the
    wide-EP refusal named --moe-dispatcher when only --redundant-experts was given."""
    line = one_line_error(run_cli("serve", "llama3-8b", "--on", "a100", "--kv-dtype", "fp8"))
    assert "--kv-dtype fp8 with the default engine on a100 (TensorRT-LLM):" in line and "--engine trtllm" not in line
    line = one_line_error(run_cli("serve", "llama3-8b", "--on", "a100", "--kv-dtype", "fp8", "--engine", "trtllm"))
    assert "--kv-dtype fp8 --engine trtllm:" in line
    line = one_line_error(run_cli("serve", "mixtral-8x7b", "--on", "mi300x", "--max-throughput", "--tp", "2", "--ep",
                                  "2", "--redundant-experts", "2"))
    assert line.startswith("ironlaw: error: --redundant-experts 2: ") and "--engine vllm" not in line
    assert "the default engine on mi300x (vLLM) is not modelled" in line
    line = one_line_error(run_cli("serve", "mixtral-8x7b", "--on", "h100", "--max-throughput", "--engine", "sglang",
                                  "--moe-dispatcher", "deepep"))
    assert line.startswith("ironlaw: error: --moe-dispatcher deepep: ") and "--engine sglang is not" in line


# ------------------------------------------------------------------ redundant experts: advice that leads somewhere
@pytest.mark.parametrize("argv, says", [
    (("llama3-8b", "--phase", "train", "--gpus", "8", "--global-batch", "64"),
     "--redundant-experts 4: llama3-8b is dense (no routed experts to replicate)"),
    (("mixtral-8x7b", "--phase", "decode"), "--redundant-experts 4: inference (decode) models tensor parallelism"),
    (("mixtral-8x7b", "--phase", "train", "--gpus", "8", "--global-batch", "64"),
     "--redundant-experts 4 spreads replicas of hot experts over the EP group; add --ep > 1"),
])
def test_redundant_experts_refusals_lead_somewhere(argv, says):
    """A dense model was told "add --ep > 1" (then: "--ep 2 does not divide the 0 experts"), and an inference
    phase too (then: "--ep 2: inference models tensor parallelism only")."""
    line = one_line_error(run_cli("analyze", *argv, "--on", "h100", "--redundant-experts", "4"))
    assert says in line, line


# ------------------------------------------------------------------ a CPU's serving search names no framework
def test_a_cpu_serving_search_names_no_framework_in_its_json():
    """The text said "serving framework: none" and the JSON "serve_engine": "trtllm" for the same CPU search; a
    CPU beside a GPU was listed under TensorRT-LLM too."""
    import ironlaw
    from ironlaw.core.schemas import validate
    cpu = ironlaw.search("llama3-8b", phase="serve", on="xeon-8480", gpus=1, slo="ttft=20s,itl=1s", top=1).to_dict()
    validate(cpu)
    assert cpu["settings"] == {"serve_engine": "none"}
    both = ironlaw.search("llama3-8b", phase="serve", on="xeon-8480,h100", gpus=1, slo="ttft=20s,itl=1s",
                          top=5).to_dict()
    validate(both)
    assert both["settings"]["serve_engines"] == {"xeon-8480": "none", "h100": "trtllm"}


# ------------------------------------------------------------------ memory in GiB in the HTML reports too
def test_html_reports_print_memory_in_gib_as_the_text_does(tmp_path):
    """The text says an H100 holds 80 GiB; the serve, training and analyze reports said "85.9 GB" for the same
    memory (decimal prefixes are for traffic and bandwidth)."""
    import ironlaw
    serve = tmp_path / "serve.html"
    ironlaw.serve("llama3-8b", on="h100", html=str(serve))
    train = tmp_path / "train.html"
    ironlaw.train("llama3-8b", on="h100", gpus=8, global_batch=64, seq=1024, zero=3, html=str(train))
    page = tmp_path / "analyze.html"
    ironlaw.api.report("llama3-8b", str(page), on="h100", phase="decode")
    for path in (serve, train, page):
        text = path.read_text()
        assert "80 GiB" in text and "85.9 GB" not in text, path.name


def test_fit_prints_its_framework_term_as_a_time():
    """`fit` printed "framework 8448.0 µs per op"; every other command prints that time as 8.45 ms."""
    from ironlaw.cli.fit import framework_line
    cal = {"framework_s": 8.448e-3, "framework_share": 0.0, "frontend": {"hf": {"framework_s": 2e-5,
                                                                              "framework_share": 0.1}}}
    assert framework_line(cal) == "framework 8.45 ms per op + 0.0%, hf 20 µs per op + 10.0%"


# ------------------------------------------------------------------ --page-tokens: each engine's own block
def test_page_tokens_takes_each_engines_own_block_and_the_help_says_which():
    """`serve --engine vllm --page-tokens 16` (vLLM's own block, the one its capacity line uses) was refused as
    "blocks of 32 tokens (TensorRT-LLM's tokens_per_block)"; the help said 32-token blocks on any GPU engine."""
    import ironlaw
    for engine, block in (("trtllm", 32), ("vllm", 16), ("sglang", 1)):
        d = ironlaw.serve("llama3-8b", on="h100", engine=engine, page_tokens=block).to_dict()
        assert d["capacity"]["page_tokens"] == block
    line = one_line_error(run_cli("serve", "llama3-8b", "--on", "h100", "--engine", "vllm", "--page-tokens", "32"))
    assert "--page-tokens 32:" in line and "blocks of 16 tokens" in line
    helptext = " ".join(run_cli("serve", "--help").out.split())
    assert "TensorRT-LLM 32, vLLM 16, SGLang 1" in helptext


def test_calibrate_reads_an_amd_folder_without_framework(shared_kernel_fits):
    """`calibrate --kernels AMD_DIR` said "no kernel table … for framework 'trtllm'", a framework the user never
    named; a folder holding one framework's tables (aiter's) is read as that framework's."""
    pytest.importorskip("pandas")
    import ironlaw
    data = Path(__file__).parent / "data" / "aiter_kernels" / "mi355x"
    res = ironlaw.calibrate(str(data))
    assert res.framework == "aiter" and res.groups == ironlaw.calibrate(str(data), framework="aiter").groups


# ------------------------------------------------------------------ compare against the device it already runs on
def test_compare_refuses_vs_hardware_naming_the_same_device_without_a_what_if():
    line = one_line_error(run_cli("compare", "llama3-8b", "--on", "h100", "--vs-hardware", "h100"))
    assert "--vs-hardware h100" in line and "--on h100" in line and "--what-if" in line
    r = run_cli("compare", "llama3-8b", "--on", "h100", "--vs-hardware", "h100", "--what-if", "quant=fp8")
    assert r.rc == 0, r.err


def test_the_engine_step_model_says_what_it_was_fitted_on_not_which_engine_it_is():
    import ironlaw
    line = ironlaw.serve("llama3-8b", on="mi300x").to_dict()
    text = str(line)
    assert "TensorRT-LLM-style engine" not in text
    assert "fitted on TensorRT-LLM H100 runs" in text
