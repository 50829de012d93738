"""The HTML report: one self-contained file (inline CSS, JS and SVG; no URL to fetch anything).

Sections (element ids, which tests and readers can rely on): ``summary`` (time, binding resource, why),
``terms`` (the Iron Law terms and who owns the critical path), ``roofline`` (every op), ``top-ops``
(a sortable table; ``report.html#sort=flops:desc`` opens it sorted), ``by-kind``, ``footprint`` (against
the memory tiers), ``whatif``, ``validation`` and ``frontier`` (the serving concurrency frontier) when given, ``sources`` (every hardware number with
its source). ``fragment`` is the same material for Jupyter (``Estimate._repr_html_``).
``document`` is the page around any sections, with the result's JSON document embedded and every key number
(``key``) tied to its place in it: the serve, training-step and search reports (``serve_report``,
``train_report``, ``search_report``) are built from these sections and helpers.
"""
from __future__ import annotations

import datetime as _dt
import os
import re
from html import escape
from pathlib import Path

from ..core.errors import IronlawError
from ..core.units import fmt, fmt_size, fmt_time
from . import svg
from .text import element_label, headline, per_device

MPL_MAX_OPS = 1000         # above this, matplotlib's SVG (~0.9 kB per point) would crowd the 2 MB: svg.roofline (~0.25 kB)
TERMS = (("data_s", "data", "D_vol / BW"), ("compute_s", "compute", "O / (R_peak · η)"),
         ("latency_s", "latency", "L_lat"), ("network_s", "network", "bytes on links / link BW"))

CSS = """
.ironlaw-report{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
 color:#212529;max-width:1100px;margin:0 auto;padding:8px 18px 40px}
.ironlaw-report h1{font-size:22px;margin:14px 0 4px}
.ironlaw-report h2{font-size:17px;margin:26px 0 8px;padding-bottom:3px;border-bottom:1px solid #dee2e6}
.ironlaw-report .sub{color:#6c757d;margin:0 0 10px}
.ironlaw-report .headline{font-size:18px;font-weight:600;margin:6px 0}
.ironlaw-report .why{font-size:15px;margin:4px 0 10px}
.ironlaw-report .badge{display:inline-block;padding:1px 7px;border-radius:9px;color:#fff;font-size:12px;font-weight:600}
.ironlaw-report .warn{background:#fff3bf;border:1px solid #fcc419;padding:6px 10px;border-radius:4px;margin:8px 0}
.ironlaw-report .note{color:#6c757d;font-size:12.5px;margin:4px 0}
.ironlaw-report table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
.ironlaw-report th,.ironlaw-report td{padding:3px 9px;border-bottom:1px solid #e9ecef;text-align:right;white-space:nowrap}
.ironlaw-report th{background:#f1f3f5;font-weight:600}
.ironlaw-report td.l,.ironlaw-report th.l{text-align:left}
.ironlaw-report td.name{max-width:320px;overflow:hidden;text-overflow:ellipsis}
.ironlaw-report td.src{white-space:normal;text-align:left;color:#495057;font-size:12px;max-width:560px}
.ironlaw-report table.sortable th{cursor:pointer;user-select:none}
.ironlaw-report table.sortable th[aria-sort=descending]::after{content:" \\25BC";font-size:10px}
.ironlaw-report table.sortable th[aria-sort=ascending]::after{content:" \\25B2";font-size:10px}
.ironlaw-report .scroll{overflow-x:auto}
.ironlaw-report svg{display:block;max-width:100%;height:auto}
.ironlaw-report svg.bar{margin:4px 0 8px;border-radius:3px}
.ironlaw-report .plot-bg{fill:#fcfcfd;stroke:#ced4da}
.ironlaw-report .grid{stroke:#e9ecef;stroke-width:1}
.ironlaw-report .tick{font-size:11px;fill:#495057}
.ironlaw-report .axis{font-size:12.5px;fill:#212529}
.ironlaw-report .roof{stroke-width:2;fill:none}
.ironlaw-report circle.op{fill-opacity:.72;stroke:#fff;stroke-width:.8}
.ironlaw-report circle.op:hover{fill-opacity:1;stroke:#212529}
.ironlaw-report .bar-label{font-size:12px;fill:#fff;font-weight:600}
.ironlaw-report .cap-bg{fill:#e9ecef}
.ironlaw-report .legend span{display:inline-block;margin-right:14px;font-size:12.5px}
.ironlaw-report .legend i{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:4px;vertical-align:-1px}
.ironlaw-report .good{color:#2b8a3e;font-weight:600}.ironlaw-report .bad{color:#c92a2a;font-weight:600}
.ironlaw-report footer{margin-top:30px;color:#868e96;font-size:12px}
"""

