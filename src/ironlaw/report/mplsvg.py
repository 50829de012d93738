"""``ironlaw.report.plot``'s matplotlib roofline as inline SVG for the HTML report, with a tooltip per op.

matplotlib's SVG is made fit to live inside an HTML page: no XML prolog, DOCTYPE, metadata or
namespace declarations (they hold the only URLs it writes; inline SVG needs none), ``xlink:href``
as SVG 2 ``href`` to ids in the same picture, and its global ``*{…}`` style scoped to the picture
(``svg.suffix_ids`` keeps ids apart when several pictures share a page).
Each op point becomes ``<g class="op">`` with a ``<title>`` (the hover text), found through the
collections' per-point URLs; when not every op's point can be found, ``roofline`` returns None. Needs matplotlib:
``ImportError`` when it is missing (the report then draws ``svg.roofline``).
"""
from __future__ import annotations

import io
import re
from html import escape

from ..core.units import fmt, fmt_time
from . import svg


def roofline(est, width_px: int = 860) -> str | None:
    """The figure as inline SVG, or None when not every plotted op could be given its tooltip."""
    import matplotlib  # noqa: F401  (ImportError here when it is not installed)
    from . import plot

    fig = plot.roofline(est)
    pts, _ = svg.roofline_points(est)
    by_xy: dict[tuple[float, float], list[int]] = {}
    for j, p in enumerate(pts):
        by_xy.setdefault((p["ai"], p["rate"]), []).append(j)
    # matplotlib wraps each point of a collection whose ``urls`` are set in <a href=…>: that is the hook
    # that ties a drawn marker to its op, whether the figure has one collection per op or per colour
    labelled = 0
    for coll in fig.axes[0].collections:
        urls = []
        for x, y in coll.get_offsets():
            js = by_xy.get((float(x), float(y)))
            urls.append(f"#ironlaw-op-{js.pop(0)}" if js else None)
        if any(urls):
            coll.set_urls(urls)
            labelled += sum(u is not None for u in urls)
    if labelled != len(pts):
        return None
    total = sum(p["time_s"] for p in pts) or 1.0
    tips = {j: (f'{p["name"]} ({p["kind"]}, ×{p["count"]}): {fmt(p["ai"], "FLOP/B")}, '
                f'{fmt(p["rate"], "FLOP/s")} achieved, {fmt_time(p["time_s"])} '
                f'({100 * p["time_s"] / total:.1f}%), {p["bound"]}-bound') for j, p in enumerate(pts)}
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    return _inline(buf.getvalue(), tips, width_px)


def _inline(s: str, tips: dict[int, str], width_px: int) -> str:
    s = s[s.index("<svg"):]
    s = re.sub(r"<metadata>.*?</metadata>", "", s, flags=re.S)
    head_end = s.index(">")
    vb = re.search(r'viewBox="([^"]+)"', s[:head_end]).group(1)
    w, h = (float(v) for v in vb.split()[2:])
    s = (f'<svg id="roofline-svg" class="chart mpl-roofline" viewBox="{vb}" width="{width_px}" '
         f'height="{width_px * h / w:.0f}" role="img" aria-label="roofline: arithmetic intensity against '
         f'achieved FLOP/s, one point per op"' + s[head_end:])
    s = s.replace("xlink:href=", "href=")
    s = s.replace("<style type=\"text/css\">*{", "<style type=\"text/css\">svg.mpl-roofline *{")
    # the op links become groups with a tooltip; they are the only <a> elements in the figure
    s = re.sub(r'<a href="#ironlaw-op-(\d+)"[^>]*>',
               lambda m: f'<g class="op"><title>{escape(tips[int(m.group(1))], quote=True)}</title>', s)
    return s.replace("</a>", "</g>")
