"""How aiconfigurator's collectors ran each row: the copies of a GEMM's weights and the inputs each framework's
collector calls in turn, and which operands its repeated calls read from the last cache level rather than device
memory (``as_collected``, ``cache_resident``, ``warm_through``).
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .vocabulary import MODULE_PHASES, Group, release


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
# bytes per weight element as aiconfigurator's collectors size their copies (collector/trtllm/collect_gemm.py,
# ``_bytes_per_elem``: bfloat16 2, fp8 1, nvfp4 0.5; its scales not counted)
COLLECTOR_WEIGHT_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "fp4": 0.5, "mxfp4": 0.5}


def timed_as(cal: dict, g: Group) -> Group:
    """``g`` with its operands as ``cal``'s provenance says the class was fitted (``fit_operands``; "memory" where
    it does not say); an MLA module class's rows with or without their projections as ``cal``'s class says
    (``gemms``, ``forms.module_form``)."""
    how = ((cal.get("provenance") or {}).get(g.name) or {}).get("operands_from", "memory")
    if g.op in MODULE_PHASES:          # an MLA module class fitted less its projections (``forms.module_form``)
        return replace(g, module_form="apart" if (cal.get("kernel") or {}).get(g.key[1], {}).get("gemms") == "apart"
                       else "whole")
    return replace(g, operands=how) if g.op == "gemm" else g


def cache_resident(ops: list, hw, by_cache: bool = False) -> list:
    """``ops`` with each whose bytes fit ``hw``'s last cache level (``cache.repeated_limit_bytes``; with
    ``by_cache``, its KV cache's: ``reread_bytes``) marked ``attrs['resident']`` (a stored GEMM class's too where it
    was fitted with "cache"): the tables' collector times one op over and over on the same KV cache, nothing else
    between the calls, so such a cache is read from the last cache level (L40S, 96 MiB L2: one layer's 64 MiB bf16
    cache read at 2.4 TB/s, the GDDR6 serves 864 GB/s), and the law prices a resident op's bytes at that tier, as
    the CUDA probe's own repeated rows (``build.observations``). Without a cache level, none is."""
    from dataclasses import replace
    from ....machine.cache import repeated_limit_bytes
    limit = repeated_limit_bytes(hw)
    if limit is None:
        return ops
    return [replace(op, attrs={**op.attrs, "resident": True}) if reread_bytes(op, by_cache) <= limit else op
            for op in ops]


def warm_through(ops: list, hw, output_share: float = COLLECTOR_OUTPUT_SHARE) -> list:
    """``ops`` with each whose bytes read, and its written bytes counted as ``output_share`` of the cache, fit
    ``hw``'s last cache level marked ``attrs['warm_activations']`` too: the collector calls the one op over and over on
    the same input and into the same output, so its activations are read from there whatever their size
    (``WARM_THROUGH_OPS``). Without a cache level, none is."""
    from ....machine.cache import repeated_limit_bytes
    limit = repeated_limit_bytes(hw)
    if limit is None:
        return ops
    return [replace(op, attrs={**op.attrs, "warm_activations": True}) if fits_through(op, limit, output_share)
            else op for op in ops]


def fits_through(op, cache_bytes: float, output_share: float = COLLECTOR_OUTPUT_SHARE) -> bool:
    """Whether ``op``'s bytes read plus its written bytes over ``output_share`` fit ``cache_bytes``."""
    written = float(np.max(op.bytes_written))
    return sum(float(np.max(b)) for b in op.bytes.values()) - written + written / output_share <= cache_bytes


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
    from ....machine.cache import repeated_limit_bytes
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
