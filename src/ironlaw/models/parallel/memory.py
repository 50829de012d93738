"""Memory per device: weights, gradients, optimizer state and activations of a plan, ZeRO's shards, and the check
that they fit. Activation memory follows Korthikanti et al. 2022 ("Reducing activation recomputation"): of the
34·s·b·h bytes a layer saves, 24 split over TP and 10 do not unless sequence parallelism splits them too.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...core.errors import IronlawError
from ...core.graph import Graph, dtype_bytes
from .. import offload
from .experts import expert_slots
from .plan import Plan
from .recompute import FULL, Recompute
from .results import DeviceMemory
from .shards import ParamShards, param_shards


ACT_SPLIT_FRACTION = 24.0 / 34.0                              # Korthikanti et al. 2022, Eq. 2


def plan_shards(g: Graph, plan: Plan) -> ParamShards:
    """``param_shards`` of one plan: the parameters a device holds, dense and expert (redundant slots included),
    and the data-parallel group of each."""
    return param_shards(g.meta, plan.tp, plan.pp, plan.dp, plan.cp, plan.ep, expert_slots(g.meta, plan))


def memory_bytes(meta: dict, by: float, grad_b: float, act, tokens, tp, pp, dp, ep, cp, v, zero, full, sp,
                 slots=1.0, offloaded=0.0, partial: Recompute = FULL) -> DeviceMemory:
    """Bytes per device of the layouts given (scalars, or arrays with one layout per element): weights and
    gradients in bf16 (``grad_b`` bytes per gradient: fp32 with ``grad_fp32``; plus the FP8 copies of the
    weights in FP8 training), fp32 master weights and Adam moments; ZeRO (``zero``) shards them over the
    data-parallel group of each parameter (``shards.param_shards``: the dense over dp·cp ranks, which context
    parallelism joins, the experts over the expert-data-parallel dp·cp/ep); activations (``act``, one
    micro-batch's, already over cp; ``tokens`` per micro-batch) over tp (with sequence parallelism ``sp``, else
    Korthikanti's 24 of 34) and cp; ``full``: full recomputation keeps each layer's input only, plus one
    layer's activations rebuilt in the backward — of the ``partial`` share of the layers it recomputes
    (``recompute``: Megatron's block keeps the other layers' activations whole, uniform keeps one input per
    group of N and rebuilds N layers at once); ``offloaded``: the share of the activations waiting in host
    memory (``offload``).
    Dense parameters over tp·pp, experts (``slots`` slots per expert: redundant replicas) over tp·pp·ep. A LoRA
    graph's gradients and optimizer state are its adapters' (``trainable_share``)."""
    from ..precision import copies, weight_copy_bytes
    held = param_shards(meta, tp, pp, dp, cp, ep, slots)
    p_dev, sharded = held.held, held.shard                  # this device's params and one ZeRO shard of them
    a = ACT_SPLIT_FRACTION
    tp_factor = np.where(sp, 1.0 / tp, (1 - a) + a / tp)
    inflight = 1.0 + np.where(v > 1, (pp - 1) / (pp * v), 0.0)
    act_dev = act * tp_factor * inflight
    if np.any(full):
        L = meta["layers"]
        inputs = L * tokens / cp * meta["hidden"] * by
        kept = inputs * partial.inputs * np.where(sp, 1.0 / tp, 1.0) * inflight
        whole = act * (1.0 - partial.share) * tp_factor * inflight        # the layers not recomputed
        act_dev = np.where(full, kept + whole + act * partial.working_layers / L * tp_factor, act_dev)
    if np.any(offloaded):                    # the offloaded layers' share waits in host memory
        act_dev = act_dev * (1.0 - offloaded)
    weight_b, f = by + weight_copy_bytes(meta), trainable_share(meta)
    if "trainable_params" in meta and weight_copy_bytes(meta):   # LoRA: frozen base weights held as one FP8
        weight_b = weight_copy_bytes(meta) / copies(meta["precision"], meta.get("fp8_any_layout", False))
        #                                                          copy alone (NeMo's fp8_params; ``lora``)
    opt = np.where(zero >= 1, sharded, p_dev) * f
    return DeviceMemory(np.where(zero >= 3, sharded, p_dev) * weight_b,
                        np.where(zero >= 2, sharded, p_dev) * f * grad_b, 12.0 * opt, act_dev, p_dev, opt)


def trainable_share(meta: dict) -> float:
    """The share of the parameters that train: the LoRA adapters' (``lora``: ``meta["trainable_params"]``, spread
    over the layers as the base weights are), else all of them."""
    return float(meta["trainable_params"]) / float(meta["params"]) if "trainable_params" in meta else 1.0


def plan_memory(g: Graph, plan: Plan, zero: int, recompute: str) -> DeviceMemory:
    """``memory_bytes`` of one plan, as floats; ``recompute`` "full" other than the plan's recomputes every
    layer."""
    act = float(np.max(g.footprint.get("activations", 0.0))) / plan.cp
    tokens = float(np.max(g.meta["tokens"])) if recompute == "full" else 0.0
    slots = expert_slots(g.meta, plan)                                  # replicas held on the EP group
    off = offload.fraction(plan.offload_layers, g.meta["layers"], plan.pp) if plan.offload_layers else 0.0
    mem = memory_bytes(g.meta, dtype_bytes(g.dtype), grad_bytes(g, plan), act, tokens, plan.tp, plan.pp, plan.dp,
                       plan.ep, plan.cp, plan.interleave, zero, recompute == "full", plan.sequence_parallel, slots,
                       off, plan.recomputed(g.meta["layers"] / (plan.pp * plan.interleave))
                       if recompute == "full" == plan.recompute else FULL)
    return mem.as_floats()


def grad_bytes(g: Graph, plan: Plan) -> float:
    """Bytes per gradient: fp32 with ``grad_fp32`` (Megatron's main_grad buffer), else the graph's dtype."""
    return 4.0 if plan.grad_fp32 else dtype_bytes(g.dtype)


def check_fits(g: Graph, hw, plan: Plan, mem: DeviceMemory) -> None:
    from ...core.units import fmt_size
    cap = hw.memory[hw.device_tier].capacity_bytes
    need = mem.total_bytes
    if need <= cap:
        return
    layered = "tokens" in g.meta and "layers" in g.meta         # full recompute keeps a transformer layer's input
    most = "--zero 3 --recompute full" if layered else "--zero 3"
    tries = most.replace(" --", ", --")
    if layered and plan.recompute_layers is not None:          # a partial recomputation: every layer is the most
        most, tries = most + " without --recompute-layers", tries + " without --recompute-layers"
    every = replace(plan, recompute_layers=None, recompute_method="block")
    need_full = plan_memory(g, every, 3, "full" if layered else "none").total_bytes
    if need_full > cap:
        ways = ["more devices"] + (["larger --tp/--pp/--cp"] if layered else []) + \
            (["a smaller --micro-batch"] if layered and plan.micro_batch > 1 else [])     # not below 1
        raise IronlawError(f"{g.meta.get('spec', g.name)} cannot fit on {plan.gpus} × {hw.name} even fully sharded "
                           f"({most}): {fmt_size(need_full)} per device exceeds "
                           f"{fmt_size(cap)} by {fmt_size(need_full - cap)}; use "
                           + (", ".join(ways[:-1]) + ", or " if len(ways) > 1 else "") + ways[-1])
    raise IronlawError(f"this plan needs {fmt_size(need)} per device, {fmt_size(need - cap)} more than the "
                       f"{fmt_size(cap)} of {hw.name} (weights {fmt_size(mem.weights_bytes)}, gradients "
                       f"{fmt_size(mem.gradients_bytes)}, optimizer {fmt_size(mem.optimizer_bytes)}, activations "
                       f"{fmt_size(mem.activations_bytes)}); try {tries}"
                       + (", or larger --tp/--pp/--cp" if layered else " (or more devices)"))
