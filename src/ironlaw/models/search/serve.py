"""``ironlaw search MODEL --phase serve``: the serving layouts with the most output tokens/s per GPU, or the
cheapest per token, on one device or across several.

Without ``--slo``: the offline max-throughput scenario (``serving_throughput.max_throughput``, trtllm-bench's
offline run: the engine fills its batch from the KV cache) over tensor parallelism (divisors of the heads and
the key/value heads within one node), pipeline parallelism (divisors of the layers, tp·pp ≤ the GPUs) and, for
a mixture-of-experts model, attention data parallelism with expert parallelism over the same GPUs (``--ep`` =
``--tp``: TensorRT-LLM's MoE recipe, ``serving_parallel``; every rank runs attention on its own sequences, so
any degree within one node that divides the experts, the heads notwithstanding), and the dtype (the model's own
and fp8 where the device computes in it, or the one ``--dtype`` names).

With ``--slo ttft=…,itl=…``: a candidate is kept when its TTFT and inter-token latency meet the targets.
    dense   continuous batching (``serving.estimate``) over tensor parallelism, dtype and the sequences in
            flight (powers of two up to what the KV cache holds, and that maximum)
    MoE     the max-throughput engine (``serve_latency``: TTFT and ITL of its steady state) over the layouts
            above — tensor parallel, attention DP with EP, pipeline — so expert parallelism meets latency
            targets on the same model as the rest: each layout at its full batch, and where that misses the
            targets, at the largest batch of the same grid that meets them (bisection; a smaller batch is
            predicted as one wave of its requests, its steady state alone). Layouts are taken best first; one
            whose full batch cannot enter the top is not searched further.

Across devices (``--on h100,h200,b200``): each device is searched alike and the candidates ranked in one table;
a device where nothing fits, whose compute lacks the dtype asked for, where no layout meets the targets, or that
has no price when ranking by cost, is skipped with its reason — an error only when every device is. The
max-throughput engine is a GPU's (``serve --max-throughput`` refuses it elsewhere): a CPU, TPU or Apple device
is skipped from it, and searched only for a dense model with ``--slo`` (on the device's own steps).
The header's dtype is that of the layouts shown (each picks its weight dtype).

Redundant experts (``--redundant-experts N``, as ``serve --max-throughput``'s: EPLB's extra slots, TensorRT-LLM's
wide-EP): every attention-DP/EP layout holds the N slots, its degree any within one node that divides the experts
+ N (DeepSeek-V3's 256 + 32 over 72 GB200s); the tensor-parallel layouts hold every expert, no replicas.

Token budget of a wide-EP layout: under attention DP an MoE layer's workspace holds every rank's max_num_tokens
as the exchange receives them (``serving.engine.profiled_tokens``); a TensorRT-LLM layout refused only for that
(``engine.WorkspaceRefusal``: weights and reserve fit) is priced at the ``budgets`` below trtllm-bench's
max_num_tokens, powers of two down to its max batch and then the max batch, as NVIDIA's wide-EP recipes set the
budget to the batch's tokens per step; the fastest that fits is kept, its row carrying ``max_num_tokens`` and its
re-run ``--max-num-tokens``. TensorRT-LLM's MoE does not chunk those rows by default (``moe_max_num_tokens`` is
max_num_tokens × the attention-DP size: ``WideEPMoE.__init__``, fused_moe_wide_ep.py), so a budget is the lever.

Serving framework (``--serve-engine trtllm|vllm|sglang``, as ``serve --engine``): every candidate is priced on
that framework's kernels and under its scheduler's limits (``serving.frameworks``); TensorRT-LLM by default.

Ranking (``--rank``):  tokens-per-gpu (default) output tokens/s per GPU of the layout, highest first;
usd-per-million-tokens  USD per million output tokens = $/GPU-hour / 3600 / (tokens/s per GPU) · 10⁶, lowest
first. Prices: ``--price-per-gpu-hour`` for one device, ``--price h100=2.5,b200=5`` for any of those searched,
else the sourced defaults of ``law.power`` (a device without one has no cost in its rows).
"""
from __future__ import annotations

import contextlib
import time

from ...core.errors import IronlawError

RANKS = ("tokens-per-gpu", "usd-per-million-tokens")
PRICE_EXAMPLE = "e.g. --price h100=2.5,b200=5 (USD per GPU-hour)"


