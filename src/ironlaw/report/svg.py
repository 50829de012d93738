"""Inline SVG pictures of an Estimate for the HTML report: the roofline and horizontal share bars.

Plain strings, no dependencies, no ``xmlns`` (inline SVG in HTML5 needs none) and so no URL of
any kind. Every shape a reader may ask about carries a ``<title>`` (a hover tooltip).
"""
from __future__ import annotations

import math
import re
from html import escape

from ..core.units import fmt, fmt_size, fmt_time

# colours of what binds an op (also used by the tables' bound badges in html.py)
BOUND_COLOURS = {"compute": "#d9480f", "bandwidth": "#1c7ed6", "latency": "#7048e8", "network": "#2b8a3e",
                 "capacity": "#c92a2a"}
CLASS_COLOURS = {"weights": "#1c7ed6", "activations": "#f59f00", "kv_cache": "#7048e8", "gradients": "#2b8a3e",
                 "optimizer": "#d9480f", "tables": "#0c8599"}
FLOP_ROOF_COLOURS = ("#d9480f", "#f08c00", "#e64980", "#a61e4d")
BW_ROOF_COLOURS = ("#1c7ed6", "#0ca678", "#5f3dc4", "#868e96", "#364fc7")
TERM_COLOURS = {"data_s": "#1c7ed6", "compute_s": "#d9480f", "latency_s": "#7048e8", "network_s": "#2b8a3e"}


def _e(s) -> str:
    return escape(str(s), quote=True)


def _decades(lo: float, hi: float) -> tuple[int, int]:
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    return a, max(b, a + 1)


def roofline_points(est) -> tuple[list[dict], list[dict]]:
    """(plotted, skipped): ops with FLOPs, bytes and time > 0 get a point (intensity, achieved rate);
    the others cannot sit on log axes and are listed, never dropped silently."""
    pts, skipped = [], []
    for r in est.rows():
        if r["flops"] > 0 and r["bytes"] > 0 and r["time_s"] > 0:
            pts.append({**r, "ai": r["flops"] / r["bytes"], "rate": r["flops"] / r["time_s"]})
        else:
            skipped.append(r)
    return pts, skipped


def roofs(est) -> tuple[list[tuple[str, float, str]], list[tuple[str, float, str]]]:
    """(compute roofs [(label, FLOP/s, source)], bandwidth roofs [(tier, B/s, source)]) of the device
    for the dtypes the workload's ops use, plus the vector unit."""
    hw = est.hw
    dtypes = sorted({op.dtype for op in est.graph.ops if op.dtype in hw.peak_flops},
                    key=lambda d: -hw.peak_flops[d])
    comp = [(f"{d} matrix peak", hw.peak_flops[d], hw.sources.get(f"compute.{d}", "")) for d in dtypes]
    comp.append(("vector unit peak", hw.vector_flops, hw.sources.get("vector", "")))
    bw = [(t.name, t.bw_Bps, t.source) for t in hw.memory]
    return comp, bw


