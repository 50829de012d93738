"""How fast this machine runs now, against the moment its profile was probed.

    speed_now(probe) -> {"gemm_share": 0.96, "dram_share": 1.12, "gemm": "512x512x512", "copy_bytes": 2.0e8}

Two of the profile's own rows are timed again, as the probe timed them: its fastest fp32 GEMM (hot operands)
and its largest DRAM copy; each share is the rate now over the rate saved (1.0: the same speed). On a shared
VM the two drift apart and by tens of percent within minutes, so a prediction error of that size is the
machine's moment, not the model's. ``ironlaw validate`` measures it before and after the model runs and says so.
"""
from __future__ import annotations

from .timing import Budget

NOTED = 0.10                     # a share this far from 1 is worth a warning next to the prediction error


def speed_now(probe: dict, budget: Budget | None = None) -> dict | None:
    """The shares (see the module doc), or None where the profile holds neither row (a datasheet profile)."""
    from . import gemm, memory
    budget = budget or Budget()
    out: dict = {}
    rows = [r for r in probe.get("gemm", []) if r["dtype"] == "fp32" and r.get("weights") != "cold"]
    if rows:
        best = max(rows, key=lambda r: r["flops_per_s"])
        now = gemm.measure("fp32", best["m"], best["n"], best["k"], budget, layout=best.get("layout", "kn"))
        out["gemm_share"] = now["flops_per_s"] / best["flops_per_s"]
        out["gemm"] = f"{best['m']}x{best['n']}x{best['k']}"
    copies = [r for r in probe.get("memory", []) if r["level"] == "dram"]
    if copies:
        big = max(copies, key=lambda r: r["bytes"])
        now = memory.measure("dram", big["bytes"], budget)
        out["dram_share"] = (now["bytes"] / now["time_s"]) / (big["bytes"] / big["time_s"])
        out["copy_bytes"] = float(big["bytes"])
    return out or None


def line(before: dict | None, after: dict | None) -> str | None:
    """'machine now (before → after the runs): fp32 GEMM 96% → 95%, DRAM copy 119% → 92% of the rate the probe
    saved', None without a measurement."""
    parts = []
    for key, what in (("gemm_share", "fp32 GEMM"), ("dram_share", "DRAM copy")):
        vals = [m[key] for m in (before, after) if m and key in m]
        if vals:
            parts.append(f"{what} " + " → ".join(f"{v:.0%}" for v in vals))
    return ("machine now (before → after the runs): " + ", ".join(parts) + " of the rate the probe saved") if parts else None


def drifted(before: dict | None, after: dict | None) -> bool:
    """Whether any share is more than NOTED away from 1."""
    return any(abs(m[key] - 1.0) > NOTED for m in (before, after) if m
               for key in ("gemm_share", "dram_share") if key in m)
