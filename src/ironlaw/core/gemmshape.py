"""GEMM shape model of a calibration: M, N, K recovered from an op's FLOPs and bytes, and η(M, N, K).

    η = eta_max · M/(M+m_half) · N/(N+nk_half) · K/(K+k_half)   (gemv_eta for GEMVs, when fitted)

A measured kernel class may carry a grid of its own: ``grid_nodes`` (four lists of log-spaced node values, over
M, N, K and the op's units — FLOPs / (2·M·N·K): 1 for a GEMM, the sequences × KV heads of an attention) and
``grid_log`` (per node, 100 · ln(measured time / the shape model's time), whole numbers in one space-separated
string, row-major; ``0*n`` stands for n nodes at 0, the nodes no measured shape reaches): the kernel library's choice per shape (tile, split-K, kernel switch) that no smooth form
follows, interpolated multilinearly in log space (``grid_of`` names another kernel class whose grid a class shares:
an FP8-math class derived from the bf16 one); η of the compute and the streamed bytes both divide by
exp(grid_log / 100), so the op's time without its fixed latency scales by that factor (``grid_factor``).

With ``m_tile`` the M term is the rows' fill of whole tiles, M / (⌈M/m_tile⌉·m_tile), in place of M/(M+m_half)
(a decode attention's grouped query heads fill one tile of rows per KV head).

With ``streamed_half`` (weight elements N·K) the weights stream at an η that grows with the kernel's CTAs in flight,
which grow with the weight tiles (N over the tile's columns, times the K splits): streamed · N·K / (N·K +
streamed_half) on every row, M = 1 included (``streamed_eta``). Such a table's compute M term is 1 (``m_half`` 0):
what a small-M GEMM pays per weight element is the weights' streaming, and ``serial`` the share of the shorter of the
two terms its kernel does not overlap.

The fields, how a shape is recovered and what each field is measured or fitted on: docs/how-it-models.md.
"""
from __future__ import annotations

import functools
import re

import numpy as np

from .graph import DTYPE_BYTES, Columns

# rows (GEMM M) at which a GPU GEMM kernel reaches half its top η: fitted with the serving constants on the 52 H100
# cells of TensorRT-LLM's perf-overview.md (``models.serving.engine.FITTED``, benchmarks/trtllm_h100.py --fit) and used
# on every GPU without a calibrated GEMM table of its own (training: ``ironlaw.models.gemm_rows``)
GPU_M_HALF = 179.0
GEMV_M = 1.5                       # M below this is a matrix-vector product (gemm_dims gives M ≈ 1)
# the small-M rule (docs/accuracy.md, "A GEMV's time is its weights' streaming"): a GEMV whose weights stream from
# device memory has its compute at most this share of its data time, in the kernel-fitted classes
# (``measure.calibrate.kernelfit``) and in the serving engine's datasheet table alike
GEMV_STREAM_MARGIN = 0.9
SHAPE_FIELDS = ("eta_max", "m_half", "nk_half", "gemv_eta", "serial", "streamed", "gemv_m", "gemv_m_kn", "pack",
                "m_half_nt", "k_half", "gemv_pass", "gemv_pass_kn", "streamed_kn", "gemv_row", "gemv_row_kn",
                "latency_s", "m_tile", "grid_nodes", "grid_log", "grid_of", "split_kv", "streamed_half",
                "mmha_threads", "mmha_occupancy", "key_s", "grid_keys", "split_s", "merge_s", "variant", "variant_m",
                "variant_dtype", "variant_m_above", "variant_blocks_below", "key_ctas", "cta_s", "expert_s", "unit_s", "math", "m_block", "math_head_dims",
                "query_tiles", "touched_s", "vector", "latency_head_dims", "latency_head_dim_s",
                "vector_head_dims", "write_s",
                "latency_groups", "latency_units_max", "latency_keys_max", "key_blocks", "swap_s",
                "unit_launch", "chunk_occupancy", "chunk_head_dims", "tile_s",
                "plan_split_s", "plan_head_dims", "plan_merge_s", "chunk_plan", "latency_tile_keys",
                "latency_tile_power",
                "tile_head_dims", "tile_head_dim_s", "tile_rows", "tile_swap", "causal_blocks", "floor_s",
                "floor_share", "unaligned_k", "gemms")
