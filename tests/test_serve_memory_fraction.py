"""``serve --memory-fraction F`` (``ironlaw.serve(memory_fraction=F)``): the serving engine's own memory knob — vLLM's
``gpu_memory_utilization`` (CacheConfig, default 0.9), SGLang's ``mem_fraction_static`` (ServerArgs' rule by device
memory and TP), TensorRT-LLM's ``free_gpu_memory_fraction`` (KvCacheConfig: the KV cache's share of the memory free
after weights and workspace; ironlaw's default 0.95, the published runs'). Out of (0, 1]: one line, exit 2."""
from __future__ import annotations

import pytest

from ironlaw import api
from ironlaw.core.errors import IronlawError
from ironlaw.models.serving import frameworks

SPEC, ARGS = "llama3-8b", dict(prompt=1000, output=1000, dtype="fp8", max_throughput=True)


@pytest.mark.parametrize("value", ["0", "1.5", "-0.2", "nan", "150%"])
def test_out_of_range_is_one_line_and_exit_2(cli, value):
    r = cli("serve", SPEC, "--on", "h100", "--engine", "vllm", "--memory-fraction", value)
    assert r.rc == 2 and "--memory-fraction must be in (0, 1]" in r.err, r.err
    assert "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1


def test_library_keyword_is_checked_too():
    for bad in (0.0, 1.01, "0.9", True):
        with pytest.raises(IronlawError, match=r"--memory-fraction must be in \(0, 1\]"):
            api.serve(SPEC, "h100", engine="vllm", memory_fraction=bad)


def test_vllm_gpu_memory_utilization_moves_its_kv_cache():
    """vLLM keeps (1 − gpu_memory_utilization) of the device from weights, activations and KV: 0.95 leaves 5% of
    80 GiB, 4 GiB more KV than its default 0.9."""
    base = api.serve(SPEC, "h100", engine="vllm", **ARGS).to_dict()
    more = api.serve(SPEC, "h100", engine="vllm", memory_fraction=0.95, **ARGS).to_dict()
    cap = base["memory_per_gpu"]["device_memory_bytes"]
    assert base["engine"]["scheduler"]["memory_fraction"] == 0.9
    assert more["engine"]["scheduler"]["memory_fraction"] == 0.95
    assert more["engine"]["scheduler"]["sources"]["memory_fraction"] == "given (--memory-fraction)"
    gain = more["memory_per_gpu"]["kv_budget_bytes"] - base["memory_per_gpu"]["kv_budget_bytes"]
    assert gain == pytest.approx(0.05 * cap, rel=1e-9)
    assert "memory fraction 0.95 (given)" in " ".join(more["engine"]["summary"])


def test_sglang_mem_fraction_static_replaces_its_default_rule():
    s = frameworks.sglang(_h100())
    given = api.serve(SPEC, "h100", engine="sglang", memory_fraction=0.8, **ARGS).to_dict()
    own = api.serve(SPEC, "h100", engine="sglang", **ARGS).to_dict()
    assert own["engine"]["scheduler"]["memory_fraction"] == s.memory_fraction != 0.8
    assert given["engine"]["scheduler"]["memory_fraction"] == 0.8
    cap = own["memory_per_gpu"]["device_memory_bytes"]
    drop = own["memory_per_gpu"]["kv_budget_bytes"] - given["memory_per_gpu"]["kv_budget_bytes"]
    assert drop == pytest.approx((s.memory_fraction - 0.8) * cap, rel=1e-9)


def _h100():
    from ironlaw.machine import hardware
    return hardware.get("h100")


def test_tensorrt_llm_free_gpu_memory_fraction_is_its_kv_share():
    """On TensorRT-LLM the knob is free_gpu_memory_fraction, which --kv-fraction also sets: the same run; both
    given is refused in one line."""
    a = api.serve(SPEC, "h100", memory_fraction=0.8, **ARGS)
    b = api.serve(SPEC, "h100", kv_fraction=0.8, **ARGS)
    c = api.serve(SPEC, "h100", **ARGS)
    assert a.time_s == b.time_s and a.to_dict()["memory_per_gpu"]["kv_fraction"] == 0.8
    assert a.to_dict()["memory_per_gpu"]["kv_budget_bytes"] < c.to_dict()["memory_per_gpu"]["kv_budget_bytes"]
    with pytest.raises(IronlawError, match="give one"):
        api.serve(SPEC, "h100", memory_fraction=0.8, kv_fraction=0.9, **ARGS)


def test_online_serving_takes_it_on_every_engine():
    for engine in ("trtllm", "vllm", "sglang"):
        own = api.serve(SPEC, "h100", concurrency=8, engine=engine).to_dict()["capacity"]
        less = api.serve(SPEC, "h100", concurrency=8, engine=engine, memory_fraction=0.5).to_dict()["capacity"]
        assert less["kv_budget_bytes"] < own["kv_budget_bytes"], engine
        assert less["max_concurrency"] < own["max_concurrency"], engine


def test_kv_fraction_on_another_engine_points_at_memory_fraction(cli):
    r = cli("serve", SPEC, "--on", "h100", "--engine", "vllm", "--max-throughput", "--kv-fraction", "0.9")
    assert r.rc == 2 and "--kv-fraction is TensorRT-LLM's" in r.err and "--memory-fraction" in r.err


def test_a_device_priced_on_its_own_calibration_refuses_it(cli):
    r = cli("serve", SPEC, "--on", "xeon-8480", "--memory-fraction", "0.8")
    assert r.rc == 2 and "--memory-fraction" in r.err and len(r.err.strip().splitlines()) == 1


def test_cli_takes_a_percentage(cli):
    r = cli("serve", SPEC, "--on", "h100", "--engine", "vllm", "--memory-fraction", "95%", "--max-throughput",
            "--dtype", "fp8", "--format", "json")
    assert r.rc == 0, r.err
    assert r.json()["engine"]["scheduler"]["memory_fraction"] == pytest.approx(0.95)


@pytest.mark.parametrize("engine,workspace", [("vllm", True), ("sglang", False)])
def test_a_fraction_too_small_for_the_weights_names_the_reserve(cli, engine, workspace):
    """vLLM and SGLang keep (1 − fraction) of the device from weights and KV: at 0.1 of 79.6 GiB the 15 GiB of
    Llama-3-8B do not fit, and the refusal names what the fraction holds back (SGLang's reserve holds its activations: no
    workspace line) and the fix."""
    r = cli("serve", SPEC, "--on", "h100", "--engine", engine, "--memory-fraction", "0.1", "--max-throughput")
    assert r.rc == 2 and len(r.err.strip().splitlines()) == 1
    assert "71.7 GiB the memory fraction holds back" in r.err and "a larger --memory-fraction" in r.err
    assert ("workspace" in r.err) == workspace
