"""The class-keyed rules of the kernel fitter, in one place: which GPU × framework × op × regime or kernel class
takes which term, launch, grid or treatment, each table with the measurements that chose it, and the small
predicates that read them by a group alone. A rule keyed to classes or GPUs (a collection of keys, or a mapping of
key -> the GPUs it holds on) is asked through ``holds(rule, key[, gpu])``, here and in the modules that apply it, a
class's regime read by ``regime_of``; the plain lists of ops, frameworks or kernels a rule is limited to are read
with ``in``, and a rule that maps a key to what the class takes (its launches, grid steps, tiles) with ``.get``.
"""
from __future__ import annotations

from ....core.gemmshape import XQA_MLA_CTAS, attention_kernel_parts
from ....core.splitkv import MMHA_OCCUPANCY, MMHA_THREADS
from .vocabulary import Group, MLA_DIMS, release

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
# of those, op -> the GPUs on which ``warm_through`` counts a row's written bytes once, as its bytes read: the collector
# writes every call into one output it allocated beforehand (aiconfigurator's collector/*/collect_mla_bmm.py,
# ``run_mla_gen_pre`` and ``run_mla_gen_post``: ``torch.bmm(..., out=out)``, TensorRT-LLM's ``bmm_out`` into a tensor
# built once), where ``collector.COLLECTOR_OUTPUT_SHARE`` stands for a GEMM call's new output. On L40S (96 MiB L2,
# GDDR6 864 GB/s) the rows run at the L2's rates up to about their bytes' size: TensorRT-LLM 1.3.0rc20's bf16 table,
# ``mla_gen_pre`` rows of 0.84-1.0 of the L2 (67-79% of it output) at 1.24-1.35 TB/s, as those of 0.64-0.71
# (1.28-1.59: the L2's write rate), which the output's share had priced from the GDDR6; from 1.26 of the L2 on, every
# row at 0.54-0.63 TB/s. RTX PRO 6000 (128 MiB L2, GDDR7 1.79 TB/s) alike: ``mla_gen_pre`` at 0.95-1.0 of it
# 1.59-1.77 TB/s, at 0.63-0.69 1.64-1.80, every row from 1.26 on 1.37-1.42. Not on A100, H100 and H200 (H100, 50 MiB:
# ``mla_gen_post`` rows at 3.0-4.0 TB/s up to 0.72 of the L2, the output-heavy ``mla_gen_pre`` ones at 2.2-2.5 from
# 0.61, every row at 1.9-3.0 from 0.76 on the 3.35 TB/s HBM3: the output's share held out better there)
# (docs/accuracy.md, "MLA's per-head BMMs on the GDDR GPUs: one output, written in place")
WRITTEN_ONCE_OPS = {"mla_bmm": ("l40s", "rtx-pro-6000")}
# op -> the GPUs whose catalog file states no cache level but whose tables' rows replay out of one: the MLA BMM
# collectors call one product over and over on the same input, weights and output (``WARM_THROUGH_OPS``), and on B200
# the rows of 8-64 MiB of bf16 operands ran 10.5% faster than HBM prices them (TensorRT-LLM 1.3.0rc20, held out, 20 of
# the class's 23 rows over 20% off); on B300 14.0% (vLLM 0.24.0, 35 of 110 rows over 20% off); GB200's and GB300's
# tables come from the same collectors and replay alike (aiconfigurator's
# collector/{trtllm,vllm,sglang}/collect_mla_bmm.py). Their fit and their held-out score read those rows through
# ``REPLAY_L2``'s level (``ops.replayed_hw``); nothing on the prediction path does, and the catalog file keeps no cache
# tier (an L2 tier there moved other classes and the serving cells out: docs/accuracy.md, "Since tried: B200's and
# GB200's L2")
REPLAY_CACHE_OPS = {"mla_bmm": ("b200", "gb200", "b300", "gb300")}
# GPU -> (capacity bytes, rate B/s, latency s) of that level, each with its source in ``REPLAY_L2_SOURCE``. B200:
# NVIDIA's Blackwell Tuning Guide (CUDA 13.0, "Increased L2 Capacity") gives the L2 as 126 MB, a device query 126.50 MB
# (pytorch/ao pull request #4002) in MiB, as its 178.35 GB of global memory are GiB: 132,644,864 B, B300's byte count;
# about 150 ns within a die's half (chipsandcheese, "Nvidia's B200: Keeping the CUDA Juggernaut Rolling"). No measured
# B200 rate was found (docs/accuracy.md, "An L2 rate for B200 and B300, searched for"): the rate is fitted, the one of
# an 8.5-30 TB/s scan at which B200's five MLA BMM classes (TensorRT-LLM 1.3.0rc20, vLLM 0.24.0, SGLang 0.5.14;
# aiconfigurator-core 0.12.0), each refitted under it, fit their fit rows best (benchmarks/replay_rate.py: summed mean
# squared log error 0.0197 at 17.5 TB/s, 0.0198 at 15 and 20, 0.0298 at 8.5); held out, TensorRT-LLM's bf16 class is
# within the goal at every rate of the scan (docs/accuracy.md, "B200's MLA BMMs read through the L2 they replay out
# of"). B300: measured on an NVIDIA B300 SXM6 AC (ademeure/QuickRunCUDA, b300_clean/B300_CANONICAL_REFERENCE.md §11, "L2
# cache"): ``cudaDeviceProp.l2CacheSize`` 132,644,864 B (126.5 MiB), an L1-bypassing (``.cg``) read of 8-128 MB working
# sets about 17 TB/s (13.3 TB/s the L2 slices' own counter, 23.85 with L1 reuse), a hit 300-310 cycles, 152-157 ns; its
# five classes' own scan (``replay_rate.py --gpu b300_sxm``) is flat across those figures (0.0216 at 17 TB/s, 0.0215 at
# 15, 0.0217 at 13.3, 0.0218 at 23.85, 0.0340 at 8.5). GB300: the same level, its GPU the same Blackwell Ultra part as
# B300's (NVIDIA's GB300 NVL72 and HGX B300 spec tables); GB200: B200's, its GPU the same Blackwell part
REPLAY_L2 = {"b200": (132_644_864.0, 17.5e12, 150e-9), "gb200": (132_644_864.0, 17.5e12, 150e-9),
             "b300": (132_644_864.0, 17e12, 155e-9), "gb300": (132_644_864.0, 17e12, 155e-9)}
