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


def fsdp_exposed_s(sg: Graph, hw, plan: Plan, grp: dict, rows: list[dict], p_dev: float) -> tuple[float, float]:
    """(total, exposed) seconds per micro-batch of FSDP's (``--zero 3``) parameter all-gathers and gradient
    reduce-scatters over the data-parallel group, one layer at a time as Megatron-FSDP and PyTorch FSDP run
    them: the forward gathers layer i+1 while layer i computes; the backward gathers each layer again (freed
    after its forward) and reduce-scatters layer i's gradients while layer i−1 computes. Exposed: what the
    forward's and the backward's compute cannot cover, plus the first gather and the last reduce-scatter."""
    if plan.zero < 3 or plan.dp * plan.cp == 1:
        return 0.0, 0.0
    layers = max(op.count for op in sg.ops)
    by = dtype_bytes(sg.dtype)
    ag, rs = fsdp_comm_s(hw, grp["dp"], p_dev * by / layers, grad_bytes(sg, plan), by, layers)
    fwd, bwd = compute_s_by_pass(rows)
    return float(2.0 * ag + rs), float(fsdp_exposed(ag, rs, fwd, bwd, layers))


def fsdp_comm_s(hw, dp_grp: tuple, per_layer, grad_b: float, by: float, layers):
    """(gathers, reduce-scatters) seconds of one pass of FSDP over ``layers`` layers of ``per_layer`` parameter
    bytes each (``by`` bytes per parameter, ``grad_b`` per gradient) over the data-parallel group."""
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
