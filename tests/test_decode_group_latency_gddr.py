"""SGLang's grouped-query decode on RTX PRO 6000: a fixed latency per head dim and head group measured at the fewest
cached tokens (``kernelfit.rules.GROUP_LATENCY_CLASSES``, ``GROUP_LATENCY_STEP``), the grid reading as little as
``GROUP_GRID_FLOOR`` of a launch-bound row's time above it (``kernelfit.grid.grid_floor``), and the served decode the engine
file prices with them."""
from dataclasses import replace
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")

from attention_cases import decode_case, op_s  # noqa: E402
from ironlaw.machine import engines, hardware  # noqa: E402
from ironlaw.measure.calibrate import kernelfit, kerneltable  # noqa: E402

DATA = Path(__file__).parent / "data" / "kernel_tables"
MAIN = "attention_generation_bf16_kv_bf16"


@pytest.fixture(scope="module")
def h100_main():
    """H100's grouped-query decode class of the extract (TensorRT-LLM rows)."""
    gs = kernelfit.groups(kerneltable.read(DATA / "h100_sxm", ops=("generation_attention",), framework="trtllm"))
    return next(x for x in gs if x.key[1] == MAIN)


def _rows(groups, dims, lat, batch=1, kv=1, step=1):
    return pd.DataFrame({"num_heads": [q * kv for q in groups], "num_key_value_heads": kv, "head_dim": dims,
                         "batch_size": batch, "step": step, "latency_s": lat})


def test_the_latency_is_read_at_the_fewest_cached_tokens():
    """FlashInfer's head dim 256 reads its keys from 15 cached tokens on: rows at up to ``GROUP_LATENCY_STEP`` set each
    pair's seconds, the rows at 15-127 cached tokens (counted by the wide classes' rule) none."""
    rows = pd.concat([_rows([2, 4, 2, 4], [128, 128, 256, 256], [4.3e-6, 6.3e-6, 4.3e-6, 8.4e-6]),
                      _rows([2], [256], [5.1e-6], step=15), _rows([2], [256], [12.5e-6], step=127),
                      _rows([2], [256], [12.5e-6], step=127, batch=2)])
    got = kernelfit.launches.group_latency(rows, keys=kernelfit.rules.GROUP_LATENCY_STEP)
    at = {(d, q): s for d, q, s in zip(got["latency_head_dims"], got["latency_groups"], got["latency_head_dim_s"])}
    assert (256, 2) not in at and (128, 2) not in at
    assert at[(128, 4)] == pytest.approx(2.0e-6) and at[(256, 4)] == pytest.approx(4.1e-6)
    wide = kernelfit.launches.group_latency(rows)
    assert dict(zip(zip(wide["latency_head_dims"], wide["latency_groups"]), wide["latency_head_dim_s"]))[(256, 2)] \
        == pytest.approx(4.5e-6)


def test_the_rule_keys_sglang_s_rtx_pro_6000_main_decode_class_only(h100_main):
    """The class relabeled as SGLang's RTX PRO 6000 table takes a latency per head dim and group and the grid's low
    floor; as SGLang's L40S table, as vLLM's RTX PRO 6000 table and as it is, neither."""
    rows = h100_main.rows
    own = replace(h100_main, table=replace(h100_main.table, framework="sglang", gpu="rtx-pro-6000"))
    got = kernelfit.launches.head_dim_latency(own, rows)
    assert got["latency_groups"] and len(got["latency_groups"]) == len(got["latency_head_dim_s"])
    assert kernelfit.grid.grid_floor(own) == kernelfit.rules.GROUP_GRID_FLOOR < kernelfit.grid.GRID_FLOOR
    for other in (replace(own, table=replace(own.table, gpu="l40s")),
                  replace(own, table=replace(own.table, framework="vllm")), h100_main):
        assert "latency_groups" not in kernelfit.launches.head_dim_latency(other, rows)
        assert kernelfit.grid.grid_floor(other) == kernelfit.grid.GRID_FLOOR


def _decode_s(hw, heads: int, kv_heads: int, head_dim: int) -> float:
    graph, i, op = decode_case(heads, kv_heads, 1, 1, head_dim)
    assert op.attrs["kernel"] == MAIN and op.attrs["mnk"][0] == heads / kv_heads
    return op_s(graph, i, hw)


def test_a_served_decode_pays_flashinfer_s_tensor_core_launch_from_four_heads_per_kv_head():
    """SGLang's RTX PRO 6000 engine file: one sequence of 4 heads on one KV head × 128 (FlashInfer's tensor-core
    kernel) pays the latency its class holds at that group over 2 heads (its CUDA-core kernel), as the table's rows
    at one cached token do (6.3 µs against 4.3)."""
    hw, _ = engines.with_engine(hardware.get("rtx-pro-6000"), "sglang")
    p = hw.calibration.kernel[MAIN]
    at = {(d, q): s for d, q, s in zip(p["latency_head_dims"], p["latency_groups"], p["latency_head_dim_s"])}
    extra = at[(128, 4)] - at.get((128, 2), 0.0)
    assert 1.5e-6 < extra < 2.5e-6
    assert _decode_s(hw, 4, 1, 128) - _decode_s(hw, 2, 1, 128) == pytest.approx(extra, rel=0.25)


def test_the_latency_read_at_the_fastest_call_takes_any_cached_tokens():
    """``group_latency`` read "fastest" (``GROUP_FASTEST_CLASSES``' form): each pair's fastest call at one wave over
    the fastest pair's, at any cached tokens, where the median reads the pair's median call; a pair timed only past
    one wave takes none; a read it does not know is refused."""
    rows = pd.concat([_rows([2, 4], [128, 128], [4.3e-6, 6.3e-6]), _rows([4], [128], [5.0e-6], step=127),
                      _rows([8], [128], [3.0e-6], batch=16)])
    fastest = kernelfit.launches.group_latency(rows, keys=None, read="fastest")
    assert fastest["latency_head_dims"] == [128] and fastest["latency_groups"] == [4]
    assert fastest["latency_head_dim_s"] == [pytest.approx(0.7e-6)]
    assert kernelfit.launches.group_latency(rows, keys=None)["latency_head_dim_s"] == [pytest.approx(1.35e-6)]
    with pytest.raises(ValueError, match="median or fastest"):
        kernelfit.launches.group_latency(rows, read="mean")