def roofline(est, width: int = 860, height: int = 460) -> str:
    """The roofline: the device's roofs (η = 1) and every op at (intensity, FLOPs / its predicted time)."""
    pts, _ = roofline_points(est)
    comp, bw = roofs(est)
    top_peak = max(p for _, p, _ in comp)
    ai = [p["ai"] for p in pts] + [top_peak / b for _, b, _ in bw]
    rate = [p["rate"] for p in pts] + [top_peak]
    x0, x1 = _decades(min(ai) / 2, max(ai) * 2)
    y0, y1 = _decades(min(rate) / 2, top_peak * 2)
    ml, mr, mt, mb = 96, 170, 16, 46
    pw, ph = width - ml - mr, height - mt - mb

    def X(v: float) -> float:
        return ml + pw * (math.log10(v) - x0) / (x1 - x0)

    def Y(v: float) -> float:
        return mt + ph * (1 - (math.log10(v) - y0) / (y1 - y0))

    out = [f'<svg id="roofline-svg" class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
           f'role="img" aria-label="roofline: arithmetic intensity against achieved FLOP/s, one point per op">',
           f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" class="plot-bg"/>']
    for k in range(x0, x1 + 1):                                   # grid and tick labels
        x = X(10.0 ** k)
        out.append(f'<line x1="{x:.1f}" y1="{mt}" x2="{x:.1f}" y2="{mt + ph}" class="grid"/>'
                   f'<text x="{x:.1f}" y="{mt + ph + 16}" class="tick" text-anchor="middle">{_e(fmt(10.0 ** k, "").strip())}</text>')
    for k in range(y0, y1 + 1):
        y = Y(10.0 ** k)
        out.append(f'<line x1="{ml}" y1="{y:.1f}" x2="{ml + pw}" y2="{y:.1f}" class="grid"/>'
                   f'<text x="{ml - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">{_e(fmt(10.0 ** k, "FLOP/s"))}</text>')
    out.append(f'<text x="{ml + pw / 2}" y="{height - 8}" class="axis" text-anchor="middle">'
               f'arithmetic intensity (FLOP per byte moved)</text>')
    out.append(f'<text x="14" y="{mt + ph / 2}" class="axis" text-anchor="middle" '
               f'transform="rotate(-90 14 {mt + ph / 2})">achieved FLOP/s</text>')
    out.append(f'<clipPath id="roof-clip"><rect x="{ml}" y="{mt}" width="{pw}" height="{ph}"/></clipPath>'
               f'<g clip-path="url(#roof-clip)">')
    xl, xr = 10.0 ** x0, 10.0 ** x1
    for i, (name, b, src) in enumerate(bw):                      # bandwidth roofs: rate = bw · intensity
        ridge = top_peak / b
        xe = min(ridge, xr)
        out.append(f'<line x1="{X(xl):.1f}" y1="{Y(b * xl):.1f}" x2="{X(xe):.1f}" y2="{Y(b * xe):.1f}" '
                   f'class="roof bw-roof" stroke="{BW_ROOF_COLOURS[i % 5]}">'
                   f'<title>{_e(name)}: {_e(fmt(b, "B/s"))} — {_e(src)}</title></line>')
    for i, (name, p, src) in enumerate(comp):                    # compute roofs
        out.append(f'<line x1="{ml}" y1="{Y(p):.1f}" x2="{ml + pw}" y2="{Y(p):.1f}" class="roof flop-roof" '
                   f'stroke="{FLOP_ROOF_COLOURS[i % 4]}"><title>{_e(name)}: {_e(fmt(p, "FLOP/s"))} — '
                   f'{_e(src)}</title></line>')
    total = sum(p["time_s"] for p in pts) or 1.0
    for p in sorted(pts, key=lambda p: -p["time_s"]):           # big first, so small points stay on top
        r = 2.5 + 9.5 * math.sqrt(p["time_s"] / total)
        tip = (f'{p["name"]} ({p["kind"]}, ×{p["count"]}): {fmt(p["ai"], "FLOP/B")}, '
               f'{fmt(p["rate"], "FLOP/s")} achieved, {fmt_time(p["time_s"])} ({100 * p["time_s"] / total:.1f}%), '
               f'{p["bound"]}-bound')
        out.append(f'<circle class="op" cx="{X(p["ai"]):.1f}" cy="{Y(p["rate"]):.1f}" r="{r:.1f}" '
                   f'fill="{BOUND_COLOURS.get(p["bound"], "#495057")}" data-op="{_e(p["name"])}">'
                   f'<title>{_e(tip)}</title></circle>')
    out.append('</g>')
    out += _legend(comp, bw, pts, ml + pw + 10, mt + 8)
    out.append('</svg>')
    return "".join(out)


def _legend(comp: list, bw: list, pts: list, lx: float, y: float) -> list[str]:
    """The roofline's legend in the right margin from (``lx``, ``y``): every roof with its number, then what binds
    the points."""
    out = [f'<text x="{lx}" y="{y}" class="axis">roofs</text>']
    for i, (name, p, _) in enumerate(comp):
        y += 15
        out.append(f'<line x1="{lx}" y1="{y - 4}" x2="{lx + 18}" y2="{y - 4}" stroke="{FLOP_ROOF_COLOURS[i % 4]}" '
                   f'stroke-width="2"/><text x="{lx + 22}" y="{y}" class="tick">{_e(name.replace(" peak", ""))}</text>'
                   f'<text x="{lx + 22}" y="{y + 12}" class="tick">{_e(fmt(p, "FLOP/s"))}</text>')
        y += 12
    for i, (name, b, _) in enumerate(bw):
        y += 15
        out.append(f'<line x1="{lx}" y1="{y - 4}" x2="{lx + 18}" y2="{y - 4}" stroke="{BW_ROOF_COLOURS[i % 5]}" '
                   f'stroke-width="2"/><text x="{lx + 22}" y="{y}" class="tick">{_e(name)} {_e(fmt(b, "B/s"))}</text>')
    y += 24
    out.append(f'<text x="{lx}" y="{y}" class="axis">ops</text>')
    for b, c in BOUND_COLOURS.items():
        if not any(p["bound"] == b for p in pts):
            continue
        y += 15
        out.append(f'<circle cx="{lx + 9}" cy="{y - 4}" r="5" fill="{c}"/>'
                   f'<text x="{lx + 22}" y="{y}" class="tick">{b}-bound</text>')
    return out


def suffix_ids(text: str, uid: str) -> str:
    """Append ``uid`` to every id in ``text`` and to every reference to one (``url(#…)``, ``href="#…"``),
    so that several reports can share one page (notebooks) without colliding."""
    if not uid:
        return text
    text = re.sub(r'(?<=\sid=")([^"]+)"', lambda m: f'{m.group(1)}{uid}"', text)
    text = re.sub(r'url\(#([^)]+)\)', lambda m: f"url(#{m.group(1)}{uid})", text)
    return re.sub(r'href="#([^"]+)"', lambda m: f'href="#{m.group(1)}{uid}"', text)


def share_bar(parts: list[tuple[str, float, str, str]], width: int = 860, height: int = 26, sid: str = "") -> str:
    """One horizontal bar split into parts [(label, value, colour, tooltip)] in proportion to value."""
    total = sum(v for _, v, _, _ in parts)
    ident = f'id="{_e(sid)}" ' if sid else ""
    out = [f'<svg {ident}class="bar" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" preserveAspectRatio="none">']
    x = 0.0
    for label, v, colour, tip in parts:
        if v <= 0 or total <= 0:
            continue
        w = width * v / total
        out.append(f'<rect x="{x:.2f}" y="0" width="{w:.2f}" height="{height}" fill="{colour}">'
                   f'<title>{_e(tip)}</title></rect>')
        if w > 8 * len(label) + 10:
            out.append(f'<text x="{x + 6:.1f}" y="{height / 2 + 4}" class="bar-label">{_e(label)}</text>')
        x += w
    out.append('</svg>')
    return "".join(out)


def capacity_bar(tier: dict, width: int = 600, height: int = 22) -> str:
    """A memory tier's capacity as a bar, with the footprint classes placed in it as segments."""
    cap = tier["capacity_bytes"]
    out = [f'<svg class="bar tier-bar" data-tier="{_e(tier["name"])}" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" preserveAspectRatio="none">'
           f'<rect x="0" y="0" width="{width}" height="{height}" class="cap-bg">'
           f'<title>{_e(tier["name"])}: {_e(fmt_size(cap))} capacity</title></rect>']
    x = 0.0
    for cls, b in tier["holds"].items():
        w = max(width * min(b / cap, 1.0), 1.0)                  # a sliver stays visible
        out.append(f'<rect x="{x:.2f}" y="0" width="{w:.2f}" height="{height}" fill="{CLASS_COLOURS.get(cls, "#868e96")}">'
                   f'<title>{_e(cls)}: {_e(fmt_size(b))} ({100 * b / cap:.2g}% of {_e(tier["name"])})</title></rect>')
        x += w
    out.append('</svg>')
    return "".join(out)


def paired_bars(rows: list[tuple[str, dict]], width: int = 860, row_h: int = 30) -> str:
    """Predicted (outline) vs measured (filled) time per op kind, on one linear scale."""
    if not rows:
        return ""
    top = max(max(t["predicted_s"], t["measured_s"]) for _, t in rows) or 1.0
    ml, mr = 110, 150
    pw = width - ml - mr
    h = row_h * len(rows) + 24
    out = [f'<svg id="validation-svg" class="chart" viewBox="0 0 {width} {h}" width="{width}" height="{h}" '
           f'role="img" aria-label="predicted and measured time per op kind">']
    for i, (kind, t) in enumerate(rows):
        y = 4 + i * row_h
        wm, wp = pw * t["measured_s"] / top, pw * t["predicted_s"] / top
        out.append(f'<text x="{ml - 6}" y="{y + 15}" class="tick" text-anchor="end">{_e(kind)}</text>'
                   f'<rect x="{ml}" y="{y + 3}" width="{wm:.1f}" height="{row_h - 10}" fill="#adb5bd">'
                   f'<title>{_e(kind)} measured {_e(fmt_time(t["measured_s"]))}</title></rect>'
                   f'<rect x="{ml}" y="{y + 3}" width="{wp:.1f}" height="{row_h - 10}" fill="none" stroke="#d9480f" '
                   f'stroke-width="2"><title>{_e(kind)} predicted {_e(fmt_time(t["predicted_s"]))}</title></rect>'
                   f'<text x="{ml + max(wm, wp) + 6:.1f}" y="{y + 15}" class="tick">'
                   f'{_e(fmt_time(t["predicted_s"]))} / {_e(fmt_time(t["measured_s"]))}</text>')
    y = h - 6
    out.append(f'<rect x="{ml}" y="{y - 9}" width="12" height="9" fill="#adb5bd"/><text x="{ml + 16}" y="{y}" '
               f'class="tick">measured</text><rect x="{ml + 90}" y="{y - 9}" width="12" height="9" fill="none" '
               f'stroke="#d9480f" stroke-width="2"/><text x="{ml + 106}" y="{y}" class="tick">predicted</text></svg>')
    return "".join(out)
