"""`ironlaw sweep SPEC --on HW1,HW2 --batch 1,2,4,...,1024 [--seq …]`: time, throughput, bottleneck, ridge."""
from __future__ import annotations

from typing import List, Optional

import typer

from ..core.units import counted
from .common import app, check_format, console, emit_json, say_written
from .options import FLOAT, DType, Phase, Serial


@app.command(short_help="Sweep batch (and seq) on one or more devices; ridge points.")
def sweep(
    spec: str = typer.Argument(..., help="workload: a built-in name, hf:config.json, gemm:M,N,K …"),
    on: str = typer.Option("h100", "--on", help="hardware, comma-separated: h100,b200"),
    batch: str = typer.Option("1,2,4,...,1024", "--batch", help="batch sizes: 1,2,4,...,1024 or 8,16,24,...,128 or 1,8,64"),
    seq: Optional[str] = typer.Option(None, "--seq", help="sequence / context lengths, same syntax"),
    phase: Phase = None,
    dtype: DType = None,
    what_if: List[str] = typer.Option([], "--what-if", "-w", help="apply transforms to every point"),
    serial: Serial = False,
    fmt: str = typer.Option("text", "--format", help="text | json | csv | md"),
    plot: Optional[str] = typer.Option(None, "--plot", help="write a throughput-vs-batch plot (.png, .svg, .pdf)"),
    price: Optional[float] = typer.Option(None, "--price-per-gpu-hour", click_type=FLOAT,
                                          help="USD per device-hour (default: a sourced cloud rate where "
                                               "ironlaw.law.power has one)"),
    grid: Optional[float] = typer.Option(None, "--grid-gco2-per-kwh", click_type=FLOAT,
                                         help="grid carbon intensity (default: world average 481, Ember 2023)"),
):
    """Sweep batch (and seq) on one or more devices: time, throughput, bottleneck, and where the bound flips."""
    from .. import api

    check_format(fmt, ("text", "json", "csv", "md"))
    res = api.sweep(spec, on, batch=batch, seq=seq, phase=phase, dtype=dtype, what_if=what_if, serial=serial,
                    plot=plot, price_per_gpu_hour=price, grid_gco2_per_kwh=grid)
    if fmt == "json":
        emit_json(res.to_dict())
    elif fmt == "csv":
        import csv
        import sys
        w = csv.writer(sys.stdout, lineterminator="\n")
        extra = list(res.energy)
        w.writerow(["hardware", "batch", "seq", "time_s", "throughput", "throughput_unit", "bottleneck"] + extra)
        for r in res.rows():
            w.writerow([r["hardware"], r["batch"], "" if r["seq"] is None else r["seq"],
                        "" if r["time_s"] is None else f"{r['time_s']:.6g}", f"{r['throughput']:.6g}",
                        res.throughput_unit, r["bottleneck"]] + ["" if r[k] is None else f"{r[k]:.6g}" for k in extra])
    else:
        text(res, md=fmt == "md")
    say_written(fmt, plot=plot)


def text(res, md: bool = False) -> None:
    """The sweep as a terminal table, or (``md``) as a Markdown table with the same lines around it."""
    from rich import box
    from rich.table import Table
    from ..core.units import fmt_num, fmt_time
    from ..report.table import print_fitted
    con = console()
    seq = f" · seq {res.fixed_seq}" if res.fixed_seq is not None else ""
    whatif = f" · what-if {'; '.join(res.what_if)}" if res.what_if else ""
    head = f"{res.spec} · {res.phase} · {res.dtype}{seq}{whatif}: {counted(res.points, 'point')}"
    if md:
        print(f"**{head}**\n")
    else:
        con.print(head, style="bold", markup=False)
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    per = res.throughput_unit.split("/")[0].rstrip("s")
    cols = ["hardware", "batch"] + (["seq"] if res.seq is not None else []) + ["time", res.throughput_unit, "bottleneck",
                                                                                f"J/{per}", f"$/M {per}s"]
    for c in cols:
        t.add_column(c, justify="left" if c in ("hardware", "bottleneck") else "right", no_wrap=True)
    for r in res.rows():
        row = [r["hardware"], fmt_num(r["batch"])] + ([fmt_num(r["seq"])] if res.seq is not None else [])
        row += [fmt_time(r["time_s"]) if r["time_s"] is not None else "does not fit",
                fmt_num(r["throughput"]), r["bottleneck"]]
        row += ["–" if r[k] is None else fmt_num(r[k]) for k in ("joules_per_unit", "usd_per_million_units")]
        t.add_row(*row)
    if md:
        from ..report.table import markdown
        print(markdown(t) + "\n")
        con = _Paragraphs()
    else:
        varies = len({r["seq"] for r in res.rows()}) > 1          # then seq tells the rows apart: kept
        print_fitted(t, con, (f"$/M {per}s", f"J/{per}", "seq") if varies else ("seq", f"$/M {per}s"))
    con.print(f"J/{per}: joules per {per}, $/M {per}s: USD per million {per}s; board power idle_w + the binding "
              "resource's full-load power above idle × its busy fraction (ironlaw.law.power); "
              + "; ".join(f"{h}: {v['price']}" for h, v in res.energy_sources.items()), markup=False)
    for line in unfit_lines(res):
        con.print(line, markup=False)
    if not res.ridges:
        con.print("ridge point: the bound does not flip in this range")
    for rp in res.ridges:
        s = f" at seq {rp['seq']}" if rp["seq"] is not None else ""
        con.print(f"ridge point on {rp['hardware']}{s}: {rp['from']} → {rp['to']} at batch {rp['batch']} "
                  f"(between {rp['batch_before']} and {rp['batch_after']} on the grid)")


def unfit_lines(res) -> list[str]:
    """One line per device with points that do not fit: which batches, and why (its first such point's reason)."""
    out = []
    for hw in res.hardware:
        rows = [r for r in res.rows() if r["hardware"] == hw and r["does_not_fit"]]
        if rows:
            batches = sorted({r["batch"] for r in rows})
            out.append(f"does not fit on {hw} at batch {', '.join(map(str, batches))}: {rows[0]['does_not_fit']} "
                       f"(`ironlaw analyze … --phase train --batch B` gives the fit check's hint)")
    return out


class _Paragraphs:
    """``console().print`` for Markdown: each line a paragraph, printed as given."""
    def print(self, line: str, markup: bool = True) -> None:
        print(line + "\n")
