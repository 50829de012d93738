"""The Intel Arc Pro B60's kernel terms, fitted on aiconfigurator-core 0.12.0's vLLM 0.26.0 tables of it (NVIDIA,
Apache-2.0; b60/{gemm,attention}/vllm/0.26.0) into src/ironlaw/machine/catalog/engine/vllm/b60.toml by
``benchmarks/kernel_tables.py --framework vllm --gpu b60 --gemm-fill auto --write``: the tables' device strings map to
the catalog's b60, the engine file's classes price ``serve --engine vllm``, two measured GEMM rows land within 10%
where the datasheet alone misses them, and the tables' "fp8" GEMM rows stay unfitted (no FP8 XMX)."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ironlaw.machine import engines, hardware
from ironlaw.measure.calibrate import kernelfit, kerneltable

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import kernel_tables  # noqa: E402

# (m, n, k) -> ms: rows of b60/gemm/vllm/0.26.0/gemm_perf.parquet, bfloat16 (a weight-streaming decode GEMM, a
# compute-bound prefill one)
MEASURED_MS = {(1, 6144, 4096): 0.11819, (2048, 4096, 4096): 0.78362}


def _gemm_ms(hw, m: int, n: int, k: int) -> float:
    from ironlaw.law.law import predict
    from ironlaw.models.workloads.micro import gemm
    from ironlaw.models.workloads.registry import Request
    spec = f"{m},{n},{k}"
    est = predict(gemm(spec, Request(f"gemm:{spec}", phase="infer", dtype="bf16", device="cuda")), hw)
    return 1e3 * float(np.sum(est.op_time_s))


def test_the_tables_device_strings_are_the_catalogs_b60():
    assert kerneltable.match_gpu("Intel(R) Arc(TM) Pro B60 Graphics") == "b60"
    assert kerneltable.match_gpu("Intel(R) Graphics [0xe211]") == "b60"     # its oneCCL 2021.17.2 table's
    assert kernel_tables.GPUS["b60"] == "b60"


def test_the_vllm_engine_file_prices_b60_from_its_tables():
    hw, cov = engines.with_engine(hardware.get("b60"), "vllm")
    assert cov.versions == ("vllm 0.26.0",) and "gemm bf16" in cov.own and "gemm fp8" not in cov.own
    assert len(cov.own) == 15 and cov.line().startswith("kernels: vllm 0.26.0 on b60 (15 GEMM and attention")
    for (m, n, k), ms in MEASURED_MS.items():
        assert _gemm_ms(hw, m, n, k) == pytest.approx(ms, rel=0.10), (m, n, k)
    sheet = replace(hardware.get("b60"), calibration=None)              # the datasheet alone: 17-27% slow
    assert all(_gemm_ms(sheet, *mnk) > 1.15 * ms for mnk, ms in MEASURED_MS.items())


def test_gemm_rows_of_a_dtype_the_device_lacks_are_left_out_with_a_line(capsys):
    rows = pd.DataFrame({"device": "x", "gemm_dtype": ["bfloat16", "fp8"] * 2, "m": [1, 1, 2, 2], "n": 64, "k": 64,
                         "latency_s": 1e-5})
    table = kerneltable.KernelTable("gemm", "b60", "x", "vllm", "0.26.0", "gemm_perf.csv", rows)
    gs = kernelfit.groups([table])
    assert [g.name for g in kernel_tables.runnable(hardware.get("b60"), gs)] == ["gemm bf16"]
    assert "b60 has no fp8 matrix unit" in capsys.readouterr().out
    assert len(kernel_tables.runnable(hardware.get("h100"), gs)) == 2


def test_analyze_on_b60_points_at_the_engine_tables_serve_reads(cli):
    r = cli("analyze", "gemm:1,4096,4096", "--on", "b60")
    text = " ".join(r.out.split())
    assert r.rc == 0 and "b60's measured kernel tables are vLLM's" in text and "has no measured kernel" not in text
    assert "datasheet only: mi250x has no measured kernel tables" in " ".join(
        cli("analyze", "gemm:1,4096,4096", "--on", "mi250x").out.split())
