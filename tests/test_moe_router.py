"""The router's top-k on PyTorch (``moe_router.<dtype>``): TensorRT-LLM 1.0's renormalize router runs its own top-k
kernel up to 128 experts and top-8 and ``torch.topk`` above (``core.routing.torch_router``); the 1.0 release files
(aiconfigurator 0.8.0's tables, benchmarks/kernel_moe.py --release 1.0) hold its fixed cost and its logits' η, and
the serving step prices the ``moe_topk`` op of such a layer on them (``step.on_router``)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from ironlaw.core.routing import TORCH_ROUTER_ABOVE, torch_router
from ironlaw.machine import engines, hardware
from ironlaw.measure.calibrate import moefit
from ironlaw.models.serving import step

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "kernel_tables_1.0"


def rows(experts, topk, tokens=(64, 4096)):
    n = len(tokens)
    return {"num_tokens": list(tokens), "hidden_size": [7168] * n, "inter_size": [2048] * n, "topk": [topk] * n,
            "num_experts": [experts] * n, "moe_tp_size": [1] * n, "moe_ep_size": [8] * n}


def test_the_router_kernel_limits():
    assert TORCH_ROUTER_ABOVE == (128, 8)
    assert not torch_router(128, 8) and torch_router(160, 8) and torch_router(8, 10)
    assert list(torch_router(np.array([8, 128, 256, 384]), np.array([2, 8, 8, 8]))) == [False, False, True, True]


def test_terms_state_the_router_only_where_it_runs_on_pytorch():
    bw = 3.35e12
    big = moefit.terms(rows(256, 8), "fp8", 1e15, bw, "power_law_1.01", router_above=TORCH_ROUTER_ABOVE)
    assert list(big[:, 8]) == [1.0, 1.0]
    assert big[:, 9] == pytest.approx(np.array([64, 4096]) * 256 * 2 * 2.0 / bw)   # bf16 logits read and written
    small = moefit.terms(rows(128, 8), "fp8", 1e15, bw, "power_law_1.01", router_above=TORCH_ROUTER_ABOVE)
    unset = moefit.terms(rows(256, 8), "fp8", 1e15, bw, "power_law_1.01")
    assert not small[:, 8:].any() and not unset[:, 8:].any()
    assert big[:, :8] == pytest.approx(unset[:, :8])


def test_the_fit_recovers_the_router_terms():
    rng = np.random.default_rng(2)
    n = 400
    torch = (rng.random(n) < 0.5).astype(float)
    x = np.column_stack([np.ones(n), rng.uniform(1e-6, 3e-4, n), rng.uniform(1e-7, 3e-4, n),
                         rng.uniform(1e-7, 5e-5, n), rng.uniform(1e-7, 1e-5, n), np.full(n, 32.0),
                         rng.integers(1, 16384, n).astype(float), rng.integers(1, 32, n).astype(float), torch,
                         torch * rng.uniform(1e-8, 5e-6, n)])
    truth = 20e-6 + x[:, 1] / 0.9 + x[:, 2] + x[:, 3] / 0.4 + x[:, 4] + 100e-9 * x[:, 7] + torch * 22e-6 + x[:, 9] / 0.01
    f = moefit.fit(x, truth, exact=True, per_touched=True, per_router=True)
    assert f.router_s == pytest.approx(22e-6, rel=1e-3) and f.router_eta == pytest.approx(0.01, rel=1e-3)
    kern = moefit.kernels(f, "fp8")
    assert kern["moe_router.fp8"] == {"memory": pytest.approx(0.01, rel=1e-3), "latency_s": pytest.approx(22e-6, rel=1e-3)}
    assert "moe_router.fp8" not in moefit.kernels(moefit.fit(x, truth, exact=True, per_touched=True), "fp8")
    assert moefit.predict_s(f, x) == pytest.approx(truth, rel=1e-3)


def test_the_release_form_holds_out_better_on_the_extract():
    """The extract (every 8th layer shape of H100's 1.0.0rc3 fp8 rows; Kimi K2's 384 and DeepSeek-V3's 256 experts
    among them): the release's form against the base form on the same held-out shapes."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import kernel_moe
    (gpu, dt, _, data), = kernel_moe.release_groups(DATA, "h100_sxm", "1.0")
    kern, err, _ = kernel_moe.fit_and_score(gpu, dt, data, kernel_moe.RELEASE_ROUTING, release="1.0")
    plain, base, _ = kernel_moe.fit_and_score(gpu, dt, data, kernel_moe.RELEASE_ROUTING)
    assert f"moe_router.{dt}" in kern and f"moe_router.{dt}" not in plain
    assert np.percentile(err, 90) < np.percentile(base, 90) and np.median(err) < np.median(base)


@pytest.mark.parametrize("gpu", ["h100", "h200", "b200", "gb200"])
def test_release_files_hold_the_router_class_of_each_moe_dtype(gpu):
    table = engines.load(gpu, "trtllm", "1.0")
    gemms = [k.split(".", 1)[1] for k in table["kernel"] if k.startswith("moe_grouped_gemm.")]
    assert gemms
    for dt in gemms:
        q = table["kernel"][f"moe_router.{dt}"]
        assert 0 < q["memory"] < 1 and 0 < q["latency_s"] < 1e-4
        assert set(q) == {"memory", "latency_s"}


def test_the_step_prices_a_pytorch_router_on_its_class():
    hw, _ = engines.with_engine(hardware.get("b200"), "trtllm", release="1.0")
    op = next(o for o in step.build("deepseek-v3", "decode", 64, 1, "fp8", "fp8", hw).ops if o.name == "moe_topk")
    meta = {"experts": 256, "experts_per_token": 8}
    assert step.on_router(op, hw, meta, "moe_grouped_gemm.fp8").attrs["kernel"] == "moe_router.fp8"
    assert "kernel" not in step.on_router(op, hw, {"experts": 128, "experts_per_token": 8}, "moe_grouped_gemm.fp8").attrs
    assert "kernel" not in step.on_router(op, hw, meta, step.GROUPED_GEMM).attrs       # the tables off
    plain = hardware.get("b200")                                                        # the catalog: no router class
    assert "kernel" not in step.on_router(op, plain, meta, "moe_grouped_gemm.fp8").attrs


def test_the_law_prices_the_router_class_as_fitted():
    """The ``moe_topk`` op on the class: L_r + its bf16 logits (t·E read and written) at η_r, every layer."""
    from ironlaw.core.graph import Graph
    from ironlaw.law import law
    hw, _ = engines.with_engine(hardware.get("b200"), "trtllm", release="1.0")
    op = next(o for o in step.build("deepseek-v3", "decode", 4096, 1, "fp8", "fp8", hw).ops if o.name == "moe_topk")
    on = step.on_router(step.modelopt(op, "fp8"), hw, {"experts": 256, "experts_per_token": 8}, "moe_grouped_gemm.fp8")
    q = hw.calibration.kernel["moe_router.fp8"]
    per_layer = q["latency_s"] + 2 * 2.0 * 4096 * 256 / (hw.memory[hw.device_tier].bw_Bps * q["memory"])
    assert law.predict(Graph("router", "decode", "fp8", [on]), hw).total_s == pytest.approx(per_layer * op.count,
                                                                                            rel=1e-3)
