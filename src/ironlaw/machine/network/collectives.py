"""Collectives under the alpha-beta model: T = α + β, α = launch + hops × hop latency, β = bytes on the
bottleneck link / (η · link bandwidth).

``nbytes`` is the message size as NCCL counts it (what nccl-tests call "size"):
    allreduce        the buffer every rank reduces (in = out = nbytes)
    allgather        the gathered output (each rank contributes nbytes / p)
    reducescatter    the input each rank holds (each rank keeps nbytes / p)
    alltoall         what each rank sends in total (nbytes / p to every rank)
    sendrecv         what one rank sends to one peer
For ``p`` ranks on ``m`` nodes (``q = p / m`` per node), a ring's bandwidth is that of its slowest
stretch: ``min(η·B_intra, B_node)`` with ``B_node`` what the group moves per node between nodes
(``inter_node_Bps``): one ring per network port (NCCL "channels"), ``nics = min(q, ports_per_node)`` ports
of a node in parallel (topology.py), up to the node ceiling of the calibration (what a node moves over the
network in all; measured on DGX A100 the ports do not add up: calibration.py), both shared with the other
``c`` groups that run the same collective on the node at the same time (``topo.concurrent``; 1 for one
collective on its own). B_intra is never shared (NVSwitch is non-blocking: topology.py). Steps inside a
node pay the intra-node hop latency, steps that cross nodes the inter-node one (the structure of NCCL's
own tuning model, src/graph/tuning.cc):
    ring all-reduce   α = launch + 2(p−m)·h_intra + 2(m−1)·h_inter     β = 2(p−1)/p · n / B_ring
    tree all-reduce   α = launch + 2((q−1)·h_intra + ⌈log2 m⌉·h_inter)  β = 2n / B_ring
    allreduce (auto)  the faster of the two, as NCCL's tuner picks
    all-gather, reduce-scatter (ring)  α = launch + (p−m)·h_intra + (m−1)·h_inter   β = (p−1)/p · n / B_ring
    all-to-all        α = launch + h_max     β = max(n(q−1)/p / B_intra, q·n(p−q)/p / B_node)
    send/recv         α = launch + h          β = n / B_link   (B_node of the pair when it spans nodes)
``allreduce-trtllm`` is TensorRT-LLM's own all-reduce op (curves.py): timed by its measured curve at its own
group size on one node, else as NCCL's ``allreduce`` (what TensorRT-LLM falls back to without NVLink peer
access or beyond its workspace); ``allreduce-vllm``, vLLM's (its custom all-reduce or NCCL, as it picks), and
``allreduce-sglang``, SGLang's, the same way. ``alltoall-deepep-dispatch`` / ``-combine`` are DeepEP's exchange kernels
(curves.py): timed by the device's measured DeepEP curve (its group size, else the nearest measured) on one node,
else as the ``alltoall`` below (a device without DeepEP tables, a group across nodes: an estimate, not DeepEP's).
``alltoall-deepep-ll-dispatch`` / ``-ll-combine`` (DeepEP's low-latency kernels) and ``alltoall-mnnvl-*``
(TensorRT-LLM's MNNVL all-to-all on an NVL72 domain) are timed by the device's measured curve (its group size, else
the nearest measured) on one node or NVLink domain, and nothing else — a device or group without one is an error
(``check_measured``), never the α-β all-to-all.
A group on one node whose device file has measured curves for the collective (curves.py: NCCL's own
latency-plus-bandwidth lines per protocol, fitted on measured tables) is timed by them instead; all-reduce
then stands for NCCL's own choice of algorithm, as measured (``allreduce-ring``/``-tree`` keep the formulas).
"""
from __future__ import annotations

import math
import numpy as np

from ...core.errors import IronlawError, unknown
from . import calibration
from .curves import DEEPEP, DEEPEP_LL, MEASURED_ONLY, MNNVL, OWN_ALLREDUCE, curve_time, nearest
from .topology import Topology, build

COLLECTIVES = {
    "allreduce": "collective", "allreduce-ring": "collective", "allreduce-tree": "collective",
    "allgather": "collective", "reducescatter": "collective", "alltoall": "p2p", "sendrecv": "p2p",
    **{name: "collective" for name in OWN_ALLREDUCE}, **{name: "p2p" for name in DEEPEP + DEEPEP_LL + MNNVL},
}


def measured_curve(hw, name: str, p: int, nodes: int):
    """The lines of ``hw``'s measured curve for ``name`` over ``p`` ranks on ``nodes`` node(s), with the group size
    they were measured at: (lines, measured size), or None (none measured for that collective, or a group across
    nodes: the curves are one node's)."""
    cal = calibration.for_hardware(hw)
    sizes = sorted(g for c, g in cal.curves if c == name) if cal.curves else []
    if nodes != 1 or not sizes:
        return None
    below = [g for g in sizes if g <= p]
    size = below[-1] if below else sizes[0]
    return cal.curves[(name, size)], size


