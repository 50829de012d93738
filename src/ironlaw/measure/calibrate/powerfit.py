"""Board power at full load per resource, fitted on kernel tables that carry measured board power.

aiconfigurator-core's collector (ai-dynamo/aiconfigurator, collector/helper.py: ``benchmark_with_power`` and its
``PowerMonitor``) replays each kernel's CUDA graph back to back for ``COLLECTOR_TARGET_S`` (1 s; 0.3 s for a kernel
under 0.1 ms), at most ``COLLECTOR_RUNS_MAX`` (3000) replays, while a thread reads NVML's board power
(``nvmlDeviceGetPowerUsage``) every 100 ms, and stores the mean of those readings (``power``) with the board's power
limit (``power_limit``). On Ampere (but GA100) and newer GPUs that NVML reading is itself the mean over the last
second (NVML API reference, ``nvmlDeviceGetPowerUsage``), so a replay window under ``NVML_AVERAGE_S`` reads the
graph capture and warm-up before it as much as the kernel: ``meaningful`` keeps the rows whose window is a full
second, the kernels of at least 1/3000 s (the rows' power rises with the window up to there: the tables' medians
below 0.1 s of replays sit 150–300 W under those of a full second).

Each row becomes the op ironlaw prices for it (``kernelfit.ops.observations``, the kernel tables' scoring), timed by
the law with the engine's fitted terms; its busy shares are the op's compute seconds and device-memory seconds over
its predicted time, and its power ``law.power.drawn``'s: idle_w + the larger of (compute_w − idle_w)·u_compute and
(memory_w − idle_w)·u_memory. ``fit`` picks compute_w and memory_w (a grid of ``GRID_W`` W, each between idle_w
and tdp_w) minimising the mean |log(predicted / measured)| over the fit half of each kernel class (``kernelfit.rows.
split``), each table weighing the same; ``score`` gives the held-out half's median and 90th-percentile |error|.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ...core.errors import IronlawError
from ...law import law, power
from ...machine.calibration import Calibration

COLLECTOR_TARGET_S = 1.0        # collector/helper.py: COLLECTOR_POWER_MIN_DURATION's default
COLLECTOR_SHORT_TARGET_S = 0.3  # its target for a kernel under COLLECTOR_SHORT_S
COLLECTOR_SHORT_S = 1e-4
COLLECTOR_RUNS_MIN, COLLECTOR_RUNS_MAX = 6, 3000
NVML_AVERAGE_S = 1.0            # nvmlDeviceGetPowerUsage on Ampere (not GA100) and newer: the mean over 1 s
GRID_W = 5.0
POWER_TABLES = ("context_attention", "generation_attention")


@dataclass(frozen=True)
class PowerRows:
    """Measured rows with the law's busy seconds: one entry per row, ``table`` naming its table."""
    table: np.ndarray           # the table's op ('context_attention', …)
    measured_w: np.ndarray
    compute_s: np.ndarray       # the op's compute seconds (law.timed)
    memory_s: np.ndarray        # its device-memory seconds
    time_s: np.ndarray          # its predicted time
    fit: np.ndarray             # True: on the fit half of its kernel class


@dataclass(frozen=True)
class PowerScore:
    table: str
    rows: int
    median_abs_err: float
    p90_abs_err: float


def window_s(latency_s) -> np.ndarray:
    """Seconds of back-to-back replays the collector averaged a row's power over (``benchmark_with_power``)."""
    t = np.asarray(latency_s, float)
    target = np.where(t < COLLECTOR_SHORT_S, COLLECTOR_SHORT_TARGET_S, COLLECTOR_TARGET_S)
    runs = np.clip(np.floor(target / t) + 1, COLLECTOR_RUNS_MIN, COLLECTOR_RUNS_MAX)
    return runs * t


def meaningful(latency_s) -> np.ndarray:
    """Whether a row's power reading covers a full NVML averaging period of its own replays."""
    return window_s(latency_s) >= NVML_AVERAGE_S * (1 - 1e-9)


