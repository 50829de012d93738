"""Quantization of weights, activations and the KV cache: ``quant=int8,target=weights``.

The model (every constant is named and stated here):
- Bytes shrink with the element size, plus one fp16 scale per ``group`` elements (default 128:
  +1/64 byte per element; per-channel int8 scales are smaller still). The block-scaled formats (fp4 =
  NVFP4, mxfp4, mxfp8) carry their own scales in their element size (graph.BLOCK_SCALED): no group scale.
- ``target=weights`` (weight-only, the usual LLM case): the matrix op keeps computing in its
  activation dtype; the kernel dequantizes every weight element it loads (``core.weightonly``:
  DEQUANT_FLOPS on the vector unit once per M-tile of TILE_M rows of the GEMM).
- ``target=weights+activations``: the matrix op runs natively at the new dtype's peak — only
  where the device has it (``hw.peak``), else an IronlawError; no dequantization.
- ``target=activations`` alone: activation bytes shrink; matrix ops dequantize their inputs.
- ``target=kv``: KV-cache bytes shrink (traffic and footprint); attention dequantizes K and V
  as it reads them (DEQUANT_FLOPS per element).
Only matmul/conv weights are quantized; embeddings and norm gains keep their dtype.
"""
from __future__ import annotations

import numpy as np

from ...core.errors import IronlawError, unknown
from ...core.graph import BLOCK_SCALED, DTYPE_BYTES, MATRIX_KINDS, Graph, dtype_bytes
from ...core.weightonly import DEQUANT_FLOPS, TILE_M, store_weights  # noqa: F401  (TILE_M: public here too)
from .base import Choice, Number, copy_op, has, is_backward, transform, weight_dtype

QUANT_DTYPES = ("int8", "fp8", "int4", "fp4", "mxfp8", "mxfp4", "fp16", "bf16")
TARGETS = ("weights", "activations", "kv")
SCALE_BYTES = 2.0            # one fp16 scale per group


class TargetSet(frozenset):
    """The targets of one quant step, with ``given``: the text the user wrote for them ('all', 'kv_cache+weights'),
    quoted as written in a refusal."""
    given: str = "weights"


class Targets:
    """'weights', 'weights+activations', 'kv', 'all' … -> a TargetSet of TARGETS."""

    def __call__(self, raw: str, what: str):
        parts = list(TARGETS) if raw == "all" else [p.strip() for p in raw.replace("kv_cache", "kv").split("+")]
        for p in parts:
            if p not in TARGETS:
                raise unknown(f"{what} part", p, TARGETS + ("all",))
        out = TargetSet(parts)
        out.given = raw
        return out


@transform("quant", main="dtype", aliases=("quantize", "quantization"),
           params={"dtype": Choice(QUANT_DTYPES), "target": Targets(), "group": Number(1, 1 << 20, integer=True)},
           defaults={"target": frozenset({"weights"}), "group": 128},
           help="quant=int8|fp8|int4|fp4|mxfp8|mxfp4[,target=weights|activations|kv|weights+activations|all][,group=128]")
