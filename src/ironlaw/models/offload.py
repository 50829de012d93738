"""Activation offload to host memory: a training step's saved activations of some layers kept in the host's
memory between their forward and their backward (``--offload-activations N``).

Megatron-Core's ``cpu_offloading`` with ``cpu_offloading_weights`` off, as Megatron-Bridge v0.2.0's performance
recipes run it where a layout does not fit otherwise (scripts/performance/configs/llama3/workload_base_configs.py:
Llama 3 70B FP8 with Megatron-FSDP, ``cpu_offloading_num_layers`` 20 on GB300 and 40 on GB200; Llama 3.1 405B on
GB200/GB300): each of the first N layers of a stage copies the activations its backward needs to host memory
while the next layers compute, and its backward reloads them while the layer above runs its backward (copies on a
stream of their own, Transformer Engine's CPU offload context).

    device memory   the stage's activations less the N offloaded layers' share (N · pp / L of them)
    host memory     those bytes, within the hardware file's host tier
    time            per offloaded layer and pass: max(bytes / BW_host − the layer's compute, 0) exposed,
                    BW_host the host tier's bandwidth (a Grace's LPDDR5X share over NVLink-C2C; PCIe on x86)
"""
from __future__ import annotations

import numpy as np

from ..core.errors import IronlawError


def check(n: int, layers_on_stage: float) -> int:
    """``--offload-activations N``: a count of layers no larger than a stage holds."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise IronlawError(f"--offload-activations is a count of layers (≥ 0), got {n!r}")
    if n > layers_on_stage:
        raise IronlawError(f"--offload-activations {n} is more than the {layers_on_stage:g} layers of a pipeline "
                           f"stage")
    return n


def host_tier(hw):
    """The host memory tier activations are offloaded to; an error where the hardware file has none."""
    tier = next((t for t in hw.memory if t.role == "host"), None)
    if tier is None:
        raise IronlawError(f"--offload-activations needs a host memory tier; {hw.name} names none")
    return tier


def fraction(n: int, layers: int, pp: int) -> float:
    """The share of a stage's activations the N offloaded layers hold (its L/pp layers hold them all; ``pp`` an
    array gives one share per element)."""
    return np.minimum(n * pp / layers, 1.0)


def exposed_s(n: int, bytes_per_layer: float, fwd_s: float, bwd_s: float, layers_on_stage: float, bw_Bps: float):
    """(copied, exposed) seconds per micro-batch: N layers' activations out in the forward and back in the
    backward, each copy beside its layer's compute (``fwd_s``, ``bwd_s``: the stage's passes; arrays give one
    layout per element)."""
    copy = bytes_per_layer / bw_Bps
    per_f, per_b = fwd_s / layers_on_stage, bwd_s / layers_on_stage
    return 2.0 * n * copy, n * (np.maximum(copy - per_f, 0.0) + np.maximum(copy - per_b, 0.0))
