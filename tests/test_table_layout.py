"""``report.table_layout`` gives the column widths rich prints, from rich's public API alone."""
import io
import itertools

import pytest
from rich import box
from rich.console import Console
from rich.table import Table

from ironlaw.report.table_layout import layout_widths


def printed_widths(table, width: int) -> list[int]:
    """The column widths (padding included) in the top border rich prints with an ASCII2 box (a "+" over each column divider)."""
    out = Console(width=width, record=True, file=io.StringIO())
    out.print(table)
    top = out.export_text().splitlines()[0]
    return [len(part) for part in top.split("+")[1:-1]]


def table(no_wrap: tuple[bool, ...], pad_edge: bool) -> Table:
    t = Table(box=box.ASCII2, pad_edge=pad_edge)
    for i, nw in enumerate(no_wrap):
        t.add_column(f"column {i}", no_wrap=nw)
    t.add_row(*(f"{'word ' * (3 + 4 * i)}{i}" for i in range(len(no_wrap))))
    t.add_row(*(f"{10 ** (i + 3):,}" for i in range(len(no_wrap))))
    return t


@pytest.mark.parametrize("no_wrap", list(itertools.product((False, True), repeat=3)))
@pytest.mark.parametrize("pad_edge", (True, False))
def test_widths_are_the_ones_rich_prints(no_wrap, pad_edge):
    for width in (30, 45, 60, 90, 200):            # roomy, collapsing the wrapping columns, shrinking them all
        t = table(no_wrap, pad_edge)
        assert layout_widths(t, Console(width=width, file=io.StringIO())) == printed_widths(t, width), width


def test_an_expanding_table_is_refused():
    with pytest.raises(ValueError):
        layout_widths(Table(expand=True), Console(width=80, file=io.StringIO()))
