"""benchmarks/timer_steps.py finds the lattice a kernel table's short rows sit on (Blackwell's MLA BMM tables:
whole steps of about 2.05 µs) and tells it from times spread evenly, on planted times."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import timer_steps as ts  # noqa: E402


def test_times_in_whole_steps_give_their_step_and_phase():
    rng = np.random.default_rng(0)
    t = 0.35e-6 + 2.05e-6 * rng.integers(2, 9, 300) + rng.normal(0.0, 0.05e-6, 300)
    lt = ts.lattice(np.concatenate([t, [30e-6, 55e-6]]))          # rows past SHORT_S are left out of the test
    assert lt.step_s == pytest.approx(2.05e-6, abs=0.01e-6)
    assert lt.phase_s == pytest.approx(0.35e-6, abs=0.05e-6)
    assert lt.strength > 0.9 and lt.near > 0.99
    assert lt.chance == pytest.approx(2 * ts.NEAR_S / lt.step_s)


def test_times_spread_evenly_have_no_lattice():
    t = np.random.default_rng(1).uniform(4e-6, 19e-6, 2000)
    lt = ts.lattice(t)
    assert lt.strength < 0.15
    assert lt.near < lt.chance + 0.1


def test_predictions_move_to_the_nearest_lattice_point_under_short_s():
    lt = ts.Lattice(step_s=2.05e-6, phase_s=0.35e-6, strength=1.0, near=1.0, chance=0.24)
    p = np.array([5.0e-6, 6.0e-6, 0.5e-6, 25e-6])
    q = ts.on_lattice(p, lt)
    assert q[0] == pytest.approx(4.45e-6) and q[1] == pytest.approx(6.5e-6)
    assert q[2] == pytest.approx(2.40e-6)                         # at least the first step past zero
    assert q[3] == 25e-6                                          # a long row keeps its prediction


def test_no_short_row_is_one_clear_error():
    with pytest.raises(ValueError, match="SHORT_S"):
        ts.lattice(np.array([30e-6, 40e-6]))
