"""Hopper's weight-only MXFP4 MoE layer (gpt-oss's experts on TensorRT-LLM's Triton MoE): the cost per token the
layer takes in (``token_s``: fitted by moefit, stored on the routed rows' class, paid by the combine) and each
expert's rows padded to the M block triton_kernels' matmul_ogs picks (``m_block`` "triton": the fit's FLOPs and the
law's compute η).

Data: aiconfigurator-core 0.12.0's H100 and H200 ``moe_perf`` w4a16_mxfp4 rows (the full tables, not in the
repository's extract). Held out (benchmarks/kernel_moe.py --data DIR --only w4a16_mxfp4), median / p90: H100 17.9% /
37.0% → 5.4% / 16.0%, H200 18.5% / 39.5% → 5.4% / 17.1% (docs/accuracy.md).
"""
from __future__ import annotations

import numpy as np
import pytest

from ironlaw import api
from ironlaw.core.errors import IronlawError
from ironlaw.machine import hardware
from ironlaw.measure.calibrate import moefit

H100_BW, H100_BF16 = 3.35e12, 989e12


def layer_rows() -> dict:
    """Layer shapes (hidden 2880 or 4096, inter 1024 or 2880, top 4 of 32 or 128 experts) over EP 1–32 and 1–16,384
    tokens, balanced routing."""
    keys = ("num_tokens", "num_experts", "moe_ep_size", "hidden_size", "inter_size")
    rows = {k: [] for k in keys}
    for h, i in ((2880, 2880), (4096, 1024), (2880, 1024)):
        for e, ep in ((32, 1), (32, 4), (128, 4), (128, 32), (32, 8), (128, 16)):
            for t in (1, 4, 16, 64, 256, 1024, 4096, 16384):
                for k, v in zip(keys, (t, e, ep, h, i)):
                    rows[k].append(v)
    n = len(rows["num_tokens"])
    return {k: np.asarray(v) for k, v in {**rows, "topk": [4] * n, "moe_tp_size": [1] * n}.items()}


def test_the_fit_recovers_a_cost_per_token_and_the_form_without_it_cannot():
    x = moefit.terms(layer_rows(), "w4a16_mxfp4", H100_BF16, H100_BW)
    truth = moefit.MoeFit(80e-6, 0.9, 0.6, 0.5, 0, token_s=60e-9)
    t = moefit.predict_s(truth, x)
    f = moefit.fit(x, t, exact=True, per_token=True)
    assert f.token_s == pytest.approx(60e-9, rel=1e-3) and f.latency_s == pytest.approx(80e-6, rel=1e-3)
    assert np.max(np.abs(moefit.predict_s(f, x) / t - 1)) < 1e-3
    without = moefit.fit(x, t, exact=True)
    assert without.token_s == 0.0 and np.max(np.abs(moefit.predict_s(without, x) / t - 1)) > 0.1
    assert "token_s" in moefit.kernels(f, "w4a16_mxfp4")["moe_rows.w4a16_mxfp4"]
    assert "token_s" not in moefit.kernels(without, "w4a16_mxfp4")["moe_rows.w4a16_mxfp4"]


def test_hopper_holds_a_cost_per_token_for_weight_only_mxfp4_and_blackwell_none():
    for gpu in ("h100", "h200"):
        cal = hardware.get(gpu).calibration
        assert 10e-9 < cal.kernel["moe_rows.w4a16_mxfp4"]["token_s"] < 200e-9
        assert cal.provenance["moe w4a16_mxfp4"]["license"] == "Apache-2.0"
    assert "token_s" not in hardware.get("b200").calibration.kernel["moe_rows.w4a16_mxfp4"]


def combine_latency_s(gpu: str, batch: int) -> tuple[float, object]:
    est = api.analyze("gpt-oss-20b", on=gpu, batch=batch, seq=1024, phase="decode")
    i = next(j for j, op in enumerate(est.graph.ops) if op.name == "moe_combine")
    assert est.graph.ops[i].attrs["kernel"] == "moe_rows.w4a16_mxfp4"
    return float(np.ravel(est.latency_s[i])[0]), est


def test_the_combine_pays_the_cost_per_token_of_the_step():
    """gpt-oss-20b decoding on H100: the combine (the routed rows' class, latency 0 otherwise) pays token_s per
    token; on B200, whose class has no such cost, it pays nothing."""
    token_s = hardware.get("h100").calibration.kernel["moe_rows.w4a16_mxfp4"]["token_s"]
    for batch in (1, 256):
        lat, est = combine_latency_s("h100", batch)
        assert est.graph.ops[[op.name for op in est.graph.ops].index("moe_combine")].attrs["tokens"] == batch
        assert lat == pytest.approx(token_s * batch)
    assert combine_latency_s("b200", 256)[0] == 0.0


def test_token_s_is_checked():
    data = hardware.read_toml(hardware.CATALOG_DIR / "h100.toml")
    data["calibration"]["kernel"]["moe_rows.w4a16_mxfp4"]["token_s"] = 2e-6
    with pytest.raises(IronlawError, match="token_s"):
        hardware.parse_hardware(data, "h100.toml")
    data["calibration"]["kernel"]["moe_rows.w4a16_mxfp4"]["token_s"] = 6e-8
    data["calibration"]["op"] = {"moe_combine": {"token_s": 6e-8}}     # an op table has no cost per token
    with pytest.raises(IronlawError, match="token_s"):
        hardware.parse_hardware(data, "h100.toml")


def test_tritons_block_m_follows_the_rows_per_expert():
    """triton_kernels' matmul_ogs (NVIDIA): block_m = max(16, min(next_power_of_2(gathered rows // experts), 128))."""
    from ironlaw.core.routing import block_m, padded_rows
    assert list(block_m("triton", np.array([1, 128, 136, 256, 520, 4096, 1e6]), 8)) == [16, 16, 32, 32, 128, 128, 128]
    assert padded_rows(np.array([4.0, 256.0, 0.0]), np.array([4.0, 32.0, 0.0]), 16) == pytest.approx([64, 512, 0])
    with pytest.raises(IronlawError, match="M block"):
        block_m("cutlass", 64, 8)


def test_hoppers_weight_only_layer_pads_each_experts_rows_to_tritons_block():
    """gpt-oss-20b (32 experts, top 4) decoding on H100: at one token each of its 4 rows fills a 16-row block
    (η × 1/16); at 64 tokens 256 rows over 32 experts, 8 each, in 16-row blocks (× 1/2); on B200 (CUTLASS, no
    m_block) nothing is padded."""
    assert hardware.get("h100").calibration.kernel["moe_grouped_gemm.w4a16_mxfp4"]["m_block"] == "triton"
    for batch, scale in ((1, 1 / 16), (64, 1 / 2), (1024, 1.0)):
        est = api.analyze("gpt-oss-20b", on="h100", batch=batch, seq=1024, phase="decode")
        up = next(op for op in est.graph.ops if op.name == "mlp_up_proj" and op.module == "experts")
        assert float(np.ravel(up.eta_scale)[0]) == pytest.approx(scale, rel=2e-3)
    est = api.analyze("gpt-oss-20b", on="b200", batch=1, seq=1024, phase="decode")
    assert all(np.all(op.eta_scale == 1.0) for op in est.graph.ops if op.module == "experts")


def test_an_unknown_m_block_is_refused():
    data = hardware.read_toml(hardware.CATALOG_DIR / "h100.toml")
    data["calibration"]["kernel"]["moe_grouped_gemm.w4a16_mxfp4"]["m_block"] = "cutlass"
    with pytest.raises(IronlawError, match="m_block"):
        hardware.parse_hardware(data, "h100.toml")
