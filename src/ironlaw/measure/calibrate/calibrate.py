"""Fit a ``[calibration]`` table to measured ops (the probe's rows, published per-op times) and score it.

    cal = calibrate.fit(hw, observations, source="derived: fitted to …", held_out=[…])
    calibrate.report(calibration.with_calibration(hw, cal), held_out_observations)

Groups are fitted one after another on the law itself (``fitcore.Problem``): each non-GEMM kernel (ops
naming one) or else kind — compute η, memory η, latency — then GEMMs per dtype — the shape model, the
streamed weights' η, latency, and on a CPU the packing share. Each dataset counts equally. The fields and
the order are in docs/how-it-models.md; ``ironlaw.measure.calibrate.fit`` fits validate runs with the same machinery.
"""
from __future__ import annotations

import math

import numpy as np

from ...law import law
from ...law.efficiency import compute_eta, memory_eta
from ...machine.calibration import MAX_MEMORY_ETA, OP_FIELDS, SCHEMA, Calibration, check
from .fitcore import (ETA_MIN, HALF_BOUNDS, LAT_BOUNDS, Observation, Problem, clip, copy_table, exp,
                      layouts_identifiable, minimize, packs_weights, round4, serial_identifiable, spills)
from ...core.gemmshape import MEASURED_FIELDS
from ...core.graph import KINDS, Graph

MIN_ROWS_FOR_LATENCY = 3        # fewer observations of a kind: keep the device's per-op latency


def fit(hw, observations: list[Observation], source: str, held_out: list[str] = (), start: dict | None = None) -> dict:
    """Fit a [calibration] table to ``observations`` (all of them are 'fitted'; keep held-out ones out)."""
    obs = [o for o in observations if o.time_s > 0 and math.isfinite(o.time_s)]
    prob = Problem(hw, obs, weighting="per_case")
    cal = _start(source, prob, held_out, start)
    cal = _fit_kernels_and_kinds(prob, cal)
    mk = cal["memory"]["kind"]
    produced = mk.get("copy", mk.get("elementwise"))
    if produced is not None:
        cal["memory"]["produced"] = produced
    dts = prob.dtypes[prob.kinds == "matmul"].tolist()
    gemm_dts = sorted(set(dts), key=lambda d: (-dts.count(d), d))   # the dtype with the most shapes first
    for dt in gemm_dts:
        cal = _fit_gemm(prob, cal, dt, first=dt == gemm_dts[0])
    return check(_finish(cal), "calibration (fitted)")


def _start(source: str, prob: Problem, held_out, start: dict | None) -> dict:
    cal = {"schema": SCHEMA, "source": source, "fitted": sorted(set(prob.ds.tolist())), "held_out": list(held_out),
           "compute": {}, "memory": {"kind": {}}, "latency_s": {}, "matmul": {}, "kernel": {}}
    if start:
        for key in ("compute", "latency_s", "matmul", "kernel"):
            cal[key].update(start.get(key, {}))
        cal["memory"].update({k: v for k, v in start.get("memory", {}).items() if k != "kind"})
        cal["memory"]["kind"].update(start.get("memory", {}).get("kind", {}))
    return cal


def _first_latency(prob: Problem, rows: np.ndarray) -> float:
    """A latency to start from: half the smallest measured kernel time of ``rows``."""
    return math.log(clip(float(np.min((prob.meas - prob.offset)[rows])) * 0.5, *LAT_BOUNDS))


