"""The Iron Law, per operator: T = D_vol/BW + O/(R_peak·η) + L_lat, composed over the ops.

For each op:
    data_s    = Σ over storage classes and tiers of bytes / (tier bandwidth · η_mem)
    compute_s = flops / (peak of the op's unit and dtype · η)
    latency_s = fixed per-op cost (kernel launch / dispatch); a collective's α, its β on the network
    overlap:  time = max(read_s, compute_s) + s·min(read_s, compute_s) + write_s + latency_s
              (read_s + write_s = data_s; write_s is a GPU GEMM's epilogue, ``Terms.epilogue``;
              s = 0 unless a calibration measured a kernel that does not overlap its traffic with its
              compute, docs/how-it-models.md)
    serial:   time = data_s + compute_s + latency_s
The workload's time is the sum over the op sequence. The resource that owns the largest share of
that time is the bottleneck, unless the footprint does not fit the device memory: then capacity
binds and the estimate names the tier the footprint spills to.

Every η, fixed latency and share comes from one table, ``efficiency.evaluate`` (the device's defaults and
calibration read once per graph); the terms below only read it.

Everything is array math over (ops × configurations), so a sweep is one call. ``predict`` is the one
evaluation of the law: the fitters (``ironlaw.measure.calibrate.calibrate``, ``ironlaw.measure.calibrate.fit``) place the traffic once
(``Placed``) and call ``timed`` for every candidate calibration.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..machine import capacity
from . import efficiency
from ..machine.cache import CACHE_RESIDENT_FRACTION, fits_last_cache, resident_limit_bytes  # noqa: F401  (re-exported)
from ..core.errors import IronlawError
from .estimate import Estimate
from ..core.graph import CLASSES, MATRIX_KINDS, KINDS, Columns, Graph
from ..machine.hardware import Hardware

COMPOSITIONS = ("overlap", "serial")


@dataclass
class Placed:
    """What does not depend on η: the ops as arrays, where their bytes move from, the peaks they run at."""
    graph: Graph
    cols: Columns
    placement: capacity.Placement
    resident: np.ndarray              # (1 | n_ops, *cfg) all of an op's traffic stays in the last cache level
    traffic: np.ndarray               # (n_tiers, n_ops, *cfg) bytes per tier, before a calibration's extra bytes
    peak: np.ndarray                  # (n_ops, 1…) FLOP/s of the op's unit at its dtype
    device_tier: int                  # index of the device memory tier in ``hw.memory``


def predict(graph: Graph, hw: Hardware, composition: str = "overlap") -> Estimate:
    """Per-op and total time of ``graph`` on ``hw``: the data term, the compute term, latency and network,
    composed."""
    if composition not in COMPOSITIONS:
        raise IronlawError(f"composition must be one of {', '.join(COMPOSITIONS)}, got '{composition}'")
    return timed(place(graph, hw), hw, composition)


def placed(est: Estimate, hw: Hardware) -> Estimate:
    """``est`` (one configuration) if it fits ``hw``'s memory tiers; refused where it fits in none of them at all
    (its time would be infinite). A sweep over arrays is returned as it is: each configuration says whether it fits."""
    if est.cols.cfg_shape == () and not bool(est.placement.fits):
        from ..core.units import fmt_size
        total = sum(t.capacity_bytes for t in hw.memory if t.role != "cache")
        raise IronlawError(f"{est.graph.name} does not fit on {hw.name}: footprint "
                           f"{fmt_size(est.footprint()['total_bytes'])} exceeds all memory tiers together "
                           f"({fmt_size(total)})")
    return est


def check_default_dtype(graph: Graph, hw: Hardware, dtype: str) -> None:
    """A dtype no one typed (a quantized checkpoint's, ``meta["dtype_source"]``) that ``hw`` lacks is refused
    naming where it came from."""
    if dtype not in hw.peak_flops and graph.meta.get("dtype_source"):
        raise IronlawError(f"{graph.meta['dtype_source']} is {dtype}, and {hw.lacks(dtype).split('; ')[0]}; give "
                           f"--dtype (bf16 prices the unquantized model)")


def place(graph: Graph, hw: Hardware) -> Placed:
    """The ops placed on ``hw``'s memory tiers and units; the device is read here, in one pass (its capacity
    placement, whether the footprint fits the last cache level, its resident limit, device tier and peaks)."""
    cols = graph.columns()
    placement = capacity.place(graph.footprint, hw, cols.cfg_shape)
    fits, hot_limit, dev = fits_last_cache(graph.footprint, hw), resident_limit_bytes(hw), hw.device_tier
    matrix = {}                                     # dtype -> FLOP/s of the matrix unit
    for dt in matrix_dtypes(cols):
        if dt not in hw.peak_flops:                # refused here: by where a dtype nobody typed came from
            check_default_dtype(graph, hw, dt)
        matrix[dt] = hw.peak(dt)
    resident = resident_ops(cols, fits)
    traffic = placed_traffic(cols, hw.memory, dev, placement, resident, hot_limit)
    return Placed(graph, cols, placement, resident, traffic, peaks(cols, matrix, hw.vector_flops), dev)


def timed(p: Placed, hw: Hardware, composition: str = "overlap") -> Estimate:
    """The law on placed ops, at ``hw``'s efficiencies and calibration."""
    terms = efficiency.evaluate(p.cols, hw, p.resident)
    traffic, data_tier_s = data_term(p, hw, terms)
    data_s = data_tier_s.sum(axis=0)
    compute_s = compute_term(p.cols, hw, p.peak, terms)
    latency_s, network_s = latency_and_network(p.graph, hw, p.cols, data_s.shape, terms)
    op_time = efficiency.floored(composed(composition, terms, data_s, compute_s) + latency_s + network_s,
                                 terms.floor_s, terms.floor_share)
    return Estimate(graph=p.graph, hw=hw, composition=composition, cols=p.cols, placement=p.placement,
                    traffic_bytes=traffic, data_tier_s=data_tier_s, data_s=data_s, compute_s=compute_s,
                    latency_s=latency_s, network_s=network_s, op_time_s=op_time, terms=terms)


