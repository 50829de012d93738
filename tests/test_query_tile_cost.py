"""A context class's cost per CTA past the first wave, whatever the CTA's keys (``tile_head_dims``,
``tile_head_dim_s``, ``tile_rows``; ``efficiency.tile_cost_s``): the law adds it at the listed head dims only, one CTA
per sequence, query head and query tile; the fitter reads it off the calls whose keys fit one tile, on SGLang's
Blackwell bf16-math FP8-cache prefill only (``kernelfit.rules.TILE_COST_CLASSES``); a calibration file's values are
checked."""
from dataclasses import replace

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.core.gemmshape import TILE_HEAD_DIM_S_MAX, attention_kernel  # noqa: E402
from ironlaw.core.graph import Graph  # noqa: E402
from ironlaw.law import efficiency, law  # noqa: E402
from ironlaw.machine import calibration, engines, hardware  # noqa: E402
from ironlaw.machine.calibration import Calibration  # noqa: E402
from ironlaw.measure.calibrate import kernelfit  # noqa: E402
from ironlaw.measure.calibrate.kerneltable import KernelTable  # noqa: E402

FP8 = attention_kernel("prefill", "bf16", "fp8", "")
SHAPE = {"eta_max": 0.2, "m_half": 1.0, "nk_half": 1.0, "k_half": 1.0, "streamed": 1.0, "latency_s": 1e-5}
PER_CTA_S = 2e-8      # SGLang 0.5.14's B200 Triton prefill, head dim 192, one key tile: about 20 ns per CTA
TILED = {**SHAPE, "tile_head_dims": [128, 192], "tile_head_dim_s": [4e-8, PER_CTA_S], "tile_rows": [0, 64]}


def _table(rows, gpu: str = "b200", framework: str = "sglang") -> KernelTable:
    return KernelTable("context_attention", gpu, f"NVIDIA {gpu.upper()}", framework, "0.5.14", "x.parquet", rows)


def _rows(batch, tokens, heads, kv_heads=1, head_dim=192, latency_s=1e-5):
    return pd.DataFrame(dict(batch_size=batch, isl=tokens, num_heads=heads, num_key_value_heads=kv_heads,
                             head_dim=head_dim, window_size=0, attn_dtype="bfloat16", kv_cache_dtype="fp8", step=0,
                             kernel_source="triton", latency_s=latency_s))


def _latency_s(gpu: str, p: dict, **shape) -> float:
    """The fixed seconds the law adds to one prefill op of ``shape`` on ``gpu`` under a class of terms ``p``."""
    rows = _rows(**{k: [v] for k, v in shape.items()})
    g = kernelfit.Group("g", ("kernel", FP8), "context_attention", _table(rows, gpu), None)
    op = kernelfit.ops.attention_op(next(rows.itertuples()), g)
    cal = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"], "kernel": {FP8: p}}
    hw = replace(hardware.get(gpu), calibration=Calibration.of(cal))
    return float(np.ravel(efficiency.evaluate(law.place(Graph("t", "prefill", "bf16", [op]), hw).cols, hw)
                          .latency_s)[0])


@pytest.mark.parametrize("batch, tokens, heads, ctas", [
    (256, 1, 16, 4096),         # one token a sequence: one CTA per sequence and query head
    (256, 64, 4, 1024),         # one key tile of 64
    (4, 1000, 2, 8 * 16),       # ⌈1,000 / 64⌉ = 16 query tiles per sequence and head
    (1, 16, 2, 2),              # within the first wave: nothing added
])
def test_the_law_adds_the_cost_of_the_ctas_past_the_first_wave(batch, tokens, heads, ctas):
    """B200 (148 SMs), head dim 192 on Triton's 64-row tiles: PER_CTA_S × the CTAs past the first wave, in whole
    waves (``efficiency.past_first_wave``)."""
    sms = hardware.get("b200").sms
    past = sms * max(np.ceil(ctas / sms) - 1, 0)
    added = _latency_s("b200", TILED, batch=batch, tokens=tokens, heads=heads) - \
        _latency_s("b200", SHAPE, batch=batch, tokens=tokens, heads=heads)
    assert added == pytest.approx(PER_CTA_S * past, rel=1e-9, abs=1e-15)


def test_the_cost_holds_at_the_listed_head_dims_only_and_per_query_head():
    """At head dim 256 (not listed) nothing is added; at 128 (``tile_rows`` 0) one CTA per sequence and query head
    however long the sequence, the same on 2 KV heads as on 8 (SGLang's B200 FlashInfer rows: 64 heads, 256
    sequences, 696 and 697 µs)."""
    assert _latency_s("b200", TILED, batch=256, tokens=1, heads=16, head_dim=256) == \
        _latency_s("b200", SHAPE, batch=256, tokens=1, heads=16, head_dim=256)
    base = _latency_s("b200", SHAPE, batch=256, tokens=1, heads=64, kv_heads=2, head_dim=128)
    for kv, tokens in ((2, 1), (8, 1), (2, 4096)):
        added = _latency_s("b200", TILED, batch=256, tokens=tokens, heads=64, kv_heads=kv, head_dim=128) - base
        assert added == pytest.approx(4e-8 * 148 * (np.ceil(256 * 64 / 148) - 1), rel=1e-9)


def test_the_cost_on_a_device_without_an_sm_count_is_refused():
    rows = _rows(batch=[256], tokens=[1], heads=[16])
    g = kernelfit.Group("g", ("kernel", FP8), "context_attention", _table(rows), None)
    op = kernelfit.ops.attention_op(next(rows.itertuples()), g)
    cal = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"], "kernel": {FP8: TILED}}
    hw = replace(hardware.get("b200"), calibration=Calibration.of(cal), sms=None)
    with pytest.raises(IronlawError, match=r"tile cost .*\(tile_s, tile_head_dim_s\).* states no \[vector\] sms"):
        efficiency.evaluate(law.place(Graph("t", "prefill", "bf16", [op]), hw).cols, hw)


