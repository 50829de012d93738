"""`ironlaw validate SPEC`: run the real model here, predict it with the profile, compare."""
from __future__ import annotations

from typing import Optional

import typer

from ..core.units import counted
from .common import app, check_format, check_top, console_for, emit_json
from .options import Format


@app.command(short_help="Run a model on this machine; measured against predicted.")
def validate(
    spec: str = typer.Argument(..., help="model to run: py:file.py:factory, hf:config.json, or a built-in with a torch "
                                         "equivalent (resnet18/34/50/101/152, mlp, gpt2, bert-base …)"),
    batch: int = typer.Option(1, "--batch", help="batch size"),
    seq: Optional[int] = typer.Option(None, "--seq", help="tokens per sequence; for decode, the context already in the KV cache"),
    phase: Optional[str] = typer.Option(None, "--phase", help="infer | prefill | decode (decode: one token against a KV cache)"),
    on: str = typer.Option("local", "--on", help="profile to predict with: 'local' (newest probe profile) or a .toml file"),
    repeats: int = typer.Option(5, "--repeats", help="timed end-to-end runs (median and spread are reported)"),
    warmup: int = typer.Option(2, "--warmup", help="untimed runs first"),
    threads: Optional[int] = typer.Option(None, "--threads", help="torch threads (default: the profile's probe threads)"),
    fmt: Format = "text",
    out: Optional[str] = typer.Option(None, "--out", help="also write the JSON document to this file"),
    top: int = typer.Option(10, "--top", help="per-op rows shown (text)"),
):
    """Measure the model end to end and per op, predict it with the profile, show both with the error."""
    from .. import api
    check_format(fmt)
    check_top(top)
    doc = api.validate(spec, batch=batch, seq=seq, phase=phase, on=on, repeats=repeats, warmup=warmup,
                       threads=threads, out=out).to_dict()
    if fmt == "json":
        emit_json(doc)
        return
    c = console_for(fmt)
    render(doc, top=top, console=c)
    if fmt == "md":
        c.emit()


# the per-op table's columns left out, in this order, until it fits the terminal (``report.table.print_fitted``)
OPS_DROPPED = ("shapes", "CV", "kind", "#")


def _pct(x) -> str:
    return "—" if x is None else f"{100 * x:+.0f}%"


FRESH_MEMORY_SHOWN = 0.02          # a share of the run in fresh memory worth a line


def fresh_memory_line(total: dict, probed: bool = True) -> str:
    """What a run paid for memory the OS had to fault in again (measured page faults); ``probed``: whether the
    profile was written by `ironlaw probe` (a catalog device or a hand-written file has no probe rows)."""
    from ..core.units import fmt_size, fmt_time
    b, s = total["faulted_bytes_per_run"], total.get("fresh_memory_s")
    line = f"page faults: {fmt_size(b)} of fresh memory per run"
    if s is None:
        if not probed:
            return line + (" (not priced: the profile is not a probe profile; `ironlaw probe` measures this "
                           "machine's cost of it, then --on local)")
        return line + " (the profile has no probe 'pages' row to price it: run `ironlaw probe` again)"
    share = total.get("fresh_memory_share") or 0.0
    line += f" ≈ {fmt_time(s)} at this machine's measured cost, {100 * share:.0f}% of the run (not in the prediction"
    bound = total.get("fresh_memory_max_s")
    line += f"; its bound, every new tensor faulted: {fmt_time(bound)})" if bound is not None else ")"
    if share >= FRESH_MEMORY_SHOWN:
        line += ("; the allocator gives memory back to the OS between runs — an allocator that keeps it (jemalloc, "
                 "tcmalloc, or glibc with MALLOC_TRIM_THRESHOLD_/MALLOC_MMAP_THRESHOLD_ raised) would save it")
    return line


def origin_line(hw: dict) -> str | None:
    """Where the profile came from, when not from `ironlaw probe` (a catalog device, a hand-written file): the run
    was measured here, the prediction is that profile's device's; None for a probe profile."""
    if hw.get("probed", True):
        return None
    return (f"{hw['name']} is not a profile `ironlaw probe` wrote: the run is measured on this machine, the "
            f"prediction is {hw['name']}'s (`ironlaw probe`, then --on local, predicts this machine)")


def header(doc: dict) -> str:
    """"resnet18 · infer · fp32 · batch 8 on local": what ran, in which dtype (validate runs the model in fp32 on
    this machine's CPU; analyze's headline names its dtype alike)."""
    w = doc["workload"]
    shape = ", ".join(f"{k} {w[k]}" for k in ("batch", "seq") if k in w)
    return f"{w['name']} · {w['phase']} · {w.get('dtype', 'fp32')} · {shape} on {doc['hardware']['name']}"


