"""The worst held-out rows of one kernel class as the stored terms price them, and a GEMM table's isolated spikes.

    python benchmarks/kernel_worst.py --data DIR --gpu b200_sxm --framework sglang --op generation_attention
                                      --kernel-class "KV bf16, over 32" [--rows 30]
    python benchmarks/kernel_worst.py --data DIR --gpu b200_sxm --framework vllm --op gemm --kernel-class "gemm fp8"
                                      --spikes

Data: aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0), as benchmarks/kernel_tables.py reads it (``--data``: its
``aiconfigurator_core/systems/data``). For each kernel class of that GPU, framework and op whose name holds
``--kernel-class``, the terms stored for it (the catalog's [calibration] for trtllm, the engine file for vLLM and
SGLang) price the held-out rows ``kernel_tables.py --stored`` scores (``kernelfit.held_out``); the rows furthest off
are printed with their shape, measured and predicted µs, and the law's terms at them (data, compute and fixed
latency, µs): which term binds, and what the worst rows share.

``--spikes`` (a GEMM class): the table's rows whose time is over ``SPIKE_RATIO`` times off both their neighbours in M
at the same N and K, those two within ``SPIKE_AGREE`` of each other (``kernelfit.rows.SPIKE_RATIO``, ``SPIKE_AGREE``):
single timings, where a kernel switch would hold for the M after it; and the held-out score with and without them, so
that a class's p90 that its spikes alone put over the goal reads as such (docs/accuracy.md, "GEMM grids one past the
FP8 kernels' M switches"; the decode classes: "Decode classes and vLLM B300's MLA BMMs still out").
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402

import kernel_tables  # noqa: E402


def priced(hw, table: dict, g) -> tuple:
    """(held-out rows, measured s, predicted s, data s, compute s, latency s) of class ``g`` under ``table``."""
    from ironlaw.law import law
    from ironlaw.machine.calibration import Calibration
    from ironlaw.measure.calibrate import fitcore, kernelfit
    g = kernelfit.collector.timed_as(table, g)
    hw = kernelfit.ops.replayed_hw(g, hw)
    rows = kernelfit.held_out(g)
    prob = fitcore.Problem(hw, kernelfit.observations(g, rows, hw), weighting="per_case")
    est = law.timed(prob.placed, replace(prob.hw, calibration=Calibration.of(table)))
    flat = [np.asarray(x, float).reshape(-1) for x in (est.data_s, est.compute_s, est.latency_s)]
    return (rows, prob.meas, prob.times(table), *flat)


def worst_lines(g, rows, meas, pred, data, comp, lat, n: int) -> list[str]:
    """The ``n`` rows furthest off, one line each: shape, measured and predicted µs, error, the law's terms."""
    from ironlaw.measure.calibrate import kernelfit
    err = pred / meas - 1.0
    cols = [c for c in kernelfit.vocabulary.SHAPE_COLUMNS[g.op] if c in rows.columns] + \
        [c for c in ("kernel_source",) if c in rows.columns]
    out = [f"{g.table.gpu} {g.table.framework} {g.name}: {len(rows)} held-out rows, median "
           f"{100 * np.median(np.abs(err)):.1f}% / p90 {100 * np.percentile(np.abs(err), 90):.1f}%",
           "  " + " ".join(f"{c:>13}" for c in cols) + "   measured  predicted    error  binds   data  compute  latency"]
    for i in np.argsort(-np.abs(err))[:n]:
        r = rows.iloc[i]
        bind = "data" if data[i] >= comp[i] else "compute"
        out.append("  " + " ".join(f"{str(r[c]):>13}" for c in cols) +
                   f" {1e6 * meas[i]:9.1f} {1e6 * pred[i]:10.1f} {100 * err[i]:+7.1f}%  {bind:<7}"
                   f"{1e6 * data[i]:5.1f} {1e6 * comp[i]:8.1f} {1e6 * lat[i]:8.1f}")
    return out


def spikes(rows) -> tuple:
    """(the rows of a GEMM class, all of them, whose time is a spike among their neighbours in M: ``despiked``'s
    rule, over every row, not the fit half only; how many of them are slow)."""
    from ironlaw.measure.calibrate import kernelfit
    s = rows.sort_values(["n", "k", "m"], kind="stable")
    t = s["latency_s"].to_numpy()
    same = (s["n"].to_numpy()[:-2] == s["n"].to_numpy()[2:]) & (s["k"].to_numpy()[:-2] == s["k"].to_numpy()[2:])
    lo, hi = np.minimum(t[:-2], t[2:]), np.maximum(t[:-2], t[2:])
    ratio, agree = kernelfit.rows.SPIKE_RATIO, kernelfit.rows.SPIKE_AGREE
    slow = same & (hi <= agree * lo) & (t[1:-1] > ratio * hi)
    spike = slow | (same & (hi <= agree * lo) & (t[1:-1] < lo / ratio))
    return s.iloc[1:-1][spike], int(slow.sum())


def spike_lines(g, rows, meas, pred) -> list[str]:
    """The class's spike count, and its held-out median / p90 with and without the spike rows."""
    bad, slow = spikes(g.rows)
    keys = set(zip(bad["m"], bad["n"], bad["k"]))
    mark = np.array([(m, n, k) in keys for m, n, k in zip(rows["m"], rows["n"], rows["k"])])
    err = np.abs(pred / meas - 1.0)
    return [f"  isolated spikes: {len(bad)} of {len(g.rows)} rows ({slow} slow, {len(bad) - slow} fast); held out: "
            f"{int(mark.sum())} of {len(rows)}",
            f"  held out, all rows: {100 * np.median(err):.1f}% / {100 * np.percentile(err, 90):.1f}%; without the "
            f"spikes: {100 * np.median(err[~mark]):.1f}% / {100 * np.percentile(err[~mark], 90):.1f}%; rows over 20% "
            f"off: {int((err > 0.2).sum())}, {int((mark & (err > 0.2)).sum())} of them spikes"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="aiconfigurator_core/systems/data of an unpacked aiconfigurator-core 0.12.0 wheel")
    ap.add_argument("--gpu", required=True, choices=tuple(kernel_tables.GPUS), help="the table folder")
    ap.add_argument("--framework", default="trtllm", choices=("trtllm", "vllm", "sglang"))
    ap.add_argument("--op", required=True, choices=("gemm", "context_attention", "generation_attention",
                                                    "context_mla", "generation_mla", "mla_bmm"))
    ap.add_argument("--kernel-class", default="", help="the classes whose name holds this text")
    ap.add_argument("--rows", type=int, default=30, help="worst rows printed per class")
    ap.add_argument("--spikes", action="store_true", help="a GEMM class's isolated spikes and its score without them")
    a = ap.parse_args()
    from ironlaw.machine import engines, hardware
    from ironlaw.measure.calibrate import kernelfit
    data = kernel_tables.data_dir(a.data)
    tables = [replace(t, path=f"{a.gpu}/{t.path}") for t in kernel_tables.readable(data / a.gpu, a.framework,
                                                                                     None, (a.op,))]
    hw = hardware.get(kernel_tables.GPUS[a.gpu])
    table = hw.calibration.table() if a.framework == "trtllm" else engines.load(hw.name, a.framework)
    for g in kernel_tables.chosen(kernelfit.groups(tables), (a.kernel_class,)):
        rows, meas, pred, data_s, comp_s, lat_s = priced(hw, table, g)
        print("\n".join(worst_lines(g, rows, meas, pred, data_s, comp_s, lat_s, a.rows)))
        if a.spikes and g.op == "gemm":
            print("\n".join(spike_lines(g, rows, meas, pred)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
