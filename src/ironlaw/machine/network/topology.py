"""A topology: ``gpus`` devices on ``nodes`` nodes, one link kind inside a node, one between nodes.

The links come from the hardware catalog (``[[links]]`` of the device): inside a node the fastest
device-to-device fabric the device has (NVLink, xGMI, ICI, else PCIe); between nodes InfiniBand or
Ethernet. Bandwidths are per direction per device, as the catalog states them. Between nodes a group
uses ``nics_per_node`` network ports of the catalog's bandwidth per node: one per device of the group on
the node, at most the node's ``ports_per_node`` where the catalog states it (DGX A100: 8 HDR ports, one
per GPU, so a group with q GPUs on a node spreads its rings over min(q, 8) ports). A link that states
no port count gets one port per device (rail-optimised, as DGX systems are).

``concurrent`` is how many groups of this shape run the same collective on the same nodes at the same
time (a training step's data-parallel groups all reduce the same gradient bucket at once); they share
each node's network ports and its ceiling (collectives.inter_node_Bps). Inside a node they do not share:
an NVSwitch fabric is non-blocking, every GPU keeps its full NVLink rate whatever the others do
(datasheet: DGX A100, 6 NVSwitches, 4.8 TB/s bidirectional = 8 GPUs × 600 GB/s; DGX H100, 4 NVSwitches,
7.2 TB/s = 8 × 900 GB/s). One collective on its own (``allreduce:64MB --gpus 16 --nodes 2``) has 1.

A node holds at most the ``max_devices`` its in-node fabric joins where the catalog states it (DGX A100:
8 GPUs on NVSwitch): more per node is refused, and with no ``--nodes`` the devices fill whole nodes of
that size (``nodes_for``: 64 A100 → 8 nodes), never one impossible 64-GPU node.

A node here is the scale-up domain, not a chassis: where the fabric spans several trays the catalog says so
with ``max_devices`` (GB200/GB300 NVL72: 72 GPUs on NVLink Switch trays, 18 trays of 4; TPU v6e: a pod of
256 chips on ICI), so a group of up to that many devices stays on that fabric (64 GB200 → 1 node, NVLink)
and only larger ones cross the scale-out network (the catalog's ports_per_node: one NIC per GPU on NVL72).

A node may have two levels: PCIe cards whose NVLink is a bridge joining 2 or 4 of them (H100 NVL, H100 PCIe,
A100 PCIe: pairs; H200 NVL: a 2- or 4-way bridge) state the bridge's ``max_devices`` on the NVLink link and the
server's on the PCIe link (8: the datasheets' NVIDIA-Certified systems with up to 8 cards). The node holds the
largest of them (``node_size``); a group whose ranks on a node all sit inside one bridge runs over NVLink, any
other goes over PCIe (``intra_link``): a ring through the cards of several bridges crosses PCIe at every bridge's
edge, and its slowest stretch paces it, as NCCL's rings run inside a node (no hierarchical all-reduce inside a
node). Which ranks share a bridge follows from the rank layout: the ``block`` of consecutive devices a group's
ranks on a node lie in, aligned as bridges are (``q`` ranks spaced ``stride`` apart: ``stride·q``; DP 2 under
TP 2: 4; the stage-to-stage send of a pipeline: its stages' whole block, where its slowest boundary lies), sits
inside one bridge of ``b`` devices where ``block`` divides ``b``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...core.errors import IronlawError
from ..hardware import NETWORK_KINDS, Hardware, Link

INTRA_KINDS = ("nvlink", "xgmi", "ici", "neuronlink", "roce-mesh", "nvlink-c2c", "pcie")   # preference inside a node
INTER_KINDS = NETWORK_KINDS                                        # preference order between nodes
MAX_DEVICES = 1 << 20


@dataclass(frozen=True)
class Topology:
    hw: Hardware
    gpus: int
    nodes: int
    intra: Link | None          # None when a node holds one device
    inter: Link | None          # None on one node
    nics_per_node: int
    concurrent: int = 1         # groups of this shape sharing each node's network at the same time
    bridge: Link | None = None  # the faster in-node link whose domain the group spills past (``intra_link``)

    @property
    def gpus_per_node(self) -> int:
        """Devices of the group on its fullest node (all of its nodes where they divide evenly)."""
        return -(-self.gpus // self.nodes)

    def describe(self) -> str:
        if self.gpus % self.nodes:
            parts = [f"{self.gpus} {self.hw.name} on {self.nodes} nodes, at most {self.gpus_per_node} on one"]
        else:
            parts = [f"{self.nodes} node{'s' if self.nodes > 1 else ''} × {self.gpus_per_node} {self.hw.name}"]
        if self.intra:
            parts.append(f"{self.intra.name} inside a node" + (
                f" (past the {self.bridge.max_devices}-device {self.bridge.name})" if self.bridge else ""))
        if self.inter:
            parts.append(f"{self.nics_per_node} × {self.inter.name} per node between nodes")
            if self.concurrent > 1:
                parts.append(f"the node's network shared by {self.concurrent} concurrent groups")
        return ", ".join(parts)


def _pick(hw: Hardware, kinds: tuple[str, ...]) -> Link | None:
    for k in kinds:
        for link in hw.links:
            if link.kind == k:
                return link
    return None


def _in_node(hw: Hardware) -> list[Link]:
    """``hw``'s links inside a node, fastest fabric first (``INTRA_KINDS``)."""
    return sorted((l for l in hw.links if l.kind in INTRA_KINDS), key=lambda l: INTRA_KINDS.index(l.kind))


