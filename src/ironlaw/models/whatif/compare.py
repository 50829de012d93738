"""Before / after: does a what-if shorten the critical path on the target device?

``compare(est, ["sparsity=0.9"])`` predicts the transformed graph, schedules both on their
streams (``ironlaw.law.critical_path``) and explains the change in one sentence: the time change,
which resource bound before and after, and which terms moved (D_vol, O, op launches) — e.g.
"no gain: bandwidth (hbm3)-bound before and after; D_vol grows 12% while O falls 90%".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...law import critical_path, law
from ...core.errors import IronlawError
from ...core.units import fmt, fmt_size, fmt_time

SCHEMA = "ironlaw.compare/1"
TOL = 0.01           # a change under 1% of the critical path is "no gain"
TERMS = ("data_s", "compute_s", "latency_s", "network_s")


@dataclass
class Comparison:
    before: object            # Estimate
    after: object             # Estimate
    cp_before: critical_path.CriticalPath
    cp_after: critical_path.CriticalPath
    steps: list[str]

    def __repr__(self) -> str:                 # the two estimates' critical paths run to 100 kB: the verdict's numbers
        return (f"Comparison({'; '.join(map(str, self.steps))!r}: {self.before.time_s!r} s -> {self.after.time_s!r} s, "
                f"speedup={self.speedup!r})")

    @property
    def speedup(self) -> float:
        return self.cp_before.time_s / self.cp_after.time_s

    @property
    def shortens_critical_path(self) -> bool:
        return self.speedup > 1.0 + 1e-9 and self.cp_after.time_s < self.cp_before.time_s

    def volumes(self) -> dict[str, tuple[float, float]]:
        """D_vol (bytes), O (FLOPs), op invocations: (before, after)."""
        def vol(e):
            d = e.to_dict(top=0)["totals"]
            return {"D_vol": d["bytes"], "O": d["flops"], "launches": float(d["op_invocations"])}
        b, a = vol(self.before), vol(self.after)
        return {k: (b[k], a[k]) for k in b}

    def index_bytes(self) -> float:
        return float(sum(float(op.attrs.get("weight_index_bytes", 0.0)) * op.count for op in self.after.graph.ops))

    def verdict(self) -> str:
        s = self.speedup
        if s > 1.0 + TOL:
            head = f"shortens the critical path by {100.0 * (1.0 - 1.0 / s):.0f}% ({s:.2f}× faster)"
        elif s < 1.0 - TOL:
            head = f"lengthens the critical path by {100.0 * (1.0 / s - 1.0):.0f}% ({1.0 / s:.2f}× slower)"
        else:
            head = "no gain"
        head += self._per_sample()
        bb, ba = label(self.before), label(self.after)
        if self.before.hw.name != self.after.hw.name:
            where = f" on {self.after.hw.name} instead of {self.before.hw.name}"
        else:
            where = ""
        if bb == ba:
            bound = f"{bb}-bound before and after{where}" if head == "no gain" else \
                f"{bb} was binding and remains so{where}"
        else:
            bound = f"{bb} was binding, now {ba} binds{where}"
        return f"{head}: {bound}; {self._changes()}"

    @property
    def speedup_per_sample(self) -> float:
        """The speedup of one sample (sequence, image): the step's, times the batch after over the batch before
        (a ``batch=`` what-if changes the work a step does, not only its time)."""
        nb, na = self.before.graph.meta.get("batch") or 1, self.after.graph.meta.get("batch") or 1
        return self.speedup * na / nb

    def _per_sample(self) -> str:
        """Where the batch changed: what the step's change is per sample."""
        nb, na = self.before.graph.meta.get("batch") or 1, self.after.graph.meta.get("batch") or 1
        if na == nb:
            return ""
        r = self.speedup_per_sample
        return (f" per step, batch {na:,} for {nb:,}; per sample {r:.3g}× {'faster' if r >= 1 else 'slower'} "
                f"({fmt_time(self.cp_after.time_s / na)} a sample for {fmt_time(self.cp_before.time_s / nb)})")

    def _changes(self) -> str:
        v = self.volumes()
        parts = []
        idx = self.index_bytes()
        dq = float(sum(float(op.attrs.get("dequant_flops", 0.0)) * op.count for op in self.after.graph.ops))
        for key, name in (("D_vol", "D_vol"), ("O", "O"), ("launches", "op launches")):
            b, a = v[key]
            if b <= 0 or abs(a / b - 1.0) < TOL:
                continue
            pct = 100.0 * abs(a / b - 1.0)
            verb = "grows" if a > b else "falls"
            if key == "D_vol" and idx > 0:
                ideal = 100.0 * (1.0 - (a - idx) / b)
                parts.append(f"D_vol {verb} {pct:.0f}% (index traffic adds {fmt(idx, 'B')}; the values alone "
                             f"would cut it {ideal:.0f}%)")
            elif key == "O" and dq > 0:
                parts.append(f"O {verb} {pct:.0f}% (dequantization: {fmt(dq, 'FLOP')} on the vector unit)")
            else:
                parts.append(f"{name} {verb} {pct:.0f}%")
        sched = self.cp_after.hidden_s - max(self.cp_before.hidden_s, 0.0)
        if sched > TOL * self.cp_before.time_s:
            parts.append(f"overlap across ops hides {fmt_time(sched)}")
        notes = list(self.after.graph.meta.get("notes", []))
        if self.after.graph.meta.get("schedule") and sched <= TOL * self.cp_before.time_s and not notes:
            parts.append("the overlap hides almost nothing: no other stream has idle time to hide it behind")
        if _sparse_on_vector(self.after):
            parts.append("sparse kernels run on the vector unit, not the tensor cores")
        if not parts:
            text = self._same_work()
        elif len(parts) == 2:
            text = " while ".join(parts)
        else:
            text = ", ".join(parts)
        return "; ".join([text] + notes)

    def _same_work(self) -> str:
        """Where D_vol, O and the launches stay: the terms that move (another device's rates, another
        calibration), 'data ×0.58, compute ×0.02, latency ×0.86 (the same D_vol, O and launches)', or that none
        does."""
        moved = []
        for key, name in zip(TERMS, ("data", "compute", "latency", "network")):
            b, a = float(self.before.term(key)), float(self.after.term(key))
            if b > 0 and abs(a / b - 1.0) >= TOL:
                moved.append(f"{name} ×{a / b:.2g}")
        if not moved:
            return "the terms barely change"
        return ", ".join(moved) + " (the same D_vol, O and launches)"

    def to_dict(self) -> dict:
        bd, ad = self.before.to_dict(), self.after.to_dict()
        terms = {}
        for k in TERMS:
            b, a = float(self.before.term(k)), float(self.after.term(k))
            terms[k] = {"before": b, "after": a, "ratio": (a / b) if b > 0 else None}
        vols = {k: {"before": b, "after": a, "ratio": (a / b) if b > 0 else None} for k, (b, a) in self.volumes().items()}
        return {
            "schema": SCHEMA,
            "what_if": list(self.steps),
            "hardware_before": self.before.hw.name, "hardware_after": self.after.hw.name,
            "before": bd, "after": ad,
            "critical_path_before": self.cp_before.to_dict(), "critical_path_after": self.cp_after.to_dict(),
            "time_before_s": self.cp_before.time_s, "time_after_s": self.cp_after.time_s,
            "speedup": self.speedup, "speedup_per_sample": self.speedup_per_sample,
            "bottleneck_before": bd["bottleneck"], "bottleneck_after": ad["bottleneck"],
            "shortens_critical_path": self.shortens_critical_path,
            "terms": terms, "volumes": vols,
            "verdict": self.verdict(),
        }


