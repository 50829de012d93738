"""Low-precision training: FP8 GEMMs with current scaling (Hopper) and MXFP8 (Blackwell), as Transformer
Engine runs them under Megatron-LM, and NVFP4 (Blackwell: the format's GEMMs and kernels in ``nvfp4``).

    lower(g, dtype, any_layout)   a training graph of the transformer builder → the same step with the linear
                                  GEMMs of its layers (attention projections, MLP and expert projections) at
                                  ``dtype``, on a device whose FP8 GEMMs take either layout or only TN

What changes, per linear layer of the transformer blocks (its forward GEMM and its dgrad + wgrad backward):
- the GEMM runs on the matrix unit at the dtype's peak; it reads its operands in one byte (the quantized input
  or output gradient, the quantized weight) and writes its output in bf16;
- quantizing an operand is a memory-bound kernel of its own (``CAST_READ_BYTES``, ``cast_write_bytes``):
  current scaling reads the bf16
  tensor once for its amax and once more to cast it, and writes the row-wise copy and the column-wise
  (transposed) copy the backward's other GEMM needs where the device's FP8 GEMMs take the TN layout only
  (Hopper): 2 + 2 bytes read, 1 + 1 written per element; a device whose FP8 GEMMs take either layout
  (``[features] fp8_any_layout``: Blackwell) keeps the one copy: 1 written. MXFP8 (one power-of-two scale per
  32 elements along the GEMM's K, found in the same pass) reads once and writes both copies with their scales
  on every device (the transposed GEMM needs blocks along the other axis): 2 + 2·(1 + 1/32). The forward
  quantizes the GEMM's input [T, k], the backward its output gradient [T, n]; the weights' copies are cast
  once per step and kept across micro-batches (``weight_copy_bytes`` of memory per parameter);
- attention stays bf16 (Megatron's FP8 recipes keep dot-product attention in bf16), and so do norms,
  activations, residuals, the router, the LM head and the loss (Megatron's output layer is not a TE module).
Memory: each linear's input is saved for the backward as its 1-byte copy instead of bf16 (the footprint's
activations); ``parallel`` adds the FP8 copies of the weights to the bf16 weights and gradients and the fp32
master weights and Adam moments.

A graph built at ``fp8`` or ``mxfp8`` throughout (every byte one byte wide) is first widened to bf16: the
builder's traffic and footprint scale with the dtype's width, except the optimizer's fp32 state.
"""
from __future__ import annotations

import copy
from typing import Callable

from . import nvfp4
from ..core.errors import IronlawError
from ..core.graph import DTYPE_BYTES, Graph, Op
from ..core.registry import registrar

WIDE = "bf16"
CAST_READ_BYTES = {"fp8": 2.0 + 2.0, "mxfp8": 2.0}         # per element: amax pass + cast pass | one pass
COPY_BYTES = {"fp8": 1.0, "mxfp8": 1.0 + 1.0 / 32.0}       # one FP8 copy per element, with its block scales
TRAINING_DTYPES = tuple(CAST_READ_BYTES) + (nvfp4.DTYPE,)     # fp4: NVIDIA's NVFP4 recipe (``nvfp4``)


# ---------------------------------------------------------------------- which ops a recipe lowers, by op role
# A recipe lowers the GEMMs of the layers' linears: the ops whose role (``attrs["role"]``, set by the builders and
# by capture, as for ``parallel.SHARDING``) has a rule here. The rule says whether the tensor each of its casts
# quantizes is split over TP: ``split(bwd)`` for the forward's input (bwd False) or the backward's output gradient.
LOWERED: dict[str, Callable[[bool], bool]] = {}


lowered = registrar(LOWERED, "precision")     # @lowered(*roles): those linears are lowered, with their casts' TP split


@lowered("column")
def _column(bwd: bool) -> bool:
    """Column-parallel (q/k/v, up/gate): the input is whole on every rank (split only with sequence
    parallelism), the output gradient split."""
    return bwd


