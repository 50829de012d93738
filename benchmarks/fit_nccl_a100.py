"""Fit the alpha-beta collective model on DGX A100's NCCL curves; report every other group held out.

Data: tests/data/vidur_a100_nccl_median.csv (microsoft/vidur, MIT). Fitted:
  1. the four two-rank curves (all-reduce and send/recv, over an NVLink pair and an InfiniBand pair) each
     as T = α + n/B by robust relative least squares. From them: the launch cost of each family, the
     InfiniBand hop latency (the NVLink hop is the catalog's 2 µs), and η = B / catalog link bandwidth.
  2. the InfiniBand node ceiling (what one node moves over the network in all) on ONE multi-node curve,
     all-reduce over 2 nodes × 4 GPUs, the constants of 1 held fixed: a two-rank curve has one GPU and
     one port per node and cannot show whether a node's ports add up (on vidur's DGX A100 they do not).
Held out: all-reduce on 4 and 8 GPUs of one node and on 2 nodes × 2 and 2 nodes × 8 GPUs, predicted
with the ring/tree formulas of src/ironlaw/machine/network/collectives.py.

    python benchmarks/fit_nccl_a100.py     # prints the constants for network/calibration.py and the errors
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "vidur_a100_nccl_median.csv"
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))
from bench import csv_rows  # noqa: E402


def load() -> dict[tuple[str, int, int], tuple[np.ndarray, np.ndarray]]:
    out: dict = {}
    for r in csv_rows(DATA):
        k = (r["collective"], int(r["num_workers"]), int(r["devices_per_node"]))
        out.setdefault(k, []).append((float(r["size_bytes"]), float(r["median_ms"]) * 1e-3))
    return {k: tuple(np.array(sorted(v)).T) for k, v in out.items()}


def fit_alpha_beta(n: np.ndarray, t: np.ndarray, iters: int = 30) -> tuple[float, float]:
    """T = α + n/B minimising relative error, with reweighting against outliers (the data are noisy)."""
    w = np.ones_like(t)
    for _ in range(iters):
        a_mat = np.stack([1 / t, n / t], 1) * w[:, None]
        (a, b), *_ = np.linalg.lstsq(a_mat, w, rcond=None)
        r = np.abs((a + n * b) / t - 1)
        w = 1 / np.sqrt(np.maximum(r, 0.05))
    return float(a), float(1 / b)


def fit(data) -> dict:
    from ironlaw.machine import hardware
    hw = hardware.get("a100")
    nvl, ib = hw.link("nvlink"), hw.link("infiniband")
    a_sr_in, b_sr_in = fit_alpha_beta(*data[("send_recv", 2, 2)])
    a_sr_out, b_sr_out = fit_alpha_beta(*data[("send_recv", 2, 1)])
    a_ar_in, b_ar_in = fit_alpha_beta(*data[("all_reduce", 2, 2)])
    a_ar_out, b_ar_out = fit_alpha_beta(*data[("all_reduce", 2, 1)])
    h_nvl = nvl.latency_s
    # send/recv: α = launch + h ; two-rank all-reduce (ring = tree): α = launch + 2h
    dh = 0.5 * ((a_sr_out - a_sr_in) + (a_ar_out - a_ar_in) / 2)
    h_ib = h_nvl + dh
    launch_p2p = 0.5 * ((a_sr_in - h_nvl) + (a_sr_out - h_ib))
    launch_coll = 0.5 * ((a_ar_in - 2 * h_nvl) + (a_ar_out - 2 * h_ib))
    return {"launch_collective_s": launch_coll, "launch_p2p_s": launch_p2p, "hop_nvlink_s": h_nvl,
            "hop_infiniband_s": h_ib,
            "eta_collective_nvlink": b_ar_in / nvl.bw_Bps, "eta_collective_infiniband": b_ar_out / ib.bw_Bps,
            "eta_p2p_nvlink": b_sr_in / nvl.bw_Bps, "eta_p2p_infiniband": b_sr_out / ib.bw_Bps}


CEILING_CURVE = ("all_reduce", 8, 4)          # the one multi-node curve the node ceiling is fitted on
GOAL = 0.15                                    # median |relative error| per configuration


def _errors(key, n, t, cal=None) -> np.ndarray:
    """|relative error| of the α-β model with ``cal`` (default: A100_VIDUR as stored, without the catalog's
    measured one-node curves, which ``curves_on_vidur`` scores)."""
    from ironlaw.machine import hardware
    from ironlaw.machine.network import build, collective_time
    from ironlaw.machine.network.calibration import A100_VIDUR
    cal = cal or A100_VIDUR
    coll, w, g = key
    a, b = collective_time("allreduce" if coll == "all_reduce" else "sendrecv", n,
                           build(hardware.get("a100"), w, w // g), cal)
    return np.abs((a + b) / t - 1)


def fit_node_ceiling(data) -> float:
    """The InfiniBand node ceiling (bytes/s) minimising the mean |relative error| of CEILING_CURVE alone."""
    from dataclasses import replace
    from ironlaw.machine.network.calibration import A100_VIDUR
    n, t = data[CEILING_CURVE]
    grid = np.geomspace(1e9, 200e9, 2001)
    loss = [np.mean(_errors(CEILING_CURVE, n, t, replace(A100_VIDUR, node_Bps={"infiniband": c}))) for c in grid]
    return float(grid[int(np.argmin(loss))])


def role(key) -> str:
    if key[1] == 2:
        return "fitted (α, η)"
    return "fitted (node ceiling)" if key == CEILING_CURVE else "held out"


def evaluate(data) -> list[tuple[tuple, str, np.ndarray, np.ndarray]]:
    """(configuration, role, |relative error| per point with the node ceiling, the same with the ports adding
    up (no node ceiling)) with the stored calibration."""
    from dataclasses import replace
    from ironlaw.machine.network.calibration import A100_VIDUR
    before = replace(A100_VIDUR, node_Bps={})
    return [(k, role(k), _errors(k, n, t), _errors(k, n, t, before)) for k, (n, t) in sorted(data.items())]


def curves_on_vidur(data) -> list[tuple[str, int, float, float]]:
    """The catalog's one-node all-reduce curves (fitted on aiconfigurator-core 0.12.0's DGX A100 NCCL 2.27.3
    table, benchmarks/kernel_comm.py) against vidur's independent one-node measurements: (configuration,
    points, median, p90 |relative error|)."""
    from ironlaw.machine import hardware
    from ironlaw.machine.network import build, collective_time
    out = []
    for (coll, w, g), (n, t) in sorted(data.items()):
        if coll == "all_reduce" and w == g:
            a, b = collective_time("allreduce", n, build(hardware.get("a100"), w, 1))
            err = np.abs((a + b) / t - 1)
            out.append((f"all_reduce 1 node(s) × {g}", len(err), float(np.median(err)), float(np.percentile(err, 90))))
    return out


def main() -> int:
    data = load()
    print("fitted on the two-rank curves (the constants of A100_VIDUR in src/ironlaw/machine/network/calibration.py):")
    for k, v in fit(data).items():
        print(f"  {k:28s} {v * 1e6:8.2f} µs" if k.endswith("_s") else f"  {k:28s} {v:8.3f}")
    c = fit_node_ceiling(data)
    print(f"fitted on all-reduce, 2 nodes × 4 GPUs only (α, η above held fixed):\n"
          f"  {'node_infiniband_Bps':28s} {c / 1e9:8.2f} GB/s  (= {c / (0.237 * 25e9):.2f} × the one-port rate)")
    print(f"\nmedian |relative error| per configuration; 'ports add up' = no node ceiling, 'ceiling' = the model, goal ≤ "
          f"{GOAL:.0%}")
    print(f"{'configuration':28s} {'points':>6s} {'ports add up':>12s} {'ceiling':>7s} {'≤64 KB':>7s} {'≥8 MB':>6s} "
          f"{'p90':>5s}  {'goal':4s}  role")
    for ((coll, w, g), rl, err, err0), (n, _) in zip(evaluate(data), (data[k] for k in sorted(data))):
        small, large = err[n <= 65536], err[n >= 8 << 20]
        med = np.median(err)
        print(f"{coll + f' {w // g} node(s) × {g}':28s} {len(err):6d} {100 * np.median(err0):11.1f}% "
              f"{100 * med:6.1f}% {100 * np.median(small):6.1f}% {100 * np.median(large):5.1f}% "
              f"{100 * np.percentile(err, 90):4.0f}%  {'met ' if med <= GOAL else 'MISS'}  {rl}")
    rows = evaluate(data)
    allp = np.concatenate([r[2] for r in rows])
    heldp = np.concatenate([r[2] for r in rows if r[1] == "held out"])
    intra = np.concatenate([r[2] for r in rows if r[1] == "held out" and r[0][1] == r[0][2]])
    multi = np.concatenate([r[2] for r in rows if r[1] == "held out" and r[0][1] > r[0][2]])
    print(f"\nall {len(allp)} points: median |error| {100 * np.median(allp):.1f}% (goal ≤ {GOAL:.0%})")
    print(f"held-out, one node (4, 8 GPUs): median |error| {100 * np.median(intra):.1f}% (goal ≤ {GOAL:.0%})")
    print(f"held-out, two nodes (× 2, × 8 GPUs): median |error| {100 * np.median(multi):.1f}% (goal ≤ {GOAL:.0%})")
    print(f"held-out, all: median |error| {100 * np.median(heldp):.1f}% (goal ≤ {GOAL:.0%})")
    print("\nthe catalog's one-node curves (aiconfigurator-core 0.12.0, DGX A100, NCCL 2.27.3; "
          "benchmarks/kernel_comm.py), which time one-node groups in the law, on vidur's one-node measurements:")
    for name, k, med, p90 in curves_on_vidur(data):
        print(f"{name:28s} {k:6d} points  median {100 * med:5.1f}%  p90 {100 * p90:4.0f}%")
    print("the two-node misses are in the data, not a topology the model lacks: at 2 × 2 GPUs most sizes run at "
          "the one-port rate (≈ 6 GB/s bus bandwidth, 10.5 in the 8–16 MB band), at 2 × 8 GPUs the curve "
          "switches between ≈ 7.5 and ≈ 15–17.5 GB/s from one size band to the next; one bandwidth per "
          "configuration cannot follow either")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