def _tps(hw, gpus: int, heads: int, kv: int, fixed: dict, experts: int = 0,
         redundant: int = 0) -> tuple[list[int], list[int]]:
    """(tensor-parallel degrees, attention-DP/EP degrees: those that divide the experts + ``redundant`` slots)
    within one node; ``fixed`` tp or ep narrows them."""
    from ...machine.network.topology import node_size
    from ..parallel import tp_fits_kv_heads
    cap = min(gpus, node_size(hw) or gpus)
    tps = [t for t in range(1, cap + 1) if heads % t == 0 and tp_fits_kv_heads(t, kv)]
    eps = [t for t in range(2, cap + 1) if experts and (experts + redundant) % t == 0]
    if redundant:
        _check_slots(fixed, experts, redundant, cap, eps)
    if fixed.get("ep", 1) > 1:
        if fixed["ep"] not in eps or fixed.get("tp", fixed["ep"]) != fixed["ep"]:
            raise IronlawError(f"--ep {fixed['ep']}: the serving search runs expert parallelism with attention data "
                               f"parallelism over the TP group (--tp equal to --ep); choose --ep from "
                               f"{eps or 'none (a dense model)'}")
        return [], [fixed["ep"]]
    if fixed.get("ep") == 1:
        eps = []
    if fixed.get("tp") is not None:
        if fixed["tp"] not in tps + eps:
            raise IronlawError(f"--tp {fixed['tp']}: serving needs a divisor of the {heads} heads that divides or is a "
                               f"multiple of the {kv} key/value heads, within one node of at most {cap} GPUs; choose from {tps}"
                               + (f" (or, with attention data parallelism, {eps})" if eps else ""))
        return [t for t in tps if t == fixed["tp"]], [t for t in eps if t == fixed["tp"]]
    return tps, eps


def _check_slots(fixed: dict, experts: int, redundant: int, cap: int, eps: list[int]) -> None:
    """``--redundant-experts N`` where no attention-DP/EP layout the search takes holds the slots: ``--ep 1``, a
    fixed --tp or --ep that does not divide the experts + N, or no degree within one node that does (named)."""
    slots = f"the {experts} + {redundant} = {experts + redundant} expert slots"
    if fixed.get("ep") == 1:
        raise IronlawError(f"--redundant-experts {redundant} spreads replicas of hot experts over an EP group; "
                           f"leave --ep 1 out")
    given = fixed.get("ep") or fixed.get("tp")
    tried = [given] if given is not None else list(range(2, cap + 1))
    if not [t for t in tried if t in eps]:
        flag = "--ep" if fixed.get("ep") else "--tp"
        raise IronlawError(f"--redundant-experts {redundant}: "
                           + (f"{flag} {given} does not divide {slots}" if given is not None else
                              f"no expert-parallel degree within one node ({tried[0]} to {tried[-1]}) divides "
                              f"{slots}")
                           + (f"; choose from {eps}" if eps else ""))


def _dtypes(hw, default: str, fixed: str | None) -> list[str | None]:
    """The dtypes searched: ``fixed`` (--dtype) alone, else the checkpoint's own format (None: its dtype, and the
    weights as it stores them, gpt-oss's MXFP4 experts included: ``serving.step.StoredExperts``) and FP8 where the
    device has it."""
    if fixed:
        hw.peak(fixed)                       # a dtype the device lacks is an error, never a fallback
        return [fixed]
    out: list[str | None] = [None]
    try:
        hw.peak("fp8")
        out.append("fp8") if default != "fp8" else None
    except IronlawError:
        pass
    return out


def _entry(est, tp: int, dtype: str | None) -> dict:
    b = est.decode.bottleneck()
    dtype = dtype or est.decode.graph.dtype
    return {"tp": tp, "pp": 1, "cp": 1, "dp": 1, "ep": 1, "attention_dp": False, "concurrency": est.concurrency,
            "dtype": dtype, "kv_dtype": est.kv_dtype, "latency_from": "serving.estimate", "_est": est,
            "request_latency_s": est.request_latency_s, "ttft_s": est.ttft_s, "itl_s": est.itl_s,
            "output_tokens_per_s": est.tokens_per_s, "tokens_per_s_per_gpu": est.tokens_per_s / tp,
            "mfu": float(est.decode.graph.flops) / (est.decode_step_s * est.hw.peak(dtype)),
            "bottleneck": {"resource": b["resource"], "why": b["why"]},
            "memory_per_gpu_bytes": est.capacity["weights_bytes"] + est.capacity["reserve_bytes"]
            + est.concurrency * est.capacity["tokens_reserved_per_sequence"] * est.capacity["kv_bytes_per_token"],
            **_stored_experts(est.decode.graph.meta, dtype)}


