"""SGLang's tensor-parallel all-reduce on its own measured curve (collective ``allreduce-sglang``: aiconfigurator-core
0.12.0's comm/sglang custom_allreduce tables, sglang_graph rows, fitted by benchmarks/kernel_comm.py regime by regime
either side of SGLang's switch to NCCL, measure/calibrate/commswitch.py ``sglang_switches``)."""
import csv
from pathlib import Path

import numpy as np
import pytest

from ironlaw.machine import hardware
from ironlaw.machine.network import build, collective_time
from ironlaw.machine.network.calibration import for_hardware
from ironlaw.machine.network.collectives import time_source
from ironlaw.measure.calibrate.commswitch import sglang_switches, switches, vllm_switches

DATA = Path(__file__).parent / "data/kernel_tables"


def _rows(system: str, version: str, gpus: int) -> dict:
    """{message bytes: seconds} of the sglang_graph rows of ``gpus`` GPUs in the extract."""
    with (DATA / system / "comm/sglang" / version / "custom_allreduce_perf.csv").open() as f:
        return {int(r["message_size"]) * 2: float(r["latency"]) * 1e-3 for r in csv.DictReader(f)
                if int(r["num_gpus"]) == gpus and r["backend"] == "sglang_graph"}


@pytest.mark.parametrize("gpu, gpus, expected", [
    ("h100", 8, ((16 << 20) + 1,)),                 # its JIT custom kernel up to 16 MiB, NCCL beyond
    ("b200", 4, ((16 << 20) + 1,)),                 # no symmetric-memory ceiling, unlike vLLM's 2 MiB
    ("gb200", 4, ((16 << 20) + 1,)),                # one 4-GPU tray
    ("l40s", 2, ()),                                # PCIe: no JIT custom kernel (it needs NVLink), one curve
    ("rtx-pro-6000", 4, ()),
    ("gb300", 8, ()),                               # across two 4-GPU trays
    ("h100", 16, ()),                               # beyond one host
])
def test_sglang_switches_follow_its_dispatch(gpu, gpus, expected):
    assert sglang_switches(gpu, gpus) == expected
    assert switches("SGLang", gpu, gpus) == expected     # keyed by the table's framework column


def test_switches_keep_vllm_and_refuse_no_engine():
    assert switches("vllm", "b200", 8) == vllm_switches("b200", 8) == (256 << 10, 1 << 20, 128 << 20)
    assert switches("TRTLLM", "b200", 8) == ()


def test_the_h100_curve_times_a_decode_all_reduce_as_the_table():
    """4 tokens × 5120 bf16 (20,480 elements, 40 KiB) on 8 H100: between the table's 16,384 and 32,768 elements;
    NCCL's curve, what SGLang's step priced it on, is ~3× the table there."""
    rows = _rows("h100_sxm", "0.5.14", 8)
    hw = hardware.get("h100")
    assert ("allreduce-sglang", 8) in for_hardware(hw).curves
    t = float(np.sum(collective_time("allreduce-sglang", 40960, build(hw, 8, 1))))
    assert rows[32768] * 0.95 < t < rows[65536] * 1.05
    nccl = float(np.sum(collective_time("allreduce", 40960, build(hw, 8, 1))))
    assert t < 0.5 * nccl


def test_the_curve_keeps_the_custom_kernel_up_to_16_mib():
    """8 B200: the custom kernel's 16 MiB row (57.5 µs; NCCL's own table 99.1) within 10%, and the ~3× step to
    NCCL's 32 MiB row (169.7 µs) kept, where one min-of-lines curve could only bend."""
    rows = _rows("b200_sxm", "0.5.14", 8)
    topo = build(hardware.get("b200"), 8, 1)
    t16, t32 = (float(np.sum(collective_time("allreduce-sglang", n, topo))) for n in (16 << 20, 32 << 20))
    assert t16 == pytest.approx(rows[16 << 20], rel=0.10)
    assert t32 > 2.5 * t16 and rows[32 << 20] > 2.5 * rows[16 << 20]


def test_the_source_names_sglangs_table_or_nccl():
    """One node: SGLang's own table is the source; two nodes: NCCL's all-reduce times SGLang's op."""
    hw = hardware.get("h100")
    src = time_source(hw, "allreduce-sglang", 8, 1)
    assert "allreduce-sglang curve" in src and "h100_sxm/comm/sglang/0.5.14/custom_allreduce_perf" in src
    assert time_source(hw, "allreduce-sglang", 16, 2) == time_source(hw, "allreduce", 16, 2)
    assert "h100_sxm/comm/vllm/0.24.0/custom_allreduce_perf" in time_source(hw, "allreduce-vllm", 8, 1)  # vLLM's own


def test_the_engine_line_names_the_all_reduce_curve():
    """``serve --engine sglang --tp 8`` on H200 names SGLang's own table; a group size its file lacks names NCCL's."""
    from ironlaw.models.serving import frameworks
    from ironlaw.models.serving.step.collectives import allreduce_line
    lines = frameworks.select("sglang", "h200", 8).lines(offline=False)
    line = next(x for x in lines if x.startswith("TP all-reduce:"))
    assert line.startswith("TP all-reduce: SGLang's own") and "h200_sxm/comm/sglang/0.5.14" in line
    assert not any(x.startswith("TP all-reduce:") for x in frameworks.select("sglang", "h200", 1).lines(False))
    other = allreduce_line(hardware.get("h200"), "sglang", "SGLang", 6)
    assert other.startswith("TP all-reduce: h200 has no SGLang all-reduce curve at 6 GPUs: NCCL's")
