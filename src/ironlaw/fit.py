"""Fit a profile's [calibration] table from `ironlaw validate` runs, and score it on other runs.

    cal = fit.fit(hw, fit_docs, held_out=held_docs)        # a [calibration] table (ironlaw.calibrate format)
    fit.save(profile_path, cal)                             # atomic rewrite of the profile's [calibration]
    rows = fit.score(calibrate.with_calibration(hw, cal), docs)

What is fitted, on the FIT cases only (held-out cases are named in the table, never looked at):
1. per op kind: compute η, memory η (of its activations), fixed latency; GEMVs (all dtypes): the
   bandwidth weights read from memory reach and a GEMV η; GEMMs per dtype: η(M, N, K), and on a CPU
   the packing share ``serial`` and the weights' η (x @ W's own, ``streamed_kn``, where the probe timed
   both layouts) — from the probe's hot and cold GEMMs alone when it has them (``gemv_m``, where the
   library's GEMV path ends, and ``gemv_pass``, what each further row on it re-reads, are measured by the
   probe, not fitted);
2. convolutions and attention kernels: the same shape model η(M, N, K) (``[calibration.conv.fp32]`` …);
3. op classes: an op name whose ops carry a visible share of the measured time gets its own compute
   η / memory η / latency (``[calibration.op."aten::max_pool2d_with_indices"]``) when that fits its
   ops clearly better than its kind's values — transcendentals and pooling are not average elementwise ops
   (never convolutions once their shape model is fitted: one flat η would replace it);
4. the framework's share: what a run costs end to end beyond its ops timed one by one, split into
   seconds per op between ops (``framework_s``) and a share of kernel time (``framework_share``).
   When the fitted runs hold more than one front end (Hugging Face modules, plain torch), each gets its
   own pair too (``[calibration.frontend.<name>]``): their Python between kernels differs several-fold.
The probe's own micro-benchmarks (GEMM grid with GEMVs, copies, elementwise) are fitted with the runs.
Every step minimises the mean |log(predicted / measured)| over the ops it touches, weighted by √(measured
time), each case weighing the same (Nelder–Mead from the best points of a small grid); a shape model or an
op class is kept only where it clearly improves that loss.
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


def observations(cases: list[dict], stat: str = "median", hw=None) -> list[calibrate.Observation]:
    """One observation per measured op of each case (time per invocation). With ``hw``, the ops of a case
    whose whole footprint stays in the last cache level are marked so (``attrs['resident']``), as the law
    places them when it predicts the case."""
    from .law import fits_last_cache
    from .validate.compare import row_attrs
    out = []
    for c in cases:
        ds = f"validate:{label(c)}"
        resident = hw is not None and bool(fits_last_cache(c["workload"].get("footprint", {}), hw))
        for r in c["ops"]:
            t = float(r["min_s"] if stat == "min" else r["median_s"]) / max(int(r["count"]), 1)
            if t > 0 and math.isfinite(t):
                op = Op(r["name"], r["kind"], flops=float(r["flops"]), bytes=dict(r["bytes"]), dtype=r["dtype"],
                        attrs={**({"resident": True} if resident else {}), **row_attrs(r)})
                out.append(calibrate.Observation(op, t, ds, r.get("measured_cv")))
    return out


def framework_gap(cases: list[dict], stat: str = "median") -> tuple[float, float]:
    """What a run costs end to end beyond its ops timed one by one, as ``(seconds per op, share of op time)``.

    Per case the gap is end to end minus the sum of its measured ops (paired run by run when the
    document has it). Both terms are fitted together, ≥ 0, by least squares on the gap relative to the
    case's end-to-end time: a constant per op (Python between ops) and a share that grows with the
    kernels' time (seen here: the gap is 2–19% of a run and grows with batch, not with the op count).
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
        from .probe.build import observations as probe_observations   # shapes validate runs may lack (GEMVs)
        probe_obs = probe_observations(hw.extra["probe"])
        obs += probe_obs
        probed = sorted({o.dataset for o in probe_obs})
    source = source or (f"measured: fitted by ironlaw.fit to {len(cases)} validate runs ({stat} times) on "
                        f"{hw.name}: " + "; ".join(names) + (f"; and the probe's {', '.join(probed)}" if probed else ""))
    cal = {"schema": calibrate.SCHEMA, "source": source,
           "fitted": sorted(f"validate:{n}" for n in names) + probed,
           "held_out": [f"validate:{h}" for h in held]}
    prob = _Problem(hw, obs)
    if "probe" in hw.extra:                   # measured, not fitted: where the GEMV path ends
        from .probe.build import gemv_tables
        cal["matmul"] = gemv_tables(hw.extra["probe"])
    cal = _fit_kinds(prob, cal)
    cal["matmul"] = {dt: p for dt, p in cal.get("matmul", {}).items() if "eta_max" in p}   # dtypes never run
    cal = _fit_classes(prob, cal)
    cal.update(framework_pair(cases, stat))
    by_frontend = framework_by_frontend(cases, stat)
    if by_frontend:
        cal["frontend"] = by_frontend
    return calibrate.check(cal, "calibration (fitted)")


