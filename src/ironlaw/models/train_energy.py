"""Power, energy, cost and carbon of one training step on many devices (the power model: ironlaw.law.power).

Per device, over a step of T seconds (``parallel.StepEstimate``), the busy seconds of each resource:
    compute, each memory tier   m · (its seconds in one micro-batch of the slowest stage)
                                (+ the optimizer step on the device's memory, which it streams)
    links                       m · (the micro-batch's TP/EP collectives) + the pipeline sends, the
                                context-parallel ring, the FSDP gathers and the DP gradient reduction
                                (their whole time: overlapped or not, the links work)
    P = idle_w + the largest of (P_r − idle_w) · busy_r / T         (``power.drawn``; P_r: full-load power)
The pipeline bubble and exposed waits are idle time: they lower u. Per token of the step:
joules = gpus · P · T / tokens, USD and gCO₂ as ``power.per_unit``.
"""
from __future__ import annotations

from ..law import power


def busy_s(step) -> dict[str, float]:
    """Seconds per step each power-drawing resource of one device works."""
    b, m = step.breakdown, step.breakdown.microbatches
    per_mb = {k: float(v) for k, v in power.busy_s(step.per_microbatch).items()}
    out = {k: m * v for k, v in per_mb.items()}
    hw = step.per_microbatch.hw
    dev = f"bandwidth:{hw.memory[hw.device_tier].name}"
    out[dev] = out.get(dev, 0.0) + b.optimizer_s
    # dp_grad_comm_s holds FSDP's gathers and reduce-scatters too (``parallel.train_step``)
    out["network"] = out.get("network", 0.0) + b.pipeline_p2p_s + b.cp_ring_s + b.dp_grad_comm_s
    return out


def of_step(step, usd_per_device_hour: float | None = None, gco2_per_kwh: float | None = None) -> dict | None:
    """One training step: per-device utilization and power, the step's joules over every device, and per token
    joules, USD and gCO₂ (None when the device states no power)."""
    hw = step.per_microbatch.hw
    if not power.has_power(hw):
        return None
    t = step.step_s
    p, u, binding = power.drawn(hw, busy_s(step), t)
    p, u, binding = float(p), float(u), str(binding)
    gpus = step.plan.gpus
    tokens = step.flops.tokens_per_step
    d = {"schema": "ironlaw.energy/1", "utilization": u, "binding": binding, "power_w_per_device": p,
         "binding_dynamic_w": power.dynamic_w(hw, binding), "memory_w": hw.memory_w,
         "devices": gpus, "time_s": t, "joules": p * t * gpus, "idle_w": hw.idle_w, "tdp_w": hw.tdp_w,
         "utilization_definition": power.UTILIZATION_DEFINITION + "; over a training step: every micro-batch, "
                                   "the pipeline sends, the gradient reduction and the optimizer step",
         "idle_source": hw.sources.get("power.idle", ""), "tdp_source": hw.sources.get("power", ""),
         "units_per_step": tokens}
    d.update(power.per_unit(hw, d["joules"], t, tokens, gpus, usd_per_device_hour, gco2_per_kwh, "token"))
    return d
