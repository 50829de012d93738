"""The FP8 GEMM kernels vLLM and SGLang run on L40S (SM 8.9) switch their CUTLASS tile configuration at each power of
two of M (``kernelfit.M_SWITCH_GEMMS``): their classes' grids take a node at every power of two of M, the others keep
``GRID_STEPS``' 4×."""
import numpy as np
import pytest

pytest.importorskip("pandas")

from ironlaw.measure.calibrate import kernelfit  # noqa: E402
from ironlaw.measure.calibrate.kerneltable import KernelTable  # noqa: E402


def group(framework: str, dtype: str, gpu: str = "l40s") -> kernelfit.Group:
    table = KernelTable("gemm", gpu, gpu, framework, "0.24.0", "gemm_perf.parquet", None)
    return kernelfit.Group(f"gemm {dtype}", ("matmul", dtype), "gemm", table, None)


@pytest.mark.parametrize("framework, dtype, gpu, switched", [
    ("vllm", "fp8", "l40s", True),
    ("sglang", "fp8", "l40s", True),
    ("vllm", "bf16", "l40s", False),            # cuBLAS: no documented switch
    ("trtllm", "fp8", "l40s", False),
    ("vllm", "fp8", "h100", False),             # SM 9.0: another dispatch
])
def test_the_m_axis_steps_by_two_where_the_kernel_switches_at_powers_of_two(framework, dtype, gpu, switched):
    steps = kernelfit.gemm_switch_steps(group(framework, dtype, gpu))
    if not switched:
        assert steps is None
        return
    assert steps[0] == kernelfit.M_SWITCH_STEP == 2.0 and steps[1:] == kernelfit.GRID_STEPS["gemm"][1:]
    coords = (np.geomspace(1, 8192, 4000), np.full(4000, 4096.0), np.full(4000, 4096.0), np.ones(4000))
    m_nodes = kernelfit.fit_nodes("gemm", coords, 8000, steps)[0]
    assert {32.0, 64.0, 128.0, 256.0, 512.0} <= set(m_nodes)
    plain = kernelfit.fit_nodes("gemm", coords, 8000)[0]
    assert 32.0 not in plain and 128.0 not in plain
