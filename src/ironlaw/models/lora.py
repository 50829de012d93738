"""LoRA fine-tuning (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models"): a training graph
whose base weights are frozen and whose target linears each gain a rank-R adapter ``y += B·(A·x)``.

What changes against full training (``adapt``):
- each target linear [T,k]x[k,n] gains two GEMMs, A [k,R] and B [R,n]: 2·T·(k+n)·R FLOPs forward, twice that
  backward (the input and weight gradients of both), in the graph's wide dtype (NeMo's ``LoRA`` adapters are
  plain linears beside Transformer Engine's FP8 GEMM);
- every frozen linear's backward computes its input gradient only (dgrad: its forward's FLOPs, no wgrad), a
  frozen norm's backward no gain gradient, and the embedding, whose input needs no gradient, no backward; a
  frozen linear saves no input for the backward (``saved_delta``);
- only the adapters' parameters (``meta["trainable_params"]``) have gradients, the data-parallel reduction and
  the AdamW state and step; the base weights are held once (one FP8 copy where the recipe lowers the linears:
  NeMo's ``fp8_params``; a device whose FP8 GEMMs take one layout transposes W for each dgrad), never
  re-quantized.
The MLPerf Training reference (``llama2_70b_lora``, NVIDIA's NeMo implementation ``train.py``: ``LoRA(dim=16,
alpha=32, target_modules=["linear_proj", "linear_qkv"])``) adapts attention's QKV and output projections:
``DEFAULT_TARGETS``. Alpha scales the adapter's output and costs nothing.
"""
from __future__ import annotations

import copy

import numpy as np

from ..core import passes
from ..core.errors import IronlawError
from ..core.graph import Graph, Op, dtype_bytes
from .workloads.common import backward, elementwise, linear, optimizer_step
from .workloads.transformer import DROPOUT_FLOPS

# NeMo's target module names → ironlaw's transformer builder op names
TARGETS = {"linear_qkv": "attn_pre_proj", "linear_proj": "attn_post_proj", "linear_fc1": "mlp_up_proj",
           "linear_fc2": "mlp_down_proj"}
DEFAULT_TARGETS = ("linear_qkv", "linear_proj")          # MLPerf's llama2_70b_lora reference
# NeMo's LoRA(dropout=0.1, dropout_position="pre") in the reference: on x, before A; the configs' thunder dropout
# (NEMO_LORA_USE_THUNDER_DROPOUT=1) draws the keep mask again in the backward from the RNG state, storing none
DROPOUT = 0.1


def targets(names) -> tuple[str, ...]:
    """``--lora-targets``: NeMo's names of the linears to adapt (comma-separated, or a sequence), each one of
    ``TARGETS``; None gives ``DEFAULT_TARGETS``."""
    if names is None:
        return DEFAULT_TARGETS
    given = tuple(n.strip() for n in (names.split(",") if isinstance(names, str) else names))
    bad = [n for n in given if n not in TARGETS]
    if bad or not given:
        raise IronlawError(f"--lora-targets takes {', '.join(TARGETS)} (comma-separated), got {names!r}")
    return tuple(dict.fromkeys(given))


def check_rank(rank) -> int:
    """``--lora-rank``: a whole number ≥ 1 (``--lora-targets`` alone asks for it)."""
    if rank is None:
        raise IronlawError("--lora-targets names the linears LoRA adapts; add --lora-rank R (MLPerf's: 16)")
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 1:
        raise IronlawError(f"--lora-rank takes the adapters' rank, a whole number >= 1, got {rank!r}")
    return int(rank)


def adapt(g: Graph, rank: int, targets: tuple[str, ...] = DEFAULT_TARGETS) -> Graph:
    """``g`` (one micro-batch's training graph of an ironlaw transformer, lowered or not) fine-tuned with LoRA
    adapters of ``rank`` on ``targets`` (the module docstring)."""
    rank = check_rank(rank)
    if g.phase != "train":
        raise IronlawError(f"--lora-rank fine-tunes a training step (--phase train), got '{g.phase}'")
    if g.meta.get("experts"):
        raise IronlawError(f"--lora-rank: LoRA on a mixture-of-experts model ({g.name}) is not modelled")
    names = {TARGETS[t] for t in targets}
    fwd = {op.name: op for op in g.ops if op.name in names and op.kind == "matmul"}
    if not fwd:
        raise IronlawError(f"--lora-rank needs a transformer built by ironlaw ({g.name} has none of the target "
                           f"linears {', '.join(targets)})")
    tokens = g.meta["tokens"]
    ops: list[Op] = []
    trainable = 0.0
    for op in g.ops:
        if passes.is_optimizer(op.name) or op.name == passes.backward_of("embedding"):
            continue                                     # frozen embedding: no backward; the step is the adapters'
        if passes.is_backward(op.name):
            name = passes.forward_of(op.name)
            if name in fwd:
                drop, a, b = adapters(fwd[name], tokens, rank, g.dtype)
                ops += backward([a, b]) + [dropout_backward(drop)]
            ops.append(frozen_backward(op, _forward(g, name), g.meta.get("fp8_any_layout", True)))
            continue
        ops.append(op)
        if op.name in fwd:
            ops += list(adapters(op, tokens, rank, g.dtype))
            n, k = op.attrs["nk"]
            trainable += rank * (k + n) * op.count
    ops.append(optimizer_step(trainable, g.dtype))
    by = dtype_bytes(g.dtype)
    fp = dict(g.footprint, gradients=by * trainable, optimizer=12.0 * trainable)
    if "activations" in fp:
        fp["activations"] = fp["activations"] + saved_delta(g, fwd, tokens, rank)
    work = sum((op.flops * op.count for op in ops if not passes.is_optimizer(op.name)), 0.0)
    meta = dict(g.meta, lora_rank=rank, lora_targets=tuple(targets), trainable_params=trainable,
                model_flops=work)
    return Graph(g.name + f" · LoRA r{rank}", g.phase, g.dtype, ops, footprint=fp, meta=meta,
                 uncounted_ops=dict(g.uncounted_ops))


