"""Weight-only quantization of one matrix op: its weights stored in a narrower dtype, its math in the dtype it had.

The kernel dequantizes every weight element it loads (convert + scale = DEQUANT_FLOPS on the vector unit) once per
M-tile of TILE_M rows of the GEMM: for decode (M = batch) that is once per element; for large M it amortizes.
The stored bytes are the element size of the new dtype plus ``scale_bytes`` per stored value (a block-scaled
format, ``graph.BLOCK_SCALED``, carries its scales in its element size: 0 there). The math is unchanged: the op
keeps its FLOPs and its dtype, and ``attrs["weight_elem_bytes"]`` (``elem_bytes``) turns its bytes back into the
elements its GEMM shape is read from (``gemmshape.gemm_dims``), so the matrix unit's η, M on the GEMV path
included, is the one it had: weight-only quantization changes the bytes and adds the dequantization, never the
matrix unit's FLOPs or rate. Used by the ``quant`` what-if
(``target=weights``) and by a checkpoint whose routed experts alone are stored narrower (gpt-oss: MXFP4).
"""
from __future__ import annotations

import numpy as np

from .graph import DTYPE_BYTES, Op, dtype_bytes

DEQUANT_FLOPS = 2.0          # convert + multiply by the scale, per element, on the vector unit
TILE_M = 128                 # rows of the GEMM one thread block holds (weights dequantized once per tile)


def weight_dtype(op: Op) -> str:
    """The dtype ``op``'s weights are stored in (its compute dtype unless stated)."""
    return op.attrs.get("weight_dtype", op.dtype)


def elem_bytes(op: Op) -> float:
    """Stored bytes per weight element of ``op`` as the GEMM shape reads its elements: its own (scales and indices
    shared out) once its weights were stored narrower, else its math dtype's size. A ratio, so sharding or
    grouping that scales the bytes keeps it."""
    return op.attrs.get("weight_elem_bytes", dtype_bytes(op.dtype))


def store_weights(op: Op, dtype: str, scale_bytes: float, dequantize: bool):
    """``op`` (a copy the caller owns; changed in place) with its weights stored in ``dtype``: the weight bytes
    shrink, and with ``dequantize`` (the math stays in ``op.dtype``) the kernel's dequantization joins the vector
    FLOPs. Returns the weight bytes saved per call."""
    before = op.bytes["weights"]
    elements = before / elem_bytes(op)
    wd = weight_dtype(op)
    old_w = before - op.attrs.get("weight_scale_bytes", 0.0)
    idx = op.attrs.get("weight_index_bytes", 0.0)
    nnz = (old_w - idx) / DTYPE_BYTES[wd]                     # stored values (all, unless sparse)
    elems = nnz / op.attrs.get("density", 1.0)                # elements of the dense matrix
    op.bytes["weights"] = nnz * (DTYPE_BYTES[dtype] + scale_bytes) + idx
    op.attrs["weight_scale_bytes"] = nnz * scale_bytes
    op.attrs["weight_dtype"] = dtype
    op.attrs["weight_elem_bytes"] = float(np.mean(op.bytes["weights"] / elements))
    if dequantize and dtype != op.dtype:
        m = np.ceil(op.flops / np.maximum(2.0 * elems, 1.0) / TILE_M) if np.any(np.asarray(op.flops) > 0) else 1.0
        dq = DEQUANT_FLOPS * nnz * m
        op.vector_flops = op.vector_flops - op.attrs.get("dequant_flops", 0.0) + dq
        op.attrs["dequant_flops"] = dq
    return before - op.bytes["weights"]
