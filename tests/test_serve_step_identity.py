"""One step model under both ``serve`` modes: ``ironlaw serve`` on a GPU (``online.estimate``, the engine step model by
``online.step_model``'s rule) and ``serve --max-throughput`` price a step of the same batch, lengths and engine limits
identically (``step.step_seconds``) and hold the same sequences; the modes differ only in how batches form."""
from __future__ import annotations

import math

import pytest

from ironlaw.core import schemas
from ironlaw.core.errors import IronlawError
from ironlaw.models.serving import online, throughput
from ironlaw.models.serving.step import padded, step_seconds

SPEC, HW, P, O = "llama3.1-8b", "h100", 2048, 2048


@pytest.mark.parametrize("max_batch", [None, 256])
def test_same_batch_same_step_seconds(max_batch):
    m = throughput.max_throughput(SPEC, HW, P, O, dtype="fp8", max_batch=max_batch)
    s = m.steady
    assert s["context_steps"] == 1 and s["mixed_step_share"] < 1.0   # one chunk per mixed step, decode-only rest
    batch = s["decode_tokens_per_step"]
    assert batch == m.batch_per_engine
    e = online.estimate(SPEC, HW, P, O, batch, dtype="fp8", chunk=m.limits.max_num_tokens,
                               max_batch=max_batch)
    assert e.engine.limits == m.limits and e.step_model.name == "engine"
    q = s["mixed_step_share"]
    assert math.isclose(q * e.mixed_step_s + (1 - q) * e.decode_step_s, s["step_s"], rel_tol=1e-12)


def test_decode_step_pads_to_the_captured_graph():
    """268 sequences (the KV limit at 2048/2048) replay the 384 graph: slower per step than 256 padded to 256."""
    e256 = online.estimate(SPEC, HW, P, O, 256, dtype="fp8")
    e268 = online.estimate(SPEC, HW, P, O, 268, dtype="fp8")
    assert padded(268, e268.engine.run.max_batch) == 384 and padded(256, e256.engine.run.max_batch) == 256
    assert e268.decode_step_s > e256.decode_step_s * 1.05
    _, est = step_seconds(e268.engine.run, 268, 0.0, 0.0, pad=False)
    unpadded = float(est.time_s) + e268.engine.run.constants.step_s   # the device's time, not an eager step's launches
    assert unpadded < e268.decode_step_s


def test_engine_steady_state_follows_the_online_cycle():
    e = online.estimate(SPEC, HW, P, O, 64, dtype="fp8")
    cycle = O * e.decode_step_s + 64 * e.prefill_s
    assert math.isclose(e.tokens_per_s, 64 * O / cycle, rel_tol=1e-12)
    assert math.isclose(e.ttft_s, e.prefill_s + e.decode_step_s, rel_tol=1e-12)
    c = online.estimate(SPEC, HW, P, O, 64, dtype="fp8", chunk=512)
    assert c.decode_step_s == e.decode_step_s and c.mixed_step_s > c.decode_step_s
    assert math.isclose(c.ttft_s, 4 * c.mixed_step_s, rel_tol=1e-12)


def test_engine_estimate_errors():
    with pytest.raises(IronlawError, match="--concurrency 100000 exceeds"):
        online.estimate(SPEC, HW, P, O, 100000, dtype="fp8")
    with pytest.raises(IronlawError, match="--concurrency 64 exceeds the engine's max batch size 32, given"):
        online.estimate(SPEC, HW, P, O, 64, dtype="fp8", max_batch=32)
    with pytest.raises(IronlawError, match="--chunk"):
        online.estimate(SPEC, HW, P, O, 8, dtype="fp8", chunk=0)


def test_one_capacity_for_both_modes():
    """The online mode's capacity on a GPU is the engine's: the sequences max-throughput settles at when the KV
    cache sets its batch (268 at 2048/2048), and one more is refused."""
    m = throughput.max_throughput(SPEC, HW, P, O, dtype="fp8")
    assert m.batch_limit == "kv_memory"
    e = online.estimate(SPEC, HW, P, O, 8, dtype="fp8")
    assert e.capacity["max_concurrency"] == m.batch_per_engine == 268
    assert e.capacity["kv_budget_bytes"] == m.memory["kv_budget_bytes"]
    online.estimate(SPEC, HW, P, O, 268, dtype="fp8")
    with pytest.raises(IronlawError, match="--concurrency 270 exceeds the KV-cache capacity of h100: 268 sequences"):
        online.estimate(SPEC, HW, P, O, 270, dtype="fp8")