@lowered("row")
def _row(bwd: bool) -> bool:
    """Row-parallel (o, down): the input split over TP, the output gradient whole."""
    return not bwd


def lowers(op: Op, layers) -> bool:
    """Whether a recipe lowers ``op``: a forward GEMM of a lowered role in the repeated layer stack (the LM head,
    the router, attention's per-head products and everything outside the layers stay bf16)."""
    return (op.attrs.get("role", "") in LOWERED and op.kind == "matmul" and not op.name.endswith(".backward")
            and in_layers(op, layers))


def copies(dtype: str, any_layout: bool = False) -> int:
    """FP8 copies of a quantized tensor: row- and column-wise, but one for per-tensor FP8 on a device whose FP8
    GEMMs take either layout."""
    return 1 if dtype == "fp8" and any_layout else 2


def cast_write_bytes(dtype: str, any_layout: bool = False) -> float:
    """Bytes a quantizing kernel writes per element."""
    return copies(dtype, any_layout) * COPY_BYTES[dtype]


def weight_copy_bytes(meta: dict) -> float:
    """Bytes of FP8 weight copies per parameter kept beside the bf16 weights of a lowered graph (0 if none)."""
    dtype = meta.get("precision")
    if dtype == nvfp4.DTYPE:
        return nvfp4.WEIGHT_COPY_BYTES
    return cast_write_bytes(dtype, meta.get("fp8_any_layout", False)) if dtype in TRAINING_DTYPES else 0.0


def is_low(dtype: str) -> bool:
    return dtype in TRAINING_DTYPES


def in_layers(op: Op, layers) -> bool:
    """Whether ``op`` belongs to the repeated layer stack: the builder's ``attrs["per_layer"]`` (layers of
    different kinds have different counts), else a count of every layer."""
    return bool(op.attrs["per_layer"]) if "per_layer" in op.attrs else op.count == layers


def widen(g: Graph) -> Graph:
    """A graph built at an FP8 dtype throughout → the same graph in bf16 (optimizer state unchanged)."""
    r = DTYPE_BYTES[WIDE] / DTYPE_BYTES.get(g.dtype, 1.0)
    ops = []
    for op in g.ops:
        new = copy.copy(op)
        new.bytes = {k: (v if k == "optimizer" else v * r) for k, v in op.bytes.items()}
        new.bytes_written = op.bytes_written * r if op.dtype == g.dtype else op.bytes_written
        new.dtype = WIDE if op.dtype == g.dtype else op.dtype
        new.network_bytes = op.network_bytes * r
        ops.append(new)
    meta = dict(g.meta)
    for k in ("weight_bytes", "kv_cache_bytes"):
        if k in meta:
            meta[k] = meta[k] * r
    fp = {k: (v if k == "optimizer" else v * r) for k, v in g.footprint.items()}
    return Graph(g.name, g.phase, WIDE, ops, footprint=fp, meta=meta, uncounted_ops=dict(g.uncounted_ops))


