"""A device's flat attention η measured from published attention-kernel throughputs.

The ``[efficiency]`` attention value is what a training step prices its attention with, forward and backward alike
(``calibration.for_training`` keeps no serving-kernel table). Where a kernel library publishes the TFLOP/s its
attention sustains per shape on a GPU, the share of the catalog's datasheet peak is measured, not estimated:

    share(shape, phase) = achieved FLOP/s ÷ peak FLOP/s of the dtype
    step(shape) = (1 + B) / (1 / share_forward + B / share_backward),   B = BACKWARD_FLOPS

``step`` is the η that prices one shape's forward and backward together at the law's FLOP counts (the backward
runs ``B`` times the forward's FLOPs), and the device's η is its median over the published shapes where compute
binds: ``min_tokens`` keys or more, the caller's bound (``carry.ATTENTION_MIN``, which NVIDIA's attention η is
carried on too); a flat η prices shorter shapes, whose kernels ramp up, too fast. The counts
must be the law's: 4·head_dim FLOPs per (query, key) pair and query head forward, 2.5× that backward, and a
causal shape's pairs halved (``workloads.transformer``'s op conventions); ``read`` takes rows already on them.
"""
from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import IronlawError

BACKWARD_FLOPS = 2.5     # a FlashAttention backward's five matmuls to the forward's two (workloads.transformer)
SHAPE = ("batch", "q_heads", "kv_heads", "seqlen_q", "seqlen_kv", "head_dim", "causal")


@dataclass(frozen=True)
class AttentionShare:
    """One GPU's measured attention shares of its datasheet peak, medians over the published shapes."""
    gpu: str
    dtype: str
    forward: float        # median achieved ÷ peak, forward
    backward: float       # the same, backward
    step: float           # median over shapes of the forward + backward blend: the [efficiency] attention η
    shapes: int


def read(path: str | Path) -> list[dict]:
    """Rows of a published attention table: device, phase, the SHAPE columns, tflops."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    missing = {"device", "phase", "tflops", *SHAPE} - set(rows[0] if rows else {})
    if missing:
        raise IronlawError(f"{path}: no column(s) {', '.join(sorted(missing))}")
    return rows


def share(rows: list[dict], gpu: str, peak_flops: float, backward: str, min_tokens: int = 0,
          dtype: str = "bf16") -> AttentionShare:
    """``gpu``'s shares of ``peak_flops`` over the shapes of ``min_tokens`` keys or more it has both a forward and a
    ``backward`` row for."""
    def by_shape(phase: str) -> dict:
        return {tuple(r[k] for k in SHAPE): float(r["tflops"]) * 1e12 / peak_flops
                for r in rows if r["device"] == gpu and r["phase"] == phase and int(r["seqlen_kv"]) >= min_tokens}
    fwd, bwd = by_shape("forward"), by_shape(backward)
    both = sorted(set(fwd) & set(bwd))
    if not both:
        raise IronlawError(f"no shape with a forward and a {backward} row for '{gpu}'")
    step = [(1 + BACKWARD_FLOPS) / (1 / fwd[s] + BACKWARD_FLOPS / bwd[s]) for s in both]
    return AttentionShare(gpu, dtype, statistics.median(fwd[s] for s in both),
                          statistics.median(bwd[s] for s in both), statistics.median(step), len(both))
