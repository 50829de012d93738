"""benchmarks/gemm_scatter_frameworks.py tells a kernel switch (the same jump at the same shape in two frameworks'
tables) from a timing's scatter (a jump at a shape the other table does not share), on planted tables."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import gemm_scatter_frameworks as gs  # noqa: E402


def table(spikes: dict) -> "pd.Series":
    """A smooth GEMM table over M = 1 … 16 at two (N, K), times multiplied by ``spikes[(m, n, k)]``."""
    rows = [(m, n, k) for n, k in ((64, 6144), (128, 2048)) for m in range(1, 17)]
    idx = pd.MultiIndex.from_tuples(rows, names=["m", "n", "k"])
    lat = np.array([1e-6 * (4.0 + 0.05 * m) * spikes.get((m, n, k), 1.0) for m, n, k in rows])
    return pd.Series(lat, index=idx, name="latency_s")


def test_a_shared_kernel_switch_repeats_and_a_lone_spike_does_not():
    switch = {(m, 64, 6144): 6.0 for m in range(2, 6)}          # a slow kernel at M = 2 … 5, in both tables
    a = table({**switch, (9, 128, 2048): 3.0})                   # plus a spike in the first table alone
    b = table(switch)
    ja, jb = gs.jumps(a), gs.jumps(b)
    n_a, share_a = gs.repeated_share(ja, jb)
    n_b, share_b = gs.repeated_share(jb, ja)
    assert n_b == 3 and share_b == 1.0                           # the switch's edges: M = 2 and 5 up, M = 6 down
    assert n_a == 6 and share_a == pytest.approx(0.5)            # the lone spike's three (M = 8, 9, 10) are not


def test_the_k_walking_region_follows_m_n_k():
    assert gs.plateau(2, 64, 6144) and gs.plateau(15, 128, 1024)
    assert not gs.plateau(1, 64, 6144)                           # M = 1 runs a GEMV
    assert not gs.plateau(6, 64, 6144)                           # M·N·K = 2.36e6 ≥ 2^21
    assert not gs.plateau(2, 64, 10240)                          # K over 8,192
    assert not gs.plateau(2, 64, 512)                            # K under 768


def test_wave_fill_is_one_on_whole_waves_and_less_on_a_partial_one():
    assert gs.wave_fill(np.array([128.0 * 142]), np.array([128.0]), np.array([4096.0]), 142)[0] == pytest.approx(1.0)
    # one row-tile past a wave: the best tile is 64×64, 286 × 2 CTAs in 5 waves of 142
    fill = gs.wave_fill(np.array([128.0 * 143]), np.array([128.0]), np.array([4096.0]), 142)[0]
    assert fill == pytest.approx(128 * 143 * 128 / 142 / (5 * 64 * 64))
