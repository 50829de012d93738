"""`ironlaw compare SPEC --on HW --what-if "…" [--vs-hardware HW2]`: before / after, side by side."""
from __future__ import annotations

from typing import List, Optional

import typer

from .case import Case, with_case
from .common import app, check_format, check_top, console, emit_json
from .options import Format, Opt, Spec, parse_opts


@app.command(short_help="Does an optimization (or other hardware) shorten the time?")
@with_case
def compare(
    spec: Spec,
    on: str = typer.Option("h100", "--on", help="hardware of the 'before' case"),
    what_if: List[str] = typer.Option([], "--what-if", "-w",
                                      help="transform(s), e.g. \"sparsity=0.9,format=csr\", \"sparsity=2:4\" (2:4 structured, on "
                                           "devices with sparse tensor cores), \"quant=int8,target=weights\", "
                                           "\"fusion=elementwise\", \"flash-attention\", \"batch=64\", \"recompute=full\", "
                                           "\"hardware=b200\", \"prefetch\", \"overlap-comm\"; repeat or join with ';'"),
    vs_hardware: Optional[str] = typer.Option(None, "--vs-hardware", help="predict the 'after' case on this device"),
    case: Case = Case(),
    fmt: Format = "text",
    top: int = typer.Option(6, "--top", help="ops shown on the critical path (text/md)"),
    opt: Opt = [],
):
    """Does an optimization shorten the critical path? Terms, bottleneck and path, before and after."""
    from .. import api

    check_format(fmt)
    check_top(top)
    c = api.compare(spec, on, what_if=what_if, vs_hardware=vs_hardware, **case.api_kwargs(), options=parse_opts(opt))
    if fmt == "json":
        emit_json(c.to_dict())
    elif fmt == "md":
        print(markdown(c, top))
    else:
        text(c, top)


def _rows(c):
    from ..core.units import fmt as f, fmt_time
    rows = []
    labels = {"data_s": "data  D_vol/BW", "compute_s": "compute  O/(R·η)", "latency_s": "latency  L_lat",
              "network_s": "network"}
    for k, lab in labels.items():
        b, a = float(c.before.term(k)), float(c.after.term(k))
        if b == 0 and a == 0:
            continue
        rows.append((lab, fmt_time(b), fmt_time(a), _ratio(b, a)))
    for k, (b, a) in c.volumes().items():
        unit = {"D_vol": "B", "O": "FLOP", "launches": ""}[k]
        rows.append((k, f(b, unit).strip(), f(a, unit).strip(), _ratio(b, a)))
    rows.append(("critical path", fmt_time(c.cp_before.time_s), fmt_time(c.cp_after.time_s),
                 _ratio(c.cp_before.time_s, c.cp_after.time_s)))
    from ..models.whatif.compare import label
    rows.append(("bottleneck", label(c.before), label(c.after), ""))
    return rows


def _ratio(b: float, a: float) -> str:
    from ..core.units import fmt_num
    return f"×{fmt_num(a / b)}" if b > 0 else "—"


def _head(c) -> str:
    """The workload before, as analyze's headline names it, and the what-ifs (text and md alike)."""
    from ..report.text import element_label
    g = c.before.graph
    meta = ", ".join(f"{k} {g.meta[k]}" for k in ("batch", "seq") if k in g.meta)
    return f"{g.name} · {g.phase} · {element_label(g)}{' · ' + meta if meta else ''}: {'; '.join(c.steps)}"


def text(c, top: int) -> None:
    from rich.markup import escape
    from rich.table import Table
    con = console()
    con.print(f"[bold]{escape(_head(c))}[/bold]")
    con.print(f"verdict: {c.verdict()}")
    t = Table(title=f"before ({c.before.hw.name}) vs after ({c.after.hw.name})")
    for col in ("", "before", "after", "after/before"):
        t.add_column(col, justify="left" if col == "" else "right")
    for r in _rows(c):
        t.add_row(*r)
    con.print(t)
    con.print("[bold]before[/bold] " + c.cp_before.text(top))
    con.print("[bold]after[/bold]  " + c.cp_after.text(top))


def markdown(c, top: int) -> str:
    lines = [f"### {_head(c)}", "", f"**Verdict:** {c.verdict()}", "",
             f"| | before ({c.before.hw.name}) | after ({c.after.hw.name}) | after/before |", "|---|---:|---:|---:|"]
    lines += [f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} |" for r in _rows(c)]
    lines += ["", "```", "before " + c.cp_before.text(top), "after  " + c.cp_after.text(top), "```"]
    return "\n".join(lines)