# split_kv: the class's split-KV kernel splits the whole sequence (``core.splitkv``): "history", TensorRT-LLM's XQA
# (per sequence and KV head); "mmha", its MMHA kernel (per sequence and query head, blocks of ``mmha_threads``);
# "chunks", FlashInfer's decode plan (each sequence's keys per sequence and KV head, ``splitkv.chunks_per_sequence``,
# at ``chunk_occupancy`` CTAs per SM, one of ``splitkv.CHUNK_OCCUPANCY``; with ``chunk_head_dims``, only at those head
# dims, the ones the chunked kernel runs where another backend decodes the rest); with ``chunk_plan = "prefill"``
# (``splitkv.CHUNK_PLANS``), FlashInfer's tensor-core decode planned as a prefill: each sequence and KV head's query
# tiles (``splitkv.prefill_query_tiles``) are its CTAs before the chunks, and the launch's CTAs run in whole waves of
# the SMs (``splitkv.sm_wave_factor``, ``efficiency.chunk_waves``)
# "heads", a kernel that runs one CTA per sequence and query head and never splits: FlashAttention 2 with a sliding
# window (``flash_api.cpp``, ``mha_varlen_fwd``: the grouped-query swap, ``seqlenq_ngroups_swapped``, needs no window,
# and its split-KV heuristic runs only under the swap, "Only apply split-k for decoding")
# "fa2", FlashAttention 2's split-KV decode under its grouped-query swap (``splitkv.fa2_splits``: its heuristic's
# splits of each sequence's key blocks while the CTAs fill under 80% of two per SM)
# "fa3", FlashAttention 3's decode under vLLM, whose scheduler splits each sequence's whole cache, not its window, where
# the batch leaves SMs idle (``splitkv.fa3_dynamic_splits``): the splits before the window exit at once, so the op keeps
# its window's keys and CTAs and pays ``split_s`` where the call splits (``efficiency.fa3_split``)
# "fa3_sm8x", FlashAttention 3's decode on SM 8.x (SGLang's fa3 backend on A100): its own split heuristic over the
# SMs with the query heads packed into tiles of 128 rows and no split up to 4 key blocks (``splitkv.fa3_sm8x_splits``)
SPLIT_KV = ("history", "mmha", "chunks", "heads", "fa2", "fa3", "fa3_sm8x")
# mmha_occupancy: an MMHA class's 256-thread CTAs per SM (``core.splitkv.MMHA_OCCUPANCY``), the launch then tuned to the
# CTAs as TensorRT-LLM tunes it (``splitkv.mmha_tuned_launch``) in place of ``mmha_threads``' split alone
# grid_keys: the keys a class's grid reads (``efficiency.kernel_coords``): "sequence", the keys per query of a causal
# pass over the whole sequence (``op.attrs['history']``) in place of the window's, for a context kernel that walks every
# key block of the sequence and only masks the ones outside the window (SGLang's and vLLM's Triton prefill)
GRID_KEYS = ("sequence",)
# key_s: seconds per cached key of a decode kernel that walks each sequence's cache in one CTA, unsplit: its time adds
# key_s · (keys − KEY_WALK_FREE) (``efficiency.key_walk_s``), which concurrent sequences do not shorten; the first
# KEY_WALK_FREE keys run within the fixed latency (aiconfigurator-core 0.12.0's L40S generation MLA table, batch 1:
# 9.0 µs at 3, 15 and 63 cached tokens, then 78 ns per key: 14.3 µs at 127, 24 µs at 255). At most KEY_S_MAX (1 µs)
KEY_S_MAX = 1e-6
# expert_s: seconds per local expert a grouped MoE GEMM class's launch adds (``efficiency.expert_setup_s``): its time
# adds expert_s · the op's local experts (``op.attrs["local_experts"]``), reached by its tokens or not (aiconfigurator-core
# 0.12.0's H200 block-scaled FP8 MoE rows at one token: 27 µs with 1–16 local experts, 107 µs with 256). At most
# EXPERT_S_MAX (1 µs)
EXPERT_S_MAX = 1e-6
# touched_s: seconds per expert its rows reach a grouped MoE GEMM class's launch adds (``efficiency.touched_setup_s``):
# its time adds touched_s · the experts whose weights the op streams (aiconfigurator-core 0.12.0's TensorRT-LLM
# 1.3.0rc20 CUTLASS MoE rows on Blackwell, ``measure.calibrate.moefit``). At most TOUCHED_S_MAX (2 µs)
TOUCHED_S_MAX = 2e-6
# unaligned_k: a grouped MoE GEMM class's extra seconds per second of weights and FLOPs (at η = 1) on a GEMM whose K
# is not a multiple of 16 (``serving.step.unaligned_down``: vLLM's and SGLang's Triton fused MoE, aiconfigurator-core
# 0.12.0's rows 1.8–8.4, ``measure.calibrate.moefit``). At most UNALIGNED_K_MAX
UNALIGNED_K_MAX = 32.0
# token_s: seconds per token an MoE layer takes in that a routed-rows class's op stating its tokens adds
# (``efficiency.token_setup_s``, ``op.attrs["tokens"]``: the combine's), routed to the rank or not (aiconfigurator-core
# 0.12.0's H100 weight-only MXFP4 MoE rows, TensorRT-LLM's Triton MoE: ~60 ns per token). At most TOKEN_S_MAX (1 µs)
TOKEN_S_MAX = 1e-6
KEY_WALK_FREE = 64.0
# key_ctas, cta_s: a walking class whose CTAs (key_ctas per grid unit, the op's FLOPs / (2·M·N·K)) run in waves over
# the device's SMs, each CTA paying cta_s and then key_s per key: the walk, waves · (cta_s + key_s · (keys −
# KEY_WALK_FREE)), is the op's time floor, overlapping its data and compute (``efficiency.walk_eta``) in place of adding
# to them. TensorRT-LLM's XQA MLA decode launches XQA_MLA_CTAS CTAs per sequence (``decoderXQAImplJIT.cpp``:
# ``dimGrid{4 * inputSeqLen, multiBlock, batch_size}``, multiBlock 1 for MLA, ``computeMultiBlockCountForMLA``);
# aiconfigurator-core 0.12.0's RTX PRO 6000 table (188 SMs), 128 heads on an FP8 cache, 131,071 cached tokens: 2.20 ms
# from 1 to 32 sequences (one wave), 4.46 ms at 64 (two), 6.85 ms at 128 (three); at one cached token 15 µs for one
# wave, 0.40 ms at 1,024 sequences (22 waves). key_ctas at most KEY_CTAS_MAX, cta_s at most CTA_S_MAX (100 µs)
XQA_MLA_CTAS = 4
KEY_CTAS_MAX = 64.0
CTA_S_MAX = 1e-4
# split_s: seconds a split-KV class's launch adds once it splits a sequence (blocks > 1, ``core.splitkv``): the blocks'
# partial results written out and reduced after them (``efficiency.split_reduce_s``). At most SPLIT_S_MAX (100 µs)
SPLIT_S_MAX = 1e-4
# merge_s: seconds per block a split XQA launch ("history") adds beyond split_s: the last block of a sequence and KV
# head merges the blocks' partial results one after another (``efficiency.split_reduce_s``); and per split a
# FlashAttention 2 split ("fa2") adds, its combine kernel reading every split's partial output, 4 query rows a CTA at
# head dim 128 (csrc/flash_attn/src/flash_fwd_launch_template.h, ``grid_combine``: 16 CTAs for 64 heads on one KV
# head at batch 1; flash_fwd_kernel.h, ``combine_attn_seqk_parallel``; aiconfigurator-core 0.12.0's vLLM 0.24.0
# RTX PRO 6000 table, 64 heads on one KV head × 128, batch 1: 19.9, 25.3, 37.2 µs at 32, 64, 128 splits, 0.17-0.19 µs
# a split; FlashAttention 3's SM 8.x split, "fa3_sm8x", likewise: hopper/flash_fwd_combine_launch_template.h). At
# most MERGE_S_MAX (1 µs)
MERGE_S_MAX = 1e-6
MERGE_KINDS = ("history", "fa2", "fa3_sm8x")     # the split_kv launches that pay merge_s
# floor_s: seconds a call takes at least, overlapping its kernel's work rather than adding to it: the call's time is
# max(floor_s, its law time), the critical path of a host that submits each call while the device runs the one
# before (``efficiency.floored``; kernelfit.rules.OVERLAP_FLOOR). At most MAX_LATENCY_S (machine.calibration)
# floor_share: the share of the shorter of floor_s and the law time that does not overlap (a timed run's first
# submission and last call, once per run of n calls: 1/n), in [0, 1]
# unit_s: seconds a decode launch adds per sequence and KV head (its CTAs' own work whatever the keys: the query loaded,
# the page table read, the output written), on top of its fixed latency (``efficiency.unit_launch_s``).
# aiconfigurator-core 0.12.0's vLLM 0.24.0 and SGLang 0.5.14 generation tables, one cached token, batch 2048: 11-37 ns
# per sequence and KV head at the median on H100 (FA3), B200, L40S and RTX PRO 6000 (H100 SGLang, 8 heads on 8 KV heads
# × 128: 358 µs, its bytes under 10 µs at 3.35 TB/s). At most UNIT_S_MAX (1 µs)
UNIT_S_MAX = 1e-6
# unit_launch: how a class pays unit_s. "waves": per sequence and KV head past the first wave of the device's SMs, in
# whole waves (``efficiency.unit_launch_s``): a launch of one CTA per sequence and KV head that fits one wave is as long
# as one CTA, which the fixed latency holds. aiconfigurator-core 0.12.0's vLLM 0.24.0 L40S table (142 SMs), over 32 heads
# on one KV head (FlashAttention 2), up to 15 cached tokens: 9.0-10.2 µs from batch 1 to 128, 15.0 µs at 256
# "split_waves": vLLM's FlashAttention 3 decode, in whole waves past the first as "waves", its waves of the SMs' CTAs
# up to SPLIT_KERNEL_TOKENS tokens a call and of twice that beyond. vLLM passes FA3 num_splits = 32 (its
# VLLM_FLASH_ATTN_MAX_NUM_SPLITS_FOR_CUDA_GRAPH) where a call's tokens are at most its largest CUDA-graph capture size
# (vllm/v1/attention/backends/flash_attn.py, ``max_num_splits = self.max_num_splits``; the size min(2 · max_num_seqs,
# 512) by default, vllm/config/vllm.py ``_set_cudagraph_sizes``), 0 beyond, FA3's own heuristic then taking one
# split at a full grid (hopper/heuristics.h, ``num_splits_heuristic``): FA3's split kernel up to 512, its plain kernel
# beyond. aiconfigurator-core 0.12.0's vLLM 0.24.0 H100 table (132 SMs), 64 heads on one KV head × 128, one cached
# token: 15.8, 24.4, 46.8, 45.9, 94.7 µs at batch 128, 256, 512, 1,024, 2,048 (1, 2, 4, 4, 8 waves). That a wave of
# the plain kernel holds twice the CTAs (or its CTA takes half the split kernel's time) is the tables' doubling
# period, not read in the source
UNIT_LAUNCHES = ("waves", "split_waves")
# tile_s: seconds each wave of a query-tiled launch (``query_tiles``: one CTA per sequence, query head and tile of
# BLOCK_M query rows, CTAs per SM × SMs at a time) adds past its first, whatever the keys its CTAs walk: a tile's own
# work, its query loaded, its first key block's whole-tile products and its output stored (``efficiency.tile_cost_s``).
# aiconfigurator-core 0.12.0's SGLang 0.5.14 L40S FP8 table (Triton, 142 SMs), one token per sequence: head dim 64
# 6.0-6.3 µs up to 128 sequences × heads, then 2.1 µs per 142 more (16,384: 239 µs); head dim 192 11.8 µs, then
# 3.35 µs per 142 (16,384: 389 µs), where those calls' FLOPs take under 1 µs at the FP8 peak. At most TILE_S_MAX (100 µs)
TILE_S_MAX = 1e-4
# plan_split_s: seconds a prefill on FlashInfer adds where its plan splits the keys (``core.splitkv``,
# ``prefill_plan_splits``: the sequences × KV heads × query tiles at most the SMs), at ``plan_head_dims``, the head dims
# it runs on FlashInfer (``efficiency.plan_split_s``). aiconfigurator-core 0.12.0's vLLM 0.24.0 FP8-cache sliding-window
# tables (window 128, head dim 64, one KV head), 16,384 query rows × heads: L40S 65-77 µs where the plan splits (1 × 512
# tokens × 32 heads, … 1 × 16,384 × 1), 9-21 µs where it does not (4 × 128 × 32 … 128 × 128 × 1); RTX PRO 6000 52-61
# µs against 9-19 µs. At most PLAN_SPLIT_S_MAX (100 µs)
PLAN_SPLIT_S_MAX = 1e-4
# plan_merge_s: seconds the same split adds per query row and head it merges (its rows × heads, at any head dim: L40S,
# head dim 64 and 128 alike, 48-61 µs at 12,288 and 57-77 µs at 16,384, 13-20 µs at 256-1,024). At most
# PLAN_MERGE_S_MAX (100 ns)
PLAN_MERGE_S_MAX = 1e-7
SPLIT_KERNEL_TOKENS = 512
# write_s: seconds an SM spends per thread of a cache writer that launches one CTA per token written to the KV cache,
# each of min(KV heads · head dim, WRITE_CTA_THREADS) threads (vLLM's ``reshape_and_cache_flash``, csrc/cache_kernels.cu:
# ``dim3 grid(num_tokens)``, ``dim3 block(std::min(num_heads * head_size, 512))``), which aiconfigurator's vLLM collector
# times with the prefill (collector/vllm/collect_attn.py: ``do_kv_cache_update`` in the timed ``run`` where the backend's
# forward does not write the cache): the writer's CTAs run their SMs' worth at a time, so that its time adds
# write_s · tokens · threads / SMs (``efficiency.cache_write_s``) beside the bytes it moves. aiconfigurator-core 0.12.0's
# vLLM 0.24.0 H100 table (FA3, 512 token-heads × 128 at 512 tokens each): 8 sequences of 64 heads 0.25 ms (bf16 cache) and
# 0.30 ms (FP8), 128 sequences of 4 heads 0.48 and 0.75 ms: same FLOPs and bytes, 16× the writer's CTAs. At most
# WRITE_S_MAX (100 ns)
WRITE_S_MAX = 1e-7
# swap_s: seconds a decode call adds where FlashAttention 2 swaps a grouped query's heads into its rows and copies the
# query in and the output back (flash_api.cpp, ``mha_varlen_fwd``: ``seqlenq_ngroups_swapped`` at one query token, more
# query heads than KV heads and no window; ``q.reshape({b, h_k, ngroups, d}).transpose(1, 2).reshape({b * ngroups, h_k,
# d})`` copies unless b or h_k is 1, and so does the output's reshape back), two launches of their own
# (``efficiency.swap_copy_s``). aiconfigurator-core 0.12.0's vLLM 0.24.0 L40S bf16-cache decode table (FlashAttention
# 2), up to 15 cached tokens: 8.9-9.0 µs at batch 1 or one KV head, 12.3-13.1 µs at batch 2-16 on 2-8 KV heads (RTX PRO
# 6000: 8.9 µs, 13.0-13.2 µs). At most SWAP_S_MAX (20 µs)
SWAP_S_MAX = 2e-5
WRITE_CTA_THREADS = 512
# latency_head_dims, latency_head_dim_s: the head dims at which a decode class's call (or a prefill class's, SGLang's
# one-head prefill on an FP8 cache or on L40S and RTX PRO 6000, one backend per head dim) runs launches of its own, and the
# seconds each adds to the class's fixed latency (``efficiency.head_dim_latency_s``). aiconfigurator-core 0.12.0's
# SGLang 0.5.14 sliding-window decode tables time one model's attention call per head dim, each on the backend its
# collector picks for that model (collector/cases/models/*_cases.yaml, ``sglang_backends``): H100, bf16 cache, batch 1,
# one cached token, whatever the heads: gpt-oss's head dim 64 (FA3, sinks) 9.4-9.8 µs, Llama 4's 128 (FA3) 9.7-10.1,
# MiMo-V2's 192 (FA3, value head 128, sinks) 15.6-17.7, Gemma 4's 256 (Triton) 7.0-9.6. At most
# LATENCY_HEAD_DIM_S_MAX (100 µs) each
LATENCY_HEAD_DIM_S_MAX = 1e-4
# tile_head_dims, tile_head_dim_s, tile_rows: the head dims at which a context class's launch pays a cost per CTA
# whatever the CTA's keys, the seconds per CTA at each, and the query rows of one CTA's tile there (0: one CTA per
# sequence and query head) (``efficiency.tile_cost_s``). SGLang 0.5.14's Triton prefill gives each CTA one tile of
# BLOCK_M rows of one query head (64 on SM 10.x up to head dim 256, ``_get_block_sizes_for_extend_attention``) and
# computes whole tiles under its masks: aiconfigurator-core 0.12.0's B200 table, bf16 on an FP8 cache, head dim 192, one
# token a sequence, 21 µs at 128 sequences × query heads, 39 at 1,024, 99 at 4,096, about 20 ns per CTA; FlashInfer's
# head dim 128 there about 42 ns per sequence and query head whatever the KV heads (64 heads on 2 or 8: 696 and 697 µs
# at 256 sequences). At most TILE_HEAD_DIM_S_MAX (1 µs) each
TILE_HEAD_DIM_S_MAX = 1e-6
# tile_swap: beside tile_head_dims, the class's kernel runs a call of one query row per sequence as FlashAttention 2's
# grouped-query swap, each sequence and KV head's heads per KV head as its query rows, ⌈G / tile_rows⌉ CTAs
# (flash_api.cpp, ``mha_varlen_fwd``: ``seqlenq_ngroups_swapped``); aiconfigurator-core 0.12.0's vLLM 0.14.0 A100
# prefill table, 64 heads on one KV head × 128, batch 256: one token 24 µs, 16 tokens (16,384 CTAs) 561 µs
# latency_groups: beside latency_head_dims, one query-row count per KV head (the op's M: a decode step's heads per KV
# head) each entry of latency_head_dim_s holds at, so that an entry prices one head dim at one head group. A decode
# kernel that gives each sequence and KV head one CTA holding its G query rows runs, at one wave, as long as one such
# CTA, which grows with the rows its tile pads G to and the head dim: FlashAttention 3 (SM 9.0) runs head dim 128 on
# one MMA warpgroup (64 rows) up to 64 rows and on two (128 rows) above (hopper/heuristics.h, ``use_one_mma_wg``;
# hopper/tile_size.h, ``tile_size_fwd_sm90``: kBlockM 128 at head dims 128 and 256). aiconfigurator-core 0.12.0's
# SGLang 0.5.14 H100 table, bf16 cache, batch 1-8, up to 31 cached tokens: head dim 128 9.4 µs at 48 and 64 heads per
# KV head, 10.9 and 11.1 at 96 and 128; head dim 256 11.3-12.2 (``efficiency.head_dim_latency_s``)
# latency_units_max, latency_keys_max: the most sequences × KV heads, and keys per query, at which a class's
# latency_head_dim_s holds, beyond either none: a decode kernel that runs another launch where two or more CTAs per
# sequence and KV head fit the SMs and the sequence is short. TRT-LLM-gen's decode as SGLang 0.5.14 runs it on SM 10.x
# (``trtllm_mha``): aiconfigurator-core 0.12.0's B300 table (148 SMs), bf16 cache, one cached token, 64 heads on one KV
# head × 128: 14.5 µs from batch 1 to 64, 10.5 µs at 128; 96 heads on 2 KV heads, 14.6 µs at batch 32, 10.4 at 64;
# 128 heads on one KV head × 256, 29 µs to batch 64, 10.4-11.7 at 128; and at batch 1-4 the 29 µs hold to 127
# cached tokens, 16.6 µs from 511 (96 heads × 256: 24.8 µs, then 18.6 at 255 and 14.6 from 511)
# latency_tile_keys, latency_tile_power: a class whose latency_head_dim_s is one CTA's walk over a KV tile of
# latency_tile_keys key elements (keys × head dim), which its kernel splits over c = ⌈keys · head dim / tile⌉ CTAs
# once a sequence spans more than one tile: the entry holds at c^(−latency_tile_power) of itself (and beyond
# latency_keys_max too, which such a class does not state). TRT-LLM-gen's decode as SGLang 0.5.14 runs it on SM 10.x
# (TensorRT-LLM's trtllmGenKernels/fmha/fmhaKernels.h, ``computeNumCtas``: ⌈keys / stepKv⌉ CTAs per sequence, at
# most SMs / CTAs): aiconfigurator-core 0.12.0's B200 table, batch 1, one KV head, bf16 cache, over the class's
# fastest call: 128 heads × 256 18.5 µs to 127 cached tokens, 12.3 at 255, 6.2 at 511 (c = 1, 2, 4); × 128 10.3 to
# 255, 6.4 at 511, 4.2 at 1,023. At most LATENCY_TILE_POWER_MAX (``efficiency.head_dim_latency_s``)
LATENCY_TILE_POWER_MAX = 2.0
# variant, variant_m, variant_dtype: a kernel class whose ops at M (query rows per KV head) = variant_m run another
# kernel, the class ``variant`` names, computing in variant_dtype (``efficiency.with_variants``): TensorRT-LLM's XQA MLA decode kernel, which runs only DeepSeek's
# MLA shape (``xqaParams.h``, ``XQAParams::isMLA``: head size 576, XQA_MLA_HEADS query heads on one KV head) on SM 12.0
# with an FP8 query and cache (``decoderXQAImplJIT/kernelUtils.cpp``, ``supportConfigMLA``), the other head counts on
# the kernel that walks each sequence's latent cache in one CTA (aiconfigurator-core 0.12.0's RTX PRO 6000 table,
# FP8 cache, batch 1: 0.56 ms at 32,767 cached tokens on 128 heads, 1.83 ms on 1 to 64)
XQA_MLA_HEADS = 128
# variant_m_above, variant_blocks_below (in place of variant_m): the class's ops run ``variant`` where their M is above
# the value, or where XQA would launch fewer CTAs than the value, XQA_HISTORY_BLOCK cached tokens to a CTA
# (sequences × KV heads × max(1, ⌊keys / XQA_HISTORY_BLOCK⌋), ``xqa_blocks``): TensorRT-LLM 1.0's decode dispatch as
# its kernel tables time it (``measure.calibrate.kernelfit.dispatch.dispatched``)
XQA_HISTORY_BLOCK = 128
VARIANT_RULES = ("variant_m", "variant_m_above", "variant_blocks_below")
# math: the dtype a kernel class computes in where it is not its ops' own (``efficiency.with_variants``): the op's
# compute η is multiplied by that dtype's peak over its own, so that its bound is that dtype's peak. TensorRT-LLM's
# context kernels on an FP8 KV cache run FP8 math for a bf16 model (``kernelfit.rules.FP8_CONTEXT``). vLLM's FlashInfer
# backend quantizes the query to the KV cache's dtype wherever it runs TRT-LLM's kernels
# (vllm/v1/attention/backends/flashinfer.py, ``FlashInferMetadataBuilder``: ``q_data_type`` is the cache's dtype when
# ``can_use_trtllm_attention`` and the query quantization is not disabled), so with an FP8 cache its prefill on B200 …
# GB300 computes in FP8: aiconfigurator-core 0.12.0's vLLM 0.24.0 B300 table, 4,096 tokens and more, head dim 256: 1.66
# PFLOP/s at the median on the FP8 cache (to 2.61, over the 2.25 of bf16's peak), 1.32 on the bf16 cache, at the same
# shapes math_head_dims: the head dims (the op's K) a ``math`` class's kernel computes in that dtype at; an op at
# another head dim keeps its own peak. vLLM's FlashInfer backend takes head dims 64, 128 and 256
# (vllm/v1/attention/backends/ flashinfer.py, ``FlashInferBackend.get_supported_head_sizes``; 0.24.0's tables time 512
# on it too), so its head dim 192 (MiMo-V2) runs on vLLM's Triton prefill (``vllm_triton_attn``), whose query stays in
# the model's dtype: B300, FP8 cache, 8,193 tokens and more, head dim 192 priced at FP8's peak ran 59% too fast at the
# median (held out) query_tiles: [[head dim, BLOCK_M, CTAs per SM], …] of a context class whose kernel gives each CTA
# one tile of BLOCK_M rows of one query head, at the head dims it runs so: its launch's waves (CTAs per SM × SMs at a
# time), each as long as its longest tile's causal walk, stretch the op's time (``efficiency.query_waves``,
# ``core.querytiles``; SGLang's Triton prefill, ``kernelfit.rules.TRITON_TILES``)
# vector: how a kernel class's vector work (an attention's softmax, ``op.vector_flops``) meets its matrix work
# (``efficiency.vector_overlap``, ``law.compute_term``): "overlap", run beside it, the op's compute the longer of the
# two, where the law otherwise adds them. A warp-specialized Blackwell FMHA computes one tile's softmax in its softmax
# warpgroups while its MMA warp runs the next tile's QKᵀ and PV on the tensor cores (FlashAttention 4, the public
# kernel of that design: flash_attn/cute/flash_fwd_sm100.py, ``softmax_loop`` beside ``mma``); vLLM's FlashInfer
# backend runs TRT-LLM's such kernels on B200 … GB300 (vllm/v1/attention/backends/flashinfer.py, ``FlashInferImpl.
# forward``: ``trtllm_batch_context_with_kv_cache``). Added, the softmax at the vector unit's FP32 rate alone was
# 65-70% of the measured time of aiconfigurator-core 0.12.0's fastest vLLM 0.24.0 B300 prefills (bf16 cache, head dim
# 128, 8,192 tokens and more, 1.5 PFLOP/s), which no fit of the class's η could bring down. At a ``math`` class's
# ``math_head_dims`` only, where it names them (another kernel runs the other head dims)
VECTOR_MODES = ("overlap",)
# vector_head_dims: the head dims (the op's K) at which a ``vector`` class's kernel runs its softmax so, where it names
# them (in place of its ``math_head_dims``): another kernel runs the other head dims. SGLang 0.5.14 on B200 … GB300 runs
# TRT-LLM's context FMHA (``trtllm_mha``: python/sglang/srt/layers/attention/trtllm_mha_backend.py,
# ``TRTLLMHAAttnBackend.forward_extend``, flashinfer's ``trtllm_batch_context_with_kv_cache``) and its Triton prefill,
# whose softmax follows each tile's QKᵀ in the same warps: aiconfigurator-core 0.12.0's tables time head dims 64, 128
# and 512 on the first alone, 192 and 256 on Triton too
ATTENTION_PHASES = {"prefill": "context", "decode": "generation"}   # graph phase -> attention kernel family
WIDE_GQA = 32             # query heads per KV head beyond which attention kernels take their slow path
# head dims whose sliding-window decode runs TensorRT-LLM's XQA kernel: its JIT path takes any multiple of 16 from 16
# to 256 (``decoderXQAImplJIT/kernelUtils.cpp``, ``supportConfigHMMA`` and ``supportConfigQGMMA``: ``head_size % 16 !=
# 0 || head_size < 16 || head_size > 256`` refused). aiconfigurator-core 0.12.0's 1.3.0rc20 H100 table runs head dim
# 192 with 2 to 8 heads per KV head as XQA splits it (64 heads on 8 KV heads, window 128, 16 sequences: 12 µs at 127
# cached tokens, 40 µs from 1,023 on, 8 blocks at the 8-wave cap), and one head per KV head as MMHA (flat)
XQA_HEAD_DIM_STEP, XQA_HEAD_DIM_MAX = 16, 256
MEASURED_FIELDS = ("gemv_m", "gemv_m_kn", "gemv_pass", "gemv_pass_kn",   # set by the probe, never fitted
                   "gemv_row", "gemv_row_kn")
