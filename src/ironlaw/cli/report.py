"""`ironlaw report SPEC --on HW --html out.html`: one self-contained HTML file a person would rather read."""
from __future__ import annotations

from typing import List, Optional

import typer

from .common import app
from .options import Batch, DType, On, Phase, Seq, Serial, Spec


@app.command()
def report(
    spec: Spec,
    html: str = typer.Option(..., "--html", help="write the report to this file (self-contained: no network fetches)"),
    on: On = "h100",
    batch: Batch = 1,
    seq: Seq = None,
    phase: Phase = None,
    dtype: DType = None,
    serial: Serial = False,
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
    from ..core.errors import IronlawError
    from ..report import html as page
    from ..report import inputs
    from ..core.units import fmt, fmt_time
    from ..models.analysis import predict
    from .common import device

    out = page.check_output(html)                      # fail before any work
    if top < 1:
        raise IronlawError(f"--top must be at least 1, got {top}")
    if compare_file and (what_if or vs_hardware):
        raise IronlawError("give either --compare FILE or --what-if/--vs-hardware, not both")
    from ..core import progress
    with progress.task(f"report of {spec}", total=3) as step:
        est = predict(spec, device(on), batch, seq, phase, dtype, "serial" if serial else "overlap")
        step(description="what-if and validation")
        cmp_doc = None
        if compare_file:
            cmp_doc = inputs.load_compare(compare_file, est)
        elif what_if or vs_hardware:
            try:
                from ..models.whatif.compare import compare as run
            except ImportError:
                raise IronlawError("--what-if is not available in this build (ironlaw.models.whatif is missing); "
                                   "use --compare FILE.json") from None
            cmp_doc = inputs.check_compare(run(est, what_if, vs_hardware).to_dict(), "--what-if", est)
        val_doc = inputs.load_validation(validate_file, est) if validate_file else None
        fr_doc = None
        if frontier_file:
            from ..report.frontier import check
            fr_doc = check(inputs.read_json(frontier_file, "--frontier"), f"--frontier {frontier_file}")
        step(description="drawing the report")
        text = page.render(est, compare=cmp_doc, validation_doc=val_doc, top=top, frontier_doc=fr_doc)
        step()
    page.write(out, text)
    b = est.bottleneck()
    typer.echo(f"wrote {out} ({fmt(len(text.encode()), 'B')}): {est.graph.name} on {est.hw.name}, "
               f"{fmt_time(est.time_s)}, {b['resource']}{' (' + b['tier'] + ')' if b['tier'] else ''}-bound")
