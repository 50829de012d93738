"""Measuring a real run: the memory check before anything is allocated, end-to-end timing with
warm-up and repeats, and per-op times from the capture recorder on real tensors.

End to end is timed without the recorder (a plain eager call), counting the page faults the process
takes meanwhile (``ru_minflt``): a run whose allocator hands memory back to the OS faults it in again
every time (see ``ironlaw.measure.probe.pages``). Per op, the recorder times each
dispatched aten op (``perf_counter`` around the kernel call) over a few runs; the median per op is
taken. End to end minus the sum of the per-op times is the framework's share: the Python of the
model and the dispatcher's work around the ops (views, module calls), which no kernel accounts for.
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass

from ...core.errors import IronlawError
from ...core.units import fmt_size

HEADROOM = 1.25              # real runs need more than the footprint: allocator slack, the init's temporaries
HEADROOM_BYTES = 256e6


def available_bytes() -> float | None:
    """MemAvailable of this machine (Linux), else None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024.0
    except OSError:
        return None
    return None


def check_fits(name: str, footprint: dict, hw) -> dict:
    """Refuse, before anything is allocated, a run whose footprint does not fit in memory here."""
    need = float(sum(float(v) for v in footprint.values()))
    want = need * HEADROOM + HEADROOM_BYTES
    limits = {}
    avail = available_bytes()
    if avail is not None:
        limits["available now (/proc/meminfo MemAvailable)"] = avail
    dev = hw.memory[hw.device_tier]
    limits[f"{hw.name} {dev.name} capacity"] = dev.capacity_bytes
    where, limit = min(limits.items(), key=lambda kv: kv[1])
    parts = ", ".join(f"{k} {fmt_size(float(v))}" for k, v in footprint.items() if float(v) > 0)
    if want > limit:
        raise IronlawError(f"validate: {name} needs {fmt_size(need)} ({parts}) plus headroom = {fmt_size(want)}, "
                           f"more than {where} {fmt_size(limit)}; nothing was allocated — choose a smaller "
                           "--batch/--seq or a smaller model")
    return {"footprint_bytes": need, "limit_bytes": limit, "limit": where}


@dataclass
class Spread:
    samples_s: list
    median_s: float
    p25_s: float
    p75_s: float
    min_s: float
    max_s: float
    cv: float

    @staticmethod
    def of(xs: list[float]) -> "Spread":
        xs = [float(x) for x in xs]
        if not xs:
            raise ValueError("no samples")
        s = sorted(xs)
        q = statistics.quantiles(s, n=4, method="inclusive") if len(s) > 1 else [s[0]] * 3
        mean = statistics.fmean(s)
        cv = statistics.pstdev(s) / mean if len(s) > 1 and mean > 0 else 0.0
        return Spread(xs, statistics.median(s), q[0], q[2], s[0], s[-1], cv)

    @property
    def iqr_s(self) -> float:
        return self.p75_s - self.p25_s

    def to_dict(self) -> dict:
        return {"median_s": self.median_s, "p25_s": self.p25_s, "p75_s": self.p75_s, "min_s": self.min_s,
                "max_s": self.max_s, "cv": self.cv, "spread_s": self.iqr_s, "samples_s": list(self.samples_s)}


def minor_faults() -> int | None:
    """Minor page faults of this process so far (all its threads); None where the OS does not say."""
    try:
        import resource
    except ImportError:                          # pragma: no cover - not Unix
        return None
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)