def note(meta: dict) -> str:
    """The training step's line about its LoRA adapters."""
    return (f"LoRA rank {meta['lora_rank']} on {', '.join(meta['lora_targets'])}: "
            f"{meta['trainable_params'] / 1e6:,.1f} M trainable parameters of {meta['params'] / 1e9:,.1f} B; the base "
            f"is frozen (its linears' backward is dgrad only), gradients, their reduction and the optimizer are the "
            f"adapters'")


def saved_delta(g: Graph, fwd: dict, tokens, rank: int):
    """Bytes the saved activations change by (A·x of each adapter at ``tokens``, per micro-batch where the graph holds
    several): each adapter keeps A·x [T,R] for B's weight gradient; a frozen linear
    keeps no input (autograd saves a linear's input for its weight gradient only; Transformer Engine's linears
    skip it for a weight that does not require one), the copy ``precision.lower`` left (FP8) or its wide input."""
    t = np.asarray(tokens, dtype=float)                  # one graph over many micro-batches: one size each
    keep = sum((float(t) if t.ndim == 0 else t) * rank * dtype_bytes(g.dtype) * op.count for op in fwd.values())
    frozen = [op for op in g.ops if op.kind == "matmul" and "nk" in op.attrs and op.name not in fwd
              and not passes.is_backward(op.name) and op.attrs.get("role") in ("column", "row", "head")]
    return keep - sum((op.bytes["activations"] - op.bytes_written) * op.count for op in frozen)


def adapters(op: Op, tokens, rank: int, dtype: str) -> tuple[Op, Op, Op]:
    """The adapter on linear ``op`` ([T,k]x[k,n]): the dropout on its input (``DROPOUT``: a random draw, a compare
    and a scale per element, reading x and writing its masked copy), then the two GEMMs A [k,R] and B [R,n],
    split over TP as the activation is (role ``activation``); in the repeated layers as ``op``."""
    n, k = op.attrs["nk"]
    drop = elementwise(f"{op.name}_lora_dropout", tokens * k, dtype, DROPOUT_FLOPS, count=op.count, module=op.module,
                       role="dropout")
    out = [drop]
    for part, (kk, nn) in (("lora_a", (k, rank)), ("lora_b", (rank, n))):
        out.append(linear(f"{op.name}_{part}", tokens, kk, nn, dtype, op.count, module=op.module, role="activation"))
    for o in out:
        o.attrs.update({x: op.attrs[x] for x in ("per_layer",) if x in op.attrs})
    return out[0], out[1], out[2]


def dropout_backward(drop: Op) -> Op:
    """The adapter dropout's backward: the mask drawn again (``DROPOUT``), dy·mask/(1−p), reading dy and writing
    dx: the forward's FLOPs and traffic."""
    new = copy.copy(drop)
    new.name, new.bytes = passes.backward_of(drop.name), dict(drop.bytes)
    new.attrs = dict(drop.attrs)
    return new


def _forward(g: Graph, name: str) -> Op | None:
    return next((op for op in g.ops if op.name == name), None)


def frozen_backward(op: Op, f: Op | None, any_layout: bool = True) -> Op:
    """The backward ``op`` of a frozen forward ``f``: no weight gradient. A linear's keeps its dgrad only (its
    forward's FLOPs; reading dY and W, writing dX; dY in FP8 where the recipe lowered it; on a device whose FP8
    GEMMs take one layout, ``any_layout`` False, W's transposed copy made there: the frozen weights are held as
    one FP8 copy, ``parallel.memory``); any other op keeps its work without the gradient bytes of its weights."""
    new = copy.copy(op)
    new.bytes = {k: v for k, v in op.bytes.items() if k != "gradients"}
    new.attrs = dict(op.attrs)
    if op.kind != "matmul" or f is None or "nk" not in f.attrs:
        return new
    low = "precision" in f.attrs
    out_b = f.bytes_written                                           # Y [T,n], wide
    in_b = (f.bytes["activations"] - out_b) * (dtype_bytes("bf16") if low else 1.0)   # X [T,k], wide
    new.flops = f.flops
    new.bytes["activations"] = (out_b / dtype_bytes("bf16") if low else out_b) + in_b
    if low and not any_layout and "weights" in new.bytes:      # W's transposed FP8 copy, made for this dgrad
        new.bytes["weights"] = 3.0 * new.bytes["weights"]      # (read W, write and read Wᵀ), not held
    new.bytes_written = in_b
    return new
