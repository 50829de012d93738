"""An attention or MLA class's fit/held-out split where the shape-sorted even rows hold one head count: every head
count is fitted and held out (``kernelfit.rows.single_valued``, for every op of ``SHAPE_COLUMNS``)."""
from types import SimpleNamespace

import pytest

pd = pytest.importorskip("pandas")

from ironlaw.cli.calibrate import fit_notes  # noqa: E402
from ironlaw.measure.calibrate import kernelfit  # noqa: E402
from ironlaw.measure.calibrate.kernelfit.rows import sorted_rows, split_names  # noqa: E402


def _context(heads, head_dims=(128,)):
    """A context-attention class timing every batch and sequence at each of ``heads`` query heads on one KV head
    and each of ``head_dims``, in shape order (as ``groups`` sorts it)."""
    rows = [{"batch_size": b, "isl": s, "num_heads": h, "num_key_value_heads": 1, "head_dim": d, "window_size": 0,
             "latency_s": 1e-6 * b * s * h * d / 4096 + 5e-6}
            for b in (1, 2, 4) for s in (128, 512, 2048, 8192) for h in heads for d in head_dims]
    return sorted_rows(pd.DataFrame(rows), "context_attention")


def test_even_rows_of_one_head_count_split_within_each_head_count():
    """64 and 96 heads under every batch and sequence: the even rows all sat at 64 heads, the odd ones at 96 (as
    TensorRT-LLM 1.0's Blackwell tables over 32 heads per KV head put them), so the fit never saw the heads vary."""
    rows = _context((64, 96))
    assert set(rows.num_heads.iloc[::2]) == {64}                 # what the plain even/odd split fitted
    fit_rows, held = kernelfit.split(rows, "context_attention")
    assert set(fit_rows.num_heads) == set(held.num_heads) == {64, 96}
    assert len(fit_rows) + len(held) == len(rows) and not set(fit_rows.index) & set(held.index)
    # each head count starts on the other side: alternated within each alone, both fitted sequences 128 and 2048
    # only, and held 512 and 8192 out at both
    assert set(fit_rows.isl) == set(held.isl) == set(rows.isl)
    assert split_names(rows, "context_attention") == ("even rows of each num heads", "odd rows of each num heads")


def test_a_split_within_each_head_dim_that_fits_one_head_count_splits_within_both():
    """Two head dims and two head counts per batch and sequence: the plain split holds one head dim out, so it
    alternates within each head dim (``STRATA``), whose even rows then hold 64 heads alone; it alternates within
    each head dim and head count."""
    rows = _context((64, 96), (128, 256))
    within = rows.groupby("head_dim").cumcount() % 2 == 0
    assert set(rows.num_heads[within]) == {64}                   # the split within each head dim alone
    fit_rows, held = kernelfit.split(rows, "context_attention")
    for col in ("num_heads", "head_dim"):
        assert set(fit_rows[col]) == set(held[col]) == set(rows[col])
    assert split_names(rows, "context_attention")[1] == "odd rows of each head dim and num heads"


def test_an_mla_class_whose_even_rows_hold_one_head_count_splits_within_it():
    rows = sorted_rows(pd.DataFrame([{"batch_size": b, "isl": s, "num_heads": 128 // tp, "tp_size": tp,
                                      "kv_cache_dtype": "bfloat16", "latency_s": 1e-5}
                                     for b in (1, 4) for s in (256, 1024, 4096) for tp in (1, 2)]), "context_mla")
    assert rows.num_heads.iloc[::2].nunique() == 1
    fit_rows, held = kernelfit.split(rows, "context_mla")
    assert set(fit_rows.tp_size) == set(held.tp_size) == {1, 2}


def test_a_class_whose_even_rows_vary_every_column_keeps_the_even_odd_split():
    """Three head counts: the even rows hold all three, and the split stays the plain one (every class of the
    catalog's tables that fits each value of its shape columns)."""
    rows = _context((40, 64, 96))
    fit_rows, held = kernelfit.split(rows, "context_attention")
    assert list(held.index) == list(rows.index[1::2])
    assert split_names(rows, "context_attention") == ("even rows", "odd rows")


def test_calibrate_names_the_classes_split_within_each_head_count():
    name = "context attention bf16, KV bf16, over 32 heads per KV head"
    res = SimpleNamespace(assumed=(), held_out=[SimpleNamespace(group=name)],
                          calibration={"held_out": [f"{name} (odd rows of each head dim and num heads)"]})
    assert fit_notes(res) == [f"split within each head dim and num heads (the even rows held one num heads alone): "
                              f"{name}"]
