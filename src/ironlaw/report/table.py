"""Tables that fit the terminal: drop the least important columns until the table prints with no cell cut.

A table whose columns cannot all fit the console's width (80 columns in a pipe, ``COLUMNS`` where set) loses
columns in the order the caller names, least important first, and prints one line naming what it left out;
on a wider terminal every column shows. Nothing is cut mid-word: text columns wrap at spaces, number columns
never wrap.

Whether a table fits is read off rich's own rendering (public API only): the table is rendered once
(``Console.render_lines``, nothing printed) at the console's width, with an ASCII box in place of its own
(every box is one character per edge and divider, so the columns keep their widths), each line split at the
dividers into its columns, and each column's words compared with its cells'. A word rich folds across lines,
a no-wrap cell it shortens to "…" or a line it crops at the edge leaves a word missing.

Before rendering, one sum settles the tables that cannot fit (``too_wide``): on the boxed copy every column is a
fixed-width strip between dividers on every line, so a column shows its longest word whole only if the strip is
at least that word's cells wide plus its padding, and the strips, the dividers and the edges share the console's
width; when those already exceed it, rich must cut a word, and the render is skipped. The other way round
(``roomy``): where every column at its widest cell (plus padding), the dividers and the edges fit the width,
rich gives each column that width and cuts nothing, and the render is skipped too.
"""
from __future__ import annotations

from collections import Counter

DIVIDER = "|"              # rich.box.ASCII's vertical edges and dividers
RULE = set("+-=|")         # the characters of its horizontal rules
# a tab rich expands, and the line breaks str.splitlines (rich's measure of a text) knows but rich's render,
# which breaks lines at "\n" only, does not
UNEVEN = "\t\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def fits(table, console) -> bool:
    """Whether rich prints ``table`` in the console's width with every cell whole: each no-wrap cell on one line
    and no word of a wrapping cell folded."""
    cells = cell_words(table, console)
    if columns_apart(table, cells):
        if roomy(table, console, cells):
            return True
        if too_wide(table, console, cells):
            return False
    printed = _printed_words(table, console, cells)
    if printed is None:                              # no box or a divider inside a cell: the whole table at once
        printed, cells = [_words("\n".join(_lines(table, console)))], [sum(cells, Counter())]
    return all(not (want - got) for want, got in zip(cells, printed))


def _lines(table, console) -> list[str]:
    """``table`` as rich renders it at ``console``'s width, line by line in plain text (nothing printed)."""
    return ["".join(seg.text for seg in line) for line in console.render_lines(table, console.options, pad=False)]


def columns_apart(table, cells: list[Counter]) -> bool:
    """Whether the render can tell the columns apart (a box and no divider inside a cell), as in
    ``_printed_words``."""
    return table.box is not None and not any(DIVIDER in w for c in cells for w in c)


def roomy(table, console, cells: list[Counter]) -> bool:
    """Whether every column fits at its widest cell: the cells' longest lines (in terminal cells, as rich
    measures a text's maximum), each with its padding, rich's width of at least 1 per column, the dividers and
    the edges within the console's width. Then rich (Table._calculate_column_widths) gives each column its
    maximum and neither wraps nor cuts a cell. Only for text cells (str or rich Text, none of ``UNEVEN`` in
    them) in a table and columns of no set width and not expanded, with no word that reads as a rule (a row of
    such words is skipped as one); anything else is left to the render."""
    from rich.cells import cell_len
    from rich.text import Text
    if table.width is not None or table.expand or table.min_width is not None or \
            any(set(w) <= RULE for c in cells for w in c):
        return False
    n, widths = len(table.columns), []
    for i, col in enumerate(table.columns):
        if (col.width, col.min_width, col.max_width) != (None, None, None):
            return False
        shown = ([col.header] if table.show_header else []) + list(col.cells) + \
            ([col.footer] if table.show_footer else [])
        if not shown or not all(isinstance(c, (str, Text)) for c in shown):
            return False
        texts = [_plain(c, console) for c in shown]
        if any(ch in t for t in texts for ch in UNEVEN):
            return False
        widest = max((cell_len(line) for t in texts for line in t.splitlines()), default=0)
        widths.append(max(widest + _padding(table, i, n), 1))
    return sum(widths) + _rules(table) <= console.width