def lower(g: Graph, dtype: str, any_layout: bool = False) -> Graph:
    """The training step of ``g`` with its layers' linear GEMMs at ``dtype`` (``fp8`` or ``mxfp8``);
    ``any_layout``: the device's FP8 GEMMs take either layout (``copies``)."""
    if dtype not in TRAINING_DTYPES:
        raise IronlawError(f"low-precision training is one of {', '.join(TRAINING_DTYPES)}, got '{dtype}'")
    if g.phase != "train":
        raise IronlawError(f"FP8 training lowers a training graph (--phase train), got '{g.phase}'")
    if g.meta.get("precision") in TRAINING_DTYPES:
        return g
    if g.meta.get("captured"):
        raise IronlawError(f"{g.name}: {dtype} training of a captured model is not modelled: it lowers the linears "
                           f"of a transformer built by ironlaw (its layers and each linear's backward known)")
    if g.dtype != WIDE:
        if not is_low(g.dtype):
            raise IronlawError(f"{dtype} training starts from a {WIDE} (or {dtype}) graph, got {g.dtype}")
        g = widen(g)
    L = g.meta.get("layers")
    fwd = {op.name: op for op in g.ops if lowers(op, L)}
    if not fwd:
        raise IronlawError(f"{g.name}: {dtype} training needs the layers' linears known (an op role of "
                           f"{', '.join(LOWERED)}, set by ironlaw's builders and by capture)")
    fp4 = dtype == nvfp4.DTYPE
    ops: list[Op] = []
    for op in g.ops:
        bwd = op.name.endswith(".backward")
        f = fwd.get(op.name[:-len(".backward")] if bwd else op.name)
        if f is None:
            ops.append(op)
            continue
        in_b = f.bytes["activations"] - f.bytes_written          # bf16 bytes of the input [T, k]
        out_b = f.bytes_written                                   # bf16 bytes of the output [T, n]
        if fp4:
            ops += [nvfp4.cast(f, out_b if bwd else in_b, bwd, _split(f, bwd)), nvfp4.gemm(op, in_b, out_b, bwd)]
        else:
            ops += [_cast(f, dtype, out_b if bwd else in_b, bwd, any_layout), _gemm(op, dtype, in_b, out_b, bwd)]
    meta = dict(g.meta, precision=dtype, fp8_any_layout=bool(any_layout))
    fp = dict(g.footprint)
    if "activations" in fp:               # each linear's input is saved for its wgrad as the low-precision copy
        keep = (nvfp4.ELEM_BYTES if fp4 else 1.0) / DTYPE_BYTES[WIDE]
        fp["activations"] = fp["activations"] - sum(
            (f.bytes["activations"] - f.bytes_written) * (1.0 - keep) * f.count for f in fwd.values())
    return Graph(g.name, g.phase, g.dtype, ops, footprint=fp, meta=meta, uncounted_ops=dict(g.uncounted_ops))


def _gemm(op: Op, dtype: str, in_b, out_b, bwd: bool) -> Op:
    """A linear's GEMM at ``dtype``: operands read in one byte, output in bf16.

    forward  reads x [T,k] and W in 1 byte, writes y [T,n] in bf16
    backward dgrad reads dy [T,n] and W in 1 byte and writes dx [T,k] in bf16; wgrad reads x and dy in 1 byte
    """
    new = copy.copy(op)
    half = DTYPE_BYTES[WIDE]
    act = (2.0 * out_b + in_b) / half + in_b if bwd else in_b / half + out_b
    new.bytes = dict(op.bytes, activations=act)
    if "weights" in op.bytes:
        new.bytes["weights"] = op.bytes["weights"] / half
    new.dtype = dtype
    new.attrs = dict(op.attrs, precision=dtype)
    return new


def _split(f: Op, bwd: bool) -> bool:
    """Whether a cast's tensor is split over TP: a column-parallel linear's input and a row-parallel one's output
    gradient are whole on every rank (split only with sequence parallelism); the other two are split."""
    return LOWERED[f.attrs["role"]](bwd)


def _cast(f: Op, dtype: str, nbytes, bwd: bool, any_layout: bool) -> Op:
    """Quantizing the forward's input (or the backward's output gradient) of linear ``f``."""
    elems = nbytes / DTYPE_BYTES[WIDE]
    write = cast_write_bytes(dtype, any_layout)
    what = "output gradient" if bwd else "input"
    split = _split(f, bwd)
    return Op(f"fp8_cast.{f.name}{'.backward' if bwd else ''}", "elementwise", flops=2.0 * elems,
              bytes={"activations": (CAST_READ_BYTES[dtype] + write) * elems}, dtype=WIDE, count=f.count,
              module=f.module, shapes=f"{dtype} quantize of the {what} of {f.name}", bytes_written=write * elems,
              attrs={"tp_split": split, "role": "cast",
                     **{k: f.attrs[k] for k in ("per_layer", "expert") if k in f.attrs}})
