"""The roofline picture of an Estimate (matplotlib, imported lazily).

    roofline(est)      -> Figure: device roofs (compute per dtype, bandwidth per memory tier), each op as a
                          point (arithmetic intensity vs achieved FLOP/s, area ∝ time, colour = what binds
                          it), the workload as a whole as a star
    terms_by_kind(est) -> Figure: stacked bars of the three terms (data, compute, latency) per op kind
    figure(est)        -> Figure with both panels;  save(est, 'out.svg' | 'out.png') writes it atomically
Ops with no FLOPs (copies, gathers) cannot sit on log axes: the roofline says how many were left out.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

from ..core.errors import IronlawError
from ..core.units import fmt
from .svg import BOUND_COLOURS, TERM_COLOURS
from .svg import BW_ROOF_COLOURS as TIER_COLOURS          # a memory tier's colour: its bandwidth roof's (svg.roofline)

FORMATS = (".svg", ".png")
DTYPE_STYLES = ("-", "--", "-.", ":")


def check_path(path: str | os.PathLike) -> Path:
    """The plot file to write: a .svg or .png whose folder exists and is writable."""
    from ..core.files import check_plot
    return check_plot(path, FORMATS)


def _one_config(est) -> None:
    if est.cols.cfg_shape != ():
        raise IronlawError("a plot shows one configuration; give one --batch/--seq, not a sweep")


def _tier_colour(hw, name: str) -> str:
    names = [t.name for t in hw.memory]
    return TIER_COLOURS[names.index(name) % len(TIER_COLOURS)] if name in names else "#868e96"


def _bound_colour(hw, bound_label: str) -> str:
    if bound_label.startswith("bandwidth"):
        return _tier_colour(hw, bound_label.split(":", 1)[1] if ":" in bound_label else "")
    return BOUND_COLOURS.get(bound_label, "#495057")


def _points(est, rows):
    """(plotted, left_out): per op row with intensity, achieved rate, time and bound label."""
    idx = est.op_bound_idx
    pts, left = [], 0
    for i, r in enumerate(rows):
        res, tier = est.resources[int(idx[i])]
        label = res if tier is None else f"{res}:{tier}"
        if r["flops"] > 0 and r["bytes"] > 0 and r["time_s"] > 0:
            pts.append((r["flops"] / r["bytes"], r["flops"] / r["time_s"], r["time_s"], label, r))
        else:
            left += 1
    return pts, left


def roofline(est, ax=None):
    """Draw the roofline of ``est`` on ``ax`` (a new Figure when None); returns the Figure."""
    _one_config(est)
    from matplotlib.figure import Figure
    fig = ax.figure if ax is not None else Figure(figsize=(8, 5.5))
    ax = ax if ax is not None else fig.add_subplot(1, 1, 1)
    hw = est.hw
    rows = est.rows()
    pts, left = _points(est, rows)
    total_flops = float(est.graph.flops)
    total_bytes = float(sum(r["bytes"] for r in rows))
    total_s = float(est.total_s)
    ais = [p[0] for p in pts] + ([total_flops / total_bytes] if total_bytes > 0 and total_flops > 0 else [])
    peaks = dict(hw.peak_flops)
    top = max(list(peaks.values()) + [hw.vector_flops])
    x_lo = min(ais + [top / max(t.bw_Bps for t in hw.memory)]) / 10 if ais else 1e-2
    x_hi = max(ais + [top / min(t.bw_Bps for t in hw.memory)]) * 10 if ais else 1e4
    x = [x_lo * (x_hi / x_lo) ** (k / 200) for k in range(201)]

    # roofs: one diagonal per memory tier, rising to the workload's own dtypes' peak (not a faster dtype's it does
    # not run in), one horizontal per compute dtype (+ the vector unit)
    dtypes = [d for d in peaks if any(op.dtype == d for op in est.graph.ops)] or list(peaks)[:1]
    cap = max([peaks[d] for d in dtypes] + [hw.vector_flops])
    for t in hw.memory:
        style = dict(lw=2.2 if t.role == "device" else 1.0, color=_tier_colour(hw, t.name))
        ax.plot(x, [min(cap, t.bw_Bps * v) for v in x], **style, label=f"{t.name} {fmt(t.bw_Bps, 'B/s')}")
    for k, d in enumerate(sorted(peaks, key=lambda d: -peaks[d])):
        main = d in dtypes
        ax.axhline(peaks[d], color="#212529" if main else "#adb5bd", lw=1.6 if main else 0.8,
                   ls=DTYPE_STYLES[k % len(DTYPE_STYLES)], label=f"{d} {fmt(peaks[d], 'FLOP/s')}")
    ax.axhline(hw.vector_flops, color="#868e96", lw=1.0, ls=(0, (1, 2)),
               label=f"vector {fmt(hw.vector_flops, 'FLOP/s')}")

    # ops: area ∝ share of the time; one scatter per bound (hundreds of ops stay fast)
    if pts:
        tmax = max(p[2] for p in pts)
        groups: dict[str, list] = {}
        for p in sorted(pts, key=lambda p: -p[2]):
            groups.setdefault(p[3], []).append(p)
        for label, ps in groups.items():
            ax.scatter([p[0] for p in ps], [p[1] for p in ps], s=[12 + 400 * p[2] / tmax for p in ps],
                       color=_bound_colour(hw, label), alpha=0.6, edgecolors="white", linewidths=0.5,
                       label=f"op bound: {label}", zorder=3)
    if total_bytes > 0 and total_flops > 0 and total_s > 0 and math.isfinite(total_s):
        ax.scatter([total_flops / total_bytes], [total_flops / total_s], marker="*", s=320, color="#ffd43b",
                   edgecolors="#212529", linewidths=1.0, zorder=4, label="workload")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    rates = [p[1] for p in pts] or [top / 1e3]
    ax.set_ylim(min(rates + [top]) / 10, top * 3)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("achieved FLOP/s")
    g = est.graph
    note = f"; {left} op(s) without FLOPs not shown" if left else ""
    ax.set_title(f"{g.name} ({g.phase}, {g.dtype}) on {hw.name}{note}", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right", ncol=2)
    return fig


def terms_by_kind(est, ax=None):
    """Stacked bars of data, compute and latency seconds (summed over ops) per op kind."""
    _one_config(est)
    from matplotlib.figure import Figure
    fig = ax.figure if ax is not None else Figure(figsize=(8, 4))
    ax = ax if ax is not None else fig.add_subplot(1, 1, 1)
    kinds = est.by_kind()
    names = list(kinds)
    bottom = [0.0] * len(names)
    for term, label in (("data_s", "data (bytes / bandwidth)"), ("compute_s", "compute (FLOPs / peak·η)"),
                        ("latency_s", "latency (fixed per op)")):
        vals = [kinds[k][term] for k in names]
        ax.bar(names, vals, bottom=bottom, color=TERM_COLOURS[term], label=label)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_ylabel("seconds (terms summed, before overlap)")
    ax.set_title("the three terms per op kind", fontsize=10)
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    ax.legend(fontsize=8)
    return fig


def figure(est):
    """One Figure with the roofline above the stacked bars."""
    _one_config(est)
    from matplotlib.figure import Figure
    fig = Figure(figsize=(9, 10), layout="constrained")
    top, bottom = fig.subplots(2, 1, height_ratios=[3, 2])
    roofline(est, top)
    terms_by_kind(est, bottom)
    return fig


def save(est, path: str | os.PathLike) -> Path:
    """Write ``figure(est)`` to ``path`` (.svg or .png), atomically: a temporary file, then a rename."""
    from ..core.files import write_atomic
    p = check_path(path)
    fig = figure(est)
    return write_atomic(p, lambda f: fig.savefig(f, format=p.suffix[1:].lower(), dpi=120), "--plot")