JS = """
(function () {
  "use strict";
  function val(td) {
    var v = td.getAttribute("data-v");
    return v === null ? td.textContent.trim().toLowerCase() : parseFloat(v);
  }
  function sort(table, col, desc) {
    var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = val(a.cells[col]), y = val(b.cells[col]), c = x < y ? -1 : (x > y ? 1 : 0);
      return desc ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      th.setAttribute("aria-sort", i === col ? (desc ? "descending" : "ascending") : "none");
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (t) {
    Array.prototype.forEach.call(t.tHead.rows[0].cells, function (th, i) {
      var go = function () { sort(t, i, th.getAttribute("aria-sort") !== "descending"); };
      th.tabIndex = 0;
      th.addEventListener("click", go);
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); go(); }
      });
    });
  });
  var m = /sort=([A-Za-z_]+)(?::(asc|desc))?/.exec(window.location.hash);
  if (m) {
    var th = document.querySelector('table.sortable th[data-key="' + m[1] + '"]');
    if (th) { sort(th.closest("table"), th.cellIndex, m[2] !== "asc"); }
  }
  document.documentElement.setAttribute("data-ready", "1");
})();
"""


def _e(s) -> str:
    return escape(str(s), quote=True)


def _n(x: float) -> str:
    """A plain count with a decimal prefix: 1.16 G, 341, 0.5."""
    return fmt(x, "").strip()


def _badge(bound: str) -> str:
    return f'<span class="badge" style="background:{svg.BOUND_COLOURS.get(bound, "#495057")}">{_e(bound)}</span>'


