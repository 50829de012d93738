"""Offline max-throughput serving: the scenario of ``trtllm-bench throughput`` (TensorRT-LLM).

All ``requests`` (each ``prompt`` tokens in, ``output`` tokens out) are queued at once. The engine's limits,
KV cache and batch are ``engine``'s; one step is ``step.step_seconds``, the pricing the online mode (``online``)
shares: the two modes differ only in how batches form (waves of queued requests here).

    steady state   a request lives S = n_ctx + output − 1 steps (n_ctx context steps, which produce its first
                   token: one where the prompt fits the token budget beside the step's decode tokens, else
                   ⌈prompt / (max_num_tokens − d)⌉ chunks, at least ⌈prompt / cap⌉ where the scheduler caps
                   the prompt tokens a request takes per step, ``context_steps``); with B sequences in flight
                   on an engine, r = B / S
                   requests finish per step (Little's law), fewer where the token budget binds:
                   r · (prompt + output − 1) ≤ max_num_tokens where a step mixes decode and prompt tokens
                   (TensorRT-LLM, vLLM), r · prompt ≤ max_num_tokens where the prompts run as prefill batches
                   of their own (SGLang's chunked_prefill_size caps those alone: ``budget_tokens``). A step
                   carries d = r·(output − 1) decode tokens,
                   each reading a context of prompt + output/2 on average, and r·prompt prompt tokens:
                       r·n_ctx ≥ 1   every step is mixed:  t = t_step(d, r·prompt)
                       r·n_ctx < 1   a share r·n_ctx / k of the steps carries k prompts at once (one chunk,
                                     prompt / n_ctx tokens, where a prompt needs several steps), the others
                                     decode only, as one CUDA graph padded to the next captured batch size
                                     (the published runs' cuda_graph_config: 1, 2, 4 … 256, 384, 512, 1024
                                     … 8192, enable_padding). k is the most whole prompts the step's token
                                     budget takes beside its decode tokens, k = ⌊(max_num_tokens − d) /
                                     prompt⌋ (at least 1, at most B): the scheduler fills a step with
                                     context requests while max_num_tokens allows (TensorRT-LLM's
                                     MicroBatchScheduler; docs/source/performance/performance-tuning-guide/
                                     tuning-max-batch-size-and-max-num-tokens.md), so requests queued at
                                     once start k to a step, finish k to a step, and free room for the
                                     next k together: the bursts last as long as the run. With attention
                                     data parallelism the dp ranks run each step together (the experts'
                                     collectives) and admit their prompts in the same steps: identical
                                     requests, queued at once and shared out evenly, finish on every rank
                                     in the same step and free the same room, so a mixed step carries its
                                     k prompts on every rank
                   t_step = law(step graph) + step_s (the fixed runtime cost per step); a step with prompt
                   tokens runs eagerly (TensorRT-LLM replays CUDA graphs for decode-only steps; under
                   attention DP only when every rank is decode-only: model_engine._maybe_get_cuda_graph)
                   and lasts at least launches · launch_s, the host launching its kernels one by one.
    waves          identical requests queued at once run in waves: the first pp·B start together, finish
                   together, and free their room for the next pp·B; each rank's n = ⌈N/dp⌉ requests make
                   ⌊n/(pp·B)⌋ full waves of pp·B/r steps at batch B, and the rest b = n mod pp·B one more wave
                   at batch b/pp:  time = ⌊n/(pp·B)⌋ · pp·B/r · t(B) + b/r_b · t(b/pp)
    one wave       where a rank's n requests all fit its batch at once (n ≤ B, no PP) no request arrives after
                   the first admissions, so there is no steady stream: a ramp of R steps admits them, each
                   step as many whole prompts as max_num_tokens holds beside the decode tokens of those
                   admitted before (k_i = ⌊(max_num_tokens − admitted) / prompt⌋), then output − 1 decode-only
                   steps: output − R at the whole batch, R − 1 while the cohorts finish in the order they
                   started. R + output − 1 steps in all, against the n/r = S steps (n = B) of the
                   steady state, whose every step would carry r·prompt prompt tokens beside its decode
                   (``one_wave``; where the ramp would outlast a request's life, the steady state)
    parallelism    --tp N: tensor parallel (``parallel.shard_inference``); --pp N: N stages of layers/N, N
                   micro-batches in flight (a step is one stage's work on one micro-batch, plus the
                   stage-to-stage send); --attention-dp with --ep (MoE): every rank runs attention on its own
                   sequences, experts sharded (``serving_parallel``).
    tokens/s       N · output / time over the whole system; per GPU = / (tp · pp).
"""
from __future__ import annotations