def test_the_rule_names_the_step_model():
    """A GPU is priced by the engine, any other kind by its own calibration; asking the engine for a CPU is an
    error, and the device's options are refused on the engine, never ignored."""
    gpu = online.estimate("llama3-8b", "h100", 512, 64, 4)
    cpu = online.estimate("llama3-8b", "xeon-8480", 512, 64, 4)
    assert gpu.step_model.name == "engine" and "GPU" in gpu.step_model.rule
    assert cpu.step_model.name == "device" and "kind 'cpu'" in cpu.step_model.rule
    assert gpu.to_dict()["step_model"]["engine"]["max_num_tokens"] == gpu.engine.limits.max_num_tokens
    with pytest.raises(IronlawError, match="prices GPUs"):
        online.estimate("llama3-8b", "xeon-8480", 512, 64, 4, steps="engine")
    with pytest.raises(IronlawError, match="--page-tokens 16: .* blocks of 32 tokens"):
        online.estimate("llama3-8b", "h100", 512, 64, 4, page_tokens=16)
    with pytest.raises(IronlawError, match="--serial belongs to the device step model"):
        online.estimate("llama3-8b", "h100", 512, 64, 4, composition="serial")


def test_cli_says_which_step_model(cli):
    r = cli("serve", "llama3-8b", "--on", "h100", "--concurrency", "8")
    assert r.rc == 0 and "steps: engine step model (h100 is a GPU" in r.out, r.err
    r = cli("serve", "llama3-8b", "--on", "gb10", "--concurrency", "8", "--format", "json")
    assert r.rc == 0, r.err
    d = r.json()
    assert d["step_model"]["name"] == "device" and "kind 'soc'" in d["step_model"]["rule"]
    schemas.validate(d)
    r = cli("serve", "llama3-8b", "--on", "h100", "--concurrency", "8", "--chunk", "512", "--format", "json")
    d = r.json()
    assert d["step_model"]["name"] == "engine" and d["mixed_step_s"] > d["decode_step_s"]
    schemas.validate(d)
    d["step_model"]["name"] = "vllm"
    with pytest.raises(Exception):
        schemas.validate(d)
    r = cli("serve", "llama3-8b", "--on", "h100", "--max-seq", "4096")
    assert r.rc == 2 and "--max-seq belongs to the device step model" in r.err and r.err.count("\n") == 1


def test_a_concurrency_above_trtllm_bench_max_batch_runs_on_the_limits_it_would_be_given():
    """trtllm-bench sizes DeepSeek-V3's max batch at 160 for 128/1024 on 8 H200 (its heuristic counts KV over
    max(tp, kv heads) heads; the latent cache is far smaller), while the KV cache holds 1,546 sequences of 1,152
    tokens. Online at 512 runs on the limits ``--max-throughput --max-batch 512`` runs on, and its steps cost what
    that run's do."""
    a, kw = ("deepseek-v3", "h200", 128, 1024), dict(tp=8, dtype="fp8")
    assert throughput.max_throughput(*a, **kw).batch_per_engine == 160
    m = throughput.max_throughput(*a, max_batch=512, **kw)
    s = m.steady
    assert m.batch_per_engine == s["decode_tokens_per_step"] == 512 and s["mixed_step_share"] < 1.0
    assert s["requests_per_step"] * s["steps_per_request"] == 512      # the token budget does not bind
    e = online.estimate(*a, 512, chunk=m.limits.max_num_tokens, **kw)
    assert e.capacity["max_concurrency"] == 1546 and e.engine.limits.max_batch == 512
    assert e.engine.limits.max_num_tokens == m.limits.max_num_tokens
    q, k = s["mixed_step_share"], s["prompts_per_mixed_step"]
    assert k > 1                      # the queued prompts start k to a step (throughput.burst); online admits one
    mixed_k = step_seconds(e.engine.run, 512, k * 128.0, float(k), pad=False)[0]
    assert math.isclose(q * mixed_k + (1 - q) * e.decode_step_s, s["step_s"], rel_tol=1e-12)
