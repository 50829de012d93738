"""MLA's context classes hold their fixed latency under their fastest fitted call, every framework's
(``kernelfit.rules.FLOOR_ANY_OPS``, ``latency_floor``): unbounded, TensorRT-LLM 1.3.0rc20's RTX PRO 6000 class, bf16 on
an FP8 cache, took 15.0 µs against a fastest call of 13.1 µs, and its short batch-1 rows held out 19-25% too slow; but
for SGLang's MLA prefill on TRT-LLM's ragged kernel (``trtllm_mla``, ``kernelfit.rules.FLOOR_FREE_KERNELS``), which held
out worse under it."""
import pytest

pd = pytest.importorskip("pandas")

from ironlaw.machine import hardware  # noqa: E402
from ironlaw.measure.calibrate import kernelfit  # noqa: E402
from ironlaw.measure.calibrate.kerneltable import KernelTable  # noqa: E402


def _mla(framework: str, source: str = "default") -> KernelTable:
    rows = [dict(batch_size=b, isl=s, num_heads=h, tp_size=128 // h, step=0, mla_dtype="bfloat16",
                 kv_cache_dtype="bfloat16", kernel_source=source, latency_s=13e-6 + 1e-9 * b * s * s * h / 4096)
            for b in (1, 2, 4, 8) for s in (16, 256, 1024, 4096) for h in (16, 32, 64, 128)]
    return KernelTable("context_mla", "b300", "NVIDIA B300", framework, "1.3.0rc20", "x.parquet", pd.DataFrame(rows))


@pytest.mark.parametrize("framework", ["trtllm", "vllm", "sglang"])
def test_a_context_mla_class_is_bounded_by_its_fastest_call_on_every_framework(framework):
    (g,) = kernelfit.groups([_mla(framework)])
    assert kernelfit.shapefit.latency_floor(g, g.rows) == pytest.approx(float(g.rows.latency_s.min()))
    fit_rows = kernelfit.split(g.rows, g.op)[0]
    assert kernelfit.shapefit.latency_floor(g, fit_rows) == pytest.approx(float(fit_rows.latency_s.min()))



def test_sglangs_trtllm_mla_prefill_keeps_its_fit():
    (g,) = kernelfit.groups([_mla("sglang", "trtllm_mla")])
    assert kernelfit.shapefit.latency_floor(g, g.rows) is None
    (fa,) = kernelfit.groups([_mla("sglang", "flash_attention")])
    assert kernelfit.shapefit.latency_floor(fa, fa.rows) == pytest.approx(float(fa.rows.latency_s.min()))
