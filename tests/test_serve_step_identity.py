"""One step model under both ``serve`` modes: the online steady state on the engine step (``online_engine.engine_estimate``)
and ``serve --max-throughput`` price a step of the same batch, lengths and engine limits identically
(``step.step_seconds``); the modes differ only in how batches form."""
from __future__ import annotations

import math

import pytest

from ironlaw.core.errors import IronlawError
from ironlaw.models.serving import online_engine as online, throughput
from ironlaw.models.serving.step import padded, step_seconds

SPEC, HW, P, O = "llama3.1-8b", "h100", 2048, 2048


@pytest.mark.parametrize("max_batch", [None, 256])
def test_same_batch_same_step_seconds(max_batch):
    m = throughput.max_throughput(SPEC, HW, P, O, dtype="fp8", max_batch=max_batch)
    s = m.steady
    assert s["context_steps"] == 1 and s["mixed_step_share"] < 1.0   # one chunk per mixed step, decode-only rest
    batch = s["decode_tokens_per_step"]
    assert batch == m.batch_per_engine
    e = online.engine_estimate(SPEC, HW, P, O, batch, dtype="fp8", chunk=m.limits.max_num_tokens,
                               max_batch=max_batch)
    assert e.limits == m.limits
    q = s["mixed_step_share"]
    assert math.isclose(q * e.mixed_step_s + (1 - q) * e.decode_step_s, s["step_s"], rel_tol=1e-12)


def test_decode_step_pads_to_the_captured_graph():
    """269 sequences (the KV limit at 2048/2048) replay the 384 graph: slower per step than 256 padded to 256."""
    e256 = online.engine_estimate(SPEC, HW, P, O, 256, dtype="fp8")
    e269 = online.engine_estimate(SPEC, HW, P, O, 269, dtype="fp8")
    assert padded(269, e269.run.max_batch) == 384 and padded(256, e256.run.max_batch) == 256
    assert e269.decode_step_s > e256.decode_step_s * 1.05
    unpadded = step_seconds(e269.run, 269, 0.0, 0.0, pad=False)[0]
    assert unpadded < e269.decode_step_s


def test_engine_steady_state_follows_the_online_cycle():
    e = online.engine_estimate(SPEC, HW, P, O, 64, dtype="fp8")
    cycle = O * e.decode_step_s + 64 * e.prefill_s
    assert math.isclose(e.tokens_per_s, 64 * O / cycle, rel_tol=1e-12)
    assert math.isclose(e.ttft_s, e.prefill_s + e.decode_step_s, rel_tol=1e-12)
    c = online.engine_estimate(SPEC, HW, P, O, 64, dtype="fp8", chunk=512)
    assert c.decode_step_s == e.decode_step_s and c.mixed_step_s > c.decode_step_s
    assert math.isclose(c.ttft_s, 4 * c.mixed_step_s, rel_tol=1e-12)


def test_engine_estimate_errors():
    with pytest.raises(IronlawError, match="--concurrency 100000 exceeds"):
        online.engine_estimate(SPEC, HW, P, O, 100000, dtype="fp8")
    with pytest.raises(IronlawError, match="--chunk"):
        online.engine_estimate(SPEC, HW, P, O, 8, dtype="fp8", chunk=0)
