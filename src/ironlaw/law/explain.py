"""Name the binding resource and say in one sentence why."""
from __future__ import annotations

import numpy as np

from ..core.units import fmt, fmt_size, fmt_time


def labels(est) -> np.ndarray:
    """Bottleneck label per configuration ('compute', 'bandwidth:hbm3', 'latency', 'capacity:host-dram' …)."""
    names = np.array([r if t is None else f"{r}:{t}" for r, t in est.resources], dtype=object)
    lab = names[est.bottleneck_idx]
    spill = est.capacity_bound
    if np.any(spill):
        tiers = np.array([t.name for t in est.hw.memory] + ["nowhere"], dtype=object)
        lab = np.where(spill, "capacity:" + tiers[est.placement.spill_tier], lab)
    return lab


def rate_Bps(est, tier: int, moved: float) -> float:
    """The rate the ops move ``moved`` bytes from memory tier ``tier`` at: those bytes over their data time there
    (each op at its own η, its extra weight bytes included); the tier's bandwidth where they take no time."""
    data_s = float((est.data_tier_s[tier] * est.cols.count).sum())
    return moved / data_s if data_s > 0 else est.hw.memory[tier].bw_Bps


def moved_at(est, tier: int, moved: float) -> str:
    """'its 82.4 GB take 37.3 ms at 2.21 TB/s, 46% of its 4.8 TB/s': the bytes from a tier, their whole data time
    (overlapped or not) and the rate the ops reach, against the tier's bandwidth (a line that quotes the bandwidth
    alone would contradict the time of ops that reach a fraction of it)."""
    bw = est.hw.memory[tier].bw_Bps
    rate = rate_Bps(est, tier, moved)
    return (f"its {fmt(moved, 'B')} take {fmt_time(moved / rate)} at {fmt(rate, 'B/s')}, {100.0 * rate / bw:.0f}% "
            f"of its {fmt(bw, 'B/s')}")


def computed_at(est, flops: float, peak_flops: float) -> str:
    """'137 GFLOP take 161 µs at 856 TFLOP/s, 86% of its 989 TFLOP/s': the work, its whole compute time and the
    rate the ops reach (η and the vector ops' rate within), against the peak (a line that quotes the peak alone
    says a time, FLOPs over peak, shorter than the compute term it explains)."""
    compute_s = float(est.term("compute_s"))
    if compute_s <= 0 or flops <= 0:
        return f"{fmt(flops, 'FLOP')} at its {fmt(peak_flops, 'FLOP/s')}"
    rate = flops / compute_s
    return (f"{fmt(flops, 'FLOP')} take {fmt_time(compute_s)} at {fmt(rate, 'FLOP/s')}, "
            f"{100.0 * rate / peak_flops:.0f}% of its {fmt(peak_flops, 'FLOP/s')}")


def spilled(est) -> list:
    """(tier, bytes) of each tier beyond the device that holds spilled bytes, fastest first."""
    hw = est.hw
    held = [(hw.memory[i], float(sum(np.sum(v[i]) for v in est.placement.bytes.values())))
            for i in range(hw.device_tier + 1, len(hw.memory))]
    return [(t, b) for t, b in held if b > 0]


