"""Fit a profile's [calibration] table from `ironlaw validate` runs, and score it on other runs.

    cal = fit.fit(hw, fit_docs, held_out=held_docs)        # a [calibration] table (ironlaw.machine.calibration format)
    fit.save(profile_path, cal)                             # atomic rewrite of the profile's [calibration]
    rows = fit.score(calibration.with_calibration(hw, cal), docs)

What is fitted, on the FIT cases only (held-out cases are named in the table, never looked at):
1. per op kind: compute η, memory η (of its activations), fixed latency; GEMVs (all dtypes): the
   bandwidth weights read from memory reach and a GEMV η; GEMMs per dtype: η(M, N, K), and on a CPU
   the packing share ``serial`` and the weights' η (x @ W's own, ``streamed_kn``, where the probe timed
   both layouts) — from the probe's hot and cold GEMMs alone when it has them (``gemv_m``, where the
   library's GEMV path ends, and ``gemv_pass``, what each further row on it re-reads, are measured by the
   probe, not fitted);
2. convolutions and attention kernels: the same shape model η(M, N, K) (``[calibration.conv.fp32]`` …);
3. op classes: an op name whose ops carry a visible share of the measured time, in two shapes or more,
   gets its own compute η / memory η / latency (``[calibration.op."aten::max_pool2d_with_indices"]``)
   when that fits its ops clearly better than its kind's values — transcendentals and pooling are not
   average elementwise ops (never convolutions once their shape model is fitted: one flat η would
   replace it);
4. the framework's share: what a run costs end to end beyond its ops timed one by one, split into
   seconds per op between ops (``framework_s``) and a share of kernel time (``framework_share``).
   When the fitted runs hold more than one front end (Hugging Face modules, plain torch), each gets its
   own pair too (``[calibration.frontend.<name>]``): their Python between kernels differs several-fold.
The probe's own micro-benchmarks (GEMM grid with GEMVs, copies, elementwise) are fitted with the runs.
Every step minimises the mean |log(predicted / measured)| over the ops it touches, weighted by √(measured
time), each case weighing the same (``fitcore.Problem``, Nelder–Mead from the best points of a small grid);
a shape model or an op class is kept only where it clearly improves that loss. docs/how-it-models.md has
the order and the reasons.
"""
from __future__ import annotations

import math

import numpy as np

from pathlib import Path

from . import calibrate
from .. import validate
from ...machine.cache import fits_last_cache
from ...machine.calibration import MAX_LATENCY_S, MAX_MEMORY_ETA, SCHEMA, STREAMED, check
from ...core.errors import IronlawError
from .fitcore import (Observation, Problem, fit_group, grid, layouts_identifiable, packs_weights, round4,
                      serial_identifiable, spills)
from ...core.gemmshape import gemm_dims, gemv_passes, is_gemv, kn_rows
from ...core.graph import KINDS, SPLIT_CLASSES, Op, frontend
from ...machine.hardware import load_file
from .build import gemv_tables, observations as probe_observations
from ...machine.profile import replace_table
from ..validate.compare import row_attrs

CLASS_MIN_SHARE = 0.01        # an op name gets its own class when it holds ≥ 1% of some case's op time
CLASS_MIN_LOSS = 0.03         # … and its kind's values miss its ops by ≥ 3% (mean |log error|)
CLASS_MIN_GAIN = 0.10         # … and its own values cut that loss by ≥ 10%
SHAPE_MIN_GAIN = 0.02
MIN_OBS_PER_PARAM = 2         # fewer ops than this per parameter: fit fewer parameters
FRONTEND_MIN_CASES = 2        # a front end gets its own framework terms from this many fitted runs of it
SHAPE_MODEL_MIN_SHAPES = 8    # a conv / attention shape model (4–5 parameters) needs this many different shapes


def label(case: dict) -> str:
    """A case's name in reports and in the calibration's fitted / held_out lists."""
    w = case["workload"]
    parts = [w["name"], w["phase"], f"b{w.get('batch', 1)}"]
    if w.get("seq"):
        parts.append(f"s{w['seq']}")
    return " ".join(str(p) for p in parts)


