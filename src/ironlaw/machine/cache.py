"""What stays in the last cache level between uses: the resident fraction and the limits it sets."""
from __future__ import annotations

import numpy as np

# activations that the previous op just produced are read from the last cache level when the op's
# activation traffic fits in this fraction of it (an in-place relu_ or add_ reads what the op before wrote); so is
# every byte of a workload whose whole footprint fits in this fraction of it
CACHE_RESIDENT_FRACTION = 0.5
# a kernel timed over and over on the same operands, nothing else running between the calls (a kernel table's
# collector loop), keeps them in the last cache level up to its whole capacity
REPEATED_RESIDENT_FRACTION = 1.0


def resident_limit_bytes(hw) -> float | None:
    """CACHE_RESIDENT_FRACTION of the last cache level: what stays there between uses (None: no cache)."""
    cache = [t for t in hw.memory if t.role == "cache"]
    return CACHE_RESIDENT_FRACTION * cache[-1].capacity_bytes if cache else None


def repeated_limit_bytes(hw) -> float | None:
    """REPEATED_RESIDENT_FRACTION of the last cache level: the operand bytes a kernel called over and over on the
    same operands, alone, reads from there on every call but the first (None: no cache)."""
    cache = [t for t in hw.memory if t.role == "cache"]
    return REPEATED_RESIDENT_FRACTION * cache[-1].capacity_bytes if cache else None


def fits_last_cache(footprint: dict, hw):
    """Whether the whole footprint fits in resident_limit_bytes (array over configurations); False
    without a footprint or a cache level."""
    limit = resident_limit_bytes(hw)
    if limit is None or not footprint:
        return np.asarray(False)
    return np.asarray(sum(footprint.values(), 0.0) <= limit)


def pack_limit_bytes(hw) -> float | None:
    """Weight bytes above which a GEMM's packed copy spills (``pack``): the resident fraction of the last
    cache level as the OS reports it where the probe recorded that, else of the profile's capacity. Not
    the probe's usable size, which is a neighbour's share at the probe's moment: the BLAS blocks for the
    size it is told."""
    cache = [t for t in hw.memory if t.role == "cache"]
    os_bytes = ((hw.extra.get("probe") or {}).get("capacity") or {}).get(cache[-1].name) if cache else None
    return CACHE_RESIDENT_FRACTION * float(os_bytes) if os_bytes else resident_limit_bytes(hw)
