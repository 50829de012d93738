"""How an op's data and compute time overlap: the epilogue's share, the serial share, their composition, and the
floor a call's work overlaps (``overlap_floor_s``, ``floored``).
"""
from __future__ import annotations

import numpy as np

from ...core.gemmshape import gemm_dims, gemm_serial, kn_rows
from ...core.graph import Columns, KINDS
from ...machine.calibration import Calibration
from .shared import classes_with, gemm_kernels, op_names, shape_tables


def epilogue_share(device_kind: str, cols: Columns) -> np.ndarray:
    """(n_ops, *cfg) share of an op's data time that its kernel spends storing its output after the main
    loop, not overlapped with compute: a GPU GEMM's epilogue (the written bytes' share of its traffic);
    0 elsewhere (CPU GEMMs: see ``serial_share``). A CTA computes its output tile over the K loop, its
    loads pipelined under the MMAs, then stores the tile; with one or two CTAs per SM launched in waves
    the stores of a wave are not hidden. Negligible for a deep K (a 4096-deep projection: ~1%), it is
    most of the time of a batched QKᵀ (K = 128 writing the s² scores)."""
    if not isinstance(device_kind, str):      # a Hardware here would read as a non-GPU: zeros, silently
        raise TypeError(f"epilogue_share takes the device's kind ('gpu', 'cpu' …), got {type(device_kind).__name__}")
    out = np.zeros(cols.flops.shape)
    if device_kind != "gpu" or cols.written is None:
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


def serial_share(cal: Calibration, cols: Columns) -> np.ndarray:
    """Per op, the share of min(data, compute) not overlapped (``serial`` of the GEMM shape tables)."""
    out = np.zeros(cols.flops.shape)
    for kind, p, r in shape_tables(cal, cols, "serial"):
        m = gemm_dims(cols)[0]
        kn = kn_rows(cols) if kind == "matmul" else np.zeros(m.shape, bool)
        out[r] = gemm_serial(p, m[r], kn[r])
    names = op_names(cols, "kernels")
    for name, p in gemm_kernels(cal, names):
        out[names == name] = float(p.get("serial", 0.0))
    return out


def overlap_floor_s(cal: Calibration, cols: Columns) -> tuple[np.ndarray | float, np.ndarray | float]:
    """(n_ops, 1…) per op, the seconds its kernel class's call takes at least whatever its work (``floor_s``) and the
    share of the shorter of floor and work that the two do not overlap (``floor_share``); 0 and 0 for an op whose
    class states no floor: a floor the work overlaps, not one it adds to (``floored``)."""
    names = op_names(cols, "kernels")
    own = classes_with(cal, names, "floor_s")
    if not own:
        return 0.0, 0.0
    floor, share = np.zeros(len(names)), np.zeros(len(names))
    for name, p in own:
        floor[names == name], share[names == name] = float(p["floor_s"]), float(p.get("floor_share", 0.0))
    lead = (len(names),) + (1,) * len(cols.cfg_shape)
    return floor.reshape(lead), share.reshape(lead)


def floored(op_s, floor_s, share=0.0):
    """An op's time over its floor: the longer of ``op_s`` (its data, compute and latency as the law composes them)
    and ``floor_s``, and ``share`` of the shorter (``overlap_floor_s``). Wall time is the critical path: where the
    host submits each call while the device runs the one before, a call as short as its submission waits for it, and
    one longer hides it; a timed run of n calls from an idle device pays the first submission and the last call's
    work once more, 1/n of the shorter per call (``kernelfit.rules.OVERLAP_FLOOR``)."""
    return np.maximum(op_s, floor_s) + share * np.minimum(op_s, floor_s)
