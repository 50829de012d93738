"""The routed experts on the device's measured MoE layer times one level constant (``expert_layer_scale``,
``expertcarry.measured_layer``), a what-if that ``engine.FITTED`` leaves off; and trtllm_h200.py --rows, each MoE
cell's routed rows per expert against the range the H100 cells exercised."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from ironlaw.core.errors import IronlawError
from ironlaw.machine import hardware
from ironlaw.models.serving import engine, expertcarry, step
from ironlaw.models.serving.engine import FITTED

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import trtllm_h200 as h200  # noqa: E402

EP8 = engine.Layout(tp=8, ep=8, attention_dp=True)


def test_fitted_leaves_the_level_off():
    assert FITTED.expert_layer_scale is None
    assert expertcarry.measured_layer(FITTED, hardware.get("h200"), "fp8", EP8) is FITTED


def test_the_scale_divides_every_eta_of_the_measured_layer_and_multiplies_its_fixed_seconds():
    moe = step.fitted_moe(hardware.get("h200"))
    gemm, rows = moe["moe_grouped_gemm.fp8"], moe["moe_rows.fp8"]
    out = step.scaled_moe(moe, 2.5)
    assert out["moe_grouped_gemm.fp8"]["eta_max"] == pytest.approx(gemm["eta_max"] / 2.5)
    assert out["moe_grouped_gemm.fp8"]["streamed"] == pytest.approx(gemm["streamed"] / 2.5)
    assert out["moe_grouped_gemm.fp8"]["latency_s"] == pytest.approx(gemm["latency_s"] * 2.5)
    assert out["moe_grouped_gemm.fp8"]["serial"] == gemm["serial"]
    assert out["moe_rows.fp8"]["memory"] == pytest.approx(rows["memory"] / 2.5)
    assert step.scaled_moe(moe, None) is moe and step.scaled_moe(moe, 1.0) is moe
    with pytest.raises(IronlawError, match="expert_layer_scale must be a positive factor, got -1"):
        step.scaled_moe(moe, -1.0)


def test_an_expert_parallel_layer_goes_on_the_measured_layer_and_a_one_gpu_layer_keeps_it_unscaled():
    h200, h20 = hardware.get("h200"), hardware.get("h20")
    level = replace(FITTED, expert_layer_scale=2.5)
    on = expertcarry.measured_layer(level, h200, "fp8", EP8)
    assert on.moe_tables and on.expert_layer_scale == 2.5
    assert expertcarry.measured_layer(level, h20, "fp8", EP8) is level       # no measured MoE layer: the η
    assert expertcarry.measured_layer(level, h200, "fp8", engine.Layout()) is level
    one = expertcarry.one_gpu_layer(level, h200, "fp8", engine.Layout())
    assert one.moe_tables and one.expert_layer_scale is None


def test_the_decode_step_s_routed_layer_grows_with_the_level():
    """Qwen3-235B-A22B's decode step on H200 under EP 8 (375 sequences per rank): the step at level 2 exceeds the
    step at level 1 by the measured layer's own seconds (the routed GEMMs and rows), which are then a real share."""
    h = hardware.get("h200")
    meta, limits, mem = engine.prepare("qwen3-235b-a22b", h, EP8, "fp8", "fp8", 128, 2048, 0.95, 2048, None, FITTED)
    times = []
    for k in (1.0, 2.0):
        c = replace(FITTED, expert_layer_scale=k)
        run = engine.engine_of("qwen3-235b-a22b", h, EP8, "fp8", "fp8", (128, 2048), meta, limits, mem, 375, c)
        assert f"{step.GROUPED_GEMM}.fp8" in run.law_hw.calibration.kernel
        times.append(step.step_seconds(run, 375, 0.0, 0.0, True)[0])
    assert 1.1 * times[0] < times[1] < 2.0 * times[0]


def test_rows_are_printed_against_the_h100_range(capsys):
    rows = [{"model": "llama4-maverick", "isl": 500, "osl": 2000, "error": -28.1, "batch": 2512, "rows": 24.0},
            {"model": "llama4-maverick", "isl": 20000, "osl": 2000, "error": -4.7, "batch": 224, "rows": 2.0},
            {"model": "llama3.1-8b", "isl": 128, "osl": 128, "error": 1.0, "batch": 4096, "rows": None}]
    h200.print_rows(rows, {"llama4-maverick": (2.0, 8.0)})
    out = capsys.readouterr().out.splitlines()
    body = [ln for ln in out if ln.startswith("llama")]
    assert len(body) == 2
    assert body[0].split()[-2:] == ["2-8", "above"] and body[1].split()[-1] == "2-8"


def test_the_end_to_end_expert_eta_have_nearly_the_measured_layer_s_shape():
    """benchmarks/expert_shape.py on H200, Qwen3-235B-A22B under EP 8: from 4 to 128 rows per expert the routed
    layer on the end-to-end η stays about 2× the measured layer (docs/accuracy.md, "The expert term's shape"),
    the ratio growing by less than a quarter (1.98 → 2.40 on the measured fp8 class fitted on its own-key rows, 1.91
    → 2.19 on the class fitted on every row): the η are a level over the measured shape, not another shape."""
    import expert_shape
    (b1, r1, e1, m1), (b2, r2, e2, m2) = expert_shape.layer_rows("h200", "fp8", "qwen3-235b-a22b", 8, (8, 256))
    assert (r1, r2) == (pytest.approx(4, rel=0.05), pytest.approx(128, rel=0.05))
    assert m2 > m1 and e2 > e1
    assert 1.5 < e1 / m1 < e2 / m2 < 1.25 * e1 / m1
