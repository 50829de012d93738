"""Calibration: efficiency per op class and shape, bandwidth per reuse pattern, per-op overhead.

A profile (or catalog file) may carry a ``[calibration]`` table; ``ironlaw.efficiency`` then asks
the three functions below instead of the flat ``[efficiency]`` defaults::

    [calibration]
    schema = "ironlaw.calibration/1"
    source = "measured by probe on … | derived: fitted to …"
    fitted = ["probe:gemm fp32 (12 shapes)", …]      # what the numbers were fitted on
    held_out = ["…"]                                  # what was kept aside to report on
    [calibration.matmul.fp32]    # GEMM η(M,N,K) = eta_max · M/(M+m_half) · N/(N+nk_half) · K/(K+nk_half)
    eta_max = 0.92
    m_half = 4.0
    nk_half = 60.0
    [calibration.compute]        # η of other kinds on their unit (fraction of its peak)
    elementwise = 0.35
    [calibration.memory]         # fraction of a tier's bandwidth reached, by reuse pattern
    streamed = 0.6               # weights, tables, kv_cache, optimizer, gradients (read once per pass)
    produced = 0.9               # activations (just produced by the op before)
    [calibration.memory.kind]    # per op kind: the η of its activations (how it walks them), in place of
                                 # 'produced'; its weights, KV and tables keep 'streamed' (or their table's)
    norm = 0.4
    [calibration.latency_s]      # fixed seconds per invocation, per op kind; 'default' for the rest
    default = 2.5e-6
    [calibration.kernel."rms_norm"]   # one kernel (op.attrs["kernel"], set by the builder): compute /
    memory = 0.36                     # memory / latency_s, over the per-kind values for those ops only

Scope: a value fitted on one population of kernels applies to that population only. Observations
whose op names its kernel (``op.attrs["kernel"]``) are fitted per kernel into ``[calibration.kernel]``
and leave the per-kind tables alone: vLLM's rms_norm says nothing about a LayerNorm or a BatchNorm.
The GEMM shape model is per kind (all matmuls of a dtype); see ``ironlaw.gemmshape``.

Fitting (``fit``) takes observations — an op and its measured time — from the probe, from
``ironlaw validate`` or from published measurements, and returns the table. The fitted model is
the law itself: time = max(r, c) + serial·min(r, c) + w + latency with d = data_s / η_mem split into
reads r and a GPU GEMM's epilogue stores w (``efficiency.composed``), c = compute_s / η (serial only for
GEMM tables that have it), data_s and compute_s
from ``law.predict`` at η = 1, so what is fitted is exactly what later predictions use. Keep fitting
and reporting apart: ``report`` scores any observations (held out or not) through ``law.predict``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .efficiency import composed, epilogue_share
from .errors import IronlawError, unknown
from .gemmshape import (MEASURED_FIELDS, ROW_FIELDS, SHAPE_FIELDS, gemm_dims, gemm_eta, gemm_serial,  # noqa: F401
                        gemv_passes, is_gemv, kn_rows, row_factor, row_length)  # (re-exported)
from .graph import CLASSES, DTYPE_BYTES, FRONTENDS, KINDS, Columns, Graph, Op

SCHEMA = "ironlaw.calibration/1"
STREAMED = tuple(c for c in CLASSES if c != "activations")
MAX_MEMORY_ETA = 1.5      # >1 allowed: data that stays in a cache level the tiers do not list
MAX_LATENCY_S = 1.0
# fitting bounds: a parameter that runs to the edge says the data cannot pin it, not that it is 0 or ∞
ETA_MIN = 1e-4
LAT_BOUNDS = (1e-8, MAX_LATENCY_S)
HALF_BOUNDS = (1e-2, 1e6)
GEMV_PASS_MAX = 2.0             # a further row re-reading the weights twice over is no GEMV path
MIN_ROWS_FOR_LATENCY = 3        # fewer observations of a kind: keep the device's per-op latency


# ---------------------------------------------------------------- the model (used by efficiency.py)

def compute_eta(cal: dict, cols: Columns, eta: np.ndarray) -> np.ndarray:
    """η per op: the GEMM shape model for matmuls of a calibrated dtype, per-kind values otherwise."""
    out = np.broadcast_to(eta, cols.flops.shape).astype(float).copy()
    kinds = np.array(KINDS)[cols.kind_idx]
    for kind, value in cal.get("compute", {}).items():
        out[kinds == kind] = value
    gemm = cal.get("matmul", {})
    if gemm:
        dts = np.array(cols.dtypes)
        rows = (kinds == "matmul") & np.isin(dts, list(gemm))
        if rows.any():
            m, n, k = gemm_dims(cols)
            kn = kn_rows(cols)
            for dt, p in gemm.items():
                r = rows & (dts == dt)
                if r.any() and "eta_max" in p:        # (a table being fitted may hold only gemv_m yet)
                    out[r] = gemm_eta(p, m[r], n[r], k[r], kn[r])
    out = _shape_eta(cal, cols, out)
    return _framework(cal, _scoped(cal, cols, out, "compute"), cols.frontend)


def serial_share(cal: dict, cols: Columns) -> np.ndarray:
    """Per op, the share of min(data, compute) not overlapped (``serial`` of the GEMM shape tables)."""
    out = np.zeros(cols.flops.shape)
    kinds = np.array(KINDS)[cols.kind_idx]
    dts = np.array(cols.dtypes)
    dims = None
    for kind in ("matmul",) + SHAPE_KINDS:
        for dt, p in cal.get(kind, {}).items():
            r = (kinds == kind) & (dts == dt)
            if "serial" in p and r.any():
                dims = dims or gemm_dims(cols)
                kn = kn_rows(cols) if kind == "matmul" else np.zeros(dims[0].shape, bool)
                out[r] = gemm_serial(p, dims[0][r], kn[r])
    return out


def memory_eta(cal: dict, cols: Columns, eta: np.ndarray, own: bool = True) -> np.ndarray:
    """η of the data term per op: the byte-weighted reuse patterns (activations at ``produced``, the rest
    at ``streamed``), a kind's value in place of both — or of ``produced`` only where the op's shape
    table (matmul, conv) gives its weights their own ``streamed``."""
    mem = cal.get("memory", {})
    base = np.broadcast_to(eta, cols.flops.shape).astype(float)
    table_streamed = _table_streamed(cal, cols)
    kinds = np.array(KINDS)[cols.kind_idx]
    by_kind = mem.get("kind", {}) if own else {}
    if "streamed" in mem or "produced" in mem or table_streamed is not None or by_kind:
        streamed = np.broadcast_to(mem.get("streamed", base), base.shape).copy()
        produced = np.broadcast_to(mem.get("produced", base), base.shape).copy()
        for kind, value in by_kind.items():        # a kind's own η is its activations' (how it walks them)
            produced[kinds == kind] = value
            if kind == "attention":                # … and, for attention, its KV cache's: a decode step's
                streamed[kinds == kind] = value    # flash kernel walks the cache as a prefill walks K and V
        if table_streamed is not None:
            streamed = np.where(np.isnan(table_streamed), streamed, table_streamed)
        zero = np.zeros(cols.flops.shape)
        act = cols.bytes.get("activations", zero)
        other = sum((cols.bytes[c] for c in STREAMED if c in cols.bytes), zero)
        total = act + other
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(total > 0, total / (act / produced + other / streamed), produced)
    else:
        out = base.copy()
    return _framework(cal, _scoped(cal, cols, out, "memory") if own else out, cols.frontend)


def slow_tier_eta(eta_op, eta_base, bw_llc_Bps: float, bw_tier_Bps: float):
    """The η of an op's traffic on a tier slower than the last cache level. An op's own η (its kind's,
    op class's or kernel's value) is fitted mostly where its activations sat in that cache: it says what
    rate the kernel itself reaches there, not a fraction it keeps of any bandwidth. On a slower tier the
    traffic runs at the slower of that kernel rate and the tier's rate at the plain patterns' η
    (``own=False``: produced / streamed), never below the op's own η:
    η_t = min(η_op · BW_llc / BW_t, max(η_base, η_op)). Ops without an own value are unchanged (η_base =
    η_op). Seen on the session-8 EPYC VM: BERT's GELU class fitted 0.09 on 1 MB of cached activations at
    batch 1 (12.8 GB/s), then charged 16.8 MB of DRAM activations at batch 16 at 3.2 GB/s: 5.4× the
    measured time; attention (0.02) 3.8×."""
    return np.minimum(eta_op * (bw_llc_Bps / bw_tier_Bps), np.maximum(eta_base, eta_op))


def extra_weight_bytes(cal: dict, cols: Columns, hw, resident=None) -> np.ndarray:
    """Per op, the device-memory bytes a calibrated GEMM reads beyond its weights once: ``pack`` × weight
    bytes where a GEMM's weights exceed ``pack_limit_bytes`` (its packed copy spills), and on the GEMV path
    ``gemv_pass(_kn)`` × (M − 1) × weight bytes (each further row re-reads them; charged at device memory
    like the spilled copy, also where the weights sat in cache) plus, where the weights come from device
    memory (not ``resident``: the op's workload fits the last cache level), (``row_factor`` − 1) × weight
    bytes (the fixed cost of each stored row of the matrix, as the bytes it is worth). 0 elsewhere, for
    other kinds and for tables without these fields."""
    out = np.zeros(cols.flops.shape)
    tables = {dt: p for dt, p in cal.get("matmul", {}).items()
              if any(p.get(f) for f in ("pack", "gemv_pass", "gemv_pass_kn", "gemv_row", "gemv_row_kn"))}
    rows = np.array(KINDS)[cols.kind_idx] == "matmul"
    if not tables or not rows.any():
        return out
    limit = pack_limit_bytes(hw)
    w = cols.bytes.get("weights", np.zeros(cols.flops.shape))
    spill = w > limit if limit is not None else np.zeros(w.shape, bool)
    m, n, k = gemm_dims(cols)
    kn = kn_rows(cols)
    length = row_length(cols, n, k)
    streamed = ~np.broadcast_to(np.asarray(False if resident is None else resident, bool), out.shape)
    dts = np.array(cols.dtypes)
    for dt, p in tables.items():
        r = rows & (dts == dt)
        if r.any():
            gemv = is_gemv(p, m[r], kn[r])
            packed = np.where(gemv | ~spill[r], 0.0, float(p.get("pack", 0.0)) * w[r])
            per_row = np.where(gemv & streamed[r], row_factor(p, length[r], kn[r]) - 1.0, 0.0) * w[r]
            out[r] = packed + gemv_passes(p, m[r], kn[r]) * w[r] + per_row
    return out


def _table_streamed(cal: dict, cols: Columns) -> np.ndarray | None:
    """Per op, the weight-traffic η its shape table gives (matmul: ``streamed``, or ``streamed_kn`` for
    x @ W, on GEMMs, not GEMVs; conv: ``streamed`` on all), NaN where the table gives none (the
    calibration's memory.streamed applies); None if no table gives one."""
    kinds = np.array(KINDS)[cols.kind_idx]
    dts = np.array(cols.dtypes)
    out, dims = None, None
    for kind in ("matmul",) + SHAPE_KINDS:
        for dt, p in cal.get(kind, {}).items():
            r = (kinds == kind) & (dts == dt)
            if not r.any() or not any(f in p for f in ("streamed", "streamed_kn")):
                continue
            if out is None:
                out = np.full(cols.flops.shape, np.nan)
            if kind == "matmul":
                dims = dims or gemm_dims(cols)
                kn = kn_rows(cols)[r]
                gemm = np.where(kn, p.get("streamed_kn", p.get("streamed", np.nan)), p.get("streamed", np.nan))
                out[r] = np.where(is_gemv(p, dims[0][r], kn), np.nan, gemm)
            elif "streamed" in p:
                out[r] = p["streamed"]
    return out


def framework_terms(cal: dict, frontend: str = "torch") -> tuple[float, float]:
    """(framework_s, framework_share) of a graph run by ``frontend``: its own [calibration.frontend.<name>]
    values where fitted, else the calibration's global ones (see below)."""
    own = (cal.get("frontend") or {}).get(frontend, {})
    return (float(own.get("framework_s", cal.get("framework_s", 0.0))),
            float(own.get("framework_share", cal.get("framework_share", 0.0))))


def _framework(cal: dict, eta: np.ndarray, frontend: str = "torch") -> np.ndarray:
    """Kernels run (1 + framework_share) times longer end to end than alone (see below)."""
    return eta / (1.0 + framework_terms(cal, frontend)[1])


def op_latency(cal: dict, cols: Columns, lat: np.ndarray) -> np.ndarray:
    table = cal.get("latency_s", {})
    out = np.array(lat, dtype=float, copy=True)
    if "default" in table:
        out[...] = table["default"]
    kinds = np.array(KINDS)[cols.kind_idx]
    for kind, value in table.items():
        if kind != "default":
            out[kinds == kind] = value
    out = _scoped(cal, cols, out, "latency_s")
    return out + framework_terms(cal, cols.frontend)[0]


# ---- fitted from validate runs (``ironlaw.fit``), additive to the tables above:
#   [calibration.conv.<dtype>], [calibration.attention.<dtype>]  the GEMM shape model (same fields as
#        [calibration.matmul.<dtype>]) for convolutions and attention kernels (M, N, K from gemm_dims)
#   [calibration.op."aten::tanh"]  per op name: compute / memory / latency_s, over the per-kind values
#        (the op class: a transcendental or a pooling kernel is not the average elementwise op)
#   framework_s  seconds per op spent between ops (the model's Python, module calls, views), added to
#        every op's latency: what a real run costs end to end beyond the sum of its kernels
#   framework_share  the part of that cost that grows with the kernels' own time (end to end, ops run
#        slower than timed one by one: caches shared with the framework's work, allocator, threads
#        waking); kernel times are scaled by (1 + framework_share)
#   [calibration.frontend.transformers]  framework_s and framework_share of the graphs that front end runs
#        (graph.FRONTENDS), in place of the global two: Hugging Face modules spend far more between their
#        kernels than torchvision's or a plain nn.Sequential
SHAPE_KINDS = ("conv", "attention")
FRAMEWORK_FIELDS = ("framework_s", "framework_share")
OP_FIELDS = ("compute", "memory", "latency_s")


def _names(cols: Columns, attr: str = "names") -> np.ndarray:
    names = getattr(cols, attr, None)
    return np.array(names if names is not None else [""] * len(cols.kind_idx), dtype=object)


def _shape_eta(cal: dict, cols: Columns, out: np.ndarray) -> np.ndarray:
    kinds = np.array(KINDS)[cols.kind_idx]
    dts = np.array(cols.dtypes)
    dims = None
    for kind in SHAPE_KINDS:
        for dt, p in cal.get(kind, {}).items():
            r = (kinds == kind) & (dts == dt)
            if r.any():
                dims = dims or gemm_dims(cols)
                m, n, k = dims
                out[r] = gemm_eta(p, m[r], n[r], k[r])
    return out


def _scoped(cal: dict, cols: Columns, out: np.ndarray, field: str) -> np.ndarray:
    """Per-kernel values, then per-op-name values (the most specific wins) over the per-kind ones."""
    for table, attr in (("kernel", "kernels"), ("op", "names")):
        if cal.get(table):
            names = _names(cols, attr)
            for name, p in cal[table].items():
                if field in p and name:
                    out[names == name] = p[field]
    return out


def _check_fit_tables(cal: dict, where: str) -> None:
    for kind in ("matmul",) + SHAPE_KINDS:
        for dt in _table(cal, kind, where):
            if dt not in DTYPE_BYTES:
                raise unknown(f"dtype in {where}.{kind}", dt, DTYPE_BYTES)
            w = f"{where}.{kind}.{dt}"
            p = _table(cal[kind], dt, f"{where}.{kind}")
            for key in p:
                if key not in SHAPE_FIELDS:
                    raise unknown(f"field in {w}", key, SHAPE_FIELDS)
            _num(p, "eta_max", w, 1.0 + 1e-9, required=True)
            _num(p, "m_half", w, 1e9, required=True, zero_ok=True)
            _num(p, "m_half_nt", w, 1e9, zero_ok=True)
            _num(p, "nk_half", w, 1e9, required=True, zero_ok=True)
            _num(p, "k_half", w, 1e9, zero_ok=True)
            _num(p, "gemv_eta", w, 1.0 + 1e-9)
            _num(p, "gemv_m", w, 4096)
            _num(p, "gemv_m_kn", w, 4096)
            _num(p, "serial", w, 1.0, zero_ok=True)
            _num(p, "streamed", w, MAX_MEMORY_ETA)
            _num(p, "streamed_kn", w, MAX_MEMORY_ETA)
            _num(p, "pack", w, 8.0, zero_ok=True)
            _num(p, "gemv_pass", w, GEMV_PASS_MAX, zero_ok=True)
            _num(p, "gemv_pass_kn", w, GEMV_PASS_MAX, zero_ok=True)
            for key in ROW_FIELDS:
                _row_table(p, key, w)
    for table in ("kernel", "op"):
        for name in _table(cal, table, where):
            w = f"{where}.{table}.{name}"
            p = _table(cal[table], name, f"{where}.{table}")
            if not p:
                raise IronlawError(f"{w}: empty; give at least one of {', '.join(OP_FIELDS)}")
            for key in p:
                if key not in OP_FIELDS:
                    raise unknown(f"field in {w}", key, OP_FIELDS)
            _num(p, "compute", w, 1.0 + 1e-9)
            _num(p, "memory", w, MAX_MEMORY_ETA)
            _num(p, "latency_s", w, MAX_LATENCY_S, zero_ok=True)
    _check_framework(cal, where)
    for name in _table(cal, "frontend", where):
        if name not in FRONTENDS:
            raise unknown(f"front end in {where}.frontend", name, FRONTENDS)
        p = _table(cal["frontend"], name, f"{where}.frontend")
        w = f"{where}.frontend.{name}"
        for key in p:
            if key not in FRAMEWORK_FIELDS:
                raise unknown(f"field in {w}", key, FRAMEWORK_FIELDS)
        _check_framework(p, w)


def _check_framework(t: dict, where: str) -> None:
    _num(t, "framework_s", where, MAX_LATENCY_S, zero_ok=True)
    _num(t, "framework_share", where, 1.0, zero_ok=True)


# ---------------------------------------------------------------- checking a hand-edited table

def check(cal: object, where: str) -> dict:
    """Refuse a [calibration] table that is not what this module writes, naming the field."""
    if not isinstance(cal, dict):
        raise IronlawError(f"{where}: expected a table")
    allowed = ("schema", "source", "fitted", "held_out", "matmul", "compute", "memory", "latency_s",
               "conv", "attention", "op", "kernel", "framework_s", "framework_share", "frontend")
    for key in cal:
        if key not in allowed:
            raise unknown(f"field in {where}", key, allowed)
    if cal.get("schema") != SCHEMA:
        raise IronlawError(f"{where}.schema: must be '{SCHEMA}', got {cal.get('schema')!r}")
    src = cal.get("source")
    if not isinstance(src, str) or not src.startswith(("measured", "derived:")):
        raise IronlawError(f"{where}.source: must start with 'measured' or 'derived:' and say what was fitted")
    for key in ("fitted", "held_out"):
        v = cal.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise IronlawError(f"{where}.{key}: expected a list of strings")
    if not cal.get("fitted"):
        raise IronlawError(f"{where}.fitted: must list what the calibration was fitted on")
    comp = _table(cal, "compute", where)
    for kind in comp:
        if kind not in KINDS:
            raise unknown(f"op kind in {where}.compute", kind, KINDS)
        _num(comp, kind, f"{where}.compute", 1.0 + 1e-9)
    mem = _table(cal, "memory", where)
    for key in mem:
        if key not in ("streamed", "produced", "kind"):
            raise unknown(f"field in {where}.memory", key, ("streamed", "produced", "kind"))
        if key != "kind":
            _num(mem, key, f"{where}.memory", MAX_MEMORY_ETA)
    mk = _table(mem, "kind", f"{where}.memory")
    for kind in mk:
        if kind not in KINDS:
            raise unknown(f"op kind in {where}.memory.kind", kind, KINDS)
        _num(mk, kind, f"{where}.memory.kind", MAX_MEMORY_ETA)
    lat = _table(cal, "latency_s", where)
    for kind in lat:
        if kind not in KINDS + ("default",):
            raise unknown(f"op kind in {where}.latency_s", kind, KINDS + ("default",))
        _num(lat, kind, f"{where}.latency_s", MAX_LATENCY_S)
    _check_fit_tables(cal, where)
    return cal


def _table(parent: dict, key: str, where: str) -> dict:
    v = parent.get(key, {})
    if not isinstance(v, dict):
        raise IronlawError(f"{where}.{key}: expected a table")
    return v


GEMV_ROW_MAX = 16.0       # a GEMV 16× slower per byte for its row length is a measurement gone wrong


def _row_table(t: dict, key: str, where: str) -> None:
    """``key`` absent, or [[length, factor], …]: lengths ≥ 1 element, all different, factors in (0, GEMV_ROW_MAX]."""
    if key not in t:
        return
    x = t[key]
    num = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)  # noqa: E731
    pairs = isinstance(x, list) and len(x) >= 2 and all(isinstance(q, list) and len(q) == 2 and all(map(num, q))
                                                       for q in x)
    if not pairs or any(q[0] < 1 or not 0 < q[1] <= GEMV_ROW_MAX for q in x) or len({q[0] for q in x}) < len(x):
        raise IronlawError(f"{where}.{key}: must be a list of at least two [row length ≥ 1, factor in (0, "
                           f"{GEMV_ROW_MAX:g}]] pairs with different lengths, got {x!r}")


def _num(t: dict, key: str, where: str, upper: float, required: bool = False, zero_ok: bool = False) -> None:
    if key not in t:
        if required:
            raise IronlawError(f"{where}: missing required field '{key}'")
        return
    x = t[key]
    ok = isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and \
        (x >= 0 if zero_ok else x > 0) and x <= upper
    if not ok:
        lo = ">= 0" if zero_ok else "> 0"
        raise IronlawError(f"{where}.{key}: must be a number {lo} and at most {upper:g}, got {x!r}")


# ---------------------------------------------------------------- fitting and reporting

@dataclass
class Observation:
    """One measured op: what ran (an ironlaw Op) and its median time per invocation."""
    op: Op
    time_s: float
    dataset: str            # where it came from: 'probe:gemm', 'validate:resnet50 b1', 'vidur llama2-7b' …
    cv: float | None = None
    offset_s: float = 0.0   # time the measurement adds outside the op (a host-side timing harness)


def neutral(hw):
    """``hw`` with η = 1, no per-op latency and no calibration: the law's raw data and compute terms."""
    eff = {k: 1.0 for k in KINDS + ("other", "memory")}
    return replace(hw, efficiency=eff, op_latency_s=0.0, extra={})


def _terms(hw, obs: list[Observation]):
    from . import law
    if not obs:
        raise IronlawError("calibration: no observations to fit or score")
    g = Graph("calibration", "infer", obs[0].op.dtype, [o.op for o in obs])
    est = law.predict(g, neutral(hw))
    return (est.cols, np.asarray(est.data_s, float).reshape(-1), np.asarray(est.compute_s, float).reshape(-1),
            _slow_terms(hw, est))


def _slow_terms(hw, est) -> tuple[np.ndarray, np.ndarray]:
    """(seconds at η = 1 of the traffic on tiers slower than the last cache level, the same bytes at that
    cache's bandwidth) per op; zeros without a cache tier (see ``slow_tier_eta``)."""
    cache = [i for i, t in enumerate(hw.memory) if t.role == "cache"]
    n = len(est.graph.ops)
    if not cache:
        return np.zeros(n), np.zeros(n)
    llc = cache[-1]
    slow_s = np.asarray(est.data_tier_s, float)[llc + 1:].reshape(len(hw.memory) - llc - 1, n, -1)[:, :, 0].sum(axis=0)
    slow_b = np.asarray(est.traffic_bytes, float)[llc + 1:].reshape(len(hw.memory) - llc - 1, n, -1)[:, :, 0].sum(axis=0)
    return slow_s, slow_b / hw.memory[llc].bw_Bps


def _times(cal: dict, hw, cols: Columns, d0: np.ndarray, c0: np.ndarray,
           slow: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Per-op times of ``cal`` from the raw terms (``_terms``): the law's own composition, with the traffic
    on tiers slower than the last cache level (``slow``: its seconds at η = 1 and at that cache's
    bandwidth) at ``slow_tier_eta``."""
    n = len(d0)
    base_c = np.array([hw.eta(k) for k in KINDS])[cols.kind_idx]
    base_m = np.full(n, hw.efficiency["memory"])
    ec = compute_eta(cal, cols, base_c).reshape(-1)
    em = memory_eta(cal, cols, base_m).reshape(-1)
    eb = memory_eta(cal, cols, base_m, own=False).reshape(-1)
    lat = op_latency(cal, cols, np.full(n, hw.op_latency_s)).reshape(-1)
    ser = serial_share(cal, cols).reshape(-1)
    cache = [t for t in hw.memory if t.role == "cache"]
    dev_bw = hw.memory[hw.device_tier].bw_Bps
    llc_bw = cache[-1].bw_Bps if cache else dev_bw
    slow_s, slow_llc_s = slow if slow is not None else (np.zeros(n), np.zeros(n))
    extra = extra_weight_bytes(cal, cols, hw, cols.resident).reshape(-1)   # device memory: a slow tier
    fast_s = d0 - slow_s
    slow_s, slow_llc_s = slow_s + extra / dev_bw, slow_llc_s + extra / llc_bw
    with np.errstate(divide="ignore", invalid="ignore"):
        # per slow tier t: bytes / (BW_t · min(η·BW_llc/BW_t, max(η_base, η))) = max(bytes/(BW_llc·η),
        # bytes/(BW_t·max(η_base, η))) — summed over the slow tiers (on a CPU only device memory is one)
        d0 = fast_s / em + np.maximum(slow_llc_s / em, slow_s / np.maximum(eb, em))
        d, c = np.where(d0 > 0, d0, 0.0), np.where(c0 > 0, c0 / ec, 0.0)
    w = d * epilogue_share(hw, cols).reshape(-1)
    return composed(d, c, ser, w) + lat


def fit(hw, observations: list[Observation], source: str, held_out: list[str] = (), start: dict | None = None) -> dict:
    """Fit a [calibration] table to ``observations`` (all of them are 'fitted'; keep held-out ones out).

    Groups are fitted one after another: each non-GEMM kernel (ops naming one) or else kind (compute η,
    memory η, latency), then GEMMs per dtype (η shape model, streamed-weights η, latency). Each
    dataset counts equally.
    """
    obs = [o for o in observations if o.time_s > 0 and math.isfinite(o.time_s)]
    cols, d0, c0, slow = _terms(hw, obs)
    meas = np.array([o.time_s for o in obs])
    offset = np.array([o.offset_s for o in obs])
    datasets = np.array([o.dataset for o in obs])
    kinds = np.array(KINDS)[cols.kind_idx]
    dts = np.array(cols.dtypes)
    cal = {"schema": SCHEMA, "source": source, "fitted": sorted(set(datasets.tolist())), "held_out": list(held_out),
           "compute": {}, "memory": {"kind": {}}, "latency_s": {}, "matmul": {}, "kernel": {}}
    if start:
        for key in ("compute", "latency_s", "matmul", "kernel"):
            cal[key].update(start.get(key, {}))
        cal["memory"].update({k: v for k, v in start.get("memory", {}).items() if k != "kind"})
        cal["memory"]["kind"].update(start.get("memory", {}).get("kind", {}))

    def loss_of(rows: np.ndarray):
        w = np.zeros(len(obs))
        for ds in set(datasets[rows].tolist()):
            sel = rows & (datasets == ds)
            w[sel] = 1.0 / sel.sum()
        sub, d, c, m, off, ww = _subset(cols, rows), d0[rows], c0[rows], meas[rows], offset[rows], w[rows]

        def loss(cal_: dict) -> float:
            t = _times(cal_, hw, sub, d, c, (slow[0][rows], slow[1][rows])) + off
            return float(np.sum(ww * np.abs(np.log(t / m))) / np.sum(ww))
        return loss

    lat_default = hw.op_latency_s
    # ---- non-GEMM ops first, per kernel where the op names one, else per kind (a kind's memory η
    #      also sets 'produced', the activation pattern of every op, GEMMs included)
    kern = _names(cols, "kernels")
    groups = [("kernel", k, (kern == k) & (kinds != "matmul")) for k in sorted(set(kern.tolist()) - {""})]
    groups += [("kind", k, (kinds == k) & (kern == "")) for k in KINDS if k != "matmul"]
    for scope, key, rows in [g for g in groups if g[2].any()]:
        has_c, has_d = bool((c0[rows] > 0).any()), bool((d0[rows] > 0).any())
        free_lat = rows.sum() >= MIN_ROWS_FOR_LATENCY
        x0 = [math.log(0.5), math.log(0.5), math.log(_clip(float(np.min((meas - offset)[rows])) * 0.5, *LAT_BOUNDS))]

        def apply(x, c=cal, scope=scope, key=key, free_lat=free_lat):
            c = _copy(c)
            t = _slots(c, scope, key)
            if has_c:
                t["compute"][0][t["compute"][1]] = _clip(_exp(x[0]), ETA_MIN, 1.0)
            if has_d:
                t["memory"][0][t["memory"][1]] = _clip(_exp(x[1]), ETA_MIN, MAX_MEMORY_ETA)
            t["latency_s"][0][t["latency_s"][1]] = _clip(_exp(x[2]), *LAT_BOUNDS) if free_lat else lat_default
            return c
        loss = loss_of(rows)
        # two starts: memory-bound (η_compute idle) and compute-bound (a slow vector kernel)
        starts = [x0] + ([[math.log(0.03)] + x0[1:]] if has_c else [])
        x = min((_minimize(lambda x: loss(apply(x)), s) for s in starts), key=lambda x: loss(apply(x)))
        cal = apply(x)
        _drop_inactive(cal, hw, cols, d0, c0, rows, _slots(cal, scope, key))
    mk = cal["memory"]["kind"]
    produced = mk.get("copy", mk.get("elementwise"))
    if produced is not None:
        cal["memory"]["produced"] = produced
    # ---- GEMMs per dtype
    gemm_dts = sorted(set(dts[kinds == "matmul"].tolist()), key=lambda d: (-int(((kinds == "matmul") & (dts == d)).sum()), d))
    for dt in gemm_dts:             # the dtype with the most shapes first
        rows = (kinds == "matmul") & (dts == dt)
        # per-kind latency and 'streamed' are shared by all dtypes: the first (largest) group fits them
        free_lat = rows.sum() >= MIN_ROWS_FOR_LATENCY and dt == gemm_dts[0]
        p0 = {"eta_max": 0.8, "m_half": 8.0, "nk_half": 64.0, **cal["matmul"].get(dt, {})}
        keep = {k: p0[k] for k in MEASURED_FIELDS if k in p0}          # measured, not fitted
        x0 = [math.log(p0["eta_max"]), math.log(max(p0["m_half"], 1.0)), math.log(max(p0["nk_half"], 1.0)),
              math.log(cal["memory"].get("streamed", 0.7)),
              math.log(_clip(float(np.min((meas - offset)[rows])) * 0.5, *LAT_BOUNDS))]
        fit_streamed = dt == gemm_dts[0]
        fit_serial = packs_weights(hw) and _serial_identifiable(cols, rows, keep)
        fit_pack = fit_serial and spills(hw, cols, rows)
        if fit_serial:
            x0 += [math.log(0.5), math.log(0.5)]
        if fit_pack:
            x0.append(math.log(0.6))
        nt_at = len(x0) if layouts_identifiable(cols, rows, keep) else None     # x @ Wᵀ's own m_half
        if nt_at is not None:
            x0.append(x0[1])
        kn_at = len(x0) if nt_at is not None and fit_serial else None            # x @ W's own weight η
        if kn_at is not None:
            x0.append(math.log(0.5))

        def apply(x, c=cal, dt=dt, free_lat=free_lat, fit_streamed=fit_streamed, fit_serial=fit_serial, keep=keep,
                  fit_pack=fit_pack, nt_at=nt_at, kn_at=kn_at):
            c = _copy(c)
            c["matmul"][dt] = {"eta_max": _clip(_exp(x[0]), ETA_MIN, 1.0),
                               "m_half": _clip(_exp(x[1]), *HALF_BOUNDS),
                               "nk_half": _clip(_exp(x[2]), *HALF_BOUNDS), **keep}
            if nt_at is not None:
                c["matmul"][dt]["m_half_nt"] = _clip(_exp(x[nt_at]), *HALF_BOUNDS)
            if kn_at is not None:
                c["matmul"][dt]["streamed_kn"] = _clip(_exp(x[kn_at]), ETA_MIN, MAX_MEMORY_ETA)
            if fit_serial:
                c["matmul"][dt]["serial"] = _clip(_exp(x[5]), 0.0, 1.0)
                c["matmul"][dt]["streamed"] = _clip(_exp(x[6]), ETA_MIN, MAX_MEMORY_ETA)
            if fit_pack:
                c["matmul"][dt]["pack"] = _clip(_exp(x[7]), 0.0, 8.0)
            if fit_streamed:
                c["memory"]["streamed"] = _clip(_exp(x[3]), ETA_MIN, MAX_MEMORY_ETA)
            if free_lat:
                c["latency_s"]["matmul"] = _clip(_exp(x[4]), *LAT_BOUNDS)
            return c
        loss = loss_of(rows)
        starts = [x0]
        if fit_serial:                # packing against compute has two basins: start from both ends
            starts = [x0[:5] + [math.log(sv), math.log(st)] + x0[7:] for sv in (0.1, 0.9) for st in (0.4, 0.9)]
        x = min((_minimize(lambda x: loss(apply(x)), s0) for s0 in starts), key=lambda x: loss(apply(x)))
        cal = apply(x)
    # kinds never observed: the typical non-GEMM kind's (a GEMM's or one kernel's fit stays in its scope)
    fitted_lat = [v for k, v in cal["latency_s"].items() if k not in ("default", "matmul")]
    if fitted_lat and "default" not in cal["latency_s"]:
        cal["latency_s"]["default"] = float(np.median(fitted_lat))
    cal["matmul"] = {dt: {k: _round(v) for k, v in p.items()} for dt, p in cal["matmul"].items() if "eta_max" in p}
    for key in ("compute", "latency_s"):
        cal[key] = {k: _round(v) for k, v in cal[key].items()}
    cal["kernel"] = {k: {f: _round(v) for f, v in p.items()} for k, p in cal["kernel"].items() if p}
    cal["memory"] = {k: (_round(v) if k != "kind" else {kk: _round(vv) for kk, vv in v.items()})
                     for k, v in cal["memory"].items()}
    for key in ("matmul", "compute", "latency_s", "kernel"):
        if not cal[key]:
            del cal[key]
    if not cal["memory"]["kind"]:
        del cal["memory"]["kind"]
    if not cal["memory"]:
        del cal["memory"]
    return check(cal, "calibration (fitted)")


def packs_weights(hw) -> bool:
    """Whether GEMMs on ``hw`` may leave weight traffic and compute un-overlapped (``serial``): a CPU
    BLAS copies (packs) each weight panel before computing on it; GPU kernels stream tiles through
    shared memory while computing, so on a GPU ``serial`` is not fitted."""
    return hw.kind == "cpu"


def pack_limit_bytes(hw) -> float | None:
    """Weight bytes above which a GEMM's packed copy spills (``pack``): the law's resident fraction of the
    last cache level as the OS reports it where the probe recorded that, else of the profile's capacity.
    Not the probe's usable size: that is a neighbour's share at the probe's moment (read 14 of 32 MiB under
    load on the session-7 EPYC VM, which put GPT-2's 7 MB weights under the threshold and its 9.4 MB ones
    over, while in the model both ran at one time per weight byte); the BLAS blocks for the size it is
    told. That run re-fitted: 9.4 / 29.2 / 77 → 6.2 / 20.9 / 82 (median, p90, % op time ±25%)."""
    from .law import CACHE_RESIDENT_FRACTION, resident_limit_bytes
    cache = [t for t in hw.memory if t.role == "cache"]
    os_bytes = ((hw.extra.get("probe") or {}).get("capacity") or {}).get(cache[-1].name) if cache else None
    return CACHE_RESIDENT_FRACTION * float(os_bytes) if os_bytes else resident_limit_bytes(hw)


def spills(hw, cols: Columns, rows: np.ndarray) -> bool:
    """Whether some of ``rows`` is a GEMM (not a GEMV) whose weights exceed the law's resident fraction of
    the last cache level, so that ``pack`` (the spilled packed copy) can be fitted."""
    limit = pack_limit_bytes(hw)
    if limit is None:
        return False
    w = cols.bytes.get("weights", np.zeros(cols.flops.shape)).reshape(len(rows), -1)[:, 0]
    m = gemm_dims(cols)[0].reshape(len(rows), -1)[:, 0]
    return bool(np.any(rows & (w > limit) & (m >= 2)))


def _serial_identifiable(cols: Columns, rows: np.ndarray, table: dict | None = None) -> bool:
    """``serial`` can be told apart from η only with GEMMs (not GEMVs) that read weights from memory."""
    m = gemm_dims(cols)[0].reshape(len(rows), -1)[:, 0]
    kn = kn_rows(cols).reshape(-1)
    w = cols.bytes.get("weights", np.zeros(cols.flops.shape)).reshape(len(rows), -1)[:, 0]
    return int(np.sum(rows & ~is_gemv(table or {}, m, kn) & (w > 0))) >= 2


def layouts_identifiable(cols: Columns, rows: np.ndarray, table: dict | None = None) -> bool:
    """``m_half_nt`` can be told from ``m_half`` only with GEMMs (not GEMVs) of both weight layouts, two of each."""
    m = gemm_dims(cols)[0].reshape(len(rows), -1)[:, 0]
    kn = kn_rows(cols).reshape(len(rows), -1)[:, 0]
    g = rows & ~is_gemv(table or {}, m, kn)
    return int(np.sum(g & kn)) >= 2 and int(np.sum(g & ~kn)) >= 2


def _slots(cal: dict, scope: str, key: str) -> dict:
    """Where a group's compute / memory / latency_s live: (table, key) per field."""
    if scope == "kernel":
        t = cal["kernel"].setdefault(key, {})
        return {f: (t, f) for f in OP_FIELDS}
    return {"compute": (cal["compute"], key), "memory": (cal["memory"]["kind"], key), "latency_s": (cal["latency_s"], key)}


def _drop_inactive(cal, hw, cols, d0, c0, rows, slots) -> None:
    """Keep a fitted η only where it binds for some observation; an idle parameter means nothing."""
    base_c = np.array([hw.eta(k) for k in KINDS])[cols.kind_idx]
    ec = compute_eta(cal, cols, base_c).reshape(-1)
    em = memory_eta(cal, cols, np.full(len(d0), hw.efficiency["memory"])).reshape(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        comp_binds = (c0 / ec > d0 / em)[rows]
    for field, binds in (("compute", comp_binds), ("memory", ~comp_binds)):
        table, key = slots[field]
        if key in table and binds.sum() < 2:
            del table[key]


def _exp(x: float) -> float:
    return math.exp(min(max(float(x), -60.0), 60.0))       # the simplex may wander; keep exp finite


def _clip(x: float, lo: float, hi: float) -> float:
    return min(max(x, lo), hi)


def _subset(cols: Columns, rows: np.ndarray) -> Columns:
    return replace(cols, flops=cols.flops[rows], bytes={k: v[rows] for k, v in cols.bytes.items()},
                   network_bytes=cols.network_bytes[rows], count=cols.count[rows], kind_idx=cols.kind_idx[rows],
                   dtypes=[d for d, r in zip(cols.dtypes, rows) if r],
                   vector_flops=None if cols.vector_flops is None else cols.vector_flops[rows],
                   eta_scale=None if cols.eta_scale is None else cols.eta_scale[rows],
                   names=None if cols.names is None else [n for n, r in zip(cols.names, rows) if r],
                   kernels=None if cols.kernels is None else [k for k, r in zip(cols.kernels, rows) if r],
                   mnk=None if cols.mnk is None else cols.mnk[rows],
                   nk=None if cols.nk is None else cols.nk[rows],
                   resident=None if cols.resident is None else cols.resident[rows],
                   weights_kn=None if cols.weights_kn is None else cols.weights_kn[rows],
                   written=None if cols.written is None else cols.written[rows])


def _copy(c: dict) -> dict:
    return {k: (_copy(v) if isinstance(v, dict) else (list(v) if isinstance(v, list) else v)) for k, v in c.items()}


def _round(x):
    """A fitted number to 4 significant digits; a measured table (``gemv_row``'s pairs) as the probe wrote it."""
    if isinstance(x, (list, tuple)):
        return [list(v) for v in x]
    return float(f"{x:.4g}")


def _minimize(f, x0, rounds: int = 2, iters: int = 300) -> np.ndarray:
    """Nelder–Mead with restarts (no scipy needed); small problems, a few parameters."""
    x = np.asarray(x0, float)
    for _ in range(rounds):
        n = len(x)
        simplex = [x] + [x + 0.3 * np.eye(n)[i] for i in range(n)]
        vals = [f(s) for s in simplex]
        for _ in range(iters):
            order = np.argsort(vals)
            simplex, vals = [simplex[i] for i in order], [vals[i] for i in order]
            if abs(vals[-1] - vals[0]) < 1e-10:
                break
            c = np.mean(simplex[:-1], axis=0)
            xr = c + (c - simplex[-1])
            fr = f(xr)
            if fr < vals[0]:
                xe = c + 2.0 * (c - simplex[-1])
                fe = f(xe)
                simplex[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
            elif fr < vals[-2]:
                simplex[-1], vals[-1] = xr, fr
            else:
                xc = c + 0.5 * (simplex[-1] - c)
                fc = f(xc)
                if fc < vals[-1]:
                    simplex[-1], vals[-1] = xc, fc
                else:
                    simplex = [simplex[0]] + [simplex[0] + 0.5 * (s - simplex[0]) for s in simplex[1:]]
                    vals = [vals[0]] + [f(s) for s in simplex[1:]]
        x = simplex[int(np.argmin(vals))]
    return x


def predicted_s(hw, observations: list[Observation]) -> np.ndarray:
    """Predicted seconds per observation, through ``law.predict`` (the path every prediction takes)."""
    from . import law
    g = Graph("calibration-report", "infer", observations[0].op.dtype, [o.op for o in observations])
    return np.asarray(law.predict(g, hw).op_time_s, float).reshape(-1)


def report(hw, observations: list[Observation]) -> dict[str, dict]:
    """Per dataset: n, median and 90th-percentile absolute relative error of ``hw``'s predictions."""
    pred = predicted_s(hw, observations) + np.array([o.offset_s for o in observations])
    meas = np.array([o.time_s for o in observations])
    err = np.abs(pred / meas - 1.0)
    fitted = set(hw.extra.get("calibration", {}).get("fitted", []))
    out = {}
    for ds in dict.fromkeys(o.dataset for o in observations):
        sel = np.array([o.dataset == ds for o in observations])
        out[ds] = {"n": int(sel.sum()), "median_abs_err": float(np.median(err[sel])),
                   "p90_abs_err": float(np.percentile(err[sel], 90)), "fitted": ds in fitted}
    return out


def with_calibration(hw, cal: dict):
    """``hw`` using ``cal`` for every prediction."""
    return replace(hw, extra={**hw.extra, "calibration": check(cal, "calibration")})


def without_calibration(hw):
    """``hw`` with its [calibration] table removed (the flat [efficiency] defaults)."""
    return replace(hw, extra={k: v for k, v in hw.extra.items() if k != "calibration"})
