"""``gemmshape.gemm_dims`` keeps the dims on the columns they were computed from: the same numbers as computing them
afresh, never another columns' dims, and neither the dims nor what they were derived from can change after."""
import dataclasses
import gc
import weakref

import numpy as np
import pytest

from ironlaw.core import gemmshape
from ironlaw.core.graph import Graph, Op


def _cols(m: float, n: float, k: float, batch=None):
    rows = m if batch is None else np.asarray(batch, float) * m
    op = Op("proj", "matmul", flops=2.0 * rows * n * k,
            bytes={"weights": 2.0 * n * k, "activations": 2.0 * rows * (n + k)}, dtype="bf16")
    return Graph("g", "prefill", "bf16", [op]).columns()


def test_memo_returns_the_fresh_numbers_and_the_same_arrays():
    cols = _cols(64, 4096, 1024, batch=[1, 2, 8])
    first = gemmshape.gemm_dims(cols)
    assert gemmshape.gemm_dims(cols) is first                        # kept for the same columns
    fresh = gemmshape.gemm_dims(_cols(64, 4096, 1024, batch=[1, 2, 8]))   # equal columns, other arrays: computed
    assert fresh is not first
    for kept, new in zip(first, fresh):
        assert kept.tobytes() == new.tobytes()
    np.testing.assert_allclose(first[0][0], [64, 128, 512])
    np.testing.assert_allclose(first[1][0], 1024)                   # bytes cannot tell N from K: K the larger
    np.testing.assert_allclose(first[2][0], 4096)


def test_memo_never_answers_for_other_columns():
    a, b = _cols(64, 4096, 1024), _cols(8, 512, 256)
    ma = gemmshape.gemm_dims(a)[0]
    mb = gemmshape.gemm_dims(b)[0]
    assert float(ma[0]) == pytest.approx(64) and float(mb[0]) == pytest.approx(8)
    assert float(gemmshape.gemm_dims(a)[0][0]) == pytest.approx(64)   # back to a: computed again, right


def test_the_columns_cannot_change_under_their_kept_dims():
    """The dims were kept in a module-level memo keyed by weak references to the columns' arrays: an array written
    in place would have left them stale. The columns are now immutable, so nothing kept from them can go stale."""
    cols = _cols(64, 4096, 1024)
    assert float(gemmshape.gemm_dims(cols)[0][0]) == pytest.approx(64)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cols.flops = cols.flops * 2.0                                # rebinding a field
    with pytest.raises(ValueError):
        cols.flops[0] *= 2.0                                         # writing an array in place
    with pytest.raises(ValueError):
        cols.bytes["weights"][0] = 0.0
    with pytest.raises(TypeError):
        cols.bytes["weights"] = cols.bytes["weights"] * 2.0          # replacing a class's bytes
    with pytest.raises(AttributeError):
        cols.dtypes.append("fp8")                                    # the per-op lists are tuples
    assert float(gemmshape.gemm_dims(cols)[0][0]) == pytest.approx(64)


def test_kept_dims_are_read_only_and_dropped_with_their_columns():
    cols = _cols(64, 4096, 1024)
    m, _, _ = gemmshape.gemm_dims(cols)
    with pytest.raises(ValueError):
        m[0] = 1.0
    kept = weakref.ref(m)
    del cols, m
    gc.collect()
    assert kept() is None
