"""AMD Instinct MoE layers fitted on ROCm/aiter's measured tuned fused-MoE timings (tests/data/aiter_kernels/*/moe):
the tuner's uniform routing, the extract read as kernel tables, the catalog's stored classes against the rows, and a
one-GPU MoE layer on MI300X / MI325X priced on them."""
from pathlib import Path

import numpy as np
import pytest

from ironlaw.core.routing import uniform_local
from ironlaw.machine import hardware
from ironlaw.measure.calibrate import moefit

DATA = Path(__file__).parent / "data" / "aiter_kernels"


def test_uniform_routing_rows_and_touched_experts():
    """Each token's k distinct experts uniform at random: t·k/ep rows on a rank, each of its E/ep experts missed by
    all t tokens with probability (1 − k/E)^t."""
    assert uniform_local(1, 8, 2, 1) == pytest.approx((2.0, 2.0))
    rows, touched = uniform_local(3, 8, 2, 2)
    assert rows == pytest.approx(3.0) and touched == pytest.approx(4 * (1 - 0.75 ** 3))
    assert uniform_local(4096, 33, 9, 1)[1] == pytest.approx(33.0)
    x = moefit.terms({"num_tokens": np.array([4]), "hidden_size": np.array([4096]), "inter_size": np.array([14336]),
                      "topk": np.array([2]), "num_experts": np.array([8]), "moe_tp_size": np.array([1]),
                      "moe_ep_size": np.array([1])}, "fp8", 1e15, 1e12, moefit.UNIFORM)
    assert x[0, 7] == pytest.approx(8 * (1 - 0.75 ** 4))            # U: the experts the 8 rows reach
    assert x[0, 2] == pytest.approx(2 * 8 * 4096 * 3 * 14336 / 1e15)  # F/P over R = t·k rows


def _table(gpu: str):
    pytest.importorskip("pandas")
    from ironlaw.measure.calibrate import kerneltable
    (t,) = kerneltable.read(DATA / gpu, ops=("moe",), gpu=gpu, framework="aiter")
    return t


def test_the_extract_reads_as_aiter_moe_tables():
    """gfx942 rows split by the commits that name the GPU: MI300X bf16 and block-scaled FP8, MI325X block-scaled FP8."""
    t300, t325 = _table("mi300x"), _table("mi325x")
    assert (t300.framework, t300.version) == ("aiter", "e4048607")
    assert set(t300.rows.moe_dtype) == {"bfloat16", "fp8_block"} and set(t325.rows.moe_dtype) == {"fp8_block"}
    assert set(t300.rows.distribution) == set(t325.rows.distribution) == {"uniform"}
    assert set(t325.rows.aiter_table) == {"model_configs/a8w8_blockscale_tuned_fmoe_ds_v3.csv",
                                          "model_configs/a8w8_blockscale_tuned_fmoe_glm5_1.csv"}
    assert set(t325.rows.num_experts[t325.rows.aiter_table.str.contains("glm5_1")]) == {257}
    assert (t300.rows.latency_s > 0).all() and len(t300.rows) + len(t325.rows) == 79


def _stored_error(gpu: str, dtype: str, src: str) -> np.ndarray:
    """|relative error| of the catalog's stored MoE classes on every extract row of ``src``."""
    t = _table(gpu)
    r = t.rows[t.rows.moe_dtype == src]
    hw = hardware.get(gpu)
    kern = hw.calibration.kernel
    g, a = kern[f"moe_grouped_gemm.{dtype}"], kern[f"moe_rows.{dtype}"]
    fit = moefit.MoeFit(2 * g["latency_s"], g["streamed"], g["eta_max"], a["memory"], 0)
    x = moefit.terms({c: r[c].to_numpy() for c in r.columns}, dtype, hw.peak_flops[moefit.compute_dtype(dtype)],
                     hw.memory[hw.device_tier].bw_Bps, moefit.UNIFORM)
    return np.abs(moefit.predict_s(fit, x) / r.latency_s.to_numpy() - 1)


@pytest.mark.parametrize("gpu, dtype, src", [("mi300x", "fp8", "fp8_block"), ("mi325x", "fp8", "fp8_block"),
                                             ("mi300x", "fp8_block", "fp8_block"),
                                             ("mi325x", "fp8_block", "fp8_block"), ("mi300x", "bf16", "bfloat16")])
