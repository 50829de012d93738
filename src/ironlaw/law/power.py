"""Power, energy, cost and carbon of what an Estimate describes.

Per device, over one step of ``T`` seconds:
    u_r = busy seconds of resource r / T                 (0 … 1)
        the resources that draw power while they work: the matrix/vector units (``compute_s``), each
        memory tier (its ``data_tier_s``) and the links (``network_s``). Fixed per-op latency is not
        work: a latency-bound step has small u.
    P = idle_w + max over r of (P_r − idle_w) · u_r      watts ([power] of the hardware file)
        P_r: the board power with r working flat out — ``memory_w`` for the device memory tier and
        ``compute_w`` for the compute units where the hardware file states them (an HBM-saturating copy draws
        less than a tensor-core-bound GEMM: 469 W against 692 W on an H200, benchmarks/gpu_power_kernels.py;
        B200's both fitted on NVIDIA's measured kernel power, benchmarks/kernel_power.py), else ``tdp_w``. The
        binding resource is the one that draws the most; ``u`` is its busy share.
    E = P · T                                            joules
Over ``devices`` devices and ``units`` output tokens (or samples) the step took:
    joules_per_unit       = devices · E / units
    usd_per_million       = devices · price_per_device_hour · T / 3600 / units · 10⁶
    gco2_per_million      = devices · E / 3.6e6 [kWh] · grid gCO₂/kWh / units · 10⁶
The board power alone: host CPUs, network switches, cooling (PUE) are not counted.
"""
from __future__ import annotations

import numpy as np

from ..core.errors import IronlawError

J_PER_KWH = 3.6e6
GRID_GCO2_PER_KWH = 481.0
GRID_SOURCE = ("Ember Global Electricity Review 2024: world average carbon intensity of electricity generation "
               "481 gCO2/kWh in 2023 (as charted by Statista, 'Electricity generation emission intensity … 2023')")
# effective accelerator hourly rate of an AWS EC2 Capacity Block, US East (aws.amazon.com/ec2/capacityblocks/pricing;
# the rates the page listed for blocks from 2025-01-01): a reserved block, below the on-demand rate
_CB = "vendor: AWS EC2 Capacity Blocks for ML pricing page, US East, effective accelerator hourly rate of "
PRICES_USD_PER_DEVICE_HOUR = {
    "h100": (4.916, _CB + "p5.48xlarge (8 x H100)"),
    "h200": (5.408, _CB + "p5e.48xlarge (8 x H200)"),
    "a100-40gb": (1.844, _CB + "p4d.24xlarge (8 x A100 40 GB)"),
}
UTILIZATION_DEFINITION = ("u = busy seconds of the binding resource (compute units, a memory tier or the links, "
                          "whichever draws the most power above idle: its full-load power above idle × its busy "
                          "share) / the step's time")


def has_power(hw) -> bool:
    return hw.tdp_w is not None and hw.idle_w is not None


def check_power(hw) -> None:
    if not has_power(hw):
        missing = "tdp_w" if hw.tdp_w is None else "idle_w"
        raise IronlawError(f"{hw.name} states no [power] {missing}; energy needs tdp_w and idle_w in its hardware file")


def busy_s(est) -> dict[str, np.ndarray]:
    """Seconds each power-drawing resource works in the estimate (arrays over configurations)."""
    c = est.cols.count
    out = {"compute": (est.compute_s * c).sum(axis=0), "network": (est.network_s * c).sum(axis=0)}
    for i, t in enumerate(est.hw.memory):
        out[f"bandwidth:{t.name}"] = (est.data_tier_s[i] * c).sum(axis=0)
    return out


def utilization(est, time_s=None) -> tuple[np.ndarray, np.ndarray]:
    """(u, binding resource name) per configuration (``drawn``); ``time_s`` defaults to the estimate's own time."""
    check_power(est.hw)
    _, u, binding = drawn(est.hw, busy_s(est), est.total_s if time_s is None else time_s)
    return u, binding


def of(est, time_s=None) -> np.ndarray:
    """Board power of one device per configuration of ``est`` (``drawn``)."""
    check_power(est.hw)
    return drawn(est.hw, busy_s(est), est.total_s if time_s is None else time_s)[0]