def observations(cases: list[dict], stat: str = "median", hw=None) -> list[Observation]:
    """One observation per measured op of each case (time per invocation). With ``hw``, the ops of a case
    whose whole footprint stays in the last cache level are marked so (``attrs['resident']``), as the law
    places them when it predicts the case."""
    out = []
    for c in cases:
        ds = f"validate:{label(c)}"
        resident = hw is not None and bool(fits_last_cache(c["workload"].get("footprint", {}), hw))
        for r in c["ops"]:
            t = float(r["min_s"] if stat == "min" else r["median_s"]) / max(int(r["count"]), 1)
            if t > 0 and math.isfinite(t):
                op = Op(r["name"], r["kind"], flops=float(r["flops"]), bytes=dict(r["bytes"]), dtype=r["dtype"],
                        attrs={**({"resident": True} if resident else {}), **row_attrs(r)})
                out.append(Observation(op, t, ds, r.get("measured_cv")))
    return out


def framework_gap(cases: list[dict], stat: str = "median") -> tuple[float, float]:
    """What a run costs end to end beyond its ops timed one by one, as ``(seconds per op, share of op time)``.

    Per case the gap is end to end minus the sum of its measured ops (paired run by run when the
    document has it). Both terms are fitted together, ≥ 0, by least squares on the gap relative to the
    case's end-to-end time: a constant per op (Python between ops) and a share that grows with the
    kernels' time (the gap grows with batch, not only with the op count).
    """
    rows = []
    for c in cases:
        t = c.get("total", {})
        e2e = c["spread"]["min_s"] if stat == "min" else c["spread"]["median_s"]
        ops = sum(float(r["min_s"] if stat == "min" else r["median_s"]) for r in c["ops"])
        gap = t.get("framework_paired_s")
        if gap is None:
            gap = e2e - ops
        rows.append((len(c["ops"]) / e2e, ops / e2e, gap / e2e))
    if not rows:
        return 0.0, 0.0
    a = np.array([r[:2] for r in rows])
    y = np.array([r[2] for r in rows])
    best = (0.0, 0.0)
    best_loss = float(np.sum(y ** 2))
    candidates = [np.linalg.lstsq(a, y, rcond=None)[0]]
    for j in (0, 1):                               # one term alone (the other at 0)
        col = a[:, j]
        x = float(col @ y / (col @ col)) if col @ col > 0 else 0.0
        candidates.append(np.array([x, 0.0]) if j == 0 else np.array([0.0, x]))
    for x in candidates:
        if np.all(x >= 0):
            loss = float(np.sum((a @ x - y) ** 2))
            if loss < best_loss:
                best, best_loss = (float(x[0]), float(x[1])), loss
    return best


def fit(hw, cases: list[dict], held_out: list[dict] = (), stat: str = "median", source: str | None = None) -> dict:
    """A [calibration] table fitted on ``cases`` (validate case documents); ``held_out`` are only named."""
    if not cases:
        raise IronlawError("fit: no validate runs to fit on")
    names = [label(c) for c in cases]
    held = [label(c) for c in held_out]
    both = sorted(set(names) & set(held))
    if both:
        raise IronlawError(f"fit: case '{both[0]}' is both fitted and held out; a held-out case must not be fitted")
    obs = observations(cases, stat, hw)
    probed = []
    if "probe" in hw.extra:                   # the machine's own micro-benchmarks are fitted too: they hold
        probe_obs = probe_observations(hw.extra["probe"])       # shapes validate runs may lack (GEMVs)
        obs += probe_obs
        probed = sorted({o.dataset for o in probe_obs})
    source = source or (f"measured: fitted by ironlaw.measure.calibrate.fit to {len(cases)} validate runs ({stat} times) on "
                        f"{hw.name}: " + "; ".join(names) + (f"; and the probe's {', '.join(probed)}" if probed else ""))
    cal = {"schema": SCHEMA, "source": source,
           "fitted": sorted(f"validate:{n}" for n in names) + probed,
           "held_out": [f"validate:{h}" for h in held]}
    prob = Problem(hw, obs)
    if "probe" in hw.extra:                   # measured, not fitted: where the GEMV path ends
        cal["matmul"] = gemv_tables(hw.extra["probe"])
    cal = fit_kinds(prob, cal)
    cal["matmul"] = {dt: p for dt, p in cal.get("matmul", {}).items() if "eta_max" in p}   # dtypes never run
    cal = fit_classes(prob, cal)
    cal.update(framework_pair(cases, stat))
    by_frontend = framework_by_frontend(cases, stat)
    if by_frontend:
        cal["frontend"] = by_frontend
    return check(cal, "calibration (fitted)")


