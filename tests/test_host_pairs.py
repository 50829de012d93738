"""benchmarks/serving_host_pairs.py: the eager steps' launch cost a published GB200/B200 pair implies, and the
cells re-priced with the launch floor carried by a host speed ratio."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import serving_host_pairs as shp  # noqa: E402


@pytest.fixture(scope="module")
def qwen_1k():
    """Qwen3-30B-A3B 1000/1000 on B200 and GB200: every step carries prompts (eager), its host's launches bind."""
    shp.h100.use_release(shp.h100.CATALOG)
    shp.h100.constants_arg(None)
    rows = shp.priced(shp.BLACKWELL, ("b200", "gb200"), ("qwen3-30b-a3b",))
    return {r["gpu"]: r for r in rows if (r["isl"], r["osl"]) == (1000, 1000)}


def test_repricing_at_ratio_one_is_the_model(qwen_1k):
    """Re-timing a cell's own priced steps with the launch floor unchanged gives the cell's own error back."""
    for r in qwen_1k.values():
        assert shp.repriced_error(r, 1.0) == pytest.approx(r["error"], abs=1e-6)


def test_a_slower_host_slows_a_host_bound_cell(qwen_1k):
    """Where the launch floor outlasts the device, the run scales with it; where it is under the device, the
    device's step stays."""
    r = qwen_1k["b200"]
    assert shp.repriced_error(r, 2.0) < r["error"] - 20.0
    low = shp.repriced_error(r, 0.1)                # floor 8.9 ms, under the device's 42 ms: device-bound
    assert shp.repriced_error(r, 0.05) == pytest.approx(low, abs=1e-6)


def test_implied_launch_cost_of_an_all_eager_cell(qwen_1k):
    """Every step eager: (published step − step_s) / launches, the published step being the model's mean step
    times predicted over published throughput (B200 25,828 tok/s published; GB200 17,481)."""
    b, g = qwen_1k["b200"], qwen_1k["gb200"]
    kinds = shp.step_kinds(b["est"])
    assert kinds["eager"][0] == pytest.approx(1.0) and "graph" not in kinds
    pub = shp.published_step_s(b)
    assert pub == pytest.approx(b["est"].time_s / sum(n for n, _ in b["est"].steps)
                                * b["est"].output_tokens_per_s / b["published"])
    assert shp.implied_launch_s(b) == pytest.approx((pub - b["est"].constants.step_s) / kinds["eager"][2])
    ratio = shp.implied_launch_s(g) / shp.implied_launch_s(b)
    assert 1.3 < ratio < 1.7                         # between the sourced Python (1.06) and torch-op (2.89) ratios


def test_the_fused_moe_is_one_host_call_per_layer(qwen_1k):
    """Qwen3-30B-A3B's 48 MoE layers each run five routed kernels (permute, two grouped GEMMs, activation,
    combine); launched as TensorRT-LLM's one fused-MoE op they are 48 host calls, not 240."""
    n, e = qwen_1k["b200"]["est"].steps[0]
    kernels = e.graph.meta["host"].kernels
    assert shp.host_calls(e, False) == kernels
    assert shp.host_calls(e, True) == kernels - 4 * 48


def test_swapping_the_op_dispatch_to_grace_costs_the_op_s_difference(qwen_1k):
    """One op of each launch at the host's own ``[host] op_s`` (x86 7.22 µs, Grace 19.86 µs): the B200 cell is
    unchanged, the host-bound GB200 cell slows by the difference per launch."""
    swap = shp.SCENARIOS["one op at the host's op_s"][0]
    b, g = qwen_1k["b200"], qwen_1k["gb200"]
    assert shp.repriced_error(b, per_launch=swap) == pytest.approx(b["error"], abs=1e-6)
    assert swap("gb200", 1e-4) == pytest.approx(1e-4 + 19.86e-6 - 7.22e-6)
    assert shp.repriced_error(g, per_launch=swap) < g["error"] - 5.0