REPLAY_L2_SOURCE = {
    "b200": "size from NVIDIA's tuning guide, rate fitted on the GPU's MLA BMM tables",
    "gb200": "B200's: size from NVIDIA's tuning guide, rate fitted on B200's MLA BMM tables, GB200's GPU being the "
             "same Blackwell part",
    "b300": "size, rate (L1-bypassing reads of 8-128 MB) and latency measured on a B300 SXM6 AC "
            "(ademeure/QuickRunCUDA, b300_clean/B300_CANONICAL_REFERENCE.md §11)",
    "gb300": "B300's: size, rate (L1-bypassing reads of 8-128 MB) and latency measured on a B300 SXM6 AC "
             "(ademeure/QuickRunCUDA, b300_clean/B300_CANONICAL_REFERENCE.md §11), GB300's GPU being the same "
             "Blackwell Ultra part (NVIDIA's GB300 NVL72 and HGX B300 spec tables)"}
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
# catalog GPUs whose TensorRT-LLM decodes DeepSeek's MLA at XQA_MLA_HEADS heads per GPU on an FP8 cache with its XQA
# MLA kernel (``decoderXQAImplJIT/kernelUtils.cpp``, ``supportConfigMLA``: SM 12.0 only; ``xqaParams.h``, ``isMLA``:
# 128 query heads on one KV head): the RTX PRO 6000 Blackwell Server Edition (GB202, compute capability 12.0;
# aiconfigurator-core 0.12.0's rtx_pro_6000_server.yaml, sm_version 120). Those rows are a class of their own
# (``_mla_groups``, regime '_mla_xqa'), which the FP8-cache class names as its ``variant`` at M = XQA_MLA_HEADS
# (``efficiency.with_variants``); the other GPUs' tables run those rows 1.0-1.7x as long as 64 heads, RTX PRO 6000's
# 0.3x (batch 1, 16,383 cached tokens: 0.29 ms against 0.92 ms)
XQA_MLA_GPUS = ("rtx-pro-6000",)
# the frameworks whose MLA module tables (``mla_context_module``, ``mla_generation_module``: the whole attention module
# timed as one CUDA-graph replay) are fitted as module classes (``rows.module_groups``): vLLM's, priced in place of
# the op-by-op module under ``serve --engine vllm`` (``serving.step.mla_module``), and SGLang's where its tables hold
# them (aiconfigurator-core 0.12.0 ships none). TensorRT-LLM's engine prices its module op by op on its own MLA,
# BMM and GEMM classes (fitted on its H100 cells), its module tables left out
MODULE_FRAMEWORKS = ("vllm", "sglang")
# backends a module table times beside the default at the same shapes, left out there: vLLM's TRT-LLM ragged
# DeepSeek prefill is opt-in (vllm/v1/attention/backends/mla/common.py, ``use_trtllm_ragged_deepseek_prefill``:
# ``attention_config.use_trtllm_ragged_deepseek_prefill`` on SM100 only); aiconfigurator-core 0.12.0's B200, B300,
# GB200 and GB300 context module tables time its 904 fp8-cache shapes beside FLASH_ATTN's, 1.09x as long at the median
MODULE_OPT_IN = ("TRTLLM_RAGGED",)
# module tables (per framework, op) whose classes are fitted both whole and less their projections, the projections
# priced on the framework's own GEMM classes (``forms.module_form``, ``ops.gemm_offsets``), the form that holds out
# better kept: one η over the projections' FP8 / FP4 FLOPs and the prefill's bf16 attention FLOPs cannot follow both
# (aiconfigurator-core 0.12.0's vLLM 0.24.0 H200 context module table, 16 heads, batch 1: the fp8 and bf16 projection
# classes time 32,768-token prompts alike, 10.13 and 10.84 ms, which the whole fp8 class priced 92% too slow;
# docs/accuracy.md, "vLLM's MLA attention as one module")
MODULE_APART_OPS = (("vllm", "mla_context_module"),)
# generation MLA's walk in waves (``gemmshape`` key_ctas, ``efficiency.walk_s``), fitted beside the plain walk and the
# smaller loss on the fitted rows kept (``fit_class``; on a device that states its SMs, TensorRT-LLM's tables), its
# per-CTA seconds ``cta_s`` from each of CTA_S_STARTS: the XQA MLA class's XQA_MLA_CTAS CTAs per sequence; the other
# classes' one CTA per sequence (the kernel that walks each sequence's latent cache in one CTA: aiconfigurator-core
# 0.12.0's RTX PRO 6000 table, FP8 cache, 16,383 cached tokens, 0.92 ms from 1 to 64 heads at batch 1). key_ctas counts
# CTAs per grid unit: a decode op's units per sequence are (qk + pv) / qk of DeepSeek-V3's absorbed latent, 1088 / 576
MLA_UNITS_PER_SEQUENCE = (2 * MLA_DIMS.kv_lora + MLA_DIMS.rope) / (MLA_DIMS.kv_lora + MLA_DIMS.rope)
WALK_WAVES = {("generation_mla", "_mla_xqa"): ({"key_ctas": round(XQA_MLA_CTAS / MLA_UNITS_PER_SEQUENCE, 4)},),
              ("generation_mla", "_mla"): ({"key_ctas": round(1.0 / MLA_UNITS_PER_SEQUENCE, 4)},)}
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
# and per (framework, kernel class) the GPUs of TensorRT-LLM context classes alike: L40S's FP8 prefill with one head per
# KV head (``torch_flow`` rows, TensorRT-LLM 1.3.0rc20), unbounded, took 12.3 µs against its fastest call's 8.9 µs, its
# rows up to 64 sequences of 16-32 tokens held out 42-48% too slow (docs/accuracy.md, "TensorRT-LLM's L40S FP8 prefill
# with one head per KV head: the fixed latency under the fastest call")
FLOOR_CONTEXT_CLASSES = {("trtllm", "attention_context_fp8_kv_fp8_mha"): ("l40s",)}
# ops whose classes fit ``key_s``, the seconds per cached key of a kernel that walks each sequence's cache in one CTA
# (``efficiency.key_walk_s``), from each of ``KEY_S_STARTS``: generation MLA, which on A100, L40S and RTX PRO 6000
# takes the same time at batch 1 from 1 to 128 heads, growing as the cached tokens (held out, docs/accuracy.md,
# "Generation MLA's walk over the cache"); where the kernel splits the cache it fits a fraction of a ns
KEY_WALK_OPS = ("generation_mla",)
# (framework, kernel class) → GPUs of the decode classes that fit ``key_s`` too: vLLM 0.24.0's bf16-cache MMHA-rule
# window decode on RTX PRO 6000, FlashAttention 2's one CTA per sequence and query head walking its window's key blocks
# one after another (``flash_fwd_kernel.h``, ``compute_attn_1rowblock_splitkv``). aiconfigurator-core 0.12.0's table,
# one head on one KV head × 256, window 1,024, batch 1 to 64 (one CTA each, one wave): 8.8 µs up to 63 cached tokens,
# 10.9, 17.0, 25.2, 45.6 µs at 127, 255, 511, 1,023 and on, 33-36 ns per key past the first 64 (docs/accuracy.md,
# "vLLM's RTX PRO 6000 bf16 window decode: FlashAttention 2's walk over the window")
KEY_WALK_CLASSES = {("vllm", "attention_generation_bf16_kv_bf16_window_mmha"): ("rtx-pro-6000",)}
# classes whose fit adds ``unit_s``, the seconds a decode launch pays per sequence and KV head whatever its keys
# (``efficiency.unit_launch_s``), from ``UNIT_S_START``: vLLM's and SGLang's generation attention. Their tables at one
# cached token grow with the sequences × KV heads, 11-37 ns each at batch 2048 (H100 FA3, B200 TRT-LLM and FlashInfer
# decode, L40S and RTX PRO 6000 FlashAttention 2, FlashInfer and Triton), which neither the fixed latency nor the
# bytes price; held out, docs/accuracy.md ("Decode launches: a cost per sequence and KV head"). TensorRT-LLM's
# classes keep their fit (another owner's, not refitted here)
UNIT_OPS = ("generation_attention",)
UNIT_FRAMEWORKS = ("vllm", "sglang")
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
# (framework, kernel class) → GPUs of the classes that try the same, and the launch per kernel their rows run: vLLM
# 0.24.0's FP8-cache window decode on L40S (and its MMHA-rule class on RTX PRO 6000), FlashInfer's tensor-core decode
# (its prefill kernel, one CTA per sequence, KV head and tile of packed query rows, ``BatchPrefillWithPagedKVCacheKernel``)
# in waves over the SMs. aiconfigurator-core 0.12.0's L40S table, one head on one KV head × 64, one cached token: 9.0 µs
# up to batch 64, 17.1 µs at 512 (4 waves of 142), 41.1 µs at 2,048 (15): 2.2 µs per wave (docs/accuracy.md, "vLLM's
# GDDR FP8-cache window decode: a latency per head dim and head group")
UNIT_WAVE_GPU_CLASSES = {("vllm", "attention_generation_bf16_kv_fp8_window"): ("l40s",),
                         ("vllm", "attention_generation_bf16_kv_fp8_window_mmha"): ("l40s", "rtx-pro-6000")}
