"""What every command shares: the typer apps, output formats, JSON and line output, the console, the device."""
from __future__ import annotations

import json
import sys


import typer

from ..core.errors import IronlawError

# help in click's plain layout (rich_markup_mode=None): it wraps at the terminal's width and never cuts an
# option's name, where rich's panels cut "--no-sequence-parallel" to fit 80 columns
def _whole_words() -> None:
    """Help lines break at spaces only: click wraps help with textwrap, which also breaks inside a word at a
    hyphen ('--kv-' / 'fraction', 'usd-per-' / 'million-tokens'), and an option's name or value so printed no
    longer pastes."""
    import click._textwrap as wrap

    class WholeWords(wrap.TextWrapper):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, "break_on_hyphens": False})
    if wrap.TextWrapper.__name__ != "WholeWords":
        wrap.TextWrapper = WholeWords


_whole_words()
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="ironlaw: how long an ML workload takes on a piece of hardware, why, and what would help.\n\n"
                       "T ≈ D_vol/BW + O/(R_peak·η) + L_lat, per operator.")
hardware_app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                           help="The hardware catalog.")
workloads_app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                            help="Built-in workloads and spec prefixes.")


def _version(value: bool) -> None:
    if value:
        from .._version import __version__
        print(f"ironlaw {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", is_eager=True, callback=_version,
                                       help="Print ironlaw's version and exit.")) -> None:
    """ironlaw: how long an ML workload takes on a piece of hardware, why, and what would help."""


app.add_typer(hardware_app, name="hardware")
app.add_typer(workloads_app, name="workloads")

FORMATS = ("text", "json", "md")


def check_format(fmt: str, allowed=FORMATS) -> str:
    """``fmt`` if a command prints it; HTML is a file, and ``--format html`` says which option writes it."""
    if fmt not in allowed:
        html = ("; an HTML page is a file: --html FILE.html on analyze, serve and search, or ironlaw report"
                if fmt.lower() in ("html", "htm") else "")
        raise IronlawError(f"--format must be one of {', '.join(allowed)}, got '{fmt}'{html}")
    return fmt


def check_top(top: int) -> int:
    """``--top N``: rows to show, at least one (a negative N would slice rows off the end)."""
    if top < 1:
        raise IronlawError(f"--top must be a positive whole number, got {top}")
    return top


def emit_json(doc) -> None:
    sys.stdout.write(json.dumps(doc, indent=2, allow_nan=False, default=_json_default) + "\n")


def _json_default(o):
    try:
        import numpy as np
        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, (np.floating, np.integer, np.bool_)):
            return o.item()
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


def say_written(fmt: str, plot=None, html=None) -> None:
    """"wrote FILE (SIZE, --plot)" for each file a command's ``--plot`` / ``--html`` wrote, after its result, as
    report and calibrate say theirs: on stdout for text and md, on stderr for json and csv (stdout holds the
    document)."""
    import os
    from ..core.units import fmt as f
    for flag, path in (("--plot", plot), ("--html", html)):
        if path:
            line = f"wrote {path} ({f(os.path.getsize(path), 'B')}, {flag})"
            if fmt in ("json", "csv"):
                print(line, file=sys.stderr)
            else:
                print(("\n" if fmt == "md" else "") + line)


def emit_lines(lines: list[str], fmt: str) -> None:
    """Print summary lines: Markdown paragraphs for ``md``, rich console lines otherwise, markup off (a line holding
    ``[calibration]`` or any ``[...]`` prints as written)."""
    if fmt == "md":
        print("\n\n".join(lines))
    else:
        c = console()
        for line in lines:
            c.print(line, markup=False)


def console():
    """rich's console, emoji codes off: a name holding ":name:" prints as typed, and rich's table of emoji (~6% of
    the instructions of a cold `analyze`) is never loaded."""
    from rich.console import Console
    return Console(highlight=False, soft_wrap=False, emoji=False)


class MarkdownConsole:
    """``console()``'s stand-in for ``--format md`` where a command prints lines and rich Tables: each table a
    Markdown pipe table (``report.table.markdown``), each line a paragraph, its markup resolved; ``emit`` prints
    them."""

    def __init__(self):
        self.parts: list[str] = []

    def print(self, obj, *, markup: bool = True, **_style) -> None:
        from rich.table import Table
        if isinstance(obj, Table):
            from ..report.table import markdown
            self.parts.append(markdown(obj))
        else:
            from rich.console import Console
            self.parts.append(Console(highlight=False, emoji=False).render_str(str(obj)).plain if markup else str(obj))

    def emit(self) -> None:
        print("\n\n".join(self.parts))


def console_for(fmt: str):
    """The console a command's text prints on: ``MarkdownConsole`` for ``md`` (call its ``emit``), else rich's."""
    return MarkdownConsole() if fmt == "md" else console()
