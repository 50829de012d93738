"""The FP8 GEMM kernels vLLM and SGLang run on L40S (SM 8.9) switch their CUTLASS tile configuration at each power of
two of M (``kernelfit.rules.M_SWITCH_GEMMS``): their classes' grids take a node at every power of two of M, the others
keep ``GRID_STEPS``' 4×."""
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
    ("vllm", "bf16", "h100", False),            # cuBLAS: no documented switch
    ("trtllm", "fp8", "l40s", False),
    ("vllm", "fp8", "h100", True),              # SM 9.0: its c3x dispatch, with the nodes one past (M_PAST_GEMMS)
    ("vllm", "fp8", "a100", False),             # no FP8 GEMM on SM 8.0
])
def test_the_m_axis_steps_by_two_where_the_kernel_switches_at_powers_of_two(framework, dtype, gpu, switched):
    steps = kernelfit.grid.gemm_switch_steps(group(framework, dtype, gpu))
    if not switched:
        assert steps is None
        return
    assert steps[0] == kernelfit.grid.M_SWITCH_STEP == 2.0 and steps[2:] == kernelfit.grid.GRID_STEPS["gemm"][2:]
    coords = (np.geomspace(1, 8192, 4000), np.full(4000, 4096.0), np.full(4000, 4096.0), np.ones(4000))
    m_nodes = kernelfit.grid.fit_nodes("gemm", coords, 8000, steps)[0]
    assert {32.0, 64.0, 128.0, 256.0, 512.0} <= set(m_nodes)
    plain = kernelfit.grid.fit_nodes("gemm", coords, 8000)[0]
    assert 32.0 not in plain and 128.0 not in plain


@pytest.mark.parametrize("framework, dtype, gpu, past", [
    ("sglang", "fp8", "h200", True),            # sgl-kernel's sm90 dispatch
    ("vllm", "fp8", "h100", True),              # vLLM's c3x sm90 dispatch
    ("vllm", "bf16", "h200", False),            # cuBLAS
    ("trtllm", "fp8", "h200", False),
])
def test_the_m_axis_takes_a_node_one_past_each_power_of_two_the_rows_hold(framework, dtype, gpu, past):
    g = group(framework, dtype, gpu)
    held = np.array([1, 2, 4, 5, 8, 9, 16, 17, 32, 33, 48, 64, 65, 128, 129, 160, 256, 257, 512, 513, 768, 769, 1024],
                    float)
    m = np.resize(held, 8000)
    coords = (m, np.full(8000, 4096.0), np.full(8000, 4096.0), np.ones(8000))
    nodes = kernelfit.grid.fit_nodes("gemm", coords, 8000, kernelfit.grid.gemm_switch_steps(g))
    out = kernelfit.grid.past_switch_nodes(g, nodes, coords, 8000)
    if not past:
        assert out == nodes
        return
    assert {5.0, 9.0, 17.0, 33.0, 65.0, 129.0, 257.0, 513.0} <= set(out[0])
    assert 769.0 not in out[0] and 49.0 not in out[0]          # one past a power of two only
    assert {128.0, 256.0, 512.0} <= set(out[0]) and out[1:] == nodes[1:]
    assert kernelfit.grid.past_switch_nodes(g, nodes, coords, 10) == nodes     # too few rows for the added nodes


def test_a_grid_one_past_the_switch_follows_the_jump_and_the_fall_back():
    """Rows whose time doubles one past each power of two and falls back by the next (the H200 tables' shape) are
    followed by the grid with the added nodes, and averaged across by the powers of two alone."""
    from ironlaw.core.gemmshape import grid_weights
    m = np.array([64, 65, 96, 128, 129, 192, 256, 257, 384, 512], float)
    y = np.log(np.array([1.0, 2.0, 1.5, 1.0, 2.0, 1.5, 1.0, 2.0, 1.5, 1.0]))
    coords = (m, np.full(m.size, 4096.0), np.full(m.size, 4096.0), np.ones(m.size))
    g = group("sglang", "fp8", "h200")
    pow2 = [[64.0, 128.0, 256.0, 512.0], [4096.0], [4096.0], [1.0]]
    past = kernelfit.grid.past_switch_nodes(g, pow2, coords, 1000)
    for nodes, worst in ((pow2, 0.3), (past, 0.1)):
        cols = np.arange(int(np.prod([len(a) for a in nodes])))
        coef = kernelfit.grid.grid_solve(nodes, coords, y, cols)
        idx, w = grid_weights(nodes, coords)
        fit = (coef[idx] * w).sum(axis=1)
        assert (np.max(np.abs(fit - y)) > worst) == (nodes is pow2)