UNIT_WAVE_GPU_KERNELS = {"vllm_flashinfer_fidecode": "waves"}
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
# (framework, dtype) -> the GPUs (catalog names) on which that framework's GEMM kernel switches its CUTLASS tile
# configuration at each power of two of M, so that its class's grid takes ``M_SWITCH_STEP`` in M, a node on each side
# of every switch (``gemm_switch_steps``), where ``GRID_STEPS``' 4× put nodes at 16, 64 and 256 only. SM 8.9 (L40S):
# vLLM's FP8 GEMM (csrc/quantization/cutlass_w8a8/scaled_mm_c2x_sm89_fp8_dispatch.cuh, ``cutlass_gemm_sm89_fp8_
# dispatch``: one configuration for M up to 32, 64, 128, 256 and above) and SGLang's (sgl-kernel/csrc/gemm/
# fp8_gemm_kernel.cu, ``sm89_fp8_dispatch_shape``: up to 64, 128, 256, 512 and above), each also by N
# (docs/accuracy.md, "GEMM grids at the FP8 kernels' M switches")
M_SWITCH_GEMMS = {("vllm", "fp8"): ("l40s",), ("sglang", "fp8"): ("l40s",)}
# (framework, dtype) -> the GPUs on which that framework's FP8 GEMM also switches its CUTLASS tile at powers of two of
# N, so that its class's grid takes ``N_SWITCH_STEP`` in N, a node on each side of every switch, where ``GRID_STEPS``'
# 4× put nodes at 2,048, 8,192 and 32,768 only. vLLM's SM 8.9 dispatch (csrc/quantization/cutlass_w8a8/
# scaled_mm_c2x_sm89_fp8_dispatch.cuh) picks the tile by N's next power of two in each M bucket: above M 256
# (``sm89_fp8_config_default``) 128×128 up to 4,096, 256×128 up to 8,192, 128×128 beyond; at M 65-128 at 8,192 and
# 16,384. aiconfigurator-core 0.12.0's L40S vLLM 0.24.0 fp8 table at K 4,096, M 2,048-4,096: median 285 TFLOP/s at N
# 8,192 (17 rows), 380 from N 10,240 to 65,536 (85 rows, 348-411). On 4× nodes the class's grid read the slow N 8,192 node against the rows at
# 16,384 and put the node at 32,768, which no row holds, at 509 TFLOP/s (gemm:3741,32768,4096; 486 at Llama-3.1-8B's
# gate/up N 28,672): above the class's 35,718 rows, the fastest 461. Refitted (``kernel_tables.py --regrid``) on a node
# every 2× in N: 370 at N 28,672; held out 5.8% / 18.2% → 4.8% / 16.4%. Not SGLang's L40S class (sgl-kernel's
# ``sm89_fp8_dispatch_shape`` also picks by N): 7.4% / 22.7% → 7.2% / 24.5% on the same nodes (docs/accuracy.md, MLPerf
# Inference v5.1)
N_SWITCH_GEMMS = {("vllm", "fp8"): ("l40s",)}
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
# (framework, dtype) -> the GPUs whose GEMM class's grid takes a node every ``FINE_GEMM_STEP`` on each of M, N and K
# (``gemm_switch_steps``), where ``GRID_STEPS``' 4× interpolate across the kernel switches of cuBLASLt's heuristics:
# all three frameworks run bf16 as PyTorch's linear, whose kernel cuBLASLt picks from (M, N, K), and on L40S 60% of
# TensorRT-LLM's and vLLM's jumps between neighbours in M repeat in the other table (docs/accuracy.md, "The L40S GEMM
# scatter"), and the small-M kernel that walks K switches where N·K crosses 2^17-2^19. Held out, refitted on the same
# rows with ``--gemm-fill auto``: L40S, vLLM 0.24.0 6.9% / 20.9% → 5.8% / 18.9%, TensorRT-LLM 1.3.0rc20 6.9% / 22.4% →
# 5.6% / 20.3%, SGLang 0.5.14 7.9% / 24.8% → 7.2% / 22.5%; RTX PRO 6000 5.5% / 17.3% → 4.2% / 14.0%, 5.3% / 16.6% →
# 4.2% / 14.6%, 5.3% / 17.1% → 4.2% / 14.7%. Not the FP8 classes, whose CUTLASS kernels switch by M and N alone
# (sgl-kernel's ``sm89_fp8_dispatch_shape``): SGLang L40S fp8 7.4% / 22.7% → 6.9% / 23.2% with the same nodes
# (docs/accuracy.md, "The GDDR GPUs' bf16 GEMMs on a grid every 2×")
FINE_GEMMS = {("trtllm", "bf16"): ("l40s", "rtx-pro-6000"), ("vllm", "bf16"): ("l40s", "rtx-pro-6000"),
              ("sglang", "bf16"): ("l40s", "rtx-pro-6000")}
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
# (framework, kernel class) → GPUs of the decode classes with one query head per KV head whose rows run FlashInfer's
# tensor-core decode (``CHUNK_SOURCES``): vLLM 0.24.0 always (vllm/v1/attention/backends/flashinfer.py,
# ``_get_decode_wrapper``: ``BatchDecodeWithPagedKVCacheWrapper(..., use_tensor_cores=True)``, its ``FIDecode`` path,
# the tables' ``vllm_flashinfer_fidecode``: FlashAttention 2 has no FP8 cache, so an FP8 cache decodes there on L40S and
# RTX PRO 6000), SGLang 0.5.14 on an FP8 cache (python/sglang/srt/layers/attention/flashinfer_backend.py,
# ``should_use_tensor_core``: True for an FP8 cache whatever the head group, where FlashInfer has no
# ``_grouped_size_compiled_for_decode_kernels``, which went after 0.1.6), FlashInfer at head dims 128 and 256 beside
# Triton at 64 and 192 on L40S (``chunk_head_dims``). FlashInfer plans that decode as a prefill of one token per
# sequence (include/flashinfer/attention/scheduler.cuh, ``PrefillPlan``): one query row per KV head is one tile
# (``splitkv.prefill_query_tiles``), one CTA per sequence and KV head, whose keys ``PrefillBinarySearchKVChunkSize``
# splits into chunks of at least 128 over a grid of ``PLAN_BLOCKS_PER_SM`` CTAs per SM (``num_blocks_per_sm = 2``): the
# chunked launch (``split_kv = "chunks"``, ``splitkv.chunks_per_sequence``) at that occupancy, in place of the plain
# launch. Not ``chunk_plan``'s whole waves of the SMs (both η divided by them, the tensor-core tiles of the classes over
# 32 heads per KV head): these rows are the cache's bytes, and a lone CTA reads several times its 1/SMs share of the
# bandwidth (SGLang's L40S table, one sequence on one KV head × 256: 10.1 µs at one cached token, 11.6 at 127, one
# chunk and one CTA: 65 KB more in 1.5 µs, at least 43 GB/s, 7× its 1/142 share of 864 GB/s, which would take 10.7
# µs); with them (``efficiency.chunk_waves``) the fitted classes held out at 6.7% / 18.8% (vLLM L40S), 6.7% / 21.7% (RTX
# PRO 6000), 2.8% / 25.3% (SGLang L40S), against 5.7% / 17.5%, 5.7% / 20.4%, 3.0% / 16.4% without. The data:
# docs/accuracy.md, "FlashInfer's tensor-core decode with one head per KV head: the prefill plan's grid"
CHUNK_CLASSES = {("vllm", "attention_generation_bf16_kv_fp8_mha"): ("l40s", "rtx-pro-6000"),
                 ("sglang", "attention_generation_bf16_kv_fp8_mha"): ("l40s", "rtx-pro-6000")}
CHUNK_SOURCES = ("vllm_flashinfer_fidecode", "flashinfer")
# (framework, kernel class) → GPUs of the decode classes over 32 heads per KV head whose rows run FlashInfer's
# tensor-core decode, planned as a prefill (``chunk_plan = "prefill"``, ``splitkv.prefill_query_tiles``,
# ``splitkv.sm_wave_factor``): SGLang 0.5.14 decodes on FlashInfer on SM 8.9 and 12.0 and takes its tensor cores over 4
# query heads per KV head; vLLM 0.24.0's FP8 cache on L40S (``vllm_flashinfer_fidecode``). Fitted at the plan's own
# grid (2 CTAs per SM) in place of the plain launch. The data that chose it: docs/accuracy.md, "FlashInfer's
# tensor-core decode over 32 heads per KV head: its prefill plan"
PLAN_CHUNK_CLASSES = {("sglang", "attention_generation_bf16_kv_bf16_wide"): ("l40s", "rtx-pro-6000"),
                      ("sglang", "attention_generation_bf16_kv_fp8_wide"): ("l40s", "rtx-pro-6000"),
                      ("vllm", "attention_generation_bf16_kv_fp8_wide"): ("l40s",)}