def framework_by_frontend(cases: list[dict], stat: str = "median") -> dict:
    """Each front end's own framework terms (``framework_gap`` on its cases alone), where the fitted cases
    hold more than one front end and at least FRONTEND_MIN_CASES of it; {} otherwise (the global terms
    then serve every graph).

    One pair fitted on all cases has to split Hugging Face runs, whose modules spend 2–18% of a run in
    Python between kernels, and ResNet/MLP runs at 0–2%: on the session-6 EPYC run it fitted 0 s per op
    and a 4.1% share, short of every GPT-2 decode and long on every ResNet. Fitted per front end
    (transformers 7.7%, torch 0.9%), a re-fit of that run's saved measurements put its 37 never-fitted
    cases at median |error| 4.9% instead of 7.0%. On the session-7 run (another EPYC VM), one pair
    0 µs + 4.4%, per front end torch 2.0%, transformers 11.5 µs + 4.3%: 12.8 / 25.4 / 80 → 8.8 / 23.0 / 85
    (median, p90, % of op time within ±25%). Not a gain on every run: three later runs of that session
    re-fitted with and without it, median 7.5 → 9.4, 12.8 → 11.1, 7.9 → 7.4%."""
    from .graph import frontend
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
    return {"framework_s": calibrate._round(per_op), "framework_share": calibrate._round(min(share, 1.0))}


class _Problem:
    """The law's raw terms (η = 1, no latency) of some observations, and a weighted log loss."""

    def __init__(self, hw, obs: list[calibrate.Observation]):
        self.obs = obs
        self.hw = calibrate.without_calibration(hw)
        self.cols, self.d0, self.c0, self.slow = calibrate._terms(self.hw, obs)
        self.meas = np.array([o.time_s for o in obs])
        self.ds = ds = np.array([o.dataset for o in obs], dtype=object)
        self.w = np.zeros(len(obs))
        for d in set(ds.tolist()):            # each case weighs the same; within it, by √time (big ops count
            sel = ds == d                     # most, many small ones still add up)
            self.w[sel] = np.sqrt(self.meas[sel]) / np.sqrt(self.meas[sel]).sum()
        self.kinds = np.array(KINDS)[self.cols.kind_idx]
        self.names = np.array([o.op.name for o in obs], dtype=object)
        self.dtypes = np.array(self.cols.dtypes)

    def sub(self, rows: np.ndarray) -> "_Problem":
        p = _Problem(self.hw, [o for o, r in zip(self.obs, rows) if r])
        p.w = self.w[rows]
        return p

    def times(self, cal: dict) -> np.ndarray:
        """Per-op kernel times (measured op times hold no framework share: it is spent between ops)."""
        return calibrate._times({k: v for k, v in cal.items() if k not in ("framework_s", "framework_share", "frontend")},
                                self.hw, self.cols,
                                self.d0, self.c0, self.slow)

    def loss(self, cal: dict, rows: np.ndarray | None = None) -> float:
        rows = np.ones(len(self.meas), bool) if rows is None else rows
        if not rows.any():
            return 0.0
        t = self.times(cal)[rows]
        return float(np.sum(self.w[rows] * np.abs(np.log(t / self.meas[rows]))) / np.sum(self.w[rows]))


def _set(cal: dict, path: tuple, value: float) -> None:
    d = cal
    for k in path[:-1]:
        d = d.setdefault(k, {})
    d[path[-1]] = value


