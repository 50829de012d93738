"""The waves of a causal prefill kernel that gives each CTA one tile of a query head's rows: how much longer its
launch takes than its FLOPs spread evenly over the SMs.

SGLang's Triton prefill (python/sglang/srt/layers/attention/triton_ops/extend_attention.py, ``extend_attention_fwd``
and ``_get_block_sizes_for_extend_attention``) launches the grid (sequences, query heads, ⌈s / BLOCK_M⌉): one CTA per
sequence, query head and tile of BLOCK_M query rows, the tile index the slowest axis, so the CTAs start in the order
of their tile. Tile j of a causal pass walks the keys up to its own last row, (j + 1) · BLOCK_M of them: the later
tiles are the longer ones, and they start last. With c CTAs per SM (as many as its shared memory holds of the tile's
operands) the launch runs in waves of c · SMs CTAs, each as long as its longest CTA, the last tile it holds:

    walk    = Σ over waves w of (j_w + 1),   j_w = ⌊(last CTA of wave w) / (sequences · query heads)⌋
    balanced = sequences · query heads · T (T + 1) / 2 / (c · SMs)  (T = ⌈s / BLOCK_M⌉ tiles per query head)
    factor  = walk / balanced ≥ 1 (about 1 over many waves)

aiconfigurator-core 0.12.0's SGLang 0.5.14 H100 table, head dim 512 (BLOCK_M = 32 on SM 9.x), one head, batch 1:
138, 271, 555 and 1,631 µs at 1,024, 2,048, 4,096 and 8,192 tokens, 1 : 1.96 : 4.02 : 11.8, where the FLOPs go
1 : 4 : 16 : 64 and FLOPs × factor 1 : 2.03 : 4.10 : 12.45 (32, 64 and 128 CTAs each one wave on 132 SMs, the longest
walking every key; 256 CTAs two waves).
"""
from __future__ import annotations

import numpy as np

TILE_OPERAND_BYTES = 2    # bytes per element of the query, key and value tiles a CTA stages (bf16)


def ctas_per_sm(head_dim: int, block_m: int, block_n: int, shared_bytes: int) -> int:
    """The CTAs an SM of ``shared_bytes`` shared memory holds at once: its query tile (BLOCK_M × head dim) and one
    key and one value tile (BLOCK_N × head dim each, one stage), at least 1."""
    tile = (block_m + 2 * block_n) * head_dim * TILE_OPERAND_BYTES
    return max(int(shared_bytes // tile), 1)


def floor_sum(n, m, a, b) -> np.ndarray:
    """Per element, Σ_{i=0}^{n−1} ⌊(a·i + b) / m⌋ for whole n ≥ 0, m ≥ 1, a ≥ 0, b ≥ 0 (the Euclid-like
    reduction, a few steps per element)."""
    n, m, a, b = (np.array(np.broadcast_arrays(*(np.asarray(x, np.int64) for x in (n, m, a, b)))))
    out = np.zeros(n.shape, np.int64)
    live = n > 0
    while np.any(live):
        q = np.where(live, a // m, 0)
        out += np.where(live, (n - 1) * n // 2 * q, 0)
        a = np.where(live, a % m, a)
        q = np.where(live, b // m, 0)
        out += np.where(live, n * q, 0)
        b = np.where(live, b % m, b)
        top = a * n + b
        live = live & (top >= m)
        n, b, m, a = (np.where(live, top // m, n), np.where(live, top % m, b), np.where(live, a, m),
                      np.where(live, m, a))
    return out


def wave_walk(per_tile, tiles, slots) -> np.ndarray:
    """Per element, Σ over the launch's waves of its longest CTA's tiles of keys (j_w + 1): ``per_tile`` CTAs share
    each tile index (sequences × query heads), ``tiles`` per query head, ``slots`` CTAs run at once."""
    per_tile, tiles, slots = (np.maximum(np.rint(np.asarray(x, float)), 1).astype(np.int64)
                              for x in (per_tile, tiles, slots))
    ctas = per_tile * tiles
    waves = -(-ctas // slots)
    whole = floor_sum(waves - 1, per_tile, slots, slots - 1)       # waves 0 … W−2: last CTA (w + 1)·slots − 1
    return (whole + (ctas - 1) // per_tile + waves).astype(float)


def wave_factor(rows, per_tile, block_m, slots) -> np.ndarray:
    """Per element, the launch's waves over its balanced time (``wave_walk`` ÷ the tiles' keys spread over ``slots``):
    ``rows`` the query rows of each head (a sequence's new tokens), ``per_tile`` the CTAs per tile index, ``block_m``
    the query rows per CTA; 1 where a row is missing."""
    rows = np.asarray(rows, float)
    tiles = np.maximum(np.ceil(rows / np.asarray(block_m, float)), 1.0)
    per = np.maximum(np.rint(np.asarray(per_tile, float)), 1.0)
    balanced = per * tiles * (tiles + 1.0) / 2.0 / np.asarray(slots, float)
    return np.where(rows > 0, wave_walk(per, tiles, slots) / balanced, 1.0)


def causal_tile_share(rows, block_m, block_n) -> np.ndarray:
    """Per element, the query-key pairs a causal pass of ``rows`` query rows (its keys the same rows) computes in whole
    tiles over the pairs it keeps, s (s + 1) / 2: SGLang's Triton prefill (``_fwd_kernel`` of extend_attention.py)
    walks, for the query tile of rows j · BLOCK_M … (j + 1) · BLOCK_M − 1, the key blocks of BLOCK_N keys up to its last
    row, ⌈min(s, (j + 1) · BLOCK_M) / BLOCK_N⌉ of them, each BLOCK_M × BLOCK_N in full, the mask only zeroing the pairs
    past the diagonal: Σ_j ⌈min(s, (j + 1) · BLOCK_M) / BLOCK_N⌉ · BLOCK_M · BLOCK_N pairs. At BLOCK_M 32, BLOCK_N 64
    (H100, head dim 512): 1.49 at 128 rows, 1.02 at 3,072; 1 where a row is missing."""
    s = np.maximum(np.rint(np.asarray(rows, float)), 0.0).astype(np.int64)
    bm, bn = int(block_m), int(block_n)
    tiles = -(-s // bm)
    inner = floor_sum(np.maximum(tiles - 1, 0), bn, bm, bm + bn - 1)     # j = 0 … T−2: ⌈(j + 1)·BM / BN⌉
    blocks = inner + np.where(s > 0, -(-s // bn), 0)                              # the last tile: ⌈s / BN⌉
    kept = s * (s + 1) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(s > 0, blocks * float(bm * bn) / np.maximum(kept, 1.0), 1.0)