def _fit_kernels_and_kinds(prob: Problem, cal: dict) -> dict:
    """Non-GEMM ops, per kernel where the op names one, else per kind (a kind's memory η also sets
    'produced', the activation pattern of every op, GEMMs included)."""
    kern = np.array(prob.cols.kernels if prob.cols.kernels is not None else [""] * len(prob.meas), dtype=object)
    kinds = prob.kinds
    groups = [("kernel", k, (kern == k) & (kinds != "matmul")) for k in sorted(set(kern.tolist()) - {""})]
    groups += [("kind", k, (kinds == k) & (kern == "")) for k in KINDS if k != "matmul"]
    for scope, key, rows in [g for g in groups if g[2].any()]:
        has_c, has_d = bool((prob.c0[rows] > 0).any()), bool((prob.d0[rows] > 0).any())
        free_lat = rows.sum() >= MIN_ROWS_FOR_LATENCY
        x0 = [math.log(0.5), math.log(0.5), _first_latency(prob, rows)]

        def apply(x, c=cal, scope=scope, key=key, free_lat=free_lat, has_c=has_c, has_d=has_d):
            c = copy_table(c)
            t = _slots(c, scope, key)
            if has_c:
                t["compute"][0][t["compute"][1]] = clip(exp(x[0]), ETA_MIN, 1.0)
            if has_d:
                t["memory"][0][t["memory"][1]] = clip(exp(x[1]), ETA_MIN, MAX_MEMORY_ETA)
            t["latency_s"][0][t["latency_s"][1]] = clip(exp(x[2]), *LAT_BOUNDS) if free_lat else prob.hw.op_latency_s
            return c
        sub = prob.sub(rows)
        # two starts: memory-bound (η_compute idle) and compute-bound (a slow vector kernel)
        starts = [x0] + ([[math.log(0.03)] + x0[1:]] if has_c else [])
        cal = apply(_best(lambda x: sub.loss(apply(x)), starts))
        _drop_inactive(cal, prob, rows, _slots(cal, scope, key))
    return cal


def _fit_gemm(prob: Problem, cal: dict, dt: str, first: bool) -> dict:
    """GEMMs of one dtype: η(M, N, K); the first (largest) dtype also fits the shared per-kind latency and
    'streamed'; on a CPU, where the data can pin them, the packing share, the spilled copy and the two
    weight layouts' own half point and weight η."""
    rows = (prob.kinds == "matmul") & (prob.dtypes == dt)
    free_lat = rows.sum() >= MIN_ROWS_FOR_LATENCY and first
    p0 = {"eta_max": 0.8, "m_half": 8.0, "nk_half": 64.0, **cal["matmul"].get(dt, {})}
    keep = {k: p0[k] for k in MEASURED_FIELDS if k in p0}          # measured, not fitted
    x0 = [math.log(p0["eta_max"]), math.log(max(p0["m_half"], 1.0)), math.log(max(p0["nk_half"], 1.0)),
          math.log(cal["memory"].get("streamed", 0.7)), _first_latency(prob, rows)]
    fit_serial = packs_weights(prob.hw) and serial_identifiable(prob.cols, rows, keep)
    fit_pack = fit_serial and spills(prob.hw, prob.cols, rows)
    x0 += [math.log(0.5), math.log(0.5)] if fit_serial else []
    x0 += [math.log(0.6)] if fit_pack else []
    nt_at = len(x0) if layouts_identifiable(prob.cols, rows, keep) else None     # x @ Wᵀ's own m_half
    x0 += [x0[1]] if nt_at is not None else []
    kn_at = len(x0) if nt_at is not None and fit_serial else None               # x @ W's own weight η
    x0 += [math.log(0.5)] if kn_at is not None else []

    def apply(x, c=cal):
        c = copy_table(c)
        t = c["matmul"][dt] = {"eta_max": clip(exp(x[0]), ETA_MIN, 1.0), "m_half": clip(exp(x[1]), *HALF_BOUNDS),
                               "nk_half": clip(exp(x[2]), *HALF_BOUNDS), **keep}
        if nt_at is not None:
            t["m_half_nt"] = clip(exp(x[nt_at]), *HALF_BOUNDS)
        if kn_at is not None:
            t["streamed_kn"] = clip(exp(x[kn_at]), ETA_MIN, MAX_MEMORY_ETA)
        if fit_serial:
            t["serial"] = clip(exp(x[5]), 0.0, 1.0)
            t["streamed"] = clip(exp(x[6]), ETA_MIN, MAX_MEMORY_ETA)
        if fit_pack:
            t["pack"] = clip(exp(x[7]), 0.0, 8.0)
        if first:
            c["memory"]["streamed"] = clip(exp(x[3]), ETA_MIN, MAX_MEMORY_ETA)
        if free_lat:
            c["latency_s"]["matmul"] = clip(exp(x[4]), *LAT_BOUNDS)
        return c
    sub = prob.sub(rows)
    starts = [x0]
    if fit_serial:                # packing against compute has two basins: start from both ends
        starts = [x0[:5] + [math.log(sv), math.log(st)] + x0[7:] for sv in (0.1, 0.9) for st in (0.4, 0.9)]
    return apply(_best(lambda x: sub.loss(apply(x)), starts))


