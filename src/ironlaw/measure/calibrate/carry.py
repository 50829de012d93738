"""A device's flat efficiencies carried from the reference device by measured kernel ceilings.

The ``[efficiency]`` defaults (matmul 0.7, attention 0.5) are estimates of what cuBLAS GEMMs and flash attention
reach on Hopper; they are what a training step prices its GEMMs and attention with (``calibration.for_training``
keeps no serving-kernel table). A Blackwell GPU need not reach the same share of its datasheet peak: its
tensor-core clock under the board's power limit, and its softmax units, set what it sustains. The kernel tables
measure that share on each GPU with the same software: the **ceiling** of a kernel class is the median, over the
table's compute-bound rows, of achieved FLOP/s ÷ the catalog's datasheet peak of the dtype. The device's η is
the reference's η times its ceiling over the reference's:

    η_matmul(gpu) = η_matmul(ref) · geomean_d ( ceiling_gemm(gpu, d) / ceiling_gemm(ref, d) ),  d ∈ bf16, fp8
    η_attention(gpu) = η_attention(ref) · ceiling_attn(gpu) / ceiling_attn(ref)

Compute-bound rows: GEMMs with M ≥ 8192, N ≥ 4096 and K ≥ 4096 (``GEMM_MIN``); context attention in bf16 (bf16
KV), head dim 128, no window, at least 4,096 tokens and 32 sequence × head pairs (``ATTENTION_MIN``), its causal
FLOPs 2·batch·heads·isl²·head_dim. The tables time TensorRT-LLM's kernels (its FP8 GEMM quantizes its input in
the call; the reference's does too, so the ratio keeps it on both sides) and attention's forward only; the ratio
assumes the backward's share changes as the forward's. The reference is H100, whose defaults the H100
pre-training rows check. pandas is imported by the caller's tables only (``kerneltable``), never on the
prediction path.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ...core.errors import IronlawError

REFERENCE = "h100"
GEMM_DTYPES = {"bfloat16": "bf16", "fp8": "fp8"}        # table's gemm_dtype -> catalog compute dtype
GEMM_MIN = {"m": 8192, "n": 4096, "k": 4096}
ATTENTION_MIN = {"isl": 4096, "units": 32, "head_dim": 128}


@dataclass(frozen=True)
class Ceiling:
    """Measured share of the datasheet peak one GPU's kernels sustain where compute binds."""
    gpu: str
    gemm: dict            # catalog dtype -> median achieved ÷ peak over the compute-bound GEMM rows
    gemm_rows: dict       # catalog dtype -> rows used
    attention: float      # the same for context attention (bf16)
    attention_rows: int


@dataclass(frozen=True)
class Carried:
    """A GPU's ``[efficiency]`` matmul and attention carried from the reference by the ceilings' ratios."""
    gpu: str
    reference: str
    matmul_ratio: float
    attention_ratio: float
    matmul: float         # η
    attention: float      # η
    ceiling: Ceiling
    reference_ceiling: Ceiling


def gemm_ceiling(rows, peaks_flops: dict) -> tuple[dict, dict]:
    """(dtype -> median achieved ÷ peak, dtype -> rows) over the compute-bound rows of a GEMM table
    (``kerneltable`` rows: gemm_dtype, m, n, k, latency_s)."""
    big = rows[(rows["m"] >= GEMM_MIN["m"]) & (rows["n"] >= GEMM_MIN["n"]) & (rows["k"] >= GEMM_MIN["k"])]
    share, used = {}, {}
    for name, dt in GEMM_DTYPES.items():
        r = big[big["gemm_dtype"] == name]
        if len(r) == 0:
            raise IronlawError(f"GEMM table: no {name} rows with M ≥ {GEMM_MIN['m']}, N ≥ {GEMM_MIN['n']}, "
                               f"K ≥ {GEMM_MIN['k']} to measure its ceiling")
        achieved = 2.0 * r["m"] * r["n"] * r["k"] / r["latency_s"]
        share[dt], used[dt] = float((achieved / peaks_flops[dt]).median()), int(len(r))
    return share, used


def attention_ceiling(rows, peak_flops: float) -> tuple[float, int]:
    """(median achieved ÷ bf16 peak, rows) over the compute-bound rows of a context-attention table."""
    a = ATTENTION_MIN
    sel = rows[(rows["attn_dtype"] == "bfloat16") & (rows["kv_cache_dtype"] == "bfloat16")
               & (rows["window_size"] == 0) & (rows["head_dim"] == a["head_dim"]) & (rows["isl"] >= a["isl"])
               & (rows["batch_size"] * rows["num_heads"] >= a["units"])]
    if "kernel_source" in sel:
        sel = sel[sel["kernel_source"] == "torch_flow"]
    if len(sel) == 0:
        raise IronlawError(f"context attention table: no bf16 rows of head dim {a['head_dim']}, no window, "
                           f"≥ {a['isl']} tokens and ≥ {a['units']} sequence × head pairs")
    flops = 2.0 * sel["batch_size"] * sel["num_heads"] * sel["isl"] ** 2 * sel["head_dim"]   # causal fwd
    return float((flops / sel["latency_s"] / peak_flops).median()), int(len(sel))


def ceiling(gpu: str, gemm_rows, attention_rows, hw) -> Ceiling:
    """The ceilings of ``gpu`` from its GEMM and context-attention tables against ``hw``'s datasheet peaks."""
    peaks = {dt: hw.peak(dt) for dt in GEMM_DTYPES.values()}
    share, used = gemm_ceiling(gemm_rows, peaks)
    att, n = attention_ceiling(attention_rows, peaks["bf16"])
    return Ceiling(gpu, share, used, att, n)


def carried(mine: Ceiling, ref: Ceiling, ref_eta: dict) -> Carried:
    """``mine``'s η from the reference's ``[efficiency]`` (``ref_eta``: matmul, attention) and both ceilings."""
    ratios = [mine.gemm[dt] / ref.gemm[dt] for dt in GEMM_DTYPES.values()]
    m = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    a = mine.attention / ref.attention
    return Carried(mine.gpu, ref.gpu, m, a, ref_eta["matmul"] * m, ref_eta["attention"] * a, mine, ref)
