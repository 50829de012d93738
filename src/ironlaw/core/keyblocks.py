"""The keys a tiled decode kernel reads over a sliding window: whole key blocks, not the window's keys.

FlashAttention 2 (``fa2_window_keys``, below) reads from the block that holds the window's first key to the new token.

A FlashAttention decode CTA walks the cache in blocks of BLOCK_N keys and computes every block it touches in full,
masking the keys outside the window. FlashAttention 3 (Hopper) runs a local (sliding-window) pass over the blocks from
the one holding the window's first key to the one holding the new token's (``hopper/block.h``,
``BlockMN::get_n_block_min_max``), so a decode computes

    blocks = ⌊last / BLOCK_N⌋ − ⌊first / BLOCK_N⌋ + 1,   last = history − 1,  first = max(last − keys, 0)

blocks of BLOCK_N keys, ``keys`` the window's (min(history, window)). BLOCK_N per head dim is FlashAttention 3's for a
local pass with 16-bit operands (``hopper/tile_size.h``, ``tile_size_fwd_sm90``: 160 at head dim ≤ 64, 128 at ≤ 96
and ≤ 128, 96 at ≤ 192, 64 above). ``first`` is the key a window of w + 1 keys reaches, one before the w − 1 left keys
vLLM passes (``FlashAttentionImpl``, ``sliding_window = (w − 1, 0)``): aiconfigurator-core 0.12.0's vLLM 0.24.0 H200
table (``vllm_flash_attn_fa3``) times two blocks at every length from 256 tokens on at head dim 64, window 128
(2,048 and 32,768 tokens included, where a window of w keys would sit in one block of 160), and the other head dims
agree (256, window 1,024: 1, 2, 4, 8, 16 blocks of 64 at 64 … 1,024 tokens, 22, 26, 38, 54, 85 µs at batch 256;
192, window 128: 21 µs up to 64 tokens, 25–27 µs from 128 on, two or three blocks of 96). The sources do not give
that key: the collector (aiconfigurator's ``collector/vllm/collect_attn.py``) runs a row of ``step`` cached tokens
with ``seq_lens = step + 1`` (the op's history) and FA3's scheduler metadata for the window (w − 1, 0)
(``aot_sliding_window``); FlashAttention 3's ``get_n_block_min_max`` then starts at key history − 1 − (w − 1), w keys
(one block of 160 at 2,048 and 32,768 tokens), and vLLM's fork of it (vllm-project/flash-attention,
``hopper/block.h``) shifts the keys by ``n_offset`` = history − w so that the window starts a block, ⌈w / BLOCK_N⌉
blocks at any length (one of 160 at head dim 64, window 128, where the table's time doubles from 256 tokens on). The
rule here is the table's. Held out on that table's bf16 class, the window of w keys prices it at 6.4% / 20.0%
(median / p90), the window of w + 1 at 4.3% / 16.3%. The same table,
head dim 64, 16 heads on 8 KV heads, bf16 cache: batch 2,048 runs 310–366 µs from 1 to 127 cached tokens and
702–705 µs from 255 on, where the window's keys stay 128.
"""
from __future__ import annotations

import numpy as np

# FlashAttention 3's BLOCK_N for a local pass, 16-bit operands, by head dim (at most): ``tile_size_fwd_sm90``
FA3_LOCAL_BLOCK_N = ((64, 160), (96, 128), (128, 128), (192, 96), (256, 64))
# the same with 8-bit operands (an FP8 cache, the query quantized to it), as vllm-project/flash-attention builds it
# (two-level FP8 accumulation on): 128 at ≤ 96, 192 at ≤ 128, 96 at ≤ 192, 64 above (its local pass)
FA3_LOCAL_BLOCK_N_FP8 = ((64, 128), (96, 128), (128, 192), (192, 96), (256, 64))
# FlashAttention 2's BLOCK_N for its split-KV kernel (the one a paged cache runs), by head dim (at most):
# ``flash_fwd_launch_template.h``, ``run_mha_fwd_splitkv_dispatch``: 256 at ≤ 64, 128 at ≤ 128, 64 above
FA2_SPLITKV_BLOCK_N = ((64, 256), (128, 128))
FA2_SPLITKV_BLOCK_N_ABOVE = 64
# the kernels whose key blocks a class may name (``key_blocks``, ``efficiency.kernel_coords``)
KEY_BLOCK_KERNELS = ("fa3", "fa2")


