"""A decode launch's cost per sequence and KV head (``unit_s``, ``efficiency.unit_launch_s``): the law adds it per
sequence and KV head, the fitter recovers it from rows that hold it on vLLM's and SGLang's tables only, and a
calibration file's value is checked."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.core.gemmshape import SPLIT_KERNEL_TOKENS, UNIT_S_MAX  # noqa: E402
from ironlaw.law import efficiency  # noqa: E402
from ironlaw.machine import calibration, hardware  # noqa: E402
from ironlaw.measure.calibrate import fitcore, kernelfit, kerneltable  # noqa: E402

DATA = Path(__file__).parent / "data" / "kernel_tables"
UNIT_S = 20e-9        # vLLM/SGLang generation tables at one cached token, batch 2048: 11-37 ns per sequence and KV head


@pytest.fixture(scope="module")
def h100_decode():
    """H100's generation class with 2-32 query heads per KV head (the extract's TensorRT-LLM rows)."""
    hw = hardware.get("h100")
    gs = kernelfit.groups(kerneltable.read(DATA / "h100_sxm", ops=("generation_attention",), framework="trtllm"))
    g = next(x for x in gs if x.name == "generation attention bf16, KV bf16")
    return hw, g


def _cal(g, table: dict) -> dict:
    return {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": [g.name], "kernel": {g.key[1]: table}}


def _units(g) -> np.ndarray:
    return (g.rows.batch_size * g.rows.num_key_value_heads).to_numpy(float)


def test_unit_s_adds_per_sequence_and_kv_head(h100_decode):
    hw, g = h100_decode
    prob = fitcore.Problem(hw, kernelfit.observations(g, g.rows, hw), weighting="per_case")
    table = hw.calibration.table()["kernel"][g.key[1]]
    added = prob.times(_cal(g, {**table, "unit_s": UNIT_S})) - prob.times(_cal(g, table))
    assert np.allclose(added, UNIT_S * _units(g), rtol=1e-9, atol=1e-15)


def test_the_fit_recovers_a_unit_cost_on_a_serving_framework_s_rows_only(h100_decode):
    """The extract's rows, fitted as vLLM's table, as measured and with 20 ns per sequence and KV head added: the two
    fitted unit_s differ by that within 30% (the rows as measured hold some of their own: TensorRT-LLM's decode kernel
    pays one too); fitted as TensorRT-LLM's (``UNIT_FRAMEWORKS``) the class has no unit_s, and holds the added rows out
    worse, median and p90."""
    hw, g = h100_decode
    as_vllm = replace(g, table=replace(g.table, framework="vllm"))
    rows = g.rows.assign(latency_s=g.rows.latency_s + UNIT_S * _units(g))
    vllm = replace(as_vllm, rows=rows)
    table = kernelfit.classfit.fit_class(hw, vllm, kernelfit.split(rows, g.op)[0])
    plain = kernelfit.classfit.fit_class(hw, as_vllm, kernelfit.split(g.rows, g.op)[0])
    assert table["unit_s"] - plain["unit_s"] == pytest.approx(UNIT_S, rel=0.3)
    trt = replace(g, rows=rows)
    without = kernelfit.classfit.fit_class(hw, trt, kernelfit.split(rows, g.op)[0])
    assert "unit_s" not in without
    (s,), (s0,) = (kernelfit.score(hw, _cal(g, t), [vllm]) for t in (table, without))
    assert s.median_abs_err < s0.median_abs_err and s.p90_abs_err < s0.p90_abs_err, (s, s0)


@pytest.mark.parametrize("bad", [-1e-9, 2 * UNIT_S_MAX, "20ns", True])
def test_a_unit_s_out_of_range_is_refused(h100_decode, bad):
    hw, g = h100_decode
    table = {**hw.calibration.table()["kernel"][g.key[1]], "unit_s": bad}
    with pytest.raises(IronlawError, match="unit_s"):
        calibration.check(_cal(g, table), "calibration")


def test_only_trtllm_window_classes_keep_the_coarse_grid():
    assert kernelfit.rules.coarse_for("trtllm", "_window") and kernelfit.rules.coarse_for("vllm", "_wide")
    coarse_for = kernelfit.rules.coarse_for
    assert not coarse_for("vllm", "_window") and not coarse_for("sglang", "_window_mmha")


def test_unit_s_in_waves_is_paid_past_the_first_wave_of_the_sms(h100_decode):
    """``unit_launch = "waves"``: unit_s on the sequences × KV heads past the first wave of the SMs, in whole waves
    (H100: 132 SMs; 1-132 units pay nothing, 133-264 one wave's 132)."""
    hw, g = h100_decode
    prob = fitcore.Problem(hw, kernelfit.observations(g, g.rows, hw), weighting="per_case")
    table = hw.calibration.table()["kernel"][g.key[1]]
    waves = {**table, "unit_s": UNIT_S, "unit_launch": "waves"}
    added = prob.times(_cal(g, waves)) - prob.times(_cal(g, table))
    units = _units(g)
    want = UNIT_S * hw.sms * np.maximum(np.ceil(units / hw.sms) - 1, 0)
    assert (units <= hw.sms).any() and (units > hw.sms).any()
    assert np.allclose(added, want, rtol=1e-9, atol=1e-15)
    with pytest.raises(IronlawError, match="sms"):
        prob2 = fitcore.Problem(replace(hw, sms=None), kernelfit.observations(g, g.rows, hw), weighting="per_case")
        prob2.times(_cal(g, waves))


def test_unit_s_in_flash_attention_3_s_waves_doubles_its_wave_past_its_split_kernel(h100_decode):
    """``unit_launch = "split_waves"``: unit_s on the sequences × KV heads past the first wave, a wave the SMs' CTAs
    up to ``SPLIT_KERNEL_TOKENS`` (512) tokens a call, twice that beyond (H100, one KV head: batch 512 pays 3 waves
    of 132, batch 1,024 3 waves of 264: the same)."""
    hw, g = h100_decode
    prob = fitcore.Problem(hw, kernelfit.observations(g, g.rows, hw), weighting="per_case")
    table = hw.calibration.table()["kernel"][g.key[1]]
    split = {**table, "unit_s": UNIT_S, "unit_launch": "split_waves"}
    added = prob.times(_cal(g, split)) - prob.times(_cal(g, table))
    units, batch = _units(g), g.rows.batch_size.to_numpy(float)
    wave = np.where(batch <= SPLIT_KERNEL_TOKENS, hw.sms, 2 * hw.sms)
    want = UNIT_S * wave * np.maximum(np.ceil(units / wave) - 1, 0)
    assert (batch <= SPLIT_KERNEL_TOKENS).any() and (batch > SPLIT_KERNEL_TOKENS).any()
    assert np.allclose(added, want, rtol=1e-9, atol=1e-15)
    paid = efficiency.past_first_wave(np.array([512.0, 1024.0]), np.array([hw.sms, 2.0 * hw.sms]), "x")
    assert np.allclose(paid, 3 * np.array([hw.sms, 2.0 * hw.sms]))


@pytest.mark.parametrize("bad", [{"unit_launch": "tiles", "unit_s": UNIT_S}, {"unit_launch": "waves"}])
def test_a_unit_launch_out_of_form_is_refused(h100_decode, bad):
    hw, g = h100_decode
    table = {k: v for k, v in hw.calibration.table()["kernel"][g.key[1]].items() if k != "unit_s"}
    with pytest.raises(IronlawError, match="unit_launch"):
        calibration.check(_cal(g, {**table, **bad}), "calibration")


def test_only_vllm_s_and_sglang_s_flash_attention_decode_over_32_heads_tries_its_unit_cost_in_waves(h100_decode):
    hw, g = h100_decode
    wide = replace(g, key=("kernel", g.key[1] + "_wide"), table=replace(g.table, framework="vllm"),
                   rows=g.rows.assign(kernel_source="vllm_flash_attn_fa2"))
    assert kernelfit.launches.unit_waves_of(hw, wide, wide.rows) == ({"unit_launch": "waves"},)
    assert kernelfit.launches.unit_waves_of(hw, replace(wide, key=g.key), wide.rows) == ()
    assert kernelfit.launches.unit_waves_of(hw, wide, wide.rows.assign(kernel_source="flashinfer")) == ()
    assert kernelfit.launches.unit_waves_of(hw, wide, wide.rows.assign(kernel_source="vllm_flash_attn_fa3")) == \
        ({"unit_launch": "split_waves"},)
    sglang = replace(wide, table=replace(g.table, framework="sglang"), rows=g.rows.assign(kernel_source="fa3"))
    assert kernelfit.launches.unit_waves_of(hw, sglang, sglang.rows) == ({"unit_launch": "waves"},)
    assert kernelfit.launches.unit_waves_of(hw, replace(sglang, table=g.table), sglang.rows) == ()
    assert kernelfit.launches.unit_waves_of(replace(hw, sms=None), wide, wide.rows) == ()
