"""benchmarks/moe_forms.py: the candidate MoE-layer forms and the tail diagnostics (none stored).

The roofline form must reduce to the stored sum at σ = 1 and to L + max(W, F) + A + G at σ = 0; the tail's
non-monotone flag and its twins (rows the law's terms cannot tell apart) are checked on hand-made rows.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import moe_forms  # noqa: E402


def terms(n: int = 40, seed: int = 3) -> np.ndarray:
    """moefit.terms-shaped columns [1, W, F, A, G, slots, tokens] with the weights or the FLOPs binding by turns."""
    rng = np.random.default_rng(seed)
    x = np.column_stack([np.ones(n), rng.uniform(1e-6, 2e-4, n), rng.uniform(1e-6, 2e-4, n),
                         rng.uniform(1e-7, 5e-5, n), rng.uniform(1e-7, 1e-5, n), np.full(n, 8.0),
                         rng.integers(1, 4096, n).astype(float)])
    return x


def test_the_roofline_at_full_serial_share_is_the_stored_sum():
    x, c = terms(), np.array([3e-5, 1.2, 1.6, 2.5])
    none = np.zeros((len(x), 0))
    got = moe_forms.roof_predict(x, c, 1.0, "fp8", none, none)
    np.testing.assert_allclose(got, x[:, :4] @ c + x[:, 4], rtol=1e-12)


def test_the_roofline_without_serial_share_overlaps_weights_and_flops():
    x, c = terms(), np.array([3e-5, 1.2, 1.6, 2.5])
    none = np.zeros((len(x), 0))
    got = moe_forms.roof_predict(x, c, 0.0, "bf16", none, none)
    want = c[0] + np.maximum(x[:, 1] * c[1], x[:, 2] * c[2]) + x[:, 3] * c[3] + x[:, 4]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.any(x[:, 1] * c[1] > x[:, 2] * c[2]) and np.any(x[:, 1] * c[1] < x[:, 2] * c[2])


def test_a_compute_side_column_joins_the_flops_in_the_roofline():
    x, c = terms(), np.array([3e-5, 1.2, 1.6, 2.5, 4.0])
    waves = np.linspace(0, 5e-5, len(x))[:, None]
    got = moe_forms.roof_predict(x, c, 0.0, "bf16", waves, np.zeros((len(x), 0)))
    want = c[0] + np.maximum(x[:, 1] * c[1], x[:, 2] * c[2] + waves[:, 0] * c[4]) + x[:, 3] * c[3] + x[:, 4]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def shape_rows(latency_s: list[float], tokens: list[int], experts: list[int], ep: list[int]) -> dict:
    n = len(latency_s)
    return {"num_tokens": np.array(tokens), "hidden_size": np.full(n, 4096), "inter_size": np.full(n, 1024),
            "topk": np.full(n, 1), "num_experts": np.array(experts), "moe_tp_size": np.full(n, 1),
            "moe_ep_size": np.array(ep), "latency_s": np.array(latency_s, float)}


def test_a_shape_faster_at_more_tokens_is_flagged_non_monotone():
    dip = shape_rows([50e-6, 80e-6, 60e-6], [1, 8, 64], [16] * 3, [1] * 3)
    assert moe_forms.non_monotone(dip).all()                 # 60 µs is 25% under the 80 µs of fewer tokens
    rising = shape_rows([50e-6, 80e-6, 76e-6], [1, 8, 64], [16] * 3, [1] * 3)
    assert not moe_forms.non_monotone(rising).any()          # 5% under: within the tolerance


def test_twins_are_rows_the_laws_terms_cannot_tell_apart():
    # one token, top-1: the collector's balanced routing sends it to expert 0, on rank 0, whatever E and EP
    rows = shape_rows([100e-6, 60e-6, 100e-6, 70e-6], [1, 1, 1, 8], [128, 16, 16, 16], [128, 8, 1, 1])
    dev, faster = moe_forms.twins(rows)
    np.testing.assert_allclose(dev[:3], [0.0, 0.4, 0.0])     # local slots 1, 2, 16; their median 100 µs
    assert np.isnan(dev[3])                                  # 8 tokens: no twin
    assert faster == 1.0                                     # 2 slots at 60 µs, 1 slot at 100 µs


def test_the_padding_column_counts_each_expert_rows_up_to_a_128_row_block():
    """``pad``: the FLOPs of the rows a touched expert's share is padded with to whole 128-row blocks, in units of
    the layer's own FLOPs term (moefit.terms' third column)."""
    rows = {"num_tokens": np.array([1, 128, 200]), "hidden_size": np.full(3, 4096), "inter_size": np.full(3, 1024),
            "topk": np.full(3, 1), "num_experts": np.full(3, 1), "moe_tp_size": np.full(3, 1),
            "moe_ep_size": np.full(3, 1)}
    x = np.zeros((3, 10))
    x[:, 2] = [1e-6, 2e-6, 3e-6]
    pad = moe_forms.extra_columns("b200", rows, x)["pad"]
    np.testing.assert_allclose(pad, [127 * 1e-6, 0.0, (256 / 200 - 1) * 3e-6], rtol=1e-12)   # one expert takes all


def test_cross_check_prints_each_sm100_class_against_its_sm103_shapes():
    """``moe_forms.cross_check``: per SM 100 class with an SM 103 reference, the per-shape ratio over the shapes of
    its own key (one line), none for a GPU without a reference or a class left out by ``asked``."""
    cols = ("hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size")
    def rows(latency, shared):
        shapes = [(4096, 1536, 8, 128, 1, 8), (2048, 768, 8, 128, 1, 1)]
        out = {c: np.array([s[j] for s in shapes for _ in (1, 2)]) for j, c in enumerate(cols)}
        return {**out, "num_tokens": np.array([1, 2, 1, 2]), "latency_s": np.array(latency, float),
                "shared_key": np.array(shared)}
    b200 = rows([1.1e-4, 1.1e-4, 2e-4, 2e-4], [False, False, True, True])
    b300 = rows([1e-4, 1e-4, 1e-4, 1e-4], [False] * 4)
    groups = [("b200", "bf16", "", b200), ("b300", "bf16", "", b300), ("h100", "bf16", "", b300)]
    lines = moe_forms.cross_check(groups)
    assert len(lines) == 1 and lines[0].startswith("b200") and "1 shapes: median 1.100" in lines[0], lines
    assert moe_forms.cross_check(groups, lambda gpu, dt: dt == "fp8") == []
