"""SGLang's TRT-LLM-gen decode over 32 heads per KV head on SM 10.x: its latency per head dim and head group is one
CTA's walk over a KV tile, which the kernel splits over ⌈keys · head dim / tile⌉ CTAs once a sequence spans more than
one (``latency_tile_keys``, ``latency_tile_power``; ``kernelfit.GROUP_TILE_CLASSES``)."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.law import efficiency  # noqa: E402
from ironlaw.machine import calibration, hardware  # noqa: E402
from ironlaw.measure.calibrate import fitcore, kernelfit, kerneltable  # noqa: E402

DATA = Path(__file__).parent / "data" / "kernel_tables"
ADDED_S = 10e-6


@pytest.fixture(scope="module")
def wide():
    """H100's decode class over 32 heads per KV head of the extract (TensorRT-LLM rows), relabeled as SGLang's."""
    hw = hardware.get("h100")
    gs = kernelfit.groups(kerneltable.read(DATA / "h100_sxm", ops=("generation_attention",), framework="trtllm"))
    g = next(x for x in gs if x.name.endswith("over 32 heads per KV head"))
    return hw, g


def _cal(g, table: dict) -> dict:
    return {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": [g.name], "kernel": {g.key[1]: table}}


def _plain(hw, g) -> dict:
    drop = ("latency_head_dims", "latency_head_dim_s", "latency_groups", "latency_units_max", "latency_keys_max")
    return {k: v for k, v in hw.calibration.table()["kernel"][g.key[1]].items() if k not in drop}


def test_the_share_falls_with_the_tiles():
    """A tile of 32,768 key elements: 128 keys × 256 one tile, 256 × 256 two, 512 × 128 two, 1,024 × 128 four."""
    p = {"latency_tile_keys": 32768, "latency_tile_power": 1.0}
    got = efficiency.tile_share(p, np.array([128.0, 256.0, 512.0, 1024.0]), np.array([256.0, 256.0, 128.0, 128.0]))
    assert got.tolist() == [1.0, 0.5, 0.5, 0.25]
    assert efficiency.tile_share({**p, "latency_tile_power": 0.5}, 1024.0, 128.0) == pytest.approx(0.5)
    assert efficiency.tile_share({}, 1024.0, 128.0) == 1.0


def test_the_law_adds_the_latency_at_its_tiles_share(wide):
    hw, g = wide
    sglang = replace(g, table=replace(g.table, framework="sglang"))
    prob = fitcore.Problem(hw, kernelfit.observations(sglang, g.rows, hw), weighting="per_case")
    table = _plain(hw, g)
    group = (g.rows.num_heads // g.rows.num_key_value_heads).to_numpy()
    own = {**table, "latency_head_dims": [64], "latency_groups": [96], "latency_head_dim_s": [ADDED_S],
           "latency_tile_keys": 32768, "latency_tile_power": 1.0}
    added = prob.times(_cal(g, own)) - prob.times(_cal(g, table))
    keys = g.rows.step.to_numpy() + 1.0
    at = (g.rows.head_dim == 64).to_numpy() & (group == 96)
    tiles = np.maximum(np.ceil(keys * 64.0 / 32768.0), 1.0)
    assert (at & (tiles == 1)).any() and (at & (tiles > 1)).any()
    assert np.allclose(added[at], ADDED_S / tiles[at], rtol=1e-9) and np.allclose(added[~at], 0.0, atol=1e-15)


def test_the_fit_tries_each_power_on_its_own_classes_only(wide):
    hw, g = wide
    extra = {"latency_head_dims": [128], "latency_head_dim_s": [ADDED_S], "latency_units_max": 74,
             "latency_keys_max": kernelfit.rules.GROUP_SPLIT_KEYS}
    for gpu, key, own in (("b300", "attention_generation_bf16_kv_bf16_wide", True),
                          ("gb200", "attention_generation_bf16_kv_bf16_wide", False),
                          ("b300", "attention_generation_bf16_kv_fp8_wide", False)):
        mine = replace(g, key=("kernel", key), table=replace(g.table, gpu=gpu, framework="sglang"))
        tries = kernelfit.launches.tile_latencies_of(mine, extra)
        if own:
            assert [t["latency_tile_power"] for t in tries] == list(kernelfit.rules.GROUP_TILE_POWERS)
            assert all("latency_keys_max" not in t and t["latency_tile_keys"] == kernelfit.rules.GROUP_TILE_KEYS
                       for t in tries)
        else:
            assert tries == (extra,)
    mine = replace(g, key=("kernel", "attention_generation_bf16_kv_bf16_wide"),
                   table=replace(g.table, gpu="b300", framework="sglang"))
    assert kernelfit.launches.tile_latencies_of(mine, {}) == ({},)


@pytest.mark.parametrize("bad", [
    {"latency_tile_keys": 32768},
    {"latency_tile_power": 0.7},
    {"latency_tile_keys": 0.5, "latency_tile_power": 0.7},
    {"latency_tile_keys": 32768, "latency_tile_power": 3.0},
])
def test_a_tile_latency_out_of_form_is_refused(wide, bad):
    hw, g = wide
    own = {"latency_head_dims": [128], "latency_head_dim_s": [ADDED_S], **bad}
    with pytest.raises(IronlawError, match="latency_tile"):
        calibration.check(_cal(g, {**_plain(hw, g), **own}), "calibration")