def time_source(hw, name: str, p: int, nodes: int) -> str:
    """In words, what times ``name`` over ``p`` ranks on ``nodes`` node(s) of ``hw`` (``collective_time``): its
    measured curve (the group size it was measured at, the rows it was fitted on, the tables its provenance
    names) or the α-β model."""
    import re
    own = measured_curve(hw, name, p, nodes)
    cal = calibration.for_hardware(hw)
    if name in OWN_ALLREDUCE and (nodes != 1 or (name, p) not in cal.curves):
        return time_source(hw, "allreduce", p, nodes)
    if own is None:
        if name in MEASURED_ONLY:
            return "none: refused"
        return (f"the α-β {'all-to-all' if name in DEEPEP else name} model ({cal.name} calibration), {nodes} node(s)"
                + _unmeasured(cal, name, nodes))
    size = own[1]
    rows = next((c.get("rows", 0) for c in hw.extra.get("network", {}).get("curve", [])
                 if c.get("collective") == name and c.get("gpus") == size), 0)
    tables = sorted(set(re.findall(r"systems/data/([\w./-]+?)\.parquet", hw.extra.get("network", {}).get("source", ""))))
    key = "moe_a2a_perf" if name in DEEPEP + DEEPEP_LL else "trtllm_alltoall_perf" if name in MNNVL else ("custom_allreduce_perf" if name in OWN_ALLREDUCE
                                                             else "nccl_perf")
    engine = f"comm/{name.split('-', 1)[1]}/" if name in OWN_ALLREDUCE else ""   # the engine's own table folder
    table = next((t for t in tables if key in t and engine in t), None)
    at = f"measured at {size} GPUs on one node" + (f", carried to {p} GPUs" if size != p else "")
    of = f"of aiconfigurator-core 0.12.0 {table}" if table else "named by the hardware file's [network] source"
    return f"{hw.name}'s measured {name} curve ({at}; {rows} rows {of})"


def _unmeasured(cal, name: str, nodes: int) -> str:
    """Why a DeepEP collective is priced by the α-β all-to-all (``collective_time``), for its source line."""
    if name not in DEEPEP or not any(c == name for c, _ in cal.curves or {}):
        return ""
    return f": its measured curves are one node's, this group spans {nodes} nodes" if nodes > 1 else ""


def check_measured(hw, name: str, p: int, nodes: int) -> None:
    """One line where ``hw`` has no measured curve for ``name`` (``curves.MEASURED_ONLY``) over ``p`` ranks on
    ``nodes``."""
    if measured_curve(hw, name, p, nodes) is not None:
        return
    why = f"EP {p} spans {nodes} nodes and the measured curves are one node's" if nodes != 1 else \
        f"{hw.name} has no measured {name} curve"
    raise IronlawError(f"{name}: {why} (benchmarks/kernel_deepep.py fits them on aiconfigurator-core's moe_a2a and "
                       f"trtllm_alltoall tables)")


def inter_node_Bps(topo: Topology, fam: str, cal) -> float:
    """Bytes/s per direction ONE group of ``topo`` moves between nodes, per node; inf on one node.

    With ``c = topo.concurrent`` groups running the same collective on the node at once (a training step's
    data-parallel groups, say), each gets the least of
        its own ports       η·B_port·nics                  (nics = min(its GPUs on the node, ports_per_node))
        its share of ports  η·B_port·ports_per_node / c    (one port per device of the node when the catalog
                                                            states no count: q·c, never binding)
        its share of the    ceiling / c                    (calibration.node_ceiling: what a node moves over
        node ceiling                                        the network in all, measured on DGX A100)
    With c = 1 this is the bandwidth of one collective on its own, as nccl-tests measure it (and as
    calibration.py was fitted). For c > 1 — estimate: the c groups stream for the whole collective at once
    (same gradient bucket, same micro-batch) and split the node fairly; no measurement of concurrent groups
    is at hand (vidur's NCCL profiles time one collective at a time), so the split is not validated.
    """
    if topo.inter is None:
        return math.inf
    c = topo.concurrent
    port = cal.efficiency(fam, topo.inter.kind) * topo.inter.bw_Bps
    node_ports = topo.inter.ports_per_node or topo.gpus_per_node * c
    return min(port * topo.nics_per_node, port * node_ports / c, cal.node_ceiling(topo.inter.kind) / c)


def _bandwidths(topo: Topology, fam: str, cal) -> tuple[float, float]:
    """(intra-node bandwidth per device, inter-node bandwidth of the group per node), inf where unused.

    Inside a node concurrent groups do not share (NVSwitch is non-blocking: topology.py)."""
    b_in = cal.efficiency(fam, topo.intra.kind) * topo.intra.bw_Bps if topo.intra else math.inf
    return b_in, inter_node_Bps(topo, fam, cal)