def _fit_group(prob: _Problem, cal: dict, params: list[tuple], starts: list[list[float]]) -> dict:
    """Fit ``params`` [(path, upper)] (log space) on all of ``prob`` from the best of ``starts``."""
    def apply(x):
        c = calibrate._copy(cal)
        for (path, upper), xi in zip(params, x):
            _set(c, path, float(min(max(math.exp(max(min(xi, 50.0), -200.0)), _floor(path)), upper)))
        return c
    loss = lambda x: prob.loss(apply(x))  # noqa: E731
    ranked = sorted(([math.log(v) for v in s] for s in starts), key=loss)
    best = min((calibrate._minimize(loss, x0, rounds=2, iters=250) for x0 in ranked[:2]), key=loss)
    out = apply(best)
    for path, _ in params:
        d = out
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = float(f"{d[path[-1]]:.4g}")
    return out


def _shapes(prob: "_Problem") -> int:
    """How many different ops ``prob`` holds (FLOPs and bytes): twelve layers' identical attention calls are
    one shape — they average noise, they say nothing about how time depends on shape."""
    total = sum(prob.cols.bytes.values(), np.zeros(prob.cols.flops.shape)).reshape(len(prob.meas), -1)[:, 0]
    flops = prob.cols.flops.reshape(len(prob.meas), -1)[:, 0]
    return len({(float(f), float(b)) for f, b in zip(flops, total)})


def _floor(path: tuple) -> float:
    """The smallest value a fitted parameter may take (exp of a wandering simplex can underflow to 0,
    which the table's check rightly refuses): the bounds of ``ironlaw.calibrate``."""
    if "latency_s" in path:
        return calibrate.LAT_BOUNDS[0]
    if path[-1] in ("m_half", "nk_half", "m_half_nt", "k_half"):
        return calibrate.HALF_BOUNDS[0]
    return calibrate.ETA_MIN


def _grid(*axes) -> list[list[float]]:
    import itertools
    return [list(p) for p in itertools.product(*axes)]


LAT = (1e-6, 5e-6, 30e-6)


