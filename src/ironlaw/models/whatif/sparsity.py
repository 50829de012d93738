"""Weight sparsity: ``sparsity=0.9,format=csr`` (unstructured) and ``sparsity=2:4`` (structured).

Applies to the weights of matmul and conv ops (forward and backward); activations, gradients
and optimizer state stay dense (masked sparse training).

Unstructured, at density d = 1 − sparsity:
- FLOPs × d, and they leave the matrix unit: sparse kernels (cuSPARSE / Sputnik-style SpMM) run
  on the vector unit — no tensor-core rate — at IRREGULAR_ETA of a dense vector kernel's
  efficiency (indexed loads, load imbalance; parameter ``irregular``).
- weight bytes: d × values, plus the index:
    csr     one column index per nonzero (``index=int32`` 4 B, or int16) + row pointers
            ((rows + 1) × 4 B; rows ≈ √elements since the graph does not keep the matrix shape —
            the row pointers are < 0.1% of the column indices for LLM-size matrices)
    bitmap  one bit per element of the dense matrix
2:4 structured (only where ``hw.features['sparsity_2_4']``): the sparse tensor core skips the
zeros, so the FLOPs executed halve at the same dense peak and efficiency (ideal: NVIDIA reports
1.3–1.6× on real GEMMs, not 2×), and weights halve plus 2 bits of metadata per kept value.
"""
from __future__ import annotations

import numpy as np

from ...core.errors import IronlawError
from ...core.graph import DTYPE_BYTES, Graph
from .base import Choice, Number, copy_op, has, is_backward, transform, weight_dtype

IRREGULAR_ETA = 0.5          # estimate: sparse kernel efficiency relative to a dense vector kernel
INDEX_BYTES = {"int32": 4.0, "int16": 2.0}
ROW_POINTER_BYTES = 4.0
BITMAP_BYTES_PER_ELEM = 1.0 / 8.0
META_2_4_BYTES_PER_VALUE = 2.0 / 8.0   # 2-bit position of each kept value in its group of 4


class SparsityValue:
    """'0.9' -> 0.9 (fraction of zero weights, in [0, 1)); '2:4' -> '2:4'."""

    def __call__(self, raw: str, what: str):
        if raw.replace(" ", "") == "2:4":
            return "2:4"
        try:
            s = float(raw)
        except ValueError:
            raise IronlawError(f"{what}: expected a fraction of zero weights in [0, 1) or '2:4', got '{raw}'") from None
        if not (0.0 <= s < 1.0):
            raise IronlawError(f"{what}={raw}: sparsity must be in [0, 1) (the share of zero weights), i.e. "
                               f"density = 1 − sparsity in (0, 1]")
        return s


@transform("sparsity", main="sparsity", aliases=("sparse",),
           params={"sparsity": SparsityValue(), "density": Number(0.0, 1.0, lo_open=True),
                   "format": Choice(("csr", "bitmap")), "index": Choice(tuple(INDEX_BYTES)),
                   "irregular": Number(0.0, 1.0, lo_open=True)},
           defaults={"format": "csr", "index": "int32", "irregular": IRREGULAR_ETA},
           help="sparsity=0.9[,format=csr|bitmap][,index=int32|int16][,irregular=0.5] | sparsity=2:4 | "
                "sparsity,density=0.1")
def sparsity(g: Graph, hw, sparsity=None, density=None, format="csr", index="int32",
             irregular=IRREGULAR_ETA) -> Graph:
    if sparsity is not None and density is not None:
        raise IronlawError("what-if sparsity: give the sparsity (sparsity=0.9) or the density (density=0.1), not both")
    if sparsity == "2:4":
        return structured_2_4(g, hw)
    if sparsity is None and density is None:
        raise IronlawError("what-if sparsity needs a value: sparsity=0.9 (fraction of zeros) or density=0.1")
    d = density if density is not None else 1.0 - sparsity

    def change(op, values, elems):
        if format == "csr":
            idx = d * elems * INDEX_BYTES[index] + (np.sqrt(elems) + 1.0) * ROW_POINTER_BYTES
        else:
            idx = elems * BITMAP_BYTES_PER_ELEM
        dq = op.attrs.get("dequant_flops", 0.0)
        op.vector_flops = (op.vector_flops - dq) + d * (dq + op.flops)   # all of it on the vector unit now
        op.attrs["dequant_flops"] = d * dq
        op.flops = 0.0 * op.flops
        op.eta_scale = op.eta_scale * irregular
        return d * values, idx, d

    return _sparsify(g, change, f"{format}, density {d:g}")


def structured_2_4(g: Graph, hw) -> Graph:
    if not hw.features.get("sparsity_2_4"):
        raise IronlawError(f"sparsity=2:4 needs 2:4 sparse tensor cores; {hw.name} has none "
                           f"(its [features] table does not set sparsity_2_4): use unstructured sparsity=0.5 "
                           f"or a device that has them")

    def change(op, values, elems):
        op.flops = 0.5 * op.flops
        dq = op.attrs.get("dequant_flops", 0.0)
        op.vector_flops = op.vector_flops - 0.5 * dq
        op.attrs["dequant_flops"] = 0.5 * dq
        nnz_values = 0.5 * values
        return nnz_values, 0.5 * elems * META_2_4_BYTES_PER_VALUE, 0.5

    return _sparsify(g, change, "2:4")


def _sparsify(g: Graph, change, label: str) -> Graph:
    ops, saving, touched = [], 0.0, 0
    for op in g.ops:
        if op.kind not in ("matmul", "conv") or not has(op.bytes.get("weights", 0.0)):
            ops.append(op)
            continue
        if "density" in op.attrs:
            raise IronlawError(f"what-if sparsity: '{op.name}' is already sparse ({op.attrs.get('format')}); "
                               f"apply sparsity once")
        op = copy_op(op)
        wb = DTYPE_BYTES[weight_dtype(op)]
        values = op.bytes["weights"] - op.attrs.get("weight_scale_bytes", 0.0)
        elems = values / wb
        new_values, idx, d = change(op, values, elems)
        scale = op.attrs.get("weight_scale_bytes", 0.0) * d
        new_w = new_values + idx + scale
        if not is_backward(op):
            saving = saving + (op.bytes["weights"] - new_w) * op.count
        op.bytes["weights"] = new_w
        op.attrs.update(density=d, format=label.split(",")[0], weight_index_bytes=idx, weight_scale_bytes=scale)
        ops.append(op)
        touched += 1
    if not touched:
        raise IronlawError(f"what-if sparsity: '{g.name}' has no matmul or conv weights to sparsify")
    fp = dict(g.footprint)
    if "weights" in fp:
        fp["weights"] = np.maximum(fp["weights"] - saving, 0.0)
    meta = dict(g.meta, sparsity=label)
    return Graph(g.name, g.phase, g.dtype, ops, footprint=fp, meta=meta, uncounted_ops=dict(g.uncounted_ops))
