"""A sliding-window decode attention as its split-KV kernel launches it: the op states its whole sequence beside its
window, the blocks follow TensorRT-LLM XQA's heuristic (``core.splitkv``), and the law prices the keys it reads
(the window's) and the CTAs it launches (over the whole sequence) where the kernel class says it splits."""
import tomllib
from dataclasses import replace

import numpy as np
import pytest

import ironlaw
from ironlaw.core.errors import IronlawError
from ironlaw.core.splitkv import (blocks_per_sequence, in_whole_waves, mmha_blocks_per_sequence,
                                  mmha_tokens_per_loop, mmha_tuned_launch, mmha_tuned_threads)
from ironlaw.law import efficiency, law
from ironlaw.machine import calibration, hardware
from ironlaw.machine.hardware import parse_hardware
from ironlaw.models.workloads import Request
from ironlaw.models.workloads import transformer as T

H100_SMS = 132
WINDOW_CLASS = "attention_generation_bf16_kv_bf16_window"


def test_blocks_follow_the_whole_history_and_stop_at_eight_waves():
    """computeMultiBlockCount: ⌊history / 128⌋, at most round(√(8·blocks)), then at most 8 waves of CTAs; checked
    where aiconfigurator-core 0.12.0's H100 window-128 table (32 heads on 8 KV heads) steps: batch 8 grows from
    127 to 4,095 cached tokens and then holds, batch 64 steps once at 255, batch 128 never does."""
    hist = np.array([128, 256, 512, 1024, 2048, 4096, 8192, 131072], float)
    assert blocks_per_sequence(hist, 8 * 8, H100_SMS).tolist() == [1, 2, 4, 8, 11, 16, 16, 16]
    assert blocks_per_sequence(hist[:4], 64 * 8, H100_SMS).tolist() == [1, 2, 2, 2]
    assert blocks_per_sequence(hist[:4], 128 * 8, H100_SMS).tolist() == [1, 1, 1, 1]
    assert blocks_per_sequence([1.0, 127.0], 1, H100_SMS).tolist() == [1, 1]          # never below one block
    assert blocks_per_sequence([131072.0], 1, 188)[0] == 91                # round(√(8 · 1024))
    assert blocks_per_sequence([131072.0], 1, 1)[0] == 8                   # eight waves on one SM


def test_mmha_splits_each_query_head_by_the_sms_and_its_key_loop():
    """multi_block_grid_setup: at most ⌈SMs / (sequences · heads)⌉ blocks, at most ⌈(history + 1) / keys per loop⌉;
    checked where aiconfigurator-core 0.12.0's H100 window-128 table (one head at 64, 1,024 keys per loop of a
    1,024-thread block) steps: one sequence splits from 1,023 cached tokens on (9 → 13-14 µs), 8 sequences reach
    17 blocks at 16,383 (136 CTAs, two waves on 132 SMs: 19 µs), 256 sequences never split."""
    assert mmha_tokens_per_loop([64, 128, 192, 256], 1024).tolist() == [1024, 512, 256, 256]
    assert mmha_tokens_per_loop(192, 512) == 128
    hist = np.array([512, 1024, 8192, 16384, 131072], float)             # s + 1: 511 … 131,071 cached tokens
    assert mmha_blocks_per_sequence(hist, 1, H100_SMS, 1024).tolist() == [1, 2, 9, 17, 129]
    assert mmha_blocks_per_sequence(hist, 8, H100_SMS, 1024).tolist() == [1, 2, 9, 17, 17]
    assert mmha_blocks_per_sequence(hist, 256, H100_SMS, 1024).tolist() == [1, 1, 1, 1, 1]
    assert mmha_blocks_per_sequence(hist, 132, H100_SMS, 1024).tolist() == [1, 1, 1, 1, 1]  # one wave already
    waves = in_whole_waves(np.array([1.0, 2.0, 17.0, 9.0]), np.array([1.0, 1.0, 8.0, 16.0]), H100_SMS, 1024)
    assert (waves * np.array([1, 1, 8, 16])).tolist() == [1, 528, 1056, 1056]   # unsplit; one wave; two; two (×4)
    assert in_whole_waves(2.0, 1.0, H100_SMS, 512) == 264                # a 512-thread block: two 256-thread CTAs


B200_SMS = 148


