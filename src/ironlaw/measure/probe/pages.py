"""Fresh memory: what the operating system charges for pages a run has not touched before.

A CPU framework allocates a tensor's memory from the C allocator. Memory the allocator has just taken
from the OS is not backed yet: the first write to each page faults, and the kernel maps and zeroes it;
handing the memory back (``munmap``, or the heap trimmed at ``free``) costs again. glibc's malloc gives
large blocks back to the OS as soon as they are freed, so a model whose activations outgrow its heap
pays this on every run (``ironlaw validate`` counts the faulted bytes of each run: ResNet-50 at batch 8
faults hundreds of MB per run, ResNet-18 at batch 1 none).

The probe times ``torch.empty(n).fill_(1)`` (allocate, fault every page, write, free) against the same
fill of a buffer already in use; the difference per byte is the cost of fresh memory. Sizes are above
glibc's largest dynamic mmap threshold (32 MiB), so every call gets fresh pages from the OS whatever the
allocator did before. With an allocator that keeps its memory (jemalloc, tcmalloc) the difference is
about 0, which is what such a machine pays. ``ironlaw.law.fresh`` prices these rows.
"""
from __future__ import annotations

from .timing import Budget, stable

MiB = 1 << 20
SIZES = (64 * MiB, 128 * MiB)


def sizes(quick: bool) -> tuple[int, ...]:
    return SIZES[:1] if quick else SIZES


def measure(nbytes: float, budget: Budget, device: str = "cpu") -> dict:
    """Fresh (allocate + fault + fill + free) and warm (fill) seconds for ``nbytes`` of fp32."""
    import torch
    n = max(1024, int(nbytes // 4))
    warm = torch.empty(n, device=device)
    warm.fill_(1.0)
    w = stable(lambda: warm.fill_(1.0), budget, device)
    f = stable(lambda: torch.empty(n, device=device).fill_(1.0), budget, device)
    return {"bytes": 4.0 * n, "time_s": f.time_s, "warm_s": w.time_s, "cv": max(f.cv, w.cv),
            "_ok": f.ok and w.ok, "_tries": max(f.tries, w.tries)}
