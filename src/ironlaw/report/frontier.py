"""The serving frontier (``ironlaw serve --sweep-concurrency``, schema ironlaw.serve-frontier/1) as pictures:
tokens/s per device (y) against tokens/s per user (x), one point per concurrency.

    svg(doc)          inline SVG for the HTML report (no dependencies, no URL)
    section(doc)      the HTML report's ``frontier`` section: the picture and the table
    save(doc, path)   a matplotlib figure to .svg or .png (``--plot FILE``)
Points that meet the SLO (when the sweep had one) are green; the ITL target is the dashed line 1 / ITL.
"""
from __future__ import annotations

from html import escape

from ..core.errors import IronlawError

SCHEMA = "ironlaw.serve-frontier/1"
MEET, MISS, PLAIN = "#2b8a3e", "#adb5bd", "#1c7ed6"
COLUMNS = ("concurrency", "ttft_s", "itl_s", "step_s", "tokens_per_s_per_device", "tokens_per_s_per_user",
           "requests_per_s", "joules_per_output_token", "usd_per_million_output_tokens")


def check(doc, where: str = "frontier") -> dict:
    """A frontier document as `ironlaw serve --sweep-concurrency --format json` writes it."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise IronlawError(f"{where}: expected a document with schema '{SCHEMA}' "
                           f"(from `ironlaw serve --sweep-concurrency --format json`)")
    pts = doc.get("points")
    keys = ("concurrency", "tokens_per_s_per_device", "tokens_per_s_per_user")
    if not isinstance(pts, list) or not pts or not all(isinstance(p, dict) and all(
            isinstance(p.get(k), (int, float)) and p[k] > 0 for k in keys) for p in pts):
        raise IronlawError(f"{where}: 'points' must be a non-empty list, each with positive {', '.join(keys)}")
    return doc


def _colour(p: dict) -> str:
    return PLAIN if "meets_slo" not in p else (MEET if p["meets_slo"] else MISS)


LABEL_GAP = 0.06         # a point's label is left out within this share of the axes' span of a labelled point


def labelled(xs: list, ys: list, gap: float = LABEL_GAP) -> list[bool]:
    """Which points of a frontier get their concurrency written beside them: from the highest concurrency down,
    each at least ``gap`` of the axes' span (each axis from 0 to its largest value) from every one already labelled,
    so that the labels of points bunched where throughput saturates (256 and 392) do not overwrite each other; the
    table and each point's tooltip still name every one."""
    xmax, ymax = max(xs) or 1.0, max(ys) or 1.0
    kept: list[tuple[float, float]] = []
    out = [False] * len(xs)
    for i in reversed(range(len(xs))):
        at = (xs[i] / xmax, ys[i] / ymax)
        if all(max(abs(at[0] - k[0]), abs(at[1] - k[1])) >= gap for k in kept):
            kept.append(at)
            out[i] = True
    return out


