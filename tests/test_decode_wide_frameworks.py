"""vLLM's and SGLang's decode over 32 query heads per KV head: each sequence and KV head one CTA holding the G query
rows, whose tile sets the launch's time at one wave (a fixed latency per head dim and head group, ``latency_groups``;
on SGLang's TRT-LLM-gen decode of SM 10.x only where it splits the keys, ``latency_units_max``), and the query and
output its collector rereads warm in the last cache level (``kernelfit.rules.WARM_THROUGH_CLASSES``). The fitter
measures them, the law adds them where the op's head dim, head group and sequences × KV heads match, and a served decode
step builds the op they key on."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from attention_cases import decode_case, op_s  # noqa: E402
from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.machine import calibration, engines, hardware  # noqa: E402
from ironlaw.measure.calibrate import fitcore, kernelfit, kerneltable  # noqa: E402

DATA = Path(__file__).parent / "data" / "kernel_tables"
ADDED_S = 1.5e-6      # SGLang 0.5.14's H100 table: head dim 128, 96 and 128 heads per KV head over 48 and 64


@pytest.fixture(scope="module")
def h100_wide():
    """H100's decode class over 32 heads per KV head of the extract (TensorRT-LLM rows), relabeled as SGLang's."""
    hw = hardware.get("h100")
    gs = kernelfit.groups(kerneltable.read(DATA / "h100_sxm", ops=("generation_attention",), framework="trtllm"))
    g = next(x for x in gs if x.name.endswith("over 32 heads per KV head"))
    return hw, g, replace(g, table=replace(g.table, framework="sglang"))


def _cal(g, table: dict) -> dict:
    return {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": [g.name], "kernel": {g.key[1]: table}}


def _plain(hw, g) -> dict:
    drop = ("latency_head_dims", "latency_head_dim_s", "latency_groups", "latency_units_max")
    return {k: v for k, v in hw.calibration.table()["kernel"][g.key[1]].items() if k not in drop}


def _rows(groups, dims, lat, batch=1, kv=1, step=1):
    return pd.DataFrame({"num_heads": [q * kv for q in groups], "num_key_value_heads": kv, "head_dim": dims,
                         "batch_size": batch, "step": step, "latency_s": lat})


def test_the_fit_measures_each_head_dim_and_group_s_median_call_at_one_wave():
    """Rows at up to 8 sequences × KV heads and 127 cached tokens set each pair's seconds, over the fastest pair's
    median; the batch-512 rows, and a pair timed only there (head dim 64), set none."""
    rows = pd.concat([_rows([64, 96, 64, 96], [128, 128, 256, 256], [9.4e-6, 10.9e-6, 11.3e-6, 11.8e-6]),
                      _rows([64, 96], [128, 128], [9.6e-6, 11.1e-6], batch=4),
                      _rows([64, 96], [128, 128], [20e-6, 30e-6], batch=512),
                      _rows([64], [64], [35e-6], batch=512),
                      _rows([64], [128], [14e-6], step=4095)])
    got = kernelfit.launches.group_latency(rows)
    assert "latency_units_max" not in got and 64 not in got["latency_head_dims"]
    at = {(d, q): s for d, q, s in zip(got["latency_head_dims"], got["latency_groups"], got["latency_head_dim_s"])}
    assert (128, 64) not in at                                            # the fastest pair
    assert at[(128, 96)] == pytest.approx(1.5e-6) and at[(256, 96)] == pytest.approx(2.3e-6)


def test_a_splitting_kernel_s_seconds_are_its_median_call_at_few_ctas():
    """Half of B300's 148 SMs: rows at 74 sequences × KV heads or fewer and up to 127 cached tokens set them."""
    rows = pd.concat([_rows([64] * 3, [128] * 3, [14.5e-6, 14.6e-6, 14.4e-6], batch=[1, 8, 64]),
                      _rows([64], [128], [11.6e-6], batch=2, step=2047),             # a longer sequence: left out
                      _rows([64], [128], [10.5e-6], batch=128)])                     # one CTA per KV head
    got = kernelfit.launches.group_latency(rows, most=74)
    assert got["latency_units_max"] == 74 and got["latency_keys_max"] == kernelfit.rules.GROUP_SPLIT_KEYS
    assert got["latency_groups"] == [64] and got["latency_head_dim_s"][0] == pytest.approx(4.0e-6)


def test_the_split_is_sglang_s_on_sm_10_only(h100_wide):
    hw, g, sglang = h100_wide
    assert kernelfit.launches.group_split_units(hw, sglang) is None                # FA3 on H100: no split rule
    b300 = hardware.get("b300")
    assert kernelfit.launches.group_split_units(b300, sglang) == b300.sms // 2
    assert kernelfit.launches.group_split_units(b300, replace(sglang, table=replace(g.table, framework="vllm"))) is None