def why(est) -> dict:
    hw, total = est.hw, float(est.total_s)
    shares = est.workload_shares_s
    res, tier = est.resources[int(est.bottleneck_idx)]
    sum_s = float(shares.sum())
    share_s = float(shares[int(est.bottleneck_idx)])               # the binding resource's part of the path
    pct = 100.0 * share_s / sum_s if sum_s > 0 else 0.0
    dev = hw.memory[hw.device_tier]

    if bool(est.capacity_bound):
        fp = est.footprint()
        if not fp["fits"]:
            return {"resource": "capacity", "tier": None,
                    "why": f"the footprint ({fmt_size(fp['total_bytes'])}) does not fit in all memory tiers of {hw.name} together"}
        spill_t = hw.memory[int(est.placement.spill_tier)]
        held = spilled(est)
        moved = {k: float(v[hw.device_tier + 1:].sum()) for k, v in est.placement.bytes.items()
                 if float(v[hw.device_tier + 1:].sum()) > 0}
        what = ", ".join(k.replace("_", " ") for k in moved)
        beyond = [i for i in range(hw.device_tier + 1, len(hw.memory))]
        t_spill = float(sum((est.data_tier_s[i] * est.cols.count).sum() for i in beyond))
        return {"resource": "capacity", "tier": spill_t.name,
                "why": f"{fmt_size(fp['total_bytes'])} footprint exceeds {dev.name} ({fmt_size(dev.capacity_bytes)}): "
                       f"{fmt_size(float(est.placement.spilled_bytes))} of {what} spill"
                       + (f" to {spill_t.name} ({fmt(spill_t.bw_Bps, 'B/s')}), where their traffic takes "
                          if len(held) == 1 else
                          ": " + ", ".join(f"{fmt_size(b)} to {t.name} ({fmt(t.bw_Bps, 'B/s')})" for t, b in held)
                          + "; their traffic takes ")
                       + f"{fmt_time(t_spill)} ({100 * t_spill / total:.0f}% of the time)"}
    if res == "compute":
        flops = float(est.graph.flops)
        dt = est.graph.meta.get("precision", est.graph.dtype)        # FP8 training: the GEMMs' dtype
        mixed = f" for its GEMMs, {est.graph.dtype} elsewhere" if dt != est.graph.dtype else ""
        return {"resource": "compute", "tier": None,
                "why": f"compute owns {pct:.0f}% of the critical path ({fmt_time(share_s)}): "
                       f"{computed_at(est, flops, hw.peak_flops.get(dt, hw.vector_flops))} {dt} peak{mixed}; "
                       f"moving the data would take {fmt_time(float(est.term('data_s')))}"}
    if res == "bandwidth":
        t = hw.tier(tier)
        i = [m.name for m in hw.memory].index(tier)
        moved = float((est.traffic_bytes[i] * est.cols.count).sum())
        compute_s = float(est.term('compute_s'))
        on_path_s = float(est.workload_shares_s[0].reshape(-1)[0]) if np.ndim(est.workload_shares_s[0]) else \
            float(est.workload_shares_s[0])
        tail = (f"compute takes {fmt_time(compute_s)}, {fmt_time(on_path_s)} of it not overlapped with the data "
                f"movement (the kernels load, then compute)" if on_path_s > 0.01 * compute_s > 0 else
                f"compute would take only {fmt_time(compute_s)}")
        return {"resource": "bandwidth", "tier": tier,
                "why": f"moving data from {tier} owns {pct:.0f}% of the critical path ({fmt_time(share_s)}): "
                       f"{moved_at(est, i, moved)}; {tail}"}
    if res == "latency":
        return {"resource": "latency", "tier": None,
                "why": f"fixed per-op costs own {pct:.0f}% of the time: {launches(est)}, while the "
                       f"ops' own work (compute {fmt_time(float(est.term('compute_s')))}, "
                       f"data {fmt_time(float(est.term('data_s')))}) is too small to saturate the device"}
    return {"resource": res, "tier": tier,
            "why": f"{res} owns {pct:.0f}% of the critical path ({fmt_time(float(est.term('network_s')))})"}


def launches(est) -> str:
    """The latency term the estimate carries, each op's own L_lat (a calibrated launch, a kernel class's fixed
    cost): 'N ops × t launch/dispatch', or the sum over the ops where their costs differ."""
    n = int(est.cols.count.sum())
    lat = np.asarray(est.latency_s, dtype=float).reshape(len(est.cols.count), -1)[:, 0]
    total = float(est.term("latency_s"))
    if n and np.ptp(lat) <= 1e-3 * max(float(lat.max()), 1e-30):
        return f"{n:,} ops × {fmt_time(float(lat[0]))} launch/dispatch"
    return f"{fmt_time(total)} of launch/dispatch over {n:,} ops ({fmt_time(total / max(n, 1))} each on average)"


def brief(est) -> str:
    """The binding resource in a few words and one number, for a line of at most ~60 characters."""
    hw, total = est.hw, float(est.total_s)
    shares = est.workload_shares_s
    i = int(est.bottleneck_idx)
    res, tier = est.resources[i]
    sum_s = float(shares.sum())
    pct = 100.0 * float(shares[i]) / sum_s if sum_s > 0 else 0.0
    if bool(est.capacity_bound):
        fp = est.footprint()
        if not fp["fits"]:
            return f"{fmt_size(fp['total_bytes'])} does not fit in {hw.name}'s memory"
        beyond = range(hw.device_tier + 1, len(hw.memory))
        t_spill = float(sum((est.data_tier_s[k] * est.cols.count).sum() for k in beyond))
        held = spilled(est)
        to = " and ".join(t.name for t, _ in held) + (f" ({fmt(held[0][0].bw_Bps, 'B/s')})" if len(held) == 1 else "")
        return f"{fmt_size(float(est.placement.spilled_bytes))} spill to {to}: {100 * t_spill / total:.0f}% of the time"
    if res == "compute":
        peak = hw.peak_flops.get(est.graph.dtype, hw.vector_flops)
        return f"{fmt(float(est.graph.flops), 'FLOP')} at {fmt(peak, 'FLOP/s')}: {pct:.0f}% of the critical path"
    if res == "bandwidth":
        k = [m.name for m in hw.memory].index(tier)
        moved = float((est.traffic_bytes[k] * est.cols.count).sum())
        return f"{fmt(moved, 'B')} from {tier} at {fmt(rate_Bps(est, k, moved), 'B/s')}: {pct:.0f}% of the critical path"
    if res == "latency":
        n = int(est.cols.count.sum())
        return f"{n} ops × {fmt_time(hw.op_latency_s)} launch: {pct:.0f}% of the time"
    return f"{res} owns {pct:.0f}% of the critical path ({fmt_time(float(est.term('network_s')))})"
