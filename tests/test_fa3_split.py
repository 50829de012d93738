"""vLLM's FlashAttention 3 decode splits each windowed sequence's whole cache where the batch leaves SMs idle
(``splitkv.fa3_dynamic_splits``, ``split_kv = "fa3"``): the split count follows the scheduler's arithmetic, the law
adds the class's ``split_s`` only where the call splits and keeps the op's window keys, and the fitter tries it on
its own classes only; vLLM's FP8-cache window decode on L40S and RTX PRO 6000 takes a latency per head dim and head
group (``kernelfit.rules.GROUP_FASTEST_CLASSES``)."""
from dataclasses import replace

import numpy as np
import pytest

from attention_cases import decode_case, op_s
from ironlaw.core.keyblocks import FA3_LOCAL_BLOCK_N_FP8, fa3_block_n
from ironlaw.core.splitkv import FA3_SPLITS_MAX, fa3_dynamic_splits
from ironlaw.machine import calibration, engines, hardware

H100_SMS = 132


def test_the_scheduler_splits_the_whole_sequence_where_the_batch_leaves_sms_idle():
    """One sequence and KV head × 128 (blocks of 128): one block, one split, up to 128 tokens; 2 blocks at 256 split
    in two (the H100 table's step, 13 → 18.7 µs at batch 1); 131,072 tokens, 1,024 blocks, capped at vLLM's 32.
    8 sequences × 8 KV heads × 64 (blocks of 160): 2 blocks at 256 take 2 per SM and run unsplit, 4 at 512 split in
    two (14.5 → 16.1 µs); more than 992 sequences, or a bound of 1, never split."""
    history = np.array([64.0, 128, 256, 512, 131072])
    assert fa3_dynamic_splits(history, 1, 1, 1, 128, H100_SMS, FA3_SPLITS_MAX).tolist() == [1, 1, 2, 4, 32]
    assert fa3_dynamic_splits(np.array([256.0, 512]), 8, 8, 1, 160, H100_SMS, 32).tolist() == [1, 2]
    assert fa3_dynamic_splits(131072.0, 1024, 1, 1, 128, H100_SMS, 32) == 1
    assert fa3_dynamic_splits(131072.0, 1, 1, 1, 128, H100_SMS, 1) == 1


def test_fa3_s_fp8_block_n_per_head_dim():
    assert FA3_LOCAL_BLOCK_N_FP8 == ((64, 128), (96, 128), (128, 192), (192, 96), (256, 64))
    assert list(fa3_block_n([64, 128, 192, 256], True)) == [128, 192, 96, 64]
    assert list(fa3_block_n([64, 128], [False, True])) == [160, 192]


def _h100_window_s(seq: int, batch: int, kv_heads: int, split_s: float | None) -> float:
    """vLLM's H100 terms, one query head per KV head × 128, window 128, its class given ``split_kv = "fa3"`` and
    ``split_s`` (None: as stored)."""
    hw, _ = engines.with_engine(hardware.get("h100"), "vllm")
    g, i, op = decode_case(kv_heads, kv_heads, batch, seq, 128, sliding_window=128)
    if split_s is not None:
        cal = hw.calibration.table()
        cal["kernel"][op.attrs["kernel"]] = {**cal["kernel"][op.attrs["kernel"]], "split_kv": "fa3", "split_s": split_s}
        hw = replace(hw, calibration=calibration.Calibration.of(cal))
    return op_s(g, i, hw)


def test_a_fa3_split_class_pays_its_split_only_where_the_scheduler_splits():
    """Batch 1, one KV head: 127 and 255 cached tokens read the window's 128 keys alike; at 255 the call splits and
    pays ``split_s`` (5 µs) on top; 8 sequences × 8 KV heads at 255 do not split and pay nothing more."""
    for seq in (127, 255):
        plain, split = _h100_window_s(seq, 1, 1, None), _h100_window_s(seq, 1, 1, 5e-6)
        assert split - plain == pytest.approx(5e-6 if seq == 255 else 0.0, abs=1e-9)
    assert _h100_window_s(255, 8, 8, 5e-6) == pytest.approx(_h100_window_s(255, 8, 8, None), rel=1e-9)


def test_split_kv_fa3_is_a_known_split_without_a_merge_per_block():
    cal = engines.with_engine(hardware.get("h100"), "vllm")[0].calibration.table()
    name = next(n for n in cal["kernel"] if n.endswith("_window_mmha"))
    cal["kernel"][name] = {**cal["kernel"][name], "split_kv": "fa3", "split_s": 5e-6}
    calibration.check(cal, "calibration")
    cal["kernel"][name]["merge_s"] = 1e-8
    with pytest.raises(Exception, match="merge_s"):
        calibration.check(cal, "calibration")


def _window_class(gpu: str, framework: str, key: str, source: str):
    """The extract's H100 TensorRT-LLM window decode rows as ``framework``'s class ``key`` on ``gpu``, every row timed
    on ``source``."""
    from pathlib import Path
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    gs = kernelfit.groups(kerneltable.read(Path(__file__).parent / "data" / "kernel_tables" / "h100_sxm",
                                           ops=("generation_attention",), framework="trtllm"))
    g = next(x for x in gs if x.key[1].endswith("_window_mmha"))
    return replace(g, key=("kernel", key), table=replace(g.table, gpu=gpu, framework=framework),
                   rows=g.rows.assign(kernel_source=source))


