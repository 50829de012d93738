"""Fit a profile's [calibration] table from `ironlaw validate` runs, and score it on other runs.

    cal = fit.fit(hw, fit_docs, held_out=held_docs)        # a [calibration] table (ironlaw.calibrate format)
    fit.save(profile_path, cal)                             # atomic rewrite of the profile's [calibration]
    rows = fit.score(calibrate.with_calibration(hw, cal), docs)

What is fitted, on the FIT cases only (held-out cases are named in the table, never looked at):
1. per op kind: compute η, memory η, fixed latency; GEMMs per dtype: η(M, N, K) and the bandwidth
   reached by streamed weights (``calibrate.fit``, the probe's fitter, on every measured op);
2. convolutions and attention kernels: the same shape model η(M, N, K) (``[calibration.conv.fp32]`` …);
3. op classes: an op name whose ops carry a visible share of the measured time gets its own compute
   η / memory η / latency (``[calibration.op."aten::max_pool2d_with_indices"]``) when that fits its
   ops clearly better than its kind's values — transcendentals and pooling are not average elementwise ops;
4. the framework's share: seconds per op between ops (end to end minus the sum of the measured ops,
   over the number of ops), ``framework_s``.
Every step minimises the time-weighted mean |log(predicted / measured)| over the ops it touches, each
case weighing the same, and keeps a new parameter only where it improves that loss.
"""
from __future__ import annotations

import math

import numpy as np

from . import calibrate
from .errors import IronlawError
from .graph import KINDS, Op

CLASS_MIN_SHARE = 0.01        # an op name gets its own class when it holds ≥ 1% of some case's op time
CLASS_MIN_LOSS = 0.03         # … and its kind's values miss its ops by ≥ 3% (mean |log error|)
CLASS_MIN_GAIN = 0.10         # … and its own values cut that loss by ≥ 10%
SHAPE_MIN_GAIN = 0.02


def label(case: dict) -> str:
    """A case's name in reports and in the calibration's fitted / held_out lists."""
    w = case["workload"]
    parts = [w["name"], w["phase"], f"b{w.get('batch', 1)}"]
    if w.get("seq"):
        parts.append(f"s{w['seq']}")
    return " ".join(str(p) for p in parts)


def observations(cases: list[dict], stat: str = "median") -> list[calibrate.Observation]:
    """One observation per measured op of each case (time per invocation)."""
    out = []
    for c in cases:
        ds = f"validate:{label(c)}"
        for r in c["ops"]:
            t = float(r["min_s"] if stat == "min" else r["median_s"]) / max(int(r["count"]), 1)
            if t > 0 and math.isfinite(t):
                op = Op(r["name"], r["kind"], flops=float(r["flops"]), bytes=dict(r["bytes"]), dtype=r["dtype"])
                out.append(calibrate.Observation(op, t, ds, r.get("measured_cv")))
    return out


def framework_gap(cases: list[dict], stat: str = "median") -> float:
    """Seconds per op between ops: Σ (end to end − Σ measured ops) / Σ ops over ``cases``, ≥ 0."""
    gap, n = 0.0, 0
    for c in cases:
        e2e = c["spread"]["min_s"] if stat == "min" else c["spread"]["median_s"]
        ops = sum(float(r["min_s"] if stat == "min" else r["median_s"]) for r in c["ops"])
        gap += e2e - ops
        n += len(c["ops"])
    return max(gap / n, 0.0) if n else 0.0


class _Problem:
    """The law's raw terms (η = 1, no latency) of every observation, and a weighted log loss."""

    def __init__(self, hw, obs: list[calibrate.Observation]):
        self.hw = calibrate.without_calibration(hw)
        self.cols, self.d0, self.c0 = calibrate._terms(self.hw, obs)
        self.meas = np.array([o.time_s for o in obs])
        self.ds = ds = np.array([o.dataset for o in obs], dtype=object)
        self.w = np.zeros(len(obs))
        for d in set(ds.tolist()):                        # each case weighs the same; within it, by time
            sel = ds == d
            self.w[sel] = self.meas[sel] / self.meas[sel].sum()
        self.kinds = np.array(KINDS)[self.cols.kind_idx]
        self.names = np.array([o.op.name for o in obs], dtype=object)
        self.dtypes = np.array(self.cols.dtypes)

    def times(self, cal: dict) -> np.ndarray:
        """Per-op kernel times (measured op times hold no framework share: it is spent between ops)."""
        return calibrate._times({k: v for k, v in cal.items() if k != "framework_s"}, self.hw, self.cols,
                                self.d0, self.c0)

    def loss(self, cal: dict, rows: np.ndarray) -> float:
        if not rows.any():
            return 0.0
        t = self.times(cal)[rows]
        return float(np.sum(self.w[rows] * np.abs(np.log(t / self.meas[rows]))) / np.sum(self.w[rows]))


