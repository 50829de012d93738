"""Serving estimates against llama.cpp's published benches (GB10, M2 Ultra) and capacity invariants.

Reference: tests/data/llamacpp/ (ggml-org/llama.cpp benches, MIT). Qwen2.5-Coder-7B Q8_0
(7.54 GiB file, block scales included) is built from tests/data/qwen2.5-7b-config.json; the file size is
the weight bytes (Q8_0 = 8.5 bits per weight), the KV cache is fp16 (llama.cpp's default).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from ironlaw.models.serving import online as serving
from ironlaw.core.errors import IronlawError

QWEN = "hf:" + str(Path(__file__).parent / "data" / "qwen2.5-7b-config.json")
GIB = 2.0**30
SIZE = 7.54 * GIB
# llamacpp_official_benches.csv: (hardware, context already cached, measured tg tokens/s, compute dtype).
# gb10 at context 0 is the point gb10.toml's memory efficiency was derived from; the other rows are held out.
DECODE = [("gb10", 0, 29.30, "int8"), ("gb10", 4096, 28.27, "int8"), ("gb10", 8192, 27.42, "int8"),
          ("gb10", 16384, 25.93, "int8"), ("gb10", 32768, 22.70, "int8"),
          ("apple-m2-ultra", 0, 79.68, "fp16"), ("apple-m2-ultra", 4096, 74.70, "fp16")]
# llamacpp_dgx_spark_batched_bench_qwen2.5_7b_q8.csv: PP 512, TG 32, B -> S_TG tokens/s (all held out: gb10's
# [calibration.matmul.int8] was fitted on the B = 1 prefill rows of the same file, S_PP, by
# benchmarks/fit_gb10_llamacpp.py; its memory efficiency on the context-0 row of DECODE)
BATCHED = [(1, 29.24), (2, 54.46), (4, 104.33), (8, 195.67), (16, 335.01), (32, 593.27)]
# the same file at long prompts, B = 32: (PP, S_TG tokens/s) — the KV stream then rivals the weights
BATCHED_LONG = [(4096, 377.05), (8192, 268.20)]
# the fit rows (B = 1 prefill): (PP, S_PP tokens/s)
PREFILL = [(512, 2379.83), (4096, 2259.55), (8192, 2186.60)]


@pytest.mark.parametrize("hw,ctx,measured,dt", DECODE)
def test_llamacpp_decode_tokens_per_s(hw, ctx, measured, dt):
    # tg32 generates 32 tokens after ctx cached ones: the mean context is ctx + 16
    rate, est = serving.decode_tokens_per_s(QWEN, hw, 1, ctx + 16, dtype=dt, kv_dtype="fp16", weight_bytes=SIZE)
    assert est.bottleneck()["resource"] == "bandwidth"
    assert rate == pytest.approx(measured, rel=0.15)


def test_gb10_batched_decode_shape():
    """Throughput rises with the batch (weights read once per step), per-sequence rate falls, compute binds later.

    llama.cpp's quantized GEMM does not overlap its weight loads with its math (gb10.toml: serial = 1), so each
    added sequence adds its GEMM time (at the efficiency the prefill rows measured) to the weight stream; with
    full overlap the prediction would be +37% at B = 16 and +44% at B = 32."""
    pred = [serving.decode_tokens_per_s(QWEN, "gb10", b, 512 + 16, dtype="int8", kv_dtype="fp16",
                                        weight_bytes=SIZE)[0] for b, _ in BATCHED]
    meas = [m for _, m in BATCHED]
    assert all(y > x for x, y in zip(pred, pred[1:])) and all(y > x for x, y in zip(meas, meas[1:]))
    assert all(p2 / b2 <= p1 / b1 + 1e-9 for (b1, _), (b2, _), p1, p2 in zip(BATCHED, BATCHED[1:], pred, pred[1:]))
    for (b, m), p in zip(BATCHED, pred):                        # held out: +0% … +11% at B = 1 … 32
        assert p == pytest.approx(m, rel=0.15), b
    for pp, m in BATCHED_LONG:                                  # held out: +3%
        p = serving.decode_tokens_per_s(QWEN, "gb10", 32, pp + 16, dtype="int8", kv_dtype="fp16", weight_bytes=SIZE)[0]
        assert p == pytest.approx(m, rel=0.15), pp
    # with a short context (little KV to read per sequence) the batch amortises weights until compute binds
    big = [serving.decode_tokens_per_s(QWEN, "gb10", b, 16, dtype="int8", kv_dtype="fp16",
                                       weight_bytes=SIZE) for b in (1024, 2048)]
    assert big[1][1].bottleneck()["resource"] == "compute"
    assert big[1][0] / big[0][0] < 1.2                           # throughput flattens once compute binds


def test_gb10_prefill_fit_rows():
    """The rows gb10's int8 GEMM efficiency was fitted on (a fit check, not a validation): -11% … +7%."""
    for pp, m in PREFILL:
        rate, est = serving.prefill_tokens_per_s(QWEN, "gb10", pp, dtype="int8", kv_dtype="fp16", weight_bytes=SIZE)
        assert est.bottleneck()["resource"] == "compute"
        assert rate == pytest.approx(m, rel=0.15), pp