def test_the_fitter_tries_fa3_s_split_on_its_own_classes_only():
    """vLLM's FP8-cache MMHA-rule window class on H100 and H200, timed on FA3, tries the split; its bf16-cache class,
    the class on B200, or timed on another kernel, do not."""
    pytest.importorskip("pandas")
    from ironlaw.measure.calibrate import kernelfit
    own = "attention_generation_bf16_kv_fp8_window_mmha"
    for gpu in ("h100", "h200"):
        g = _window_class(gpu, "vllm", own, "vllm_flash_attn_fa3")
        assert kernelfit.launches.fa3_splits_of(hardware.get(gpu), g, g.rows) == ({"split_kv": "fa3"},)
    other = _window_class("h100", "vllm", "attention_generation_bf16_kv_bf16_window_mmha", "vllm_flash_attn_fa3")
    b200 = _window_class("b200", "vllm", own, "vllm_flash_attn_fa3")
    fa2 = _window_class("h100", "vllm", own, "vllm_flash_attn_fa2")
    assert kernelfit.launches.fa3_splits_of(hardware.get("h100"), other, other.rows) == ()
    assert kernelfit.launches.fa3_splits_of(hardware.get("b200"), b200, b200.rows) == ()
    assert kernelfit.launches.fa3_splits_of(hardware.get("h100"), fa2, fa2.rows) == ()


def test_vllms_gddr_fp8_window_decode_takes_a_latency_per_head_dim_and_group():
    """``kernelfit.rules.GROUP_FASTEST_CLASSES``: the class on L40S measures each head dim and head group's fastest call at
    one wave over the class's (3 µs added to every call of its slowest pair reads back there as at least 3 µs); a pair
    timed only past one wave takes none; the same rows as its bf16-cache class, or on H100, keep the class's one
    fixed latency."""
    pytest.importorskip("pandas")
    from ironlaw.measure.calibrate import kernelfit
    key = "attention_generation_bf16_kv_fp8_window_mmha"
    g = _window_class("l40s", "vllm", key, "vllm_flashinfer_fidecode")
    rows = g.rows.assign(group=g.rows.num_heads // g.rows.num_key_value_heads)
    wave = rows.batch_size * rows.num_key_value_heads <= kernelfit.rules.GROUP_WAVE_UNITS
    dim, heads = rows[wave].groupby(["head_dim", "group"])["latency_s"].min().idxmax()
    far = set(rows[["head_dim", "group"]].itertuples(index=False, name=None)) \
        - set(rows[wave][["head_dim", "group"]].itertuples(index=False, name=None))
    assert far                                   # the extract times some pairs only past one wave
    rows.loc[(rows.head_dim == dim) & (rows.group == heads), "latency_s"] += 3e-6
    terms = kernelfit.launches.head_dim_latency(g, rows.drop(columns="group"), hardware.get("l40s"))
    got = dict(zip(zip(terms["latency_head_dims"], terms["latency_groups"]), terms["latency_head_dim_s"]))
    assert got[(dim, heads)] >= 3e-6 and not far & set(got)
    bf16 = _window_class("l40s", "vllm", "attention_generation_bf16_kv_bf16_window_mmha", "vllm_flash_attn_fa2")
    h100 = _window_class("h100", "vllm", key, "vllm_flash_attn_fa3")
    assert "latency_groups" not in kernelfit.launches.head_dim_latency(bf16, bf16.rows, hardware.get("l40s"))
    assert "latency_groups" not in kernelfit.launches.head_dim_latency(h100, h100.rows, hardware.get("h100"))


def test_vllms_gddr_fp8_window_decode_on_the_mmha_rule_tries_its_unit_cost_in_waves():
    """``kernelfit.rules.UNIT_WAVE_GPU_CLASSES``: the MMHA-rule class on L40S and RTX PRO 6000, its rows on FlashInfer's
    decode, tries ``unit_s`` in waves; timed on another kernel, as its bf16-cache class, or on H100, it does not."""
    pytest.importorskip("pandas")
    from ironlaw.measure.calibrate import kernelfit
    key = "attention_generation_bf16_kv_fp8_window_mmha"
    for gpu in ("l40s", "rtx-pro-6000"):
        g = _window_class(gpu, "vllm", key, "vllm_flashinfer_fidecode")
        assert kernelfit.launches.unit_waves_of(hardware.get(gpu), g, g.rows) == ({"unit_launch": "waves"},)
    triton = _window_class("l40s", "vllm", key, "vllm_triton_attn")
    bf16 = _window_class("l40s", "vllm", "attention_generation_bf16_kv_bf16_window_mmha", "vllm_flashinfer_fidecode")
    h100 = _window_class("h100", "vllm", key, "vllm_flashinfer_fidecode")
    assert kernelfit.launches.unit_waves_of(hardware.get("l40s"), triton, triton.rows) == ()
    assert kernelfit.launches.unit_waves_of(hardware.get("l40s"), bf16, bf16.rows) == ()
    assert kernelfit.launches.unit_waves_of(hardware.get("h100"), h100, h100.rows) == ()
