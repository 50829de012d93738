"""`ironlaw serve SPEC --max-throughput …`: the offline scenario's table (text, md) or document (json)."""
from __future__ import annotations

from ..core.units import counted
from .common import emit_lines


def show(est, spec: str, prompt: int, output: int, fmt: str) -> None:
    """Print a ThroughputEstimate (``ironlaw.models.serving.throughput``) as a table (text, md)."""
    from ..core.units import fmt_num, fmt_size, fmt_time

    d = est.to_dict()
    lay, m, s = est.layout, d["memory_per_gpu"], d["steady_state"]
    where = f"{lay.gpus} × {est.hw.name}" if lay.gpus > 1 else est.hw.name
    par = ", ".join(p for p in (f"TP {lay.tp}" if lay.tp > 1 else "", f"PP {lay.pp}" if lay.pp > 1 else "",
                                f"EP {lay.ep}" if lay.ep > 1 else "", "attention DP" if lay.attention_dp else "") if p)
    rows = [("output tokens/s (system)", f"{d['output_tokens_per_s']:,.0f}"),
            ("output tokens/s per GPU", f"{d['output_tokens_per_s_per_gpu']:,.0f}"),
            ("requests/s", fmt_num(d['requests_per_s'])),
            ("time for all requests", fmt_time(d["time_s"])),
            ("batch (sequences in flight)", f"{d['batch']:,} — set by {d['batch_limit'].replace('_', ' ')}"),
            ("engine limits", f"max batch {d['engine']['max_batch_size']:,}, {_budget(d)} "
                              f"{d['engine']['max_num_tokens']:,} ({d['engine']['source']})"),
            ("memory per GPU", f"weights {fmt_size(m['weights_bytes'])}, workspace {fmt_size(m['workspace_bytes'])}"),
            ("KV cache per GPU", f"{fmt_size(m['kv_budget_bytes'])} ({_kv_share(d, m)}), "
                                 f"{fmt_size(m['kv_bytes_per_token'])}/token"),
            ("mean step", f"{fmt_time(s['step_s'])}: {s['decode_tokens_per_step']:,} decode + "
                          f"{s['prompt_tokens_per_step']:,.0f} prompt tokens"),
            ("host per step", _host_row(s)),
            ("steps carrying a prompt", f"{100 * s['mixed_step_share']:.0f}%"),
            ("steps bound by", f"{d['step_bottleneck']['resource']}"
                               f"{' (' + d['step_bottleneck']['tier'] + ')' if d['step_bottleneck'].get('tier') else ''}")]
    rows += _moe_rows(d.get("moe"))
    rows += _energy_rows(d["energy"], est.hw.name)
    sizes = (f"of {prompt} + {output} tokens" if d.get("lengths") is None else
             f"from {d['lengths']['source']}")
    head = (f"{spec} on {where}{f' ({par})' if par else ''}, {est.dtype}, KV {est.kv_dtype}: max throughput, "
            f"{counted(est.requests, 'request')} {sizes}")
    own = d["engine"].get("name", "trtllm") != "trtllm" or "release" in d["engine"] or "runtime" in d["engine"]
    extra = (d["engine"]["summary"] if own else []) + lengths_lines(d.get("lengths")) + [
        f"note: {n}" for n in d["notes"]] + expert_lines(d)
    if fmt == "md":
        emit_lines([head] + extra + ["| | |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows)], fmt)
        return
    from rich.table import Table
    from .common import console
    t = Table.grid(padding=(0, 2), pad_edge=True)      # the value column wraps under itself, not under the names
    t.add_column(no_wrap=True)
    t.add_column(overflow="fold")                    # a long table path folds, never cut
    for a, b in rows:
        t.add_row(a, b)
    c = console()
    c.print(head, markup=False)
    for line in extra:
        c.print(line, markup=False)
    c.print(t)


def lengths_lines(mix: dict | None) -> list[str]:
    """What a --lengths file gave: its requests, the mean, p50 and p99 of their prompts and outputs, and the
    contexts the steps are priced at (``serving.lengths``)."""
    if mix is None:
        return []
    p, o = mix["prompt"], mix["output"]
    return [f"lengths: {mix['requests']:,} requests read from {mix['source']}: prompt mean {p['mean']:,.1f} (p50 "
            f"{p['p50']:,}, p99 {p['p99']:,}), output mean {o['mean']:,.1f} (p50 {o['p50']:,}, p99 {o['p99']:,}); "
            f"decode context {mix['decode_context']:,} tokens, token-weighted (one length: "
            f"{round(p['mean'] + o['mean'] / 2):,}), prefill pairs of a {mix['prefill_prompt']:,}-token prompt"]


def expert_lines(d: dict) -> list[str]:
    """The routed experts' weight dtype, how they compute and its source, for a checkpoint that states one
    (gpt-oss), as ``analyze`` states it."""
    if "expert_weight_source" not in d:
        return []
    math = d.get("expert_math_dtype")
    how = f", weight-only: math in {math} after dequantizing" if math and math != d["expert_weight_dtype"] else ""
    return [f"routed experts' weights: {d['expert_weight_dtype']}{how} (from {d['expert_weight_source']})"]


def _moe_rows(moe: dict | None) -> list[tuple[str, str]]:
    """An MoE model's expert slots per GPU and, under attention DP with EP, its expert exchange and what times it
    (``serving.throughput.moe_plan``)."""
    if moe is None:
        return []
    p, x = moe["placement"], moe["exchange"]
    extra = f" + {p['redundant_slots']} redundant" if p["redundant_slots"] else ""
    split = (f" ({p['experts_per_rank']:.3g} routed + {p['redundant_per_rank']:.3g} redundant on average)"
             if p["redundant_slots"] else "")
    rows = [("experts per GPU", f"{p['slots_per_rank']} slots: {p['experts']}{extra} over EP {p['ranks']}{split}")]
    if x is None:
        return rows
    phases = [ph for ph in ("prepare", "dispatch", "combine") if ph in x]
    rows.append(("expert exchange", f"{x['strategy']} ({x['chosen']}): " + ", ".join(
        f"{ph} {x[ph]['collective']} {x[ph]['wire_dtype']}" for ph in phases)))
    tails = {x[ph]["source"].split(" curve ")[-1] for ph in phases}
    if len(tails) == 1:
        first = x[phases[0]]
        return rows + [("exchange timed by", first["source"].replace(f" {first['collective']} curve", " curves"))]
    return rows + [(f"{ph} timed by", x[ph]["source"]) for ph in phases]


def _host_row(s: dict) -> str:
    """The host's mean work per step against the device's (``serving.step.HostStep``): under an overlap scheduler,
    or serial (vLLM without async scheduling: its executor work added to the device's)."""
    from ..core.units import fmt_time
    speed = f"{s['host_speed']:.2f}× the fit host's time" if s["host_speed_stated"] else "no speed stated"
    binds = (f"binds in {100 * s['host_bound_share']:.0f}% of steps" if s["host_bound_share"] > 0 else "hidden")
    mode = ("launches overlap the device, executor work runs after it" if s.get("host_serial")
            else "overlap scheduler")
    runtime = " C++ executor (TensorRT engine)," if s.get("host_runtime", "pytorch") != "pytorch" else ""
    return (f"{fmt_time(s['host_s'])} vs device {fmt_time(s['device_s'])}: {binds} ({mode});{runtime} "
            f"{s['host_cpu']}, {speed}")


def _kv_share(d: dict, m: dict) -> str:
    """TensorRT-LLM's share of the free memory, or the framework's memory fraction of the device (--engine)."""
    sched = d["engine"].get("scheduler")
    if sched:
        return f"what {sched['memory_fraction']:g} of the device leaves"
    return f"{m['kv_fraction']:.2f} of free"


def _energy_rows(e: dict | None, hw_name: str) -> list[tuple[str, str]]:
    """Energy, cost and carbon per output token (``serving.features.energy.of_throughput``)."""
    from ..core.units import fmt_num
    if e is None:
        return [("energy", f"{hw_name} states no power (tdp_w and idle_w in its hardware file)")]
    usd = e["usd_per_million_output_tokens"]
    return [("energy per output token", f"{fmt_num(e['joules_per_output_token'])} J ({e['mean_power_w_per_device']:.0f} W "
                                        f"per GPU, u {e['utilization']:.2f})"),
            ("cost per million output tokens", f"${fmt_num(usd)} at ${e['usd_per_gpu_hour']:g}/GPU-h" if usd is not None
             else e["price_source"]),
            ("carbon per million output tokens", f"{fmt_num(e['gco2_per_million_output_tokens'])} g CO2 at "
                                                 f"{e['grid_gco2_per_kwh']:g} g/kWh")]


def _budget(d: dict) -> str:
    """What the engine's token budget caps: a step's tokens, or (SGLang's chunked_prefill_size) a prefill batch's
    (``throughput.budget_tokens``)."""
    return "max prefill tokens/batch" if d["engine"].get("name") == "sglang" else "max tokens/step"
