"""MLA's per-head decode products (attention.q_absorb, attention.v_up) on their own kernel class, fitted on the
measured BMM tables (tests/data/mla_bmm_h200: aiconfigurator-core 0.12.0's H200 table, Apache-2.0)."""
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from ironlaw.core.errors import IronlawError
from ironlaw.core.graph import Graph
from ironlaw.law.law import predict
from ironlaw.machine import hardware
from ironlaw.models.workloads.attention import per_head

pd = pytest.importorskip("pandas")

from ironlaw.measure.calibrate import kernelfit, kerneltable  # noqa: E402

DATA = Path(__file__).parent / "data" / "mla_bmm_h200"


def _op(tokens: int, heads: int, dtype: str, name="attention.q_absorb", k=128, n=512):
    return per_head(name, SimpleNamespace(heads=heads, layers=1), tokens, k, n, dtype)


def _seconds(hw, op) -> float:
    return float(np.asarray(predict(Graph("bmm", "decode", op.dtype, [op]), hw).time_s).reshape(-1)[0])


def test_per_head_names_its_kernel_class():
    assert _op(64, 16, "fp8").attrs["kernel"] == "mla_bmm_fp8"
    assert _op(64, 16, "bf16", "attention.v_up", 512, 128).attrs["kernel"] == "mla_bmm_bf16"


def test_groups_one_class_per_dtype_block_scaling_said():
    gs = kernelfit.groups(kerneltable.read(DATA, ops=("mla_bmm",)))
    assert {g.key for g in gs} == {("kernel", "mla_bmm_bf16"), ("kernel", "mla_bmm_fp8")}
    by = {g.key[1]: g for g in gs}
    assert set(by["mla_bmm_bf16"].rows.op_name) == {"mla_gen_pre", "mla_gen_post"}
    assert "block-scaled FP8" in by["mla_bmm_fp8"].timed and by["mla_bmm_bf16"].timed == ""


def test_unknown_product_or_dtype_is_one_line(tmp_path):
    rows = pd.read_csv(DATA / "mla_bmm_perf.csv").head(4)
    for col, bad in (("op_name", "mla_gen_mid"), ("bmm_dtype", "int4")):
        d = tmp_path / col
        d.mkdir()
        rows.assign(**{col: bad}).to_csv(d / "mla_bmm_perf.csv", index=False)
        with pytest.raises(IronlawError, match=bad):
            kernelfit.groups(kerneltable.read(d, ops=("mla_bmm",)))


def test_fit_holds_out_within_goal_and_names_its_data():
    hw = hardware.get("h200")
    gs = kernelfit.groups(kerneltable.read(DATA, ops=("mla_bmm",)))
    cal = kernelfit.fit(hw, gs, date="2026-12-06")
    for s in kernelfit.score(hw, cal, gs):
        assert s.median_abs_err <= 0.08 and s.p90_abs_err <= 0.20, s
    prov = cal["provenance"]["mla bmm fp8"]
    assert prov["rows_fitted"] + prov["rows_held_out"] == 424 and "block-scaled" in prov["table"]


def test_catalog_class_moves_the_products_to_the_measured_kernel():
    """H200, 64 tokens on 16 heads (DeepSeek-V3 at TP 8): the catalog's class against the table's row, the GEMM terms
    (the op without its kernel class) far from it."""
    hw = hardware.get("h200")
    rows = pd.read_csv(DATA / "mla_bmm_perf.csv")
    row = rows[(rows.op_name == "mla_gen_pre") & (rows.bmm_dtype == "fp8") & (rows.num_tokens == 64)
               & (rows.num_heads == 16)]
    measured_s = float(row.latency.iloc[0]) * 1e-3
    op = _op(64, 16, "fp8")
    assert _seconds(hw, op) == pytest.approx(measured_s, rel=0.10)
    op.attrs.pop("kernel")
    assert abs(_seconds(hw, op) / measured_s - 1.0) > 0.2


def test_coverage_says_a_device_without_the_class_borrows_the_gemm_terms():
    from ironlaw.law.coverage import coverage, line
    g = Graph("bmm", "decode", "fp8", [_op(64, 16, "fp8")])
    cov = coverage(predict(g, hardware.get("mi300x")))
    assert {"class": "mla_bmm fp8", "borrows": "matmul fp8", "share_of_time": 1.0} in cov["borrowed"]
    assert "mla_bmm fp8 100% of the predicted time (borrows matmul fp8's η)" in line(cov)
    assert "mla_bmm fp8" not in {b["class"] for b in coverage(predict(g, hardware.get("h200")))["borrowed"]}
