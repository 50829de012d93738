"""`analyze` prices an MoE decode step's routed experts as one grouped launch, on the device's measured MoE layer
where its calibration has one (as `serve` does with ``moe_tables``), and its "why" line quotes the rate the ops
reach, not the bare bandwidth.

Measured: tests/data/moe_layer_deepseek_v3_h200.csv, the rows of aiconfigurator-core 0.12.0's (NVIDIA,
Apache-2.0; tests/data/kernel_tables/LICENSE.aiconfigurator-core)
``h200_sxm/moe/trtllm/1.3.0rc20/moe_perf.parquet`` with DeepSeek-V3's layer (hidden 7168, inter 2048, top-8 of
256 experts), TP 8, EP 1, 32/64/128 tokens, fp8_block, balanced and power_law_1.01 routing (latency in ms: the
whole fused MoE layer of one rank). At 64 tokens it measures 0.507 ms (balanced: every expert hit) and 0.409 ms
(power law); DeepSeek-V3's checkpoint is block-scaled FP8, so ironlaw prices the layer on the classes fitted on the
table's fp8_block rows of other shapes (``moe_grouped_gemm.fp8_block``, with its cost per local expert slot: all 256
on each rank under TP 8) with uniform routing (222 of 256 experts hit): 0.397 ms, 22% / 3% under the two rows. The
bound below (25%) is that gap, stated (per-tensor FP8's layer gave 0.351 ms, 31%); the dense GEMM table at one
expert's 512 × 7168 gave 3.64 ms (7×).
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from ironlaw import api
from ironlaw.core.units import fmt
from ironlaw.law import explain
from ironlaw.models.routed import grouped_launch

TABLE = Path(__file__).parent / "data" / "moe_layer_deepseek_v3_h200.csv"
ROUTED = ("moe_permute", "mlp_up_proj", "mlp_act", "mlp_down_proj", "moe_combine")   # the fused layer's parts


def measured_s(tokens: int) -> dict:
    with TABLE.open() as f:
        return {r["distribution"]: float(r["latency"]) * 1e-3 for r in csv.DictReader(f)
                if int(r["num_tokens"]) == tokens}


@pytest.fixture(scope="module")
def decode():
    return api.analyze("deepseek-v3", on="h200", batch=64, seq=4096, phase="decode", tp=8, dtype="fp8")


def layer_s(est) -> float:
    """One MoE layer's routed part (what the fused-MoE kernel times), seconds."""
    return sum(float(np.ravel(est.op_time_s[i])[0]) for i, op in enumerate(est.graph.ops)
               if op.module == "experts" and op.name in ROUTED)


def test_routed_layer_is_within_25_percent_of_the_measured_layer(decode):
    rows = measured_s(64)
    assert set(rows) == {"balanced", "power_law_1.01"}
    t = layer_s(decode)
    for dist, m in rows.items():
        assert abs(t / m - 1.0) <= 0.25, (dist, t, m)


def test_routed_gemms_run_on_the_device_fitted_moe_layer(decode):
    kernels = {op.name: op.attrs.get("kernel") for op in decode.graph.ops if op.module == "experts"}
    assert kernels["mlp_up_proj"] == kernels["mlp_down_proj"] == "moe_grouped_gemm.fp8_block"   # its checkpoint's
    assert kernels["moe_permute"] == kernels["moe_combine"] == "moe_rows.fp8_block"


def test_analyze_and_serve_decode_step_agree_within_1_5x(decode):
    """`serve`'s step keeps its end-to-end fitted expert terms (FITTED: 0.80 ms per layer here, 1.6× the table);
    before the routed experts ran on the dense table at one expert's shape, analyze was 3.5× serve's step."""
    served = api.serve("deepseek-v3", on="h200", tp=8, concurrency=64, prompt=4096, output=256)
    ratio = float(decode.total_s) / float(served.estimate.decode_step_s)
    assert 1 / 1.5 <= ratio <= 1.5, ratio


def test_why_quotes_the_rate_the_ops_reach(decode):
    w = explain.why(decode)
    assert w["resource"] == "bandwidth"
    k = [m.name for m in decode.hw.memory].index(w["tier"])
    moved = float((decode.traffic_bytes[k] * decode.cols.count).sum())
    data_s = float((decode.data_tier_s[k] * decode.cols.count).sum())
    rate = explain.rate_Bps(decode, k, moved)
    assert rate == pytest.approx(moved / data_s) and rate < decode.hw.memory[k].bw_Bps
    assert fmt(rate, "B/s") in w["why"] and fmt(moved, "B") in w["why"]


def test_without_a_moe_table_a_routed_gemm_states_its_grouped_launch():
    """On a GPU without a fitted MoE layer (A100) the routed GEMM is the touched experts' tiles side by side: same
    FLOPs and weights, N = experts × N; the dense table then streams them at a grouped launch's η."""
    est = api.analyze("qwen3-30b-a3b", on="a100", batch=64, seq=4096, phase="decode", dtype="bf16")
    bw = est.hw.memory[est.hw.device_tier].bw_Bps
    for i, op in enumerate(est.graph.ops):
        if op.kind == "matmul" and op.attrs.get("expert") == "routed":
            m, n, k = op.attrs["mnk"]
            assert 2 * m * n * k == pytest.approx(op.flops)
            assert n * k * 2 == pytest.approx(op.bytes["weights"])          # bf16
            assert op.bytes["weights"] / float(np.ravel(est.data_s[i])[0]) > 0.35 * bw   # was 0.17–0.22
    dense = [op for op in est.graph.ops if op.kind == "matmul" and op.attrs.get("expert") != "routed"]
    assert dense and all(grouped_launch(op) is op and "mnk" not in op.attrs for op in dense)


def test_sweep_prices_the_routed_experts_as_analyze_does():
    """`sweep` (one law.predict over the batches) and `analyze` (one batch) give one MoE decode step one time."""
    s = api.sweep("qwen3-30b-a3b", on="h200", batch="16,64", seq="4096", phase="decode", dtype="fp8").to_dict()
    for p in s["points"]:
        one = api.analyze("qwen3-30b-a3b", on="h200", batch=p["batch"], seq=4096, phase="decode", dtype="fp8")
        assert p["time_s"] == pytest.approx(float(one.total_s), rel=1e-9)


@pytest.mark.parametrize("after", ["a100", "b200"])
def test_compare_prices_the_routed_experts_on_the_after_device(after):
    """The 'after' device of `compare` prices the routed experts on its own kernels (A100: the grouped launch on its
    dense GEMM table; B200: its measured MoE layer), not on the 'before' device's MoE layer: the after time is
    `analyze`'s on that device."""
    kw = dict(batch=64, seq=4096, phase="decode")
    c = api.compare("qwen3-30b-a3b", on="h200", vs_hardware=after, **kw)
    alone = api.analyze("qwen3-30b-a3b", on=after, **kw)
    assert c.to_dict()["time_after_s"] == pytest.approx(alone.time_s, rel=1e-9)