def fit(hw, cases: list[dict], held_out: list[dict] = (), stat: str = "median", source: str | None = None) -> dict:
    """A [calibration] table fitted on ``cases`` (validate case documents); ``held_out`` are only named."""
    if not cases:
        raise IronlawError("fit: no validate runs to fit on")
    names = [label(c) for c in cases]
    held = [label(c) for c in held_out]
    both = sorted(set(names) & set(held))
    if both:
        raise IronlawError(f"fit: case '{both[0]}' is both fitted and held out; a held-out case must not be fitted")
    obs = observations(cases, stat)
    source = source or (f"measured: fitted by ironlaw.fit to {len(cases)} validate runs ({stat} times) on "
                        f"{hw.name}: " + "; ".join(names))
    cal = calibrate.fit(calibrate.without_calibration(hw), obs, source, held_out=[f"validate:{h}" for h in held])
    prob = _Problem(hw, obs)
    for kind in ("conv", "attention"):
        cal = _fit_shape(prob, cal, kind)
    cal = _fit_classes(prob, cal)
    cal["framework_s"] = float(f"{framework_gap(cases, stat):.4g}")
    return calibrate.check(cal, "calibration (fitted)")


def _fit_shape(prob: _Problem, cal: dict, kind: str) -> dict:
    for dt in sorted(set(prob.dtypes[prob.kinds == kind].tolist())):
        rows = (prob.kinds == kind) & (prob.dtypes == dt)
        if rows.sum() < 4:
            continue
        base = prob.loss(cal, rows)
        eta0 = cal.get("compute", {}).get(kind, prob.hw.eta(kind))

        def apply(x, c=cal, dt=dt):
            c = calibrate._copy(c)
            c.setdefault(kind, {})[dt] = {"eta_max": min(math.exp(x[0]), 1.0), "m_half": math.exp(x[1]),
                                          "nk_half": math.exp(x[2])}
            return c
        x = calibrate._minimize(lambda x: prob.loss(apply(x), rows), [math.log(min(eta0 * 1.2, 1.0)), 0.0, 3.0])
        new = apply(x)
        if prob.loss(new, rows) < base * (1 - SHAPE_MIN_GAIN):
            new[kind][dt] = {k: float(f"{v:.4g}") for k, v in new[kind][dt].items()}
            cal = new
    return cal


def _fit_classes(prob: _Problem, cal: dict) -> dict:
    """Op names worth their own class (see the module doc), fitted one after another, biggest first."""
    share: dict[str, float] = {}                      # the largest share of one case's op time
    for name in set(prob.names.tolist()):
        rows = prob.names == name
        share[name] = max(float(prob.w[rows & (prob.ds == d)].sum()) for d in set(prob.ds[rows].tolist()))
    for name in sorted(share, key=lambda n: -share[n]):
        rows = prob.names == name
        if prob.kinds[rows][0] == "matmul" or share[name] < CLASS_MIN_SHARE:
            continue
        base = prob.loss(cal, rows)
        if base < CLASS_MIN_LOSS:
            continue
        has_c, has_d = bool((prob.c0[rows] > 0).any()), bool((prob.d0[rows] > 0).any())
        # start from the values the kind gives these ops
        ec0 = calibrate.compute_eta(cal, prob.cols, np.array([prob.hw.eta(k) for k in KINDS])[prob.cols.kind_idx])
        em0 = calibrate.memory_eta(cal, prob.cols, np.full(len(prob.meas), prob.hw.efficiency["memory"]))
        lat0 = calibrate.op_latency({k: v for k, v in cal.items() if k != "framework_s"}, prob.cols,
                                    np.full(len(prob.meas), prob.hw.op_latency_s))
        x0 = [math.log(float(np.median(ec0.reshape(len(prob.meas), -1)[rows, 0]))),
              math.log(float(np.median(em0.reshape(len(prob.meas), -1)[rows, 0]))),
              math.log(max(float(np.median(lat0.reshape(len(prob.meas), -1)[rows, 0])), 1e-8))]

        def apply(x, c=cal, name=name):
            c = calibrate._copy(c)
            p = {}
            if has_c:
                p["compute"] = min(math.exp(x[0]), 1.0)
            if has_d:
                p["memory"] = min(math.exp(x[1]), calibrate.MAX_MEMORY_ETA)
            p["latency_s"] = min(math.exp(x[2]), calibrate.MAX_LATENCY_S)
            c.setdefault("op", {})[name] = p
            return c
        x = calibrate._minimize(lambda x: prob.loss(apply(x), rows), x0)
        new = apply(x)
        if prob.loss(new, rows) < base * (1 - CLASS_MIN_GAIN):
            new["op"][name] = {k: float(f"{v:.4g}") for k, v in new["op"][name].items()}
            cal = new
    return cal


def score(hw, cases: list[dict], stat: str | None = None) -> list[dict]:
    """Each case re-predicted on ``hw`` against its own measurements: one summary row per case."""
    from . import validate
    out = []
    for c in cases:
        d = validate.repredict(c, hw, stat)
        t = d["total"]
        out.append({"case": label(c), "predicted_s": t["predicted_s"], "measured_s": t["measured_s"],
                    "error": t["error"], "naive_error": t["naive_error"], "uncalibrated_error": t["uncalibrated_error"],
                    "cv": d["spread"]["cv"], "within_25pct_share": d["score"]["ops_within_25pct_time_share"],
                    "ops_measured_s": t["ops_measured_s"], "doc": d})
    return out


def save(path, cal: dict):
    """Write ``cal`` as the [calibration] table of the profile at ``path`` (atomic; other tables kept)."""
    from . import profile
    return profile.replace_table(path, "calibration", calibrate.check(cal, "calibration"))
