"""The HTML report of ``ironlaw analyze --phase train --html FILE`` with parallel options: one training step
(``models.parallel.StepEstimate``; ``doc`` its JSON document as ``--format json`` prints it).

Sections: ``summary`` (step, tokens/s per GPU, MFU, what binds), ``plan``, ``timeline`` (the step laid end to
end: the micro-batches' kernels, their per-op latency, the collectives left on the critical path, the pipeline
bubble, the optimizer), ``collectives`` (each collective's total time against what is left exposed),
``memory`` (per device against its memory), then one micro-batch of the slowest stage as the analyze report
shows an estimate (``terms``, ``roofline``, ``by-kind``, ``top-ops``), ``notes`` and ``sources``.
"""
from __future__ import annotations

from ..core.units import counted, fmt, fmt_size, fmt_time
from . import html, svg

_e = html.esc
# (label, colour, what it is)
SEGMENTS = (("kernels", "#d9480f", "the micro-batches' forward and backward kernels (data and compute terms)"),
            ("per-op latency", "#7048e8", "L_lat of every kernel of the micro-batches: launch and host time"),
            ("TP/EP collectives", "#2b8a3e", "tensor- and expert-parallel collectives on the critical path"),
            ("CP ring, exposed", "#0c8599", "the context-parallel K/V ring not hidden behind attention"),
            ("pipeline bubble", "#adb5bd", "(pp − 1) / interleave micro-batches of idle stages"),
            ("pipeline send/recv", "#5f3dc4", "stage-to-stage activations on the critical path"),
            ("DP gradients, exposed", "#1c7ed6", "the gradient reduction not hidden behind the backward"),
            ("ZeRO/FSDP gathers, exposed", "#e64980", "parameter all-gathers not hidden"),
            ("optimizer", "#f59f00", "the optimizer step"))


def timeline(step) -> list[dict]:
    """The step's time laid end to end, in SEGMENTS' order: [{"part", "seconds", "what"}]; the parts sum to
    the step. Read from ``step.breakdown`` and the micro-batch estimate's per-op latency."""
    b = step.breakdown
    m = b.microbatches
    listed = (b.compute_and_tp_s + b.cp_ring_exposed_s + b.pipeline_bubble_s + b.pipeline_p2p_s
              + b.dp_grad_exposed_s + b.zero_param_gather_s + b.optimizer_s)
    a2a_alone = max(b.step_s - listed, 0.0)          # the one micro-batch's all-to-all without a partner
    busy = b.compute_and_tp_s - b.tp_ep_network_s + a2a_alone
    lat = m * sum(r["latency_s"] for r in step.per_microbatch.rows() if r["kind"] != "collective")
    secs = (max(busy - lat, 0.0), min(lat, busy), b.tp_ep_network_s, b.cp_ring_exposed_s,
            b.pipeline_bubble_s, b.pipeline_p2p_s, b.dp_grad_exposed_s, b.zero_param_gather_s,
            b.optimizer_s)
    return [{"part": label, "seconds": float(s), "what": what} for (label, _, what), s in zip(SEGMENTS, secs)]


def _summary(doc: dict) -> str:
    b = doc["bottleneck"]
    rows = [("step", "step_s", doc["step_s"], fmt_time(doc["step_s"]), "s"),
            ("tokens/s per GPU", "tokens_per_s_per_gpu", doc["tokens_per_s_per_gpu"],
             html.rate(doc["tokens_per_s_per_gpu"]), "1"),
            ("MFU", "mfu", doc["mfu"], f"{100 * doc['mfu']:.1f}%", "%"),
            ("tokens per step", "flops.tokens_per_step", doc["flops"]["tokens_per_step"],
             f"{doc['flops']['tokens_per_step']:,.0f}", "1"),
            ("model FLOPs per step", "flops.model_per_step", doc["flops"]["model_per_step"],
             fmt(doc["flops"]["model_per_step"], "FLOP"), "FLOP"),
            ("memory per device", "memory_per_device.total_bytes", doc["memory_per_device"]["total_bytes"],
             fmt_size(doc["memory_per_device"]["total_bytes"]), "B")]
    body = [f'<tr><td class="l">{_e(a)}</td>{html.key("step." + p, v, t, u)}</tr>' for a, p, v, t, u in rows]
    return (f'<section id="summary"><h2>One training step</h2><p class="headline">{_e(fmt_time(doc["step_s"]))} per '
            f'step · {_e(html.rate(doc["tokens_per_s_per_gpu"]))} tokens/s per GPU · MFU {100 * doc["mfu"]:.1f}%</p>'
            f'<p class="why">{html.badge(b["resource"])} <b>Why:</b> {_e(b["why"])}</p>'
            + html.table(["", "value"], body, tid="key-table", left=(0,))
            + f'<p class="note">MFU: {_e(doc["mfu_convention"])}.</p></section>')