def framework_by_frontend(cases: list[dict], stat: str = "median") -> dict:
    """Each front end's own framework terms (``framework_gap`` on its cases alone), where the fitted cases
    hold more than one front end and at least FRONTEND_MIN_CASES of it; {} otherwise (the global terms
    then serve every graph): Hugging Face modules spend several times more Python between their kernels
    than torchvision models or a plain nn.Sequential, which one pair for all cases cannot say."""
    groups: dict[str, list[dict]] = {}
    for c in cases:
        groups.setdefault(frontend(c["workload"]), []).append(c)
    if len(groups) < 2:
        return {}
    out = {}
    for name, cs in sorted(groups.items()):
        if len(cs) >= FRONTEND_MIN_CASES:
            out[name] = framework_pair(cs, stat)
    return out


def framework_pair(cases: list[dict], stat: str = "median") -> dict:
    """``framework_gap`` as the calibration stores it: {framework_s, framework_share}, rounded."""
    per_op, share = framework_gap(cases, stat)
    return {"framework_s": round4(per_op), "framework_share": round4(min(share, 1.0))}


def _shapes(prob: Problem) -> int:
    """How many different ops ``prob`` holds (FLOPs and bytes): twelve layers' identical attention calls are
    one shape — they average noise, they say nothing about how time depends on shape."""
    total = sum(prob.cols.bytes.values(), np.zeros(prob.cols.flops.shape)).reshape(len(prob.meas), -1)[:, 0]
    flops = prob.cols.flops.reshape(len(prob.meas), -1)[:, 0]
    return len({(float(f), float(b)) for f, b in zip(flops, total)})


LAT = (1e-6, 5e-6, 30e-6)


def fit_kinds(prob: Problem, cal: dict) -> dict:
    """Per kind (not matmul): compute η, memory η, latency; then GEMVs; GEMMs per dtype; GEMVs again
    (against each dtype's GEMM η); then the conv and attention shape models."""
    split = _split_classes(prob)
    for kind in [k for k in KINDS if k != "matmul" and ((prob.kinds == k) & (split == "")).any()]:
        cal = _fit_kind(prob.sub((prob.kinds == kind) & (split == "")), cal, kind)
    for cls in sorted(set(split.tolist()) - {""}):        # conv-depthwise …: their own [calibration.kernel]
        cal = _fit_kind(prob.sub(split == cls), cal, cls, ("kernel", cls))
    mk = cal.get("memory", {}).get("kind", {})
    produced = mk.get("elementwise", mk.get("copy"))
    if produced is not None:
        cal.setdefault("memory", {})["produced"] = produced
    cal = fit_gemv(prob, cal)
    mm = prob.kinds == "matmul"
    dts = sorted(set(prob.dtypes[mm].tolist()), key=lambda d: (-int((mm & (prob.dtypes == d)).sum()), d))
    for dt in dts:                     # the dtype with the most ops first: it alone fits the shared latency
        cal = _fit_gemms(prob, cal, dt, first=dt == dts[0])
    cal = fit_gemv(prob, cal)
    for kind in ("conv", "attention"):
        for dt in sorted(set(prob.dtypes[prob.kinds == kind].tolist())):
            cal = _fit_shape(prob.sub((prob.kinds == kind) & (prob.dtypes == dt) & (split == "")), cal, kind, dt)
    return cal


def _split_classes(prob: Problem) -> np.ndarray:
    """Per observed op, its split op class (``graph.SPLIT_CLASSES``: conv-depthwise, conv-grouped, pool-max,
    pool-avg) where it has one and names no kernel of its own, else ''."""
    kern = prob.cols.kernels if prob.cols.kernels is not None else [""] * len(prob.meas)
    return np.array([k if k in SPLIT_CLASSES else "" for k in kern], dtype=object)


def _fit_kind(sub: Problem, cal: dict, kind: str, scope: tuple | None = None) -> dict:
    """One kind's compute η, memory η (of its activations) and, with enough ops, its latency; with ``scope``
    ("kernel", <class>) those of a split op class, in its [calibration.kernel."<class>"]."""
    paths = ((scope + ("compute",), scope + ("memory",), scope + ("latency_s",)) if scope else
             (("compute", kind), ("memory", "kind", kind), ("latency_s", kind)))
    params, axes = [], []
    if (sub.c0 > 0).any():
        params.append((paths[0], 1.0))
        axes.append((0.01, 0.1, 0.6))
    if (sub.d0 > 0).any():
        params.append((paths[1], MAX_MEMORY_ETA))
        axes.append((0.2, 0.6, 0.8))        # starts under the law's bound: above 1 the loss is flat
    if len(sub.meas) >= MIN_OBS_PER_PARAM * (len(params) + 1):
        params.append((paths[2], MAX_LATENCY_S))
        axes.append(LAT)
    else:                                  # few ops: one efficiency, the profile's latency
        params, axes = params[:1], axes[:1]
    return fit_group(sub, cal, params, grid(*axes))


