"""The MMA tile's bound on a small-M GEMM's compute η (``efficiency.mma_tile_eta``): a tensor-core GEMM of M rows
fills M of each tile's 64 rows, so its useful FLOPs reach at most M / 64 of the peak, whatever a shape table fitted
where the weights' streaming binds leaves its compute η at."""
import numpy as np
import pytest

from ironlaw.law import law
from ironlaw.law.efficiency import mmatile
from ironlaw.machine import hardware
from ironlaw.models import workloads


def _gemm(shape: str, dtype: str = "bf16"):
    return workloads.resolve(workloads.Request(f"gemm:{shape}", phase="infer", dtype=dtype, device="cuda"))


@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_h100_and_h200_price_a_gemv_compute_alike(dtype):
    """The same GH100 die: at M = 1 their compute terms differ by their datasheet peaks' ratio (1.0), not by what
    their tables' fits left unidentified (bf16 before the bound: 55× apart)."""
    g = _gemm("1,14336,4096", dtype)
    h100, h200 = hardware.get("h100"), hardware.get("h200")
    c100, c200 = (float(np.sum(law.predict(g, hw).compute_s)) for hw in (h100, h200))
    ratio = h200.peak(dtype) / h100.peak(dtype)
    assert c100 / c200 == pytest.approx(ratio, rel=0.05)


@pytest.mark.parametrize("gpu", ["h100", "h200", "b200"])
@pytest.mark.parametrize("m", [1, 8, 32])
def test_a_small_m_gemm_computes_at_most_m_over_the_tile(gpu, m):
    hw = hardware.get(gpu)
    est = law.predict(_gemm(f"{m},4096,4096"), hw)
    assert float(np.max(est.terms.compute_eta)) <= m / 64 * (1 + 1e-9)
    assert float(np.sum(est.compute_s)) >= 2.0 * m * 4096 * 4096 / (hw.peak("bf16") * m / 64) * (1 - 1e-9)


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_the_bound_moves_no_time_where_the_weights_bind(gpu, monkeypatch):
    """A decode GEMV's time is its weights' streaming: the bound changes its compute term, not its time (the serial
    share keeps the seconds its table fitted)."""
    hw = hardware.get(gpu)
    g = _gemm("1,14336,4096")
    bound = law.predict(g, hw)
    monkeypatch.setattr(mmatile, "MMA_TILE_ROWS", {})
    free = law.predict(g, hw)
    assert float(np.sum(bound.time_s)) == pytest.approx(float(np.sum(free.time_s)), rel=1e-12)
    assert float(np.sum(bound.compute_s)) >= float(np.sum(free.compute_s))


@pytest.mark.parametrize("gpu, shape, dtype", [("h200", "512,4096,4096", "bf16"), ("h200", "1,4096,4096", "fp32"),
                                               ("mi300x", "1,4096,4096", "bf16"), ("xeon-8480", "1,4096,4096", "bf16"),
                                               ("h20", "1,4096,4096", "bf16")])
def test_no_bound_beyond_a_tile_or_off_the_tensor_cores(gpu, shape, dtype, monkeypatch):
    """M ≥ 64 fills the tile; an fp32 GEMM runs on the CUDA cores; a maker without cited tile rows, a CPU, and a GPU
    without a [calibration] (its flat η: bytes never change its compute) keep their η."""
    hw = hardware.get(gpu)
    g = _gemm(shape, dtype)
    bound = law.predict(g, hw)
    monkeypatch.setattr(mmatile, "MMA_TILE_ROWS", {})
    assert np.array_equal(bound.terms.compute_eta, law.predict(g, hw).terms.compute_eta)


def test_an_op_no_tile_bounds_keeps_a_compute_eta_above_one(monkeypatch):
    """The bound only lowers: an op whose η comes out above 1 (FLOPs counted over work done, e.g. causal tiles
    skipped or FP8 keys read at half the bytes) and that no MMA tile bounds keeps it, and its serial share."""
    import numpy as np
    from ironlaw.law.efficiency import table
    monkeypatch.setattr(table, "mma_tile_eta", lambda tile, cal, cols: np.array([1.0, 1.0, 1 / 64]))
    eta, kept = table.tile_bound(np.array([1.6, 0.5, 0.8]), 64.0, None, None)
    assert eta.tolist() == pytest.approx([1.6, 0.5, 1 / 64])
    assert kept.tolist() == pytest.approx([1.0, 1.0, 1 / 64 / 0.8])
