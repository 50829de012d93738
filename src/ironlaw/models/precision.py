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
  once per step and kept across micro-batches (``weight_copy_bytes`` of memory per parameter; the per-step
  work in ``param_step_bytes``);
- current scaling's amax of a linear whose input a norm produces (``NORM_FUSED``: Megatron's
  TELayerNormColumnParallelLinear) comes out of the norm kernel (Transformer Engine v2.9,
  pytorch/csrc/extensions/normalization.cpp ``FUSED_NORM_AMAX_FP8``): that cast reads the tensor once, 2 bytes.
  MXFP8's block scales do not fuse there (the same file runs the norm, then the MXFP8 cast, unless
  ``NVTE_NORM_FWD_USE_CUDNN``), so its casts stay at one read everywhere;
- before every GEMM on block-scaled operands (MXFP8, NVFP4) Transformer Engine v2.9 copies each operand's scales
  into the interleaved layout cuBLASLt reads, one kernel per operand (pytorch/csrc/extensions/gemm.cpp
  ``general_gemm`` → util.cpp ``swizzle_scaling_factors``), the cached weight's included: the forward 2 (input,
  weight), the backward 4 (dgrad: output gradient, weight; wgrad: input, output gradient) — ``scale_swizzles``, a
  memory-bound op reading and writing one byte per ``SCALE_BLOCK`` elements, one kernel launch each;
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
FUSED_READ_BYTES = 2.0                                       # current scaling after a norm that found the amax
COPY_BYTES = {"fp8": 1.0, "mxfp8": 1.0 + 1.0 / 32.0}       # one FP8 copy per element, with its block scales
TRAINING_DTYPES = tuple(CAST_READ_BYTES) + (nvfp4.DTYPE,)     # fp4: NVIDIA's NVFP4 recipe (``nvfp4``)
SCALE_BLOCK = {"mxfp8": 32, nvfp4.DTYPE: 16}               # block-scaled: elements per one-byte scale
# the linears Megatron-Core builds as TELayerNormColumnParallelLinear (the norm fused in front of the GEMM):
# attention's QKV (MLA: the up-projections behind q_layernorm and kv_layernorm; its down-projections are
# TELinear behind a separate TENorm) and a dense MLP's fc1; not the experts' (their norm precedes the router)
NORM_FUSED = ("attn_pre_proj", "attn_pre_proj.q_up", "attn_pre_proj.kv_up", "mlp_up_proj", "mlp_up_proj.dense")


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
    fused = norm_fused(fwd)
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
            amax_fused = not bwd and f.name in fused
            ops += [_cast(f, dtype, out_b if bwd else in_b, bwd, any_layout, amax_fused),
                    _gemm(op, dtype, in_b, out_b, bwd)]
        if dtype in SCALE_BLOCK:
            ops += scale_swizzles(f, dtype, in_b, out_b, bwd)
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


def norm_fused(fwd: dict) -> set:
    """The names among the lowered forward linears ``fwd`` whose input comes from a norm fused in front of the
    GEMM (``NORM_FUSED``); MLA's ``attn_pre_proj`` is its down-projection, behind a norm of its own."""
    mla = "attn_pre_proj.q_up" in fwd
    return {n for n, f in fwd.items() if n in NORM_FUSED and not f.attrs.get("expert")
            and not (mla and n == "attn_pre_proj")}


def cast_read_bytes(dtype: str, amax_fused: bool = False) -> float:
    """Bytes a quantizing kernel (with its amax pass) reads per element; ``amax_fused``: a norm in front found
    current scaling's amax (``NORM_FUSED``)."""
    return FUSED_READ_BYTES if amax_fused and dtype == "fp8" else CAST_READ_BYTES[dtype]


def _cast(f: Op, dtype: str, nbytes, bwd: bool, any_layout: bool, amax_fused: bool = False) -> Op:
    """Quantizing the forward's input (or the backward's output gradient) of linear ``f``."""
    elems = nbytes / DTYPE_BYTES[WIDE]
    write = cast_write_bytes(dtype, any_layout)
    what = "output gradient" if bwd else "input"
    split = _split(f, bwd)
    return Op(f"fp8_cast.{f.name}{'.backward' if bwd else ''}", "elementwise", flops=2.0 * elems,
              bytes={"activations": (cast_read_bytes(dtype, amax_fused) + write) * elems}, dtype=WIDE, count=f.count,
              module=f.module, shapes=f"{dtype} quantize of the {what} of {f.name}", bytes_written=write * elems,
              attrs={"tp_split": split, "role": "cast",
                     **{k: f.attrs[k] for k in ("per_layer", "expert") if k in f.attrs}})


