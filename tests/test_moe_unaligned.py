"""vLLM's and SGLang's Triton fused MoE where the sharded intermediate inter/TP is not a multiple of 16: the down
GEMM's K stride loses Triton's divisibility specialization and its loads of A and w2 are not vectorized
(``core.routing.TRITON_K_ALIGN``). moefit fits c_k, the down GEMM's extra seconds per second of its weights and FLOPs
at η = 1 on those rows (``fit``'s per_unaligned, ``terms``' last column), stored as the grouped GEMM class's
``unaligned_k``; the law adds it to a routed GEMM whose K is unaligned (``serving.step.unaligned_down``)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from ironlaw.core.errors import IronlawError
from ironlaw.core.graph import Graph, Op
from ironlaw.law.law import predict
from ironlaw.machine import hardware
from ironlaw.machine.calibration import Calibration
from ironlaw.measure.calibrate import moefit
from ironlaw.models.serving.step import unaligned_down

BW, PEAK = 4.8e12, 989e12


def rows(tp: tuple = (1, 2, 4, 8), inter: tuple = (2880, 1856, 1536)) -> dict:
    keys = ("num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size")
    out = {k: [] for k in keys}
    for i in inter:
        for p in tp:
            for t in (1, 16, 256, 4096):
                for k, v in zip(keys, (t, 2880, i, 4, 32, p, 1)):
                    out[k].append(v)
    return {k: np.array(v) for k, v in out.items()}


def test_terms_price_the_down_gemm_only_where_inter_over_tp_is_unaligned():
    """gpt-oss's inter 2,880: 360 per GPU at TP 8 (unaligned), 720 at TP 4 (a multiple of 16); the column is a third
    of the rows' weights and FLOPs at η = 1 there, 0 elsewhere."""
    r = rows(tp=(4, 8), inter=(2880,))
    x = moefit.terms(r, "bf16", PEAK, BW)
    tp8 = r["moe_tp_size"] == 8
    assert np.all(x[~tp8, 10] == 0.0)
    assert x[tp8, 10] == pytest.approx((x[tp8, 1] + x[tp8, 2]) / 3.0)


def test_the_fit_recovers_the_unaligned_cost_and_stores_it_on_the_grouped_gemms():
    x = moefit.terms(rows(), "bf16", PEAK, BW)
    truth = moefit.MoeFit(20e-6, 0.8, 0.6, 0.4, 0, token_s=1e-9, touched_s=2e-6, unaligned_k=3.0)
    t = moefit.predict_s(truth, x)
    f = moefit.fit(x, t, per_token=True, per_touched=True, exact=True, per_unaligned=True)
    assert f.unaligned_k == pytest.approx(3.0, rel=1e-3)
    assert moefit.kernels(f, "bf16")["moe_grouped_gemm.bf16"]["unaligned_k"] == pytest.approx(3.0, rel=1e-3)
    assert moefit.fit(x, t, per_token=True, per_touched=True, exact=True).unaligned_k == 0.0


def _hw(c_k: float):
    data = hardware.read_toml(hardware.CATALOG_DIR / "h200.toml")["calibration"]
    data["kernel"]["moe_grouped_gemm.bf16"] = {"eta_max": 0.7, "m_half": 0.0, "nk_half": 0.0, "streamed": 0.9,
                                               "serial": 1.0, "latency_s": 10e-6, "unaligned_k": c_k}
    return replace(hardware.get("h200"), calibration=Calibration.of(data))


def _down(k: int) -> Op:
    rows_, h, experts = 4096.0, 2880.0, 32.0
    return Op("mlp_down_proj", "matmul", flops=2.0 * rows_ * h * k, dtype="bf16",
              bytes={"activations": 2.0 * rows_ * (h + k), "weights": 2.0 * experts * h * k},
              bytes_written=2.0 * rows_ * h, module="experts",
              attrs={"nk": (h, k), "expert": "routed", "kernel": "moe_grouped_gemm.bf16"})


def _time(hw, op) -> float:
    return float(np.sum(predict(Graph("down", "decode", "bf16", [op]), hw).op_time_s))


def test_the_law_adds_c_k_of_the_weights_and_flops_to_an_unaligned_down_gemm_alone():
    """K 360 (gpt-oss at TP 8): c_k·(W/BW + F/P) more; K 368, or a class without ``unaligned_k``: unchanged."""
    hw = _hw(2.5)
    bw, peak = hw.memory[hw.device_tier].bw_Bps, hw.peak("bf16")
    op = _down(360)
    extra = 2.5 * (op.bytes["weights"] / bw + op.flops / peak)
    assert _time(hw, unaligned_down(op, hw)) - _time(hw, op) == pytest.approx(extra, rel=1e-6)
    aligned = _down(368)
    assert unaligned_down(aligned, hw) is aligned
    bare = _hw(0.0)
    assert unaligned_down(op, bare) is op


def test_an_unaligned_k_past_its_bound_is_refused():
    data = hardware.read_toml(hardware.CATALOG_DIR / "h200.toml")
    data["calibration"]["kernel"]["moe_grouped_gemm.bf16"] = {"eta_max": 0.7, "m_half": 0.0, "nk_half": 0.0,
                                                              "latency_s": 1e-5, "unaligned_k": 100.0}
    with pytest.raises(IronlawError, match="unaligned_k: must be a number >= 0 and at most 32"):
        hardware.parse_hardware(data, "h200.toml")


def test_a_vllm_tp_step_slows_the_down_gemm_where_its_shard_of_the_intermediate_is_unaligned(tmp_path):
    """vLLM on H200, bf16 experts of intermediate 1,856 (the tables' 2,688 × 1,856 shape) TP-sharded: at TP 8 each
    GPU's down GEMM has K = 232 and runs at a lower η (its class's ``unaligned_k``); at TP 4 (K = 464) it does not."""
    import json
    from pathlib import Path

    from ironlaw.models.serving import engine, frameworks, step
    from ironlaw.models.serving.engine import FITTED
    cfg = json.loads((Path(__file__).parent / "data" / "llm_configs" / "qwen3-30b-a3b.json").read_text())
    cfg["moe_intermediate_size"] = 1856
    path = tmp_path / "qwen3-30b-a3b-i1856.json"
    path.write_text(json.dumps(cfg))
    scales = {}
    for tp in (4, 8):
        eng = frameworks.select("vllm", "h200", tp, offline=True)
        c, lay = frameworks.constants(eng, FITTED), engine.Layout(tp=tp)
        meta, limits, mem = engine.prepare(f"hf:{path}", eng.hw, lay, "bf16", "bf16", 1024, 256, 1.0, 256, 8192, c)
        run = engine.engine_of(f"hf:{path}", eng.hw, lay, "bf16", "bf16", (1024, 256), meta, limits, mem, 64, c)
        assert run.law_hw.calibration.kernel["moe_grouped_gemm.bf16"]["unaligned_k"] > 0
        est = step.step_seconds(run, 64, 0.0, 0.0, True)[1]
        down = [op for op in est.graph.ops if op.attrs.get("expert") == "routed" and op.name == "mlp_down_proj"]
        assert down and down[0].attrs["nk"][1] == 1856 / tp
        scales[tp] = float(np.min(down[0].eta_scale))
    assert scales[4] == 1.0 and scales[8] < 0.5
