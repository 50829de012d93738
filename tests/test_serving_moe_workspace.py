"""The profiling step TensorRT-LLM sizes its KV cache after, for an MoE model under attention DP.

``KvCacheCreator`` (tensorrt_llm/_torch/pyexecutor/_util.py) replicates its dummy max_num_tokens context requests
tp_size times under attention DP, so every rank runs a full step; the CUTLASS fused MoE gathers all ranks' rows
and, with ``moe_max_num_tokens`` unset, runs them in one chunk (fused_moe_cutlass.py). Its workspace therefore
holds dp × max_num_tokens rows, and the KV cache gets the fraction of what that peak leaves."""
from __future__ import annotations

import math

from ironlaw.machine import hardware
from ironlaw.models.serving import engine
from ironlaw.models.serving import throughput as st
from ironlaw.models.serving.engine import Layout, profiled_tokens
from ironlaw.models.serving.step import build

GIB = 2.0**30


def test_profiled_tokens_pool_only_an_moe_model_under_attention_dp():
    moe, dense = {"experts": 8}, {}
    assert profiled_tokens(moe, Layout(tp=8, ep=8, attention_dp=True), 2048) == 8 * 2048
    assert profiled_tokens(moe, Layout(tp=8, ep=8), 2048) == 2048
    assert profiled_tokens(dense, Layout(tp=8), 2048) == 2048
    assert profiled_tokens(moe, Layout(tp=4, ep=4, attention_dp=True), 3000) == 12000


def test_pooled_workspace_holds_the_cutlass_rows_and_shrinks_the_kv_cache():
    """Maverick on 8 H100 (FP8, attention DP): the workspace is at least the CUTLASS MoE's gated fc1 output for
    every gathered row in bf16 (rows × top-k × 2 × expert inter × 2 bytes, from the model's own config), and the
    KV budget is kv_fraction of what weights and that workspace leave."""
    h100 = hardware.get("h100")
    kw = dict(tp=8, ep=8, dtype="fp8", kv_dtype="fp8", kv_fraction=0.95)
    dp = st.max_throughput("llama4-maverick", h100, 128, 2048, attention_dp=True, **kw)
    mnt = dp.limits.max_num_tokens
    meta = build("llama4-maverick", "decode", 1, 1, "fp8", "fp8", h100).meta
    fc1 = 8 * mnt * meta["experts_per_token"] * 2 * 8192 * 2      # Maverick's expert intermediate size: 8192
    m = dp.memory
    assert m["workspace_bytes"] >= fc1
    assert m["workspace_bytes"] == engine.workspace_bytes("llama4-maverick", h100, meta,
                                                          Layout(tp=8, ep=8, attention_dp=True), "fp8", "fp8", mnt)
    one_rank = engine.workspace_bytes("llama4-maverick", h100, meta, Layout(tp=8, ep=8), "fp8", "fp8", mnt)
    assert m["workspace_bytes"] > 2 * one_rank
    cap = h100.memory[h100.device_tier].capacity_bytes
    assert abs(m["kv_budget_bytes"] - 0.95 * (cap - m["weights_bytes"] - m["workspace_bytes"])) < 1.0


def test_dense_models_and_tp_without_attention_dp_keep_one_ranks_step():
    h100 = hardware.get("h100")
    meta = build("llama3-70b", "decode", 1, 1, "fp8", "fp8", h100).meta
    a = engine.workspace_bytes("llama3-70b", h100, meta, Layout(tp=8), "fp8", "fp8", 4096)
    one = float(build("llama3-70b", "decode", 4096, 1, "fp8", "fp8", h100).footprint["activations"]) * 2.0
    assert a == one


def test_deepep_ranks_size_their_moe_rows_by_what_they_receive():
    """DeepEP's normal dispatch hands a rank each token once that routes to one of its slots; its low-latency
    buffer holds [local slots, ep · T] rows run as top-1. The MNNVL and NVLink one/two-sided exchanges receive into
    ep · T padded rows, the all-gather's pool (DeepSeek-R1: 256 experts + 32 redundant over EP 72, top-8)."""
    r1 = {"experts": 256, "experts_per_token": 8}
    lay = dict(tp=72, ep=72, attention_dp=True, redundant_experts=32)
    reach = 1.0 - (1.0 - 4 / 288) ** 8                                   # a token reaches a rank's 4 slots
    assert profiled_tokens(r1, Layout(**lay, dispatcher="deepep"), 4608) == math.ceil(72 * 4608 * reach)
    assert 0.10 < reach < 0.11                                           # a tenth of the pool, not all of it
    assert profiled_tokens(r1, Layout(**lay, dispatcher="deepep-ll"), 256) == 4 * 72 * 256 // 8
    for d in (None, "nvlink-one-sided", "nvlink-two-sided"):
        assert profiled_tokens(r1, Layout(**lay, dispatcher=d), 4608) == 72 * 4608
    assert profiled_tokens(r1, Layout(tp=8, ep=8, dispatcher="deepep"), 4608) == 4608   # no attention DP: no pool


def test_a_pool_that_does_not_fit_names_the_token_budget(cli):
    r = cli("serve", "deepseek-r1", "--on", "gb200", "--max-throughput", "--tp", "72", "--ep", "72", "--attention-dp",
            "--redundant-experts", "32")
    assert r.rc == 2 and "a smaller --max-num-tokens shrinks it" in r.err and r.err.count("\n") == 1, r.err
    wide = ("serve", "deepseek-r1", "--on", "b200", "--max-throughput", "--tp", "64", "--ep", "64", "--attention-dp")
    pooled = cli(*wide)
    assert pooled.rc == 2 and "workspace 338 GiB per GPU" in pooled.err, pooled.err
    small = cli(*wide, "--moe-dispatcher", "deepep", "--format", "json")      # 8 hosts of 8: DeepEP runs there
    assert small.rc == 0, small.err
    assert small.json()["memory_per_gpu"]["workspace_bytes"] < 0.2 * 338 * GIB
