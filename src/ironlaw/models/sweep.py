"""Sweeps: one workload over devices × batch × seq, as array math, and the ridge point.

The builders take numpy arrays for batch and seq (batch on axis 0, seq on axis 1), so each
device is ONE ``law.predict`` call over every configuration; ``explain.labels`` names the
binding resource of each. The ridge point is where that label flips along the batch axis (e.g.
the batch at which Llama-3-8B decode on an H100 turns compute-bound); it is refined to the exact
whole batch by evaluating the integers between the two grid points that straddle the flip.

Times are the law's op-by-op composition (``Estimate.total_s``); a configuration that does not
fit anywhere has time inf (None in rows), throughput 0 and a 'capacity:…' label. A transformer's
training step that exceeds the device's memory is not priced as spilled (``models.train_fit``, the
test ``analyze`` applies): time inf, throughput 0, the label 'does not fit' and, in its row, the reason.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import IronlawError
from ..law import explain, law

MAX_POINTS = 50_000_000
REFINE_POINTS = 256


# ---------------------------------------------------------------- list parsing
def parse_list(text: str, what: str, upper: int = 1 << 24) -> np.ndarray:
    """'1,2,4,...,1024' / '1,2,4,…,1024' (geometric or arithmetic) / '64' / '8,16,32' -> sorted unique ints."""
    if text is None or not str(text).strip():
        raise IronlawError(f"--{what}: empty list; e.g. --{what} 1,2,4,...,1024")
    parts = [p.strip() for p in str(text).replace("…", "...").split(",")]
    vals: list[int] = []
    i = 0
    while i < len(parts):
        p = parts[i]
        if p == "...":
            if len(vals) < 2 or i + 1 >= len(parts):
                raise IronlawError(f"--{what} '{text}': '...' needs two values before it and one after "
                                   f"(e.g. 1,2,4,...,1024 or 128,256,...,2048)")
            last = _int(parts[i + 1], text, what)
            if last > upper:                   # the number given, before a series of millions is spelt out
                raise IronlawError(f"--{what} '{text}': {last} is out of range (1 … {upper:,})")
            vals += _extend(vals[-3:], last, text, what)
            i += 2
            continue
        vals.append(_int(p, text, what))
        i += 1
    for v in vals:
        if v <= 0 or v > upper:
            raise IronlawError(f"--{what} '{text}': {v} is out of range (1 … {upper:,})")
    return np.array(sorted(set(vals)), dtype=float)


def _int(p: str, text: str, what: str) -> int:
    if not re.fullmatch(r"-?\d+", p):              # a negative whole number is read, and refused as out of range
        raise IronlawError(f"--{what} '{text}': cannot read '{p}' as a whole number "
                           f"(expected a list like 1,2,4,...,1024)")
    return int(p)


def _extend(head: list[int], last: int, text: str, what: str) -> list[int]:
    """Continue ``head`` up to ``last``: geometric when three values share a ratio (1,2,4,…),
    else arithmetic from the last two (8,16,…)."""
    a, b = head[-2], head[-1]
    if last < b or b <= a:
        raise IronlawError(f"--{what} '{text}': '...' needs increasing values ({a}, {b}, … {last})")
    geometric = len(head) == 3 and head[0] > 0 and a % head[0] == 0 and b % a == 0 and a // head[0] == b // a > 1
    if len(head) == 3 and not geometric and a - head[0] != b - a:
        raise IronlawError(f"--{what} '{text}': {head[0]}, {a}, {b} is neither arithmetic nor geometric")
    if geometric:                                                 # 1,2,4,… or 1,10,100,…
        r, out, x = b // a, [], b * (b // a)
        while x <= last:
            out.append(x)
            x *= r
        if out and out[-1] != last or (not out and last != b):
            raise IronlawError(f"--{what} '{text}': {last} is not in the series {a}, {b}, {b * r}, …")
        return out
    d = b - a
    if (last - b) % d:
        raise IronlawError(f"--{what} '{text}': {last} is not in the series {a}, {b}, {b + d}, …")
    n = (last - b) // d
    if n > MAX_POINTS:
        raise IronlawError(f"--{what} '{text}': {n:,} values is too many")
    return list(range(b + d, last + 1, d))


# ---------------------------------------------------------------- the sweep
@dataclass
class Sweep:
    spec: str
    phase: str
    dtype: str
    hardware: list[str]
    batch: np.ndarray                  # (B,)
    seq: np.ndarray | None             # (S,) or None
    time_s: np.ndarray                 # (H, B, S)   S = 1 when seq is None
    throughput: np.ndarray             # (H, B, S) per second
    throughput_unit: str
    bottleneck: np.ndarray             # (H, B, S) labels
    ridges: list[dict] = field(default_factory=list)
    energy: dict = field(default_factory=dict)      # name -> (H, B, S): power_w, joules_per_unit, … (power.py)
    energy_sources: dict = field(default_factory=dict)
    fixed_seq: int | None = None       # the workload's own seq where none is swept and its graph states one
    what_if: list = field(default_factory=list)     # the what-ifs applied to every point, as given
    devices: int = 1                   # the devices each point runs on (a what-if tp=N: N), energy and cost over all
    unfit: np.ndarray | None = None    # (H, B, S) the reason a point does not fit ('' where it does), or None

    @property
    def points(self) -> int:
        return int(self.time_s.size)

    def rows(self) -> list[dict]:
        out = []
        seqs = self.seq if self.seq is not None else [None]
        for h, hw in enumerate(self.hardware):
            for i, b in enumerate(self.batch):
                for j, s in enumerate(seqs):
                    t = float(self.time_s[h, i, j])
                    out.append({"hardware": hw, "batch": int(b), "seq": self.fixed_seq if s is None else int(s),
                                "time_s": t if np.isfinite(t) else None,
                                "throughput": float(self.throughput[h, i, j]), "bottleneck": str(self.bottleneck[h, i, j]),
                                **{k: _finite(v[h, i, j]) for k, v in self.energy.items()},
                                "does_not_fit": None if self.unfit is None else (str(self.unfit[h, i, j]) or None)})
        return out

    def to_dict(self) -> dict:
        return {"schema": "ironlaw.sweep/1", "workload": self.spec, "phase": self.phase, "dtype": self.dtype,
                "hardware": list(self.hardware), "batch": self.batch.astype(int).tolist(),
                "seq": None if self.seq is None else self.seq.astype(int).tolist(),
                "throughput_unit": self.throughput_unit, "points": self.rows(), "ridge_points": self.ridges,
                "energy_sources": self.energy_sources, "what_if": [str(w) for w in self.what_if],
                "devices": self.devices}


def _finite(x) -> float | None:
    return float(x) if np.isfinite(x) else None


def run(spec: str, on, batch, seq=None, phase: str | None = None, dtype: str | None = None,
        whatif=(), composition: str = "overlap", ridge: bool = True, usd_per_device_hour: float | None = None,
        gco2_per_kwh: float | None = None) -> Sweep:
    """Predict ``spec`` on every device of ``on`` for every batch (× seq); arrays in, arrays out."""
    from ..machine import hardware
    from . import workloads
    hws = [hardware.get(h) if isinstance(h, str) else h for h in ([on] if isinstance(on, str) else on)]
    if not hws:
        raise IronlawError("sweep: no hardware given; e.g. --on h100,b200")
    hardware.check_distinct([on] if isinstance(on, str) else list(on), hws, "a sweep")
    b = _vector(batch, "batch")
    s = None if seq is None else _vector(seq, "seq")
    n = len(hws) * b.size * (1 if s is None else s.size)
    if n > MAX_POINTS:
        raise IronlawError(f"sweep: {n:,} points is more than {MAX_POINTS:,}; split it")
    whatif = _check_whatif(whatif)
    from ..law.power import devices_of
    times, thr, labs, ridges, energy, sources, unfit = [], [], [], [], [], {}, []
    unit, g_phase, g_dtype, fixed = "samples/s", phase, dtype, None
    for hw in hws:
        est = _predict(spec, hw, b[:, None], None if s is None else s[None, :], phase, dtype, whatif, composition)
        g = est.graph
        g_phase, g_dtype = g.phase, g.meta.get("precision", g.dtype)     # a lowered training step: its GEMMs'
        if s is None and g.meta.get("seq") is not None and np.ndim(g.meta["seq"]) == 0:
            fixed = int(g.meta["seq"])                                      # the workload's own, stated per point
        shape = (b.size, 1 if s is None else s.size)
        why = _unfit(est, hw, shape)
        t = np.where(why != "", np.inf, np.broadcast_to(est.total_s, shape))
        units, unit = _work_units(g, shape)
        times.append(t)
        thr.append(np.where(np.isfinite(t), units / t, 0.0))
        labs.append(_labels(est, shape))
        unfit.append(why)
        n_dev = devices_of(g)
        energy.append({k: np.where(why != "", np.nan, v) for k, v in
                       _energy(est, hw, thr[-1], shape, usd_per_device_hour, gco2_per_kwh, sources, n_dev).items()})
        if ridge:
            ridges += _ridges(spec, hw, b, s, labs[-1], phase, dtype, whatif, composition)
    return Sweep(spec, g_phase, g_dtype, [h.name for h in hws], b, s, np.stack(times), np.stack(thr), unit,
                 np.stack(labs), ridges, {k: np.stack([e[k] for e in energy]) for k in energy[0]}, sources, fixed,
                 [p.text for p in whatif], n_dev, np.stack(unfit))


def _unfit(est, hw, shape) -> np.ndarray:
    """(B, S) strings: why each point does not fit (``train_fit.reason``), '' where it does."""
    from . import train_fit
    spills = np.broadcast_to(train_fit.spills(est), shape)
    out = np.full(shape, "", dtype=object)
    if spills.any():
        fp = train_fit.footprint_bytes(est, shape)
        for idx in zip(*np.nonzero(spills)):
            out[idx] = train_fit.reason(float(fp[idx]), hw)
    return out


def _labels(est, shape) -> np.ndarray:
    """(B, S) bottleneck labels, 'does not fit' where a training step exceeds the device memory."""
    from . import train_fit
    labs = np.broadcast_to(explain.labels(est), shape)
    return np.where(np.broadcast_to(train_fit.spills(est), shape), train_fit.DOES_NOT_FIT, labs)


def _energy(est, hw, throughput, shape, usd_h, gco2, sources: dict, devices: int = 1) -> dict:
    """Power (per device) and energy, cost and carbon per unit of work of every point on ``devices`` devices that
    each run it (a what-if tp=N: ``law.power.devices_of``, as ``analyze --tp N`` counts them; nan where the device
    states no power)."""
    from ..law import power
    nan = np.full(shape, np.nan)
    usd, usd_src = power.price(hw, usd_h)
    g, g_src = power.grid(gco2)
    sources[hw.name] = {"price": usd_src, "grid": g_src, "power": hw.sources.get("power.idle", "no [power] idle_w")}
    if not power.has_power(hw):
        return {"power_w": nan, "joules_per_unit": nan, "usd_per_million_units": nan, "gco2_per_million_units": nan}
    p = np.broadcast_to(power.of(est), shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        j = np.where(throughput > 0, devices * p / throughput, np.nan)
        per_h = np.where(throughput > 0, devices * 1e6 / (3600.0 * throughput), np.nan)
    return {"power_w": p, "joules_per_unit": j,
            "usd_per_million_units": nan if usd is None else usd * per_h,
            "gco2_per_million_units": j / power.J_PER_KWH * g * 1e6}


def _check_whatif(steps) -> list:
    """Parse once; the sweep owns batch, seq and the device, so those what-ifs are refused."""
    if not steps:
        return []
    from . import whatif as wi
    parsed = [p for s in steps for p in (wi.parse(s) if isinstance(s, str) else [s])]
    wi.check_stack(parsed)
    for p in parsed:
        if p.transform.stage != "graph":
            raise IronlawError(f"sweep: what-if '{p.text}' {_owned(p.transform.name)}")
    return parsed


# what-ifs that change what the sweep itself varies or holds fixed -> the sweep's flag that owns it
SWEEP_FLAGS = {"batch": "--batch", "seq": "--seq", "hardware": "--on"}


def _owned(name: str) -> str:
    """Why the what-if ``name`` (a rebuild or device step) cannot run inside a sweep, naming the flag that owns it."""
    if name in SWEEP_FLAGS:
        return f"conflicts with the sweep's own {SWEEP_FLAGS[name]}; put those values in the {SWEEP_FLAGS[name]} list"
    return (f"changes the device ({name}), and the sweep prices each --on device as its catalog entry states it; "
            f"price it with `ironlaw analyze` (--{name}) or `ironlaw compare` instead")


def _vector(x, what: str) -> np.ndarray:
    """The grid of ``what`` (batch or seq), each value in the range ``analyze`` takes (``workloads.check_size``)."""
    from .workloads import MAX_BATCH, MAX_SEQ, check_size
    upper = {"batch": MAX_BATCH, "seq": MAX_SEQ}[what]
    if isinstance(x, str):
        return parse_list(x, what, upper)
    a = np.atleast_1d(np.asarray(x, dtype=float))
    if a.ndim != 1 or a.size == 0:
        raise IronlawError(f"sweep: {what} must be a non-empty 1-D list")
    check_size(a, what, upper)
    return a


def _predict(spec, hw, batch, seq, phase, dtype, whatif, composition):
    from . import precision, workloads
    # a training step in fp8, mxfp8 or fp4 lowers its layers' linear GEMMs of a bf16 step, as analyze does
    low = dtype if phase == "train" and dtype is not None and precision.is_low(dtype) else None
    req = workloads.Request(spec, phase=phase, batch=batch, seq=seq, dtype=precision.WIDE if low else dtype,
                            device="cuda" if hw.kind == "gpu" else "cpu")
    g = workloads.resolve(req)
    workloads.check_context(g, seq)
    if low:
        from .parallel.step import lowered
        g = lowered(precision.lower(g, low, hw.features.get("fp8_any_layout", False)), hw)
    if whatif:
        from ..models import whatif as wi
        g, hw = wi.apply(g, hw, list(whatif))
    from .priced import priced
    return law.predict(*priced(g, hw), composition)


def _work_units(g, shape) -> tuple[np.ndarray, str]:
    if "tokens" in g.meta:
        return np.broadcast_to(np.asarray(g.meta["tokens"], dtype=float), shape), "tokens/s"
    return np.broadcast_to(np.asarray(g.meta.get("batch", 1), dtype=float), shape), "samples/s"


def _ridges(spec, hw, b, s, labs, phase, dtype, whatif, composition) -> list[dict]:
    out = []
    seqs = [None] if s is None else list(s)
    for j, sv in enumerate(seqs):
        col = labs[:, j]
        for i in range(len(b) - 1):
            if col[i] == col[i + 1]:
                continue
            lo, hi = int(b[i]), int(b[i + 1])
            exact = _refine(spec, hw, lo, hi, col[i], sv, phase, dtype, whatif, composition)
            out.append({"hardware": hw.name, "seq": None if sv is None else int(sv), "from": str(col[i]),
                        "to": str(col[i + 1]), "batch_before": lo, "batch_after": hi, "batch": exact})
    return out


def _refine(spec, hw, lo: int, hi: int, lab_lo: str, sv, phase, dtype, whatif, composition) -> int:
    """The smallest whole batch in (lo, hi] whose label is no longer ``lab_lo`` (first flip)."""
    while hi - lo > 1:
        cand = np.unique(np.linspace(lo + 1, hi, min(REFINE_POINTS, hi - lo)).round())
        est = _predict(spec, hw, cand, None if sv is None else np.array([float(sv)]), phase, dtype, whatif, composition)
        labs = _labels(est, np.shape(est.total_s)).reshape(cand.size, -1)[:, 0]
        flipped = np.nonzero(labs != lab_lo)[0]
        if flipped.size == 0:
            return hi
        k = int(flipped[0])
        new_hi = int(cand[k])
        new_lo = int(cand[k - 1]) if k > 0 else lo
        if (new_lo, new_hi) == (lo, hi):
            break
        lo, hi = new_lo, new_hi
    return hi


def grid(specs, on, batch, seq=None, phase=None, dtype=None) -> dict:
    """Workloads × hardware × batch × seq without ridge refinement: {(spec, hw): time_s (B, S)}."""
    out = {}
    b = _vector(batch, "batch")
    s = None if seq is None else _vector(seq, "seq")
    from ..machine import hardware
    hws = [hardware.get(h) if isinstance(h, str) else h for h in on]
    for spec in specs:
        for hw in hws:
            est = _predict(spec, hw, b[:, None], None if s is None else s[None, :], phase, dtype, (), "overlap")
            out[(spec, hw.name)] = est.total_s
    return out