def svg(doc: dict, width: int = 860, height: int = 420) -> str:
    pts = doc["points"]
    x0, y0, x1, y1 = 70, 20, width - 20, height - 50
    xs = [p["tokens_per_s_per_user"] for p in pts]
    ys = [p["tokens_per_s_per_device"] for p in pts]
    xmax, ymax = max(xs) * 1.08, max(ys) * 1.08
    sx = lambda v: x0 + (x1 - x0) * v / xmax
    sy = lambda v: y1 - (y1 - y0) * v / ymax
    out = [f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="serving frontier">',
           f'<rect class="plot-bg" x="{x0}" y="{y0}" width="{x1 - x0}" height="{y1 - y0}"/>']
    for k in range(6):
        gx, gy = xmax * k / 5, ymax * k / 5
        out.append(f'<line class="grid" x1="{sx(gx):.1f}" y1="{y0}" x2="{sx(gx):.1f}" y2="{y1}"/>'
                   f'<text class="tick" x="{sx(gx):.1f}" y="{y1 + 16}" text-anchor="middle">{gx:,.0f}</text>'
                   f'<line class="grid" x1="{x0}" y1="{sy(gy):.1f}" x2="{x1}" y2="{sy(gy):.1f}"/>'
                   f'<text class="tick" x="{x0 - 6}" y="{sy(gy) + 4:.1f}" text-anchor="end">{gy:,.0f}</text>')
    itl = (doc.get("slo") or {}).get("itl_s")
    if itl and 1.0 / itl < xmax:
        out.append(f'<line x1="{sx(1 / itl):.1f}" y1="{y0}" x2="{sx(1 / itl):.1f}" y2="{y1}" stroke="#c92a2a" '
                   f'stroke-dasharray="5,4"><title>ITL target {1e3 * itl:g} ms = {1 / itl:.1f} tokens/s per user'
                   f'</title></line>')
    path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in zip(xs, ys))
    out.append(f'<polyline points="{path}" fill="none" stroke="#495057" stroke-width="1.2"/>')
    for p, x, y, named in zip(pts, xs, ys, labelled(xs, ys)):
        out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="5" fill="{_colour(p)}"><title>concurrency '
                   f'{p["concurrency"]}: {y:,.1f} tokens/s per device, {x:,.1f} tokens/s per user</title></circle>'
                   + (f'<text class="tick" x="{sx(x) + 7:.1f}" y="{sy(y) - 6:.1f}">{p["concurrency"]}</text>'
                      if named else ""))
    out.append(f'<text class="axis" x="{(x0 + x1) / 2}" y="{height - 12}" text-anchor="middle">tokens/s per user '
               f'(1 / ITL)</text><text class="axis" transform="translate(16,{(y0 + y1) / 2}) rotate(-90)" '
               f'text-anchor="middle">tokens/s per device</text></svg>')
    return "".join(out)


def _cell(v) -> str:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool)
    return f"<td>{v:.4g}</td>" if ok else "<td>—</td>"


def section(doc: dict) -> str:
    e = lambda s: escape(str(s), quote=True)
    cols = tuple(k for k in COLUMNS if k in doc["points"][0])          # what this frontier's points carry
    head = "".join(f"<th>{e(c)}</th>" for c in cols + ("meets SLO",))
    rows = "".join("<tr>" + "".join(_cell(p.get(c)) for c in cols)
                   + f"<td>{'' if 'meets_slo' not in p else ('yes' if p['meets_slo'] else 'no')}</td></tr>"
                   for p in doc["points"])
    what = doc.get("sweeps", "one point per concurrency (continuous batching)")
    return (f'<section id="frontier"><h2>Serving frontier: {e(doc.get("workload", ""))} on '
            f'{e(doc.get("hardware", ""))}</h2><p class="note">Prompt {e(doc.get("prompt_tokens"))}, output '
            f'{e(doc.get("output_tokens"))} tokens; {e(what)}, green where the SLO is met.</p>' + svg(doc)
            + f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{rows}'
            f'</tbody></table></div></section>')


def save(doc: dict, path) -> None:
    """Write the frontier to ``path`` (.svg or .png) with matplotlib."""
    from ..core.files import check_output, write_atomic
    p = check_output(path, "--plot", (".svg", ".png"))
    from matplotlib.figure import Figure
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.add_subplot(1, 1, 1)
    pts = doc["points"]
    xs, ys = [q["tokens_per_s_per_user"] for q in pts], [q["tokens_per_s_per_device"] for q in pts]
    ax.plot(xs, ys, color="#495057", lw=1)
    ax.scatter(xs, ys, c=[_colour(q) for q in pts], zorder=3)
    for q, x, y, named in zip(pts, xs, ys, labelled(xs, ys)):
        if named:
            ax.annotate(str(q["concurrency"]), (x, y), textcoords="offset points", xytext=(5, 4), fontsize=7)
    itl = (doc.get("slo") or {}).get("itl_s")
    if itl:
        ax.axvline(1.0 / itl, color="#c92a2a", ls="--", lw=1, label=f"ITL target {1e3 * itl:g} ms")
        ax.legend(fontsize=8)
    ax.set_xlabel("tokens/s per user (1 / ITL)")
    ax.set_ylabel("tokens/s per device")
    ax.set_title(f"{doc.get('workload', '')} on {doc.get('hardware', '')}: concurrency frontier", fontsize=10)
    ax.grid(True, alpha=0.3)
    write_atomic(p, lambda f: fig.savefig(f, format=p.suffix[1:].lower(), dpi=120), "--plot")
