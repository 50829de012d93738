"""`ironlaw analyze SPEC --phase train --gpus N --tp … --pp … --dp …`: one training step on many devices."""
from __future__ import annotations


def _recomputed_layers(p) -> str:
    """`` (N layers per stage, block)`` where --recompute-layers N is given; per virtual stage with --interleave."""
    if p.recompute_layers is None:
        return ""
    return f" ({p.recompute_layers} layers per {'virtual ' if p.interleave > 1 else ''}stage, {p.recompute_method})"


def show_train_step(step, fmt: str, top: int) -> None:
    """Print a Training (``ironlaw.models.analysis``): its document, or its summary, parts and memory."""
    from ..core.units import fmt as f, fmt_num, fmt_size, fmt_time
    from ..law import power
    from ..models import run_cost
    from .common import console, emit_json, emit_lines

    graph, hw, plan = step.graph, step.hw, step.plan
    if fmt == "json":
        emit_json(step.to_dict())
        return
    b, p = step.breakdown, plan
    precision = graph.meta.get("precision", graph.dtype)
    lines = [f"{graph.name} · train · {precision}{' GEMMs, bf16 elsewhere' if precision != graph.dtype else ''} · "
             f"{step.topology}",
             f"plan: tp {p.tp} × pp {p.pp}{f' (interleave {p.interleave})' if p.interleave > 1 else ''}"
             f"{f' × cp {p.cp}' if p.cp > 1 else ''} × dp {p.dp}"
             f"{f' (ep {p.ep}, {p.moe_dispatcher} dispatcher)' if p.ep > 1 else ''}; "
             f"global batch {p.global_batch} = {b.microbatches} micro-batch{'es' if b.microbatches != 1 else ''} "
             f"of {p.micro_batch} × dp; recompute {p.recompute}{_recomputed_layers(p)}; "
             f"ZeRO {p.zero}{' (FSDP)' if p.zero == 3 else ''}"
             f"{'; sequence parallel' if p.sequence_parallel else ''}{'; FP8 attention' if p.fp8_attention else ''}"
             f"{'; CUDA graphs: ' + ', '.join(p.cuda_graph) if p.cuda_graph else ''}"
             f"{f'; hottest expert {p.expert_imbalance:g}× the mean' if p.expert_imbalance > 1 else ''}",
             f"step: {fmt_time(step.step_s)} — {step.bottleneck['resource']}-bound ({step.bottleneck['why']})",
             f"throughput: {fmt_num(step.tokens_per_s_per_gpu)} tokens/s per device",
             f"MFU {100 * step.mfu:.1f}% = model {f(step.flops.model_per_step, 'FLOP')} / (step × "
             f"{f(step.peak_flops, 'FLOP/s')} × {p.gpus}); hardware {f(step.flops.hardware_per_step, 'FLOP')}",
             power.line(step.energy, hw.name)] + run_cost.text(step.run)
    emit_lines(lines, fmt)
    rows = [("micro-batches × (forward + backward, TP collectives)", b.compute_and_tp_s),
            ("  of which TP/EP collectives", b.tp_ep_network_s), ("pipeline bubble", b.pipeline_bubble_s),
            ("pipeline send/recv", b.pipeline_p2p_s),
            ("context-parallel K/V ring (total)", b.cp_ring_s), ("  exposed after overlap with attention",
                                                                    b.cp_ring_exposed_s),
            ("DP gradient reduction (total)", b.dp_grad_comm_s),
            ("  exposed after overlap with the backward", b.dp_grad_exposed_s),
            ("ZeRO/FSDP parameter gathers (exposed)", b.zero_param_gather_s), ("optimizer step", b.optimizer_s),
            ("host: kernel launches and syncs (exposed)", b.host_exposed_s),
            ("step", b.step_s)]
    mem = step.memory.to_dict()
    mrows = [(k, mem[k]) for k in ("weights", "gradients", "optimizer", "activations", "total_bytes")]
    if fmt == "md":
        print("\n| part | time |\n|---|---|\n" + "\n".join(f"| {k} | {fmt_time(v)} |" for k, v in rows))
        print("\n| memory per device | bytes |\n|---|---|\n" + "\n".join(f"| {k} | {fmt_size(v)} |" for k, v in mrows))
        print("".join(f"\nnote: {n}\n" for n in step.notes), end="")
    else:
        from rich.table import Table
        c = console()
        t = Table(title="one training step")
        t.add_column("part")
        t.add_column("time", justify="right")
        for k, v in rows:
            t.add_row(k, fmt_time(v))
        c.print(t)
        t = Table(title="memory per device")
        t.add_column("class")
        t.add_column("bytes", justify="right", no_wrap=True)
        for k, v in mrows:
            t.add_row(k.replace("total_bytes", "total"), fmt_size(v))
        t.add_row(f"of {hw.memory[hw.device_tier].name}", fmt_size(hw.memory[hw.device_tier].capacity_bytes))
        c.print(t)
        for n in step.notes:
            c.print(f"note: {n}", markup=False)
        c.print(microbatch_line(step), markup=False)
        from ..report.text import render
        render(step.per_microbatch, top=top, console=c)


def microbatch_line(step) -> str:
    """What the per-micro-batch estimate printed after the step's tables is to the step's first row: the law's
    time op by op, and what the step counts for it once TP/EP overlap hides collectives under their GEMMs."""
    from ..core.units import fmt_time
    b, law_s = step.breakdown, float(step.per_microbatch.time_s)
    counted = b.compute_and_tp_s / b.microbatches
    hidden = law_s - counted
    return (f"one micro-batch on the slowest stage, below: {fmt_time(law_s)} by the law, op by op; the step counts "
            f"{fmt_time(counted)} for each of its {b.microbatches:,}"
            + (f" ({fmt_time(hidden)} of TP/EP collectives hidden under their GEMMs)" if hidden > 1e-9 * law_s
               else ""))
