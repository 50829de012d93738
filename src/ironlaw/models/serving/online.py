"""LLM serving: time to first token, inter-token latency, tokens/s and how many sequences fit.

The steady state of continuous batching with ``concurrency`` sequences in flight, each with a prompt of
``prompt`` tokens and ``output`` generated tokens. Per decode step every sequence adds one token; its
context averages ``prompt + output/2``. Two ways to admit the next request's prompt:
    no chunking   the prompt is prefilled alone, stalling the decode batch:
                      cycle = output · T_decode + concurrency · T_prefill(prompt)
                      TTFT = T_prefill(prompt) + T_decode (waits for the step in flight)
    chunked (C)   each step carries the decode batch plus C prompt tokens; weights are read once per step:
                      T_mixed = law(decode ops + prefill ops of C tokens without their weight reads)
                      cycle = n_mixed · T_mixed + (steps − n_mixed) · T_decode,
                      n_mixed = ⌈concurrency · prompt / C⌉, steps = max(output, n_mixed)
                      TTFT = ⌈prompt / C⌉ · T_mixed
    tokens/s = concurrency · output / cycle;  ITL = cycle / steps.
Mixture-of-experts decode reads the experts the batch touches (the transformer builder counts them).
KV cache: in ``kv_dtype``, else the checkpoint's (``default_kv_dtype``: FP8 for a model in an 8- or 4-bit float).

Launch cost: serving engines replay each step as one captured graph (CUDA graphs in vLLM, TensorRT-LLM
and llama.cpp; one Metal command buffer per step in llama.cpp), so a step pays the device's fixed per-op
latency once, not once per op as eager PyTorch does (``captured=False`` restores the per-op charge).

Capacity: device memory − weights − runtime reserve (``RESERVE_FRACTION`` of memory, as vLLM's default
``gpu_memory_utilization = 0.9`` leaves, plus the prefill working set) is the KV budget. With paging each
sequence holds ⌈(prompt + output)/page⌉ pages of ``page_tokens``; without it, a contiguous slot of
``max_seq`` tokens (default prompt + output). A concurrency beyond what fits is an error naming the limit.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np

from ...core.errors import IronlawError
from ...core.gemmshape import attention_kernel, attention_kernel_parts
from ...core.graph import Graph, attention_dtype, dtype_bytes

RESERVE_FRACTION = 0.10        # estimate: vLLM gpu_memory_utilization default 0.9
PAGE_TOKENS = 16               # vLLM's default KV block size
MAX_TOKENS = 1 << 22


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

    @property
    def request_latency_s(self) -> float:
        return self.ttft_s + self.output * self.itl_s

    def to_dict(self) -> dict:
        b = self.decode.bottleneck()
        return {"schema": "ironlaw.serve/1", "workload": self.spec, "hardware": self.hw.name,
                "prompt_tokens": self.prompt, "output_tokens": self.output, "concurrency": self.concurrency,
                "kv_dtype": self.kv_dtype, "chunked_prefill_tokens": self.chunk,
                "ttft_s": self.ttft_s, "itl_s": self.itl_s, "tokens_per_s": self.tokens_per_s,
                "tokens_per_s_per_sequence": self.tokens_per_s / self.concurrency,
                "request_latency_s": self.request_latency_s, "decode_step_s": self.decode_step_s,
                "prefill_s": self.prefill_s, "decode_bottleneck": b, "capacity": self.capacity,
                "prefill_bottleneck": self.prefill.bottleneck()}


# ---------------------------------------------------------------------- graph transforms
# the cache dtype NVIDIA's ModelOpt checkpoints state in hf_quant_config.json (kv_cache_quant_algo), which TensorRT-LLM
# and vLLM (kv_cache_dtype "auto") take: FP8 in the NVFP4 ones (nvidia/Llama-3.3-70B-Instruct-FP4: quant_algo NVFP4,
# kv_cache_quant_algo FP8, group_size 16) and in the FP8 ones (TensorRT-LLM's accuracy tests assert
# kv_cache_quant_algo == FP8 for the Llama 4 FP8 checkpoints: tests/integration/defs/accuracy/test_llm_api_pytorch.py)
FP8_KV_DTYPES = ("fp8", "mxfp8", "fp4", "mxfp4")


def default_kv_dtype(dtype: str) -> str:
    """The KV-cache dtype of a model run in ``dtype`` when none is given: FP8 for 8- and 4-bit floats
    (``FP8_KV_DTYPES``: the checkpoints' kv_cache_quant_algo), bf16 for int4 (weight-only 4-bit integers keep
    16-bit activations and cache), else ``dtype`` itself."""
    if dtype in FP8_KV_DTYPES:
        return "fp8"
    return "bf16" if dtype == "int4" else dtype


def with_kv(g: Graph, kv_dtype: str | None) -> Graph:
    """``g`` with its KV cache in ``kv_dtype``, or where that is None in the checkpoint's default for the model's
    dtype (``default_kv_dtype``: FP8 for 8- and 4-bit floats)."""
    kv = kv_dtype or default_kv_dtype(g.dtype)
    return g if kv == g.dtype else with_kv_dtype(g, kv)


def _scale_class(g: Graph, cls: str, factor: float) -> Graph:
    if factor == 1.0:
        return g
    out = copy.copy(g)
    out.ops = []
    for op in g.ops:
        o = copy.copy(op)
        o.bytes = {k: (v * factor if k == cls else v) for k, v in op.bytes.items()}
        out.ops.append(o)
    out.footprint = {k: (v * factor if k == cls else v) for k, v in g.footprint.items()}
    out.meta = dict(g.meta)
    return out


def with_kv_dtype(g: Graph, kv_dtype: str) -> Graph:
    """KV cache stored in ``kv_dtype`` (fp8 KV halves its traffic and footprint against bf16), attention run in
    ``graph.attention_dtype``."""
    out = copy.copy(_scale_class(g, "kv_cache", dtype_bytes(kv_dtype) / dtype_bytes(g.dtype)))
    att = attention_dtype(g.dtype, kv_dtype)
    out.ops = [_with_dtype(op, att, kv_dtype) if op.kind == "attention" else op for op in out.ops]
    return out


def _with_dtype(op, dtype: str, kv_dtype: str):
    """An attention op computing in ``dtype`` on a cache held in ``kv_dtype``."""
    o = copy.copy(op)
    o.dtype = dtype
    o.attrs = {**op.attrs, "kv_dtype": kv_dtype}
    parts = attention_kernel_parts(str(op.attrs.get("kernel", "")))
    if parts is not None:                                   # its kernel class names both dtypes
        o.attrs["kernel"] = attention_kernel(parts[0], dtype, kv_dtype, parts[1])
    return o


def with_weight_bytes(g: Graph, weight_bytes: float) -> Graph:
    """All weights together take ``weight_bytes`` (a quantized file's size, block scales included)."""
    have = float(g.footprint.get("weights", 0.0))
    if have <= 0:
        raise IronlawError(f"{g.name}: has no weights to rescale")
    return _scale_class(g, "weights", weight_bytes / have)


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


def check_tokens(x, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 1 or x > MAX_TOKENS:
        raise IronlawError(f"{what} must be a whole number between 1 and {MAX_TOKENS:,}, got {x!r}")
    return int(x)


def estimate(spec: str, hw, prompt: int = 1024, output: int = 256, concurrency: int = 1, *,
             dtype: str | None = None, kv_dtype: str | None = None, page_tokens: int = PAGE_TOKENS,
             max_seq: int | None = None, chunk: int | None = None, tp: int = 1,
             weight_bytes: float | None = None, reserve_fraction: float = RESERVE_FRACTION,
             composition: str = "overlap", captured: bool = True) -> ServeEstimate:
    from ...machine import hardware
    from .. import parallel, workloads
    from ...core.units import fmt_size
    hw = hardware.get(hw) if isinstance(hw, str) else hw
    prompt, output = check_tokens(prompt, "--prompt"), check_tokens(output, "--output")
    concurrency = check_tokens(concurrency, "--concurrency")
    if chunk is not None:
        chunk = check_tokens(chunk, "--chunk")
    if page_tokens < 0 or page_tokens > MAX_TOKENS:
        raise IronlawError(f"--page-tokens must be 0 (no paging) or a positive number of tokens, got {page_tokens}")
    if kv_dtype is not None:
        dtype_bytes(kv_dtype)
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

    pre = graph("prefill", 1, prompt)
    dec = graph("decode", concurrency, int(round(ctx)))
    kv_dt = kv_dtype or default_kv_dtype(pre.dtype)

    # ---- capacity (per device)
    cap = hw.memory[hw.device_tier].capacity_bytes
    weights = float(pre.footprint.get("weights", 0.0))
    reserve = reserve_fraction * cap + float(np.max(pre.footprint.get("activations", 0.0)))
    kv_tok = float(dec.footprint["kv_cache"]) / (concurrency * round(ctx))
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
    capacity = {"device_memory_bytes": cap, "weights_bytes": weights, "reserve_bytes": reserve,
                "kv_budget_bytes": budget, "kv_bytes_per_token": kv_tok, "tokens_reserved_per_sequence": per_seq,
                "paged": bool(page_tokens), "page_tokens": page_tokens, "max_concurrency": max_conc,
                "reserve_source": f"estimate: {100 * reserve_fraction:.0f}% of device memory (vLLM's default "
                                  f"gpu_memory_utilization 0.9) plus the prefill working set"}
    if concurrency > max_conc:
        raise IronlawError(f"--concurrency {concurrency} exceeds the KV-cache capacity of {where}: "
                           f"{max_conc} sequences of {per_seq} tokens fit in the {fmt_size(budget)} left after "
                           f"weights {fmt_size(weights)} and reserve {fmt_size(reserve)} "
                           f"({fmt_size(kv_tok)}/token in {kv_dt}); lower --concurrency, use --kv-dtype fp8, or --tp")

    # ---- time
    (e_pre, l_pre), (e_dec, l_dec) = predict_step(pre, hw, composition, captured), predict_step(dec, hw, composition, captured)
    t_pre, t_dec = float(e_pre.time_s) + l_pre, float(e_dec.time_s) + l_dec
    t_mix = None
    if chunk is not None:
        ch = graph("prefill", 1, min(chunk, prompt))
        e_mix, l_mix = predict_step(_mixed(dec, ch), hw, composition, captured)
        t_mix = float(e_mix.time_s) + l_mix
    ttft, itl, rate = steady_cycle(t_dec, t_pre, t_mix, prompt, output, concurrency, chunk)
    return ServeEstimate(spec, hw, prompt, output, concurrency, kv_dt, chunk, ttft, itl, rate, t_dec, t_pre,
                         capacity, e_dec, e_pre)


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
    """Aggregate decode tokens/s of ``batch`` sequences with ``context`` tokens cached (llama-bench's tg)."""
    return _bench_rate(spec, hw, "decode", batch, max(context, 1), batch, kw)


def prefill_tokens_per_s(spec: str, hw, prompt: int, **kw) -> tuple[float, object]:
    """Prompt tokens/s of one ``prompt``-token prefill (llama-bench's pp)."""
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