def _num(x: float, text: str, cls: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    return f'<td{c} data-v="{x:.6g}">{_e(text)}</td>'


def _table(head: list[str], rows: list[str], tid: str = "", sortable: bool = False, keys=None, left=()) -> str:
    attrs = (f' id="{tid}"' if tid else "") + (' class="sortable"' if sortable else "")
    th = []
    for i, h in enumerate(head):
        a = (f' data-key="{keys[i]}" aria-sort="none"' if keys else "") + (' class="l"' if i in left else "")
        th.append(f"<th{a}>{_e(h)}</th>")
    return (f'<div class="scroll"><table{attrs}><thead><tr>{"".join(th)}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


# ---------------------------------------------------------------------------------------- sections

def summary(est) -> str:
    b = est.bottleneck()
    g = est.graph
    return (f'<section id="summary"><p class="headline">{_e(headline(est))}</p>'
            f'<p class="why">{_badge(b["resource"])} <b>Why:</b> {_e(b["why"])}</p>'
            f'<p class="sub">{_e(fmt(float(g.flops), "FLOP"))} of work{_e(per_device(g))}, {_e(fmt(float(g.bytes), "B"))} of traffic, '
            f'{int(est.cols.count.sum())} op invocations ({len(g.ops)} rows); '
            f'{est.composition} composition.</p>{_uncounted(est)}</section>')


def _uncounted(est) -> str:
    u = est.graph.uncounted_ops
    if not u:
        return ""
    return ('<p class="warn" id="uncounted"><b>Ops without a formula</b> (not in the time above): '
            + _e(", ".join(f"{k} ×{v}" for k, v in u.items())) + "</p>")


def terms(est) -> str:
    vals = {k: float(est.term(k)) for k, _, _ in TERMS}
    s = sum(vals.values()) or 1.0
    rows = [f'<tr><td class="l"><i style="display:inline-block;width:10px;height:10px;background:'
            f'{svg.TERM_COLOURS[k]}"></i> {label}</td><td class="l">{formula}</td>'
            f'{_num(vals[k], fmt_time(vals[k]))}<td>{100 * vals[k] / s:.1f}%</td></tr>'
            for k, label, formula in TERMS if k != "network_s" or vals[k] > 0]
    rows.append(f'<tr><td class="l"><b>critical path</b></td><td class="l">{_e(est.composition)}: '
                f'{"Σ max(data, compute) + latency" if est.composition == "overlap" else "Σ data + compute + latency"}'
                f'</td>{_num(est.time_s, fmt_time(est.time_s), "")}<td></td></tr>')
    bar = svg.share_bar([(label, vals[k], svg.TERM_COLOURS[k], f"{label}: {fmt_time(vals[k])}")
                         for k, label, _ in TERMS], sid="terms-bar")
    # who owns the critical path (what Estimate.bottleneck reads)
    own = [float(x) for x in est.workload_shares_s]
    labels = [r if t is None else f"{r} ({t})" for r, t in est.resources]
    colours = [svg.BOUND_COLOURS.get(r, "#495057") if t is None else svg.BW_ROOF_COLOURS[(i - 3) % 5]
               for i, (r, t) in enumerate(est.resources)]
    owner = svg.share_bar([(labels[i], own[i], colours[i], f"{labels[i]}: {fmt_time(own[i])}") for i in range(len(own))],
                          sid="owner-bar")
    tot = sum(own) or 1.0
    owner += '<p class="legend">' + "".join(
        f'<span><i style="background:{colours[i]}"></i>{_e(labels[i])} {100 * own[i] / tot:.1f}%</span>'
        for i in sorted(range(len(own)), key=lambda i: -own[i]) if own[i] > 0) + "</p>"
    c = est.cols.count
    tier_rows = []
    for i, t in enumerate(est.hw.memory):
        moved = float((est.traffic_bytes[i] * c).sum())
        secs = float((est.data_tier_s[i] * c).sum())
        if moved > 0:
            tier_rows.append(f'<tr><td class="l">{_e(t.name)}</td><td class="l">{_e(t.role)}</td>'
                             f'{_num(moved, fmt(moved, "B"))}{_num(t.bw_Bps, fmt(t.bw_Bps, "B/s"))}'
                             f'{_num(secs, fmt_time(secs))}</tr>')
    return (f'<section id="terms"><h2>The Iron Law terms</h2>'
            + ('<p class="note">Each term summed over all ops. With overlap an op costs max(data, compute) + latency '
               '(plus what a kernel does not overlap: a GPU GEMM\'s output stores, a CPU GEMM\'s weight packing), '
               'so the critical path is no longer than the sum of the terms.</p>' if est.composition == "overlap" else
               '<p class="note">Each term summed over all ops; composed serially, the critical path is their sum.</p>')
            + _table(["term", "formula", "time", "share of summed terms"], rows, tid="terms-table", left=(0, 1)) + bar
            + '<p class="note">Who owns the critical path (the bottleneck is the largest part):</p>' + owner
            + '<p class="note">The data term by memory tier:</p>'
            + _table(["tier", "role", "bytes moved", "bandwidth", "time"], tier_rows, tid="tier-table", left=(0, 1))
            + "</section>")


def roofline(est, title: str = "Roofline: every op") -> str:
    pts, skipped = svg.roofline_points(est)
    note = ""
    if skipped:
        names = ", ".join(f"{r['name']} ({'no FLOPs' if r['flops'] <= 0 else 'no bytes'})" for r in skipped[:8])
        more = f" and {len(skipped) - 8} more" if len(skipped) > 8 else ""
        note = (f'<p class="note" id="roofline-skipped">{len(skipped)} op(s) cannot sit on log axes and are not '
                f'plotted: {_e(names)}{more}; they are in the table below.</p>')
    picture, drawn = None, "ironlaw.report.svg"
    if len(pts) > MPL_MAX_OPS:
        drawn += f" ({len(pts)} ops: more compact than matplotlib's SVG)"
    else:
        try:
            from . import mplsvg
            picture, drawn = mplsvg.roofline(est), "ironlaw.report.plot (matplotlib)"
            if picture is None:
                drawn = "ironlaw.report.svg (ironlaw.report.plot's figure could not be labelled op by op)"
        except ImportError:
            drawn += " (matplotlib is not installed)"
    if picture is None:
        picture = svg.roofline(est)
    return (f'<section id="roofline"><h2>{_e(title)}</h2>'
            f'<p class="note">Roofs are the device\'s peaks (η = 1); each point is an op at its arithmetic '
            f'intensity and the FLOP/s it achieves in its predicted time (latency included). Point area ∝ the '
            f'op\'s share of the time; hover a point for details. {len(pts)} ops plotted; drawn by {drawn}.</p>'
            + picture + note + "</section>")


OPS_HEAD = [("name", "op"), ("kind", "kind"), ("count", "×"), ("flops", "FLOPs"), ("bytes", "bytes"),
            ("ai", "FLOP/B"), ("tier", "tier"), ("data_s", "data"), ("compute_s", "compute"),
            ("latency_s", "latency"), ("time_s", "time"), ("share", "share"), ("bound", "bound")]


def ops_table(est, top: int | None, sortable: bool = True, tid: str = "ops-table") -> str:
    rows_all = est.rows()
    total = sum(r["time_s"] for r in rows_all) or 1.0
    shown = sorted(rows_all, key=lambda r: -r["time_s"])[: (len(rows_all) if top is None else top)]
    ops = {op.name: op for op in est.graph.ops}
    body = []
    for r in shown:
        op = ops.get(r["name"])
        tip = " · ".join(x for x in (op.module if op else "", op.shapes if op else "", r["dtype"]) if x)
        ai = r["flops"] / r["bytes"] if r["bytes"] > 0 else 0.0
        body.append(
            f'<tr><td class="l name" title="{_e(tip)}">{_e(r["name"])}</td><td class="l">{_e(r["kind"])}</td>'
            f'{_num(r["count"], str(r["count"]))}{_num(r["flops"], _n(r["flops"]))}{_num(r["bytes"], fmt(r["bytes"], "B"))}'
            f'{_num(ai, _n(ai) if r["bytes"] > 0 else "—")}<td class="l">{_e(r["tier"] or "—")}</td>'
            f'{_num(r["data_s"], fmt_time(r["data_s"]))}{_num(r["compute_s"], fmt_time(r["compute_s"]))}'
            f'{_num(r["latency_s"], fmt_time(r["latency_s"]))}{_num(r["time_s"], fmt_time(r["time_s"]))}'
            f'{_num(r["time_s"] / total, "%.1f%%" % (100 * r["time_s"] / total))}'
            f'<td class="l">{_badge(r["bound"])}</td></tr>')
    left = (0, 1, 6, 12)
    return _table([h for _, h in OPS_HEAD], body, tid=tid, sortable=sortable, keys=[k for k, _ in OPS_HEAD], left=left)


def top_ops(est, top: int | None) -> str:
    n = len(est.graph.ops)
    shown = n if top is None else min(top, n)
    more = f"the {shown} slowest of {n} op rows" if shown < n else f"all {n} op rows"
    return (f'<section id="top-ops"><h2>Ops by time</h2><p class="note">Showing {more}; click a column to sort. '
            f'Times are totals over the op\'s repeats (×).</p>' + ops_table(est, top) + "</section>")


def kind_table(est, tid: str = "kind-table") -> str:
    """The Iron Law terms per op kind (sortable); a network column where any op moves bytes over links."""
    agg = est.by_kind()
    net: dict[str, float] = {}
    for r in est.rows():
        net[r["kind"]] = net.get(r["kind"], 0.0) + float(r.get("network_s", 0.0))
    with_net = any(v > 0 for v in net.values())
    total = sum(a["time_s"] for a in agg.values()) or 1.0
    rows = [f'<tr><td class="l">{_e(k)}</td>{_num(a["count"], str(a["count"]))}{_num(a["flops"], _n(a["flops"]))}'
            f'{_num(a["bytes"], fmt(a["bytes"], "B"))}{_num(a["data_s"], fmt_time(a["data_s"]))}'
            f'{_num(a["compute_s"], fmt_time(a["compute_s"]))}{_num(a["latency_s"], fmt_time(a["latency_s"]))}'
            + (_num(net[k], fmt_time(net[k])) if with_net else "")
            + f'{_num(a["time_s"], fmt_time(a["time_s"]))}<td>{100 * a["time_s"] / total:.1f}%</td></tr>'
            for k, a in agg.items()]
    head = ["kind", "×", "FLOPs", "bytes", "data", "compute", "latency"] + (["network"] if with_net else []) \
        + ["time", "share"]
    keys = ["kind", "count", "flops", "bytes", "data_s", "compute_s", "latency_s"] + (["network_s"] if with_net else []) \
        + ["time_s", "share"]
    return _table(head, rows, tid=tid, sortable=True, keys=keys, left=(0,))


def by_kind(est) -> str:
    return '<section id="by-kind"><h2>By op kind</h2>' + kind_table(est) + "</section>"


def footprint(est) -> str:
    fp = est.footprint()
    classes = list(fp["by_class"])
    legend = "".join(f'<span><i style="background:{svg.CLASS_COLOURS.get(c, "#868e96")}"></i>{_e(c.replace("_", " "))} '
                     f'{_e(fmt_size(fp["by_class"][c]))}</span>' for c in classes)
    rows = []
    for t in fp["tiers"]:
        if t["role"] == "cache":
            continue
        pct = 100 * t["used_bytes"] / t["capacity_bytes"]
        rows.append(f'<tr><td class="l">{_e(t["name"])}</td><td class="l">{_e(t["role"])}</td>'
                    f'{_num(t["capacity_bytes"], fmt_size(t["capacity_bytes"]))}{_num(t["used_bytes"], fmt_size(t["used_bytes"]))}'
                    f'<td>{pct:.3g}%</td><td class="l">{svg.capacity_bar(t, width=360)}</td></tr>')
    state = ("fits in device memory" if fp["fits"] and fp["spilled_bytes"] == 0 else
             f"spills {fmt_size(fp['spilled_bytes'])} beyond device memory" if fp["fits"] else "does not fit")
    caches = ", ".join(f"{t['name']} {fmt_size(t['capacity_bytes'])}" for t in fp["tiers"] if t["role"] == "cache")
    return (f'<section id="footprint"><h2>Footprint against the memory tiers</h2>'
            f'<p>{_e(fmt_size(fp["total_bytes"]))} resident{_e(per_device(est.graph))}: <b>{_e(state)}</b>.</p><p class="legend">{legend}</p>'
            + _table(["tier", "role", "capacity", "holds", "used", "placement"], rows, tid="footprint-table",
                     left=(0, 1, 5))
            + (f'<p class="note">Caches ({_e(caches)}) hold no footprint; activations an op just produced are read '
               f'from the last cache level when they fit.</p>' if caches else "") + "</section>")


def sources(est) -> str:
    return hardware_sources(est.hw)


def hardware_sources(hw) -> str:
    """Every hardware number of ``hw`` with its source."""
    rows = [f'<tr><td class="l">{_e(d)} matrix peak</td>{_num(p, fmt(p, "FLOP/s"))}<td class="src">'
            f'{_e(hw.sources.get(f"compute.{d}", ""))}</td></tr>' for d, p in hw.peak_flops.items()]
    rows.append(f'<tr><td class="l">vector peak</td>{_num(hw.vector_flops, fmt(hw.vector_flops, "FLOP/s"))}'
                f'<td class="src">{_e(hw.sources.get("vector", ""))}</td></tr>')
    for t in hw.memory:
        rows.append(f'<tr><td class="l">{_e(t.name)} ({_e(t.role)})</td><td>{_e(fmt(t.bw_Bps, "B/s"))}, '
                    f'{_e(fmt_size(t.capacity_bytes))}</td><td class="src">{_e(t.source)}</td></tr>')
    rows.append(f'<tr><td class="l">per-op latency</td>{_num(hw.op_latency_s, fmt_time(hw.op_latency_s))}'
                f'<td class="src">{_e(hw.sources.get("latency", ""))}</td></tr>')
    eff = ", ".join(f"{k} {v:g}" for k, v in hw.efficiency.items())
    rows.append(f'<tr><td class="l">efficiency η</td><td class="l">{_e(eff)}</td>'
                f'<td class="src">{_e(hw.sources.get("efficiency", ""))}</td></tr>')
    return (f'<section id="sources"><h2>Hardware numbers and their sources</h2><p class="note">{_e(hw.title)} '
            f'({_e(hw.path)})</p>' + _table(["quantity", "value", "source"], rows, tid="sources-table", left=(0, 2))
            + "</section>")


def whatif(cmp: dict) -> str:
    b, a = cmp["before"], cmp["after"]
    rows = []
    for k, label, _ in TERMS:
        x, y = float(b["terms"].get(k, 0.0)), float(a["terms"].get(k, 0.0))
        if x == 0 and y == 0:
            continue
        ch = f"{100 * (y - x) / x:+.1f}%" if x > 0 else "new"
        rows.append(f'<tr><td class="l">{label}</td>{_num(x, fmt_time(x))}{_num(y, fmt_time(y))}<td>{ch}</td></tr>')
    tb, ta = cmp["time_before_s"], cmp["time_after_s"]
    rows.append(f'<tr><td class="l"><b>critical path</b></td>{_num(tb, fmt_time(tb))}'
                f'{_num(ta, fmt_time(ta))}<td>{100 * (ta - tb) / tb:+.1f}%</td></tr>')
    rows.append(f'<tr><td class="l">bottleneck</td><td>{_e(cmp["bottleneck_before"])}</td>'
                f'<td>{_e(cmp["bottleneck_after"])}</td><td></td></tr>')
    label = cmp.get("what_if")
    label = ", ".join(label) if isinstance(label, list) else (label or "")
    hw_b, hw_a = b["hardware"]["name"], a["hardware"]["name"]
    cls = "good" if cmp["shortens_critical_path"] else "bad"
    src = ("Computed by ironlaw.models.whatif in this run." if cmp["path"] == "--what-if" else f"From {cmp['path']}.")
    return (f'<section id="whatif"><h2>What if{": " + _e(label) if label else ""}</h2>'
            f'<p class="{cls}" id="verdict">{_e(cmp["verdict"])}</p>'
            f'<p>speed-up ×{cmp["speedup"]:.3g} ({"shortens" if cmp["shortens_critical_path"] else "does not shorten"} '
            f'the critical path){_e(f"; hardware {hw_b} → {hw_a}" if hw_a != hw_b else "")}.</p>'
            + _table(["", "before", "after", "change"], rows, tid="whatif-table", left=(0,))
            + f'<p class="note">{_e(src)}</p></section>')


def validation(v: dict, est) -> str:
    def row(name, t):
        spread = "—" if t["spread_s"] is None else fmt_time(t["spread_s"])
        if t["measured_s"] > 0:
            err = (t["predicted_s"] - t["measured_s"]) / t["measured_s"]
            cell = f'<td class="{"good" if abs(err) <= 0.25 else "bad"}" data-v="{err:.6g}">{100 * err:+.1f}%</td>'
        else:
            cell = "<td>—</td>"
        return (f'<tr><td class="l">{_e(name)}</td>{_num(t["predicted_s"], fmt_time(t["predicted_s"]))}'
                f'{_num(t["measured_s"], fmt_time(t["measured_s"]))}<td>{_e(spread)}</td>{cell}</tr>')
    kinds = sorted(v["by_kind"].items(), key=lambda kv: -kv[1]["measured_s"])
    rows = [row(k, t) for k, t in kinds]
    rows.append(row("total", v["total"]).replace('<td class="l">total</td>', '<td class="l"><b>total</b></td>'))
    hw = v["hardware"]
    note = (f" Measured on {hw}; the estimate above is for {est.hw.name}." if hw and hw != est.hw.name else
            (f" Measured on {hw}." if hw else ""))
    return (f'<section id="validation"><h2>Predicted vs measured</h2>'
            f'<p class="note">From {_e(v["path"])}.{_e(note)} Error = (predicted − measured) / measured; '
            f'within ±25% in green.</p>'
            + (f'<p id="validation-score">{100 * v["score"]:.0f}% of the measured op time is in ops predicted '
               f'within ±25%.</p>' if v.get("score") is not None else "")
            + svg.paired_bars(kinds)
            + _table(["op kind", "predicted", "measured", "spread", "error"], rows, tid="validation-table",
                     sortable=False, left=(0,)) + "</section>")


# ---------------------------------------------------------------------------------------- documents

def _single(est) -> None:
    if est.cols.cfg_shape != ():
        raise IronlawError("the HTML report describes one configuration; index the sweep first")


def render(est, compare: dict | None = None, validation_doc: dict | None = None, top: int | None = 200,
           frontier_doc: dict | None = None) -> str:
    """The whole page as a string."""
    _single(est)
    g = est.graph
    parts = [summary(est), terms(est), roofline(est), top_ops(est, top), by_kind(est), footprint(est)]
    if compare is not None:
        parts.append(whatif(compare))
    if validation_doc is not None:
        parts.append(validation(validation_doc, est))
    if frontier_doc is not None:                          # ironlaw serve --sweep-concurrency (report.frontier)
        from .frontier import section
        parts.append(section(frontier_doc))
    parts.append(sources(est))
    meta = ", ".join(f"{k} {g.meta[k]}" for k in ("batch", "seq", "image") if k in g.meta)
    sub = (f"{_e(g.phase)} · {_e(element_label(g))}{_e(' · ' + meta if meta else '')} · "
           f"spec <code>{_e(g.meta.get('spec', g.name))}</code>")
    return document(f"ironlaw · {g.name} on {est.hw.name}", f"{g.name} on {est.hw.title}", sub, parts)


def document(title: str, heading: str, sub_html: str, parts: list[str], data: dict | None = None,
             nav: bool = False) -> str:
    """A whole self-contained page: the report's CSS and script, ``parts`` (HTML sections) under a heading,
    with ``nav`` a list of links to every section, and ``data`` (the result's JSON document) embedded as
    ``<script type="application/json" id="document">`` for readers and tests."""
    from .._version import __version__
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(title)}</title><style>{CSS}</style></head>"
            f"<body><main class=\"ironlaw-report\"><h1 id=\"title\">{_e(heading)}</h1>"
            f"<p class=\"sub\">{sub_html}</p>" + (contents(parts) if nav else "")
            + "".join(parts)
            + f"<footer>ironlaw {_e(__version__)} · generated {stamp} · T ≈ D_vol/BW + O/(R_peak·η) + L_lat, per op"
            f"</footer></main>" + (json_block(data) if data is not None else "")
            + f"<script>{JS}</script></body></html>\n")


