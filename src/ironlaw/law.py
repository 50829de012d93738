"""The Iron Law, per operator: T = D_vol/BW + O/(R_peak·η) + L_lat, composed over the ops.

For each op:
    data_s    = Σ over storage classes and tiers of bytes / (tier bandwidth · η_mem)
    compute_s = flops / (peak of the op's unit and dtype · η)
    latency_s = fixed per-op cost (kernel launch / dispatch)
    overlap:  time = max(read_s, compute_s) + s·min(read_s, compute_s) + write_s + latency_s
              (the critical path of one op; read_s + write_s = data_s. write_s is 0 but for a GPU
              GEMM, whose epilogue stores the output after the main loop: the written bytes' share of
              data_s (``efficiency.epilogue_share``). s = 0 unless a calibration measured a kernel that
              does not overlap its traffic with its compute, see ``ironlaw.gemmshape``)
    serial:   time = data_s + compute_s + latency_s
The workload's time is the sum over the op sequence. The resource that owns the largest share of
that time is the bottleneck, unless the footprint does not fit the device memory: then capacity
binds and the estimate names the tier the footprint spills to.

Everything is array math over (ops × configurations), so a sweep is one call.
"""
from __future__ import annotations

import numpy as np

from . import capacity, efficiency
from .errors import IronlawError
from .graph import CLASSES, MATRIX_KINDS, KINDS, Graph
from .hardware import Hardware

COMPOSITIONS = ("overlap", "serial")
# activations that the previous op just produced are read from the last cache level when the op's
# activation traffic fits in this fraction of it (see design notes: relu_/add_ read from cache); so is
# every byte of a workload whose whole footprint fits in this fraction of it
CACHE_RESIDENT_FRACTION = 0.5


def resident_limit_bytes(hw: Hardware) -> float | None:
    """CACHE_RESIDENT_FRACTION of the last cache level: what stays there between uses (None: no cache)."""
    cache = [t for t in hw.memory if t.role == "cache"]
    return CACHE_RESIDENT_FRACTION * cache[-1].capacity_bytes if cache else None


def fits_last_cache(footprint: dict, hw: Hardware):
    """Whether the whole footprint fits in resident_limit_bytes (array over configurations); False
    without a footprint or a cache level."""
    limit = resident_limit_bytes(hw)
    if limit is None or not footprint:
        return np.asarray(False)
    return np.asarray(sum(footprint.values(), 0.0) <= limit)


