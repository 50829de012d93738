"""`ironlaw probe`: measure this machine and save a hardware profile (`--on local` uses the newest)."""
from __future__ import annotations

import sys
from typing import Optional

import typer

from .common import app, check_format, console_for, emit_json
from .options import FLOAT, Format


@app.command(short_help="Micro-benchmark this machine into a calibrated profile.")
def probe(
    out: Optional[str] = typer.Option(None, "--out", help="profile file to write (default: a new file in "
                                                         "$IRONLAW_HOME/profiles, which `--on local` reads)"),
    quick: bool = typer.Option(False, "--quick", help="a smaller grid, fewer repeats and two reference runs (about 20 s on 2 cores)"),
    threads: Optional[int] = typer.Option(None, "--threads", help="threads to measure with (default: torch's)"),
    max_cv: float = typer.Option(0.15, "--max-cv", click_type=FLOAT, help="largest spread (stdev/median) a measurement may keep"),
    rounds: int = typer.Option(1, "--rounds", help="run everything this many times and keep each measurement's "
                                                  "median round (a shared machine whose speed drifts; N × the time)"),
    references: bool = typer.Option(True, "--references/--no-references",
                                    help="after the micro-benchmarks, time the built-in reference models and fit "
                                         "the calibration on them too (CPU; --no-references: the probe's rows alone)"),
    strict: bool = typer.Option(False, "--strict", help="refuse (save nothing) when a measurement stays noisy, a "
                                                        "core is lost, the machine's speed changes threefold or a "
                                                        "copy's time does not grow with its size; "
                                                        "without it such a probe is saved marked unsteady and "
                                                        "every prediction on it carries the wider range"),
    fmt: Format = "text",
):
    """Micro-benchmark this machine (GEMM per dtype and shape, bandwidth per memory level, elementwise,
    reductions, dispatch latency; launch latency and host↔device copies on CUDA), time a few built-in
    reference models end to end and per op (CPU), fit the calibration on both, and save it all as a
    profile in the catalog's format."""
    from .. import api

    check_format(fmt)
    show_bar = fmt == "text" and sys.stdout.isatty()
    kw = dict(out=out, quick=quick, threads=threads, max_cv=max_cv, rounds=rounds, references=references,
              strict=strict)
    if show_bar:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
        with Progress(TextColumn("[bold]probe[/bold] {task.description:<32}"), BarColumn(),
                      TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(), transient=True) as bar:
            task = bar.add_task("starting", total=None)

            def tick(done: int, total: int, label: str) -> None:
                bar.update(task, completed=done, total=total, description=label)
            res = api.probe(**kw, progress=tick)
    else:
        res = api.probe(**kw)
    if fmt == "json":
        emit_json(res.to_dict())
        return
    c = console_for(fmt)
    _render(res.profile, res.path, c)
    if fmt == "md":
        c.emit()


