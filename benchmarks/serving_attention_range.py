"""Where the serving cells' decode attention leaves the measured kernel table, and which cells the host bounds.

    python benchmarks/serving_attention_range.py --data DIR                      # B200 and GB200 FP4 cells
    python benchmarks/serving_attention_range.py --data DIR --gpu h200 --model llama3.3-70b

Cells: tests/data/trtllm_perf_overview_{h100,h200,blackwell}.csv (NVIDIA/TensorRT-LLM perf-overview.md,
Apache-2.0), predicted as benchmarks/trtllm_h100.py, trtllm_h200.py and trtllm_blackwell.py predict them (the
H100-fitted constants). Per cell, in its most frequent engine step: the decode attention op (its kernel class, its
(M, N, K) = (query heads per KV head, mean context, head dim), the sequences it reads), the grid factor the law
applies to it (``efficiency.kernel_grid``), the KV tokens it reads per layer against the most any row of the
measured generation-attention table reached at the same per-GPU heads, KV heads, head dim and KV dtype
(aiconfigurator-core 0.12.0's ``<gpu>/attention/trtllm/1.3.0rc20/generation_attention_perf.parquet``, NVIDIA,
Apache-2.0; ``--data`` names its ``systems/data`` folder), the KV read rate the law gives the op (KV bytes over its
time) beside the best rate a table row measured at those heads, and the op's share of the step. Nothing is fitted.

With B200 and GB200 asked: the published GB200 over B200 throughput per cell. The two run the same Blackwell
GPU (GB200's with more memory and power); a model whose GB200 cells run slower than its B200 cells is bound by
what differs, the host CPU (Grace against the DGX B200's x86), not by a kernel a table times.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import trtllm_h100 as h100  # noqa: E402

CSV = {"h100": h100.CSV, "h200": h100.ROOT / "tests/data/trtllm_perf_overview_h200.csv",
       "b200": h100.ROOT / "tests/data/trtllm_perf_overview_blackwell.csv",
       "gb200": h100.ROOT / "tests/data/trtllm_perf_overview_blackwell.csv"}
SYSTEM = {"h100": "h100_sxm", "h200": "h200_sxm", "b200": "b200_sxm", "gb200": "gb200"}
TABLE = "attention/trtllm/1.3.0rc20/generation_attention_perf.parquet"
KV_TABLE_DTYPE = {"fp8": "fp8", "bf16": "bfloat16"}


def decode_attention(est) -> dict:
    """The decode attention op of the most frequent step: its class, shape, grid factor, time and KV bytes."""
    from ironlaw.core.gemmshape import gemm_dims, grid_units
    from ironlaw.law.efficiency import kernel_grid
    n, e = max(est.steps, key=lambda s: s[0])
    ops = e.graph.ops
    t = e.op_time_s.reshape(len(ops), -1)[:, 0]
    step_s = float(sum(t[j] * op.count for j, op in enumerate(ops)))
    j = next(i for i, op in enumerate(ops) if op.kind == "attention" and
             str(e.cols.kernels[i]).startswith("attention_generation"))
    m, nn, k = (float(x.reshape(len(ops), -1)[j, 0]) for x in gemm_dims(e.cols))
    units = float(grid_units(e.cols.flops, *gemm_dims(e.cols)).reshape(len(ops), -1)[j, 0])
    grid = np.broadcast_to(kernel_grid(e.hw.calibration, e.cols), e.cols.flops.shape) if e.hw.calibration else None
    seqs = float(e.graph.meta["decode_sequences"])
    kv_bytes = float(e.cols.bytes["kv_cache"].reshape(len(ops), -1)[j, 0])
    return {"kernel": str(e.cols.kernels[j]), "m": m, "n": nn, "k": k, "seqs": seqs,
            "kv_heads": round(units / (2.0 * seqs)), "grid": float(grid.reshape(len(ops), -1)[j, 0]) if grid is not None
            else 1.0, "time_s": float(t[j]), "kv_bytes": kv_bytes, "share": float(t[j] * ops[j].count) / step_s}


def table_reach(rows, a: dict, kv_dtype: str) -> dict:
    """The measured rows at the op's heads: the most KV tokens a row read, and the best KV read rate."""
    kvh = a["kv_heads"]
    r = rows[(rows.num_key_value_heads == kvh) & (rows.num_heads == round(a["m"]) * kvh) &
             (rows.head_dim == round(a["k"])) & (rows.window_size == 0) &
             (rows.kv_cache_dtype == KV_TABLE_DTYPE[kv_dtype]) & (rows.kernel_source == "torch_flow")]
    if not len(r):
        return {"rows": 0}
    tokens = r.batch_size * (r.step + 1)
    per_token = 2.0 * kvh * a["k"] * (1.0 if kv_dtype == "fp8" else 2.0)
    rate = tokens * per_token / (r.latency * 1e-3)
    i = int(np.argmax(tokens.to_numpy()))
    return {"rows": len(r), "max_tokens": float(tokens.iloc[i]), "rate_at_max": float(rate.iloc[i]),
            "best_rate": float(rate.max())}


