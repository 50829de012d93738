"""The HTML report of ``ironlaw serve --html FILE``: one self-contained page per serving estimate.

    online(est, doc, frontier_doc)    the online estimate (``serving.online.ServeEstimate``; ``doc`` its JSON
                                      document as ``serve --format json`` prints it): key numbers with what
                                      the TTFT and ITL add up from (``ttft_why``, ``itl_why``), KV capacity,
                                      energy, the prefill and decode steps (Iron Law terms per op kind), the
                                      roofline of each, the concurrency frontier, the hardware's sources
    offline(est, doc, frontier_doc)   the max-throughput run (``serving.throughput.ThroughputEstimate``): key
                                      numbers, memory per GPU, each kind of engine step with its terms and
                                      roofline, the frontier over the engine's max batch size, the constants

Section ids: ``summary``, ``capacity``/``memory``, ``energy``, ``step-…``, ``roofline-…``, ``frontier``,
``sources``; every key number carries its place in the embedded JSON document (``html.key``).
"""
from __future__ import annotations

from ..core.units import counted, fmt, fmt_num, fmt_size, fmt_time
from . import html, svg
from .frontier import section as frontier_section

_e = html.esc
MEMORY_COLOURS = {"weights": svg.CLASS_COLOURS["weights"], "reserve": "#868e96", "workspace": "#f59f00",
                  "KV in use": svg.CLASS_COLOURS["kv_cache"], "KV free": "#d0bfff", "not used": "#e9ecef"}


def _key_table(rows: list[tuple[str, str, float, str, str]], tid: str) -> str:
    """rows: (label, path in the estimate's JSON document, value, text, unit)."""
    body = [f'<tr><td class="l">{_e(label)}</td>{html.key("estimate." + path, v, text, unit)}</tr>'
            for label, path, v, text, unit in rows]
    return html.table(["", "value"], body, tid=tid, left=(0,))


def _memory_bar(parts: list[tuple[str, float]], total: float, sid: str) -> str:
    shown = [(n, b, MEMORY_COLOURS.get(n, "#495057"), f"{n}: {fmt_size(b)} ({100 * b / total:.1f}%)")
             for n, b in parts if b > 0]
    legend = "".join(f'<span><i style="background:{c}"></i>{_e(t)}</span>' for _, _, c, t in shown)
    return svg.share_bar(shown, sid=sid) + f'<p class="legend">{legend}</p>'


def step_section(est, sid: str, title: str, note: str = "") -> str:
    """One engine step (an Estimate): time, what binds it and why, the terms as a bar, the terms per op kind."""
    b = est.bottleneck()
    terms = [(label, float(est.term(k)), svg.TERM_COLOURS[k], f"{label}: {fmt_time(float(est.term(k)))}")
             for k, label, _ in html.TERMS]
    return (f'<section id="{sid}"><h2>{_e(title)}</h2><p>{_e(fmt_time(float(est.time_s)))} by the law, '
            f'{html.badge(b["resource"])} <b>why:</b> {_e(b["why"])}</p>'
            + (f'<p class="note">{_e(note)}</p>' if note else "")
            + svg.share_bar(terms, sid=f"{sid}-terms")
            + '<p class="legend">' + "".join(f'<span><i style="background:{c}"></i>{_e(t)}</span>'
                                             for _, v, c, t in terms if v > 0) + "</p>"
            + html.kind_table(est, tid=f"{sid}-kinds") + "</section>")


def roofline_section(est, name: str, title: str) -> str:
    """``html.roofline`` of one step, its ids suffixed with ``name`` so that several share the page."""
    return svg.suffix_ids(html.roofline(est, title), f"-{name}")


