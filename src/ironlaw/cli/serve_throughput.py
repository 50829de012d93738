"""`ironlaw serve SPEC --max-throughput …`: the offline scenario's table (text, md) or document (json)."""
from __future__ import annotations

from .common import emit_lines


def show(est, spec: str, prompt: int, output: int, fmt: str) -> None:
    """Print a ThroughputEstimate (``ironlaw.models.serving.throughput``) as a table (text, md)."""
    from ..core.units import fmt as f, fmt_time

    d = est.to_dict()
    lay, m, s = est.layout, d["memory_per_gpu"], d["steady_state"]
    where = f"{lay.gpus} × {est.hw.name}" if lay.gpus > 1 else est.hw.name
    par = ", ".join(p for p in (f"TP {lay.tp}" if lay.tp > 1 else "", f"PP {lay.pp}" if lay.pp > 1 else "",
                                f"EP {lay.ep}" if lay.ep > 1 else "", "attention DP" if lay.attention_dp else "") if p)
    rows = [("output tokens/s (system)", f"{d['output_tokens_per_s']:,.0f}"),
            ("output tokens/s per GPU", f"{d['output_tokens_per_s_per_gpu']:,.0f}"),
            ("requests/s", f"{d['requests_per_s']:.2f}"),
            ("time for all requests", fmt_time(d["time_s"])),
            ("batch (sequences in flight)", f"{d['batch']:,} — set by {d['batch_limit'].replace('_', ' ')}"),
            ("engine limits", f"max batch {d['engine']['max_batch_size']:,}, max tokens/step "
                              f"{d['engine']['max_num_tokens']:,} ({d['engine']['source']})"),
            ("memory per GPU", f"weights {f(m['weights_bytes'], 'B')}, workspace {f(m['workspace_bytes'], 'B')}"),
            ("KV cache per GPU", f"{f(m['kv_budget_bytes'], 'B')} ({m['kv_fraction']:.2f} of free), "
                                 f"{f(m['kv_bytes_per_token'], 'B')}/token"),
            ("mean step", f"{fmt_time(s['step_s'])}: {s['decode_tokens_per_step']:,} decode + "
                          f"{s['prompt_tokens_per_step']:,.0f} prompt tokens"),
            ("steps carrying a prompt", f"{100 * s['mixed_step_share']:.0f}%"),
            ("steps bound by", f"{d['step_bottleneck']['resource']}"
                               f"{' (' + d['step_bottleneck']['tier'] + ')' if d['step_bottleneck'].get('tier') else ''}")]
    rows += _energy_rows(d["energy"], est.hw.name)
    head = (f"{spec} on {where}{f' ({par})' if par else ''}, {est.dtype}, KV {est.kv_dtype}: max throughput, "
            f"{est.requests:,} requests of {prompt} + {output} tokens")
    if fmt == "md":
        emit_lines([head, "| | |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows)], fmt)
        return
    w = max(len(a) for a, _ in rows)
    emit_lines([head] + [f"  {a:<{w}}  {b}" for a, b in rows], fmt)


def _energy_rows(e: dict | None, hw_name: str) -> list[tuple[str, str]]:
    """Energy, cost and carbon per output token (``serving.features.energy.of_throughput``)."""
    if e is None:
        return [("energy", f"{hw_name} states no power (tdp_w and idle_w in its hardware file)")]
    usd = e["usd_per_million_output_tokens"]
    return [("energy per output token", f"{e['joules_per_output_token']:.3g} J ({e['mean_power_w_per_device']:.0f} W "
                                        f"per GPU, u {e['utilization']:.2f})"),
            ("cost per million output tokens", f"${usd:.3g} at ${e['usd_per_gpu_hour']:g}/GPU-h" if usd is not None
             else e["price_source"]),
            ("carbon per million output tokens", f"{e['gco2_per_million_output_tokens']:.3g} g CO2 at "
                                                 f"{e['grid_gco2_per_kwh']:g} g/kWh")]
