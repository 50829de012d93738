"""The host CPU of a device and what issuing work costs it: the hardware file's ``[host]`` table.

    [host]
    cpu = "2 × Intel Xeon Platinum 8480C (x86-64)"   # the CPU that drives the GPUs
    op_s = "7.2 us"        # host time to issue one eager op (Python → ATen → kernel launch)
    module_s = "23 us"     # the extra host time of one Transformer Engine module call
    sync_s = "14 us"       # one device→host copy of a few counts and the wait on its event, once the device is idle
    source = "…"

Read by ``ironlaw.models.host`` (the host term of an eager training step). A device without the table has no
host term and says so.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import IronlawError

FIELDS = ("cpu", "op_s", "module_s", "sync_s", "source")
MAX_S = 1e-2                      # 10 ms to issue one op is a typo


@dataclass(frozen=True)
class HostCPU:
    cpu: str
    op_s: float
    module_s: float
    sync_s: float
    source: str


def check(data: object, where: str) -> HostCPU:
    """A checked ``[host]`` table; one line naming the field for anything else."""
    from ..core import units
    if not isinstance(data, dict):
        raise IronlawError(f"{where}: expected a table")
    extra = sorted(set(data) - set(FIELDS))
    if extra:
        raise IronlawError(f"{where}: unknown field '{extra[0]}'; fields: {', '.join(FIELDS)}")
    missing = [k for k in FIELDS if k not in data]
    if missing:
        raise IronlawError(f"{where}: missing field '{missing[0]}'")
    for k in ("cpu", "source"):
        if not isinstance(data[k], str) or not data[k].strip():
            raise IronlawError(f"{where}.{k}: expected a non-empty string")
    vals = {}
    for k in ("op_s", "module_s", "sync_s"):
        v = units.parse(data[k], "s", f"{where}.{k}")
        if not 0.0 <= v <= MAX_S:
            raise IronlawError(f"{where}.{k}: {data[k]!r} is outside 0 to 10 ms")
        vals[k] = float(v)
    return HostCPU(data["cpu"].strip(), vals["op_s"], vals["module_s"], vals["sync_s"], data["source"].strip())


def of(hw) -> HostCPU | None:
    """The device's host table, or None."""
    return hw.extra.get("host") if hw is not None else None
