"""Offline max-throughput serving against TensorRT-LLM's published H200 table, HELD OUT: nothing is fitted on it.

    python benchmarks/trtllm_h200.py
    python benchmarks/trtllm_h200.py --host-costs STEP_S,SEQUENCE_S   # what-if: the executor's host work (H100 fit)
    python benchmarks/trtllm_h200.py --release cell   # each cell on the kernels of the release it ran (1.0)

Source: tests/data/trtllm_perf_overview_h200.csv (NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md,
Apache-2.0): the H200 SXM 141GB (DGX H200) columns of the same table whose H100 columns fit the serving constants
(benchmarks/trtllm_h100.py). Every cell is predicted with the constants in src/ironlaw/models/serving/engine.py
(fitted on the H100 cells only) and the ``h200`` catalog entry (datasheet peaks, 141 GB, 4.8 TB/s), run as the H100
cells are (``trtllm_h100.predict``: --kv-fraction 0.95, the page's $num_requests, trtllm-bench's own engine limits,
MoE rows with EP = TP and attention DP, FP8 KV cache) at the page's H200 TP (Llama 3.3 70B runs TP 1 there, TP 2 on
H100). No per-GPU factor: only the datasheet changes from one GPU to the other. Each cell is priced on the
catalog's kernel terms; ``--release cell`` on the kernels of the TensorRT-LLM release it ran (the CSV's ``release``
column, 1.0: ``serve --release 1.0``, the terms fitted on that release's H200 tables).
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import trtllm_h100 as h100  # noqa: E402

CSV = h100.ROOT / "tests/data/trtllm_perf_overview_h200.csv"
GOAL_DENSE = GOAL_MOE = 10.0      # median |error| of the held-out cells, dense and MoE (the H100 goal, 5%, doubled)


def scored(constants=None) -> list[dict]:
    """Every H200 cell with its prediction and error (percent), the H100-fitted constants (or ``constants``)."""
    out = []
    for c in h100.cells(CSV):
        c = {**c, "spec": h100.spec_for(c["model"])}
        t0 = time.perf_counter()
        est = h100.predict(c, "h200", constants)
        wall = time.perf_counter() - t0
        pred = est.output_tokens_per_s
        out.append({**c, "predicted": pred, "error": 100.0 * (pred / c["published"] - 1.0), "batch": est.batch,
                    "limit": est.batch_limit, "wall_s": wall})
    return out


def summary(rows: list[dict]) -> dict:
    """{"all" | "dense" | "MoE" | model: (median, p90, max) of |error|}."""
    groups = {"all": rows, "dense": [r for r in rows if r["model"] not in h100.MOE],
              "MoE": [r for r in rows if r["model"] in h100.MOE]}
    for m in dict.fromkeys(r["model"] for r in rows):
        groups[m] = [r for r in rows if r["model"] == m]
    return {g: h100.stats([r["error"] for r in rs]) for g, rs in groups.items() if rs}


def main() -> int:
    from bench import print_table
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    h100.release_arg(ap)
    h100.host_option(ap)
    a = ap.parse_args()
    h100.use_release(a.release, a.release_classes, a.routing)
    h100.constants_arg(a.constants)
    rows = scored(h100.constants_of(a))
    w = (16, 3, 10, 10, 10, 8, 6, 10)
    print(h100.table_row(("model", "tp", "ISL/OSL", "published", "predicted", "error", "batch", "set by"), w))
    for r in rows:
        print(h100.table_row((r["model"], r["tp"], f"{r['isl']}/{r['osl']}", f"{r['published']:,.0f}",
                          f"{r['predicted']:,.0f}", f"{r['error']:+.1f}%", r["batch"], r["limit"]), w))
    s = summary(rows)
    print(f"\nH200 cells, held out (H100-fitted constants, h200 datasheet): {len(rows)}")
    for g, (med, p90, mx) in s.items():
        print(f"  {g:<16} |error| median {med:.1f}%  p90 {p90:.1f}%  max {mx:.1f}%")
    print(f"ironlaw: {statistics.median(r['wall_s'] for r in rows) * 1e3:.0f} ms per prediction (median)")
    return print_table([
        ("H200 dense cells, held out: median |error|", f"{s['dense'][0]:.1f}%", f"<= {GOAL_DENSE:.0f}%",
         s["dense"][0] <= GOAL_DENSE),
        ("H200 MoE cells, held out: median |error|", f"{s['MoE'][0]:.1f}%", f"<= {GOAL_MOE:.0f}%",
         s["MoE"][0] <= GOAL_MOE)], "TensorRT-LLM H200 max-throughput, held out")


if __name__ == "__main__":
    sys.exit(main())