# ---------------------------------------------------------------- data term

def resident_ops(cols: Columns, fits) -> np.ndarray:
    """(1 | n_ops, *cfg): a workload whose whole footprint fits stays in the last cache level between calls
    (its weights and everything else are read from there: a small MLP on a CPU); so do ops measured in
    such a workload (``op.attrs["resident"]``). ``fits``: the footprint fits the last cache level
    (``fits_last_cache``, per configuration)."""
    cfg = cols.cfg_shape
    resident = np.broadcast_to(fits, cfg)[None]
    if cols.resident is not None:
        resident = resident | cols.resident.reshape((-1,) + (1,) * len(cfg))
    return resident


def placed_traffic(cols: Columns, tiers: list, dev: int, placement: capacity.Placement, resident: np.ndarray,
                   hot_limit: float | None) -> np.ndarray:
    """(n_tiers, n_ops, *cfg) bytes each op moves from each of the device's memory ``tiers``: every storage
    class from the tiers it occupies (traffic of a class with no footprint from device memory, tier ``dev``);
    activations that fit the resident fraction (``hot_limit`` bytes), and all traffic of resident ops, from
    the last cache level, as are the activations of ops marked ``warm_activations`` (a kernel table's row whose
    collector loop keeps its one input in the cache with all else it touches)."""
    n_tiers, cfg = len(tiers), cols.cfg_shape
    cache = [i for i, t in enumerate(tiers) if t.role == "cache"]
    warm = False if cols.warm_activations is None else cols.warm_activations.reshape((-1,) + (1,) * len(cfg))
    traffic = np.zeros((n_tiers, len(cols.kind_idx), *cfg))
    for cls, b in cols.bytes.items():
        frac = placement.fraction(cls)                        # (n_tiers, *cfg)
        unplaced = frac.sum(axis=0) == 0                      # traffic of a class with no footprint
        frac[dev] = np.where(unplaced, 1.0, frac[dev])         # lives in device memory
        share = [frac[t][None] * b for t in range(n_tiers)]   # per tier (n_ops, *cfg): no (tiers × ops × …) temporary
        if cache and (cls == "activations" or np.any(resident)):
            hot = ((b <= hot_limit) | warm) if cls == "activations" else np.broadcast_to(resident, b.shape)
            moved = np.where(hot, share[0], 0.0)              # summed over the tiers in their order
            for s in share[1:]:
                moved = moved + np.where(hot, s, 0.0)
            share = [np.where(hot, 0.0, s) for s in share]
            share[cache[-1]] += moved
        for t, s in enumerate(share):
            traffic[t] += s
    return traffic


