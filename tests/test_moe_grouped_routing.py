"""The DeepSeek-shaped rows of vLLM's and SGLang's MoE tables (aiconfigurator-core 0.12.0, NVIDIA, Apache-2.0): the
collector's balanced logits pass through DeepSeek-V3's group-limited router inside the timed layer
(``kernelfit.rules.MOE_GROUPED_ROUTING``), which keeps the same 4 of 8 expert groups for every token
(``core.routing.grouped_balanced_local``): the rows reach 128 of the 256 experts, not 256."""
from __future__ import annotations

import numpy as np

from ironlaw.core.routing import balanced_local, grouped_balanced_local
from ironlaw.machine import hardware
from ironlaw.measure.calibrate import moefit
from ironlaw.measure.calibrate.kernelfit import rules


def test_tied_groups_keep_the_first_four_for_every_token_and_fill_from_their_lowest_experts():
    # one pick per 32-expert group: groups 0-3 kept, each token's 4 picks there plus experts 0-3 (the lowest unpicked)
    assert balanced_local(64, 256, 8, 1) == (512, 256)
    assert grouped_balanced_local(64, 256, 8, 1, 8, 4) == (512, 128)
    assert grouped_balanced_local(8, 256, 8, 1, 8, 4) == (64, 35)       # 32 picked + experts 1, 2, 3
    # EP 8: rank 0 holds group 0 — each token's own pick there and the 4 filled experts
    assert balanced_local(64, 256, 8, 8) == (64, 32)
    assert grouped_balanced_local(64, 256, 8, 8, 8, 4) == (320, 32)
    assert grouped_balanced_local(64, 256, 8, 2, 8, 4) == (512, 128)    # rank 0 holds groups 0-3: every pick


def test_groups_that_hold_the_picks_change_nothing():
    # 16 experts top-2, 4 groups of 4: token j picks j and j + 8, two groups, both kept
    for t in (1, 3, 8, 40):
        assert grouped_balanced_local(t, 16, 2, 1, 4, 2) == balanced_local(t, 16, 2, 1)


def test_the_rule_names_the_deepseek_shape_of_the_vllm_and_sglang_tables_alone():
    assert rules.grouped_routing("vllm", "0.24.0", 7168, 2048, 256, 8) == (8, 4)
    assert rules.grouped_routing("sglang", "0.5.14", 7168, 2048, 256, 8) == (8, 4)
    assert rules.grouped_routing("trtllm", "1.3.0rc20", 7168, 2048, 256, 8) == (0, 0)    # plain top-k router
    assert rules.grouped_routing("vllm", "0.24.0", 6144, 2048, 256, 8) == (0, 0)
    assert rules.grouped_routing("vllm", "0.19.0", 7168, 2048, 256, 8) == (0, 0)


def test_terms_count_the_experts_the_grouped_router_reached():
    hw = hardware.get("h200")
    n = 3
    rows = {"num_tokens": np.array([8, 64, 256]), "hidden_size": np.full(n, 7168), "inter_size": np.full(n, 2048),
            "topk": np.full(n, 8), "num_experts": np.full(n, 256), "moe_tp_size": np.full(n, 8),
            "moe_ep_size": np.ones(n, int)}
    peak, bw = hw.peak_flops["fp8"], hw.memory[hw.device_tier].bw_Bps
    plain = moefit.terms(rows, moefit.FP8_BLOCK, peak, bw)
    grouped = moefit.terms(rows, moefit.FP8_BLOCK, peak, bw, groups=np.tile([8, 4], (n, 1)))
    assert list(plain[:, 7]) == [64, 256, 256] and list(grouped[:, 7]) == [35, 128, 128]
    assert np.allclose(grouped[1:, 1], plain[1:, 1] / 2)          # half the experts' weights streamed
    assert np.array_equal(grouped[:, 2], plain[:, 2])              # the same routed rows
    # a power-law row is not re-routed here
    assert np.array_equal(moefit.terms(rows, moefit.FP8_BLOCK, peak, bw, "power_law_1.2"),
                          moefit.terms(rows, moefit.FP8_BLOCK, peak, bw, "power_law_1.2", groups=np.tile([8, 4], (n, 1))))


def test_the_stored_vllm_h200_class_prices_the_deepseek_rows_as_routed():
    # h200_sxm/moe/vllm/0.24.0/moe_perf.parquet, fp8_block, vllm_fp8moe_triton_tritonexperts, balanced, MoE TP 8, EP 1:
    # 64 and 256 tokens take 271.0 and 291.8 µs — less than streaming all 256 experts' 1.4 GB at the H200's 4.8 TB/s
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    import kernel_moe
    from ironlaw.machine import engines
    measured = np.array([270.965e-6, 291.781e-6])
    rows = {"num_tokens": np.array([64, 256]), "hidden_size": np.full(2, 7168), "inter_size": np.full(2, 2048),
            "topk": np.full(2, 8), "num_experts": np.full(2, 256), "moe_tp_size": np.full(2, 8),
            "moe_ep_size": np.ones(2, int), "latency_s": measured}
    kern = engines.load("h200", "vllm")["kernel"]
    groups = np.tile(rules.grouped_routing("vllm", "0.24.0", 7168, 2048, 256, 8), (2, 1))
    routed = kernel_moe.stored_predict(kern, "fp8_block", kernel_moe.layer_terms("h200", "fp8_block", rows,
                                                                                  groups=groups)[0])
    plain = kernel_moe.stored_predict(kern, "fp8_block", kernel_moe.layer_terms("h200", "fp8_block", rows)[0])
    assert np.all(np.abs(routed / measured - 1) < 0.3)
    assert np.all(plain / measured > 1.5)