def _fit_kinds(prob: _Problem, cal: dict) -> dict:
    """Per kind (not matmul): compute η, memory η, latency; then GEMMs per dtype; then conv shape."""
    for kind in [k for k in KINDS if k != "matmul" and (prob.kinds == k).any()]:
        sub = prob.sub(prob.kinds == kind)
        params, axes = [], []
        if (sub.c0 > 0).any():
            params.append((("compute", kind), 1.0))
            axes.append((0.01, 0.1, 0.6))
        if (sub.d0 > 0).any():
            params.append((("memory", "kind", kind), calibrate.MAX_MEMORY_ETA))
            axes.append((0.2, 0.6, 1.2))
        if len(sub.meas) >= MIN_OBS_PER_PARAM * (len(params) + 1):
            params.append((("latency_s", kind), calibrate.MAX_LATENCY_S))
            axes.append(LAT)
        else:                                  # few ops: one efficiency, the profile's latency
            params, axes = params[:1], axes[:1]
        cal = _fit_group(sub, cal, params, _grid(*axes))
    mk = cal.get("memory", {}).get("kind", {})
    produced = mk.get("elementwise", mk.get("copy"))
    if produced is not None:
        cal.setdefault("memory", {})["produced"] = produced
    cal = _fit_gemv(prob, cal)
    mm = prob.kinds == "matmul"
    dts = sorted(set(prob.dtypes[mm].tolist()), key=lambda d: (-int((mm & (prob.dtypes == d)).sum()), d))
    for dt in dts:                     # the dtype with the most ops first: it alone fits the shared latency
        sub = prob.sub(mm & (prob.dtypes == dt))
        params = [(("matmul", dt, "eta_max"), 1.0), (("matmul", dt, "m_half"), 1e9), (("matmul", dt, "nk_half"), 1e9)]
        axes = [(0.5, 0.9), (2.0, 16.0), (16.0, 128.0)]
        if dt == dts[0]:
            params.append((("latency_s", "matmul"), calibrate.MAX_LATENCY_S))
            axes.append(LAT)
        table = cal.get("matmul", {}).get(dt, {})
        packing = [(("matmul", dt, "serial"), 1.0),                    # weight packing not hidden, and its
                   (("matmul", dt, "streamed"), calibrate.MAX_MEMORY_ETA)]     # traffic (see gemmshape)
        if calibrate.packs_weights(prob.hw):
            probe_rows = mm & (prob.dtypes == dt) & (prob.ds == "probe:gemm")
            probe_sub = prob.sub(probe_rows) if probe_rows.any() else None
            if probe_sub is not None and calibrate._serial_identifiable(
                    probe_sub.cols, np.ones(int(probe_rows.sum()), bool), table):
                # the probe's hot and cold GEMMs of one shape at several M were made to tell packing from
                # compute: the GEMM model is fitted there alone first (fitted on hundreds of model ops at
                # once, serial traded against η_max and m_half from run to run; session 7, five runs re-fitted
                # both ways: all 24 never-fitted cases median 6.4–9.5% vs 6.5–9.1%, p90 9.7–12.2% vs
                # 10.5–16.6%), and its packing and weight traffic are held from then on
                extra, extra_axes = [], []
                if calibrate.spills(prob.hw, probe_sub.cols, np.ones(len(probe_sub.meas), bool)):   # spilled copy
                    cal.setdefault("matmul", {}).setdefault(dt, {})["pack"] = 1.0
                    extra, extra_axes = [(("matmul", dt, "pack"), 8.0)], [(0.3, 1.0)]
                if calibrate.layouts_identifiable(probe_sub.cols, np.ones(len(probe_sub.meas), bool), table):
                    cal.setdefault("matmul", {}).setdefault(dt, {})["m_half_nt"] = 8.0     # x @ Wᵀ's own m_half
                    extra.append((("matmul", dt, "m_half_nt"), 1e9))
                    extra_axes.append((2.0, 16.0))
                    extra.append((("matmul", dt, "streamed_kn"), calibrate.MAX_MEMORY_ETA))   # x @ W's packing
                    extra_axes.append((0.2, 0.6))
                cal = _fit_group(probe_sub, cal, params[:3] + packing + extra,
                                 _grid(*axes[:3], (0.1, 0.9), (0.4, 0.9), *extra_axes))
                # … and then the runs' own GEMMs (with the probe's rows as one more case) refit the ceiling
                # and M's half point, the probe's packing and weight traffic held: the probe's few hot shapes
                # weigh little next to its cold rows, and the models' GEMMs (N, K of 512–3072, operands just
                # produced) ran 1.07–1.29× faster than that fit said (BERT and GPT-2 prefill, the EPYC VM,
                # five runs). 28 saved runs re-fitted: median summed 239.9 → 216.6 (better in 17, worse in 7),
                # p90 607 → 550, op time within ±25% +143 points; η_max alone: 225.6 / 568 / +123; with
                # nk_half too: 223.0 / 555 / +147
                params = params[3:] + [(("matmul", dt, "eta_max"), 1.0), (("matmul", dt, "m_half"), 1e9)]
                axes = axes[3:] + [(cal["matmul"][dt]["eta_max"],), (cal["matmul"][dt]["m_half"],)]
            elif calibrate._serial_identifiable(sub.cols, np.ones(len(sub.meas), bool), table):
                params += packing
                axes += [(0.1, 0.9), (0.4, 0.9)]
        if params:
            cal = _fit_group(sub, cal, params, _grid(*axes))
    cal = _fit_gemv(prob, cal)         # again, now with each dtype's GEMM η to set a GEMV η against
    for kind in ("conv", "attention"):
        for dt in sorted(set(prob.dtypes[prob.kinds == kind].tolist())):
            rows = (prob.kinds == kind) & (prob.dtypes == dt)
            sub = prob.sub(rows)
            if _shapes(sub) < SHAPE_MODEL_MIN_SHAPES:
                continue
            base = sub.loss(cal)
            eta0 = cal.get("compute", {}).get(kind, prob.hw.eta(kind))
            mem0 = cal.get("memory", {}).get("kind", {}).get(kind, 0.6)
            # the kind's memory η is refitted with the shape, and weights get their own η: one η for both
            # soaked up the activations' extra traffic (eager oneDNN reorders NCHW activations to its
            # blocked layout and back on every call) and charged it to the weights too — 0.12 of DRAM
            # bandwidth for the 9 MB of weights of a 3×3, 512-channel conv on a 7×7 map: 2.3× its
            # measured time at batch 1. Attention's KV cache likewise: a decode step streams it cold (15–19 GB/s
            # on the session-14 Xeon VM) while prefill's K and V were just produced (the kind's η, 1.13 there)
            params = [((kind, dt, "eta_max"), 1.0), ((kind, dt, "m_half"), 1e9), ((kind, dt, "nk_half"), 1e9),
                      (("memory", "kind", kind), calibrate.MAX_MEMORY_ETA)]
            axes = [(min(eta0 * 1.5, 1.0), min(eta0 * 3, 1.0)), (1.0, 64.0), (4.0, 64.0), (mem0, 0.6)]
            if any((sub.cols.bytes.get(c, np.zeros(1)) > 0).any() for c in calibrate.STREAMED):
                params.append(((kind, dt, "streamed"), calibrate.MAX_MEMORY_ETA))
                axes.append((0.5, 1.0))
            if sub.cols.nk is not None and (sub.cols.nk[:, 0] > 0).all():      # every op states its K
                params.append(((kind, dt, "k_half"), 1e9))
                axes.append((16.0, 128.0))
            if kind == "attention":
                # … and attention's fixed cost per call with it: the flat kind's fit above had set it (153 µs in
                # one run on the session-14 Xeon VM) to make up for one η over every shape, and the shape model
                # then put calls of 63–90 µs at 2.0–2.7× their time. Four runs there re-fitted without → with
                # it: 8.5 / 14.8 / 87 → 8.4 / 15.0 / 87, 6.6 / 13.8 / 88 → 6.3 / 14.3 / 88, 6.5 / 12.6 / 87 →
                # 5.6 / 12.7 / 88, 6.3 / 16.0 / 90 → 6.3 / 15.8 / 91 (median / p90 / % op time ±25%); the third
                # run's attention calls median |log pred/meas| 0.14 → 0.10, within ±25% 67% → 96%. The same for
                # convs on the first three: 8.6 / 20.1 / 86, 6.3 / 14.3 / 88, 6.3 / 12.6 / 86 — not taken
                params.append((("latency_s", kind), calibrate.MAX_LATENCY_S))
                axes.append(LAT)
            new = _fit_group(sub, cal, params, _grid(*axes))
            if sub.loss(new) < base * (1 - SHAPE_MIN_GAIN):
                cal = new
    return cal


