"""The online steady state (``online.steady_cycle``: ``concurrency`` sequences in flight, each admitted prompt
prefilled alone or, with ``chunk``, ``chunk`` tokens riding each mixed step) with every step priced by the engine
step model, ``step.step_seconds``: the pricing ``serve --max-throughput`` uses, on the engine limits and memory it
derives for the same inputs (``throughput.engine_run``). At the same batch, lengths and limits a step costs the
same in both modes; they differ only in how batches form (steady concurrency here, waves of queued requests
there).
"""
from __future__ import annotations

from dataclasses import dataclass

from .online import check_tokens, steady_cycle
from .step import step_seconds
from .throughput import FITTED, engine_run


@dataclass
class EngineServe:
    """The online steady state with every step priced by the engine step model (``step.step_seconds``, the
    pricing of ``serve --max-throughput``) on the same engine limits: only the batches differ between modes."""
    spec: str
    prompt: int
    output: int
    concurrency: int
    chunk: int | None
    ttft_s: float
    itl_s: float
    tokens_per_s: float
    decode_step_s: float             # the decode-only step, replayed as a CUDA graph padded to a captured batch
    prefill_s: float                 # one prompt prefilled alone (an eager step)
    mixed_step_s: float | None       # the decode batch plus one chunk of ``chunk`` prompt tokens (an eager step)
    limits: object                   # engine.Limits: max_batch_size, max_num_tokens
    run: object                      # step.EngineRun


def engine_estimate(spec: str, hw, prompt: int = 1024, output: int = 256, concurrency: int = 1, *,
                    chunk: int | None = None, tp: int = 1, dtype: str | None = None, kv_dtype: str | None = None,
                    max_batch: int | None = None, max_num_tokens: int | None = None,
                    constants=None) -> EngineServe:
    """``estimate``'s steady state (``steady_cycle``) on the engine step model: ``concurrency`` sequences of
    ``prompt`` + ``output`` tokens decoding at the mean context, one prompt's prefill alone or, with ``chunk``,
    ``chunk`` prompt tokens riding each mixed step (the share ``chunk / prompt`` of a prompt finishing there)."""
    prompt, output = check_tokens(prompt, "--prompt"), check_tokens(output, "--output")
    concurrency = check_tokens(concurrency, "--concurrency")
    if chunk is not None:
        chunk = check_tokens(chunk, "--chunk")
    run, limits = engine_run(spec, hw, prompt, output, concurrency, tp=tp, dtype=dtype, kv_dtype=kv_dtype,
                             max_batch=max_batch, max_num_tokens=max_num_tokens, constants=constants or FITTED)
    t_dec = step_seconds(run, concurrency, 0.0, 0.0, pad=True)[0]
    t_pre = step_seconds(run, 0, float(prompt), 1.0, pad=False)[0]
    t_mix = None
    if chunk is not None:
        c = min(chunk, prompt)
        t_mix = step_seconds(run, concurrency, float(c), c / prompt, pad=False)[0]
    ttft, itl, rate = steady_cycle(t_dec, t_pre, t_mix, prompt, output, concurrency, chunk)
    return EngineServe(spec, prompt, output, concurrency, chunk, ttft, itl, rate, t_dec, t_pre, t_mix, limits, run)