@pytest.mark.parametrize("framework, gpu, fine", [
    ("trtllm", "l40s", True), ("vllm", "l40s", True), ("sglang", "l40s", True), ("vllm", "rtx-pro-6000", True),
    ("vllm", "h100", False), ("trtllm", "a100", False),
])
def test_gddr_bf16_classes_take_a_node_every_2x_on_m_n_and_k(framework, gpu, fine):
    """cuBLASLt picks the bf16 kernels of L40S and RTX PRO 6000 from (M, N, K), switching more often than 4× nodes
    follow (``kernelfit.rules.FINE_GEMMS``): their classes' grids step 2× on every axis; the FP8 classes keep their
    M rule."""
    steps = kernelfit.grid.gemm_switch_steps(group(framework, "bf16", gpu))
    if not fine:
        assert steps is None
        return
    assert steps[:3] == (kernelfit.grid.FINE_GEMM_STEP,) * 3 == (2.0, 2.0, 2.0)
    n = np.geomspace(64, 65536, 4000)
    coords = (np.full(4000, 64.0), n, n[::-1].copy(), np.ones(4000))
    nodes = kernelfit.grid.fit_nodes("gemm", coords, 40000, steps)
    assert {2048.0, 8192.0} <= set(nodes[1]) and {2048.0, 8192.0} <= set(nodes[2])
    plain = kernelfit.grid.fit_nodes("gemm", coords, 40000)
    assert 2048.0 not in plain[1] and 8192.0 not in plain[2]
    assert kernelfit.grid.gemm_switch_steps(group(framework, "fp8", gpu)) != steps


@pytest.mark.parametrize("framework, gpu, by_n", [
    ("vllm", "l40s", True),                     # scaled_mm_c2x_sm89_fp8_dispatch.cuh: the tile by N's power of two
    ("sglang", "l40s", False),                  # held out worse on 2× N nodes (kernelfit.rules.N_SWITCH_GEMMS)
    ("vllm", "h100", False),
])
def test_the_n_axis_steps_by_two_where_the_sm89_fp8_kernel_switches_its_tile_by_n(framework, gpu, by_n):
    """vLLM's SM 8.9 FP8 GEMM picks its CUTLASS tile by N's next power of two (``kernelfit.rules.N_SWITCH_GEMMS``):
    its L40S class's grid takes a node every 2× in N, on each side of the switches at 4,096 and 8,192."""
    steps = kernelfit.grid.gemm_switch_steps(group(framework, "fp8", gpu))
    assert steps[0] == kernelfit.grid.M_SWITCH_STEP
    assert steps[1] == (kernelfit.grid.N_SWITCH_STEP if by_n else kernelfit.grid.GRID_STEPS["gemm"][1])
    n = np.geomspace(256, 65536, 4000)
    coords = (np.full(4000, 4096.0), n, np.full(4000, 4096.0), np.ones(4000))
    n_nodes = set(kernelfit.grid.fit_nodes("gemm", coords, 40000, steps)[1])
    assert ({4096.0, 8192.0, 16384.0} <= n_nodes) == by_n


@pytest.mark.parametrize("m", [1024, 2048, 3741, 8192])
def test_the_l40s_vllm_fp8_term_stays_under_its_rows_at_llama_8b_gate_up(m):
    """Llama-3.1-8B's gate/up GEMM (N 28,672, K 4,096), which the L40S vLLM fp8 table does not hold, priced on the
    stored engine terms no faster than the fastest of the table's 145 rows around it (aiconfigurator-core 0.12.0,
    l40s/gemm/vllm/0.24.0, fp8, K 4,096, N 10,240-65,536, M 1,024-8,192: 411 TFLOP/s, median 377). A grid with
    nodes every 4× in N puts a node at N 32,768, which no row holds, and prices it at 421-486 TFLOP/s."""
    from ironlaw.law import law
    from ironlaw.machine import engines, hardware
    from ironlaw.models import workloads
    hw, cov = engines.with_engine(hardware.get("l40s"), "vllm")
    assert "gemm fp8" in cov.own
    g = workloads.resolve(workloads.Request(f"gemm:{m},28672,4096", dtype="fp8"))
    rate = sum(op.flops * op.count for op in g.ops) / float(law.predict(g, hw).op_time_s.sum())
    assert 0.8 * 377e12 < rate <= 411e12
