"""The work of a training step: model FLOPs (``MODEL_FLOPS``), hardware FLOPs (recomputation included), and
Megatron-LM's own count.
"""
from __future__ import annotations

import numpy as np

from ...core import passes
from ...core.graph import Graph
from ..precision import in_layers
from .plan import Plan
from .results import StepFlops


def megatron_flops(batch: float, seq: float, layers: int, hidden: int, vocab: int) -> float:
    """FLOPs of one GPT training step with full activation recomputation as Megatron-LM counts them when it
    reports teraFLOP/s per GPU (Narayanan et al. 2021, eq. 3): 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) — the
    dense GEMMs and attention of forward, backward and the recomputed forward, and the LM head."""
    return 96.0 * batch * seq * layers * hidden ** 2 * (1.0 + seq / (6.0 * hidden) + vocab / (16.0 * layers * hidden))


def recompute_flops(g: Graph, recompute: str, share: float = 1.0):
    """FLOPs the backward re-runs: the forward of ``share`` of the layers (full: every layer's by default; a
    partial recomputation's share, ``Plan.recomputed``) or the attention core (selective)."""
    L = g.meta.get("layers")
    return (share if recompute == "full" else 1.0) * sum((op.flops * op.count for op in g.ops
                if in_layers(op, L) and not passes.is_backward(op.name) and not passes.is_optimizer(op.name)
                and (recompute == "full" or (recompute == "selective" and op.kind == "attention"))), 0.0) \
        if recompute != "none" else 0.0


def step_flops(g: Graph, plan: Plan) -> StepFlops:
    """Model FLOPs (``MODEL_FLOPS``), hardware FLOPs (with recomputation) and tokens of one step."""
    m = plan.microbatches
    tokens_mb = float(np.max(g.meta.get("tokens", g.meta.get("batch", 1))))
    L = g.meta.get("layers") or 1
    share = plan.recomputed(L / (plan.pp * plan.interleave)).share
    hw_flops = float(np.max(g.flops)) + float(np.max(recompute_flops(g, plan.recompute, share)))
    return StepFlops(model_per_step=float(np.max(g.meta["model_flops"])) * m * plan.dp,
                     hardware_per_step=hw_flops * m * plan.dp, tokens_per_step=tokens_mb * m * plan.dp)
