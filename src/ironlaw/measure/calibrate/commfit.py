"""Fit the measured collective curves (machine/network/curves.py) on rows of measured NCCL tables.

Each curve (collective, group size on one node) is fitted on its own: at most ``LINES`` lines
T = α_i + f(p)·n/B_i (NCCL's protocols LL, LL128, Simple), each by least relative squares reweighted against
outliers, every size assigned to the line that is fastest there, lines re-fitted until the assignment
settles (k-lines), α ≥ 0 and B > 0 throughout. ``fewest`` fits 1 to ``LINES`` lines and keeps the count with the
least mean relative error on the fitted sizes (the fewer on a tie): k-lines need not settle, and with few sizes a
line fitted on the large ones, its α barely held there, can undercut the small ones (vLLM's curves take it). A
curve whose engine changes kernel at given sizes (``switches``, measure/calibrate/commswitch.py) is fitted regime
by regime, each its own lines (``fewest``) tagged with the size it starts at; a regime with one fitted size takes a
line through it, one with none joins the regime below. ``split`` keeps every other measured size for the fit and
leaves the rest to score it. Rows come in as arrays: reading a table is the reader's business; numpy only.
"""
from __future__ import annotations

import numpy as np

from ...core.errors import IronlawError
from ...machine.network.curves import CURVE_COLLECTIVES, MAX_BUS_BPS, bus_factor, curve_time

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


def fit_lines(collective: str, gpus: int, nbytes, time_s, lines: int = LINES, switches: tuple = (),
              fewest: bool = False) -> tuple[tuple[float, ...], ...]:
    """((α_s, bus_Bps), …) of one measured curve, sorted by α; with ``switches``, ((α_s, bus_Bps, from_bytes), …)
    regime by regime; ``fewest``: of 1 to ``lines`` lines, the count that fits best (module docstring)."""
    if switches:
        return fit_regimes(collective, gpus, nbytes, time_s, switches, lines)
    if collective not in CURVE_COLLECTIVES:
        raise IronlawError(f"no measured curve form for collective '{collective}' ({', '.join(CURVE_COLLECTIVES)})")
    n, t = np.asarray(nbytes, float), np.asarray(time_s, float)
    if len(n) < MIN_POINTS or np.any(t <= 0) or np.any(n <= 0) or gpus < 2:
        raise IronlawError(f"{collective} on {gpus} GPUs: a curve needs ≥ {MIN_POINTS} sizes > 0 with times > 0 "
                           f"on ≥ 2 GPUs")
    order = np.argsort(n)
    x, t = bus_factor(collective, gpus) * n[order], t[order]
    best, err = (), np.inf
    for k in range(1 if fewest else lines, lines + 1):
        fits = _k_lines(x, t, k)
        e = float(np.mean(np.abs(np.min([a + x * s for a, s in fits], axis=0) / t - 1)))
        if e < err - 1e-9:
            best, err = fits, e
    return tuple((a, 1.0 / s) for a, s in sorted(best))


def _k_lines(x: np.ndarray, t: np.ndarray, k: int) -> list:
    """[(α, 1/B), …]: at most ``k`` lines, every size assigned to the fastest, re-fitted until that settles (or
    ``ITERATIONS`` rounds: nearly parallel lines can swap their sizes round after round)."""
    groups = np.array_split(np.arange(len(x)), max(1, min(k, len(x) // MIN_POINTS)))
    fits = [fit_line(x[g], t[g]) for g in groups]
    for _ in range(ITERATIONS):
        pick = np.argmin([a + x * s for a, s in fits], axis=0)
        new = [fit_line(x[pick == j], t[pick == j]) for j in range(len(fits)) if (pick == j).sum() >= MIN_POINTS]
        if new == fits:
            break
        fits = new
    return fits


def fit_regimes(collective: str, gpus: int, nbytes, time_s, switches, lines: int = LINES) -> tuple:
    """((α_s, bus_Bps, from_bytes), …): each regime's lines from its first size, the regimes split at ``switches``
    (bytes), a regime with no size merged into the one below, each regime's lines ``fit_lines``; a regime with one
    size takes a line through it at the bus bandwidth of the fastest line of the regime above it (else below): one
    time cannot tell a latency from a bandwidth."""
    n, t = np.asarray(nbytes, float), np.asarray(time_s, float)
    starts = [0.0] + sorted(float(x) for x in switches)
    regime = np.searchsorted(starts, n, side="right") - 1
    held = [j for j in range(len(starts)) if (regime == j).any()]
    rows = [(regime >= j) & (regime < (held[k + 1] if k + 1 < len(held) else len(starts))) for k, j in enumerate(held)]
    fitted = [fit_lines(collective, gpus, n[r], t[r], lines, fewest=True) if r.sum() >= MIN_POINTS else None
              for r in rows]
    if all(f is None for f in fitted):
        return fit_lines(collective, gpus, n, t, lines)
    out = []
    for k, (j, r, f) in enumerate(zip(held, rows, fitted)):
        if f is None:
            near = next(g for g in fitted[k + 1:] + fitted[:k][::-1] if g is not None)
            bus = max(b for _, b in near)
            f = ((max(float(t[r][0] - bus_factor(collective, gpus) * n[r][0] / bus), 0.0), bus),)
        out += [(a, b, starts[j] if k else 0.0) for a, b in f]
    return tuple(out)


def predict_s(lines, collective: str, gpus: int, nbytes) -> np.ndarray:
    """What the law times the curve at: α + β of its fastest line."""
    a, b = curve_time(lines, collective, gpus, nbytes)
    return a + b


def split(nbytes) -> np.ndarray:
    """The fit half of a curve's sizes: every other size from the smallest (the rest is scored)."""
    rank = np.argsort(np.argsort(np.asarray(nbytes, float), kind="stable"), kind="stable")
    return rank % 2 == 0