def too_wide(table, console, cells: list[Counter]) -> bool:
    """Whether the columns' longest words (in terminal cells, as rich measures them), each with its cells'
    left and right padding, the dividers between the columns and the table's edges exceed the console's width:
    then no layout shows every word whole. Only where the columns can be told apart (a box and no divider inside
    a cell: ``columns_apart``)."""
    from rich.cells import cell_len
    n = len(cells)
    need = sum(max(map(cell_len, c), default=0) + _padding(table, i, n) for i, c in enumerate(cells))
    return need + _rules(table) > console.width


def _rules(table) -> int:
    """The cells a boxed table's vertical rules take on a line: one between each two columns, one per edge where
    shown (rich's Table._extra_width)."""
    return len(table.columns) - 1 + (2 if table.show_edge else 0)


def _padding(table, i: int, n: int) -> int:
    """The spaces rich puts left and right of column ``i``'s cells (rich's Table._get_cells, from the table's
    public padding, collapse_padding and pad_edge)."""
    _, right, _, left = table.padding
    if table.collapse_padding and i > 0:
        left = max(0, left - right)
    if not table.pad_edge:
        left = 0 if i == 0 else left
        right = 0 if i == n - 1 else right
    return left + right


def _printed_words(table, console, cells: list[Counter]) -> list[Counter] | None:
    """The words each column shows when ``table`` prints (None when its columns cannot be told apart)."""
    import copy
    from rich import box
    if not columns_apart(table, cells):
        return None
    probe = copy.copy(table)
    probe.box, probe.title, probe.caption = box.ASCII, None, None
    n = len(table.columns)
    words = [Counter() for _ in range(n)]
    for line in _lines(probe, console):
        if not line.strip() or set(line.strip()) <= RULE:
            continue
        parts = line.split(DIVIDER)
        parts = parts[1:-1] if table.show_edge else parts
        if len(parts) != n:                        # a line cropped at the console's edge lost a divider
            return [Counter() for _ in range(n)]
        for i, part in enumerate(parts):
            words[i].update(part.split())
    return words


def cell_words(table, console) -> list[Counter]:
    """The words of each column's cells, header and footer included where shown (markup resolved)."""
    out = []
    for col in table.columns:
        cells = ([col.header] if table.show_header else []) + list(col.cells) + \
            ([col.footer] if table.show_footer else [])
        out.append(sum((_words(_plain(c, console)) for c in cells), Counter()))
    return out


def _plain(cell, console) -> str:
    """A cell's text as rich prints it: markup resolved for a string, ``plain`` for rich Text."""
    if isinstance(cell, str):
        return console.render_str(cell).plain if ("[" in cell or ":" in cell) else cell
    return getattr(cell, "plain", "")


def _words(text: str) -> Counter:
    return Counter(text.split())


def fit(table, console, drop: tuple[str, ...]) -> list[str]:
    """Remove columns named in ``drop`` (in that order) until ``table`` fits ``console.width``; return the
    headers removed."""
    from rich.table import Table
    gone: list[str] = []
    for name in drop:
        if fits(table, console):
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


def markdown(table) -> str:
    """``table`` (a rich Table) as a Markdown pipe table, its title as a bold line above: the ``--format md`` of a
    command whose text output is a table. Markup is resolved and pipes escaped."""
    from rich.console import Console
    con = Console(highlight=False, emoji=False)

    def cell(c) -> str:
        return " ".join(_plain(c, con).split()).replace("|", "\\|") if c is not None else ""

    cols = table.columns
    rows = [[cell(c.header) for c in cols], ["---:" if c.justify == "right" else "---" for c in cols]]
    rows += [[cell(x) for x in r] for r in zip(*(list(c.cells) for c in cols))]
    head = [f"**{cell(table.title)}**", ""] if table.title else []
    return "\n".join(head + ["| " + " | ".join(r) + " |" for r in rows])
