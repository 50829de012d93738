"""Fitting the full-load power per resource on kernel rows with measured board power (ironlaw.measure.calibrate.
powerfit): which rows the collector's NVML averaging makes meaningful, and a fit that recovers known powers."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from ironlaw.machine import hardware
from ironlaw.measure.calibrate import powerfit


def test_only_rows_replayed_for_a_full_nvml_second_are_meaningful():
    # collector/helper.py: 1 s of replays (0.3 s under 0.1 ms), at most 3000 replays
    lat = np.array([10e-6, 90e-6, 0.2e-3, 1 / 3000, 0.5e-3, 5e-3, 2.0])
    assert powerfit.window_s(lat) == pytest.approx([0.03, 0.27, 0.6, 1.0 + 1 / 3000, 1.0005, 1.005, 12.0], rel=1e-3)
    assert powerfit.meaningful(lat).tolist() == [False, False, False, True, True, True, True]


def _rows(n=400, seed=0):
    rng = np.random.default_rng(seed)
    t = rng.uniform(1e-3, 5e-3, n)
    uc, um = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    table = np.where(np.arange(n) % 3 == 0, "generation_attention", "context_attention").astype(object)
    return t, uc, um, table


def test_the_fit_recovers_the_full_load_powers_the_rows_were_drawn_with():
    hw = replace(hardware.get("b200"), compute_w=None, memory_w=None)
    t, uc, um, table = _rows()
    measured = hw.idle_w + np.maximum((880 - hw.idle_w) * uc, (640 - hw.idle_w) * um)
    r = powerfit.PowerRows(table, measured, uc * t, um * t, t, np.arange(len(t)) % 2 == 0)
    assert powerfit.fit(hw, r) == (pytest.approx(880), pytest.approx(640))
    fitted = powerfit.with_power(hw, 880, 640)
    assert all(s.p90_abs_err < 1e-9 for s in powerfit.score(fitted, r))
    assert all(s.median_abs_err > 0.05 for s in powerfit.score(hw, r))     # the TDP for both misses them
