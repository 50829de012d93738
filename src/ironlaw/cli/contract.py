"""`ironlaw contract --on HW`: the silicon contract's three textbook workloads side by side."""
from __future__ import annotations

import typer

from .common import app, check_format, console, emit_json

CASES = (
    ("ResNet-50 training", dict(spec="resnet50", phase="train", batch=256)),
    ("Llama-3-8B decode", dict(spec="llama3-8b", phase="decode", batch=1, seq=1024)),
    ("DLRM-DCNv2 inference", dict(spec="dlrm-dcnv2", phase="infer", batch=2048)),
)


@app.command()
def contract(on: str = typer.Option("h100", "--on", help="hardware name or .toml file"),
             fmt: str = typer.Option("text", "--format", help="text | json | md")):
    """Which resource each of three classic workloads saturates first on one device."""
    from .. import hardware, law, workloads
    from ..units import fmt as f, fmt_size, fmt_time

    check_format(fmt)
    hw = hardware.get(on)
    results = []
    for title, kw in CASES:
        req = workloads.Request(kw["spec"], phase=kw["phase"], batch=kw["batch"], seq=kw.get("seq"),
                                device="cuda" if hw.kind == "gpu" else "cpu")
        est = law.predict(workloads.resolve(req), hw)
        results.append((title, kw, est))
    if fmt == "json":
        emit_json({"schema": "ironlaw.contract/1", "hardware": hw.name,
                   "workloads": [{"title": t, **kw, "estimate": e.to_dict(top=5)} for t, kw, e in results]})
        return
    rows = []
    for title, kw, e in results:
        b = e.bottleneck()
        fp = e.footprint()
        dev = hw.memory[hw.device_tier]
        rows.append([title, f"batch {kw['batch']}" + (f", ctx {kw['seq']}" if kw.get("seq") else ""),
                     fmt_time(e.term("data_s")), fmt_time(e.term("compute_s")), fmt_time(e.term("latency_s")),
                     fmt_time(e.time_s), f"{fmt_size(fp['total_bytes'])} / {fmt_size(dev.capacity_bytes)}",
                     b["resource"] + (f" ({b['tier']})" if b["tier"] else ""), b["why"]])
    heads = ("workload", "config", "data", "compute", "latency", "time", "footprint / device", "binds", "why")
    if fmt == "md":
        print(f"### The silicon contract on {hw.name} ({hw.title})\n")
        print("| " + " | ".join(heads) + " |")
        print("|" + "---|" * len(heads))
        for r in rows:
            print("| " + " | ".join(r) + " |")
        return
    from rich.table import Table
    t = Table(title=f"The silicon contract on {hw.name} — {hw.title}", show_lines=True)
    for h in heads:
        t.add_column(h, overflow="fold")
    for r in rows:
        t.add_row(*r)
    console().print(t)
