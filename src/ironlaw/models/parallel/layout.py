"""Rank layout → groups. Ranks are laid out as Megatron does: TP fastest, then CP, DP, PP
(rank = t + tp·(c + cp·(d + dp·s))); a group of ranks spaced ``stride`` apart spans ``stride·size / gpus_per_node``
nodes, so the topology decides which link each collective uses. Every rank of a node belongs to one group of each
kind, so a node holds G / (ranks per node of one group) groups of a kind, and they run the same collective at the
same time (same layer, same micro-batch): between nodes they share the node's network ports and ceiling
(``network.collectives.inter_node_Bps``), inside a node they do not (NVSwitch is non-blocking).
"""
from __future__ import annotations

from ...core.graph import Op
from ...machine.network.topology import build as build_topology
from .plan import Plan
from .shards import expert_dp_ranks, experts_apart


def group(stride: int, size: int, gpus_per_node: int) -> tuple[int, int, int, int]:
    """(ranks, nodes, concurrent, block) of a group of ``size`` ranks spaced ``stride`` apart.

    ``concurrent``: the groups of this kind with ranks on one node, all running the collective at once —
    every rank of a node is in one, so ``gpus_per_node / (ranks of one group per node)``. TP (stride 1)
    spanning nodes fills them: 1. DP and EP (stride tp): tp ≥ G puts one rank of a group per node, G
    groups (tp 8 on DGX: 8 DP groups share each node's 8 ports and its ceiling); tp < G, tp of them. A group
    that fills its nodes but part of the last (dp·cp = 78 ranks of stride 4 on nodes of 64: 16 on each of four
    nodes, 14 on a fifth) spans ⌈ranks / ranks per node⌉ nodes, paced by its fullest one (``topology.build``).
    ``block``: the consecutive devices its ranks on a node lie in, stride · ranks per node (at most the node): on a
    node of bridged PCIe cards it says whether they share a bridge (``topology.intra_link``: DP 2 under TP 2 lies in
    a block of 4, two H100 NVL pairs, PCIe between them)."""
    if size == 1 or stride * size <= gpus_per_node:
        nodes = 1
    else:
        nodes = size if stride >= gpus_per_node else -(-size // max(gpus_per_node // stride, 1))
    per_node = -(-size // nodes)
    return size, nodes, max(gpus_per_node // per_node, 1), min(stride * per_node, gpus_per_node)


def group_shapes(grp: tuple) -> str:
    """A collective's ``shapes``: the ranks of its group, the nodes they span, the groups per node at once."""
    shared = f", {grp[2]} groups per node at once" if len(grp) > 2 and grp[1] > 1 and grp[2] > 1 else ""
    return f"{grp[0]} ranks on {grp[1]} node(s){shared}"


def collective_op(name: str, kind: str, nbytes, grp: tuple, of: Op, dtype: str, module: str,
                  attrs: dict | None = None) -> Op:
    """A collective run as often as ``of``, the op it belongs to, and in its layers (``in_layers``)."""
    layers = {"per_layer": of.attrs["per_layer"]} if "per_layer" in of.attrs else {}
    return Op(name, "collective", network_bytes=nbytes, dtype=dtype, count=of.count, module=module,
              collective=kind, group=grp, shapes=group_shapes(grp), attrs=layers | (attrs or {}))


def group_topology(hw, grp: tuple):
    """The topology of one group (ranks, nodes[, concurrent[, block]]) of ``group``."""
    return build_topology(hw, grp[0], grp[1], concurrent=grp[2] if len(grp) > 2 else 1, uneven=True,
                          block=grp[3] if len(grp) > 3 else None)


def groups(plan: Plan, gpus_per_node: int, nodes: int = 1) -> dict[str, tuple]:
    """The groups of each kind, ranks laid out as Megatron does (TP fastest, then CP, DP, PP:
    rank = t + tp·(c + cp·(d + dp·s))): ``dp`` is the data-parallel group gradients are reduced over, which
    joins the CP ranks (dp·cp, stride tp); ``ep`` splits it (stride tp); ``edp`` the expert-data-parallel group
    the routed experts' gradients are reduced over (``shards.expert_dp_ranks``: Megatron-Core's expert grid
    tp-ep-dp puts its ranks tp·ep apart); ``pp`` the stage-to-stage pair."""
    G = gpus_per_node
    out = {"tp": group(1, plan.tp, G), "cp": group(plan.tp, plan.cp, G), "dp": group(plan.tp, plan.dp * plan.cp, G),
           "ep": group(plan.tp, plan.ep, G), "edp": expert_dp_group(plan.tp, plan.ep, plan.dp * plan.cp, G)}
    # a rank of stage s sends to its peer in s + 1, tp·cp·dp ranks further: a pair spaced that far apart, across
    # nodes when a stage fills its nodes, and then every rank of the node sends at once (G pairs). Stages
    # smaller than a node still cross at a node's edge when there are several: the slowest boundary, where
    # the last stage of a node sends its tp·cp·dp ranks to the next node, sets the pipeline's pace
    out["pp"] = pp_group(plan.tp * plan.cp * plan.dp, plan.pp, G, nodes)
    return out


def expert_dp_group(tp: int, ep: int, dp_ranks: int, gpus_per_node: int) -> tuple[int, int, int]:
    """The expert-data-parallel group of a layout whose data-parallel group holds ``dp_ranks`` (dp·cp) ranks:
    ``shards.expert_dp_ranks`` of them, tp·ep apart (ETP = TP)."""
    return group(tp * ep, int(expert_dp_ranks(dp_ranks, 1, tp, ep)), gpus_per_node)


def pp_group(stage: int, pp: int, gpus_per_node: int, nodes: int) -> tuple[int, int, int]:
    """The stage-to-stage pair of ``group``: a rank of stage s sends to its peer in s + 1, ``stage`` = tp·cp·dp
    ranks further. On one node its block is the stages' whole (``stage·pp``, at most the node): the slowest
    boundary among them paces the pipeline, an NVLink bridge's edge where the stages span several bridges."""
    grp = group(stage, 2, gpus_per_node)
    if pp > 1 and nodes > 1 and grp[1] == 1:
        grp = (2, 2, min(stage, gpus_per_node), gpus_per_node)
    elif grp[1] == 1:
        grp = grp[:3] + (min(max(stage * pp, grp[3]), gpus_per_node),)
    return grp


def shared_network_notes(hw, plan: Plan, grp: dict) -> list[str]:
    """One line per kind of group whose concurrent groups share a node's network (what each gets), and per kind
    whose groups fill their last node partly (timed on the fullest)."""
    from ...machine.network.calibration import for_hardware
    from ...machine.network.collectives import inter_node_Bps
    from ...core.units import fmt
    out = []
    for what, key, fam, used in (("data-parallel gradient sync", "dp", "collective", plan.dp * plan.cp > 1),
                                 ("expert-data-parallel gradient sync", "edp", "collective",
                                  experts_apart(plan.ep) and grp["edp"][0] > 1),
                                 ("stage-to-stage send/recv", "pp", "p2p", plan.pp > 1),
                                 ("context-parallel K/V ring", "cp", "p2p", plan.cp > 1),
                                 ("expert all-to-all", "ep", "p2p", plan.ep > 1)):
        if not used:                 # a group of one rank, or the pair past the last stage: no topology
            continue
        t = group_topology(hw, grp[key])
        if t.inter is not None and t.concurrent > 1:
            out.append(f"{what}: {t.concurrent} groups per node run at once and share its network, "
                       f"{fmt(inter_node_Bps(t, fam, for_hardware(hw)), 'B/s')} each between nodes")
        if t.gpus % t.nodes:
            out.append(f"{what}: each group's {t.gpus} ranks span {t.nodes} nodes unevenly, at most "
                       f"{t.gpus_per_node} on one; timed on the fullest node")
    return out