def scale_swizzles(f: Op, dtype: str, in_b, out_b, bwd: bool) -> list[Op]:
    """The scale swizzles before linear ``f``'s block-scaled GEMMs in one pass, one op (kernel) per operand:
    forward the input's and the weight's scales, backward the output gradient's and the weight's for the dgrad
    and the input's and the output gradient's for the wgrad; each reads and writes one byte per
    ``SCALE_BLOCK`` elements, split over TP as its tensor is (the weight always)."""
    half = DTYPE_BYTES[WIDE]
    tensors = {"input": (in_b / half, _split(f, False)), "grad": (out_b / half, _split(f, True)),
               "weight": (f.bytes.get("weights", 0.0) / half, True)}
    operands = ("dgrad.grad", "dgrad.weight", "wgrad.input", "wgrad.grad") if bwd else ("input", "weight")
    ops = []
    for o in operands:
        elems, split = tensors[o.split(".")[-1]]
        scales = elems / SCALE_BLOCK[dtype]
        ops.append(Op(f"scale_swizzle.{f.name}.{o}{'.backward' if bwd else ''}", "elementwise", flops=0.0,
                      bytes={"activations": 2.0 * scales}, dtype=WIDE, count=f.count, module=f.module,
                      shapes=f"{dtype} scales of {f.name}'s {o} into cuBLASLt's layout", bytes_written=scales,
                      attrs={"tp_split": split, "role": "cast",
                             **{k: f.attrs[k] for k in ("per_layer", "expert") if k in f.attrs}}))
    return ops


# ---------------------------------------------------------------------- the weights' copies, once per step
# Megatron-Bridge v0.2.0 (the NeMo 25.11 performance recipes) keeps FP8 and MXFP8 parameters
# (``bf16_with_fp8_current_scaling_mixed``, ``bf16_with_mxfp8_mixed``: fp8_param_gather, and for MXFP8
# reuse_grad_buf_for_mxfp8_param_ag); NVFP4 keeps bf16 parameters and Transformer Engine caches their quantized
# copies from the step's first micro-batch. After the optimizer step (Megatron-Core v0.15
# distributed_data_parallel.py ``start_param_sync``, optimizer.py ``_copy_main_params_to_param_buffer``):
# - current scaling: each rank casts its shard of the fp32 master weights (an amax pass and the cast: 4 + 4 read,
#   one FP8 byte written) and the FP8 bytes are all-gathered; where the device's FP8 GEMMs take the TN layout only
#   (Hopper) each whole weight's transpose follows (1 read, 1 written);
# - MXFP8: the shards are all-gathered in bf16 into the gradient buffer, then each whole weight is cast to its two
#   block-scaled copies (2 read, 2·(1 + 1/32) written) and the buffer zeroed (2 written);
# - NVFP4: each whole weight's amax pass and cast (``nvfp4.READ_BYTES``), its two 16×16-scaled copies written.
PARAM_GATHER_BYTES = {"fp8": 1.0, "mxfp8": 2.0}        # bytes per parameter of the all-gather (MXFP8: bf16)


def param_gather_bytes(meta: dict, default: float) -> float:
    """Bytes per parameter the distributed optimizer's all-gather moves for a graph of ``meta`` (``default``:
    its own dtype's)."""
    return PARAM_GATHER_BYTES.get(meta.get("precision"), default)


def param_step_bytes(meta: dict, params, shard):
    """HBM bytes per step of the weights' low-precision copies on a device holding ``params`` parameters of
    which ``shard`` are its optimizer shard (0 without a low-precision recipe)."""
    dtype = meta.get("precision")
    if dtype == "mxfp8":
        return params * (2.0 + cast_write_bytes(dtype) + 2.0)
    if dtype == "fp8":
        return shard * (4.0 + 4.0 + 1.0) + (0.0 if meta.get("fp8_any_layout") else params * 2.0)
    if dtype == nvfp4.DTYPE:
        return params * (nvfp4.READ_BYTES + nvfp4.WEIGHT_COPY_BYTES)
    return params * 0.0


# ---------------------------------------------------------------------- inference: the checkpoint's weight format
# weight-only MoE formats -> the dtype their weights are stored in: gpt-oss's MXFP4 experts computed in bf16 (the
# kernel tables' moe_dtype ``w4a16_mxfp4``, measure/calibrate/moefit.py)
WEIGHT_ONLY_MOE = {"w4a16_mxfp4": ("mxfp4", "bf16")}     # format -> (stored dtype, math dtype)


def moe_recipe(g: Graph) -> str | None:
    """The weight format of ``g``'s routed experts where it is more than the dtype says: ``fp8_block`` for an fp8
    graph of a block-scaled FP8 checkpoint (``meta["weight_format"]``, from its quantization_config: DeepSeek-V3/R1's
    128 × 128 weight blocks, activations quantized per 1 × 128 token group), whose MoE layer runs on the kernel
    classes fitted on block-scaled rows (``moe_grouped_gemm.fp8_block``); ``w4a16_mxfp4`` for routed experts stored
    in MXFP4 and computed in bf16 (gpt-oss's checkpoint: ``meta["expert_weight_dtype"]``, ``"expert_math_dtype"``),
    on the classes fitted on weight-only MXFP4 rows (``WEIGHT_ONLY_MOE``); None for per-tensor or other formats."""
    fmt = g.meta.get("weight_format")
    if fmt == "fp8_block" and g.dtype == "fp8":
        return fmt
    stored = (g.meta.get("expert_weight_dtype"), g.meta.get("expert_math_dtype"))
    return next((f for f, dts in WEIGHT_ONLY_MOE.items() if dts == stored), None)
