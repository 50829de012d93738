"""benchmarks/moe_measured_layer.py: the what-if that times each step's routed MoE layer on a measured table."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import moe_measured_layer as mml  # noqa: E402
import trtllm_h100 as h100  # noqa: E402

SCOUT = {"model": "llama4-scout", "spec": "llama4-scout", "tp": 1, "isl": 128, "osl": 2048, "gpu": "b200",
         "precision": "fp4", "published": 14699.0}
QWEN3 = {"model": "qwen3-235b-a22b", "spec": "qwen3-235b-a22b", "tp": 8, "isl": 1000, "osl": 1000, "gpu": "b200",
         "precision": "fp4", "published": 42391.0}


pytestmark = pytest.mark.usefixtures("trtllm_defaults")       # conftest: RELEASE back on its defaults


def priced(cell):
    return h100.predict(cell, cell["gpu"], replace(h100.fitted(), moe_tables=True))


def test_table_interpolates_in_log_tokens_and_extrapolates_linearly_past_the_last_row():
    ts = (np.array([64.0, 256.0, 1024.0]), np.array([1e-4, 2e-4, 8e-4]))
    assert mml.table_s(ts, 256.0) == pytest.approx(2e-4)
    assert mml.table_s(ts, 128.0) == pytest.approx(np.sqrt(1e-4 * 2e-4))      # halfway in log tokens
    assert mml.table_s(ts, 16.0) == pytest.approx(1e-4)                        # below the first row: its time
    assert mml.table_s(ts, 4096.0) == pytest.approx(8e-4 * 4)                  # past the end: × tokens / last


def test_a_table_equal_to_the_law_s_own_layer_gives_back_the_run_time():
    est = priced(SCOUT)
    points = sorted({(tok, own / layers) for _, e in est.steps for _, own, layers, tok in [mml.step_parts(e)]})
    assert len(points) == len(est.steps) >= 2
    ts = (np.array([p[0] for p in points]), np.array([p[1] for p in points]))
    assert mml.repriced_s(est, ts, est.constants.step_s) == pytest.approx(est.time_s, rel=1e-9)
    slower = (ts[0], ts[1] * 1.5)
    assert mml.repriced_s(est, slower, est.constants.step_s) > est.time_s


def test_the_layer_shape_is_the_cell_s_routed_layer_on_its_ep_rank():
    assert mml.layer_shape(priced(QWEN3)) == {"hidden_size": 4096, "num_experts": 128, "topk": 8, "moe_ep_size": 8}
    assert mml.layer_shape(priced(SCOUT)) == {"hidden_size": 5120, "num_experts": 16, "topk": 1, "moe_ep_size": 1}


def test_the_pair_takes_the_slower_or_the_faster_twin_at_the_own_token_counts():
    own = (np.array([64.0, 256.0]), np.array([2e-4, 4e-4]))
    twin = (np.array([64.0, 1024.0]), np.array([3e-4, 3e-4]))
    tokens, slower = mml.paired(own, twin, "slower")
    assert list(tokens) == [64.0, 256.0] and list(slower) == pytest.approx([3e-4, 4e-4])
    assert list(mml.paired(own, twin, "faster")[1]) == pytest.approx([2e-4, 3e-4])
