"""The HTML report of ``ironlaw search --html FILE``: the ranked layouts and why the best wins.

``render(doc)`` takes the search's JSON document (``SearchResult.to_dict()``, as ``search --format json``
prints it). Sections: ``summary``, ``setup``, ``ranked`` (a sortable table and tokens/s per GPU as bars, with a
legend of the layout's letters), ``why`` (the best against the runner-up: what differs in the layout, the
numbers side by side, and for training each part of the step).
"""
from __future__ import annotations

from ..core.units import fmt, fmt_time
from . import html, svg

_e = html.esc
LEGEND = (("tp", "tensor parallel (sp: with sequence parallelism)"), ("pp", "pipeline stages (/v: interleaved "
          "virtual stages)"), ("cp", "context parallel"), ("dp", "data parallel"),
          ("ep", "expert parallel"), ("adp", "attention data parallel"),
          ("mb", "micro-batch"), ("rc", "activation recomputation: none (-), selective, full"),
          ("z", "ZeRO stage (3 = FSDP)"), ("×N", "sequences in flight"))
BUDGET = (("tokN", "step token budget (--max-num-tokens) the search chose, trtllm-bench's leaving no room for the "
                   "MoE workspace"),)
STEP_PARTS = (("compute_and_tp_s", "micro-batches (forward, backward, TP/EP collectives)"),
              ("tp_ep_network_s", "  of which TP/EP collectives"), ("pipeline_bubble_s", "pipeline bubble"),
              ("pipeline_p2p_s", "pipeline send/recv"), ("cp_ring_exposed_s", "context-parallel ring, exposed"),
              ("dp_grad_exposed_s", "DP gradient reduction, exposed"),
              ("zero_param_gather_s", "ZeRO/FSDP parameter gathers, exposed"), ("optimizer_s", "optimizer step"),
              ("step_s", "step"))
LAYOUT_KEYS = ("hardware", "tp", "pp", "cp", "dp", "ep", "redundant_experts", "attention_dp", "micro_batch",
               "interleave", "recompute", "zero",
               "sequence_parallel", "dtype", "concurrency")


def recompute_zero(e: dict) -> str:
    """A training layout's recomputation and ZeRO stage: '-/1', 'sel/1', 'full/1', or with N of a chunk's c layers
    recomputed in full 'f5:16/1' ('f5:16u/1' by the uniform method)."""
    rc = {"none": "-", "selective": "sel", "full": "full"}[e["recompute"]]
    if e["recompute"] == "full" and e.get("recompute_layers") is not None and e.get("chunk_layers"):
        rc = f"f{e['recompute_layers']}:{e['chunk_layers']}" + ("u" if e.get("recompute_method") == "uniform" else "")
    return f"{rc}/{e['zero']}"


def layout(e: dict) -> str:
    """A layout in a few letters: 'tp2sp pp4/v2 dp8 mb1' (training), 'tp2 ep2 adp fp8 ×256' (serving), as
    ``ironlaw search`` prints it; 'ep72+32': 32 redundant expert slots over the EP group; 'tok4096': the step
    token budget (--max-num-tokens) the search chose where trtllm-bench's would not fit."""
    ep = f" ep{e['ep']}" + (f"+{e['redundant_experts']}" if e.get("redundant_experts") else "") if e["ep"] > 1 else ""
    if "concurrency" in e:
        par = f"tp{e['tp']}" + (f" pp{e['pp']}" if e["pp"] > 1 else "") + ep \
            + (" adp" if e.get("attention_dp") else "")
        experts = f" (experts {e['expert_weight_dtype']})" if e.get("expert_weight_dtype") else ""
        budget = f" tok{e['max_num_tokens']}" if e.get("max_num_tokens") else ""
        return f"{par} {e['dtype']}{experts} ×{e['concurrency']}{budget}"
    s = f"tp{e['tp']}{'sp' if e['sequence_parallel'] else ''} pp{e['pp']}"
    s += f"/v{e['interleave']}" if e["interleave"] > 1 else ""
    s += f" cp{e['cp']}" if e.get("cp", 1) > 1 else ""
    s += f" dp{e['dp']}" + ep + f" mb{e['micro_batch']}"
    return s