# (framework, kernel class) → GPUs of the decode classes over 32 heads per KV head on FlashAttention 2 (vLLM's bf16
# cache on SM 12.0), fitted on its split-KV heuristic (``split_kv = "fa2"``, ``splitkv.fa2_splits``) in place of the
# plain launch: vllm-project/flash-attention's ``mha_varlen_fwd`` swaps a decode's G query heads into rows and splits
# each sequence's keys while the CTAs fill under 80% of two per SM (vLLM passes FA2 no num_splits). The data that chose
# it: docs/accuracy.md, "vLLM's RTX PRO 6000 decode over 32 heads per KV head: FlashAttention 2's split"
# vLLM 0.14.0 decodes A100's bf16 cache on the same FlashAttention 2 (vllm-flash-attn): 64 heads on one KV head × 128,
# batch 1, 12.7-12.8 µs up to 128 keys, 18.7 µs at 256 (two blocks of 128: split, and the combine kernel);
# held out 8.3% / 18.5% fitted plain, 2.3% / 9.6% on it (docs/accuracy.md, "A100's decode over 32 heads per KV head:
# the split-KV heuristics")
FA2_SPLIT_CLASSES = {("vllm", "attention_generation_bf16_kv_bf16_wide"): ("rtx-pro-6000", "a100")}
# (framework, kernel class) → GPUs of the decode classes over 32 heads per KV head on FlashAttention 3's SM 8.x path,
# fitted on its own split heuristic (``split_kv = "fa3_sm8x"``, ``splitkv.fa3_sm8x_splits``) in place of the plain
# launch: SGLang 0.5.10's fa3 backend, which it runs on SM 8.x (python/sglang/srt/layers/attention/
# attention_registry.py, ``create_flashattention_v3_backend``: SM 8.x without MLA, or 9.x; flashattention_backend.py,
# ``FlashAttentionBackend.forward_decode``: ``flash_attn_with_kvcache`` with no num_splits), the table's
# 'flash_attention' rows. A100, 64 heads on one KV head × 128, batch 1: 14.2 µs up to 64 keys, 16.8 and 21.6 µs at 128
# and 256 (2 and 3 blocks of 112, unsplit), 23.5 at 512 (split) and 29.2 at 4,096; held out 8.2% / 20.5% fitted
# plain, 5.8% / 15.9% on FlashAttention 2's heuristic, 3.8% / 14.8% on FA3's (docs/accuracy.md, "A100's decode over
# 32 heads per KV head: the split-KV heuristics")
FA3_SM8X_SPLIT_CLASSES = {("sglang", "attention_generation_bf16_kv_bf16_wide"): ("a100",)}
# the splits are TensorRT-LLM's launch rules (XQA's, MMHA's): vLLM's and SGLang's window classes run their own
# decode kernels (FlashInfer, FlashAttention, Triton), whose split heuristics are not modelled; fitted plain
SPLIT_FRAMEWORK = "trtllm"
# decode classes whose kernel computes every key block its window touches in full (``core.keyblocks``): vLLM's
# FlashAttention 3 on Hopper (its tables' ``kernel_source``), whose time steps with the blocks (H200, window 128, head
# dim 64, batch 2,048: 310–366 µs up to 127 cached tokens, 702–705 µs from 255 on) where the window's keys stay 128.
# Fitted with and without the blocks' keys (priced, and the grid's N), the smaller loss on the fitted rows kept
KEY_BLOCK_CLASSES = {("vllm", "generation_attention", "_window"), ("vllm", "generation_attention", "_window_mmha")}
KEY_BLOCK_SOURCES = {"vllm_flash_attn_fa3": "fa3"}
# (framework, kernel class) → GPUs of the windowed decode classes whose rows run vLLM's FlashAttention 3
# (``FA3_SPLIT_SOURCES``), whose scheduler splits each sequence's whole cache where the batch leaves SMs idle and merges
# the splits after (``split_kv = "fa3"``, ``splitkv.fa3_dynamic_splits``): fitted with it, and its ``split_s``, beside
# each launch the class tries without it, the smaller loss on the fitted rows kept. aiconfigurator-core 0.12.0's vLLM
# 0.24.0 H100 table, one head on one KV head × 128, FP8 cache, window 128, batch 1: 12.7–13.2 µs up to 63 cached
# tokens, 18.3–19.0 µs from 255 on, flat to 131,071 (docs/accuracy.md, "vLLM's Hopper window decode, FP8 cache: FA3's
# split over the whole sequence")
FA3_SPLIT_CLASSES = {("vllm", "attention_generation_bf16_kv_fp8_window_mmha"): ("h100", "h200")}
FA3_SPLIT_SOURCES = ("vllm_flash_attn_fa3",)
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
# tokens, 7.0 µs at 192 against 8.9-10.9 µs (docs/accuracy.md, "One-head prefill: a fixed latency per backend").
# SGLang 0.5.14's FP8-cache one-head decode on B200, TRT-LLM-gen at head dims 64, 128, 256 and 512 and Triton at 192:
# one sequence on one KV head × 64 takes 12.5-13.1 µs up to 15 cached tokens, no call at another head dim under
# 14.5 µs (docs/accuracy.md, "SGLang's B200 FP8-cache one-head decode: a fixed latency per head dim")
# SGLang's grouped-query class there alike, beside its cost per CTA (``TILE_COST_CLASSES``): B200, 1-64 tokens, the
# fastest calls 16.5 µs at 128, 18.6 at 192, 12.4 at 256 (docs/accuracy.md, "SGLang's Blackwell FP8-cache prefill: a
# cost per CTA")
HEAD_DIM_LATENCY_CLASSES = {("vllm", "attention_generation_bf16_kv_fp8_mha"): ("l40s", "rtx-pro-6000"),
                            ("sglang", "attention_generation_bf16_kv_fp8_mha"): ("b200",),
                            ("sglang", "attention_context_bf16_kv_fp8_mha"): ("b200", "b300", "gb200", "gb300"),
                            ("sglang", "attention_context_bf16_kv_fp8"): ("b200", "b300", "gb200", "gb300"),
                            ("sglang", "attention_context_fp8_kv_fp8_mha"): ("l40s", "rtx-pro-6000"),
                            ("sglang", "attention_context_fp8_kv_fp8"): ("l40s",),
                            ("sglang", "attention_context_bf16_kv_bf16_mha"): ("l40s",),
                            ("vllm", "attention_context_bf16_kv_fp8_mha"): ("b300", "gb200", "gb300", "rtx-pro-6000")}
# (framework, kernel class) → GPUs of the context classes whose launch pays a cost per CTA whatever its keys
# (``query_tile_cost``, ``efficiency.tile_cost_s``): SGLang 0.5.14's bf16-math FP8-cache prefill on B200 … GB300, on
# FlashInfer at head dim 128 and Triton at 192 and 256, both of whose times at one key tile grow with the CTAs, not the
# FLOPs (B200, 1-64 tokens a sequence, fitted past the first wave: Triton 192 24 ns per CTA, 256 45 ns, FlashInfer 128
# 44 ns per sequence and query head whatever its KV heads; held out 4.3% / 20.0% → 4.5% / 14.4% with the fixed latency
# per head dim above; docs/accuracy.md, "SGLang's Blackwell FP8-cache prefill: a cost per CTA"). TILE_KERNEL_ROWS:
# each kernel's query rows per CTA there (Triton's BLOCK_M on SM 10.x up to head dim 256,
# python/sglang/srt/layers/attention/triton_ops/extend_attention.py, ``_get_block_sizes_for_extend_attention``; 0 for
# FlashInfer, whose cost the tables show per sequence and query head); ONE_KEY_TILE: the most tokens a sequence's keys
# hold in one of Triton's key tiles (BLOCK_N 64), the rows the cost is read off (each CTA one tile's work)
# vLLM 0.14.0's A100 prefill over 32 heads per KV head on FlashAttention 2 (vllm-flash-attn, SM 8.0, head dim 128:
# 128 × 64 tiles, csrc/flash_attn/src/flash_fwd_launch_template.h, ``run_mha_fwd_hdim128``, the 128 × 32 and 64 × 64
# tiles there are SM 8.6/8.9's): one CTA per sequence, query head and 128 query rows, each one tile's work however few
# rows are real; aiconfigurator-core 0.12.0's table, 64 heads on one KV head × 128: 16, 32 and 64 tokens at batch 256
# take 561, 583 and 618 µs, ~35 ns a CTA past the first wave, where the FLOPs grow 4× (held out 4.6% / 27.5% → 3.6%
# / 18.3%; docs/accuracy.md, "vLLM's A100 prefill over 32 heads per KV head: a cost per CTA"). TILE_SWAP_KERNELS: the
# kernels whose calls of one query token per sequence run FlashAttention 2's grouped-query swap (flash_api.cpp,
# ``mha_varlen_fwd``, ``seqlenq_ngroups_swapped``: the G heads become one sequence and KV head's rows, ⌈G / rows⌉
# CTAs; the same table, one token at batch 256 × 64 heads: 24 µs), which the slope leaves out and the law counts so
# (``tile_swap``)
TILE_COST_CLASSES = {("sglang", "attention_context_bf16_kv_fp8"): ("b200", "b300", "gb200", "gb300"),
                     ("vllm", "attention_context_bf16_kv_bf16_wide"): ("a100",)}
