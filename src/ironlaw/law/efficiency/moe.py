"""The seconds a grouped MoE GEMM launch or an MoE layer adds per call: per local expert, per expert its rows
reach, per token taken in.
"""
from __future__ import annotations

import numpy as np

from ...core.graph import Columns, dtype_bytes
from ...machine.calibration import Calibration
from .shared import _names, classes_with


def expert_setup_s(cal: Calibration, cols: Columns) -> np.ndarray | float:
    """Per op, the seconds a grouped MoE GEMM launch spends on each expert slot of its rank, whether its tokens reach
    it or not: its kernel class's ``expert_s`` × the op's local experts (``op.attrs["local_experts"]``); 0 for every
    other op. aiconfigurator-core 0.12.0's TensorRT-LLM 1.3.0rc20 block-scaled FP8 MoE tables (H200, one token,
    top-8): 27 µs with 1–16 local experts, 63 µs with 128, 107 µs with 256 (``measure/calibrate/moefit``)."""
    if cols.local_experts is None:
        return 0.0
    return per_unit_s(cal, cols, "expert_s", cols.local_experts, (len(cols.kind_idx),) + (1,) * len(cols.cfg_shape))


def touched_setup_s(cal: Calibration, cols: Columns) -> np.ndarray | float:
    """Per op, the seconds a grouped MoE GEMM launch spends on each expert its rows reach: its kernel class's
    ``touched_s`` × the experts whose weights it streams, its weight elements over one expert's N × K
    (``op.attrs["nk"]``, the elements at ``op.attrs["weight_elem_bytes"]`` or its dtype's size: the U the routing
    gives it); 0 for every other op. aiconfigurator-core 0.12.0's TensorRT-LLM 1.3.0rc20 CUTLASS MoE tables on
    Blackwell (``measure/calibrate/moefit``, ``fit``'s per_touched)."""
    names = _names(cols, "kernels")
    if cols.nk is None or not classes_with(cal, names, "touched_s"):
        return 0.0
    n_ops = len(cols.kind_idx)
    eb = np.array([dtype_bytes(d) for d in cols.dtypes], float).reshape((n_ops,) + (1,) * len(cols.cfg_shape))
    if cols.weight_elem_bytes is not None:
        eb = np.where(cols.weight_elem_bytes > 0, cols.weight_elem_bytes, eb)
    nk = (cols.nk[:, 0] * cols.nk[:, 1]).reshape((n_ops,) + (1,) * len(cols.cfg_shape))
    w = cols.bytes.get("weights", np.zeros(cols.flops.shape))
    with np.errstate(divide="ignore", invalid="ignore"):
        touched = np.broadcast_to(np.where(nk > 0, w / (nk * eb), 0.0), cols.flops.shape)
    return per_unit_s(cal, cols, "touched_s", touched, cols.flops.shape)


def token_setup_s(cal: Calibration, cols: Columns) -> np.ndarray | float:
    """Per op, the seconds an MoE layer spends on each token it takes in, routed to the rank or not: its kernel
    class's ``token_s`` × the op's tokens (``op.attrs["tokens"]``, the combine's); 0 for every other op.
    TensorRT-LLM's Triton MoE (gpt-oss's weight-only MXFP4 experts on Hopper) runs its router's top-k and, under
    EP, its pruning and compaction one program per token (fused_moe_triton.py, ``TritonEPRouter``): ~60 ns per
    token of aiconfigurator-core 0.12.0's H100 and H200 tables (``measure/calibrate/moefit``)."""
    if cols.tokens is None:
        return 0.0
    return per_unit_s(cal, cols, "token_s", cols.tokens, cols.tokens.shape)


def per_unit_s(cal: Calibration, cols: Columns, field: str, units: np.ndarray, shape: tuple) -> np.ndarray | float:
    """Per op (an array of ``shape``), its kernel class's seconds per unit ``field`` × the op's ``units``; 0 for an
    op whose class states no ``field``."""
    names = _names(cols, "kernels")
    own = [(name, float(p[field])) for name, p in classes_with(cal, names, field)]
    if not own:
        return 0.0
    out = np.zeros(shape)
    for name, unit_s in own:
        r = names == name
        out[r] = (unit_s * units[r]).reshape((-1,) + tuple(shape[1:]))
    return out
