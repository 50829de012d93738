"""Does the MoE layer fitted on balanced routing time the same kernel under skewed routing? The catalog's stored
MoE classes scored on the tables' power-law rows.

    python benchmarks/kernel_moe_routing.py --data DIR [--routing power_law_1.2] [--all-tp]

Data: the moe_perf tables of aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0;
systems/data/<system>/moe/trtllm/1.3.0rc20/moe_perf.parquet): TensorRT-LLM 1.3.0rc20's CUTLASS fused MoE timed on
one GPU per row, each layer shape at three routings — ``balanced`` (what the catalog's ``moe_grouped_gemm.<dtype>``
/ ``moe_rows.<dtype>`` were fitted on, benchmarks/kernel_moe.py), ``power_law_1.01`` and ``power_law_1.2``
(aiconfigurator's serving default). The stored classes price each row with the routed rows and the local experts
the collector's routing puts on the timed rank (``core.routing``: exact for balanced, the expectation over draws for
power law); nothing is fitted here. Rows: MoE TP 1 (the regime the serving engine runs: attention DP with the
experts split by EP); ``--all-tp`` every row. Printed per GPU and dtype: median |error|, p90, signed median, for
the balanced rows (the fit's own table) and the routing's. Goal: the routing's rows within the kernel-table goal
(median ≤ 8%, p90 ≤ 20%) wherever the balanced rows are — then the routing, not a new fit, is what serving needs.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))
import kernel_moe as km  # noqa: E402

SYSTEMS = {"h100_sxm": "h100", "h200_sxm": "h200", "b200_sxm": "b200", "gb200": "gb200"}


def scored(gpu: str, dtype: str, rows: dict, routing: str) -> np.ndarray:
    """Signed relative errors of the stored classes of ``gpu`` on ``rows`` routed as ``routing``."""
    from ironlaw.machine import hardware
    kern = hardware.get(gpu).calibration.kernel
    x, t, _ = km.layer_terms(gpu, dtype, rows, routing)
    return km.stored_predict(kern, dtype, x) / t - 1


def groups(data: Path, all_tp: bool) -> list[tuple]:
    """[(gpu, ironlaw dtype, {distribution: rows})] of the CUTLASS rows per system and dtype."""
    from ironlaw.measure.calibrate import kerneltable
    out = []
    for system, gpu in SYSTEMS.items():
        folder = data / system / "moe" / "trtllm" / km.VERSION
        if not folder.exists():
            continue
        for t in kerneltable.read(folder, ops=("moe",)):
            r = t.rows[(t.rows.kernel_source == km.KERNEL) & ((t.rows.moe_tp_size == 1) | all_tp)]
            for dt, law_dt in km.DTYPES.items():
                d = r[r.moe_dtype == dt]
                if len(d):
                    out.append((gpu, law_dt, {name: {c: g[c].to_numpy() for c in g.columns}
                                              for name, g in d.groupby("distribution")}))
    return out


def line(e: np.ndarray) -> str:
    a = np.abs(e)
    return f"{100 * np.median(a):6.1f}% {100 * np.quantile(a, 0.9):6.1f}% {100 * np.median(e):+7.1f}%"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="aiconfigurator_core/systems/data of aiconfigurator-core 0.12.0")
    ap.add_argument("--routing", default="power_law_1.2", help="the tables' distribution to score (power_law_<α>)")
    ap.add_argument("--all-tp", action="store_true", help="every MoE TP size, not only MoE TP 1")
    a = ap.parse_args()
    print(f"stored MoE classes (fitted on balanced rows) on {'all' if a.all_tp else 'MoE TP 1'} rows of TensorRT-LLM "
          f"{km.VERSION} CUTLASS fused MoE ({km.PACKAGE})")
    print(f"{'GPU':6s} {'dtype':5s} {'rows':>6s} | balanced: median    p90  signed | {a.routing}: median    p90  signed"
          "  goal")
    for gpu, dt, by in groups(Path(a.data), a.all_tp):
        from ironlaw.machine import hardware
        if "balanced" not in by or a.routing not in by or \
                f"moe_grouped_gemm.{dt}" not in hardware.get(gpu).calibration.kernel:
            continue
        eb, er = scored(gpu, dt, by["balanced"], "balanced"), scored(gpu, dt, by[a.routing], a.routing)
        ok = np.median(np.abs(er)) <= km.GOAL_MEDIAN and np.quantile(np.abs(er), 0.9) <= km.GOAL_P90
        print(f"{gpu:6s} {dt:5s} {len(er):6d} |        {line(eb)} |        {line(er)}  {'met' if ok else 'MISS'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
