"""Memory bandwidth per level of the hierarchy: fit t = overhead + bytes / BW across sizes.

Timing one small copy from Python measures call overhead, not bandwidth; a line through several
working-set sizes that all sit in the same level separates the two. Bytes = read + written (a copy
of S bytes moves 2·S). Levels come from the OS (sysfs on Linux): L2 per core × threads, the last
cache level, DRAM. On CUDA: the device's HBM/GDDR, and the L2 (from device properties).
"""
from __future__ import annotations

import os
import statistics
from pathlib import Path

from ...core.errors import IronlawError
from ...core.units import fmt_size, fmt_time
from .timing import Budget, stable

MiB = 1 << 20
GRAPH_COPY_MAX_BYTES = 256 * MiB
DRAM_BASE_MAX = 1 << 30
DRAM_MAX = 2 << 30           # the largest DRAM copy's working set (source and destination)


def cpu_caches() -> dict[str, float]:
    """{'l2': bytes per core, 'l3': bytes} from sysfs; empty where the OS does not say."""
    out = {}
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for idx in sorted(base.glob("index*")) if base.is_dir() else []:
        try:
            level = int((idx / "level").read_text())
            typ = (idx / "type").read_text().strip()
            size = (idx / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        if typ == "Instruction" or level < 2:
            continue
        mult = {"K": 1024, "M": MiB, "G": 1 << 30}.get(size[-1], 1)
        out[f"l{level}"] = float(int(size.rstrip("KMG")) * mult)
    return out


def dram_bytes() -> float:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        raise IronlawError("probe: cannot read the size of main memory from the OS") from None


def levels(threads: int, quick: bool) -> dict[str, list[float]]:
    """Copy working sets (src + dst bytes) per level, each well inside the level and above the one before."""
    caches = cpu_caches()
    out = {}
    if "l2" in caches:
        agg = caches["l2"] * threads
        out["l2"] = [agg * f for f in ((0.2, 0.35, 0.5) if quick else (0.15, 0.25, 0.35, 0.5))]
    if "l3" in caches:
        c = caches["l3"]
        # well inside: the last level is shared with every other process on the machine
        # … and on a VM it may hold far less than the OS says: the larger sets find where it ends
        out["l3"] = [c * f for f in ((0.12, 0.2, 0.3, 0.5) if quick else (0.1, 0.15, 0.2, 0.3, 0.45, 0.7))]
    # from twice to eight times the last cache level (capped: a 480 MiB L3 would otherwise ask for copies of
    # many GB, which take most of the probe's time and memory without telling more); a 2-vCPU EPYC VM's copies
    # ran at 26, 24 and 22 GB/s at 96, 128 and 192 MiB and 20 GB/s at 512 MiB (measured by probe and by
    # benchmarks/probe_check.py on 2026-12-04): the rate the tier keeps is that of the largest sets
    lo = min(max(64 * MiB, 2 * caches.get("l3", 0.0)), DRAM_BASE_MAX)
    out["dram"] = sorted({min(lo * f, DRAM_MAX) for f in ((2, 4) if quick else (2, 4, 8))})
    return out


def measure(level: str, nbytes: float, budget: Budget, device: str = "cpu") -> dict:
    """Copy nbytes/2 bytes of fp32 into an equal buffer; report read + written bytes."""
    import torch
    n = max(1024, int(nbytes / 8))
    src = torch.empty(n, device=device).fill_(1.0)       # randn of GBs would cost seconds; values do not matter
    dst = torch.empty_like(src)
    # a copy captured in a CUDA graph becomes a memcpy node that the copy engines run: 2.7 TB/s against 4.2 from a
    # kernel for copies of 1 GiB and more on an H200 (eager 256 MiB … 4 GiB: 4.05–4.24 TB/s); such copies take
    # far longer than a launch, so they are timed eagerly
    st = stable(lambda: dst.copy_(src), budget, device, graph=nbytes < GRAPH_COPY_MAX_BYTES)
    moved = 8.0 * n
    return {"level": level, "bytes": moved, "time_s": st.time_s, "cv": st.cv, "_ok": st.ok, "_tries": st.tries}


# when every size takes this many times the per-call overhead, a slope cannot see the overhead
# (differences of noisy times): the overhead is then the measured per-op latency and BW the median rate
OVERHEAD_VISIBLE = 100.0


def fit(rows: list[dict], overhead_s: float | None = None, noisy: list[str] | None = None) -> tuple[float, float]:
    """Robust line t = overhead + bytes/BW (Theil–Sen: the median of the pairwise slopes, so one size
    hit by a noisy neighbour does not tilt it); returns (bw_Bps, overhead_s).

    With ``overhead_s`` known (the per-op dispatch latency) and every time far above it (DRAM-sized
    copies), BW = median over sizes of bytes / (t − overhead): same law, better conditioned.
    A copy time that did not grow with size (a noisy machine) is refused; with ``noisy`` (a probe saved past its
    checks) the reason is appended to it and BW is the median rate over the sizes, the overhead the known one."""
    pts = sorted((r["bytes"], r["time_s"]) for r in rows)
    if overhead_s is not None and pts and min(y for _, y in pts) > OVERHEAD_VISIBLE * overhead_s:
        return statistics.median(x / (y - overhead_s) for x, y in pts), overhead_s
    if len(pts) < 2:
        raise IronlawError("probe: a bandwidth fit needs at least two working-set sizes")
    slopes = sorted((y2 - y1) / (x2 - x1) for i, (x1, y1) in enumerate(pts) for x2, y2 in pts[i + 1:] if x2 > x1)
    slope = statistics.median(slopes) if slopes else 0.0
    if slope <= 0:
        seen = ", ".join(f"{fmt_size(x)} in {fmt_time(y)}" for x, y in pts)
        reason = f"probe: {rows[0]['level']} copy time did not grow with size ({seen}): the machine was too noisy"
        if noisy is None:
            raise IronlawError(f"{reason}; nothing saved; run again, or with --rounds 3 (each measurement's median "
                               f"round)")
        noisy.append(f"{reason}; its bandwidth is the median rate over the sizes")
        o = overhead_s if overhead_s is not None and min(y for _, y in pts) > overhead_s else 0.0
        return statistics.median(x / (y - o) for x, y in pts), o
    overhead = statistics.median(y - slope * x for x, y in pts)
    return 1.0 / slope, max(overhead, 0.0)
