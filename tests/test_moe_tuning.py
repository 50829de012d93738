"""The collector's autotuner cache key (``moefit.shared_tuning``): aiconfigurator tunes TensorRT-LLM's fused MoE once
per (dtype, hidden, inter/TP, local experts) and every later layer shape of that key runs the tactics tuned for the
first (collector/trtllm/collect_moe.py, ``run_moe_torch``), so the rows of a shared key carry another shape's tactics.
The extract's every-8th shapes rarely share a key among themselves; the tail this marks is measured on the full tables
(``benchmarks/moe_forms.py --data DIR --tuning``, docs/accuracy.md)."""
from __future__ import annotations

import numpy as np

from ironlaw.measure.calibrate import moefit


def rows(*shapes):
    cols = ("hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size")
    return {c: np.array([s[j] for s in shapes]) for j, c in enumerate(cols)}


def test_a_key_two_shapes_share_is_marked_on_both():
    got = moefit.shared_tuning(rows(
        (4096, 1536, 8, 128, 1, 8),     # inter/TP 1536, 16 local experts
        (4096, 3072, 4, 64, 2, 4),      # the same key: inter/TP 1536, 16 local experts, another top-k
        (4096, 1536, 8, 128, 1, 4),     # 32 local experts: a key of its own
        (4096, 1536, 8, 128, 1, 8)))    # the first shape's other token count: its own case, the key still shared
    assert got.tolist() == [True, True, False, True]


def test_one_shape_alone_is_its_own():
    assert not moefit.shared_tuning(rows((2048, 768, 8, 128, 1, 1), (2048, 768, 8, 128, 1, 1))).any()


def test_another_kernel_of_the_same_dtype_shares_the_file():
    """The min-latency NVFP4 layer (SM 100) and the non-gated layer are cases of their own writing the same cache file
    (the collector's ``cache_path`` names no kernel): the CUTLASS rows of that shape are marked."""
    gated = rows((7168, 2048, 8, 256, 1, 8))
    table = {**rows((7168, 2048, 8, 256, 1, 8), (7168, 2048, 8, 256, 1, 8)),
             "kernel_source": np.array(["moe_torch_flow_cutlass", "moe_torch_flow_min_latency"])}
    assert moefit.shared_tuning(gated, table).tolist() == [True]
    alone = {**rows((7168, 2048, 8, 256, 1, 8)), "kernel_source": np.array(["moe_torch_flow_cutlass"])}
    assert moefit.shared_tuning(gated, alone).tolist() == [False]


def test_a_local_count_that_begins_another_loads_its_file():
    """``glob.glob(f"{cache_path}*")`` of 1 local expert matches the file of 16 (and of 128): the 1-expert key is
    marked, the 16-expert key (whose glob matches only its own) is not."""
    got = moefit.shared_tuning(rows((4096, 1536, 8, 128, 1, 128),     # 1 local expert
                                    (4096, 1536, 8, 128, 1, 8),       # 16 local experts
                                    (4096, 1536, 8, 128, 1, 4)))      # 32: no other count begins with 3
    assert got.tolist() == [True, False, False]


def kernel_moe():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    import kernel_moe as km
    return km


def test_an_own_key_class_is_fitted_and_scored_on_its_own_key_rows(monkeypatch):
    """``kernel_moe.fit_and_score`` fits an ``OWN_KEY`` class on the fit rows of shapes of their own key and scores
    the held-out rows of such shapes, exactly as on a table holding those rows alone; ``all_rows`` scores every
    held-out row of the class with that fit. Another class is fitted and scored on every row."""
    km = kernel_moe()
    rows = next(r for g, dt, _, r in km.groups(km.DATA) if (g, dt) == ("b200", "fp8"))
    keep = moefit.shape_split(rows)
    shared = np.asarray(rows["hidden_size"]) == np.asarray(rows["hidden_size"])[0]     # a stand-in for a shared key
    assert 0 < shared.sum() < len(shared)
    marked = {**rows, "shared_key": shared}
    monkeypatch.setattr(km, "OWN_KEY", frozenset({("b200", "fp8")}))
    kern, err, n_fit = km.fit_and_score("b200", "fp8", marked)
    assert n_fit == int((keep & ~shared).sum()) and len(err) == int((~keep & ~shared).sum())
    x, t, _ = km.layer_terms("b200", "fp8", marked)
    own = keep & ~shared
    assert kern == moefit.kernels(km.fitted(x[own], t[own], "fp8", touched=True), "fp8")
    held = ~keep & ~shared
    assert np.allclose(err, np.abs(km.stored_predict(kern, "fp8", x[held]) / t[held] - 1))
    assert len(km.all_rows("b200", "fp8", marked, kern)) == int((~keep).sum())
    monkeypatch.setattr(km, "OWN_KEY", frozenset())
    _, err_every, n_every = km.fit_and_score("b200", "fp8", marked)
    assert n_every == int(keep.sum()) and len(err_every) == int((~keep).sum())


