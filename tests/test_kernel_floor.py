"""Kernel tables faster than the GPU they are fitted for can run (``kernelfit.floor``): refused in one line before
any fit; the shipped extracts pass."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import one_line_error, run_cli

DATA = Path(__file__).parent / "data" / "kernel_tables"
GEMM = DATA / "h100_sxm" / "gemm" / "trtllm"


def _as_a100(tmp_path) -> str:
    """H100 SXM's bf16 GEMM rows with their device column saying A100: timed on a GPU 3x faster in bf16."""
    src = next(GEMM.rglob("gemm_perf.csv"))
    lines = src.read_text().splitlines()
    device = lines[1].split(",")[2]
    text = "\n".join([lines[0]] + [l for l in lines[1:] if ",bfloat16," in l]) + "\n"
    folder = tmp_path / "a100_sxm" / "gemm" / "trtllm" / src.parent.name
    folder.mkdir(parents=True)
    (folder / "gemm_perf.csv").write_text(text.replace(device, "NVIDIA A100-SXM4-80GB"))
    return str(tmp_path / "a100_sxm")


def test_a_table_faster_than_the_gpu_is_refused_in_one_line_naming_the_worst_row(tmp_path):
    pytest.importorskip("pandas")
    line = one_line_error(run_cli("calibrate", "--kernels", _as_a100(tmp_path), "--gpu", "a100"))
    assert "rows ran faster than a100 can" in line and "worst gemm " in line and "--gpu" in line


@pytest.mark.parametrize("gpu", ["h100_sxm", "b200_sxm", "h200_sxm"])
def test_the_shipped_extracts_stay_above_the_floor(gpu):
    pytest.importorskip("pandas")
    from ironlaw.machine import hardware
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    from ironlaw.measure.calibrate.kernelfit.floor import below_floor
    tables = kerneltable.read(DATA / gpu, ops=kernelfit.OPS, framework="trtllm")
    gs = kernelfit.groups(tables)
    assert gs and below_floor(hardware.get(tables[0].gpu), gs) is None