def contents(parts: list[str]) -> str:
    """Links to every top-level section of ``parts`` (``<section id=…><h2>…</h2>``)."""
    links = []
    for p in parts:
        m = re.match(r'<section id="([^"]+)"><h2>(.*?)</h2>', p)
        if m:
            links.append(f'<a href="#{m.group(1)}">{m.group(2)}</a>')
    return f'<nav id="contents" class="note">{" · ".join(links)}</nav>' if links else ""


def json_block(doc: dict) -> str:
    """``doc`` as an inline JSON data block (numpy scalars and arrays as plain numbers; ``</`` escaped)."""
    import json

    def plain(o):
        if hasattr(o, "tolist"):
            return o.tolist()
        raise TypeError(f"not JSON serializable: {type(o).__name__}")
    text = json.dumps(doc, allow_nan=False, default=plain).replace("</", "<\\/")
    return f'<script type="application/json" id="document">{text}</script>'


def key(path: str, value: float, text: str, unit: str = "1", tag: str = "td") -> str:
    """A key number: shown as ``text``, with the exact ``value`` and its place ``path`` in the JSON document
    (dotted, list indices as numbers) for readers and the browser test; ``unit`` (s, B, %, 1) says how
    ``text`` reads."""
    return (f'<{tag} data-json="{_e(path)}" data-unit="{unit}" data-v="{float(value)!r}">{_e(text)}</{tag}>')


