"""One progress bar helper for anything that may take more than about a second.

    from ironlaw.core import progress
    with progress.task("probing GEMM", total=len(shapes), quiet=fmt == "json") as step:
        for s in shapes:
            measure(s)
            step()                      # or step(k), or step(description="probing DRAM")

The bar (rich, on stderr) appears only once the task has run for ``DELAY_S`` — short tasks never
flicker; a task with no steps (``total=None``) gets a spinner with the elapsed time — and never when:
  * ``quiet`` is true (pass ``quiet=fmt == "json"`` from a command with ``--format json``),
  * ``--format json`` / ``--format=json`` is on the command line (a safety net for callers that forget),
  * stdout or stderr is not a terminal (pipes, files, CI, tests),
  * the environment sets ``IRONLAW_PROGRESS=0``; ``IRONLAW_PROGRESS=1`` forces it on (demos).
When quiet, ``step`` is a counter and nothing else: no thread, no import of rich.
"""
from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager

DELAY_S = 1.0


class Step:
    """Callable handed to the task body: ``step(advance=1, description=None)``."""

    def __init__(self, description: str, total: float | None, show: bool):
        self.description, self.total, self.done = description, total, 0.0
        self._show, self._bar, self._id = show, None, None
        self._lock, self._timer = threading.Lock(), None
        if show:                                  # start the bar after DELAY_S even if no step comes
            self._timer = threading.Timer(DELAY_S, self._start)
            self._timer.daemon = True
            self._timer.start()

    def __call__(self, advance: float = 1, description: str | None = None) -> None:
        self.done += advance
        if description is not None:
            self.description = description
        if not self._show:
            return
        with self._lock:
            if self._bar is not None:
                self._bar.update(self._id, completed=self.done, description=self.description)

    def _start(self) -> None:
        with self._lock:
            if self._bar is None and self._show:
                self._start_bar()

    def _start_bar(self) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)
        cols = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn()]
        cols += [MofNCompleteColumn(), TimeRemainingColumn()] if self.total else [TimeElapsedColumn()]
        self._bar = Progress(*cols, console=Console(stderr=True), transient=True)
        self._bar.start()
        self._id = self._bar.add_task(self.description, total=self.total, completed=self.done)

    def _stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self._show = False
            if self._bar is not None:
                self._bar.stop()
                self._bar = None


def enabled(quiet: bool = False) -> bool:
    """Whether a bar would be shown (see the module docstring for the rules)."""
    env = os.environ.get("IRONLAW_PROGRESS", "").strip()
    if quiet or env == "0":
        return False
    if env == "1":
        return True
    argv = sys.argv[1:]
    if "--format=json" in argv or any(a == "--format" and b == "json" for a, b in zip(argv, argv[1:])):
        return False
    return _isatty(sys.stdout) and _isatty(sys.stderr)


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):      # replaced or closed streams
        return False


@contextmanager
def task(description: str, total: float | None = None, quiet: bool = False):
    """Context manager yielding a ``Step``; ``total=None`` shows a spinner with elapsed time."""
    step = Step(description, total, enabled(quiet))
    try:
        yield step
    finally:
        step._stop()