TILE_KERNEL_ROWS = {"triton": 64, "flashinfer": 0, "vllm_flash_attn": 128}
TILE_SWAP_KERNELS = ("vllm_flash_attn",)
ONE_KEY_TILE = 64
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
# (framework, kernel class) → GPUs of the grouped-query decode classes whose fixed latency is one per head dim and head
# group there too (``group_latency``), where the table times each head dim on one backend and FlashInfer's decode
# switches kernels with the group (``GROUP_SWITCH``): SGLang 0.5.14's bf16-cache decode on RTX PRO 6000, FlashInfer at
# head dims 128 and 256 (its CUDA-core decode kernel below 4 query heads per KV head, its tensor-core prefill kernel
# from 4) and Triton at 64, 192 and 512 (``one_backend_per_head_dim``). aiconfigurator-core 0.12.0's table, 1 to 8
# sequences × KV heads, up to 63 cached tokens: FlashInfer × 128 4.3 µs at 2-3 heads per KV head, 6.3 µs from 4; × 256
# 4.7-5.3 and 8.4 µs; Triton × 64 6.3 µs, × 192 10.5-12.5 µs, × 512 8.4 µs (docs/accuracy.md, "SGLang RTX PRO 6000's
# decode: a fixed latency per head dim and head group")
GROUP_LATENCY_CLASSES = {("sglang", "attention_generation_bf16_kv_bf16"): ("rtx-pro-6000",)}
# the most cached tokens of the rows that measure such a class's latency per head dim and head group: FlashInfer's
# decode at head dim 256 reads its keys from 15 cached tokens on (RTX PRO 6000, 2 heads on one KV head, batch 1: 4.3 µs
# up to 7 cached tokens, 5.1 at 15, 8.4 at 63, 12.5 at 127)
GROUP_LATENCY_STEP = 7
# the least share of a row's measured time the grid reads as its time above the fixed latency for a class of
# ``GROUP_LATENCY_CLASSES``, whose launch-bound rows take all their time in that latency (``grid.grid_floor``; every
# other class's ``grid.GRID_FLOOR``, 0.1): at 0.1 the grid priced them 10% over it (RTX PRO 6000's SGLang class held
# out at 4.2% / 18.8%, at 0.01 1.6% / 19.3%)
GROUP_GRID_FLOOR = 0.01
# (framework, kernel class) → GPUs of the classes that take a latency per head dim and head group, each pair's fastest
# call at one wave over the class's (``group_latency``): vLLM 0.24.0's FP8-cache window decode on L40S and RTX PRO 6000,
# FlashInfer's decode run on its tensor-core (prefill) kernel (vllm/v1/attention/backends/flashinfer.py,
# ``use_tensor_cores=True``), whose tile of packed query rows follows the head group
# (include/flashinfer/attention/scheduler.cuh, ``FA2DetermineCtaTileQ``: 16 rows up to 16 query heads per KV head, 64
# up to 64, 128 beyond). aiconfigurator-core 0.12.0's L40S table, window 128, head dim 128, batch 1, up to 127 cached
# tokens: 9.6-10.6 µs at 1, 5 and 8 heads per KV head, 17.2-18.8 µs at 20-64; head dim 64, 40 heads per KV head
# 10.1-10.5 µs (docs/accuracy.md, "vLLM's GDDR FP8-cache window decode: a latency per head dim and head group")
GROUP_FASTEST_CLASSES = {("vllm", "attention_generation_bf16_kv_fp8_window"): ("l40s",),
                         ("vllm", "attention_generation_bf16_kv_fp8_window_mmha"): ("l40s", "rtx-pro-6000")}
GROUP_SPLIT = {"sglang": ("b200", "b300", "gb200", "gb300")}
GROUP_SPLIT_STEP = 127
GROUP_SPLIT_KEYS = 256
# (framework, kernel class) → GPUs of those whose latency falls with the CTAs TRT-LLM-gen splits a sequence's KV tiles
# over (``latency_tile_keys``, ``latency_tile_power``, ``gemmshape``) in place of the cut at GROUP_SPLIT_KEYS keys:
# SGLang's bf16-cache decode over 32 heads per KV head on B200, B300 and GB300. A tile of GROUP_TILE_KEYS key
# elements, where the tables step (B200, 128 heads on one KV head, batch 1: × 256 28.9 µs to 127 cached tokens, 22.7
# at 255, 16.6 at 511; × 128 20.7 to 127, 19.6 at 255, 16.8 at 511); each of GROUP_TILE_POWERS fitted in turn, the
# smallest loss on the fitted rows kept. The data that chose it: docs/accuracy.md, "SGLang's Blackwell decode over 32
# heads per KV head: its latency shared by the CTAs of its KV tiles"
GROUP_TILE_CLASSES = {("sglang", "attention_generation_bf16_kv_bf16_wide"): ("b200", "b300", "gb300")}
GROUP_TILE_KEYS = 32768
GROUP_TILE_POWERS = (0.5, 0.7, 1.0)
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
# ops whose kernel classes keep one backend per head dim (``one_backend_per_head_dim``), and the columns that name a
# class's head dim: generation attention (SGLang 0.5.14's tables: Qwen3.5's head dim 256 on Triton beside trtllm_mha on
# B200 … GB300, Llama 4's 128 on Triton beside FlashInfer on RTX PRO 6000)
HEAD_DIM_BACKEND_OPS = ("generation_attention",)
# (framework, op) → GPUs whose tables' rows at GLOBAL_WINDOW_SIZE on a kernel of GLOBAL_WINDOW_KERNELS time global
# attention, and are left out of the window classes (``chunked_as_global``): aiconfigurator's SGLang collector times
# Llama 4's chunked layers (attention_chunk_size 8192) as a window of 8192, which SGLang 0.5.14's ``trtllm_mha`` decode
# on SM 10.x runs over the whole sequence. aiconfigurator-core 0.12.0's B200 table, the 144 such rows of 16,383 cached
# tokens and more against the window-0 rows of the same shape: 0.999× their time at the median (p10 0.97, p90 1.03), where
# the window's keys are a quarter of the sequence's; B300, GB200 and GB300 1.00× alike; H100's FA3 rows 0.46× (they
# read the window). Priced over the window, B200's bf16 class held out at 3.1% / 21.2%, those rows up to 271% too
# slow and 75% too fast (docs/accuracy.md, "SGLang's Blackwell decode: Llama 4's chunked layers run as global
# attention")
GLOBAL_WINDOW_ROWS = {("sglang", "generation_attention"): ("b200", "b300", "gb200", "gb300")}
GLOBAL_WINDOW_KERNELS = ("trtllm_mha",)
GLOBAL_WINDOW_SIZE = 8192
HEAD_DIM_CLASS = ("attn_dtype", "kv_cache_dtype", "regime", "head_dim")
# context classes that keep one backend per head dim alike, per (framework, op): the GPUs and the (attn_dtype,
# kv_cache_dtype) of their rows. aiconfigurator-core 0.12.0's SGLang 0.5.14 FP8 context tables of B200 … GB300 time head
# dim 256 on ``trtllm_mha`` (SGLang's default backend there) and, for Qwen3.5's 3 and 6 heads on one KV head, on Triton,
# whose rows held out 60-84% too fast in the FP8 class (GB200: 8 sequences × 16,384 tokens, 6 heads, 23.6 ms measured,
# 3.8 ms priced; ``trtllm_mha`` 2 × 16,384, 4 heads: 0.70 ms); docs/accuracy.md ("SGLang's Blackwell FP8 prefill:
# one backend per head dim")
HEAD_DIM_BACKEND_CLASSES = {("sglang", "context_attention"): (("b200", "b300", "gb200", "gb300"), (("fp8", "fp8"),))}
# the same per (framework, op, GPU): the (attn_dtype, kv_cache_dtype) of the classes. aiconfigurator's SGLang collector
# runs Llama 4's attention (40 heads on 8 KV heads × 128, its 5 heads per KV head at every tensor-parallel size) on
# Triton on SM 120 (collector/cases/models/Llama4ForConditionalGeneration_cases.yaml, ``sglang_backends``), the
# other models' head dim 128 on FlashInfer, SGLang's default there: in aiconfigurator-core 0.12.0's RTX PRO 6000
# bf16-math tables Triton's rows at one token are 2.9-10× FlashInfer's (256 sequences, 20 heads on 4 KV heads: 152 µs;
# 16 on 4 on FlashInfer: 14.5 µs), and the grid they pulled up priced FlashInfer's one-token rows up to 10× their time
# (docs/accuracy.md, "SGLang's RTX PRO 6000 prefill: FlashInfer's rows alone at head dim 128")
HEAD_DIM_BACKEND_GPU_CLASSES = {("sglang", "context_attention", "rtx-pro-6000"): (("bfloat16", "bfloat16"),
                                                                                  ("bfloat16", "fp8"))}
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
# (framework, kernel class) → GPUs of the query-tiled context classes (``TRITON_TILES``) whose compute is their causal
# pass's whole BLOCK_M × BLOCK_N tiles up to each query tile's last row (``causal_blocks``,
# ``querytiles.causal_tile_share``, ``efficiency.causal_tiles``): SGLang's Triton prefill (extend_attention.py,
# ``_fwd_kernel``: for a causal extend its key loop runs to min(s, (tile + 1) · BLOCK_M), a whole block of BLOCK_N keys
# at a time, masked, not skipped). SGLang 0.5.14's bf16-math FP8-cache one-head prefill on H100 and H200, Triton alone
# at head dim 512 (32 × 64 tiles): H100, one head, 128 tokens, batch 32 / 64 / 128: 36.0, 59.2, 117.9 µs, 0.92 µs a
# sequence, where 512 tokens take 7.6 (batch 128: 968.7 µs): 1/8.3 the time for 1/16 the causal pairs; priced on
# the causal pairs the class held out at 8.7% / 25.5% (H100), 7.0% / 21.6% (H200), its short sequences 29-49% too fast
# (docs/accuracy.md, "SGLang's Hopper one-head prefill on Triton: its causal pass in whole tiles"). Every H100 and H200
# class that tiles Triton's head dim 512 takes them (the grouped-query FP8-cache class, Triton alone there too: 2.7% /
# 11.7% → 1.9% / 5.2% on H100); L40S's tiled classes (head dims 64 and 192, 64 × 128 and 64 × 64) held out worse with
# them (bf16-cache one-head 5.0% / 19.9% → 5.1% / 20.6%, FP8 one-head 4.9% / 14.9% → 5.6% / 15.1%) and keep without
CAUSAL_BLOCK_CLASSES = {("sglang", "attention_context_bf16_kv_fp8_mha"): ("h100", "h200"),
                        ("sglang", "attention_context_bf16_kv_fp8"): ("h100", "h200"),
                        ("sglang", "attention_context_bf16_kv_bf16"): ("h100", "h200"),
                        ("sglang", "attention_context_bf16_kv_bf16_mha"): ("h100", "h200"),
                        ("sglang", "attention_context_fp8_kv_fp8"): ("h100", "h200"),
                        ("sglang", "attention_context_fp8_kv_fp8_mha"): ("h100", "h200")}
