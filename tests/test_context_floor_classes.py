"""TensorRT-LLM context classes that hold their fixed latency under their fastest fitted call, per class and GPU
(``kernelfit.rules.FLOOR_CONTEXT_CLASSES``, ``latency_floor``): L40S's FP8 prefill with one head per KV head, which unbounded
took 12.3 µs against a fastest call of 8.9 µs and priced its short rows 42-48% too slow; TensorRT-LLM's other context
classes keep their fit."""
import pytest

pd = pytest.importorskip("pandas")

from ironlaw.measure.calibrate import kernelfit  # noqa: E402
from ironlaw.measure.calibrate.kerneltable import KernelTable  # noqa: E402


def _context(gpu: str, heads_per_kv: int = 1, dtype: str = "fp8", framework: str = "trtllm") -> dict:
    rows = [dict(batch_size=b, isl=s, num_heads=h * heads_per_kv, num_key_value_heads=h, head_dim=128, window_size=0,
                 attn_dtype=dtype, kv_cache_dtype="fp8", kernel_source="torch_flow",
                 latency_s=9e-6 + 1e-12 * b * s * s * h)
            for b in (1, 4, 16) for s in (16, 256, 4096) for h in (1, 8, 32)]
    t = KernelTable("context_attention", gpu, "x", framework, "1.3.0rc20", "x.parquet", pd.DataFrame(rows))
    return {g.name: g for g in kernelfit.groups([t])}


def test_l40s_fp8_one_head_prefill_is_bounded_by_its_fastest_call():
    g = _context("l40s")["context attention fp8, KV fp8, one head per KV head"]
    assert kernelfit.rules.floor_class(g)
    fit_rows = kernelfit.split(g.rows, g.op)[0]
    assert kernelfit.shapefit.latency_floor(g, fit_rows) == pytest.approx(float(fit_rows.latency_s.min()))


def test_other_trtllm_context_classes_keep_their_fit():
    for g in (_context("rtx-pro-6000")["context attention fp8, KV fp8, one head per KV head"],
              _context("l40s", dtype="bfloat16")["context attention bf16, KV fp8, one head per KV head"],
              _context("l40s", heads_per_kv=4)["context attention fp8, KV fp8"]):
        assert not kernelfit.rules.floor_class(g) and kernelfit.shapefit.latency_floor(g, g.rows) is None
    vllm = _context("l40s", framework="vllm")["context attention fp8, KV fp8, one head per KV head"]
    assert kernelfit.shapefit.latency_floor(vllm, vllm.rows) == pytest.approx(float(vllm.rows.latency_s.min()))
