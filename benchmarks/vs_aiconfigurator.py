"""ironlaw and NVIDIA aiconfigurator 0.12, side by side on the same published TensorRT-LLM cells.

    python benchmarks/vs_aiconfigurator.py [--gpu h200 b200 gb200 h100] [--cells] [--markdown] [--release cell]

Ground truth: TensorRT-LLM's perf overview (NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md,
Apache-2.0), total output tokens/s of ``trtllm-bench throughput``: tests/data/trtllm_perf_overview_h100.csv (FP8),
trtllm_perf_overview_h200.csv (FP8), trtllm_perf_overview_blackwell.csv (B200 and GB200, NVFP4).
aiconfigurator: benchmarks/data/aiconfigurator_0.12.csv, written by benchmarks/aiconfigurator_run.py (aiconfigurator
0.12.0 from PyPI, run offline; its top agg configuration at the published GPU count; the file keeps each run's wall
seconds). ironlaw: ``trtllm_h100.predict`` on the cell's GPU, as benchmarks/trtllm_h100.py, trtllm_h200.py and
trtllm_blackwell.py run it (the catalog's kernel terms; the serving constants fitted on the H100 cells only: H100 rows are ironlaw's own fit,
every other GPU is held out), timed here per prediction (wall seconds, warm process).
Only cells both predicted are compared (a cell aiconfigurator could not run is counted, not scored).
Goal per group: ironlaw's median |error| no worse than aiconfigurator's, at ≥ 30× its speed (median seconds per
prediction).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import trtllm_h100 as h100  # noqa: E402
from bench import csv_rows  # noqa: E402

TABLES = {"h100": "h100", "h200": "h200", "b200": "blackwell", "gb200": "blackwell"}
GOAL_SPEEDUP = 30.0
GROUPS = (("H100 (fitted)", ("h100",)), ("H200", ("h200",)), ("B200", ("b200",)), ("GB200", ("gb200",)),
          ("Blackwell", ("b200", "gb200")), ("held out", ("h200", "b200", "gb200")))


def published(gpus: set[str]) -> dict[tuple, dict]:
    """(model, gpu, tp, isl, osl) -> the published cell, for the GPUs asked."""
    out = {}
    for table in dict.fromkeys(TABLES[g] for g in gpus):
        for c in h100.cells(h100.ROOT / f"tests/data/trtllm_perf_overview_{table}.csv"):
            if c.get("gpu", "h100") in gpus:
                c = {**c, "gpu": c.get("gpu", "h100")}
                out[(c["model"], c["gpu"], c["tp"], c["isl"], c["osl"])] = c
    return out


def paired(gpus: set[str]) -> tuple[list[dict], list[dict]]:
    """The cells both tools predicted (with both errors and seconds), and the cells aiconfigurator could not run."""
    pub = published(gpus)
    rows, failed = [], []
    for a in csv_rows(h100.AIC):
        key = (a["model"], a["gpu"], int(a["tp"]), int(a["isl"]), int(a["osl"]))
        if key not in pub:
            continue
        if not a["predicted_tokens_per_s"]:
            failed.append({**pub[key], "reason": a["layout"]})
            continue
        c = {**pub[key], "spec": h100.spec_for(key[0])}
        t0 = time.perf_counter()
        est = h100.predict(c, c["gpu"])
        wall = time.perf_counter() - t0
        aic = float(a["predicted_tokens_per_s"])
        rows.append({**c, "ironlaw": est.output_tokens_per_s, "aic": aic, "ironlaw_s": wall,
                     "aic_s": float(a["wall_s"]), "moe": c["model"] in h100.MOE,
                     "il_err": 100.0 * (est.output_tokens_per_s / c["published"] - 1.0),
                     "aic_err": 100.0 * (aic / c["published"] - 1.0)})
    return rows, failed


def group_row(name: str, rs: list[dict]) -> tuple:
    mi, pi, _ = h100.stats([r["il_err"] for r in rs])
    ma, pa, _ = h100.stats([r["aic_err"] for r in rs])
    si, sa = statistics.median(r["ironlaw_s"] for r in rs), statistics.median(r["aic_s"] for r in rs)
    ok = "yes" if mi <= ma and sa / si >= GOAL_SPEEDUP else "no"
    return (name, len(rs), f"{mi:.1f}%", f"{pi:.1f}%", f"{ma:.1f}%", f"{pa:.1f}%", f"{si:.3f}", f"{sa:.1f}",
            f"{sa / si:.0f}×", ok)


def show(row: tuple, markdown: bool) -> str:
    return "| " + " | ".join(str(c) for c in row) + " |" if markdown else h100.table_row(row, WIDTHS)


WIDTHS = (24, 5, 8, 8, 8, 8, 9, 7, 7, 5)
HEAD = ("group", "cells", "il med", "il p90", "aic med", "aic p90", "il s/pred", "aic s", "speed", "goal")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", nargs="*", choices=sorted(TABLES), default=sorted(TABLES))
    ap.add_argument("--cells", action="store_true", help="print every cell too")
    ap.add_argument("--markdown", action="store_true", help="the summary as a Markdown table (docs/accuracy.md)")
    h100.release_arg(ap)
    args = ap.parse_args()
    h100.use_release(args.release, args.release_classes, args.routing)
    h100.constants_arg(args.constants)
    rows, failed = paired(set(args.gpu))
    if not rows:
        print(f"no cell of {args.gpu} in {h100.AIC.relative_to(h100.ROOT)}: run benchmarks/aiconfigurator_run.py")
        return 1
    if args.cells:
        w = (16, 6, 3, 10, 10, 10, 8, 10, 8)
        print(h100.table_row(("model", "gpu", "tp", "ISL/OSL", "published", "ironlaw", "error", "aic", "error"), w))
        for r in rows:
            print(h100.table_row((r["model"], r["gpu"], r["tp"], f"{r['isl']}/{r['osl']}", f"{r['published']:,.0f}",
                              f"{r['ironlaw']:,.0f}", f"{r['il_err']:+.1f}%", f"{r['aic']:,.0f}",
                              f"{r['aic_err']:+.1f}%"), w))
        print()
    print(f"ironlaw vs aiconfigurator 0.12.0 on the same published cells (|error| vs TensorRT-LLM's perf overview; "
          f"goal: ironlaw median ≤ aiconfigurator's at ≥ {GOAL_SPEEDUP:.0f}× its speed)")
    md = args.markdown
    print(show(HEAD, md) + ("\n|" + "---|" * len(HEAD) if md else ""))
    for name, gpus in GROUPS:
        rs = [r for r in rows if r["gpu"] in gpus]
        kinds = sorted({r["moe"] for r in rs})
        if len(kinds) > 1:
            print(show(group_row(name, rs), md))
        for moe in kinds:                          # dense, then MoE
            print(show(group_row(f"{name} {'MoE' if moe else 'dense'}", [r for r in rs if r["moe"] == moe]), md))
    print(show(group_row("all", rows), md))
    if failed:
        print(f"\naiconfigurator could not predict {len(failed)} cell(s), not scored: " + "; ".join(
            sorted({f"{f['model']} {f['gpu']} ({f['reason']})" for f in failed})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
