"""``ironlaw.plot``'s matplotlib roofline as inline SVG for the HTML report, with a tooltip per op.

matplotlib's SVG is made fit to live inside an HTML page: no XML prolog, DOCTYPE, metadata or
namespace declarations (they hold the only URLs it writes; inline SVG needs none), ``xlink:href``
as SVG 2 ``href`` to ids in the same picture, and its global ``*{…}`` style scoped to the picture
(``svg.suffix_ids`` keeps ids apart when several pictures share a page).
Each op point becomes ``<g class="op">`` with a ``<title>`` (the hover text); when the figure does not
have one collection per op (so that points cannot be labelled), ``roofline`` returns None. Needs matplotlib:
``ImportError`` when it is missing (the report then draws ``svg.roofline``).
"""
from __future__ import annotations

import io
import re
from html import escape

from ..units import fmt, fmt_time
from . import svg


def roofline(est, width_px: int = 860) -> str | None:
    """The figure as inline SVG, or None when not every plotted op could be given its tooltip."""
    import matplotlib  # noqa: F401  (ImportError here when it is not installed)
    from .. import plot

    fig = plot.roofline(est)
    pts, _ = svg.roofline_points(est)
    by_xy: dict[tuple[float, float], list[dict]] = {}
    for p in pts:
        by_xy.setdefault((p["ai"], p["rate"]), []).append(p)
    total = sum(p["time_s"] for p in pts) or 1.0
    tips: dict[str, str] = {}
    for k, coll in enumerate(fig.axes[0].collections):
        off = coll.get_offsets()
        if len(off) != 1:
            continue
        key = (float(off[0][0]), float(off[0][1]))
        if by_xy.get(key):
            p = by_xy[key].pop(0)
            gid = f"ironlaw-op-{k}"
            tips[gid] = (f'{p["name"]} ({p["kind"]}, ×{p["count"]}): {fmt(p["ai"], "FLOP/B")}, '
                         f'{fmt(p["rate"], "FLOP/s")} achieved, {fmt_time(p["time_s"])} '
                         f'({100 * p["time_s"] / total:.1f}%), {p["bound"]}-bound')
            coll.set_gid(gid)
    if by_xy and any(by_xy.values()):
        return None                      # the figure no longer has one collection per op: cannot label them
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    return _inline(buf.getvalue(), tips, width_px)


def _inline(s: str, tips: dict[str, str], width_px: int) -> str:
    s = s[s.index("<svg"):]
    s = re.sub(r"<metadata>.*?</metadata>", "", s, flags=re.S)
    head_end = s.index(">")
    head = s[:head_end]
    vb = re.search(r'viewBox="([^"]+)"', head).group(1)
    w, h = (float(v) for v in vb.split()[2:])
    s = (f'<svg id="roofline-svg" class="chart mpl-roofline" viewBox="{vb}" width="{width_px}" '
         f'height="{width_px * h / w:.0f}" role="img" aria-label="roofline: arithmetic intensity against '
         f'achieved FLOP/s, one point per op"' + s[head_end:])
    s = s.replace("xlink:href=", "href=")
    s = s.replace("<style type=\"text/css\">*{", "<style type=\"text/css\">svg.mpl-roofline *{")
    for gid, tip in tips.items():
        s = s.replace(f'<g id="{gid}">', f'<g id="{gid}" class="op"><title>{escape(tip, quote=True)}</title>', 1)
    return s