def label(est) -> str:
    b = est.bottleneck()
    return b["resource"] + (f" ({b['tier']})" if b["tier"] else "")


def _sparse_on_vector(est) -> bool:
    return any(op.attrs.get("format") in ("csr", "bitmap") for op in est.graph.ops)


def compare(before, steps: list[str], vs_hardware: str | None = None, graph=None, prepare=None) -> Comparison:
    """Compare a single-configuration Estimate with the same workload after ``steps``. ``graph``: the workload as
    built, before any device-specific pricing ``before.graph`` carries (default ``before.graph``); ``prepare(graph,
    hw)`` gives the 'after' graph and device as the 'after' device prices them (``models.priced``)."""
    from . import apply
    steps = list(steps)
    check_fits(before, "before")
    if vs_hardware:
        steps.append(f"hardware={vs_hardware}")
    if not steps:
        raise IronlawError("compare needs at least one --what-if or --vs-hardware")
    g, hw = apply(before.graph if graph is None else graph, before.hw, steps)
    g, hw = (g, hw) if prepare is None else prepare(g, hw)
    after = law.predict(g, hw, before.composition)
    if not bool(after.placement.fits):
        fp = after.footprint()
        raise IronlawError(f"after {'; '.join(steps)}: {g.name} does not fit on {hw.name} "
                           f"(footprint {fmt_size(fp['total_bytes'])} exceeds all memory tiers)")
    check_fits(after, f"after {'; '.join(steps)}")
    return Comparison(before, after, critical_path.from_estimate(before), critical_path.from_estimate(after), steps)


def check_fits(est, case: str) -> None:
    """Refuse, naming the ``case``, a transformer's training step that exceeds its device's memory: it does not run,
    as ``analyze`` answers it (``models.train_fit``); a ratio against a step priced as spilled to host memory would
    compare a step no framework takes."""
    from .. import train_fit
    if not bool(np.any(train_fit.spills(est))):
        return
    g = est.graph
    size = ", ".join(f"{k} {g.meta[k]}" for k in ("batch", "seq") if k in g.meta)
    fp = float(np.max(train_fit.footprint_bytes(est, np.shape(est.capacity_bound))))
    raise IronlawError(f"{case}: {g.name} train ({size}) does not fit on {est.hw.name}: {train_fit.reason(fp, est.hw)}; "
                       f"compare prices steps that run (`ironlaw analyze` of that case gives the fit check's hint)")
