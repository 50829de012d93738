"""A kernel class that computes in another dtype than its ops (``math``): vLLM's prefill on TRT-LLM's kernels with an
FP8 KV cache quantizes the query to the cache's dtype and computes in FP8 (``kernelfit.rules.QUERY_AS_CACHE``,
``efficiency.with_variants``), so its bf16 ops may run past bf16's peak, up to FP8's."""
from dataclasses import replace

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.core.gemmshape import attention_kernel  # noqa: E402
from ironlaw.core.graph import Graph  # noqa: E402
from ironlaw.law import efficiency, law  # noqa: E402
from ironlaw.machine import calibration, hardware  # noqa: E402
from ironlaw.machine.calibration import Calibration  # noqa: E402
from ironlaw.measure.calibrate import kernelfit  # noqa: E402
from ironlaw.measure.calibrate.kerneltable import KernelTable  # noqa: E402

FP8_CACHE = attention_kernel("prefill", "bf16", "fp8")
SHAPE = {"eta_max": 1.0, "m_half": 1.0, "nk_half": 1.0, "k_half": 1.0, "streamed": 1.0, "latency_s": 1e-6}


def _table(source: str, kv: str = "fp8", framework: str = "vllm") -> KernelTable:
    rows = [dict(batch_size=b, isl=s, num_heads=32, num_key_value_heads=8, head_dim=128, window_size=0,
                 attn_dtype="bfloat16", kv_cache_dtype=kv, step=0, kernel_source=source, latency_s=1e-5 * s / 1024)
            for b in (1, 4) for s in (1024, 4096, 16384)]
    return KernelTable("context_attention", "b300", "NVIDIA B300", framework, "0.24.0", "x.parquet", pd.DataFrame(rows))


def test_only_trtllm_kernels_on_another_dtypes_cache_compute_in_it():
    (fp8,) = kernelfit.groups([_table("vllm_flashinfer_trtllmprefill")])
    assert kernelfit.launches.math_of(fp8) == {"math": "fp8"}
    (bf16,) = kernelfit.groups([_table("vllm_flashinfer_trtllmprefill", kv="bfloat16")])
    assert kernelfit.launches.math_of(bf16) == {}
    (triton,) = kernelfit.groups([_table("vllm_triton_attn")])
    assert kernelfit.launches.math_of(triton) == {}


def test_sglangs_trtllm_mla_prefill_on_an_fp8_cache_computes_in_fp8():
    """SGLang's MLA prefill on TRT-LLM's ragged kernel (B200 … GB300, ``trtllm_mla``) casts its operands to FP8 on
    an FP8 cache; on FlashAttention (H100, H200) it does not."""
    def mla(source: str) -> list:
        rows = [dict(batch_size=b, isl=s, num_heads=128, tp_size=1, step=0, mla_dtype="bfloat16", kv_cache_dtype=kv,
                     kernel_source=source, latency_s=1e-5 * s / 1024)
                for b in (1, 4) for s in (1024, 16384) for kv in ("bfloat16", "fp8")]
        t = KernelTable("context_mla", "b300", "NVIDIA B300", "sglang", "0.5.14", "x.parquet", pd.DataFrame(rows))
        return [kernelfit.launches.math_of(g) for g in kernelfit.groups([t])]
    assert mla("trtllm_mla") == [{}, {"math": "fp8"}]
    assert mla("flash_attention") == [{}, {}]


def test_an_fp8_models_mla_prefill_runs_as_fast_as_the_fp8_math_it_is_derived_from():
    """The FP8 model's MLA prefill class is derived from the bf16 model's (``kernelfit.fit``): where that one computes
    in FP8 already, its η stays as fitted (at FP8's peak both), not halved as from bf16 math."""
    rows = [dict(batch_size=b, isl=s, num_heads=h, tp_size=128 // h, step=0, mla_dtype="bfloat16", kv_cache_dtype="fp8",
                 kernel_source="trtllm_mla", latency_s=2e-5 + 1e-9 * b * s * s * h / 4096)
            for b in (1, 2, 4, 8) for s in (256, 1024, 4096, 16384) for h in (16, 32, 64, 128)]
    t = KernelTable("context_mla", "b300", "NVIDIA B300", "sglang", "0.5.14", "x.parquet", pd.DataFrame(rows))
    cal = kernelfit.fit(hardware.get("b300"), kernelfit.groups([t]))
    bf16, fp8 = (cal["kernel"][attention_kernel("prefill", m, "fp8", "_mla")] for m in ("bf16", "fp8"))
    assert bf16["math"] == "fp8" and "math" not in fp8 and fp8["eta_max"] == pytest.approx(bf16["eta_max"], rel=1e-3)


