"""The held-out split of generation-attention classes: the even/odd rows of the shape-sorted class, or, where that
holds over two thirds of some head dim's rows on one side (``kernelfit.rows.ONE_SIDED``), the even/odd rows of each
head dim's own rows, as context attention's split does past 90%."""
import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from ironlaw.measure.calibrate import kernelfit  # noqa: E402


def _rows(block: list[int], repeat: int = 25):
    return pd.DataFrame({"head_dim": block * repeat, "latency_s": 1e-5})


def _held_share(rows, held) -> dict:
    return {int(d): float((held.head_dim == d).sum() / (rows.head_dim == d).sum()) for d in sorted(set(rows.head_dim))}


def test_a_decode_class_whose_split_holds_three_quarters_of_a_head_dim_out_splits_each_head_dim():
    """Head dim 128 at odd places three times in four (75% held out, 64 25%): generation alternates within each head
    dim, half of each held out; context attention, whose limit is 90%, keeps the even/odd split."""
    rows = _rows([64, 128, 64, 128, 64, 128, 128, 64])
    assert _held_share(rows, rows.iloc[1::2]) == {64: 0.25, 128: 0.75}
    fit_rows, held = kernelfit.split(rows, "generation_attention")
    assert _held_share(rows, held) == {64: 0.5, 128: 0.5}
    assert len(fit_rows) + len(held) == len(rows) and not set(fit_rows.index) & set(held.index)
    assert list(kernelfit.split(rows, "context_attention")[1].index) == list(rows.index[1::2])


def test_a_decode_class_split_within_two_thirds_keeps_the_even_odd_rows():
    """60% and 40% of two head dims held out: the even/odd split as before."""
    rows = _rows([64, 64, 64, 128, 128, 128, 128, 128, 64, 64])
    assert _held_share(rows, rows.iloc[1::2]) == {64: 0.4, 128: 0.6}
    assert list(kernelfit.split(rows, "generation_attention")[1].index) == list(rows.index[1::2])
    assert np.array_equal(kernelfit.split(rows, "gemm")[1].index, rows.index[1::2])
