"""A GEMM grid held at the (N, K) its rows cover (``kernelfit.grid.fitted_nodes``): a corner the rows reach only
through small multilinear weights from across the grid takes the nearest covered node's value, in the fit and in
the stored MI300X FP8 term."""
import numpy as np

from ironlaw.core.gemmshape import grid_factor
from ironlaw.measure.calibrate import kernelfit


class _Gemm:
    op = "gemm"


def _l_shaped_rows():
    """Rows on an L in (N, K), as ROCm/aiter's gfx942 FP8 table holds them: large K only at a small N, large N only
    at a small K; each row 1.25x the model but the far ones (N or K 16384), 0.8x."""
    n = np.array([4096.0, 4096.0, 4096.0, 5120.0, 5120.0, 16384.0, 17408.0, 25600.0] * 4)
    k = np.array([4096.0, 5120.0, 16384.0, 12800.0, 16384.0, 4096.0, 5120.0, 5120.0] * 4)
    m = np.repeat([1024.0, 2048.0, 4096.0, 8192.0], 8)
    y = np.where((n >= 16384) | (k >= 16384), np.log(0.8), np.log(1.25))
    return (m, n, k, np.ones(len(m))), y


def test_a_gemm_grid_holds_its_uncovered_corner_at_the_covered_edge():
    coords, y = _l_shaped_rows()
    nodes = [[1024.0, 8192.0], [4096.0, 16384.0, 25600.0], [4096.0, 16384.0], [1.0]]
    cols, hold = kernelfit.grid.fitted_nodes(_Gemm(), nodes, coords, every=True)
    corner = np.ravel_multi_index((0, 2, 1, 0), [2, 3, 2, 1])       # N 25600, K 16384: no row near it
    assert corner not in cols and hold[corner] in cols
    coef = np.zeros(12)
    coef[cols] = kernelfit.grid.grid_solve(nodes, coords, y, cols, hold=hold)
    coef = kernelfit.grid.held_at_the_rows(nodes, coef, cols)
    assert coef[corner] == coef[hold[corner]]
    every = np.arange(12)                                             # the grid fitted free at every node
    free = kernelfit.grid.grid_solve(nodes, coords, y, every)
    assert abs(free[corner] - coef[corner]) > 0.05


def test_a_gemm_grid_whose_rows_stand_on_every_node_fits_as_before():
    m, n, k = (a.reshape(-1) for a in np.meshgrid([1.0, 64.0, 4096.0], [512.0, 4096.0], [512.0, 4096.0]))
    coords = (m, n, k, np.ones(len(m)))
    nodes = [[1.0, 64.0, 4096.0], [512.0, 4096.0], [512.0, 4096.0], [1.0]]
    cols, hold = kernelfit.grid.fitted_nodes(_Gemm(), nodes, coords, every=True)
    assert list(cols) == list(range(12)) and list(hold) == list(range(12))


def test_mi300x_fp8_grid_stays_flat_in_m_off_its_rows():
    """Llama-2-70B's down projection (N 8192, K 28672), beyond the rows' (N, K): every measured MI300X FP8 row
    with N, K ≥ 4096 runs 759 → 824 TFLOP/s from M 4K to 16K; the grid fitted free there slowed the term by
    1.53 → 1.84 over the same M."""
    from ironlaw.machine import hardware
    p = hardware.get("mi300x").calibration.shape("matmul")["fp8"]
    f = grid_factor(p, np.array([4096.0, 16384.0]), 8192.0, 28672.0, 1.0)
    assert f[1] / f[0] < 1.1
