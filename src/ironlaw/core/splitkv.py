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



# TensorRT-LLM's masked multi-head attention kernel (MMHA), the windowed decode XQA refuses (``gemmshape.window_kernel``)
MMHA_UNROLL = 8                      # keys per thread group per loop: ``multi_block_grid_setup``'s "unroll size is 8"
MMHA_VECTOR_BYTES = 16               # ``threads_per_value``: dh · sizeof(T) / 16, one 16-byte vector per thread
MMHA_MATH_BYTES = 2                  # T: the kernel's 16-bit math (bf16, fp16), the cache's dtype aside
MMHA_THREADS = (512, 1024)           # the block sizes a multi-block launch takes (``MMHA_512/1024_BLOCKSIZE_CHECK``)
MMHA_CTA_THREADS = 256               # an unsplit launch's block (``mmha_launch_kernel_dispatch``: THDS_PER_BLOCK 256)


def mmha_tokens_per_loop(head_dim, threads) -> np.ndarray:
    """Keys one MMHA block covers per pass of its key loop: ⌈threads / threads_per_value⌉ · 8, threads_per_value =
    dh_max · 2 / 16 with dh_max the head dim rounded up to a power of two (``mmha::dh_max``): a 1,024-thread block
    at head dim 64, 1,024 keys; at 192 (dh_max 256), 256."""
    dh_max = 2.0 ** np.ceil(np.log2(np.maximum(np.asarray(head_dim, float), 1.0)))
    per_value = dh_max * MMHA_MATH_BYTES / MMHA_VECTOR_BYTES
    return np.ceil(np.asarray(threads, float) / per_value) * MMHA_UNROLL


def mmha_blocks_per_sequence(history, ctas, sms: int, tokens_per_loop) -> np.ndarray:
    """Per row, the blocks (``seq_len_tile``) TensorRT-LLM's MMHA kernel splits each sequence and query head into:
    ``history`` the sequence's whole length (tokens, ``timestep``), ``ctas`` the sequences × query heads (its grid
    is one CTA per sequence and query head, ``mmha_launch_kernel_ex``), ``sms`` the GPU's SMs, ``tokens_per_loop``
    ``mmha_tokens_per_loop``.

    ``cpp/tensorrt_llm/common/attentionOp.cpp``, ``getMaxNumSeqLenTile``: at most ⌈SMs / (sequences · heads)⌉
    blocks, multi-block mode only where that exceeds 1; ``decoderMaskedMultiheadAttentionLaunch.h``,
    ``multi_block_grid_setup``: ⌈SMs · blocks per SM / CTAs⌉ clamped to at most that and to ⌈(history + 1) /
    tokens_per_loop⌉, so that each block runs one pass of its key loop. One block per SM in multi-block mode
    (a 512- or 1,024-thread block), so the bound is one wave. Like XQA's, the count follows the whole history, not
    the window: each of the blocks then reads ⌈(min(history, window) + 1) / blocks⌉ keys (``timesteps_per_block``)."""
    history = np.asarray(history, float)
    ctas = np.maximum(np.asarray(ctas, float), 1.0)
    most = np.ceil(float(sms) / ctas)
    by_keys = np.ceil((history + 1.0) / np.asarray(tokens_per_loop, float))
    return np.where(most > 1.0, np.maximum(np.minimum(most, by_keys), 1.0), 1.0)