def _render(doc: dict, path: str, c) -> None:
    from rich.table import Table
    from ..core.units import fmt, fmt_size, fmt_time

    p = doc["probe"]
    rounds = f", median of {p['rounds']} rounds" if p.get("rounds", 1) > 1 else ""
    c.print(f"[bold]{doc['title']}[/bold]  ({p['duration_s']:.0f} s{', quick' if p['quick'] else ''}{rounds})")
    if p.get("gpu"):
        from ..measure.probe.runtime import describe
        c.print(describe(p["gpu"]), markup=False)
    drift = p.get("checks", {}).get("drift", {})
    for reason in p.get("checks", {}).get("refused", []):
        from rich.markup import escape
        c.print(f"[yellow]unsteady machine, saved anyway[/yellow] ({escape(reason.removeprefix('probe: '))}); "
                "predictions on this profile carry the wider range and say why (--strict refuses such a probe)")
    if drift.get("max_change", 0.0) > p["max_cv"]:
        c.print(f"[yellow]the machine's speed drifted during the run[/yellow] ({drift['what']}); predictions on this "
                "profile carry that range (time_range_s)")
    if drift.get("across_rounds"):
        c.print(f"between rounds: {drift['across_rounds']}")
    t = Table(title="GEMM peak per dtype (best shape)")
    for col in ("dtype", "peak", "note"):
        t.add_column(col)
    for dt, v in doc["compute"].items():
        note = peak_note(v["source"])
        t.add_row(dt, fmt(v["peak_flops"], "FLOP/s"), note)
    t.add_row("vector", fmt(doc["vector"]["peak_flops"], "FLOP/s"), "fastest elementwise op")
    c.print(t)
    t = Table(title="memory levels: t = overhead + bytes/BW")
    for col in ("level", "role", "capacity", "bandwidth", "overhead"):
        t.add_column(col)
    for m in doc["memory"]:
        o = p["fits"].get(m["name"], {}).get("overhead_s")
        t.add_row(m["name"], m["role"], fmt_size(m["capacity_bytes"]), fmt(m["bw_Bps"], "B/s"),
                  fmt_time(o) if o is not None else "—")
    c.print(t)
    c.print(f"per-op dispatch latency: {fmt_time(doc['latency']['op_s'])}")
    from ..law.fresh import cost_s_per_byte
    fresh = cost_s_per_byte(p)
    if fresh is not None:
        rate = f"{fmt(1 / fresh, 'B/s')}" if fresh > 0 else "no cost: the allocator keeps its memory"
        c.print(f"fresh memory (page faults, zeroing, giving it back): {fmt_time(fresh * 2**20)} per MiB ({rate})")
    chk = p.get("checks")
    if chk and "speedup" in chk:                     # the thread check runs on a CPU only
        c.print(f"{p['threads']} threads vs 1 on an fp32 GEMM: {chk['speedup']:.2f}×")
    from ..machine import profile
    spread = max(r["cv"] for fam in profile.FAMILIES for r in p.get(fam, []))
    c.print(f"largest spread kept: {spread:.1%} (limit {p['max_cv']:.0%})")
    cal = doc.get("calibration")
    if cal:
        g = ", ".join(f"{dt} η_max {v['eta_max']:.2f}" for dt, v in cal.get("matmul", {}).items())
        c.print(f"calibration: {g}; fitted on {', '.join(cal['fitted'])}")
    refs = p.get("references")
    if refs:
        _render_references(c, refs)
    line = range_line(doc, path)
    if line:
        c.print(line)
    c.print(f"saved [bold]{path}[/bold]  ({use_line(path)})")


def peak_note(source: str) -> str:
    """The peak table's note: NO FAST PATH, and a peak taken from small shapes only (``build.SMALL_ONLY``): a
    floor under the peak, the largest shape measured named."""
    import re
    from ..measure.calibrate.build import SMALL_ONLY
    notes = ["NO FAST PATH"] if "NO FAST PATH" in source else []
    if SMALL_ONLY in source:
        shape = re.search(r"(\d+x\d+x\d+) at ", source)
        notes.append(f"floor: small shapes ({shape.group(1)})" if shape else "floor: small shapes")
    return "; ".join(notes)


def use_line(path) -> str:
    """How to predict on the saved profile: `--on local` reads the newest one in the profiles folder only, so a
    profile saved elsewhere (``--out``) is named by its path."""
    from pathlib import Path

    from ..machine.home import profiles_dir
    if Path(path).resolve().parent == profiles_dir().resolve():
        return f"use it with `--on local` or `--on {path}`"
    return f"use it with `--on {path}`; `--on local` reads the newest profile in {profiles_dir()}"


def range_line(doc: dict, path: str) -> str | None:
    """What every prediction's range on this profile holds: the machine's rate factors (the drift sentinels'
    10th–90th percentile over their median, widened by the rows' spread) and the law's miss per op kind on the
    reference runs; None for a profile without a probe."""
    from ..machine.hardware import parse_hardware
    from ..law.timerange import factors
    f = factors(parse_hardware(doc, path))
    if f is None:
        return None
    rates = [f"compute ×{f['compute'][0]:.2f}–{f['compute'][1]:.2f}"] + [
        f"{m['name']} ×{f['tiers'][m['name']][0]:.2f}–{f['tiers'][m['name']][1]:.2f}"
        for m in doc["memory"] if m["role"] == "device"]
    line = "ranges (time_range_s) hold the machine's rates at these multiples of the profile's: " + ", ".join(rates)
    model = doc["probe"].get("references", {}).get("model_spread")
    if model:
        line += "; the law's miss on the reference runs, measured / predicted: " + ", ".join(
            f"{kind} {lo:.2f}–{hi:.2f}" for kind, (lo, hi) in model.items())
    return line


def _render_references(c, refs: dict) -> None:
    if refs.get("skipped"):
        c.print(f"reference runs: none ({refs['skipped']})")
        return
    c.print(f"reference runs ({refs['wall_s']:.0f} s): {len(refs['fitted'])} fitted"
            + (f" ({', '.join(refs['fitted'])})" if refs["fitted"] else ""))
    for f in refs.get("failed", []):
        c.print(f"[yellow]reference run failed, not fitted:[/yellow] {f['run']}: {f['error']}")
