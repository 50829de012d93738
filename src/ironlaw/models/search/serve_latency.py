"""Latency targets for the layouts only the max-throughput engine models (expert and pipeline parallelism).

``serving_throughput.max_throughput`` at a chosen batch (``max_batch``: sequences per attention rank and
micro-batch) settles in a steady state of mixed steps (decode tokens plus one prompt chunk) and decode-only
steps (``steady_state``: ``step_s`` is their mean, ``mixed_step_share`` the share that carries a chunk).
From it, for one request:

    ITL   = pp · step_s                              a sequence gains a token once every pp stage-steps (one
                                                     step per stage and micro-batch), whatever kind the step is
    TTFT  = pp · (context_steps · t_mixed + step_s)  its prompt's chunks, one mixed step each, after the step in
                                                     flight when it was admitted (as ``serving.estimate``: the
                                                     prefill plus one decode step); queueing before admission
                                                     is not counted
    t_mixed  the mixed step's time, as the engine charges it: max(law time, the host's work for the step) plus
             the runtime's fixed cost per step (``serving.step.charged_s``, the engine's constants)
"""
from __future__ import annotations

from ..serving.step import charged_s


def step_times(est) -> list[tuple[float, bool]]:
    """(seconds, eager) of each step kind of the steady state of ``est`` (a ThroughputEstimate: its
    ``steady_parts``, not the run's own steps, which for one wave are its ramp and drain), as the engine
    charged it."""
    c = est.constants
    out = []
    for _, e in est.steady_parts:
        out.append((charged_s(e, c), bool(e.graph.meta.get("eager"))))
    return out


def latencies(est) -> tuple[float, float]:
    """(TTFT, ITL) seconds of one request in the steady state of ``est`` (module docstring)."""
    s, pp = est.steady, est.layout.pp
    mixed = next(t for t, eager in step_times(est) if eager)
    return pp * (s["context_steps"] * mixed + s["step_s"]), pp * s["step_s"]
