"""How close real kernels come to the peaks: efficiency per op and the fixed cost per op.

Defaults come from the hardware file's ``[efficiency]`` table (one fraction per op kind, 'other'
for the rest, 'memory' for bandwidth) and its ``[latency] op_s``. A calibrated profile can refine
them per op class and shape (``ironlaw.law.calibrated``); the law asks only these functions.
"""
from __future__ import annotations

import numpy as np

from . import calibrated
from ..core.graph import KINDS, Columns
from ..machine.hardware import Hardware


def compute_eta(hw: Hardware, cols: Columns) -> np.ndarray:
    """(n_ops, *cfg) fraction of the unit's peak each op reaches."""
    per_kind = np.array([hw.eta(k) for k in KINDS])
    eta = per_kind[cols.kind_idx].reshape((-1,) + (1,) * len(cols.cfg_shape))
    cal = hw.calibration
    if cal is not None:
        eta = calibrated.compute_eta(cal, cols, eta)
    return np.broadcast_to(eta, cols.flops.shape)


def memory_eta(hw: Hardware, cols: Columns) -> np.ndarray:
    """(n_ops, 1…) fraction of a tier's bandwidth each op's traffic reaches."""
    eta = np.full((len(cols.kind_idx),) + (1,) * len(cols.cfg_shape), hw.efficiency["memory"])
    cal = hw.calibration
    if cal is not None:
        eta = calibrated.memory_eta(cal, cols, eta)
    return eta


def memory_eta_base(hw: Hardware, cols: Columns) -> np.ndarray:
    """(n_ops, 1…) ``memory_eta`` without the ops' own values (kind, op class, kernel): the plain
    reuse patterns' η (see ``calibrated.slow_tier_eta``)."""
    eta = np.full((len(cols.kind_idx),) + (1,) * len(cols.cfg_shape), hw.efficiency["memory"])
    cal = hw.calibration
    if cal is not None:
        eta = calibrated.memory_eta(cal, cols, eta, own=False)
    return eta


def op_latency(hw: Hardware, cols: Columns) -> np.ndarray:
    """(n_ops, 1…) fixed seconds per op invocation (launch / dispatch)."""
    lat = np.full((len(cols.kind_idx),) + (1,) * len(cols.cfg_shape), hw.op_latency_s)
    cal = hw.calibration
    if cal is not None:
        lat = calibrated.op_latency(cal, cols, lat)
    return lat


def serial_share(hw: Hardware, cols: Columns) -> np.ndarray:
    """(n_ops, *cfg) share of the shorter of an op's data and compute time that does not overlap the
    longer (0 = fully overlapped, the default; a calibrated CPU GEMM packs its weights first)."""
    cal = hw.calibration
    if cal is None:
        return np.zeros(cols.flops.shape)
    return np.broadcast_to(calibrated.serial_share(cal, cols), cols.flops.shape)


def extra_weight_bytes(hw: Hardware, cols: Columns, resident=None) -> np.ndarray:
    """(n_ops, *cfg) device-memory bytes a calibrated CPU GEMM reads beyond its weights once: the packed
    copy it spills when its weights do not fit the last cache level, the further passes of a GEMV path,
    a GEMV's cost per stored row where its weights are not ``resident`` in the last cache level (0 = none,
    the default; see ``ironlaw.core.gemmshape``)."""
    cal = hw.calibration
    if cal is None:
        return np.zeros(cols.flops.shape)
    return np.broadcast_to(calibrated.extra_weight_bytes(cal, cols, hw, resident), cols.flops.shape)


def epilogue_share(hw: Hardware, cols: Columns) -> np.ndarray:
    """(n_ops, *cfg) share of an op's data time that its kernel spends storing its output after the main
    loop, not overlapped with compute: a GPU GEMM's epilogue (the written bytes' share of its traffic);
    0 elsewhere (CPU GEMMs: see ``serial_share``). A CTA computes its output tile over the K loop, its
    loads pipelined under the MMAs, then stores the tile; with one or two CTAs per SM launched in waves
    the stores of a wave are not hidden. Negligible for a deep K (a 4096-deep projection: ~1%), it is
    most of the time of a batched QKᵀ (K = 128 writing the s² scores)."""
    out = np.zeros(cols.flops.shape)
    if hw.kind != "gpu" or cols.written is None:
        return out
    rows = np.array(KINDS)[cols.kind_idx] == "matmul"
    total = sum(cols.bytes.values(), np.zeros(cols.flops.shape))
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(total > 0, np.minimum(np.broadcast_to(cols.written, total.shape) / total, 1.0), 0.0)
    out[rows] = share[rows]
    return out


def composed(data_s, compute_s, serial, written_s):
    """An op's overlapped time: its reads overlap its compute but for the ``serial`` share of the shorter
    of the two; the ``written_s`` part of its data time (the epilogue's stores) follows them."""
    read = data_s - written_s
    return np.maximum(read, compute_s) + serial * np.minimum(read, compute_s) + written_s
