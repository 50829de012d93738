"""``ironlaw search MODEL --phase serve``: the serving layout with the most output tokens/s per GPU.

Without ``--slo``: the offline max-throughput scenario (``serving_throughput.max_throughput``, trtllm-bench's
offline run: the engine fills its batch from the KV cache) over tensor parallelism (divisors of the heads and
the key/value heads within one node), pipeline parallelism (divisors of the layers, tp·pp ≤ the GPUs), expert
parallelism with attention data parallelism over the TP group for mixture-of-experts models, and the dtype
(the model's own and fp8 where the device computes in it, or the one ``--dtype`` names); ranked by output
tokens/s per GPU of the layout.

With ``--slo ttft=…,itl=…``: continuous batching at a chosen number of sequences in flight (``serving.estimate``,
which reports TTFT and inter-token latency) over tensor parallelism, dtype and the sequences in flight (powers
of two up to what the KV cache holds, and that maximum); a candidate is kept when its TTFT and inter-token
latency meet the targets; ranked by output tokens/s per GPU (``tokens_per_s / tp``). Pipeline and expert
parallelism stay 1 there: ``serving.estimate`` models tensor parallelism only.
"""
from __future__ import annotations

import time

from ...core.errors import IronlawError

def _tps(hw, gpus: int, heads: int, kv: int, fixed: dict) -> list[int]:
    from ...machine.network.topology import node_size
    cap = min(gpus, node_size(hw) or gpus)
    tps = [t for t in range(1, cap + 1) if heads % t == 0 and kv % t == 0]
    if fixed.get("tp") is not None:
        if fixed["tp"] not in tps:
            raise IronlawError(f"--tp {fixed['tp']}: serving needs a divisor of the {heads} heads and {kv} key/value "
                               f"heads within one node of at most {cap} GPUs; choose from {tps}")
        tps = [fixed["tp"]]
    return tps


def _dtypes(hw, default: str, fixed: str | None) -> list[str]:
    if fixed:
        hw.peak(fixed)                       # a dtype the device lacks is an error, never a fallback
        return [fixed]
    out = [default]
    try:
        hw.peak("fp8")
        out.append("fp8") if default != "fp8" else None
    except IronlawError:
        pass
    return out


def _entry(est, tp: int, dtype: str) -> dict:
    b = est.decode.bottleneck()
    return {"tp": tp, "pp": 1, "cp": 1, "dp": 1, "ep": 1, "concurrency": est.concurrency, "dtype": dtype,
            "kv_dtype": est.kv_dtype,
            "time_s": est.request_latency_s, "ttft_s": est.ttft_s, "itl_s": est.itl_s,
            "output_tokens_per_s": est.tokens_per_s, "tokens_per_s_per_gpu": est.tokens_per_s / tp,
            "mfu": float(est.decode.graph.flops) / (est.decode_step_s * est.hw.peak(dtype)), "bottleneck": {"resource": b["resource"], "why": b["why"]},
            "memory_per_gpu_bytes": est.capacity["weights_bytes"] + est.capacity["reserve_bytes"]
            + est.concurrency * est.capacity["tokens_reserved_per_sequence"] * est.capacity["kv_bytes_per_token"]}


def _max_entry(est, dtype: str) -> dict:
    """One ``serving_throughput.max_throughput`` result as a search entry (per GPU of its layout)."""
    lay, g = est.layout, est.layout.gpus
    d = est.to_dict()
    flops = sum(n * float(e.graph.flops) for n, e in est.steps)
    m = est.memory
    return {"tp": lay.tp, "pp": lay.pp, "cp": 1, "dp": lay.dp, "ep": lay.ep, "attention_dp": lay.attention_dp,
            "concurrency": est.batch, "dtype": dtype, "kv_dtype": est.kv_dtype, "time_s": est.time_s,
            "output_tokens_per_s": est.output_tokens_per_s, "tokens_per_s_per_gpu": est.output_tokens_per_s / g,
            "mfu": flops / (est.time_s * est.hw.peak(dtype)),
            "bottleneck": {"resource": d["step_bottleneck"]["resource"], "why": d["step_bottleneck"]["why"]},
            "memory_per_gpu_bytes": m["weights_bytes"] + m["workspace_bytes"] + m["reserve_bytes"] + m["kv_budget_bytes"]}


