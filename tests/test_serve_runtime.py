"""``serve --runtime pytorch|cpp``: TensorRT-LLM's PyTorch executor (the default, what the engine constants were
fitted on) or its C++ executor over a TensorRT engine (``ironlaw.models.serving.step.runtime``): the same kernels and
device time, the host's launches at a measured C++ launch each, no CUDA graphs."""
from __future__ import annotations

import json

import pytest

import ironlaw
from ironlaw.core.errors import IronlawError
from ironlaw.models.serving.engine import FITTED

SPEC, ARGS = "llama3.1-8b", dict(on="h100", prompt=128, output=64)
CPP_LAUNCH_S = 5e-6        # step.runtime.CPP_LAUNCH_S: the measured C++ launch (4-6 µs), its middle


@pytest.fixture(scope="module")
def docs() -> dict:
    return {rt: ironlaw.serve(SPEC, runtime=rt, **ARGS).to_dict() for rt in ("pytorch", "cpp")}


def test_cpp_prices_the_same_kernels_and_device_time_with_a_smaller_host(docs):
    """A step with prompt tokens: the same kernels and the same device seconds, the host's launches at the sourced
    C++ cost (5 µs) in place of the PyTorch executor's fitted 109 µs."""
    py, cpp = docs["pytorch"]["prefill_host"], docs["cpp"]["prefill_host"]
    assert cpp["kernels"] == py["kernels"] > 0 and cpp["device_s"] == pytest.approx(py["device_s"])
    assert cpp["launch_s_per_kernel"] == CPP_LAUNCH_S and py["launch_s_per_kernel"] == FITTED.launch_s
    assert cpp["host_s"] < py["host_s"] and cpp["launch_s"] == pytest.approx(cpp["kernels"] * 5e-6)
    assert (cpp["runtime"], py["runtime"]) == ("cpp", "pytorch") and "C++ executor" in cpp["why"]


def test_cpp_runs_decode_steps_eagerly_without_cuda_graphs(docs):
    """NVIDIA's MLPerf harness gives the C++ executor no CUDA-graph knob (cudaGraphMode defaults to false): a
    decode step launches its kernels from C++; the PyTorch executor replays one graph."""
    assert docs["pytorch"]["decode_host"]["kernels"] == 0
    dec = docs["cpp"]["decode_host"]
    assert dec["eager"] and dec["kernels"] > 0 and dec["launch_s_per_kernel"] == CPP_LAUNCH_S
    assert "no CUDA graph" in docs["cpp"]["itl_why"]


def test_json_says_the_runtime_and_the_default_document_does_not_change(cli):
    r = cli("serve", SPEC, "--on", "h100", "--prompt", "128", "--output", "64", "--runtime", "cpp", "--format", "json")
    assert r.rc == 0, r.err
    d = json.loads(r.out)
    assert d["engine"]["runtime"] == "cpp" and d["prefill_host"]["runtime"] == "cpp"
    assert any(line.startswith("runtime: TensorRT-LLM's C++ executor") for line in d["engine"]["summary"])
    assert "runtime" not in ironlaw.serve(SPEC, **ARGS).to_dict()["engine"]


def test_the_max_throughput_table_names_the_runtime(cli):
    r = cli("serve", SPEC, "--on", "h100", "--max-throughput", "--prompt", "128", "--output", "64", "--requests",
            "64", "--runtime", "cpp", "--format", "md")
    assert r.rc == 0, r.err
    assert "runtime: TensorRT-LLM's C++ executor" in r.out and "C++ executor (TensorRT engine)" in r.out


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_cpp_runtime_with_another_engine_is_one_line_and_exit_2(cli, engine):
    r = cli("serve", SPEC, "--on", "h100", "--engine", engine, "--runtime", "cpp")
    assert r.rc == 2 and "--runtime cpp" in r.err and "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1
    with pytest.raises(IronlawError, match="C\\+\\+ executor runs TensorRT engines"):
        ironlaw.serve(SPEC, engine=engine, runtime="cpp", max_throughput=True, **ARGS)


def test_unknown_runtime_is_one_line_and_exit_2(cli):
    r = cli("serve", SPEC, "--on", "h100", "--runtime", "python")
    assert r.rc == 2 and "--runtime 'python': unknown (known: pytorch, cpp)" in r.err
    assert len(r.err.strip().splitlines()) == 1
