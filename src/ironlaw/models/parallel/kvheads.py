"""Tensor parallelism past the key/value heads: with TP a multiple of a grouped-query model's KV heads, each rank
holds ONE KV head, every head on tp / kv_heads ranks (its K/V projection weights, their FLOPs and its cache
replicated there), and its heads / tp query heads attend to that one head. The engines do so: vLLM
``QKVParallelLinear`` (model_executor/layers/linear.py: ``num_kv_head_replicas = divide(tp_size,
self.total_num_kv_heads)``, one KV head per rank), TensorRT-LLM ``_torch/modules/attention.py`` ``Attention.__init__``
(KV heads per rank rounded up, ⌈num_key_value_heads / tp_size⌉ = 1, its fused QKV linear 2·tp_size·kv_size
columns wide) and SGLang ``QKVParallelLinear`` (python/sglang/srt/layers/linear.py, the same
``num_kv_head_replicas``). Megatron-Core's training refuses it (megatron/core/transformer/attention.py
``Attention.__init__``: ``num_query_groups_per_partition = divide(num_query_groups, world_size)``), so training
keeps TP a divisor of the KV heads. A TP that neither divides nor is a multiple of them is refused (``tp_fits_kv_heads``).

    replicas   = tp / kv_heads  (tp > kv_heads), else 1; a latent cache (MLA) is one every rank holds: 1
    N per rank = q_dim / tp + 2·kv_dim · replicas / tp   (the fused QKV projection's output columns)
"""
from __future__ import annotations


def kv_head_replicas(meta: dict, tp: int) -> int:
    """The ranks each key/value head is held by: tp / kv_heads where tp exceeds a grouped-query model's KV heads,
    else 1 (multi-head latent attention's one latent: every rank holds it whole, ``kv_cache_split``)."""
    kv = int(meta.get("kv_heads", meta.get("heads", tp)) or tp)
    if meta.get("kv_shared_by_heads") or tp <= kv:
        return 1
    return tp // kv


def tp_fits_kv_heads(tp: int, kv_heads: int) -> bool:
    """Whether ``tp`` splits the KV heads (a divisor) or replicates them whole (a multiple)."""
    return kv_heads % tp == 0 or tp % kv_heads == 0


def kv_tp_choices(heads: int, kv_heads: int) -> list[int]:
    """The TP degrees a grouped-query model takes in inference: divisors of its query heads that divide or are a
    multiple of its KV heads."""
    return [t for t in range(1, heads + 1) if heads % t == 0 and tp_fits_kv_heads(t, kv_heads)]


def replicated_kv_weight_bytes(meta: dict, tp: int, bytes_per_param: float) -> float:
    """Weight bytes a rank holds beyond 1/tp of the model's: its K/V projections' replicas,
    kv_proj_params · (replicas − 1) / tp (0 where no head is replicated)."""
    r = kv_head_replicas(meta, tp)
    return float(meta.get("kv_proj_params", 0.0)) * bytes_per_param * (r - 1) / tp
