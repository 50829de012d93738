"""A causal prefill that computes whole BLOCK_M × BLOCK_N tiles up to each query tile's last row (SGLang's Triton
prefill): the pairs it computes over the causal pairs the op counts (``querytiles.causal_tile_share``), which the law
divides the compute η by for a class that names its blocks (``causal_blocks``, ``efficiency.causal_tiles``)."""
from dataclasses import replace

import pytest

pd = pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.core.querytiles import causal_tile_share  # noqa: E402
from ironlaw.machine import calibration, engines, hardware  # noqa: E402
from ironlaw.measure.calibrate import kernelfit  # noqa: E402
from ironlaw.measure.calibrate.kerneltable import KernelTable  # noqa: E402
from attention_cases import FP8_CACHE_MHA as MHA, h100_compute_eta, sglang_h100_prefill  # noqa: E402

SHAPE = {"eta_max": 0.2, "m_half": 1.0, "nk_half": 1.0, "k_half": 1.0, "streamed": 1.0, "latency_s": 1e-6,
         "query_tiles": [[512, 32, 1]]}
BASE = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"]}


def _tiles_walked(s: int, bm: int, bn: int) -> float:
    """Tile by tile: each query tile's key blocks up to its last row, each block whole."""
    return sum(bm * bn * -(-min(s, (j + 1) * bm) // bn) for j in range(-(-s // bm))) / (s * (s + 1) / 2)


def test_the_share_is_the_whole_tiles_over_the_causal_pairs():
    rows = [1, 31, 32, 33, 100, 128, 511, 3072]
    assert causal_tile_share(rows, 32, 64) == pytest.approx([_tiles_walked(s, 32, 64) for s in rows])
    assert causal_tile_share(rows, 64, 128) == pytest.approx([_tiles_walked(s, 64, 128) for s in rows])
    assert causal_tile_share(128, 32, 64) == pytest.approx(12288 / 8256)
    assert 1.0 < float(causal_tile_share(3072, 32, 64)) < 1.03


def test_the_law_divides_the_compute_eta_by_the_share_at_the_named_head_dims():
    """128 tokens at head dim 512 in 32 × 64 tiles compute 1.49× the causal pairs; at head dim 128, which the class
    names no blocks for, the η is as without them."""
    blocks = {**SHAPE, "causal_blocks": [[512, 64]]}
    op = sglang_h100_prefill(128.0, batch=8)
    assert h100_compute_eta(op, SHAPE) / h100_compute_eta(op, blocks) == pytest.approx(12288 / 8256, rel=1e-6)
    other = sglang_h100_prefill(128.0, head_dim=128, batch=8)
    assert h100_compute_eta(other, blocks) == h100_compute_eta(other, SHAPE)


def test_causal_blocks_are_head_dim_and_block_pairs_at_tiled_head_dims():
    for bad in ([], [[512]], [[512, 0]], [[256, 64]], "512:64"):
        with pytest.raises(IronlawError, match="causal_blocks"):
            calibration.check({**BASE, "kernel": {MHA: {**SHAPE, "causal_blocks": bad}}}, "calibration")
    calibration.check({**BASE, "kernel": {MHA: {**SHAPE, "causal_blocks": [[512, 64]]}}}, "calibration")


def _group(gpu: str, kv: str = "fp8"):
    rows = pd.DataFrame([dict(batch_size=b, isl=s, num_heads=1, num_key_value_heads=1, head_dim=512, window_size=0,
                              attn_dtype="bfloat16", kv_cache_dtype=kv, step=0, kernel_source="triton",
                              latency_s=1e-5 * s / 1024) for b in (1, 4) for s in (128, 1024)])
    (g,) = kernelfit.groups([KernelTable("context_attention", gpu, "x", "sglang", "0.5.14", "x.parquet", rows)])
    return g


def test_sglangs_hopper_prefill_takes_its_blocks_and_the_engine_files_hold_them():
    """``kernelfit.rules.CAUSAL_BLOCK_CLASSES``: SGLang's classes that tile Triton's head dim 512 on H100 and H200 take
    its BLOCK_N (64); the H100 and H200 engine files price the FP8-cache one-head class so; L40S's tiled classes keep
    their tiles alone."""
    for gpu in ("h100", "h200"):
        for kv in ("fp8", "bfloat16"):
            got = kernelfit.launches.query_tiles_of(hardware.get(gpu), _group(gpu, kv))
            assert got == {"query_tiles": [[512, 32, 1]], "causal_blocks": [[512, 64]]}
        assert engines.load(gpu, "sglang")["kernel"][MHA]["causal_blocks"] == [[512, 64]]
    l40s = replace(_group("l40s", "bfloat16"), rows=_group("l40s", "bfloat16").rows.assign(head_dim=64))
    got = kernelfit.launches.query_tiles_of(hardware.get("l40s"), l40s)
    assert got["query_tiles"] and "causal_blocks" not in got