def test_mmha_tunes_its_block_to_the_idle_sms_and_runs_it_in_whole_waves():
    """mmha_launch_kernel_ex below 4 CTAs per SM: blocks of 256 · min(⌈SMs · occupancy / CTAs⌉, occupancy) threads
    (a 1,024-thread block that does not fit falls back to 512), split or not, in whole waves; checked where
    aiconfigurator-core 0.12.0's B200 window-128 table (one KV head × 64, bf16 cache) steps, at 3 CTAs per SM: 64
    heads at batch 1, 8.7 µs unsplit, 12.8 µs at 511 cached tokens (2 blocks, one wave), 17.9 µs at 1,023 (3, two
    waves); 96 heads at batch 2, 4, 8 and 16 at one cached token: 12.8, 19.0, 13.2, 23.1 µs (2, 3, 2, 4 waves)."""
    assert mmha_tuned_threads([64, 192, 384, 512, 768, 4096], B200_SMS, 3).tolist() == [512, 512, 512, 256, 256, 256]
    assert mmha_tuned_threads([64, 192, 384], B200_SMS, 4).tolist() == [1024, 1024, 512]
    assert mmha_tuned_threads(600, B200_SMS, 4) == 256                    # from 4 CTAs per SM on: untuned
    waves = lambda hist, ctas: (lambda slots, tiles: (slots * ctas / (B200_SMS * 3), tiles))(  # noqa: E731
        *mmha_tuned_launch(hist, ctas, B200_SMS, 64, 3))
    assert [waves(h, 64) for h in (256.0, 512.0, 1024.0, 16384.0)] == [(1, 1), (1, 2), (2, 3), (2, 3)]
    assert [waves(2.0, 96 * b)[0] for b in (1, 2, 4, 8, 16)] == [1, 2, 3, 2, 4]
    assert waves(512.0, 96) == (2, 2)                                    # 19.1 µs: split in two, two waves
    assert waves(512.0, 192) == (2, 1)                                   # 15.1 µs: unsplit, two waves



def test_mmha_splits_no_more_than_the_sms_over_its_ctas():
    """The attention op caps the split at ⌈SMs / CTAs⌉ (``getMaxNumSeqLenTile``): from one CTA per SM on, multi-block
    mode is off whatever blocks per SM the tuned block leaves. aiconfigurator-core 0.12.0's B200 window-128 table,
    64 heads on one KV head × 64, FP8 cache: batch 4 (256 CTAs) runs 11-13 µs at every length, unsplit; batch 2
    (128 CTAs) 12.8 µs up to 511 cached tokens and 23.4 µs from 1,023 on, split in two; batch 1 in three from 2,047."""
    def launch(hist, ctas):
        slots, tiles = mmha_tuned_launch(hist, ctas, B200_SMS, 64, 4)
        return float(slots * ctas / (B200_SMS * 4)), float(tiles)
    assert [launch(h, 256) for h in (512.0, 1024.0, 32768.0)] == [(1, 1), (1, 1), (1, 1)]
    assert [launch(h, 128) for h in (512.0, 1024.0, 32768.0)] == [(1, 1), (2, 2), (2, 2)]
    assert [launch(h, 64) for h in (1024.0, 2048.0)] == [(1, 2), (2, 3)]


def test_an_mmha_op_launches_a_cta_per_query_head():
    """A one-head-per-KV-head windowed decode (MMHA): its grid coordinates are per CTA, one query row each, the
    FLOPs unchanged, and the law prices the split the class names."""
    hw = hardware.get("h100")
    arch = replace(T.builtin_arch("llama3-8b"), sliding_window=128, kv_heads=32)      # 32 heads, one per KV head
    g = T.build(arch, Request("x", phase="decode", batch=2, seq=16383), "x")
    (i, op), = [(i, o) for i, o in enumerate(g.ops) if o.kind == "attention"]
    assert op.attrs["kernel"].endswith("_window_mmha")
    cal = hw.calibration.table()
    cal["kernel"][op.attrs["kernel"]] = {**cal["kernel"][op.attrs["kernel"]], "split_kv": "mmha", "mmha_threads": 1024}
    cols = g.columns()
    split = efficiency.split_blocks(calibration.Calibration.of(cal), cols, hw)
    blocks = split.blocks.reshape(len(g.ops), -1)[i, 0]
    assert blocks == pytest.approx(4 * 2 * 132 / 64)   # 2 · 32 CTAs, ⌈132 / 64⌉ = 3 blocks: 192 CTAs, two waves of
                                                       # 1,024-thread blocks, each four 256-thread CTAs' slots
    m, n, k, units = efficiency.grid_coords(cols, split)
    m0, n0, k0, u0 = efficiency.grid_coords(cols)
    assert m[i] == 1.0 and (m * n * k * units)[i] == pytest.approx((m0 * n0 * k0 * u0)[i])