@pytest.mark.parametrize("batch, tokens, heads", [(256, 1, 16), (4, 1000, 2), (64, 64, 8), (1, 16, 2)])
def test_tile_s_and_tile_head_dim_s_are_one_term(batch, tokens, heads):
    """``tile_s`` per wave of query tiles at one CTA an SM and ``tile_head_dim_s``, that wave's seconds over the SMs
    per CTA, are one cost read by one reader (``efficiency.tiles.tile_costs``): the same seconds on every call."""
    wave = {**SHAPE, "query_tiles": [[192, 64, 1]], "tile_s": 148 * PER_CTA_S}
    per_cta = {**SHAPE, "tile_head_dims": [192], "tile_head_dim_s": [PER_CTA_S], "tile_rows": [64]}
    costs = efficiency.tiles.tile_costs({**wave, **per_cta}, hardware.get("b200").sms)
    assert [(c.head_dim, c.rows, c.wave_ctas) for c in costs] == [(192.0, 64.0, 148.0)] * 2
    assert costs[0].seconds / costs[0].per_ctas == pytest.approx(costs[1].seconds / costs[1].per_ctas, rel=1e-12)
    shape = dict(batch=batch, tokens=tokens, heads=heads)
    assert _latency_s("b200", wave, **shape) == pytest.approx(_latency_s("b200", per_cta, **shape), rel=1e-12)


def _one_tile_rows(per_cta_s: float, floor_s: float = 2e-5, head_dim: int = 192) -> pd.DataFrame:
    """Calls of at most one key tile (1-64 tokens) whose time is ``floor_s`` plus ``per_cta_s`` per CTA past B200's
    first wave (148 SMs), and longer calls that the slope must not read."""
    grid = [(b, s, h) for b in (1, 16, 64, 128, 256) for s in (1, 16, 32, 64, 512) for h in (2, 4, 8, 16)]
    b, s, h = (np.array(x, float) for x in zip(*grid))
    past = 148 * np.maximum(np.ceil(b * h / 148) - 1, 0)
    t = floor_s + per_cta_s * past + np.where(s > 64, 1e-3, 0.0)
    return _rows(batch=b, tokens=s, heads=h, head_dim=head_dim, latency_s=t)


def test_the_fit_reads_the_seconds_per_cta_off_the_one_key_tile_calls_of_the_keyed_class_only():
    rows = _one_tile_rows(PER_CTA_S)
    hw = hardware.get("b200")
    g = kernelfit.Group("context attention bf16, KV fp8", ("kernel", FP8), "context_attention", _table(rows), rows)
    got = kernelfit.launches.query_tile_cost(g, rows, hw)
    assert got["tile_head_dims"] == [192] and got["tile_rows"] == [64]
    assert got["tile_head_dim_s"][0] == pytest.approx(PER_CTA_S, rel=1e-3)
    assert kernelfit.launches.query_tile_cost(replace(g, table=_table(rows, "h100")), rows, hardware.get("h100")) == {}
    assert kernelfit.launches.query_tile_cost(replace(g, table=_table(rows, framework="vllm")), rows, hw) == {}
    other = attention_kernel("prefill", "fp8", "fp8", "")
    assert kernelfit.launches.query_tile_cost(replace(g, key=("kernel", other)), rows, hw) == {}
    assert kernelfit.launches.query_tile_cost(g, rows, replace(hw, sms=None)) == {}


@pytest.mark.parametrize("bad", [
    {"tile_head_dims": [192]},
    {"tile_head_dims": [192], "tile_head_dim_s": [PER_CTA_S]},
    {"tile_head_dims": [192, 256], "tile_head_dim_s": [PER_CTA_S], "tile_rows": [64]},
    {"tile_head_dims": [192], "tile_head_dim_s": [-1e-9], "tile_rows": [64]},
    {"tile_head_dims": [192], "tile_head_dim_s": [2 * TILE_HEAD_DIM_S_MAX], "tile_rows": [64]},
    {"tile_head_dims": [0], "tile_head_dim_s": [PER_CTA_S], "tile_rows": [64]},
    {"tile_head_dims": [192], "tile_head_dim_s": [PER_CTA_S], "tile_rows": [64.5]},
    {"tile_head_dims": [192], "tile_head_dim_s": [PER_CTA_S], "tile_rows": [-1]},
])
def test_a_tile_cost_out_of_form_is_refused(bad):
    cal = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"], "kernel": {FP8: {**SHAPE, **bad}}}
    with pytest.raises(IronlawError, match="tile_"):
        calibration.check(cal, "calibration")


@pytest.mark.parametrize("gpu", ["b200", "b300", "gb200", "gb300"])
def test_sglang_s_blackwell_fp8_cache_prefill_is_stored_with_its_cost_per_cta(gpu):
    """The engine files hold the seconds per CTA at FlashInfer's head dim 128 (per sequence and query head) and
    Triton's 192 and 256 (per 64-row query tile): aiconfigurator-core 0.12.0's tables, 1-64 tokens, 15-50 ns each."""
    table = engines.load(gpu, "sglang")["kernel"][FP8]
    got = {d: (s, r) for d, s, r in zip(table["tile_head_dims"], table["tile_head_dim_s"], table["tile_rows"])}
    assert set(got) == {128, 192, 256} and all(1.5e-8 < s < 5e-8 for s, _ in got.values()), got
    assert {d: r for d, (_, r) in got.items()} == {128: 0, 192: 64, 256: 64}