def capped_error(est, c: dict, rate: float, floor: bool = False) -> float:
    """The cell's error (percent) with each decode attention op taking at least its KV bytes / ``rate``; with
    ``floor``, at most that (no slower per KV byte than the table's best row: the converse)."""
    extra = 0.0
    for n, e in est.steps:
        ops = e.graph.ops
        t = e.op_time_s.reshape(len(ops), -1)[:, 0]
        kv = e.cols.bytes["kv_cache"].reshape(len(ops), -1)[:, 0]
        for j, op in enumerate(ops):
            if op.kind == "attention" and str(e.cols.kernels[j]).startswith("attention_generation"):
                gap = float(kv[j]) / rate - float(t[j])
                extra += n * op.count * (min(0.0, gap) if floor else max(0.0, gap))
    run_s = est.requests * est.output / est.output_tokens_per_s
    return 100.0 * (est.requests * est.output / (run_s + extra) / c["published"] - 1.0)


def attention_rows(gpu: str, data: Path, model: str | None) -> list[dict]:
    import pandas as pd
    rows = pd.read_parquet(data / SYSTEM[gpu] / TABLE)
    out = []
    for c in h100.cells(CSV[gpu]):
        if c.get("gpu", gpu) != gpu or (model and c["model"] != model):
            continue
        c = {**c, "spec": h100.spec_for(c["model"])}
        est = h100.predict(c, gpu)
        a = decode_attention(est)
        reach = table_reach(rows, a, h100.KV_DTYPE[c["model"]])
        out.append({**c, **a, **reach, "error": 100.0 * (est.output_tokens_per_s / c["published"] - 1.0),
                    "capped": capped_error(est, c, reach["best_rate"]) if reach["rows"] else float("nan"),
                    "floored": capped_error(est, c, reach["best_rate"], floor=True) if reach["rows"]
                    else float("nan")})
    return out


def print_what_if(rows: list[dict], gpu: str) -> None:
    groups = {f"{gpu} all": rows, f"{gpu} dense": [r for r in rows if r["model"] not in h100.MOE],
              f"{gpu} MoE": [r for r in rows if r["model"] in h100.MOE]}
    for m in dict.fromkeys(r["model"] for r in rows):
        groups[f"{gpu} {m}"] = [r for r in rows if r["model"] == m]
    for key, what in (("capped", "faster"), ("floored", "slower")):
        print(f"what if decode attention never read its KV cache {what} than the table's best row, {gpu}")
        for g, rs in groups.items():
            if rs:
                print(f"  {g:28s} median |error| {statistics.median(abs(r['error']) for r in rs):5.1f}% -> "
                      f"{statistics.median(abs(r[key]) for r in rs):5.1f}%  ({len(rs)} cells)")


def print_attention(rows: list[dict], gpu: str) -> None:
    print(f"decode attention in the most frequent step, {gpu} (KV tokens per layer: the op's / the table's most)")
    print(f"{'model':16s} {'ISL/OSL':>10s} {'error':>7s} {'class':34s} {'M':>3s} {'N':>6s} {'seqs':>5s} "
          f"{'grid':>5s} {'share':>6s} {'KV tokens':>10s} {'table max':>10s} {'x':>5s} {'law TB/s':>8s} "
          f"{'table best':>10s}")
    for r in rows:
        tok = r["seqs"] * r["n"]
        reach = tok / r["max_tokens"] if r.get("rows") else float("nan")
        print(f"{r['model']:16s} {r['isl']:>5d}/{r['osl']:<4d} {r['error']:+6.1f}% {r['kernel']:34s} {r['m']:3.0f} "
              f"{r['n']:6.0f} {r['seqs']:5.0f} {r['grid']:5.3f} {100 * r['share']:5.1f}% {tok:10.3g} "
              f"{r.get('max_tokens', float('nan')):10.3g} {reach:5.1f} {r['kv_bytes'] / r['time_s'] / 1e12:8.2f} "
              f"{r.get('best_rate', float('nan')) / 1e12:10.2f}")


def host_ratio() -> dict:
    """{model: [(isl, osl, GB200 / B200 published)]} over the cells both columns hold."""
    cells = h100.cells(CSV["b200"])
    pub = {(c["model"], c["gpu"], c["isl"], c["osl"]): c["published"] for c in cells}
    out: dict = {}
    for (m, g, i, o), v in pub.items():
        if g == "b200" and (m, "gb200", i, o) in pub:
            out.setdefault(m, []).append((i, o, pub[(m, "gb200", i, o)] / v))
    return out


def print_host(ratios: dict) -> None:
    print("\npublished GB200 / B200 output tokens/s per cell (same GPU; < 1: the host CPU bounds the cell)")
    for m, rs in ratios.items():
        cells = " ".join(f"{i}/{o}:{r:.2f}" for i, o, r in rs)
        print(f"{m:16s} median {statistics.median(r for _, _, r in rs):.2f}  below 0.95: "
              f"{sum(r < 0.95 for _, _, r in rs):2d} of {len(rs)}  {cells}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="aiconfigurator-core's systems/data folder")
    ap.add_argument("--gpu", nargs="+", default=["b200", "gb200"], choices=sorted(SYSTEM))
    ap.add_argument("--model", default=None)
    ap.add_argument("--what-if", action="store_true", help="also the cells with decode attention held to the "
                    "best KV read rate the table measured (never faster), and the converse (never slower)")
    args = ap.parse_args()
    h100.use_release(h100.CATALOG)        # the cells on the catalog's terms, the 1.3.0rc20 tables it reads
    for g in args.gpu:
        rows = attention_rows(g, args.data, args.model)
        print_attention(rows, g)
        if args.what_if:
            print_what_if(rows, g)
        print()
    if {"b200", "gb200"} <= set(args.gpu):
        print_host(host_ratio())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