def node_size(hw: Hardware) -> int | None:
    """The most devices of ``hw`` in one node: where its preferred in-node link states ``max_devices``, the largest
    any in-node link states (a server of bridged PCIe cards: the PCIe link's); None: unstated."""
    links = _in_node(hw)
    if not links or links[0].max_devices is None:
        return None
    return max(l.max_devices for l in links if l.max_devices is not None)


def intra_link(hw: Hardware, per_node: int, block: int | None = None) -> tuple[Link | None, Link | None]:
    """(the link a group of ``per_node`` ranks on a node, within ``block`` consecutive devices (None: ``per_node``),
    runs over; the faster link whose domain it spills past, else None). The fastest in-node link whose domain holds
    the group: one that joins the whole node (no ``max_devices``, or at least the node's), or a bridge of ``b``
    devices where ``block`` divides ``b`` (module docstring); else the next, slower one."""
    if per_node <= 1:
        return None, None
    links = _in_node(hw)
    cap = node_size(hw)
    block = max(block or per_node, per_node)
    for i, link in enumerate(links):
        b = link.max_devices
        if b is None or cap is None or b >= cap or b % block == 0:
            return link, next((l for l in links[:i] if l.max_devices), None)
    return None, None


def nodes_for(hw: Hardware, gpus: int, nodes: int | None = None) -> int:
    """``nodes`` when given; else 1, or as many full nodes as ``gpus`` fills where the node size is known."""
    if nodes is not None:
        return check_count(nodes, "--nodes")
    cap = node_size(hw)
    if cap is None or gpus <= cap:
        return 1
    if gpus % cap:
        raise IronlawError(f"--gpus {gpus} does not fill whole nodes of {cap} {hw.name}; say how they are spread "
                           f"with --nodes (e.g. --nodes {_fewest_nodes(gpus, cap)})")
    return gpus // cap


def _fewest_nodes(gpus: int, cap: int) -> int:
    """The fewest nodes that hold ``gpus`` devices evenly with at most ``cap`` per node."""
    return next(n for n in range(-(-gpus // cap), gpus + 1) if gpus % n == 0)


def check_count(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < 1:
        raise IronlawError(f"{what} must be a positive whole number, got {value!r}")
    if value > MAX_DEVICES:
        raise IronlawError(f"{what} {value!r} is out of range (1 … {MAX_DEVICES:,})")
    return int(value)


def build(hw: Hardware, gpus: int = 1, nodes: int = 1, nics_per_node: int | None = None,
          concurrent: int = 1, uneven: bool = False, block: int | None = None) -> Topology:
    """The topology of ``gpus`` devices of ``hw`` spread evenly over ``nodes`` nodes, one of ``concurrent``
    such groups that run the same collective on the same nodes at once (see the module docstring).

    ``uneven``: the group of a larger layout whose ranks fill some nodes and part of the last (a data-parallel group
    of 78 ranks, 16 on each node of 64: 16 + 16 + 16 + 16 + 14); its fullest node paces it (``gpus_per_node``).
    Without it, devices that do not divide evenly over the nodes are an error naming the numbers given.
    ``block``: the consecutive devices the group's ranks on a node lie in (None: as many as they are), which says
    whether they share an NVLink bridge (``intra_link``)."""
    gpus, nodes = check_count(gpus, "--gpus"), check_count(nodes, "--nodes")
    concurrent = check_count(concurrent, "concurrent groups per node")
    if nodes > gpus:
        raise IronlawError(f"--nodes {nodes} exceeds --gpus {gpus}: every node needs at least one device")
    if gpus % nodes and not uneven:
        raise IronlawError(f"--gpus {gpus} does not divide evenly over --nodes {nodes}; use a multiple of {nodes}")
    per_node = -(-gpus // nodes)
    intra, bridge = intra_link(hw, per_node, None if block is None else check_count(block, "a group's block"))
    cap = node_size(hw)
    if cap is not None and per_node > cap:
        widest = max((l for l in _in_node(hw) if l.max_devices), key=lambda l: l.max_devices)
        raise IronlawError(f"{per_node} {hw.name} per node: its {widest.name} joins at most {cap} devices in a node; "
                           f"spread --gpus {gpus} over more nodes (e.g. --nodes {_fewest_nodes(gpus, cap)})")
    if per_node > 1 and intra is None:
        raise IronlawError(f"{hw.name} lists no device-to-device link ({', '.join(INTRA_KINDS)}) in its [[links]]; "
                           f"use --gpus {nodes} (one device per node) or a hardware file that has one")
    inter = _pick(hw, INTER_KINDS) if nodes > 1 else None
    if nodes > 1 and inter is None:
        one = f"at most {cap} devices (one node)" if cap is not None and gpus > cap else "--nodes 1"
        raise IronlawError(f"{hw.name} lists no network link ({', '.join(INTER_KINDS)}) in its [[links]]; "
                           f"use {one} or a hardware file with an infiniband/ethernet link")
    if nics_per_node is not None:
        nics = check_count(nics_per_node, "nics per node")
    else:
        nics = min(per_node, inter.ports_per_node) if inter and inter.ports_per_node else per_node
    return Topology(hw, gpus, nodes, intra, inter, nics, concurrent, bridge)
