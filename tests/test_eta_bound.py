"""The law's bound on an op's efficiencies (``efficiency.within_peak``): whatever a kernel grid or a fitted table
says, no op computes above its unit's peak or moves bytes above its tier's bandwidth."""
import sys
from pathlib import Path

import numpy as np
import pytest

from ironlaw.law import efficiency, law
from ironlaw.machine import calibration, hardware
from ironlaw.models import workloads
from ironlaw.models.serving import throughput as st

FAST = [[1.0, 65536.0], [1.0, 65536.0], [1.0, 65536.0], [1.0]]   # a grid of one factor everywhere


def _cal(table: dict, **extra) -> dict:
    return {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"], "matmul": {"bf16": table},
            **extra}


def _gemm(shape: str):
    return workloads.resolve(workloads.Request(f"gemm:{shape}", phase="infer", dtype="bf16", device="cuda"))


def test_a_grid_below_one_never_computes_above_the_peak():
    """η 0.8 over a grid factor e^-0.5 would be 1.32 of the peak: the op runs at the peak."""
    hw = hardware.get("h100")
    table = {"eta_max": 0.8, "m_half": 1.0, "nk_half": 1.0, "streamed": 0.8, "grid_nodes": FAST,
             "grid_log": " ".join(["-50"] * 8)}
    g = _gemm("8192,8192,8192")
    est = law.predict(g, calibration.with_calibration(hw, _cal(table)))
    flops = 2.0 * 8192 ** 3
    assert float(np.max(est.terms.compute_eta)) == pytest.approx(1.0)
    assert float(np.sum(est.compute_s)) == pytest.approx(flops / hw.peak("bf16"), rel=1e-9)
    half = law.predict(g, calibration.with_calibration(hw, _cal({**table, "grid_log": " ".join(["-10"] * 8)})))
    assert float(np.max(half.terms.compute_eta)) < 1.0      # η 0.88: under the bound, the grid still applies
    assert float(np.sum(half.compute_s)) == pytest.approx(flops / (hw.peak("bf16") * 0.8 * np.exp(0.1)), rel=1e-3)


@pytest.mark.parametrize("table", [
    {"eta_max": 0.8, "m_half": 1.0, "nk_half": 1.0, "streamed": 0.9, "grid_nodes": FAST, "grid_log": " ".join(["-50"] * 8)},
    {"eta_max": 0.8, "m_half": 1.0, "nk_half": 1.0, "streamed": 1.5},        # a fit at its upper bound, no grid
])
def test_weights_never_stream_above_the_bandwidth(table):
    """A decode-sized GEMM (M = 8) streams its weights: never faster than bytes / BW on any tier."""
    hw = hardware.get("h100")
    est = law.predict(_gemm("8,16384,16384"), calibration.with_calibration(hw, _cal(table)))
    bw = np.array([t.bw_Bps for t in hw.memory]).reshape((-1,) + (1,) * (est.traffic_bytes.ndim - 1))
    floor = est.traffic_bytes / bw
    assert np.all(est.data_tier_s >= floor * (1 - 1e-12))
    assert float(np.sum(est.data_s)) == pytest.approx(float(np.sum(floor)), rel=1e-9)    # at the bandwidth itself
    assert float(np.max(est.terms.memory_eta)) == pytest.approx(1.0)


def test_the_framework_share_slows_the_op_after_the_bound():
    """The framework's share is time around the kernel: a kernel held at the peak still pays it."""
    hw = hardware.get("h100")
    table = {"eta_max": 0.8, "m_half": 1.0, "nk_half": 1.0, "streamed": 0.8, "grid_nodes": FAST,
             "grid_log": " ".join(["-50"] * 8)}
    est = law.predict(_gemm("8192,8192,8192"), calibration.with_calibration(hw, _cal(table, framework_share=0.25)))
    assert float(np.max(est.terms.compute_eta)) == pytest.approx(1.0 / 1.25)


def test_within_peak_is_the_grid_division_held_at_one():
    eta = np.array([0.5, 0.9, 1.2])
    assert np.allclose(efficiency.within_peak(eta, np.array([1.0, 0.8, 1.0])), [0.5, 1.0, 1.0])
    assert np.allclose(efficiency.within_peak(eta, 2.0), [0.25, 0.45, 0.6])


@pytest.mark.parametrize("model,gpu,isl,osl", [("llama4-scout", "gb200", 2048, 128),
                                                ("qwen3-30b-a3b", "b200", 5000, 500)])
def test_serving_steps_on_the_kernel_grids_stay_within_the_datasheet(model, gpu, isl, osl):
    """Every op of every engine step of a Blackwell cell on the measured kernel terms and their grids: η ≤ 1, so
    no op reads faster than the tier's bandwidth (GB200 Llama 4 Scout's decode attention read its KV cache at 8.26
    TB/s on an 8 TB/s part without the bound) nor computes above the peak."""
    est = st.max_throughput(model, gpu, isl, osl, tp=1, dtype="fp4", kv_dtype="fp8", ep=1, attention_dp=False,
                            kv_fraction=0.95)
    hw = hardware.get(gpu)
    bw = np.array([t.bw_Bps for t in hw.memory])
    for _, e in est.steps:
        t = e.terms
        assert float(np.max(t.compute_eta)) <= 1.0 and float(np.max(t.memory_eta)) <= 1.0
        floor = e.traffic_bytes / bw.reshape((-1,) + (1,) * (e.traffic_bytes.ndim - 1))
        assert np.all(e.data_tier_s >= floor * (1 - 1e-12))
        att = np.array([op.kind == "attention" for op in e.graph.ops])
        kv = e.cols.bytes["kv_cache"].reshape(len(att), -1)[:, 0]
        op_s = e.op_time_s.reshape(len(att), -1)[:, 0]
        assert np.all(kv[att] / op_s[att] <= hw.memory[hw.device_tier].bw_Bps)


def test_the_fit_fast_path_keeps_the_bound():
    """benchmarks/trtllm_h100.py re-times a cell's steps without the law (``CellTerms``) for its constants' fit:
    it must equal the law where the bound holds an op at the bandwidth (a B200 Qwen3-30B-A3B cell)."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    import trtllm_h100 as h
    cell = {"model": "qwen3-30b-a3b", "spec": h.spec_for("qwen3-30b-a3b"), "isl": 5000, "osl": 500, "tp": 1,
            "precision": "fp4", "published": 1.0}
    est = h.predict(cell, "b200")
    assert h.CellTerms(est, cell).time(vars(st.FITTED)) == pytest.approx(est.time_s, rel=1e-9)