def data_term(p: Placed, hw: Hardware, terms: efficiency.Terms) -> tuple[np.ndarray, np.ndarray]:
    """(traffic, seconds) per tier and op: bytes / (BW_tier · η_mem), a calibration's extra weight bytes
    (spilled packed copies, GEMV passes and rows) read from device memory, and on tiers slower than the
    last cache level an op's own η as its kernel's rate in that cache (``efficiency.slow_tier_eta``)."""
    traffic = p.traffic
    if np.any(terms.extra_bytes):                   # (none on most devices: the placed traffic is the traffic)
        traffic = traffic.copy()
        traffic[p.device_tier] += terms.extra_bytes
    eta_mem = terms.memory_eta
    bw = np.array([t.bw_Bps for t in hw.memory])
    cache = [i for i, t in enumerate(hw.memory) if t.role == "cache"]
    llc = cache[-1] if cache and terms.memory_eta_base is not None else len(hw.memory)
    data_tier_s = np.empty(np.broadcast_shapes(traffic.shape, (1,) + np.shape(eta_mem)))
    for t in range(len(hw.memory)):                 # a tier at a time: no (tiers × ops × configurations) temporary
        if t > llc:
            eta_t = efficiency.slow_tier_eta(eta_mem, terms.memory_eta_base, hw.memory[llc].bw_Bps, hw.memory[t].bw_Bps)
            np.divide(traffic[t], hw.memory[t].bw_Bps * eta_t, out=data_tier_s[t])
        else:
            np.divide(traffic[t], bw[t] * eta_mem, out=data_tier_s[t])
    return traffic, data_tier_s


# ---------------------------------------------------------------- compute term

def matrix_dtypes(cols: Columns) -> list[str]:
    """The dtypes the matrix unit runs, in op order: those of matrix ops with FLOPs."""
    return list(dict.fromkeys(dt for i, (k, dt) in enumerate(zip(cols.kind_idx, cols.dtypes))
                              if KINDS[k] in MATRIX_KINDS and np.any(cols.flops[i] > 0)))


def peaks(cols: Columns, matrix: dict, vector_flops: float) -> np.ndarray:
    """(n_ops, 1…) FLOP/s: matrix ops on the matrix unit at their dtype (``matrix``: dtype → peak), the rest
    on the vector unit."""
    peak = np.empty(len(cols.kind_idx))
    for i, (k, dt) in enumerate(zip(cols.kind_idx, cols.dtypes)):
        if KINDS[k] in MATRIX_KINDS:
            peak[i] = matrix[dt] if np.any(cols.flops[i] > 0) else np.inf
        else:
            peak[i] = vector_flops
    return peak.reshape((-1,) + (1,) * len(cols.cfg_shape))


def compute_term(cols: Columns, hw: Hardware, peak: np.ndarray, terms: efficiency.Terms) -> np.ndarray:
    """(n_ops, *cfg) flops / (peak · η); what-ifs scale η (sparse kernels) and add vector work, or run it beside the
    matrix work where the op's kernel class says so (``terms.vector_overlap``: the longer of the two)."""
    eta = terms.compute_eta
    if cols.eta_scale is not None:
        eta = eta * cols.eta_scale
    with np.errstate(invalid="ignore", divide="ignore"):
        compute_s = cols.flops / (peak * eta)
    compute_s = np.where(cols.flops > 0, compute_s, 0.0)       # no FLOPs, no compute time (whatever η says)
    if cols.vector_flops is not None:
        vector_s = cols.vector_flops / (hw.vector_flops * terms.vector_eta
                                        * (1.0 if cols.eta_scale is None else cols.eta_scale))
        compute_s = np.where(terms.vector_overlap, np.maximum(compute_s, vector_s), compute_s + vector_s)
    return compute_s


# ---------------------------------------------------------------- latency, network, composition

def latency_and_network(graph: Graph, hw: Hardware, cols: Columns, shape: tuple,
                        terms: efficiency.Terms) -> tuple[np.ndarray, np.ndarray]:
    """Fixed seconds per op and network seconds: a collective's α (launch + hops) is its latency, its β
    the network term."""
    latency_s = np.broadcast_to(terms.latency_s, shape)
    network_s = np.zeros(shape)
    if np.any(cols.network_bytes > 0):
        from ..machine.network.collectives import op_terms   # collectives only: one device's ops skip its import
        alpha_s, network_s = op_terms(graph, hw, cols)
        latency_s = np.where(cols.network_bytes > 0, alpha_s, latency_s)
    return latency_s, network_s


def composed(composition: str, terms: efficiency.Terms, data_s: np.ndarray, compute_s: np.ndarray) -> np.ndarray:
    """An op's data and compute time together: overlapped (``efficiency.composed``) or added."""
    if composition == "overlap":
        return efficiency.composed(data_s, compute_s, terms.serial, data_s * terms.epilogue)
    return data_s + compute_s


__all__ = ["predict", "COMPOSITIONS", "CLASSES"]
