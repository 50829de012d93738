"""vLLM's and SGLang's Triton fused MoE on the config ``get_default_config`` gives a layer without a tuned config
file: each expert's rows padded to BLOCK_SIZE_M 16 where the layer's tokens are at most the rank's local experts,
else 64 (block-scaled FP8: 64 at every M) — ``core.routing.FUSED_MOE_BLOCK_M``, the classes of
``kernelfit.rules.MOE_M_BLOCK`` (stored ``m_block``: the fit's FLOPs and the serving step's compute η).

Data: aiconfigurator-core 0.12.0's per-framework ``moe_perf`` tables (not in the repository). Held out
(benchmarks/kernel_moe.py --data DIR --framework sglang), median / p90: SGLang H100 fp8_block 5.6% / 20.0% →
5.2% / 19.0%, H200 bf16 16.4% / 44.2% → 12.2% / 42.8% (docs/accuracy.md).
"""
from __future__ import annotations

import numpy as np
import pytest

from ironlaw import api
from ironlaw.core.errors import IronlawError
from ironlaw.core.routing import block_m
from ironlaw.machine import engines
from ironlaw.measure.calibrate import moefit
from ironlaw.measure.calibrate.kernelfit import rules
from ironlaw.models.serving import frameworks


def test_the_default_config_block_follows_the_tokens_against_the_local_experts():
    tokens = np.array([1, 128, 129, 16384])
    assert block_m("fused_moe", tokens * 8, 128, tokens).tolist() == [16, 16, 64, 64]
    assert block_m("fused_moe_fp8_block", tokens * 8, 128, tokens).tolist() == [64, 64, 64, 64]
    with pytest.raises(IronlawError, match="tokens"):
        block_m("fused_moe", 1024, 128)


def test_the_rule_names_the_block_of_the_classes_dtype():
    assert rules.fused_moe_block("sglang", "bf16", "h200") == "fused_moe"
    assert rules.fused_moe_block("sglang", "fp8_block", "h100") == "fused_moe_fp8_block"
    assert rules.fused_moe_block("vllm", "bf16", "h200") is None        # one held-out number rose: not kept


def test_the_fit_counts_the_padded_rows_flops():
    """128 experts top-8 on one GPU, balanced: 2,048 tokens put 128 rows on each expert (above 128 tokens: blocks of
    64, none padded); 96 tokens put 6 on each (at most 128 tokens: blocks of 16, 6 rows padded to 16)."""
    rows = {"num_tokens": np.array([2048, 96]), "hidden_size": np.array([2048, 2048]),
            "inter_size": np.array([768, 768]), "topk": np.array([8, 8]), "num_experts": np.array([128, 128]),
            "moe_tp_size": np.array([1, 1]), "moe_ep_size": np.array([1, 1])}
    plain = moefit.terms(rows, "bf16", 1e15, 4e12)
    padded = moefit.terms(rows, "bf16", 1e15, 4e12, m_block="fused_moe")
    np.testing.assert_allclose(padded[:, 2] / plain[:, 2], [1.0, 16 / 6])
    np.testing.assert_allclose(np.delete(padded, 2, 1), np.delete(plain, 2, 1))


def test_sglangs_stored_classes_pad_the_served_rows():
    """The engine file stores the block; Qwen3-30B-A3B (128 experts, top 8) decoding 64 tokens on one H200 under
    SGLang: about 4 rows on each touched expert, each in a 16-row block (η × ~1/4); the TensorRT-LLM fit of the
    catalog pads nothing."""
    table = engines.load("h200", "sglang")
    assert table["kernel"]["moe_grouped_gemm.bf16"]["m_block"] == "fused_moe"
    assert table["kernel"]["moe_grouped_gemm.fp8_block"]["m_block"] == "fused_moe_fp8_block"
    hw = frameworks.select("sglang", "h200").hw
    est = api.analyze("qwen3-30b-a3b", on=hw, batch=64, seq=1024, phase="decode")
    up = next(op for op in est.graph.ops if op.name == "mlp_up_proj" and op.module == "experts")
    touched = 128 * (1 - (1 - 8 / 128) ** 64)
    assert float(np.ravel(up.eta_scale)[0]) == pytest.approx(64 * 8 / touched / 16, rel=2e-2)
    est = api.analyze("qwen3-30b-a3b", on="h200", batch=64, seq=1024, phase="decode")
    assert all(np.all(op.eta_scale == 1.0) for op in est.graph.ops if op.module == "experts")
