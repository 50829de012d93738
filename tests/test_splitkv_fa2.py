"""FlashAttention 2's split-KV decode under its grouped-query swap (``split_kv = "fa2"``, ``splitkv.fa2_splits``):
its heuristic's splits of each sequence's key blocks while the CTAs fill under 80% of two per SM, a merge per split
(``merge_s``), and its launch in whole waves of the SMs (``efficiency.chunk_waves``)."""
from dataclasses import replace

import numpy as np
import pytest

from ironlaw.core.errors import IronlawError
from ironlaw.core.splitkv import fa2_block_n, fa2_splits
from ironlaw.law import efficiency
from ironlaw.machine import calibration, hardware
from attention_cases import decode_case, relaunched

RTX_SMS = 188


def test_the_heuristic_splits_a_short_grid_by_key_blocks():
    """One sequence, 64 heads on one KV head × 128 (blocks of 128 keys): one split up to one block, then one per
    block up to FA2's 128; 301 sequences × KV heads fill 80% of 376 slots and run unsplit; 128 at two key blocks of
    256 (head dim 64) split in 2 (wave efficiency 0.68 against 0.34), 300 not (0.80 either way: the fewer)."""
    keys = [64, 128, 256, 512, 1024, 4096, 16384, 32768]
    assert fa2_splits(keys, 64, 1, RTX_SMS, 128).tolist() == [1, 1, 2, 4, 8, 32, 128, 128]
    assert fa2_splits(512, 64, [128, 300, 301], RTX_SMS, 64).tolist() == [2, 1, 1]
    assert fa2_block_n([64, 128, 256]).tolist() == [256, 128, 64]


def _decode(heads: int, batch: int, seq: int, head_dim: int):
    return decode_case(heads, 1, batch, seq, head_dim)


def _fa2(hw, op, **extra) -> calibration.Calibration:
    return relaunched(hw, op, split_kv="fa2", **extra)


def test_a_split_pays_its_merge_per_split_and_its_launch_in_waves():
    """RTX PRO 6000, 64 heads on one KV head × 128, batch 1 at 16,383 cached tokens: 128 splits, 128 CTAs on 188
    SMs (wave factor 188 / 128), split_s + 128 · merge_s; at 63 cached tokens one CTA, unsplit (factor 188)."""
    hw = hardware.get("rtx-pro-6000")
    g, i, op = _decode(64, 1, 16383, 128)
    cols = g.columns()
    cal = _fa2(hw, op, split_s=2e-6, merge_s=1.5e-7)
    split = efficiency.split_blocks(cal, cols, hw)
    assert split.blocks.reshape(len(g.ops), -1)[i, 0] == 128
    assert np.reshape(efficiency.split_reduce_s(cal, cols, split), (len(g.ops), -1))[i, 0] == \
        pytest.approx(2e-6 + 128 * 1.5e-7)
    assert np.reshape(efficiency.chunk_waves(cal, cols, hw, split), (len(g.ops), -1))[i, 0] == pytest.approx(188 / 128)
    g, i, op = _decode(64, 1, 63, 128)
    cols = g.columns()
    split = efficiency.split_blocks(cal, cols, hw)
    assert split.blocks.reshape(len(g.ops), -1)[i, 0] == 1
    assert np.reshape(efficiency.split_reduce_s(cal, cols, split), (len(g.ops), -1))[i, 0] == 0.0
    assert np.reshape(efficiency.chunk_waves(cal, cols, hw, split), (len(g.ops), -1))[i, 0] == pytest.approx(188.0)


def test_a_merge_per_split_needs_a_split_that_merges_so():
    hw = hardware.get("rtx-pro-6000")
    _, _, op = _decode(64, 1, 63, 128)
    cal = hw.calibration.table()
    name = op.attrs["kernel"]
    plain = {k: v for k, v in cal["kernel"][name].items()
             if k not in ("split_kv", "split_s", "merge_s", "mmha_threads", "mmha_occupancy")}
    cal["kernel"][name] = {**plain, "split_kv": "chunks", "chunk_occupancy": 2, "merge_s": 1e-7}
    with pytest.raises(IronlawError, match="merge_s"):
        calibration.check(cal, "calibration")


def test_the_fit_splits_vllms_rtx_pro_6000_decode_over_32_heads_only():
    pytest.importorskip("pandas")
    from pathlib import Path
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    gs = kernelfit.groups(kerneltable.read(Path(__file__).parent / "data" / "kernel_tables" / "h100_sxm",
                                           ops=("generation_attention",), framework="trtllm"))
    base = next(x for x in gs if x.name.endswith("over 32 heads per KV head"))
    for gpu, framework, key, own in (("rtx-pro-6000", "vllm", "attention_generation_bf16_kv_bf16_wide", True),
                                     ("l40s", "vllm", "attention_generation_bf16_kv_bf16_wide", False),
                                     ("rtx-pro-6000", "sglang", "attention_generation_bf16_kv_bf16_wide", False),
                                     ("rtx-pro-6000", "vllm", "attention_generation_bf16_kv_bf16_mha", False)):
        g = replace(base, key=("kernel", key), table=replace(base.table, gpu=gpu, framework=framework))
        assert kernelfit.launches.fa2_launch_of(hardware.get(gpu), g) == ({"split_kv": "fa2"} if own else {})
