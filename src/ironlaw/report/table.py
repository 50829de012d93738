"""Tables that fit the terminal: drop the least important columns until the narrowest layout fits.

A table whose columns cannot all fit the console's width (80 columns in a pipe, ``COLUMNS`` where set) loses
columns in the order the caller names, least important first, and prints one line naming what it left out;
on a wider terminal every column shows. Nothing is cut mid-word: text columns wrap at spaces, number columns
never wrap.
"""
from __future__ import annotations

from .table_layout import border_width, layout_widths, measure_column


def fits(table, console) -> bool:
    """Whether rich lays ``table`` out in the console's width with every no-wrap column whole and every other
    column at least as wide as its longest word (rich's own column widths, ``layout_widths``, so nothing it prints
    is cut)."""
    wide = console.options.update_width(10_000)
    for i, (col, w) in enumerate(zip(table.columns, layout_widths(table, console))):
        m = measure_column(table, console, wide, i)
        if w < (m.maximum if col.no_wrap else m.minimum):
            return False
    return True


def too_wide(table, console, memo: dict) -> bool:
    """True when the columns' least widths (``fits``' rule) add up to more than the console holds: rich's widths
    never add up to more, so such a table cannot fit and its layout need not be computed. ``memo`` keeps each
    column's least width across calls (a column's measure does not move with its index when the table pads its
    edges, rich's default)."""
    wide = console.options.update_width(10_000)
    keep = table.pad_edge and not table.collapse_padding
    total = 0
    for i, col in enumerate(table.columns):
        if not keep or id(col) not in memo:
            m = measure_column(table, console, wide, i)
            memo[id(col)] = m.maximum if col.no_wrap else m.minimum
        total += memo[id(col)]
    return total > console.options.max_width - border_width(table)


def fit(table, console, drop: tuple[str, ...]) -> list[str]:
    """Remove columns named in ``drop`` (in that order) until ``table`` fits ``console.width``; return the
    headers removed."""
    from rich.table import Table
    gone: list[str] = []
    memo: dict = {}
    for name in drop:
        if not too_wide(table, console, memo) and fits(table, console):
            break
        at = next((i for i, c in enumerate(table.columns) if str(c.header) == name), None)
        if at is not None:                          # rich numbers the columns a table is made of (edge padding)
            table.columns = Table(*(table.columns[:at] + table.columns[at + 1:])).columns
            gone.append(name)
    return gone


def hidden_note(gone: list[str]) -> str | None:
    """"(not shown at this width: data, compute — a wider terminal or --format json shows them)", or None."""
    if not gone:
        return None
    return f"(not shown at this width: {', '.join(gone)} — a wider terminal or --format json shows them)"


def print_fitted(table, console, drop: tuple[str, ...]) -> None:
    """Fit ``table`` to the console, print it, and name the columns left out."""
    note = hidden_note(fit(table, console, drop))
    console.print(table)
    if note:
        console.print(note, markup=False)
