"""The law's GEMM and attention terms of one GPU fitted on measured kernel tables, and scored on held-out rows.

    groups = kernelfit.groups(kerneltable.read(DIR, ops=kernelfit.OPS, gpu="h100", framework="trtllm"))
    table = kernelfit.fit(hw, groups)                 # a [calibration] table, provenance included
    scores = kernelfit.score(hw, table, groups)       # per kernel class: held-out rows, median and p90 |error|

A group is one kernel class of the tables: GEMMs of one dtype (``[calibration.matmul.<dtype>]``), or
context / generation attention of one math and KV dtype and regime, or context / generation MLA (DeepSeek-V3's
latent attention) of one KV dtype (``[calibration.kernel."attention_…"]``, the kernel class
``gemmshape.attention_kernel`` names). Each group's rows are sorted by shape and split in
two: the even rows are fitted (at most ``FIT_ROWS`` of them, evenly spaced), the odd rows held out (``score``
runs at most ``SCORE_ROWS`` of them, evenly spaced). Every
row is the op ironlaw itself builds for it — ``gemm:M,N,K`` (``models.workloads.micro``), the analytic
transformer's attention (``models.workloads.attention``, KV dtype as ``serving.online.with_kv_dtype``
sets it) — and the fit runs the law on it (``fitcore.Problem``), so what is fitted is what predicts.

Per group the fitted terms are the shape model η = eta_max · M/(M+m_half) · N/(N+nk_half) · K/(K+k_half)
(attention: M the query rows per sequence and KV head, N the keys per query, K the head dim;
``gemmshape.attention_mnk``), the streamed bytes' η (GEMM weights, attention KV cache) and a fixed
``latency_s``, and then, on all the fit rows, the kernel grid (``fit_grid``, ``gemmshape.grid_factor``): the
measured over the modelled time per node of a log-spaced grid over M, N, K and units. docs/accuracy.md says which
data chose this form over a tile-and-wave one and over the shape model alone. ``fit(gemm_fill="stream")`` fits a
GEMM class's weights at an η that grows with their tiles (``gemmshape.streamed_eta``, ``fit_stream``), the form the
catalog's Hopper and datacenter-Blackwell GEMM classes hold.
"""
from __future__ import annotations

import datetime as _dt
import math
import re
from dataclasses import dataclass, replace

import numpy as np

from ...core.errors import IronlawError
from ...core.gemmshape import (CTA_S_MAX, GEMV_STREAM_MARGIN, GRID_LOG_MAX, KEY_S_MAX, MERGE_S_MAX, SPLIT_S_MAX,
                               SWAP_S_MAX, UNIT_S_MAX, WIDE_GQA, WRITE_S_MAX, XQA_MLA_CTAS, XQA_MLA_HEADS, attention_kernel,
                               attention_kernel_parts, attention_regime, grid_nodes, grid_text, grid_weights)
from ...core.graph import Graph
from ...core.querytiles import ctas_per_sm
from ...core.splitkv import CHUNK_OCCUPANCY, MMHA_OCCUPANCY, MMHA_THREADS
from ...law.efficiency import class_latency_s, kernel_coords, split_blocks
from ...machine.calibration import SCHEMA, Calibration, check, without_calibration
from ...models.workloads.hfconfig import MLA
from .fitcore import HALF_BOUNDS, Observation, Problem, fit_group, grid
from .kerneltable import PROVENANCE, KernelTable, check_gemm_dims

OPS = ("gemm", "context_attention", "generation_attention", "context_mla", "generation_mla", "mla_bmm")
# tables whose rows stream their operands once per call (a decode step's KV cache), so that where those fit the last
# cache level the collector's repeated calls read them from there (``cache_resident``); a GEMM or context row that
# fits is bound by its math or its launch, and those tables are fitted as measured
RESIDENT_OPS = ("generation_attention", "generation_mla", "mla_bmm")
# ops whose collector calls one kernel over and over on the same input and into the same output block (MLA's per-head
# products: collector/{trtllm,vllm,sglang}/collect_mla_bmm.py, ``kernel_func``), so that a row whose whole footprint
# fits the last cache level reads its activations from there too, whatever their size (``warm_through``): L40S bf16,
# 8 heads, mla_gen_pre, 36 µs at 6,144 tokens (61 MiB in all), 211 µs at 12,288. Generation MLA likewise: its
# collector captures one ``attn.forward`` in a CUDA graph and replays it on the same query, cache and output
# (collector/trtllm/collect_mla.py, ``run_mla``): L40S bf16, 512 sequences of 64 heads at 1-15 cached tokens (68 MiB of
# query and output) 54 µs, where the GDDR6's 864 GB/s would take 83 µs
WARM_THROUGH_OPS = ("mla_bmm", "generation_mla")
# (framework, op, regime) of the decode classes whose rows' query and output are read and written in the last cache
# level where everything the call touches fits it (``warm_through``): vLLM's and SGLang's decode over ``WIDE_GQA``
# query heads per KV head. Their collectors call the attention layer over and over on one query tensor into one
# output (collector/sglang/collect_attn.py, ``run_iter``: ``layer(q, k, v, forward_batch)`` under a CUDA graph;
# collector/vllm/collect_attn.py likewise), and at G query heads per KV head the query and output, 2·G·head dim
# elements per sequence and KV head, outweigh the cache read at one cached token G-fold: aiconfigurator-core
# 0.12.0's SGLang 0.5.14 L40S table (96 MiB L2, GDDR6 864 GB/s), 128 heads on one KV head × 256, batch 512, one
# cached token: 67 MiB of query and output in 23.6 µs, 2.9 TB/s (docs/accuracy.md, "Decode over 32 heads per KV
# head on vLLM and SGLang")
WARM_THROUGH_CLASSES = {("vllm", "generation_attention", "_wide"), ("sglang", "generation_attention", "_wide")}
# (op, GPUs) of the prefill tables whose rows are resident where all their bytes fit the last cache level, their
# query and output too where those fit with the output's share (``cache_resident``, ``warm_through``): the collector
# calls one attention over and over on the same query, keys and values into the same output, and on a GDDR GPU the L2
# serves those bytes several times faster than its device memory. RTX PRO 6000 (128 MiB L2, GDDR7 1.6 TB/s), SGLang
# 0.5.14 (FlashInfer), 96 heads on one KV head × 128, 128 tokens per sequence: 16 sequences (97 MiB of query and
# output) 44 µs, 32 sequences 140 µs (194 MiB at the GDDR7's rate: 127 µs); at 512 tokens, where the math binds, 4 and
# 8 sequences take 106 and 208 µs
# (vLLM's and SGLang's tables: TensorRT-LLM 1.3's context classes of these GPUs, refitted so, held out a little
# worse, e.g. RTX PRO 6000 bf16 2.2% / 10.0% → 2.5% / 10.9%, and keep their fit)
RESIDENT_CONTEXT = {"context_attention": ("l40s", "rtx-pro-6000")}
RESIDENT_CONTEXT_FRAMEWORKS = ("vllm", "sglang")
# of those, the tables whose rows' KV cache alone decides whether they are resident (``reread_bytes``): decode
# attention; MLA's decode and its BMMs keep every byte of the op (their rows at the L2's size not examined)
CACHE_DECIDES_OPS = ("generation_attention",)
# the tables whose decode rows ran on a K-only cache pool (``k_only_pool``): TensorRT-LLM's attention decode before
# the 1.3 line (A100's 1.0.0 table; aiconfigurator 0.8.0's 1.0.0rc3 / rc6 tables), its grouped-query class
K_ONLY_OP, K_ONLY_FRAMEWORK, K_ONLY_BEFORE, K_ONLY_REGIMES = "generation_attention", "trtllm", (1, 3), ("",)
# and, on the GPUs whose decode runs the trtllm-gen kernels for every head ratio (SM 100: TensorRT-LLM's
# ``XqaDispatcher``, cpp/tensorrt_llm/kernels/xqaDispatcher.cpp, its trtllm-gen runner "for SM == 100"), the
# one-head-per-KV-head class too: aiconfigurator 0.8.0's B200 and GB200 1.0.0rc6 tables read a cache of 1 GiB or more
# at a median 1.45-1.48x HBM counted as keys and values in both classes (their 1.3.0rc20 rows: 0.88-0.91x), where
# H100's and H200's 1.0.0rc3 one-head rows (MMHA) stream both (0.76-0.88x; grouped: 1.34-1.68x)
K_ONLY_ALL_HEADS_GPUS, K_ONLY_ALL_HEADS_REGIMES = ("b200", "gb200"), ("", "_mha")
# TensorRT-LLM 1.0's decode dispatch as aiconfigurator 0.8.0's 1.0-line tables time it (``dispatch_rule``): per GPU,
# the regime of the class some of whose rows run another kernel, that kernel's class (regime), and which rows
# (``gemmshape.VARIANT_RULES``; None: the GPU's SMs over XQA_MIN_BLOCK_FACTOR). H100 and H200 (1.0.0rc3): XQA runs a
# grouped-query decode only where it would launch at least a quarter of the SMs' worth of CTAs (decoderXQARunner.cpp,
# ``mayHavePerfGain``: ``kEnableMinBlockFactor`` 4, a CTA per ``kMinHistoryTokensPerBlock`` 128 cached tokens); the
# others run MMHA, the one-head class's kernel: their FP8-cache rows take a median 1.64x the 1.3.0rc20 rows' time of
# the same shape (XQA's rows 1.01x; bf16 cache 0.97x and 1.00x). B200 and GB200 (1.0.0rc6): 24 and 32 query heads per
# KV head run the over-32 class's kernel, whose time follows the query heads: one cached token, 32 heads on 1 KV head
# at 1,024 sequences, 64 on 1 at 512 and 128 on 2 at 256 take 0.386-0.388 ms, 16 on 1 at 2,048 0.048 ms (their
# 1.3.0rc20 rows at 24-32 heads per KV head: over 2x faster in 67-75% of them)
DISPATCH_BEFORE, XQA_MIN_BLOCK_FACTOR = (1, 3), 4.0
DISPATCH = {"h100": ("", "_mha", "variant_blocks_below", None), "h200": ("", "_mha", "variant_blocks_below", None),
            "b200": ("", "_wide", "variant_m_above", 16), "gb200": ("", "_wide", "variant_m_above", 16)}
PHASES = {"context_attention": "prefill", "generation_attention": "decode", "context_mla": "prefill",
          "generation_mla": "decode"}
# the MLA tables' model: DeepSeek-V3's latent attention (config.json of deepseek-ai/DeepSeek-V3: q_lora_rank 1536,
# kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128), the shapes aiconfigurator collects
MLA_DIMS = MLA(q_lora=1536, kv_lora=512, nope=128, rope=64, v_dim=128)
# the kernel libraries whose tables fit: TensorRT-LLM, SGLang and vLLM (aiconfigurator-core); aiter (AMD ROCm/aiter,
# the GEMM and attention kernels vLLM and SGLang call on AMD Instinct GPUs: its tuned tables, benchmarks/amd_kernels.py)
FRAMEWORKS = ("trtllm", "sglang", "vllm", "aiter")
# table dtype -> ironlaw dtype ('sq': TensorRT-LLM's SmoothQuant GEMM, INT8 activations times INT8 weights)
GEMM_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "fp8": "fp8", "nvfp4": "fp4", "sq": "int8",
               "mxfp4": "mxfp4"}        # OCP MXFP4 (AMD CDNA 4, aiter's a4w4 tables)
ATTENTION_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "fp8": "fp8"}
SKIPPED = {"fp8_block": "128-element block-scaled FP8 (DeepGEMM): no ironlaw dtype runs it",
           "int8_wo": "INT8 weights on bf16 activations (weight-only): no ironlaw dtype runs it",
           "int4_wo": "INT4 weights on bf16 activations (weight-only): no ironlaw dtype runs it"}
SHAPE_COLUMNS = {"gemm": ("m", "n", "k"),
                 "context_attention": ("batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim",
                                       "window_size"),
                 "generation_attention": ("batch_size", "step", "num_heads", "num_key_value_heads", "head_dim",
                                          "window_size"),
                 "context_mla": ("batch_size", "isl", "num_heads", "tp_size", "kv_cache_dtype"),
                 "generation_mla": ("batch_size", "num_heads", "tp_size", "step", "kv_cache_dtype"),
                 "mla_bmm": ("op_name", "num_heads", "num_tokens")}
# generation MLA's heads per GPU (128 / TP: 1, 2, 4 … 128) come 8 to a batch and sequence length: sorted with the
# heads last, the even/odd split fitted 1, 4, 16, 64 heads and held out 2, 8, 32, 128 (128 beyond every fitted row);
# sorted with the sequence length last (17 lengths, odd), each head count and length falls in both halves
REGIMES = {"_window": "sliding window", "_window_mmha": "sliding window, MMHA kernel", "_mha": "one head per KV head", "_wide": f"over {WIDE_GQA} heads per KV head",
           "_mla": "latent (MLA)", "_mla_xqa": "XQA MLA kernel"}
# catalog GPUs whose TensorRT-LLM decodes DeepSeek's MLA at XQA_MLA_HEADS heads per GPU on an FP8 cache with its XQA
# MLA kernel (``decoderXQAImplJIT/kernelUtils.cpp``, ``supportConfigMLA``: SM 12.0 only; ``xqaParams.h``, ``isMLA``:
# 128 query heads on one KV head): the RTX PRO 6000 Blackwell Server Edition (GB202, compute capability 12.0;
# aiconfigurator-core 0.12.0's rtx_pro_6000_server.yaml, sm_version 120). Those rows are a class of their own
# (``_mla_groups``, regime '_mla_xqa'), which the FP8-cache class names as its ``variant`` at M = XQA_MLA_HEADS
# (``efficiency.with_variants``); the other GPUs' tables run those rows 1.0-1.7x as long as 64 heads, RTX PRO 6000's
# 0.3x (batch 1, 16,383 cached tokens: 0.29 ms against 0.92 ms)
XQA_MLA_GPUS = ("rtx-pro-6000",)
# generation MLA's walk in waves (``gemmshape`` key_ctas, ``efficiency.walk_s``), fitted beside the plain walk and the
# smaller loss on the fitted rows kept (``fit_class``; on a device that states its SMs, TensorRT-LLM's tables), its
# per-CTA seconds ``cta_s`` from each of CTA_S_STARTS: the XQA MLA class's XQA_MLA_CTAS CTAs per sequence; the other
# classes' one CTA per sequence (the kernel that walks each sequence's latent cache in one CTA: aiconfigurator-core
# 0.12.0's RTX PRO 6000 table, FP8 cache, 16,383 cached tokens, 0.92 ms from 1 to 64 heads at batch 1). key_ctas counts
# CTAs per grid unit: a decode op's units per sequence are (qk + pv) / qk of DeepSeek-V3's absorbed latent, 1088 / 576
MLA_UNITS_PER_SEQUENCE = (2 * MLA_DIMS.kv_lora + MLA_DIMS.rope) / (MLA_DIMS.kv_lora + MLA_DIMS.rope)
WALK_WAVES = {("generation_mla", "_mla_xqa"): ({"key_ctas": round(XQA_MLA_CTAS / MLA_UNITS_PER_SEQUENCE, 4)},),
              ("generation_mla", "_mla"): ({"key_ctas": round(1.0 / MLA_UNITS_PER_SEQUENCE, 4)},)}
CTA_S_STARTS = (1e-6, 1e-5)
# context kernels that run FP8 math on an FP8 KV cache whatever the model's dtype, per table op: the GPUs and the
# TensorRT-LLM versions whose tables (their bf16-math FP8-cache classes, ``FP8_CONTEXT_CLASS``) are fitted with
# ``math = "fp8"`` (``efficiency.with_variants``: the op's compute η bounded at the FP8 peak, not the bf16 one).
# Context MLA: TensorRT-LLM sets its FP8 context MLA on SM 90, 100, 103 and 120 wherever the cache is FP8
# (cpp/tensorrt_llm/thop/attentionOp.cpp, ``mFP8ContextMLA``): H100, H200, B200, B300, GB200, GB300, RTX PRO 6000.
# Context attention: aiconfigurator-core 0.12.0's 1.3.0rc20 tables time a bf16-math FP8-cache row at its FP8-math
# row's time on SM 90, 100 and 103 (B300, head dim 128, median ratio 1.01-1.07 from 16 to 16,384 tokens; against the
# bf16-cache row 0.71 at 16,384: 4 sequences of 16,384 tokens, 20 heads on 4 KV heads, 2.78 ms, 2.79 ms FP8 math,
# 4.31 ms bf16) and at its bf16 row's time on L40S (SM 8.9) and RTX PRO 6000 (SM 12.0), ratio 0.97-1.02: the FP8
# FMHA TensorRT-LLM enables on an FP8 cache (thop/attentionOp.cpp, ``mFP8ContextFMHA``) where the device has it
# (docs/accuracy.md, "Context kernels that run FP8 math on an FP8 cache")
FP8_CONTEXT = {"context_attention": ("h100", "h200", "b200", "b300", "gb200", "gb300"),
               "context_mla": ("h100", "h200", "b200", "b300", "gb200", "gb300", "rtx-pro-6000")}
FP8_CONTEXT_CLASS = "attention_context_bf16_kv_fp8"
FP8_CONTEXT_VERSIONS = ("1.3.",)
FP8_CONTEXT_FRAMEWORK = "trtllm"
M_TILES = (8.0, 16.0, 32.0)   # rows per tile a generation kernel's grouped queries may fill (tried in turn)
# a GEMM class's M term (``fit(gemm_fill=…)``): "half", M/(M+m_half), the catalog's; "tile", the rows' fill of whole
# tiles of each of GEMM_TILES rows (tried in turn, the best kept), with the streamed weights' η at most 1
# (``STREAMED_PHYSICAL``): below a tile the compute term is the whole tile's, so that a small-M row the weights bind
# is priced as their streaming, not as compute (benchmarks/kernel_tables.py --gemm-fill; docs/accuracy.md)
# "stream": the weights stream at an η growing with their tiles' CTAs in flight, streamed · N·K/(N·K + streamed_half)
# (``gemmshape.streamed_eta``), streamed at most 1, on every row; ``serial`` the share of the shorter term not
# overlapped (fitted, at most 1); the compute's M term fitted twice, as 1 (m_half 0: a small-M GEMM's cost per weight
# element is their streaming, and the law labels it so) and as M/(M+m_half), the one with the smaller loss on the
# fitted rows kept (``fit_stream``)
# "auto": per GEMM class, "half" and "stream" (``AUTO_FORMS``) each fitted on the even rows and scored on the odd rows
# ``score`` holds out, the one ``better_form`` names kept (``chosen_form``), the choice and both scores in the class's
# provenance (``FORM_FIELDS``): what ``ironlaw calibrate --kernels`` fits
GEMM_FILLS = ("half", "tile", "stream", "auto")
# a GEMM class's operands as its collector's repeated calls read them (``fit_operands``), the first kept on a tie:
# "memory", as the law prices a lone GEMM (from device memory, but a workload whose whole footprint fits
# ``cache.CACHE_RESIDENT_FRACTION`` of the last cache level); "copies", as the collector ran each row: it times
# ``collector_copies`` distinct copies of the weights called in turn, so a row's weights stay in the last cache level
# from one call to the next only where all the copies fit it together (``as_collected``). "cache" (every row whose
# operands fit the whole last cache level, one copy) is how classes fitted before the copies were known were timed:
# ``timed_as`` still reads it, the fit no longer offers it (docs/accuracy.md, "GEMM weights as the collector cycles
# them")
OPERANDS = ("memory", "copies")


def trtllm_copies(version: str, dtype: str, weight_bytes: float, cache_bytes: float) -> int:
    """TensorRT-LLM's collector: from the 1.3 line on, as many copies as it takes to span the L2 it reads from
    the device, one to five (ai-dynamo/aiconfigurator #588, collector/trtllm/collect_gemm.py: ``outside_loop_count =
    max(1, min(5, ceil(l2_cache_bytes / weight_bytes)))``); the 1.0 line's tables (aiconfigurator 0.8.0), five."""
    if release(version) < (1, 3):
        return 5
    return int(max(1, min(5, math.ceil(cache_bytes / weight_bytes))))


def vllm_copies(version: str, dtype: str, weight_bytes: float, cache_bytes: float) -> int:
    """vLLM's collector: six copies, one for NVFP4 (collector/vllm/collect_gemm.py: ``outside_loop_count = 1 if
    gemm_type in ("fp8_block", "nvfp4") else 6``)."""
    return 1 if dtype == "fp4" else 6


def sglang_copies(version: str, dtype: str, weight_bytes: float, cache_bytes: float) -> int:
    """SGLang's collector: six copies wherever six fit 45% of the GPU's memory, every weight the L2 could hold
    (collector/sglang/collect_gemm.py: ``min(6, (budget - transient) // persistent)``); five before 0.5.7
    (``repeat_n = 5``)."""
    return 5 if release(version) < (0, 5, 7) else 6