@pytest.mark.parametrize("seq, blocks, reduce_s", [(127, 148 * 3 / 32, 0.0), (16383, 2 * 148 * 3 / 32, 2e-6)])
def test_a_tuned_mmha_launch_pays_its_split_only_where_it_splits(seq, blocks, reduce_s):
    """A class that states its CTAs per SM (``mmha_occupancy``) launches as TensorRT-LLM tunes it: on B200 (148 SMs,
    3 per SM), one sequence of 32 query heads (× 128) runs 512-thread blocks, one per SM, 256 keys per loop;
    unsplit at 127 cached tokens, its 32 CTAs still take a whole wave (``blocks``: the wave's 444 256-thread slots
    over 32 CTAs) and pay no ``split_s``; at 16,383 it splits in ⌈148 / 32⌉ = 5 (160 blocks, two waves) and pays
    it."""
    hw = hardware.get("b200")
    arch = replace(T.builtin_arch("llama3-8b"), sliding_window=128, kv_heads=32)      # 32 heads, one per KV head
    g = T.build(arch, Request("x", phase="decode", batch=1, seq=seq), "x")
    (i, op), = [(i, o) for i, o in enumerate(g.ops) if o.kind == "attention"]
    cal = hw.calibration.table()
    plain = {k: v for k, v in cal["kernel"][op.attrs["kernel"]].items() if k not in ("mmha_threads", "split_s")}
    cal["kernel"][op.attrs["kernel"]] = {**plain, "split_kv": "mmha", "mmha_occupancy": 3, "split_s": 2e-6}
    c, cols = calibration.Calibration.of(cal), g.columns()
    split = efficiency.split_blocks(c, cols, hw)
    assert split.blocks.reshape(len(g.ops), -1)[i, 0] == pytest.approx(blocks)
    assert np.reshape(efficiency.split_reduce_s(c, cols, split), (len(g.ops), -1))[i, 0] == pytest.approx(reduce_s)


def _attention_ops(seq, phase="decode", on="h100", batch=8):
    a = ironlaw.analyze("gpt-oss-20b", on=on, batch=batch, seq=seq, phase=phase)
    return a, {o.name: (i, o) for i, o in enumerate(a.graph.ops) if o.kind == "attention"}


def test_a_windowed_decode_states_its_sequence_and_a_global_one_does_not():
    _, ops = _attention_ops(4095)
    assert ops["attention.window"][1].attrs["history"] == 4096.0           # s cached, one new
    assert ops["attention.window"][1].attrs["mnk"][1] == 128.0              # keys: the window
    assert "history" not in ops["attention"][1].attrs
    _, pre = _attention_ops(4096, phase="prefill")      # a windowed prefill its s tokens (efficiency.kernel_coords)
    assert pre["attention.window"][1].attrs["history"] == 4096.0
    assert "history" not in pre["attention"][1].attrs


def test_analyze_prices_the_blocks_launched_over_the_sequence_not_the_window():
    """The catalog's H100 window class splits the whole sequence: gpt-oss's windowed layers at 8 sequences read the
    same 128 keys at 1,023 and at 8,191 cached tokens but launch 8 and 16 blocks, and take longer for it; a
    global layer's time follows its keys."""
    hw = hardware.get("h100")
    assert hw.sms == H100_SMS and hw.calibration.kernel[WINDOW_CLASS].get("split_kv") == "history"
    t, kv = {}, {}
    for seq in (1023, 8191):
        a, ops = _attention_ops(seq)
        i, op = ops["attention.window"]
        t[seq], kv[seq] = _op_time(a, i), op.bytes["kv_cache"]
    assert kv[8191] == kv[1023] and t[8191] > 1.2 * t[1023]
    # per layer, against the measured rows of this shape (64 heads on 8 KV heads x 64, window 128, batch 8:
    # aiconfigurator-core 0.12.0's H100 table, 20.9 and 31.4 us; the plain launch gave 15.6 us at both)
    for seq, row_s in ((1023, 20.9e-6), (8191, 31.4e-6)):
        assert t[seq] == pytest.approx(row_s, rel=0.10)
    cal = hw.calibration.table()
    cal["kernel"][WINDOW_CLASS] = {k: v for k, v in cal["kernel"][WINDOW_CLASS].items() if k != "split_kv"}
    plain = replace(hw, calibration=calibration.Calibration.of(cal))
    a, ops = _attention_ops(8191, on=plain)
    assert _op_time(a, ops["attention.window"][0]) < t[8191]


