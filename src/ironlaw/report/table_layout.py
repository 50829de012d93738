"""The column widths rich gives a table, from rich's public API only.

rich (15) lays a table out in three steps, reproduced here on what ``rich.table.Table``, ``rich.table.Column``,
``rich.measure.Measurement`` and ``rich.padding.Padding`` show publicly: each column's (minimum, maximum) width
is the widest of its cells' measurements with the cell padding (header and footer cells included when shown);
columns start at their maximum; when they overflow the width, the widest wrapping columns shrink first, down to
the next widest, then all columns evenly; each column is then measured again at its width. Tables that expand
or have a minimum width are not laid out here.
"""
from __future__ import annotations


def border_width(table) -> int:
    """Characters the box takes beside the cells: the outer edges when shown, one between columns."""
    if not table.box:
        return 0
    return (2 if table.show_edge else 0) + len(table.columns) - 1


def cell_padding(table, i: int) -> tuple[int, int]:
    """(left, right) padding of the cells of column ``i``."""
    _, right, _, left = table.padding
    if table.collapse_padding and i > 0:
        left = max(0, left - right)
    if not table.pad_edge:
        left = 0 if i == 0 else left
        right = 0 if i == len(table.columns) - 1 else right
    return left, right


def padding_width(table, i: int) -> int:
    """The padding rich adds to a fixed or clamped width of column ``i``."""
    _, right, _, left = table.padding
    if table.collapse_padding:
        left = 0
    if not table.pad_edge:
        left = 0 if i == 0 else left
        right = 0 if i == len(table.columns) - 1 else right
    return left + right


def measure_column(table, console, options, i: int):
    """The ``Measurement`` (least and greatest width, padding included) of column ``i`` within ``options``."""
    from rich.measure import Measurement
    from rich.padding import Padding
    col, limit = table.columns[i], options.max_width
    if limit < 1:
        return Measurement(0, 0)
    pad = padding_width(table, i)
    if col.width is not None:
        return Measurement(col.width + pad, col.width + pad).with_maximum(limit)
    cells = ([col.header] if table.show_header else []) + list(col.cells) + ([col.footer] if table.show_footer else [])
    left, right = cell_padding(table, i)
    if any(table.padding):
        cells = [Padding(c, (0, right, 0, left)) for c in cells]
    got = [Measurement.get(console, options, c) for c in cells]
    m = Measurement(max((g.minimum for g in got), default=1), max((g.maximum for g in got), default=limit))
    return m.with_maximum(limit).clamp(None if col.min_width is None else col.min_width + pad,
                                       None if col.max_width is None else col.max_width + pad)


def layout_widths(table, console) -> list[int]:
    """Each column's width (padding included, borders not) when ``table`` prints on ``console``."""
    if table.expand or table.min_width is not None:
        raise ValueError("layout_widths lays out tables that neither expand nor have a minimum width")
    options = console.options
    options = options.update_width(options.max_width - border_width(table))
    n, limit = len(table.columns), options.max_width
    widths = [measure_column(table, console, options, i).maximum or 1 for i in range(n)]
    if sum(widths) <= limit:
        return widths
    widths = collapse(widths, [c.width is None and not c.no_wrap for c in table.columns], limit)
    if sum(widths) > limit:                                       # last resort: every column evenly
        widths = reduce(sum(widths) - limit, [1] * n, widths, widths)
    return [measure_column(table, console, options.update_width(w), i).maximum or 0 for i, w in enumerate(widths)]


def collapse(widths: list[int], wrapable: list[bool], limit: int) -> list[int]:
    """Shrink the widest wrapping columns to the next widest, and so on, until the widths fit ``limit``."""
    excess = sum(widths) - limit
    while any(wrapable) and sum(widths) and excess > 0:
        widest = max(w for w, ok in zip(widths, wrapable) if ok)
        second = max(w if ok and w != widest else 0 for w, ok in zip(widths, wrapable))
        ratios = [1 if (w == widest and ok) else 0 for w, ok in zip(widths, wrapable)]
        if not any(ratios) or widest == second:
            break
        widths = reduce(excess, ratios, [min(excess, widest - second)] * len(widths), widths)
        excess = sum(widths) - limit
    return widths


def reduce(total: int, ratios: list[int], maximums: list[int], values: list[int]) -> list[int]:
    """``values`` less ``total`` shared out by ``ratios``, each share at most its ``maximums`` entry."""
    ratios = [r if m else 0 for r, m in zip(ratios, maximums)]
    left, weight, out = total, sum(ratios), []
    for r, m, v in zip(ratios, maximums, values):
        if r and weight > 0:
            d = min(m, round(r * left / weight))
            out.append(v - d)
            left, weight = left - d, weight - r
        else:
            out.append(v)
    return out
