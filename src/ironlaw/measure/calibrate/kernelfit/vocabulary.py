"""The kernel tables' vocabulary: their ops, frameworks, dtypes, shape columns and regimes, the fitter's row
budgets, and the two records the fitter passes around (``Group``, one kernel class and its rows; ``Score``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ....core.gemmshape import WIDE_GQA
from ....models.workloads.hfconfig import MLA
from ..kerneltable import KernelTable

OPS = ("gemm", "context_attention", "generation_attention", "context_mla", "generation_mla", "mla_bmm",
       "mla_context_module", "mla_generation_module")
# the MLA module tables' phase (``models.serving.step.mla_module``: the whole attention module as one op)
MODULE_PHASES = {"mla_context_module": "prefill", "mla_generation_module": "decode"}
# a module table's gemm_type -> the dtype its projections run in as ironlaw names it (fp8_block: DeepSeek-V3's
# 128-element block-scaled FP8 checkpoint, the fp8 a DeepSeek model's step runs)
MODULE_GEMM_DTYPES = {"bfloat16": "bf16", "fp8_block": "fp8", "nvfp4": "fp4"}
# DeepSeek-V3's hidden size (config.json of deepseek-ai/DeepSeek-V3), the module tables' model
MODULE_HIDDEN = 7168
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
                 "mla_bmm": ("op_name", "num_heads", "num_tokens"),
                 "mla_context_module": ("batch_size", "num_heads", "isl"),
                 "mla_generation_module": ("batch_size", "num_heads", "step")}
# generation MLA's heads per GPU (128 / TP: 1, 2, 4 … 128) come 8 to a batch and sequence length: sorted with the
# heads last, the even/odd split fitted 1, 4, 16, 64 heads and held out 2, 8, 32, 128 (128 beyond every fitted row);
# sorted with the sequence length last (17 lengths, odd), each head count and length falls in both halves
REGIMES = {"_window": "sliding window", "_window_mmha": "sliding window, MMHA kernel", "_mha": "one head per KV head", "_wide": f"over {WIDE_GQA} heads per KV head",
           "_mla": "latent (MLA)", "_mla_xqa": "XQA MLA kernel"}
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


def release(version: str) -> tuple:
    """(major, minor, patch) of a table's version string ('1.3.0rc20' -> (1, 3, 0))."""
    parts = [int(p) for p in re.findall(r"\d+", version.split("rc")[0].split(".post")[0])[:3]]
    return tuple(parts + [0] * (3 - len(parts)))


AUTO_FORMS = ("half", "stream")
FIT_ROWS = 1500          # rows of a group's fit half the fitter runs on (evenly spaced), for speed
SCORE_ROWS = 4000        # held-out rows scored per group (evenly spaced), for speed
LICENSE = "Apache-2.0"
# the decode kernels a serving framework's context table names for its one-token rows (``own_kernel``): vLLM 0.24.0's
# FlashInfer backend, TRT-LLM's decode kernel (B200, B300, GB200, GB300) and FlashInfer's own (L40S, RTX PRO 6000)
DECODE_KERNELS = ("vllm_flashinfer_trtllmdecode", "vllm_flashinfer_fidecode")


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
    module_form: str = "whole"  # an MLA module class's rows: the whole module, or less its projections ("apart",
                                # ``forms.module_form``)


@dataclass(frozen=True)
class Score:
    gpu: str
    group: str
    rows: int                 # held-out rows scored
    median_abs_err: float
    p90_abs_err: float


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