def power_rows(hw, cal: dict, groups: list) -> PowerRows:
    """The ``meaningful`` rows of ``groups`` (kernel classes whose rows carry ``power``) with the law's busy
    seconds under ``cal`` (the engine's fitted terms)."""
    from .fitcore import KERNEL_ONLY, Problem
    from .kernelfit.ops import observations, replayed_hw
    from .kernelfit.rows import split
    parts = []
    kernel = Calibration.of({k: v for k, v in cal.items() if k not in KERNEL_ONLY})
    for g in groups:
        if "power" not in g.rows.columns:
            raise IronlawError(f"{g.table.path}: the table has no power column (measured board power)")
        every = g.rows.reset_index(drop=True)
        on_fit = np.isin(np.arange(len(every)), split(every, g.op)[0].index)
        keep = meaningful(every["latency_s"].to_numpy())
        rows = every[keep]
        if not len(rows):
            continue
        h = replayed_hw(g, hw)
        prob = Problem(h, observations(g, rows, h), weighting="per_case")
        est = law.timed(prob.placed, replace(prob.hw, calibration=kernel))
        parts.append((np.full(len(rows), g.op, dtype=object), rows["power"].to_numpy(float),
                      np.asarray(est.compute_s, float).reshape(-1),
                      np.asarray(est.data_tier_s, float)[h.device_tier].reshape(-1),
                      np.asarray(est.op_time_s, float).reshape(-1), on_fit[keep]))
    if not parts:
        raise IronlawError("power fit: no row of the tables replays for a full NVML averaging period")
    return PowerRows(*(np.concatenate(c) for c in zip(*parts)))


def predicted_w(hw, r: PowerRows) -> np.ndarray:
    """Board power ``law.power.drawn`` gives each row of ``r`` on ``hw``."""
    dev = f"bandwidth:{hw.memory[hw.device_tier].name}"
    return power.drawn(hw, {"compute": r.compute_s, dev: r.memory_s}, r.time_s)[0]


def with_power(hw, compute_w: float, memory_w: float):
    return replace(hw, compute_w=float(compute_w), memory_w=float(memory_w))


def fit(hw, r: PowerRows) -> tuple[float, float]:
    """(compute_w, memory_w) minimising the mean |log(predicted / measured)| over the fit rows, each table
    weighing the same; each on a ``GRID_W`` W grid between idle_w and tdp_w."""
    sel = r.fit
    w = np.zeros(len(sel))
    for t in set(r.table[sel].tolist()):
        on = sel & (r.table == t)
        w[on] = 1.0 / on.sum()
    grid = np.arange(hw.idle_w + GRID_W, hw.tdp_w + GRID_W / 2, GRID_W) - hw.idle_w
    with np.errstate(divide="ignore", invalid="ignore"):
        uc = np.where(r.time_s > 0, np.clip(r.compute_s / r.time_s, 0, 1), 0.0)[sel]
        um = np.where(r.time_s > 0, np.clip(r.memory_s / r.time_s, 0, 1), 0.0)[sel]
    logm, ws = np.log(r.measured_w[sel]), w[sel]
    best = (np.inf, 0.0, 0.0)
    for dc in grid:
        p = hw.idle_w + np.maximum(dc * uc[None, :], grid[:, None] * um[None, :])
        loss = (np.abs(np.log(p) - logm[None, :]) * ws[None, :]).sum(axis=1)
        i = int(np.argmin(loss))
        if loss[i] < best[0]:
            best = (float(loss[i]), dc, grid[i])
    return hw.idle_w + best[1], hw.idle_w + best[2]


def score(hw, r: PowerRows, held: bool = True) -> list[PowerScore]:
    """Per table, median and 90th-percentile |predicted / measured − 1| on the held-out rows (all, ``held``
    False)."""
    err = np.abs(predicted_w(hw, r) / r.measured_w - 1.0)
    out = []
    for t in sorted(set(r.table.tolist())):
        on = (r.table == t) & (~r.fit if held else True)
        if on.any():
            out.append(PowerScore(t, int(on.sum()), float(np.median(err[on])), float(np.percentile(err[on], 90))))
    return out