def test_the_catalog_moe_classes_reproduce_the_rows(gpu, dtype, src):
    """Every row of the class (fitted and held out; benchmarks/amd_moe.py scores the held-out ones alone): the
    median |error| under 10%, and the provenance names aiter's commit, its license and the rows' format."""
    err = _stored_error(gpu, dtype, src)
    assert np.median(err) < 0.10, np.median(err)
    prov = hardware.get(gpu).calibration.table()["provenance"][f"moe {dtype}"]
    assert prov["license"] == "MIT" and "ROCm/aiter e4048607" in prov["version"]
    assert prov["table"].startswith(f"tests/data/aiter_kernels/{gpu}/moe/aiter/e4048607/moe_perf.csv ({src} rows")


@pytest.mark.parametrize("gpu", ["mi300x", "mi325x"])
def test_a_one_gpu_fp8_moe_layer_runs_on_the_measured_aiter_layer(gpu):
    """Mixtral on one GPU in FP8 (MLPerf's Offline runs): the routed experts on the fitted MoE classes, not on H100's
    end-to-end expert η carried by the GEMM ceiling."""
    from ironlaw.models.serving.engine import FITTED, Layout
    from ironlaw.models.serving.expertcarry import one_gpu_layer
    from ironlaw.models.serving.step import moe_kernels
    hw = hardware.get(gpu)
    assert moe_kernels(hw, "fp8")[:2] == ("moe_grouped_gemm.fp8", "moe_rows.fp8")
    assert one_gpu_layer(FITTED, hw, "fp8", Layout(1)).moe_tables


def test_a_gemm_refit_keeps_the_stored_moe_classes():
    """benchmarks/amd_kernels.py --write replaces the GEMM classes and keeps the MoE ones (benchmarks/amd_moe.py's)."""
    import sys
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    import amd_kernels
    hw = hardware.get("mi300x")
    base = hw.calibration.table()
    gemm = {k: v for k, v in base.items() if k not in ("kernel",)}
    gemm["provenance"] = {k: v for k, v in base["provenance"].items() if not k.startswith("moe ")}
    gemm["fitted"] = [e for e in base["fitted"] if not e.startswith("moe ")]
    gemm["held_out"] = [e for e in base["held_out"] if not e.startswith("moe ")]
    out = amd_kernels.with_moe(hw, gemm)
    assert out["kernel"] == base["kernel"] and out["provenance"].keys() == base["provenance"].keys()
    assert sorted(out["fitted"]) == sorted(base["fitted"]) and out["matmul"] == base["matmul"]


@pytest.mark.parametrize("gpu", ["mi300x", "mi325x", "mi355x"])
def test_the_stored_moe_classes_read_their_weights_no_faster_than_hbm(gpu):
    """aiter's tuner times a fresh copy of the weights at every call (kernelfit.rules.ROTATED_MOE_FRAMEWORKS): every
    stored MoE class's η — the weights' stream, the FLOPs and the routed rows — within the law's η ≤ 1 bound."""
    kern = hardware.get(gpu).calibration.kernel
    moe = {k: v for k, v in kern.items() if k.startswith(("moe_grouped_gemm.", "moe_rows."))}
    assert moe
    for name, k in moe.items():
        for eta in ("streamed", "eta_max", "memory"):
            assert 0 < k.get(eta, 1.0) <= 1.0, (gpu, name, eta, k.get(eta))


def test_the_aiter_fit_bounds_the_weights_stream_at_hbm():
    """Rows whose weights stream 1.2x faster than HBM: moefit's default bound (1.5) fits η_w 1.2, aiter's fit holds
    it at 1 and solves the other terms within their bounds."""
    import sys
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    import amd_moe
    rng = np.random.default_rng(0)
    n = 24
    x = np.zeros((n, 10))
    x[:, 0], x[:, 1], x[:, 2], x[:, 3] = 1.0, rng.uniform(5e-5, 4e-4, n), rng.uniform(1e-5, 3e-4, n), \
        rng.uniform(1e-6, 2e-5, n)
    t = 2e-5 + x[:, 1] / 1.2 + x[:, 2] / 0.5 + x[:, 3] / 0.8
    assert moefit.fit(x, t).eta_stream == pytest.approx(1.2, rel=1e-3)
    f = amd_moe.fitted(x, t)
    assert f.eta_stream == pytest.approx(1.0) and f.eta_compute <= 1.0 and f.eta_rows <= 1.0
    assert moefit.fit(x, t, stream_max=1.0, exact=True) == f