def _fit_gemms(prob: Problem, cal: dict, dt: str, first: bool) -> dict:
    """GEMMs of one dtype: η(M, N, K) (and the shared matmul latency for the first dtype); on a CPU the
    packing share and the weights' η — fitted on the probe's hot and cold GEMMs alone where it has them,
    which were made to tell packing from compute, and held from then on."""
    mm = prob.kinds == "matmul"
    sub = prob.sub(mm & (prob.dtypes == dt))
    params = [(("matmul", dt, "eta_max"), 1.0), (("matmul", dt, "m_half"), 1e9), (("matmul", dt, "nk_half"), 1e9)]
    axes = [(0.5, 0.9), (2.0, 16.0), (16.0, 128.0)]
    if first:
        params.append((("latency_s", "matmul"), MAX_LATENCY_S))
        axes.append(LAT)
    table = cal.get("matmul", {}).get(dt, {})
    packing = [(("matmul", dt, "serial"), 1.0),                    # weight packing not hidden, and its
               (("matmul", dt, "streamed"), MAX_MEMORY_ETA)]      # traffic (see gemmshape)
    if packs_weights(prob.hw):
        probe_rows = mm & (prob.dtypes == dt) & (prob.ds == "probe:gemm")
        probe_sub = prob.sub(probe_rows) if probe_rows.any() else None
        if probe_sub is not None and serial_identifiable(probe_sub.cols, probe_sub.all(), table):
            cal = _fit_probe_gemms(probe_sub, cal, dt, params[:3] + packing, axes[:3], table)
            # then the runs' own GEMMs (the probe's rows one more case) refit the ceiling and M's half point,
            # the probe's packing and weight traffic held: the models' GEMMs (operands just produced) run
            # faster than the probe's cold rows say (benchmarks/accuracy.py --from re-fits saved runs)
            params = params[3:] + [(("matmul", dt, "eta_max"), 1.0), (("matmul", dt, "m_half"), 1e9)]
            axes = axes[3:] + [(cal["matmul"][dt]["eta_max"],), (cal["matmul"][dt]["m_half"],)]
        elif serial_identifiable(sub.cols, sub.all(), table):
            params += packing
            axes += [(0.1, 0.9), (0.4, 0.9)]
    if params:
        cal = fit_group(sub, cal, params, grid(*axes))
    return cal


def _fit_probe_gemms(probe_sub: Problem, cal: dict, dt: str, params: list, axes: list, table: dict) -> dict:
    """The GEMM model, packing and weight traffic on the probe's hot and cold GEMMs of one shape at several
    M; the spilled copy where a weight exceeds the resident limit, each layout's own m_half and weight η
    where both layouts were timed."""
    extra, extra_axes = [], []
    if spills(probe_sub.hw, probe_sub.cols, probe_sub.all()):                    # spilled copy
        cal.setdefault("matmul", {}).setdefault(dt, {})["pack"] = 1.0
        extra, extra_axes = [(("matmul", dt, "pack"), 8.0)], [(0.3, 1.0)]
    if layouts_identifiable(probe_sub.cols, probe_sub.all(), table):
        cal.setdefault("matmul", {}).setdefault(dt, {})["m_half_nt"] = 8.0       # x @ Wᵀ's own m_half
        extra.append((("matmul", dt, "m_half_nt"), 1e9))
        extra_axes.append((2.0, 16.0))
        extra.append((("matmul", dt, "streamed_kn"), MAX_MEMORY_ETA))           # x @ W's packing
        extra_axes.append((0.2, 0.6))
    return fit_group(probe_sub, cal, params + extra, grid(*axes, (0.1, 0.9), (0.4, 0.9), *extra_axes))