def _plan(doc: dict) -> str:
    p = doc["plan"]
    rows = [f'<tr><td class="l">{_e(k.replace("_", " "))}</td><td class="l">{_e(v)}</td></tr>' for k, v in p.items()]
    return (f'<section id="plan"><h2>Layout</h2><p>{_e(doc["topology"])}</p>'
            + html.table(["setting", "value"], rows, tid="plan-table", left=(0, 1)) + "</section>")


def _timeline(parts: list[dict], step_s: float) -> str:
    colours = {label: c for label, c, _ in SEGMENTS}
    bar = svg.share_bar([(p["part"], p["seconds"], colours[p["part"]], f'{p["part"]}: {fmt_time(p["seconds"])}')
                         for p in parts], sid="timeline-bar")
    rows = [f'<tr><td class="l"><i style="display:inline-block;width:10px;height:10px;background:'
            f'{colours[p["part"]]}"></i> {_e(p["part"])}</td><td class="l">{_e(p["what"])}</td>'
            + html.key(f"timeline.{i}.seconds", p["seconds"], fmt_time(p["seconds"]), "s")
            + f'<td>{100 * p["seconds"] / step_s:.1f}%</td></tr>' for i, p in enumerate(parts)]
    rows.append(f'<tr><td class="l"><b>step</b></td><td></td>{html.key("step.step_s", step_s, fmt_time(step_s), "s")}'
                f'<td>100%</td></tr>')
    return ('<section id="timeline"><h2>The step\'s timeline</h2><p class="note">The step laid end to end, in '
            'the order a device lives it: the micro-batches (kernels, their per-op latency, the collectives they '
            'wait for), the pipeline\'s idle stages, then what follows the last backward. Host time beyond the '
            'per-op latency is not modelled.</p>' + bar
            + html.table(["part", "what", "time", "share"], rows, tid="timeline-table", left=(0, 1)) + "</section>")


def _collectives(b: dict) -> str:
    pairs = (("TP/EP collectives", "tp_ep_network_s", "tp_ep_network_s"),
             ("context-parallel K/V ring", "cp_ring_s", "cp_ring_exposed_s"),
             ("FSDP gathers inside the micro-batches", "fsdp_comm_s", "fsdp_exposed_s"),
             ("DP gradient reduction", "dp_grad_comm_s", "dp_grad_exposed_s"),
             ("pipeline send/recv", "pipeline_p2p_s", "pipeline_p2p_s"))
    rows = [f'<tr><td class="l">{_e(label)}</td>{html.key(f"step.breakdown.{t}", b[t], fmt_time(b[t]), "s")}'
            f'{html.key(f"step.breakdown.{x}", b[x], fmt_time(b[x]), "s")}'
            f'<td>{"—" if b[t] <= 0 else f"{100 * (1 - b[x] / b[t]):.0f}%"}</td></tr>'
            for label, t, x in pairs if b[t] > 0 or b[x] > 0]
    if not rows:
        return ""
    return ('<section id="collectives"><h2>Collectives: total and exposed</h2>'
            + html.table(["collective", "total", "on the critical path", "hidden"], rows, tid="collectives-table",
                          left=(0,)) + "</section>")


