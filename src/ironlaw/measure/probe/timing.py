"""Timing: repeats, median and spread, re-measuring what is too noisy.

``measure(fn)`` runs ``fn`` in an inner loop long enough to swamp the timer, repeats that, and
returns the median seconds per call and the spread (a robust coefficient of variation, see ``spread``).
``stable(fn)`` re-measures while the spread is above the limit and keeps the calmest attempt,
flagging it ``ok=False`` when none was calm enough; the probe then refuses to save.
On CUDA the inner loop is timed with CUDA events (device time, after a synchronize) and, unless the
caller measures the host's own cost (dispatch, launch), replayed from a CUDA graph: a kernel shorter than
the host's launch time (an H200's 12 MiB L2 copy takes ~3 µs, a launch from Python ~10 µs) otherwise times
the host, not the device.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable


@dataclass
class Stat:
    time_s: float        # median seconds per call
    cv: float            # robust coefficient of variation over repeats (see ``spread``)
    repeats: int
    tries: int = 1
    ok: bool = True


@dataclass
class Budget:
    """How hard to measure: seconds per repeat, repeats, spread limit, extra tries."""
    repeat_s: float = 0.03
    repeats: int = 5
    max_cv: float = 0.15
    retries: int = 2


GRAPH_MAX_CALLS = 1000          # calls captured in one CUDA graph (a replay of 1000 × 2 µs kernels: 2 ms)


def _timer(device: str) -> Callable[[Callable[[], object], int], float]:
    if device == "cuda":
        import torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

        def run(fn, inner: int) -> float:
            torch.cuda.synchronize()
            start.record()
            for _ in range(inner):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) * 1e-3
        return run

    def run(fn, inner: int) -> float:
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        return time.perf_counter() - t0
    return run


def _captured(fn: Callable[[], object], calls: int) -> Callable[[], object]:
    """``calls`` back-to-back calls of ``fn`` captured in one CUDA graph; returns its replay."""
    import torch
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):                  # warm-up off the capture stream (library handles, workspaces)
        fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    return graph.replay


def measure(fn: Callable[[], object], budget: Budget, device: str = "cpu", graph: bool = True) -> Stat:
    """Median seconds per call of ``fn`` over ``budget.repeats`` repeats; ``graph`` (CUDA only): time the
    calls replayed from a CUDA graph (device time without the host's launch cost)."""
    run = _timer(device)
    fn()                                   # warm-up: allocation, code paths, caches
    inner, t = 1, run(fn, 1)               # size the inner loop on a tenth of a repeat (one call can lie)
    while t < budget.repeat_s / 10 and inner < 100_000:
        inner *= 4
        t = run(fn, inner)
    inner = max(1, min(100_000, int(inner * budget.repeat_s / max(t, 1e-9))))
    per_call = 1
    if device == "cuda" and graph:
        per_call = min(inner, GRAPH_MAX_CALLS)
        fn, inner = _captured(fn, per_call), max(1, round(inner / per_call))
    samples = [run(fn, inner) / (inner * per_call) for _ in range(budget.repeats)]
    med = statistics.median(samples)
    return Stat(med, spread(samples), budget.repeats)


def spread(samples: list[float]) -> float:
    """Robust coefficient of variation: 1.4826 · median |x − median| / median (= stdev/mean for normal
    noise; one repeat hit by a descheduled thread does not decide it, as it does not move the median)."""
    med = statistics.median(samples)
    if med <= 0:
        return 0.0
    return 1.4826 * statistics.median(abs(x - med) for x in samples) / med


def stable(fn: Callable[[], object], budget: Budget, device: str = "cpu", graph: bool = True) -> Stat:
    best = measure(fn, budget, device, graph)
    tries = 1
    while best.cv > budget.max_cv and tries <= budget.retries:
        again = measure(fn, budget, device, graph)
        tries += 1
        if again.cv < best.cv:
            best = again
    best.tries = tries
    best.ok = best.cv <= budget.max_cv
    return best