def _op_time(a, i: int) -> float:
    return float(np.asarray(a.op_time_s).reshape(len(a.graph.ops), -1)[i, 0])


def test_a_split_class_on_a_device_without_an_sm_count_is_refused():
    hw = replace(hardware.get("h100"), sms=None)
    with pytest.raises(IronlawError, match=r"SM count \(\[vector\] sms"):
        ironlaw.analyze("gpt-oss-20b", on=hw, batch=8, seq=4095, phase="decode")
    ironlaw.analyze("gpt-oss-20b", on=hw, batch=8, seq=4095, phase="prefill")    # no split-KV op: no need


def _vector(**extra):
    with open(hardware.get("h100").path, "rb") as f:
        data = tomllib.load(f)
    data["vector"] = {k: v for k, v in data["vector"].items() if k not in ("sms", "sms_source")} | extra
    return data


@pytest.mark.parametrize("extra, match", [
    ({"sms": 132}, "sms_source"),
    ({"sms": True, "sms_source": "datasheet: x"}, "whole number of SMs"),
    ({"sms": 0, "sms_source": "datasheet: x"}, "whole number of SMs"),
    ({"sms": 132, "sms_source": "my guess"}, "must start with one of"),
    ({"sms_source": "datasheet: x"}, "given without sms"),
])
def test_an_sm_count_is_a_whole_number_with_its_source(extra, match):
    with pytest.raises(IronlawError, match=match):
        parse_hardware(_vector(**extra), "x.toml")
    assert parse_hardware(_vector(sms=132, sms_source="datasheet: x"), "x.toml").sms == 132
    assert parse_hardware(_vector(), "x.toml").sms is None


def test_split_kv_names_a_known_split():
    cal = hardware.get("h100").calibration.table()
    plain = {k: v for k, v in cal["kernel"][WINDOW_CLASS].items() if k != "merge_s"}   # merge_s is XQA's alone
    cal["kernel"][WINDOW_CLASS] = {**plain, "split_kv": "window"}
    with pytest.raises(IronlawError, match="split_kv: must be one of history, mmha"):
        calibration.check(cal, "calibration")
    cal["kernel"][WINDOW_CLASS] = {**cal["kernel"][WINDOW_CLASS], "split_kv": "history", "mmha_threads": 1024}
    with pytest.raises(IronlawError, match="mmha_threads: an MMHA class's"):       # XQA's split has no block size
        calibration.check(cal, "calibration")
    cal["kernel"][WINDOW_CLASS] = {**plain, "split_kv": "mmha", "mmha_threads": 768}
    with pytest.raises(IronlawError, match="one of 512, 1024; got 768"):
        calibration.check(cal, "calibration")
    for bad in ({"split_kv": "mmha", "mmha_occupancy": 5}, {"split_kv": "history", "mmha_occupancy": 3},
                {"split_kv": "mmha", "mmha_occupancy": 3, "mmha_threads": 512}):
        cal["kernel"][WINDOW_CLASS] = {**plain, **bad}
        with pytest.raises(IronlawError, match="mmha_occupancy: an MMHA class's"):
            calibration.check(cal, "calibration")


def test_grid_coords_keep_the_flops_of_a_split_op():
    a, ops = _attention_ops(8191)
    cols = a.cols
    split = efficiency.split_blocks(a.hw.calibration, cols, a.hw)
    blocks = split.blocks
    i, _ = ops["attention.window"]
    j, _ = ops["attention"]
    m, n, k, units = efficiency.grid_coords(cols, split)
    m0, n0, k0, u0 = efficiency.grid_coords(cols)
    assert blocks.reshape(len(a.graph.ops), -1)[i, 0] == 16 and blocks.reshape(len(a.graph.ops), -1)[j, 0] == 1
    assert np.all(split.fold == 1.0)                                       # XQA: the heads share a CTA
    assert (m * n * k * units)[i] == pytest.approx((m0 * n0 * k0 * u0)[i])
    assert units[i] == pytest.approx(16 * u0[i]) and units[j] == pytest.approx(u0[j])


