"""Tensor parallelism past the key/value heads: qwen3-30b-a3b (HF config: 32 query heads, 4 KV heads × 128,
48 layers, hidden 2048) at TP 8 holds one KV head per rank, each head on two ranks, as vLLM's and TensorRT-LLM's
attention do; a TP that neither divides nor is a multiple of the KV heads stays refused."""
from __future__ import annotations

import pytest

from conftest import run_cli
from ironlaw.models import parallel
from ironlaw.models.workloads import Request, resolve

MODEL = "qwen3-30b-a3b"
LAYERS, HIDDEN, HEADS, KV_HEADS, HEAD_DIM, BF16 = 48, 2048, 32, 4, 128, 2
ONE_KV_HEAD_PER_TOKEN = LAYERS * 2 * HEAD_DIM * BF16         # K and V of one head, every layer: 24 KiB


def serve_json(tp: int) -> dict:
    r = run_cli("serve", MODEL, "--on", "h100", "--tp", str(tp), "--format", "json", timeout=300)
    assert r.rc == 0, r.err
    return r.json()


def test_serve_at_tp_8_caches_one_kv_head_per_rank_and_replicates_its_projection():
    at4, at8 = serve_json(4)["capacity"], serve_json(8)["capacity"]
    assert at8["kv_bytes_per_token"] == ONE_KV_HEAD_PER_TOKEN == at4["kv_bytes_per_token"]
    # TP 8 halves TP 4's weights but for the K/V projection, which each rank holds for its one head:
    # the extra is the whole K/V projection × (2 replicas − 1) / 8 ranks
    kv_proj = LAYERS * HIDDEN * 2 * KV_HEADS * HEAD_DIM * BF16
    assert at8["weights_bytes"] - at4["weights_bytes"] / 2 == pytest.approx(kv_proj / 8, rel=1e-9)


def analyze_json(tp: int) -> dict:
    r = run_cli("analyze", MODEL, "--on", "h100", "--phase", "decode", "--tp", str(tp), "--gpus", str(tp),
                "--format", "json", timeout=300)
    assert r.rc == 0, r.err
    return r.json()


def test_analyze_at_tp_8_splits_the_query_heads_and_replicates_the_kv_head():
    one, four, eight = analyze_json(1), analyze_json(4), analyze_json(8)
    kv = lambda d: d["footprint"]["by_class"]["kv_cache"]                    # noqa: E731
    assert kv(eight) == pytest.approx(kv(four)) == pytest.approx(kv(one) / KV_HEADS)
    flops = lambda d: next(o["flops"] for o in d["ops"] if o["name"] == "attn_pre_proj")    # noqa: E731
    q, k_v = HEADS * HEAD_DIM, 2 * KV_HEADS * HEAD_DIM
    assert flops(eight) / flops(one) == pytest.approx((q / 8 + 2 * HEAD_DIM) / (q + k_v))   # 768 of 5,120 columns
    assert flops(four) / flops(one) == pytest.approx(1 / 4)


def test_a_rank_on_one_kv_head_groups_its_own_query_heads():
    g = resolve(Request(MODEL, phase="decode", batch=2, seq=64, dtype="bf16"))
    att = lambda s: next(o for o in s.ops if o.kind == "attention")        # noqa: E731
    m4, m8 = att(parallel.tp_shard(g, 4)).attrs["mnk"][0], att(parallel.tp_shard(g, 8)).attrs["mnk"][0]
    assert (m4, m8) == (HEADS / KV_HEADS, HEADS / 8)         # a decode row per query head sharing the KV head


def test_kv_head_replicas():
    gqa = {"heads": HEADS, "kv_heads": KV_HEADS}
    assert [parallel.kv_head_replicas(gqa, t) for t in (1, 2, 4, 8, 16, 32)] == [1, 1, 1, 2, 4, 8]
    assert parallel.kv_head_replicas({**gqa, "kv_shared_by_heads": True}, 8) == 1     # MLA's latent: whole
    assert parallel.kv_tp_choices(40, 8) == [1, 2, 4, 8, 40]


@pytest.mark.parametrize("args,msg", [
    (("serve", MODEL, "--tp", "3"), "--tp 3 does not divide the 32 attention heads of qwen3-30b-a3b; use "
                                    "1, 2, 4, 8, 16 or 32"),
    (("analyze", "llama4-scout", "--tp", "5", "--gpus", "5"),
     "--tp 5 does not divide the 8 key/value heads of llama4-scout nor is a multiple of them; use "
     "1, 2, 4, 8 or 40"),
    (("analyze", MODEL, "--tp", "8", "--gpus", "8", "--phase", "train"),
     "--tp 8 does not divide the 4 key/value heads of qwen3-30b-a3b; use a divisor of 4"),
])
def test_a_tp_that_neither_divides_nor_multiplies_the_kv_heads_is_refused(args, msg):
    r = run_cli(*args, "--on", "h100", timeout=300)
    assert r.rc == 2 and len(r.err.strip().splitlines()) == 1 and msg in r.err, r.err
