"""Time or memory? What the Hopper MoE cells say when the routed experts run at their measured tables.

    python benchmarks/moe_implied_memory.py                          # H100 and H200 MoE cells, power_law_1.2
    python benchmarks/moe_implied_memory.py --gpu h100 --kv-fraction 0.4   # score them at another KV fraction
    python benchmarks/moe_implied_memory.py --kv-dtype bf16 --kv-fraction 0.95   # … or with a bf16 KV cache

Every H100 MoE cell of the TensorRT-LLM perf overview is KV-memory bound in ironlaw: its batch is what the KV
budget holds, not trtllm-bench's max batch nor the request count. Throughput is then batch / step, and a published
number has two readings: the step is slower than the measured fused-MoE layer says (what ``engine.FITTED``'s
end-to-end ``expert_gemm_eta`` / ``expert_stream_eta`` encode), or the batch is smaller, because the run kept
less memory for its KV cache than ironlaw gives it (the perf overview runs ``--kv_cache_free_gpu_mem_fraction``
0.95 "in many cases" and falls back "to 0.90 or lower if out-of-memory errors are encountered").

Per MoE cell (TP > 1, attention DP, EP = TP, as trtllm_h100.predict runs it), with the routed experts on the
device's measured MoE tables (``moe_tables``) at the chosen routing, the script prints: what set the batch
(``kv_memory``, ``max_batch`` or ``requests``), the tables-on and the FITTED errors at the overview's 0.95, and the
largest KV fraction (a 0.025 grid from 0.95 down) at which the tables-on prediction is at or below the
published throughput (a lower fraction also lowers trtllm-bench's own max batch, as the run's flag would), with the
runtime memory per GPU that fraction leaves out of the KV cache
(``reserve`` = free · (1 − f / 0.95), the same KV budget as ``ServingConstants.reserve_bytes`` at 0.95).
Two tests follow from it:
- time: on cells whose batch is the request count (the KV cache holds every request of the dataset), the batch
  does not depend on memory as long as the run held them all, so their error is the step's; the tables and the
  end-to-end η are compared there;
- memory: if the KV cache were the cause, the implied fraction would be about the same for every cell, and on
  both GPUs.
Nothing is fitted or stored. Cells: tests/data/trtllm_perf_overview_{h100,h200}.csv (NVIDIA/TensorRT-LLM
perf-overview.md, Apache-2.0); tables: the catalog's MoE terms (aiconfigurator-core 0.12.0, benchmarks/kernel_moe.py).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import trtllm_h100 as h100  # noqa: E402

GIB = 2.0 ** 30
CSV = {"h100": h100.CSV, "h200": h100.ROOT / "tests/data/trtllm_perf_overview_h200.csv"}
PUBLISHED_FRACTION = h100.KV_FRACTION          # 0.95: the overview's --kv_cache_free_gpu_mem_fraction


@contextmanager
def kv_fraction(f: float):
    """trtllm_h100.predict at KV fraction ``f`` (its module constant, restored after)."""
    old, h100.KV_FRACTION = h100.KV_FRACTION, f
    try:
        yield
    finally:
        h100.KV_FRACTION = old


def constants(tables: bool, routing: str | None):
    """engine.FITTED, with the routed experts on the measured MoE tables (``tables``) at ``routing``."""
    from ironlaw.models.serving import throughput as st
    h100.use_release(None, "all", routing if tables else None)
    return replace(st.FITTED, moe_tables=tables)


def predict(cell: dict, gpu: str, tables: bool, routing: str | None, f: float):
    c = constants(tables, routing)
    with kv_fraction(f):
        return h100.predict(cell, gpu, c)


GRID = tuple(round(PUBLISHED_FRACTION - 0.025 * i, 3) for i in range(35))     # 0.95 … 0.10


def implied_fraction(cell: dict, gpu: str, routing: str) -> float | None:
    """The largest KV fraction on ``GRID`` at which the tables-on prediction is at or below the published rate
    (a scan, not a bisection: the rate is not monotonic in the batch, whose CUDA-graph padding steps); None where
    every fraction down to 0.10 leaves it fast. 0.95 where the cell is already slow at the overview's fraction."""
    from ironlaw.core.errors import IronlawError
    for f in GRID:
        try:
            rate = predict(cell, gpu, True, routing, f).output_tokens_per_s
        except IronlawError:                # the KV cache no longer holds one request: no smaller fraction does
            return None
        if rate <= cell["published"]:
            return f
    return None


def moe_cells(gpu: str) -> list[dict]:
    out = []
    for c in h100.cells(CSV[gpu]):
        spec = h100.spec_for(c["model"])
        if c["model"] in h100.MOE and c["tp"] > 1 and spec is not None:
            out.append({**c, "spec": spec, "gpu": gpu})
    return out


def err(est, cell: dict) -> float:
    return 100.0 * (est.output_tokens_per_s / cell["published"] - 1.0)


