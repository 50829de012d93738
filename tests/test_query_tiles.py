"""A causal prefill kernel that gives each CTA one tile of a query head's rows (SGLang's Triton prefill): its launch
runs in waves, each as long as its longest tile's walk over the keys (``core.querytiles``, ``efficiency.query_waves``,
``kernelfit.launches.query_tiles_of``)."""
import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.core.gemmshape import attention_kernel  # noqa: E402
from ironlaw.core.querytiles import floor_sum, wave_factor, wave_walk  # noqa: E402
from ironlaw.machine import calibration, hardware  # noqa: E402
from ironlaw.measure.calibrate import kernelfit  # noqa: E402
from ironlaw.measure.calibrate.kerneltable import KernelTable  # noqa: E402
from attention_cases import (FP8_CACHE_MHA as MHA, h100_compute_eta, prefill_latency_s,  # noqa: E402
                             sglang_h100_prefill)

SHAPE = {"eta_max": 0.2, "m_half": 1.0, "nk_half": 1.0, "k_half": 1.0, "streamed": 1.0, "latency_s": 1e-6}


def simulated_walk(per_tile: int, tiles: int, slots: int) -> int:
    """The waves one by one: CTAs in launch order (tile index slowest), each wave as long as its last tile."""
    ctas = per_tile * tiles
    return sum((min((w + 1) * slots, ctas) - 1) // per_tile + 1 for w in range(-(-ctas // slots)))


def test_floor_sum_is_the_sum_it_names():
    rng = np.random.default_rng(1)
    for n, m, a, b in rng.integers(0, 400, size=(300, 4)):
        m = max(int(m), 1)
        assert floor_sum(n, m, a, b) == sum((a * i + b) // m for i in range(n))


def test_the_waves_walk_as_launched_one_by_one():
    rng = np.random.default_rng(2)
    cases = rng.integers(1, 300, size=(200, 3))
    got = wave_walk(cases[:, 0], cases[:, 1], cases[:, 2])
    assert list(got) == [simulated_walk(*map(int, c)) for c in cases]


def test_one_wave_is_its_longest_tile_and_many_waves_balance():
    """One head, one sequence on 132 SMs, 32 query rows per CTA: up to 4,224 tokens one wave, the last tile walking
    every key (1,024 tokens: 32 tiles, the longest 32 of the 528 tile-walks, 132 · 32 / 528 = 8×); 4,096 sequences
    at 16,384 tokens: within 0.1% of balanced."""
    f = wave_factor(np.array([1024.0, 4096.0, 16384.0]), np.array([1.0, 1.0, 4096.0]), 32.0, 132.0)
    assert f[0] == pytest.approx(132 * 32 / (32 * 33 / 2))
    assert f[1] == pytest.approx(132 * 128 / (128 * 129 / 2))
    assert 1.0 <= f[2] < 1.001


def test_the_law_prices_the_waves_at_the_tiled_head_dims_only():
    """A one-wave prefill (1,024 tokens, one head, 32 tiles on 132 SMs) runs at 1/8 of its balanced η; at a head dim
    the class does not tile, as without ``query_tiles``."""
    tiled = {**SHAPE, "query_tiles": [[512, 32, 1]]}
    op = sglang_h100_prefill(1024.0)
    assert h100_compute_eta(op, SHAPE) / h100_compute_eta(op, tiled) == pytest.approx(132 * 32 / (32 * 33 / 2))
    other = sglang_h100_prefill(1024.0, head_dim=128)
    assert h100_compute_eta(other, tiled) == h100_compute_eta(other, SHAPE)


def test_query_tiles_are_head_dim_and_block_pairs():
    base = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"]}
    for bad in ([], [[512, 32]], [[512, 0, 1]], [[512.5, 32, 1]], "512:32:1"):
        with pytest.raises(IronlawError, match="query_tiles"):
            calibration.check({**base, "kernel": {MHA: {**SHAPE, "query_tiles": bad}}}, "calibration")
    calibration.check({**base, "kernel": {MHA: {**SHAPE, "query_tiles": [[512, 32, 1]]}}}, "calibration")


def _groups(framework: str, gpu: str, window: int = 0, source: str = "triton") -> list:
    rows = pd.DataFrame([dict(batch_size=b, isl=s, num_heads=1, num_key_value_heads=1, head_dim=d, window_size=window,
                              attn_dtype="bfloat16", kv_cache_dtype="fp8", step=0, kernel_source=source,
                              latency_s=1e-5 * s / 1024)
                         for b in (1, 4) for s in (1024, 4096) for d in (256, 512)])
    return kernelfit.groups([KernelTable("context_attention", gpu, "x", framework, "0.5.14", "x.parquet", rows)])


def test_sglangs_triton_rows_of_a_tiled_head_dim_take_its_tiles():
    """SGLang's Triton prefill on SM 9.x: head dim 512 in tiles of 32 query rows; not vLLM's rows, not another
    backend's, not a sliding window's, not a GPU the table does not name."""
    (g,) = _groups("sglang", "h100")
    assert kernelfit.launches.query_tiles_of(hardware.get("h100"), g)["query_tiles"] == [[512, 32, 1]]
    assert kernelfit.launches.query_tiles_of(hardware.get("h100"), _groups("vllm", "h100")[0]) == {}
    assert kernelfit.launches.query_tiles_of(hardware.get("h100"), _groups("sglang", "h100", source="fa3")[0]) == {}
    assert kernelfit.launches.query_tiles_of(hardware.get("h100"), _groups("sglang", "h100", window=128)[0]) == {}
    assert kernelfit.launches.query_tiles_of(hardware.get("l40s"), _groups("sglang", "l40s")[0]) == {}


def test_rows_that_run_in_waves_are_fitted_back_by_the_class_that_tiles(monkeypatch):
    """Rows timed by the law itself for a tiled class (H100, head dim 512, one head, batch 1-32, 128-8,192 tokens):
    the fitter gives the class its tiles and holds its rows out within 2%; without the tiles the same rows miss by
    more (the waves are what sets them)."""
    from ironlaw.measure.calibrate.fitcore import Problem
    hw = hardware.get("h100")
    monkeypatch.setattr(kernelfit.launches, "CAUSAL_BLOCK_CLASSES", {})    # the waves alone (test_causal_tiles)
    truth = {**SHAPE, "eta_max": 0.1, "latency_s": 1.2e-5, "query_tiles": [[512, 32, 1]]}
    rows = pd.DataFrame([dict(batch_size=b, isl=s, num_heads=1, num_key_value_heads=1, head_dim=512, window_size=0,
                              attn_dtype="bfloat16", kv_cache_dtype="fp8", step=0, kernel_source="triton",
                              latency_s=1.0)
                         for b in (1, 2, 4, 8, 16, 32) for s in (128, 512, 1024, 2048, 4096, 8192)])
    table = KernelTable("context_attention", "h100", "NVIDIA H100", "sglang", "0.5.14", "x.parquet", rows)
    (g,) = kernelfit.groups([table])
    cal = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"], "kernel": {g.key[1]: truth}}
    timed = g.rows.assign(latency_s=Problem(hw, kernelfit.observations(g, g.rows, hw)).times(cal))
    g = kernelfit.Group(g.name, g.key, g.op, g.table, timed)
    fitted = kernelfit.fit(hw, [g])
    assert fitted["kernel"][g.key[1]]["query_tiles"] == [[512, 32, 1]]
    assert np.percentile(kernelfit.scoring.held_errors(hw, fitted, g), 90) < 0.02
    monkeypatch.setattr(kernelfit.launches, "TRITON_TILES", {})
    untiled = kernelfit.fit(hw, [g])
    assert "query_tiles" not in untiled["kernel"][g.key[1]]
    assert np.percentile(kernelfit.scoring.held_errors(hw, untiled, g), 90) > 0.05


def _l40s_groups(heads: int) -> list:
    rows = pd.DataFrame([dict(batch_size=b, isl=s, num_heads=heads, num_key_value_heads=1, head_dim=d, window_size=0,
                              attn_dtype="fp8", kv_cache_dtype="fp8", step=0, kernel_source="triton",
                              latency_s=1e-5 * s / 1024)
                         for b in (1, 4) for s in (1024, 4096) for d in (64, 192)])
    return kernelfit.groups([KernelTable("context_attention", "l40s", "x", "sglang", "0.5.14", "x.parquet", rows)])


def test_l40s_one_head_classes_take_sm89_tiles_and_no_other_regime_does():
    """SGLang's Triton prefill on SM 8.9 (100 KB of shared memory an SM): head dim 64 in tiles of 64 query rows
    beside 128-key tiles, two CTAs an SM; head dim 192 (128 + 64 wide) 64 × 64, one. On the L40S its one-head
    classes take them (``TILE_GPU_REGIMES``), and its FP8 grouped-query class (``TILE_S_CLASSES``), which fits
    ``tile_s`` beside them; its bf16-math grouped-query class keeps none, nor fits ``tile_s``."""
    (one,) = _l40s_groups(1)
    assert kernelfit.launches.query_tiles_of(hardware.get("l40s"), one) == {"query_tiles": [[64, 64, 2], [192, 64, 1]]}
    assert not kernelfit.rules.tile_class(one)
    (grouped,) = _l40s_groups(4)
    assert kernelfit.rules.tile_class(grouped)
    assert kernelfit.launches.query_tiles_of(hardware.get("l40s"), grouped) == \
        {"query_tiles": [[64, 64, 2], [192, 64, 1]]}
    bounds, starts = kernelfit.shapefit.with_tile_cost(grouped, (("eta_max", 1.0),), [[0.5]])
    assert bounds[-1][0] == "tile_s" and starts == [[0.5, kernelfit.shapefit.TILE_S_START]]
    rows = pd.concat([g.rows for g in _l40s_groups(4)]).assign(attn_dtype="bfloat16")
    (bf16,) = kernelfit.groups([KernelTable("context_attention", "l40s", "x", "sglang", "0.5.14", "x.parquet", rows)])
    assert not kernelfit.rules.tile_class(bf16) and kernelfit.launches.query_tiles_of(hardware.get("l40s"), bf16) == {}
    assert kernelfit.shapefit.with_tile_cost(bf16, (("eta_max", 1.0),), [[0.5]]) == ((("eta_max", 1.0),), [[0.5]])


GQA = attention_kernel("prefill", "fp8", "fp8", "")


def _latency(batch: int, tokens: float, heads: int, p: dict, head_dim: int = 64) -> float:
    """The fixed seconds (``Terms.latency_s``) the law gives one SGLang prefill op on L40S (142 SMs) under a
    grouped-query FP8 class of fields ``p``."""
    row = dict(batch_size=batch, isl=tokens, num_heads=heads, num_key_value_heads=heads // 2, head_dim=head_dim,
               window_size=0, attn_dtype="fp8", kv_cache_dtype="fp8")
    return prefill_latency_s(row, ("NVIDIA L40S", "sglang", "0.5.14"), GQA, p, "l40s", "fp8")


def test_tile_s_is_paid_per_wave_of_query_tiles_past_the_first():
    """L40S, one token per sequence, head dim 64 at two CTAs an SM (284 a wave): 128 sequences × 2 heads (256 CTAs)
    one wave, nothing added; 256 × 64 heads (16,384 CTAs, 58 waves) 57 × tile_s; 2 sequences × 2 heads of 4,096
    tokens, 64 tiles each (256 CTAs), one wave; a head dim the class does not tile, nothing."""
    tiled = {**SHAPE, "latency_s": 6e-6, "query_tiles": [[64, 64, 2], [192, 64, 1]], "tile_s": 3e-6}
    assert _latency(128, 1.0, 2, tiled) == pytest.approx(6e-6)
    assert _latency(256, 1.0, 64, tiled) == pytest.approx(6e-6 + 57 * 3e-6)
    assert _latency(2, 4096.0, 2, tiled) == pytest.approx(6e-6)
    assert _latency(2, 4096.0, 4, tiled) == pytest.approx(6e-6 + 3e-6)
    assert _latency(256, 1.0, 64, tiled, head_dim=128) == pytest.approx(6e-6)
    assert _latency(256, 1.0, 64, {k: v for k, v in tiled.items() if k != "tile_s"}) == pytest.approx(6e-6)


def test_tile_s_needs_query_tiles_and_is_bounded():
    base = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"]}
    with pytest.raises(IronlawError, match="tile_s"):
        calibration.check({**base, "kernel": {GQA: {**SHAPE, "tile_s": 1e-6}}}, "calibration")
    with pytest.raises(IronlawError, match="tile_s"):
        calibration.check({**base, "kernel": {GQA: {**SHAPE, "query_tiles": [[64, 64, 2]], "tile_s": 1.0}}},
                          "calibration")
    calibration.check({**base, "kernel": {GQA: {**SHAPE, "query_tiles": [[64, 64, 2]], "tile_s": 3e-6}}},
                      "calibration")
