"""`ironlaw fit RUN.json … --on local [--hold-out RUN.json …] [--save]`: fit the profile's [calibration]
from `ironlaw validate --out` runs, score fitted and held-out runs separately, optionally save it."""
from __future__ import annotations

from typing import List, Optional

import typer

from .common import app, check_format, console_for, emit_json


@app.command("fit")
def fit_cmd(
    runs: List[str] = typer.Argument(..., help="validate documents to fit on (ironlaw validate … --out RUN.json)"),
    hold_out: Optional[List[str]] = typer.Option(None, "--hold-out", help="validate documents to report on, never fitted"),
    on: str = typer.Option("local", "--on", help="the profile to calibrate: 'local' (newest probe profile) or a .toml"),
    stat: str = typer.Option("median", "--stat", help="median | min: the measured time fitted and scored"),
    save: bool = typer.Option(False, "--save", help="write the fitted [calibration] into the profile (atomic)"),
    fmt: str = typer.Option("text", "--format", help="text | json | md"),
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
            t.add_column(col, justify="left" if col == "case" else "right")
        for r in rows:
            t.add_row(*row_cells(r))
        c.print(t)
    c.print(f"calibration: {len(cal.get('op', {}))} op classes, {framework_line(cal)}"
            + (f"; saved into {saved}" if saved else " (not saved; --save writes it into the profile)"))
    if fmt == "md":
        c.emit()


def row_cells(r: dict) -> list[str]:
    """One case's cells: times as every command prints them (``fmt_time``: 2.28 s, 41.3 ms), shares in %."""
    from ..core.units import fmt_time
    return [r["case"], fmt_time(r["measured_s"]), f"{100 * r['cv']:.0f}%", fmt_time(r["predicted_s"]),
            f"{100 * r['error']:+.1f}%", f"{100 * r['naive_error']:+.1f}%", f"{100 * r['within_25pct_share']:.0f}%"]


def framework_line(cal: dict) -> str:
    """The fitted framework terms: the global pair, then each front end's own where fitted (times as every command
    prints them: ``fmt_time``)."""
    from ..core.units import fmt_time

    def pair(t: dict) -> str:
        return f"{fmt_time(t.get('framework_s', 0.0))} per op + {100 * t.get('framework_share', 0.0):.1f}%"
    own = "".join(f", {name} {pair(t)}" for name, t in sorted((cal.get("frontend") or {}).items()))
    return f"framework {pair(cal)}" + own
