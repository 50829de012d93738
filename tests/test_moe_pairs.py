"""vLLM's and SGLang's Triton (and vLLM's Marlin) fused MoE under EP run their intermediates over every token-expert
pair of the step, routed to the rank or not (``moefit.pairs_bytes``, ``kernelfit.rules.MOE_PAIRS``): the classes
fitted with those bytes, and the stored vLLM H200 bf16 layer on measured rows of aiconfigurator-core 0.12.0 (NVIDIA,
Apache-2.0; h200_sxm/moe/vllm/0.24.0/moe_perf.parquet, bfloat16, vllm_unquantizedfusedmoe_triton_tritonexperts,
balanced routing)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ironlaw.machine import engines, hardware
from ironlaw.measure.calibrate import moefit
from ironlaw.measure.calibrate.kernelfit import rules
from ironlaw.models.serving import frameworks

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import kernel_moe  # noqa: E402

# 16,384 tokens, hidden 2,048, inter 5,120, top-22 of 512 experts, MoE TP 1: EP -> measured µs
EP_ROWS = {8: 8729.114532, 64: 5973.322550, 256: 5664.970398}


def _rows(ep: list[int], tokens: int = 16384) -> dict:
    n = len(ep)
    return {"num_tokens": np.full(n, tokens), "hidden_size": np.full(n, 2048), "inter_size": np.full(n, 5120),
            "topk": np.full(n, 22), "num_experts": np.full(n, 512), "moe_tp_size": np.ones(n, int),
            "moe_ep_size": np.array(ep)}


def test_the_pairs_add_nothing_at_ep_1_and_the_other_ranks_pairs_bytes_under_ep():
    hw = hardware.get("h200")
    bw, peak = hw.memory[hw.device_tier].bw_Bps, hw.peak_flops["bf16"]
    rows = _rows([1, 8])
    base, pairs = moefit.terms(rows, "bf16", peak, bw), moefit.terms(rows, "bf16", peak, bw, pairs="triton")
    assert np.array_equal(base[0], pairs[0])
    local = 16384 * 22 / 8                                   # balanced routing: the rank's share of the pairs
    other = 16384 * 22 - local
    assert np.isclose((pairs[1, 3] - base[1, 3]) * bw, 2.0 * other * (5 * 5120 + 2 * 2048))
    marlin = moefit.terms(rows, "bf16", peak, bw, pairs="marlin")
    assert np.isclose((marlin[1, 3] - base[1, 3]) * bw, 2.0 * other * (3 * 5120 + 2 * 2048))


def test_the_rule_names_the_triton_and_marlin_classes_alone():
    assert rules.pair_kernel("vllm", "bf16", "h200") == "triton"
    assert rules.pair_kernel("sglang", "fp8_block", "h100") == "triton"
    assert rules.pair_kernel("vllm", "w4a16_mxfp4", "l40s") == "marlin"
    assert rules.pair_kernel("vllm", "bf16", "b200") is None            # FlashInfer's TensorRT-LLM kernels
    assert rules.pair_kernel("vllm", "fp8", "h200") is None             # FlashInfer's CUTLASS kernels


def test_the_stored_vllm_h200_layer_times_the_ep_rows_the_pairs_hold():
    """The layer's time flattens with EP where the rank's routed rows fall 32-fold: the stored fit on the law's terms
    with the pairs within 25% of each row; on the terms without them it runs 1.8-17× short."""
    hw = hardware.get("h200")
    bw, peak = hw.memory[hw.device_tier].bw_Bps, hw.peak_flops["bf16"]
    kern = engines.load("h200", "vllm")["kernel"]
    rows = _rows(list(EP_ROWS))
    measured = np.array(list(EP_ROWS.values())) * 1e-6
    with_pairs = kernel_moe.stored_predict(kern, "bf16", moefit.terms(rows, "bf16", peak, bw, pairs="triton"))
    assert np.all(np.abs(with_pairs / measured - 1) < 0.25), with_pairs / measured
    without = kernel_moe.stored_predict(kern, "bf16", moefit.terms(rows, "bf16", peak, bw))
    assert np.all(without / measured < 0.6)


def test_the_vllm_serving_step_prices_the_routed_rows_on_the_pairs_fit():
    eng = frameworks.select("vllm", "h200")
    table = engines.load("h200", "vllm")
    assert eng.hw.calibration.kernel["moe_rows.bf16"] == table["kernel"]["moe_rows.bf16"]
    assert eng.hw.calibration.kernel["moe_grouped_gemm.bf16"] == table["kernel"]["moe_grouped_gemm.bf16"]
    assert "moefit.pairs_bytes, triton" in eng.hw.calibration.provenance["moe bf16"]["table"]
    assert "moefit.pairs_bytes" not in eng.hw.calibration.provenance["moe fp8"]["table"]