# framework -> the copies of one GEMM's weights its collector calls in turn per timed iteration (aiconfigurator's
# collector/<framework>/collect_gemm.py); a framework not named here (aiter's tuned tables) has no known rule, and
# its GEMM classes fit "memory" alone
COLLECTOR_COPIES = {"trtllm": trtllm_copies, "vllm": vllm_copies, "sglang": sglang_copies}


def one_input(copies: int) -> int:
    """TensorRT-LLM's and vLLM's collectors: one bf16 input ``x`` for every copy (collector/trtllm/collect_gemm.py
    and collector/vllm/collect_gemm.py, ``run_gemm``: ``x = torch.randn((m, k))`` once, then ``op.forward(x)`` for
    each op of ``op_list``)."""
    return 1


def input_per_copy(copies: int) -> int:
    """SGLang's collector: each copy builds its own bf16 input with its weights (collector/sglang/collect_gemm.py,
    ``create_gemm``: ``torch.randn(M, K)`` inside)."""
    return copies


# framework -> the bf16 inputs (M×K) its collector's calls of one row read in turn, from its copies of the weights
COLLECTOR_INPUTS = {"trtllm": one_input, "vllm": one_input, "sglang": input_per_copy}
# the share of the last cache level that the output a collector's calls rewrite, call after call, stays in
# (``warm_cycle``): inputs read over and over stay up to the whole L2, outputs rewritten up to about three quarters.
# aiconfigurator-core 0.12.0, TensorRT-LLM 1.3.0rc20 bf16 tables, rows by the size of the one operand that
# dominates (median rate over all operand bytes): L40S (96 MiB L2, GDDR6 864 GB/s), K ≤ 64, outputs of 56–72 MiB
# 1.5 TB/s, of 72–80 MiB 0.91, of 80–88 MiB 0.74; N ≤ 128, inputs of 80–88 MiB 1.9 TB/s, 96–104 MiB 1.0, 104–112
# MiB 0.64. RTX PRO 6000 (128 MiB L2, GDDR7 1.79 TB/s), outputs of 88–96 MiB 2.3 TB/s, of 104–112 MiB 1.5; inputs
# of 120–128 MiB 2.7 TB/s, of 136–144 MiB 1.4 (docs/accuracy.md, "A GEMM row's activations as the collector
# reuses them")
COLLECTOR_OUTPUT_SHARE = 0.75


def release(version: str) -> tuple:
    """(major, minor, patch) of a table's version string ('1.3.0rc20' -> (1, 3, 0))."""
    parts = [int(p) for p in re.findall(r"\d+", version.split("rc")[0].split(".post")[0])[:3]]
    return tuple(parts + [0] * (3 - len(parts)))


# bytes per weight element as aiconfigurator's collectors size their copies (collector/trtllm/collect_gemm.py,
# ``_bytes_per_elem``: bfloat16 2, fp8 1, nvfp4 0.5; its scales not counted)
COLLECTOR_WEIGHT_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "fp4": 0.5, "mxfp4": 0.5}
AUTO_FORMS = ("half", "stream")
GEMM_TILES = (16.0, 64.0, 128.0, 256.0)
STREAMED_PHYSICAL = 1.0
STREAM_PARAMS = (("eta_max", 1.0), ("nk_half", 1e6), ("k_half", 1e6), ("streamed", STREAMED_PHYSICAL),
                 ("streamed_half", 1e9), ("serial", 1.0), ("latency_s", 1e-3))
STREAM_STARTS = grid([0.8], [50.0, 500.0], [50.0, 500.0], [0.8], [1e6, 1e7], [0.3, 1.0], [3e-6])
STREAM_M_HALF = (("m_half", 1e6), (10.0, 100.0))     # the M term's second try: its bound and starts
# ops whose fixed latency_s the fit holds under the fastest fitted call (``latency_floor``): GEMMs, and the generation
# attention and MLA classes (L40S bf16 decode, held out: 2.3% / 22.1% → 2.0% / 13.8%; docs/accuracy.md, "The fixed
# latency of generation attention and MLA classes") but over 32 heads per KV head (``FLOOR_FREE_REGIMES``: its coarse
# grid held out worse, B300 bf16 5.8% / 17.4% → 6.6% / 22.2%); and the context attention classes of the frameworks of
# ``FLOOR_CONTEXT_FRAMEWORKS``, every regime: unbounded, each of vLLM's and SGLang's 149 context classes (aiconfigurator-
# core 0.12.0) took a fixed latency over its fastest fitted call (SGLang B200 FP8 cache, one head per KV head: 20.6 µs
# against 11.6 µs; Triton's head dim 256 at 12.4 µs held out 66-87% too slow), which the grid cannot take back
# (docs/accuracy.md, "Context attention's fixed latency under the fastest call"). TensorRT-LLM's context classes keep
# their fit (not refitted here)
FLOOR_OPS = ("gemm", "generation_attention", "generation_mla", "mla_bmm")
FLOOR_FREE_REGIMES = ("_wide",)
FLOOR_CONTEXT_OPS = ("context_attention",)
FLOOR_CONTEXT_FRAMEWORKS = ("vllm", "sglang")
# and MLA's context classes, every framework's: unbounded, TensorRT-LLM 1.3.0rc20's RTX PRO 6000 class, bf16 on an FP8
# cache, took 15.0 µs against its fastest call's 13.1 µs, and its batch-1 rows up to 16 tokens held out 19-25% too slow;
# SGLang's H100 class on an FP8 cache 18.6 µs against 16.8 µs (docs/accuracy.md, "Context MLA's fixed latency under the
# fastest call"). But for the classes whose rows run mostly on a kernel of FLOOR_FREE_KERNELS: SGLang 0.5.14's MLA
# prefill on TRT-LLM's ragged kernel (B200 … GB300), which held out worse under it (B300 FP8 cache 5.5% / 17.6% → 6.7% /
# 21.5%, B200 4.5% / 12.7% → 5.4% / 17.3%) and keeps its fit
FLOOR_ANY_OPS = ("context_mla",)
FLOOR_FREE_KERNELS = ("trtllm_mla",)
# ops whose classes fit ``key_s``, the seconds per cached key of a kernel that walks each sequence's cache in one CTA
# (``efficiency.key_walk_s``), from each of ``KEY_S_STARTS``: generation MLA, which on A100, L40S and RTX PRO 6000
# takes the same time at batch 1 from 1 to 128 heads, growing as the cached tokens (held out, docs/accuracy.md,
# "Generation MLA's walk over the cache"); where the kernel splits the cache it fits a fraction of a ns
KEY_WALK_OPS = ("generation_mla",)
KEY_S_STARTS = (1e-11, 5e-8)
# classes whose fit adds ``unit_s``, the seconds a decode launch pays per sequence and KV head whatever its keys
# (``efficiency.unit_launch_s``), from ``UNIT_S_START``: vLLM's and SGLang's generation attention. Their tables at one
# cached token grow with the sequences × KV heads, 11-37 ns each at batch 2048 (H100 FA3, B200 TRT-LLM and FlashInfer
# decode, L40S and RTX PRO 6000 FlashAttention 2, FlashInfer and Triton), which neither the fixed latency nor the
# bytes price; held out, docs/accuracy.md ("Decode launches: a cost per sequence and KV head"). TensorRT-LLM's
# classes keep their fit (another owner's, not refitted here)
UNIT_OPS = ("generation_attention",)
UNIT_FRAMEWORKS = ("vllm", "sglang")
UNIT_S_START = 2e-8
# classes whose fit adds ``write_s``, the seconds per thread its cache writer's CTAs hold an SM (one CTA per token
# written, ``efficiency.cache_write_s``), from ``WRITE_S_START``: (framework, op, regime). vLLM's prefill with one query
# head per KV head: aiconfigurator's vLLM collector times the cache writer with the attention (collector/vllm/
# collect_attn.py), and at the same sequences × KV heads and tokens per sequence its tables' time grows with the
# tokens (H100, 128 tokens × 128 head dim, 512 sequence-heads: 8 × 64 heads 86 µs, 128 × 4 heads 197 µs on an FP8
# cache); held out, docs/accuracy.md ("vLLM's prefill with one head per KV head: the cache writer's CTAs"). Its
# grouped-query prefill (regimes '' and '_wide') times the same writer: H100 FP8 cache, 2 KV heads × 256 sequences
# 0.78 ms, 8 sequences × 64 heads 0.30 ms (docs/accuracy.md, "the cache writer in the grouped-query classes"); its
# sliding-window prefill ('_window') too: H200 bf16 cache, window 128, 16 sequences × 4,096 tokens on 4 KV heads × 128,
# 454 µs where the window's products take 17 µs at the bf16 peak (docs/accuracy.md, "vLLM's sliding-window prefill: the same
# cache writer")
WRITE_CLASSES = (("vllm", "context_attention", "_mha"), ("vllm", "context_attention", ""),
                 ("vllm", "context_attention", "_wide"), ("vllm", "context_attention", "_window"))
WRITE_S_START = 1e-9
# FP8-cache prefill classes whose fit adds ``write_s`` too, per (framework, op, kernel class): the GPUs. SGLang's MLA
# prefill saves the new tokens' latent into its cache pool inside the timed call (``MLATokenToKVPool``; on an FP8 cache
# a cast and a scatter per token; aiconfigurator's collector/sglang/collect_mla.py, ``benchmark_layer``, times
# ``layer(q, k, v, forward_batch, …)``). aiconfigurator-core 0.12.0's SGLang 0.5.14 H200 context MLA table: the
# FP8-cache row less the bf16-cache row at the same shape is 5.3 µs at one token and ~2.0 ns per token beyond, the
# same at 1 to 128 heads (128 sequences of 512 tokens, 2 heads: 0.29 → 0.44 ms); held out, docs/accuracy.md
# ("SGLang's FP8-cache writer in the MLA prefill (H200)"). TensorRT-LLM 1.3.0rc20's RTX PRO 6000 FP8-cache context MLA:
# at the same FLOPs its many-sequence rows run slower than its many-head ones (256 sequences × 256 tokens, 2 heads,
# 317 µs; 2 × 256 tokens, 128 heads, 59 µs), a cost per token written whatever the heads (docs/accuracy.md, "TensorRT-
# LLM's RTX PRO 6000 FP8-cache MLA prefill: a cost per token written")
WRITE_CACHE_CLASSES = {("sglang", "context_mla", "attention_context_bf16_kv_fp8_mla"): ("h200",),
                       ("trtllm", "context_mla", "attention_context_bf16_kv_fp8_mla"): ("rtx-pro-6000",)}
# classes whose fit adds ``swap_s``, the seconds FlashAttention 2's grouped-query swap adds where it copies the query
# into its head-group rows and the output back (more than one sequence and more than one KV head,
# ``efficiency.swap_copy_s``), from ``SWAP_S_START``: (framework, op, regime) whose rows run mostly on a kernel of
# ``SWAP_KERNELS``. vLLM 0.24.0 decodes a bf16 cache on FlashAttention 2 on L40S and RTX PRO 6000; aiconfigurator-core
# 0.12.0's tables there, up to 15 cached tokens: 8.9-9.0 µs at batch 1 or on one KV head, 12.3-13.2 µs at batch 2-16 on
# 2-8 KV heads, whatever the heads per KV head (docs/accuracy.md, "FlashAttention 2's grouped-query swap")
SWAP_CLASSES = (("vllm", "generation_attention", ""), ("vllm", "generation_attention", "_wide"))
SWAP_KERNELS = ("vllm_flash_attn_fa2",)
SWAP_S_START = 3e-6
# classes whose fit also tries ``unit_launch = "waves"`` (``unit_s`` paid on the sequences × KV heads past the first
# wave of the SMs, in whole waves: ``efficiency.past_first_wave``) beside ``unit_s`` on every one, the smaller loss on
# the fitted rows kept: (framework, op, regime) whose rows run mostly on a kernel of ``UNIT_WAVE_KERNELS``, on a device
# that states its SMs. vLLM 0.24.0's FlashAttention 2 decode over 32 heads per KV head, one CTA per sequence and KV head
# (the head group is one 64-row tile): L40S (142 SMs), up to 15 cached tokens, 9.0-10.2 µs from batch 1 to 128, 15.0 µs
# at 256, 24.3 µs at 512 (docs/accuracy.md, "FlashAttention 2's grouped-query swap")
# ``UNIT_WAVE_KERNELS`` maps each kernel to its launch (``gemmshape.UNIT_LAUNCHES``): vLLM's FlashAttention 3 on Hopper
# "split_waves", FA3's split kernel up to 512 tokens a call (vLLM's num_splits under its CUDA-graph sizes; one wave the
# SMs' CTAs) and its plain kernel beyond (twice that a wave). aiconfigurator-core 0.12.0's vLLM 0.24.0 H100 table,
# 64 heads on one KV head × 64, one cached token: 19.6, 35.4, 38.5, 73.4 µs at batch 256, 512, 1,024, 2,048
# (docs/accuracy.md, "vLLM's Hopper decode over 32 heads per KV head: FlashAttention 3's split kernel up to 512 tokens").
# SGLang 0.5.14's decode over 32 heads per KV head on FA3 (Hopper; no num_splits passed, FA3's heuristic takes one
# split once the CTAs fill its SMs) and on TRT-LLM-gen (``trtllm_mha``, Blackwell), one CTA per sequence and KV head
# at a full grid, "waves": H200, 128 heads on 2 KV heads × 128, one cached token, 10.3, 13.7, 21.0, 35.5, 75.0,
# 138.7 µs at 128 … 4,096 sequences × KV heads (3.4-4.3 µs per wave of 132 past the first); B200, 64 heads on one KV
# head × 128, 10.5, 13.6, 18.7, 28.8, 47.3 µs at batch 128 … 2,048 (2.7-3.1 µs per wave of 148) (docs/accuracy.md,
# "SGLang's decode over 32 heads per KV head: its cost per sequence and KV head in waves")
UNIT_WAVE_CLASSES = (("vllm", "generation_attention", "_wide"), ("sglang", "generation_attention", "_wide"))
UNIT_WAVE_KERNELS = {"vllm_flash_attn_fa2": "waves", "vllm_flash_attn_fa3": "split_waves", "fa3": "waves", "trtllm_mha": "waves"}
# a split-KV launch's fit (``SPLIT_CLASSES``) also fits ``split_s``, the seconds its split adds (the partial results
# written and reduced, ``efficiency.split_reduce_s``), from each of these starts
SPLIT_S_STARTS = (1e-8, 3e-6)
# an XQA split launch (``split_kv = "history"``) fits ``merge_s`` too, its last block's merge per block, from this start
MERGE_S_START = 3e-8
FLOOR_START = 0.9        # a GEMM fit's start of latency_s, as a share of its bound (``within_floor``)
# the small-M rule (``gemvs_stream``): a GEMV, gemm:1,N,K with N and K at least GEMV_RULE_NK (a 1024 × 1024 weight: an
# LLM's smallest projection) whose weights exceed the last cache level (a decode step's), streams its weights from
# device memory (L40S bf16, aiconfigurator-core 0.12.0: gemm:1,8192,8192 at 924 GB/s of the GDDR6's 864 GB/s,
# gemm:1,16384,16384 at 793 GB/s); a GEMM class's fitted table, in any form, prices such a row's compute
# at most at its data time, so that its binding resource is a memory tier and the time a half-point M term carried as a
# tiny compute η is the weights' streaming (their η, the grid) instead. Where the fit's m_half breaks it, the class is
# refitted with m_half at most GEMV_STREAM_MARGIN (core.gemmshape) of the value at which the worst GEMV's compute would equal its data
# time (a GEMV's compute term scales as 1 + m_half), up to GEMV_RULE_TRIES times, then with m_half at its floor; in
# the stream form, which holds an m_half 0 table beside it, its half-point is refitted at its floor (``streaming_gemvs``).
# Without the rule the half-point forms put H200 bf16 gemm:1,8192,8192, the L40S, RTX PRO 6000 and Blackwell FP4
# GEMVs on the tensor cores (docs/accuracy.md, "A GEMV's time is its weights' streaming")
GEMV_RULE_NK = 1024
GEMV_RULE_TRIES = 3
FIT_ROWS = 1500          # rows of a group's fit half the fitter runs on (evenly spaced), for speed
SCORE_ROWS = 4000        # held-out rows scored per group (evenly spaced), for speed
LICENSE = "Apache-2.0"
PARAMS = (("eta_max", 1.0), ("m_half", 1e6), ("nk_half", 1e6), ("k_half", 1e6), ("streamed", 1.5),
          ("latency_s", 1e-3))
# the kernel-choice grid's node spacing per axis (M, N, K, units), each node this many times the one before: GEMMs
# over M, N, K (units 1); attention over the query rows per KV head, the keys, the head dim and the sequences × KV
# heads (the kernel's CTAs; a generation step's query rows per KV head span 1-128, coarse). docs/accuracy.md gives the held-out rows that chose them and the stored size.
GRID_STEPS = {"gemm": (4.0, 4.0, 4.0, 4.0), "context_attention": (4.0, 4.0, 2.0, 4.0),
              "generation_attention": (8.0, 2.0, 2.0, 2.0), "context_mla": (8.0, 8.0, 2.0, 8.0),
              "generation_mla": (2.0, 4.0, 2.0, 4.0), "mla_bmm": (4.0, 4.0, 4.0, 4.0)}
# generation classes whose grid keeps the coarser steps and counts every node: a sliding window's keys stop at the
# window while its kernel's time follows the whole sequence (no key node sees that), and over 32 heads per KV head, a
# class of a few rows; finer, they held out worse (B200 window 5.9% / 14.2% → 7.1% / 25.0%, over 32 heads per KV head
# 7.3% / 19.4% → 8.3% / 24.1%; docs/accuracy.md)
COARSE = {("generation_attention", "_window"): (32.0, 4.0, 2.0, 4.0),
          ("generation_attention", "_window_mmha"): (32.0, 4.0, 2.0, 4.0),
          ("generation_attention", "_wide"): (32.0, 4.0, 2.0, 4.0)}
# (framework, backend, KV dtype) of the grouped-query decode classes whose kernel switches with the query heads
# per KV head: SGLang's FlashInfer backend decodes a 16-bit cache on tensor cores from 4 heads per KV head, on its CUDA-
# core decode kernel below (python/sglang/srt/layers/attention/flashinfer_backend.py, ``should_use_tensor_core``; an
# FP8 cache always on tensor cores), the default backend on L40S (SM89) and RTX PRO 6000 (SM120). Their grids step
# ``GROUP_SWITCH_M_STEP`` in M, nodes at 2, 4, 8 … heads per KV head, where the generation grid's 8× put 2 and 16 only
# (L40S bf16 cache, held out: 3.5% / 34.5% → 1.9% / 19.6%; the same 2× step on H100's FA3 class, which switches
# nothing there, 3.2% / 13.0% → 3.7% / 18.4%; docs/accuracy.md)
GROUP_SWITCH = {("sglang", "flashinfer", "bfloat16"), ("sglang", "flashinfer", "float16")}
GROUP_SWITCH_M_STEP = 2.0
# (framework, dtype) -> the GPUs (catalog names) on which that framework's GEMM kernel switches its CUTLASS tile
# configuration at each power of two of M, so that its class's grid takes ``M_SWITCH_STEP`` in M, a node on each side
# of every switch (``gemm_switch_steps``), where ``GRID_STEPS``' 4× put nodes at 16, 64 and 256 only. SM 8.9 (L40S):
# vLLM's FP8 GEMM (csrc/quantization/cutlass_w8a8/scaled_mm_c2x_sm89_fp8_dispatch.cuh, ``cutlass_gemm_sm89_fp8_
# dispatch``: one configuration for M up to 32, 64, 128, 256 and above) and SGLang's (sgl-kernel/csrc/gemm/
# fp8_gemm_kernel.cu, ``sm89_fp8_dispatch_shape``: up to 64, 128, 256, 512 and above), each also by N
# (docs/accuracy.md, "GEMM grids at the FP8 kernels' M switches")
M_SWITCH_GEMMS = {("vllm", "fp8"): ("l40s",), ("sglang", "fp8"): ("l40s",)}
M_SWITCH_STEP = 2.0
# (framework, dtype) -> the GPUs on which that framework's CUTLASS FP8 GEMM takes its next configuration from M one past
# each power of two, so that its class's grid takes, beside the node at every power of two of M (``M_SWITCH_STEP``), a
# node one past it where the rows hold that M (``past_switch_nodes``). vLLM's dispatches (csrc/quantization/cutlass_w8a8:
# c3x/scaled_mm_sm90_fp8_dispatch.cuh ``cutlass_gemm_sm90_fp8_dispatch``, its sm100 and sm120 files alike, and the sm89
# c2x one) and SGLang's (sgl-kernel/csrc/gemm/fp8_gemm_kernel.cu, ``sm90_fp8_dispatch_shape``, ``sm100_fp8_dispatch_
# shape``, ``sm120_fp8_dispatch_shape``) pick tile and cluster by M's bucket (M or its next power of two), and the time
# jumps one past a bucket's top and falls back as M fills the next: aiconfigurator-core 0.12.0's H200 SGLang 0.5.14 fp8
# table, gemm:M,16384,8192, 43 µs at M = 128, 86 at 129, 57 at 256, 158 at 257, 104 at 512, 219 at 513 (vLLM 0.24.0's:
# 44, 87, 54, 162, 94, 197), which nodes at the powers of two alone interpolate across. Every vLLM and SGLang FP8 class
# held out better with them but SGLang's on L40S, 7.4% / 22.7% → 7.3% / 23.5%, which keeps the powers of two alone
# (docs/accuracy.md, "GEMM grids one past the FP8 kernels' M switches")
M_PAST_GEMMS = {("vllm", "fp8"): ("h100", "h200", "b200", "b300", "gb200", "gb300", "l40s", "rtx-pro-6000"),
                ("sglang", "fp8"): ("h100", "h200", "b200", "b300", "gb200", "gb300", "rtx-pro-6000")}