import math
import time as _time
from dataclasses import dataclass, field

from . import engine as eng
from .expertcarry import notes as expert_notes
from .engine import (FITTED, MAX_TOKENS, Layout, check_inputs, engine_of, engine_run, memory,  # noqa: F401
                     prepare)
from .step import (CUDA_GRAPH_BATCHES, EngineRun, ServingConstants, bottleneck, expert_weights,  # noqa: F401
                   padded, step_seconds)

DRAIN_SEGMENTS = 3     # runs of steps the one wave's drain is priced in (``one_wave``)


@dataclass
class ThroughputEstimate:
    spec: str
    hw: object
    layout: Layout
    dtype: str
    kv_dtype: str
    prompt: int
    output: int
    requests: int
    batch: int                       # sequences in flight, whole system
    batch_per_engine: int            # per attention rank and micro-batch
    batch_limit: str                 # "kv_memory" | "max_batch" | "max_num_tokens"
    limits: object                   # engine.Limits
    memory: dict
    time_s: float
    steady: dict
    steps: list                      # (steps, Estimate): the step kinds whose law time + step_s make time_s
    constants: ServingConstants = None
    predict_s: float = 0.0
    notes: list = field(default_factory=list)
    energy: dict | None = None       # per output token (``serving.features.energy.with_energy``; None: not asked)
    steady_parts: list = field(default_factory=list)  # [(share of the steps, Estimate)] of the steady state at
                                                      # the batch: what a stream of requests meets (latencies)
    moe: dict | None = None          # an MoE model's experts per rank and expert exchange (``moe_plan``)
    lengths: dict | None = None      # a mix of request lengths read from a file (``serving.lengths``: what was read)
    output_total: int | None = None  # … its output tokens, all requests (None: requests · output)

    @property
    def output_tokens_per_s(self) -> float:
        return (self.output_total or self.requests * self.output) / self.time_s

    def to_dict(self) -> dict:
        g = self.layout.gpus
        b = bottleneck(max(self.steps, key=lambda se: se[0] * float(se[1].time_s))[1])
        return {"schema": "ironlaw.serve/1", "scenario": "max-throughput", "workload": self.spec,
                "hardware": self.hw.name, "gpus": g, "tp": self.layout.tp, "pp": self.layout.pp,
                "ep": self.layout.ep, "attention_dp": self.layout.attention_dp,
                "expert_imbalance": self.layout.expert_imbalance, "routing": self.layout.routing, "dtype": self.dtype,
                "kv_dtype": self.kv_dtype,
                "prompt_tokens": self.prompt, "output_tokens": self.output, "requests": self.requests,
                "time_s": self.time_s, "output_tokens_per_s": self.output_tokens_per_s,
                "output_tokens_per_s_per_gpu": self.output_tokens_per_s / g,
                "tokens_per_s": self.output_tokens_per_s,
                "requests_per_s": self.requests / self.time_s, "batch": self.batch,
                "batch_per_engine": self.batch_per_engine, "batch_limit": self.batch_limit,
                "engine": {"max_batch_size": self.limits.max_batch, "max_num_tokens": self.limits.max_num_tokens,
                           "source": self.limits.source},
                "memory_per_gpu": self.memory, "steady_state": self.steady, "step_bottleneck": b,
                "constants": dict(vars(self.constants)), "notes": self.notes, "energy": self.energy, "moe": self.moe,
                "lengths": self.lengths,
                **expert_weights(self.steps[0][1].graph.meta)}


# ---------------------------------------------------------------------- one step
@dataclass
class Steady:
    """The steady state of one engine: its numbers (``ThroughputEstimate.steady``) and the steps it mixes."""
    stats: dict
    parts: list                      # [(share of the steps, Estimate of that step)]


