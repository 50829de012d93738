"""FlashInfer's decode plan splits each sequence's keys into chunks wherever the sequences × KV heads leave its grid
short (``splitkv.chunks_per_sequence``); a class that says so (``split_kv = "chunks"``) is priced per chunk CTA, at
the head dims it names."""
from dataclasses import replace

import numpy as np
import pytest

from ironlaw.core.errors import IronlawError
from ironlaw.core.splitkv import CHUNK_MIN_TOKENS, PLAN_BLOCKS_PER_SM, chunks_per_sequence
from ironlaw.law import efficiency
from ironlaw.machine import calibration, hardware
from attention_cases import decode_case, unsplit

L40S_SMS = 142


def test_chunks_fill_the_grid_and_keep_at_least_128_keys_each():
    """One sequence and KV head at 131,072 keys, 2 CTAs per SM on 142 SMs: 284 chunks of 462 keys; 8 sequences × 8
    KV heads: ⌊284 / 64⌋ = 4 chunks each; 511 keys: at most ⌈512 / 128⌉ = 4 chunks whatever the grid; a batch that
    fills the grid runs unsplit."""
    assert chunks_per_sequence(131072.0, 1.0, L40S_SMS, 2) == 284
    assert chunks_per_sequence(131072.0, 64.0, L40S_SMS, 2) == 4
    assert chunks_per_sequence(512.0, 1.0, L40S_SMS, 8) == 512 / CHUNK_MIN_TOKENS
    assert chunks_per_sequence([1.0, 127.0], 1.0, L40S_SMS, 1).tolist() == [1.0, 1.0]
    assert chunks_per_sequence(131072.0, 284.0, L40S_SMS, 2) == 1.0
    assert chunks_per_sequence(131072.0, 200.0, L40S_SMS, 2) == 1.0     # ⌊284 / 200⌋ = 1 chunk per sequence


def _decode(kv_heads: int, batch: int, seq: int, head_dim: int):
    return decode_case(kv_heads, kv_heads, batch, seq, head_dim)


def test_a_chunked_class_launches_its_chunks_at_its_head_dims_only():
    hw = hardware.get("l40s")
    g, i, op = _decode(8, 1, 131071, 128)
    name = op.attrs["kernel"]
    cal = hw.calibration.table()
    cal["kernel"][name] = {**unsplit(cal, name), "split_kv": "chunks", "chunk_occupancy": 2, "split_s": 3e-6}
    c, cols = calibration.Calibration.of(calibration.check(cal, "calibration")), g.columns()
    split = efficiency.split_blocks(c, cols, hw)
    assert split.blocks.reshape(len(g.ops), -1)[i, 0] == 35        # ⌊284 / 8⌋ = 35 chunks per sequence and KV head
    m, n, k, units = efficiency.grid_coords(cols, split)
    m0, n0, k0, u0 = efficiency.grid_coords(cols)
    assert (m * n * k * units)[i] == pytest.approx((m0 * n0 * k0 * u0)[i])
    assert np.reshape(efficiency.split_reduce_s(c, cols, split), (len(g.ops), -1))[i, 0] == pytest.approx(3e-6)
    cal["kernel"][name] = {**cal["kernel"][name], "chunk_head_dims": [64, 256]}     # another backend at 128
    c = calibration.Calibration.of(calibration.check(cal, "calibration"))
    split = efficiency.split_blocks(c, cols, hw)
    assert split is None or split.blocks.reshape(len(g.ops), -1)[i, 0] == 1


@pytest.mark.parametrize("bad, match", [
    ({"split_kv": "chunks"}, "needs its chunk_occupancy"),
    ({"split_kv": "chunks", "chunk_occupancy": 3}, "chunk_occupancy: a chunked decode class's"),
    ({"split_kv": "history", "chunk_occupancy": 2}, "chunk_occupancy: a chunked decode class's"),
    ({"split_kv": "chunks", "chunk_occupancy": 2, "chunk_head_dims": [128.5]}, "chunk_head_dims"),
    ({"chunk_head_dims": [128]}, "chunk_head_dims"),
])
def test_a_chunked_class_states_its_occupancy_and_whole_head_dims(bad, match):
    cal = hardware.get("l40s").calibration.table()
    name = "attention_generation_bf16_kv_bf16_mha"
    cal["kernel"][name] = {**unsplit(cal, name), **bad}
    with pytest.raises(IronlawError, match=match):
        calibration.check(cal, "calibration")


def test_a_chunked_class_on_a_device_without_an_sm_count_is_refused():
    hw = replace(hardware.get("l40s"), sms=None)
    g, i, op = _decode(8, 1, 4095, 128)
    cal = hw.calibration.table()
    cal["kernel"][op.attrs["kernel"]] = {**unsplit(cal, op.attrs["kernel"]), "split_kv": "chunks", "chunk_occupancy": 2}
    with pytest.raises(IronlawError, match="chunked decode attention's split-KV launch needs the device's SM count"):
        efficiency.split_blocks(calibration.Calibration.of(cal), g.columns(), hw)