# (framework, dtype) -> the GPUs whose GEMM class is fitted without its fit rows' isolated spikes (``despiked``): a row
# over SPIKE_RATIO times off both its neighbours in M at the same N and K, which agree within SPIKE_AGREE. vLLM 0.24.0's
# B200 fp8 table (aiconfigurator-core 0.12.0): 1,306 of its 35,742 rows, 935 slow and 371 fast, e.g. gemm:M,64,65536
# 48 µs at M = 6, 8, 10, 286 at 7, 300 at 9; gemm:32768,512,K 220 µs at K = 64 … 1,024, 37 at 32: single timings, not a
# kernel switch (which holds for the M after it, ``M_PAST_GEMMS``). Held out, every row scored: 5.7% / 22.4% fitted on
# every fit row, 4.5% / 18.6% without their spikes (docs/accuracy.md, "GEMM grids one past the FP8 kernels' M switches")
SPIKY_GEMMS = {("vllm", "fp8"): ("b200",)}
SPIKE_RATIO, SPIKE_AGREE = 1.5, 1.25
M_PAST_FROM = 4            # the smallest power of two whose M + 1 takes a node (the tables hold every M up to 17)
# the regimes whose grids take that step: the grouped-query class. The sliding-window class's (L40S, bf16 cache:
# FlashInfer at 1, 2 and 5 heads per KV head beside Triton's head dims 64 and 192) held out worse on it, 2.5% / 45.2%
# → 5.4% / 45.8%
GROUP_SWITCH_REGIMES = ("",)
# the frameworks whose sliding-window generation classes keep ``COARSE``'s steps: TensorRT-LLM's (the tables that chose
# them). vLLM's and SGLang's, fitted with their cost per sequence and KV head (``unit_s``), take ``GRID_STEPS``: the
# H100 SGLang window class (bf16 cache) held out 8.2% / 29.5% coarse, 5.0% / 25.6% on the finer grid (docs/accuracy.md)
COARSE_WINDOW_FRAMEWORKS = ("trtllm",)
# classes whose kernel may split the whole sequence, not the window, into blocks, and the launches the fit tries beside
# the plain one (``fit_class``): TensorRT-LLM's XQA decode kernel per sequence and KV head (``core.splitkv``,
# ``split_kv = "history"``); its MMHA kernel per sequence and query head, in blocks of each of ``MMHA_THREADS``
# threads (``split_kv = "mmha"``: which block fits one per SM is the compiled kernel's register count, not in the
# source; the tables step where each puts it, docs/accuracy.md), and as it tunes its block to the CTAs, split or not, for
# each of ``MMHA_OCCUPANCY`` 256-thread CTAs per SM (``mmha_occupancy``, ``splitkv.mmha_tuned_launch``)
MMHA_LAUNCHES = tuple({"split_kv": "mmha", "mmha_threads": t} for t in MMHA_THREADS) \
    + tuple({"split_kv": "mmha", "mmha_occupancy": c} for c in MMHA_OCCUPANCY)
# TensorRT-LLM decodes on MMHA too wherever XQA refuses the head group (``gemmshape.window_kernel``): over
# ``WIDE_GQA`` query heads per KV head ('_wide') and one ('_mha'), each query head a CTA of its own that reads its KV
# head's cache (``mmha_launch_kernel_ex``); aiconfigurator-core 0.12.0's 1.3.0rc20 RTX PRO 6000 table, over 32 heads
# per KV head, one cached token, 96 heads × 64: 7.0, 10.8, 13.0, 10.9 µs at batch 1, 2, 4, 8, the tuned launch's
# waves (docs/accuracy.md, "Decode over 32 heads per KV head, and one, on MMHA's launch")
SPLIT_CLASSES = {("generation_attention", "_window"): ({"split_kv": "history"},),
                 ("generation_attention", "_window_mmha"): MMHA_LAUNCHES,
                 ("generation_attention", "_wide"): MMHA_LAUNCHES,
                 ("generation_attention", "_mha"): MMHA_LAUNCHES}
# the classes whose launch the fit keeps by the 90th percentile of its fitted rows' |error|, the goal's measure, not by
# the loss: MMHA's window class, whose tuned launches (``mmha_occupancy``) differ in the waves its small launches take,
# steps the loss trades against the grid. Blackwell's bf16-cache classes, fitted rows' p90 at 2 / 3 CTAs per SM: GB300
# 17.8% / 13.5% (the loss chose 2, held out 2.8% / 18.7%; at 3, 4.1% / 14.5%, as on B300, the same SM 10.3 kernel);
# B200, B300, GB200 chose 3 either way (docs/accuracy.md, "Sliding-window generation on MMHA: one backend's rows")
P90_CHOICE_CLASSES = (("generation_attention", "_window_mmha"),)
# (framework, kernel class) → GPUs of the decode classes whose rows run FlashInfer's CUDA-core decode kernel
# (``CHUNK_SOURCES``), which its plan splits over chunks of each sequence's keys wherever the sequences × KV heads leave
# the grid short (``split_kv = "chunks"``, ``splitkv.chunks_per_sequence``): fitted at each of ``CHUNK_OCCUPANCY`` CTAs
# per SM in place of the plain launch, since the kernel's plan always splits a short grid; the smallest loss on the
# fitted rows kept. vLLM 0.24.0 decodes an FP8 cache on FlashInfer on L40S and RTX PRO 6000 (FlashAttention 2 has no
# FP8 cache): L40S, one head per KV head × 256, batch 1, 131,071 cached tokens: 48 µs, the 67 MB cache at 1.4 TB/s
# from the L2, where one CTA per sequence would walk it alone. Which data chose the launch, and why SGLang's FlashInfer
# classes on these GPUs are not keyed: docs/accuracy.md, "FlashInfer's chunked decode on L40S and RTX PRO 6000"
CHUNK_CLASSES = {("vllm", "attention_generation_bf16_kv_fp8_mha"): ("l40s", "rtx-pro-6000")}
CHUNK_SOURCES = ("vllm_flashinfer_fidecode", "flashinfer")
# the splits are TensorRT-LLM's launch rules (XQA's, MMHA's): vLLM's and SGLang's window classes run their own
# decode kernels (FlashInfer, FlashAttention, Triton), whose split heuristics are not modelled; fitted plain
SPLIT_FRAMEWORK = "trtllm"
# decode classes whose kernel computes every key block its window touches in full (``core.keyblocks``): vLLM's
# FlashAttention 3 on Hopper (its tables' ``kernel_source``), whose time steps with the blocks (H200, window 128, head
# dim 64, batch 2,048: 310–366 µs up to 127 cached tokens, 702–705 µs from 255 on) where the window's keys stay 128.
# Fitted with and without the blocks' keys (priced, and the grid's N), the smaller loss on the fitted rows kept
KEY_BLOCK_CLASSES = {("vllm", "generation_attention", "_window"), ("vllm", "generation_attention", "_window_mmha")}
KEY_BLOCK_SOURCES = {"vllm_flash_attn_fa3": "fa3"}
# (framework, op, regime) of the decode classes whose rows may run FlashAttention 2 under a sliding window, and the
# launches their fit tries beside the plain one where every row times it (``kernel_source``, ``HEAD_CTA_SOURCES``):
# one CTA per sequence and query head, unsplit (``split_kv = "heads"``: FA2's grouped-query swap and its split-KV
# heuristic both need no window, ``flash_api.cpp``, ``mha_varlen_fwd``), with and without the keys it reads from the
# window's first key block on (``key_blocks = "fa2"``, ``core.keyblocks.fa2_window_keys``). aiconfigurator-core
# 0.12.0's vLLM 0.24.0 L40S table, window 128, head dim 64 and 128, one cached token, batch 512: the time follows the
# query heads, not the KV heads (64 heads on 1 KV head and on 8: 1.04 ms both; 8 heads 137 µs, 32 heads 525 µs); the
# vLLM window decode classes of the MMHA rule (one head per KV head, over 32) on L40S and RTX PRO 6000's bf16 cache
HEAD_CTA_CLASSES = {("vllm", "generation_attention", "_window_mmha")}
HEAD_CTA_SOURCES = ("vllm_flash_attn_fa2",)
HEAD_CTA_LAUNCHES = ({"split_kv": "heads"}, {"split_kv": "heads", "key_blocks": "fa2"}, {"key_blocks": "fa2"})
# (framework, op, regime) of the decode classes whose fixed latency is one per head dim (``head_dim_latency``): SGLang
# 0.5.14's sliding-window decode. aiconfigurator's SGLang collector times one model's attention call per head dim
# there (collector/cases/models/*_cases.yaml): gpt-oss's 64 (window 128, attention sinks), Llama 4's 128 (8,192-token
# chunks), MiMo-V2's 192 (value head 128, window 128, sinks), Gemma 4's 256 (window 1,024), each on the backend the
# collector names for that model on the GPU (``sglang_backends``: FA3, Triton, trtllm_mha, FlashInfer), and each
# call times its own launches around the attention kernel (RadixAttention's forward: the new token's K/V stored, the
# decode kernel, its reduction). The class's one fixed latency held the fastest head dim's: H100's bf16 window
# class, batch 1-8, head dim 192 36% too fast at the median (docs/accuracy.md)
HEAD_DIM_LATENCY = {("sglang", "generation_attention", "_window"), ("sglang", "generation_attention", "_window_mmha")}
# (framework, op, regime) of the decode classes whose fixed latency is one per head dim on the GPUs named
# (``head_dim_latency``): TensorRT-LLM 1.3's sliding-window decode on XQA on Hopper, whose launch at head dim 64 takes
# longer than at 128 and 192 whatever its keys. aiconfigurator-core 0.12.0's H100 1.3.0rc20 table, FP8 cache, 1 to 16
# sequences × KV heads, 1 to 63 cached tokens: head dim 64 (window 128) 8.4-9.0 µs, 192 (window 128) 6.1-6.8 µs, 128
# (window 8,192) 5.7-6.7 µs, the cache's bytes under 0.2 µs; the class's one fixed latency held the fastest head
# dim's, and its unsplit small launches held out 16% too fast at the median (docs/accuracy.md, "XQA's sliding-window
# decode on Hopper: a fixed latency per head dim"). SGLang 0.5.14's one-head decode on L40S and RTX PRO 6000,
# FlashInfer's at head dims 64, 128 and 256 and Triton's alone at 192 (``one_backend_per_head_dim``), whose calls at up
# to 15 cached tokens take 11.9-13.6 µs on Triton where FlashInfer's take 4-5 µs (L40S, bf16 cache)
HEAD_DIM_LATENCY_GPUS = {("trtllm", "generation_attention", "_window"): ("h100", "h200"),
                         ("sglang", "generation_attention", "_mha"): ("l40s", "rtx-pro-6000")}
# (framework, kernel class) → GPUs of the classes whose fixed latency is one per head dim there (``head_dim_latency``):
# tables that time each head dim on one backend, each backend's call with launches of its own (aiconfigurator-core
# 0.12.0). Decode: vLLM 0.24.0's FP8-cache one-head decode on FlashInfer (head dims 64, 128, 256) and Triton (192) on
# L40S and RTX PRO 6000; L40S, batch 1, one cached token: 9.2, 9.7, 11.1 µs at head dims 64, 128, 256
# (docs/accuracy.md, "FlashInfer's chunked decode on L40S and RTX PRO 6000"). Prefill: SGLang 0.5.14's bf16-math
# FP8-cache prefill on B200 … GB300, timed on FlashInfer at head dim 128 and on Triton at 192 and 256 (``trtllm_mha``,
# the default there, quantizes the query to FP8 on an FP8 cache): B200, one head on one KV head, 1-64 tokens,
# 16.5-18.6 µs at 128 from batch 1 to 128, 15.2-20.7 µs at 192, 11.6-12.5 µs at 256; the class's one fixed latency
# held the fastest head dim's and its grid's one-query-row node the others', pricing FlashInfer's one-token rows at
# batch 32-128 54-308% too slow (held out). SGLang's Triton prefill on L40S and RTX PRO 6000, head dim 192 (MiMo-V2,
# value head 128) 10.2-12.5 µs at 1-16 tokens where 64 takes 6.0-6.4 (FP8 class; L40S's bf16 class alike beside
# FlashInfer's 128 and 256). vLLM 0.24.0's FP8-cache prefill, head dim 192 on its Triton kernel (``vllm_triton_attn``)
# and the others on FlashInfer, which quantizes the query to FP8 on B300 … GB300 (``QUERY_AS_CACHE``): B300, 16
# tokens, 7.0 µs at 192 against 8.9-10.9 µs (docs/accuracy.md, "One-head prefill: a fixed latency per backend")
HEAD_DIM_LATENCY_CLASSES = {("vllm", "attention_generation_bf16_kv_fp8_mha"): ("l40s", "rtx-pro-6000"),
                            ("sglang", "attention_context_bf16_kv_fp8_mha"): ("b200", "b300", "gb200", "gb300"),
                            ("sglang", "attention_context_fp8_kv_fp8_mha"): ("l40s", "rtx-pro-6000"),
                            ("sglang", "attention_context_bf16_kv_bf16_mha"): ("l40s",),
                            ("vllm", "attention_context_bf16_kv_fp8_mha"): ("b300", "gb200", "gb300", "rtx-pro-6000")}
# (framework, op, regime) of the decode classes whose fixed latency is one per head dim and head group (query heads
# per KV head; ``head_dim_latency``, ``gemmshape`` latency_groups): vLLM's and SGLang's decode over ``WIDE_GQA`` heads
# per KV head, each sequence and KV head one CTA of the G query rows, whose tile at one wave sets the launch's time
# (FlashAttention 3's one or two MMA warpgroups; SGLang 0.5.14 H100, bf16 cache, head dim 128: 9.4 µs at 48 and 64
# heads per KV head, 10.9-11.1 µs at 96 and 128; TRT-LLM-gen on B300: 12.6, 14.5, 18.6, 20.7 µs at 48, 64, 96, 128)
GROUP_LATENCY = {("vllm", "generation_attention", "_wide"), ("sglang", "generation_attention", "_wide")}
# of those, (framework, GPUs) whose decode kernel pays that latency per head dim and head group only where at least
# two CTAs per sequence and KV head fit the SMs (``latency_units_max``, half the GPU's SMs) and the sequence holds at
# most GROUP_SPLIT_KEYS keys (``latency_keys_max``), another launch beyond either: SGLang 0.5.14's TRT-LLM-gen decode
# on SM 10.x (its ``trtllm_mha`` backend; collector/sglang/collect_attn.py maps SM 100 and 103 to it; which launch
# the kernel picks is FlashInfer's TRT-LLM-gen kernel selection, not read here, only its tables' steps). Its seconds
# there are the median call's over the rows of at most GROUP_SPLIT_STEP cached tokens (one wave, flat in the batch),
# not the fastest call's: B300, 64 heads on one KV head × 128, 14.5 µs at one to 255 cached tokens, 11.6-12.6 µs at
# 511-4,095
# the rows that measure a head dim and group's latency: at most GROUP_WAVE_UNITS sequences × KV heads (one CTA each,
# fewer than any catalog GPU's SMs: one wave); a head dim and group without such rows takes none (vLLM 0.24.0's RTX
# PRO 6000 FP8-cache table times head dim 128 at batch 1,024 only, whose fastest call, 35 µs, is no launch's latency)
GROUP_WAVE_UNITS = 8
GROUP_SPLIT = {"sglang": ("b200", "b300", "gb200", "gb300")}
GROUP_SPLIT_STEP = 127
GROUP_SPLIT_KEYS = 256
# classes whose grid may read the whole sequence's keys, not the window's (``walked_grid``; ``gemmshape.GRID_KEYS``):
# vLLM's and SGLang's sliding-window prefill, whose rows run, per head dim, a kernel that skips the key blocks outside
# the window (FlashAttention 3, FlashInfer, TRT-LLM's) or SGLang's and vLLM's Triton prefill, which loops over every
# key block up to each query tile and masks the ones outside it (sglang triton_ops/extend_attention.py, ``_fwd_kernel``:
# ``SKIP_TILE`` skips a masked tile's math, not its step). aiconfigurator-core 0.12.0's SGLang 0.5.14 B200 table, head
# dim 192 on Triton, window 128: priced over the window's keys, 62-86% too fast from 1,536 tokens on (held out); the
# TRT-LLM-kernel rows of the same class within 4% at every length (docs/accuracy.md). TensorRT-LLM's own window classes
# too, the fit choosing per class by its loss: aiconfigurator-core 0.12.0's 1.3.0rc20 L40S tables (SM 8.9), window 128,
# head dim 64, priced over the window's keys 44-53% too fast at 12,288-16,384 tokens; fitted both ways, each of its
# three window classes keeps the sequence's keys (held out, docs/accuracy.md, "Sliding-window prefill on L40S")
WALK_CLASSES = (("context_attention", "_window"),)
WALK_FRAMEWORKS = ("vllm", "sglang", "trtllm")
GRID_ROWS_PER_NODE = 4   # fewer fitted rows per grid node than this: a coarser grid (small or user tables)
# axes a coarser grid keeps at their step: attention's head dim (K), where each value the tables hold (64, 128, 192,
# 256) runs a kernel of its own (L40S FP8 context attention, one head per KV head: head dim 128 +48% off with nodes at
# 64 and 256 only, docs/accuracy.md); and generation MLA's heads per GPU (M: 1, 2, 4 … 128, a node each, step 2),
# which the grid interpolates only where each has its node (held out, the B200 bf16 class: 7.9% / 23.5% with a node
# every 8×, squared to 1, 64, 128; 7.1% / 18.7% with a node per head count; docs/accuracy.md)
GRID_KEEP = {"gemm": (), "context_attention": (2,), "generation_attention": (2,), "context_mla": (2,),
             "generation_mla": (0, 2), "mla_bmm": (2,)}
