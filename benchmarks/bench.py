"""Helpers for benchmark scripts: read a published table, repeat, summarize (median, spread), score signed errors
(median / p90), print columns and measured vs goal."""
from __future__ import annotations

import csv
import statistics
import time
from dataclasses import dataclass


def csv_rows(path) -> list[dict]:
    """The rows of the CSV file ``path`` whose ``#`` lines are its header (where each number comes from), as
    strings."""
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def repeat(fn, n: int = 7, warmup: int = 1, clock=time.perf_counter) -> list[float]:
    """``n`` timings of ``fn`` after ``warmup`` calls; ``clock``: wall time, or ``time.process_time`` (this
    process's CPU seconds, which a neighbour's load on a shared machine does not lengthen)."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        t0 = clock()
        fn()
        out.append(clock() - t0)
    return out


def summary(xs: list[float]) -> tuple[float, float, float, float]:
    """median, min, max, coefficient of variation."""
    med = statistics.median(xs)
    cv = statistics.pstdev(xs) / statistics.mean(xs) if len(xs) > 1 and statistics.mean(xs) else 0.0
    return med, min(xs), max(xs), cv


def p90(xs: list[float]) -> float:
    """The 90th percentile of ``xs`` by rank, not interpolated: the value at round(0.9 · (n − 1)) of the sorted
    list (Python's round, half to even)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]


ERRORS_HEAD = f"{'n':>3} {'median |err|':>12} {'p90 |err|':>10} {'signed median':>14}"


@dataclass(frozen=True)
class Errors:
    """Signed relative errors (predicted / published − 1) scored: how many, median and p90 (``p90``) of |error|,
    signed median."""
    n: int
    median_abs: float
    p90_abs: float
    signed_median: float

    def cells(self) -> str:
        """The score in ``ERRORS_HEAD``'s columns, in percent."""
        return (f"{self.n:>3} {100 * self.median_abs:>11.1f}% {100 * self.p90_abs:>9.1f}% "
                f"{100 * self.signed_median:>+13.1f}%")


def errors(errs: list[float]) -> Errors:
    """``errs`` (signed, one or more) scored."""
    mag = [abs(e) for e in errs]
    return Errors(len(errs), statistics.median(mag), p90(mag), statistics.median(errs))


def keyed(head: str, spec: str, key: str, fmt: str = "") -> tuple:
    """A column of ``header`` / ``line``: row[key] in ``fmt`` (``format``'s, e.g. ".0f"), then aligned by ``spec``
    (e.g. ">9")."""
    return head, spec, lambda r: format(r[key], fmt)


def percent(head: str, key: str) -> tuple:
    """A column of a signed fraction (row[key]) in percent: "+12.3%", 7 wide."""
    return head, ">7", lambda r: f"{100 * r[key]:+6.1f}%"


def header(columns: list[tuple]) -> str:
    """The heads of ``columns`` ((head, spec, the row's cell: row -> text)), each aligned by its spec."""
    return " ".join(format(head, spec) for head, spec, _ in columns)


def line(columns: list[tuple], row: dict) -> str:
    """``row``'s cells in ``columns``, under ``header``'s heads."""
    return " ".join(format(cell(row), spec) for _, spec, cell in columns)


def print_columns(columns: list[tuple], rows: list[dict]) -> None:
    """``header`` of ``columns``, then each row's ``line``."""
    print(header(columns))
    for r in rows:
        print(line(columns, r))


def print_table(rows: list[tuple[str, str, str, bool]], title: str) -> int:
    """rows: (what, measured, goal, ok). Returns the number of misses."""
    w = max(len(r[0]) for r in rows)
    print(f"\n{title}\n" + "-" * (w + 50))
    print(f"{'what':<{w}}  {'measured':<28} {'goal':<14} ok")
    for what, meas, goal, ok in rows:
        print(f"{what:<{w}}  {meas:<28} {goal:<14} {'yes' if ok else 'NO'}")
    return sum(not r[3] for r in rows)