# dense: where a GEMV η does not bind, the loss is flat and the simplex stops where it started
GEMV_ETA_STARTS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)


def _fit_gemv(prob: _Problem, cal: dict) -> dict:
    """Matrix-vector products (the probe's hot and cold GEMVs, decode at batch 1) of every dtype:
    the bandwidth weights read from memory reach (memory.streamed, which every streamed class shares)
    and, per dtype with enough of them, a GEMV compute η. Fitted before the GEMMs, on these
    rows alone, so that no GEMM group can move the shared 'streamed' it does not see.

    Batched GEMVs (``aten::bmm`` with one row) are left out. The one in the fitted GPT-2 prefill (its tied
    LM head, 154 MB, 10.6 GB/s in that run on the EPYC VM; the probe's cold GEMVs 18–20 GB/s) is a single
    op that, each case weighing the same, pulled the weights' bandwidth down to 11 GB/s and put every
    decode GEMV of the held-out cases 30–40% over. Five saved runs re-fitted without it: p90
    25.2/39.1/39.7/28.1/30.1% → 21.9/39.1/36.0/28.1/22.6%, median ±1.5 points either way. This is a
    fitting choice, not a kernel fact: timed alone, that head as bmm, mm and F.linear ran alike here
    (10.7–14.1 GB/s, as much from run to run as between them).

    The weights' bandwidth belongs to the memory, not to a dtype: it is fitted on the GEMVs of the dtype
    that streams fastest (median weight bytes per second over GEMVs of ≥ 1 MiB), with that dtype's GEMV η;
    a dtype whose GEMVs run slower per byte is limited by its own kernel, so each other dtype then fits its
    GEMV η alone, the bandwidth held. Fitted jointly, the one weighted-median optimum sat on the probe's
    bf16 GEMV (13.5 GB/s; bf16 converts before it multiplies on that AVX-512 VM) and put every fp32 GEMV
    (16–22 GB/s) 20–50% over: GPT-2 decode at batch 1 +10…+26%. Two saved runs of session 5 re-fitted:
    median 10.1 → 7.1% and 11.1 → 8.6%, p90 24.8 → 25.6% and 25.7 → 24.0%, ops ±25% 81 → 82% and 78 → 77%;
    a third run measured after the change, on a new probe, scored 12.6% / 33.4% / 79% (the machine fell to
    83% of the probe's speed during it), so the gain is not yet shown on new measurements."""
    mm = prob.kinds == "matmul"
    m = calibrate.gemm_dims(prob.cols)[0].reshape(len(prob.meas), -1)[:, 0]
    w = prob.cols.bytes.get("weights", np.zeros(prob.cols.flops.shape)).reshape(len(prob.meas), -1)[:, 0]
    kn = calibrate.kn_rows(prob.cols).reshape(-1)
    gemv = np.zeros(len(prob.meas), bool)
    for dt in set(prob.dtypes[mm].tolist()):
        rows = mm & (prob.dtypes == dt)
        gemv |= rows & calibrate.is_gemv(cal.get("matmul", {}).get(dt, {}), m, kn)
    rows = gemv & (prob.names != "aten::bmm")     # hot ones (operands in cache) pin the GEMV η, cold ones
    if rows.sum() < MIN_OBS_PER_PARAM:
        return cal
    of = {dt: rows & (prob.dtypes == dt) for dt in sorted(set(prob.dtypes[rows].tolist()))}
    own = {dt: bool(r.sum() >= MIN_OBS_PER_PARAM and "eta_max" in cal.get("matmul", {}).get(dt, {}))
           for dt, r in of.items()}
    streaming = rows & (w > 0)
    if streaming.sum() < MIN_OBS_PER_PARAM:              # no weights to stream: GEMV η only
        params = [(("matmul", dt, "gemv_eta"), 1.0) for dt in of if own[dt]]
        return _fit_group(prob.sub(rows), cal, params, _grid(*[(0.05, 0.5)] * len(params))) if params else cal
    pool = streaming & (w >= 2**20) if (streaming & (w >= 2**20)).any() else streaming
    read = w.copy()                                       # weight bytes read, further GEMV-path passes included
    for dt in of:
        r = prob.dtypes == dt
        read[r] = w[r] * (1.0 + calibrate.gemv_passes(cal.get("matmul", {}).get(dt, {}), m[r], kn[r]))
    rate = {dt: float(np.median(read[pool & r] / prob.meas[pool & r])) for dt, r in of.items() if (pool & r).any()}
    first = max(rate, key=rate.get)
    params, axes = [(("memory", "streamed"), calibrate.MAX_MEMORY_ETA)], [(0.5, 1.0)]
    if own[first]:
        params.append((("matmul", first, "gemv_eta"), 1.0))
        axes.append((0.05, 0.5))
    cal = _fit_group(prob.sub(of[first]), cal, params, _grid(*axes))
    for dt, r in of.items():
        if dt != first and own[dt]:
            cal = _fit_group(prob.sub(r), cal, [(("matmul", dt, "gemv_eta"), 1.0)], [[x] for x in GEMV_ETA_STARTS])
    return cal