def row(cell: dict, routing: str, f: float, implied: bool) -> dict:
    on = predict(cell, cell["gpu"], True, routing, f)
    off = predict(cell, cell["gpu"], False, None, f)
    r = {**cell, "tables": err(on, cell), "fitted": err(off, cell), "batch": on.batch, "limit": on.batch_limit,
         "budget_gib": on.memory["kv_budget_bytes"] / GIB, "free": on.memory["free_bytes"]}
    if implied:
        r["fraction"] = implied_fraction(cell, cell["gpu"], routing)
        r["reserve_gib"] = None if r["fraction"] is None else \
            r["free"] * (1.0 - r["fraction"] / PUBLISHED_FRACTION) / GIB
    return r


WIDTHS = (16, 5, 10, 10, 10, 8, 8, 9, 9, 9)


def cell_text(r: dict) -> str:
    f = r.get("fraction")
    shown = ("—", "—") if "fraction" not in r else (("<0.02", "—") if f is None else
                                                    (f"{f:.2f}", f"{r['reserve_gib']:.1f}"))
    return h100.table_row((r["model"], r["gpu"], f"{r['isl']}/{r['osl']}", f"{r['published']:,.0f}", r["limit"],
                           f"{r['tables']:+.1f}%", f"{r['fitted']:+.1f}%", f"{r['budget_gib']:.1f}") + shown, WIDTHS)


def med(xs) -> str:
    xs = list(xs)
    return f"{statistics.median(xs):+.1f}%" if xs else "—"


def p90(xs: list[float]) -> float:
    return h100.stats(xs)[1]          # trtllm_h100's p90 of |error|


def model_line(gpu: str, m: str, rs: list[dict]) -> str:
    fr = [r["fraction"] for r in rs if r.get("fraction") is not None]
    span = f", implied KV fraction {min(fr):.2f} … {max(fr):.2f}" if fr else ""
    return (f"{gpu} {m}: {len(rs)} cells, signed median tables {med(r['tables'] for r in rs)}, "
            f"FITTED {med(r['fitted'] for r in rs)}{span}")


def summary(rows: list[dict]) -> list[str]:
    out = []
    for gpu in sorted({r["gpu"] for r in rows}):
        g = [r for r in rows if r["gpu"] == gpu]
        out += [model_line(gpu, m, [r for r in g if r["model"] == m]) for m in sorted({r["model"] for r in g})]
        req = [r for r in g if r["limit"] == "requests"]
        if req:
            out.append(f"{gpu} time test, {len(req)} cells whose batch is the request count: signed median tables "
                       f"{med(r['tables'] for r in req)}, FITTED {med(r['fitted'] for r in req)}")
        tab, fit = [r["tables"] for r in g], [r["fitted"] for r in g]
        fr = [r["fraction"] for r in g if r.get("fraction") is not None]
        implied = f", median implied KV fraction {statistics.median(fr):.3f}" if fr else ""
        out.append(f"{gpu} all {len(g)} MoE cells: |error| median / p90 tables {h100.stats(tab)[0]:.1f}% / "
                   f"{p90(tab):.1f}%, FITTED {h100.stats(fit)[0]:.1f}% / {p90(fit):.1f}%{implied}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", choices=("h100", "h200", "both"), default="both")
    ap.add_argument("--routing", default="power_law_1.2",
                    help="the busiest expert rank's load (core.routing), as serving_moe_terms.py --routing")
    ap.add_argument("--kv-fraction", type=float, default=None,
                    help="score every MoE cell at this KV fraction (a what-if), without the implied fractions")
    ap.add_argument("--kv-dtype", choices=("fp8", "bf16"), default=None,
                    help="the MoE cells' KV-cache dtype (a what-if; default trtllm_h100.KV_DTYPE: the checkpoints' FP8)")
    args = ap.parse_args()
    if args.kv_dtype is not None:
        for m in h100.MOE:
            h100.KV_DTYPE[m] = args.kv_dtype
    if args.kv_fraction is not None and not 0.0 < args.kv_fraction <= 1.0:
        raise SystemExit(f"--kv-fraction: expected a number in (0, 1], got {args.kv_fraction}")
    f = PUBLISHED_FRACTION if args.kv_fraction is None else args.kv_fraction
    gpus = ("h100", "h200") if args.gpu == "both" else (args.gpu,)
    print(h100.table_row(("model", "gpu", "ISL/OSL", "published", "set by", "tables", "FITTED", "KV GiB",
                          "implied f", "reserve"), WIDTHS))
    rows = []
    for gpu in gpus:
        for c in moe_cells(gpu):
            rows.append(row(c, args.routing, f, args.kv_fraction is None))
            print(cell_text(rows[-1]))
    kv = args.kv_dtype or "the checkpoints' (fp8)"
    print(f"\nKV fraction {f:g}, KV dtype {kv}, routing {args.routing} (tables); FITTED: engine.FITTED's expert η, "
          "uniform routing")
    print("\n".join(summary(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
