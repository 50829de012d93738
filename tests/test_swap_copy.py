"""FlashAttention 2's grouped-query swap (``swap_s``, ``efficiency.swap_copy_s``): at one query token with more query
heads than KV heads the kernel runs each head group as the rows of one query, and the query's reshape into them and
the output's back are copies wherever a call holds more than one sequence and more than one KV head. The law adds
``swap_s`` on exactly those ops, the fitter recovers it on vLLM's FlashAttention 2 decode rows only, and a
calibration file's value is checked."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.core.gemmshape import SWAP_S_MAX  # noqa: E402
from ironlaw.machine import calibration, engines, hardware  # noqa: E402
from ironlaw.measure.calibrate import fitcore, kernelfit, kerneltable  # noqa: E402
from ironlaw.measure.calibrate.kernelfit import shapefit  # noqa: E402

DATA = Path(__file__).parent / "data" / "kernel_tables"
SWAP_S = 4e-6          # L40S and RTX PRO 6000 vLLM bf16-cache decode: 8.9 µs at batch 1, 12.3-13.2 µs at 2-16 × 2-8 KV heads
FA2 = kernelfit.rules.SWAP_KERNELS[0]


@pytest.fixture(scope="module")
def h100_decode():
    """H100's grouped-query decode class (the extract's TensorRT-LLM rows)."""
    hw = hardware.get("h100")
    gs = kernelfit.groups(kerneltable.read(DATA / "h100_sxm", ops=("generation_attention",), framework="trtllm"))
    return hw, next(x for x in gs if x.name == "generation attention bf16, KV bf16")


def _cal(g, table: dict) -> dict:
    return {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": [g.name], "kernel": {g.key[1]: table}}


def _swapped(rows) -> np.ndarray:
    return ((rows.batch_size > 1) & (rows.num_key_value_heads > 1)
            & (rows.num_heads > rows.num_key_value_heads)).to_numpy()


def _as_vllm_fa2(g, rows=None):
    rows = (g.rows if rows is None else rows).assign(kernel_source=FA2)
    return replace(g, table=replace(g.table, framework="vllm"), rows=rows)


def test_swap_s_adds_where_the_call_holds_several_sequences_and_kv_heads(h100_decode):
    hw, g = h100_decode
    prob = fitcore.Problem(hw, kernelfit.observations(g, g.rows, hw), weighting="per_case")
    table = hw.calibration.table()["kernel"][g.key[1]]
    added = prob.times(_cal(g, {**table, "swap_s": SWAP_S})) - prob.times(_cal(g, table))
    want = np.where(_swapped(g.rows), SWAP_S, 0.0)
    assert 0 < want.astype(bool).sum() < len(want)          # both kinds of rows are held
    assert np.allclose(added, want, rtol=1e-9, atol=1e-15)


def test_the_fit_recovers_the_swap_on_vllm_s_flash_attention_2_rows_only(h100_decode):
    """The extract's rows as a vLLM FlashAttention 2 table, as measured and with 4 µs added where the swap copies: the
    two fitted swap_s differ by that within 30%; the same rows on another kernel, or as SGLang's, fit no swap_s."""
    hw, g = h100_decode
    rows = g.rows.assign(latency_s=g.rows.latency_s + np.where(_swapped(g.rows), SWAP_S, 0.0))
    fa2, plain = _as_vllm_fa2(g, rows), _as_vllm_fa2(g)
    table = kernelfit.classfit.fit_class(hw, fa2, kernelfit.split(fa2.rows, g.op)[0])
    base = kernelfit.classfit.fit_class(hw, plain, kernelfit.split(plain.rows, g.op)[0])
    assert table["swap_s"] - base["swap_s"] == pytest.approx(SWAP_S, rel=0.3)
    other = replace(fa2, rows=fa2.rows.assign(kernel_source="flashinfer"))
    sglang = replace(fa2, table=replace(fa2.table, framework="sglang"))
    for g2 in (other, sglang):
        assert shapefit.with_swap_cost(g2, g2.rows, (), [[]]) == ((), [[]])
    assert shapefit.with_swap_cost(fa2, fa2.rows, (), [[]]) == ((("swap_s", SWAP_S_MAX),), [[shapefit.SWAP_S_START]])


@pytest.mark.parametrize("gpu", ["l40s", "rtx-pro-6000"])
def test_the_vllm_engine_files_price_the_swap_on_their_flash_attention_2_class(gpu):
    table = engines.load(gpu, "vllm")["kernel"]["attention_generation_bf16_kv_bf16"]
    assert 1e-6 < table["swap_s"] < 1e-5


@pytest.mark.parametrize("bad", [-1e-9, 2 * SWAP_S_MAX, "4us", True])
def test_a_swap_s_out_of_range_is_refused(h100_decode, bad):
    hw, g = h100_decode
    table = {**hw.calibration.table()["kernel"][g.key[1]], "swap_s": bad}
    with pytest.raises(IronlawError, match="swap_s"):
        calibration.check(_cal(g, table), "calibration")
