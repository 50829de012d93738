"""Whether a transformer's training step fits one device: the test ``analyze``, ``sweep`` and ``compare`` share.

Training frameworks do not page a transformer's weights, gradients, optimizer state or activations to host memory
unasked (the one offload priced is ``--offload-activations``, on the parallel step), so such a step whose footprint
exceeds the device's memory does not run: it is not priced as spilled. A recommender's embedding tables (DLRM) are
held in host memory on one device, as TorchRec holds them, and stay priced there.
"""
from __future__ import annotations

import numpy as np

DOES_NOT_FIT = "does not fit"


def is_transformer_train(graph) -> bool:
    """A transformer's training step (its graph states tokens and layers); a recommender's does not."""
    return graph.phase == "train" and "tokens" in graph.meta and "layers" in graph.meta


def spills(est) -> np.ndarray:
    """Per configuration of ``est``: a transformer's training step whose footprint exceeds the device's memory."""
    if not is_transformer_train(est.graph):
        return np.zeros(np.shape(est.capacity_bound), dtype=bool)
    return np.asarray(est.capacity_bound, dtype=bool)


def footprint_bytes(est, shape: tuple) -> np.ndarray:
    """The step's whole footprint (every class) per configuration, broadcast to ``shape``."""
    total = sum(np.asarray(v, dtype=float) for v in est.graph.footprint.values())
    return np.broadcast_to(total, shape)


def reason(footprint: float, hw) -> str:
    """Why a point does not fit, in one phrase: its footprint against the device memory of ``hw``."""
    from ..core.units import fmt_size
    cap = hw.memory[hw.device_tier].capacity_bytes
    return (f"training step needs {fmt_size(footprint).strip()}, more than {hw.name}'s {fmt_size(cap).strip()} "
            f"of device memory; frameworks do not page it to host memory")
