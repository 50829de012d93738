"""A GEMM class of ``kernelfit.rules.SPIKY_GEMMS`` is fitted without its fit rows' isolated spikes
(``kernelfit.rows.despiked``): a single timing far off both its neighbours in M at the same N and K goes; a kernel
switch, which holds for the M after it, and every other class's rows stay."""
import pytest

pd = pytest.importorskip("pandas")

from ironlaw.measure.calibrate import kernelfit  # noqa: E402
from ironlaw.measure.calibrate.kerneltable import KernelTable  # noqa: E402


def group(framework: str, dtype: str, gpu: str) -> kernelfit.Group:
    table = KernelTable("gemm", gpu, gpu, framework, "0.24.0", "gemm_perf.parquet", None)
    return kernelfit.Group(f"gemm {dtype}", ("matmul", dtype), "gemm", table, None)


def rows() -> "pd.DataFrame":
    """gemm:M,64,65536 as vLLM 0.24.0's B200 fp8 table times it (µs): spikes at M = 7 (slow) and 9 (fast, made up
    beside it), a switch one past 256 that holds at 384 and 512; and gemm:M,512,4096 flat."""
    m = [6, 7, 8, 9, 10, 256, 257, 384, 512]
    us = [48.0, 286.0, 48.0, 20.0, 48.0, 77.0, 112.0, 115.0, 118.0]
    flat = pd.DataFrame({"m": [1, 2, 3], "n": 512, "k": 4096, "latency_s": [9e-6, 9e-6, 9e-6]})
    spiky = pd.DataFrame({"m": m, "n": 64, "k": 65536, "latency_s": [u * 1e-6 for u in us]})
    return pd.concat([spiky, flat], ignore_index=True)


def test_the_isolated_spikes_go_and_the_switch_stays():
    kept = kernelfit.rows.despiked(group("vllm", "fp8", "b200"), rows())
    gone = set(rows()["m"][rows()["n"] == 64]) - set(kept["m"][kept["n"] == 64])
    assert gone == {7, 9}
    assert {257, 384, 512} <= set(kept["m"]) and len(kept[kept["n"] == 512]) == 3


@pytest.mark.parametrize("framework, dtype, gpu", [("vllm", "fp8", "h100"), ("sglang", "fp8", "b200"),
                                                   ("vllm", "bf16", "b200")])
def test_other_classes_keep_every_row(framework, dtype, gpu):
    assert len(kernelfit.rows.despiked(group(framework, dtype, gpu), rows())) == len(rows())
