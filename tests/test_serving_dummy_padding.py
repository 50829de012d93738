"""A CUDA-graph padded step's padding rows on the k experts of TensorRT-LLM's one dummy request (what-if).

TensorRT-LLM pads a decode batch to its captured CUDA-graph size with one dummy generation request replicated
(tensorrt_llm/_torch/pyexecutor/model_engine.py, ``_get_padded_batch``), so every padding row is the same token and
picks the same k experts; under attention DP + EP the ranks hosting those experts compute all the ranks' padding
rows. ``ServingConstants.pad_on_dummy`` prices that (``parallel.dummy_padding``); off, the padding rows are spread
like real tokens, as FITTED's expert η were fitted.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest

from ironlaw.core.errors import IronlawError
from ironlaw.core.routing import dummy_rank_experts
from ironlaw.machine import hardware
from ironlaw.models.serving.engine import Layout
from ironlaw.models.serving.parallel import dummy_padding, shard_attention_dp
from ironlaw.models.serving.step import step_graph


def _brute(experts: int, k: int, ep: int) -> float:
    per = experts // ep
    picks = list(itertools.combinations(range(experts), k))
    return sum(max(sum(1 for x in p if x // per == r) for r in range(ep)) for p in picks) / len(picks)


@pytest.mark.parametrize("experts,k,ep", [(4, 2, 2), (8, 3, 4), (12, 4, 3), (16, 1, 4), (8, 8, 8), (6, 6, 1)])
def test_the_expected_experts_the_busiest_rank_hosts_is_the_enumerated_one(experts, k, ep):
    assert dummy_rank_experts(experts, k, ep) == pytest.approx(_brute(experts, k, ep), rel=1e-12)


def test_top1_lands_on_one_rank_and_qwen3s_top8_on_two_and_a_half():
    assert dummy_rank_experts(128, 1, 8) == 1.0
    assert dummy_rank_experts(128, 8, 8) == pytest.approx(2.5297, abs=1e-4)
    with pytest.raises(IronlawError):
        dummy_rank_experts(128, 8, 3)          # 128 experts do not split over 3 ranks


def _routed_flops(g) -> float:
    return sum(op.flops for op in g.ops if op.kind == "matmul" and op.attrs.get("expert") == "routed")


@pytest.mark.parametrize("model,k", [("llama4-maverick", 1), ("qwen3-235b-a22b", 8)])
def test_the_busiest_rank_computes_every_ranks_padding_rows(model, k):
    hw, dp, real, padded = hardware.get("h100"), 8, 84, 128
    g = step_graph(model, hw, "fp8", "fp8", gemm_tokens=padded, decode=real, context=1153, prompt=128,
                   prefill_tokens=0.0, head_tokens=padded)
    lay = Layout(tp=dp, ep=dp, attention_dp=True)
    spread = _routed_flops(shard_attention_dp(g, hw, lay))
    on_dummy = _routed_flops(shard_attention_dp(g, hw, lay, dummy_pad=True))
    hosted = dummy_rank_experts(int(g.meta["experts"]), k, dp)
    rows = dp * real * k / dp + dp * (padded - real) * hosted      # the busiest rank's routed rows
    assert on_dummy / spread == pytest.approx(rows / (dp * padded * k / dp))
    if k == 1:
        assert on_dummy / spread == pytest.approx((84 + 44 * 8) / 128)   # Maverick: 3.4x the spread rows


def test_a_step_without_padding_or_with_prompts_is_unchanged():
    hw, lay = hardware.get("h200"), Layout(tp=8, ep=8, attention_dp=True)
    full = step_graph("llama4-maverick", hw, "fp8", "fp8", gemm_tokens=128, decode=128, context=1153, prompt=128,
                      prefill_tokens=0.0, head_tokens=128)
    mixed = step_graph("llama4-maverick", hw, "fp8", "fp8", gemm_tokens=2048, decode=100, context=1153, prompt=128,
                       prefill_tokens=1948.0, head_tokens=116)
    for g in (full, mixed):
        assert dummy_padding(g.meta, lay, 128, 1) == 1.0
        assert _routed_flops(shard_attention_dp(g, hw, lay, dummy_pad=True)) == \
            pytest.approx(_routed_flops(shard_attention_dp(g, hw, lay)))


def test_a_named_routing_is_refused_not_ignored():
    hw = hardware.get("h100")
    g = step_graph("llama4-maverick", hw, "fp8", "fp8", gemm_tokens=128, decode=84, context=1153, prompt=128,
                   prefill_tokens=0.0, head_tokens=128)
    with pytest.raises(IronlawError, match="uniform routing"):
        shard_attention_dp(g, hw, Layout(tp=8, ep=8, attention_dp=True, routing="power_law_1.2"), dummy_pad=True)


def test_the_switch_reaches_a_served_cell_and_is_off_in_fitted():
    from ironlaw.models.serving import throughput as st
    assert st.FITTED.pad_on_dummy is False
    hw = hardware.get("h100")
    kw = dict(tp=8, dtype="fp8", kv_dtype="fp8", ep=8, attention_dp=True)
    off = st.max_throughput("llama4-maverick", hw, 128, 2048, **kw)
    on = st.max_throughput("llama4-maverick", hw, 128, 2048, constants=replace(st.FITTED, pad_on_dummy=True), **kw)
    assert on.batch == off.batch
    assert on.output_tokens_per_s < off.output_tokens_per_s * 0.99      # 84 a rank padded to 128: slower steps
    assert math.isfinite(on.output_tokens_per_s)