def page_bytes() -> int | None:
    """The OS's page size; None where it does not say (then faulted bytes are not reported)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return None


def pin_threads(threads: int | None) -> int:
    import torch
    if threads is not None:
        if not isinstance(threads, int) or threads < 1 or threads > (os.cpu_count() or 1) * 4:
            raise IronlawError(f"validate: --threads must be between 1 and {(os.cpu_count() or 1) * 4}, got {threads!r}")
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def run(step, fake_records: list, repeats: int, warmup: int, op_repeats: int | None = None,
        budget_s: float | None = None) -> dict:
    """Warm up, then alternate timed end-to-end calls and recorded calls; per-op medians.

    Returns {'e2e': Spread, 'op_s': {fake record index: Spread}, 'views': Spread of the no-work ops' time,
    'gap': Spread of end to end minus the kernel ops' sum, paired run by run (the framework's share),
    'records': the last real run's records, 'pairs': fake index -> real index, 'faults': page faults per
    end-to-end run, the median (None where the OS does not count them)}. A recorded run whose
    kernel sequence differs from the fake capture's is an error (the join would lie).
    ``budget_s``: stop repeating once this much time has gone by (at least 3 samples of each kind).
    """
    import torch

    from ...models.capture import recorder

    if not isinstance(repeats, int) or repeats < 1:
        raise IronlawError(f"validate: --repeats must be a positive whole number, got {repeats!r}")
    op_repeats = max(1, op_repeats or min(repeats, 5))
    before = step.before or (lambda: None)
    start = time.perf_counter()
    with torch.no_grad():
        for _ in range(max(0, warmup)):
            before()
            step()
    e2e, per_op, views, op_sums, faults = [], {}, [], [], []
    records = None
    i = 0
    while i < max(repeats, op_repeats):
        if i < repeats:
            before()
            f0 = minor_faults()
            t0 = time.perf_counter()
            with torch.no_grad():
                step()
            e2e.append(time.perf_counter() - t0)
            f1 = minor_faults()
            if f0 is not None and f1 is not None:
                faults.append(f1 - f0)
        if i < op_repeats:
            before()
            records = recorder.capture(step.module, step.args, step.kwargs, real=True).records
            pairs = join(fake_records, records)
            by_index = {r.index: r for r in records}
            for fi, ri in pairs.items():
                per_op.setdefault(fi, []).append(by_index[ri].time_s)
            views.append(sum(r.time_s for r in records if r.no_work))
            op_sums.append(sum(r.time_s for r in records if not r.no_work))
        i += 1
        if budget_s is not None and i >= 3 and time.perf_counter() - start > budget_s:
            break
    n = min(len(e2e), len(op_sums))          # end to end and recorded runs alternate: pair them
    gaps = [e2e[i] - op_sums[i] for i in range(n)]
    return {"e2e": Spread.of(e2e), "op_s": {k: Spread.of(v) for k, v in per_op.items()}, "views": Spread.of(views),
            "gap": Spread.of(gaps), "records": records, "pairs": pairs,
            "faults": statistics.median(faults) if faults else None}


def join(fake: list, real: list) -> dict[int, int]:
    """{fake record index: real record index} over the ops that run a kernel, in order.

    Views and allocations may differ between fake and real runs (``matmul`` on a fake tensor can
    decompose into expand + bmm where the real run takes view + mm), so only work ops are joined:
    the same name, or the same matrix kind with the same FLOPs.
    """
    fw = [r for r in fake if not r.no_work]
    rw = [r for r in real if not r.no_work]
    for f, r in zip(fw, rw):
        same = f.name == r.name or (f.kind == r.kind and f.kind in ("matmul", "conv", "attention")
                                    and f.flops is not None and r.flops is not None
                                    and abs(f.flops - r.flops) <= 1e-9 * max(f.flops, 1.0))
        if not same:
            raise IronlawError(f"validate: the real run's op {r.index} is {r.name} but the capture predicted "
                               f"{f.name} (op {f.index}) there; the model takes a different path on real tensors "
                               "(data-dependent control flow), so predicted and measured ops cannot be joined")
    if len(fw) != len(rw):
        raise IronlawError(f"validate: the real run executed {len(rw)} kernel ops but the capture recorded {len(fw)}; "
                           "predicted and measured ops cannot be joined one to one")
    return {f.index: r.index for f, r in zip(fw, rw)}
