"""A100's attention launches over 32 heads per KV head on vLLM 0.14.0 and SGLang 0.5.10: vLLM's FlashAttention 2
prefill pays a cost per CTA of 128 query rows, its one-token calls run the grouped-query swap (``tile_swap``,
``efficiency.tile_cost_s``); SGLang's decode runs FlashAttention 3's SM 8.x split heuristic (``split_kv =
"fa3_sm8x"``, ``splitkv.fa3_sm8x_splits``), vLLM's FlashAttention 2's (``split_kv = "fa2"``)."""
from dataclasses import replace

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.core.gemmshape import attention_kernel  # noqa: E402
from ironlaw.core.splitkv import fa3_sm8x_block_n, fa3_sm8x_splits  # noqa: E402
from ironlaw.law import efficiency  # noqa: E402
from ironlaw.machine import calibration, engines, hardware  # noqa: E402
from ironlaw.measure.calibrate import kernelfit  # noqa: E402
from ironlaw.measure.calibrate.kerneltable import KernelTable  # noqa: E402
from attention_cases import decode_case, prefill_latency_s, relaunched  # noqa: E402

WIDE = attention_kernel("prefill", "bf16", "bf16", "_wide")
SHAPE = {"eta_max": 0.5, "m_half": 1.0, "nk_half": 1.0, "k_half": 1.0, "streamed": 1.0, "latency_s": 1e-5}
PER_CTA_S = 3.5e-8       # vLLM 0.14.0's A100 prefill, 64 heads on one KV head × 128, 16-64 tokens: ~35 ns a CTA
TILED = {**SHAPE, "tile_head_dims": [128], "tile_head_dim_s": [PER_CTA_S], "tile_rows": [128]}
A100_SMS = 108
TABLE = ("NVIDIA A100-SXM4-80GB", "vllm", "0.14.0")


def _added_s(p: dict, batch: int, isl: int, heads: int = 64, kv_heads: int = 1) -> float:
    row = dict(batch_size=batch, isl=isl, num_heads=heads, num_key_value_heads=kv_heads, head_dim=128,
               window_size=0, attn_dtype="bfloat16", kv_cache_dtype="bfloat16", kernel_source="vllm_flash_attn")
    return prefill_latency_s(row, TABLE, WIDE, p, "a100", "bf16") - \
        prefill_latency_s(row, TABLE, WIDE, SHAPE, "a100", "bf16")


def _past(ctas: float) -> float:
    return A100_SMS * max(np.ceil(ctas / A100_SMS) - 1, 0)


@pytest.mark.parametrize("batch, isl, heads, kv_heads, ctas", [
    (256, 1, 64, 1, 256),           # one token: the swap, each sequence's 64 heads in one 128-row tile
    (256, 1, 128, 2, 512),          # ... per KV head
    (64, 1, 256, 1, 128),           # 256 heads per KV head: two tiles
    (256, 16, 64, 1, 256 * 64),     # 16 tokens: one CTA per sequence, query head and 128 query rows
    (16, 1000, 40, 1, 16 * 40 * 8),  # a causal pass of 1,000 tokens: 8 tiles of 128 rows
])
def test_the_swap_counts_one_token_calls_by_kv_head_and_the_rest_by_query_head(batch, isl, heads, kv_heads, ctas):
    added = _added_s({**TILED, "tile_swap": True}, batch, isl, heads, kv_heads)
    assert added == pytest.approx(PER_CTA_S * _past(ctas), rel=1e-9, abs=1e-15)


def test_without_the_swap_a_one_token_call_pays_per_query_head():
    assert _added_s(TILED, 256, 1) == pytest.approx(PER_CTA_S * _past(256 * 64), rel=1e-9)


def test_a_swap_beside_its_tile_cost_is_accepted():
    cal = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"],
           "kernel": {WIDE: {**TILED, "tile_swap": True}}}
    assert calibration.check(cal, "calibration")["kernel"][WIDE]["tile_swap"] is True


@pytest.mark.parametrize("bad", [{"tile_swap": False}, {"tile_swap": 1}, {"tile_swap": True, "tile_rows": None}])
def test_a_swap_out_of_form_is_refused(bad):
    p = {k: v for k, v in {**TILED, **bad}.items() if v is not None}
    cal = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"], "kernel": {WIDE: p}}
    with pytest.raises(IronlawError, match="tile_"):
        calibration.check(cal, "calibration")