def energy_section(e: dict | None, path: str) -> str:
    """The energy, cost and carbon table of a serve page, its numbers printed as the text prints them."""
    if not e:
        return ""
    rows = [("energy per output token", f"{path}.joules_per_output_token", e["joules_per_output_token"],
             f"{fmt_num(e['joules_per_output_token'])} J", "1"),
            ("mean power per device", f"{path}.mean_power_w_per_device", e["mean_power_w_per_device"],
             f"{e['mean_power_w_per_device']:.0f} W", "1"),
            ("gCO2 per million output tokens", f"{path}.gco2_per_million_output_tokens",
             e["gco2_per_million_output_tokens"], fmt_num(e["gco2_per_million_output_tokens"]), "1")]
    if e.get("usd_per_million_output_tokens") is not None:
        rows.insert(2, ("USD per million output tokens", f"{path}.usd_per_million_output_tokens",
                        e["usd_per_million_output_tokens"], f"${fmt_num(e['usd_per_million_output_tokens'])}", "1"))
    src = e.get("price_source") or ""
    return ('<section id="energy"><h2>Energy, cost and carbon</h2>' + _key_table(rows, "energy-table")
            + (f'<p class="note">{_e(src)}</p>' if src else "") + "</section>")


def _step_model(sm: dict | None) -> str:
    """The line naming what priced the steps (``serving.online.step_model``)."""
    return "" if sm is None else f'<p class="note">Steps: the {_e(sm["name"])} step model ({_e(sm["rule"])}).</p>'


def _replay(sm: dict | None) -> str:
    if sm is not None and sm["name"] == "engine":
        return ("The step replays as one CUDA graph padded to the next captured batch size; the engine's fixed "
                "cost per step is added to the law's time.")
    return ("The step replays as one captured graph, so the per-op launch latency is paid once per step, outside "
            "the terms.")


def key_rows(doc: dict, tp: int) -> list[tuple]:
    """The key numbers of an online estimate's document, on ``tp`` devices: tokens/s labelled as theirs together
    and per device, as the text says them."""
    return [("time to first token (TTFT)", "ttft_s", doc["ttft_s"], fmt_time(doc["ttft_s"]), "s"),
            ("inter-token latency (ITL)", "itl_s", doc["itl_s"], fmt_time(doc["itl_s"]), "s"),
            (f"output tokens/s{f' (all {tp} devices)' if tp > 1 else ''}", "tokens_per_s", doc["tokens_per_s"],
             html.rate(doc["tokens_per_s"]), "1"),
            *([("output tokens/s per device", "tokens_per_s_per_device", doc["tokens_per_s_per_device"],
                html.rate(doc["tokens_per_s_per_device"]), "1")] if tp > 1 else []),
            ("tokens/s per sequence", "tokens_per_s_per_sequence", doc["tokens_per_s_per_sequence"],
             html.rate(doc["tokens_per_s_per_sequence"]), "1"),
            ("request latency", "request_latency_s", doc["request_latency_s"], fmt_time(doc["request_latency_s"]), "s"),
            ("decode step", "decode_step_s", doc["decode_step_s"], fmt_time(doc["decode_step_s"]), "s"),
            ("prefill of one prompt", "prefill_s", doc["prefill_s"], fmt_time(doc["prefill_s"]), "s")]


def host_note(doc: dict, step: str) -> str:
    """Where the host's work outlasts the device's (``serving.step.HostStep``), the step's time is the host's:
    said beside the law's device time, as the text output says it."""
    h = doc.get(f"{step}_host")
    if not h or h["host_s"] <= h["device_s"]:
        return ""
    return f"The step takes {fmt_time(doc[f'{step}_s'])}, host-bound: {h['why']}."