TILE_REGIMES = ("", "_mha", "_wide")      # the causal passes without a window
TILE_GPU_REGIMES = {"l40s": ("_mha",)}
# classes, per (framework, kernel class): the GPUs, that take their GPU's ``TRITON_TILES`` whatever their regime and fit
# ``tile_s`` beside them (``shapefit.TILE_S_START``): the seconds each wave of their query-tile CTAs past the first
# adds whatever their keys (``efficiency.tile_cost_s``). SGLang 0.5.14's L40S FP8 prefill, Triton alone (head dims 64
# and 192): one token per sequence, 6.0-6.3 µs up to 128 sequences × heads at head dim 64, then 2.1 µs per 142 more,
# and 11.8 µs at 192, then 3.35 µs per 142; without it the class's grid took the many short calls and priced head dim
# 192's short prompts 2-6× their time (256 sequences × 64 tokens, 2 heads: 37 µs measured, 134 µs priced;
# docs/accuracy.md, "SGLang's L40S FP8 prefill: its query tiles' waves")
TILE_S_CLASSES = {("sglang", "attention_context_fp8_kv_fp8"): ("l40s",)}
# prefill classes whose fit adds ``plan_split_s`` and ``plan_merge_s`` (``shapefit.with_plan_cost``), the seconds
# FlashInfer's prefill plan adds where it splits the keys, a call's and per query row and head merged
# (``splitkv.prefill_plan_splits``, ``efficiency.plan_split_s``), at the head dims their rows time on ``PLAN_SOURCES``
# (``plan_head_dims``), per (framework, kernel class): the GPUs. vLLM 0.24.0 runs an FP8 cache's sliding-window prefill
# on FlashInfer on L40S and RTX PRO 6000 (head dim 192 on its Triton kernel); at the same 16,384 query rows × heads
# (window 128, head dim 64, one KV head) its rows take 65-77 µs on L40S where the plan splits and 9-21 µs where it does
# not (docs/accuracy.md, "vLLM's FP8-cache window prefill on the GDDR GPUs: FlashInfer's plan splits")
PLAN_SPLIT_CLASSES = {("vllm", "attention_context_bf16_kv_fp8_window"): ("l40s", "rtx-pro-6000")}
PLAN_SOURCES = ("vllm_flashinfer_fiprefill",)
# (op, GPUs) whose grids pull each node toward factor 1 a hundredfold harder (``grid_ridge``): vLLM's and SGLang's
# prefill tables of the GDDR GPUs, but their sliding-window classes. Their short prompts' time jumps where the query and output leave the
# L2 (``RESIDENT_CONTEXT``), and at ``GRID_RIDGE`` the RTX PRO 6000 SGLang 0.5.14 class over 32 heads per KV head (593
# fitted rows) set neighbouring nodes to +300 and -287, pricing held-out rows at 128 tokens at 4-11× their time
# (7.2% / 85.7% held out); at this pull 4.7% / 18.7% (docs/accuracy.md)
GRID_RIDGE_CLASSES = {"context_attention": ("l40s", "rtx-pro-6000")}
# fused-MoE classes, per ironlaw dtype: the GPUs whose rows of a layer shape that shares its autotuner cache file with
# the min-latency NVFP4 layer alone (``moefit.shared_tuning``; collected on SM 100 only, B200 and GB200, for every
# shape up to 256 experts) count as their own key where they run within ``MOE_CROSS_RATIO`` of the same shape's rows
# on ``MOE_CROSS_REFERENCE``'s GPU (SM 103: the same CUTLASS kernels, no min-latency case, every such shape its own
# key), and as another case's tactics where they run slower (``moefit.agrees``; benchmarks/kernel_moe.py
# ``cross_checked``; benchmarks/moe_forms.py --cross-check prints the evidence).
# The evidence, aiconfigurator-core 0.12.0's TensorRT-LLM 1.3.0rc20 tables, balanced routing, the median over each
# layer shape's token counts of its rows' ratio to the reference GPU's: over the shapes whose file no other case
# shares, B200 / B300 1.02 (largest 1.099 bf16, 1.073 fp8, 1.039 fp4), GB200 / GB300 1.00-1.01 (largest 1.060); over
# the NVFP4 shapes the min-latency layer alone shares, B200 / B300 1.05 median, p90 1.45, 39% of them past 1.15 (GB200 /
# GB300 1.01, 1.38, 21%). Under the form fitted on every row the held-out rows of shapes past 1.2 ran 15-32% slower
# than it, those within 1.05 5-6% faster. Fitted and scored on the rows this keeps (with the costs per touched expert and per token of the other own-key
# classes), B200 fp4 holds out at 6.0% / 16.3% (every row 14.7% / 38.6% before), GB200 fp4 at 5.4% / 15.2% (13.1% /
# 40.7%); at a ratio of 1.05, 1.15, 1.20 or 1.30 instead, 5.9-6.6% / 16.0-17.7% and 5.4-6.0% / 15.2-17.1%
# (docs/accuracy.md, "The MoE layer", the ‡ note)
MOE_CROSS_CHECK = {"fp4": ("b200", "gb200")}
MOE_CROSS_REFERENCE = {"b200": "b300", "gb200": "gb300"}
MOE_CROSS_RATIO = 1.10     # above every own-key shape's ratio to its reference (1.099 at most, B200 bf16)

# GPU -> (the catalog GPU whose fitted GEMM classes it carries, the factor on their compute rate, ``eta_max``): a GPU
# without kernel tables of its own that shares a fitted GPU's die, compute units and datasheet peaks takes that GPU's
# measured GEMM terms at the ratio of the two GPUs' measured dense-GEMM rates under one software build
# (``carried.carried``; each carried class's provenance names its source, ``carried_from``, and the engine line and
# ``law.coverage`` say so). The streamed bytes' η and the latency stay as fitted: the GPU's own memory prices those
# bytes. MI325X: the MI300X's gfx942 die with 304 CUs (AMD's data sheets: 2,614.9 TFLOP/s FP8 and 1,307.4 BF16 dense
# on both, 2,100 MHz peak engine clock) at 1,000 W against 750 W. AMD's max-achievable FLOPs, one hipBLASLt build, a
# 4096 x 3648 x 32896 FP8 GEMM on normally distributed data, thermally settled (ROCm blogs, "Measuring Max-Achievable
# FLOPs - Part 2", 2025-02-28, Table 1): MI325X 1,519 TFLOP/s at a median 1,464 MHz, MI300X 1,273 at 1,230 MHz (BF16 843
# and 708, FP16 794 and 654): under a dense GEMM the clock is what the board's power holds, 1.19x the MI300X's on
# MI325X. The MI300X's rows are the MI300X's: 2,693 of the 2,927 aiter rows fitted there come from the Qwen3-VL-235B,
# Qwen3-VL-32B and Qwen3.6-27B block-scaled FP8 tables, tuned "on AMD MI300X (gfx942, 304 CUs)" (ROCm/aiter pull
# request #3324). Carried at factor 1 the MI300X's own rates would price MI325X's GEMMs at the 750 W board's clock;
# uncarried, the serving constants' H100 η (0.69 of the FP8 peak, 1,670-1,710 TFLOP/s on Llama-2-70B's GEMMs) priced
# them above the 1,519 TFLOP/s AMD measures as the most the device reaches (docs/accuracy.md, "MLPerf Inference v5.1")
CARRIED_GEMM = {"mi325x": ("mi300x", 1519.0 / 1273.0)}
CARRIED_GEMM_SOURCE = {"mi325x": "AMD's max-achievable FP8 GEMM rates, MI325X 1,519 / MI300X 1,273 TFLOP/s "
                                 "(ROCm blogs, 'Measuring Max-Achievable FLOPs - Part 2')"}
