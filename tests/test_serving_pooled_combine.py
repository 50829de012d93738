"""On the measured MoE rows class, the routed rows' combine under attention DP writes a row for every pooled token.

TensorRT-LLM's CUTLASS fused MoE under attention DP runs on the tokens all ranks gathered and its finalize writes
each gathered token's row before the reduce-scatter (fused_moe_cutlass.py); the fitted rows' term counts that
write at the layer's pooled tokens (measure/calibrate/moefit.py: (R + t)·h). A rank's own routed rows it reads
stay its share. Exchanges that return the rows to their owners first (MNNVL all-to-all, DeepEP) keep the rank's
own tokens, and so does the combine on the end-to-end expert η (FITTED: no rows class), as they were fitted.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ironlaw.machine import hardware
from ironlaw.models.serving.engine import Layout
from ironlaw.models.serving.parallel import shard_attention_dp
from ironlaw.models.serving.step import step_graph

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def _combine(g):
    return next(op for op in g.ops if op.name == "moe_combine")


@pytest.mark.parametrize("model,k", [("qwen3-235b-a22b", 8), ("llama4-maverick", 1)])
def test_the_combine_reads_the_ranks_rows_and_writes_every_pooled_token(model, k):
    hw = hardware.get("h200")
    T, dp = 256, 8
    g = step_graph(model, hw, "fp8", "fp8", gemm_tokens=T, decode=T, context=1000, prompt=128,
                   prefill_tokens=0.0, head_tokens=T, moe_tables=True)
    h = g.meta["hidden"]
    one = _combine(g)
    assert one.attrs["kernel"] == "moe_rows.fp8"
    assert one.bytes_written == pytest.approx(T * h * 2.0)                 # bf16 rows of the rank's own tokens
    assert one.bytes["activations"] == pytest.approx((k + 1) * T * h * 2.0)
    lay = Layout(tp=dp, ep=dp, attention_dp=True)
    pooled = _combine(shard_attention_dp(g, hw, lay))
    assert pooled.bytes_written == pytest.approx(dp * T * h * 2.0)
    assert pooled.bytes["activations"] == pytest.approx((k * T + dp * T) * h * 2.0)   # (R + t)·h, t pooled
    assert pooled.attrs["tokens"] == pytest.approx(dp * T)
    fitted = step_graph(model, hw, "fp8", "fp8", gemm_tokens=T, decode=T, context=1000, prompt=128,
                        prefill_tokens=0.0, head_tokens=T)
    assert _combine(shard_attention_dp(fitted, hw, lay)).bytes_written == pytest.approx(T * h * 2.0)


def test_an_all_to_all_exchange_keeps_the_ranks_own_tokens():
    hw = hardware.get("gb200")
    g = step_graph("qwen3-235b-a22b", hw, "fp4", "fp8", gemm_tokens=128, decode=128, context=1000, prompt=128,
                   prefill_tokens=0.0, head_tokens=128, moe_tables=True)
    assert _combine(g).attrs["kernel"] == "moe_rows.fp4"
    sharded = shard_attention_dp(g, hw, Layout(tp=16, ep=16, attention_dp=True))
    assert _combine(sharded).bytes_written == pytest.approx(_combine(g).bytes_written)


def test_the_cell_decomposition_adds_up_to_the_steps_routed_layer():
    """benchmarks/serve_moe_cells.py splits FITTED's routed layer into the weights' streaming, the FLOPs, the
    GEMMs' activations and the rows; FITTED prices the grouped GEMM as the one after the other (serial share 1), so
    the first three are exactly the GEMMs' time and the rows the rest."""
    import serve_moe_cells as cells
    import serving_moe_terms as terms
    c = cells.cell_of("h200:qwen3-235b-a22b:128/2048")
    est, _ = cells.priced(c, None, None)
    w, f, act, rows = cells.fitted_split(est)
    assert w > 0 and f > 0 and act > 0 and rows > 0
    assert w + f + act + rows == pytest.approx(1e6 * terms.expert_layer_s(est)[0], rel=1e-9)
    e = max(est.steps, key=lambda s: s[0])[1]
    gemm_s = sum(float(t) * op.count for op, t in zip(e.graph.ops, e.op_time_s.reshape(len(e.graph.ops), -1)[:, 0])
                 if op.kind == "matmul" and op.attrs.get("expert") == "routed")
    layers = max(op.count for op in e.graph.ops if op.module == "experts")
    assert w + f + act == pytest.approx(1e6 * gemm_s / layers, rel=1e-6)
