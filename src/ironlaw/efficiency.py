"""How close real kernels come to the peaks: efficiency per op and the fixed cost per op.

Defaults come from the hardware file's ``[efficiency]`` table (one fraction per op kind, 'other'
for the rest, 'memory' for bandwidth) and its ``[latency] op_s``. A calibrated profile can refine
them per op class and shape (see ``ironlaw.calibrate``); the law asks only these functions.
"""
from __future__ import annotations

import numpy as np

from .graph import KINDS, Columns
from .hardware import Hardware


def compute_eta(hw: Hardware, cols: Columns) -> np.ndarray:
    """(n_ops, *cfg) fraction of the unit's peak each op reaches."""
    per_kind = np.array([hw.eta(k) for k in KINDS])
    eta = per_kind[cols.kind_idx].reshape((-1,) + (1,) * len(cols.cfg_shape))
    cal = hw.extra.get("calibration")
    if cal:
        from . import calibrate
        eta = calibrate.compute_eta(cal, cols, eta)
    return np.broadcast_to(eta, cols.flops.shape)


def memory_eta(hw: Hardware, cols: Columns) -> np.ndarray:
    """(n_ops, 1…) fraction of a tier's bandwidth each op's traffic reaches."""
    eta = np.full((len(cols.kind_idx),) + (1,) * len(cols.cfg_shape), hw.efficiency["memory"])
    cal = hw.extra.get("calibration")
    if cal:
        from . import calibrate
        eta = calibrate.memory_eta(cal, cols, eta)
    return eta


def op_latency(hw: Hardware, cols: Columns) -> np.ndarray:
    """(n_ops, 1…) fixed seconds per op invocation (launch / dispatch)."""
    lat = np.full((len(cols.kind_idx),) + (1,) * len(cols.cfg_shape), hw.op_latency_s)
    cal = hw.extra.get("calibration")
    if cal:
        from . import calibrate
        lat = calibrate.op_latency(cal, cols, lat)
    return lat


def serial_share(hw: Hardware, cols: Columns) -> np.ndarray:
    """(n_ops, *cfg) share of the shorter of an op's data and compute time that does not overlap the
    longer (0 = fully overlapped, the default; a calibrated CPU GEMM packs its weights first)."""
    cal = hw.extra.get("calibration")
    if not cal:
        return np.zeros(cols.flops.shape)
    from . import calibrate
    return np.broadcast_to(calibrate.serial_share(cal, cols), cols.flops.shape)


def pack_extra_bytes(hw: Hardware, cols: Columns) -> np.ndarray:
    """(n_ops, *cfg) device-memory bytes of the packed weight copy a calibrated CPU GEMM spills when its
    weights do not fit the last cache level (0 = none, the default; see ``ironlaw.gemmshape``)."""
    cal = hw.extra.get("calibration")
    if not cal:
        return np.zeros(cols.flops.shape)
    from . import calibrate
    return np.broadcast_to(calibrate.pack_extra_bytes(cal, cols, hw), cols.flops.shape)
