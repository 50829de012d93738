"""The routed experts' compute η carried from the H100 FP8 fit by each GPU's measured GEMM ceiling
(models/serving/expertcarry.py)."""
from __future__ import annotations

import csv
import statistics
from dataclasses import replace
from pathlib import Path

import pytest

from ironlaw.machine import hardware
from ironlaw.models.serving import engine, expertcarry, step
from ironlaw.models.serving.engine import FITTED

B200_GEMM = Path(__file__).parent / "data" / "kernel_tables" / "b200_sxm" / "gemm" / "trtllm" / "1.3.0rc20" / "gemm_perf.csv"


def test_h100_fp8_keeps_the_fitted_expert_eta():
    """The constants were fitted on H100's FP8 cells: there the carry is the identity, exactly."""
    assert expertcarry.expert_ratio(hardware.get("h100"), "fp8") == 1.0
    assert expertcarry.carried(FITTED, hardware.get("h100"), "fp8") is FITTED


def test_b200_fp4_ceiling_is_its_measured_rows():
    """B200's NVFP4 ceiling read off its kernel-fitted GEMM term lands on the compute-bound rows of the B200
    NVFP4 extract (M ≥ 8192, N and K ≥ 4096: achieved FLOP/s over the 9 PFLOP/s datasheet peak), and the carried
    η is about 0.63 of the fit's (H100 FP8 sustains about 0.62 of its peak, B200 NVFP4 about 0.39)."""
    hw = hardware.get("b200")
    with B200_GEMM.open() as f:
        rows = [r for r in csv.DictReader(f) if r["gemm_dtype"] == "nvfp4" and int(r["m"]) >= 8192
                and int(r["n"]) >= 4096 and int(r["k"]) >= 4096]
    assert len(rows) >= 4
    measured = statistics.median(2.0 * int(r["m"]) * int(r["n"]) * int(r["k"]) / (float(r["latency"]) * 1e-3)
                                 / hw.peak("fp4") for r in rows)
    assert expertcarry.gemm_ceiling(hw, "fp4") == pytest.approx(measured, rel=0.10)
    ratio = expertcarry.expert_ratio(hw, "fp4")
    assert 0.55 < ratio < 0.70
    assert expertcarry.carried(FITTED, hw, "fp4").expert_gemm_eta == pytest.approx(FITTED.expert_gemm_eta * ratio)


def test_what_the_carry_leaves_alone():
    """A device without a kernel-fitted GEMM in the dtype keeps the fit's share of its datasheet peak; the measured
    MoE layer (moe_tables) and constants without expert η of their own are not touched; the streaming η is kept."""
    h20 = hardware.get("h20")
    assert expertcarry.gemm_ceiling(h20, "fp8") is None and expertcarry.carried(FITTED, h20, "fp8") is FITTED
    b200 = hardware.get("b200")
    tables = replace(FITTED, moe_tables=True)
    assert expertcarry.carried(tables, b200, "fp4") is tables
    own = replace(FITTED, expert_gemm_eta=None)
    assert expertcarry.carried(own, b200, "fp4") is own
    assert expertcarry.carried(FITTED, b200, "fp4").expert_stream_eta == FITTED.expert_stream_eta


def test_the_engine_prices_the_grouped_gemm_at_the_carried_eta():
    """A B200 FP4 MoE engine under expert parallelism and attention DP (the layout the expert η were fitted on)
    prices its grouped-GEMM class at the carried η."""
    hw = hardware.get("b200")
    lay = engine.Layout(tp=4, ep=4, attention_dp=True)
    meta, limits, mem = engine.prepare("qwen3-30b-a3b", hw, lay, "fp4", "fp8", 2048, 128, 0.9, 2048, None, FITTED)
    run = engine.engine_of("qwen3-30b-a3b", hw, lay, "fp4", "fp8", (2048, 128), meta, limits, mem, 256, FITTED)
    ratio = expertcarry.expert_ratio(hw, "fp4")
    assert run.constants.expert_gemm_eta == pytest.approx(FITTED.expert_gemm_eta * ratio)
    grouped = run.law_hw.calibration.kernel[step.GROUPED_GEMM]
    assert grouped["eta_max"] == pytest.approx(FITTED.expert_gemm_eta * ratio)
    assert step.engine_hw(hw, FITTED).calibration.kernel[step.GROUPED_GEMM]["eta_max"] == FITTED.expert_gemm_eta