def _prefill_rows(per_cta_s: float, floor_s: float = 1.2e-5) -> pd.DataFrame:
    """Calls of 1-64 tokens whose time is ``floor_s`` plus ``per_cta_s`` per CTA past A100's first wave, one CTA per
    sequence and query head; the one-token calls (the swap) at ``floor_s`` alone, which the slope must leave out."""
    grid = [(b, s, h) for b in (1, 16, 64, 128, 256) for s in (1, 16, 32, 64) for h in (40, 48, 64)]
    b, s, h = (np.array(x, float) for x in zip(*grid))
    past = A100_SMS * np.maximum(np.ceil(b * h / A100_SMS) - 1, 0)
    t = floor_s + np.where(s > 1, per_cta_s * past, 0.0)
    return pd.DataFrame(dict(batch_size=b, isl=s, num_heads=h, num_key_value_heads=1, head_dim=128, window_size=0,
                             attn_dtype="bfloat16", kv_cache_dtype="bfloat16", step=0,
                             kernel_source="vllm_flash_attn", latency_s=t))


def test_the_fit_reads_the_cost_off_the_calls_past_one_token_and_states_the_swap():
    rows = _prefill_rows(PER_CTA_S)
    table = KernelTable("context_attention", "a100", *TABLE, "x.parquet", rows)
    g = kernelfit.Group("context attention bf16, KV bf16, over 32 heads per KV head", ("kernel", WIDE),
                        "context_attention", table, rows)
    got = kernelfit.launches.query_tile_cost(g, rows, hardware.get("a100"))
    assert got["tile_head_dims"] == [128] and got["tile_rows"] == [128] and got["tile_swap"] is True
    assert got["tile_head_dim_s"][0] == pytest.approx(PER_CTA_S, rel=1e-3)
    other = replace(table, framework="sglang")
    assert kernelfit.launches.query_tile_cost(replace(g, table=other), rows, hardware.get("a100")) == {}


def test_fa3_s_sm8x_heuristic_packs_the_heads_and_leaves_four_key_blocks_unsplit():
    """One sequence, 64 heads on one KV head × 128 (blocks of 112 keys): unsplit up to 4 blocks (448 keys), then the
    efficiency search over 108 SMs (5 blocks: 5 splits; 37 blocks: 37); 87 sequences fill 80% of the SMs and run
    unsplit, 86 split; 256 heads per KV head are two tiles of 128 rows, so 44 sequences fill them."""
    keys = [64, 128, 448, 449, 512, 1024, 4096]
    assert fa3_sm8x_splits(keys, 64, 1, A100_SMS, 128).tolist() == [1, 1, 1, 5, 5, 10, 37]
    assert fa3_sm8x_splits(4096, 64, [86, 87], A100_SMS, 128).tolist()[1] == 1
    assert fa3_sm8x_splits(4096, 64, 86, A100_SMS, 128) > 1
    assert fa3_sm8x_splits(4096, 256, [43, 44], A100_SMS, 128).tolist()[1] == 1
    assert fa3_sm8x_block_n([64, 96, 128, 192, 256]).tolist() == [80, 48, 112, 64, 96]


def test_a_fa3_sm8x_class_splits_merges_and_launches_in_waves_of_its_128_row_tiles():
    """A100, 64 heads on one KV head × 128, batch 1 at 4,095 cached tokens: 37 splits, 37 CTAs on 108 SMs (wave
    factor 108 / 37), split_s + 37 · merge_s; at 63 cached tokens unsplit (factor 108)."""
    hw = hardware.get("a100")
    g, i, op = decode_case(64, 1, 1, 4095, 128)
    cal = relaunched(hw, op, split_kv="fa3_sm8x", split_s=5e-6, merge_s=1e-7)
    cols = g.columns()
    split = efficiency.split_blocks(cal, cols, hw)
    assert split.blocks.reshape(len(g.ops), -1)[i, 0] == 37
    assert np.reshape(efficiency.split_reduce_s(cal, cols, split), (len(g.ops), -1))[i, 0] == \
        pytest.approx(5e-6 + 37 * 1e-7)
    assert np.reshape(efficiency.chunk_waves(cal, cols, hw, split), (len(g.ops), -1))[i, 0] == \
        pytest.approx(108 / 37)
    g, i, op = decode_case(64, 1, 1, 63, 128)
    cols = g.columns()
    split = efficiency.split_blocks(cal, cols, hw)
    assert split.blocks.reshape(len(g.ops), -1)[i, 0] == 1
    assert np.reshape(efficiency.chunk_waves(cal, cols, hw, split), (len(g.ops), -1))[i, 0] == pytest.approx(108.0)


def test_the_a100_engine_files_hold_these_launches():
    vllm, sglang = engines.load("a100", "vllm")["kernel"], engines.load("a100", "sglang")["kernel"]
    wide = vllm[WIDE]
    assert wide["tile_swap"] is True and wide["tile_rows"] == [128] and 2e-8 < wide["tile_head_dim_s"][0] < 5e-8
    decode = attention_kernel("decode", "bf16", "bf16", "_wide")
    assert vllm[decode]["split_kv"] == "fa2" and sglang[decode]["split_kv"] == "fa3_sm8x"
    assert "merge_s" in sglang[decode]