def timed(shapes_tokens_s):
    """Rows of (shape, tokens, seconds) in the tables' columns."""
    out = rows(*(s for s, _, _ in shapes_tokens_s))
    return {**out, "num_tokens": np.array([n for _, n, _ in shapes_tokens_s]),
            "latency_s": np.array([s for _, _, s in shapes_tokens_s], float)}


def test_a_shape_agrees_with_the_reference_by_its_median_ratio():
    """``moefit.agrees``: a layer shape agrees where the median over the token counts both tables time of its rows'
    time over the reference's is at most the ratio (one slower token count does not undo it), not where the median is
    past it, nor where the reference does not time the shape."""
    near, slow, lacking = (4096, 1536, 8, 128, 1, 8), (2048, 768, 8, 128, 1, 1), (5120, 8192, 1, 16, 1, 1)
    got = timed([(near, 1, 1.05e-4), (near, 2, 1.0e-4), (near, 4, 3.0e-4),
                 (slow, 1, 1.2e-4), (slow, 2, 1.2e-4), (lacking, 1, 1.0e-4)])
    ref = timed([(near, 1, 1e-4), (near, 2, 1e-4), (near, 4, 1e-4), (slow, 1, 1e-4), (slow, 2, 1e-4)])
    assert moefit.agrees(got, ref, 1.10).tolist() == [True, True, True, False, False, False]
    assert moefit.agrees(got, ref, 1.25).tolist() == [True, True, True, True, True, False]
    assert np.allclose(moefit.shape_ratios(got, ref)[:5], [1.05, 1.05, 1.05, 1.2, 1.2])


def test_a_shape_the_min_latency_layer_alone_shares_is_own_where_sm103_agrees():
    """``kernel_moe.cross_checked`` on a class of ``kernelfit.rules.MOE_CROSS_CHECK`` (B200 fp4, SM 103 reference B300):
    a shape shared with the min-latency layer alone is its own key where its rows agree with B300's, shared where they
    run slower; a shape another case shares stays shared whatever B300 says; without B300's table nothing is vouched."""
    from ironlaw.measure.calibrate.kernelfit import rules
    km = kernel_moe()
    assert rules.holds(rules.MOE_CROSS_CHECK, "fp4", "b200") and rules.MOE_CROSS_REFERENCE["b200"] == "b300"
    agree, slow, other = (4096, 1536, 8, 128, 1, 8), (2048, 768, 8, 128, 1, 1), (7168, 2048, 8, 256, 1, 8)
    b200 = {**timed([(agree, 1, 1.0e-4), (slow, 1, 1.5e-4), (other, 1, 1.0e-4)]),
            "shared_key": np.array([True, True, True]), "shared_other": np.array([False, False, True])}
    b300 = timed([(agree, 1, 1e-4), (slow, 1, 1e-4), (other, 1, 1e-4)])
    got = km.cross_checked([("b200", "fp4", "", dict(b200)), ("b300", "fp4", "", b300)])
    assert got[0][3]["shared_key"].tolist() == [False, True, True] and got[0][3]["shared_file"].all()
    alone = km.cross_checked([("b200", "fp4", "", dict(b200))])
    assert alone[0][3]["shared_key"].tolist() == [True, True, True]
    h100 = {**timed([(agree, 1, 1.0e-4)]), "shared_key": np.array([True])}
    assert km.cross_checked([("h100", "fp8", "", h100)])[0][3]["shared_key"].tolist() == [True]
