"""The kernel tables' fixed seconds per call inside the engine's step: ``ServingConstants.kernel_latency_share``."""
from __future__ import annotations

from dataclasses import replace

import pytest

from ironlaw.machine import hardware
from ironlaw.models.serving import engine, step


def _latencies(share: float) -> tuple[float, float]:
    cal = step.engine_hw(hardware.get("h100"), replace(engine.FITTED, kernel_latency_share=share)).calibration
    return cal.shape("matmul")["fp8"]["latency_s"], cal.kernel["attention_generation_bf16_kv_fp8"]["latency_s"]


def test_the_share_scales_each_table_class_fixed_latency():
    cal = hardware.get("h100").calibration
    gemm, att = cal.shape("matmul")["fp8"]["latency_s"], cal.kernel["attention_generation_bf16_kv_fp8"]["latency_s"]
    assert gemm > 0 and att > 0                              # the catalog's kernel fit measured them
    assert _latencies(0.0) == (0.0, 0.0)
    assert _latencies(1.0) == pytest.approx((gemm, att))
    assert _latencies(0.25) == pytest.approx((0.25 * gemm, 0.25 * att))


def test_a_graph_step_pays_the_share_of_every_table_kernel_call():
    """A decode step replayed as a CUDA graph (no host floor) lasts longer by share × the fixed seconds of its
    table-priced kernels: linear in the share, and more for a deeper model (more kernels per step)."""
    def decode_s(spec: str, tp: int, share: float) -> float:
        c = replace(engine.FITTED, kernel_latency_share=share)
        run = engine.engine_run(spec, "h100", 1024, 1024, 64, tp=tp, dtype="fp8", constants=c).run
        return step.step_seconds(run, 64, 0.0, 0.0, pad=True)[0]
    small = [decode_s("llama3-8b", 1, s) for s in (0.0, 0.5, 1.0)]
    assert small[0] < small[1] < small[2]
    assert small[1] - small[0] == pytest.approx(0.5 * (small[2] - small[0]), rel=1e-6)
    big = [decode_s("llama3-70b", 2, s) for s in (0.0, 1.0)]
    assert big[1] - big[0] > 2.0 * (small[2] - small[0])     # 80 layers against 32


def test_the_benchmark_fast_path_prices_the_share_as_the_model_does():
    """benchmarks/trtllm_h100.py fits the share on its per-op arrays (``CellTerms``): they must time a cell as the
    model does at every share, the eager context steps and the padded decode steps alike."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    import trtllm_h100 as h100
    cell = {"model": "llama3.3-70b", "spec": "llama3-70b", "tp": 2, "isl": 1000, "osl": 1000, "published": 1.0}
    terms = h100.CellTerms(h100.predict(cell), cell)
    for share in (0.0, 0.3, 1.0):
        c = replace(engine.FITTED, kernel_latency_share=share)
        assert terms.time(vars(c)) == pytest.approx(h100.predict(cell, constants=c).time_s, rel=1e-9)
