"""Fresh memory: what a CPU run may spend faulting in memory that the C allocator gave back to the OS.

A CPU framework takes each new tensor from the C allocator. glibc's malloc gives large blocks back to the
OS when they are freed: a block above its mmap threshold (which rises with use to at most 32 MiB on 64-bit,
DEFAULT_MMAP_THRESHOLD_MAX in glibc's malloc/malloc.c) is unmapped, and a heap whose free top outgrows its
trim threshold is trimmed. The next run then faults the same memory in again, and the kernel maps and
zeroes every page. Whether a run pays this depends on
the allocator's history in the process as much as on the model. On a 2-vCPU EPYC VM
(docs/accuracy.md, "CPU: fresh memory"), ResNet-50 at batch 8 in a process of its own faulted 220–310 MiB
per run, an eighth to a sixth of its time. The same model late in a long process faulted nothing.

So ironlaw's time is that of a warm allocator. On a probed CPU profile (its ``pages`` rows: the seconds
per byte of fresh memory, ``probe.pages``), an estimate adds the most a run can spend on fresh memory.
That is every byte the run allocates, faulted once:

    fresh_memory_max_s = Σ_ops (allocated bytes + PAGE_BYTES) · count · seconds per byte

The allocated bytes are what an op writes, unless it writes in place (aten's trailing underscore:
``relu_``, ``add_``); each allocation may fault one page more than it holds (the allocator's header
before it, the page its end falls into). An allocator that keeps its memory (jemalloc, tcmalloc, or glibc with
MALLOC_TRIM_THRESHOLD_ and MALLOC_MMAP_THRESHOLD_ raised) pays none of it.
"""
from __future__ import annotations

import numpy as np

PAGE_BYTES = 4096.0          # Linux's base page on x86-64 and most arm64 kernels (getconf PAGESIZE)
# allocators that keep their memory, as the report lines name them
REMEDY = "jemalloc, tcmalloc, or glibc with MALLOC_TRIM_THRESHOLD_ and MALLOC_MMAP_THRESHOLD_ raised keep it"


def cost_s_per_byte(probe: dict) -> float | None:
    """Seconds per byte of fresh memory (fault, zero, map and give back), the median over the probe's
    ``pages`` rows; None when the probe has none (a GPU, or a profile written before this family existed)."""
    rows = probe.get("pages") or []
    if not rows:
        return None
    import statistics                             # a probed CPU profile only: a cold `analyze` skips its import
    return max(0.0, statistics.median((r["time_s"] - r["warm_s"]) / r["bytes"] for r in rows))


def in_place(name: str) -> bool:
    """Whether an op named ``name`` writes into a tensor it was given (``aten::relu_``, ``aten::add_``
    (backward)) rather than into a new one."""
    return name.split(" (", 1)[0].endswith("_")


def allocated_bytes(est) -> np.ndarray:
    """(n_ops, *cfg): bytes each op invocation may fault in: its writes and a page, unless it writes in place."""
    cols = est.cols
    keep = np.array([not in_place(n) for n in cols.names]).reshape((-1,) + (1,) * len(cols.cfg_shape))
    return np.where(keep & (cols.written > 0), cols.written + PAGE_BYTES, 0.0)


def fresh_memory_max_s(est) -> float | None:
    """The most one run of ``est``'s workload can spend faulting in fresh memory, on a probed CPU profile
    with ``pages`` rows; None elsewhere (a GPU, a catalog device) and for a sweep."""
    probe = est.hw.extra.get("probe")
    if est.hw.kind != "cpu" or not probe or est.cols.cfg_shape != ():
        return None
    cost = cost_s_per_byte(probe)
    if cost is None:
        return None
    return allocated_per_run_bytes(est) * cost


def allocated_per_run_bytes(est) -> float:
    """Bytes one run of a single configuration allocates."""
    return float((allocated_bytes(est) * est.cols.count).sum())