# axes with a node at each value the rows hold, not at a step: context attention's head dim, each value a kernel of
# its own (vLLM 0.24.0 and SGLang 0.5.14 run head dim 192 on Triton, 64/128/256/512 on FlashInfer's TRT-LLM kernels or
# FlashAttention: B200, held out with nodes at 64, 128, 256, 512 only, head dim 192 24% too fast at the median;
# docs/accuracy.md)
VALUE_NODES = {"context_attention": (2,), "generation_attention": (2,), "mla_bmm": (2,)}
# the column whose every value the split must put on both sides, per op: context attention's head dim. Sorted by shape,
# the vLLM and SGLang tables hold blocks of two head dims per batch, sequence and heads, so the even/odd split fitted
# one and held out the other (SGLang L40S, over 32 heads per KV head: 96% of head dim 128 held out, 65-74% median
# |error|; vLLM B200: all of head dim 128 held out); TensorRT-LLM's tables put 21-79% of each head dim's rows on each
# side and keep their split
STRATA = {"context_attention": "head_dim"}
ONE_SIDED = 0.9
# ops whose kernel classes keep one backend per head dim (``one_backend_per_head_dim``), and the columns that name a
# class's head dim: generation attention (SGLang 0.5.14's tables: Qwen3.5's head dim 256 on Triton beside trtllm_mha on
# B200 … GB300, Llama 4's 128 on Triton beside FlashInfer on RTX PRO 6000)
HEAD_DIM_BACKEND_OPS = ("generation_attention",)
HEAD_DIM_CLASS = ("attn_dtype", "kv_cache_dtype", "regime", "head_dim")
# context classes that keep one backend per head dim alike, per (framework, op): the GPUs and the (attn_dtype,
# kv_cache_dtype) of their rows. aiconfigurator-core 0.12.0's SGLang 0.5.14 FP8 context tables of B200 … GB300 time head
# dim 256 on ``trtllm_mha`` (SGLang's default backend there) and, for Qwen3.5's 3 and 6 heads on one KV head, on Triton,
# whose rows held out 60-84% too fast in the FP8 class (GB200: 8 sequences × 16,384 tokens, 6 heads, 23.6 ms measured,
# 3.8 ms priced; ``trtllm_mha`` 2 × 16,384, 4 heads: 0.70 ms); docs/accuracy.md ("SGLang's Blackwell FP8 prefill:
# one backend per head dim")
HEAD_DIM_BACKEND_CLASSES = {("sglang", "context_attention"): (("b200", "b300", "gb200", "gb300"), (("fp8", "fp8"),))}
# the decode kernels a serving framework's context table names for its one-token rows (``own_kernel``): vLLM 0.24.0's
# FlashInfer backend, TRT-LLM's decode kernel (B200, B300, GB200, GB300) and FlashInfer's own (L40S, RTX PRO 6000)
DECODE_KERNELS = ("vllm_flashinfer_trtllmdecode", "vllm_flashinfer_fidecode")
# (framework, regime) of the kernel classes that name one kernel of the framework's default attention backend, whose
# rows of any other backend are left out (``main_backend``): TensorRT-LLM's sliding-window decode on MMHA.
# aiconfigurator-core 0.12.0's 1.3.0rc20 tables of B200, B300, GB200 and GB300 time head dim 256, window 1024, one
# head on one KV head on TensorRT-LLM's FLASHINFER attention backend (``kernel_source`` 'torch_flow_flashinfer';
# collector/trtllm/collect_attn.py, ``run_attention_torch``: the backend only Gemma4 routes to, pinned to FlashInfer's
# trtllm-gen FMHA), not on MMHA: in the MMHA class they held out up to 91% too slow and pulled its launch fit off
# MMHA's own steps
# (docs/accuracy.md, "Sliding-window generation on MMHA: one backend's rows")
MAIN_BACKEND_CLASSES = (("trtllm", "_window_mmha"),)
# the context kernels whose query the framework quantizes to the KV cache's dtype, so that they compute in it (a class's
# ``math``, ``gemmshape.SHAPE_FIELDS``; ``math_of``): vLLM 0.24.0's FlashInfer backend on TRT-LLM's context kernels
# (B200, B300, GB200, GB300; vllm/v1/attention/backends/flashinfer.py, ``FlashInferMetadataBuilder``), and SGLang
# 0.5.14's MLA prefill on TRT-LLM's ragged kernel, which casts its query, keys and values to FP8 on an FP8 cache
# (python/sglang/srt/layers/attention/trtllm_mla_backend.py, ``TRTLLMMLABackend.forward_extend``); the tables name
# them 'vllm_flashinfer_trtllmprefill' and 'trtllm_mla'
QUERY_AS_CACHE = ("vllm_flashinfer_trtllmprefill", "trtllm_mla")
MATH_OPS = ("context_attention", "context_mla")
# the context kernels that run their softmax beside their tensor-core work (a class's ``vector = "overlap"``,
# ``gemmshape.VECTOR_MODES``; ``vector_of``): TRT-LLM's warp-specialized FMHA as vLLM 0.24.0's FlashInfer backend runs
# it on B200 … GB300 ('vllm_flashinfer_trtllmprefill'), and SGLang 0.5.14's default there ('trtllm_mha', the same
# kernels through flashinfer's ``trtllm_batch_context_with_kv_cache``). Each class whose rows run mostly on one of them
# takes it; where some head dim of its rows runs another kernel (Triton), at the head dims they run on these alone
# (``vector_head_dims``, a class without ``math_head_dims``)
OVERLAP_KERNELS = ("vllm_flashinfer_trtllmprefill", "trtllm_mha")
# passes of the grid's least squares per op, each on the residual of the one before: where the law's η bound holds a
# term (η / factor ≤ 1: context attention's streamed bytes at η 1.5) the op's time is not proportional to the factor
# and one pass under-corrects (SGLang B200, head dim 192 on Triton, 4-5× the shape model: fitted rows 15% too fast
# after one pass, 2% after two; docs/accuracy.md)
# SGLang's Triton prefill per GPU: its SMs' shared memory (bytes; CUDA C++ Programming Guide, the technical
# specifications per compute capability: 228 KB on SM 9.0) and, per head dim, its (BLOCK_M, BLOCK_N) as
# python/sglang/srt/layers/attention/triton_ops/extend_attention.py, ``_get_block_sizes_for_extend_attention``, sets
# them (SM 9.x, head dim over 256: (32, 64)); the context classes whose rows time those head dims on it
# (``TRITON_KERNELS``) take them as ``query_tiles`` (``core.querytiles``, ``query_tiles_of``)
# (SM 8.9, the L40S: its 100 KB tier, head dim up to 128 (64, 128), up to 256 (64, 64); 99 KB of shared memory a CTA,
# the CUDA C++ Programming Guide's SM 8.9 limit, 100 KB an SM). ``TILE_GPU_REGIMES``: the regimes whose classes take a
# GPU's tiles where not every one of ``TILE_REGIMES`` does: L40S's one-head classes (FP8 held out 6.9% / 26.4% →
# 4.9% / 14.9% with them; docs/accuracy.md, "One-head prefill: a fixed latency per backend")
TRITON_TILES = {"h100": (228 * 1024, {512: (32, 64)}), "h200": (228 * 1024, {512: (32, 64)}),
                "l40s": (100 * 1024, {64: (64, 128), 192: (64, 64)})}
TRITON_KERNELS = {"sglang": "triton"}
TILE_REGIMES = ("", "_mha", "_wide")      # the causal passes without a window
TILE_GPU_REGIMES = {"l40s": ("_mha",)}
GRID_PASSES = {"context_attention": 2}
GRID_RIDGE = 1e-3        # pull of each node toward factor 1, relative to the rows' mean weight per node
# (op, GPUs) whose grids pull each node toward factor 1 a hundredfold harder (``grid_ridge``): vLLM's and SGLang's
# prefill tables of the GDDR GPUs, but their sliding-window classes. Their short prompts' time jumps where the query and output leave the
# L2 (``RESIDENT_CONTEXT``), and at ``GRID_RIDGE`` the RTX PRO 6000 SGLang 0.5.14 class over 32 heads per KV head (593
# fitted rows) set neighbouring nodes to +300 and -287, pricing held-out rows at 128 tokens at 4-11× their time
# (7.2% / 85.7% held out); at this pull 4.7% / 18.7% (docs/accuracy.md)
GRID_RIDGE_CLASSES = {"context_attention": ("l40s", "rtx-pro-6000")}
GRID_RIDGE_HARD = 1e-1
STARTS = {"gemm": grid([0.8], [50.0, 300.0], [50.0, 500.0], [50.0, 500.0], [0.8], [3e-6, 1e-5]),
          "attention": grid([0.5], [10.0, 1000.0], [100.0, 3000.0], [50.0], [0.8], [5e-6, 1e-5])}


@dataclass(frozen=True)
class Group:
    """One kernel class of one GPU's tables: where its fitted terms go, and its rows."""
    name: str             # 'gemm bf16', 'context attention bf16, KV fp8', …
    key: tuple            # ('matmul', dtype) or ('kernel', kernel class)
    op: str               # the table's op (kerneltable.COLUMNS)
    table: KernelTable
    rows: object          # pandas.DataFrame: the group's rows, sorted by shape
    timed: str = ""       # how the rows stand for the class, where not as written ('float16 rows, for bf16')
    operands: str = "memory"   # a GEMM class's operands on the collector's repeated calls (``OPERANDS``)
    dtype: str = ""       # the dtype its kernels compute in ('fp8' for the XQA MLA class of a bf16 model)


@dataclass(frozen=True)
class Score:
    gpu: str
    group: str
    rows: int                 # held-out rows scored
    median_abs_err: float
    p90_abs_err: float


def skipped(tables: list[KernelTable], fp8_block_as: str | None = None) -> list[dict]:
    """The GEMM rows ``groups`` leaves out (a dtype ironlaw does not run, ``SKIPPED``): per table and dtype,
    how many rows and why, so that a fit can say what it did not use."""
    out = []
    for t in tables:
        if t.op != "gemm":
            continue
        for src, rows in t.rows.groupby("gemm_dtype", sort=True):
            if src in SKIPPED and not (src == "fp8_block" and fp8_block_as):
                out.append({"table": str(t.path), "gemm_dtype": src, "rows": len(rows), "why": SKIPPED[src]})
    return out


def groups(tables: list[KernelTable], float16_as: str | None = None, fp8_block_as: str | None = None) -> list[Group]:
    """The kernel classes of ``tables`` (one GPU's), with their rows; a dtype ironlaw does not run is left
    out (``SKIPPED``), any other unknown dtype is an error. ``float16_as='bf16'`` fits float16 rows as the bf16
    classes (aiconfigurator 0.8.0's 1.0-line tables time the 16-bit kernels in float16 only; FP16 and BF16 run at
    one tensor-core peak on every catalog GPU the tables cover), and the provenance says so. ``fp8_block_as='fp8'``
    fits 128-element block-scaled FP8 rows as the fp8 class, said so alike (AMD MI300X: its only public FP8 GEMM
    timings are aiter's block-scaled ones, the kernels FP8 DeepSeek-V3 and Qwen3 checkpoints run)."""
    if float16_as not in (None, "bf16"):
        raise IronlawError(f"float16 rows can stand for bf16 only, not '{float16_as}'")
    if fp8_block_as not in (None, "fp8"):
        raise IronlawError(f"fp8_block rows can stand for fp8 only, not '{fp8_block_as}'")
    half = {"float16": float16_as} if float16_as else {}
    note = lambda srcs: f"float16 rows, for {float16_as}" if half and "float16" in srcs else ""  # noqa: E731
    out = []
    for t in tables:
        if t.op == "gemm":
            for src, rows in t.rows.groupby("gemm_dtype", sort=True):
                if src == "fp8_block" and fp8_block_as:
                    out.append(Group(f"gemm {fp8_block_as}", ("matmul", fp8_block_as), t.op, t,
                                     sorted_rows(rows, t.op), f"fp8_block rows (1x128 / 128x128 scales), for "
                                                              f"{fp8_block_as}", dtype=fp8_block_as))
                    continue
                if src in SKIPPED:
                    continue
                if src not in GEMM_DTYPES:
                    raise IronlawError(f"{t.path}: unknown gemm_dtype '{src}' (known: "
                                       f"{', '.join(list(GEMM_DTYPES) + list(SKIPPED))})")
                dt = half.get(src, GEMM_DTYPES[src])
                out.append(Group(f"gemm {dt}", ("matmul", dt), t.op, t, sorted_rows(rows, t.op), note((src,)),
                                 dtype=dt))
            continue
        if t.op.endswith("_mla"):
            out.extend(_mla_groups(t, half, note))
            continue
        if t.op == "mla_bmm":
            out.extend(mla_bmm_groups(t, half))
            continue
        phase = PHASES[t.op]
        regimes = [attention_regime(w > 0, h, kv, d, phase == "decode") for w, h, kv, d in
                   zip(t.rows.window_size, t.rows.num_heads, t.rows.num_key_value_heads, t.rows.head_dim)]
        every = t.rows.assign(regime=regimes)
        once = one_backend(every, t.op)
        alone = one_backend_per_head_dim(once, t.op, t)
        kept = own_kernel(alone, t.op)
        for (a, kv, regime), rows in main_backend(kept, t.framework).groupby(["attn_dtype", "kv_cache_dtype", "regime"],
                                                                             sort=True):
            dt, kvd = (half.get(x) or _attention_dtype(x, t.path) for x in (a, kv))
            name = f"{t.op.replace('_', ' ')} {dt}, KV {kvd}" + (f", {REGIMES[regime]}" if regime else "")
            n = [int(((x.attn_dtype == a) & (x.kv_cache_dtype == kv) & (x.regime == regime)).sum())
                 for x in (every, once, alone, kept)]
            left, dims, decode, other = n[0] - n[1], n[1] - n[2], n[2] - n[3], n[3] - len(rows)
            main = once.kernel_source.value_counts().index[0] if left or dims else ""
            timed = "; ".join(x for x in (note((a, kv)), left and f"{left} rows of other backends at shapes "
                                          f"{main} times left out",
                                          dims and f"{dims} rows of other backends at head dims {main} times left "
                                          f"out",
                                          decode and f"{decode} one-token rows the framework runs on its decode "
                                          f"kernel left out",
                                          other and f"{other} rows of other attention backends left out") if x)
            out.append(Group(name, ("kernel", attention_kernel(phase, dt, kvd, regime)), t.op, t,
                             sorted_rows(rows, t.op), timed, dtype=dt))
    return out


def one_backend(rows, op: str):
    """``rows`` with each shape timed once: where several attention backends (``kernel_source``) time the same shape
    and dtypes, the row of the backend that times most of the table, the engine's default there. aiconfigurator-core
    0.12.0's SGLang 0.5.14 tables of B200, B300, GB200 and GB300 time 3,876 context shapes twice — TRT-LLM's MHA
    kernels (``trtllm_mha``, SGLang's default attention backend on SM100/SM103: python/sglang/srt/server_args.py,
    ``ServerArgs._handle_attention_backend_compatibility``) and FlashInfer (head dim 128) or Triton (head dim 256)
    as alternatives — the two 1.65× apart at the median, 6.1× at p90 (B200), which no single time per shape fits
    (docs/accuracy.md). A table without the column, or with one backend per shape, is returned as it is."""
    if "kernel_source" not in rows.columns or rows["kernel_source"].nunique() < 2:
        return rows
    key = list(SHAPE_COLUMNS[op]) + [c for c in ("attn_dtype", "mla_dtype", "kv_cache_dtype") if c in rows.columns]
    key = list(dict.fromkeys(key))
    main = rows["kernel_source"].value_counts().index[0]
    twice = rows.duplicated(key, keep=False)
    return rows[~twice | (rows["kernel_source"] == main)]


def one_backend_per_head_dim(rows, op: str, table=None):
    """``rows`` (with their ``regime``) with each kernel class's head dim timed by one backend: where the table's
    main backend (the engine's default, ``one_backend``) times a head dim of a class, its rows there alone, for an op
    of ``HEAD_DIM_BACKEND_OPS``; a head dim only other backends time keeps theirs (SGLang 0.5.14's head dim 192, on
    Triton). aiconfigurator's SGLang collector runs each model on the backend SGLang picks for it (the
    ``sglang_backends`` of its model cases, collector/cases/models/*_cases.yaml): Qwen3.5's head dim 256 on Triton on
    SM100/103, beside ``trtllm_mha``'s 256 of the other models: at batch 1, 131,071 cached tokens and 1-2 KV heads,
    2.0-2.2 ms on Triton, 47-60 µs on ``trtllm_mha`` (B200, bf16 cache), which one grid node per head dim cannot
    hold both (docs/accuracy.md). ironlaw prices the engine's default backend; a table without the column is returned
    as it is. The context rows of a class of ``HEAD_DIM_BACKEND_CLASSES`` (``table``'s framework and GPU, the rows'
    dtypes; without a window, ``TILE_REGIMES``) alike, the others as they are."""
    keyed = HEAD_DIM_BACKEND_CLASSES.get((getattr(table, "framework", None), op))
    keyed = keyed if keyed and getattr(table, "gpu", None) in keyed[0] else None
    if op not in HEAD_DIM_BACKEND_OPS and not keyed or "kernel_source" not in rows.columns or \
            rows["kernel_source"].nunique() < 2:
        return rows
    rank = {k: i for i, k in enumerate(rows["kernel_source"].value_counts().index)}
    order = rows["kernel_source"].map(rank)
    best = order.groupby([rows[c] for c in HEAD_DIM_CLASS]).transform("min")
    if op in HEAD_DIM_BACKEND_OPS:
        return rows[order == best]
    own = [(a, kv) in keyed[1] and r in TILE_REGIMES
           for a, kv, r in zip(rows["attn_dtype"], rows["kv_cache_dtype"], rows["regime"])]
    return rows[(order == best) | ~np.asarray(own, bool)]


def own_kernel(rows, op: str):
    """``rows`` without the context rows the framework runs on its decode kernel (``DECODE_KERNELS``): vLLM's
    FlashInfer backend treats a request of at most ``reorder_batch_threshold`` = 1 query token as a decode
    (vllm/v1/attention/backends/flashinfer.py, ``FlashInferMetadataBuilder``; ``split_decodes_and_prefills``), so its
    context tables' one-token rows (``isl`` 1) time the decode kernel, whose whole time (B200, 9-10 µs at 40-64
    heads on one KV head, batch 4) is about the prefill class's fixed latency: held out 25% too slow at the median
    (B300, every head dim; docs/accuracy.md). A table without the column is returned as it is."""
    if op != "context_attention" or "kernel_source" not in rows.columns:
        return rows
    return rows[~rows["kernel_source"].isin(DECODE_KERNELS)]


def main_backend(rows, framework: str):
    """``rows`` (with their ``regime``) without, in a class of ``MAIN_BACKEND_CLASSES``, the rows of any backend
    (``kernel_source``) but the one that times most of the table, the framework's default: such a class names one
    kernel of that backend (TensorRT-LLM's MMHA window class, not FlashInfer's trtllm-gen FMHA beside it). A table
    without the column, or of another framework, is returned as it is."""
    regimes = [r for f, r in MAIN_BACKEND_CLASSES if f == framework]
    if not regimes or "kernel_source" not in rows.columns or rows["kernel_source"].nunique() < 2:
        return rows
    main = rows["kernel_source"].value_counts().index[0]
    return rows[~rows["regime"].isin(regimes) | (rows["kernel_source"] == main)]


def split(rows, op: str = "") -> tuple[object, object]:
    """(fit rows, held-out rows): the even and the odd rows of the shape-sorted group; for an op of ``STRATA``, where
    that leaves some value of its column (a head dim) on one side alone (``one_sided``), the even and the odd rows of
    each value's own rows, so that every head dim is both fitted and held out."""
    idx = np.arange(len(rows))
    odd = idx % 2 == 1
    col = STRATA.get(op)
    if col is not None and col in rows.columns and one_sided(rows[col].to_numpy(), odd):
        odd = rows.groupby(col, sort=False).cumcount().to_numpy() % 2 == 1
    return rows.iloc[~odd], rows.iloc[odd]


def one_sided(values: np.ndarray, odd: np.ndarray) -> bool:
    """Whether some value of ``values`` has more than ``ONE_SIDED`` of its rows on one side of the split ``odd``."""
    for v in np.unique(values):
        share = float(odd[values == v].mean())
        if share > ONE_SIDED or share < 1.0 - ONE_SIDED:
            return True
    return False


def fit(hw, gs: list[Group], date: str | None = None, origin: str = PROVENANCE, license: str = LICENSE,
        grid_steps: dict | None = None, gemm_fill: str = "half") -> dict:
    """A checked [calibration] table of every group's fitted terms, with its provenance: ``origin`` names the
    tables' publisher and version, ``license`` their license; ``grid_steps`` (op -> steps) replaces
    ``GRID_STEPS`` for the ops it names; ``gemm_fill`` the GEMM classes' M term (``GEMM_FILLS``)."""
    if not gs:
        raise IronlawError("calibrate --kernels: no GEMM or attention rows to fit")
    if gemm_fill not in GEMM_FILLS:
        raise IronlawError(f"unknown GEMM fill '{gemm_fill}' (known: {', '.join(GEMM_FILLS)})")
    date = date or _dt.date.today().isoformat()
    cal = {"schema": SCHEMA, "source": source(gs, origin), "fitted": [], "held_out": [], "provenance": {}}
    for g in gs:
        if g.op == "gemm":
            check_gemm_dims(g.rows, g.table.path)
        fit_rows, held = split(g.rows, g.op)
        steps, form = (grid_steps or {}).get(g.op), {}
        if g.op == "gemm":
            fit_rows = despiked(g, fit_rows)
            g, table = fit_operands(hw, g, fit_rows, steps, "half" if gemm_fill == "auto" else gemm_fill)
            form = {"operands_from": g.operands}
        if g.op == "gemm" and gemm_fill == "auto":
            table, chosen = chosen_form(hw, g, fit_rows, steps)
            form = {**form, **chosen}
        elif g.op != "gemm":
            rule = dispatch_rule(g, hw)           # rows another kernel runs: that class's, not fitted here
            fit_rows = fit_rows[~dispatched(g, fit_rows, rule)] if rule else fit_rows
            fit_rows = with_dispatched(g, fit_rows, hw)    # and those this class's kernel runs for another
            table = fit_class(hw, g, fit_rows, steps, gemm_fill)
        cal.setdefault(g.key[0], {})[g.key[1]] = table
        cal["fitted"].append(f"{g.name} (even rows)")
        cal["held_out"].append(f"{g.name} (odd rows)")
        timed = f"; {g.timed}" if g.timed else ""
        cal["provenance"][g.name] = {"table": f"{g.table.path} ({g.table.device}{timed})",
                                     "version": "; ".join(x for x in (origin, f"{g.table.framework} "
                                                                         f"{g.table.version}".strip()) if x),
                                     "license": license, "rows_fitted": int(len(fit_rows)),
                                     "rows_held_out": int(len(held)), "date": date, **form}
    linked_variants(cal, gs)
    linked_dispatch(hw, cal, gs)
    derived_generation(hw, cal)
    return check(cal, "calibration")


