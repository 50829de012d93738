"""NVFP4 training as NVIDIA's published recipe runs it: the format's GEMMs and quantizing kernels, for
``precision.lower`` (``--dtype fp4 --phase train``).

The recipe (arXiv 2509.25149, "Pretraining Large Language Models with NVFP4", NVIDIA 2025; Transformer Engine's
``NVFP4BlockScaling``; Megatron-Bridge v0.2.0 ``bf16_with_nvfp4_mixed``, the NeMo 25.11 performance recipes):
- the GEMMs of the transformer blocks' linear layers — forward, dgrad and wgrad — read E2M1 operands with one
  E4M3 scale per 16 elements and an FP32 scale per tensor, and write bf16, on the matrix unit at its fp4 rate;
- activations and gradients are scaled in 1×16 blocks: the forward's input rounds to nearest, the backward's output
  gradient rounds stochastically (unbiased);
- weights are scaled in 2D 16×16 blocks (one scale per 256 elements), so the row-wise copy the forward reads and
  the column-wise copy the dgrad reads hold the same values; they are quantized once per step and kept across
  micro-batches (``WEIGHT_COPY_BYTES`` per parameter beside the bf16 weights);
- the weight-gradient GEMM's two inputs (the column-wise copies of the input and of the output gradient) pass a
  16×16 random Hadamard transform (random signs) before they are quantized;
- attention (QKᵀ, softmax, PV), norms, activations, the router, the embedding, the LM head and the loss stay in
  BF16. The paper's accuracy runs also keep a few blocks at the ends of the network in BF16; Megatron-Bridge's
  performance recipe does not (``first_last_layers_bf16`` False), and neither does this module.

Per linear and micro-batch, each quantize is a memory-bound kernel pair of its own (TE: an amax pass over the
tensor and its Hadamard transform, then the cast): ``READ_BYTES`` per bf16 element read (two passes),
``WRITE_BYTES`` written (the row-wise copy and the transformed column-wise copy, 0.5 B + 1/16 B of scale each),
``FLOPS`` per element (the 16×16 transform, 2·16 FLOPs per element, in both passes; the cast; the stochastic
rounding's random number in the backward). The input is saved for the wgrad as its column-wise copy.
"""
from __future__ import annotations

import copy

from ..core.errors import IronlawError
from ..core.graph import DTYPE_BYTES, Op

DTYPE = "fp4"
WIDE = "bf16"
ELEM_BYTES = 0.5 + 1.0 / 16.0                # E2M1 element with its share of a 16-element block's E4M3 scale
WEIGHT_BYTES = 0.5 + 1.0 / 256.0             # a weight in a 16×16-scaled block
WEIGHT_COPY_BYTES = 2.0 * WEIGHT_BYTES       # row- and column-wise copies kept per parameter
READ_BYTES = 2.0 + 2.0                       # amax pass + cast pass over the bf16 tensor
WRITE_BYTES = 2.0 * ELEM_BYTES               # row-wise copy + Hadamard-transformed column-wise copy
RHT_FLOPS = 2.0 * 16.0                       # a 16-vector times a 16×16 matrix, per element
FLOPS = {False: 2.0 * RHT_FLOPS + 2.0, True: 2.0 * RHT_FLOPS + 2.0 + 4.0}   # backward: + stochastic rounding


def require(hw) -> None:
    """Refuse a device NVIDIA's NVFP4 training recipe does not run on (``[features] nvfp4_training``)."""
    if hw.features.get("nvfp4_training"):
        return
    from ..machine import hardware
    where = ", ".join(h.name for h in hardware.catalog() if h.features.get("nvfp4_training"))
    lacks = "has fp4 tensor cores but no published NVFP4 training recipe" if DTYPE in hw.peak_flops else \
        "has no fp4 tensor cores"
    raise IronlawError(f"--dtype fp4 training runs NVIDIA's NVFP4 recipe (arXiv 2509.25149, Transformer Engine "
                       f"NVFP4BlockScaling), published for data-center Blackwell ({where}); {hw.name} {lacks}")


def gemm(op: Op, in_b, out_b, bwd: bool) -> Op:
    """A linear's GEMM in NVFP4: operands read as E2M1 with their scales, output in bf16.

    forward  reads x [T,k] and W, writes y [T,n] in bf16
    backward dgrad reads dy [T,n] and W, writes dx [T,k] in bf16; wgrad reads the transformed copies of x and dy
    """
    new = copy.copy(op)
    half = DTYPE_BYTES[WIDE]
    act = ((2.0 * out_b + in_b) * ELEM_BYTES / half + in_b) if bwd else (in_b * ELEM_BYTES / half + out_b)
    new.bytes = dict(op.bytes, activations=act)
    if "weights" in op.bytes:
        new.bytes["weights"] = op.bytes["weights"] * WEIGHT_BYTES / half
    new.dtype = DTYPE
    new.attrs = dict(op.attrs, precision=DTYPE)
    return new


def cast(f: Op, nbytes, bwd: bool, split: bool) -> Op:
    """Quantizing the forward's input (or the backward's output gradient) of linear ``f`` to NVFP4."""
    elems = nbytes / DTYPE_BYTES[WIDE]
    what = "output gradient (stochastic rounding)" if bwd else "input"
    return Op(f"fp4_cast.{f.name}{'.backward' if bwd else ''}", "elementwise", flops=FLOPS[bwd] * elems,
              bytes={"activations": (READ_BYTES + WRITE_BYTES) * elems}, dtype=WIDE, count=f.count, module=f.module,
              shapes=f"nvfp4 quantize + 16×16 Hadamard of the {what} of {f.name}", bytes_written=WRITE_BYTES * elems,
              attrs={"tp_split": split, "role": "cast",
                     **{k: f.attrs[k] for k in ("per_layer", "expert") if k in f.attrs}})
