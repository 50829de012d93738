"""A GEMM class's fit/held-out split on a user's grid table: the fitted rows vary every column the table varies."""
from types import SimpleNamespace

import pytest

pd = pytest.importorskip("pandas")

from ironlaw.cli.calibrate import fit_notes  # noqa: E402
from ironlaw.measure.calibrate import kernelfit, kerneltable  # noqa: E402


def _gemm(ks):
    """A user's GEMM table: every M and N at each K of ``ks`` (a full grid, sorted M, N, K as the fitter sorts)."""
    rows = [{"device": "NVIDIA H100 80GB HBM3", "gemm_dtype": "bfloat16", "m": m, "n": n, "k": k,
             "latency_s": 2.0 * m * n * k / 700e12 + 6e-6}
            for m in (1, 8, 32, 128, 512, 2048, 8192) for n in (1024, 4096, 14336) for k in ks]
    t = kerneltable.KernelTable("gemm", "h100", "NVIDIA H100 80GB HBM3", "", "", "gemm_perf.csv", pd.DataFrame(rows))
    (g,) = kernelfit.groups([t])
    return g


def test_a_grid_of_two_ks_is_fitted_and_held_out_at_both():
    """K = 1024 and 4096 under every M and N: the even rows all sat at K = 1024 and the odd ones at 4096, so the
    shape model never saw K vary (held-out p90 18% on a roofline table); the split alternates within each K."""
    g = _gemm((1024, 4096))
    assert set(g.rows.k.iloc[::2]) == {1024}                     # what the plain even/odd split fitted
    fit_rows, held = kernelfit.split(g.rows, g.op)
    assert set(fit_rows.k) == set(held.k) == {1024, 4096}
    assert len(fit_rows) + len(held) == len(g.rows) and not set(fit_rows.index) & set(held.index)
    assert kernelfit.rows.split_names(g.rows, g.op) == ("even rows of each k", "odd rows of each k")


def test_a_grid_whose_even_rows_vary_every_column_keeps_the_even_odd_split():
    """Three K values: the even rows hold all three, and the split stays the plain one (the catalog's GEMM tables)."""
    g = _gemm((1024, 2048, 4096))
    fit_rows, held = kernelfit.split(g.rows, g.op)
    assert list(held.index) == list(g.rows.index[1::2])
    assert kernelfit.rows.split_names(g.rows, g.op) == ("even rows", "odd rows")


def test_calibrate_names_the_classes_split_within_each_k():
    held = SimpleNamespace(group="gemm bf16")
    res = SimpleNamespace(assumed=(), held_out=[held], calibration={"held_out": ["gemm bf16 (odd rows of each k)"]})
    assert fit_notes(res) == ["split within each K (the even rows held one K alone): gemm bf16"]