def _fit_shape(sub: Problem, cal: dict, kind: str, dt: str) -> dict:
    """A conv or attention shape model η(M, N, K) of one dtype, kept where it clearly beats the kind's flat
    η. The kind's memory η is refitted with it and weights (attention: its KV cache) get their own η:
    eager oneDNN reorders a conv's activations to its blocked layout and back on every call, which one η
    for both would charge to the weights too; a decode step streams its KV cache cold while prefill's K
    and V were just produced. Attention's fixed cost per call is refitted with its shape model."""
    if _shapes(sub) < SHAPE_MODEL_MIN_SHAPES:
        return cal
    base = sub.loss(cal)
    eta0 = cal.get("compute", {}).get(kind, sub.hw.eta(kind))
    mem0 = cal.get("memory", {}).get("kind", {}).get(kind, 0.6)
    params = [((kind, dt, "eta_max"), 1.0), ((kind, dt, "m_half"), 1e9), ((kind, dt, "nk_half"), 1e9),
              (("memory", "kind", kind), MAX_MEMORY_ETA)]
    axes = [(min(eta0 * 1.5, 1.0), min(eta0 * 3, 1.0)), (1.0, 64.0), (4.0, 64.0), (mem0, 0.6)]
    if any((sub.cols.bytes.get(c, np.zeros(1)) > 0).any() for c in STREAMED):
        params.append(((kind, dt, "streamed"), MAX_MEMORY_ETA))
        axes.append((0.5, 1.0))
    if sub.cols.nk is not None and (sub.cols.nk[:, 0] > 0).all():      # every op states its K
        params.append(((kind, dt, "k_half"), 1e9))
        axes.append((16.0, 128.0))
    if kind == "attention":
        params.append((("latency_s", kind), MAX_LATENCY_S))
        axes.append(LAT)
    new = fit_group(sub, cal, params, grid(*axes))
    return new if sub.loss(new) < base * (1 - SHAPE_MIN_GAIN) else cal


# dense: where a GEMV η does not bind, the loss is flat and the simplex stops where it started
GEMV_ETA_STARTS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)


def fit_gemv(prob: Problem, cal: dict) -> dict:
    """Matrix-vector products (the probe's hot and cold GEMVs, decode at batch 1) of every dtype:
    the bandwidth weights read from memory reach (memory.streamed, which every streamed class shares)
    and, per dtype with enough of them, a GEMV compute η. Fitted before the GEMMs, on these rows alone,
    so that no GEMM group can move the shared 'streamed' it does not see.

    Batched GEMVs (``aten::bmm`` with one row) are left out: one large op (a tied LM head) in one case,
    each case weighing the same, would set the weights' bandwidth for every GEMV of every other case.

    The weights' bandwidth belongs to the memory, not to a dtype: it is fitted on the GEMVs of the dtype
    that streams fastest (median weight bytes per second over GEMVs of ≥ 1 MiB), with that dtype's GEMV η;
    a dtype whose GEMVs run slower per byte is limited by its own kernel (bf16 converting before it
    multiplies), so each other dtype then fits its GEMV η alone, the bandwidth held."""
    mm = prob.kinds == "matmul"
    m = gemm_dims(prob.cols)[0].reshape(len(prob.meas), -1)[:, 0]
    w = prob.cols.bytes.get("weights", np.zeros(prob.cols.flops.shape)).reshape(len(prob.meas), -1)[:, 0]
    kn = kn_rows(prob.cols).reshape(-1)
    gemv = np.zeros(len(prob.meas), bool)
    for dt in set(prob.dtypes[mm].tolist()):
        rows = mm & (prob.dtypes == dt)
        gemv |= rows & is_gemv(cal.get("matmul", {}).get(dt, {}), m, kn)
    rows = gemv & (prob.names != "aten::bmm")     # hot ones (operands in cache) pin the GEMV η, cold ones
    if rows.sum() < MIN_OBS_PER_PARAM:
        return cal
    of = {dt: rows & (prob.dtypes == dt) for dt in sorted(set(prob.dtypes[rows].tolist()))}
    own = {dt: bool(r.sum() >= MIN_OBS_PER_PARAM and "eta_max" in cal.get("matmul", {}).get(dt, {}))
           for dt, r in of.items()}
    streaming = rows & (w > 0)
    if streaming.sum() < MIN_OBS_PER_PARAM:              # no weights to stream: GEMV η only
        params = [(("matmul", dt, "gemv_eta"), 1.0) for dt in of if own[dt]]
        return fit_group(prob.sub(rows), cal, params, grid(*[(0.05, 0.5)] * len(params))) if params else cal
    pool = streaming & (w >= 2**20) if (streaming & (w >= 2**20)).any() else streaming
    read = w.copy()                                       # weight bytes read, further GEMV-path passes included
    for dt in of:
        r = prob.dtypes == dt
        read[r] = w[r] * (1.0 + gemv_passes(cal.get("matmul", {}).get(dt, {}), m[r], kn[r]))
    rate = {dt: float(np.median(read[pool & r] / prob.meas[pool & r])) for dt, r in of.items() if (pool & r).any()}
    first = max(rate, key=rate.get)
    params, axes = [(("memory", "streamed"), MAX_MEMORY_ETA)], [(0.5, 1.0)]
    if own[first]:
        params.append((("matmul", first, "gemv_eta"), 1.0))
        axes.append((0.05, 0.5))
    cal = fit_group(prob.sub(of[first]), cal, params, grid(*axes))
    for dt, r in of.items():
        if dt != first and own[dt]:
            cal = fit_group(prob.sub(r), cal, [(("matmul", dt, "gemv_eta"), 1.0)], [[x] for x in GEMV_ETA_STARTS])
    return cal


