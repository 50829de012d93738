"""The terminal report: summary sentence, three terms, bottleneck, top ops, footprint."""
from __future__ import annotations

from ..core.units import counted, fmt, fmt_num, fmt_size, fmt_time
from .table import print_fitted


def top_ops_label(top: int, ops: int) -> str:
    """'top 10 ops' of a table that shows ``top`` of ``ops`` rows; 'all 14 ops' where --top reaches past the
    last; 'the 1 op' of a one-op workload."""
    return f"top {top:,} ops" if top < ops else f"all {ops:,} ops" if ops != 1 else "the 1 op"


# the top-ops table's columns left out first where the terminal is narrow (the terms table above sums them)
OPS_DROPPED = ("data", "compute", "latency", "FLOPs", "kind", "tier", "bytes")
FRESH_SHOWN = 0.01          # the fresh-memory line is printed from this share of the predicted time


def element_label(g) -> str:
    """What the header names after the phase: the dtype, or for a collective of BYTES (whose elements no option
    sets) the devices it runs over; a training step lowered to fp8, mxfp8 or fp4 names its GEMMs' dtype too."""
    if "collective" not in g.meta:
        low = g.meta.get("precision", g.dtype)
        return g.dtype if low == g.dtype else f"{low} GEMMs, {g.dtype} elsewhere"
    nodes = g.meta.get("nodes", 1)
    return counted(g.meta["gpus"], "GPU") + (f", {nodes} nodes" if nodes > 1 else "")


def headline(est) -> str:
    g, b = est.graph, est.bottleneck()
    tier = f" ({b['tier']})" if b["tier"] else ""
    meta = ", ".join(f"{k} {g.meta[k]}" for k in ("batch", "seq") if k in g.meta)
    return (f"{g.name} · {g.phase} · {element_label(g)}{' · ' + meta if meta else ''} on {est.hw.name}: "
            f"{fmt_time(est.time_s)} ({est.composition}) — {b['resource']}{tier}-bound")


def time_range_line(est) -> str | None:
    """"36 ms (31–44 ms on this machine's observed range)" on a probed profile, else None."""
    from ..law.timerange import time_range, unsteady
    r = time_range(est)
    if r is None:
        return None
    lo, hi = fmt_time(r[0]), fmt_time(r[1])
    if lo.split(" ")[-1] == hi.split(" ")[-1]:          # "31–44 ms", not "31 ms–44 ms"
        lo = lo.rsplit(" ", 1)[0]
    why = unsteady(est.hw)
    wider = (f"; wider: the probe saw an unsteady machine — {why[0].removeprefix('probe: ')}"
             + (f" (and {len(why) - 1} more: time_range_source)" if len(why) > 1 else "")) if why else ""
    return f"time: {fmt_time(est.time_s)} ({lo}–{hi} on this machine's observed range{wider})"


def note_lines(g) -> list[str]:
    """The graph's notes (``meta["notes"]``: what a capture ran on, the dtype it defaulted to), "note: …" each."""
    return [f"note: {n}" for n in g.meta.get("notes", [])]


def slow_dtype_line(est) -> str | None:
    """On a probed profile, a graph in a dtype the probe found no fast path for (a CPU without bf16 or fp16
    matrix units): its measured peak beside the device's fastest dtype, and the option that prices that one; else
    None."""
    hw, dt = est.hw, est.graph.dtype
    if "NO FAST PATH" not in hw.sources.get(f"compute.{dt}", "") or dt not in hw.peak_flops:
        return None
    best = max(hw.peak_flops, key=hw.peak_flops.get)
    return (f"slow dtype: {dt} has no fast path on {hw.name} ({fmt(hw.peak_flops[dt], 'FLOP/s')} measured by the "
            f"probe); its fastest is {best} ({fmt(hw.peak_flops[best], 'FLOP/s')}): --dtype {best}")


def fresh_memory_line(est) -> str | None:
    """"fresh memory: up to +12 ms per run …" on a probed CPU profile where it reaches ``FRESH_SHOWN`` of
    the time, else None."""
    from ..law.fresh import REMEDY, allocated_per_run_bytes, fresh_memory_max_s
    s = fresh_memory_max_s(est)
    if s is None or s < FRESH_SHOWN * est.time_s:
        return None
    return (f"fresh memory: up to +{fmt_time(s)} per run if the C allocator returns the run's "
            f"{fmt_size(allocated_per_run_bytes(est))} of new tensors to the OS and faults them in again "
            f"(glibc's default for large blocks; {REMEDY}); the time above assumes it keeps them")


def coverage_line(est) -> str | None:
    """The op classes priced with another class's numbers, on a calibrated device (None where all are its own);
    on a device without a calibration, that its numbers are the datasheet's (no measured kernel tables)."""
    from ..law.coverage import DATASHEET_NUMBERS, coverage, line, remedy
    if est.hw.calibration is None and not est.hw.extra.get("probe"):
        from ..machine import engines           # a calibrated device's cold analyze never imports the engines
        served = [e for e in engines.ENGINES if e != engines.DEFAULT and engines.path(est.hw.name, e).is_file()]
        if served:                  # its tables are a serving engine's alone (the B60's vLLM): serve reads them
            return (f"datasheet only here: {est.hw.name}'s measured kernel tables are "
                    f"{' and '.join(engines.NAMES[e] for e in served)}'s, which `ironlaw serve --engine {served[0]}` "
                    f"reads; analyze prices its kernels from the datasheet peaks and [efficiency] defaults")
        return (f"datasheet only: {est.hw.name} has no measured kernel tables; its {DATASHEET_NUMBERS} price every "
                f"op ({remedy(est.hw)})")
    return line(coverage(est))