def _columns(doc: dict) -> list[tuple[str, str, str]]:
    """(JSON key, header, unit) of the ranked table's numbers."""
    if doc["phase"] == "train":
        return [("tokens_per_s_per_gpu", "tokens/s/GPU", "1"), ("mfu", "MFU", "%"), ("time_s", "step", "s"),
                ("memory_per_gpu_bytes", "memory/GPU", "B")]
    lat = [("ttft_s", "TTFT", "s"), ("itl_s", "ITL", "s")] if "ttft_s" in doc["top"][0] else [("time_s", "run", "s")]
    usd = [("usd_per_million_output_tokens", "USD/M tokens", "1")] if isinstance(
        doc["top"][0].get("usd_per_million_output_tokens"), (int, float)) else []
    return [("tokens_per_s_per_gpu", "tokens/s/GPU", "1"), ("output_tokens_per_s", "tokens/s", "1")] + usd + lat + \
        [("concurrency", "in flight", "1"), ("memory_per_gpu_bytes", "memory/GPU", "B")]


def _text(v: float, unit: str) -> str:
    return {"s": fmt_time, "B": lambda x: fmt(x, "B"), "%": lambda x: f"{100 * x:.1f}%"}.get(unit, html.rate)(v)


def _ranked(doc: dict) -> str:
    cols = _columns(doc)
    train = doc["phase"] == "train"
    head = ["#", "layout"] + (["rc/z"] if train else []) + [h for _, h, _ in cols] + ["binds"]
    keys = ["rank", "layout"] + (["rcz"] if train else []) + [k for k, _, _ in cols] + ["binds"]
    rows = []
    for i, e in enumerate(doc["top"]):
        rc = [f'<td class="l">{_e(recompute_zero(e))}</td>'] if train else []
        cells = "".join(html.key(f"top.{i}.{k}", e[k], _text(e[k], u), u) for k, _, u in cols)
        rows.append(f'<tr id="rank-{e["rank"]}">{html.num(e["rank"], str(e["rank"]))}<td class="l">'
                    f'{_e(layout(e))}</td>{"".join(rc)}{cells}<td class="l">{html.badge(e["bottleneck"]["resource"])}'
                    f'</td></tr>')
    best = doc["top"][0]["tokens_per_s_per_gpu"]          # one bar per layout, scaled to the best
    pics = "".join(f'<p class="note">#{e["rank"]} {_e(layout(e))}: {_e(html.rate(e["tokens_per_s_per_gpu"]))} '
                   f'tokens/s per GPU</p>'
                   + svg.share_bar([(f'#{e["rank"]}', e["tokens_per_s_per_gpu"], "#1c7ed6",
                                     f'#{e["rank"]}: {html.rate(e["tokens_per_s_per_gpu"])} tokens/s per GPU'),
                                    ("", best - e["tokens_per_s_per_gpu"], "#e9ecef", "")],
                                   height=14, sid=f"bar-{e['rank']}") for e in doc["top"])
    slots = any(e.get("redundant_experts") for e in doc["top"])
    legend = " · ".join(f"<b>{_e(k)}</b> {_e(v)}{' (+N: redundant expert slots)' if k == 'ep' and slots else ''}"
                        for k, v in LEGEND + BUDGET * any(e.get("max_num_tokens") for e in doc["top"]))
    by = doc.get("rank_by", "tokens-per-gpu").replace("-", " ").replace("gpu", "GPU")
    return (f'<section id="ranked"><h2>The ranked layouts</h2><p class="note">Ranked by {_e(by)}; click a '
            f'column to sort. {legend}.</p>'
            + html.table(head, rows, tid="ranked-table", sortable=True, keys=keys,
                          left=(1, 2, len(head) - 1) if train else (1, len(head) - 1))
            + pics + "</section>")


def _differences(a: dict, b: dict) -> list[str]:
    return [f"{k.replace('_', ' ')} {b[k]} → {a[k]}" for k in LAYOUT_KEYS if k in a and k in b and a[k] != b[k]]


def _why(doc: dict) -> str:
    top = doc["top"]
    if len(top) < 2:
        return ('<section id="why"><h2>Why the best wins</h2><p>Only one layout was ranked (--top 1 or one fits); '
                'there is no runner-up to compare with.</p></section>')
    a, b = top[0], top[1]
    diff = _differences(a, b)
    if doc.get("rank_by") == "usd-per-million-tokens":
        k = "usd_per_million_output_tokens"
        claim = f"costs {100 * (1 - a[k] / b[k]):.1f}% less per million output tokens than"
    else:
        claim = (f"gives {100 * (a['tokens_per_s_per_gpu'] / b['tokens_per_s_per_gpu'] - 1):.1f}% more tokens/s "
                 f"per GPU than")
    head = (f'<p class="headline">#1 {_e(layout(a))} {claim} #2 {_e(layout(b))}.</p><p>From #2 to #1: {_e(", ".join(diff) if diff else "the same layout settings")}. '
            f'#1 binds on {_e(a["bottleneck"]["resource"])}: {_e(a["bottleneck"]["why"])}</p>')
    rows = [f'<tr><td class="l">{_e(h)}</td>{html.key(f"top.0.{k}", a[k], _text(a[k], u), u)}'
            f'{html.key(f"top.1.{k}", b[k], _text(b[k], u), u)}<td>{_change(a[k], b[k])}</td></tr>'
            for k, h, u in _columns(doc)]
    table = html.table(["", "#1", "#2", "#1 against #2"], rows, tid="why-table", left=(0,))
    if "breakdown" in a and "breakdown" in b:
        table += _step_parts(a["breakdown"], b["breakdown"])
    return f'<section id="why"><h2>Why the best wins</h2>{head}{table}</section>'


