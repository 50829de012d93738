"""`ironlaw report SPEC --on HW --html out.html`: one self-contained HTML file a person would rather read."""
from __future__ import annotations

from typing import List, Optional

import typer

from .case import Case, with_case
from .common import app
from .options import On, Spec


@app.command(short_help="Write an HTML report of one prediction.")
@with_case
def report(
    spec: Spec,
    html: str = typer.Option(..., "--html", help="write the report to this file (self-contained: no network fetches)"),
    on: On = "h100",
    case: Case = Case(),
    what_if: List[str] = typer.Option([], "--what-if", "-w", help="add a before/after section for these transforms "
                                      "(as `ironlaw compare --what-if`)"),
    vs_hardware: Optional[str] = typer.Option(None, "--vs-hardware", help="with the what-if section: predict 'after' on this device"),
    compare_file: Optional[str] = typer.Option(None, "--compare", help="add a before/after section from a saved "
                                               "`ironlaw compare --format json` file (schema ironlaw.compare/1)"),
    validate_file: Optional[str] = typer.Option(None, "--validate", help="add predicted vs measured from a "
                                                "`ironlaw validate --format json` file (schema ironlaw.validate/1)"),
    frontier_file: Optional[str] = typer.Option(None, "--frontier", help="add the serving frontier from a saved "
                                                "`ironlaw serve --sweep-concurrency --format json` file"),
    top: int = typer.Option(200, "--top", help="rows in the ops table (the roofline always shows every op)"),
):
    """Write an HTML report: summary, terms, roofline of every op, sortable ops, footprint, what-if, validation."""
    from .. import api
    from ..core.units import fmt, fmt_time

    res = api.report(spec, html, on, **case.api_kwargs(), what_if=what_if, vs_hardware=vs_hardware,
                     compare=compare_file, validate=validate_file, frontier=frontier_file, top=top)
    est, b = res.estimate, res.estimate.bottleneck()
    typer.echo(f"wrote {res.path} ({fmt(res.size_bytes, 'B')}): {est.graph.name} on {est.hw.name}, "
               f"{fmt_time(est.time_s)}, {b['resource']}{' (' + b['tier'] + ')' if b['tier'] else ''}-bound")
