"""Activation recomputation (checkpointing): ``recompute=full|selective|none``.

Trades activation memory for extra forward FLOPs, on training graphs (forward ops, then
``*.backward`` ops, then the optimizer step — the convention of ``workloads.common``):
- full: every repeated block (a transformer layer, a ResNet stage — consecutive ops sharing a
  ``count`` > 1) keeps only its input; the backward re-runs the block's forward first. Extra
  work = one more forward pass of those blocks (training FLOPs go from 6·N·tokens toward 8·N·tokens).
  Saved activations become the block inputs plus what the non-repeated ops saved. A captured graph (its ops
  counted once each) checkpoints each numbered child of a container holding two or more (``model.layers.<i>``,
  an ``nn.Sequential``'s ``<i>``), as ``torch.utils.checkpoint`` wraps each layer (``captured_blocks``).
- selective (Megatron-LM's): only attention (and softmax) ops are recomputed; their saved outputs
  leave the footprint.
- none: nothing changes (the builders save everything).
Recomputed ops are inserted just before the backward pass, named ``<op>.recompute``.
"""
from __future__ import annotations

import numpy as np

from ...core.errors import IronlawError
from ...core import passes
from ...core.graph import Graph, Op
from .base import Choice, copy_op, is_backward, transform

SELECTIVE_KINDS = ("attention", "softmax")


@transform("recompute", main="policy", aliases=("checkpoint", "checkpointing"),
           params={"policy": Choice(("full", "selective", "none"))},
           help="recompute=full|selective|none: activation memory vs extra forward FLOPs (training)")
def recompute(g: Graph, hw, policy: str) -> Graph:
    if g.phase != "train":
        raise IronlawError(f"recompute applies to training graphs (--phase train); '{g.name}' is phase '{g.phase}'")
    if policy == "none":
        return g
    first_bwd = next((i for i, op in enumerate(g.ops) if is_backward(op)), None)
    if first_bwd is None:
        raise IronlawError(f"recompute: cannot tell forward from backward ops in '{g.name}' "
                           f"(no '*.backward' op)")
    fwd = [op for op in g.ops[:first_bwd] if op.kind not in ("collective", "copy")]
    blocks = captured_blocks(fwd) if g.meta.get("captured") else None
    if policy == "full" and blocks is not None:
        chosen = [op for op, b in zip(fwd, blocks) if b]
    elif policy == "full":
        chosen = [op for op in fwd if op.count > 1]
    else:
        chosen = [op for op in fwd if op.kind in SELECTIVE_KINDS]
    if not chosen:
        what = ("numbered blocks (modules '<container>.<i>', e.g. an nn.ModuleList of layers)" if blocks is not None
                else "repeated blocks") if policy == "full" else "attention ops"
        raise IronlawError(f"recompute={policy}: '{g.name}' has no {what} to recompute")
    again = [copy_op(op, name=passes.recompute_of(op.name)) for op in chosen]
    ops = list(g.ops[:first_bwd]) + again + list(g.ops[first_bwd:])
    fp = dict(g.footprint)
    if "activations" in fp:
        if policy == "full" and blocks is not None:
            fp["activations"] = np.minimum(fp["activations"], _captured_kept(fwd, blocks))
        elif policy == "full":
            kept = _block_inputs(fwd) + sum((op.bytes_written * op.count for op in fwd if op.count == 1), 0.0)
            fp["activations"] = np.minimum(fp["activations"], kept)
        else:
            dropped = sum((op.bytes_written * op.count for op in chosen if op.kind != "attention"), 0.0)
            # attention saves only O (+ log-sum-exp) in FlashAttention style: the score matrix, if it was
            # materialized, is what the softmax wrote
            fp["activations"] = np.maximum(fp["activations"] - dropped, 0.0)
    meta = dict(g.meta, recompute=policy)
    return Graph(g.name, g.phase, g.dtype, ops, footprint=fp, meta=meta, uncounted_ops=dict(g.uncounted_ops))


def _block_inputs(fwd: list[Op]):
    """Bytes of the input of each repeated block, × its count (what full checkpointing keeps)."""
    total, prev_count = 0.0, None
    for op in fwd:
        if op.count > 1 and op.count != prev_count:               # first op of a block
            inp = np.maximum(op.bytes.get("activations", 0.0) - op.bytes_written, 0.0)
            total = total + inp * op.count
        prev_count = op.count
    return total


def _block_of(module: str) -> str | None:
    """The numbered child a captured op's module lies in: ``transformer.h.3.attn`` -> ``transformer.h.3``."""
    parts = module.split(".") if module else []
    i = next((j for j, p in enumerate(parts) if p.isdigit()), None)
    return ".".join(parts[:i + 1]) if i is not None else None


def captured_blocks(fwd: list[Op]) -> list[str | None]:
    """Per forward op of a captured graph, the block full recomputation checkpoints (None outside any): a
    numbered child of a container holding at least two (``model.layers.<i>``, an ``nn.Sequential``'s ``<i>``),
    as ``torch.utils.checkpoint`` wraps each layer of a Hugging Face or Megatron model."""
    found = [_block_of(op.module) for op in fwd]
    siblings: dict[str, set] = {}
    for b in filter(None, found):
        siblings.setdefault(b.rsplit(".", 1)[0] if "." in b else "", set()).add(b)
    return [b if b and len(siblings[b.rsplit(".", 1)[0] if "." in b else ""]) > 1 else None for b in found]


def _captured_kept(fwd: list[Op], blocks: list[str | None]):
    """What full checkpointing of a captured graph keeps: each block's input (the activations its first op
    read) and what the ops outside the blocks saved."""
    kept, prev = 0.0, None
    for op, b in zip(fwd, blocks):
        if b is None:
            kept = kept + op.bytes_written * op.count
        elif b != prev:
            kept = kept + np.maximum(op.bytes.get("activations", 0.0) - op.bytes_written, 0.0) * op.count
        prev = b
    return kept
