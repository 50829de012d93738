"""How the layers split over the pipeline's stages: evenly, with the embedding and the loss each in a layer's
place, or in Megatron's uneven layout (``stage_layers``).
"""
from __future__ import annotations

import numpy as np


def stage_layers(L: int, pp: int, v: int = 1) -> tuple[int, int, int]:
    """(layers of a middle stage, of the first, of the last). Layers divide evenly over the n = pp·v model
    chunks; or the embedding and the loss each take one layer's place when L + 2 does (Megatron-LM's
    account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split: Llama 3.1 405B's 126
    layers on pp 8 × interleave 8); else (``uneven``) the chunks fill with c = ⌈L/n⌉ layers from the first,
    the last ones holding what is left: the chunk sizes of Megatron-Bridge's pipeline_model_parallel_layout map
    for DeepSeek-V3's 61 layers (pp 16: [E + 4] + 14 × [4] + [1 + loss]), and the fullest stage of its
    "Et|(tt|)*30mL" on pp 8 × interleave 4; the stage with the LM head is the lightest. Stage s holds chunks
    s, s + pp, …; a middle stage here is the second."""
    mid, first, last = stage_layers_of(L, np.asarray([pp]), np.asarray([v]))
    return int(mid[0]), int(first[0]), int(last[0])


def stage_layers_of(L: int, pp: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``stage_layers`` over arrays of pipeline degrees ``pp`` and interleaves ``v`` (one layout per element)."""
    n = pp * v
    even, plus2 = (pp == 1) | (L % n == 0), (L + 2) % n == 0
    per = (-(-L // n))[:, None]                     # uneven: ⌈L/n⌉ per chunk from the first, what is left after
    j = np.arange(int(np.max(v)))[None, :]

    def stage(s):                                   # Σ over the chunks s, s + pp, … of the stage
        chunk = np.broadcast_to(s, pp.shape)[:, None] + j * pp[:, None]
        return np.where(j < v[:, None], np.clip(L - chunk * per, 0, per), 0).sum(axis=1)
    mid = np.where(even, L // pp, np.where(plus2, (L + 2) // pp, stage(1)))
    first = np.where(even, L // pp, np.where(plus2, (L + 2) // pp - 1, stage(0)))
    last = np.where(even, L // pp, np.where(plus2, (L + 2) // pp - 1, stage(pp - 1)))
    return mid, first, last


def uneven(L: int, pp: int, v: int = 1) -> bool:
    """Whether ``stage_layers`` splits the layers with Megatron's uneven pipeline layout."""
    return pp > 1 and L % (pp * v) != 0 and (L + 2) % (pp * v) != 0


def uneven_note(L: int, n: int) -> str:
    """What ``stage_layers`` does with L layers over n chunks that do not take them evenly."""
    c = -(-L // n)
    full, rest = divmod(L, c)
    empty = n - full - (1 if rest else 0)
    return (f"the {L} layers split unevenly over {n} model chunks: {full} of {c} layers"
            f"{f', one of {rest}' if rest else ''}{f', {empty} with none' if empty else ''} (Megatron's "
            f"pipeline_model_parallel_layout)")
