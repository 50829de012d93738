"""Expert parallelism: the all-to-all dispatch and combine around the experts, the hottest rank's load
(``--expert-imbalance``) and the slots of redundant experts (``--redundant-experts``).
"""
from __future__ import annotations

import copy

from ...core import passes
from ...core.graph import Graph, Op
from .layout import collective_op
from .plan import Plan
from .roles import role


def expert_all_to_alls(ops: list, op: Op, tp: int, nbytes, ep_grp: tuple, dtype: str) -> None:
    """The dispatch before the experts' first GEMM (up in the forward, down in the backward) and the combine
    after their last, appended around ``op``, the last op of ``ops``."""
    bwd = passes.is_backward(op.name)
    suffix = ".bwd" if bwd else ""
    if (role(op) == "column") != bwd:
        ops.insert(len(ops) - 1,
                   collective_op(f"ep.alltoall.dispatch{suffix}", "alltoall", nbytes, ep_grp, op, dtype, "ep"))
    else:
        ops.append(collective_op(f"ep.alltoall.combine{suffix}", "alltoall", nbytes, ep_grp, op, dtype, "ep"))


def expert_slots(meta: dict, plan: Plan) -> float:
    """Expert slots per expert: (E + redundant) / E, the replicas the EP group holds (1 for a dense model)."""
    e = meta.get("experts", 0)
    return (e + plan.redundant_experts) / e if e else 1.0


def expert_load(sg: Graph, plan: Plan) -> Graph:
    """The hottest rank of an expert-parallel MoE: with the hottest expert at ``expert_imbalance`` × the mean
    load and the other experts of its rank at the mean, that rank's expert GEMMs and all-to-all traffic are
    1 + (f − 1)·ep/E times the balanced share (E/ep experts per rank)."""
    f, e = plan.expert_imbalance, sg.meta.get("expert_slots", sg.meta.get("experts", 0))
    if f == 1.0 or plan.ep == 1 or not e:
        return sg
    r = 1.0 + (f - 1.0) * plan.ep / e
    ops = []
    for op in sg.ops:
        if op.module in ("experts", "ep"):
            op = copy.copy(op)
            op.flops, op.vector_flops, op.network_bytes = op.flops * r, op.vector_flops * r, op.network_bytes * r
            op.bytes = {k: (v * r if k == "activations" else v) for k, v in op.bytes.items()}
        ops.append(op)
    return Graph(sg.name, sg.phase, sg.dtype, ops, footprint=dict(sg.footprint), meta=dict(sg.meta),
                 uncounted_ops=dict(sg.uncounted_ops))
