"""TensorRT-LLM's decode on its MMHA kernel outside a sliding window: over 32 query heads per KV head and one, where
XQA refuses the head group (``gemmshape.window_kernel``). The op states its whole sequence, the fit tries MMHA's
launch for those classes (``kernelfit.rules.SPLIT_CLASSES``), and a class fitted so prices the launch's waves, as a
served step does."""
from dataclasses import replace

import numpy as np
import pytest

from attention_cases import decode_case, op_s, relaunched
from ironlaw.law import efficiency
from ironlaw.machine import hardware
from ironlaw.measure.calibrate import kernelfit


@pytest.mark.parametrize("heads, kv_heads, regime", [(96, 1, "_wide"), (128, 2, "_wide"), (32, 32, "_mha")])
def test_a_decode_on_mmha_states_its_sequence(heads, kv_heads, regime):
    _, _, op = decode_case(heads, kv_heads, 4, 4095, 128)
    assert op.attrs["kernel"].endswith(regime)
    assert op.attrs["history"] == 4096.0                                  # s cached, one new
    assert op.attrs["mnk"][1] == 4096.0                                   # its keys: the same sequence


@pytest.mark.parametrize("heads, kv_heads, phase", [(32, 8, "decode"), (64, 2, "decode"), (96, 1, "prefill")])
def test_an_xqa_decode_and_a_prefill_state_none(heads, kv_heads, phase):
    """2 to 32 query heads per KV head run XQA (no history to split); a global prefill states none either."""
    _, _, op = decode_case(heads, kv_heads, 4, 4095, 128, phase)
    assert "history" not in op.attrs


def test_the_wide_and_one_head_decode_classes_try_mmhas_launches():
    for regime in ("_wide", "_mha"):
        tries = kernelfit.rules.SPLIT_CLASSES[("generation_attention", regime)]
        assert tries == kernelfit.rules.SPLIT_CLASSES[("generation_attention", "_window_mmha")]
        assert {t["split_kv"] for t in tries} == {"mmha"}


def _op_s(hw, heads: int, kv_heads: int, batch: int, seq: int, head_dim: int = 128) -> float:
    g, i, _ = decode_case(heads, kv_heads, batch, seq, head_dim)
    return op_s(g, i, hw)                                                   # one call


def test_rtx_pro_6000s_wide_decode_class_prices_mmhas_waves():
    """The catalog's RTX PRO 6000 class (TensorRT-LLM 1.3.0rc20, bf16 cache, over 32 heads per KV head) is fitted on
    MMHA's tuned launch: at one cached token, 96 heads on one KV head × 128 take 6.9, 11.0, 13.2, 11.0 µs at batch 1,
    2, 4, 8 in aiconfigurator-core 0.12.0's table (1, 2, 3, 2 waves of its blocks), which a launch per sequence and KV
    head (one CTA per KV head, a 16th of the SMs at most) cannot show: batch 8 faster than batch 4."""
    hw = hardware.get("rtx-pro-6000")
    p = hw.calibration.kernel["attention_generation_bf16_kv_bf16_wide"]
    assert p["split_kv"] == "mmha" and p["mmha_occupancy"] in (2, 3, 4)
    t = [_op_s(hw, 96, 1, b, 1) for b in (1, 2, 4, 8)]
    for got, row_s in zip(t, (6.9e-6, 11.0e-6, 13.2e-6, 11.0e-6)):
        assert got == pytest.approx(row_s, rel=0.10)
    assert t[3] < t[2] and t[1] > 1.3 * t[0]


def test_a_served_step_on_the_wide_class_pays_the_launch_the_table_was_fitted_on():
    """One model: a served decode step's attention op is the table's op, so the class's launch prices it too; without
    the class's split_kv the law launches it unsplit, per sequence and KV head."""
    hw = hardware.get("rtx-pro-6000")
    g, _, op = decode_case(96, 1, 8, 1, 128)
    assert op.attrs["kernel"] == "attention_generation_bf16_kv_bf16_wide"
    plain = replace(hw, calibration=relaunched(hw, op))
    split = efficiency.split_blocks(hw.calibration, g.columns(), hw)
    assert split is not None and np.any(split.fold == 96.0)                # a CTA per query head
    assert efficiency.split_blocks(plain.calibration, g.columns(), plain) is None