def test_serve_numbers_and_kv_dtype():
    e = serving.estimate("llama3-8b", "h100", 1024, 256, 32)
    assert e.tokens_per_s == pytest.approx(32 * 256 / (256 * e.itl_s), rel=1e-9)
    assert e.ttft_s > e.prefill_s > 0
    # decode at batch 32 is bandwidth-bound: weights (16 GB) + KV (32 × 1152 tokens × 128 KiB) per step
    step_bytes = 16.06e9 + 32 * 1152 * 131072
    assert e.decode_step_s == pytest.approx(step_bytes / (3.35e12 * 0.8), rel=0.2)
    fp8 = serving.estimate("llama3-8b", "h100", 1024, 256, 32, kv_dtype="fp8")
    assert fp8.capacity["kv_bytes_per_token"] == pytest.approx(e.capacity["kv_bytes_per_token"] / 2)
    # half the bytes per token, not quite twice the sequences: the engine's max_num_tokens (trtllm-bench's
    # heuristic) grows with the sequences its KV cache holds, and the workspace of one such step with it
    assert 1.9 * e.capacity["max_concurrency"] <= fp8.capacity["max_concurrency"] < 2 * e.capacity["max_concurrency"]
    assert fp8.decode_step_s < e.decode_step_s


def test_capacity_paging_and_errors():
    e = serving.estimate("llama3-8b", "h100", 1000, 30, 1)
    assert e.capacity["tokens_reserved_per_sequence"] == 1056            # the engine's blocks: ⌈1030 / 32⌉ · 32
    e = serving.estimate("llama3-8b", "xeon-8480", 1000, 30, 1, page_tokens=16)
    assert e.capacity["tokens_reserved_per_sequence"] == 1040            # ⌈1030 / 16⌉ · 16
    with pytest.raises(IronlawError, match="exceeds the KV-cache capacity"):
        serving.estimate("llama3-8b", "h100", 1024, 256, 100000)
    with pytest.raises(IronlawError, match="does not fit"):
        serving.estimate("llama3-70b", "h100", 1024, 256, 1)
    ok = serving.estimate("llama3-70b", "h100", 1024, 256, 1, tp=4)        # sharded, it fits
    assert ok.capacity["weights_bytes"] == pytest.approx(70.55e9 * 2 / 4, rel=0.01)
    with pytest.raises(IronlawError, match="--tp 3 does not divide"):
        serving.estimate("llama3-70b", "h100", 1024, 256, 1, tp=3)


def test_chunked_prefill_and_moe():
    plain = serving.estimate("llama3-8b", "h100", 4096, 256, 16)
    chunked = serving.estimate("llama3-8b", "h100", 4096, 256, 16, chunk=512)
    assert chunked.chunk == 512 and chunked.tokens_per_s > 0
    # no long stalls: chunked ITL is one mixed step, below the unchunked stall of a whole prefill
    assert chunked.itl_s < plain.decode_step_s + plain.prefill_s
    moe = serving.estimate("mixtral-8x7b", "h100", 512, 128, 1, tp=2)
    dense_bytes = moe.capacity["weights_bytes"]
    # batch 1 decode reads 2 of 8 experts: far less than all weights per step
    assert moe.decode_step_s < dense_bytes / (3.35e12 * 0.8)


def test_cli_serve(cli):
    r = cli("serve", "llama3-8b", "--on", "h100", "--prompt", "1024", "--output", "256", "--concurrency", "32",
            "--format", "json")
    assert r.rc == 0, r.err
    d = r.json()
    assert d["schema"] == "ironlaw.serve/1" and d["tokens_per_s"] > 0 and d["ttft_s"] > 0
    r = cli("serve", "llama3-8b", "--on", "h100", "--concurrency", "100000")
    assert r.rc == 2 and "KV-cache capacity" in r.err and r.err.count("\n") == 1
    r = cli("serve", "resnet50", "--on", "h100")
    assert r.rc == 2
