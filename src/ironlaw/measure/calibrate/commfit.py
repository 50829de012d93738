"""Fit the measured collective curves (machine/network/curves.py) on rows of measured NCCL tables.

Each curve (collective, group size on one node) is fitted on its own: at most ``LINES`` lines
T = α_i + f(p)·n/B_i (NCCL's protocols LL, LL128, Simple), each by least relative squares reweighted against
outliers, every size assigned to the line that is fastest there, lines re-fitted until the assignment
settles (k-lines), α ≥ 0 and B > 0 throughout. ``split`` keeps every other measured size for the fit and
leaves the rest to score it. Rows come in as arrays: reading a table is the reader's business; numpy only.
"""
from __future__ import annotations

import numpy as np

from ...core.errors import IronlawError
from ...machine.network.curves import CURVE_COLLECTIVES, bus_factor, curve_time

LINES = 3                 # NCCL's protocols: LL, LL128, Simple
MIN_POINTS = 2            # sizes a line needs
ITERATIONS = 30


def fit_line(x: np.ndarray, t: np.ndarray, iters: int = 20) -> tuple[float, float]:
    """(α ≥ 0, 1/B > 0) of T = α + x/B with the least relative error, reweighted against outliers."""
    w = np.ones_like(t)
    a, s = 0.0, 1e-12
    for _ in range(iters):
        (a, s), *_ = np.linalg.lstsq(np.stack([1 / t, x / t], 1) * w[:, None], w, rcond=None)
        a, s = max(float(a), 0.0), max(float(s), 1e-18)
        w = 1 / np.sqrt(np.maximum(np.abs((a + x * s) / t - 1), 0.02))
    return a, s


def fit_lines(collective: str, gpus: int, nbytes, time_s, lines: int = LINES) -> tuple[tuple[float, float], ...]:
    """((α_s, bus_Bps), …) of one measured curve, sorted by α (module docstring)."""
    if collective not in CURVE_COLLECTIVES:
        raise IronlawError(f"no measured curve form for collective '{collective}' ({', '.join(CURVE_COLLECTIVES)})")
    n, t = np.asarray(nbytes, float), np.asarray(time_s, float)
    if len(n) < MIN_POINTS or np.any(t <= 0) or np.any(n <= 0) or gpus < 2:
        raise IronlawError(f"{collective} on {gpus} GPUs: a curve needs ≥ {MIN_POINTS} sizes > 0 with times > 0 "
                           f"on ≥ 2 GPUs")
    order = np.argsort(n)
    x, t = bus_factor(collective, gpus) * n[order], t[order]
    groups = np.array_split(np.arange(len(x)), max(1, min(lines, len(x) // MIN_POINTS)))
    fits = [fit_line(x[g], t[g]) for g in groups]
    for _ in range(ITERATIONS):
        pick = np.argmin([a + x * s for a, s in fits], axis=0)
        new = [fit_line(x[pick == j], t[pick == j]) for j in range(len(fits)) if (pick == j).sum() >= MIN_POINTS]
        if new == fits:
            break
        fits = new
    return tuple((a, 1.0 / s) for a, s in sorted(fits))


def predict_s(lines, collective: str, gpus: int, nbytes) -> np.ndarray:
    """What the law times the curve at: α + β of its fastest line."""
    a, b = curve_time(lines, collective, gpus, nbytes)
    return a + b


def split(nbytes) -> np.ndarray:
    """The fit half of a curve's sizes: every other size from the smallest (the rest is scored)."""
    rank = np.argsort(np.argsort(np.asarray(nbytes, float), kind="stable"), kind="stable")
    return rank % 2 == 0
