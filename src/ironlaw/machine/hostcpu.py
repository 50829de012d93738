"""The host CPU of a device and what issuing work costs it: the hardware file's ``[host]`` table.

    [host]
    cpu = "2 × Intel Xeon Platinum 8480C (x86-64)"   # the CPU that drives the GPUs
    op_s = "7.2 us"        # host time to issue one eager op (Python → ATen → kernel launch)
    module_s = "23 us"     # the extra host time of one Transformer Engine module call
    sync_s = "14 us"       # one device→host copy of a few counts and the wait on its event, once the device is idle
    linear_s = "13.48 us"  # optional: host time of one torch.nn.Linear forward call on one core of this CPU (Python →
                           # ATen → launch), a published per-core speed figure of the CPU running Python
    source = "…"

Read by ``ironlaw.models.host`` (the host term of an eager training step) and by the serving engine's host term
(``models.serving.step.host_step``), which carries the host seconds fitted on one CPU to another by the ratio of
their ``linear_s``. A device without the table has no host term and says so.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import IronlawError

FIELDS = ("cpu", "op_s", "module_s", "sync_s", "source")
OPTIONAL = ("linear_s",)
MAX_S = 1e-2                      # 10 ms to issue one op is a typo


@dataclass(frozen=True)
class HostCPU:
    cpu: str
    op_s: float
    module_s: float
    sync_s: float
    source: str
    linear_s: float | None = None    # host seconds of one torch.nn.Linear forward on one core (None: not stated)


def check(data: object, where: str) -> HostCPU:
    """A checked ``[host]`` table; one line naming the field for anything else."""
    from ..core import units
    if not isinstance(data, dict):
        raise IronlawError(f"{where}: expected a table")
    extra = sorted(set(data) - set(FIELDS) - set(OPTIONAL))
    if extra:
        raise IronlawError(f"{where}: unknown field '{extra[0]}'; fields: {', '.join(FIELDS + OPTIONAL)}")
    missing = [k for k in FIELDS if k not in data]
    if missing:
        raise IronlawError(f"{where}: missing field '{missing[0]}'")
    for k in ("cpu", "source"):
        if not isinstance(data[k], str) or not data[k].strip():
            raise IronlawError(f"{where}.{k}: expected a non-empty string")
    vals = {}
    for k in ("op_s", "module_s", "sync_s") + tuple(k for k in OPTIONAL if k in data):
        v = units.parse(data[k], "s", f"{where}.{k}")
        if not 0.0 <= v <= MAX_S:
            raise IronlawError(f"{where}.{k}: {data[k]!r} is outside 0 to 10 ms")
        vals[k] = float(v)
    if vals.get("linear_s") == 0.0:
        raise IronlawError(f"{where}.linear_s: a host call takes some time; {data['linear_s']!r} is zero")
    return HostCPU(data["cpu"].strip(), vals["op_s"], vals["module_s"], vals["sync_s"], data["source"].strip(),
                   vals.get("linear_s"))


def of(hw) -> HostCPU | None:
    """The device's host table, or None."""
    return hw.extra.get("host") if hw is not None else None
