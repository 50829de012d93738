"""`ironlaw fit RUN.json … --on local [--hold-out RUN.json …] [--save]`: fit the profile's [calibration]
from `ironlaw validate --out` runs, score fitted and held-out runs separately, optionally save it."""
from __future__ import annotations

from typing import List, Optional

import typer

from .common import app, check_format, console_for, emit_json
from .options import Format


@app.command("fit", short_help="Fit efficiencies and per-op overheads from validate runs.")
def fit_cmd(
    runs: List[str] = typer.Argument(..., help="validate documents to fit on (ironlaw validate … --out RUN.json)"),
    hold_out: Optional[List[str]] = typer.Option(None, "--hold-out", help="validate documents to report on, never fitted"),
    on: str = typer.Option("local", "--on", help="the profile to calibrate: 'local' (newest probe profile) or a .toml"),
    stat: str = typer.Option("median", "--stat", help="median | min: the measured time fitted and scored"),
    save: bool = typer.Option(False, "--save", help="write the fitted [calibration] into the profile (atomic)"),
    fmt: Format = "text",
):
    """Fit efficiencies, bandwidth per reuse pattern and per-op overheads from validate runs."""
    from .. import api
    check_format(fmt)
    res = api.fit(runs, hold_out=hold_out, on=on, stat=stat, save=save)
    if fmt == "json":
        emit_json(res.to_dict())
        return
    cal, saved, groups = res.calibration, res.saved, {"fitted": res.fitted, "held_out": res.held_out}
    from rich.table import Table
    c = console_for(fmt)
    for g, rows in groups.items():
        if not rows:
            continue
        t = Table(title=f"{'FITTED (the calibration saw these)' if g == 'fitted' else 'HELD OUT (never fitted)'}")
        for col in ("case", "measured", "CV", "predicted", "error", "naive", "ops ±25%"):
            t.add_column(col, justify="left" if col == "case" else "right", overflow="fold")   # a path folds, never cut
        for r in rows:
            t.add_row(*row_cells(r))
        c.print(t)
    c.print(f"calibration: {fitted_line(cal)}; {framework_line(cal)}" + saved_line(saved, on, res.hardware))
    if fmt == "md":
        c.emit()


def row_cells(r: dict) -> list[str]:
    """One case's cells: times as every command prints them (``fmt_time``: 2.28 s, 41.3 ms), shares in %."""
    from ..core.units import fmt_time
    return [r["case"], fmt_time(r["measured_s"]), f"{100 * r['cv']:.0f}%", fmt_time(r["predicted_s"]),
            f"{100 * r['error']:+.1f}%", f"{100 * r['naive_error']:+.1f}%", f"{100 * r['within_25pct_share']:.0f}%"]


def saved_line(saved: str | None, on: str, name: str) -> str:
    """Where the calibration went; unsaved, what --save would do with this profile: a profile `ironlaw probe` did
    not write (a catalog device, a hand-written file) is one --save refuses."""
    if saved:
        return f"; saved into {saved}"
    from ..machine import hardware
    if "probe" in hardware.get(on).extra:
        return " (not saved; --save writes it into the profile)"
    return (f"; not saved: {name} is not a profile `ironlaw probe` wrote, the only kind --save writes into ("
            f"`ironlaw probe`, then --on local)")


def fitted_line(cal: dict) -> str:
    """What the fit gave values of its own: the op kinds (GEMMs by dtype), the split kernel classes, the op names
    with a class of their own, or why none (the rule of ``calibrate.fit``, in its own thresholds)."""
    from ..measure.calibrate.fit import CLASS_MIN_GAIN, CLASS_MIN_SHARE, MIN_OBS_PER_PARAM
    kinds = set(cal.get("compute", {})) | set(cal.get("latency_s", {})) | set(cal.get("memory", {}).get("kind", {}))
    kinds |= {k for k in ("conv", "attention") if cal.get(k)}
    gemms = sorted(cal.get("matmul", {}))
    if gemms:
        kinds = (kinds - {"matmul"}) | {f"matmul ({', '.join(gemms)})"}
    parts = [f"op kinds {', '.join(sorted(kinds))}" if kinds else "no op kind (each kept the profile's values)"]
    if cal.get("kernel"):
        parts.append(f"kernel classes {', '.join(sorted(cal['kernel']))}")
    ops = sorted(cal.get("op", {}))
    parts.append(f"op classes {', '.join(ops)}" if ops else
                 f"no op class of its own (an op name gets one where it holds ≥ {100 * CLASS_MIN_SHARE:.0f}% of a "
                 f"run's op time in {MIN_OBS_PER_PARAM} shapes or more and its own values beat its kind's by "
                 f"{100 * CLASS_MIN_GAIN:.0f}%)")
    return "; ".join(parts)


def framework_line(cal: dict) -> str:
    """The fitted framework terms: the global pair, then each front end's own where fitted (times as every command
    prints them: ``fmt_time``)."""
    from ..core.units import fmt_time

    def pair(t: dict) -> str:
        return f"{fmt_time(t.get('framework_s', 0.0))} per op + {100 * t.get('framework_share', 0.0):.1f}%"
    own = "".join(f", {name} {pair(t)}" for name, t in sorted((cal.get("frontend") or {}).items()))
    none = not own and not cal.get("framework_s") and not cal.get("framework_share")
    return f"framework {pair(cal)}" + own + (" (the runs' end to end was no longer than their ops timed one by one)"
                                             if none else "")