def online(est, doc: dict, frontier_doc: dict | None) -> str:
    """The page of an online serving estimate (module docstring)."""
    cap = doc["capacity"]
    tp = est.decode.graph.meta.get("tp", 1)
    keys = key_rows(doc, tp)
    b = doc["decode_bottleneck"]
    summary = (f'<section id="summary"><h2>Key numbers</h2><p class="headline">TTFT {_e(fmt_time(doc["ttft_s"]))} · '
               f'ITL {_e(fmt_time(doc["itl_s"]))} · {_e(html.rate(doc["tokens_per_s"]))} tokens/s</p>'
               f'<p class="why"><b>TTFT:</b> {_e(doc["ttft_why"])}</p><p class="why"><b>ITL:</b> {_e(doc["itl_why"])}</p>'
               f'<p class="why">{html.badge(b["resource"])} <b>Decode binds:</b> {_e(b["why"])}</p>'
               + _step_model(doc.get("step_model")) + _key_table(keys, "key-table") + "</section>")
    c = doc["concurrency"] * cap["tokens_reserved_per_sequence"] * cap["kv_bytes_per_token"]
    kv_free = cap["kv_budget_bytes"] - c
    capacity = ('<section id="capacity"><h2>KV-cache capacity per device</h2>'
                + _memory_bar([("weights", cap["weights_bytes"]), ("reserve", cap["reserve_bytes"]), ("KV in use", c),
                               ("KV free", kv_free)], cap["device_memory_bytes"], "capacity-bar")
                + _key_table([
                    ("device memory", "capacity.device_memory_bytes", cap["device_memory_bytes"],
                     fmt_size(cap["device_memory_bytes"]), "B"),
                    ("weights", "capacity.weights_bytes", cap["weights_bytes"], fmt_size(cap["weights_bytes"]), "B"),
                    ("runtime reserve", "capacity.reserve_bytes", cap["reserve_bytes"], fmt_size(cap["reserve_bytes"]), "B"),
                    ("KV budget", "capacity.kv_budget_bytes", cap["kv_budget_bytes"], fmt_size(cap["kv_budget_bytes"]), "B"),
                    (f"KV per token ({doc['kv_dtype']})", "capacity.kv_bytes_per_token", cap["kv_bytes_per_token"],
                     fmt_size(cap["kv_bytes_per_token"]), "B"),
                    ("sequences that fit", "capacity.max_concurrency", cap["max_concurrency"],
                     f"{cap['max_concurrency']:,}", "1")], "capacity-table")
                + f'<p class="note">Reserve: {_e(cap["reserve_source"])}. Each sequence holds '
                  f'{cap["tokens_reserved_per_sequence"]:,} tokens{" (paged)" if cap["paged"] else ""}.</p></section>')
    chunk = f", chunked prefill {doc['chunked_prefill_tokens']}" if doc.get("chunked_prefill_tokens") else ""
    parts = [summary, capacity, energy_section(doc.get("energy"), "energy"),
             step_section(est.decode, "step-decode", f"Decode step: {counted(doc['concurrency'], 'sequence')} at the mean context",
                          "One step of continuous batching: every sequence in flight adds one token, its context "
                          f"averaging prompt + output/2 = {doc['prompt_tokens'] + doc['output_tokens'] / 2:g} tokens. "
                          + _replay(doc.get("step_model"))),
             step_section(est.prefill, "step-prefill", f"Prefill step: one prompt of {doc['prompt_tokens']:,} tokens",
                          host_note(doc, "prefill")),
             roofline_section(est.decode, "decode", "Roofline: the decode step"),
             roofline_section(est.prefill, "prefill", "Roofline: the prefill step")]
    if frontier_doc is not None:
        parts.append(frontier_section(frontier_doc) + _goodput(frontier_doc))
    parts.append(html.hardware_sources(est.hw))
    sub = (f"serve · prompt {doc['prompt_tokens']:,}, output {doc['output_tokens']:,}, concurrency "
           f"{doc['concurrency']:,} · {doc['dtype']}, KV {doc['kv_dtype']}{chunk}{f' · tensor parallel {tp}' if tp > 1 else ''}")
    return html.document(f"ironlaw · serving {doc['workload']} on {doc['hardware']}",
                         f"Serving {doc['workload']} on {est.hw.title}", _e(sub), [p for p in parts if p],
                         data={"schema": "ironlaw.serve-report/1", "estimate": doc, "frontier": frontier_doc}, nav=True)


