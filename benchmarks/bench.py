"""Helpers for benchmark scripts: repeat, summarize (median, spread), print measured vs goal."""
from __future__ import annotations

import statistics
import time


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


def print_table(rows: list[tuple[str, str, str, bool]], title: str) -> int:
    """rows: (what, measured, goal, ok). Returns the number of misses."""
    w = max(len(r[0]) for r in rows)
    print(f"\n{title}\n" + "-" * (w + 50))
    print(f"{'what':<{w}}  {'measured':<28} {'goal':<14} ok")
    for what, meas, goal, ok in rows:
        print(f"{what:<{w}}  {meas:<28} {goal:<14} {'yes' if ok else 'NO'}")
    return sum(not r[3] for r in rows)