def fa3_block_n(head_dim, fp8=False) -> np.ndarray:
    """Per row, FlashAttention 3's BLOCK_N for a local pass at ``head_dim`` (``FA3_LOCAL_BLOCK_N``, or where ``fp8``
    ``FA3_LOCAL_BLOCK_N_FP8``; above its largest head dim, the largest's)."""
    head_dim = np.asarray(head_dim, float)
    fp8 = np.broadcast_to(np.asarray(fp8, bool), head_dim.shape)
    out = np.full(head_dim.shape, float(FA3_LOCAL_BLOCK_N[-1][1]))
    for (dim, block), (_, block8) in reversed(list(zip(FA3_LOCAL_BLOCK_N, FA3_LOCAL_BLOCK_N_FP8))):
        out = np.where(head_dim <= dim, np.where(fp8, float(block8), float(block)), out)
    return out


def fa2_block_n(head_dim) -> np.ndarray:
    """Per row, FlashAttention 2's split-KV BLOCK_N at ``head_dim`` (``FA2_SPLITKV_BLOCK_N``)."""
    head_dim = np.asarray(head_dim, float)
    out = np.full(head_dim.shape, float(FA2_SPLITKV_BLOCK_N_ABOVE))
    for dim, block in reversed(FA2_SPLITKV_BLOCK_N):
        out = np.where(head_dim <= dim, float(block), out)
    return out


def fa2_window_keys(history, keys, head_dim) -> np.ndarray:
    """Per row, the keys FlashAttention 2 reads for a windowed decode: from the start of the block of BLOCK_N keys
    (``fa2_block_n``) that holds the window's first key to the new token, the ``history``-th; the last block is read
    only up to the sequence's end (its loads past it are predicated off). ``flash_fwd_kernel.h``,
    ``compute_attn_1rowblock_splitkv``: n_block_min = ⌊(seqlen_k − seqlen_q − window_left) / BLOCK_N⌋, with vLLM's
    window_left = w − 1 and one query, ⌊(history − w) / BLOCK_N⌋; the window's ``keys`` are min(history, w).
    aiconfigurator-core 0.12.0's vLLM 0.24.0 L40S table (``vllm_flash_attn_fa2``), head dim 64 (BLOCK_N 256),
    window 128, 8 heads on 8 KV heads, batch 2,048: 0.93 ms at 127 cached tokens (128 keys), 1.65 and 1.83 ms at 255
    and 511 (256 keys each); head dim 128 (BLOCK_N 128), its 128 keys at every length, flat from 127 on."""
    history = np.maximum(np.asarray(history, float), 1.0)
    first = np.maximum(history - np.maximum(np.asarray(keys, float), 1.0), 0.0)
    block_n = fa2_block_n(head_dim)
    return history - np.floor(first / block_n) * block_n


def window_blocks(history, keys, block_n) -> np.ndarray:
    """Per row, the blocks of ``block_n`` keys a decode's window touches: its ``keys`` (min(history, window)) ending
    at the new token, the ``history``-th (1-based) of the sequence."""
    last = np.maximum(np.asarray(history, float), 1.0) - 1.0
    first = np.maximum(last - np.maximum(np.asarray(keys, float), 1.0), 0.0)
    block_n = np.asarray(block_n, float)
    return np.floor(last / block_n) - np.floor(first / block_n) + 1.0


def block_keys(history, keys, head_dim) -> np.ndarray:
    """Per row, the keys FlashAttention 3 computes for a windowed decode: whole blocks (``window_blocks``) of its
    BLOCK_N at ``head_dim`` (``fa3_block_n``)."""
    block_n = fa3_block_n(head_dim)
    return window_blocks(history, keys, block_n) * block_n