def _memory(doc: dict, hw) -> str:
    mem = doc["memory_per_device"]
    t = hw.memory[hw.device_tier]
    holds = {k: mem[k] for k in ("weights", "gradients", "optimizer", "activations") if mem.get(k, 0) > 0}
    legend = "".join(f'<span><i style="background:{svg.CLASS_COLOURS.get(k, "#868e96")}"></i>{_e(k)} '
                     f'{_e(fmt_size(v))}</span>' for k, v in holds.items())
    return (f'<section id="memory"><h2>Memory per device</h2><p>{_e(fmt_size(mem["total_bytes"]))} of '
            f'{_e(t.name)}\'s {_e(fmt_size(t.capacity_bytes))} ({100 * mem["total_bytes"] / t.capacity_bytes:.0f}%)</p>'
            + svg.capacity_bar({"name": t.name, "capacity_bytes": t.capacity_bytes, "holds": holds}, width=860)
            + f'<p class="legend">{legend}</p></section>')


ENERGY = (("joules_per_token", "energy per token (J)"), ("power_w_per_device", "mean power per device (W)"),
          ("utilization", "utilization of the binding resource"), ("usd_per_million_tokens", "USD per million tokens"),
          ("gco2_per_million_tokens", "gCO2 per million tokens"))
RUN = (("tokens", "tokens"), ("steps", "steps"), ("wall_days", "wall time (days)"), ("gpu_hours", "GPU-hours"),
       ("energy_mwh", "energy (MWh)"), ("usd", "cost (USD)"), ("tco2", "carbon (tonnes CO2)"))


def _numbers(doc: dict, key: str, fields, title: str) -> str:
    """The numbers of ``doc[key]`` (the step's energy, the whole run) that are there, with their sources."""
    part = doc.get(key)
    if not isinstance(part, dict):
        return ""
    rows = []
    for k, label in fields:
        v = part.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            pct = k == "utilization"
            text = f"{100 * v:.1f}%" if pct else html.rate(v)
            rows.append(f'<tr><td class="l">{_e(label)}</td>{html.key(f"step.{key}.{k}", v, text, "%" if pct else "1")}'
                        f'</tr>')
    src = " ".join(f"{_e(part[k])}." for k in ("price_source", "grid_source", "energy_scope") if part.get(k))
    return (f'<section id="{key}"><h2>{_e(title)}</h2>' + html.table(["", "value"], rows, tid=f"{key}-table",
                                                                        left=(0,))
            + (f'<p class="note">{src}</p>' if src else "") + "</section>")


def render(step, doc: dict, hw, top: int = 30) -> str:
    """The page of one training step (module docstring)."""
    parts_t = timeline(step)
    est = step.per_microbatch
    notes = "".join(f"<li>{_e(n)}</li>" for n in doc.get("notes") or ())
    parts = [_summary(doc), _plan(doc), _timeline(parts_t, doc["step_s"]), _collectives(doc["breakdown"]),
             _memory(doc, hw), _numbers(doc, "energy", ENERGY, "Energy, cost and carbon of a step"),
             _numbers(doc, "run", RUN, "The whole training run"),
             '<section id="microbatch"><h2>One micro-batch of the slowest stage</h2><p class="note">Forward and '
             'backward of one micro-batch on one device, as <code>ironlaw analyze</code> reports an estimate: the '
             f'step runs {doc["breakdown"]["microbatches"]} of them per pipeline stage.</p></section>',
             html.terms(est), html.roofline(est, "Roofline: one micro-batch"), html.by_kind(est),
             html.top_ops(est, top)]
    parts = [p for p in parts if p]
    if notes:
        parts.append(f'<section id="notes"><h2>Notes</h2><ul>{notes}</ul></section>')
    parts.append(html.hardware_sources(hw))
    p = doc["plan"]
    name = est.graph.meta.get("spec", est.graph.name)
    sub = (f"train · {_e(est.graph.meta.get('precision', est.graph.dtype))} · {counted(p['gpus'], 'GPU')}: tp {p['tp']} × pp "
           f"{p['pp']} × cp {p['cp']} × dp {p['dp']}, global batch {p['global_batch']}")
    return html.document(f"ironlaw · training {name} on {hw.name}", f"Training {name} on {p['gpus']} × {hw.title}",
                         sub, parts, data={"schema": "ironlaw.train-report/1", "step": doc, "timeline": parts_t},
                         nav=True)
