"""The options that plan a run on many devices (Megatron-LM's knobs, read by ``ironlaw.models.parallel``), and
whether a set of options asks for more than one device: one device's prediction reads this without importing the
parallel model."""
from __future__ import annotations

OPTION_NAMES = ("gpus", "nodes", "tp", "pp", "dp", "ep", "cp", "global_batch", "micro_batch", "interleave",
                "sequence_parallel", "recompute", "recompute_layers", "recompute_method", "zero", "fsdp",
                "expert_imbalance", "tp_comm_overlap", "overlap_p2p", "grad_fp32", "moe_a2a_overlap", "cuda_graph",
                "moe_dispatcher", "redundant_experts", "offload_layers", "param_gather_exposed", "fp8_attention",
                "lora_rank", "lora_targets")


# the options only a training step reads: one device's inference, and tensor-parallel inference, never do
TRAINING_ONLY = ("cp", "global_batch", "recompute", "recompute_layers", "recompute_method", "zero", "fsdp",
                 "grad_fp32", "offload_layers", "cuda_graph", "param_gather_exposed", "fp8_attention", "lora_rank",
                 "lora_targets")
# the options a single collective reads
COLLECTIVE = ("gpus", "nodes")


def flag(name: str) -> str:
    """The command-line flag of a plan option."""
    return "--" + ("offload-activations" if name == "offload_layers" else name.replace("_", "-"))


def refuse_unread(options: dict, graph) -> None:
    """One line for a plan option the run of ``graph`` would not read (an option silently ignored is a wrong
    answer): a training step's options on inference, any but --gpus and --nodes on one collective."""
    from ..core.errors import IronlawError
    given = [k for k in OPTION_NAMES if (options or {}).get(k) not in (None, False)]
    if "collective" in graph.meta:
        bad = [k for k in given if k not in COLLECTIVE]
        if bad:
            raise IronlawError(f"{flag(bad[0])} does not apply to one collective ({graph.name}); it takes --gpus "
                               f"and --nodes")
        return
    bad = [k for k in given if k in TRAINING_ONLY]
    if bad and graph.phase != "train":
        raise IronlawError(f"{flag(bad[0])} shapes a training step; {graph.name} {graph.phase} does not read it: "
                           f"add --phase train or drop it")


def requested(options: dict) -> bool:
    """True when the user asked for more than one device or any parallel knob."""
    o = {k: v for k, v in (options or {}).items() if k in OPTION_NAMES and v is not None and v is not False}
    return any(k not in ("gpus", "nodes") or v != 1 for k, v in o.items())