def test_a_one_gpu_moe_layer_runs_on_the_measured_layer():
    """On one GPU (TP 1: every expert local, no exchange, no attention DP) the routed experts run on the device's
    MoE layer fitted on measured kernel tables, not on the end-to-end η fitted on the H100 EP cells; with TP > 1,
    on a device without a fitted MoE layer, or on constants already on the tables, nothing changes."""
    b200, h20 = hardware.get("b200"), hardware.get("h20")
    one, ep4 = engine.Layout(), engine.Layout(tp=4, ep=4, attention_dp=True)
    assert expertcarry.one_gpu_layer(FITTED, b200, "fp4", one).moe_tables
    assert expertcarry.one_gpu_layer(FITTED, b200, "fp4", ep4) is FITTED
    assert expertcarry.one_gpu_layer(FITTED, h20, "fp8", one) is FITTED
    tables = replace(FITTED, moe_tables=True)
    assert expertcarry.one_gpu_layer(tables, b200, "fp4", one) is tables
    meta, limits, mem = engine.prepare("llama4-scout", b200, one, "fp4", "fp8", 1000, 2000, 0.95, 2048, None, FITTED)
    run = engine.engine_of("llama4-scout", b200, one, "fp4", "fp8", (1000, 2000), meta, limits, mem, 413, FITTED)
    assert run.constants.moe_tables and run.constants.expert_gemm_eta == FITTED.expert_gemm_eta
    assert f"{step.GROUPED_GEMM}.fp4" in run.law_hw.calibration.kernel


def test_one_gpu_scout_decode_step_is_the_measured_layer_s_not_the_fitted_eta_s():
    """Llama 4 Scout's decode step on one B200 (413 sequences): on the measured fused-MoE layer its step is at
    least a quarter shorter than on the H100-fitted expert η, whose routed experts take about 2x the measured
    layer at Scout's shape (docs/accuracy.md, "One-GPU MoE layers on the measured layer")."""
    b200, one = hardware.get("b200"), engine.Layout()
    meta, limits, mem = engine.prepare("llama4-scout", b200, one, "fp4", "fp8", 1000, 2000, 0.95, 2048, None, FITTED)
    run = engine.engine_of("llama4-scout", b200, one, "fp4", "fp8", (1000, 2000), meta, limits, mem, 413, FITTED)
    fitted = replace(run, constants=expertcarry.carried(FITTED, b200, "fp4"),
                     law_hw=step.engine_hw(b200, expertcarry.carried(FITTED, b200, "fp4")))
    measured_s = step.step_seconds(run, 413, 0.0, 0.0, True)[0]
    fitted_s = step.step_seconds(fitted, 413, 0.0, 0.0, True)[0]
    assert measured_s < 0.75 * fitted_s


def test_an_unscaled_or_carried_expert_price_is_stated_in_the_serve_notes():
    """H20 has no kernel-fitted FP8 GEMM: the expert η stays the H100 fit's share of its datasheet peak and the
    max-throughput result (JSON ``notes``, the text's ``note:`` lines) says so; on H100 nothing is carried. A step
    whose block-scaled experts ran on per-tensor classes (``kernel_for``) is named too."""
    from types import SimpleNamespace
    from ironlaw.core.graph import Graph, Op
    from ironlaw.models.serving.throughput import max_throughput
    h20 = max_throughput("qwen3-30b-a3b", hardware.get("h20"), 1024, 1024, dtype="fp8")
    assert h20.to_dict()["notes"] == [
        f"the routed experts' compute η ({FITTED.expert_gemm_eta:.3g} of the datasheet fp8 peak) is h100's fp8 fit "
        f"carried to h20 unscaled: h20 has no fp8 GEMM fitted on measured kernels to scale it by"]
    assert max_throughput("qwen3-30b-a3b", hardware.get("h100"), 1024, 1024, dtype="fp8").notes == []
    op = Op("mlp_up_proj", "matmul", flops=1.0, dtype="fp8", module="experts",
            attrs={"kernel": "moe_grouped_gemm.fp8", "kernel_for": "moe_grouped_gemm.fp8_block"})
    run = SimpleNamespace(constants=replace(FITTED, moe_tables=True), hw=hardware.get("l40s"), dtype="fp8")
    est = SimpleNamespace(graph=Graph("g", "decode", "fp8", [op]))
    assert expertcarry.notes(run, [est]) == ["moe_grouped_gemm.fp8_block priced on moe_grouped_gemm.fp8: l40s has "
                                             "no moe_grouped_gemm.fp8_block fitted on measured kernel tables"]
