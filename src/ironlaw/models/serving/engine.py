"""What a TensorRT-LLM engine settles at before it runs: its limits, its KV cache and its batch.

    engine limits   ``trtllm-bench throughput`` without --max_batch_size / --max_num_tokens sets them from the
                    requests it estimates the KV cache holds over all GPUs (tensorrt_llm/bench/build/tuning.py,
                    calc_engine_setting and finetune_setting, NVIDIA/TensorRT-LLM, Apache-2.0):
                        kv_requests = f · (GPUs · memory − params · bytes) / (kv bytes per token · (ISL + OSL))
                        (kv bytes per token over max(tp, kv_heads) heads; memory and sizes in GiB)
                        bs  = min(kv_requests, 4096) / pp, rounded up: to 32 (at least 64) below 256, to 128 below
                              1024, to 256 above
                        tok = min(bs · (1 + ISL/OSL), 32768), rounded up: to 256 (at least 2048) below 4096,
                              to 512 below 8192, to 1024 above
    KV cache        ``kv_fraction`` (kv_cache_free_gpu_mem_fraction, default 0.95) of the memory FREE once the
                    weights and the activation workspace of one max_num_tokens step are in place
    batch           the KV cache holds B = ⌊KV tokens / (⌈(ISL + OSL) / 32⌉ · 32)⌋ sequences: the scheduler
                    reserves each request's whole prompt and output in 32-token blocks (TensorRT-LLM's
                    defaults: capacity policy GUARANTEED_NO_EVICT, tokens_per_block 32); the batch is the smaller
                    of B and the engine's max batch size, and names which one set it.
    requests        the perf-overview's dataset size for its ISL/OSL pairs (docs/source/performance/
                    perf-overview.md, "$num_requests"), else 1,500.
    KV dtype        without --kv-dtype, the checkpoint's (``online.default_kv_dtype``): FP8 for a model in an 8-
                    or 4-bit float, as NVIDIA's quantized checkpoints state it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ...core.errors import IronlawError

GIB = 2.0**30
# the published runs' kv_cache_free_gpu_mem_fraction (perf-overview.md: "in many cases … 0.95"; also trtllm-bench's
# calc_engine_setting default); TensorRT-LLM's own KvCacheConfig default is 0.90
KV_FRACTION = 0.95
TOKENS_PER_BLOCK = 32              # TensorRT-LLM KvCacheConfig.tokens_per_block default
BATCH_CAP, TOKENS_CAP = 4096, 32768          # trtllm-bench finetune_setting caps
# perf-overview.md, "Preparing a Dataset": $num_requests per (ISL, OSL)
PERF_OVERVIEW_REQUESTS = {(128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (1000, 2000): 1500,
                          (2048, 128): 3000, (2048, 2048): 1500, (5000, 500): 1500, (1000, 1000): 3000,
                          (500, 2000): 3000, (20000, 2000): 1000}
DEFAULT_REQUESTS = 1500


@dataclass(frozen=True)
class Limits:
    max_batch: int
    max_num_tokens: int
    source: str                    # "trtllm-bench" (its heuristic) or "given"


def _round_batch(raw: float) -> int:
    if raw < 256:
        return max(64, 32 * math.ceil(raw / 32))
    if raw < 1024:
        return 128 * math.ceil(raw / 128)
    return 256 * math.ceil(raw / 256)


def _round_tokens(raw: float) -> int:
    if raw < 4096:
        return max(2048, 256 * math.ceil(raw / 256))
    if raw < 8192:
        return 512 * math.ceil(raw / 512)
    return 1024 * math.ceil(raw / 1024)


def engine_limits(params: float, weight_bytes_per_param: float, kv_bytes_per_token_all_heads: float,
                  memory_bytes: float, gpus: int, pp: int, prompt: int, output: int, kv_fraction: float,
                  max_batch: int | None = None, max_num_tokens: int | None = None) -> Limits:
    """max_batch_size and max_num_tokens as trtllm-bench sets them (module docstring) unless given."""
    if max_batch is not None and max_num_tokens is not None:
        return Limits(max_batch, max_num_tokens, "given")
    engine = params * weight_bytes_per_param / GIB
    cache = (gpus * memory_bytes / GIB - engine) * kv_fraction
    kv_requests = max(cache, 0.0) / (kv_bytes_per_token_all_heads / GIB * (prompt + output))
    raw_bs = min(kv_requests, BATCH_CAP) / pp
    raw_tok = min(raw_bs * (1 + prompt / output), TOKENS_CAP)
    return Limits(max_batch if max_batch is not None else _round_batch(raw_bs),
                  max_num_tokens if max_num_tokens is not None else _round_tokens(raw_tok),
                  "given" if max_batch is not None or max_num_tokens is not None else "trtllm-bench")


def blocks_tokens(prompt: int, output: int) -> int:
    """Tokens of KV cache the scheduler reserves for one request (whole 32-token blocks)."""
    return math.ceil((prompt + output) / TOKENS_PER_BLOCK) * TOKENS_PER_BLOCK


def settle_batch(kv_budget_bytes: float, kv_bytes_per_sequence: float, prompt: int, output: int,
                 max_batch: int) -> tuple[int, str]:
    """(sequences in flight, what set it: "kv_memory" or "max_batch") on one attention rank; a sequence holds
    the KV of ``blocks_tokens(prompt, output)`` tokens (``kv_bytes_per_sequence``)."""
    fit = int(kv_budget_bytes // kv_bytes_per_sequence)
    if fit < 1:
        raise IronlawError(f"the KV cache ({kv_budget_bytes / 1e9:.2f} GB left for it) cannot hold one request of "
                           f"{prompt} + {output} tokens; use more --tp, a larger --kv-fraction or a shorter request")
    return (fit, "kv_memory") if fit < max_batch else (max_batch, "max_batch")


def requests_for(prompt: int, output: int) -> int:
    return PERF_OVERVIEW_REQUESTS.get((prompt, output), DEFAULT_REQUESTS)
