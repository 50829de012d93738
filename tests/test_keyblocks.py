"""A windowed decode on FlashAttention 3 computes whole key blocks (``core.keyblocks``, ``key_blocks = "fa3"``): the
block count follows the window's position in the sequence, the law prices the blocks' keys and bytes for a class that
names them, the fitter tries them on vLLM's FA3 window classes only, and a calibration file's value is checked."""
from dataclasses import replace

import numpy as np
import pytest

import ironlaw
from attention_cases import decode_case, op_s
from ironlaw.core.errors import IronlawError
from ironlaw.core.keyblocks import FA3_LOCAL_BLOCK_N, fa2_block_n, fa2_window_keys, fa3_block_n, window_blocks
from ironlaw.machine import calibration, engines, hardware

# aiconfigurator-core 0.12.0, vLLM 0.24.0, H200 (vllm_flash_attn_fa3), bf16 cache, window 128, 64 heads on 8 KV
# heads x 64 (gpt-oss-20b's windowed layers), batch 64: 20.3 us at 127 cached tokens, 32.9 us at 255
H200_ROWS_S = {127: 20.3e-6, 255: 32.9e-6}


def test_fa3_s_block_n_per_head_dim_is_its_local_tile():
    assert FA3_LOCAL_BLOCK_N == ((64, 160), (96, 128), (128, 128), (192, 96), (256, 64))
    assert list(fa3_block_n([64, 80, 128, 192, 256, 512])) == [160, 128, 128, 96, 64, 64]


def test_the_window_touches_one_block_then_two_as_the_table_steps():
    """Head dim 64 (blocks of 160), window 128: one block up to 128 tokens, two from 256 on at every length the
    table times; head dim 256 (blocks of 64), window 1,024: 1, 2, 4, 8, 16 blocks at 64 … 1,024 tokens."""
    history = np.array([2.0, 64, 128, 256, 512, 2048, 32768])
    assert list(window_blocks(history, np.minimum(history, 128), 160)) == [1, 1, 1, 2, 2, 2, 2]
    history = np.array([64.0, 128, 256, 512, 1024])
    assert list(window_blocks(history, np.minimum(history, 1024), 64)) == [1, 2, 4, 8, 16]


def _window_time(hw, seq: int, batch: int = 64) -> tuple[float, float]:
    a = ironlaw.analyze("gpt-oss-20b", on=hw, batch=batch, seq=seq, phase="decode")
    (i, op), = [(i, o) for i, o in enumerate(a.graph.ops) if o.name == "attention.window"]
    return float(np.asarray(a.op_time_s).reshape(len(a.graph.ops), -1)[i, 0]), float(op.bytes["kv_cache"])


def test_vllm_on_h200_prices_the_second_block_its_window_touches():
    """gpt-oss's windowed layers on vLLM's H200 terms read the same 128 keys at 127 and 255 cached tokens, but FA3
    computes one block of 160 keys, then two: the law follows the table's step (1.6x) within 20% per row; the same
    class without ``key_blocks`` prices both lengths alike."""
    hw, _ = engines.with_engine(hardware.get("h200"), "vllm")
    (t127, kv127), (t255, kv255) = (_window_time(hw, s) for s in (127, 255))
    assert kv127 == kv255 and t255 > 1.3 * t127
    for seq, t in ((127, t127), (255, t255)):
        assert t == pytest.approx(H200_ROWS_S[seq], rel=0.20)
    cal = hw.calibration.table()
    name = next(n for n, p in cal["kernel"].items() if p.get("key_blocks") == "fa3" and n.endswith("_kv_bf16_window"))
    cal["kernel"][name] = {k: v for k, v in cal["kernel"][name].items() if k != "key_blocks"}
    plain = replace(hw, calibration=calibration.Calibration.of(cal))
    (p127, _), (p255, _) = (_window_time(plain, s) for s in (127, 255))
    assert p255 == pytest.approx(p127, rel=0.05)


def test_key_blocks_names_a_known_kernel():
    cal = engines.with_engine(hardware.get("h200"), "vllm")[0].calibration.table()
    name = next(n for n, p in cal["kernel"].items() if p.get("key_blocks"))
    cal["kernel"][name] = {**cal["kernel"][name], "key_blocks": "fa4"}
    with pytest.raises(IronlawError, match="key_blocks: must be one of fa3, fa2"):
        calibration.check(cal, "calibration")