def _op(tokens: int = 16384):
    """A bf16 prefill of ``tokens`` on an FP8 cache, as the fitter builds a row's op."""
    t = _table("x")
    g = kernelfit.Group("g", ("kernel", FP8_CACHE), "context_attention", t, None)
    return kernelfit.ops.attention_op(next(t.rows.assign(isl=tokens).head(1).itertuples()), g)


def _cal(p: dict) -> dict:
    return {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"], "kernel": {FP8_CACHE: p}}


def test_a_class_computing_in_fp8_runs_a_bf16_op_at_fp8s_peak():
    """The same shape terms, with and without ``math``: a long prefill's tensor-core time at bf16's peak, and at
    FP8's (B300: 4.5 against 2.25 PFLOP/s) with it; its softmax's vector work is not the class's math and stays."""
    hw = hardware.get("b300")
    graph = Graph("t", "prefill", "bf16", [_op()])
    eta, times = [], []
    for p in (SHAPE, {**SHAPE, "math": "fp8"}):
        h = replace(hw, calibration=Calibration.of(_cal(p)))
        placed = law.place(graph, h)
        eta.append(float(np.ravel(efficiency.evaluate(placed.cols, h).compute_eta)[0]))
        times.append(float(np.ravel(law.timed(placed, h).compute_s)[0]))
    assert 0.9 < eta[0] <= 1.0 and eta[1] == pytest.approx(eta[0] * hw.peak("fp8") / hw.peak("bf16"))
    flops = float(graph.columns().flops.reshape(-1)[0])
    assert times[0] - times[1] == pytest.approx(flops / (hw.peak("bf16") * eta[0]) / 2, rel=1e-9)
    assert efficiency.with_variants(Calibration.of(_cal(SHAPE)), graph.columns(), hw)[1] == 1.0


def test_math_must_name_a_dtype_and_no_walk():
    with pytest.raises(IronlawError, match="math: must be a dtype"):
        calibration.check(_cal({**SHAPE, "math": "fp9"}), "calibration")
    with pytest.raises(IronlawError, match="math and key_ctas"):
        calibration.check(_cal({**SHAPE, "math": "fp8", "key_s": 1e-8, "key_ctas": 4.0}), "calibration")


def test_vllms_triton_head_dim_keeps_the_models_math():
    """vLLM's FlashInfer backend takes no head dim 192 (``FlashInferBackend.get_supported_head_sizes``): its rows run
    on vLLM's Triton prefill, whose query stays bf16. The class's ``math`` names the head dims TRT-LLM's kernel times
    (``math_head_dims``), and an op at 192 keeps bf16's peak while one at 128 runs at FP8's."""
    t = _table("vllm_flashinfer_trtllmprefill")
    tri = t.rows.assign(head_dim=192, kernel_source="vllm_triton_attn")
    (g,) = kernelfit.groups([replace(t, rows=pd.concat([t.rows, tri, t.rows.assign(head_dim=64)]))])
    assert kernelfit.launches.math_of(g) == {"math": "fp8", "math_head_dims": [64, 128]}
    (alone,) = kernelfit.groups([t])
    assert "math_head_dims" not in kernelfit.launches.math_of(alone)
    hw = hardware.get("b300")
    p = {**SHAPE, "math": "fp8", "math_head_dims": [64, 128]}
    g128 = kernelfit.Group("g", ("kernel", FP8_CACHE), "context_attention", t, None)
    ops = [kernelfit.ops.attention_op(next(r.head(1).itertuples()), g128) for r in (t.rows, tri)]
    cols = Graph("t", "prefill", "bf16", ops).columns()
    _, math = efficiency.with_variants(Calibration.of(_cal(p)), cols, hw)
    assert np.ravel(math).tolist() == [pytest.approx(hw.peak("fp8") / hw.peak("bf16")), 1.0]


def test_math_head_dims_need_math_and_head_dims():
    with pytest.raises(IronlawError, match="it needs math"):
        calibration.check(_cal({**SHAPE, "math_head_dims": [128]}), "calibration")
    for bad in ([], [0], "128", [True]):
        with pytest.raises(IronlawError, match="math_head_dims: must be a non-empty list"):
            calibration.check(_cal({**SHAPE, "math": "fp8", "math_head_dims": bad}), "calibration")
