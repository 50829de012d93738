"""FlashInfer's tensor-core decode, planned as a prefill of one token per sequence (``chunk_plan = "prefill"``): its
query tiles (``splitkv.prefill_query_tiles``) are the CTAs its plan splits into chunks, at the plan's 2 CTAs per SM,
and its launch runs in whole waves of the SMs (``splitkv.sm_wave_factor``, ``efficiency.chunk_waves``)."""
from dataclasses import replace

import numpy as np
import pytest

from ironlaw.core.errors import IronlawError
from ironlaw.core.splitkv import PLAN_BLOCKS_PER_SM, prefill_query_tiles, sm_wave_factor
from ironlaw.law import efficiency
from ironlaw.machine import calibration, hardware
from attention_cases import decode_case, relaunched

L40S_SMS = 142


def test_query_tiles_follow_flashinfers_tile_rule():
    """``FA2DetermineCtaTileQ``: 128 rows above 64 under head dim 256, 64 above 16: 128 heads on a KV head × 256 is
    two tiles of 64, × 128 one of 128; 96 × 128 one; 64 × 256 one; one query row one tile of 16."""
    got = prefill_query_tiles([128, 128, 96, 96, 64, 48, 1], [256, 128, 128, 256, 256, 128, 128])
    assert got.tolist() == [2, 1, 1, 2, 1, 1, 1]


def test_a_launch_short_of_the_sms_runs_at_the_sms_it_holds():
    assert sm_wave_factor(2.0, L40S_SMS) == pytest.approx(71.0)
    assert sm_wave_factor([142.0, 284.0], L40S_SMS).tolist() == [1.0, 1.0]
    assert sm_wave_factor(256.0, L40S_SMS) == pytest.approx(284.0 / 256.0)


def _planned(hw, op, **extra) -> calibration.Calibration:
    return relaunched(hw, op, split_kv="chunks", chunk_occupancy=PLAN_BLOCKS_PER_SM, **extra)


def test_a_planned_class_splits_per_query_tile_and_counts_its_waves():
    """128 heads on one KV head × 256, batch 1: two query tiles of 64 rows, each a CTA of its own (the grid's M 64),
    so 131,071 cached tokens split into ⌊284 / 2⌋ = 142 chunks per tile (284 CTAs, two per SM: one wave factor); 127 cached tokens run two CTAs unsplit, on 2 of the 142
    SMs (factor 71). The plain chunked plan counts one CTA per sequence and KV head (284 chunks)."""
    hw = hardware.get("l40s")
    g, i, op = decode_case(128, 1, 1, 131071, 256)
    cols = g.columns()
    planned = _planned(hw, op, chunk_plan="prefill")
    split = efficiency.split_blocks(planned, cols, hw)
    assert split.blocks.reshape(len(g.ops), -1)[i, 0] == 142
    assert split.fold.reshape(len(g.ops), -1)[i, 0] == 2                  # a CTA per tile of 64 query rows
    m, n, k, units = efficiency.grid_coords(cols, split)
    m0, n0, k0, u0 = efficiency.grid_coords(cols)
    assert np.reshape(m, (len(g.ops), -1))[i, 0] == 64
    assert (m * n * k * units)[i] == pytest.approx((m0 * n0 * k0 * u0)[i])
    assert np.reshape(efficiency.chunk_waves(planned, cols, hw, split), (len(g.ops), -1))[i, 0] == pytest.approx(1.0)
    plain = _planned(hw, op)
    assert efficiency.split_blocks(plain, cols, hw).blocks.reshape(len(g.ops), -1)[i, 0] == 284
    assert efficiency.chunk_waves(plain, cols, hw, efficiency.split_blocks(plain, cols, hw)) == 1.0
    g, i, op = decode_case(128, 1, 1, 127, 256)
    cols = g.columns()
    split = efficiency.split_blocks(planned, cols, hw)
    assert np.reshape(efficiency.chunk_waves(planned, cols, hw, split), (len(g.ops), -1))[i, 0] == pytest.approx(71.0)


