"""The network term: collectives under an alpha-beta model over a topology of catalog links.

    topology.py     — nodes × devices per node, the link inside a node and the link between nodes
    calibration.py  — the α (launch, per hop) and η (fraction of link bandwidth) the model uses, sourced
    collectives.py  — time of all-reduce (ring, tree), all-gather, reduce-scatter, all-to-all, send/recv
"""
from .collectives import COLLECTIVES, collective_time  # noqa: F401
from .topology import Topology, build  # noqa: F401