def _goodput(fdoc: dict) -> str:
    g = fdoc.get("goodput")
    if not g:
        return ""
    if not g["met"]:
        return f'<p class="bad" id="goodput">Goodput: {_e(g["why"])}</p>'
    return (f'<p id="goodput">Goodput: concurrency {g["concurrency"]:,} is the most that meets the SLO '
            f'({g["requests_per_s"]:.3g} requests/s); beyond it {_e(g["limited_by"])} binds.</p>')


def offline(est, doc: dict, frontier_doc: dict | None) -> str:
    """The page of an offline max-throughput run (module docstring)."""
    m, s = doc["memory_per_gpu"], doc["steady_state"]
    keys = [("output tokens/s (system)", "output_tokens_per_s", doc["output_tokens_per_s"],
             html.rate(doc["output_tokens_per_s"]), "1"),
            ("output tokens/s per GPU", "output_tokens_per_s_per_gpu", doc["output_tokens_per_s_per_gpu"],
             html.rate(doc["output_tokens_per_s_per_gpu"]), "1"),
            ("requests/s", "requests_per_s", doc["requests_per_s"], html.rate(doc["requests_per_s"]), "1"),
            ("time for all requests", "time_s", doc["time_s"], fmt_time(doc["time_s"]), "s"),
            ("sequences in flight", "batch", doc["batch"], f"{doc['batch']:,}", "1"),
            ("mean step", "steady_state.step_s", s["step_s"], fmt_time(s["step_s"]), "s"),
            ("host work per step", "steady_state.host_s", s["host_s"], fmt_time(s["host_s"]), "s"),
            ("steps carrying a prompt", "steady_state.mixed_step_share", s["mixed_step_share"],
             f"{100 * s['mixed_step_share']:.0f}%", "%")]
    b = doc["step_bottleneck"]
    summary = (f'<section id="summary"><h2>Key numbers</h2><p class="headline">{_e(html.rate(doc["output_tokens_per_s"]))} '
               f'output tokens/s · {_e(html.rate(doc["output_tokens_per_s_per_gpu"]))} per GPU</p>'
               f'<p class="why">{html.badge(b["resource"])} <b>Steps bind:</b> {_e(b["why"])}</p>'
               f'<p class="note">The batch is set by {_e(doc["batch_limit"].replace("_", " "))}; engine limits: max '
               f'batch {doc["engine"]["max_batch_size"]:,}, max tokens per step {doc["engine"]["max_num_tokens"]:,} '
               f'({_e(doc["engine"]["source"])}).</p>' + _key_table(keys, "key-table") + "</section>")
    used = m["weights_bytes"] + m["workspace_bytes"] + m["reserve_bytes"] + m["kv_budget_bytes"]
    memory = ('<section id="memory"><h2>Memory per GPU</h2>'
              + _memory_bar([("weights", m["weights_bytes"]), ("workspace", m["workspace_bytes"]),
                             ("reserve", m["reserve_bytes"]), ("KV in use", m["kv_budget_bytes"]),
                             ("not used", m["device_memory_bytes"] - used)], m["device_memory_bytes"], "memory-bar")
              + _key_table([(k.replace("_bytes", "").replace("_", " "), f"memory_per_gpu.{k}", m[k], fmt_size(m[k]), "B")
                            for k in ("device_memory_bytes", "weights_bytes", "workspace_bytes", "kv_budget_bytes",
                                      "kv_bytes_per_token")], "memory-table") + "</section>")
    parts = [summary, memory, energy_section(doc.get("energy"), "energy"), _steps_table(est)]
    for i, (n, e) in enumerate(_distinct_steps(est), 1):
        host = e.graph.meta.get("host")
        how = ("piecewise CUDA graphs around attention" if getattr(host, "piecewise", False) else
               "eager" if e.graph.meta.get("eager") else "a replayed CUDA graph")
        parts.append(step_section(e, f"step-{i}", f"Step kind {i}: {e.graph.name}",
                                  f"{n:,.0f} such steps in the run ({how})."))
        parts.append(roofline_section(e, f"step-{i}", f"Roofline: step kind {i}"))
    if frontier_doc is not None:
        parts.append(frontier_section(frontier_doc))
    parts += [_constants(doc), html.hardware_sources(est.hw)]
    lay = est.layout
    par = ", ".join(p for p in (f"TP {lay.tp}" if lay.tp > 1 else "", f"PP {lay.pp}" if lay.pp > 1 else "",
                                f"EP {lay.ep}" if lay.ep > 1 else "", "attention DP" if lay.attention_dp else "") if p)
    sub = (f"serve · max throughput · {doc['requests']:,} requests of {doc['prompt_tokens']:,} + "
           f"{doc['output_tokens']:,} tokens · {doc['dtype']}, KV {doc['kv_dtype']} · {doc['gpus']} GPU(s)"
           f"{f' ({par})' if par else ''}")
    return html.document(f"ironlaw · max throughput of {doc['workload']} on {doc['hardware']}",
                         f"Max throughput: {doc['workload']} on {est.hw.title}", _e(sub), [p for p in parts if p],
                         data={"schema": "ironlaw.serve-report/1", "estimate": doc, "frontier": frontier_doc}, nav=True)