def _change(x: float, y: float) -> str:
    return "—" if y == 0 else f"{100 * (x / y - 1):+.1f}%"


def _step_parts(a: dict, b: dict) -> str:
    """Each part of the training step, #1 against #2, the largest difference first."""
    parts = [(k, label) for k, label in STEP_PARTS if a.get(k, 0) or b.get(k, 0)]
    parts.sort(key=lambda kl: (kl[0] == "step_s", -abs(a.get(kl[0], 0) - b.get(kl[0], 0))))
    rows = [f'<tr><td class="l">{_e(label)}</td>'
            f'{html.key(f"top.0.breakdown.{k}", a.get(k, 0.0), fmt_time(a.get(k, 0.0)), "s")}'
            f'{html.key(f"top.1.breakdown.{k}", b.get(k, 0.0), fmt_time(b.get(k, 0.0)), "s")}'
            f'<td>{_e(fmt_time(a.get(k, 0.0) - b.get(k, 0.0)))}</td></tr>' for k, label in parts]
    return ('<p class="note">The step, part by part (the same global batch on the same GPUs, so a shorter step is '
            'more tokens/s per GPU); the largest difference first:</p>'
            + html.table(["part", "#1", "#2", "#1 − #2"], rows, tid="why-parts", left=(0,)))


def _setup(doc: dict) -> str:
    skip = {"schema", "phase", "workload", "hardware", "top", "check", "time_s"}
    def text(v) -> str:
        return ", ".join(f"{k.replace('_', ' ')} {x}" for k, x in v.items()) if isinstance(v, dict) else str(v)
    rows = [f'<tr><td class="l">{_e(k.replace("_", " "))}</td><td class="l">{_e(text(v))}</td></tr>'
            for k, v in doc.items() if k not in skip]
    chk = doc.get("check") or {}
    note = (f'<p class="note">The top {chk["rows"]} were predicted again by the full training-step model; the '
            f'search\'s fast path agreed within {chk["max_rel_diff"]:.2g} (relative).</p>' if chk.get("rows") else "")
    return ('<section id="setup"><h2>What was searched</h2>'
            + html.table(["setting", "value"], rows, tid="setup-table", left=(0, 1)) + note + "</section>")


def render(doc: dict) -> str:
    """The page of a layout search (module docstring)."""
    best = doc["top"][0]
    keys = [("layouts evaluated", "candidates_evaluated", doc["candidates_evaluated"],
             f"{doc['candidates_evaluated']:,}", "1"),
            ("layouts that fit" + (" the targets" if doc["phase"] == "serve" else ""), "fits", doc["fits"],
             f"{doc['fits']:,}", "1"),
            ("best tokens/s per GPU", "top.0.tokens_per_s_per_gpu", best["tokens_per_s_per_gpu"],
             html.rate(best["tokens_per_s_per_gpu"]), "1")]
    body = [f'<tr><td class="l">{_e(a)}</td>{html.key(p, v, t, u)}</tr>' for a, p, v, t, u in keys]
    summary = (f'<section id="summary"><h2>The best layout</h2><p class="headline">#1 {_e(layout(best))}: '
               f'{_e(html.rate(best["tokens_per_s_per_gpu"]))} tokens/s per GPU</p>'
               f'<p class="why">{html.badge(best["bottleneck"]["resource"])} <b>Why:</b> '
               f'{_e(best["bottleneck"]["why"])}</p>' + html.table(["", "value"], body, tid="key-table", left=(0,))
               + "</section>")
    parts = [summary, _setup(doc), _ranked(doc), _why(doc)]
    sub = f"search · {_e(doc['phase'])} · {_e(doc['dtype'])} · {_e(doc['hardware'])}"
    return html.document(f"ironlaw · search {doc['workload']} ({doc['phase']}) on {doc['hardware']}",
                         f"Layouts for {doc['workload']} ({doc['phase']}) on {doc['hardware']}", sub, parts,
                         data=doc, nav=True)
