"""FSDP (``--zero 3``): the per-layer parameter all-gathers and gradient reduce-scatters and what of them the
compute leaves exposed.
"""
from __future__ import annotations

import numpy as np

from ...core.graph import Graph, dtype_bytes
from .layout import group_topology
from .memory import grad_bytes
from .plan import Plan
from .roles import compute_s_by_pass
from .shards import ParamShards, shard_groups


def fsdp_exposed_s(sg: Graph, hw, plan: Plan, grp: dict, rows: list[dict], held: ParamShards) -> tuple[float, float]:
    """(total, exposed) seconds per micro-batch of FSDP's (``--zero 3``) parameter all-gathers and gradient
    reduce-scatters, one layer at a time as Megatron-FSDP and PyTorch FSDP run them: the forward gathers layer
    i+1 while layer i computes; the backward gathers each layer again (freed after its forward) and
    reduce-scatters layer i's gradients while layer i−1 computes. Exposed: what the forward's and the backward's
    compute cannot cover, plus the first gather and the last reduce-scatter. The dense parameters over the
    data-parallel group, the routed experts over the expert-data-parallel group (``shards.shard_groups``)."""
    if plan.zero < 3 or plan.dp * plan.cp == 1:
        return 0.0, 0.0
    layers = max(op.count for op in sg.ops)
    by = dtype_bytes(sg.dtype)
    ag = rs = 0.0
    for params, where in shard_groups(held, grp, plan.ep):
        if params > 0 and where[0] > 1:
            a, r = fsdp_comm_s(hw, where, params * by / layers, grad_bytes(sg, plan), by, layers)
            ag, rs = ag + a, rs + r
    fwd, bwd = compute_s_by_pass(rows)
    return float(2.0 * ag + rs), float(fsdp_exposed(ag, rs, fwd, bwd, layers))


def fsdp_comm_s(hw, dp_grp: tuple, per_layer, grad_b: float, by: float, layers):
    """(gathers, reduce-scatters) seconds of one pass of FSDP over ``layers`` layers of ``per_layer`` parameter
    bytes each (``by`` bytes per parameter, ``grad_b`` per gradient) over a data-parallel group ``dp_grp``."""
    from ...machine.network.collectives import collective_time
    topo = group_topology(hw, dp_grp)
    ag = layers * sum(collective_time("allgather", per_layer, topo))
    rs = layers * sum(collective_time("reducescatter", per_layer * grad_b / by, topo))
    return ag, rs


def fsdp_exposed(ag, rs, fwd, bwd, layers):
    """FSDP's exposed seconds per micro-batch: what the forward's (``fwd``) and the backward's (``bwd``) compute
    cannot cover of the ``layers`` gathers ``ag`` and reduce-scatters ``rs``, plus the first gather and the last
    reduce-scatter."""
    return np.maximum(ag - fwd, 0.0) + ag / layers + np.maximum(ag + rs - bwd, 0.0) + rs / layers