def in_whole_waves(blocks, ctas, sms: int, threads) -> np.ndarray:
    """Per row, ``blocks`` per sequence and head as the SMs hold a multi-block launch (``blocks`` > 1), in the
    kernel's own 256-thread CTAs (``MMHA_CTA_THREADS``), the unit its unsplit launch runs in: one block of
    ``threads`` per SM (``mmha_blocks_per_sequence``), so ``ctas`` · blocks take whole waves of ``sms`` blocks, and
    each block fills the SM as threads / 256 of its unsplit CTAs would (the two fill the same registers: the
    1,024-thread block fits once per SM, the 256-thread CTA four times). Returned per sequence and head: the SMs'
    CTA slots over ``ctas``. A single block (no split) stays as it is. H100, one head at 64, window 128: 9 µs
    unsplit, 13–14 µs in one wave of 2–129 blocks, 19 µs in two (8 sequences from 16,383 cached tokens: 17 blocks,
    136 CTAs on 132 SMs); 131,072 unsplit CTAs (2,048 sequences of 64 heads, one cached token) take 1.23 ms, 5 µs per
    round of four CTAs per SM."""
    blocks = np.asarray(blocks, float)
    ctas = np.maximum(np.asarray(ctas, float), 1.0)
    waves = np.ceil(ctas * blocks / float(sms))
    slots = waves * float(sms) * np.asarray(threads, float) / MMHA_CTA_THREADS
    return np.where(blocks > 1.0, slots / ctas, blocks)


# MMHA's launch below SMs · MMHA_TUNE_CTAS CTAs tunes its block size to the SMs left idle, split or not
MMHA_TUNE_CTAS = 4                   # ``mmha_launch_kernel_ex``: ``kernel_total_blocks >= multi_processor_count * 4``
MMHA_OCCUPANCY = (2, 3, 4)           # 256-thread CTAs per SM the unsplit kernel's registers allow (fitted, tried in turn)


def mmha_tuned_threads(ctas, sms: int, occupancy: int) -> np.ndarray:
    """Per row, the threads per block MMHA launches ``ctas`` (sequences × query heads) with, its 256-thread kernel
    holding ``occupancy`` CTAs per SM (``cudaOccupancyMaxActiveBlocksPerMultiprocessor``, the registers'; not in the
    source, fitted): ``mmha_launch_kernel_ex`` keeps 256 from ``MMHA_TUNE_CTAS`` CTAs per SM on, and below it
    takes 256 · min(⌈SMs · occupancy / CTAs⌉, occupancy), at most 1,024, rounded down to 256, 512 or 1,024; a block
    that does not fit an SM falls back to half its size (``MMHA_1024_BLOCKSIZE_CHECK``, ``MMHA_512_BLOCKSIZE_CHECK``),
    the SM holding ``occupancy`` · 256 threads of any block size."""
    ctas = np.maximum(np.asarray(ctas, float), 1.0)
    size = np.minimum(MMHA_CTA_THREADS * np.minimum(np.ceil(sms * occupancy / ctas), occupancy), max(MMHA_THREADS))
    threads = np.where(size >= 1024, 1024.0, np.where(size >= 512, 512.0, 256.0))
    threads = np.where(ctas >= MMHA_TUNE_CTAS * sms, float(MMHA_CTA_THREADS), threads)
    for _ in MMHA_THREADS:
        threads = np.where(occupancy * MMHA_CTA_THREADS < threads, threads / 2.0, threads)
    return threads