@pytest.mark.parametrize("gpu, sms", [("b300", 148), ("gb200", 152), ("gb300", 152)])
def test_blackwells_fp8_cache_mmha_window_class_splits_over_the_gpus_own_sms(gpu, sms):
    """B300, GB200 and GB300 state their enabled SMs (CUDA device reports; the full Blackwell Ultra die's 160 is not
    what a launch sees), so their FP8-cache MMHA window classes take MMHA's multi-block launch, placed on those SMs:
    2 sequences × 32 query heads, 16,383 cached tokens, head dim 128, in the blocks the class states (``mmha_threads``)
    or its launch tunes (``mmha_occupancy``)."""
    hw = hardware.get(gpu)
    assert hw.sms == sms and hw.sources["vector.sms"].startswith("estimate: third-party: CUDA device reports")
    cls = "attention_generation_bf16_kv_fp8_window_mmha"
    assert hw.calibration.kernel[cls]["split_kv"] == "mmha"
    arch = replace(T.builtin_arch("llama3-8b"), sliding_window=128, kv_heads=32)      # 32 heads, one per KV head
    g = T.build(arch, Request("x", phase="decode", batch=2, seq=16383), "x")
    (i, op), = [(i, o) for i, o in enumerate(g.ops) if o.kind == "attention"]
    op.attrs["kernel"] = cls
    p = hw.calibration.kernel[cls]
    split = efficiency.split_blocks(hw.calibration, g.columns(), hw)
    if "mmha_occupancy" in p:                                   # the launch tuned to the CTAs (mmha_tuned_launch)
        slots, tiles = mmha_tuned_launch(op.attrs["history"], 64, sms, 128, p["mmha_occupancy"])
    else:
        tiles = mmha_blocks_per_sequence(op.attrs["history"], 64, sms, mmha_tokens_per_loop(128, p["mmha_threads"]))
        slots = in_whole_waves(tiles, 64, sms, p["mmha_threads"])
    assert tiles > 1 and split.splits.reshape(len(g.ops), -1)[i, 0]
    assert split.blocks.reshape(len(g.ops), -1)[i, 0] == pytest.approx(slots)


@pytest.mark.parametrize("gpu, table_us", [("b200", (9.1, 19.2)), ("b300", (8.9, 19.0)), ("gb200", (11.0, 19.4)),
                                            ("gb300", (10.9, 19.6))])
def test_blackwells_bf16_mmha_window_decode_steps_with_the_waves_its_tuned_launch_takes(gpu, table_us):
    """On Blackwell the collector's windowed decode falls back to MMHA (its cache's window is not the layer's, which
    TensorRT-LLM's trtllm-gen dispatch refuses), launched as ``mmha_launch_kernel_ex`` tunes it. The bf16-cache class
    states 3 CTAs per SM. aiconfigurator-core 0.12.0's tables (``table_us``), 64 heads on one KV head × 64, window
    128, batch 2, at 255 and 511 cached tokens: 128 CTAs of 512 threads, split in 2 from 511 on, two waves against
    one, 1.8-2.1× the time where the keys read do not move. The law steps with them (a plain launch: the same time)."""
    hw = hardware.get(gpu)
    assert hw.calibration.kernel["attention_generation_bf16_kv_bf16_window_mmha"]["mmha_occupancy"] == 3
    arch = replace(T.builtin_arch("llama3-8b"), sliding_window=128, heads=64, kv_heads=1, head_dim=64)
    t = []
    for seq in (255, 511):
        g = T.build(arch, Request("x", phase="decode", batch=2, seq=seq), "x")
        (i, op), = [(i, o) for i, o in enumerate(g.ops) if o.kind == "attention"]
        assert op.attrs["kernel"] == "attention_generation_bf16_kv_bf16_window_mmha"
        t.append(1e6 * float(np.ravel(law.predict(g, hw).op_time_s)[i]))
    assert t[1] > 1.5 * t[0]
    assert t == pytest.approx(list(table_us), rel=0.2)
