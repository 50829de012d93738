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


def grad_sync_exposed(sg: Graph, hw, kind: str, grp: tuple, composition: str,
                      grad_scale: float = 1.0) -> tuple[float, float]:
    """(total, exposed) seconds of the data-parallel gradient reduction of the last micro-batch.

    Scheduled by ``ironlaw.law.critical_path``: one collective per layer is issued on the network stream as soon
    as that layer's backward finishes (DDP/Megatron gradient buckets) and overlaps the backward of the layers
    below; the gradients outside the layers (embeddings, head) follow the last backward op; the optimizer and
    the end of the step wait for all of them. TP collectives stay blocking (they are not marked grad_sync).
    """
    from ...law import critical_path, law
    L = max(op.count for op in sg.ops)
    layer_bwd = [i for i, op in enumerate(sg.ops) if passes.is_backward(op.name) and in_layers(op, L)]
    if not layer_bwd:
        return 0.0, 0.0
    layer_grads = grad_scale * sum(float(np.max(sg.ops[i].bytes.get("gradients", 0.0))) * sg.ops[i].count
                                   for i in layer_bwd) / L
    other = grad_scale * sum(float(np.max(op.bytes.get("gradients", 0.0))) * op.count for i, op in enumerate(sg.ops)
                if passes.is_backward(op.name) and i not in layer_bwd)
    ops = list(sg.ops)
    sync = [Op(f"dp.grad.{kind}.layer", "collective", network_bytes=layer_grads, dtype=sg.dtype, count=L,
               module="dp", collective=kind, group=grp, shapes=group_shapes(grp), attrs={"grad_sync": True})]
    ops.insert(max(layer_bwd) + 1, sync[0])
    if other > 0:
        ops.append(Op(f"dp.grad.{kind}.rest", "collective", network_bytes=other, dtype=sg.dtype, module="dp",
                      collective=kind, group=grp, shapes=group_shapes(grp), attrs={"grad_sync": True}))
    # phase "infer": only the ops marked grad_sync may overlap; TP collectives in the backward stay blocking
    g = Graph(sg.name, "infer", sg.dtype, ops, footprint=dict(sg.footprint), meta=dict(sg.meta))
    est = law.predict(g, hw, composition)
    comm = sum(r["time_s"] for r in est.rows() if r["name"].startswith("dp.grad."))
    blocking = critical_path.from_estimate(est, overlap_comm=False).time_s
    overlapped = critical_path.from_estimate(est, overlap_comm=True).time_s
    return comm, max(overlapped - (blocking - comm), 0.0)


def dp_grad_sync(sg: Graph, hw, plan: Plan, grp: dict, p_dev: float, composition: str) -> tuple[float, float, float]:
    """(total, exposed, after-step gather) seconds of the data-parallel gradient reduction of the last
    micro-batch (ZeRO < 3; FSDP reduces every micro-batch's gradients in ``fsdp_exposed``). ZeRO-1's parameter
    all-gather rides in the all-reduce's bytes, overlapped, unless the plan leaves it after the step
    (``param_gather_exposed``: then a reduce-scatter and the gather, as ZeRO-2's, at the precision's bytes per
    parameter, ``precision.param_gather_bytes``)."""
    from ...machine.network.collectives import collective_time
    from ..precision import param_gather_bytes
    if plan.dp * plan.cp == 1 or plan.zero >= 3:
        return 0.0, 0.0, 0.0
    after = plan.zero == 2 or plan.param_gather_exposed
    kind = "reducescatter" if after else "allreduce"
    comm, exposed = grad_sync_exposed(sg, hw, kind, grp["dp"], composition,
                                      grad_bytes(sg, plan) / dtype_bytes(sg.dtype))
    gather = 0.0
    if after:                          # updated parameter shards gathered back after the step
        by = param_gather_bytes(sg.meta, dtype_bytes(sg.dtype)) if plan.param_gather_exposed else dtype_bytes(sg.dtype)
        a, b = collective_time("allgather", p_dev * by, group_topology(hw, grp["dp"]))
        gather = float(a + b)
    return comm, exposed, gather