def fit_class(hw, g: Group, rows, steps: tuple | None = None, gemm_fill: str = "half") -> dict:
    """One group's table, its shape model (``fit_one``, on at most ``FIT_ROWS`` of ``rows``) and its grid
    (``fit_grid``, on all of them). A sliding-window generation class (``SPLIT_CLASSES``) on a device that states its
    SMs is fitted as the kernel that launches one CTA per sequence and KV head and, for TensorRT-LLM's tables
    (``SPLIT_FRAMEWORK``), as each split-KV launch its kernel may make over the whole sequence (``split_kv``,
    ``core.splitkv``); the one with the smallest loss on the fitted rows is kept (for a class of
    ``P90_CHOICE_CLASSES``, the smallest 90th percentile of their |error|); so is one of the "stream" form's
    two shape tables (``fit_stream``), each with its grid. ``gemm_fill``: a GEMM class's M term (``GEMM_FILLS``)."""
    spaced = shape_rows(rows)
    regime = (attention_kernel_parts(g.key[1]) or ("", ""))[1] if g.key[0] == "kernel" else ""
    splits = getattr(hw, "sms", None) and g.table.framework == SPLIT_FRAMEWORK
    tries = ({},) + (SPLIT_CLASSES.get((g.op, regime), ()) + WALK_WAVES.get((g.op, regime), ()) if splits else ())
    tries = tries + tuple({**extra, **blocks} for extra in tries for blocks in key_blocks_of(g, rows))
    tries = tries + head_ctas_of(hw, g, rows)
    tries = tries + tuple({**extra, **waves} for extra in tries for waves in unit_waves_of(hw, g, rows))
    chunked = chunk_launches_of(hw, g, rows)          # FlashInfer's plan splits: the plain launch is not its
    tries = tuple({**extra, **chunks} for extra in tries for chunks in chunked) if chunked else tries
    tries = tuple({**extra, **math_of(g), **kernel_math(hw, g), **query_tiles_of(hw, g),
                   **vector_of(g), **head_dim_latency(g, rows, hw)} for extra in tries)
    tiles = GEMM_TILES if g.op == "gemm" and gemm_fill == "tile" else None
    shapes = fit_stream if g.op == "gemm" and gemm_fill == "stream" else \
        (lambda *a: [fit_one(*a)])  # noqa: E731
    tables = [fit_grid(hw, g, rows, t, steps) for extra in tries for t in shapes(hw, g, spaced, extra, tiles)]
    if g.op == "gemm" and gemm_fill == "stream":
        tables = streaming_gemvs(hw, g, rows, tables, lambda: [fit_grid(hw, g, rows, t, steps) for t in fit_stream(
            hw, g, spaced, m_half_max=HALF_BOUNDS[0])])
    elif g.op == "gemm":
        tables = [gemvs_stream(hw, g, rows, t, lambda top: fit_grid(hw, g, rows, fit_one(
            hw, g, spaced, None, tiles, m_half_max=top), steps)) for t in tables]
    if len(tables) == 1:
        return tables[0]
    prob = Problem(hw, observations(g, spaced, hw), weighting="per_case")
    cals = [{"schema": SCHEMA, "source": "derived: fitting", "fitted": [g.name], g.key[0]: {g.key[1]: t}}
            for t in tables]
    if (g.op, regime) in P90_CHOICE_CLASSES:
        return tables[int(np.argmin([np.percentile(np.abs(prob.times(c) / prob.meas - 1.0), 90) for c in cals]))]
    return tables[int(np.argmin([prob.loss(c) for c in cals]))]


def chunk_launches_of(hw, g: Group, rows) -> tuple:
    """The chunked launches (``split_kv = "chunks"`` at each of ``CHUNK_OCCUPANCY`` CTAs per SM) a class of
    ``CHUNK_CLASSES`` on one of its GPUs, whose rows run mostly on a kernel of ``CHUNK_SOURCES``, tries in place of
    the plain one, on a device that states its SMs, at the head dims that kernel runs (``chunk_head_dims``, where another
    backend runs the class's other head dims); () for another."""
    own = g.key[0] == "kernel" and g.table.gpu in CHUNK_CLASSES.get((g.table.framework, g.key[1]), ())
    if not (own and getattr(hw, "sms", None) and main_kernel(rows) in CHUNK_SOURCES):
        return ()
    dims = sorted(int(d) for d in rows.loc[rows["kernel_source"].isin(CHUNK_SOURCES), "head_dim"].unique())
    by_dim = {"chunk_head_dims": dims} if set(dims) != set(int(d) for d in rows["head_dim"].unique()) else {}
    return tuple({"split_kv": "chunks", "chunk_occupancy": c, **by_dim} for c in CHUNK_OCCUPANCY)


def unit_waves_of(hw, g: Group, rows) -> tuple:
    """``({"unit_launch": launch},)`` for a class of ``UNIT_WAVE_CLASSES`` whose rows run mostly on a kernel of
    ``UNIT_WAVE_KERNELS`` (its launch), on a device that states its SMs (its fit tries its ``unit_s`` in waves beside
    it on every sequence and KV head); () for another."""
    regime = (attention_kernel_parts(g.key[1]) or ("", ""))[1] if g.key[0] == "kernel" else ""
    own = (getattr(g.table, "framework", None), g.op, regime) in UNIT_WAVE_CLASSES
    launch = UNIT_WAVE_KERNELS.get(main_kernel(rows))
    return ({"unit_launch": launch},) if own and getattr(hw, "sms", None) and launch else ()


def key_blocks_of(g: Group, rows) -> tuple:
    """``({"key_blocks": kernel},)`` for a class of ``KEY_BLOCK_CLASSES`` whose rows all time that kernel
    (``kernel_source``, ``KEY_BLOCK_SOURCES``): its fit tries the law over the whole key blocks the window touches
    (``core.keyblocks``, ``efficiency.key_block_share`` and ``kernel_coords``) beside the window's keys; () for
    another."""
    regime = (attention_kernel_parts(g.key[1]) or ("", ""))[1] if g.key[0] == "kernel" else ""
    if (g.table.framework, g.op, regime) not in KEY_BLOCK_CLASSES or "kernel_source" not in rows.columns:
        return ()
    sources = set(rows["kernel_source"].unique())
    kernels = {KEY_BLOCK_SOURCES.get(s) for s in sources}
    return ({"key_blocks": kernels.pop()},) if len(kernels) == 1 and None not in kernels else ()


def head_ctas_of(hw, g: Group, rows) -> tuple:
    """``HEAD_CTA_LAUNCHES`` for a class of ``HEAD_CTA_CLASSES`` whose rows all time a kernel of ``HEAD_CTA_SOURCES``,
    on a device that states its SMs (its fit tries each beside the plain launch); () for another."""
    regime = (attention_kernel_parts(g.key[1]) or ("", ""))[1] if g.key[0] == "kernel" else ""
    if (getattr(g.table, "framework", None), g.op, regime) not in HEAD_CTA_CLASSES or not getattr(hw, "sms", None) \
            or "kernel_source" not in rows.columns:
        return ()
    return HEAD_CTA_LAUNCHES if set(rows["kernel_source"].unique()) <= set(HEAD_CTA_SOURCES) else ()


def head_dim_latency(g: Group, rows, hw=None) -> dict:
    """``{"latency_head_dims": [...], "latency_head_dim_s": [...]}`` for a class of ``HEAD_DIM_LATENCY`` (or of
    ``HEAD_DIM_LATENCY_GPUS`` or ``HEAD_DIM_LATENCY_CLASSES`` on one of its GPUs, ``hw``): each head
    dim whose fastest call among ``rows`` is slower than the class's fastest, and by how much (the seconds its own
    launches add, every call at that head dim paying them; ``efficiency.head_dim_latency_s``); {} for another class,
    or where no head dim is slower."""
    regime = (attention_kernel_parts(g.key[1]) or ("", ""))[1] if g.key[0] == "kernel" else ""
    key = (g.table.framework, g.op, regime)
    if key in GROUP_LATENCY and len(rows):
        return group_latency(rows, group_split_units(hw, g))
    own = key in HEAD_DIM_LATENCY or g.table.gpu in HEAD_DIM_LATENCY_GPUS.get(key, ()) \
        or g.table.gpu in HEAD_DIM_LATENCY_CLASSES.get((g.table.framework, g.key[1]), ())
    if not own or "head_dim" not in rows.columns or not len(rows):
        return {}
    fastest = rows.groupby("head_dim")["latency_s"].min()
    extra = fastest - fastest.min()
    extra = extra[extra > 0.0]
    if not len(extra):
        return {}
    return {"latency_head_dims": [int(d) for d in extra.index],
            "latency_head_dim_s": [float(f"{x:.4g}") for x in extra.to_numpy()]}


