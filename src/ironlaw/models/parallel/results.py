"""The results of a training step: its time by part (``StepBreakdown``), the memory per device (``DeviceMemory``),
its work (``StepFlops``) and the whole estimate (``StepEstimate``, ``ironlaw.train-step/1``).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

from .plan import Plan


MODEL_FLOPS = ("3 × the forward's FLOPs as the graph counts them: 2·m·n·k per GEMM (6·N per token for the "
               "weights a token meets, LM head included), causal attention's QKᵀ and PV over s(s+1)/2 pairs per "
               "sequence, and the elementwise ops; no recomputation")


@dataclass(frozen=True)
class StepBreakdown:
    """One optimizer step by part (``train_step``), in seconds per step but ``microbatches`` (a count):
    the micro-batches with their TP collectives, and each part that adds to them or hides under them (a
    ``…_comm_s``/``…_ring_s`` is the whole transfer, its ``…_exposed_s`` what the step waits for)."""
    step_s: float
    microbatch_s: float
    microbatches: int
    compute_and_tp_s: float
    tp_ep_network_s: float
    pipeline_bubble_s: float
    pipeline_p2p_s: float
    cp_ring_s: float
    cp_ring_exposed_s: float
    fsdp_comm_s: float
    fsdp_exposed_s: float
    dp_grad_comm_s: float               # FSDP's gathers and reduce-scatters included
    dp_grad_exposed_s: float
    zero_param_gather_s: float
    optimizer_s: float
    host_exposed_s: float
    host_issue_s: float
    offload_exposed_s: float

    def to_dict(self) -> dict:
        """The ``breakdown`` of ``ironlaw.train-step/1``: the fields by name, in this order."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class DeviceMemory:
    """Bytes per device of one plan (``memory_bytes``: floats, or arrays with one layout per element) and the
    parameters the device holds (a count: what the gradient reduction moves) and those its optimizer steps (with ZeRO
    its shard: the dense parameters over dp·cp, the experts over the expert-data-parallel dp·cp/ep)."""
    weights_bytes: object
    gradients_bytes: object
    optimizer_bytes: object
    activations_bytes: object
    params_per_device: object
    optimizer_params: object

    @property
    def total_bytes(self):
        return self.weights_bytes + self.gradients_bytes + self.optimizer_bytes + self.activations_bytes

    def footprint(self) -> dict:
        """The four classes under a graph's footprint names (``weights``, ``gradients``, ``optimizer``,
        ``activations``)."""
        return {"weights": self.weights_bytes, "gradients": self.gradients_bytes, "optimizer": self.optimizer_bytes,
                "activations": self.activations_bytes}

    def as_floats(self) -> "DeviceMemory":
        return DeviceMemory(*(float(getattr(self, f.name)) for f in fields(self)))

    def to_dict(self) -> dict:
        """The ``memory_per_device`` of ``ironlaw.train-step/1``: the footprint, ``params_per_device`` and
        ``total_bytes``."""
        return {**self.footprint(), "params_per_device": self.params_per_device, "total_bytes": self.total_bytes}


@dataclass(frozen=True)
class StepFlops:
    """Work of one optimizer step over the whole job (all data-parallel replicas): model FLOPs
    (``MODEL_FLOPS``, MFU's numerator), hardware FLOPs (the ops run, recomputation included) and tokens."""
    model_per_step: float
    hardware_per_step: float
    tokens_per_step: float

    def to_dict(self) -> dict:
        """The ``flops`` of ``ironlaw.train-step/1``: the fields by name, in this order."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class StepEstimate:
    plan: Plan
    per_microbatch: object                     # Estimate: one micro-batch, forward+backward, slowest stage
    breakdown: StepBreakdown
    memory: DeviceMemory
    flops: StepFlops
    mfu: float
    bottleneck: dict
    topology: str
    notes: list[str] = field(default_factory=list)
    peak_flops: float = 0.0                    # the dtype's peak per device, MFU's denominator

    def __repr__(self) -> str:                 # the micro-batch's Estimate and the breakdown: the step, in short
        p = self.plan
        return (f"{type(self).__name__}(tp={p.tp}, pp={p.pp}, dp={p.dp}, gpus={p.gpus}: step_s={self.step_s!r}, "
                f"mfu={self.mfu!r})")

    @property
    def step_s(self) -> float:
        return self.breakdown.step_s

    @property
    def time_s(self) -> float:
        return self.step_s

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.flops.tokens_per_step / (self.step_s * self.plan.gpus)

    def to_dict(self) -> dict:
        from dataclasses import asdict
        return {"schema": "ironlaw.train-step/1", "plan": asdict(self.plan), "topology": self.topology,
                "time_s": self.step_s, "step_s": self.step_s, "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
                "mfu": self.mfu, "mfu_convention": f"model FLOPs / (time_s × gpus × {self.peak_flops:.4g} FLOP/s, "
                                                   f"the dtype's dense peak); model FLOPs: {MODEL_FLOPS}",
                "breakdown": self.breakdown.to_dict(), "memory_per_device": self.memory.to_dict(), "flops": self.flops.to_dict(),
                "bottleneck": self.bottleneck, "notes": self.notes, "per_microbatch": self.per_microbatch.to_dict(top=20)}