def quant(g: Graph, hw, dtype: str, target=frozenset({"weights"}), group: int = 128) -> Graph:
    new_b = DTYPE_BYTES[dtype]
    scale = SCALE_BYTES / group if new_b < 2 and dtype not in BLOCK_SCALED else 0.0
    native = {"weights", "activations"} <= target
    if native:
        _check_native(hw, dtype, getattr(target, "given", "weights+activations"))
    ops, w_saving = [], 0.0
    for op in g.ops:
        op = copy_op(op)
        matrix = op.kind in MATRIX_KINDS
        if "weights" in target and matrix and has(op.bytes.get("weights", 0.0)) and weight_dtype(op) != dtype:
            _check_narrower(dtype, weight_dtype(op), "weights", op.name, g.meta.get("expert_weight_source"))
            saved = store_weights(op, dtype, scale, dequantize=not native)
            if not is_backward(op):
                w_saving = w_saving + saved * op.count
        if "activations" in target and has(op.bytes.get("activations", 0.0)) and op.dtype not in ("fp32", "fp64", dtype):
            old_b = dtype_bytes(op.dtype)
            _check_narrower(dtype, op.dtype, "activations", op.name)
            act, written = op.bytes["activations"], op.bytes_written
            op.bytes["activations"] = act * new_b / old_b
            op.bytes_written = written * new_b / old_b
            if matrix and not (native and has(op.bytes.get("weights", 0.0))):
                inputs = np.maximum(act - written, 0.0) / old_b          # elements read, dequantized
                op.vector_flops = op.vector_flops + DEQUANT_FLOPS * inputs
        if "kv" in target and has(op.bytes.get("kv_cache", 0.0)) and op.attrs.get("kv_dtype", op.dtype) != dtype:
            kv_dt = op.attrs.get("kv_dtype", op.dtype)
            _check_narrower(dtype, kv_dt, "KV cache", op.name)
            kv = op.bytes["kv_cache"]
            op.bytes["kv_cache"] = kv * new_b / dtype_bytes(kv_dt)
            op.attrs["kv_dtype"] = dtype
            op.vector_flops = op.vector_flops + DEQUANT_FLOPS * kv / dtype_bytes(kv_dt)
        if native and matrix and has(op.bytes.get("weights", 0.0)):
            op.dtype = dtype
        ops.append(op)
    fp = dict(g.footprint)
    meta = dict(g.meta)
    if "weights" in target and "weights" in fp:
        fp["weights"] = np.maximum(fp["weights"] - w_saving, 0.0)
        meta["weight_dtype"] = dtype
    if "activations" in target and "activations" in fp and g.dtype not in ("fp32", "fp64", dtype):
        fp["activations"] = fp["activations"] * new_b / dtype_bytes(g.dtype)
    kv_dt = g.meta.get("kv_dtype", g.dtype)
    if "kv" in target and "kv_cache" in fp and kv_dt != dtype:
        fp["kv_cache"] = fp["kv_cache"] * new_b / dtype_bytes(kv_dt)
        meta["kv_dtype"] = dtype
        if "kv_cache_bytes" in meta:
            meta["kv_cache_bytes"] = fp["kv_cache"]
    if not any(has(o.bytes.get(c, 0.0)) for o in g.ops for c in
               (("weights",) if "weights" in target else ()) + (("kv_cache",) if "kv" in target else ())
               + (("activations",) if "activations" in target else ())):
        raise IronlawError(f"quant: '{g.name}' has no {'/'.join(sorted(target))} traffic to quantize")
    return Graph(g.name, g.phase, g.dtype, ops, footprint=fp, meta=meta, uncounted_ops=dict(g.uncounted_ops))


def _check_narrower(new: str, old: str, what: str, op: str, source: str | None = None) -> None:
    if DTYPE_BYTES[new] > DTYPE_BYTES[old]:
        where, start = (f", as {source} stores them", ", or start from the unquantized model with --dtype bf16") \
            if source else ("", "")
        raise IronlawError(f"quant={new}: the {what} of '{op}' are already {old} (narrower){where}; "
                           f"choose a dtype narrower than {old}{start}")


def _check_native(hw, dtype: str, given: str) -> None:
    """Weights and activations both at ``dtype`` run the matrix ops at its rate: refused where ``hw`` has none,
    quoting the target as the user gave it (``given``)."""
    if dtype not in hw.peak_flops:
        have = ", ".join(d for d in hw.peak_flops)
        raise IronlawError(f"quant={dtype},target={given}: {hw.name} has no {dtype} matrix unit, and target "
                           f"{given} runs the matrix ops in {dtype} (weights and activations) (it has: {have}); "
                           f"quantize weights only (target=weights) or choose another device")
