"""The MoE layer's law terms fitted on measured fused-MoE tables (aiconfigurator-core 0.12.0, NVIDIA,
Apache-2.0; extract in tests/data/kernel_tables/<system>/moe/), and the serving law using them.

The extract holds every 8th layer shape of B200's and H200's fp8 rows; the fit keeps every other shape and
the rest is scored. Issue 35's goal (median ≤ 8%, p90 ≤ 20%) is not met by this form (docs/accuracy.md,
"Kernel tables: communication and MoE"): the held-out bounds here are what it reaches on this small extract
(B200 13.4% / 34.6%, H200 16.0% / 66.6% median / p90; the full tables: 9.8% / 37.0% and 10.3% / 54.1%), so a
regression fails.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from ironlaw.core.errors import IronlawError
from ironlaw.law.law import predict
from ironlaw.machine import hardware
from ironlaw.measure.calibrate import moefit
from ironlaw.measure.calibrate.kernelfit import rules
from ironlaw.models.serving import step as st
from dataclasses import replace

from ironlaw.models.serving.throughput import FITTED

TABLES = replace(FITTED, moe_tables=True)       # constants that run the routed experts on the fitted tables

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import kernel_moe  # noqa: E402


def test_the_collectors_balanced_routing_reconstructed():
    assert moefit.balanced_local(1, 128, 1, 128) == (1, 1)          # token 0 -> expert 0, on rank 0
    assert moefit.balanced_local(16, 16, 1, 2) == (8, 8)            # t ≥ E/k: tokens j -> expert j
    assert moefit.balanced_local(2, 128, 8, 1) == (16, 16)          # all experts local: every pick
    rows, experts = moefit.balanced_local(4096, 128, 8, 8)
    assert rows == 4096 * 8 // 8 and experts == 16                  # balanced: an even share per rank


@pytest.fixture(scope="module")
def extract_fits():
    return {(g, dt): kernel_moe.fit_and_score(g, dt, rows) for g, dt, _, rows in kernel_moe.groups(kernel_moe.DATA)}


def test_held_out_shapes_of_the_extract(extract_fits):
    assert set(extract_fits) == {("b200", "fp8"), ("h200", "fp8"), ("h200", "fp8_block")}
    for key, (kern, err, n_fit) in ((k, v) for k, v in extract_fits.items() if k[1] == "fp8"):
        assert n_fit > 300 and len(err) > 300
        assert np.median(err) <= 0.17, f"{key}: held-out median {np.median(err):.1%}"
        assert np.percentile(err, 90) <= 0.70, f"{key}: held-out p90 {np.percentile(err, 90):.1%}"
        g = kern[f"moe_grouped_gemm.{key[1]}"]
        assert 0.5 < g["streamed"] <= 1.5 and 5e-6 < g["latency_s"] < 30e-6


def test_the_catalog_holds_the_fits_with_provenance():
    for gpu in ("h100", "h200", "b200", "b300", "gb200", "gb300"):
        cal = hardware.get(gpu).calibration
        dts = ("bf16", "fp8", "fp4") if gpu.startswith(("b", "gb")) else ("bf16", "fp8")
        for dt in dts:
            assert {"eta_max", "streamed", "serial", "latency_s"} <= set(cal.kernel[f"moe_grouped_gemm.{dt}"])
            assert "memory" in cal.kernel[f"moe_rows.{dt}"]
            p = cal.provenance[f"moe {dt}"]
            assert "moe_perf" in p["table"] and p["license"] == "Apache-2.0" and p["rows_fitted"] > 400
            own = (gpu, dt) in kernel_moe.OWN_KEY       # fitted on its own-key rows alone, and the table says so
            assert own == ("moefit.shared_tuning" in p["table"]), (gpu, dt)
            checked = rules.holds(rules.MOE_CROSS_CHECK, dt, gpu)     # its min-latency-shared shapes cross-checked
            assert checked == ("MOE_CROSS_CHECK" in p["table"]) and (not checked or own), (gpu, dt)
    assert not st.fitted_moe(hardware.get("h20"))


def test_serving_runs_the_routed_experts_on_the_fitted_kernels():
    hw = hardware.get("b200")
    args = dict(gemm_tokens=64, decode=64, context=1024, prompt=1024, prefill_tokens=0, head_tokens=64)
    g = st.step_graph("qwen3-30b-a3b", hw, "fp8", "fp8", moe_tables=True, **args)
    kern = {op.name: op.attrs.get("kernel") for op in g.ops}
    assert kern["mlp_up_proj"] == kern["mlp_down_proj"] == "moe_grouped_gemm.fp8"
    assert kern["moe_permute"] == kern["mlp_act"] == kern["moe_combine"] == "moe_rows.fp8"
    assert "moe_grouped_gemm.fp8" in st.engine_hw(hw, TABLES).calibration.kernel
    other = st.step_graph("qwen3-30b-a3b", hardware.get("h20"), "fp8", "fp8", moe_tables=True, **args)
    assert {op.attrs.get("kernel") for op in other.ops if op.name.startswith("mlp_up")} == {st.GROUPED_GEMM}
    # the H100-fitted constants keep their own expert terms (fitted with them): the tables only on request
    plain = st.step_graph("qwen3-30b-a3b", hw, "fp8", "fp8", **args)
    assert {op.attrs.get("kernel") for op in plain.ops if op.name.startswith("mlp_up")} == {st.GROUPED_GEMM}
    assert "moe_grouped_gemm.fp8" not in st.engine_hw(hw, FITTED).calibration.kernel


@pytest.mark.parametrize("tokens", [64, 4096])
def test_the_law_times_the_moe_layer_as_the_fit_does(tokens):
    """One rank holding every expert (ep 1), all of them reached: the serving law's MoE ops (permute, the two
    grouped GEMMs, the activation, the combine) against the fitted closed form at the same shape."""
    hw = hardware.get("b200")
    g = st.step_graph("qwen3-30b-a3b", hw, "fp8", "fp8", gemm_tokens=tokens, decode=tokens, context=1,
                      prompt=1, prefill_tokens=0, head_tokens=tokens, moe_tables=True)
    est = predict(g, st.engine_hw(hw, TABLES))
    per_layer = {op.name: t for op, t in zip(g.ops, est.op_time_s)}
    law = sum(per_layer[n] for n in ("moe_permute", "mlp_up_proj", "mlp_act", "mlp_down_proj", "moe_combine"))
    m = g.meta
    rows = {"num_tokens": np.array([tokens]), "hidden_size": np.array([m["hidden"]]),
            "inter_size": np.array([768]), "topk": np.array([8]), "num_experts": np.array([128]),
            "moe_tp_size": np.array([1]), "moe_ep_size": np.array([1])}
    x = moefit.terms(rows, "fp8", hw.peak_flops["fp8"], hw.memory[hw.device_tier].bw_Bps)
    kern = {k: v for k, v in hw.calibration.kernel.items() if k.endswith(".fp8") and k.startswith("moe_")}
    assert law == pytest.approx(float(kernel_moe.stored_predict(kern, "fp8", x)[0]), rel=0.10)


def test_a_moe_kernel_entry_is_checked():
    data = hardware.read_toml(hardware.CATALOG_DIR / "b200.toml")
    data["calibration"]["kernel"]["moe_grouped_gemm.fp8"]["eta"] = 1.0
    with pytest.raises(IronlawError, match="unknown field"):
        hardware.parse_hardware(data, "b200.toml")
    del data["calibration"]["kernel"]["moe_grouped_gemm.fp8"]["eta"]
    data["calibration"]["kernel"]["moe_rows.fp8"]["memory"] = 7.0
    with pytest.raises(IronlawError, match="memory"):
        hardware.parse_hardware(data, "b200.toml")


def test_the_exact_bounded_solve_keeps_every_term_at_or_above_its_bound():
    """``moefit.bounded_lstsq``: the unbounded solution where it is feasible; else the best feasible one, which
    clipping the unbounded solution need not be."""
    import numpy as np
    from ironlaw.measure.calibrate.moefit import bounded_lstsq
    rng = np.random.default_rng(0)
    a = rng.random((40, 3))
    c = np.array([2.0, 3.0, 0.5])
    y = a @ c
    assert np.allclose(bounded_lstsq(a, y, np.zeros(3)), c)
    lower = np.array([0.0, 0.0, 1.0])
    got = bounded_lstsq(a, y, lower)
    assert np.all(got >= lower - 1e-12) and got[2] == 1.0
    clipped = np.maximum(np.linalg.lstsq(a, y, rcond=None)[0], lower)
    assert np.sum((a @ got - y) ** 2) < np.sum((a @ clipped - y) ** 2)


def test_a_gpu_the_tables_lack_is_one_line_exit_2(monkeypatch, capsys):
    # the table folder's name (rtx_pro_6000_server) where the benchmark takes ironlaw's (rtx-pro-6000)
    monkeypatch.setattr(sys, "argv", ["kernel_moe.py", "--gpu", "rtx_pro_6000_server"])
    assert kernel_moe.main() == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--gpu rtx_pro_6000_server" in err[0] and "b200" in err[0]