def render(doc: dict, top: int = 10, console=None) -> None:
    from rich.markup import escape
    from rich.table import Table

    from ..core.units import fmt_time
    from .common import console as make_console
    c = console or make_console()
    w, hw, t, s = doc["workload"], doc["hardware"], doc["total"], doc["spread"]
    c.print(f"[bold]{escape(header(doc))}[/bold] ({'calibrated' if hw['calibrated'] else 'not calibrated'}; "
            f"{counted(doc['case']['threads'], 'thread')}, {counted(doc['case']['repeats'], 'run')})")
    c.print(f"measured {fmt_time(t['measured_s'])} (median; IQR {fmt_time(s['spread_s'])}, CV {100 * s['cv']:.0f}%, "
            f"min {fmt_time(s['min_s'])}, max {fmt_time(s['max_s'])}) · predicted {fmt_time(t['predicted_s'])} "
            f"({_pct(t['error'])}) · naive roofline {fmt_time(t['naive_s'])} ({_pct(t['naive_error'])})")
    if origin_line(hw):
        c.print(origin_line(hw))
    rng = t.get("predicted_range_s")
    if rng:
        inside = "inside" if rng[0] <= t["measured_s"] <= rng[1] else "outside"
        c.print(f"predicted range on this machine's observed rates: {fmt_time(rng[0])}–{fmt_time(rng[1])} "
                f"(measured {inside})")
    tb = Table(title="predicted vs measured, by op kind")
    for col in ("kind", "ops", "predicted", "measured", "spread (IQR)", "error"):
        tb.add_column(col, justify="left" if col == "kind" else "right")
    for k, r in doc["by_kind"].items():
        tb.add_row(k, str(r["ops"]) if r["ops"] else "—", fmt_time(r["predicted_s"]), fmt_time(r["measured_s"]),
                   fmt_time(r["spread_s"]), _pct(r["error"]))
    tb.add_row("[bold]total[/bold]", str(t["ops"]), f"[bold]{fmt_time(t['predicted_s'])}[/bold]",
               f"[bold]{fmt_time(t['measured_s'])}[/bold]", fmt_time(t["spread_s"]), f"[bold]{_pct(t['error'])}[/bold]")
    c.print(tb)
    sc = doc["score"]
    c.print(f"per op: {100 * sc['ops_within_25pct_time_share']:.0f}% of measured op time is in ops predicted within "
            f"±25%; {100 * sc['ops_within_2x_count_share']:.0f}% of ops within 2×")
    if top > 0:
        from ..report.table import print_fitted
        from ..report.text import top_ops_label
        from .common import MarkdownConsole
        to = Table(title=f"{top_ops_label(top, len(doc['ops']))} by measured time")
        for col in ("#", "op", "kind", "shapes", "predicted", "measured", "CV", "error", "bound"):
            to.add_column(col, justify="left" if col in ("op", "kind", "shapes", "bound") else "right")
        for r in sorted(doc["ops"], key=lambda r: -r["measured_s"])[:top]:
            to.add_row(str(r["index"]), r["name"][:40], r["kind"], r["shapes"][:34], fmt_time(r["predicted_s"]),
                       fmt_time(r["measured_s"]), f"{100 * r['measured_cv']:.0f}%", _pct(r["error"]), r["bound"])
        if isinstance(c, MarkdownConsole):         # a pipe table has no width to fit
            c.print(to)
        else:
            print_fitted(to, c, OPS_DROPPED)
    if t.get("faulted_bytes_per_run"):
        c.print(fresh_memory_line(t, hw.get("probed", True)))
    if hw["calibrated"]:
        c.print(f"calibration fitted on: {', '.join(hw['fitted']) or '—'}; held out: {', '.join(hw['held_out']) or '—'}")
    machine = doc["case"].get("machine") or {}
    from ..measure.probe.moment import drifted, line
    said = line(machine.get("before"), machine.get("after"))
    if said:
        c.print(said)
        if drifted(machine.get("before"), machine.get("after")):
            c.print("[yellow]the machine runs at another speed than when it was probed: an error of that size is the "
                    "machine's moment, not the model's (`ironlaw probe` again for a fresh profile)[/yellow]")
    if s["cv"] > 0.1:
        c.print(f"[yellow]the measurement is noisy (CV {100 * s['cv']:.0f}%): the machine is busy; rerun when quiet[/yellow]")
