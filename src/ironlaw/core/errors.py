"""One exception type for every user-facing failure.

The CLI prints ``IronlawError`` as a single line on stderr and exits 2; anything else is a bug
(exit 1). Messages name the input, the problem and, where possible, the fix.
"""
from __future__ import annotations

from typing import Iterable


class IronlawError(Exception):
    """A problem with the user's input (names, files, sizes, dtypes, capacity)."""


class OneConfiguration(IronlawError, ValueError):
    """A per-op view (rows, bottleneck, document) asked of an estimate that holds many configurations (batch or
    seq given as arrays): an IronlawError and, as before, a ValueError."""


class UnknownOption(IronlawError, TypeError):
    """A keyword the library function does not take: an IronlawError (one clear line, as every bad input) and,
    as Python's own for an unexpected keyword, a TypeError."""


def suggest(name: str, choices: Iterable[str], n: int = 3) -> str:
    """' (did you mean: a, b?)' for the nearest names, or '' when nothing is close."""
    import difflib

    choices = list(choices)
    name = str(name)
    close = difflib.get_close_matches(name.lower(), choices, n=n, cutoff=0.5)
    if not close:
        close = [c for c in choices if name.lower() in c or c in name.lower()][:n]
    return f" (did you mean: {', '.join(close)}?)" if close else ""


def unknown(what: str, name: str, choices: Iterable[str], listed: Iterable[str] | None = None,
            listed_as: str = "known") -> IronlawError:
    """"unknown WHAT 'name'" with the nearest of ``choices``; when none is near, ``listed`` (every one of them, the
    caller's pick, e.g. the names without their aliases) as "; LISTED_AS: …", else ``choices`` cut at 12 names and
    how many more."""
    choices = sorted(choices)
    name = str(name)
    hint = suggest(name, choices)
    if not hint and listed is not None:
        hint = f"; {listed_as}: {', '.join(sorted(listed))}"
    elif not hint:
        shown = ", ".join(choices[:12]) + (f", and {len(choices) - 12} more" if len(choices) > 12 else "")
        hint = f"; {listed_as}: {shown}"
    return IronlawError(f"unknown {what} '{name}'{hint}")