# GPU -> the GPU whose published attention-kernel throughputs give its flat [efficiency] attention η
# (``attnshare.share``, benchmarks/amd_attention.py). ROCm/aiter op_tests/cpp/mha/README.md (e4048607; the table since
# 630f0140, 2025-11-10) lists the BF16 TFLOP/s of its assembly FMHA forward (fmha_v3_fwd) and backward (fmha_v3_bwd, dQ
# accumulated by bf16 atomics: "a16") on MI300X and MI355X, 47 shapes each causal and not; AMD's MLPerf Training v5.1
# Llama 2 70B LoRA configs run these kernels under Transformer Engine (config_MI300X_1x8x1.sh, config_MI325X_1x8x1.sh:
# NVTE_FUSED_ATTN_CK=1, NVTE_CK_USES_FWD_V3=1, NVTE_CK_USES_BWD_V3=1, NVTE_CK_IS_V3_ATOMIC_FP32=0). No MI325X column:
# it is the MI300X's die (gfx942, 304 CUs) at the same datasheet peaks and takes the MI300X's rows at factor 1; its
# 1.19x dense-GEMM clock (CARRIED_GEMM) is a GEMM's at the board's power limit, which no attention rate measures
ATTENTION_ROWS_OF = {"mi300x": "mi300x", "mi325x": "mi300x", "mi355x": "mi355x"}
# the frameworks whose MoE-layer tables time a fresh copy of the layer's weights at every call, so a row's weights stream
# from HBM and never from a cache the calls share: their MoE classes are fitted with the weights' η_w at most 1
# (``moefit.fit`` stream_max, against the 1.5 of the NVIDIA collectors, which replay one copy), solved within the
# bounds (``exact``). ROCm/aiter's fused-MoE tuner (e4048607, csrc/ck_gemm_moe_2stages_codegen/gemm_moe_tune.py,
# ``FmoeTuner``) hands each candidate's tensors, weights included, to aiter/utility/mp_tuner.py ``worker``, which calls
# aiter/test_common.py ``run_perftest(func, *args)`` with no keywords: 101 timed calls, ``num_rotate_args`` 0, so
# ``perftest`` makes ⌈min(L2_cache_size·64·128, 0.9 of the free memory) / the arguments' bytes⌉ deep copies of every
# argument (32 GiB of copies at the 4 MiB L2 per XCD of gfx942 and gfx950; at most 101) and the calls cycle through
# them (``run_iters_rotate``). Every kept layer holds 0.3-5.2 GB of weights, so a copy is called once or, between two calls
# on it, at least 30 GB of other copies pass the 256 MB Infinity Cache (the catalogs' cache tier; AMD's CDNA 3 / CDNA 4 white papers).
# The rows agree: no bf16, FP8 or block-scaled FP8 row reads its touched experts' weights faster than HBM's datasheet
# rate (at most 0.85 of it, MI300X); the 1.09 and 1.33 that the unbounded fit gave MI325X's and MI355X's FP8 classes
# traded the weights' stream against a fixed latency of 50-60 µs (docs/accuracy.md, "AMD Instinct MoE layers")
ROTATED_MOE_FRAMEWORKS = ("aiter",)
# (framework, op) -> the GPUs whose classes of that op are fitted with a floor their work overlaps (``floor_s``,
# ``efficiency.floored``: a call takes max(floor_s, its law time)) beside the plain form (its fixed latency added to
# its work), the one with the smaller loss on the fitted rows kept. The tables time eager calls: aiconfigurator's
# collector captures a graph only where ``torch.cuda.is_available()`` (collector/helper.py, ``benchmark_with_power``);
# on Intel XPU every row is ``OVERLAP_FLOOR_RUNS`` back-to-back ``impl.forward`` calls of vLLM's attention backend
# between two XPU events (collector/vllm/collect_attn_xpu.py, ``run_attention_torch``: warm-up 3, runs 6), so a call
# whose kernels run shorter than the host's submission of the next waits for it, and a longer one hides it; the run
# pays its first submission and its last call's work once more, 1/6 of the shorter of the two per call
# (``floor_share``). aiconfigurator-core 0.12.0's B60 vLLM 0.26.0 decode table: no row under 57.6 µs; 256 sequences
# × 63 cached tokens, 64 heads on 4 KV heads × 64 (16.8 MB of cache) 62 µs, where the plain form adds its fitted 59 µs
# to 47 µs of streaming. Kept on every decode class (held out, medians 7.8-27.2% → 3.7-23.6%) and on one context class
# of six (docs/accuracy.md, "Intel Arc Pro B60 on vLLM's XPU kernels")
OVERLAP_FLOOR = {("vllm", "generation_attention"): ("b60",), ("vllm", "context_attention"): ("b60",)}
OVERLAP_FLOOR_RUNS = 6
# (framework, ironlaw dtype) -> the GPUs whose fused-MoE rows of that dtype are weight-only, refused by
# benchmarks/kernel_moe.py --framework (no ironlaw MoE class prices FP8 weights on bf16 math). aiconfigurator-core
# 0.12.0's B60 vLLM 0.26.0 moe_perf: its fp8 rows are kernel_source vllm_xpu_moe, vLLM's XPU fused MoE, which
# dequantizes the FP8 weights to bf16 (the B60 has no FP8 matrix unit; its GEMM table's fp8 rows are weight-only
# too and refused the same way)
MOE_WEIGHT_ONLY = {("vllm", "fp8"): ("b60",)}



def holds(rule, key, gpu: str | None = None) -> bool:
    """Whether the keyed ``rule`` applies to ``key`` (a framework, op, regime, kernel class, dtype or a tuple of them,
    as the rule's comment names): a collection of keys where it holds ``key``; a mapping of key -> GPUs where it lists
    ``gpu`` under ``key``."""
    return gpu in rule.get(key, ()) if isinstance(rule, dict) else key in rule


def regime_of(g: Group, other: str | None = "") -> str | None:
    """The regime of ``g``'s kernel class (``REGIMES``' keys, '' for the plain one), the key most rules read beside
    the framework and op; ``other`` for a GEMM class or a class whose name ``attention_kernel_parts`` does not read."""
    return (attention_kernel_parts(g.key[1]) or ("", other))[1] if g.key[0] == "kernel" else other


def switches(g: Group, keyed: dict) -> bool:
    """Whether GEMM class ``g``'s (framework, dtype) lists its GPU in ``keyed``."""
    return g.op == "gemm" and holds(keyed, (g.table.framework, g.key[1]), g.table.gpu)


def coarse_for(framework: str, regime: str) -> bool:
    """Whether a generation class of ``regime`` fitted on ``framework``'s tables keeps ``COARSE``'s grid steps: over 32
    heads per KV head, on every framework's; a sliding window, on ``COARSE_WINDOW_FRAMEWORKS``' only."""
    return regime == "_wide" or framework in COARSE_WINDOW_FRAMEWORKS


def walks(g: Group) -> bool:
    """Whether ``g`` is a class of ``WALK_CLASSES`` fitted on a framework's tables of ``WALK_FRAMEWORKS``."""
    regime = regime_of(g)
    return holds(WALK_CLASSES, (g.op, regime)) and g.table.framework in WALK_FRAMEWORKS


def resident_context(g: Group) -> bool:
    """Whether ``g``'s rows are prefill rows of a GPU of ``RESIDENT_CONTEXT`` on a table of
    ``RESIDENT_CONTEXT_FRAMEWORKS`` (resident where all their bytes fit)."""
    return holds(RESIDENT_CONTEXT, g.op, g.table.gpu) and g.table.framework in RESIDENT_CONTEXT_FRAMEWORKS


def warm_class(g: Group) -> bool:
    """Whether ``g`` is a class of ``WARM_THROUGH_CLASSES`` (its rows' activations warm where everything fits)."""
    regime = regime_of(g)
    return holds(WARM_THROUGH_CLASSES, (getattr(g.table, "framework", None), g.op, regime))


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
    regime = regime_of(g) if g.key[0] == "kernel" else None
    regimes = K_ONLY_ALL_HEADS_REGIMES if holds(K_ONLY_ALL_HEADS_GPUS, g.table.gpu) else K_ONLY_REGIMES
    return (g.op == K_ONLY_OP and regime in regimes and g.table.framework == K_ONLY_FRAMEWORK
            and release(g.table.version) < K_ONLY_BEFORE)


def floor_class(g: Group) -> bool:
    """Whether ``g`` is a class of ``FLOOR_CONTEXT_CLASSES`` on one of its GPUs (its ``latency_s`` bounded by its
    fastest call, ``shapefit.latency_floor``)."""
    return g.key[0] == "kernel" and holds(FLOOR_CONTEXT_CLASSES, (getattr(g.table, "framework", None), g.key[1]),
                                          getattr(g.table, "gpu", None))


def tile_class(g: Group) -> bool:
    """Whether ``g`` is a class of ``TILE_S_CLASSES`` on one of its GPUs (its GPU's query tiles, and ``tile_s``)."""
    return g.key[0] == "kernel" and holds(TILE_S_CLASSES, (getattr(g.table, "framework", None), g.key[1]),
                                          getattr(g.table, "gpu", None))
