"""The network term: collectives under an alpha-beta model over a topology of catalog links.

    topology.py     — nodes × devices per node, the link inside a node and the link between nodes
    calibration.py  — the α (launch, per hop) and η (fraction of link bandwidth) the model uses, sourced
    collectives.py  — time of all-reduce (ring, tree), all-gather, reduce-scatter, all-to-all, send/recv

The package itself imports nothing, so that hardware loading can read ``calibration`` without the
topology (which needs the hardware); its names are fetched from the modules when asked for.
"""
_NAMES = {"COLLECTIVES": "collectives", "collective_time": "collectives", "Topology": "topology", "build": "topology"}


def __getattr__(name: str):
    if name not in _NAMES:
        raise AttributeError(f"module 'ironlaw.machine.network' has no attribute '{name}'")
    import importlib
    return getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