def burst(prompt: int, n_ctx: int, decode: int, batch: int, max_num_tokens: int, mixed: bool = True) -> int:
    """Prompts one mixed step admits together (module docstring, k): as many whole prompts as the step's token
    budget holds beside its ``decode`` tokens (``mixed`` False: the whole budget, ``budget_tokens``), at least
    one and at most ``batch``; a prompt longer than the budget (``n_ctx`` > 1) runs one chunk a step."""
    if n_ctx > 1:
        return 1
    return max(1, min(batch, (max_num_tokens - (decode if mixed else 0)) // prompt))


def budget_tokens(prompt: int, output: int, mixed: bool = True) -> int:
    """Tokens of one request that its engine charges to the step token budget (module docstring, steady state):
    where a step mixes them (``mixed``: TensorRT-LLM's max_num_tokens, vLLM's max_num_batched_tokens, which cap
    a step's decode and prompt tokens together) its prompt and its output − 1 decode tokens; where the prompts
    run as prefill batches of their own (SGLang) its prompt alone. SGLang caps only its prefill (extend) batch
    with chunked_prefill_size: python/sglang/srt/managers/scheduler.py ``Scheduler.get_new_batch_prefill``
    builds its ``PrefillAdder`` (python/sglang/srt/managers/schedule_policy.py) with the decode batch's tokens
    charged to that budget only under enable_mixed_chunk (``running_bs if self.is_mixed_chunk else 0``), and
    ``PrefillAdder._update_prefill_budget`` charges each admitted request its extend tokens."""
    return prompt + output - 1 if mixed else prompt


def rate(prompt: int, output: int, batch: int, max_num_tokens: int, n_ctx: int,
         mixed: bool = True) -> tuple[float, int]:
    """(requests finishing per step, decode tokens per step) of ``batch`` sequences whose prompts take ``n_ctx``
    context steps (module docstring, steady state), the token budget charged as the engine charges it
    (``budget_tokens``)."""
    r = min(batch / (n_ctx + output - 1), max_num_tokens / budget_tokens(prompt, output, mixed))
    return r, int(round(r * (output - 1)))


def context_steps(prompt: int, output: int, batch: int, max_num_tokens: int, mixed: bool = True,
                  cap: int = 0) -> int:
    """Steps a prompt's context takes (module docstring, n_ctx): one where it fits beside the step's decode
    tokens, else chunks of what they leave of the token budget; an engine that does not mix them (``mixed``
    False: SGLang, its prefill batch a step of its own, ``ServingConstants.mixed_steps``) chunks the prompt to
    the whole budget. The scheduler gives a step's generation requests
    their tokens first and the context chunks the rest: TensorRT-LLM's MicroBatchScheduler sizes them to
    ``ctxTokensCapacity = maxNumTokensRuntime − batchNumTokens`` (cpp/tensorrt_llm/batch_manager/
    microBatchScheduler.cpp), vLLM's scheduler schedules its running requests before it chunks a waiting prompt
    to the token budget left (vllm/v1/core/sched/scheduler.py). Chunks are equal (no rounding to the chunk
    unit). The decode tokens are those of the first estimate, n_ctx = ⌈prompt / max_num_tokens⌉; more context
    steps only lower them, so decode + chunk stays within the budget. A scheduler that caps the prompt tokens one
    request takes per step (``cap`` > 0: vLLM's long_prefill_token_threshold, ``ServingConstants.prefill_cap_tokens``)
    takes at least ⌈prompt / cap⌉ steps over it, however much of the budget is left."""
    n_ctx = math.ceil(prompt / max_num_tokens)
    if mixed:
        _, d = rate(prompt, output, batch, max_num_tokens, n_ctx)
        n_ctx = math.ceil(prompt / max(max_num_tokens - d, 1))
    return max(n_ctx, math.ceil(prompt / cap)) if cap > 0 else n_ctx


def steady(run: EngineRun, batch: int, max_num_tokens: int) -> Steady:
    """The steady state of ``batch`` sequences on one engine (module docstring): rate, step mix, step time."""
    mixed = run.constants.mixed_steps
    n_ctx = context_steps(run.prompt, run.output, batch, max_num_tokens, mixed, run.constants.prefill_cap_tokens)
    S = n_ctx + run.output - 1
    r, d = rate(run.prompt, run.output, batch, max_num_tokens, n_ctx, mixed)
    q = r * n_ctx
    k = r                                # prompts a mixed step carries (on average where every step is mixed)
    if q >= 1.0:
        mixed_share = 1.0
        parts = [(1.0, step_seconds(run, d, r * run.prompt, r, pad=False))]
    else:                                # attention DP: the ranks admit their prompts in the same steps
        k = burst(run.prompt, n_ctx, d, batch, max_num_tokens, mixed)
        mixed_share = q / k
        parts = [(mixed_share, step_seconds(run, d, k * run.prompt / n_ctx, k / n_ctx, pad=False)),
                 (1.0 - mixed_share, step_seconds(run, max(d, 1), 0.0, 0.0, pad=True))]
    t = sum(share * ts for share, (ts, _) in parts)
    hosts = [(share, est.graph.meta["host"], float(est.time_s)) for share, (_, est) in parts]
    return Steady({"requests_per_step": r, "steps_per_request": S, "context_steps": n_ctx,
                   "decode_tokens_per_step": d, "prompt_tokens_per_step": r * run.prompt,
                   "mixed_step_share": mixed_share, "prompts_per_mixed_step": float(k), "step_s": t,
                   "output_tokens_per_step": r * run.output,
                   "host_s": sum(w * h.time_s for w, h, _ in hosts),
                   "device_s": sum(w * dev for w, _, dev in hosts),
                   "host_bound_share": sum(w for w, h, dev in hosts if h.time_s > dev),
                   "host_cpu": hosts[0][1].cpu, "host_speed": hosts[0][1].speed,
                   "host_speed_stated": hosts[0][1].stated, "host_runtime": hosts[0][1].runtime,
                   "host_serial": hosts[0][1].serial},
                  [(share, est) for share, (_, est) in parts])


def ramp(prompt: int, output: int, requests: int, max_num_tokens: int,
         mixed: bool = True, cap: int = 0) -> list[tuple[int, int]] | None:
    """[(decode tokens, prompts admitted)] of each step of the ramp that admits ``requests`` queued at once into
    an engine that holds them all (module docstring, one wave): each step takes as many whole prompts as its
    token budget holds beside the decode tokens of the requests admitted before it, k_i = ⌊(max_num_tokens −
    admitted) / prompt⌋ (``mixed`` False: beside none, its prefill batch a step apart: ``budget_tokens``). None
    where a step admits none or the ramp outlasts a request's life (its first requests would finish and free
    room during it: the steady state's case), and where a per-request cap (``cap``: vLLM's
    long_prefill_token_threshold) splits each prompt over several steps, so that no step admits a whole one."""
    if 0 < cap < prompt:
        return None
    admitted, steps = 0, []
    while admitted < requests:
        k = min(requests - admitted, (max_num_tokens - (admitted if mixed else 0)) // prompt)
        if k < 1 or len(steps) >= output:
            return None
        steps.append((admitted, k))
        admitted += k
    return steps


def segments(values: list, n: int) -> list[tuple[int, tuple]]:
    """``values`` (tuples of numbers, in order) in at most ``n`` runs of consecutive steps: [(steps in the run,
    the run's mean of each number)]."""
    out = []
    for i in range(min(n, len(values))):
        run = values[i * len(values) // n:(i + 1) * len(values) // n]
        if run:
            out.append((len(run), tuple(sum(col) / len(run) for col in zip(*run))))
    return out


def one_wave(run: EngineRun, full: Steady, requests: int, max_num_tokens: int) -> tuple[float, list] | None:
    """(seconds, [(steps, Estimate)]) of one rank's ``requests`` where they all fit its batch at once and no
    pipeline interleaves them (module docstring, one wave): the ramp's R mixed steps (``ramp``), then
    output − 1 decode-only steps (one CUDA graph each): output − R at the whole batch, then R − 1 while the
    ramp's cohorts finish in the order they started, each step's batch the requests admitted after the
    cohort that just finished. R + output − 1 steps in all. The ramp is priced at its mean step (each of its
    steps fills the token budget to within a prompt, so they differ only in how many of those tokens decode);
    the drain in ``DRAIN_SEGMENTS`` runs of steps at each run's mean (its batch falls from the whole wave to one
    cohort, and a step's time is convex in its batch: the CUDA graph's padding, the weights' read). None where
    ``ramp`` is None or the engine pipelines (pp > 1); ``full`` gets the wave's counts."""
    steps = (ramp(run.prompt, run.output, requests, max_num_tokens, run.constants.mixed_steps,
                  run.constants.prefill_cap_tokens) if run.lay.pp == 1
             else None)
    if steps is None:
        return None
    parts, total = [], 0.0
    for n, (d, k) in segments(steps, 1):
        t, est = step_seconds(run, int(round(d)), k * run.prompt, k, pad=False)
        parts.append((n, est))
        total += n * t
    plateau = run.output - len(steps)                 # every request decoding, none admitted yet finished
    drain = [(requests - a - k,) for a, k in steps[:-1]]   # … then one cohort fewer each step
    for n, (d,) in ([(plateau, (requests,))] if plateau else []) + segments(drain, DRAIN_SEGMENTS):
        t, est = step_seconds(run, max(int(round(d)), 1), 0.0, 0.0, pad=True)
        parts.append((n, est))
        total += n * t
    full.stats.update(waves=1, wave_steps=float(len(steps) + plateau + len(drain)), tail_requests=0, tail_steps=0.0,
                      ramp_steps=len(steps), prompts_per_ramp_step=requests / len(steps))
    return total, parts


def waves(run: EngineRun, full: Steady, batch: int, requests: int, max_num_tokens: int) -> tuple[float, list]:
    """(seconds, [(steps, Estimate)]) for one rank's ``requests`` run in waves of pp·``batch`` (module
    docstring); ``full`` is the steady state at ``batch``, updated with the waves' counts. Where they make one
    wave, its ramp and decode (``one_wave``)."""
    pp = run.lay.pp
    if requests <= pp * batch:
        wave = one_wave(run, full, requests, max_num_tokens)
        if wave is not None:
            return wave
    n_full, rest = divmod(requests, pp * batch)
    full_steps = n_full * pp * batch / full.stats["requests_per_step"]
    parts = [(full_steps * w, e) for w, e in full.parts]
    total = full_steps * full.stats["step_s"]
    tail_steps = 0.0
    if rest:
        tail = steady(run, max(math.ceil(rest / pp), 1), max_num_tokens)
        tail_steps = rest / tail.stats["requests_per_step"]
        parts += [(tail_steps * w, e) for w, e in tail.parts]
        total += tail_steps * tail.stats["step_s"]
    full.stats.update(waves=n_full, wave_steps=full_steps, tail_requests=rest, tail_steps=tail_steps)
    return total, parts


def drained(run: EngineRun, full: Steady, batch: int, requests: int, max_num_tokens: int,
            lengths) -> tuple[float, list]:
    """(seconds, [(steps, Estimate)]) of one rank's ``requests`` of a mix of lengths (``serving.drain``): where
    they all fit the batch at once, the ramp that admits them (``one_wave``'s, at the mean prompt), then each
    decodes its own output; else the steady state's requests / r steps, less the drain's work W at the full batch
    (W / B decode-only steps at B), plus the drain's steps at their own batch. ``full`` gets the counts."""
    from dataclasses import replace
    from .drain import profile, segments as bands
    n_ctx = int(full.stats["context_steps"])
    wave = (ramp(run.prompt, run.output, requests, max_num_tokens, run.constants.mixed_steps,
                  run.constants.prefill_cap_tokens)
            if requests <= batch else None)
    parts, total = [], 0.0
    if wave is not None:
        for n, (d, k) in segments(wave, 1):
            t, est = step_seconds(run, int(round(d)), k * run.prompt, k, pad=False)
            parts.append((n, est))
            total += n * t
        left, ctx = profile(lengths.prompts, lengths.outputs, 0, 0.0, stream=False)
        b, moved = left * requests / lengths.requests, 0.0        # this rank's share of the mix
    else:
        r = full.stats["requests_per_step"]
        held = r * (sum(lengths.outputs) / lengths.requests + n_ctx - 1)     # the batch, Little's law
        b, ctx = profile(lengths.prompts, lengths.outputs, n_ctx, held, stream=True)
        parts = [(requests / r * w, e) for w, e in full.parts]
        total = requests / r * full.stats["step_s"]
        moved = float(b.sum()) / held                              # the drain's work, in steps at the batch
        t, est = step_seconds(run, max(int(round(held)), 1), 0.0, 0.0, pad=True)
        parts.append((-moved, est))
        total -= moved * t
    for n, mean_batch, context in bands(b, ctx):
        t, est = step_seconds(replace(run, decode_context=max(int(round(context)), 1)),
                              max(int(round(mean_batch)), 1), 0.0, 0.0, pad=True)
        parts.append((n, est))
        total += n * t
    full.stats.update(waves=0 if wave is None else 1, wave_steps=0.0 if wave is not None else requests / r,
                      tail_requests=0, tail_steps=0.0, drain_steps=len(b), drain_work_steps=moved,
                      drain_mean_batch=float(b.mean()) if len(b) else 0.0)
    return total, parts


# ---------------------------------------------------------------------- the estimate
def max_throughput(spec: str, hw, prompt: int, output: int, *, tp: int = 1, pp: int = 1, ep: int = 1,
                   attention_dp: bool = False, expert_imbalance: float = 1.0, dtype: str | None = None,
                   kv_dtype: str | None = None, kv_fraction: float = eng.KV_FRACTION, max_batch: int | None = None,
                   max_num_tokens: int | None = None, requests: int | None = None,
                   constants: ServingConstants = FITTED, routing: str | None = None, dispatcher: str | None = None,
                   redundant_experts: int = 0, lengths=None) -> ThroughputEstimate:
    """Offline max-throughput serving of ``spec`` on ``hw`` (module docstring); ``lengths``: a mix of request
    lengths (``serving.lengths.Lengths``, ``prompt`` and ``output`` its means, ``requests`` its count): its steps
    at its contexts (``Lengths.on``), its drain request by request (``drained``); ``routing``: the busiest expert
    rank's load per step under that router (``core.routing``: balanced, power_law_<α>; None: uniform, times
    ``expert_imbalance``); ``dispatcher``, ``redundant_experts``: the expert exchange and EPLB's extra slots
    (``serving.parallel``)."""
    from ...machine import hardware
    from ...machine.network.topology import check_count
    t0 = _time.perf_counter()
    hw = hardware.get(hw) if isinstance(hw, str) else hw
    check_inputs(prompt, output, kv_fraction, requests, max_batch, max_num_tokens, expert_imbalance)
    eng.check_routing(routing, expert_imbalance)
    lay = Layout(check_count(tp, "--tp"), check_count(pp, "--pp"), check_count(ep, "--ep"), bool(attention_dp),
                 float(expert_imbalance), routing, dispatcher, redundant_experts)
    from .kvcache import dtypes
    from .step import checkpoint_experts
    experts = checkpoint_experts(spec, hw, dtype)           # no --dtype: the experts as the checkpoint stores them
    dtype, kv_dtype = dtypes(hw, dtype, kv_dtype, spec)   # a dtype the device lacks is an error, not a fallback
    meta, limits, mem = prepare(spec, hw, lay, dtype, kv_dtype, prompt, output, kv_fraction, max_batch,
                                 max_num_tokens, constants, experts, lengths)
    from .parallel import check_dispatcher
    check_dispatcher(hw, meta, lay, dtype, limits.max_num_tokens)
    n = requests or (lengths.requests if lengths is not None else eng.requests_for(prompt, output))
    fit, reason = eng.settle_batch(mem["kv_budget_bytes"], mem["kv_bytes_per_sequence"], prompt, output,
                                   limits.max_batch * lay.pp)
    per_engine = max(min(fit // lay.pp, math.ceil(n / (lay.dp * lay.pp))), 1)
    if per_engine * lay.dp * lay.pp >= n and per_engine < fit // lay.pp:
        reason = "requests"
    run = engine_of(spec, hw, lay, dtype, kv_dtype, (prompt, output), meta, limits, mem, per_engine, constants,
                    experts)
    if lengths is not None:
        run = lengths.on(run)
    full = steady(run, per_engine, limits.max_num_tokens)
    if full.stats["requests_per_step"] * full.stats["steps_per_request"] < per_engine - 0.5:
        reason = "max_num_tokens"
    if lengths is not None and not lengths.uniform and lay.pp == 1:
        total, steps = drained(run, full, per_engine, math.ceil(n / lay.dp), limits.max_num_tokens, lengths)
    else:
        total, steps = waves(run, full, per_engine, math.ceil(n / lay.dp), limits.max_num_tokens)
    return ThroughputEstimate(spec, hw, lay, dtype, kv_dtype, prompt, output, n, per_engine * lay.dp * lay.pp,
                              per_engine, reason, limits, mem, total, full.stats, steps, constants,
                              _time.perf_counter() - t0, steady_parts=full.parts,
                              notes=expert_notes(run, [e for _, e in steps]) + module_notes(steps), moe=moe_plan(hw, meta, lay, dtype),
                              lengths=None if lengths is None else lengths.stats(),
                              output_total=None if lengths is None else sum(lengths.outputs))


def module_notes(steps) -> list[str]:
    """The steps' notes that their MLA attention ran on a module class (``step.module_step``), once each."""
    return list(dict.fromkeys(e.graph.meta["mla_module"] for _, e in steps if e.graph.meta.get("mla_module")))


def moe_plan(hw, meta: dict, lay: Layout, dtype: str) -> dict | None:
    """An MoE model's routed experts per rank (redundant slots included) and, under attention DP with EP, the
    expert exchange and what times it (``serving.parallel``); None for a dense model."""
    if not meta.get("experts"):
        return None
    from .parallel import exchange_plan, experts_per_rank
    exchange = exchange_plan(hw, meta, lay, dtype) if lay.attention_dp and lay.ep > 1 else None
    return {"placement": experts_per_rank(meta, lay), "exchange": exchange}
