"""`ironlaw contract --on HW`: the silicon contract's three textbook workloads side by side."""
from __future__ import annotations

import typer

from .common import app, check_format, emit_json
from .options import DType, Format


@app.command(short_help="Which resource three classic workloads saturate first.")
def contract(on: str = typer.Option("h100", "--on", help="hardware name or .toml file"),
             dtype: DType = None,
             fmt: Format = "text"):
    """Which resource each of three classic workloads saturates first on one device."""
    from .. import api

    check_format(fmt)
    res = api.contract(on, dtype=dtype)
    hw, results = res.hw, res.results
    if fmt == "json":
        emit_json(res.to_dict())
        return
    if fmt == "md":
        _markdown(hw, results, res.dtype, res.unfit)
        return
    _text(hw, results, res.dtype, res.unfit)


def _config(kw: dict) -> str:
    return f"b{kw['batch']}" + (f" ctx{kw['seq']}" if kw.get("seq") else "")


def _in(dtype, results) -> str:
    """", in fp8" as asked, else the dtype the workloads run in by default, said to be theirs."""
    if dtype:
        return f", in {dtype}"
    own = sorted({e.graph.dtype for _, _, e in results})
    return f", in {own[0]} (their own)" if len(own) == 1 else \
        ", in each workload's own dtype (" + ", ".join(f"{t.split()[0]} {e.graph.dtype}" for t, _, e in results) + ")"


def _slow(results) -> list[str]:
    """``report.text.slow_dtype_line`` of each case (a probed profile whose probe found no fast path for the dtype
    run), each line once."""
    from ..report.text import slow_dtype_line
    return list(dict.fromkeys(line for _, _, e in results if (line := slow_dtype_line(e))))


def _markdown(hw, results, dtype=None, unfit=None) -> None:
    from ..core.units import fmt_size, fmt_time
    heads = ("workload", "config", "data", "compute", "latency", "time", "footprint / device", "binds", "why")
    dev = hw.memory[hw.device_tier]
    print(f"### The silicon contract on {hw.name} ({hw.title}){_in(dtype, results)}\n")
    print("| " + " | ".join(heads) + " |")
    print("|" + "---|" * len(heads))
    for title, kw, e in results:
        if title in (unfit or {}):
            fp = f"{fmt_size(e.footprint()['total_bytes'])} / {fmt_size(dev.capacity_bytes)}"
            print("| " + " | ".join([title, _config(kw), "—", "—", "—", "does not fit", fp, "capacity",
                                     unfit[title]]) + " |")
            continue
        b = e.bottleneck()
        row = [title, _config(kw), fmt_time(e.term("data_s")), fmt_time(e.term("compute_s")),
               fmt_time(e.term("latency_s")), fmt_time(e.time_s),
               f"{fmt_size(e.footprint()['total_bytes'])} / {fmt_size(dev.capacity_bytes)}",
               b["resource"] + (f" ({b['tier']})" if b["tier"] else ""), b["why"]]
        print("| " + " | ".join(row) + " |")
    for line in _slow([r for r in results if r[0] not in (unfit or {})]):
        print(f"\n- {line}")


def _text(hw, results, dtype=None, unfit=None) -> None:
    """A table that fits 80 columns, then one line per workload saying why its resource binds (or that it fits no
    memory tier: ``unfit``)."""
    from ..law.explain import brief
    from ..core.units import fmt_size, fmt_time
    dev = hw.memory[hw.device_tier]
    heads = ("workload", "config", "time", "data", "compute", "latency", "binds")
    unfit = unfit or {}
    rows = [(title, _config(kw), "no fit", "—", "—", "—", "capacity") if title in unfit else
            (title, _config(kw), fmt_time(e.time_s), fmt_time(e.term("data_s")), fmt_time(e.term("compute_s")),
             fmt_time(e.term("latency_s")), e.bottleneck()["resource"]) for title, kw, e in results]
    widths = [max(len(r[i]) for r in (heads, *rows)) for i in range(len(heads))]

    def line(cells) -> str:
        return "  ".join(c.ljust(w) if i in (0, 1, 6) else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [f"The silicon contract on {hw.name} ({fmt_size(dev.capacity_bytes)} {dev.name}){_in(dtype, results)}", "",
           line(heads), "  ".join("─" * w for w in widths)]
    out += [line(r) for r in rows]
    out.append("")
    out += [f"{title.split()[0]}: " + (f"does not fit, {unfit[title].split(': ', 1)[-1]}" if title in unfit else
                                       brief(e)) for title, _, e in results]
    out += _slow([r for r in results if r[0] not in unfit])
    print("\n".join(out))
