"""AMD Instinct GEMM terms fitted on ROCm/aiter's measured tuned-GEMM timings (tests/data/aiter_kernels): the
extract read as kernel tables, a fit that beats the datasheet on held-out rows, and the catalog's stored terms used
and named by `analyze`."""
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli

pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.machine import hardware  # noqa: E402
from ironlaw.measure.calibrate import kernelfit, kerneltable  # noqa: E402

DATA = Path(__file__).parent / "data" / "aiter_kernels"


def tables(gpu: str):
    return kerneltable.read(DATA / gpu, ops=("gemm",), gpu=gpu, framework="aiter")


def test_the_extract_reads_as_aiter_kernel_tables_per_dtype():
    names = {g.name: g for g in kernelfit.groups(tables("mi355x"))}
    assert set(names) == {"gemm bf16", "gemm fp8", "gemm mxfp4"}
    assert all(len(g.rows) > 1000 for g in names.values())
    assert all(g.table.framework == "aiter" and g.table.version == "e4048607" for g in names.values())
    # block-scaled FP8 is left out unless asked for, then fitted as fp8 and said so
    plain = {g.name for g in kernelfit.groups(tables("mi300x"))}
    assert plain == {"gemm int8"}
    block = {g.name: g for g in kernelfit.groups(tables("mi300x"), fp8_block_as="fp8")}
    assert set(block) == {"gemm fp8", "gemm int8"}
    assert block["gemm fp8"].timed.startswith("fp8_block rows")


def test_block_scaled_fp8_stands_for_fp8_only():
    with pytest.raises(IronlawError, match="fp8_block rows can stand for fp8 only, not 'bf16'"):
        kernelfit.groups(tables("mi300x"), fp8_block_as="bf16")


def test_a_fit_on_even_rows_beats_the_datasheet_on_the_odd_rows(monkeypatch):
    """MI355X bf16, every 3rd shape of the extract: the fitted terms' held-out median |error| is under 10% and under
    half the datasheet's (22.8% on the whole class, docs/accuracy.md)."""
    from dataclasses import replace
    g = next(g for g in kernelfit.groups(tables("mi355x")) if g.name == "gemm bf16")
    g = replace(g, rows=g.rows.iloc[::3].reset_index(drop=True))
    hw = hardware.get("mi355x")
    bare = replace(hw, calibration=None)
    cal = kernelfit.fit(bare, [g], date="2026-12-05", origin="extract", license="MIT")
    fitted = kernelfit.score(bare, cal, [g])[0]
    sheet = _datasheet_median(bare, g)
    assert fitted.median_abs_err < 0.10
    assert fitted.median_abs_err < 0.5 * sheet
    assert cal["provenance"]["gemm bf16"]["license"] == "MIT"


def _datasheet_median(hw, g) -> float:
    from ironlaw.law import law
    from ironlaw.measure.calibrate.fitcore import Problem
    held = kernelfit.split(g.rows)[1]
    prob = Problem(hw, kernelfit.observations(g, held, hw), weighting="per_case")
    t = np.asarray(law.timed(prob.placed, hw).op_time_s, float).reshape(-1) + prob.offset
    return float(np.median(np.abs(t / prob.meas - 1.0)))


@pytest.mark.parametrize("gpu, dtype", [("mi355x", "bf16"), ("mi355x", "fp8"), ("mi355x", "mxfp4"),
                                        ("mi300x", "fp8")])
def test_the_catalog_terms_reproduce_held_out_rows(monkeypatch, gpu, dtype):
    """150 held-out rows evenly spaced (every class's median on all of them is 3.4-6.7%, the datasheet's 22-42%)."""
    monkeypatch.setattr(kernelfit.rows, "SCORE_ROWS", 150)
    hw = hardware.get(gpu)
    g = next(g for g in kernelfit.groups(tables(gpu), fp8_block_as="fp8") if g.name == f"gemm {dtype}")
    s = kernelfit.score(hw, hw.calibration.table(), [g])[0]
    assert s.median_abs_err <= 0.10, s
    prov = hw.calibration.table()["provenance"][f"gemm {dtype}"]
    assert prov["license"] == "MIT" and "ROCm/aiter e4048607" in prov["version"]
    assert prov["table"].startswith(f"{gpu}/gemm/aiter/e4048607/gemm_perf.csv")


def test_analyze_names_measured_and_datasheet_gemms_on_amd():
    fp8 = run_cli("analyze", "gemm:4096,8192,8192", "--on", "mi300x", "--dtype", "fp8", "--format", "json")
    assert fp8.rc == 0, fp8.err
    assert fp8.json()["calibration_coverage"] == {"calibrated": ["matmul"], "borrowed": []}
    bf16 = run_cli("analyze", "gemm:4096,8192,8192", "--on", "mi300x")     # no bf16 timings of the MI300X
    assert bf16.rc == 0, bf16.err
    assert "uncalibrated: matmul 100% of the predicted time (borrows [efficiency] defaults)" in bf16.out
    # mi325x (same die, no GEMM tables of its own: its calibration holds MoE classes alone) borrows the defaults
    other = run_cli("analyze", "gemm:4096,8192,8192", "--on", "mi325x")
    assert "uncalibrated: matmul 100% of the predicted time (borrows [efficiency] defaults)" in other.out


def test_calibrate_refuses_an_unknown_framework_in_one_line(tmp_path):
    r = run_cli("calibrate", "--kernels", str(DATA / "mi355x"), "--gpu", "mi355x", "--framework", "rocm")
    assert r.rc == 2
    assert r.err.strip() == "ironlaw: error: --framework must be one of trtllm, sglang, vllm, aiter, got 'rocm'"


@pytest.mark.parametrize("gpu", ["mi300x", "mi355x"])
def test_measured_gemms_leave_the_other_classes_named_as_borrowing(cli, gpu):
    """GEMMs measured, nothing else: a decode step's attention and elementwise ops say they borrow the datasheet's
    [efficiency] defaults, and the device no longer claims to have no tables."""
    r = cli("analyze", "llama3-8b", "--phase", "decode", "--batch", "8", "--seq", "1024", "--on", gpu)
    assert r.rc == 0, r.err
    text = " ".join(r.out.split())
    assert "no measured kernel tables" not in text
    assert "attention" in text and "(borrows [efficiency] defaults)" in text
