"""The launch grid of a split-KV (multi-block) decode attention kernel: how many blocks each sequence and KV head
is split into, from the whole cached sequence, and the CTAs that makes.

A decode step's attention kernel launches one CTA per sequence and KV head, and, where that leaves SMs idle, splits
each sequence's history into several blocks, each a CTA of its own, reduced at the end. TensorRT-LLM's XQA kernel
(``cpp/tensorrt_llm/kernels/decoderMaskedMultiheadAttention/decoderXQAImplCommon.h``, ``computeMultiBlockCount``;
constants ``kMinHistoryTokensPerBlock`` = 128 and ``kTargetWaveFactor`` = 8 in ``decoderXQAConstants.h`` beside it)
chooses

    blocks = ⌊history / 128⌋, at most round(√(8 · blocks)), at least 1;
    waves  = sequences · KV heads · blocks / SMs;  beyond 8 waves, blocks = ⌊blocks / (waves / 8)⌋, at least 1

where history is the sequence's whole length (``max_past_kv_length``: the cached tokens and the new one), not the
sliding window it attends to: a windowed layer reads min(history, window) keys, but launches its blocks over the
whole history, and the blocks that fall before the window exit early. So the kernel's time follows the CTAs it
launches, not the keys it reads (aiconfigurator-core 0.12.0's H100 table, window 128, 32 heads on 8 KV heads × 64,
batch 8: 9 µs at 127 cached tokens, 31 µs from 4,095 on, where the blocks reach 16; batch 64: 23 µs, then 43 µs from
255 on at 2 blocks; batch 128 never splits and never grows). The workspace cap (6,000 sub-sequences over the batch)
never binds before the wave cap does for any GPU with fewer than 750 SMs, and is left out.
"""
from __future__ import annotations

import numpy as np

MIN_HISTORY_TOKENS_PER_BLOCK = 128     # kMinHistoryTokensPerBlock (decoderXQAConstants.h)
TARGET_WAVE_FACTOR = 8                 # kTargetWaveFactor (decoderXQAConstants.h)


def blocks_per_sequence(history, ctas, sms: int) -> np.ndarray:
    """Per row, the blocks XQA splits each sequence and KV head into: ``history`` the sequence's whole length
    (tokens), ``ctas`` the sequences × KV heads (the CTAs unsplit), ``sms`` the GPU's streaming multiprocessors."""
    history = np.asarray(history, float)
    ctas = np.maximum(np.asarray(ctas, float), 1.0)
    blocks = np.floor(history / MIN_HISTORY_TOKENS_PER_BLOCK)
    blocks = np.maximum(np.minimum(blocks, np.round(np.sqrt(8.0 * blocks))), 1.0)
    over = ctas * blocks / float(sms) / TARGET_WAVE_FACTOR
    blocks = np.where(over > 1.0, np.floor(blocks / np.maximum(over, 1.0)), blocks)
    return np.maximum(blocks, 1.0)

