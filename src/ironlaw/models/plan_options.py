"""The options that plan a run on many devices (Megatron-LM's knobs, read by ``ironlaw.models.parallel``), and
whether a set of options asks for more than one device: one device's prediction reads this without importing the
parallel model."""
from __future__ import annotations

OPTION_NAMES = ("gpus", "nodes", "tp", "pp", "dp", "ep", "cp", "global_batch", "micro_batch", "interleave",
                "sequence_parallel", "recompute", "zero", "fsdp", "expert_imbalance", "tp_comm_overlap", "overlap_p2p",
                "grad_fp32", "moe_a2a_overlap", "cuda_graph", "moe_dispatcher",
                "redundant_experts", "offload_layers", "param_gather_exposed")


def requested(options: dict) -> bool:
    """True when the user asked for more than one device or any parallel knob."""
    o = {k: v for k, v in (options or {}).items() if k in OPTION_NAMES and v is not None and v is not False}
    return any(k not in ("gpus", "nodes") or v != 1 for k, v in o.items())