def held_bytes(m: dict) -> float:
    """What one GPU of a max-throughput run holds (``engine.memory``'s document): weights, KV cache, the runtime
    reserve and the activation workspace, the workspace once (inside the reserve where the runtime's reserve holds
    it: SGLang's mem_fraction_static)."""
    workspace = 0.0 if m.get("reserve_holds_workspace") else m["workspace_bytes"]
    return m["weights_bytes"] + workspace + m["reserve_bytes"] + m["kv_budget_bytes"]


def _stored_experts(meta: dict, dtype: str) -> dict:
    """The routed experts' stored weight dtype where it differs from the layout's (gpt-oss's checkpoint: MXFP4)."""
    experts = meta.get("expert_weight_dtype", dtype)
    return {} if experts == dtype else {"expert_weight_dtype": experts}


def _max_entry(est, dtype: str | None, latency: bool = False, budget: int | None = None) -> dict:
    """One ``serving_throughput.max_throughput`` result as a search entry (per GPU of its layout); with
    ``latency``, its steady state's TTFT and ITL (``serve_latency``); ``dtype`` None: the checkpoint's own;
    ``budget``: the step token budget the search chose (``_fitted``), None where trtllm-bench's default."""
    lay, g = est.layout, est.layout.gpus
    dtype = dtype or est.dtype
    d = est.to_dict()
    flops = sum(n * float(e.graph.flops) for n, e in est.steps)
    m = est.memory
    out = {"tp": lay.tp, "pp": lay.pp, "cp": 1, "dp": lay.dp, "ep": lay.ep, "attention_dp": lay.attention_dp,
           "concurrency": est.batch, "dtype": dtype, "kv_dtype": est.kv_dtype, "time_s": est.time_s,
           "output_tokens_per_s": est.output_tokens_per_s, "tokens_per_s_per_gpu": est.output_tokens_per_s / g,
           "mfu": flops / (est.time_s * est.hw.peak(dtype)),
           "bottleneck": {"resource": d["step_bottleneck"]["resource"], "why": d["step_bottleneck"]["why"]},
           "memory_per_gpu_bytes": held_bytes(m),
           "_est": est, **_stored_experts(d, dtype),
           **({"redundant_experts": lay.redundant_experts} if lay.redundant_experts else {}),
           **({"max_num_tokens": budget} if budget is not None else {})}
    if latency:
        from .serve_latency import latencies
        out["ttft_s"], out["itl_s"] = latencies(est)
        out["latency_from"] = "max-throughput steady state"
    return out