def group_split_units(hw, g: Group) -> int | None:
    """The most sequences × KV heads at which ``g``'s decode kernel splits each sequence's keys (``GROUP_SPLIT``: half
    ``hw``'s SMs, two CTAs per sequence and KV head), None where it names none."""
    sms = getattr(hw, "sms", None)
    gpus = GROUP_SPLIT.get(getattr(g.table, "framework", None), ())
    return int(sms // 2) if sms and getattr(hw, "name", None) in gpus else None


def group_latency(rows, most: int | None = None) -> dict:
    """For a class of ``GROUP_LATENCY``: each (head dim, query heads per KV head) whose median call at one wave
    (``GROUP_WAVE_UNITS`` sequences × KV heads or fewer) and at most ``GROUP_SPLIT_STEP`` cached tokens among ``rows``
    is slower than the fastest such pair's, and by how much (``latency_head_dims``, ``latency_groups``,
    ``latency_head_dim_s``); {} where none is. With ``most`` (``group_split_units``): its median call at that many
    sequences × KV heads or fewer, over the class's fastest call (the launch beyond), held there only
    (``latency_units_max``, ``latency_keys_max``)."""
    group = rows["num_heads"] // rows["num_key_value_heads"].clip(lower=1)
    at = rows.assign(group=group, units=rows["batch_size"] * rows["num_key_value_heads"])
    at = at[(at.units <= (GROUP_WAVE_UNITS if most is None else most)) & (at.step <= GROUP_SPLIT_STEP)]
    median = at.groupby(["head_dim", "group"])["latency_s"].median()
    extra = median - (median.min() if most is None else float(rows["latency_s"].min()))
    extra = extra[extra > 0.0]
    if not len(extra):
        return {}
    return {"latency_head_dims": [int(d) for d, _ in extra.index], "latency_groups": [int(q) for _, q in extra.index],
            "latency_head_dim_s": [float(f"{x:.4g}") for x in extra.to_numpy()],
            **({"latency_units_max": most, "latency_keys_max": GROUP_SPLIT_KEYS} if most is not None else {})}


def kernel_math(hw, g: Group) -> dict:
    """``{"math": "fp8"}`` for a bf16-math FP8-cache context class whose kernel runs FP8 math on ``hw``
    (``FP8_CONTEXT``: TensorRT-LLM's, of the versions named there); ``{}`` otherwise."""
    fp8 = g.key[0] == "kernel" and g.key[1].startswith(FP8_CONTEXT_CLASS) and g.table.framework == FP8_CONTEXT_FRAMEWORK \
        and hw.name in FP8_CONTEXT.get(g.op, ()) and str(g.table.version).startswith(FP8_CONTEXT_VERSIONS)
    return {"math": "fp8"} if fp8 else {}


def math_of(g: Group) -> dict:
    """``{"math": the KV cache's dtype}`` for a context attention or MLA class (``MATH_OPS``) whose rows run mostly
    on a kernel of ``QUERY_AS_CACHE`` with a cache in another dtype than the class's math (its ops compute in the
    cache's dtype, ``efficiency.with_variants``); {} for any other class. aiconfigurator-core 0.12.0's vLLM 0.24.0 B300
    table, 4,096 tokens and more: up to 2.61 PFLOP/s on the FP8 cache, over bf16's 2.25 peak; its SGLang 0.5.14 B300
    MLA table, 16,384 tokens and more: the FP8 cache 1.55× faster than the bf16 one at the median (docs/accuracy.md)."""
    if g.op not in MATH_OPS or g.key[0] != "kernel" or "kernel_source" not in g.rows.columns or \
            not len(g.rows) or g.rows["kernel_source"].value_counts().index[0] not in QUERY_AS_CACHE:
        return {}
    m = re.fullmatch(r"attention_context_([a-z0-9]+)_kv_([a-z0-9]+).*", g.key[1])
    return {"math": m.group(2), **math_head_dims(g.rows)} if m and m.group(1) != m.group(2) else {}


def query_tiles_of(hw, g: Group) -> dict:
    """``{"query_tiles": [[head dim, BLOCK_M, CTAs per SM], …]}`` for a context attention class without a window
    (``TILE_REGIMES``) of a framework of ``TRITON_KERNELS`` whose rows time a head dim of ``TRITON_TILES[hw.name]`` on
    that kernel, its CTAs per SM those its shared memory holds (``querytiles.ctas_per_sm``); {} otherwise.
    aiconfigurator-core 0.12.0's SGLang 0.5.14 H100 table, head dim 512, one head: 138 µs at 1,024 tokens, 555 µs at
    4,096, linear in the length under one wave of CTAs (docs/accuracy.md)."""
    kernel, (shared, tiles) = TRITON_KERNELS.get(g.table.framework), TRITON_TILES.get(hw.name, (0, {}))
    regime = (attention_kernel_parts(g.key[1]) or ("", None))[1] if g.key[0] == "kernel" else None
    if g.op != "context_attention" or kernel is None or not tiles or \
            regime not in TILE_GPU_REGIMES.get(hw.name, TILE_REGIMES) or "kernel_source" not in g.rows.columns:
        return {}
    dims = sorted(int(d) for d in set(g.rows["head_dim"][g.rows["kernel_source"] == kernel]) if int(d) in tiles)
    return {"query_tiles": [[d, tiles[d][0], ctas_per_sm(d, *tiles[d], shared)] for d in dims]} if dims else {}


def vector_of(g: Group) -> dict:
    """``{"vector": "overlap"}`` for a context attention class whose rows run mostly on a kernel of
    ``OVERLAP_KERNELS`` (its softmax beside its matrix work, ``law.compute_term``), with ``vector_head_dims``, the
    head dims its rows time on those kernels alone, where some other head dim runs another kernel and the class
    names no ``math_head_dims`` (which the overlap then follows); {} for any other class."""
    if g.op != "context_attention" or g.key[0] != "kernel" or "kernel_source" not in g.rows.columns or \
            not len(g.rows) or g.rows["kernel_source"].value_counts().index[0] not in OVERLAP_KERNELS:
        return {}
    if "head_dim" not in g.rows.columns or math_head_dims(g.rows):
        return {"vector": "overlap"}
    on = g.rows["kernel_source"].isin(OVERLAP_KERNELS)
    other = set(g.rows["head_dim"][~on])
    dims = sorted(int(d) for d in set(g.rows["head_dim"][on]) - other)
    return {"vector": "overlap", "vector_head_dims": dims} if other and dims else {"vector": "overlap"}


def math_head_dims(rows) -> dict:
    """``{"math_head_dims": [...]}``, the head dims ``rows`` time on a kernel of ``QUERY_AS_CACHE`` alone, where some
    other head dim of theirs runs another kernel (vLLM 0.24.0's head dim 192 on its Triton prefill,
    ``vllm_triton_attn``: ``gemmshape`` math_head_dims); {} where every head dim runs one (or rows without head
    dims: MLA's)."""
    if "head_dim" not in rows.columns:
        return {}
    on = rows["kernel_source"].isin(QUERY_AS_CACHE)
    other = set(rows["head_dim"][~on])
    dims = sorted(int(d) for d in set(rows["head_dim"][on]) - other)
    return {"math_head_dims": dims} if other and dims else {}


def fit_operands(hw, g: Group, rows, steps: tuple | None = None, gemm_fill: str = "half") -> tuple[Group, dict]:
    """A GEMM group timed as its collector ran it (``OPERANDS``), and its table (``fit_class``): fitted with the rows
    whose weights' copies fit ``hw``'s last cache level together read from there (``as_collected``, "copies") and as
    the law prices them unmarked ("memory": from device memory, but a workload whose whole footprint fits half the
    cache), the one with the smaller loss on the fitted rows kept. Without a cache level, or without a known collector
    (``COLLECTOR_COPIES``), "memory"."""
    from ...machine.cache import repeated_limit_bytes
    if repeated_limit_bytes(hw) is None or g.table.framework not in COLLECTOR_COPIES:
        return g, fit_class(hw, g, rows, steps, gemm_fill)
    spaced, best = shape_rows(rows), None
    for how in OPERANDS:
        timed = replace(g, operands=how)
        table = fit_class(hw, timed, rows, steps, gemm_fill)
        cal = {"schema": SCHEMA, "source": "derived: fitting", "fitted": [g.name], g.key[0]: {g.key[1]: table}}
        loss = Problem(hw, observations(timed, spaced, hw), weighting="per_case").loss(cal)
        if best is None or loss < best[0]:
            best = (loss, timed, table)
    return best[1], best[2]


def timed_as(cal: dict, g: Group) -> Group:
    """``g`` with its operands as ``cal``'s provenance says the class was fitted (``fit_operands``; "memory" where
    it does not say)."""
    how = ((cal.get("provenance") or {}).get(g.name) or {}).get("operands_from", "memory")
    return replace(g, operands=how) if g.op == "gemm" else g


def chosen_form(hw, g: Group, rows, steps: tuple | None = None) -> tuple[dict, dict]:
    """A GEMM group's table in the form of ``AUTO_FORMS`` that holds out better (``better_form``): each fitted on
    ``rows`` (``fit_class``) and scored on the group's held-out rows (``held_out``) over ``hw``'s own calibration, as
    ``score`` scores them; and the provenance fields (``FORM_FIELDS``) that say which form and both scores."""
    tables = {f: fit_class(hw, g, rows, steps, f) for f in AUTO_FORMS}
    base = hw.calibration.table() if getattr(hw, "calibration", None) is not None else {}
    held = {}
    for f, t in tables.items():
        cal = {"fitted": [g.name], **base, "schema": SCHEMA, "source": "derived: choosing the form",
               g.key[0]: {**base.get(g.key[0], {}), g.key[1]: t}}
        err = held_errors(hw, cal, g)
        held[f] = (float(np.median(err)), float(np.percentile(err, 90)))
    form = better_form(held)
    fields = {"gemm_form": form}
    for f, (med, p90) in held.items():
        fields[f"held_out_{f}_median"], fields[f"held_out_{f}_p90"] = round(med, 4), round(p90, 4)
    return tables[form], fields


def better_form(held: dict[str, tuple[float, float]]) -> str:
    """The form (name -> held-out (median, p90) |error|) that holds out better: the lower p90, then the lower
    median, then the half-point form. The rule that kept the catalog's A100 int8, L40S and RTX PRO 6000 GEMM classes
    in the half-point form and moved the other 17 to the stream form (docs/accuracy.md, "The GEMM weights'
    streaming that grows with their tiles")."""
    return min(held, key=lambda f: (held[f][1], held[f][0], f != "half"))


def form_choices(cal: dict) -> list[dict]:
    """Per GEMM class of ``cal`` whose form was chosen (``chosen_form``): its name, the form kept and each form's
    held-out median and p90 |error|, from the class's provenance."""
    out = []
    for name, p in (cal.get("provenance") or {}).items():
        if "gemm_form" in p:
            out.append({"group": name, "form": p["gemm_form"],
                        **{f: {"median_abs_err": p[f"held_out_{f}_median"], "p90_abs_err": p[f"held_out_{f}_p90"]}
                           for f in AUTO_FORMS if f"held_out_{f}_median" in p}})
    return out


def fit_one(hw, g: Group, rows, extra: dict | None = None, tiles: tuple | None = None,
            m_half_max: float | None = None) -> dict:
    """One group's shape table (eta_max, m_half, nk_half, k_half, streamed, latency_s), fitted on ``rows``; a
    generation group tries each of ``M_TILES`` for whole tiles of rows in place of ``m_half`` and keeps the best.
    ``extra``: fields the table holds as given (``split_kv``). ``tiles``: only whole tiles of each of these rows
    tried, ``streamed`` at most ``STREAMED_PHYSICAL`` (a GEMM's tile fill, ``GEMM_FILLS``). ``m_half_max``: m_half's
    upper bound in place of ``PARAMS``' (the small-M rule, ``gemvs_stream``)."""
    prob = Problem(hw, observations(g, rows, hw), weighting="per_case")
    start = {"eta_max": 0.5, "m_half": 100.0, "nk_half": 100.0, "k_half": 100.0, "streamed": 0.8,
             "latency_s": 5e-6, **(extra or {})}
    starts = STARTS["gemm" if g.op in ("gemm", "mla_bmm") else "attention"]
    best, best_loss = None, float("inf")
    bounds = PARAMS if tiles is None else tuple((n, STREAMED_PHYSICAL if n == "streamed" else u) for n, u in PARAMS)
    bounds = with_m_half_max(bounds, m_half_max)
    bounds, starts = with_walk_waves(extra, *with_split_cost(extra, *with_key_walk(g, *within_floor(g, rows, bounds,
                                                                                                  starts))))
    bounds, starts = with_unit_cost(g, bounds, starts)
    bounds, starts = with_write_cost(g, bounds, starts)
    bounds, starts = with_swap_cost(g, rows, bounds, starts)
    for tile in tiles or (None,) + (M_TILES if PHASES.get(g.op) == "decode" else ()):
        s0 = dict(start, m_half=0.0, m_tile=tile) if tile else start
        cal = {"schema": SCHEMA, "source": "derived: fitting", "fitted": [g.name], g.key[0]: {g.key[1]: s0}}
        params = [((g.key[0], g.key[1], name), upper) for name, upper in bounds if not (tile and name == "m_half")]
        pick = [[min(x, upper) for (name, upper), x in zip(bounds, st) if not (tile and name == "m_half")]
                for st in starts]
        if tiles:             # without m_half the starts repeat: the best two distinct ones
            pick = [list(x) for x in dict.fromkeys(tuple(x) for x in pick)]
        c = fit_group(prob, cal, params, pick)
        loss = prob.loss(c)
        if loss < best_loss:
            best, best_loss = c[g.key[0]][g.key[1]], loss
    return best


def latency_floor(g: Group, rows) -> float | None:
    """A class's bound on its fixed ``latency_s`` (a GEMM's, a generation attention's or MLA's, ``FLOOR_OPS``, but
    not ``FLOOR_FREE_REGIMES``; a context attention class's of ``FLOOR_CONTEXT_FRAMEWORKS``, any regime; a class of
    ``FLOOR_ANY_OPS``, any framework's, whose rows run mostly on no kernel of ``FLOOR_FREE_KERNELS``): the fastest
    call among ``rows`` (every call pays it); None for another. Unbounded,
    the fit let the fixed latency take up what the smallest GEMMs' streaming costs and the grid, which scales only the
    time above it, could not bring the smallest shapes back down (aiconfigurator-core 0.12.0's A100 bf16 table: its
    smallest shapes 2.6-3.6 µs measured, 4.8 µs fitted; with ``fit_operands``, held out 5.7% / 23.9% → 5.0% / 15.4%,
    docs/accuracy.md)."""
    regime = (attention_kernel_parts(g.key[1]) or ("", ""))[1] if g.key[0] == "kernel" else ""
    context = g.op in FLOOR_CONTEXT_OPS and getattr(g.table, "framework", None) in FLOOR_CONTEXT_FRAMEWORKS \
        or g.op in FLOOR_ANY_OPS and main_kernel(rows) not in FLOOR_FREE_KERNELS
    if not context and (g.op not in FLOOR_OPS or regime in FLOOR_FREE_REGIMES) or not len(rows):
        return None
    return float(np.min(rows.latency_s))


def main_kernel(rows) -> str:
    """The kernel most of ``rows`` time (their ``kernel_source``); "" where they name none."""
    if "kernel_source" not in rows.columns or not len(rows):
        return ""
    return str(rows["kernel_source"].value_counts().index[0])


def within_floor(g: Group, rows, bounds: tuple, starts: list) -> tuple[tuple, list]:
    """``bounds`` ((name, upper) …) and ``starts`` (each a list in the order of ``bounds``) with ``latency_s`` at
    most ``latency_floor`` (a start at ``FLOOR_START`` of it); as given where there is none."""
    floor = latency_floor(g, rows)
    if floor is None:
        return bounds, starts
    at = [n for n, _ in bounds].index("latency_s")
    bounds = tuple((n, min(u, floor) if n == "latency_s" else u) for n, u in bounds)
    return bounds, [[min(x, FLOOR_START * floor) if i == at else x for i, x in enumerate(st)] for st in starts]


def with_key_walk(g: Group, bounds: tuple, starts: list) -> tuple[tuple, list]:
    """``bounds`` and ``starts`` with ``key_s`` (at most ``KEY_S_MAX``, each start from each of ``KEY_S_STARTS``)
    for a class of ``KEY_WALK_OPS``; as given for another."""
    if g.op not in KEY_WALK_OPS:
        return bounds, starts
    return bounds + (("key_s", KEY_S_MAX),), [list(st) + [k] for st in starts for k in KEY_S_STARTS]


def with_unit_cost(g: Group, bounds: tuple, starts: list) -> tuple[tuple, list]:
    """``bounds`` and ``starts`` with ``unit_s`` (at most ``UNIT_S_MAX``, each start from ``UNIT_S_START``) for a
    class of ``UNIT_OPS`` fitted on a table of ``UNIT_FRAMEWORKS``; as given for another."""
    if g.op not in UNIT_OPS or g.table.framework not in UNIT_FRAMEWORKS:
        return bounds, starts
    return bounds + (("unit_s", UNIT_S_MAX),), [list(st) + [UNIT_S_START] for st in starts]


def with_write_cost(g: Group, bounds: tuple, starts: list) -> tuple[tuple, list]:
    """``bounds`` and ``starts`` with ``write_s`` (at most ``WRITE_S_MAX``, each start from ``WRITE_S_START``) for a
    class of ``WRITE_CLASSES``, or of ``WRITE_CACHE_CLASSES`` on one of its GPUs; as given for another."""
    regime = (attention_kernel_parts(g.key[1]) or ("", ""))[1] if g.key[0] == "kernel" else ""
    framework = getattr(g.table, "framework", None)
    cache = getattr(g.table, "gpu", None) in WRITE_CACHE_CLASSES.get((framework, g.op, g.key[1]), ())
    if (framework, g.op, regime) not in WRITE_CLASSES and not cache:
        return bounds, starts
    return bounds + (("write_s", WRITE_S_MAX),), [list(st) + [WRITE_S_START] for st in starts]


def with_swap_cost(g: Group, rows, bounds: tuple, starts: list) -> tuple[tuple, list]:
    """``bounds`` and ``starts`` with ``swap_s`` (at most ``SWAP_S_MAX``, each start from ``SWAP_S_START``) for a class
    of ``SWAP_CLASSES`` whose ``rows`` run mostly on a kernel of ``SWAP_KERNELS`` and hold calls that swap (``swaps``);
    as given for another (vLLM's tables time over 32 heads per KV head on one KV head only: nothing there to fit)."""
    regime = (attention_kernel_parts(g.key[1]) or ("", ""))[1] if g.key[0] == "kernel" else ""
    if (getattr(g.table, "framework", None), g.op, regime) not in SWAP_CLASSES or main_kernel(rows) not in SWAP_KERNELS \
            or not swaps(rows).any():
        return bounds, starts
    return bounds + (("swap_s", SWAP_S_MAX),), [list(st) + [SWAP_S_START] for st in starts]


def swaps(rows) -> np.ndarray:
    """Per decode row, whether FlashAttention 2's grouped-query swap copies its query and output: more than one
    sequence, more than one KV head and more query heads than KV heads (``efficiency.swap_copy_s``)."""
    return ((rows.batch_size > 1) & (rows.num_key_value_heads > 1)
            & (rows.num_heads > rows.num_key_value_heads)).to_numpy()


def with_split_cost(extra: dict | None, bounds: tuple, starts: list) -> tuple[tuple, list]:
    """``bounds`` and ``starts`` with ``split_s`` (at most ``SPLIT_S_MAX``, from each of ``SPLIT_S_STARTS``) where
    ``extra`` names a split-KV launch (``split_kv``), and ``merge_s`` (at most ``MERGE_S_MAX``, from
    ``MERGE_S_START``) where that launch is XQA's ("history"); as given otherwise."""
    kind = (extra or {}).get("split_kv")
    if not kind or kind == "heads":      # one CTA per query head, unsplit: nothing to reduce
        return bounds, starts
    bounds, starts = bounds + (("split_s", SPLIT_S_MAX),), [list(st) + [x] for st in starts for x in SPLIT_S_STARTS]
    if kind != "history":
        return bounds, starts
    return bounds + (("merge_s", MERGE_S_MAX),), [list(st) + [MERGE_S_START] for st in starts]


def with_walk_waves(extra: dict | None, bounds: tuple, starts: list) -> tuple[tuple, list]:
    """``bounds`` and ``starts`` with ``cta_s`` (at most ``CTA_S_MAX``, from each of ``CTA_S_STARTS``) where ``extra``
    names a walk in waves (``key_ctas``); as given otherwise."""
    if not (extra or {}).get("key_ctas"):
        return bounds, starts
    return bounds + (("cta_s", CTA_S_MAX),), [list(st) + [x] for st in starts for x in CTA_S_STARTS]


def fixed_seconds(table: dict, cal: dict, prob: Problem, split) -> np.ndarray:
    """Per row of ``prob``, the seconds a class's ``table`` (within ``cal``) adds to an op whatever its η: its
    ``latency_s`` and the per-call terms its fields state (``efficiency.class_latency_s``: its walk over the keys,
    its split's reduction, ``split`` the launch, its cost per sequence and KV head, its head dim's own launches,
    its cache writer's CTAs)."""
    extra = class_latency_s(Calibration.of(cal), prob.cols, getattr(prob.hw, "sms", None), split)
    return float(table.get("latency_s", 0.0)) + np.reshape(extra, -1)


def fit_stream(hw, g: Group, rows, extra: dict | None = None, tiles: tuple | None = None,
               m_half_max: float | None = None) -> list[dict]:
    """A GEMM group's two shape tables in the "stream" form (``GEMM_FILLS``), fitted on ``rows``: eta_max, nk_half,
    k_half, streamed (at most 1), streamed_half, serial and latency_s, with m_half 0 and with m_half fitted too
    (``STREAM_M_HALF``); ``fit_class`` keeps the one with the smaller loss after its grid. Both are needed: the
    joint fit stops in the half-point form's minimum (B200 bf16's fitted rows with their grids: 0.0671 against
    0.0606 for m_half 0), while FP8 classes fit better with an M term (B200 fp8 0.0363 against 0.0481).
    ``extra``: fields held as given; ``tiles`` is not used (``fit_one``'s signature). With ``m_half_max`` (the
    small-M rule, ``streaming_gemvs``) only the second table, its m_half at most that."""
    prob = Problem(hw, observations(g, rows, hw), weighting="per_case")
    start = {"eta_max": 0.5, "m_half": 0.0, "nk_half": 100.0, "k_half": 100.0, "streamed": 0.8,
             "streamed_half": 1e6, "serial": 0.5, "latency_s": 5e-6, **(extra or {})}
    cal = {"schema": SCHEMA, "source": "derived: fitting", "fitted": [g.name], g.key[0]: {g.key[1]: start}}
    bounds, starts = within_floor(g, rows, STREAM_PARAMS, STREAM_STARTS)
    params = [((g.key[0], g.key[1], name), upper) for name, upper in bounds]
    (name, upper), m_starts = STREAM_M_HALF
    upper = upper if m_half_max is None else min(upper, m_half_max)
    tries = [] if m_half_max is not None else [fit_group(prob, cal, params, starts)]
    tries.append(fit_group(prob, cal, params + [((g.key[0], g.key[1], name), upper)],
                           [s + [min(m, upper)] for s in starts for m in m_starts]))
    return [c[g.key[0]][g.key[1]] for c in tries]


def with_m_half_max(bounds: tuple, m_half_max: float | None) -> tuple:
    """``bounds`` ((name, upper) …) with m_half's upper bound at most ``m_half_max`` (as given where None)."""
    if m_half_max is None:
        return bounds
    return tuple((n, min(u, m_half_max) if n == "m_half" else u) for n, u in bounds)


def gemv_share(hw, g: Group, rows, table: dict) -> float | None:
    """The largest compute over data time the law with ``table`` gives ``g``'s GEMVs that stream their weights from
    device memory, each weighed by the power its resource draws flat out (``power_ratio``): gemm:1,N,K at each N, K
    of ``rows`` both at least ``GEMV_RULE_NK`` whose weights exceed ``hw``'s last cache level
    (``cache.repeated_limit_bytes``: neither a lone op nor the collector's repeated calls keep them there), or where
    no such pair's do, at the largest N and K of ``rows`` (ROCm/aiter's MI300X fp8 rows reach 131 M weight elements,
    its 256 MiB cache holds them); None where those do not exceed it either. At most 1: the GEMVs bind memory both in
    time (``explain.labels``) and in power (``power.utilization``)."""
    from types import SimpleNamespace
    from ...law import law
    from ...machine.cache import repeated_limit_bytes
    limit = repeated_limit_bytes(hw) or 0.0
    gemv = lambda pairs: [op for op in (gemm_op(SimpleNamespace(m=1, n=n, k=k), g) for n, k in sorted(pairs))  # noqa: E731
                          if op.bytes.get("weights", 0.0) > limit]
    ops = gemv({(int(n), int(k)) for n, k in zip(rows.n, rows.k) if n >= GEMV_RULE_NK and k >= GEMV_RULE_NK}) or \
        gemv({(int(np.max(rows.n)), int(np.max(rows.k)))})
    if not ops:
        return None
    bare = without_calibration(hw)
    placed = law.place(Graph("gemvs", "infer", g.key[1], ops), bare)
    cal = {"schema": SCHEMA, "source": "derived: fitting", "fitted": [g.name], g.key[0]: {g.key[1]: table}}
    est = law.timed(placed, replace(bare, calibration=Calibration.of(cal)))
    data, compute = (np.asarray(x, float).reshape(-1) for x in (est.data_s, est.compute_s))
    return float(np.max(compute / np.maximum(data, 1e-30))) * power_ratio(hw)


def power_ratio(hw) -> float:
    """The tensor cores' power flat out over the device memory's (``power.dynamic_w``): where a hardware file states
    its memory's own power (H200: 469 W of a 700 W TDP, 120 W idle, 0.60 of the compute's above idle), a GEMV whose
    compute time is 0.6-1 of its data time binds memory in time but draws the tensor cores' power
    (tests/test_gemv_binding.py); 1 on a device without that figure or without power figures."""
    from ...law.power import dynamic_w, has_power
    if not has_power(hw):
        return 1.0
    return dynamic_w(hw, "compute") / dynamic_w(hw, f"bandwidth:{hw.memory[hw.device_tier].name}")


def streaming_gemvs(hw, g: Group, rows, tables: list[dict], at_floor) -> list[dict]:
    """The small-M rule in the stream form (``fit_stream``'s tables, each with its grid): those whose GEMVs bind
    memory (``gemv_share`` at most 1), and where one breaks it, ``at_floor()``'s tables in its place: its half-point
    refitted with m_half at its floor (from the half-point try's own starts), not at the rule's edge, since the m_half
    0 table already prices a small-M GEMM's cost per weight element as the weights' streaming, and a bound the fit
    runs into says the rows cannot pin it. None left is an error."""
    kept = [t for t in tables if (gemv_share(hw, g, rows, t) or 0.0) <= 1.0]
    if len(kept) < len(tables):
        kept += [t for t in at_floor() if (gemv_share(hw, g, rows, t) or 0.0) <= 1.0]
    if not kept:
        raise IronlawError(f"calibrate --kernels: {g.name}: its GEMVs (gemm:1,N,K) come out compute-bound in "
                           f"the stream form; no GEMM form prices them so")
    return kept


def gemvs_stream(hw, g: Group, rows, table: dict, refit) -> dict:
    """``table`` where its GEMVs bind memory (``gemv_share`` at most 1: the small-M rule, ``GEMV_RULE_NK``); else
    ``refit(m_half_max)``'s table, m_half at most ``GEMV_STREAM_MARGIN`` of the value at which the worst GEMV's compute
    would equal its data time, until they do (at most ``GEMV_RULE_TRIES`` times, then with m_half at its floor).
    A table whose GEMVs still bind compute with m_half at its floor is an error: no form may price them so."""
    share = gemv_share(hw, g, rows, table)
    for i in range(GEMV_RULE_TRIES + 1):
        if share is None or share <= 1.0:
            return table
        m_half = float(table.get("m_half", 0.0))
        if m_half <= HALF_BOUNDS[0]:
            break
        top = HALF_BOUNDS[0] if i == GEMV_RULE_TRIES else \
            max(GEMV_STREAM_MARGIN * (1.0 + m_half) / share - 1.0, HALF_BOUNDS[0])
        table = refit(top)
        share = gemv_share(hw, g, rows, table)
    raise IronlawError(f"calibrate --kernels: {g.name}: its GEMVs (gemm:1,N,K) come out compute-bound "
                       f"({share:.2f} × their data time) with m_half at its floor; no GEMM form prices them so")


def fit_grid(hw, g: Group, rows, table: dict, steps: tuple | None = None, walk: bool = True,
             tiles: bool = True) -> dict:
    """``table`` with the kernel-choice grid (``gemmshape.grid_factor``) fitted on all of ``rows``: per node, the
    log of measured over modelled time without the fixed latency, least squares over the rows' multilinear weights,
    each node pulled toward 0 by ``GRID_RIDGE`` (a node no row reaches stays at factor 1); the steps of
    ``GRID_STEPS``, each squared (but those of ``GRID_KEEP``) while there are fewer than ``GRID_ROWS_PER_NODE`` rows
    per node (an attention's: per node some row reaches, ``reached_count``). Where even the coarsest grid has too many
    nodes for the rows, ``table`` stays without a grid. ``steps``: the node spacing in place of ``GRID_STEPS[g.op]``
    (a release's, ``fit(grid_steps=…)``), every node counted and fitted and every step squared, as ``COARSE``'s.
    The grid's axes are the op's as its kernel launches it (``efficiency.grid_coords``: with ``split_kv``, the keys
    per block and the blocks of a split-KV kernel). A class of ``WALK_CLASSES`` (``walk``) is fitted both ways,
    its grid over the window's keys and over the whole sequence's (``walked_grid``). A class that walks its keys in
    waves (``key_ctas``) keeps no grid: its walk bounds the time the grid would scale (``efficiency.walk_eta``), and
    fitted over it the grid took the RTX PRO 6000 XQA MLA class's held-out rows from 4.9% / 26.0% to 4.3% / 39.0%.
    A class with ``query_tiles`` (``tiles``) is fitted with and without its grid (``tiled_grid``)."""
    if "key_ctas" in table:
        return table
    if tiles and "query_tiles" in table:
        return tiled_grid(hw, g, rows, table, steps, walk)
    if walk and walks(g):
        return walked_grid(hw, g, rows, table, steps)
    own = {k: v for k, v in table.items() if k not in ("grid_nodes", "grid_log")}
    cal = {"schema": SCHEMA, "source": "derived: fitting", "fitted": [g.name], g.key[0]: {g.key[1]: own}}
    prob = Problem(hw, observations(g, rows, hw), weighting="per_case")
    pred = prob.times(cal)
    regime = (attention_kernel_parts(g.key[1]) or ("", ""))[1] if g.key[0] == "kernel" else ""
    coarse = COARSE.get((g.op, regime)) if coarse_for(g.table.framework, regime) else None
    every = g.op == "gemm" or coarse is not None or steps is not None     # count and fit every node
    split = split_blocks(Calibration.of(cal), prob.cols, hw)
    lat = fixed_seconds(own, cal, prob, split)
    coords = tuple(np.asarray(x, float).reshape(-1)
                   for x in kernel_coords(Calibration.of(cal), prob.cols, split))
    nodes = fit_nodes(g.op, coords, len(prob.meas), steps or coarse or group_switch_steps(g, regime)
                      or gemm_switch_steps(g), every)
    if nodes is None:
        return own
    nodes = past_switch_nodes(g, nodes, coords, len(prob.meas))
    cols = np.arange(_size(nodes)) if every else reached_nodes(nodes, coords)
    coef = np.zeros(_size(nodes))
    for _ in range(GRID_PASSES.get(g.op, 1)):         # each pass fits the residual the last one left
        y = np.log(np.maximum(prob.meas - lat, 0.1 * prob.meas) / np.maximum(pred - lat, 1e-12))
        coef[cols] += grid_solve(nodes, coords, y, cols, grid_ridge(g))
        if not every:
            coef = held_at_the_rows(nodes, coef, cols)
        out = {**own, "grid_nodes": nodes,
               "grid_log": grid_text(np.clip(np.round(100.0 * coef), -GRID_LOG_MAX, GRID_LOG_MAX).astype(int))}
        pred = prob.times({**cal, g.key[0]: {g.key[1]: out}})
    return out


def tiled_grid(hw, g: Group, rows, table: dict, steps: tuple | None = None, walk: bool = True) -> dict:
    """A class with ``query_tiles``: ``table`` with its grid (``fit_grid``) and without one, the one with the smaller
    loss on the fitted rows (``shape_rows``) kept. Its launch's waves price what the grid's corners took up where
    the rows are few: aiconfigurator-core 0.12.0's SGLang 0.5.14 H100 table, bf16 on an FP8 cache, one head per KV
    head (Triton, head dim 512, 51 fitted rows, a grid of two nodes per axis), the grid's corners at its ±300 bound
    and its held-out rows 27.3% / 48.6%, 8.7% / 25.5% without it (docs/accuracy.md)."""
    plain = {k: v for k, v in table.items() if k not in ("grid_nodes", "grid_log")}
    gridded = fit_grid(hw, g, rows, plain, steps, walk, tiles=False)
    prob = Problem(hw, observations(g, shape_rows(rows), hw), weighting="per_case")
    loss = [prob.loss({"schema": SCHEMA, "source": "derived: fitting", "fitted": [g.name], g.key[0]: {g.key[1]: t}})
            for t in (gridded, plain)]
    return (gridded, plain)[int(np.argmin(loss))]


def group_switch_steps(g: Group, regime: str) -> tuple | None:
    """The grid steps of a grouped-query class (``GROUP_SWITCH_REGIMES``) whose rows hold a decode kernel that switches
    at a count of query heads per KV head (``GROUP_SWITCH``): ``GRID_STEPS`` with the M axis (query rows per KV head, a
    decode's heads per KV head) at ``GROUP_SWITCH_M_STEP``, so that a node stands on each side of the switch; None
    otherwise (``GRID_STEPS``)."""
    if g.op != "generation_attention" or regime not in GROUP_SWITCH_REGIMES or "kernel_source" not in g.rows.columns:
        return None
    held = set(zip(g.rows["kernel_source"], g.rows["kv_cache_dtype"].astype(str)))
    if not any((g.table.framework, src, kv) in GROUP_SWITCH for src, kv in held):
        return None
    return (GROUP_SWITCH_M_STEP,) + tuple(GRID_STEPS[g.op][1:])


def gemm_switch_steps(g: Group) -> tuple | None:
    """``GRID_STEPS``' GEMM steps with the M axis at ``M_SWITCH_STEP`` for a class of ``M_SWITCH_GEMMS`` or
    ``M_PAST_GEMMS`` on one of its GPUs; None otherwise (``GRID_STEPS``)."""
    if g.op != "gemm" or not (switches(g, M_SWITCH_GEMMS) or switches(g, M_PAST_GEMMS)):
        return None
    return (M_SWITCH_STEP,) + tuple(GRID_STEPS["gemm"][1:])


def switches(g: Group, keyed: dict) -> bool:
    """Whether GEMM class ``g``'s (framework, dtype) lists its GPU in ``keyed``."""
    return g.op == "gemm" and g.table.gpu in keyed.get((g.table.framework, g.key[1]), ())


def past_switch_nodes(g: Group, nodes: list, coords, rows: int) -> list:
    """``nodes`` with, for a class of ``M_PAST_GEMMS``, a node on the M axis at each power of two plus one (from
    ``M_PAST_FROM``) that the rows hold and that lies inside the axis: the kernel's time jumps there and falls back
    toward the next power of two, which nodes at the powers alone interpolate across. As given where the rows are too
    few for the added nodes (``GRID_ROWS_PER_NODE``)."""
    if not switches(g, M_PAST_GEMMS):
        return nodes
    m = np.asarray(coords[0], float)
    held = set(np.unique(m).tolist())
    past = [2.0 ** j + 1 for j in range(int(math.log2(M_PAST_FROM)), 40) if 2.0 ** j + 1 in held
            and nodes[0][0] < 2.0 ** j + 1 < nodes[0][-1]]
    out = [sorted(set(nodes[0]) | set(past))] + list(nodes[1:])
    return out if rows >= GRID_ROWS_PER_NODE * _size(out) else nodes


def despiked(g: Group, rows):
    """``rows`` (a GEMM class's fit rows) without their isolated spikes where the class is one of ``SPIKY_GEMMS``: a
    row whose time is over ``SPIKE_RATIO`` times, or under 1 / ``SPIKE_RATIO`` of, both its neighbours in M among
    ``rows`` at the same N and K, those two within ``SPIKE_AGREE`` of each other; ``rows`` as given otherwise."""
    if not switches(g, SPIKY_GEMMS):
        return rows
    s = rows.sort_values(["n", "k", "m"], kind="stable")
    t = s["latency_s"].to_numpy()
    same = (s["n"].to_numpy()[:-2] == s["n"].to_numpy()[2:]) & (s["k"].to_numpy()[:-2] == s["k"].to_numpy()[2:])
    lo, hi = np.minimum(t[:-2], t[2:]), np.maximum(t[:-2], t[2:])
    spike = same & (hi <= SPIKE_AGREE * lo) & ((t[1:-1] > SPIKE_RATIO * hi) | (t[1:-1] < lo / SPIKE_RATIO))
    drop = s.index[1:-1][spike]
    return rows.drop(index=drop)


def coarse_for(framework: str, regime: str) -> bool:
    """Whether a generation class of ``regime`` fitted on ``framework``'s tables keeps ``COARSE``'s grid steps: over 32
    heads per KV head, on every framework's; a sliding window, on ``COARSE_WINDOW_FRAMEWORKS``' only."""
    return regime == "_wide" or framework in COARSE_WINDOW_FRAMEWORKS


def walks(g: Group) -> bool:
    """Whether ``g`` is a class of ``WALK_CLASSES`` fitted on a framework's tables of ``WALK_FRAMEWORKS``."""
    regime = (attention_kernel_parts(g.key[1]) or ("", ""))[1] if g.key[0] == "kernel" else ""
    return (g.op, regime) in WALK_CLASSES and g.table.framework in WALK_FRAMEWORKS


def walked_grid(hw, g: Group, rows, table: dict, steps: tuple | None = None) -> dict:
    """``g``'s grid (``fit_grid``) over the window's keys and over the whole sequence's (``grid_keys =
    "sequence"``, ``efficiency.kernel_coords``), the one with the smaller loss on the fitted rows (``shape_rows``)
    kept: the class's rows may run a kernel that skips the key blocks outside the window (FlashAttention 3,
    TRT-LLM's, FlashInfer's) or one that walks them all (Triton), per head dim (``WALK_CLASSES``)."""
    plain = {k: v for k, v in table.items() if k != "grid_keys"}
    tables = [fit_grid(hw, g, rows, t, steps, walk=False) for t in (plain, {**plain, "grid_keys": "sequence"})]
    prob = Problem(hw, observations(g, shape_rows(rows), hw), weighting="per_case")
    loss = [prob.loss({"schema": SCHEMA, "source": "derived: fitting", "fitted": [g.name], g.key[0]: {g.key[1]: t}})
            for t in tables]
    return tables[int(np.argmin(loss))]


def fit_nodes(op: str, coords, rows: int, steps: tuple | None = None,
                every: bool | None = None) -> list[list[float]] | None:
    """The grid's nodes at ``steps`` (default ``GRID_STEPS``), each step squared while there are fewer than
    ``GRID_ROWS_PER_NODE`` rows per node: with ``every`` (default: a GEMM's) counting every node, else only those
    the rows reach (``reached_count``; the nodes of ``VALUE_NODES``' axes not counted, ``without_values``) and never
    squaring the steps of ``GRID_KEEP``. None where even each axis at its two ends has too many."""
    steps = steps or GRID_STEPS[op]
    every = op == "gemm" if every is None else every
    keep = () if every else GRID_KEEP[op]
    count = _size if every else (lambda nd: reached_count(*without_values(op, nd, coords)))  # noqa: E731
    nodes = _axis_nodes(op, coords, steps)
    while rows < GRID_ROWS_PER_NODE * count(nodes):
        steps = tuple(s if i in keep else s * s for i, s in enumerate(steps))
        coarser = _axis_nodes(op, coords, steps)
        if _size(coarser) == _size(nodes):        # each axis at its two ends already: too few rows for a grid
            return None
        nodes = coarser
    return nodes


def without_values(op: str, nodes, coords) -> tuple[list, tuple]:
    """``nodes`` and ``coords`` with each axis of ``VALUE_NODES[op]`` folded to one node: what the coarsening counts.
    A value axis's nodes are kernels the rows each hold (head dim 64, 128, 192 …), not a resolution the rows must fill;
    counted, a new head dim squared the other axes' steps (vLLM H100 bf16 decode, one head per KV head, 978 rows:
    4.7% → 8.0% held out when head dim 192 got its node; docs/accuracy.md)."""
    folded = VALUE_NODES.get(op, ())
    return ([[a[0]] if i in folded else a for i, a in enumerate(nodes)],
            tuple(np.full(len(np.asarray(x).reshape(-1)), nodes[i][0]) if i in folded else x
                  for i, x in enumerate(coords)))


def _axis_nodes(op: str, coords, steps: tuple) -> list[list[float]]:
    """Each axis's nodes at its step (``gemmshape.grid_nodes``), but the axes of ``VALUE_NODES[op]``, which take a
    node at each value the rows hold."""
    return [sorted({float(f"{v:.6g}") for v in np.asarray(x, float)}) if i in VALUE_NODES.get(op, ())
            else grid_nodes(x, s) for i, (x, s) in enumerate(zip(coords, steps))]


def grid_ridge(g: Group) -> float:
    """The ridge of ``g``'s grid: ``GRID_RIDGE_HARD`` for a class of ``GRID_RIDGE_CLASSES`` without a window
    (``TILE_REGIMES``) on a table of ``RESIDENT_CONTEXT_FRAMEWORKS``, else ``GRID_RIDGE``."""
    regime = (attention_kernel_parts(g.key[1]) or ("", ""))[1] if g.key[0] == "kernel" else ""
    hard = g.table.gpu in GRID_RIDGE_CLASSES.get(g.op, ()) and g.table.framework in RESIDENT_CONTEXT_FRAMEWORKS
    return GRID_RIDGE_HARD if hard and regime in TILE_REGIMES else GRID_RIDGE


def grid_solve(nodes, coords, y, cols: np.ndarray, ridge: float = GRID_RIDGE) -> np.ndarray:
    """The grid's ln factors at the nodes ``cols`` (sorted flat indices; every node the rows reach among them),
    least squares with the ``ridge`` per node."""
    idx, w = grid_weights(nodes, coords)
    n = len(cols)
    a = np.zeros((len(idx), n))
    np.add.at(a, (np.arange(len(idx))[:, None], np.minimum(np.searchsorted(cols, idx), n - 1)), w)
    return np.linalg.solve(a.T @ a + ridge * len(idx) / n * np.eye(n), a.T @ y)


def held_at_the_rows(nodes, coef: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``coef`` with each node no row reaches given the value of the nearest node one does (in grid steps, L1):
    the grid held at its measured edge, as at its ends, where a shape model's factor 1 would jump (H100 decode
    attention at 392 sequences of 1,150 cached tokens, beyond the table's 256 at 1,023: 0.82 → 0.86)."""
    if len(cols) == 0 or len(cols) == len(coef):
        return coef
    at = np.stack(np.unravel_index(np.arange(len(coef)), [len(a) for a in nodes]), axis=1)
    hole = np.setdiff1d(np.arange(len(coef)), cols)
    near = np.abs(at[hole][:, None, :] - at[cols][None, :, :]).sum(axis=2).argmin(axis=1)
    out = coef.copy()
    out[hole] = coef[cols[near]]
    return out


def reached_nodes(nodes, coords) -> np.ndarray:
    """The flat indices (sorted) of the grid nodes the rows at ``coords`` weigh on."""
    idx, w = grid_weights(nodes, coords)
    return np.unique(idx[w > 0])


def reached_count(nodes, coords) -> int:
    """How many grid nodes the rows weigh on: an attention's M and N both follow the sequence length, so most of
    the M × N plane holds no row (with one head per KV head, M = 2·N on every context row)."""
    return int(len(reached_nodes(nodes, coords)))


def _size(nodes) -> int:
    return int(np.prod([len(a) for a in nodes]))


def score(hw, cal: dict, gs: list[Group]) -> list[Score]:
    """Per group, the law with ``cal`` against its held-out rows (at most ``SCORE_ROWS``, evenly spaced): median
    and 90th-percentile |error|."""
    out = []
    for g in gs:
        err = held_errors(hw, cal, timed_as(cal, g))
        if len(err):
            out.append(Score(g.table.gpu, g.name, int(len(err)), float(np.median(err)),
                             float(np.percentile(err, 90))))
    return out


def held_errors(hw, cal: dict, g: Group) -> np.ndarray:
    """|predicted / measured − 1| of the law with ``cal`` on ``g``'s held-out rows (``held_out``)."""
    held = held_out(g)
    if not len(held):
        return np.zeros(0)
    prob = Problem(hw, observations(g, held, hw), weighting="per_case")
    return np.abs(prob.times(cal) / prob.meas - 1.0)


def observations(g: Group, rows, hw=None) -> list[Observation]:
    """The rows as ironlaw ops with their measured seconds; with ``hw``, a generation row whose operands fit its
    last cache level marked so (``cache_resident``)."""
    build = gemm_op if g.op == "gemm" else mla_op if g.op.endswith("_mla") else \
        mla_bmm_op if g.op == "mla_bmm" else attention_op
    ops = [build(r, g) for r in rows.itertuples()]
    if k_only_pool(g):
        ops = [replace(op, bytes={**op.bytes, "kv_cache": op.bytes["kv_cache"] / 2.0}) for op in ops]
    if hw is not None and (g.op in RESIDENT_OPS or g.operands == "cache" or resident_context(g)):
        ops = cache_resident(ops, hw, g.op in CACHE_DECIDES_OPS)
        ops = warm_through(ops, hw) if g.op in WARM_THROUGH_OPS or warm_class(g) or resident_context(g) else ops
    elif hw is not None and g.operands == "copies":
        ops = as_collected(ops, rows, g, hw)
    return [Observation(op, float(r.latency_s), f"kernels:{g.name}") for op, r in zip(ops, rows.itertuples())]


def resident_context(g: Group) -> bool:
    """Whether ``g``'s rows are prefill rows of a GPU of ``RESIDENT_CONTEXT`` on a table of
    ``RESIDENT_CONTEXT_FRAMEWORKS`` (resident where all their bytes fit)."""
    return g.table.gpu in RESIDENT_CONTEXT.get(g.op, ()) and g.table.framework in RESIDENT_CONTEXT_FRAMEWORKS


def warm_class(g: Group) -> bool:
    """Whether ``g`` is a class of ``WARM_THROUGH_CLASSES`` (its rows' activations warm where everything fits)."""
    regime = (attention_kernel_parts(g.key[1]) or ("", ""))[1] if g.key[0] == "kernel" else ""
    return (getattr(g.table, "framework", None), g.op, regime) in WARM_THROUGH_CLASSES


def k_only_pool(g: Group) -> bool:
    """Whether ``g``'s decode rows read their values from the keys' lines: aiconfigurator's TensorRT-LLM collector
    allocated its attention cache as ``CacheType.SELFKONLY`` (a K-only pool, as TensorRT-LLM serves MLA's latent
    cache) until it moved to the 1.3.0rc20 line, which allocates ``CacheType.SELF`` as serving does
    (collector/trtllm/collect_attn.py, ai-dynamo/aiconfigurator dec5f4cd2, "Regular GQA/MHA has separate K and V
    tensors"). On such a pool the grouped-query decode class (2 to 32 query heads per KV head, ``K_ONLY_REGIMES``)
    moves half the cache's bytes: A100's TensorRT-LLM 1.0.0 table reads a 4 GiB bf16 cache (batch 16, 65,535 tokens,
    8 KV heads × 128) in 1.31 ms, 3.3 TB/s counted as keys and values on a 2.04 TB/s part (its rows over 16× the L2:
    3.0-3.4 TB/s), 1.63 TB/s counted as keys alone; its one-head-per-KV-head rows (MMHA) stream both, 1.7 TB/s at the
    same sizes (aiconfigurator 0.8.0's H100 1.0.0rc3 table alike: 5.1 TB/s and 2.9 TB/s on 3.35 TB/s). On SM 100
    (``K_ONLY_ALL_HEADS_GPUS``) the one-head class runs the same trtllm-gen decode and reads half too: B200 1.0.0rc6,
    batch 8, 16,383 tokens, 64 heads on 64 KV heads × 128, a 4 GiB bf16 cache in 0.363 ms, 11.8 TB/s counted as both
    on an 8 TB/s part (H100 1.0.0rc3, the same row: 1.53 ms, 2.8 TB/s on 3.35 TB/s). Its rows are
    the op as the collector ran it: its cache's bytes halved (``observations``); a served step reads both."""
    regime = (attention_kernel_parts(g.key[1]) or ("", ""))[1] if g.key[0] == "kernel" else None
    regimes = K_ONLY_ALL_HEADS_REGIMES if g.table.gpu in K_ONLY_ALL_HEADS_GPUS else K_ONLY_REGIMES
    return (g.op == K_ONLY_OP and regime in regimes and g.table.framework == K_ONLY_FRAMEWORK
            and release(g.table.version) < K_ONLY_BEFORE)


def cache_resident(ops: list, hw, by_cache: bool = False) -> list:
    """``ops`` with each whose bytes fit ``hw``'s last cache level (``cache.repeated_limit_bytes``; with
    ``by_cache``, its KV cache's: ``reread_bytes``) marked ``attrs['resident']`` (a stored GEMM class's too where it
    was fitted with "cache"): the tables' collector times one op over and over on the same KV cache, nothing else
    between the calls, so such a cache is read from the last cache level (L40S, 96 MiB L2: one layer's 64 MiB bf16
    cache read at 2.4 TB/s, the GDDR6 serves 864 GB/s), and the law prices a resident op's bytes at that tier, as
    the CUDA probe's own repeated rows (``build.observations``). Without a cache level, none is."""
    from dataclasses import replace
    from ...machine.cache import repeated_limit_bytes
    limit = repeated_limit_bytes(hw)
    if limit is None:
        return ops
    return [replace(op, attrs={**op.attrs, "resident": True}) if reread_bytes(op, by_cache) <= limit else op
            for op in ops]


def warm_through(ops: list, hw) -> list:
    """``ops`` with each whose bytes read, and its written bytes counted as ``COLLECTOR_OUTPUT_SHARE`` of the cache,
    fit ``hw``'s last cache level marked ``attrs['warm_activations']`` too: the collector calls the one op over and
    over on the same input and into the same output, so its activations are read from there whatever their size
    (``WARM_THROUGH_OPS``). Without a cache level, none is."""
    from ...machine.cache import repeated_limit_bytes
    limit = repeated_limit_bytes(hw)
    if limit is None:
        return ops
    return [replace(op, attrs={**op.attrs, "warm_activations": True}) if fits_through(op, limit) else op
            for op in ops]


def fits_through(op, cache_bytes: float) -> bool:
    """Whether ``op``'s bytes read plus its written bytes over ``COLLECTOR_OUTPUT_SHARE`` fit ``cache_bytes``."""
    written = float(np.max(op.bytes_written))
    return sum(float(np.max(b)) for b in op.bytes.values()) - written + written / COLLECTOR_OUTPUT_SHARE <= cache_bytes


def reread_bytes(op, by_cache: bool = True) -> float:
    """The bytes of ``op`` whose residency decides where the collector's repeated calls read it from: with
    ``by_cache`` (a decode attention table's rows, ``CACHE_DECIDES_OPS``) its KV cache where it reads one (its query,
    output and new token stream through beside it), else all its bytes. RTX PRO 6000 (128 MiB L2), SGLang 0.5.14, a
    bf16 cache of exactly 128 MiB (batch 2, 131,071 cached tokens, one KV head × 128): 50.5 µs, 2.7 TB/s on 1.6 TB/s
    GDDR7; its 951 bf16 rows of a cache that size (window rows aside) read it at a median 2.7 TB/s, its 858 rows of
    twice that size at 1.4 TB/s (docs/accuracy.md, "Decode rows whose KV cache is the L2's size")."""
    cache = op.bytes.get("kv_cache") if by_cache else None
    return float(np.sum(cache)) if cache is not None else float(sum(np.sum(b) for b in op.bytes.values()))


def as_collected(ops: list, rows, g: Group, hw) -> list:
    """``ops`` (a GEMM class's rows) with each whose weights stay in ``hw``'s last cache level between the collector's
    calls marked ``attrs['resident']``: the collector calls ``collector_copies`` distinct copies of the weights in
    turn, so a row's weights are read from the cache on every call but the first only where all the copies fit it
    together (``warm_weights``). Without a cache level, none is."""
    from ...machine.cache import repeated_limit_bytes
    limit = repeated_limit_bytes(hw)
    if limit is None:
        return ops
    return [replace(op, attrs={**op.attrs, "resident": True, **({"warm_activations": True}
                                                                 if warm_cycle(g, r, limit) else {})})
            if warm_weights(g, float(r.n) * float(r.k), limit) else op for op, r in zip(ops, rows.itertuples())]


def warm_cycle(g: Group, r, cache_bytes: float) -> bool:
    """Whether everything one timed iteration of the collector touches for row ``r`` fits ``cache_bytes``: its
    copies of the weights and its bf16 inputs (``COLLECTOR_INPUTS``: one shared by every copy, or one per copy), with
    the bf16 output each call rewrites in the same freed block counted as its share of the cache
    (``COLLECTOR_OUTPUT_SHARE``). Then the activations too are read from the cache on every call but the first,
    whatever their size: L40S (96 MiB L2), TensorRT-LLM 1.3.0rc20, gemm:4352,32,8192 (68 MiB of input, five copies of
    512 KiB of weights) 37 µs measured, where the GDDR6's 864 GB/s would take 83 µs for the input alone."""
    m, n, k = float(r.m), float(r.n), float(r.k)
    weight_bytes = n * k * COLLECTOR_WEIGHT_BYTES.get(g.key[1], 2.0)
    copies = COLLECTOR_COPIES[g.table.framework](g.table.version, g.key[1], weight_bytes, cache_bytes)
    inputs = COLLECTOR_INPUTS[g.table.framework](copies)
    read = copies * weight_bytes + inputs * m * k * 2.0
    return read + m * n * 2.0 / COLLECTOR_OUTPUT_SHARE <= cache_bytes


def warm_weights(g: Group, weight_elements: float, cache_bytes: float) -> bool:
    """Whether the collector's copies of one row's weights (``weight_elements`` of ``g``'s dtype) fit
    ``cache_bytes`` together: L40S (96 MiB L2), bf16, TensorRT-LLM 1.3: 8192×6144 (96 MiB, one copy) yes, 4096×12288
    at 48 MiB (two copies, 96 MiB) yes, 6144×6144 (72 MiB, two copies) no; vLLM or SGLang (six copies) from 16 MiB on
    no. aiconfigurator-core 0.12.0's L40S bf16 tables at M ≤ 16: the weights of the rows it marks stream at a median
    1.3-1.6 TB/s (TensorRT-LLM), the rest at 0.67-0.70 TB/s (the GDDR6 serves 864 GB/s; docs/accuracy.md)."""
    weight_bytes = weight_elements * COLLECTOR_WEIGHT_BYTES.get(g.key[1], 2.0)
    copies = COLLECTOR_COPIES[g.table.framework](g.table.version, g.key[1], weight_bytes, cache_bytes)
    return copies * weight_bytes <= cache_bytes


def origin_of(root) -> tuple[str, str]:
    """(publisher and version, license) of the tables under ``root``: aiconfigurator-core's where ``root`` lies in
    its package (the version from the wheel's dist-info beside it), else the user's own, license unstated."""
    from pathlib import Path
    p = Path(root).resolve()
    for parent in (p, *p.parents):
        if parent.name == "aiconfigurator_core":
            info = sorted(parent.parent.glob("aiconfigurator_core-*.dist-info"))
            version = info[-1].name[len("aiconfigurator_core-"):-len(".dist-info")] if info else "version unknown"
            return f"aiconfigurator-core {version} (NVIDIA)", LICENSE
    return f"kernel tables in {root}", "unstated"


def source(gs: list[Group], origin: str = PROVENANCE) -> str:
    files = sorted({f"{g.table.path} ({g.table.framework} {g.table.version})".replace(" ( )", "") for g in gs})
    return f"derived: {KERNEL_SOURCE} ({origin}: {'; '.join(files)})"


KERNEL_SOURCE = ("GEMM η(M, N, K) per dtype and attention per phase and KV dtype fitted to the even rows of measured "
                 "kernel tables by `ironlaw calibrate --kernels`")


def merged(base: dict | None, new: dict) -> dict:
    """``new`` over a device's existing calibration ``base``: its shape tables, kernel classes and
    provenance replace base's of the same name; fitted, held_out and source add up."""
    if not base:
        return new
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    for key in ("matmul", "kernel", "provenance"):
        if new.get(key):
            out[key] = {**out.get(key, {}), **new[key]}
    for key in ("fitted", "held_out"):
        out[key] = list(dict.fromkeys(list(base.get(key, [])) + list(new.get(key, []))))
    out["source"] = merged_source(base["source"], new["source"])
    return check(out, "calibration")


def merged_source(base: str, new: str) -> str:
    """One ``derived:`` source for a calibration fitted in parts: ``base``'s clauses, then ``new``'s; a clause of
    this fitter (``source``) once per origin, naming every table file either fitted, any other clause once."""
    head = "derived: "
    clauses, files = [], {}
    for text in (base, new):
        for c in _top_level(text[len(head):] if text.startswith(head) else text, "; "):
            if c.startswith(KERNEL_SOURCE + " (") and c.endswith(")"):
                origin, _, listed = c[len(KERNEL_SOURCE) + 2:-1].partition(": ")
                if origin not in files:
                    files[origin] = {}
                    clauses.append(("kernel", origin))
                files[origin].update(dict.fromkeys(_top_level(listed, "; ")))
            elif ("text", c) not in clauses:
                clauses.append(("text", c))
    return head + "; ".join(f"{KERNEL_SOURCE} ({c}: {'; '.join(sorted(files[c]))})" if kind == "kernel" else c
                            for kind, c in clauses)


def _top_level(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside parentheses."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i = i + len(sep)
            continue
        i += 1
    return parts + [text[start:]]


# ---------------------------------------------------------------- rows as ironlaw ops

def gemm_op(r, g: Group):
    from ...models.workloads.micro import gemm
    from ...models.workloads.registry import Request
    spec = f"{int(r.m)},{int(r.n)},{int(r.k)}"
    return gemm(spec, Request(f"gemm:{spec}", phase="infer", dtype=g.key[1], device="cuda")).ops[0]


@dataclass(frozen=True)
class _Heads:
    """The part of a model's architecture one attention op reads (``models.workloads.attention.attention_core``)."""
    heads: int
    kv_heads: int
    local: str = "window"
    sinks: bool = False
    encoder: bool = False


@dataclass(frozen=True)
class _Shape:
    b: float
    s: float
    phase: str

    @property
    def tokens(self) -> float:
        return self.b if self.phase == "decode" else self.b * self.s


def attention_op(r, g: Group):
    """The analytic transformer's attention op of one row (window 0: global), its KV cache in the row's dtype."""
    from ...models.serving.online import with_kv_dtype
    from ...models.workloads.attention import attention_core
    phase = "prefill" if g.op == "context_attention" else "decode"
    dt, kv = _row_dtype(r.attn_dtype, g), _row_dtype(r.kv_cache_dtype, g)
    a = _Heads(int(r.num_heads), int(r.num_key_value_heads))
    sh = _Shape(float(r.batch_size), float(r.step if phase == "decode" else r.isl), phase)
    d, kvd, qd = int(r.head_dim), int(r.num_key_value_heads) * int(r.head_dim), int(r.num_heads) * int(r.head_dim)
    geo = {"qk": d, "pv": d, "q": qd, "kv_new": 2 * kvd, "o": qd, "cache": 2 * kvd, "shape": f"{a.heads}/{a.kv_heads}x{d}"}
    op = attention_core(a, sh, dt, int(r.window_size) or None, 1, 1, geo)
    op = with_kv_dtype(Graph("attention", phase, dt, [op]), kv).ops[0]
    if getattr(r, "as_class", False) is True:      # another class's row this class's kernel runs (``with_dispatched``)
        op.attrs = {**op.attrs, "kernel": g.key[1]}
    return op


def _mla_groups(t: KernelTable, half: dict, note) -> list[Group]:
    """An MLA table's kernel classes: one per math and KV dtype (regime '_mla'); ``half`` as ``groups``. On a GPU
    of ``XQA_MLA_GPUS`` the FP8-cache generation rows at ``XQA_MLA_HEADS`` heads are a class of their own (regime
    '_mla_xqa'), TensorRT-LLM's XQA MLA kernel."""
    out = []
    for (a, kv), rows in t.rows.groupby(["mla_dtype", "kv_cache_dtype"], sort=True):
        dt, kvd = (half.get(x) or _attention_dtype(x, t.path) for x in (a, kv))
        name = f"{t.op.replace('_', ' ')} {dt}, KV {kvd}"
        xqa = rows.num_heads == XQA_MLA_HEADS if xqa_mla(t, kvd) else np.zeros(len(rows), bool)
        out.append(Group(name, ("kernel", attention_kernel(PHASES[t.op], dt, kvd, "_mla")), t.op, t,
                         sorted_rows(rows[~xqa], t.op), note((a, kv)), dtype=dt))
        if xqa.any():               # its math in FP8 (``supportConfigMLA``: an E4M3 query), whatever the model's
            out.append(Group(f"{name}, {REGIMES['_mla_xqa']}", ("kernel", attention_kernel(PHASES[t.op], "fp8", kvd,
                                                                                            "_mla_xqa")),
                             t.op, t, sorted_rows(rows[xqa], t.op),
                             "; ".join(x for x in (note((a, kv)), f"{a} model, the kernel's math in fp8") if x),
                             dtype="fp8"))
    return out


def xqa_mla(t: KernelTable, kv_dtype: str) -> bool:
    """Whether ``t``'s rows of a ``kv_dtype`` cache run TensorRT-LLM's XQA MLA kernel at ``XQA_MLA_HEADS`` heads:
    a TensorRT-LLM generation MLA table of a GPU of ``XQA_MLA_GPUS``, on an FP8 cache."""
    return t.op == "generation_mla" and t.framework == "trtllm" and t.gpu in XQA_MLA_GPUS and kv_dtype == "fp8"


def linked_variants(cal: dict, gs: list[Group]) -> None:
    """Each XQA MLA class fitted in ``cal`` named, with its M (``XQA_MLA_HEADS``), as the ``variant`` of the class
    its rows were taken from, where that class was fitted too (``efficiency.with_variants``)."""
    kern, by_name = cal.get("kernel", {}), {g.name: g for g in gs}
    for g in gs:
        parent = by_name.get(g.name.rsplit(f", {REGIMES['_mla_xqa']}", 1)[0]) if g.key[1].endswith("_mla_xqa") else None
        if parent is not None and parent.key[1] in kern and g.key[1] in kern:
            kern[parent.key[1]] = {**kern[parent.key[1]], "variant": g.key[1], "variant_m": XQA_MLA_HEADS,
                                   "variant_dtype": g.dtype}


def dispatch_rule(g: Group, hw) -> dict | None:
    """The ``variant`` fields (``gemmshape.VARIANT_RULES``) of ``g``'s class where TensorRT-LLM's decode dispatch
    as ``g``'s table times it sends some of its rows to another class's kernel (``DISPATCH``: the 1.0 line's
    generation attention on H100, H200, B200 and GB200); None for any other class."""
    rule = DISPATCH.get(g.table.gpu)
    if (rule is None or g.op != "generation_attention" or g.key[0] != "kernel" or g.table.framework != "trtllm"
            or release(g.table.version) >= DISPATCH_BEFORE):
        return None
    regime, variant, field, value = rule
    if (attention_kernel_parts(g.key[1]) or ("", None))[1] != regime:
        return None
    if value is None:
        value = float(getattr(hw, "sms", 0) or 0) / XQA_MIN_BLOCK_FACTOR
        if value <= 0:
            return None
    return {"variant": g.key[1] + variant, "variant_dtype": g.dtype or g.key[1].split("_")[2], field: value}


def dispatched(g: Group, rows, rule: dict) -> np.ndarray:
    """Which of ``g``'s ``rows`` run the kernel of ``rule``'s ``variant`` (as ``efficiency.runs_variant`` decides
    on their ops)."""
    from ...core.gemmshape import grid_units, xqa_blocks
    out = []
    for r in rows.itertuples():
        op = attention_op(r, g)
        m, n, k = (float(np.max(x)) for x in op.attrs["mnk"])
        if "variant_m_above" in rule:
            out.append(m > rule["variant_m_above"])
        else:
            units = grid_units(float(np.max(op.flops)), m, n, k)
            out.append(float(xqa_blocks(units, n)) < rule["variant_blocks_below"])
    return np.array(out, bool)


def with_dispatched(g: Group, rows, hw):
    """``rows`` (``g``'s fit rows) with the fit rows of the class of ``g``'s table whose dispatch sends them by their
    M to ``g``'s kernel (``variant_m_above``: B200's and GB200's 24 and 32 heads per KV head, on the over-32 class),
    marked ``as_class`` (``attention_op`` builds them as ``g``'s ops): that kernel's rows, fitted with its own. The
    other class's split is its own, so none of its held-out rows is fitted."""
    import pandas as pd
    rule = DISPATCH.get(g.table.gpu)
    if rule is None or rule[2] != "variant_m_above" or g.op != "generation_attention" or g.key[0] != "kernel" \
            or not g.key[1].endswith(rule[1]) or g.table.framework != "trtllm" \
            or release(g.table.version) >= DISPATCH_BEFORE:
        return rows
    parent = g.key[1][: -len(rule[1])]
    for half in (None, "bf16"):
        for p in groups([g.table], float16_as=half):
            own = dispatch_rule(p, hw) if p.key == ("kernel", parent) else None
            if own and own["variant"] == g.key[1]:
                fit = split(p.rows, p.op)[0]
                moved = fit[dispatched(p, fit, own)].assign(as_class=True)
                return sorted_rows(pd.concat([rows.assign(as_class=False), moved]), g.op)
    return rows


def linked_dispatch(hw, cal: dict, gs: list[Group]) -> None:
    """Each class fitted in ``cal`` whose table's dispatch sends some rows to another class's kernel
    (``dispatch_rule``) named with that class as its ``variant``, where that class was fitted too
    (``efficiency.with_variants``)."""
    kern = cal.get("kernel", {})
    for g in gs:
        rule = dispatch_rule(g, hw)
        if rule and g.key[1] in kern and rule["variant"] in kern:
            kern[g.key[1]] = {**kern[g.key[1]], **rule}


def mla_op(r, g: Group):
    """The analytic transformer's MLA attention op of one row (DeepSeek-V3's dims, ``MLA_DIMS``; ``num_heads`` the
    heads on one GPU), its cache in the row's KV dtype."""
    from ...models.serving.online import with_kv_dtype
    from ...models.workloads.attention import attention_core, mla_geometry
    phase = PHASES[g.op]
    xqa = g.key[1].endswith("_mla_xqa")          # the XQA MLA kernel's rows: its math in FP8 (``_mla_groups``)
    dt, kv = "fp8" if xqa else _row_dtype(r.mla_dtype, g), _row_dtype(r.kv_cache_dtype, g)
    a = _Heads(int(r.num_heads), int(r.num_heads))
    sh = _Shape(float(r.batch_size), float(r.step if phase == "decode" else r.isl), phase)
    op = with_kv_dtype(Graph("attention", phase, dt, [attention_core(a, sh, dt, None, 1, 1,
                                                                  mla_geometry(MLA_DIMS, a.heads, phase))]), kv).ops[0]
    if xqa:                                      # the variant class's rows, named as ``efficiency.with_variants`` does
        op.attrs = {**op.attrs, "kernel": g.key[1]}
    return op


def derived_generation(hw, cal: dict) -> None:
    """Generation kernels run their math in bf16 on any cache (the tables time them so), and so do MLA's context
    kernels (its tables time bf16 math only): an FP8 model's decode attention, or MLA prefill (math dtype fp8 in
    ironlaw), gets the bf16 math's table, eta_max rescaled from the peak that class computes at (bf16's, or its
    ``math``'s: ``kernel_math``, ``math_of``) to the FP8 peak, its grid by name (``grid_of``)."""
    kern = cal.get("kernel", {})
    pairs = [("decode", kv, r) for kv in ("bf16", "fp8") for r in ("",) + tuple(REGIMES)] + \
        [("prefill", kv, "_mla") for kv in ("bf16", "fp8")]
    for phase, kv, regime in pairs:
        src, dst = (attention_kernel(phase, m, kv, regime) for m in ("bf16", "fp8"))
        if src in kern and dst not in kern and "fp8" in hw.peak_flops and "bf16" in hw.peak_flops:
            own = {k: v for k, v in kern[src].items() if k not in ("grid_nodes", "grid_log", "math")}
            ratio = hw.peak_flops[kern[src].get("math", "bf16")] / hw.peak_flops["fp8"]
            kern[dst] = {**own, "eta_max": float(f"{kern[src]['eta_max'] * ratio:.4g}")}
            if "grid_log" in kern[src]:
                kern[dst]["grid_of"] = src


def _row_dtype(x: str, g: Group) -> str:
    """A row's attention dtype as ironlaw runs it (float16 as bf16 where the group stands for bf16)."""
    return "bf16" if x == "float16" and g.timed.startswith("float16 rows, for bf16") else ATTENTION_DTYPES[x]


def _attention_dtype(x: str, where: str) -> str:
    if x not in ATTENTION_DTYPES:
        raise IronlawError(f"{where}: unknown attention dtype '{x}' (known: {', '.join(ATTENTION_DTYPES)})")
    return ATTENTION_DTYPES[x]


def sorted_rows(rows, op: str):
    """A table's rows in shape order (the order the even/odd split follows)."""
    return rows.sort_values(list(SHAPE_COLUMNS[op]), kind="stable").reset_index(drop=True)


def held_out(g: Group):
    """The rows ``score`` times for ``g``: at most ``SCORE_ROWS`` of its held-out side of ``split``, evenly spaced."""
    return _spaced(split(g.rows, g.op)[1], SCORE_ROWS)


def shape_rows(rows):
    """The rows of a group's fit half its shape model is fitted on: at most ``FIT_ROWS``, evenly spaced."""
    return _spaced(rows, FIT_ROWS)


def _spaced(rows, n: int):
    """At most ``n`` of ``rows``, evenly spaced."""
    if len(rows) <= n:
        return rows
    return rows.iloc[np.linspace(0, len(rows) - 1, n).round().astype(int)]


# ---------------------------------------------------------------- MLA's per-head decode products
# the products a mla_bmm table's op_name times ([t, k] x [k, n] per head, DeepSeek-V3's dims, ``MLA_DIMS``): the
# query's absorption into the latent (``attention.q_absorb``) and the output's up-projection (``attention.v_up``)
MLA_BMM_PRODUCTS = {"mla_gen_pre": ("attention.q_absorb", MLA_DIMS.nope, MLA_DIMS.kv_lora),
                    "mla_gen_post": ("attention.v_up", MLA_DIMS.kv_lora, MLA_DIMS.v_dim)}
MLA_BMM_DTYPES = {"bfloat16": "bf16", "fp8": "fp8"}
# kernels whose rows stand for ironlaw's fp8 (per-tensor scaled) though they run otherwise (their ``kernel_source``
# holds the text), said so in the provenance: aiconfigurator-core 0.12.0's fp8 rows time TensorRT-LLM's
# trtllm_fp8_block_scaling_bmm_out on H100, H200, L40S and RTX PRO 6000 (DeepSeek-V3's FP8 checkpoints scale in
# 128-element blocks) and trtllm_bmm_out_dequant_bf16 on B200, B300, GB200 and GB300 (the weights dequantized, the
# product in BF16)
MLA_BMM_AS_FP8 = {"block_scaling": "block-scaled FP8", "dequant_bf16": "FP8 weights dequantized, the product in BF16"}


def mla_bmm_groups(t: KernelTable, half: dict | None = None) -> list[Group]:
    """A mla_bmm table's kernel classes: one per dtype (``gemmshape.mla_bmm_kernel``), both products in it (the
    grid's K axis, 128 or 512, tells them apart); ``half`` ({'float16': 'bf16'}, ``groups``' ``float16_as``) fits
    the 1.0 line's float16 rows as the bf16 class, said so; any other dtype the catalog's ops do not run is an
    error."""
    from ...core.gemmshape import mla_bmm_kernel
    unknown_names = sorted(set(t.rows.op_name) - set(MLA_BMM_PRODUCTS))
    if unknown_names:
        raise IronlawError(f"{t.path}: unknown op_name '{unknown_names[0]}' for a mla_bmm table (known: "
                           f"{', '.join(MLA_BMM_PRODUCTS)})")
    out = []
    for src, rows in t.rows.groupby("bmm_dtype", sort=True):
        dt = (half or {}).get(src) or MLA_BMM_DTYPES.get(src)
        if dt is None:
            raise IronlawError(f"{t.path}: unknown bmm_dtype '{src}' (known: {', '.join(MLA_BMM_DTYPES)})")
        kernels = sorted(map(str, set(rows.kernel_source))) if "kernel_source" in rows.columns else []
        runs = [f"{k}: {what}" for k in kernels for mark, what in MLA_BMM_AS_FP8.items() if mark in k]
        timed = f"{src} rows on {'; '.join(runs)}, for {dt}" if runs else \
            f"{src} rows, for {dt}" if src not in MLA_BMM_DTYPES else ""
        out.append(Group(f"mla bmm {dt}", ("kernel", mla_bmm_kernel(dt)), t.op, t, sorted_rows(rows, t.op), timed,
                         dtype=dt))
    return out


def mla_bmm_op(r, g: Group):
    """The analytic transformer's per-head product of one row (``attention.per_head``): ``num_heads`` heads over
    ``num_tokens`` tokens, one layer, named its kernel class."""
    from ...models.workloads.attention import per_head
    name, k, n = MLA_BMM_PRODUCTS[r.op_name]
    return per_head(name, _Layer(int(r.num_heads)), float(r.num_tokens), k, n, g.dtype)


@dataclass(frozen=True)
class _Layer:
    """The part of a model's architecture a per-head product reads: its heads, one layer."""
    heads: int
    layers: int = 1