def _max_throughput(spec, hw, gpus: int, prompt: int, output: int, meta: dict, tps, dts, fixed: dict, step):
    """Offline max-throughput (``serving_throughput``) over tp × pp × expert parallelism × dtype."""
    from ..serving import throughput as st
    experts = int(meta.get("experts", 0) or 0)
    out, why = [], None
    for tp in tps:
        pps = [p for p in range(1, gpus // tp + 1) if (gpus // tp) % p == 0 and meta["layers"] % p == 0]
        for pp in [fixed["pp"]] if fixed.get("pp") else pps:
            for dt in dts:
                for adp in ((False, True) if experts and tp > 1 and experts % tp == 0 else (False,)):
                    try:
                        est = st.max_throughput(spec, hw, prompt, output, tp=tp, pp=pp, ep=tp if adp else 1,
                                                attention_dp=adp, dtype=dt)
                    except IronlawError as e:
                        why = why or str(e)
                        continue
                    out.append(_max_entry(est, dt))
            step()
    return out, why


def search(spec: str, on, gpus: int, prompt: int, output: int, slo: str | None = None, dtype: str | None = None,
           top: int = 5, fixed: dict | None = None, quiet: bool = True, cost=None):
    """Rank serving layouts of ``spec`` on up to ``gpus`` devices of ``on`` by output tokens/s per GPU; each
    reported layout carries its ``energy`` per output token (``cost``: ``run_cost.RunInputs``, its price and
    grid)."""
    from ...machine import hardware
    from ...core import progress
    from .. import workloads
    from ...machine.network.topology import check_count
    hw = hardware.get(on) if isinstance(on, str) else on
    gpus = check_count(gpus, "--gpus")
    fixed = {k: v for k, v in (fixed or {}).items() if v is not None}
    for k in ("ep", "cp", "dp") if slo is None else ("pp", "ep", "cp", "dp"):
        if fixed.get(k, 1) != 1:
            raise IronlawError(f"--{k} {fixed[k]}: the serving search sets it itself"
                               f"{'' if slo is None else ' (with --slo it models tensor parallelism only)'}; "
                               f"leave --{k} out")
    from ..serving import online as serving
    targets = serving.parse_slo(slo) if slo is not None else {}
    g = workloads.resolve(workloads.Request(spec, phase="decode", batch=1, seq=prompt, dtype=dtype,
                                            device="cuda" if hw.kind == "gpu" else "cpu"))
    m = g.meta
    if "heads" not in m:
        raise IronlawError(f"{spec}: serving needs a decoder LLM built by ironlaw (heads known)")
    tps = _tps(hw, gpus, int(m["heads"]), int(m.get("kv_heads", m["heads"])), fixed)
    dts = _dtypes(hw, g.dtype, dtype)
    t0 = time.perf_counter()
    if slo is None:                                   # no latency target: the offline max-throughput scenario
        with progress.task("evaluating serving layouts", total=len(tps), quiet=quiet) as step:
            entries, shortest = _max_throughput(spec, hw, gpus, prompt, output, m, tps, dts, fixed, step)
        evaluated = len(entries) + (shortest is not None)
    else:
        with progress.task("evaluating serving layouts", total=len(tps) * len(dts), quiet=quiet) as step:
            entries, evaluated, shortest = _with_slo(spec, hw, prompt, output, tps, dts, fixed, step)
    res = _ranked(spec, hw, g, gpus, prompt, output, slo, targets, entries, evaluated, shortest, top, t0)
    for e in res.top:
        e["energy"] = _energy(spec, hw, prompt, output, e, cost)
    return res


def _with_slo(spec, hw, prompt, output, tps, dts, fixed, step):
    """Continuous batching (``serving.estimate``) over tp × dtype × concurrency."""
    entries, evaluated, shortest = [], 0, None
    for tp in tps:
        for dt in dts:
            got, why = _layouts(spec, hw, prompt, output, tp, dt, fixed.get("concurrency"))
            evaluated += len(got) + (why is not None)
            shortest = shortest or why
            entries += got
            step()
    return entries, evaluated, shortest


def _ranked(spec, hw, g, gpus, prompt, output, slo, targets, entries, evaluated, shortest, top, t0):
    from . import SearchResult
    if not entries:
        raise IronlawError(shortest or f"{spec} does not fit on {hw.name} with any tensor-parallel degree up to {gpus}")
    ok = [e for e in entries if all(e[k] <= v for k, v in targets.items())]
    if not ok:
        best = {k[:-2]: min(e[k] for e in entries) for k in targets}
        raise IronlawError(f"no serving layout meets --slo {slo}: the best reachable is " + ", ".join(
            f"{k} {v * 1e3:.1f} ms" for k, v in best.items()))
    ok.sort(key=lambda e: -e["tokens_per_s_per_gpu"])
    for rank, e in enumerate(ok[:top], 1):
        e["rank"] = rank
    setup = {"gpus": gpus, "prompt": prompt, "output": output, "slo": dict(targets),
             "scenario": "max-throughput" if slo is None else "latency targets"}
    return SearchResult("serve", spec, hw.name, g.dtype, setup, evaluated, len(ok), ok[:top], "local",
                        time.perf_counter() - t0)


def _layouts(spec, hw, prompt, output, tp, dtype, concurrency):
    """Estimates of one (tp, dtype) over the concurrencies; (entries, the error when none fits)."""
    from ..serving import online as serving
    try:
        one = serving.estimate(spec, hw, prompt, output, 1, dtype=dtype, tp=tp)
    except IronlawError as e:
        return [], str(e)
    max_conc = one.capacity["max_concurrency"]
    concs = [concurrency] if concurrency else serving.concurrency_grid(max_conc)
    out = []
    for c in concs:
        est = one if c == 1 else serving.estimate(spec, hw, prompt, output, c, dtype=dtype, tp=tp)
        out.append(_entry(est, tp, dtype))
    return out, None


def _energy(spec, hw, prompt: int, output: int, e: dict, cost) -> dict | None:
    """Energy, cost and carbon per output token of one reported layout (``serving.features.energy``), predicted
    again as the search predicted it (the same time, or it is a bug)."""
    from ...law import power
    from ..serving.features import energy
    usd, grid = (cost.usd_per_device_hour, cost.gco2_per_kwh) if cost is not None else (None, None)
    if "itl_s" in e:                                       # continuous batching within latency targets
        from ..serving import online as serving
        est = serving.estimate(spec, hw, prompt, output, e["concurrency"], dtype=e["dtype"], tp=e["tp"])
        t = est.request_latency_s
    else:
        from ..serving import throughput as st
        est = st.max_throughput(spec, hw, prompt, output, tp=e["tp"], pp=e["pp"], ep=e["ep"],
                                attention_dp=e["attention_dp"], dtype=e["dtype"])
        t = est.time_s
    if abs(t - e["time_s"]) > 1e-9 * e["time_s"]:
        raise RuntimeError(f"search: the reported layout predicted again takes {t} s, not {e['time_s']} s; "
                           f"this is a bug in ironlaw.models.search.serve")
    if not power.has_power(hw):
        return None
    return energy.of_serving(est, e["tp"], usd, grid) if "itl_s" in e else energy.of_throughput(est, usd, grid)
