"""The pipeline: the ops each stage runs (its share of the layers, ``stages``; the embedding on the first, the
loss on the last) with the forward ops it recomputes in its backward, the bubble, and the stage-to-stage sends
(1/tp of the activation per rank, all-gathered over the TP group: Megatron's scatter/gather), blocking or
overlapped with the next model chunk.
"""
from __future__ import annotations

import copy

import numpy as np

from ...core import passes
from ...core.graph import Graph, Op, dtype_bytes
from ..precision import in_layers
from .layout import group_topology
from .plan import Plan
from .stages import stage_layers


def stage_ops(g: Graph, plan: Plan) -> tuple[list[list[Op]], Op | None]:
    """Ops of the first and last pipeline stage (and of a middle one when the embedding and the loss take a
    layer's place: ``stage_layers``; one list when pp == 1), and the optimizer op."""
    L = g.meta.get("layers", -1)
    opt = next((op for op in g.ops if passes.is_optimizer(op.name)), None)
    ops = [op for op in g.ops if not passes.is_optimizer(op.name)]

    def staged(stage: list[Op], n: int) -> list[Op]:        # a stage of n layers, v model chunks of n/v each
        return with_recompute(stage, L, n, plan.recompute, plan.recomputed(n / plan.interleave).share)
    if plan.pp == 1:
        return [staged(ops, L)], opt
    middle, n_first, n_last = stage_layers(L, plan.pp, plan.interleave)
    first = [op for op in ops if in_layers(op, L) or first_stage(op)]
    last = [op for op in ops if in_layers(op, L) or not first_stage(op)]
    stages = [staged(first, n_first), staged(last, n_last)]
    if middle != n_first:
        stages.insert(1, staged([op for op in ops if in_layers(op, L)], middle))
    return stages, opt


def first_stage(op: Op) -> bool:
    """Whether the op runs on the first pipeline stage only (the embedding's: the builder's
    ``attrs["stage"]``)."""
    return op.attrs.get("stage") == "first"


def with_recompute(ops: list[Op], L: int, layers: int, recompute: str, share: float = 1.0) -> list[Op]:
    """The stage's ops with its ``layers`` of the ``L`` layers (an op of some layers only, in proportion),
    the recomputed forward ops at the start of the backward: with ``full``, the forward of ``share`` of the
    stage's layers (``recompute``: Megatron's block method re-runs N of a chunk's layers)."""
    out, rc = [], []
    for op in ops:
        layer = L > 0 and in_layers(op, L)
        if layer and layers != L:
            op = copy.copy(op)
            op.count = op.count * layers / L
        out.append(op)
        fwd = not passes.is_backward(op.name)
        again = (recompute == "full" and share > 0) or (recompute == "selective" and op.kind == "attention")
        if layer and fwd and again:
            r = copy.copy(op)
            r.name = passes.recompute_of(op.name)
            r.count = op.count * (share if recompute == "full" else 1.0)
            rc.append(r)
    i = next((j for j, op in enumerate(out) if passes.is_backward(op.name)), len(out))
    return out[:i] + rc + out[i:]


def plan_pipeline_p2p_s(g: Graph, hw, plan: Plan, grp: dict, t_mb: float) -> float:
    """``pipeline_p2p_s`` of one plan: the boundary activation of one micro-batch (tokens/cp × hidden)."""
    if plan.pp == 1:
        return 0.0
    tokens_mb = float(np.max(g.meta.get("tokens", g.meta.get("batch", 1)))) / plan.cp
    one = p2p_transfer_s(hw, tokens_mb * g.meta["hidden"] * dtype_bytes(g.dtype), plan.tp, plan.sequence_parallel,
                         grp["pp"], grp["tp"])
    return float(pipeline_p2p_s(one, plan.pp, plan.interleave, plan.microbatches, t_mb, plan.overlap_p2p))


def p2p_transfer_s(hw, full, tp: int, sp, pp_grp: tuple, tp_grp: tuple):
    """One stage-to-stage transfer of a boundary activation of ``full`` bytes: each TP rank sends 1/tp of it
    (Megatron's scatter/gather, Narayanan et al. 2021 §4.1; with sequence parallelism it is already split);
    without sequence parallelism the receiving stage all-gathers it back over the TP group (NVLink inside a
    node)."""
    from ...machine.network.collectives import collective_time
    a, b = collective_time("sendrecv", full / tp, group_topology(hw, pp_grp))
    one = a + b
    if tp > 1 and not sp:
        ga, gb = collective_time("allgather", full, group_topology(hw, tp_grp))
        one = one + (ga + gb)
    return one


def pipeline_p2p_s(one, pp, v, m, t_mb, overlap):
    """Stage-to-stage send/recv of one step of ``m`` micro-batches, ``one`` transfer each way per micro-batch and
    virtual stage (``v``: the interleave); blocking unless ``overlap``: then each send runs under the next model
    chunk's compute, the warm-up and the cool-down (pp − 1 transfers each) wait for theirs, and a send longer
    than a chunk (``t_mb``/v) exposes the difference. Scalars or arrays of layouts; 0 without a pipeline."""
    blocking = 2.0 * v * m * one
    hidden = 2.0 * (pp - 1) * one + 2.0 * v * m * np.maximum(one - t_mb / v, 0.0)
    return np.where(pp > 1, np.where(overlap, hidden, blocking), 0.0)


def bubble_s(pp, v, t_mb):
    """The pipeline bubble: (pp − 1)/v micro-batch times (v: the interleave)."""
    return (pp - 1) / v * t_mb