def test_the_waves_slow_a_short_launch_and_leave_a_full_one():
    """The law prices the 127-token call above (two CTAs on 142 SMs) slower with the plan than without; batch 1,024
    (2,048 CTAs in 15 waves of 142) runs 4% over its balanced time."""
    from ironlaw.law import law
    hw = hardware.get("l40s")
    g, i, op = decode_case(128, 1, 1, 127, 256)
    times = [float(np.reshape(law.predict(g, replace(hw, calibration=cal)).op_time_s, (len(g.ops), -1))[i, 0])
             for cal in (_planned(hw, op), _planned(hw, op, chunk_plan="prefill"))]
    assert times[1] > times[0] * 1.2
    g, i, op = decode_case(128, 1, 1024, 127, 256)
    cols, planned = g.columns(), _planned(hw, op, chunk_plan="prefill")
    waves = efficiency.chunk_waves(planned, cols, hw, efficiency.split_blocks(planned, cols, hw))
    assert np.reshape(waves, (len(g.ops), -1))[i, 0] == pytest.approx(15 * 142 / 2048)


def test_the_waves_hold_at_the_chunked_head_dims_only():
    """A planned class that states ``chunk_head_dims`` runs its chunked launch at those head dims alone (the others
    decode on another backend, unsplit, as ``chunk_split`` has them): the 127-token call above, head dim 256, counts
    its 71× wave factor where the class names 256 and none where it names only 128."""
    hw = hardware.get("l40s")
    g, i, op = decode_case(128, 1, 1, 127, 256)
    cols = g.columns()
    for dims, factor in (([128, 256], 71.0), ([128], 1.0)):
        planned = _planned(hw, op, chunk_plan="prefill", chunk_head_dims=dims)
        waves = efficiency.chunk_waves(planned, cols, hw, efficiency.split_blocks(planned, cols, hw))
        assert np.reshape(np.broadcast_to(waves, cols.flops.shape), (len(g.ops), -1))[i, 0] == pytest.approx(factor)


@pytest.mark.parametrize("bad, match", [
    ({"split_kv": "chunks", "chunk_occupancy": 2, "chunk_plan": "decode"}, "chunk_plan"),
    ({"split_kv": "chunks", "chunk_occupancy": 4, "chunk_plan": "prefill"}, "chunk_plan"),
    ({"split_kv": "history", "chunk_plan": "prefill"}, "chunk_plan"),
])
def test_a_planned_class_is_chunked_at_the_plans_grid(bad, match):
    cal = hardware.get("l40s").calibration.table()
    name = "attention_generation_bf16_kv_bf16_wide"
    cal["kernel"][name] = {**{k: v for k, v in cal["kernel"][name].items()
                              if k not in ("split_kv", "split_s", "mmha_threads", "mmha_occupancy")}, **bad}
    with pytest.raises(IronlawError, match=match):
        calibration.check(cal, "calibration")


def test_the_fit_plans_sglangs_flashinfer_decode_over_32_heads_only():
    """SGLang's L40S and RTX PRO 6000 decode over 32 heads per KV head (FlashInfer) and vLLM's L40S FP8 cache try the
    prefill plan alone; SGLang's one-head class, and the same class on H100, try no chunks."""
    pytest.importorskip("pandas")
    from pathlib import Path
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    gs = kernelfit.groups(kerneltable.read(Path(__file__).parent / "data" / "kernel_tables" / "h100_sxm",
                                           ops=("generation_attention",), framework="trtllm"))
    base = next(x for x in gs if x.key[1] == "attention_generation_bf16_kv_bf16_mha")

    def as_class(gpu, framework, key):
        return replace(base, key=("kernel", key), table=replace(base.table, gpu=gpu, framework=framework),
                       rows=base.rows.assign(kernel_source="flashinfer"))
    for gpu, framework, key, planned in (
            ("l40s", "sglang", "attention_generation_bf16_kv_bf16_wide", True),
            ("rtx-pro-6000", "sglang", "attention_generation_bf16_kv_fp8_wide", True),
            ("l40s", "vllm", "attention_generation_bf16_kv_fp8_wide", True),
            ("l40s", "sglang", "attention_generation_bf16_kv_bf16_mha", False),
            ("h100", "sglang", "attention_generation_bf16_kv_bf16_wide", False)):
        g = as_class(gpu, framework, key)
        hw = hardware.get(gpu)
        tries = kernelfit.launches.chunk_launches_of(hw, g, g.rows)
        if planned:
            assert [t.get("chunk_plan") for t in tries] == ["prefill"]
            assert tries[0]["chunk_occupancy"] == PLAN_BLOCKS_PER_SM
        else:
            assert tries == ()
