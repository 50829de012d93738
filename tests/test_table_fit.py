"""``report.table.fits`` reads cut cells off rich's own rendering: a no-wrap cell shortened, a word folded, a
table too wide for any layout — and only those."""
import io
import random

from rich import box
from rich.console import Console
from rich.table import Table

from ironlaw.report.table import fit, fits


def con(width: int) -> Console:
    return Console(width=width, file=io.StringIO())


def no_wrap_table(lengths, pad_edge=True, style=box.HEAVY_HEAD):
    t = Table(box=style, pad_edge=pad_edge)
    for i, n in enumerate(lengths):
        t.add_column(f"c{i}", no_wrap=True)
    t.add_row(*(chr(ord("a") + i) * n for i, n in enumerate(lengths)))
    return t


def test_no_wrap_columns_fit_exactly_when_their_widths_add_up():
    """All no-wrap: rich gives each column its full width when they add up to the console's, else it cuts;
    300 random tables, each on either side of the edge, every box style the CLI uses."""
    rng = random.Random(35)
    for _ in range(300):
        lengths = [rng.randint(1, 30) for _ in range(rng.randint(1, 6))]
        style = rng.choice((box.HEAVY_HEAD, box.SIMPLE_HEAD, box.ASCII2))
        pad_edge = rng.random() < 0.5
        n = len(lengths)
        need = sum(max(x, 2) + 2 for x in lengths) + (n + 1) - (0 if pad_edge else 2)
        assert fits(no_wrap_table(lengths, pad_edge, style), con(need)), (lengths, style, pad_edge)
        assert not fits(no_wrap_table(lengths, pad_edge, style), con(need - 1)), (lengths, style, pad_edge)


def test_a_folded_word_is_a_cut_even_when_the_least_widths_would_fit():
    """rich shrinks the two widest wrapping columns together: a 30-letter word is folded at width 40 although 30
    + 3 letters (plus padding and borders) would fit; nothing is cut once the console is wide enough."""
    def t():
        x = Table()
        x.add_column("a")
        x.add_column("b")
        x.add_row("w" * 30, " ".join(["xyz"] * 8))
        return x
    assert not fits(t(), con(40))
    assert fits(t(), con(30 + 2 + 31 + 2 + 3))


def test_the_same_word_elsewhere_does_not_hide_a_cut():
    x = Table(box=box.SIMPLE_HEAD)
    x.add_column("name", no_wrap=True)
    x.add_column("other")
    x.add_row("abcdefghijkl", "abcdefghijkl")
    assert fits(x, con(40)) and not fits(x, con(24))


def test_markup_and_dividers_in_cells():
    x = Table()
    x.add_column("[bold]kind[/]", no_wrap=True)
    x.add_column("what")
    x.add_row("[bold]matmul[/bold]", "a | b")
    assert fits(x, con(40))
    assert not fits(x, con(12))


def test_fit_keeps_every_column_when_they_fit_and_drops_until_nothing_is_cut():
    t = no_wrap_table([20, 12, 12, 12])
    assert fit(t, con(200), ("c3", "c2")) == [] and len(t.columns) == 4
    assert fit(t, con(50), ("c3", "c2", "c1")) == ["c3", "c2"]
    out = Console(width=50, record=True, file=io.StringIO())
    out.print(t)
    text = out.export_text()
    assert "a" * 20 in text and "b" * 12 in text and "…" not in text


def _random_table(rng):
    """A random table: wrapping and no-wrap columns, padding, pad_edge, collapse_padding, show_edge, wide and
    marked-up words, odd line breaks and tabs, a Text cell, now and then no box or a divider in a cell."""
    from rich.text import Text
    words = ["a" * n for n in range(1, 25)] + ["—", "η·x", "全角", "x" * 40, "[bold]b[/bold]", "a|b", "-", "c\rd",
                                                "e\u2028" + "f" * 12, "g\th"]
    t = Table(box=rng.choice((box.HEAVY_HEAD, box.SIMPLE_HEAD, box.ASCII2, None)), pad_edge=rng.random() < 0.5,
              collapse_padding=rng.random() < 0.3, show_edge=rng.random() < 0.7,
              padding=(0, rng.randint(0, 2), 0, rng.randint(0, 2)))
    n = rng.randint(1, 5)
    for i in range(n):
        t.add_column(f"c{i}", no_wrap=rng.random() < 0.5)
    for _ in range(rng.randint(1, 3)):
        row = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 3))) for _ in range(n)]
        t.add_row(*(Text(c) if rng.random() < 0.1 else c for c in row))
    return t


def test_the_width_sums_answer_as_the_render_does(monkeypatch):
    """``fits`` skips the render where the columns' longest words, padding, dividers and edges exceed the width
    (``too_wide``: no fit) or their widest cells fit it (``roomy``: fits); on 400 random tables it answers as
    the render alone does, and each shortcut settles some of them."""
    from ironlaw.report import table as fitting
    rng = random.Random(36)
    settled = {"wide": 0, "roomy": 0}
    for _ in range(400):
        state, width = rng.getstate(), rng.randint(10, 90)
        quick = fits(_random_table(rng), con(width))
        rng.setstate(state)
        rng.randint(10, 90)
        t = _random_table(rng)
        with monkeypatch.context() as m:
            m.setattr(fitting, "too_wide", lambda *a: False)
            m.setattr(fitting, "roomy", lambda *a: False)
            rendered = fits(t, con(width))
        assert quick == rendered, width
        cells = fitting.cell_words(t, con(width))
        if fitting.columns_apart(t, cells):
            settled["roomy"] += fitting.roomy(t, con(width), cells)
            settled["wide"] += fitting.too_wide(t, con(width), cells)
    assert settled["wide"] > 30 and settled["roomy"] > 30, settled