def collective_time(name: str, nbytes, topo: Topology, cal=None):
    """(alpha_s, beta_s) of one collective over all devices of ``topo``; ``nbytes`` may be an array."""
    if name not in COLLECTIVES:
        raise unknown("collective", name, COLLECTIVES)
    cal = cal or calibration.for_hardware(topo.hw)
    n = np.asarray(nbytes, dtype=float)
    if np.any(n < 0) or not np.all(np.isfinite(n)):
        raise IronlawError(f"{name}: message size must be a finite number of bytes ≥ 0, got {nbytes!r}")
    p, m, q = topo.gpus, topo.nodes, topo.gpus_per_node
    if p == 1:
        if name != "sendrecv":
            z = np.zeros_like(n)
            return z, z
        raise IronlawError("sendrecv needs two devices: use --gpus 2 (add --nodes 2 for a pair across nodes)")
    if name in OWN_ALLREDUCE:
        own = cal.curves.get((name, p)) if m == 1 else None
        if own is not None:
            return curve_time(own, name, p, n)
        name = "allreduce"            # no measured curve of the engine's op for this group: its NCCL fallback
    if name in DEEPEP:
        own = nearest(cal.curves, name, p) if m == 1 and cal.curves else None
        if own is not None:
            return curve_time(own, name, p, n)
        name = "alltoall"             # no measured DeepEP curve for this device or group: the law's all-to-all
    if name in MEASURED_ONLY:
        check_measured(topo.hw, name, p, m)
        return curve_time(measured_curve(topo.hw, name, p, m)[0], name, p, n)
    lines = nearest(cal.curves, name, p) if m == 1 and cal.curves else None
    if lines is not None:
        return curve_time(lines, name, p, n)
    fam = COLLECTIVES[name]
    launch = cal.launch_s[fam]
    h_in = cal.hop(topo.intra) if topo.intra else 0.0
    h_out = cal.hop(topo.inter) if topo.inter else 0.0
    b_in, b_out = _bandwidths(topo, fam, cal)
    b_ring = min(b_in, b_out)

    if name == "sendrecv":
        if m > 1:
            return np.full_like(n, launch + h_out), n / b_out
        return np.full_like(n, launch + h_in), n / b_in
    if name in ("allgather", "reducescatter"):
        a = launch + (p - m) * h_in + (m - 1) * h_out
        return np.full_like(n, a), (p - 1) / p * n / b_ring
    if name == "alltoall":
        a = launch + max(h_in, h_out)
        t_in = n * (q - 1) / p / b_in if q > 1 else 0.0 * n
        t_out = q * n * (p - q) / p / b_out if m > 1 else 0.0 * n
        return np.full_like(n, a), np.maximum(t_in, t_out)
    ring = (launch + 2 * (p - m) * h_in + 2 * (m - 1) * h_out, 2 * (p - 1) / p * n / b_ring)
    tree = (launch + 2 * ((q - 1) * h_in + math.ceil(math.log2(m)) * h_out), 2 * n / b_ring)
    if name == "allreduce-ring":
        return np.full_like(n, ring[0]), ring[1]
    if name == "allreduce-tree":
        return np.full_like(n, tree[0]), tree[1]
    use_ring = ring[0] + ring[1] <= tree[0] + tree[1]
    return np.where(use_ring, ring[0], tree[0]), np.where(use_ring, ring[1], tree[1])


def op_terms(graph, hw, cols):
    """(latency_s, network_s) arrays (n_ops, *cfg) for the ops of ``graph`` that put bytes on a link.

    Used by ``ironlaw.law.law``: α goes to the op's latency term, β to its network term. An op with network
    bytes but no known collective, or a group the hardware cannot form, is an error, never a zero.
    ``op.group`` is (ranks, nodes) or (ranks, nodes, concurrent groups per node[, block of devices]:
    ironlaw.models.parallel.group);
    a group of a larger layout may fill its last node partly (``topology.build``'s ``uneven``).
    """
    lat = np.zeros(cols.network_bytes.shape)
    net = np.zeros(cols.network_bytes.shape)
    for i, op in enumerate(graph.ops):
        if not np.any(cols.network_bytes[i] > 0):
            continue
        if op.collective not in COLLECTIVES:
            raise IronlawError(f"op '{op.name}' puts bytes on the network but names no collective "
                               f"(one of {', '.join(COLLECTIVES)})")
        ranks, nodes, *more = op.group
        topo = build(hw, int(ranks), int(nodes), concurrent=int(more[0]) if more else 1, uneven=True,
                     block=int(more[1]) if len(more) > 1 else None)
        a, b = collective_time(op.collective, cols.network_bytes[i], topo)
        lat[i], net[i] = a, b
    return lat, net