def _grid(gpus: int, meta: dict, tps, eps, fixed: dict) -> list[tuple[int, int, bool]]:
    """(tp, pp, attention DP with EP = tp) of every layout: pp divides the layers and the GPUs left by tp."""
    out = []
    for tp, adp in [(t, False) for t in tps] + [(t, True) for t in eps]:
        pps = [p for p in range(1, gpus // tp + 1) if (gpus // tp) % p == 0 and meta["layers"] % p == 0]
        out += [(tp, pp, adp) for pp in ([fixed["pp"]] if fixed.get("pp") else pps)]
    return out


def _offline(spec, hw, prompt: int, output: int, engine: str, kw: dict, memory_fraction: float | None = None):
    """One offline max-throughput run under the serving framework ``engine`` (TensorRT-LLM: its own path, its KV
    fraction ``memory_fraction`` where one is given, as ``frameworks.trtllm_kv_fraction`` reads it)."""
    from ..serving import frameworks, throughput as st
    if engine == frameworks.DEFAULT:
        kv = frameworks.trtllm_kv_fraction(engine, memory_fraction, None, None)
        return st.max_throughput(spec, hw, prompt, output, **kw, **({} if kv is None else {"kv_fraction": kv}))
    with _serve_engine_flag(engine):
        return frameworks.max_throughput(spec, hw, prompt, output, engine, kw, 0.95, memory_fraction=memory_fraction)


@contextlib.contextmanager
def _serve_engine_flag(engine: str):
    """Inside: an error that names ``--engine ENGINE`` (serve's flag) names search's, ``--serve-engine ENGINE``."""
    try:
        yield
    except IronlawError as e:
        if not str(e).startswith(f"--engine {engine}:"):
            raise
        raise IronlawError("--serve-engine" + str(e)[len("--engine"):]) from None


def _max_throughput(spec, hw, prompt: int, output: int, layouts, dts, step, latency: bool = False,
                    engine: str = "trtllm", memory_fraction: float | None = None, redundant: int = 0):
    """Offline max-throughput (``serving_throughput``) over the layouts × dtype: (entries, the first error,
    candidates evaluated, the options of each entry); with ``latency`` the entries carry TTFT and ITL;
    ``redundant``: the expert slots each attention-DP/EP layout holds."""
    out, kws, why, evaluated = [], [], None, 0
    for tp, pp, adp in layouts:
        for dt in dts:
            kw = dict(tp=tp, pp=pp, ep=tp if adp else 1, attention_dp=adp, dtype=dt,
                      **({"redundant_experts": redundant} if adp and redundant else {}))
            try:
                est, kw, n = _fitted(spec, hw, prompt, output, engine, kw, memory_fraction)
            except IronlawError as e:
                why = why or str(e)
                evaluated += getattr(e, "tried", 1)
                continue
            evaluated += n
            out.append(_max_entry(est, dt, latency, kw.get("max_num_tokens")))
            kws.append((kw, est.batch_per_engine))
        step()
    return out, why, evaluated, kws


def budgets(default: int, max_batch: int) -> list[int]:
    """The step token budgets below ``default`` a refused wide-EP layout is tried at, largest first: the powers
    of two down to the engine's max batch size, then the max batch itself (NVIDIA's wide-EP generation recipe
    sets max_num_tokens to max_batch_size × the tokens a step adds per sequence: 128 × (1 + 3 MTP) = 512,
    TensorRT-LLM examples/wide_ep/slurm_scripts/config.yaml); below it the budget would cap the decode batch."""
    out = [1 << k for k in range(default.bit_length() - 1, -1, -1) if max_batch <= 1 << k < default]
    return out + ([max_batch] if max_batch < default and max_batch not in out else [])


def _fitted(spec, hw, prompt: int, output: int, engine: str, kw: dict, memory_fraction: float | None):
    """(estimate, its options, runs priced) of one layout: at trtllm-bench's limits, and where TensorRT-LLM's
    engine refuses it only for the MoE's pooled workspace (``engine.WorkspaceRefusal``), at the ``budgets``
    below that fit, the one with the most output tokens/s kept (``max_num_tokens`` in its options). Where none
    fits, the first refusal naming the budgets tried (``tried``: the runs priced)."""
    from ..serving import frameworks
    from ..serving.engine import WorkspaceRefusal
    try:
        return _offline(spec, hw, prompt, output, engine, kw, memory_fraction), kw, 1
    except WorkspaceRefusal as e:
        if engine != frameworks.DEFAULT or e.limits is None:
            raise
        first, found = e, []
    ladder = budgets(first.limits.max_num_tokens, first.limits.max_batch)
    for n in ladder:
        try:
            found.append((_offline(spec, hw, prompt, output, engine, {**kw, "max_num_tokens": n}, memory_fraction), n))
        except IronlawError:
            continue
    if not found:
        from ..serving.engine import SHRINKS
        tried = f"nor does any --max-num-tokens the search tried ({', '.join(f'{n:,}' for n in ladder)})" \
            if ladder else "and the max batch leaves no smaller budget to try"
        err = IronlawError(str(first).replace(SHRINKS, tried))
        err.tried = 1 + len(ladder)
        raise err
    est, n = max(found, key=lambda p: p[0].output_tokens_per_s)
    return est, {**kw, "max_num_tokens": n}, 1 + len(ladder)


def _within(spec, hw, prompt: int, output: int, entries, kws, targets: dict, top: int, engine: str = "trtllm",
            memory_fraction: float | None = None):
    """Each layout at the largest batch of the concurrency grid whose TTFT and ITL meet ``targets`` (found by
    bisection: latencies grow with the batch), taken from the best layout at its full batch down; a layout whose
    full batch cannot enter the ``top`` (tokens/s per GPU grow with the batch) is not searched further.
    (entries that meet the targets, candidates evaluated, the best latencies reached)."""
    from ..serving.online import concurrency_grid
    meets = lambda e: all(e[k] <= v for k, v in targets.items())          # noqa: E731
    best = {k: min(e[k] for e in entries) for k in targets}
    ok, evaluated = [], 0
    for e, (kw, full) in sorted(zip(entries, kws), key=lambda p: -p[0]["tokens_per_s_per_gpu"]):
        if meets(e):
            ok.append(e)
            continue
        if len(ok) >= top and e["tokens_per_s_per_gpu"] <= sorted(x["tokens_per_s_per_gpu"] for x in ok)[-top]:
            continue
        grid, lo, hi, found = concurrency_grid(full), -1, None, None
        hi = len(grid) - 1                                        # the full batch misses the targets
        while hi - lo > 1:
            mid = (lo + hi) // 2
            one_wave = grid[mid] * kw["pp"] * (kw["tp"] if kw["attention_dp"] else 1)   # the steady state alone
            got = _max_entry(_offline(spec, hw, prompt, output, engine,
                                      {**kw, "max_batch": grid[mid], "requests": one_wave}, memory_fraction),
                             kw["dtype"], True, kw.get("max_num_tokens"))
            evaluated += 1
            best = {k: min(v, got[k]) for k, v in best.items()}
            lo, hi, found = (mid, hi, got) if meets(got) else (lo, mid, found)
        ok += [found] if found is not None else []
    return ok, evaluated, best


def _with_slo(spec, hw, prompt, output, tps, dts, fixed, step, engine: str = "trtllm",
              memory_fraction: float | None = None):
    """Continuous batching (``serving.estimate``) over tp × dtype × concurrency."""
    entries, evaluated, shortest = [], 0, None
    for tp in tps:
        for dt in dts:
            got, why = _layouts(spec, hw, prompt, output, tp, dt, fixed.get("concurrency"), engine, memory_fraction)
            evaluated += len(got) + (why is not None)
            shortest = shortest or why
            entries += got
            step()
    return entries, evaluated, shortest


def _layouts(spec, hw, prompt, output, tp, dtype, concurrency, engine: str = "trtllm",
             memory_fraction: float | None = None):
    """Estimates of one (tp, dtype) over the concurrencies (vLLM, SGLang: up to their running-request limit; each
    at ``memory_fraction`` where one is given, ``frameworks.memory_kwargs``); (entries, the error when none fits)."""
    from ..serving import frameworks, online as serving
    eng = None if engine == frameworks.DEFAULT and memory_fraction is None else \
        frameworks.select(engine, hw, tp, memory_fraction=memory_fraction)
    mem = {} if eng is None else frameworks.memory_kwargs(eng, memory_fraction)

    def at(c: int):
        if eng is None or eng.scheduler is None:
            return serving.estimate(spec, hw, prompt, output, c, dtype=dtype, tp=tp, **mem)
        with _serve_engine_flag(engine):
            return serving.estimate(spec, eng.hw, prompt, output, c, dtype=dtype, tp=tp,
                                    **frameworks.online_kwargs(eng, c, None), **mem)
    try:
        one = at(1)
    except IronlawError as e:
        return [], str(e)
    max_conc = one.capacity["max_concurrency"]
    if eng is not None and eng.scheduler is not None:
        max_conc = min(max_conc, eng.scheduler.max_num_seqs)
    concs = [concurrency] if concurrency else serving.concurrency_grid(max_conc)
    out = []
    for c in concs:
        est = one if c == 1 else at(c)
        out.append(_entry(est, tp, dtype))
    return out, None


# ---------------------------------------------------------------------- one device
def _engine_device(hw, slo, engine: str) -> None:
    """The offline max-throughput run (trtllm-bench's, ``serving.throughput``) is a GPU engine's, as
    ``serve --max-throughput`` refuses it off a GPU (``serving.frameworks.max_throughput``): an IronlawError naming
    why on any other device (vLLM, SGLang: ``frameworks`` refuses them itself, naming ``--serve-engine``)."""
    from ...machine.engines import check_runs_on
    from ..serving import frameworks
    from ..serving.online import ENGINE, step_model
    check_runs_on(engine, hw, "--serve-engine")
    model = step_model(hw)
    if model.name != ENGINE and engine == frameworks.DEFAULT:
        what = ("the serving search without --slo prices trtllm-bench's offline max-throughput run, modelled on GPUs "
                "(with --slo a dense model is searched on the device's own steps)" if slo is None else
                "a mixture-of-experts model's serving search prices the max-throughput engine, modelled on GPUs")
        raise IronlawError(f"{what}; {model.rule}")


def _device(spec, hw, gpus, prompt, output, slo, targets, dtype, fixed, quiet, top,
            engine: str = "trtllm", memory_fraction: float | None = None, redundant: int = 0,
            given: str | None = None) -> tuple[list, int, object]:
    """(candidates that meet the targets, candidates evaluated, the model's graph) on ``hw``; an IronlawError
    naming why when none does."""
    from ...core import progress
    from .. import workloads
    g = workloads.resolve(workloads.Request(spec, phase="decode", batch=1, seq=prompt, dtype=dtype,
                                            device="cuda" if hw.kind == "gpu" else "cpu"))
    m = g.meta
    if "heads" not in m:
        raise IronlawError(f"{spec}: serving needs a decoder LLM built by ironlaw (heads known)")
    experts = int(m.get("experts", 0) or 0)
    if slo is None or experts:
        _engine_device(hw, slo, engine)
    if redundant:
        _check_redundant(g, redundant, engine, given, hw)
    if slo is not None and not experts and fixed.get("pp", 1) != 1:
        raise IronlawError(f"--pp {fixed['pp']}: with --slo a dense model's search models tensor parallelism only "
                           f"(serving.estimate); leave --pp out")
    tps, eps = _tps(hw, gpus, int(m["heads"]), int(m.get("kv_heads", m["heads"])), fixed, experts, redundant)
    from ...law.law import check_default_dtype
    check_default_dtype(g, hw, g.dtype)                 # a checkpoint's own dtype the device lacks, named
    dts = _dtypes(hw, g.dtype, dtype)
    if slo is None or experts:
        layouts = _grid(gpus, m, tps, eps, fixed)
        with progress.task(f"serving layouts on {hw.name}", total=len(layouts), quiet=quiet) as step:
            entries, shortest, evaluated, kws = _max_throughput(spec, hw, prompt, output, layouts, dts, step,
                                                                slo is not None, engine, memory_fraction, redundant)
    else:
        with progress.task(f"serving layouts on {hw.name}", total=len(tps) * len(dts), quiet=quiet) as step:
            entries, evaluated, shortest = _with_slo(spec, hw, prompt, output, tps, dts, fixed, step, engine,
                                                     memory_fraction)
    if not entries:
        raise IronlawError(shortest or f"{spec} does not fit on {hw.name} with any tensor-parallel degree up to {gpus}")
    if slo is not None and experts:
        ok, more, best = _within(spec, hw, prompt, output, entries, kws, targets, top, engine, memory_fraction)
        evaluated += more
    else:
        ok = [e for e in entries if all(e[k] <= v for k, v in targets.items())]
        best = {k: min(e[k] for e in entries) for k in targets}
    if not ok:
        raise IronlawError(f"no serving layout meets --slo {slo}: the best reachable is " + ", ".join(
            f"{k[:-2]} {v * 1e3:.1f} ms" for k, v in best.items()))
    for e in ok:
        e["hardware"] = hw.name
    return ok, evaluated, g


def _redundant_offline(redundant: int, slo: str | None) -> None:
    """``--redundant-experts N``: a count of slots (``parallel.check_redundant``), priced in the offline
    max-throughput scenario, the one ``serve`` takes it in (``api.options.scenario_options``): not with --slo,
    whose layouts re-run online."""
    from .. import parallel
    parallel.check_redundant(redundant)
    if redundant and slo is not None:
        raise IronlawError(f"--redundant-experts {redundant} belongs to the offline max-throughput scenario (serve "
                           f"--max-throughput), which the serving search ranks without --slo; leave --slo out")


def _check_redundant(g, redundant: int, engine: str, given: str | None, hw) -> None:
    """``--redundant-experts N`` as ``serve --max-throughput`` checks it: a count of slots of a model with routed
    experts, at most the experts (``parallel.check_redundant_slots``), on TensorRT-LLM's wide-EP
    (``machine.engines.check_wide_ep``, serve's refusal, naming the engine as --serve-engine or the device's
    default)."""
    from ...machine.engines import check_wide_ep, named
    from .. import parallel
    parallel.check_redundant_slots(redundant, g)
    check_wide_ep(engine, None, redundant, named(engine, given, hw, "--serve-engine"))


# ---------------------------------------------------------------------- prices and ranking
def parse_prices(text) -> dict[str, float]:
    """'h100=2.5,b200=5' (or a dict) -> {'h100': 2.5, 'b200': 5.0}: USD per GPU-hour by device name."""
    import math
    if isinstance(text, dict):
        items = [(str(k), v) for k, v in text.items()]
    else:
        items = []
        for part in str(text).split(","):
            name, eq, value = part.partition("=")
            if not eq or not name.strip() or not value.strip():
                raise IronlawError(f"--price expects DEVICE=USD pairs, {PRICE_EXAMPLE}, got '{part}'")
            items.append((name.strip(), value.strip()))
    out: dict[str, float] = {}
    for name, value in items:
        try:
            usd = float(value)
        except (TypeError, ValueError):
            raise IronlawError(f"--price {name}={value}: the price must be a number of USD per GPU-hour, "
                               f"{PRICE_EXAMPLE}") from None
        if not math.isfinite(usd) or usd < 0:
            raise IronlawError(f"--price {name}={value}: the price must be a non-negative number of USD per GPU-hour")
        if name in out:
            raise IronlawError(f"--price gives {name} twice")
        out[name] = usd
    return out


def _prices(names: list[str], on_text: str, prices, price_per_gpu_hour) -> dict[str, tuple[float | None, str]]:
    """Device name -> (USD per GPU-hour or None, its source), from --price, --price-per-gpu-hour or the defaults."""
    from ...law import power
    given = parse_prices(prices) if prices is not None else {}
    unknown_names = [n for n in given if n not in names]
    if unknown_names:
        raise IronlawError(f"--price names {', '.join(unknown_names)}, not searched (--on {on_text})")
    if price_per_gpu_hour is not None:
        if len(names) > 1:
            raise IronlawError(f"--price-per-gpu-hour prices one device; with --on {on_text} give each its own: "
                               f"{PRICE_EXAMPLE}")
        if given:
            raise IronlawError("--price-per-gpu-hour and --price both price the device; give one of them")
    out = {}
    for n in names:
        if n in given:
            out[n] = (given[n], "given: --price")
        else:
            usd, src = power.price(_Named(n), price_per_gpu_hour)
            out[n] = (usd, src if usd is not None else f"no default price for {n}; give --price {n}=USD")
    return out


class _Named:
    """Just the name ``law.power.price`` looks a device's default price up by."""
    def __init__(self, name: str):
        self.name = name


def _check_rank(rank: str) -> str:
    if rank not in RANKS:
        from ...core.errors import unknown
        raise unknown("--rank key", rank, RANKS)
    return rank


def _priced(entries: list[dict], usd_h: float | None, source: str) -> None:
    for e in entries:
        e["usd_per_gpu_hour"] = usd_h
        e["price_source"] = source
        e["usd_per_million_output_tokens"] = (None if usd_h is None
                                              else usd_h / 3600.0 / e["tokens_per_s_per_gpu"] * 1e6)


def _order(entries: list[dict], rank: str) -> list[dict]:
    if rank == "usd-per-million-tokens":
        return sorted(entries, key=lambda e: (e["usd_per_million_output_tokens"], -e["tokens_per_s_per_gpu"]))
    return sorted(entries, key=lambda e: -e["tokens_per_s_per_gpu"])


# ---------------------------------------------------------------------- the search
def devices(on) -> list:
    """The hardware ``on`` names: one name, a comma-separated list of names, a Hardware, or a list of either."""
    from ...machine import hardware
    given = hardware.listed(on)
    hws = [hardware.get(h) if isinstance(h, str) else h for h in given]
    hardware.check_distinct(given, hws, "a search")
    return hws


def search(spec: str, on, gpus: int, prompt: int, output: int, slo: str | None = None, dtype: str | None = None,
           top: int = 5, fixed: dict | None = None, quiet: bool = True, rank: str = "tokens-per-gpu",
           prices=None, price_per_gpu_hour: float | None = None, cost=None, engine: str | None = None,
           memory_fraction: float | None = None, redundant_experts: int = 0):
    """Rank serving layouts of ``spec`` on up to ``gpus`` devices of each device ``on`` names (module docstring),
    priced under the serving framework ``engine`` (None: each device's default, ``machine.engines.default_for``);
    each reported layout carries its ``energy`` per output token at its device's price and ``cost``'s grid
    (``run_cost.RunInputs``). ``memory_fraction``: ``serve --memory-fraction``, every layout's engine at that share
    of the device's memory (``serving.frameworks``). ``redundant_experts``: ``serve --redundant-experts``, the
    slots every attention-DP/EP layout holds (module docstring)."""
    from ...machine.engines import check_engine, resolve
    from ...machine.hardware import unit_name
    from ...machine.network.topology import check_count
    from ..serving import online as serving
    from ..serving.engine import whole_tokens
    if engine is not None:
        check_engine(engine, "--serve-engine")
    from ..serving.frameworks import check_memory_fraction
    memory_fraction = check_memory_fraction(memory_fraction)
    prompt = whole_tokens(prompt, "--prompt")         # before the model is built on seq=prompt (named --seq there)
    from .. import workloads                          # a request longer than the model's context, named as serve
    from ..serving.engine import check_context        # names it (--prompt + --output), not as the build (--seq)
    check_context(spec, workloads.resolve(workloads.Request(spec, phase="decode", seq=1, dtype=dtype)).meta,
                  prompt, whole_tokens(output, "--output"))
    rank = _check_rank(rank)
    hws = devices(on)
    names = [h.name for h in hws]
    gpus = check_count(gpus, "--gpus")
    on_text = on if isinstance(on, str) else ",".join(names)
    price = _prices(names, on_text, prices, price_per_gpu_hour)
    fixed = {k: v for k, v in (fixed or {}).items() if v is not None}
    for k in ("tp", "ep", "cp", "dp"):
        if k in fixed:
            check_count(fixed[k], f"--{k}")
    for k in ("cp", "dp"):
        if fixed.get(k, 1) != 1:
            raise IronlawError(f"--{k} {fixed[k]}: the serving search sets it itself; leave --{k} out")
    targets = serving.parse_slo(slo) if slo is not None else {}
    _redundant_offline(redundant_experts, slo)
    t0 = time.perf_counter()
    entries, evaluated, skipped, g, used = [], 0, [], None, {}
    for hw in hws:
        try:
            usd_h, src = price[hw.name]
            if rank == "usd-per-million-tokens" and usd_h is None:
                raise IronlawError(f"--rank usd-per-million-tokens: {src}")
            eng = resolve(engine, hw, "--serve-engine")
            used[hw.name] = eng if hw.kind == "gpu" else "none"   # off a GPU: its own steps, no framework's
            got, n, g1 = _device(spec, hw, gpus, prompt, output, slo, targets, dtype, fixed, quiet, top, eng,
                                 memory_fraction, redundant_experts, engine)
        except IronlawError as e:
            if len(hws) == 1:
                raise
            skipped.append({"hardware": hw.name, "reason": str(e)})
            continue
        _priced(got, usd_h, src)
        entries, evaluated, g = entries + got, evaluated + n, g or g1
    if not entries:
        raise IronlawError(f"no device can serve {spec}: " + "; ".join(f"{s['hardware']}: {s['reason']}"
                                                                        for s in skipped))
    res = _ranked(spec, names, g, gpus, prompt, output, slo, targets, rank, entries, evaluated, skipped, top, t0)
    res.setup["settings"] = engine_settings(used, {e["hardware"] for e in entries})
    if memory_fraction is not None:
        res.setup["settings"]["memory_fraction"] = memory_fraction
    res.setup["device_unit"] = unit_name(h.kind for h in hws)
    grid = cost.gco2_per_kwh if cost is not None else None
    for e in res.top:
        usd_h, src = price[e["hardware"]]
        e["energy"] = _energy(e, usd_h, grid)
        if e["energy"] is not None:               # the price's own source, not "given", where it is a default
            e["energy"]["price_source"] = src
    return res


def engine_settings(used: dict, served: set) -> dict:
    """The search's ``settings``: ``serve_engine``, the framework every ranked device ran ("none" off a GPU: its
    own steps); where the devices' differ, ``"per-device"`` and ``serve_engines``, each ranked device's."""
    per = {name: e for name, e in used.items() if name in served}
    one = set(per.values())
    if len(one) == 1:
        return {"serve_engine": one.pop()}
    return {"serve_engine": "per-device", "serve_engines": per}


def _energy(e: dict, usd_h: float | None, grid: float | None) -> dict | None:
    """Energy, cost and carbon per output token of one reported layout (``serving.features.energy``), from the
    very prediction the search ranked it by (None when its device states no power)."""
    from ...law import power
    from ..serving.features import energy
    est = e.pop("_est")
    if not power.has_power(est.hw):
        return None
    if e.get("latency_from") == "serving.estimate":
        return energy.of_serving(est, e["tp"], usd_h, grid)
    return energy.of_throughput(est, usd_h, grid)


def _ranked(spec, names, g, gpus, prompt, output, slo, targets, rank, entries, evaluated, skipped, top, t0):
    from . import SearchResult
    ok = _order(entries, rank)
    for i, e in enumerate(ok[:top], 1):
        e["rank"] = i
    setup = {"gpus": gpus, "prompt": prompt, "output": output, "slo": dict(targets),
             "scenario": "max-throughput" if slo is None else "latency targets", "rank_by": rank,
             "devices": names, "skipped": skipped}
    dtypes = "/".join(dict.fromkeys(e["dtype"] for e in ok[:top]))      # each layout picks its weight dtype
    return SearchResult("serve", spec, ",".join(names), dtypes, setup, evaluated, len(ok), ok[:top], "local",
                        time.perf_counter() - t0)