def _fit_classes(prob: _Problem, cal: dict) -> dict:
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
            # every captured conv is 'aten::convolution': a class would replace the fitted conv shape model
            # (its ops state N and K) by one flat η. Session-7 EPYC run re-fitted: ResNets +10…+23% → −12…+11%.
            # Attention likewise since its ops state key length and head dim (session 11; while its shape was
            # inferred as a cube the class fitted better). Class → shape model, one run's calls: prefill with
            # 32 keys 0.28 → 1.20–1.61 of their time, 256 keys 1.48–1.55 → 1.27–1.30; decode at batch 8–32
            # 0.85–1.41 → 0.57–0.77 (a decode step costs about 2–4 µs per batch × head here, which neither η
            # says); four runs end to end a draw (medians 10.3 / 11.4 / 8.1 / 8.5 → 8.7 / 11.6 / 8.1 / 9.1)
            continue
        if all(str(d).startswith("probe") for d in set(prob.ds[rows].tolist())):
            continue                                  # a micro-benchmark's own name never names a model op
        sub = prob.sub(rows)
        base = sub.loss(cal)
        if base < CLASS_MIN_LOSS:
            continue
        params, axes = [], []
        if (sub.c0 > 0).any():
            params.append((("op", name, "compute"), 1.0))
            axes.append((0.003, 0.03, 0.3))
        if (sub.d0 > 0).any():
            params.append((("op", name, "memory"), calibrate.MAX_MEMORY_ETA))
            axes.append((0.1, 0.4, 1.2))
        if len(sub.meas) >= MIN_OBS_PER_PARAM * (len(params) + 1):
            params.append((("op", name, "latency_s"), calibrate.MAX_LATENCY_S))
            axes.append(LAT)
        elif len(sub.meas) < MIN_OBS_PER_PARAM * len(params):
            params, axes = params[:1], axes[:1]
        new = _fit_group(sub, cal, params, _grid(*axes))
        if sub.loss(new) < base * (1 - CLASS_MIN_GAIN):
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