# (framework, ironlaw dtype) -> the GPUs whose fused-MoE class of that dtype runs vLLM's or SGLang's Triton fused MoE,
# which under EP spans every token-expert pair of the step, routed to the rank or not (``moefit.PAIR_KERNELS``
# "triton": zeros written to the other ranks' rows of both GEMMs' outputs, the activation and the top-k sum over the
# whole M·top-k cache): their classes are fitted with those bytes (``moefit.pairs_bytes``, benchmarks/kernel_moe.py
# --framework). aiconfigurator-core 0.12.0's H200 vLLM 0.24.0 bf16 rows (Triton experts), 16,384 tokens of
# 512 experts top-22, hidden 2,048, inter 5,120: 31.2 ms at EP 1, 11.9 ms at EP 4, then 7.1, 6.4, 6.0, 5.8, 5.7 ms at
# EP 16-256 while the rank's routed rows fall 16-fold (the law without the pairs: 6.3× short at EP 256). Kept where
# the held-out median and p90 both fall (docs/accuracy.md, "The fused-MoE layer of vLLM and SGLang")
MOE_PAIRS = {("vllm", "bf16"): ("a100", "h100", "h200", "l40s"), ("vllm", "fp8"): ("l40s",),
             ("vllm", "fp8_block"): ("l40s",),
             ("sglang", "bf16"): ("a100", "h100", "h200", "l40s", "rtx-pro-6000"),
             ("sglang", "fp8_block"): ("h100", "h200", "rtx-pro-6000"),
             ("sglang", "w4a16_mxfp4"): ("h100", "h200", "l40s")}
# (framework, ironlaw dtype) -> the GPUs whose class of ``MOE_PAIRS``' kind runs vLLM's Marlin MoE instead
# (``moefit.PAIR_KERNELS`` "marlin": no zeros from the gate-up GEMM; the activation, the zeroed down output and the
# top-k sum over every pair): weight-only MXFP4 on L40S and RTX PRO 6000 (vllm_gptossmxfp4moe_marlin_marlinexperts)
MOE_PAIRS_MARLIN = {("vllm", "w4a16_mxfp4"): ("l40s", "rtx-pro-6000")}


# framework -> {(table version, hidden, inter, experts, top-k): (expert groups, groups kept per token)}: the layer
# shapes whose ``balanced`` rows a group-limited router re-routed inside the timed layer (moefit.terms ``groups``,
# ``core.routing.grouped_balanced_local``). aiconfigurator collector/cases/models/DeepseekV3ForCausalLM_cases.yaml
# collects this shape as deepseek-ai/DeepSeek-V3 (n_group 8, topk_group 4, noaux_tc, sigmoid); vLLM 0.24.0's
# collector (collector/vllm/collect_moe.py ``run_moe_torch``, from d5bad971c) builds ``FusedMoE`` with
# ``use_grouped_topk`` for model_type deepseek_v3, a zero ``e_score_correction_bias``, and times
# ``moe_module(hidden_states, router_logits)`` on the ``balanced_logits``; SGLang 0.5.14's
# (collector/sglang/collect_moe.py ``_benchmark_framework_quantized_moe``, chosen when the case states
# ``sglang_moe_num_expert_group``) times ``moe_layer(hidden_states, topk_layer(hidden_states, router_logits))`` with
# ``TopK(use_grouped_topk=True, num_expert_group=8, topk_group=4)``. The balanced logits put one pick in each
# 32-expert group, every group ties, and every token keeps groups 0-3: 128 of the 256 experts at 32 tokens and
# above, not the 256 the plain balanced routing reaches (SGLang's tie-break, sgl_kernel ``moe_fused_gate``, not read:
# taken as vLLM's, lower index first). TensorRT-LLM's collector routes these rows on
# ``RenormalizeMoeRoutingMethod`` (plain top-k) outside its min-latency mode: not listed
MOE_GROUPED_ROUTING = {"vllm": {("0.24.0", 7168, 2048, 256, 8): (8, 4)},
                       "sglang": {("0.5.14", 7168, 2048, 256, 8): (8, 4)}}


def grouped_routing(framework: str, version: str, hidden: int, inter: int, experts: int, k: int) -> tuple[int, int]:
    """(expert groups, groups kept per token) of the group-limited router ``framework``'s collector ran on the
    ``balanced`` rows of that table version and layer shape (``MOE_GROUPED_ROUTING``); (0, 0): plain top-k."""
    return MOE_GROUPED_ROUTING.get(framework, {}).get((str(version), int(hidden), int(inter), int(experts), int(k)), (0, 0))


def pair_kernel(framework: str, dtype: str, gpu: str) -> str | None:
    """The kernel (``moefit.PAIR_KERNELS``) whose every-pair bytes ``framework``'s fused-MoE class ``dtype`` on
    ``gpu`` is fitted with (``MOE_PAIRS``, ``MOE_PAIRS_MARLIN``), None where its layer runs its own rows alone."""
    if holds(MOE_PAIRS_MARLIN, (framework, dtype), gpu):
        return "marlin"
    return "triton" if holds(MOE_PAIRS, (framework, dtype), gpu) else None
# (framework, ironlaw dtype) -> the GPUs whose Triton fused-MoE class is fitted with c_k, the down GEMM's extra
# seconds per second of its weights and FLOPs (at η = 1) on rows whose inter/TP is not a multiple of 16
# (``moefit.fit`` per_unaligned, stored as the grouped GEMMs' ``unaligned_k``, priced by
# ``serving.step.unaligned_down``). vLLM's and SGLang's ``fused_moe_kernel`` take the down GEMM's K = inter/TP as the
# row stride of its activation rows and of w2 ([E, hidden, inter/TP]); Triton's JIT specializes an integer argument
# on divisibility by 16, so an unaligned K leaves the loads of A and B along K unvectorized
# (vllm/model_executor/layers/fused_moe/fused_moe.py; SGLang's fused_moe_triton/fused_moe_triton_kernels.py,
# ``fused_moe_kernel``, ``invoke_fused_moe_kernel``; ``core.routing.TRITON_K_ALIGN``). aiconfigurator-core 0.12.0's
# H200 vLLM 0.24.0 bf16 rows: 2,688 × 1,856, 128 experts top-6, 16,384 tokens, 1.59 ms at MoE TP 4 (inter/TP 464)
# and 3.34 ms at TP 8 (232). Kept where the held-out median and p90 (docs/accuracy.md, "The fused-MoE layer
# of vLLM and SGLang"): neither rises, one falls; not on L40S (bf16: c_k 0; fp8: median up) nor SGLang's MXFP4 (c_k 0)
MOE_UNALIGNED_K = {("vllm", "bf16"): ("a100", "h100", "h200"),
                   ("sglang", "bf16"): ("a100", "h100", "h200")}
# (framework, ironlaw dtype) -> the GPUs whose Triton fused-MoE class counts each touched expert's rows padded to the
# BLOCK_SIZE_M of the config its framework picks without a tuned config file (``core.routing.FUSED_MOE_BLOCK_M``:
# ``get_default_config``, 16 where the layer's tokens are at most the rank's local experts, else 64; block-scaled FP8
# 64 at every M; ``moe_align_block_size`` pads each expert's rows to whole blocks; vllm/model_executor/layers/
# fused_moe/fused_moe.py, SGLang's fused_moe_triton/fused_moe_triton_config.py): the fit's FLOPs (``moefit.terms``
# m_block) and the stored grouped GEMMs' ``m_block`` (``serving.step.blocked_rows``). aiconfigurator-core 0.12.0's
# per-framework tables, held out (benchmarks/kernel_moe.py --framework sglang; the forms:
# benchmarks/moe_triton_blocks.py): SGLang 0.5.14 H100 fp8_block 5.6% / 20.0% → 5.2% / 19.0%, H200 bf16 16.4% /
# 44.2% → 12.2% / 42.8%. Kept where neither the held-out median nor the p90 rises and one falls (docs/accuracy.md,
# "The fused-MoE layer of vLLM and SGLang"); not on vLLM's A100, H100, H200 and L40S bf16
# nor SGLang's A100 and RTX PRO 6000 bf16 (one of the two rises: vLLM H200 bf16 9.5% / 32.4% → 10.0% / 30.1%)
MOE_M_BLOCK = {("vllm", "fp8"): ("l40s",), ("vllm", "fp8_block"): ("l40s",),
               ("sglang", "bf16"): ("h100", "h200", "l40s"),
               ("sglang", "fp8_block"): ("h100", "h200", "rtx-pro-6000")}


def fused_moe_block(framework: str, dtype: str, gpu: str) -> str | None:
    """The M block rule (``core.routing.M_BLOCKS``) ``framework``'s Triton fused-MoE class ``dtype`` on ``gpu`` pads
    its rows by (``MOE_M_BLOCK``), None where it is fitted on its rows unpadded."""
    if not holds(MOE_M_BLOCK, (framework, dtype), gpu):
        return None
    return "fused_moe_fp8_block" if dtype == "fp8_block" else "fused_moe"
