"""Online serving (``ironlaw serve``): time to first token, inter-token latency, tokens/s and how many sequences fit.

The steady state of continuous batching with ``concurrency`` sequences in flight, each with a prompt of
``prompt`` tokens and ``output`` generated tokens. Per decode step every sequence adds one token; its
context averages ``prompt + output/2``. Two ways to admit the next request's prompt (``steady_cycle``):
    no chunking   the prompt is prefilled alone, stalling the decode batch:
                      cycle = output · T_decode + concurrency · T_prefill(prompt)
                      TTFT = T_prefill(prompt) + T_decode (waits for the step in flight)
    chunked (C)   each step carries the decode batch plus C prompt tokens; weights are read once per step:
                      cycle = n_mixed · T_mixed + (steps − n_mixed) · T_decode,
                      n_mixed = ⌈concurrency · prompt / C⌉, steps = max(output, n_mixed)
                      TTFT = ⌈prompt / C⌉ · T_mixed
    tokens/s = concurrency · output / cycle;  ITL = cycle / steps.
This is how the online mode forms its batches; ``serve --max-throughput`` (``throughput``) forms them as waves of
queued requests. What prices a step is chosen by one named rule, ``step_model(hw)``, and said in the result:

    engine   a device of kind "gpu": an in-flight-batching engine as TensorRT-LLM runs one (CUDA-graph decode
             padded to a captured batch, eager steps that carry prompt tokens, KV in 32-token blocks; ``serve --engine
             vllm|sglang`` passes that framework's constants, limits and block). Every
             step is ``step.step_seconds`` on ``engine.engine_run``: the engine constants (``engine.FITTED``)
             with the device's kernel-fitted terms, the pricing of ``serve --max-throughput``, so at the same
             batch, lengths and limits a step costs the same in both modes. Capacity is the engine's too
             (``engine.memory``: ``--kv-fraction`` 0.95 of the memory left after weights and the workspace of one
             max_num_tokens step, each sequence reserving its prompt and output in whole blocks).
    device   any other kind (CPUs; systems-on-chip such as GB10 or Apple silicon, served through llama.cpp): the
             engine's constants were fitted on TensorRT-LLM's H100 runs and say nothing of these runtimes, so a
             step is the workload's decode or prefill graph on the device's own calibration (``law.predict``),
             replayed as one captured graph (CUDA graphs or one Metal command buffer per step in llama.cpp: the
             fixed per-op latency once per step; ``captured=False`` restores the per-op charge). With ``chunk``:
                 T_mixed = law(decode ops + prefill ops of C tokens without their weight reads).
             Capacity: device memory − weights − runtime reserve (``RESERVE_FRACTION`` of memory plus the
             prefill working set) is the KV budget; with paging each sequence holds ⌈(prompt + output)/page⌉
             pages of ``page_tokens`` (16 unless given); without it a contiguous slot of ``max_seq`` tokens.
Mixture-of-experts decode reads the experts the batch touches (the transformer builder counts them).
KV cache: in ``kv_dtype``, else the checkpoint's (``default_kv_dtype``: FP8 for a model in an 8- or 4-bit float).
A concurrency beyond what fits is an error naming the limit.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np

from ...core.errors import IronlawError
from ...core.graph import Graph
from ...core.units import fmt_size
from .engine import MAX_TOKENS, check_context, whole_tokens as check_tokens  # noqa: F401  (public here too)
from .kvcache import FP8_KV_DTYPES, default_kv_dtype  # noqa: F401  (public here too)
from .step import expert_weights, scale_class, with_kv, with_kv_dtype  # noqa: F401  (public here too)

RESERVE_FRACTION = 0.10        # estimate: vLLM gpu_memory_utilization default 0.9
PAGE_TOKENS = 16               # vLLM's default KV block size
ENGINE, DEVICE = "engine", "device"
ENGINE_KINDS = ("gpu",)        # the device kinds the engine step model prices (module docstring)


@dataclass(frozen=True)
class StepModel:
    """What prices a serving step on a device, and the rule that chose it (``step_model``)."""
    name: str                        # ENGINE or DEVICE
    rule: str
    source: str

    def to_dict(self) -> dict:
        return {"name": self.name, "rule": self.rule, "source": self.source}


def step_model(hw, name: str | None = None) -> StepModel:
    """The step model of ``hw`` by the rule (module docstring): the engine for kind "gpu", the device's own
    calibration for any other kind. ``name`` asks for one: the engine on a kind it does not price is an error."""
    from ...core.errors import unknown
    if name is not None and name not in (ENGINE, DEVICE):
        raise unknown("step model", name, (ENGINE, DEVICE))
    gpu = hw.kind in ENGINE_KINDS
    if name == ENGINE and not gpu:
        raise IronlawError(f"the engine step model prices GPUs (kind 'gpu'); {hw.name} is kind '{hw.kind}'")
    if (name or (ENGINE if gpu else DEVICE)) == ENGINE:
        from .engine import FITTED
        return StepModel(ENGINE, f"{hw.name} is a GPU: each step priced as --max-throughput prices it, with the "
                                 f"host and padding constants fitted on TensorRT-LLM H100 runs",
                         FITTED.source)
    cal = hw.calibration.source if hw.calibration is not None else "its datasheet efficiencies"
    why = (f"{hw.name} is kind '{hw.kind}', which the engine (fitted on TensorRT-LLM GPU runs) does not price"
           if not gpu else f"{hw.name}: the device step model was asked for")
    return StepModel(DEVICE, why + ": the law on its own calibration, one captured graph per step", str(cal))


@dataclass(frozen=True)
class DevicePricer:
    """A step on the device's own calibration: the law's time plus the launch cost, once per step when the step
    is one captured graph, else once per op inside the law."""
    hw: object
    composition: str = "overlap"
    captured: bool = True

    def price(self, g: Graph):
        est, launch = predict_step(g, self.hw, self.composition, self.captured)
        return est, float(est.time_s) + launch


@dataclass(frozen=True)
class EnginePricer:
    """A step on the serving engine (``step.graph_seconds``: ``step.step_seconds``'s pricing of a graph)."""
    run: object                      # step.EngineRun

    def price(self, g: Graph):
        from .step import graph_seconds
        t, est = graph_seconds(self.run, g)
        return est, t


@dataclass
class ServeEstimate:
    spec: str
    hw: object
    prompt: int
    output: int
    concurrency: int
    kv_dtype: str
    chunk: int | None
    ttft_s: float
    itl_s: float
    tokens_per_s: float
    decode_step_s: float
    prefill_s: float
    capacity: dict
    decode: object          # Estimate of one decode step at the mean context
    prefill: object         # Estimate of one prompt's prefill
    step_model: StepModel = None
    pricer: object = None   # DevicePricer | EnginePricer: what priced the steps (the features price theirs on it)
    mixed_step_s: float | None = None
    engine: object = None   # engine.Engine (limits, memory, the EngineRun) on the engine step model, else None
    lengths: dict | None = None   # a mix of request lengths read from a file (``serving.lengths``: what was read)

    @property
    def devices(self) -> int:
        """The devices one replica runs on (its tensor-parallel group); tokens_per_s is theirs together."""
        return int(self.decode.graph.meta.get("tp", 1))

    @property
    def request_latency_s(self) -> float:
        return self.ttft_s + self.output * self.itl_s

    def price(self, g: Graph):
        """(Estimate, seconds) of one more step ``g`` (a feature's: verify, draft, cached prefill) priced as this
        estimate's own steps were."""
        return self.pricer.price(g)

    def to_dict(self) -> dict:
        from .step import bottleneck
        b = bottleneck(self.decode) if self.engine is not None else self.decode.bottleneck()
        d = {"schema": "ironlaw.serve/1", "workload": self.spec, "hardware": self.hw.name,
             "prompt_tokens": self.prompt, "output_tokens": self.output, "concurrency": self.concurrency,
             "dtype": self.decode.graph.dtype, "kv_dtype": self.kv_dtype, "chunked_prefill_tokens": self.chunk,
             "ttft_s": self.ttft_s, "itl_s": self.itl_s, "tokens_per_s": self.tokens_per_s,
             "tokens_per_s_per_sequence": self.tokens_per_s / self.concurrency, "devices": self.devices,
             "tokens_per_s_per_device": self.tokens_per_s / self.devices,
             "request_latency_s": self.request_latency_s, "decode_step_s": self.decode_step_s,
             "prefill_s": self.prefill_s, "mixed_step_s": self.mixed_step_s, "decode_bottleneck": b,
             "capacity": self.capacity,
             "prefill_bottleneck": bottleneck(self.prefill) if self.engine is not None else self.prefill.bottleneck(),
             "step_model": self.step_model.to_dict(),
             "itl_why": itl_why(self), "ttft_why": ttft_why(self), "lengths": self.lengths,
             "notes": [n for n in dict.fromkeys(e.graph.meta.get("mla_module") for e in (self.decode, self.prefill))
                       if n],              # an MLA module priced on its framework's class (``step.module_step``)
             **expert_weights(self.decode.graph.meta)}
        if self.engine is not None:
            d["decode_host"] = _host(self.decode)
            if "host" in self.prefill.graph.meta:
                d["prefill_host"] = _host(self.prefill)
            lim = self.engine.limits
            d["step_model"]["engine"] = {"max_batch_size": lim.max_batch, "max_num_tokens": lim.max_num_tokens,
                                         "source": lim.source, "constants": dict(vars(self.engine.run.constants))}
        return d


def itl_why(est: ServeEstimate) -> str:
    """What the inter-token latency adds up from (``steady_cycle``) and what its decode step is that ``analyze
    --phase decode`` (one step at the context asked, each kernel launched eagerly with its fixed latency L_lat) is
    not: the mean context of the steady state, and one replayed graph per step."""
    from ...core.units import fmt_num, fmt_time
    t = fmt_time
    if est.chunk is None:
        new = "a new prompt's prefill" if est.concurrency == 1 else f"{fmt_num(est.concurrency)} new prompts' prefills"
        parts = (f"decode step {t(est.decode_step_s)} + {new} ({t(est.prefill_s)}"
                 f"{' each' if est.concurrency > 1 else ''}) over the {fmt_num(est.output)} output tokens")
    else:
        n_mixed = math.ceil(est.concurrency * est.prompt / est.chunk)
        steps = max(est.output, n_mixed)
        parts = (f"{fmt_num(n_mixed)} mixed step{'s' if n_mixed != 1 else ''} of {t(est.mixed_step_s)} (the decode "
                 f"batch and {fmt_num(min(est.chunk, est.prompt))} prompt tokens) and {fmt_num(steps - n_mixed)} "
                 f"decode steps of {t(est.decode_step_s)}, over {fmt_num(steps)} steps")
    ctx, how = est.prompt + est.output // 2, "prompt + output/2"
    if est.engine is not None and est.engine.run.decode_context:
        ctx, how = est.engine.run.decode_context, "token-weighted over the --lengths mix"
    seqs = f"{fmt_num(est.concurrency)} sequence{'s' if est.concurrency != 1 else ''}"
    if est.engine is not None:
        from .step import padded
        run = est.engine.run
        pad = padded(est.concurrency, run.max_batch, run.constants.cuda_graph_batches)
        graph = (f"in one replayed CUDA graph{f' padded to {fmt_num(pad)}' if pad != est.concurrency else ''}, no "
                 f"per-kernel launch latency" if run.constants.cuda_graphs else
                 "eagerly, no CUDA graph (TensorRT-LLM's C++ executor), its kernels launched from C++")
    elif getattr(est.pricer, "captured", False):
        graph = "in one captured graph, the fixed per-op latency once per step"
    else:
        graph = "each op launched with its fixed latency"
    return (f"inter-token {t(est.itl_s)} = {parts}; the step: {seqs} at the mean context {fmt_num(ctx)} ({how}) "
            f"{graph} (`analyze --phase decode` prices each kernel eagerly with its own)")


def ttft_why(est: ServeEstimate) -> str:
    """What the time to first token adds up from (``steady_cycle``): without chunking the new prompt's prefill,
    alone in its step, plus the decode step in flight it waits for; with chunking its ⌈prompt / C⌉ mixed steps."""
    from ...core.units import fmt_num, fmt_time as t
    if est.chunk is None:
        return (f"TTFT {t(est.ttft_s)} = the prompt's prefill {t(est.prefill_s)} (its {fmt_num(est.prompt)} tokens "
                f"alone in one step) + the decode step in flight {t(est.decode_step_s)}, which the new request waits "
                f"for")
    n = math.ceil(est.prompt / est.chunk)
    chunks = "in one chunk" if n == 1 else f"in chunks of {fmt_num(est.chunk)}"
    return (f"TTFT {t(est.ttft_s)} = {fmt_num(n)} mixed step{'s' if n != 1 else ''} of {t(est.mixed_step_s)}, the "
            f"prompt's {fmt_num(est.prompt)} tokens {chunks} beside the decode batch")


def _host(est) -> dict:
    """The host's work for the engine step ``est`` (``step.HostStep``) against the device's time for it."""
    host = est.graph.meta["host"]
    return {"cpu": host.cpu, "host_s": host.time_s, "device_s": float(est.time_s), "sequences": host.sequences,
            "speed": host.speed, "speed_stated": host.stated, "eager": host.eager, "launch_s": host.launch_s,
            "kernels": host.kernels, "launch_s_per_kernel": host.per_launch_s, "piecewise": host.piecewise,
            "executor_s": host.python_s, "runtime": host.runtime, "why": host.why(float(est.time_s))}


# ---------------------------------------------------------------------- graph transforms
def with_weight_bytes(g: Graph, weight_bytes: float) -> Graph:
    """All weights together take ``weight_bytes`` (a quantized file's size, block scales included)."""
    have = float(g.footprint.get("weights", 0.0))
    if have <= 0:
        raise IronlawError(f"{g.name}: has no weights to rescale")
    return scale_class(g, "weights", weight_bytes / have)


def _mixed(decode: Graph, chunk: Graph) -> Graph:
    """One step carrying the decode batch and a prefill chunk: the chunk's weight reads are shared."""
    ops = list(decode.ops)
    for op in chunk.ops:
        o = copy.copy(op)
        o.name = op.name + ".chunk"
        o.bytes = {k: v for k, v in op.bytes.items() if k != "weights"}
        ops.append(o)
    fp = dict(decode.footprint)
    fp["activations"] = np.maximum(decode.footprint.get("activations", 0.0), chunk.footprint.get("activations", 0.0))
    return Graph(decode.name + " + prefill chunk", "decode", decode.dtype, ops, footprint=fp, meta=dict(decode.meta))


# ---------------------------------------------------------------------- the estimate
def predict_step(g: Graph, hw, composition: str, captured: bool):
    """law.predict of one engine step; with ``captured`` the per-op latency is paid once per step."""
    from dataclasses import replace
    from ...law import law
    if not captured:
        return law.predict(g, hw, composition), 0.0
    return law.predict(g, replace(hw, op_latency_s=0.0), composition), hw.op_latency_s


SLO_KEYS = ("ttft", "itl")
SLO_ALIASES = {"tpot": "itl"}      # vLLM's benchmarks name the inter-token latency TPOT (time per output token)
SLO_EXAMPLE = "e.g. 'ttft=2s,itl=50ms'"


def parse_slo(text: str) -> dict[str, float]:
    """'ttft=2s,itl=50ms' -> {'ttft_s': 2.0, 'itl_s': 0.05}; ``tpot`` is ``itl``; either may be left out, not both.
    Every time carries its unit: a bare number is an error, never read as seconds."""
    from ...core.units import parse
    text = str(text)
    if ";" in text:
        raise IronlawError(f"--slo separates its targets with ',', not ';' ({SLO_EXAMPLE}), got '{text}'")
    out: dict[str, float] = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        key, value = key.strip().lower(), value.strip()
        key = SLO_ALIASES.get(key, key)
        if not eq or key not in SLO_KEYS or not value:
            raise IronlawError(f"--slo expects ttft=TIME and/or itl=TIME (or tpot=TIME), {SLO_EXAMPLE}, got '{part}'")
        if f"{key}_s" in out:
            raise IronlawError(f"--slo gives the {key} target twice ('{text}'); tpot and itl are the same target")
        if _is_number(value) and not 0 < float(value) <= 3600:
            raise IronlawError(f"--slo {key} must be a positive time of at most an hour, with its unit "
                               f"({SLO_EXAMPLE}), got '{value}'")
        if _is_number(value):
            raise IronlawError(f"--slo {part.strip()}: give the time with its unit, e.g. {key}={value}ms or "
                               f"{key}={value}s")
        x = parse(value, "s", f"--slo {key}")
        if not 0 < x <= 3600:
            raise IronlawError(f"--slo {key} must be a positive time of at most an hour, got '{value}'")
        out[f"{key}_s"] = x
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def concurrency_grid(cmax: int) -> list[int]:
    """1, 2, 4, … below ``cmax``, then ``cmax``: the sequences in flight a search or a frontier visits."""
    out, c = [], 1
    while c < cmax:
        out.append(c)
        c *= 2
    return out + [cmax]


def estimate(spec: str, hw, prompt: int = 1024, output: int = 256, concurrency: int = 1, *,
             dtype: str | None = None, kv_dtype: str | None = None, page_tokens: int | None = None,
             max_seq: int | None = None, chunk: int | None = None, tp: int = 1,
             weight_bytes: float | None = None, reserve_fraction: float = RESERVE_FRACTION,
             composition: str = "overlap", captured: bool = True, steps: str | None = None,
             max_batch: int | None = None, max_num_tokens: int | None = None, constants=None,
             kv_fraction: float | None = None, budget_chunk: bool = False, lengths=None) -> ServeEstimate:
    """The online steady state of ``concurrency`` sequences (module docstring), its steps priced by
    ``step_model(hw, steps)``: the engine on a GPU, the device's own calibration elsewhere. ``max_batch``,
    ``max_num_tokens``, ``constants`` (a ``step.ServingConstants``; default the TensorRT-LLM fit) and
    ``kv_fraction`` (of the memory left after weights and workspace; default TensorRT-LLM's) set the engine
    (the engine step model only: ``serve --engine`` passes its framework's). ``budget_chunk`` (with no ``chunk``):
    the prompt chunk is what the decode tokens leave of ``max_num_tokens`` (vLLM's scheduler). ``lengths`` (a
    ``serving.lengths.Lengths``, ``prompt`` and ``output`` its means; the engine step model only): the steady state
    of its mean lengths, its steps at the mix's contexts and KV (``Lengths.on``, ``engine.prepare``)."""
    from ...machine import hardware
    hw = hardware.get(hw) if isinstance(hw, str) else hw
    prompt, output = check_tokens(prompt, "--prompt"), check_tokens(output, "--output")
    concurrency = check_tokens(concurrency, "--concurrency")
    if chunk is not None:
        chunk = check_tokens(chunk, "--chunk")
    if page_tokens is not None and (page_tokens < 0 or page_tokens > MAX_TOKENS):
        raise IronlawError(f"--page-tokens must be 0 (no paging) or a positive number of tokens, got {page_tokens}")
    from .kvcache import check as check_kv
    check_kv(kv_dtype, hw)
    model = step_model(hw, steps)
    if model.name == DEVICE:
        if max_batch is not None or max_num_tokens is not None or constants is not None or kv_fraction is not None \
                or budget_chunk:
            raise IronlawError(f"--max-batch, --max-num-tokens and --engine set the serving engine; {model.rule}")
        if lengths is not None:
            raise IronlawError(f"--lengths prices a mix of lengths on the serving engine's steps; {model.rule}")
        return _on_device(spec, hw, prompt, output, concurrency, chunk, model, dtype=dtype, kv_dtype=kv_dtype,
                          page_tokens=PAGE_TOKENS if page_tokens is None else page_tokens, max_seq=max_seq, tp=tp,
                          weight_bytes=weight_bytes, reserve_fraction=reserve_fraction, composition=composition,
                          captured=captured)
    _engine_options(hw, page_tokens, max_seq, weight_bytes, reserve_fraction, composition, captured, constants)
    return _on_engine(spec, hw, prompt, output, concurrency, chunk, model, dtype=dtype, kv_dtype=kv_dtype, tp=tp,
                      max_batch=max_batch, max_num_tokens=max_num_tokens, constants=constants,
                      kv_fraction=kv_fraction, budget_chunk=budget_chunk, lengths=lengths)


def _engine_options(hw, page_tokens, max_seq, weight_bytes, reserve_fraction, composition, captured,
                    constants=None) -> None:
    """The device step model's options are errors on the engine's, never ignored; ``--page-tokens`` is one unless
    it is the engine's own KV block (``constants``': TensorRT-LLM's 32, vLLM's 16, SGLang's 1)."""
    from .engine import TOKENS_PER_BLOCK
    why = f"on {hw.name} (kind 'gpu') the serving engine's step model prices the steps"
    block = TOKENS_PER_BLOCK if constants is None else constants.block_tokens
    if page_tokens is not None and page_tokens != block:
        raise IronlawError(f"--page-tokens {page_tokens}: {why}, and its engine pages the KV cache in blocks of "
                           f"{block} tokens (its own: TensorRT-LLM's tokens_per_block 32, vLLM's block_size 16, "
                           f"SGLang's page_size 1)")
    for flag, used in (("--max-seq", max_seq is not None), ("a weight file size", weight_bytes is not None),
                       ("a runtime reserve fraction", reserve_fraction != RESERVE_FRACTION),
                       ("--serial", composition != "overlap"), ("per-op launches", not captured)):
        if used:
            raise IronlawError(f"{flag} belongs to the device step model (CPUs, systems-on-chip); {why}")


def _on_engine(spec: str, hw, prompt: int, output: int, concurrency: int, chunk: int | None, model: StepModel, *,
               dtype, kv_dtype, tp, max_batch, max_num_tokens, constants, kv_fraction,
               budget_chunk=False, lengths=None) -> ServeEstimate:
    """The steady state with every step priced by ``step.step_seconds`` on ``engine.engine_run`` (a mix of
    ``lengths``: at its contexts and KV)."""
    from .engine import FITTED, KV_FRACTION, engine_run
    from .step import step_seconds
    eng = engine_run(spec, hw, prompt, output, concurrency, tp=tp, dtype=dtype,
                     kv_dtype=kv_dtype, max_batch=max_batch, max_num_tokens=max_num_tokens,
                     constants=FITTED if constants is None else constants,
                     kv_fraction=KV_FRACTION if kv_fraction is None else kv_fraction, lengths=lengths)
    run = eng.run
    t_dec, e_dec = step_seconds(run, concurrency, 0.0, 0.0, pad=True)
    t_pre, e_pre = step_seconds(run, 0, float(prompt), 1.0, pad=False)
    t_mix = None
    chunk = capped_chunk(chunk, eng.limits.max_num_tokens - concurrency if budget_chunk else None,
                         run.constants.prefill_cap_tokens)
    if chunk is not None:
        c = min(chunk, prompt)
        check_chunk(chunk, c, concurrency, eng.limits.max_num_tokens, run.constants.mixed_steps)
        t_mix = step_seconds(run, concurrency, float(c), c / prompt, pad=False)[0]
    ttft, itl, rate = steady_cycle(t_dec, t_pre, t_mix, prompt, output, concurrency, chunk)
    return ServeEstimate(spec, hw, prompt, output, concurrency, run.kv_dtype, chunk, ttft, itl, rate, t_dec, t_pre,
                         engine_capacity(eng), e_dec, e_pre, model, EnginePricer(run), t_mix, eng,
                         None if lengths is None else lengths.stats())


def capped_chunk(given: int | None, budget: int | None, cap: int) -> int | None:
    """The prompt chunk a request prefills a step: the one ``given`` (``--chunk``), else the step's token ``budget``
    where the run chunks to it, at most ``cap`` tokens where vLLM's long_prefill_token_threshold sets one (0: none).
    A given chunk above the cap is refused: vLLM would prefill at most ``cap`` of it a step."""
    if given is not None and cap and given > cap:
        raise IronlawError(f"--chunk {given} is more than long_prefill_token_threshold {cap} lets one request prefill "
                           f"in a step; give --chunk {cap} or less, or no --chunk")
    chunk = given if given is not None else budget
    return min(chunk, cap) if chunk is not None and cap else chunk


def check_chunk(chunk: int, tokens: int, concurrency: int, max_num_tokens: int, mixed: bool) -> None:
    """One line where a prompt chunk of ``tokens`` (``--chunk``, at most the prompt) does not fit the engine's step
    token budget: a mixed step carries the decode batch's ``concurrency`` tokens first and the chunk in what they
    leave (TensorRT-LLM's MicroBatchScheduler: ``ctxTokensCapacity = maxNumTokensRuntime − batchNumTokens``,
    cpp/tensorrt_llm/batch_manager/microBatchScheduler.cpp; vLLM's scheduler chunks a waiting prompt to the token
    budget its running requests leave, vllm/v1/core/sched/scheduler.py); an engine that prefills apart
    (``mixed`` False) fits the chunk alone."""
    decode = concurrency if mixed else 0
    if decode + tokens <= max_num_tokens:
        return
    room = max_num_tokens - decode
    given = f"--chunk {chunk}" + (f" (capped at --prompt {tokens})" if tokens < chunk else "")
    fix = f"use --chunk {room} or less, or lower --concurrency" if room > 0 else "lower --concurrency"
    raise IronlawError(f"{given} with --concurrency {concurrency}: a step carries {decode:,} decode tokens and the "
                       f"{tokens:,}-token chunk, {decode + tokens:,} tokens, over the engine's max_num_tokens "
                       f"{max_num_tokens:,} (its scheduler fills a step with the decode tokens first and chunks the "
                       f"prompt to the {max(room, 0):,} tokens left); {fix}")


def engine_capacity(eng) -> dict:
    """The capacity document of an ``engine.Engine`` (the keys the device step model's capacity has)."""
    from .engine import blocks_tokens
    m, run = eng.memory, eng.run
    cap, budget = m["device_memory_bytes"], m["kv_budget_bytes"]
    return {"device_memory_bytes": cap, "weights_bytes": m["weights_bytes"],
            "reserve_bytes": cap - m["weights_bytes"] - budget, "kv_budget_bytes": budget,
            "kv_bytes_per_token": m["kv_bytes_per_token"],
            "tokens_reserved_per_sequence": blocks_tokens(run.prompt, run.output, run.constants.block_tokens)
            if run.decode_context is None else round(m["kv_bytes_per_sequence"] / m["kv_bytes_per_token"]),
            "paged": True, "page_tokens": run.constants.block_tokens, "max_concurrency": eng.max_sequences,
            "workspace_bytes": m["workspace_bytes"], "kv_fraction": m["kv_fraction"],
            "reserve_source": _reserve_source(m)}


def _reserve_source(m: dict) -> str:
    """What the engine keeps from the KV cache: TensorRT-LLM's workspace and free-memory fraction, or (``serve
    --engine vllm|sglang``) the workspace and the runtime memory its framework's memory fraction leaves."""
    work = f"the activation workspace of one max_num_tokens step ({m['max_num_tokens']:,} tokens)"
    if m.get("reserve_holds_workspace"):
        return (f"{fmt_size(m['reserve_bytes'])} the framework's memory fraction leaves to its runtime "
                f"(activations included)")
    if m.get("reserve_bytes", 0.0) > 0:
        return f"{work} and {fmt_size(m['reserve_bytes'])} the framework's memory fraction leaves to its runtime"
    from .engine import KV_FRACTION
    setting = "the published runs' setting" if m["kv_fraction"] == KV_FRACTION else "given"
    return (f"TensorRT-LLM: {work} and {1 - m['kv_fraction']:.2f} of the memory left after it "
            f"(kv_cache_free_gpu_mem_fraction {m['kv_fraction']:g}, {setting})")


def _on_device(spec: str, hw, prompt: int, output: int, concurrency: int, chunk: int | None, model: StepModel, *,
               dtype, kv_dtype, page_tokens, max_seq, tp, weight_bytes, reserve_fraction, composition,
               captured) -> ServeEstimate:
    """The steady state with every step the workload's graph on the device's own calibration."""
    from .. import parallel, workloads
    ctx = prompt + output / 2.0

    def graph(phase: str, batch: int, seq) -> Graph:
        g = workloads.resolve(workloads.Request(spec, phase=phase, batch=batch, seq=seq, dtype=dtype,
                                                device="cuda" if hw.kind == "gpu" else "cpu"))
        if g.phase != phase or "kv_cache_bytes" not in g.meta:
            raise IronlawError(f"{spec}: serving needs a decoder LLM with prefill and decode phases")
        g = with_kv(g, kv_dtype)
        if weight_bytes is not None:
            g = with_weight_bytes(g, weight_bytes)
        if tp > 1:
            g = parallel.shard_inference(g, hw, {"tp": tp, "gpus": tp})
        return g

    check_context(spec, workloads.resolve(workloads.Request(spec, phase="decode", seq=1, dtype=dtype)).meta,
                  prompt, output)
    pre = graph("prefill", 1, prompt)
    dec = graph("decode", concurrency, int(round(ctx)))
    kv_dt = kv_dtype or default_kv_dtype(pre.dtype)
    capacity = device_capacity(spec, hw, pre, dec, concurrency, (prompt, output), kv_dt, page_tokens, max_seq, tp,
                               reserve_fraction)
    pricer = DevicePricer(hw, composition, captured)
    (e_pre, t_pre), (e_dec, t_dec) = pricer.price(pre), pricer.price(dec)
    t_mix = None
    if chunk is not None:
        t_mix = pricer.price(_mixed(dec, graph("prefill", 1, min(chunk, prompt))))[1]
    ttft, itl, rate = steady_cycle(t_dec, t_pre, t_mix, prompt, output, concurrency, chunk)
    return ServeEstimate(spec, hw, prompt, output, concurrency, kv_dt, chunk, ttft, itl, rate, t_dec, t_pre,
                         capacity, e_dec, e_pre, model, pricer, t_mix)


def device_capacity(spec: str, hw, pre: Graph, dec: Graph, concurrency: int, seq: tuple[int, int], kv_dt: str,
                    page_tokens: int, max_seq: int | None, tp: int, reserve_fraction: float) -> dict:
    """The device step model's KV capacity per device (module docstring); more sequences than fit is an error."""
    from ...core.units import fmt_size
    prompt, output = seq
    ctx = round(prompt + output / 2.0)
    cap = hw.memory[hw.device_tier].capacity_bytes
    weights = float(pre.footprint.get("weights", 0.0))
    reserve = reserve_fraction * cap + float(np.max(pre.footprint.get("activations", 0.0)))
    kv_tok = float(dec.footprint["kv_cache"]) / (concurrency * ctx)
    per_seq = (math.ceil((prompt + output) / page_tokens) * page_tokens if page_tokens
               else (max_seq or prompt + output))
    if max_seq is not None and max_seq < prompt + output:
        raise IronlawError(f"--max-seq {max_seq} is shorter than --prompt + --output = {prompt + output}")
    budget = cap - weights - reserve
    where = f"{hw.name}{f' (per device of --tp {tp})' if tp > 1 else ''}"
    if budget <= 0:
        raise IronlawError(f"{spec} does not fit on {where}: weights {fmt_size(weights)} + runtime reserve "
                           f"{fmt_size(reserve)} exceed {fmt_size(cap)}; use --tp N, a smaller --dtype, or a "
                           f"larger device")
    max_conc = int(budget // (per_seq * kv_tok))
    if concurrency > max_conc:
        raise IronlawError(f"--concurrency {concurrency} exceeds the KV-cache capacity of {where}: "
                           f"{max_conc} sequences of {per_seq} tokens fit in the {fmt_size(budget)} left after "
                           f"weights {fmt_size(weights)} and reserve {fmt_size(reserve)} "
                           f"({fmt_size(kv_tok)}/token in {kv_dt}); lower --concurrency, use --kv-dtype fp8, or --tp")
    return {"device_memory_bytes": cap, "weights_bytes": weights, "reserve_bytes": reserve,
            "kv_budget_bytes": budget, "kv_bytes_per_token": kv_tok, "tokens_reserved_per_sequence": per_seq,
            "paged": bool(page_tokens), "page_tokens": page_tokens, "max_concurrency": max_conc,
            "reserve_source": f"estimate: {100 * reserve_fraction:.0f}% of device memory (vLLM's default "
                              f"gpu_memory_utilization 0.9) plus the prefill working set"}


def steady_cycle(t_dec: float, t_pre: float, t_mix: float | None, prompt: int, output: int, concurrency: int,
                 chunk: int | None) -> tuple[float, float, float]:
    """(TTFT, ITL, tokens/s) of ``concurrency`` sequences in steady continuous batching (module docstring), from
    the decode step ``t_dec``, one prompt's prefill alone ``t_pre`` and, with ``chunk``, the mixed step ``t_mix``:
    how the online mode forms its batches, whichever step model priced the steps."""
    if chunk is None:
        steps = output
        cycle = output * t_dec + concurrency * t_pre
        ttft = t_pre + t_dec
    else:
        n_mixed = math.ceil(concurrency * prompt / chunk)
        steps = max(output, n_mixed)
        cycle = n_mixed * t_mix + (steps - n_mixed) * t_dec
        ttft = math.ceil(prompt / chunk) * t_mix
    return ttft, cycle / steps, concurrency * output / cycle


def decode_tokens_per_s(spec: str, hw, batch: int = 1, context: int = 0, **kw) -> tuple[float, object]:
    """Aggregate decode tokens/s of ``batch`` sequences with ``context`` tokens cached (llama-bench's tg): one
    decode graph on the device step model (``DevicePricer``) whatever the device's kind, as llama.cpp's bench runs
    it; ``estimate`` picks its step model by ``step_model``'s rule."""
    return _bench_rate(spec, hw, "decode", batch, max(context, 1), batch, kw)


def prefill_tokens_per_s(spec: str, hw, prompt: int, **kw) -> tuple[float, object]:
    """Prompt tokens/s of one ``prompt``-token prefill (llama-bench's pp), on the device step model as
    ``decode_tokens_per_s``."""
    return _bench_rate(spec, hw, "prefill", 1, prompt, prompt, kw)


def _bench_rate(spec: str, hw, phase: str, batch: int, seq: int, tokens: int, kw: dict) -> tuple[float, object]:
    from ...machine import hardware
    from .. import workloads
    hw = hardware.get(hw) if isinstance(hw, str) else hw
    g = workloads.resolve(workloads.Request(spec, phase=phase, batch=batch, seq=seq, dtype=kw.get("dtype")))
    g = with_kv(g, kw.get("kv_dtype"))
    if kw.get("weight_bytes") is not None:
        g = with_weight_bytes(g, kw["weight_bytes"])
    est, launch = predict_step(g, hw, kw.get("composition", "overlap"), kw.get("captured", True))
    return tokens / (float(est.time_s) + launch), est

