"""The Markdown report (for issues, PRs, notebooks)."""
from __future__ import annotations

from ..core.units import fmt, fmt_size, fmt_time
from .text import (coverage_line, expert_weights_line, fresh_memory_line, headline, no_role_line, note_lines,
                   per_device, slow_dtype_line, time_range_line, top_ops_label, uncounted_line, work_line)


def render(est, top: int = 10) -> str:
    b = est.bottleneck()
    lines = [f"### {headline(est)}", ""]
    extras = [x for x in (expert_weights_line(est.graph), time_range_line(est), slow_dtype_line(est),
                          fresh_memory_line(est), coverage_line(est), *note_lines(est.graph)) if x]
    lines += [f"- {x}" for x in extras] + ([""] if extras else [])
    lines += [f"**Why:** {b['why']}", "", "| term | time |", "|---|---:|"]
    for k, label in (("data_s", "data D_vol/BW"), ("compute_s", "compute O/(R·η)"), ("latency_s", "latency L_lat"),
                     ("network_s", "network")):
        lines.append(f"| {label} | {fmt_time(est.term(k))} |")
    lines.append(f"| **critical path ({est.composition})** | **{fmt_time(est.time_s)}** |")
    lines += ["", work_line(est)]
    if est.graph.uncounted_ops:
        lines += ["", f"**{uncounted_line(est.graph)}**"]
    no_role = no_role_line(est.graph)
    if no_role:
        lines += ["", no_role.replace("[yellow]", "**").replace("[/yellow]", "**")]
    lines += ["", f"{top_ops_label(top, len(est.graph.ops)).capitalize()}:", "",
              "| op | kind | × | FLOPs | bytes | tier | data | compute | latency | time | bound |",
              "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---|"]
    for r in est.top_ops(top):
        lines.append(f"| {r['name']} | {r['kind']} | {r['count']} | {fmt(r['flops'], '')} | {fmt(r['bytes'], 'B')} | "
                     f"{r['tier'] or '—'} | {fmt_time(r['data_s'])} | {fmt_time(r['compute_s'])} | "
                     f"{fmt_time(r['latency_s'])} | {fmt_time(r['time_s'])} | {r['bound']} |")
    fp = est.footprint()
    lines += ["", f"Footprint {fmt_size(fp['total_bytes'])}{per_device(est.graph)}:", "", "| tier | capacity | holds |", "|---|---:|---|"]
    for t in fp["tiers"]:
        if t["role"] != "cache":
            holds = ", ".join(f"{k} {fmt_size(v)}" for k, v in t["holds"].items()) or "—"
            lines.append(f"| {t['name']} | {fmt_size(t['capacity_bytes'])} | {holds} |")
    return "\n".join(lines)