def _distinct_steps(est) -> list[tuple[float, object]]:
    """The run's step kinds [(steps, Estimate)], the same graph (name) merged, most time first."""
    out: dict[str, list] = {}
    for n, e in est.steps:
        k = e.graph.name
        if k in out:
            out[k][0] += n
        else:
            out[k] = [n, e]
    return sorted(((n, e) for n, e in out.values()), key=lambda ne: -ne[0] * float(ne[1].time_s))


def _steps_table(est) -> str:
    rows = []
    total = sum(n * float(e.time_s) for n, e in est.steps) or 1.0
    for i, (n, e) in enumerate(_distinct_steps(est), 1):
        t = float(e.time_s)
        rows.append(f'<tr><td class="l"><a href="#step-{i}">{i}</a></td><td class="l">{_e(e.graph.name)}</td>'
                    f'{html.num(n, f"{n:,.0f}")}{html.num(t, fmt_time(t))}{html.num(n * t, fmt_time(n * t))}'
                    f'<td>{100 * n * t / total:.1f}%</td><td class="l">{html.badge(e.bottleneck()["resource"])}</td></tr>')
    return ('<section id="steps"><h2>The run\'s engine steps</h2><p class="note">Time by the law per step; the run '
            'adds a fixed runtime cost per step, and a step lasts at least the host\'s work for it (an eager step\'s '
            'kernel launches, the executor\'s work per step and per request on the host CPU: the overlap '
            'scheduler; the constants below), so the steps\' law time is less than the run\'s time.</p>'
            + html.table(["kind", "step", "steps", "law time per step", "law time, all", "share", "binds"], rows,
                          tid="steps-table", left=(0, 1, 6)) + "</section>")


def _constants(doc: dict) -> str:
    c = dict(doc.get("constants") or {})
    src = c.pop("source", "")
    rows = [f'<tr><td class="l">{_e(k)}</td><td>{_e(f"{v:.4g}" if isinstance(v, float) else v)}</td></tr>'
            for k, v in c.items()]
    notes = "".join(f'<p class="note">note: {_e(n)}</p>' for n in doc.get("notes") or ())
    return ('<section id="constants"><h2>Serving constants and notes</h2>'
            + html.table(["constant", "value"], rows, tid="constants-table", left=(0,))
            + f'<p class="note">{_e(src)}</p>{notes}</section>')
