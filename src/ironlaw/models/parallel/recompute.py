"""Partial activation recomputation: which share of a pipeline stage's layers re-run their forward in the
backward, and what each keeps (Megatron-Core's recompute_granularity "full" with recompute_method and
recompute_num_layers; NeMo's activations_checkpoint_method / _num_layers, MLPerf configs' ACM / ACL).

    --recompute full --recompute-layers N [--recompute-method block|uniform]

Megatron-Core core_v0.15.0, megatron/core/transformer/transformer_block.py: a ``TransformerBlock`` is one model
chunk — the layers of a pipeline stage, or of one virtual stage with interleaving (``get_num_layers_to_build``:
``num_layers_per_virtual_stage``) — and ``num_layers_per_pipeline_rank`` is ``len(self.layers)``, the chunk's
own layers. ``TransformerBlock._checkpointed_forward`` then
- block: checkpoints the chunk's first N layers one at a time — each keeps its input and re-runs its forward in
  the backward — and runs the chunk's other layers plainly, keeping all their activations;
- uniform: splits the chunk's layers into groups of N from the first and checkpoints each group's input: every
  layer re-runs its forward, and a group's N layers hold their activations at once while its backward runs.
Without --recompute-layers, --recompute full recomputes every layer, keeping each layer's input (N = 1).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...core.errors import IronlawError

METHODS = ("block", "uniform")


@dataclass(frozen=True)
class Recompute:
    """What full recomputation does to a stage's layers, as shares of them."""
    share: float              # of the layers whose forward re-runs in the backward
    inputs: float             # of the layers whose input is kept (a checkpoint)
    working_layers: float     # layers whose activations are rebuilt and held at once in the backward


FULL = Recompute(1.0, 1.0, 1.0)            # every layer recomputed, each one's input kept


def of(layers: int | None, method: str, chunk_layers: float) -> Recompute:
    """The recomputation of a model chunk of ``chunk_layers`` layers with ``layers`` = N (None: every layer)."""
    if layers is None or chunk_layers <= 0:
        return FULL
    n = min(float(layers), chunk_layers)
    if method == "block":
        return Recompute(n / chunk_layers, n / chunk_layers, 1.0 if n else 0.0)
    return Recompute(1.0, math.ceil(chunk_layers / n) / chunk_layers, n)


def of_rows(layers: np.ndarray, method: str, chunk_layers) -> Recompute:
    """``of`` over arrays, one layout per element (``layers`` ≥ 1 for uniform): the same shares, as arrays."""
    chunk = np.asarray(chunk_layers, dtype=float)
    n = np.minimum(np.asarray(layers, dtype=float), chunk)
    if method == "block":
        return Recompute(n / chunk, n / chunk, np.where(n > 0, 1.0, 0.0))
    n = np.maximum(n, 1e-30)
    return Recompute(np.ones(n.shape), np.ceil(chunk / n) / chunk, n)


def chunk_layers(L: int, pp: int, v: int) -> float:
    """Layers of one model chunk (a stage's, or a virtual stage's with interleaving), on average."""
    return L / (pp * v)


def chunk_most(L: int, pp: int, v: int) -> int:
    """The most layers N can name: those of the largest model chunk, ⌈L/(pp·v)⌉."""
    return math.ceil(chunk_layers(L, pp, v))


def check(o: dict, rc: str, graph, pp: int, v: int) -> tuple[int | None, str]:
    """(--recompute-layers, --recompute-method) checked against --recompute and the chunk's layers (``graph``'s,
    where given): N a count ≥ 0 (≥ 1 for uniform) of at most the layers of a model chunk."""
    n, method = o.get("recompute_layers"), o.get("recompute_method")
    if method is not None and method not in METHODS:
        raise IronlawError(f"--recompute-method must be one of {', '.join(METHODS)}, got '{method}'")
    if n is None:
        if method is not None:
            raise IronlawError(f"--recompute-method {method} chooses which layers --recompute-layers N recomputes; "
                               f"add --recompute-layers N (without it --recompute full recomputes every layer)")
        return None, "block"
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise IronlawError(f"--recompute-layers is a count of layers per pipeline stage (≥ 0), got {n!r}")
    if rc != "full":
        raise IronlawError(f"--recompute-layers {n} recomputes whole layers (Megatron's recompute_num_layers); "
                           f"it needs --recompute full, got --recompute {rc}")
    method = method or "block"
    if method == "uniform" and n == 0:
        raise IronlawError("--recompute-method uniform checkpoints groups of N layers; --recompute-layers must be "
                           "≥ 1")
    if graph is not None and "layers" in graph.meta:
        most = chunk_most(graph.meta["layers"], pp, v)
        if n > most:
            where = "virtual pipeline stage (--interleave)" if v > 1 else "pipeline stage"
            raise IronlawError(f"--recompute-layers {n} is more than the {most} layers of a {where} of "
                               f"{graph.meta.get('spec', graph.name)}; use at most {most}")
    return n, method