ROW_FIELDS = ("gemv_row", "gemv_row_kn")      # [[length, factor], …] (the others are numbers)
GEMV_PASS_MAX = 2.0       # a further row re-reading the weights twice over is no GEMV path
GEMV_ROW_MAX = 16.0       # a GEMV 16× slower per byte for its row length is a measurement gone wrong


def gemm_dims(cols: Columns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(M, N, K) arrays shaped like cols.flops, derived from flops and bytes (see module doc); read-only.

    One evaluation asks for the dims of the same columns several times (``law.efficiency``: η, grid, serial
    share, streamed η, extra bytes): they are computed once and kept on the columns, which are immutable
    (``Columns.derived``)."""
    return cols.derived("gemm_dims", _read_only_dims)


def _read_only_dims(cols: Columns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    dims = _gemm_dims(cols)
    for x in dims:
        x.setflags(write=False)
    return dims


def _gemm_dims(cols: Columns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    b = np.array([DTYPE_BYTES[d] for d in cols.dtypes]).reshape((-1,) + (1,) * len(cols.cfg_shape))
    f = cols.flops
    wb = b if cols.weight_elem_bytes is None else np.where(cols.weight_elem_bytes > 0, cols.weight_elem_bytes, b)
    w = cols.bytes.get("weights", np.zeros_like(f)) / wb      # elements, whatever dtype they are stored in
    a = cols.bytes.get("activations", np.zeros_like(f)) / b
    cube = np.cbrt(np.maximum(f, 0.0) / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        m = np.where(w > 0, f / (2.0 * w), cube)
        s = np.where(m > 0, a / m, 0.0)                       # K + N
        disc = s * s - 4.0 * w
        root = np.sqrt(np.maximum(disc, 0.0))
        k = np.where(disc > 0, (s + root) / 2.0, np.sqrt(np.maximum(w, 0.0)))
        n = np.where(disc > 0, (s - root) / 2.0, np.sqrt(np.maximum(w, 0.0)))
    k = np.where(w > 0, k, cube)
    n = np.where(w > 0, np.maximum(n, 1.0), cube)
    m, k = np.maximum(m, 1.0), np.maximum(k, 1.0)
    if cols.nk is not None:                                   # convs: N and K stated, M = flops / (2·N·K)
        given = (cols.nk[:, 0] > 0).reshape((-1,) + (1,) * len(cols.cfg_shape))
        n, k = (np.where(given, cols.nk[:, i].reshape(given.shape), x) for i, x in enumerate((n, k)))
        with np.errstate(divide="ignore", invalid="ignore"):   # attention (no weights): M from the stated N, K
            m = np.where(given & (w <= 0), np.maximum(f / (2.0 * n * k), 1.0), m)
    if cols.mnk is not None:                                  # ops that state their shape (op.attrs["mnk"])
        given = cols.mnk[:, 0] > 0                            # (n_ops, *cfg): a sweep's attention varies its shape
        m, n, k = (np.where(given, cols.mnk[:, i], x) for i, x in enumerate((m, n, k)))
    return m, n, k


def conv_nk(weight_shape) -> tuple[int, int] | None:
    """A convolution's GEMM N and K from its weight [Cout, Cin/groups, *kernel]: N = output channels,
    K = input channels per group · kernel area (M, batch · output pixels, follows from the FLOPs);
    None for a shape that is not a conv weight."""
    if len(weight_shape) < 3 or any(int(d) <= 0 for d in weight_shape):
        return None
    return int(weight_shape[0]), int(np.prod([int(d) for d in weight_shape[1:]]))


def conv_groups(input_shape, weight_shape) -> dict:
    """{"groups", "group_channels"} of a grouped convolution (input [B, C_in, …], weight [C_out, C_in/groups,
    …]); {} for a dense one or shapes that are not a conv's (the op class, ``graph.op_class``)."""
    if len(input_shape) < 2 or len(weight_shape) < 3 or int(weight_shape[1]) <= 0:
        return {}
    per_group = int(weight_shape[1])
    groups = int(input_shape[1]) // per_group
    return {"groups": groups, "group_channels": per_group} if groups > 1 else {}


def attention_nk(key_shape) -> tuple[int, int] | None:
    """A fused attention's GEMM N and K from its keys [B, H, key length, head dim]: (key length, head dim)
    (M, 2 · batch · heads · query length, follows from the FLOPs); None for another shape."""
    if len(key_shape) != 4 or any(int(d) <= 0 for d in key_shape):
        return None
    return int(key_shape[2]), int(key_shape[3])


def attention_kernel(phase: str, dtype: str, kv_dtype: str, regime: str = "") -> str:
    """The kernel class of an attention op of a ``phase`` (prefill, decode) graph computing in ``dtype`` on a KV
    cache in ``kv_dtype``, in a ``regime`` (``attention_regime``): 'attention_context_bf16_kv_fp8',
    'attention_generation_bf16_kv_bf16_window' … (a calibration fitted on measured attention kernels holds a GEMM
    shape table of each under ``[calibration.kernel]``)."""
    return f"attention_{ATTENTION_PHASES[phase]}_{dtype}_kv_{kv_dtype}{regime}"


def mla_bmm_kernel(dtype: str) -> str:
    """The kernel class of MLA's per-head decode products (``attention.q_absorb``, ``attention.v_up``) in ``dtype``:
    'mla_bmm_bf16', 'mla_bmm_fp8' (TensorRT-LLM's batched matmuls over the heads; a calibration fitted on their
    measured tables holds a GEMM shape table of each under ``[calibration.kernel]``, without one the op keeps its
    dtype's GEMM terms)."""
    return f"mla_bmm_{dtype}"


def attention_regime(window: bool, heads: int, kv_heads: int, head_dim: int = 0, generation: bool = False) -> str:
    """The kernel path a grouped-query attention runs on, as measured kernels tell them apart ('_mla' names multi-head
    latent attention's own kernels, ``workloads.attention``): '_window' for a sliding window (a generation step's on
    TensorRT-LLM's XQA kernel), '_window_mmha' for a sliding-window generation step XQA refuses, which falls back to
    the masked multi-head attention kernel (``window_kernel``), '_mha' for one query head per KV head, '_wide' for
    more than ``WIDE_GQA`` (TensorRT-LLM's generation kernels run those ~8× slower per byte: aiconfigurator-core
    0.12.0's H100 tables), '' otherwise."""
    if window:
        return "_window" if not generation or window_kernel(heads, kv_heads, head_dim) == "xqa" else "_window_mmha"
    if heads <= kv_heads:
        return "_mha"
    return "_wide" if heads > WIDE_GQA * max(kv_heads, 1) else ""


def window_kernel(heads: int, kv_heads: int, head_dim: int) -> str:
    """The decode kernel TensorRT-LLM picks for a grouped-query attention: 'xqa' for 2 to ``WIDE_GQA`` query heads
    per KV head (``decoderXQAImplJIT/kernelUtils.cpp``: ``supportConfigCommon`` refuses vanilla MHA,
    ``supportConfigHMMA`` / ``supportConfigQGMMA`` a head group over 32) at a head dim their JIT kernels take (a
    multiple of ``XQA_HEAD_DIM_STEP`` up to ``XQA_HEAD_DIM_MAX``); 'mmha' (``decoderMaskedMultiheadAttention``)
    otherwise."""
    group = heads // max(kv_heads, 1)
    d = int(head_dim)
    xqa_dim = d % XQA_HEAD_DIM_STEP == 0 and XQA_HEAD_DIM_STEP <= d <= XQA_HEAD_DIM_MAX
    return "xqa" if 2 <= group <= WIDE_GQA and xqa_dim else "mmha"


def attention_kernel_parts(name: str) -> tuple[str, str] | None:
    """(phase, regime) of an ``attention_kernel`` name; None for another name."""
    m = re.fullmatch(r"attention_(context|generation)_[a-z0-9]+_kv_[a-z0-9]+"
                     r"(_window_mmha|_window|_mha|_wide|_mla_xqa|_mla)?", name)
    if m is None:
        return None
    return {v: k for k, v in ATTENTION_PHASES.items()}[m.group(1)], m.group(2) or ""


def tiled_kv_heads(phase: str, regime: str, heads: int, kv_heads: int) -> int:
    """The KV heads an attention's kernel tiles its query rows by (``attention_mnk``'s ``kv_heads``): the model's,
    but for a prefill over ``WIDE_GQA`` heads per KV head, whose context kernel tiles each query head's tokens on
    their own (M = the query tokens per sequence, the heads a grid of CTAs: sequences × heads units), as MLA's
    prefill does. Grouped there, M = tokens × 64…96 folds the head count into the tile's rows: held out on
    aiconfigurator-core 0.12.0's B200 tables, 96 heads ran 16% slower than that M predicted at 16–64 tokens and
    64 heads 8% faster (docs/accuracy.md)."""
    if phase == "prefill" and regime == "_wide":
        return heads
    return kv_heads


def attention_mnk(query_tokens, keys, heads: int, kv_heads: int, head_dim: int) -> tuple:
    """An attention's GEMM shape as its kernels tile it, per sequence and KV head: M = the query rows that
    share a KV head (query tokens per sequence × heads per KV head: a decode step's grouped queries fill a
    tile's rows only that far), N = the keys each query sees (the kernel's K loop), K = the head dimension.
    Numbers, or arrays where a sweep varies the batch or the sequence."""
    num = lambda x: float(x) if np.ndim(x) == 0 else np.asarray(x, float)  # noqa: E731
    return (num(np.asarray(query_tokens, float) * heads / max(kv_heads, 1)), num(keys), float(head_dim))


def kn_rows(cols: Columns) -> np.ndarray:
    """(n_ops, *cfg) True where an op computes x @ W with W row-major K×N (op.attrs["weights_kn"])."""
    if cols.weights_kn is None:
        return np.zeros(cols.flops.shape, bool)
    return np.broadcast_to(np.asarray(cols.weights_kn, bool).reshape((-1,) + (1,) * len(cols.cfg_shape)),
                           cols.flops.shape)


def gemm_eta(p: dict, m, n, k, kn=False):
    s = lambda x, h: x / (x + h)  # noqa: E731
    m_half = np.where(kn, p["m_half"], p.get("m_half_nt", p["m_half"])) if "m_half_nt" in p else p["m_half"]
    fill = m / (np.ceil(np.maximum(m, 1e-9) / p["m_tile"]) * p["m_tile"]) if "m_tile" in p else s(m, m_half)
    eta = p["eta_max"] * fill * s(n, p["nk_half"]) * s(k, p.get("k_half", p["nk_half"]))
    if "gemv_eta" in p:            # optional: a GEMV runs a matrix-vector kernel, not a small GEMM; its
        # time follows the matrix, not M (measured: M = 2 on the GEMV path as fast as M = 1), so its
        # rate grows with M
        eta = np.where(is_gemv(p, m, kn), np.minimum(p["gemv_eta"] * np.maximum(m, 1.0), 1.0), eta)
    return eta


def gemv_m_half_max(peak_flops: float, bw_Bps: float, eta_max: float, memory_eta: float, weight_bytes: float) -> float:
    """The largest half-point ``m_half`` under which a GEMV (M = 1, N and K large) streaming its weights from device
    memory stays bound by memory (the small-M rule): its compute, 2·N·K·(1 + m_half)/(peak·eta_max), at most
    ``GEMV_STREAM_MARGIN`` of its weights' streaming, N·K·weight_bytes/(BW·memory_eta):

        1 + m_half ≤ margin · peak·eta_max·weight_bytes / (2·BW·memory_eta)       (0 at least)"""
    balance = peak_flops * eta_max * weight_bytes / (2.0 * bw_Bps * memory_eta)
    return max(GEMV_STREAM_MARGIN * balance - 1.0, 0.0)


def gemm_serial(p: dict, m, kn=False):
    """The non-overlapped share per op (0 where the table has no ``serial``, and for GEMVs)."""
    return np.where(is_gemv(p, m, kn), 0.0, float(p.get("serial", 0.0)))


def streamed_eta(p: dict, n, k):
    """The weights' streamed η of a table with ``streamed_half``: streamed · N·K / (N·K + streamed_half), the η a
    GEMM's weight tiles reach with the CTAs they put in flight (see module doc); ``streamed`` where N·K is not
    positive (an op without a shape: no weight bytes for the η to divide)."""
    w = np.asarray(n, float) * np.asarray(k, float)
    half = float(p["streamed_half"])
    with np.errstate(divide="ignore", invalid="ignore"):
        ramp = np.where(w > 0, w / (w + half), 1.0) if half > 0 else np.ones(w.shape)
    return float(p["streamed"]) * ramp


def is_gemv(p: dict, m, kn=False) -> np.ndarray:
    """Rows whose M the table's library runs as matrix-vector products (M ≤ gemv_m, or gemv_m_kn for
    x @ W ops; default 1); none for a table whose weights' η follows their tiles (``streamed_half``: one form
    from M = 1 on, fitted on measured kernels)."""
    if "streamed_half" in p:
        return np.zeros(np.shape(m), bool)
    limit = np.where(kn, float(p.get("gemv_m_kn", 1)), float(p.get("gemv_m", 1)))
    return np.asarray(m) < limit + GEMV_M - 1.0


def gemv_passes(p: dict, m, kn=False) -> np.ndarray:
    """Per row, the weight traffic beyond one pass, as a multiple of the weight bytes: gemv_pass(_kn) ×
    (M − 1) on the GEMV path, 0 elsewhere."""
    share = np.where(kn, float(p.get("gemv_pass_kn", 0.0)), float(p.get("gemv_pass", 0.0)))
    return np.where(is_gemv(p, m, kn), share * np.maximum(np.asarray(m, float) - 1.0, 0.0), 0.0)


def row_length(cols: Columns, n, k) -> np.ndarray:
    """Per row, the length of the weight's stored rows (x @ W: N, x @ Wᵀ: K) where the op states N and K
    (``op.attrs["nk"]`` or ``["mnk"]``; ``n``, ``k`` from ``gemm_dims``); NaN where it does not (the
    inferred split cannot tell N from K)."""
    stated = np.zeros(len(cols.kind_idx), bool)
    for given in (cols.nk, cols.mnk):
        if given is not None:
            stated |= (given[:, 0] > 0).reshape(len(given), -1).any(axis=1)
    stated = stated.reshape((-1,) + (1,) * len(cols.cfg_shape))
    return np.where(stated, np.where(kn_rows(cols), n, k), np.nan)


def row_factor(p: dict, length, kn=False) -> np.ndarray:
    """Per row, a cold GEMV's time per weight byte at weight rows of ``length`` elements over the fastest
    length the probe timed (``gemv_row``, ``gemv_row_kn`` for x @ W): interpolated in log length, held at
    the ends; 1 where the table has none or the length is unknown (NaN)."""
    length = np.asarray(length, float)
    kn = np.broadcast_to(np.asarray(kn, bool), length.shape)
    out = np.ones(length.shape)
    for key, sel in (("gemv_row", ~kn), ("gemv_row_kn", kn)):
        table = sorted(p.get(key) or [])
        if not table:
            continue
        known = sel & np.isfinite(length) & (length > 0)
        at = np.log(np.where(known, length, 1.0))
        out = np.where(known, np.interp(at, np.log([x for x, _ in table]), [f for _, f in table]), out)
    return out


GRID_AXES = 4              # M, N, K, units (FLOPs / (2·M·N·K))
GRID_LOG_MAX = 300         # |100 · ln factor| beyond this (a factor of 20) is a fit gone wrong


def grid_units(flops, m, n, k):
    """An op's independent GEMMs of shape M×N×K: FLOPs / (2·M·N·K) (1 for a GEMM; the sequences × KV heads, × 2
    for QKᵀ and PV, of an attention), at least 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.maximum(np.where(m * n * k > 0, np.asarray(flops, float) / (2.0 * m * n * k), 1.0), 1.0)


def xqa_blocks(units, n):
    """The CTAs TensorRT-LLM's XQA decode launches, as its enabling rule counts them: the sequences × KV heads (an
    attention's ``grid_units`` over 2, QKᵀ and PV) × one per ``XQA_HISTORY_BLOCK`` cached tokens, at least one
    (cpp/tensorrt_llm/kernels/decoderMaskedMultiheadAttention/decoderXQARunner.cpp, ``mayHavePerfGain``;
    ``kMinHistoryTokensPerBlock``)."""
    return np.asarray(units, float) / 2.0 * np.maximum(1.0, np.floor(np.asarray(n, float) / XQA_HISTORY_BLOCK))


def grid_nodes(values, step: float) -> list[float]:
    """Log-spaced nodes from the smallest to the largest of ``values``, each ``step`` times the one before, the
    largest value the last node."""
    lo, hi = float(np.min(values)), float(np.max(values))
    out = [lo]
    while out[-1] * step < hi * 0.999:
        out.append(out[-1] * step)
    if out[-1] < hi:
        out.append(hi)
    return [float(f"{x:.6g}") for x in out]


def grid_weights(nodes: list[list[float]], coords) -> tuple[np.ndarray, np.ndarray]:
    """(index, weight), each (rows, 2**axes with more than one node): the grid nodes around each row's point and
    their multilinear weights in log space (held at the ends)."""
    rows = len(coords[0])
    idx = np.zeros((rows, 1), int)
    w = np.ones((rows, 1))
    for nd, x in zip(nodes, coords):
        if len(nd) == 1:                      # one node: every row on it (the corners do not double)
            continue
        ln = np.log(np.asarray(nd, float))
        lx = np.log(np.maximum(np.asarray(x, float), 1e-30))
        i = np.clip(np.searchsorted(ln, lx) - 1, 0, len(ln) - 2)
        t = np.clip((lx - ln[i]) / (ln[i + 1] - ln[i]), 0.0, 1.0)
        # the corners below and above on this axis after those of the axes before: (rows, corners, 2)
        corners = idx.shape[1]
        nxt_idx, nxt_w = np.empty((rows, corners, 2), idx.dtype), np.empty((rows, corners, 2))
        np.multiply(idx, len(ln), out=nxt_idx[:, :, 0])
        np.add(nxt_idx[:, :, 0], i[:, None], out=nxt_idx[:, :, 0])
        np.add(nxt_idx[:, :, 0], 1, out=nxt_idx[:, :, 1])
        np.multiply(w, (1.0 - t)[:, None], out=nxt_w[:, :, 0])
        np.multiply(w, t[:, None], out=nxt_w[:, :, 1])
        idx, w = nxt_idx.reshape(rows, -1), nxt_w.reshape(rows, -1)
    return idx, w


def grid_values(p: dict) -> np.ndarray:
    """A table's ``grid_log`` as numbers (100 · ln factor per node)."""
    return _grid_values(p["grid_log"])


def grid_factor(p: dict, m, n, k, units) -> np.ndarray:
    """Per row, the measured time over the shape model's at its (M, N, K, units), from the table's grid (1 without
    one)."""
    m = np.asarray(m, float)
    if "grid_log" not in p:
        return np.ones(m.shape)
    flat = [np.broadcast_to(np.asarray(x, float), m.shape).reshape(-1) for x in (m, n, k, units)]
    idx, w = grid_weights(p["grid_nodes"], flat)
    return np.exp((grid_values(p)[idx] * w).sum(axis=1) / 100.0).reshape(m.shape)


def grid_text(values) -> str:
    """``grid_log``'s string of whole numbers, runs of zeros written ``0*n``."""
    out, zeros = [], 0
    for v in (int(x) for x in values):
        if v == 0:
            zeros += 1
            continue
        if zeros:
            out.append("0" if zeros == 1 else f"0*{zeros}")
            zeros = 0
        out.append(str(v))
    if zeros:
        out.append("0" if zeros == 1 else f"0*{zeros}")
    return " ".join(out)


def grid_tokens(text: str) -> list[int] | None:
    """The whole numbers of a ``grid_log`` string (``0*n`` expanded); None where a token is neither."""
    out: list[int] = []
    for tok in text.split():
        if tok.startswith("0*") and tok[2:].isdigit():
            out.extend([0] * int(tok[2:]))
        elif tok.lstrip("-").isdigit():
            out.append(int(tok))
        else:
            return None
    return out


@functools.lru_cache(maxsize=256)
def _grid_values(text: str) -> np.ndarray:
    return np.array(grid_tokens(text), dtype=float)
