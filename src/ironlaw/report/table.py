"""Tables that fit the terminal: drop the least important columns until the narrowest layout fits.

A table whose columns cannot all fit the console's width (80 columns in a pipe, ``COLUMNS`` where set) loses
columns in the order the caller names, least important first, and prints one line naming what it left out;
on a wider terminal every column shows. Nothing is cut mid-word: text columns wrap at spaces, number columns
never wrap.
"""
from __future__ import annotations


def min_width(table, console) -> int:
    """The narrowest width ``table`` can take without cutting a word or a no-wrap cell."""
    from rich.measure import Measurement
    return Measurement.get(console, console.options.update_width(10_000), table).minimum   # unclamped


def fit(table, console, drop: tuple[str, ...]) -> list[str]:
    """Remove columns named in ``drop`` (in that order) until ``table`` fits ``console.width``; return the
    headers removed."""
    gone: list[str] = []
    for name in drop:
        if min_width(table, console) <= console.width:
            break
        for i, col in enumerate(table.columns):
            if str(col.header) == name:
                del table.columns[i]
                gone.append(name)
                break
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
