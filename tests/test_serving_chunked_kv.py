"""What a request reserves in the KV cache of a chunked-attention model (Llama 4) under TensorRT-LLM.

TensorRT-LLM's KV cache manager gives every layer one attention window (max_seq_len) unless
``kv_cache_config.max_attention_window`` lists several; the chunk (8,192 tokens) reaches only the attention
kernel's mask. So a Llama 4 request of s tokens holds all s in every layer; vLLM and SGLang keep the analytic
cache's min(s, c) per chunked layer, as before."""
from __future__ import annotations

from dataclasses import replace

from ironlaw.machine import hardware
from ironlaw.models.serving import engine
from ironlaw.models.serving import throughput as st
from ironlaw.models.serving.engine import FITTED, blocks_tokens, kv_sequence_bytes
from ironlaw.models.serving.step import build


def _kv(spec: str, tokens: int, whole: bool) -> float:
    h200 = hardware.get("h200")
    meta = build(spec, "decode", 1, 1, "fp8", "fp8", h200).meta
    return kv_sequence_bytes(spec, h200, meta, "fp8", "fp8", tokens, replace(FITTED, chunked_kv_whole=whole))


def test_a_long_llama4_request_holds_every_token_in_every_layer():
    """Scout: 48 layers × 8 KV heads × head dim 128, K and V, one byte each (FP8) per token."""
    tokens = blocks_tokens(20000, 2000)
    whole = _kv("llama4-scout", tokens, True)
    assert whole == 48 * 8 * 128 * 2 * tokens
    chunked = _kv("llama4-scout", tokens, False)      # 36 chunked layers keep 8,192 tokens, 12 global keep all
    assert chunked == (12 * tokens + 36 * 8192) * 8 * 128 * 2
    assert whole > 1.8 * chunked


def test_within_one_chunk_and_without_chunked_layers_nothing_changes():
    assert _kv("llama4-scout", blocks_tokens(1000, 2000), True) == _kv("llama4-scout", blocks_tokens(1000, 2000), False)
    long = blocks_tokens(20000, 2000)
    assert _kv("qwen3-235b-a22b", long, True) == _kv("qwen3-235b-a22b", long, False)


def test_the_kv_budget_holds_fewer_long_llama4_requests_under_tensorrt_llm_only():
    h200 = hardware.get("h200")
    kw = dict(tp=4, ep=4, attention_dp=True, dtype="fp8", kv_dtype="fp8", kv_fraction=0.95, requests=1000)
    trt = st.max_throughput("llama4-scout", h200, 20000, 2000, **kw)
    chunk = st.max_throughput("llama4-scout", h200, 20000, 2000, constants=replace(FITTED, chunked_kv_whole=False),
                              **kw)
    assert trt.memory["kv_bytes_per_sequence"] > 1.8 * chunk.memory["kv_bytes_per_sequence"]
    assert trt.batch_limit == chunk.batch_limit == "kv_memory"
    assert trt.batch < 0.6 * chunk.batch
    assert engine.FITTED.chunked_kv_whole


def test_vllm_and_sglang_keep_the_chunk_alone():
    from ironlaw.models.serving import frameworks
    h200 = hardware.get("h200")
    for name in ("vllm", "sglang"):
        eng = frameworks.select(name, h200, tp=1, offline=True)
        assert not frameworks.constants(eng, FITTED).chunked_kv_whole
