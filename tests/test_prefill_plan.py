"""FlashInfer's prefill plan splits the keys where its query tiles fill at most half its grid (``core.splitkv``,
``prefill_plan_splits``), and a class that states ``plan_split_s`` and ``plan_merge_s`` pays them there, at the head
dims it runs on FlashInfer (``efficiency.plan_split_s``; ``kernelfit.rules.PLAN_SPLIT_CLASSES``: vLLM's FP8-cache
sliding-window prefill on L40S and RTX PRO 6000)."""
import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.core.gemmshape import attention_kernel  # noqa: E402
from ironlaw.core.splitkv import prefill_plan_splits, prefill_tile_rows  # noqa: E402
from ironlaw.machine import calibration  # noqa: E402
from ironlaw.measure.calibrate import kernelfit  # noqa: E402
from ironlaw.measure.calibrate.kerneltable import KernelTable  # noqa: E402
from attention_cases import prefill_latency_s  # noqa: E402

WINDOW = attention_kernel("prefill", "bf16", "fp8", "_window")
SHAPE = {"eta_max": 0.3, "m_half": 1.0, "nk_half": 1.0, "k_half": 1.0, "streamed": 1.0, "latency_s": 6e-6}


def test_the_tile_and_the_split_follow_the_plan():
    """Query tiles of 128 packed rows over 64 below head dim 256, 64 over 16, else 16; on L40S (142 SMs, a grid of
    284) the plan splits 1 × 8,192 tokens × 2 heads on one KV head (128 tiles) and 4 × 256 × 16 (128), not 4 × 128 × 32
    (a sequence of two pages, the smallest chunk) nor 256 × 32 × 40 (2,560 tiles)."""
    assert list(prefill_tile_rows([8.0, 32.0, 128.0, 128.0], [64, 64, 64, 256])) == [16.0, 64.0, 128.0, 64.0]
    got = prefill_plan_splits(np.array([1.0, 4.0, 4.0, 256.0]), np.array([16384.0, 4096.0, 4096.0, 1280.0]),
                              np.array([8192.0, 256.0, 128.0, 32.0]), 64, 142)
    assert list(got) == [True, True, False, False]
    assert not prefill_plan_splits(143.0, 128.0, 1024.0, 64, 142) and prefill_plan_splits(142.0, 128.0, 1024.0, 64, 142)


def _latency(batch: int, tokens: float, heads: int, kv_heads: int, p: dict, head_dim: int = 64) -> float:
    """The fixed seconds (``Terms.latency_s``) the law gives one vLLM window prefill (window 128) on L40S under a
    class of fields ``p``."""
    row = dict(batch_size=batch, isl=tokens, num_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim,
               window_size=128, attn_dtype="bfloat16", kv_cache_dtype="fp8")
    return prefill_latency_s(row, ("NVIDIA L40S", "vllm", "0.24.0"), WINDOW, p, "l40s", "bf16")


def test_a_split_call_pays_its_split_and_its_rows_merge():
    """1 × 8,192 tokens × 2 heads (one KV head) splits: 8 µs and 16,384 query rows × heads at 2 ns; 256 × 32 × 40
    does not; head dim 192, which the class does not run on FlashInfer, never pays."""
    p = {**SHAPE, "plan_split_s": 8e-6, "plan_merge_s": 2e-9, "plan_head_dims": [64, 128, 256]}
    assert _latency(1, 8192.0, 2, 1, p) == pytest.approx(6e-6 + 8e-6 + 16384 * 2e-9)
    assert _latency(256, 32.0, 40, 1, p) == pytest.approx(6e-6)
    assert _latency(1, 8192.0, 2, 1, p, head_dim=192) == pytest.approx(6e-6)
    assert _latency(1, 8192.0, 2, 1, SHAPE) == pytest.approx(6e-6)


def test_plan_fields_go_together():
    base = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"]}
    for bad in ({"plan_split_s": 8e-6}, {"plan_head_dims": [64]}, {"plan_merge_s": 2e-9, "plan_head_dims": [64]},
                {"plan_split_s": 8e-6, "plan_head_dims": []}, {"plan_split_s": 1.0, "plan_head_dims": [64]}):
        with pytest.raises(IronlawError, match="plan_"):
            calibration.check({**base, "kernel": {WINDOW: {**SHAPE, **bad}}}, "calibration")
    calibration.check({**base, "kernel": {WINDOW: {**SHAPE, "plan_split_s": 8e-6, "plan_merge_s": 2e-9,
                                                   "plan_head_dims": [64, 128]}}}, "calibration")


def _window_group(gpu: str, framework: str = "vllm", kv: str = "fp8"):
    rows = pd.DataFrame([dict(batch_size=b, isl=s, num_heads=8, num_key_value_heads=2, head_dim=d, window_size=128,
                              attn_dtype="bfloat16", kv_cache_dtype=kv, step=0, latency_s=1e-5,
                              kernel_source="vllm_triton_attn" if d == 192 else "vllm_flashinfer_fiprefill")
                         for b in (1, 8) for s in (256, 4096) for d in (64, 128, 192)])
    (g,) = kernelfit.groups([KernelTable("context_attention", gpu, "x", framework, "0.24.0", "x.parquet", rows)])
    return g


def test_vllm_s_gddr_fp8_window_classes_fit_the_split_at_flashinfer_s_head_dims():
    for gpu in ("l40s", "rtx-pro-6000"):
        g = _window_group(gpu)
        assert kernelfit.launches.plan_of(g, g.rows) == {"plan_head_dims": [64, 128]}
    bounds, starts = kernelfit.shapefit.with_plan_cost({"plan_head_dims": [64]}, (("eta_max", 1.0),), [[0.5]])
    assert [b[0] for b in bounds] == ["eta_max", "plan_split_s", "plan_merge_s"] and len(starts[0]) == 3
    assert kernelfit.shapefit.with_plan_cost({}, (("eta_max", 1.0),), [[0.5]]) == ((("eta_max", 1.0),), [[0.5]])
    for g in (_window_group("h100"), _window_group("l40s", framework="sglang"), _window_group("l40s", kv="bfloat16")):
        assert kernelfit.launches.plan_of(g, g.rows) == {}
