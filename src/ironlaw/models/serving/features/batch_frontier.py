"""The offline scenario's concurrency frontier: the max-throughput run (``serving.throughput``) again with the
engine's max batch size capped at 1, 2, 4, … up to the batch the run settled on, every other setting (the
layout, dtypes, KV fraction, max tokens per step, requests) as it was.

Each cap gives one point: tokens/s per device (output tokens/s of the system / its GPUs) against tokens/s per
user (output tokens/s / the sequences in flight: what each sequence gets while it generates). It is the knob
``trtllm-bench throughput --max_batch_size`` turns, and the trade the online frontier (``goodput.frontier``)
shows over concurrency. The document (``ironlaw.serve-batch-frontier/1``) is drawn by ``report.frontier``.
"""
from __future__ import annotations

from .. import online

SWEEPS = "one point per engine max batch size (the offline max-throughput run, the batch capped)"


def point(est, cap: int) -> dict:
    g = est.layout.gpus
    return {"concurrency": est.batch, "max_batch": cap, "tokens_per_s_per_device": est.output_tokens_per_s / g,
            "tokens_per_s_per_user": est.output_tokens_per_s / est.batch, "step_s": est.steady["step_s"],
            "requests_per_s": est.requests / est.time_s, "time_s": est.time_s, "batch_limit": est.batch_limit}


def frontier(estimate_at, est) -> dict:
    """``estimate_at(cap)``: the run ``est`` again with max batch size ``cap``; one point per cap of
    ``online.concurrency_grid`` up to ``est``'s batch per engine (``est`` itself is the last point)."""
    caps = online.concurrency_grid(est.batch_per_engine)
    rows = [point(estimate_at(c) if c != est.batch_per_engine else est, c) for c in caps]
    return {"schema": "ironlaw.serve-batch-frontier/1", "workload": est.spec, "hardware": est.hw.name,
            "devices": est.layout.gpus, "prompt_tokens": est.prompt, "output_tokens": est.output, "slo": None,
            "max_concurrency": est.batch, "sweeps": SWEEPS, "points": rows}
