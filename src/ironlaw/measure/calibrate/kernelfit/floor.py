"""Rows timed below the law's floor: a table faster than the GPU it is fitted for can run.

The floor of a row is the larger of its FLOPs over the matrix unit's peak (the law's compute term at η = 1,
``fitcore.neutral``) and its bytes over the fastest memory level's bandwidth (as if every byte were read from the
last cache level: the tables' collectors call one op over and over, and an L40S GEMM's 100 MB of weights, most of
them left in its 96 MiB L2, stream at 3 TB/s where its GDDR6 serves 864 GB/s). A kernel cannot beat it, so a
table whose rows do by more than ``FLOOR_MARGIN`` was timed on another GPU than the one named (a wrong
``--gpu``) or is fitted against a hardware file whose peaks are too low: its fit would cap η at 1 and still miss. ``below_floor`` finds
them; ``calibrate`` refuses such tables in one line.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..fitcore import Problem
from .ops import observations, replayed_hw
from .vocabulary import Group

# The floor over the measured time may exceed 1 by this much before a row counts as below it. On aiconfigurator-core
# 0.12.0's TensorRT-LLM tables (benchmarks/kernel_floor.py: every GPU's GEMM, attention, MLA and MLA BMM classes,
# 259 classes, 9 GPUs) the largest ratio is 1.47 (GB300 context MLA, bf16 with an fp8 KV cache), every other under
# 1.45, no GEMM class over 1.34. The margin sits 19% above that, so the shipped tables never trip it, and below
# the 2.7x of H100 SXM's bf16 GEMMs fitted as an A100's (tests/test_kernel_floor.py).
FLOOR_MARGIN = 1.75


@dataclass(frozen=True)
class BelowFloor:
    """The rows of a set of kernel classes timed below the law's floor by more than ``FLOOR_MARGIN``."""
    rows: int                        # rows below the floor, over all classes
    of_rows: int                     # rows checked
    worst_ratio: float               # the largest floor / measured time
    worst_class: str                 # the class of that row
    worst_row: str                   # that row's op, as ironlaw names it
    worst_measured_s: float
    worst_floor_s: float


def ratios(hw, g: Group) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per row of ``g``: the law's floor on ``hw`` over its measured time, the measured seconds, the op's name."""
    dev = replayed_hw(g, hw)
    obs = observations(g, g.rows, dev)
    prob = Problem(dev, obs, weighting="per_case")
    fastest = max(t.bw_Bps for t in dev.memory)
    moved = np.array([sum(o.op.bytes.values()) for o in obs], float)
    return np.maximum(moved / fastest, prob.c0) / prob.meas, prob.meas, [str(n) for n in prob.names]


def below_floor(hw, gs: list[Group], margin: float = FLOOR_MARGIN) -> BelowFloor | None:
    """The rows of ``gs`` whose measured time is below the law's floor on ``hw`` by more than ``margin`` (floor /
    measured > ``margin``), with the worst one; None where there are none."""
    n, total, worst = 0, 0, None
    for g in gs:
        r, meas, names = ratios(hw, g)
        n, total = n + int(np.sum(r > margin)), total + len(r)
        i = int(np.argmax(r)) if len(r) else None
        if i is not None and (worst is None or r[i] > worst[0]):
            worst = (float(r[i]), g.name, names[i], float(meas[i]))
    if not n:
        return None
    ratio, cls, row, meas = worst
    return BelowFloor(n, total, ratio, cls, row, meas, ratio * meas)
