"""The whole training run: ``--train-tokens`` tokens at the predicted step → wall time, GPU-hours, energy, cost,
carbon, and the interruptions a run that long meets.

    steps        = tokens / tokens per step          (the last step rounded up)
    work_s       = steps · step time                 (no interruptions, no checkpoints)
    wall_s       = work_s, or with --checkpoint-s Daly's expected wall time (``ironlaw.models.interruptions``)
    GPU-hours    = gpus · wall_s / 3600              (the devices are held, and paid for, the whole time)
    energy       = gpus · (P_step · (work_s + redone_s) + idle_w · (checkpointing_s + restarting_s))
                   P_step: a training step's board power (``ironlaw.models.train_energy``); work redone after an
                   interruption draws what the step draws, the devices idle while checkpoints are written and
                   the job restarts
    USD          = GPU-hours · price per GPU-hour    (``ironlaw.law.power.price``)
    tonnes CO₂   = energy [kWh] · grid gCO₂/kWh / 10⁶
The board power alone, as everywhere in ironlaw: host CPUs, switches, storage and cooling (PUE) are not counted.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.errors import IronlawError
from ..law import power
from . import interruptions

MAX_TOKENS = 1e18


@dataclass
class RunInputs:
    """What the user asked of the run (the CLI's flags); ``tokens`` None: no whole run, the step's cost only."""
    tokens: float | None = None
    usd_per_device_hour: float | None = None
    gco2_per_kwh: float | None = None
    mtbf_gpu_hours: float | None = None
    checkpoint_s: float | None = None
    restart_s: float | None = None

    @classmethod
    def of_flags(cls, train_tokens: str | None, usd_per_device_hour: float | None = None,
                 gco2_per_kwh: float | None = None, mtbf_gpu_hours: float | None = None,
                 checkpoint_s: float | None = None, restart_s: float | None = None,
                 phase: str | None = "train") -> "RunInputs":
        """The command line's flags, checked (``--train-tokens 15T``: K, M, B, T suffixes); ``phase`` is the
        phase asked for: a run's cost needs ``train``."""
        from ..core.units import count
        tokens = None if train_tokens is None else count(train_tokens, "--train-tokens")
        if tokens is not None and phase != "train":
            raise IronlawError(f"--train-tokens prices a training run: add --phase train"
                               + (f" (got --phase {phase})" if phase else ""))
        return cls(tokens, usd_per_device_hour, gco2_per_kwh, mtbf_gpu_hours, checkpoint_s, restart_s).checked()

    def checked(self) -> "RunInputs":
        """Every flag's range, before any prediction (bad input is an error, never ignored)."""
        if self.tokens is not None and not 1 <= self.tokens <= MAX_TOKENS:
            raise IronlawError(f"--train-tokens must be between 1 and {MAX_TOKENS:.0e} tokens, got {self.tokens:g}")
        power.grid(self.gco2_per_kwh)
        if self.usd_per_device_hour is not None:
            power.price(None, self.usd_per_device_hour)
        interruptions.check_mtbf(self.mtbf_gpu_hours)
        interruptions.check_seconds(self.checkpoint_s, "--checkpoint-s")
        interruptions.check_seconds(self.restart_s, "--restart-s")
        if self.tokens is None:
            for flag, v in (("--mtbf-gpu-hours", self.mtbf_gpu_hours), ("--checkpoint-s", self.checkpoint_s),
                            ("--restart-s", self.restart_s)):
                if v is not None:
                    raise IronlawError(f"{flag} prices the whole training run: add --train-tokens")
        if self.restart_s is not None and self.checkpoint_s is None:
            raise IronlawError("--restart-s needs --checkpoint-s: the work lost to an interruption is the work "
                               "since the last checkpoint")
        return self


@dataclass
class RunCost:
    tokens: float
    tokens_per_step: float
    steps: float
    step_s: float
    gpus: int
    wall_s: float
    gpu_hours: float
    energy_j: float | None           # None: the device states no power
    usd: float | None
    usd_per_gpu_hour: float | None
    price_source: str
    tco2: float | None
    grid_gco2_per_kwh: float
    grid_source: str
    power_w_per_device: float | None
    interruptions: interruptions.Interruptions

    @property
    def mwh(self) -> float | None:
        return None if self.energy_j is None else self.energy_j / 3.6e9

    def to_dict(self) -> dict:
        return {"schema": "ironlaw.train-run/1", "tokens": self.tokens, "tokens_per_step": self.tokens_per_step,
                "steps": self.steps, "step_s": self.step_s, "gpus": self.gpus, "time_s": self.wall_s,
                "wall_s": self.wall_s, "wall_days": self.wall_s / 86400.0, "gpu_hours": self.gpu_hours,
                "energy_j": self.energy_j, "energy_mwh": self.mwh, "usd": self.usd,
                "usd_per_gpu_hour": self.usd_per_gpu_hour, "price_source": self.price_source,
                "tco2": self.tco2, "grid_gco2_per_kwh": self.grid_gco2_per_kwh, "grid_source": self.grid_source,
                "power_w_per_device": self.power_w_per_device,
                "interruptions": self.interruptions.to_dict(),
                "energy_scope": "board power of the devices only: no host CPUs, network, storage or cooling (PUE)"}


def of_run(hw, step_s: float, tokens_per_step: float, gpus: int, power_w_per_device: float | None,
           inputs: RunInputs) -> RunCost:
    """The whole run of ``inputs.tokens`` tokens at ``step_s`` per step of ``tokens_per_step`` on ``gpus``
    (``power_w_per_device`` None: a device that states no power; no energy or carbon)."""
    if inputs.tokens is None:
        raise IronlawError("a training run's cost needs --train-tokens")
    steps = float(math.ceil(inputs.tokens / tokens_per_step))
    work_s = steps * step_s
    it = interruptions.of_run(work_s, gpus, inputs.mtbf_gpu_hours, inputs.checkpoint_s, inputs.restart_s)
    energy_j = None
    if power_w_per_device is not None:
        busy_s = it.work_s + it.redone_s
        energy_j = gpus * (power_w_per_device * busy_s + hw.idle_w * (it.checkpointing_s + it.restarting_s))
    usd_h, usd_src = power.price(hw, inputs.usd_per_device_hour)
    g, g_src = power.grid(inputs.gco2_per_kwh)
    gpu_hours = gpus * it.wall_s / 3600.0
    return RunCost(float(inputs.tokens), float(tokens_per_step), steps, float(step_s), gpus, it.wall_s, gpu_hours,
                   energy_j, None if usd_h is None else usd_h * gpu_hours, usd_h, usd_src,
                   None if energy_j is None else energy_j / power.J_PER_KWH * g / 1e6, g, g_src,
                   None if power_w_per_device is None else float(power_w_per_device), it)


def of_train_step(step, inputs: RunInputs) -> dict:
    """The ``energy`` (one step, ``train_energy.of_step``) and ``run`` (None without ``--train-tokens``) fields of a
    training step's result."""
    from .train_energy import of_step
    e = of_step(step, inputs.usd_per_device_hour, inputs.gco2_per_kwh)
    run = None
    if inputs.tokens is not None:
        run = of_run(step.per_microbatch.hw, step.step_s, step.flops.tokens_per_step, step.plan.gpus,
                     None if e is None else e["power_w_per_device"], inputs).to_dict()
    return {"energy": e, "run": run}


def of_estimate(est, energy: dict | None, inputs: RunInputs) -> dict | None:
    """The ``run`` field of a one-device training estimate (``energy``: ``power.of_estimate``'s); None without
    ``--train-tokens``."""
    if inputs.tokens is None:
        return None
    if est.graph.phase != "train":
        raise IronlawError(f"--train-tokens prices a training run; {est.graph.name} is predicted for "
                           f"{est.graph.phase}: add --phase train")
    tokens = est.graph.meta.get("tokens")
    if tokens is None:
        raise IronlawError(f"--train-tokens: {est.graph.name} does not count tokens per step (not a language model)")
    return of_run(est.hw, float(est.time_s), float(tokens), 1,
                  None if energy is None else energy["power_w_per_device"], inputs).to_dict()


def text(r: dict | None) -> list[str]:
    """``lines`` of a run, none without one."""
    return [] if r is None else lines(r)


def lines(r: dict) -> list[str]:
    """A run's result (``RunCost.to_dict``) in a few lines of text."""
    from ..core.units import fmt, fmt_num
    it = r["interruptions"]
    usd = (f"${r['usd']:,.0f} at ${r['usd_per_gpu_hour']:g} per GPU-hour" if r["usd"] is not None
           else r["price_source"])
    out = [f"training run: {fmt(r['tokens'], '').replace(' ', '')} tokens = {r['steps']:,.0f} "
           f"step{'s' if r['steps'] != 1 else ''} of {r['tokens_per_step']:,.0f} tokens",
           f"  wall {duration(r['wall_s'])} on {r['gpus']:,} GPUs, {r['gpu_hours']:,.0f} GPU-hours",
           f"  cost {usd}"]
    if r["energy_mwh"] is None:
        out.append("  energy: the device states no power (tdp_w and idle_w in its hardware file)")
    else:
        out.append(f"  energy {fmt_num(r['energy_mwh'], 4)} MWh ({r['power_w_per_device']:.0f} W per GPU, board power), "
                   f"{fmt_num(r['tco2'], 4)} t CO2 at {r['grid_gco2_per_kwh']:g} gCO2/kWh")
    out.append(f"  interruptions: {it['expected']:,.1f} expected, one every {duration(it['job_mtbf_s'])} "
               f"({it['mtbf_gpu_hours']:,.0f} GPU-hours per GPU)")
    if it["checkpoint_s"] is None:
        out.append("  --checkpoint-s gives the work they cost and the goodput")
    else:
        out += [f"  a checkpoint every {duration(it['interval_s'])} of work (Daly 2006): checkpoints "
                f"{duration(it['checkpointing_s'])},",
                f"  restarts {duration(it['restarting_s'])}, work redone {duration(it['redone_s'])}; goodput "
                f"{100 * it['goodput']:.1f}%"]
    return out


def duration(s: float) -> str:
    """Seconds as a reader counts a long run: '3.1 h', '49.4 days'."""
    from ..core.units import fmt_time
    for unit, scale in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if s >= 2 * scale:
            return f"{s / scale:,.1f} {unit}"
    return fmt_time(s)