def mmha_tuned_launch(history, ctas, sms: int, head_dim, occupancy: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, (the SMs' 256-thread CTA slots over the waves a launch takes, per sequence and head; the blocks each
    sequence and head is split into) for TensorRT-LLM's MMHA kernel as ``mmha_launch_kernel_ex`` launches it, its
    256-thread kernel holding ``occupancy`` CTAs per SM: blocks of ``mmha_tuned_threads``, ⌊occupancy · 256 /
    threads⌋ per SM, split (``multi_block_grid_setup``) into at most ⌈SMs · blocks per SM / CTAs⌉ blocks, at most
    ⌈(history + 1) / keys per loop⌉ (``mmha_tokens_per_loop``) and at most ⌈SMs / CTAs⌉, the attention op's
    ``max_seq_len_tile`` (``attentionOp.cpp``, ``getMaxNumSeqLenTile``; no split at all from one CTA per SM on, where
    it is 1: multi-block mode is off); every block, split or not, in whole waves over the SMs.
    aiconfigurator-core 0.12.0's B200 table (148 SMs), window 128, one KV head × 64, bf16 cache, at 3 CTAs per SM:
    64 heads at batch 1 (512 threads, one per SM) 8.7 µs unsplit, 12.8 µs at 511 cached tokens (2 blocks, one wave),
    17.9–19.0 µs from 1,023 on (3 blocks, two waves); 96 heads unsplit at batch 2, 4 and 8 (192 and 384 CTAs of 512
    threads, 768 of 256) in two, three and two waves: 12.8, 19.0, 13.2 µs at one cached token."""
    history = np.asarray(history, float)
    ctas = np.maximum(np.asarray(ctas, float), 1.0)
    threads = mmha_tuned_threads(ctas, sms, occupancy)
    per_sm = np.floor(occupancy * MMHA_CTA_THREADS / threads)
    by_keys = np.ceil((history + 1.0) / mmha_tokens_per_loop(head_dim, threads))
    most = np.minimum(np.ceil(sms * per_sm / ctas), np.ceil(float(sms) / ctas))
    tiles = np.where(ctas >= MMHA_TUNE_CTAS * sms, 1.0, np.maximum(np.minimum(most, by_keys), 1.0))
    waves = np.ceil(ctas * tiles / (sms * per_sm))
    return waves * sms * occupancy / ctas, tiles


# FlashInfer's CUDA-core decode kernel (``BatchDecodeWithPagedKVCacheKernel``), split over chunks of each sequence's
# keys by its plan (include/flashinfer/attention/scheduler.cuh, ``BatchDecodeWithPagedKVCacheWorkEstimationDispatched``
# and ``PartitionPagedKVCacheBinarySearchMinNumPagePerBatch``)
CHUNK_MIN_TOKENS = 128               # the search's floor: max(128 / page_size, 1) pages per chunk
CHUNK_OCCUPANCY = (1, 2, 4, 8)       # its CTAs per SM (``cudaOccupancyMaxActiveBlocksPerMultiprocessor``: the
                                     # compiled kernel's registers and shared memory, not in the source; fitted, tried in turn)


def chunks_per_sequence(keys, ctas, sms: int, occupancy) -> np.ndarray:
    """Per row, the chunks FlashInfer's decode plan splits each sequence and KV head into: ``keys`` the keys each
    sequence reads, ``ctas`` the sequences × KV heads (``gdy`` = KV heads, one CTA per sequence and KV head unsplit),
    ``sms`` the GPU's SMs, ``occupancy`` the kernel's CTAs per SM. The grid holds ``max_grid_size`` = occupancy · SMs
    CTAs; a batch of at least that many runs unsplit, and a smaller one takes the fewest keys per chunk, at least
    ``CHUNK_MIN_TOKENS``, whose chunks over every sequence and KV head fit the grid: with sequences of one length,
    ⌈keys / ⌊grid / ctas⌋⌉ keys per chunk. (Its pages of ``page_size`` tokens are read as tokens: a chunk's keys
    rounded to whole pages moves the count by under one page per chunk.) L40S, vLLM's FP8 cache, one KV head: batch
    1 at 131,071 cached tokens, head dim 64, 128, 256, 18.8, 27.0, 48.1 µs, the cache (17, 34, 67 MB) read over the
    whole GPU from the L2."""
    keys = np.maximum(np.asarray(keys, float), 1.0)
    ctas = np.maximum(np.asarray(ctas, float), 1.0)
    grid = float(sms) * np.asarray(occupancy, float)
    per_sequence = np.maximum(np.floor(grid / ctas), 1.0)
    chunk = np.maximum(np.ceil(keys / per_sequence), CHUNK_MIN_TOKENS)
    return np.where(ctas >= grid, 1.0, np.maximum(np.ceil(keys / chunk), 1.0))


# FlashInfer's prefill plan (include/flashinfer/attention/scheduler.cuh, ``PrefillPlan`` and
# ``PrefillSplitQOKVIndptr``): one CTA per sequence, KV head and query tile of CTA_TILE_Q packed rows (a sequence's
# query tokens × its query heads per KV head; ``FA2DetermineCtaTileQ``), its grid at most PLAN_BLOCKS_PER_SM × SMs
# CTAs; where the tiles leave that grid half empty it splits each sequence's keys into chunks (at least
# CHUNK_MIN_TOKENS each, ``PrefillBinarySearchKVChunkSize``) and merges their partial outputs after
PLAN_BLOCKS_PER_SM = 2               # ``PrefillPlan``: num_blocks_per_sm = 2, max_grid_size = 2 · SMs
PLAN_PAGE_TOKENS = 64                # the KV cache's page: aiconfigurator's vLLM collector, block_size = 64
                                     # (collector/vllm/collect_attn.py)


def prefill_tile_rows(packed_rows, head_dim) -> np.ndarray:
    """Per row, FlashInfer's prefill query tile (``FA2DetermineCtaTileQ``, SM 8.0 and newer, head dims to 256): 128
    packed rows over 64 of them below head dim 256, 64 over 16, else 16."""
    packed_rows, head_dim = np.asarray(packed_rows, float), np.asarray(head_dim, float)
    return np.where((packed_rows > 64.0) & (head_dim < 256.0), 128.0, np.where(packed_rows > 16.0, 64.0, 16.0))


def prefill_plan_splits(sequence_heads, packed_rows, tokens, head_dim, sms: int) -> np.ndarray:
    """Per row, whether FlashInfer's prefill plan splits the keys: ``sequence_heads`` the sequences × KV heads,
    ``packed_rows`` each one's query rows (tokens × query heads per KV head), ``tokens`` each sequence's keys (the
    cache it reads, a prefill's own tokens), ``head_dim`` its head dim, ``sms`` the GPU's SMs. The binary search takes
    the smallest chunk of at least ``CHUNK_MIN_TOKENS`` whose tiles × chunks fit the grid over the KV heads; it
    splits only where one chunk less than the whole fits, two chunks per tile: where the sequences × KV heads × query
    tiles are at most the SMs and a sequence spans more pages than the smallest chunk. (A sliding window of at least
    128 keys spans more than two pages alike, ``effective_kv_len_arr``.)"""
    tiles = np.asarray(sequence_heads, float) * np.ceil(np.asarray(packed_rows, float) / prefill_tile_rows(
        packed_rows, head_dim))
    pages = np.ceil(np.asarray(tokens, float) / PLAN_PAGE_TOKENS)
    grid = PLAN_BLOCKS_PER_SM * float(sms)
    return (2.0 * tiles <= grid) & (pages > CHUNK_MIN_TOKENS / PLAN_PAGE_TOKENS)


# FlashInfer's tensor-core decode (``BatchDecodeWithPagedKVCacheWrapper(use_tensor_cores=True)``, which SGLang takes
# over 4 query heads per KV head), planned as a prefill of one token per sequence (include/flashinfer/attention/
# scheduler.cuh, ``PrefillPlanImpl`` and ``PrefillSplitQOKVIndptr``): the G query heads of a KV head packed as rows,
# tiles of ``prefill_tile_rows`` (include/flashinfer/utils.cuh), a grid of ``PLAN_BLOCKS_PER_SM`` CTAs per SM
# (``num_blocks_per_sm = 2``) that ``PrefillBinarySearchKVChunkSize`` fills with chunks of each sequence's keys, at
# least ``CHUNK_MIN_TOKENS`` (128 / page_size pages)
CHUNK_PLANS = ("prefill",)


def prefill_query_tiles(rows, head_dim) -> np.ndarray:
    """Per element, the query tiles FlashInfer's prefill plan cuts ``rows`` packed query rows (a decode's heads per KV
    head) into at ``head_dim``: ``prefill_tile_rows``' tile (head dims of 512 and more take 16 or 32, not modelled here)."""
    rows = np.maximum(np.asarray(rows, float), 1.0)
    return np.ceil(rows / prefill_tile_rows(rows, head_dim))


def sm_wave_factor(ctas, sms: int) -> np.ndarray:
    """Per element, the SMs' whole waves of a launch of ``ctas`` CTAs over its balanced time: ⌈ctas / SMs⌉ · SMs /
    ctas (≥ 1). A CTA of a tensor-core decode tile keeps its SM's tensor cores busy on its own, so a launch of fewer
    CTAs than SMs computes at the rate of the SMs it holds: aiconfigurator-core 0.12.0's SGLang 0.5.14 L40S table
    (142 SMs), bf16 cache, one KV head, batch 1, 1 to 127 cached tokens (one CTA per query tile, one chunk): 128 heads
    × 256 (two tiles of 64 rows) 5.4, 6.3, 7.6, 10.1 µs at 1, 31, 63, 127 cached tokens, 4.6 µs over 128 keys where
    the same FLOPs at the whole GPU's peak take 0.05; 64 heads × 128 (one tile) 5.3 → 7.1 µs."""
    ctas = np.maximum(np.asarray(ctas, float), 1.0)
    return np.ceil(ctas / float(sms) - 1e-9) * float(sms) / ctas


# FlashAttention 2's split-KV decode (vllm-project/flash-attention, csrc/flash_attn/flash_api.cpp: ``mha_varlen_fwd``
# under the grouped-query swap, ``set_params_splitkv`` with vLLM's num_splits 0, ``num_splits_heuristic``)
FA2_SPLIT_THREADS_SLOTS = 2          # ``num_sm * 2``: "128 threads per block", two CTAs per SM
FA2_SPLIT_FILL = 0.8                 # one split once the CTAs fill 80% of those slots
FA2_SPLIT_KEEP = 0.85                # the fewest splits within 85% of the best wave efficiency
FA2_MAX_SPLITS = 128
FA2_SPLIT_BLOCK_M = 64               # the split kernel's kBlockM


def fa2_block_n(head_dim) -> np.ndarray:
    """Keys per block of FlashAttention 2's split kernel at ``head_dim``: 256 to 64, 128 to 128, 64 above."""
    head_dim = np.asarray(head_dim, float)
    return np.where(head_dim <= 64.0, 256.0, np.where(head_dim <= 128.0, 128.0, 64.0))


def fa2_splits(keys, rows, kv_ctas, sms: int, head_dim) -> np.ndarray:
    """Per element, the splits FlashAttention 2's heuristic takes for a swapped decode: ``rows`` the query rows of a
    KV head (its heads per KV head, the swapped sequence length), ``kv_ctas`` the sequences × KV heads, ``keys`` each
    sequence's keys. Its CTAs before the split, kv_ctas · ⌈rows / 64⌉, against 2 · SMs slots: one split from 80% of
    them on; below, of the splits up to min(128, slots, key blocks) that change the blocks per split, the fewest whose
    wave efficiency (w / ⌈w⌉, w = CTAs · splits / slots) is within 85% of the best."""
    keys, rows, kv_ctas, head_dim = np.broadcast_arrays(*(np.asarray(x, float) for x in (keys, rows, kv_ctas, head_dim)))
    slots = float(FA2_SPLIT_THREADS_SLOTS * sms)
    ctas = np.maximum(kv_ctas, 1.0) * np.ceil(np.maximum(rows, 1.0) / FA2_SPLIT_BLOCK_M)
    blocks = np.ceil(np.maximum(keys, 1.0) / fa2_block_n(head_dim))
    chosen = efficient_splits(ctas, blocks, min(FA2_MAX_SPLITS, slots), slots)
    return np.where(ctas >= FA2_SPLIT_FILL * slots, 1.0, chosen)


def efficient_splits(ctas, blocks, most: float, slots: float) -> np.ndarray:
    """Of the splits up to min(``most``, key ``blocks``) that change the blocks per split, the fewest whose wave
    efficiency (w / ⌈w⌉, w = ``ctas`` · splits / ``slots``) is within 85% of the best (FlashAttention 2's and 3's
    ``num_splits_heuristic``)."""
    top = np.minimum(most, blocks)
    split = np.arange(1.0, FA2_MAX_SPLITS + 1.0).reshape((-1,) + (1,) * np.ndim(blocks))
    eligible = (split <= top) & ((split == 1.0) | (np.ceil(blocks / split) != np.ceil(blocks / np.maximum(split - 1.0, 1.0))))
    waves = ctas * split / slots
    eff = np.where(eligible, waves / np.ceil(waves), 0.0)
    best = eff.max(axis=0)
    return np.argmax(eligible & (eff >= FA2_SPLIT_KEEP * best), axis=0) + 1.0


# FlashAttention 3's own split heuristic on SM 8.x (hopper/heuristics.h, ``num_splits_heuristic``, called by
# hopper/flash_api.cpp ``get_num_splits`` where the caller passes no num_splits): PackGQA packs a sequence's G query
# heads per KV head into tiles of kBlockM rows, one split where those tiles fill 80% of the SMs (one CTA each), one
# where a sequence holds at most ``FA3_SM8X_MIN_BLOCKS`` key blocks, else FlashAttention 2's efficiency search over the
# SMs (``efficient_splits``); its tiles those of hopper/tile_size.h ``tile_size_fwd_sm8x`` for a 16-bit varlen call
# (``varlen_and_split``: eight warps at head dim 128)
FA3_SM8X_BLOCK_M = 128
FA3_SM8X_MIN_BLOCKS = 4              # "If num_n_blocks is too small, use 1 split"
FA3_SM8X_MAX_SPLITS = 128


def fa3_sm8x_block_n(head_dim) -> np.ndarray:
    """Keys per block of FlashAttention 3's SM 8.x forward kernel for a 16-bit varlen split call at ``head_dim``
    (``tile_size_fwd_sm8x``, not local): 80 to 64, 48 to 96, 112 to 128, 64 to 192, 96 above (SM 8.0)."""
    d = np.asarray(head_dim, float)
    return np.where(d <= 64.0, 80.0, np.where(d <= 96.0, 48.0, np.where(d <= 128.0, 112.0,
                                                                         np.where(d <= 192.0, 64.0, 96.0))))


def fa3_sm8x_splits(keys, rows, kv_ctas, sms: int, head_dim) -> np.ndarray:
    """Per element, the splits FlashAttention 3's heuristic takes for a decode on SM 8.x (``FA3_SM8X_BLOCK_M``):
    ``rows`` the query heads per KV head (packed), ``kv_ctas`` the sequences × KV heads, ``keys`` each sequence's keys;
    its CTAs kv_ctas · ⌈rows / 128⌉ against the SMs. aiconfigurator-core 0.12.0's SGLang 0.5.10 A100 table (fa3 backend),
    64 heads on one KV head × 128, batch 1: 14.2 µs up to 64 keys, 16.8 and 21.6 at 128 and 256 (2 and 3 blocks of 112,
    one CTA walks them), 23.5 at 512 (5 blocks: split), 29.2 at 4,096."""
    keys, rows, kv_ctas, head_dim = np.broadcast_arrays(*(np.asarray(x, float) for x in (keys, rows, kv_ctas, head_dim)))
    ctas = np.maximum(kv_ctas, 1.0) * np.ceil(np.maximum(rows, 1.0) / FA3_SM8X_BLOCK_M)
    blocks = np.ceil(np.maximum(keys, 1.0) / fa3_sm8x_block_n(head_dim))
    chosen = efficient_splits(ctas, blocks, min(FA3_SM8X_MAX_SPLITS, float(sms)), float(sms))
    return np.where((ctas >= FA2_SPLIT_FILL * sms) | (blocks <= FA3_SM8X_MIN_BLOCKS), 1.0, chosen)


# FlashAttention 3's decode under vLLM (vllm-project/flash-attention, hopper/): its scheduler splits each sequence's
# whole cache, not the window, into blocks of BLOCK_N keys wherever a batch leaves the SMs idle, and merges the splits
# in a combine kernel after the attention's
FA3_SPLITS_MAX = 32                  # vLLM's num_splits (VLLM_FLASH_ATTN_MAX_NUM_SPLITS_FOR_CUDA_GRAPH) up to
                                     # ``gemmshape.SPLIT_KERNEL_TOKENS`` tokens a call; beyond it 0, FA3's heuristic
FA3_SPLIT_MARGIN = 1.1               # ``prepare_varlen_num_blocks_kernel``'s "10% margin" on the blocks per SM
FA3_SPLIT_BATCH_MAX = 992            # PREPARE_VARLEN_MAX_BATCHES_1CTA: above it, no dynamic split (flash_api.cpp)
FA3_BLOCK_M_MIN = 128                # the smallest kBlockM of a local pass (``tile_size_fwd_sm90``: 192 or 128)


def fa3_dynamic_splits(history, sequences, kv_heads, groups, block_n, sms: int, static) -> np.ndarray:
    """Per row, the splits FlashAttention 3's scheduler gives each sequence of a windowed decode: ``history`` the
    sequence's whole length (its ``seqused_k``), ``sequences`` the batch, ``kv_heads`` its KV heads, ``groups`` the
    query heads per KV head (packed into tiles of kBlockM rows with the split's PackGQA: ⌈groups / 128⌉, 128 the
    smallest kBlockM, ``FA3_BLOCK_M_MIN``; one tile for every head group the tables time),
    ``block_n`` the kernel's BLOCK_N, ``sms`` the GPU's SMs, ``static`` the upper bound the caller passes
    (``FA3_SPLITS_MAX``; 1 where it passes none and FA3's own heuristic takes one split for a window of at most four
    blocks, hopper/heuristics.h ``num_splits_heuristic``).

    hopper/flash_prepare_scheduler.cu, ``prepare_varlen_num_blocks_kernel``: n = ⌈history / BLOCK_N⌉ blocks over the
    whole sequence (the window does not enter), the batch's blocks Σ m-blocks · n, blocks per SM ⌈1.1 · Σ · KV heads
    / SMs⌉, splits = ⌈n / blocks per SM⌉, at most ``static``, at least 1; one split above ``FA3_SPLIT_BATCH_MAX``
    sequences. The splits before the window find no key of it and exit; the combine kernel (``flash_fwd_combine``)
    then runs once the call splits. aiconfigurator-core 0.12.0's vLLM 0.24.0 H100 table, one head on one KV head ×
    128, FP8 cache, window 128, batch 1: 12.7–13.2 µs up to 63 cached tokens, 18.3–19.0 µs from 255 on (2 blocks
    of 128 and more, split), flat to 131,071; 8 heads on 8 KV heads × 64, batch 8: 14.5 µs at 255 (2 blocks of 160
    each, 128 over the batch and KV heads, × 1.1 on 132 SMs: 2 per SM, 1 split), 16.1 µs from 511 on (4 blocks, 3 per
    SM, 2 splits)."""
    history = np.maximum(np.asarray(history, float), 1.0)
    sequences = np.maximum(np.asarray(sequences, float), 1.0)
    kv_heads = np.maximum(np.asarray(kv_heads, float), 1.0)
    n_blocks = np.ceil(history / np.asarray(block_n, float))
    m_blocks = np.ceil(np.maximum(np.asarray(groups, float), 1.0) / FA3_BLOCK_M_MIN)
    per_sm = np.maximum(np.ceil(FA3_SPLIT_MARGIN * sequences * m_blocks * n_blocks * kv_heads / float(sms) - 1e-9), 1.0)
    splits = np.clip(np.ceil(n_blocks / per_sm), 1.0, np.asarray(static, float))
    return np.where(sequences > FA3_SPLIT_BATCH_MAX, 1.0, splits)
