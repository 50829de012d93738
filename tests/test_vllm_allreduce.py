"""vLLM's tensor-parallel all-reduce on its own measured curve (collective ``allreduce-vllm``: aiconfigurator-core
0.12.0's comm/vllm custom_allreduce tables, vllm_graph rows, fitted by benchmarks/kernel_comm.py); TensorRT-LLM and
SGLang run theirs (tests/test_sglang_allreduce.py)."""
import csv
from pathlib import Path

import numpy as np
import pytest

from ironlaw.machine import hardware
from ironlaw.machine.network import build, collective_time
from ironlaw.machine.network.calibration import for_hardware
from ironlaw.models.serving import engine, frameworks, step

TABLE = Path(__file__).parent / "data/kernel_tables/h200_sxm/comm/vllm/0.24.0/custom_allreduce_perf.csv"


def _rows(gpus: int) -> dict:
    with TABLE.open() as f:
        return {int(r["message_size"]): float(r["latency"]) * 1e-3 for r in csv.DictReader(f)
                if int(r["num_gpus"]) == gpus and r["backend"] == "vllm_graph"}


def test_the_h200_curve_times_a_decode_step_all_reduce_as_the_table():
    """4 tokens × 7168 bf16 (28,672 elements) on 8 H200: between the table's 16,384 and 32,768 elements."""
    rows = _rows(8)
    hw = hardware.get("h200")
    assert ("allreduce-vllm", 8) in for_hardware(hw).curves
    t = float(np.sum(collective_time("allreduce-vllm", 28672 * 2, build(hw, 8, 1))))
    assert rows[16384] < t < rows[32768] * 1.05
    nccl = float(np.sum(collective_time("allreduce", 28672 * 2, build(hw, 8, 1))))
    assert t < 0.5 * nccl                                 # NCCL's fitted curve: ~20 µs at this size


def _tp_allreduces(name: str):
    eng = frameworks.select(name, "h200", 8)
    c = frameworks.constants(eng, engine.FITTED)
    run = engine.engine_run("deepseek-r1", eng.hw, 228, 213, 4, tp=8, kv_dtype="bf16", constants=c).run
    _, est = step.step_seconds(run, 4, 0.0, 0.0, pad=True)
    return {op.collective for op in est.graph.ops if op.kind == "collective" and op.module == "tp"}


@pytest.mark.parametrize("name, collective", [("vllm", "allreduce-vllm"), ("sglang", "allreduce-sglang")])
def test_the_engine_runs_its_tp_all_reduce_on_its_own_curve(name, collective):
    assert _tp_allreduces(name) == {collective}


def test_the_curve_jumps_where_vllm_switches_to_its_two_stage_kernel():
    """8 B200: the one-stage kernel below 256 KiB, the two-stage one from there (csrc/custom_all_reduce.cuh), a
    jump of 9.4 → 25.8 µs one min-of-lines curve could only bend through; 512 KiB (262,144 elements) is held out."""
    table = Path(__file__).parent / "data/kernel_tables/b200_sxm/comm/vllm/0.24.0/custom_allreduce_perf.csv"
    with table.open() as f:
        rows = {int(r["message_size"]) * 2: float(r["latency"]) * 1e-3 for r in csv.DictReader(f)
                if int(r["num_gpus"]) == 8 and r["backend"] == "vllm_graph"}
    topo = build(hardware.get("b200"), 8, 1)
    for nbytes in (128 << 10, 512 << 10):
        t = float(np.sum(collective_time("allreduce-vllm", nbytes, topo)))
        assert t == pytest.approx(rows[nbytes], rel=0.10), nbytes


@pytest.mark.parametrize("gpu, gpus, switches", [
    ("b200", 8, (256 << 10, 1 << 20, 128 << 20)),     # 2-stage, symmetric memory, NCCL
    ("h100", 8, (256 << 10, 64 << 20)),               # the custom kernel stops where the 2-stage one would start
    ("a100", 4, (512 << 10, 8 << 20)),                # no symmetric memory on capability 8.0: NCCL from 8 MiB
    ("rtx-pro-6000", 2, (8 << 20,)),                  # two PCIe GPUs: the one-stage kernel up to 8 MiB
    ("rtx-pro-6000", 4, ()),                          # more than two PCIe GPUs: NCCL throughout
    ("gb300", 8, ()),                                 # across two 4-GPU trays: no custom kernel
])
def test_vllm_switches_follow_its_dispatch(gpu, gpus, switches):
    from ironlaw.measure.calibrate.commswitch import vllm_switches
    assert vllm_switches(gpu, gpus) == switches