def rate(x: float) -> str:
    """A rate or a count for text: 5,524 or 21.6."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


_uid = [0]


def fragment(est, top: int = 10) -> str:
    """A compact report for notebooks: summary, terms, roofline, top ops (no script: notebooks may strip it).
    Element ids get a suffix unique to this display, so several estimates can share one notebook."""
    if est.cols.cfg_shape != ():
        return (f'<div class="ironlaw-report"><p>ironlaw estimate of {_e(est.graph.name)} on {_e(est.hw.name)} over '
                f'{_e(est.cols.cfg_shape)} configurations; index one configuration to see its report.</p></div>')
    _uid[0] += 1
    body = (summary(est) + terms(est) + roofline(est) + '<section><h2>Slowest ops</h2>'
            + ops_table(est, top, sortable=False, tid="") + "</section>")
    return f"<style>{CSS}</style><div class=\"ironlaw-report\">" + svg.suffix_ids(body, f"-{os.getpid()}-{_uid[0]}") + "</div>"


# ---------------------------------------------------------------------------------------- writing

def check_output(path) -> Path:
    """Fail early (before any work) on an output path that cannot be written or whose name says another format."""
    from ..core.files import check_output as check
    return check(path, "--html", (".html", ".htm"))


def write(path, text: str) -> Path:
    """Write ``text`` atomically (see ironlaw.core.files); an existing ``path`` survives any failure."""
    from ..core.files import write_atomic
    return write_atomic(check_output(path), text, "--html")


# the helpers the other pages of this package (serve_report, train_report, search_report) build with
esc, num, badge, table = _e, _num, _badge, _table