def _flashinfer_class(gpu: str, framework: str, key: str, triton_at=(192,)):
    """The extract's H100 one-head decode rows standing as ``framework``'s class ``key`` on ``gpu``, FlashInfer's
    decode at every head dim but ``triton_at`` (as vLLM's FP8 cache on L40S: Triton at 192)."""
    from pathlib import Path
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    gs = kernelfit.groups(kerneltable.read(Path(__file__).parent / "data" / "kernel_tables" / "h100_sxm",
                                           ops=("generation_attention",), framework="trtllm"))
    g = next(x for x in gs if x.key[1] == "attention_generation_bf16_kv_bf16_mha")
    source = np.where(g.rows.head_dim.isin(triton_at), "vllm_triton_attn", "vllm_flashinfer_fidecode")
    return replace(g, key=("kernel", key), table=replace(g.table, gpu=gpu, framework=framework),
                   rows=g.rows.assign(kernel_source=source))


def test_the_fit_launches_chunks_on_its_own_classes_only():
    """vLLM's FP8-cache one-head class on L40S (FlashInfer's tensor-core decode, ``use_tensor_cores=True``) takes its
    prefill plan's grid, 2 CTAs per SM and no other occupancy, at FlashInfer's head dims (Triton's 192 unsplit), without
    the plan's waves, and no plain launch; the same rows as its bf16-cache class, or on H100, try none."""
    pytest.importorskip("pandas")
    from ironlaw.measure.calibrate import kernelfit
    hw = hardware.get("l40s")
    g = _flashinfer_class("l40s", "vllm", "attention_generation_bf16_kv_fp8_mha")
    tries = kernelfit.launches.chunk_launches_of(hw, g, g.rows)
    assert tries == ({"split_kv": "chunks", "chunk_occupancy": PLAN_BLOCKS_PER_SM, "chunk_head_dims": [64, 128, 256]},)
    every = _flashinfer_class("l40s", "vllm", "attention_generation_bf16_kv_fp8_mha", triton_at=())
    assert all("chunk_head_dims" not in t for t in kernelfit.launches.chunk_launches_of(hw, every, every.rows))
    bf16 = _flashinfer_class("l40s", "vllm", "attention_generation_bf16_kv_bf16_mha")
    assert kernelfit.launches.chunk_launches_of(hw, bf16, bf16.rows) == ()
    h100 = _flashinfer_class("h100", "vllm", "attention_generation_bf16_kv_fp8_mha")
    assert kernelfit.launches.chunk_launches_of(hardware.get("h100"), h100, h100.rows) == ()


def test_vllms_fp8_one_head_decode_on_l40s_takes_a_latency_per_head_dim():
    """``kernelfit.rules.HEAD_DIM_LATENCY_CLASSES``: the class on L40S measures each head dim's fastest call over the
    class's (3 µs added at head dim 256 reads back as at least 3 µs there); its bf16-cache class, and the class on H100,
    keep one fixed latency."""
    pytest.importorskip("pandas")
    from ironlaw.measure.calibrate import kernelfit
    hw = hardware.get("l40s")
    for gpu, key, own in (("l40s", "attention_generation_bf16_kv_fp8_mha", True),
                          ("l40s", "attention_generation_bf16_kv_bf16_mha", False),
                          ("h100", "attention_generation_bf16_kv_fp8_mha", False)):
        g = _flashinfer_class(gpu, "vllm", key)
        rows = g.rows.assign(latency_s=g.rows.latency_s + np.where(g.rows.head_dim == 256, 3e-6, 0.0))
        got = kernelfit.launches.head_dim_latency(replace(g, rows=rows), rows, hw)
        if own:
            at = dict(zip(got["latency_head_dims"], got["latency_head_dim_s"]))
            assert at[256] >= 3e-6 - 1e-12
        else:
            assert got == {}


def test_sglangs_fp8_one_head_decode_on_l40s_launches_chunks_at_flashinfers_head_dims():
    """SGLang's FP8-cache one-head class on L40S (FlashInfer at 128 and 256, Triton at 64 and 192; an FP8 cache decodes
    on FlashInfer's tensor cores, ``should_use_tensor_core``) takes the prefill plan's 2 CTAs per SM at FlashInfer's head
    dims only; so does its class on RTX PRO 6000; and both engine files price the class on that launch."""
    pytest.importorskip("pandas")
    from ironlaw.machine import engines
    from ironlaw.measure.calibrate import kernelfit
    key = "attention_generation_bf16_kv_fp8_mha"
    hw = hardware.get("l40s")
    g = _flashinfer_class("l40s", "sglang", key, triton_at=(64, 192))
    g = replace(g, rows=g.rows.assign(kernel_source=np.where(g.rows.head_dim.isin((64, 192)), "triton",
                                                             "flashinfer")))
    launch = ({"split_kv": "chunks", "chunk_occupancy": PLAN_BLOCKS_PER_SM, "chunk_head_dims": [128, 256]},)
    assert kernelfit.launches.chunk_launches_of(hw, g, g.rows) == launch
    rtx = replace(g, table=replace(g.table, gpu="rtx-pro-6000"))
    assert kernelfit.launches.chunk_launches_of(hardware.get("rtx-pro-6000"), rtx, rtx.rows) == launch
    for gpu in ("l40s", "rtx-pro-6000"):
        stored = engines.load(gpu, "sglang")["kernel"][key]
        assert stored["split_kv"] == "chunks" and stored["chunk_occupancy"] == PLAN_BLOCKS_PER_SM
        assert stored["chunk_head_dims"] == [128, 256] and "chunk_plan" not in stored
