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
    assert "--engine vllm or --engine sglang" in line
    assert "NVIDIA GPUs only" in one_line_error(run_cli("serve", "llama3-8b", "--on", on, "--max-throughput"))


def test_search_skips_tensorrt_llm_off_nvidia_and_serves_it_with_vllm():
    line = one_line_error(run_cli("search", "llama3-8b", "--phase", "serve", "--on", "mi355x", "--gpus", "2"))
    assert "--serve-engine trtllm:" in line and "NVIDIA GPUs only" in line
    r = run_cli("search", "llama3-8b", "--phase", "serve", "--on", "mi355x", "--gpus", "2", "--serve-engine", "vllm")
    assert r.rc == 0, r.err


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