def fit_classes(prob: Problem, cal: dict) -> dict:
    """Op names worth their own class (see the module doc), fitted one after another, biggest first."""
    share: dict[str, float] = {}                      # the largest share of one case's op time
    for name in set(prob.names.tolist()):
        rows = prob.names == name
        share[name] = max(float(prob.meas[rows & (prob.ds == d)].sum() / prob.meas[prob.ds == d].sum())
                          for d in set(prob.ds[rows].tolist()))
    for name in sorted(share, key=lambda n: -share[n]):
        rows = prob.names == name
        kind = prob.kinds[rows][0]
        if kind == "matmul" or share[name] < CLASS_MIN_SHARE:
            continue
        if kind in ("conv", "attention") and cal.get(kind):
            continue         # a class would replace the fitted shape model (its ops state N and K) by one flat η
        if all(str(d).startswith("probe") for d in set(prob.ds[rows].tolist())):
            continue                                  # a micro-benchmark's own name never names a model op
        cal = _fit_class(prob.sub(rows), cal, name)
    return cal


def _fit_class(sub: Problem, cal: dict, name: str) -> dict:
    """One op name's own compute η / memory η / latency, kept where it clearly beats its kind's values; none
    from ops of one shape (fewer than ``MIN_OBS_PER_PARAM`` shapes): one shape cannot tell a fixed cost from
    one that grows with the op, and an η fitted to a launch-bound call (a global average pool's mean at
    batch 1) would scale that cost with the FLOPs of every larger call."""
    base = sub.loss(cal)
    if base < CLASS_MIN_LOSS or _shapes(sub) < MIN_OBS_PER_PARAM:
        return cal
    params, axes = [], []
    if (sub.c0 > 0).any():
        params.append((("op", name, "compute"), 1.0))
        axes.append((0.003, 0.03, 0.3))
    if (sub.d0 > 0).any():
        params.append((("op", name, "memory"), MAX_MEMORY_ETA))
        axes.append((0.1, 0.4, 0.8))        # (efficiency.within_peak), which the simplex cannot leave
    if len(sub.meas) >= MIN_OBS_PER_PARAM * (len(params) + 1):
        params.append((("op", name, "latency_s"), MAX_LATENCY_S))
        axes.append(LAT)
    elif len(sub.meas) < MIN_OBS_PER_PARAM * len(params):
        params, axes = params[:1], axes[:1]
    new = fit_group(sub, cal, params, grid(*axes))
    return new if sub.loss(new) < base * (1 - CLASS_MIN_GAIN) else cal


def score(hw, cases: list[dict], stat: str | None = None) -> list[dict]:
    """Each case re-predicted on ``hw`` against its own measurements: one summary row per case."""
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
    return replace_table(path, "calibration", check(cal, "calibration"))


def recalibrate(path, extra: list, source: str, held_out: list[str] = ()) -> dict:
    """Refit a saved profile's [calibration] from its probe rows plus ``extra`` observations (per-op times
    from ``ironlaw validate``, as ``Observation``); rewrite it atomically. ``held_out`` names datasets kept
    out of the fit (score them with ``calibrate.report``); ``source`` says what was fitted."""
    hw = load_file(path)
    probe = hw.extra.get("probe")
    if not probe:
        raise IronlawError(f"{path}: not a probe profile (no [probe] table); run `ironlaw probe` first")
    kept = [o for o in extra if o.dataset not in set(held_out)]
    cal = calibrate.fit(hw, probe_observations(probe) + kept, source=source, held_out=list(held_out))
    replace_table(Path(path), "calibration", cal)
    return cal