def dynamic_w(hw, resource: str) -> float:
    """Board power above idle of one device with ``resource`` (a ``busy_s`` key) working flat out: the device
    memory tier's ``memory_w`` and the compute units' ``compute_w`` where the hardware file states them, else
    ``tdp_w``."""
    check_power(hw)
    if hw.memory_w is not None and resource == f"bandwidth:{hw.memory[hw.device_tier].name}":
        return hw.memory_w - hw.idle_w
    if hw.compute_w is not None and resource == "compute":
        return hw.compute_w - hw.idle_w
    return hw.tdp_w - hw.idle_w


def full_load_source(hw, resource: str) -> str:
    """Where ``dynamic_w``'s full-load power of ``resource`` comes from (the hardware file's source text)."""
    if hw.memory_w is not None and resource == f"bandwidth:{hw.memory[hw.device_tier].name}":
        return hw.sources.get("power.memory", "")
    if hw.compute_w is not None and resource == "compute":
        return hw.sources.get("power.compute", "")
    return hw.sources.get("power", "")


def drawn(hw, busy: dict, time_s) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(board power W, u, binding resource) per configuration of one device whose resources work ``busy``
    seconds (``busy_s``) in ``time_s``: idle_w + the largest of dynamic_w(r) · u_r."""
    t = np.asarray(time_s, dtype=float)
    names = np.array(list(busy), dtype=object)
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.stack([np.where((t > 0) & np.isfinite(t), np.broadcast_to(v, t.shape) / t, 0.0) for v in busy.values()])
    u = np.clip(u, 0.0, 1.0)
    w = u * np.array([dynamic_w(hw, r) for r in busy]).reshape((-1,) + (1,) * t.ndim)
    idx = np.argmax(w, axis=0)
    return hw.idle_w + np.max(w, axis=0), np.take_along_axis(u, idx[None], axis=0)[0], names[idx]


def power_w(hw, u, resource: str = "compute"):
    """Board power of one device with ``resource`` busy a share ``u`` of the time."""
    return hw.idle_w + dynamic_w(hw, resource) * np.asarray(u, dtype=float)


def _number(x) -> bool:
    """A real number (not a bool, not text): what a price or a grid intensity must be."""
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _given(x) -> str:
    """A refused value as the caller gave it: a text quoted (the API's "2" is not the number 2), else as it prints."""
    return repr(x) if isinstance(x, str) else str(x)


def price(hw, usd_per_device_hour: float | None) -> tuple[float | None, str]:
    """The price per device-hour to use and where it comes from (None: no default for this device)."""
    if usd_per_device_hour is not None:
        if not _number(usd_per_device_hour) or not np.isfinite(usd_per_device_hour) or usd_per_device_hour < 0:
            raise IronlawError(f"--price-per-gpu-hour must be a non-negative number of USD, got "
                               f"{_given(usd_per_device_hour)}")
        return float(usd_per_device_hour) + 0.0, "given: --price-per-gpu-hour"   # + 0.0: -0 is 0
    if hw.name in PRICES_USD_PER_DEVICE_HOUR:
        return PRICES_USD_PER_DEVICE_HOUR[hw.name]
    return None, f"no default price for {hw.name}; give --price-per-gpu-hour"


def grid(gco2_per_kwh: float | None) -> tuple[float, str]:
    if gco2_per_kwh is None:
        return GRID_GCO2_PER_KWH, GRID_SOURCE
    if not _number(gco2_per_kwh) or not np.isfinite(gco2_per_kwh) or gco2_per_kwh < 0 or gco2_per_kwh > 5000:
        raise IronlawError(f"--grid-gco2-per-kwh must be between 0 and 5000 gCO2/kWh, got {_given(gco2_per_kwh)}")
    return float(gco2_per_kwh) + 0.0, "given: --grid-gco2-per-kwh"                # + 0.0: -0 is 0


def devices_of(graph) -> int:
    """The devices one step of ``graph`` runs on, each doing the work the graph describes: the shards of
    tensor-parallel inference (``tp``), the ranks of a collective (``gpus``), else one."""
    return int(graph.meta.get("tp") or graph.meta.get("gpus") or 1)


def step(est, devices: int = 1, time_s=None) -> dict:
    """Power and energy of one step of ``est`` on ``devices`` devices (single configuration)."""
    t = float(est.total_s if time_s is None else time_s)
    check_power(est.hw)
    p, u, binding = drawn(est.hw, busy_s(est), t)
    p, u, binding = float(p), float(u), str(binding)
    return {"utilization": u, "binding": binding, "power_w_per_device": p, "devices": devices,
            "binding_dynamic_w": dynamic_w(est.hw, str(binding)),
            "binding_source": full_load_source(est.hw, str(binding)),
            "time_s": t, "joules": p * t * devices, "idle_w": est.hw.idle_w, "tdp_w": est.hw.tdp_w,
            "utilization_definition": UTILIZATION_DEFINITION,
            "idle_source": est.hw.sources.get("power.idle", ""), "tdp_source": est.hw.sources.get("power", ""),
            "memory_w": est.hw.memory_w, "memory_source": est.hw.sources.get("power.memory", ""),
            "compute_w": est.hw.compute_w, "compute_source": est.hw.sources.get("power.compute", "")}


def per_unit(hw, joules, seconds, units, devices: int = 1, usd_per_device_hour: float | None = None,
             gco2_per_kwh: float | None = None, unit: str = "output_token") -> dict:
    """Energy, cost and carbon per ``unit`` (output token, sample) of work that took ``seconds`` on ``devices``.
    ``joules`` is the energy of all devices together over those seconds."""
    usd_h, usd_src = price(hw, usd_per_device_hour)
    g, g_src = grid(gco2_per_kwh)
    j = joules / units
    usd = None if usd_h is None else devices * usd_h * seconds / 3600.0 / units * 1e6
    plural = unit + "s"
    return {f"joules_per_{unit}": j, f"usd_per_million_{plural}": usd,
            f"gco2_per_million_{plural}": j / J_PER_KWH * g * 1e6,
            "usd_per_gpu_hour": usd_h, "price_source": usd_src, "grid_gco2_per_kwh": g, "grid_source": g_src}


def of_estimate(est, usd_per_device_hour: float | None = None, gco2_per_kwh: float | None = None,
                devices: int = 1) -> dict | None:
    """One step of ``est`` (one device's share of the work) on ``devices`` devices that each run it (tensor-parallel
    shards, the ranks of a collective): power, energy and, per token (or sample) the step processes, joules, USD
    and gCO₂ of them all (None when the device states no power)."""
    if not has_power(est.hw):
        return None
    g = est.graph
    d = step(est, devices)
    tokens = g.meta.get("tokens")
    units, unit = (float(tokens), "token") if tokens is not None else (float(g.meta.get("batch", 1)), "sample")
    d.update(per_unit(est.hw, d["joules"], d["time_s"], units, devices, usd_per_device_hour, gco2_per_kwh, unit))
    d["schema"], d["units_per_step"] = "ironlaw.energy/1", units
    return d


def _kind(source: str) -> str:
    """' (measured)', ' (datasheet)', …: the kind of number a full-load power is, from its source's prefix."""
    kind = source.split(":", 1)[0].strip() if ":" in source else ""
    return f" ({kind})" if kind else ""


def line(d: dict | None, hw_name: str) -> str:
    """One sentence for text reports."""
    from ..core.units import fmt_num
    if d is None:
        return f"energy: {hw_name} states no power (tdp_w and idle_w in its hardware file); no energy, cost or carbon"
    unit = "token" if "joules_per_token" in d else "sample"
    usd = d[f"usd_per_million_{unit}s"]
    each = f" each on {d['devices']:,} devices" if d.get("devices", 1) > 1 else ""
    return (f"energy per step: {fmt_num(d['joules'])} J at {d['power_w_per_device']:.0f} W{each} (idle {d['idle_w']:g} W + "
            f"{d.get('binding_dynamic_w', d['tdp_w'] - d['idle_w']):g} W{_kind(d.get('binding_source', ''))} "
            f"× utilization {d['utilization']:.2f} of "
            f"{d['binding']}) = "
            f"{fmt_num(d[f'joules_per_{unit}'])} J per {unit}"
            + (f", ${fmt_num(usd)} per million {unit}s" if usd is not None else "")
            + f", {fmt_num(d[f'gco2_per_million_{unit}s'])} gCO2 per million at {d['grid_gco2_per_kwh']:g} gCO2/kWh")
