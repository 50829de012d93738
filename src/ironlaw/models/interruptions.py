"""Interruptions of a long training run: how many to expect, what they cost, what share of the time is goodput.

Failures strike the job as a Poisson process. Its rate is the devices' count over the mean GPU-hours between
interruptions per device (``--mtbf-gpu-hours``): the job's mean time between interruptions is

    M = mtbf_gpu_hours · 3600 / gpus                                             seconds

The default rate is Meta's: 419 unexpected interruptions in a 54-day snapshot of Llama 3 405B pre-training
on 16,384 H100 GPUs (``LLAMA3``), every cause counted (GPUs, HBM, hosts, network, software), scaled to one GPU.

The run checkpoints every τ seconds of work, each checkpoint taking δ seconds (``--checkpoint-s``); after an
interruption the job restarts (R seconds: ``--restart-s``, by default δ, reading the checkpoint back) and
redoes the work since the last checkpoint. With exponential failures the expected wall time of T_s seconds of
work is (Daly 2006)

    T_w = M · e^{R/M} · (e^{(τ+δ)/M} − 1) · T_s / τ

at the interval that minimises it, to higher order (Daly 2006; its first term is Young 1974's √(2δM))

    τ = √(2δM) · (1 + ⅓·√(δ/2M) + ⅑·δ/2M) − δ      for δ < 2M,   τ = M otherwise.

Expected interruptions T_w / M; checkpoint time δ · T_s / τ; restarts R per interruption; the rest of
T_w − T_s is work redone; goodput T_s / T_w.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ..core.errors import IronlawError

# Llama 3 405B pre-training: in a 54-day snapshot, 466 job interruptions, 47 of them planned (maintenance) and 419
# unexpected, on a cluster of 16,384 H100 GPUs (Llama Team, AI @ Meta, "The Llama 3 Herd of Models",
# arXiv:2407.21783, §3.3.4 and its Table 5 of root causes)
LLAMA3_INTERRUPTIONS, LLAMA3_DAYS, LLAMA3_GPUS = 419, 54, 16384
LLAMA3_MTBF_GPU_HOURS = LLAMA3_GPUS * LLAMA3_DAYS * 24.0 / LLAMA3_INTERRUPTIONS
LLAMA3_SOURCE = ("Llama 3 405B pre-training: 419 unexpected interruptions in 54 days on 16,384 H100 GPUs "
                 "(\"The Llama 3 Herd of Models\", arXiv:2407.21783, §3.3.4, Table 5) = "
                 f"{LLAMA3_MTBF_GPU_HOURS:,.0f} GPU-hours per interruption")
MODEL_SOURCE = ("exponential failures; wall time and checkpoint interval of J. T. Daly, \"A higher order estimate "
                "of the optimum checkpoint interval for restart dumps\", Future Generation Computer Systems "
                "22(3):303-312, 2006 (to first order J. W. Young, \"A first order approximation to the optimum "
                "checkpoint interval\", Communications of the ACM 17(9):530-531, 1974)")


@dataclass
class Interruptions:
    mtbf_gpu_hours: float             # per device
    mtbf_source: str
    job_mtbf_s: float                 # M: the whole job's mean time between interruptions
    expected: float                   # interruptions over the run's wall time
    checkpoint_s: float | None        # δ (None: not given; no lost work or goodput)
    restart_s: float | None           # R
    interval_s: float | None          # τ: work between checkpoints (Daly's optimum)
    work_s: float                     # T_s: the run without interruptions or checkpoints
    wall_s: float                     # T_w
    checkpointing_s: float            # δ · T_s / τ
    restarting_s: float               # R · expected
    redone_s: float                   # T_w − T_s − checkpointing − restarting
    goodput: float                    # T_s / T_w
    model: str = MODEL_SOURCE

    def to_dict(self) -> dict:
        return asdict(self)


def check_mtbf(mtbf_gpu_hours: float | None) -> tuple[float, str]:
    """The per-device mean GPU-hours between interruptions to use, and its source."""
    if mtbf_gpu_hours is None:
        return LLAMA3_MTBF_GPU_HOURS, LLAMA3_SOURCE
    if isinstance(mtbf_gpu_hours, bool) or not isinstance(mtbf_gpu_hours, (int, float)) \
            or not math.isfinite(mtbf_gpu_hours) or mtbf_gpu_hours <= 0:
        raise IronlawError(f"--mtbf-gpu-hours must be a positive number of GPU-hours, got {mtbf_gpu_hours}")
    return float(mtbf_gpu_hours), "given: --mtbf-gpu-hours"


def check_seconds(x: float | None, flag: str) -> float | None:
    if x is None:
        return None
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
        raise IronlawError(f"{flag} must be a non-negative number of seconds, got {x}")
    return float(x) + 0.0                                 # -0 is 0


def daly_interval_s(checkpoint_s: float, job_mtbf_s: float) -> float:
    """Daly's (2006) optimum work between checkpoints; Young's √(2δM) is its first term."""
    d, m = checkpoint_s, job_mtbf_s
    if d >= 2.0 * m:
        return m
    r = d / (2.0 * m)
    return math.sqrt(2.0 * d * m) * (1.0 + math.sqrt(r) / 3.0 + r / 9.0) - d


def daly_wall_s(work_s: float, interval_s: float, checkpoint_s: float, restart_s: float, job_mtbf_s: float) -> float:
    """Expected wall time of ``work_s`` seconds of work checkpointed every ``interval_s`` (Daly 2006); free
    checkpoints (``interval_s`` → 0) leave the restarts alone: ``work_s`` · e^{R/M}."""
    if interval_s <= 0:
        return work_s * math.exp(restart_s / job_mtbf_s)
    m = job_mtbf_s
    return m * math.exp(restart_s / m) * math.expm1((interval_s + checkpoint_s) / m) * work_s / interval_s


def of_run(work_s: float, gpus: int, mtbf_gpu_hours: float | None = None, checkpoint_s: float | None = None,
           restart_s: float | None = None) -> Interruptions:
    """Expected interruptions of ``work_s`` seconds of uninterrupted training on ``gpus`` devices; with
    ``checkpoint_s``, the checkpoints, restarts and redone work at Daly's interval and the goodput. Without it
    the wall time is the work alone and the interruptions are counted over it."""
    mtbf, src = check_mtbf(mtbf_gpu_hours)
    checkpoint_s = check_seconds(checkpoint_s, "--checkpoint-s")
    restart_s = check_seconds(restart_s, "--restart-s")
    if restart_s is not None and checkpoint_s is None:
        raise IronlawError("--restart-s needs --checkpoint-s: the work lost to an interruption is the work since "
                           "the last checkpoint")
    m = mtbf * 3600.0 / gpus
    if checkpoint_s is None:
        return Interruptions(mtbf, src, m, work_s / m, None, None, None, work_s, work_s, 0.0, 0.0, 0.0, 1.0)
    r = checkpoint_s if restart_s is None else restart_s
    tau = daly_interval_s(checkpoint_s, m)
    wall = daly_wall_s(work_s, tau, checkpoint_s, r, m)
    expected = wall / m
    ckpt = checkpoint_s * work_s / tau if tau > 0 else 0.0
    restarting = r * expected
    return Interruptions(mtbf, src, m, expected, checkpoint_s, r, tau, work_s, wall, ckpt, restarting,
                         max(wall - work_s - ckpt - restarting, 0.0), work_s / wall)
