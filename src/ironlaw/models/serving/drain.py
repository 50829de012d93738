"""The drain of a mix of request lengths (``serve --max-throughput --lengths``): the steps after the last request
is admitted, while those in flight finish one by one, each at its own length.

Identical requests queued at once start and finish in step (``throughput.waves``); requests of different lengths
do not: once the queue is empty the batch falls as each request finishes, and the longest decodes on a batch that
has shrunk to a few sequences. A request of life L_i = n_ctx + o_i − 1 steps (its prompt's context steps, then its
decode):

    one wave   every request admitted at the start (the ramp): at decode step s the batch is the requests with
               L_i > s, each reading a context of p_i + s
    stream     more requests than the batch: in the steady state a request is in flight in proportion to its life
               (Little's law) and a request caught in flight has a residual life uniform over [0, L_i); when the
               queue empties, the batch s steps later is b(s) = B · Σ (L_i − s)⁺ / Σ L_i, the survivors' mean
               context Σ (L_i − s)⁺ (p_i + o_i − L_i/2 + s/2) / Σ (L_i − s)⁺, and the work left,
               W = Σ_s b(s) request-steps, is what the steady state's steps did not do: it runs for
               n / r − W / B steps at its batch B = r · mean(L), then max L_i steps of drain.

The drain is priced as decode-only steps (one CUDA graph each) in runs whose batch lies within a factor of two
(``segments``), each at its mean batch and mean context.
"""
from __future__ import annotations

import numpy as np


def profile(prompts, outputs, n_ctx: int, batch: float, stream: bool) -> tuple[np.ndarray, np.ndarray]:
    """(batch, mean context) of each drain step (module docstring): ``stream`` the steady state's survivors at
    batch ``batch``, else one wave of every request."""
    p = np.asarray(prompts, dtype=float)
    o = np.asarray(outputs, dtype=float)
    life = o + n_ctx - 1.0
    order = np.argsort(life)
    life, p, o = life[order], p[order], o[order]
    s = np.arange(int(life[-1]), dtype=float)
    first = np.searchsorted(life, s, side="right")           # the requests with L_i > s: first … end
    n_left = len(life) - first

    def tail(x):                                             # Σ over L_i > s of x_i
        c = np.concatenate([np.cumsum(x[::-1])[::-1], [0.0]])
        return c[first]
    if not stream:
        return n_left.astype(float), tail(p) / np.maximum(n_left, 1) + s
    work = tail(life) - s * n_left                           # Σ (L_i − s)⁺
    base = p + o - life / 2.0
    ctx_sum = tail(life * base) - s * tail(base) + (tail(life) - s * n_left) * s / 2.0
    return batch * work / life.sum(), ctx_sum / np.maximum(work, 1e-9)


def segments(batch: np.ndarray, context: np.ndarray) -> list[tuple[int, float, float]]:
    """[(steps, mean batch, batch-weighted mean context)] of the drain's steps in runs whose batch lies within a
    factor of two of the first step's (module docstring)."""
    if len(batch) == 0:
        return []
    band = np.floor(np.log2(batch[0] / np.maximum(batch, 1e-9)))
    out = []
    for k in np.unique(band):
        sel = band == k
        b = batch[sel]
        out.append((int(sel.sum()), float(b.mean()), float((b * context[sel]).sum() / max(b.sum(), 1e-9))))
    return out
