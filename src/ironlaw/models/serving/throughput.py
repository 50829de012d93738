"""Offline max-throughput serving: the scenario of ``trtllm-bench throughput`` (TensorRT-LLM).

All ``requests`` (each ``prompt`` tokens in, ``output`` tokens out) are queued at once. The engine's limits,
KV cache and batch are ``serving_engine``'s; one step is ``serving_step``'s graph, predicted by the law.

    steady state   a request lives S = n_ctx + output − 1 steps (n_ctx = ⌈prompt / max_num_tokens⌉ context
                   steps, which produce its first token); with B sequences in flight on an engine, r = B / S
                   requests finish per step (Little's law), fewer where the token budget binds:
                   r · (prompt + output − 1) ≤ max_num_tokens. A step carries d = r·(output − 1) decode tokens,
                   each reading a context of prompt + output/2 on average, and r·prompt prompt tokens:
                       r·n_ctx ≥ 1   every step is mixed:  t = t_step(d, r·prompt)
                       r·n_ctx < 1   a share r·n_ctx of the steps carries one chunk (prompt / n_ctx tokens),
                                     the others decode only, as one CUDA graph padded to the next captured
                                     batch size (the published runs' cuda_graph_config: 1, 2, 4 … 256, 384,
                                     512, 1024 … 8192, enable_padding). With attention data parallelism
                                     the dp ranks run each step together (the experts' collectives) and
                                     admit their prompts in the same steps: identical requests, queued at
                                     once and shared out evenly, finish on every rank in the same step and
                                     free the same room, so a mixed step carries a chunk on every rank
                   t_step = law(step graph) + step_s (the fixed runtime cost per step); a step with prompt
                   tokens runs eagerly (TensorRT-LLM replays CUDA graphs for decode-only steps; under
                   attention DP only when every rank is decode-only: model_engine._maybe_get_cuda_graph)
                   and lasts at least launches · launch_s, the host launching its kernels one by one.
    waves          identical requests queued at once run in waves: the first pp·B start together, finish
                   together, and free their room for the next pp·B; each rank's n = ⌈N/dp⌉ requests make
                   ⌊n/(pp·B)⌋ full waves of pp·B/r steps at batch B, and the rest b = n mod pp·B one more wave
                   at batch b/pp:  time = ⌊n/(pp·B)⌋ · pp·B/r · t(B) + b/r_b · t(b/pp)
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
from .online import default_kv_dtype
from ...core.errors import IronlawError
from ...core.gemmshape import GPU_M_HALF
from ...core.graph import dtype_bytes
from .step import (CUDA_GRAPH_BATCHES, EngineRun, ServingConstants, engine_hw, padded, step_seconds,  # noqa: F401
                   unquantized_weight_bytes)

# fitted by benchmarks/trtllm_h100.py --fit to the 52 H100 cells of TensorRT-LLM perf-overview.md (dense and MoE):
# mean |log(predicted/published)| minimised over all of them at once. step_s and launch_s are refitted with the
# H100's kernel-fitted GEMM and attention terms in place (``step.kernel_terms``) and sit at their lower bounds
# (BOUNDS in the script): the kernel tables' terms alone already make the H100 steps a few percent longer than
# published. The other six keep the values of the earlier fit of all eight on the same cells; gemm_eta,
# gemm_m_half and attention_eta price only devices (and dtypes) without kernel tables.
FITTED = ServingConstants(gemm_eta=0.6906, gemm_m_half=GPU_M_HALF, memory_eta=0.9377, attention_eta=0.3264,
                          step_s=1e-5, launch_s=1.206e-7, expert_gemm_eta=0.1827, expert_stream_eta=0.3288,
                          source="fitted by benchmarks/trtllm_h100.py to the H100 cells of TensorRT-LLM "
                                 "perf-overview.md (Llama 3.1 8B, 3.3 70B, 3.1 405B, Qwen3-235B-A22B, Llama 4 "
                                 "Maverick and Scout; FP8)")
MAX_TOKENS = 1 << 22


@dataclass
class Layout:
    tp: int = 1
    pp: int = 1
    ep: int = 1
    attention_dp: bool = False
    expert_imbalance: float = 1.0

    @property
    def gpus(self) -> int:
        return self.tp * self.pp

    @property
    def dp(self) -> int:
        """Attention replicas: each runs its own sequences (attention data parallelism over the TP group)."""
        return self.tp if self.attention_dp else 1


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
    limits: object                   # serving_engine.Limits
    memory: dict
    time_s: float
    steady: dict
    steps: list                      # (steps, Estimate): the step kinds whose law time + step_s make time_s
    constants: ServingConstants = None
    predict_s: float = 0.0
    notes: list = field(default_factory=list)
    energy: dict | None = None       # per output token (``serving.features.energy.with_energy``; None: not asked)

    @property
    def output_tokens_per_s(self) -> float:
        return self.requests * self.output / self.time_s

    def to_dict(self) -> dict:
        g = self.layout.gpus
        b = max(self.steps, key=lambda se: se[0] * float(se[1].time_s))[1].bottleneck()
        return {"schema": "ironlaw.serve/1", "scenario": "max-throughput", "workload": self.spec,
                "hardware": self.hw.name, "gpus": g, "tp": self.layout.tp, "pp": self.layout.pp,
                "ep": self.layout.ep, "attention_dp": self.layout.attention_dp,
                "expert_imbalance": self.layout.expert_imbalance, "dtype": self.dtype, "kv_dtype": self.kv_dtype,
                "prompt_tokens": self.prompt, "output_tokens": self.output, "requests": self.requests,
                "time_s": self.time_s, "output_tokens_per_s": self.output_tokens_per_s,
                "output_tokens_per_s_per_gpu": self.output_tokens_per_s / g,
                "tokens_per_s": self.output_tokens_per_s,
                "requests_per_s": self.requests / self.time_s, "batch": self.batch,
                "batch_per_engine": self.batch_per_engine, "batch_limit": self.batch_limit,
                "engine": {"max_batch_size": self.limits.max_batch, "max_num_tokens": self.limits.max_num_tokens,
                           "source": self.limits.source},
                "memory_per_gpu": self.memory, "steady_state": self.steady, "step_bottleneck": b,
                "constants": dict(vars(self.constants)), "notes": self.notes, "energy": self.energy}


# ---------------------------------------------------------------------- inputs and memory
def _tokens(x, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or x < 1 or x > MAX_TOKENS:
        raise IronlawError(f"{what} must be a whole number between 1 and {MAX_TOKENS:,}, got {x!r}")
    return x


def _check_inputs(prompt, output, kv_fraction, requests, max_batch, max_num_tokens, imbalance) -> None:
    _tokens(prompt, "--prompt")
    _tokens(output, "--output")
    if not (isinstance(kv_fraction, (int, float)) and 0.0 < kv_fraction <= 1.0):
        raise IronlawError(f"--kv-fraction must be in (0, 1], got {kv_fraction!r}")
    for v, what in ((requests, "--requests"), (max_batch, "--max-batch"), (max_num_tokens, "--max-num-tokens")):
        if v is not None:
            _tokens(v, what)
    if not (isinstance(imbalance, (int, float)) and 1.0 <= imbalance <= 64.0):
        raise IronlawError(f"--expert-imbalance must be between 1.0 (balanced) and 64, got {imbalance!r}")


def _check_layout(spec: str, meta: dict, lay: Layout) -> None:
    experts = int(meta.get("experts", 0) or 0)
    if lay.attention_dp and not experts:
        raise IronlawError(f"--attention-dp needs a mixture-of-experts model; {spec} is dense (use --tp alone)")
    if lay.ep > 1 and not experts:
        raise IronlawError(f"--ep {lay.ep} needs a mixture-of-experts model; {spec} is dense")
    if experts and experts % lay.ep:
        raise IronlawError(f"--ep {lay.ep} does not divide the {experts} experts of {spec}; use a divisor of {experts}")
    if lay.ep > 1 and not lay.attention_dp:
        raise IronlawError(f"--ep {lay.ep} is modelled with attention data parallelism (TensorRT-LLM's MoE recipe); "
                           f"add --attention-dp")
    if lay.attention_dp and lay.ep != lay.tp:
        raise IronlawError(f"--attention-dp shards the experts over the TP group: use --ep {lay.tp} with --tp {lay.tp}")
    if meta["layers"] % lay.pp:
        raise IronlawError(f"--pp {lay.pp} does not divide the {meta['layers']} layers of {spec}")


def _weights_per_gpu(meta: dict, lay: Layout, dtype: str) -> float:
    by = dtype_bytes(dtype)
    params = float(meta["params"])
    extra = unquantized_weight_bytes(meta, dtype)
    if meta.get("experts") and lay.attention_dp:
        e, k = meta["experts"], meta.get("experts_per_token", 1)
        expert = (params - float(meta["active_params"])) * e / max(e - k, 1)
        return ((params - expert) * by + extra + expert * by / lay.ep) / lay.pp
    return (params * by + extra) / (lay.tp * lay.pp)


def memory(spec: str, hw, meta: dict, lay: Layout, dtype: str, kv_dtype: str, kv_fraction: float,
           max_num_tokens: int, workspace_bytes: float, kv_sequence_bytes: float, seq: tuple[int, int],
           reserve_bytes: float = 0.0) -> dict:
    """Per GPU: weights, activation workspace, KV budget and the KV one request reserves (``kv_sequence_bytes``:
    the builder's cache of prompt + output tokens in whole blocks, every layer's own kind — global, windowed,
    chunked, latent — split over TP's key/value heads, not for a latent cache every TP rank holds whole
    (``parallel.kv_cache_split``), and over PP's stages)."""
    from ...core.units import fmt_size
    from ..parallel import kv_cache_split
    cap = hw.memory[hw.device_tier].capacity_bytes
    weights = _weights_per_gpu(meta, lay, dtype)
    free = cap - weights - workspace_bytes - reserve_bytes
    where = f"{lay.gpus} × {hw.name}" if lay.gpus > 1 else hw.name
    if free <= 0:
        raise IronlawError(f"{spec} does not fit on {where} at --tp {lay.tp}{f' --pp {lay.pp}' if lay.pp > 1 else ''}"
                           f" in {dtype}: weights {fmt_size(weights)} + workspace {fmt_size(workspace_bytes)} per GPU "
                           f"exceed its {fmt_size(cap)} by {fmt_size(-free)}; use a larger --tp or --pp, or a "
                           f"smaller --dtype")
    kv_seq = kv_sequence_bytes / (1 if lay.attention_dp else kv_cache_split(meta, lay.tp)) / lay.pp
    kv_tok = kv_seq / eng.blocks_tokens(*seq)
    return {"device_memory_bytes": cap, "weights_bytes": weights, "workspace_bytes": workspace_bytes,
            "reserve_bytes": reserve_bytes, "free_bytes": free, "kv_fraction": kv_fraction, "kv_budget_bytes": kv_fraction * free,
            "kv_bytes_per_token": kv_tok, "kv_bytes_per_sequence": kv_seq, "max_num_tokens": max_num_tokens}


# ---------------------------------------------------------------------- one step
@dataclass
class Steady:
    """The steady state of one engine: its numbers (``ThroughputEstimate.steady``) and the steps it mixes."""
    stats: dict
    parts: list                      # [(share of the steps, Estimate of that step)]


def steady(run: EngineRun, batch: int, max_num_tokens: int) -> Steady:
    """The steady state of ``batch`` sequences on one engine (module docstring): rate, step mix, step time."""
    n_ctx = math.ceil(run.prompt / max_num_tokens)
    S = n_ctx + run.output - 1
    r = min(batch / S, max_num_tokens / (run.prompt + run.output - 1))
    d = int(round(r * (run.output - 1)))
    q = r * n_ctx
    if q >= 1.0:
        mixed_share = 1.0
        parts = [(1.0, step_seconds(run, d, r * run.prompt, r, pad=False))]
    else:                                # attention DP: the ranks admit their prompts in the same steps
        mixed_share = q
        parts = [(mixed_share, step_seconds(run, d, run.prompt / n_ctx, 1.0 / n_ctx, pad=False)),
                 (1.0 - mixed_share, step_seconds(run, max(d, 1), 0.0, 0.0, pad=True))]
    t = sum(share * ts for share, (ts, _) in parts)
    return Steady({"requests_per_step": r, "steps_per_request": S, "context_steps": n_ctx,
                   "decode_tokens_per_step": d, "prompt_tokens_per_step": r * run.prompt,
                   "mixed_step_share": mixed_share, "step_s": t, "output_tokens_per_step": r * run.output},
                  [(share, est) for share, (_, est) in parts])


def waves(run: EngineRun, full: Steady, batch: int, requests: int, max_num_tokens: int) -> tuple[float, list]:
    """(seconds, [(steps, Estimate)]) for one rank's ``requests`` run in waves of pp·``batch`` (module
    docstring); ``full`` is the steady state at ``batch``, updated with the waves' counts."""
    pp = run.lay.pp
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


# ---------------------------------------------------------------------- the estimate
def _prepare(spec, hw, lay: Layout, dtype, kv_dtype, prompt, output, kv_fraction, max_batch, max_num_tokens,
             constants: ServingConstants):
    """(meta, limits, memory, workspace graph dtype) after every check that needs the model."""
    from .step import build
    meta = build(spec, "decode", 1, 1, dtype, kv_dtype, hw).meta
    _check_layout(spec, meta, lay)
    kv_all = 2.0 * meta["layers"] * max(lay.tp, meta["kv_heads"]) * meta["head_dim"] * dtype_bytes(kv_dtype)
    cap = hw.memory[hw.device_tier].capacity_bytes
    limits = eng.engine_limits(float(meta["params"]), dtype_bytes(dtype), kv_all, cap, lay.gpus, lay.pp, prompt,
                               output, kv_fraction, max_batch, max_num_tokens)
    ws = build(spec, "decode", limits.max_num_tokens, 1, dtype, kv_dtype, hw).footprint["activations"]
    ws = float(ws) * max(dtype_bytes("bf16") / dtype_bytes(dtype), 1.0)
    kv_seq = float(build(spec, "decode", 1, eng.blocks_tokens(prompt, output), dtype, kv_dtype, hw).footprint["kv_cache"])
    mem = memory(spec, hw, meta, lay, dtype, kv_dtype, kv_fraction, limits.max_num_tokens, ws, kv_seq,
                 (prompt, output), constants.reserve_bytes)
    return meta, limits, mem


def _engine_run(spec, hw, lay: Layout, dtype, kv_dtype, seq: tuple[int, int], meta: dict, limits, mem: dict,
                per_engine: int, constants: ServingConstants) -> EngineRun:
    """The engine as ``step.step_seconds`` prices it, ``per_engine`` sequences per rank and micro-batch."""
    from ..parallel import kv_cache_split
    kv_in_use = per_engine * lay.pp * mem["kv_bytes_per_sequence"]
    split = 1 if lay.attention_dp else lay.tp                 # the TP shard divides what it is given by tp
    kv_split = 1 if lay.attention_dp else kv_cache_split(meta, lay.tp)      # … and the KV cache by this
    footprint = {"weights": mem["weights_bytes"] * split, "kv_cache": kv_in_use * kv_split,
                 "activations": mem["workspace_bytes"]}
    return EngineRun(spec, hw, engine_hw(hw, constants), lay, dtype, kv_dtype, seq[0], seq[1], footprint, constants,
                     min(limits.max_batch, limits.max_num_tokens))


def engine_run(spec: str, hw, prompt: int, output: int, batch: int, *, tp: int = 1, dtype: str | None = None,
               kv_dtype: str | None = None, kv_fraction: float = eng.KV_FRACTION, max_batch: int | None = None,
               max_num_tokens: int | None = None, constants: ServingConstants = FITTED):
    """(EngineRun, Limits) of one engine (``--tp``, no PP, dense attention) holding ``batch`` sequences of
    ``prompt`` + ``output`` tokens, with the limits and memory ``max_throughput`` derives for the same inputs:
    what the online mode's steps are priced on. More sequences than the KV cache holds is an error."""
    from ...machine import hardware
    from ...machine.network.topology import check_count
    hw = hardware.get(hw) if isinstance(hw, str) else hw
    _check_inputs(prompt, output, kv_fraction, None, max_batch, max_num_tokens, 1.0)
    _tokens(batch, "--concurrency")
    lay = Layout(check_count(tp, "--tp"))
    dtype = dtype or "bf16"
    hw.peak(dtype)
    kv_dtype = kv_dtype or default_kv_dtype(dtype)
    dtype_bytes(kv_dtype)
    meta, limits, mem = _prepare(spec, hw, lay, dtype, kv_dtype, prompt, output, kv_fraction, max_batch,
                                 max_num_tokens, constants)
    fit, _ = eng.settle_batch(mem["kv_budget_bytes"], mem["kv_bytes_per_sequence"], prompt, output, MAX_TOKENS)
    if batch > fit:
        raise IronlawError(f"--concurrency {batch} exceeds the {fit} sequences of {prompt + output} tokens the "
                           f"engine's KV cache holds on {hw.name} (--kv-fraction {kv_fraction})")
    return _engine_run(spec, hw, lay, dtype, kv_dtype, (prompt, output), meta, limits, mem, batch, constants), limits


def max_throughput(spec: str, hw, prompt: int, output: int, *, tp: int = 1, pp: int = 1, ep: int = 1,
                   attention_dp: bool = False, expert_imbalance: float = 1.0, dtype: str | None = None,
                   kv_dtype: str | None = None, kv_fraction: float = eng.KV_FRACTION, max_batch: int | None = None,
                   max_num_tokens: int | None = None, requests: int | None = None,
                   constants: ServingConstants = FITTED) -> ThroughputEstimate:
    """Offline max-throughput serving of ``spec`` on ``hw`` (module docstring)."""
    from ...machine import hardware
    from ...machine.network.topology import check_count
    t0 = _time.perf_counter()
    hw = hardware.get(hw) if isinstance(hw, str) else hw
    _check_inputs(prompt, output, kv_fraction, requests, max_batch, max_num_tokens, expert_imbalance)
    lay = Layout(check_count(tp, "--tp"), check_count(pp, "--pp"), check_count(ep, "--ep"), bool(attention_dp),
                 float(expert_imbalance))
    dtype = dtype or "bf16"
    hw.peak(dtype)                                   # a dtype the device lacks is an error, not a fallback
    kv_dtype = kv_dtype or default_kv_dtype(dtype)
    dtype_bytes(kv_dtype)
    meta, limits, mem = _prepare(spec, hw, lay, dtype, kv_dtype, prompt, output, kv_fraction, max_batch,
                                 max_num_tokens, constants)
    n = requests or eng.requests_for(prompt, output)
    fit, reason = eng.settle_batch(mem["kv_budget_bytes"], mem["kv_bytes_per_sequence"], prompt, output,
                                   limits.max_batch * lay.pp)
    per_engine = max(min(fit // lay.pp, math.ceil(n / (lay.dp * lay.pp))), 1)
    if per_engine * lay.dp * lay.pp >= n and per_engine < fit // lay.pp:
        reason = "requests"
    run = _engine_run(spec, hw, lay, dtype, kv_dtype, (prompt, output), meta, limits, mem, per_engine, constants)
    full = steady(run, per_engine, limits.max_num_tokens)
    if full.stats["requests_per_step"] * full.stats["steps_per_request"] < per_engine - 0.5:
        reason = "max_num_tokens"
    total, steps = waves(run, full, per_engine, math.ceil(n / lay.dp), limits.max_num_tokens)
    return ThroughputEstimate(spec, hw, lay, dtype, kv_dtype, prompt, output, n, per_engine * lay.dp * lay.pp,
                              per_engine, reason, limits, mem, total, full.stats, steps, constants,
                              _time.perf_counter() - t0)
