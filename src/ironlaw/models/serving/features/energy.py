"""Joules, dollars and grams of CO₂ per output token of a serving cycle (the power model: ironlaw.law.power).

A serving cycle (every sequence in flight admitted and finished once) is a set of phases, each an engine
step run ``n`` times per cycle: decode steps, prefills, verify and draft steps. Per device
    E_cycle = idle_w · T_cycle + Σ_phases (P_step − idle_w) · t_step · n      (the steps' time at most T_cycle)
where P_step is the step's board power (``power.drawn``: idle_w + the binding resource's full-load power above
idle × its busy share). With chunked prefill the mixed steps are charged as the
decode and prefill work they carry, each with its own weight reads: an upper bound on the dynamic part.
"""
from __future__ import annotations

from ....law import power


def of_phases(hw, phases, cycle_s: float, tokens: float, devices: int = 1,
              usd_per_device_hour: float | None = None, gco2_per_kwh: float | None = None) -> dict:
    """``phases``: (Estimate, seconds per step, steps per cycle); ``tokens``: output tokens per cycle."""
    power.check_power(hw)
    busy = dynamic_j = 0.0
    for est, t_step, n in phases:
        p, u, _ = power.drawn(hw, power.busy_s(est), t_step)
        busy += float(u) * t_step * n
        dynamic_j += (float(p) - hw.idle_w) * t_step * n
    scale = min(1.0, cycle_s / busy) if busy > 0 else 1.0        # the work's busy time fits in the cycle
    busy, dynamic_j = busy * scale, dynamic_j * scale
    per_device_j = hw.idle_w * cycle_s + dynamic_j
    out = power.per_unit(hw, devices * per_device_j, cycle_s, tokens, devices, usd_per_device_hour, gco2_per_kwh)
    out.update({"schema": "ironlaw.serve-energy/1", "devices": devices, "mean_power_w_per_device": per_device_j / cycle_s,
                "utilization": busy / cycle_s, "utilization_definition": power.UTILIZATION_DEFINITION,
                "idle_w": hw.idle_w, "tdp_w": hw.tdp_w, "idle_source": hw.sources.get("power.idle", ""),
                "tdp_source": hw.sources.get("power", ""), "memory_w": hw.memory_w,
                "memory_source": hw.sources.get("power.memory", "")})
    return out


def cycle_s(base) -> float:
    """Seconds for every sequence in flight to be admitted and finish once (ServeEstimate's cycle)."""
    return base.concurrency * base.output / base.tokens_per_s


def of_serving(base, devices: int = 1, usd_per_device_hour: float | None = None,
               gco2_per_kwh: float | None = None) -> dict:
    """Energy per output token of a plain ServeEstimate: ``output`` decode steps and ``concurrency`` prefills."""
    phases = [(base.decode, base.decode_step_s, base.output), (base.prefill, base.prefill_s, base.concurrency)]
    return of_phases(base.hw, phases, cycle_s(base), base.concurrency * base.output, devices,
                     usd_per_device_hour, gco2_per_kwh)


def of_throughput(est, usd_per_device_hour: float | None = None, gco2_per_kwh: float | None = None) -> dict | None:
    """Energy per output token of an offline max-throughput run (``serving.throughput.ThroughputEstimate``): every
    engine step it ran, each at its own utilization, over the run's time on every GPU of the layout (None when
    the device states no power)."""
    if not power.has_power(est.hw):
        return None
    phases = [(e, float(e.time_s), n) for n, e in est.steps]
    tokens = getattr(est, "output_total", None) or est.requests * est.output     # a --lengths mix: its own outputs
    return of_phases(est.hw, phases, est.time_s, tokens, est.layout.gpus, usd_per_device_hour, gco2_per_kwh)


def with_energy(est, usd_per_device_hour: float | None = None, gco2_per_kwh: float | None = None):
    """A max-throughput estimate with its ``energy`` per output token (``of_throughput``)."""
    from dataclasses import replace
    return replace(est, energy=of_throughput(est, usd_per_device_hour, gco2_per_kwh))


def check(usd_per_device_hour: float | None, gco2_per_kwh: float | None) -> None:
    """The price and grid flags' ranges, before any prediction."""
    power.grid(gco2_per_kwh)
    if usd_per_device_hour is not None:
        power.price(None, usd_per_device_hour)
