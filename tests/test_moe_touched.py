"""A cost per expert the routed rows reach (``touched_s``): fitted on TensorRT-LLM's CUTLASS MoE tables on Blackwell
with ``benchmarks/kernel_moe.py`` (aiconfigurator-core 0.12.0; stored on ``STORED_TOUCHED``'s and ``OWN_KEY``'s
classes, the others of ``TOUCHED`` with ``--touched``) and paid by each routed grouped GEMM × the experts whose
weights it streams (``efficiency.touched_setup_s``)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ironlaw import api
from ironlaw.core.errors import IronlawError
from ironlaw.core.weightonly import elem_bytes
from ironlaw.law import efficiency
from ironlaw.machine import hardware
from ironlaw.measure.calibrate import moefit


def test_the_fit_recovers_a_cost_per_touched_expert():
    rng = np.random.default_rng(1)
    n = 300
    u = rng.integers(1, 257, n).astype(float)
    x = np.column_stack([np.ones(n), rng.uniform(1e-6, 3e-4, n), rng.uniform(1e-7, 3e-4, n),
                         rng.uniform(1e-7, 5e-5, n), rng.uniform(1e-7, 1e-5, n), np.full(n, 256.0),
                         rng.integers(1, 16384, n).astype(float), u])
    truth = 30e-6 + x[:, 1] / 0.9 + x[:, 2] / 1.0 + x[:, 3] / 0.4 + x[:, 4] + 4e-9 * x[:, 6] + 150e-9 * u
    f = moefit.fit(x, truth, exact=True, per_token=True, per_touched=True)
    assert f.touched_s == pytest.approx(150e-9, rel=1e-3) and f.token_s == pytest.approx(4e-9, rel=1e-3)
    assert f.eta_stream == pytest.approx(0.9, rel=1e-3) and f.expert_s == 0.0
    kern = moefit.kernels(f, "fp8")
    assert kern["moe_grouped_gemm.fp8"]["touched_s"] == pytest.approx(75e-9, rel=1e-3)   # half on each GEMM
    assert "touched_s" not in moefit.kernels(dataclasses.replace(f, touched_s=0.0), "fp8")["moe_grouped_gemm.fp8"]


def with_touched(gpu: str, dtype: str, touched_s: float):
    """``gpu`` with its grouped MoE GEMM class of ``dtype`` paying ``touched_s`` per touched expert."""
    data = hardware.read_toml(hardware.CATALOG_DIR / f"{gpu}.toml")
    data["calibration"]["kernel"][f"moe_grouped_gemm.{dtype}"]["touched_s"] = touched_s
    return hardware.parse_hardware(data, f"{gpu}.toml")


def kernel_moe():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    import kernel_moe
    return kernel_moe


def test_the_stored_classes_that_pay_it():
    """Exactly ``kernel_moe.STORED_TOUCHED``'s and ``OWN_KEY``'s classes hold a cost per touched expert (on both grouped
    GEMMs) and per token (on the routed rows): Blackwell's block-scaled FP8 (DeepGEMM) and the CUTLASS classes that
    meet both goals with it, on every held-out row or on their own-key rows; H200 bf16, which meets neither, does not."""
    km = kernel_moe()
    stored = km.STORED_TOUCHED | km.OWN_KEY
    assert {("b200", "fp8_block"), ("gb300", "fp4"), ("h100", "fp8")} <= stored and ("h200", "bf16") not in stored
    for gpu in ("h100", "h200", "b200", "b300", "gb200", "gb300"):
        kern = hardware.get(gpu).calibration.kernel
        paying = {name.split(".", 1)[1] for name, p in kern.items() if "touched_s" in p}
        assert paying == {dt for g, dt in stored if g == gpu}, gpu
        for dt in paying:
            assert kern[f"moe_grouped_gemm.{dt}"]["touched_s"] > 0 and kern[f"moe_rows.{dt}"]["token_s"] > 0


def test_a_stored_class_is_fitted_with_it_unasked(monkeypatch):
    """``fit_and_score`` fits a class of ``STORED_TOUCHED`` with the costs per touched expert and per token without
    ``--touched``, and no other class."""
    km = kernel_moe()
    monkeypatch.setattr(km, "OWN_KEY", frozenset())
    rows = next(r for g, dt, _, r in km.groups(km.DATA) if (g, dt) == ("b200", "fp8"))
    plain, *_ = km.fit_and_score("b200", "fp8", rows)
    assert "touched_s" not in plain["moe_grouped_gemm.fp8"]
    monkeypatch.setattr(km, "STORED_TOUCHED", frozenset({("b200", "fp8")}))
    stored, *_ = km.fit_and_score("b200", "fp8", rows)
    asked, *_ = km.fit_and_score("b200", "fp8", rows, touched=True)
    assert stored == asked and stored["moe_grouped_gemm.fp8"]["touched_s"] > 0


def test_a_grouped_launch_pays_per_touched_expert():
    """Qwen3-30B-A3B decode, 64 tokens picking 8 of 128 experts: each routed GEMM streams the ~126 experts its
    rows reach and pays touched_s for each; the other ops pay nothing."""
    est = api.analyze("qwen3-30b-a3b", on="b200", batch=64, seq=4096, phase="decode", dtype="fp8")
    hw = with_touched("b200", "fp8", 150e-9)
    up = next(i for i, op in enumerate(est.graph.ops) if op.name == "mlp_up_proj" and op.module == "experts")
    op = est.graph.ops[up]
    n, k = op.attrs["nk"]
    touched = float(np.ravel(op.bytes["weights"])[0]) / (n * k * elem_bytes(op))
    assert 120 < touched <= 128
    paid = np.ravel(np.asarray(efficiency.touched_setup_s(hw.calibration, est.cols), float))
    assert paid[up] == pytest.approx(150e-9 * touched)
    routed = [i for i, o in enumerate(est.graph.ops) if o.attrs.get("kernel") == "moe_grouped_gemm.fp8"]
    assert np.count_nonzero(paid) == len(routed) and set(np.flatnonzero(paid)) == set(routed)
    plain = with_touched("b200", "fp8", 0.0)                 # the stored class without its own touched_s
    base, more = efficiency.evaluate(est.cols, plain), efficiency.evaluate(est.cols, hw)
    gain = np.ravel(np.asarray(more.latency_s - base.latency_s, float))
    assert gain[up] == pytest.approx(150e-9 * touched)
    cols = dataclasses.replace(est.cols, nk=None)             # an op that states no expert shape pays none
    assert efficiency.touched_setup_s(hw.calibration, cols) == 0.0


def test_touched_s_is_checked():
    data = hardware.read_toml(hardware.CATALOG_DIR / "b200.toml")
    data["calibration"]["kernel"]["moe_grouped_gemm.fp8"]["touched_s"] = 3e-6
    with pytest.raises(IronlawError, match="touched_s"):
        hardware.parse_hardware(data, "b200.toml")


def test_the_extract_holds_out_better_with_it(monkeypatch):
    """B200 fp8's extract shapes (every 8th of the table): held out with the costs per touched expert and per token
    (``--touched``) below the stored form in median and p90 (the full tables: 9.8% / 37.0% → 7.3% / 29.8%)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    import kernel_moe
    monkeypatch.setattr(kernel_moe, "OWN_KEY", frozenset())    # the class on every row, without the costs unasked
    rows = next(r for g, dt, _, r in kernel_moe.groups(kernel_moe.DATA) if (g, dt) == ("b200", "fp8"))
    kern, plain, _ = kernel_moe.fit_and_score("b200", "fp8", rows)
    kern_u, with_u, _ = kernel_moe.fit_and_score("b200", "fp8", rows, touched=True)
    assert "touched_s" not in kern["moe_grouped_gemm.fp8"] and kern_u["moe_grouped_gemm.fp8"]["touched_s"] > 0
    assert np.median(with_u) < np.median(plain) - 0.03
    assert np.percentile(with_u, 90) < np.percentile(plain, 90) - 0.03