def predict(graph: Graph, hw: Hardware, composition: str = "overlap"):
    from .estimate import Estimate

    if composition not in COMPOSITIONS:
        raise IronlawError(f"composition must be one of {', '.join(COMPOSITIONS)}, got '{composition}'")
    cols = graph.columns()
    cfg = cols.cfg_shape
    n_ops, n_tiers = len(graph.ops), len(hw.memory)
    placement = capacity.place(graph.footprint, hw, cfg)

    # ---- data term: every storage class at the bandwidth of the tiers it occupies
    eta_mem = efficiency.memory_eta(hw, cols)
    bw = np.array([t.bw_Bps for t in hw.memory]).reshape((n_tiers, 1) + (1,) * len(cfg))
    cache = [i for i, t in enumerate(hw.memory) if t.role == "cache"]
    traffic = np.zeros((n_tiers, n_ops, *cfg))
    # a workload whose whole footprint fits stays in the last cache level between calls: its weights
    # (and everything else) are read from there, not from device memory (a small MLP on a CPU)
    resident = np.broadcast_to(fits_last_cache(graph.footprint, hw), cfg)[None]      # (1, *cfg)
    if cols.resident is not None:                         # ops measured in such a workload (calibration)
        resident = resident | cols.resident.reshape((-1,) + (1,) * len(cfg))
    for cls, b in cols.bytes.items():
        frac = placement.fraction(cls)                        # (n_tiers, *cfg)
        unplaced = frac.sum(axis=0) == 0                      # traffic of a class with no footprint
        frac[hw.device_tier] = np.where(unplaced, 1.0, frac[hw.device_tier])   # lives in device memory
        share = frac[:, None] * b[None]                       # (n_tiers, n_ops, *cfg)
        if cache and (cls == "activations" or np.any(resident)):
            llc = cache[-1]
            hot = (b <= resident_limit_bytes(hw)) if cls == "activations" else \
                np.broadcast_to(resident, b.shape)
            moved = np.where(hot[None], share, 0.0).sum(axis=0)
            share = np.where(hot[None], 0.0, share)
            share[llc] += moved
        traffic += share
    # spilled packed copies, GEMV passes, a GEMV's cost per stored row of weights read from device memory
    traffic[hw.device_tier] += efficiency.extra_weight_bytes(hw, cols, resident)
    data_tier_s = traffic / (bw * eta_mem[None])
    if cache and hw.extra.get("calibration"):          # an op's own η is its kernel's rate in the last cache
        from .calibrate import slow_tier_eta
        eta_base = efficiency.memory_eta_base(hw, cols)
        for t in range(cache[-1] + 1, n_tiers):
            eta_t = slow_tier_eta(eta_mem, eta_base, hw.memory[cache[-1]].bw_Bps, hw.memory[t].bw_Bps)
            data_tier_s[t] = traffic[t] / (hw.memory[t].bw_Bps * eta_t)
    data_s = data_tier_s.sum(axis=0)

    # ---- compute term: matrix ops on the matrix unit at their dtype, the rest on the vector unit
    peak = np.empty(n_ops)
    for i, (k, dt) in enumerate(zip(cols.kind_idx, cols.dtypes)):
        if KINDS[k] in MATRIX_KINDS:
            if np.any(cols.flops[i] > 0):
                peak[i] = hw.peak(dt)
            else:
                peak[i] = np.inf
        else:
            peak[i] = hw.vector_flops
    peak = peak.reshape((n_ops,) + (1,) * len(cfg))
    eta = efficiency.compute_eta(hw, cols)
    if cols.eta_scale is not None:                             # what-if: irregular access (sparse kernels)
        eta = eta * cols.eta_scale
    with np.errstate(invalid="ignore", divide="ignore"):
        compute_s = cols.flops / (peak * eta)
    compute_s = np.where(cols.flops > 0, compute_s, 0.0)       # no FLOPs, no compute time (whatever η says)
    if cols.vector_flops is not None:                          # what-if: vector work inside the op's kernel
        compute_s = compute_s + cols.vector_flops / (hw.vector_flops * hw.eta("elementwise")
                                                     * (1.0 if cols.eta_scale is None else cols.eta_scale))

    # ---- fixed latency and network: a collective's α (launch + hops) is latency, its β is network
    latency_s = np.broadcast_to(efficiency.op_latency(hw, cols), data_s.shape)
    network_s = np.zeros_like(data_s)
    if np.any(cols.network_bytes > 0):
        from .network.collectives import op_terms
        alpha_s, network_s = op_terms(graph, hw, cols)
        latency_s = np.where(cols.network_bytes > 0, alpha_s, latency_s)

    if composition == "overlap":
        serial = efficiency.serial_share(hw, cols)
        written = data_s * efficiency.epilogue_share(hw, cols)
        op_time = efficiency.composed(data_s, compute_s, serial, written) + latency_s + network_s
    else:
        op_time = data_s + compute_s + latency_s + network_s

    return Estimate(graph=graph, hw=hw, composition=composition, cols=cols, placement=placement, traffic_bytes=traffic,
                    data_tier_s=data_tier_s, data_s=data_s, compute_s=compute_s, latency_s=latency_s,
                    network_s=network_s, op_time_s=op_time)


__all__ = ["predict", "COMPOSITIONS", "CLASSES"]
