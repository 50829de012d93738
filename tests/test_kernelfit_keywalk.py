"""A decode kernel that walks each sequence's cache in one CTA (``key_s``, ``efficiency.key_walk_s``): the law adds
its seconds per key beyond the first ``KEY_WALK_FREE``, the fitter recovers it from a table whose rows hold such a
walk, and a calibration file's value is checked."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.core.gemmshape import KEY_S_MAX, KEY_WALK_FREE  # noqa: E402
from ironlaw.machine import calibration, hardware  # noqa: E402
from ironlaw.measure.calibrate import fitcore, kernelfit, kerneltable  # noqa: E402

DATA = Path(__file__).parent / "data" / "kernel_tables"
WALK_S = 78e-9        # L40S generation MLA at batch 1: 1.28 ms at 16,383 cached tokens, 5.10 ms at 65,535


@pytest.fixture(scope="module")
def h200_mla():
    hw = hardware.get("h200")
    (g,) = kernelfit.groups(kerneltable.read(DATA / "h200_sxm", ops=("generation_mla",), framework="trtllm"))
    return hw, g


def _cal(g, table: dict) -> dict:
    return {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": [g.name], "kernel": {g.key[1]: table}}


def test_the_walk_adds_key_s_per_key_beyond_the_first_ones(h200_mla):
    hw, g = h200_mla
    prob = fitcore.Problem(hw, kernelfit.observations(g, g.rows, hw), weighting="per_case")
    table = {k: v for k, v in hw.calibration.table()["kernel"][g.key[1]].items() if k != "key_s"}
    plain = prob.times(_cal(g, table))
    walked = prob.times(_cal(g, {**table, "key_s": WALK_S}))
    keys = g.rows.step.to_numpy() + 1.0
    assert np.allclose(walked - plain, WALK_S * np.maximum(keys - KEY_WALK_FREE, 0.0), rtol=1e-9, atol=1e-15)
    assert (walked > plain).any() and (walked[keys <= KEY_WALK_FREE] == plain[keys <= KEY_WALK_FREE]).all()


def test_the_fit_recovers_a_walk_the_rows_hold(h200_mla):
    """The extract's rows with a 78 ns walk per key added: the fitted key_s comes back within 25% of it and the
    held-out rows within 10% at the median; the rows as measured (H200, whose kernel splits the cache) fit a walk
    under a tenth of that."""
    hw, g = h200_mla
    keys = g.rows.step.to_numpy() + 1.0
    rows = g.rows.assign(latency_s=g.rows.latency_s + WALK_S * np.maximum(keys - KEY_WALK_FREE, 0.0))
    walked = replace(g, rows=rows)
    table = kernelfit.classfit.fit_class(hw, walked, kernelfit.split(rows, g.op)[0])
    assert table["key_s"] == pytest.approx(WALK_S, rel=0.25)
    (s,) = kernelfit.score(hw, _cal(g, table), [walked])
    assert s.median_abs_err <= 0.10, s
    plain = kernelfit.classfit.fit_class(hw, g, kernelfit.split(g.rows, g.op)[0])
    assert plain["key_s"] < 0.1 * WALK_S


@pytest.mark.parametrize("bad", [-1e-9, 2 * KEY_S_MAX, "78ns", True])
def test_a_key_s_out_of_range_is_refused(h200_mla, bad):
    hw, g = h200_mla
    table = {**hw.calibration.table()["kernel"][g.key[1]], "key_s": bad}
    with pytest.raises(IronlawError, match="key_s"):
        calibration.check(_cal(g, table), "calibration")


def _split_s_added(suffix: str):
    """(hw, group, its class table without split_s, the seconds split_s = 4 µs adds per row) for H100's
    generation class whose name ends with ``suffix`` (extract)."""
    hw = hardware.get("h100")
    gs = kernelfit.groups(kerneltable.read(DATA / "h100_sxm", ops=("generation_attention",), framework="trtllm"))
    g = next(x for x in gs if x.name.endswith(suffix))
    table = {k: v for k, v in hw.calibration.table()["kernel"][g.key[1]].items() if k != "split_s"}
    prob = fitcore.Problem(hw, kernelfit.observations(g, g.rows, hw), weighting="per_case")
    return hw, g, table, prob.times(_cal(g, {**table, "split_s": 4e-6})) - prob.times(_cal(g, table))


def test_a_split_launch_adds_split_s_only_where_it_splits():
    """H100's sliding-window XQA rows (extract): ``split_s`` added where the launch splits a sequence into blocks
    (``splitkv.blocks_per_sequence`` > 1), nothing where it runs one block per sequence and KV head."""
    from ironlaw.core.splitkv import blocks_per_sequence
    hw, g, table, added = _split_s_added("sliding window")
    assert table["split_kv"] == "history"
    blocks = blocks_per_sequence(g.rows.step + 1.0, g.rows.batch_size * g.rows.num_key_value_heads, hw.sms)
    assert (blocks > 1).any() and (blocks == 1).any()
    assert np.allclose(added, np.where(blocks > 1, 4e-6, 0.0), rtol=1e-9, atol=1e-15)


def test_split_s_needs_a_split_launch(h200_mla):
    hw, g = h200_mla
    table = {**hw.calibration.table()["kernel"][g.key[1]], "split_s": 1e-6}
    with pytest.raises(IronlawError, match="split_s.*split_kv"):
        calibration.check(_cal(g, table), "calibration")


def test_an_mmha_split_adds_split_s_only_where_its_launch_splits():
    """H100's sliding-window MMHA rows (extract): ``split_s`` added where the MMHA launch runs several blocks per
    sequence and head (``splitkv.mmha_blocks_per_sequence`` > 1), nothing where one CTA per head covers it."""
    from ironlaw.core.splitkv import mmha_blocks_per_sequence, mmha_tokens_per_loop
    hw, g, table, added = _split_s_added("sliding window, MMHA kernel")
    assert table["split_kv"] == "mmha"
    heads = g.rows.batch_size * g.rows.num_heads
    per_loop = mmha_tokens_per_loop(g.rows.head_dim, float(table["mmha_threads"]))
    blocks = mmha_blocks_per_sequence(g.rows.step + 1.0, heads, hw.sms, per_loop)
    assert (blocks > 1).any() and (blocks == 1).any()
    assert np.allclose(added, np.where(blocks > 1, 4e-6, 0.0), rtol=1e-9, atol=1e-15)


def test_a_split_xqa_launch_adds_merge_s_per_block_where_it_splits():
    """H100's sliding-window XQA rows (extract): ``merge_s`` per block beside ``split_s`` where the launch splits
    (the last block merges the blocks' partial results one after another), nothing where it does not."""
    from ironlaw.core.splitkv import blocks_per_sequence
    hw = hardware.get("h100")
    gs = kernelfit.groups(kerneltable.read(DATA / "h100_sxm", ops=("generation_attention",), framework="trtllm"))
    g = next(x for x in gs if x.name.endswith("sliding window"))
    table = {k: v for k, v in hw.calibration.table()["kernel"][g.key[1]].items() if k not in ("split_s", "merge_s")}
    prob = fitcore.Problem(hw, kernelfit.observations(g, g.rows, hw), weighting="per_case")
    added = prob.times(_cal(g, {**table, "split_s": 4e-6, "merge_s": 5e-8})) - prob.times(_cal(g, table))
    blocks = blocks_per_sequence(g.rows.step + 1.0, g.rows.batch_size * g.rows.num_key_value_heads, hw.sms)
    assert (blocks > 2).any()
    assert np.allclose(added, np.where(blocks > 1, 4e-6 + 5e-8 * blocks, 0.0), rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("bad", [-1e-9, 2e-6, float("nan")])
def test_a_merge_s_out_of_range_or_off_xqa_is_refused(bad):
    hw = hardware.get("h100")
    name = "attention_generation_bf16_kv_bf16_window"
    head = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["test"]}
    table = {**hw.calibration.table()["kernel"][name], "merge_s": bad}
    with pytest.raises(IronlawError, match="merge_s"):
        calibration.check({**head, "kernel": {name: table}}, "calibration")
    mmha = {**hw.calibration.table()["kernel"][name + "_mmha"], "merge_s": 1e-8}
    with pytest.raises(IronlawError, match="merge_s.*history"):
        calibration.check({**head, "kernel": {name + "_mmha": mmha}}, "calibration")