def test_the_law_adds_the_seconds_at_the_head_dim_group_and_units_named(h100_wide):
    hw, g, sglang = h100_wide
    prob = fitcore.Problem(hw, kernelfit.observations(sglang, g.rows, hw), weighting="per_case")
    table = _plain(hw, g)
    group = (g.rows.num_heads // g.rows.num_key_value_heads).to_numpy()
    units = (g.rows.batch_size * g.rows.num_key_value_heads).to_numpy()
    own = {**table, "latency_head_dims": [64], "latency_groups": [96], "latency_head_dim_s": [ADDED_S]}
    added = prob.times(_cal(g, own)) - prob.times(_cal(g, table))
    at = (g.rows.head_dim == 64).to_numpy() & (group == 96)
    assert at.any() and (~at).any()
    assert np.allclose(added[at], ADDED_S, rtol=1e-9) and np.allclose(added[~at], 0.0, atol=1e-15)
    few = {**own, "latency_units_max": 4}
    added = prob.times(_cal(g, few)) - prob.times(_cal(g, table))
    assert (at & (units <= 4)).any() and (at & (units > 4)).any()
    assert np.allclose(added[at & (units <= 4)], ADDED_S, rtol=1e-9)
    assert np.allclose(added[~(at & (units <= 4))], 0.0, atol=1e-15)
    keys = g.rows.step.to_numpy() + 1.0
    short = {**own, "latency_keys_max": 256}
    added = prob.times(_cal(g, short)) - prob.times(_cal(g, table))
    assert (at & (keys <= 256)).any() and (at & (keys > 256)).any()
    assert np.allclose(added[at & (keys <= 256)], ADDED_S, rtol=1e-9)
    assert np.allclose(added[~(at & (keys <= 256))], 0.0, atol=1e-15)


def test_the_collector_s_query_and_output_are_warm_on_vllm_and_sglang_only(h100_wide):
    hw, g, sglang = h100_wide
    assert kernelfit.rules.warm_class(sglang) and kernelfit.rules.warm_class(replace(sglang, table=replace(g.table,
                                                                                              framework="vllm")))
    assert not kernelfit.rules.warm_class(g)
    warm = [bool(o.op.attrs.get("warm_activations")) for o in kernelfit.observations(sglang, g.rows, hw)]
    assert any(warm) and not any(o.op.attrs.get("warm_activations") for o in kernelfit.observations(g, g.rows, hw))


@pytest.mark.parametrize("bad", [
    {"latency_head_dims": [128], "latency_groups": [96, 128], "latency_head_dim_s": [ADDED_S]},
    {"latency_head_dims": [128], "latency_groups": [0], "latency_head_dim_s": [ADDED_S]},
    {"latency_head_dims": [128], "latency_groups": ["96"], "latency_head_dim_s": [ADDED_S]},
    {"latency_groups": [96]},
    {"latency_head_dims": [128], "latency_head_dim_s": [ADDED_S], "latency_units_max": 0},
    {"latency_head_dims": [128], "latency_head_dim_s": [ADDED_S], "latency_units_max": "74"},
    {"latency_head_dims": [128], "latency_head_dim_s": [ADDED_S], "latency_keys_max": 0.5},
])
def test_a_group_latency_out_of_form_is_refused(h100_wide, bad):
    hw, g, _ = h100_wide
    with pytest.raises(IronlawError, match="latency_"):
        calibration.check(_cal(g, {**_plain(hw, g), **bad}), "calibration")


def _decode_s(hw, heads: int, kv_heads: int, head_dim: int, batch: int = 1) -> float:
    graph, i, op = decode_case(heads, kv_heads, batch, 1, head_dim)
    assert op.attrs["mnk"][0] == heads / kv_heads and op.attrs["kernel"].endswith("_wide")
    return op_s(graph, i, hw)                                              # one call


def test_a_served_sglang_decode_on_h100_pays_its_head_group_s_tile():
    """SGLang's H100 engine file: a decode step of 96 heads on one KV head × 128 (two MMA warpgroups of FA3) pays the
    latency its class holds at that group, one of 64 heads (one warpgroup) none of it, as the class's rows do."""
    hw, _ = engines.with_engine(hardware.get("h100"), "sglang")
    p = hw.calibration.kernel["attention_generation_bf16_kv_bf16_wide"]
    at = {(d, q): s for d, q, s in zip(p["latency_head_dims"], p["latency_groups"], p["latency_head_dim_s"])}
    wide, narrow = _decode_s(hw, 96, 1, 128), _decode_s(hw, 64, 1, 128)
    assert at[(128, 96)] - at.get((128, 64), 0.0) > 0.5e-6
    assert wide - narrow == pytest.approx(at[(128, 96)] - at.get((128, 64), 0.0), rel=0.2)
