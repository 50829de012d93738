"""The data-parallel gradient reduction on the critical path: one collective per layer on the network stream,
overlapped with the backward of the layers below (``ironlaw.law.critical_path``), and ZeRO's parameter gather.
"""
from __future__ import annotations

import numpy as np

from ...core import passes
from ...core.graph import Graph, Op, dtype_bytes
from ..precision import in_layers
from .layout import group_shapes, group_topology
from .memory import grad_bytes
from .plan import Plan
from .shards import ParamShards, expert_param, experts_apart, shard_groups


def _grads(sg: Graph, idx, expert: bool) -> float:
    """Gradient bytes the backward ops ``idx`` write, of the routed experts' parameters or of the dense ones."""
    return sum(float(np.max(sg.ops[i].bytes.get("gradients", 0.0))) * sg.ops[i].count for i in idx
               if expert_param(sg.ops[i]) == expert)


def grad_sync_exposed(sg: Graph, hw, kind: str, grp: tuple, composition: str, grad_scale: float = 1.0,
                      expert_grp: tuple | None = None) -> tuple[float, float]:
    """(total, exposed) seconds of the data-parallel gradient reduction of the last micro-batch.

    Scheduled by ``ironlaw.law.critical_path``: one collective per layer is issued on the network stream as soon
    as that layer's backward finishes (DDP/Megatron gradient buckets) and overlaps the backward of the layers
    below; the gradients outside the layers (embeddings, head) follow the last backward op; the optimizer and
    the end of the step wait for all of them. TP collectives stay blocking (they are not marked grad_sync).
    ``expert_grp``: the routed experts' expert-data-parallel group (``shards``): their gradients are reduced
    over it in a collective of their own after the dense one (Megatron-Core's expert buffers), none where it
    has one rank; None: with the dense ones over ``grp``.
    """
    from ...law import critical_path, law
    L = max(op.count for op in sg.ops)
    layer_bwd = [i for i, op in enumerate(sg.ops) if passes.is_backward(op.name) and in_layers(op, L)]
    if not layer_bwd:
        return 0.0, 0.0
    other_bwd = [i for i, op in enumerate(sg.ops) if passes.is_backward(op.name) and i not in layer_bwd]
    parts = [("", grp, lambda idx: _grads(sg, idx, False) + (_grads(sg, idx, True) if expert_grp is None else 0.0))]
    if expert_grp is not None and expert_grp[0] > 1:
        parts.append((".experts", expert_grp, lambda idx: _grads(sg, idx, True)))
    ops, at = list(sg.ops), max(layer_bwd) + 1
    for tag, where, of in parts:
        layer, other = grad_scale * of(layer_bwd) / L, grad_scale * of(other_bwd)
        if layer > 0 or not tag:
            ops.insert(at, Op(f"dp.grad.{kind}{tag}.layer", "collective", network_bytes=layer, dtype=sg.dtype, count=L,
                              module="dp", collective=kind, group=where, shapes=group_shapes(where),
                              attrs={"grad_sync": True}))
            at += 1
        if other > 0:
            ops.append(Op(f"dp.grad.{kind}{tag}.rest", "collective", network_bytes=other, dtype=sg.dtype,
                          module="dp", collective=kind, group=where, shapes=group_shapes(where),
                          attrs={"grad_sync": True}))
    # phase "infer": only the ops marked grad_sync may overlap; TP collectives in the backward stay blocking
    g = Graph(sg.name, "infer", sg.dtype, ops, footprint=dict(sg.footprint), meta=dict(sg.meta))
    est = law.predict(g, hw, composition)
    comm = sum(r["time_s"] for r in est.rows() if r["name"].startswith("dp.grad."))
    blocking = critical_path.from_estimate(est, overlap_comm=False).time_s
    overlapped = critical_path.from_estimate(est, overlap_comm=True).time_s
    return comm, max(overlapped - (blocking - comm), 0.0)


def dp_grad_sync(sg: Graph, hw, plan: Plan, grp: dict, held: ParamShards,
                 composition: str) -> tuple[float, float, float]:
    """(total, exposed, after-step gather) seconds of the data-parallel gradient reduction of the last
    micro-batch (ZeRO < 3; FSDP reduces every micro-batch's gradients in ``fsdp_exposed``): the dense gradients
    over the data-parallel group, the routed experts' over the expert-data-parallel group (``held``:
    ``shards.param_shards``; ``grp``: ``groups``). ZeRO-1's parameter all-gather rides in the all-reduce's bytes,
    overlapped, unless the plan leaves it after the step (``param_gather_exposed``: then a reduce-scatter and the
    gather, as ZeRO-2's, at the precision's bytes per parameter, ``precision.param_gather_bytes``), each
    parameter's shards gathered over its own group."""
    from ...machine.network.collectives import collective_time
    from ..precision import param_gather_bytes
    if plan.dp * plan.cp == 1 or plan.zero >= 3:
        return 0.0, 0.0, 0.0
    after = plan.zero == 2 or plan.param_gather_exposed
    kind = "reducescatter" if after else "allreduce"
    scale = grad_bytes(sg, plan) / dtype_bytes(sg.dtype)
    comm, exposed = grad_sync_exposed(sg, hw, kind, grp["dp"], composition, scale,
                                      grp["edp"] if experts_apart(plan.ep) else None)
    gather = 0.0
    if after:                          # updated parameter shards gathered back after the step
        by = param_gather_bytes(sg.meta, dtype_bytes(sg.dtype)) if plan.param_gather_exposed else dtype_bytes(sg.dtype)
        for params, where in shard_groups(held, grp, plan.ep):
            if params > 0 and where[0] > 1:
                a, b = collective_time("allgather", params * by, group_topology(hw, where))
                gather += float(a + b)
    return comm, exposed, gather