def _best(loss, starts: list) -> np.ndarray:
    """The best Nelder–Mead result over ``starts``."""
    return min((minimize(loss, s) for s in starts), key=loss)


def _finish(cal: dict) -> dict:
    """Kinds never observed get the typical non-GEMM kind's latency (a GEMM's or one kernel's fit stays in
    its scope); fitted numbers to 4 digits; empty tables dropped."""
    fitted_lat = [v for k, v in cal["latency_s"].items() if k not in ("default", "matmul")]
    if fitted_lat and "default" not in cal["latency_s"]:
        cal["latency_s"]["default"] = float(np.median(fitted_lat))
    cal["matmul"] = {dt: {k: round4(v) for k, v in p.items()} for dt, p in cal["matmul"].items() if "eta_max" in p}
    for key in ("compute", "latency_s"):
        cal[key] = {k: round4(v) for k, v in cal[key].items()}
    cal["kernel"] = {k: {f: round4(v) for f, v in p.items()} for k, p in cal["kernel"].items() if p}
    cal["memory"] = {k: (round4(v) if k != "kind" else {kk: round4(vv) for kk, vv in v.items()})
                     for k, v in cal["memory"].items()}
    for key in ("matmul", "compute", "latency_s", "kernel"):
        if not cal[key]:
            del cal[key]
    if not cal["memory"]["kind"]:
        del cal["memory"]["kind"]
    if not cal["memory"]:
        del cal["memory"]
    return cal


def _slots(cal: dict, scope: str, key: str) -> dict:
    """Where a group's compute / memory / latency_s live: (table, key) per field."""
    if scope == "kernel":
        t = cal["kernel"].setdefault(key, {})
        return {f: (t, f) for f in OP_FIELDS}
    return {"compute": (cal["compute"], key), "memory": (cal["memory"]["kind"], key), "latency_s": (cal["latency_s"], key)}


def _drop_inactive(cal: dict, prob: Problem, rows: np.ndarray, slots: dict) -> None:
    """Keep a fitted η only where it binds for two observations (for the one of a group of one: the probe's
    --quick rows of a pooling variant or a grouped conv); an idle parameter means nothing."""
    typed = Calibration.of(cal)
    base_c = np.array([prob.hw.eta(k) for k in KINDS])[prob.cols.kind_idx]
    ec = compute_eta(typed, prob.cols, base_c).reshape(-1)
    em = memory_eta(typed, prob.cols, np.full(len(prob.d0), prob.hw.efficiency["memory"])).reshape(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        comp_binds = (prob.c0 / ec > prob.d0 / em)[rows]
    for field, binds in (("compute", comp_binds), ("memory", ~comp_binds)):
        table, key = slots[field]
        if key in table and binds.sum() < min(2, int(rows.sum())):
            del table[key]


# ---------------------------------------------------------------- scoring

def predicted_s(hw, observations: list[Observation]) -> np.ndarray:
    """Predicted seconds per observation, through ``law.predict`` (the path every prediction takes)."""
    g = Graph("calibration-report", "infer", observations[0].op.dtype, [o.op for o in observations])
    return np.asarray(law.predict(g, hw).op_time_s, float).reshape(-1)


def report(hw, observations: list[Observation]) -> dict[str, dict]:
    """Per dataset: n, median and 90th-percentile absolute relative error of ``hw``'s predictions."""
    pred = predicted_s(hw, observations) + np.array([o.offset_s for o in observations])
    meas = np.array([o.time_s for o in observations])
    err = np.abs(pred / meas - 1.0)
    fitted = set(hw.calibration.fitted) if hw.calibration is not None else set()
    out = {}
    for ds in dict.fromkeys(o.dataset for o in observations):
        sel = np.array([o.dataset == ds for o in observations])
        out[ds] = {"n": int(sel.sum()), "median_abs_err": float(np.median(err[sel])),
                   "p90_abs_err": float(np.percentile(err[sel], 90)), "fitted": ds in fitted}
    return out
