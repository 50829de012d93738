"""What a demanding ML engineer meets trying every command: an engine on a GPU it does not run on, units that
differ between commands, a device named as what it is not, bytes split by the wrong count. Each pinned by the
test that failed before its fix."""
import pytest

from conftest import one_line_error, run_cli


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
