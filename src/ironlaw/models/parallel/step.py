"""The training step (``train_step``): on the slowest pipeline stage, m micro-batches of forward+backward, the
pipeline bubble and sends, the context-parallel ring, FSDP's gathers, the host's wait, the activation offload, the
data-parallel gradient reduction and the optimizer step; each GEMM at the η its kernels' rows allow
(``ironlaw.models.gemm_rows``); FP8/MXFP8 GEMMs (``ironlaw.models.precision``) when the graph's dtype is one.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...core.errors import IronlawError
from ...core.graph import Graph
from ...machine.network.topology import build as build_topology
from .. import dispatcher, fp8_attention, grouped_mlp, host, nvfp4, offload, rope_unfused
from ..gemm_rows import with_kernel_rows
from .cp import cp_ring_exposed, cp_shard
from .experts import expert_load
from .flops import step_flops
from .fsdp import fsdp_exposed_s
from .gradsync import dp_grad_sync
from .layout import groups, shared_network_notes
from .memory import ACT_SPLIT_FRACTION, check_fits, plan_memory, plan_shards
from .optimizer import plan_optimizer_s
from .overlap import ep_overlap_hidden_s, tp_overlap_hidden_s
from .pipeline import bubble_s, plan_pipeline_p2p_s, stage_ops
from .plan import Plan
from .results import DeviceMemory, StepBreakdown, StepEstimate
from .roles import compute_s_by_pass
from .stages import uneven, uneven_note
from .tp import tp_shard


def shard(sg: Graph, hw, plan: Plan, grp: dict) -> Graph:
    """The per-device graph of one stage's ops under ``plan``: context parallelism, then tensor and expert
    parallelism (``grp``: ``groups``' tp and ep), the token dispatcher's sorts (``dispatcher``), the routed
    experts' eager clamp and fc2 bias (``grouped_mlp``), RoPE unfused under YaRN (``rope_unfused``), the hottest
    expert rank's load, each GEMM's kernel rows."""
    sg = cp_shard(sg, plan.cp)
    sg = tp_shard(sg, plan.tp, plan.sequence_parallel, grp["tp"], plan.ep, grp["ep"])
    sg = dispatcher.with_sorts(sg, plan.moe_dispatcher)
    sg = grouped_mlp.with_eager_ops(sg)
    sg = rope_unfused.with_unfused_rope(sg)
    sg = expert_load(sg, plan)
    return with_kernel_rows(sg, hw, plan.tp, plan.tp_comm_overlap, plan.ep)


def _stage_estimates(g: Graph, hw, plan: Plan, stages: list, mem: DeviceMemory, grp: dict, composition: str):
    """(estimate, per-device graph) of one micro-batch on the slowest pipeline stage."""
    from ...law import law
    fp = mem.footprint()
    best = None
    for i, ops in enumerate(stages):
        sg = Graph(g.name, "train", g.dtype, ops, footprint=fp, meta=dict(g.meta), uncounted_ops=dict(g.uncounted_ops))
        sg = shard(sg, hw, plan, grp)
        sg.footprint = dict(fp)
        sg.name = f"{g.name} · stage {'1' if i == 0 else plan.pp} of {plan.pp} · micro-batch {plan.micro_batch}"
        est = law.predict(sg, hw, composition)
        if best is None or float(est.time_s) > float(best[0].time_s):
            best = (est, sg)
    return best


def microbatch_s(est, hidden, ring_exposed, fsdp_exposed, host_exposed, offload_exposed=0.0):
    """(compute and TP/EP collectives, the whole micro-batch) on the slowest stage: the law's time ``est`` less
    what TP and EP overlap hide, then the context-parallel ring, FSDP's gathers, the host's wait
    (``host.step_term``) and the activation offload's copies left exposed."""
    t_est = est - hidden
    return t_est, t_est + ring_exposed + fsdp_exposed + host_exposed + offload_exposed


def step_s(m, t_mb, bubble, p2p, exposed, gather, opt, a2a_alone):
    """One optimizer step on the slowest stage: ``m`` micro-batches of ``t_mb``, the pipeline bubble and sends,
    the exposed gradient reduction, ZeRO-2's gather, the optimizer, and one micro-batch's all-to-alls that
    no other micro-batch hides."""
    return m * t_mb + bubble + p2p + exposed + gather + opt + a2a_alone


def _bottleneck(est, step: float, shares: dict, host_why: str = "") -> dict:
    """What binds the step; the host term's account joins the reason where it owns 5% of the step or more."""
    top = max(shares, key=shares.get)
    host = f"; {host_why}" if host_why and shares.get("host", 0.0) >= 0.05 * step else ""
    if top == "compute":
        b = est.bottleneck()
        return {"resource": b["resource"], "share": top, "why": f"per micro-batch: {b['why']}{host}"}
    res = "network" if top == "network" else ("latency" if top in ("pipeline bubble", "host") else "bandwidth")
    return {"resource": res, "share": top, "why": f"{top} owns {100 * shares[top] / step:.0f}% of the step{host}"}


REDUNDANT_NOTE = ("{e} experts in {e} + {r} slots, {per} per rank over EP {ep}: the slots share the load evenly and "
                  "hold the replicas' weights and optimizer state; the replicas' gradient reduction among themselves "
                  "is not timed")
NO_HOST_NOTE = ("{hw} names no host CPU ([host]): the host's kernel launches and device→host syncs of an eager "
                "framework are not timed, and a step they bind runs slower than this")


def training_graph(spec: str, hw, seq, dtype, opts: dict | None = None, micro_batch=None) -> Graph:
    """The training graph of one micro-batch (``micro_batch``, else ``opts["micro_batch"]``, else 1; an array
    gives one graph over every size); ``dtype`` fp8|mxfp8 builds it in bf16 and lowers its linear GEMMs
    (``ironlaw.models.precision``); ``opts["lora_rank"]`` fine-tunes it with LoRA adapters (``ironlaw.models.lora``)."""
    from .. import precision, workloads
    opts = opts or {}
    low = dtype if dtype is not None and precision.is_low(dtype) else None
    batch = opts.get("micro_batch", 1) if micro_batch is None else micro_batch
    graph = workloads.resolve(workloads.Request(spec, phase="train", batch=batch, seq=seq,
                                                dtype=precision.WIDE if low else dtype,
                                                device="cuda" if hw.kind == "gpu" else "cpu", options=opts))
    graph = precision.lower(graph, low, hw.features.get("fp8_any_layout", False)) if low else graph
    if opts.get("lora_rank") is not None or opts.get("lora_targets") is not None:    # LoRA (``lora``)
        from ..lora import adapt, targets
        graph = adapt(graph, opts.get("lora_rank"), targets(opts.get("lora_targets")))
    return graph


def lowered(g: Graph, hw) -> Graph:
    """``g`` as train_step runs it: a graph built in FP8/MXFP8 with its GEMMs lowered (``precision.lower``); NVFP4
    only where NVIDIA's recipe runs (``nvfp4.require``)."""
    from ..precision import is_low, lower
    if is_low(g.dtype):
        g = lower(g, g.dtype, hw.features.get("fp8_any_layout", False))
    if g.meta.get("precision") == nvfp4.DTYPE:
        nvfp4.require(hw)                                      # NVIDIA's NVFP4 recipe, where it runs
    return g


def no_host_note(hw_name: str, graphed: tuple) -> str:
    """``NO_HOST_NOTE``; with ``--cuda-graph`` parts, that they change nothing here: the launches they remove are
    the host's, which this step does not time."""
    return NO_HOST_NOTE.format(hw=hw_name) + (
        f"; so --cuda-graph {','.join(graphed)} changes nothing here (it removes host launches, which are not timed)"
        if graphed else "")


def exposed_after(total_s: float, hidden_s: float) -> float:
    """``total_s − hidden_s``, the collectives' seconds left on the path; 0 where the overlap hides them all (the
    difference of two equal sums is float round-off, ~1e-16 s, not time)."""
    left = total_s - hidden_s
    return 0.0 if left <= 1e-9 * total_s else left


def train_step(g: Graph, hw, plan: Plan, composition: str = "overlap") -> StepEstimate:
    """One optimizer step of ``g`` (a training graph of ONE micro-batch on one device) under ``plan``."""
    from ...machine.calibration import for_training
    if g.phase != "train":
        raise IronlawError(f"a training step needs --phase train (got '{g.phase}')")
    catalog, hw = hw, for_training(hw)                         # no serving-kernel tables in a training step
    g = lowered(g, hw)
    if plan.fp8_attention:                                     # priced from the catalog's attention classes
        g = fp8_attention.lower(g, catalog, plan.micro_batch)
    if plan.redundant_experts:
        g = Graph(g.name, g.phase, g.dtype, g.ops, footprint=dict(g.footprint), uncounted_ops=dict(g.uncounted_ops),
                  meta=dict(g.meta, expert_slots=g.meta["experts"] + plan.redundant_experts))
    peak = hw.peak(g.meta.get("precision", g.dtype))          # a dtype the device lacks is an error, first
    dispatcher.check_device(plan.moe_dispatcher if plan.ep > 1 else dispatcher.DEFAULT, hw)
    topo = build_topology(hw, plan.gpus, plan.nodes)
    grp = groups(plan, topo.gpus_per_node, plan.nodes)
    mem = plan_memory(g, plan, plan.zero, plan.recompute)
    check_fits(g, hw, plan, mem)
    notes = shared_network_notes(hw, plan, grp) + ([REDUNDANT_NOTE.format(
        e=g.meta["experts"], r=plan.redundant_experts, ep=plan.ep, per=g.meta["expert_slots"] // plan.ep)]
        if plan.redundant_experts else [])
    if "lora_rank" in g.meta:
        from ..lora import note
        notes.append(note(g.meta))
    if "layers" in g.meta and uneven(g.meta["layers"], plan.pp, plan.interleave):
        notes.append(uneven_note(g.meta["layers"], plan.pp * plan.interleave))
    stages, _ = stage_ops(g, plan)
    est, sg = _stage_estimates(g, hw, plan, stages, mem, grp, composition)
    rows = est.rows()
    if plan.fp8_attention:
        notes.append(fp8_attention.note(g.meta["fp8_attention"], catalog.name, rows, composition))
    ring_s, ring_exposed = cp_ring_exposed(sg, hw, plan, grp, rows)
    held = plan_shards(g, plan)
    fsdp_s, fsdp_exposed = fsdp_exposed_s(sg, hw, plan, grp, rows, held)
    hidden_tp = (tp_overlap_hidden_s(sg.ops, [r["time_s"] for r in rows]) if plan.tp_comm_overlap else 0.0) + \
        (ep_overlap_hidden_s(rows) if plan.moe_a2a_overlap else 0.0)
    host_t = host.step_term(sg, rows, hw, plan.tp, plan.sequence_parallel, plan.ep, plan.cuda_graph,
                            plan.moe_dispatcher)
    host_mb = host_t.exposed_s if host_t is not None else 0.0
    notes += [host_t.why()] if host_t is not None else [no_host_note(hw.name, plan.cuda_graph)]
    notes += dispatcher.notes(rows) + dispatcher.exchange_note(sg, hw, plan.moe_dispatcher)
    off_mb = _offload_s(g, hw, plan, rows, notes)
    t_est, t_mb = (float(x) for x in microbatch_s(float(est.time_s), hidden_tp, ring_exposed, fsdp_exposed, host_mb,
                                                   off_mb))
    m, v = plan.microbatches, plan.interleave
    net_mb = exposed_after(float(est.term("network_s")) + float(sum(r["latency_s"] for r in rows
                                                                     if r["kind"] == "collective")), hidden_tp)
    p2p_s = plan_pipeline_p2p_s(g, hw, plan, grp, t_mb)
    if p2p_s:
        notes.append("stage-to-stage send/recv (1/tp per rank, scatter/gather) " + (
            "overlapped with the next model chunk but for the warm-up and cool-down" if plan.overlap_p2p else
            "counted on the critical path (not overlapped)"))
    bubble = float(bubble_s(plan.pp, v, t_mb))
    dp_s, exposed, gather_s = dp_grad_sync(sg, hw, plan, grp, held, composition)
    opt_s = plan_optimizer_s(g, hw, mem.params_per_device, mem.optimizer_params, composition)
    a2a_alone = ep_overlap_hidden_s(rows) if plan.moe_a2a_overlap else 0.0     # one micro-batch has no partner
    step = float(step_s(m, t_mb, bubble, p2p_s, exposed, gather_s, opt_s, a2a_alone))
    flops = step_flops(g, plan)
    breakdown = StepBreakdown(
        step_s=step, microbatch_s=t_mb, microbatches=m, compute_and_tp_s=m * t_est,
        tp_ep_network_s=m * net_mb + a2a_alone, pipeline_bubble_s=bubble, pipeline_p2p_s=p2p_s,
        cp_ring_s=m * ring_s, cp_ring_exposed_s=m * ring_exposed, fsdp_comm_s=m * fsdp_s, fsdp_exposed_s=m * fsdp_exposed,
        dp_grad_comm_s=dp_s + m * fsdp_s * (plan.zero >= 3), dp_grad_exposed_s=exposed,
        zero_param_gather_s=gather_s + m * fsdp_exposed, optimizer_s=opt_s, host_exposed_s=m * host_mb,
        host_issue_s=m * (host_t.issue_s if host_t else 0.0), offload_exposed_s=m * off_mb)
    shares = {"compute": m * (t_est - net_mb),
              "network": m * (net_mb + ring_exposed + fsdp_exposed) + p2p_s + exposed + gather_s + a2a_alone,
              "pipeline bubble": bubble, "optimizer": opt_s, "host": m * host_mb}
    return StepEstimate(plan, est, breakdown, mem, flops, flops.model_per_step / (step * peak * plan.gpus),
                        _bottleneck(est, step, shares, host_t.why() if host_t else ""), topo.describe(), notes, peak)


def _offload_s(g: Graph, hw, plan: Plan, rows: list[dict], notes: list) -> float:
    """Exposed seconds per micro-batch of ``--offload-activations`` (``offload``), the host memory checked and a
    note added; 0 without it."""
    from ...core.units import fmt, fmt_size
    n = plan.offload_layers
    if not n:
        return 0.0
    tier = offload.host_tier(hw)
    L = g.meta["layers"]
    whole = plan_memory(g, replace(plan, offload_layers=0), plan.zero, plan.recompute).activations_bytes
    held = whole * offload.fraction(n, L, plan.pp)
    if held > tier.capacity_bytes:
        raise IronlawError(f"--offload-activations {n} puts {fmt_size(held)} of activations per device in "
                           f"{tier.name}, more than its {fmt_size(tier.capacity_bytes)}")
    per_layer = float(np.max(g.footprint.get("activations", 0.0))) / plan.cp / L * \
        (1.0 / plan.tp if plan.sequence_parallel else (1 - ACT_SPLIT_FRACTION) + ACT_SPLIT_FRACTION / plan.tp)
    fwd, bwd = compute_s_by_pass(rows)
    copied, exposed = offload.exposed_s(n, per_layer, fwd, bwd, L / plan.pp, tier.bw_Bps)
    notes.append(f"activations of {n} layers per stage offloaded to {tier.name}: {fmt_size(held)} per device, "
                 f"{fmt(copied, 's')} of copies per micro-batch at {fmt(tier.bw_Bps, 'B/s')}, "
                 f"{fmt(exposed, 's')} not hidden under the layers' compute")
    return exposed
