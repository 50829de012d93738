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