def expert_weights_line(g) -> str | None:
    """The routed experts' weight dtype and where it came from, for a model whose checkpoint states one
    (gpt-oss: MXFP4), else None."""
    dt, src = g.meta.get("expert_weight_dtype"), g.meta.get("expert_weight_source")
    if not dt or not src:
        return None
    math = g.meta.get("expert_math_dtype")
    how = f", weight-only: math in {math} after dequantizing" if math and math != dt else ""
    return f"routed experts' weights: {dt}{how} (from {src})"


def per_device(g) -> str:
    """" per device (tp 4)" where the graph is one device's share of a sharded model (its totals and footprint
    are that device's; energy counts every device), else ""."""
    split = ", ".join(f"{k} {g.meta[k]}" for k in ("tp", "ep", "pp", "cp") if int(g.meta.get(k, 1) or 1) > 1)
    return f" per device ({split})" if split else ""


def work_line(est) -> str:
    """The work and traffic the terms price, in all: FLOPs, bytes, op invocations and distinct rows."""
    tot = est.to_dict(top=0)["totals"]
    return (f"work{per_device(est.graph)}: {fmt(tot['flops'], 'FLOP')}, traffic {fmt(tot['bytes'], 'B')}, "
            f"{fmt_num(tot['op_invocations'])} op invocation{'' if tot['op_invocations'] == 1 else 's'} "
            f"({tot['ops']} distinct row{'' if tot['ops'] == 1 else 's'})")


def uncounted_line(g) -> str:
    """The ops of ``g`` no formula counts (priced at nothing): each name × its count."""
    return "uncounted ops (no formula): " + ", ".join(f"{k}×{v}" for k, v in g.uncounted_ops.items())


def no_role_line(g) -> str | None:
    """The ops of a captured graph that capture could not give a parallel role, else None (``capture.roles``:
    only a captured graph's ops can lack one, so a built-in model's report does not import it)."""
    if not g.meta.get("captured"):
        return None
    from ..models.capture.roles import no_role_ops
    no_role = no_role_ops(g)
    if not no_role:
        return None
    return ("[yellow]ops without a parallel role (capture could not tell; --tp refuses them):[/yellow] "
            + ", ".join(f"{k}×{v}" for k, v in no_role.items()))


def render(est, top: int = 10, console=None) -> None:
    from rich.markup import escape
    from rich.table import Table
    from . import _console
    c = console or _console()
    b = est.bottleneck()
    c.print(f"[bold]{escape(headline(est))}[/bold]")          # a name such as "llama3-8b [tp 2]" is no markup
    for extra in (expert_weights_line(est.graph), time_range_line(est), slow_dtype_line(est), fresh_memory_line(est),
                  coverage_line(est), *note_lines(est.graph)):
        if extra:
            c.print(extra, markup=False)
    c.print(f"why: {b['why']}")
    t = Table(title="Iron Law terms (sum over ops)")
    for col in ("term", "time", "share of summed terms"):
        t.add_column(col, justify="right" if col != "term" else "left")
    terms = {k: est.term(k) for k in ("data_s", "compute_s", "latency_s", "network_s")}
    s = sum(terms.values()) or 1.0
    labels = {"data_s": "data  D_vol/BW", "compute_s": "compute  O/(R·η)", "latency_s": "latency  L_lat",
              "network_s": "network"}
    for k, v in terms.items():
        t.add_row(labels[k], fmt_time(v), f"{100 * v / s:.0f}%")
    t.add_row("[bold]critical path[/bold]", f"[bold]{fmt_time(est.time_s)}[/bold]", est.composition)
    c.print(t)
    c.print(work_line(est))
    if est.graph.uncounted_ops:
        c.print(f"[yellow]{escape(uncounted_line(est.graph))}[/yellow]")
    no_role = no_role_line(est.graph)
    if no_role:
        c.print(no_role, markup=True)
    t = Table(title=f"{top_ops_label(top, len(est.graph.ops))} by time")
    for col in ("op", "kind", "×", "FLOPs", "bytes", "tier", "data", "compute", "latency", "time", "bound"):
        left = col in ("op", "kind", "tier", "bound")
        t.add_column(col, justify="left" if left else "right", no_wrap=col != "op")
    for r in est.top_ops(top):
        t.add_row(r["name"][:48], r["kind"], fmt_num(r["count"]), fmt(r["flops"], ""), fmt(r["bytes"], "B"),
                  r["tier"] or "—", fmt_time(r["data_s"]), fmt_time(r["compute_s"]), fmt_time(r["latency_s"]),
                  fmt_time(r["time_s"]), r["bound"])
    print_fitted(t, c, OPS_DROPPED)
    fp = est.footprint()
    t = Table(title=f"footprint {fmt_size(fp['total_bytes'])}{per_device(est.graph)} against the memory tiers")
    for col in ("tier", "role", "capacity", "holds"):
        t.add_column(col, no_wrap=col != "holds")
    for tier in fp["tiers"]:
        if tier["role"] == "cache":
            continue
        holds = ", ".join(f"{k} {fmt_size(v)}" for k, v in tier["holds"].items()) or "—"
        t.add_row(tier["name"], tier["role"], fmt_size(tier["capacity_bytes"]), holds)
    c.print(t)