def test_the_fitter_tries_the_blocks_on_vllm_s_fa3_window_classes_only():
    """``kernelfit.launches.key_blocks_of``: the extract's H100 window decode rows, as vLLM's FA3 rows, try the blocks;
    as TensorRT-LLM's, or timed on another kernel, or on two, they do not."""
    pytest.importorskip("pandas")
    from pathlib import Path

    from ironlaw.measure.calibrate import kernelfit, kerneltable
    data = Path(__file__).parent / "data" / "kernel_tables" / "h100_sxm"
    gs = kernelfit.groups(kerneltable.read(data, ops=("generation_attention",), framework="trtllm"))
    g = next(x for x in gs if x.name.endswith("sliding window"))
    vllm = replace(g, table=replace(g.table, framework="vllm"))
    fa3 = g.rows.assign(kernel_source="vllm_flash_attn_fa3")
    assert kernelfit.launches.key_blocks_of(vllm, fa3) == ({"key_blocks": "fa3"},)
    assert kernelfit.launches.key_blocks_of(g, fa3) == ()
    assert kernelfit.launches.key_blocks_of(vllm, g.rows.assign(kernel_source="vllm_flash_attn_fa2")) == ()
    mixed = fa3.assign(kernel_source=np.where(np.arange(len(fa3)) % 2, "vllm_triton_attn", "vllm_flash_attn_fa3"))
    assert kernelfit.launches.key_blocks_of(vllm, mixed) == ()


def test_fa2_s_split_kv_block_n_per_head_dim():
    assert list(fa2_block_n([32, 64, 96, 128, 192, 256])) == [256, 256, 128, 128, 64, 64]


def test_fa2_reads_from_the_block_of_the_window_s_first_key():
    """Head dim 64 (blocks of 256), window 128: 128 keys at 128 tokens, 256 from 256 on (the L40S table's step,
    0.93 → 1.65 ms at batch 2,048); head dim 128 (blocks of 128): the window's 128 at every length; head dim 256
    (blocks of 64), window 1,024: the window's keys, whole blocks of it."""
    history = np.array([2.0, 128, 256, 512, 2048, 131072])
    assert list(fa2_window_keys(history, np.minimum(history, 128), 64)) == [2, 128, 256, 256, 256, 256]
    assert list(fa2_window_keys(history, np.minimum(history, 128), 128)) == [2, 128, 128, 128, 128, 128]
    history = np.array([64.0, 512, 1024, 4096])
    assert list(fa2_window_keys(history, np.minimum(history, 1024), 256)) == [64, 512, 1024, 1024]


def test_the_fitter_tries_one_cta_per_query_head_on_vllm_s_fa2_window_classes_only():
    """``kernelfit.launches.head_ctas_of``: the extract's H100 window decode rows, as vLLM's FA2 rows of the MMHA-rule
    class, try the launch of one CTA per query head with and without FA2's key blocks; as vLLM's FA3 rows, as
    TensorRT-LLM's, or as vLLM's XQA-rule class, they do not."""
    pytest.importorskip("pandas")
    from pathlib import Path

    from ironlaw.measure.calibrate import kernelfit, kerneltable
    data = Path(__file__).parent / "data" / "kernel_tables" / "h100_sxm"
    hw = hardware.get("h100")
    gs = kernelfit.groups(kerneltable.read(data, ops=("generation_attention",), framework="trtllm"))
    for g in (x for x in gs if "sliding window" in x.name):
        vllm = replace(g, table=replace(g.table, framework="vllm"))
        fa2 = g.rows.assign(kernel_source="vllm_flash_attn_fa2")
        mine = g.name.endswith("MMHA kernel")
        assert kernelfit.launches.head_ctas_of(hw, vllm, fa2) == (kernelfit.rules.HEAD_CTA_LAUNCHES if mine else ())
        assert kernelfit.launches.head_ctas_of(hw, g, fa2) == ()
        assert kernelfit.launches.head_ctas_of(hw, vllm, g.rows.assign(kernel_source="vllm_flash_attn_fa3")) == ()
    assert {t.get("split_kv") for t in kernelfit.rules.HEAD_CTA_LAUNCHES} == {"heads", None}


def _l40s_vllm_window_s(seq: int, batch: int = 2048, heads: int = 8, head_dim: int = 64) -> tuple[float, str]:
    hw, _ = engines.with_engine(hardware.get("l40s"), "vllm")
    g, i, op = decode_case(heads, heads, batch, seq, head_dim, sliding_window=128)
    return op_s(g, i, hw), op.attrs["kernel"]


def test_vllm_on_l40s_prices_fa2_s_second_block_of_keys():
    """vLLM's L40S window decode on an MMHA-rule head group (one head per KV head) runs FlashAttention 2: at head dim 64
    its window of 128 keys sits in one block of 256 keys up to 128 tokens, and from 256 on it reads 256 (the table:
    8 heads on 8 KV heads, batch 2,048, 0.93 ms at 127 cached tokens, 1.65 ms at 255); the class names FA2's key
    blocks and the law steps with them, within 30% of each row."""
    (t127, kernel), (t255, _) = (_l40s_vllm_window_s(s) for s in (127, 255))
    assert kernel.endswith("_window_mmha")
    cal = engines.with_engine(hardware.get("l40s"), "vllm")[0].calibration.table()
    assert cal["kernel"][kernel].get("key_blocks") == "fa2"
    assert t255 > 1.3 * t127
    assert t127 == pytest.approx(0.93e-3, rel=0.30) and t255 == pytest.approx(1.65e-3, rel=0.30)
