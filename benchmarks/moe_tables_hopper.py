"""Do the two Hopper fused-MoE tables agree? H100 vs H200 rows at the shapes the Hopper MoE serving cells run, and
the balanced rows against the HBM / FP8 roofline of the touched experts.

    python benchmarks/moe_tables_hopper.py --data DIR [--dtype fp8|fp8_block|bfloat16] [--all]

Data: the moe_perf tables of aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0;
systems/data/{h100_sxm,h200_sxm}/moe/trtllm/1.3.0rc20/moe_perf.parquet): TensorRT-LLM 1.3.0rc20's fused MoE timed
on one GPU per row (``latency`` in ms). H100 and H200 are the same GH100 chip at the same FP8 peak; H200 has 4.8
TB/s of HBM3e against 3.35 TB/s (catalog h100.toml / h200.toml, datasheets), so a row pair of one shape, dtype,
token count and routing should differ by at most the HBM ratio (H200/H100 time ≥ 3.35/4.8 = 0.70 and ≤ 1).

Printed per shape: the kernel sources the rows carry on each GPU; per token count, the H100 and H200 time and the
ratio H200/H100 for each routing; and, for the balanced rows (whose rank-0 load is exact: ``core.routing
.balanced_local``), the roofline lower bound max(bytes / HBM bandwidth, FLOPs / dense FP8 peak) of the timed rank:
bytes = distinct local experts touched × 3·hidden·inter/moe_tp weights at the dtype's width, FLOPs = 2 × routed
rows × 3·hidden·inter/moe_tp (gated up + down projections). A row timed faster than its roofline is flagged ``<RL``.
``--all`` adds every row the two tables share: the ratio H200/H100 per dtype and routing (quantiles), the
Llama 4 FP8 ratio per (experts, moe_tp, moe_ep, routing), and the balanced rows of every shape (bf16, fp8,
fp8_block; gated or not by kernel_source) against their roofline. Read-only; nothing is fitted. Goal: every ratio within [0.70, 1.0] and no row under its roofline.
"""
from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

SYSTEMS = {"h100_sxm": "h100", "h200_sxm": "h200"}
ROUTINGS = ("balanced", "power_law_1.01", "power_law_1.2")
WIDTH_BYTES = {"fp8": 1.0, "fp8_block": 1.0, "bfloat16": 2.0}
# (name, hidden, inter, experts, top-k, moe_tp, moe_ep): the layers the H100/H200 MoE serving cells run
SHAPES = (("Qwen3-235B-A22B", 4096, 1536, 128, 8, 1, 8),
          ("Llama-4-Maverick", 5120, 8192, 128, 1, 1, 8),
          ("Llama-4-Scout", 5120, 8192, 16, 1, 1, 4))


def load(data: Path, system: str):
    """The moe_perf table of ``system``."""
    import pandas as pd
    return pd.read_parquet(data / system / "moe" / "trtllm" / "1.3.0rc20" / "moe_perf.parquet")


def shape_rows(df, dtype: str, shape: tuple):
    """``df``'s rows of one layer shape and dtype, indexed by (routing, tokens) -> latency in seconds."""
    _, h, i, e, k, tp, ep = shape
    q = df[(df.hidden_size == h) & (df.inter_size == i) & (df.num_experts == e) & (df.topk == k)
           & (df.moe_tp_size == tp) & (df.moe_ep_size == ep) & (df.moe_dtype == dtype)]
    return q, {(r.distribution, int(r.num_tokens)): r.latency * 1e-3 for r in q.itertuples()}


@functools.lru_cache(maxsize=None)
def roofline_s(gpu: str, dtype: str, shape: tuple, tokens: int) -> float:
    """max(weight bytes / HBM bandwidth, FLOPs / peak) of rank 0 under the collector's balanced routing."""
    from ironlaw.core.routing import balanced_local
    from ironlaw.machine import hardware
    _, h, i, e, k, tp, ep = shape
    hw = hardware.get(gpu)
    rows, used = balanced_local(tokens, e, k, ep)
    per_expert = 3 * h * i / tp
    peak = hw.peak_flops["fp8" if dtype.startswith("fp8") else "bf16"]
    return max(used * per_expert * WIDTH_BYTES[dtype] / hw.memory[hw.device_tier].bw_Bps,
               2 * rows * per_expert / peak)


def report(tables: dict, dtype: str, shape: tuple) -> None:
    """Print one shape's H100 vs H200 comparison and the balanced rows' roofline check."""
    name, h, i, e, k, tp, ep = shape
    print(f"\n{name}: hidden {h}, inter {i}, {e} experts, top-{k}, moe_tp {tp}, moe_ep {ep}, {dtype}")
    got = {}
    for system, df in tables.items():
        q, got[system] = shape_rows(df, dtype, shape)
        print(f"  {system}: {len(q)} rows, kernel_source {sorted(set(q.kernel_source))}")
    a, b = got["h100_sxm"], got["h200_sxm"]
    head = "  ".join(f"{r:>14s} H100/H200/ratio" for r in ROUTINGS)
    print(f"  {'tokens':>6s}  {head}   roofline H100/H200 (balanced)")
    for t in sorted({t for _, t in a} & {t for _, t in b}):
        cells = []
        for r in ROUTINGS:
            x, y = a.get((r, t)), b.get((r, t))
            cells.append(f"{x * 1e6:9.1f} {y * 1e6:9.1f} {y / x:5.2f}" if x and y else f"{'—':>25s}")
        rl = [roofline_s(g, dtype, shape, t) for g in ("h100", "h200")]
        flag = "".join(f" <RL {g}" for g, s, m in zip(("H100", "H200"), rl, (a, b)) if m[("balanced", t)] < s)
        print(f"  {t:6d}  " + "  ".join(cells) + f"   {rl[0] * 1e6:7.1f} {rl[1] * 1e6:7.1f}{flag}")


KEYS = ["kernel_source", "moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts",
        "moe_tp_size", "moe_ep_size", "distribution"]


def all_rows(tables: dict) -> None:
    """Every shared row: H200/H100 quantiles, the Llama 4 FP8 blocks, and the balanced rows against the roofline."""
    m = tables["h100_sxm"].merge(tables["h200_sxm"], on=KEYS, suffixes=("_100", "_200"))
    m["ratio"] = m.latency_200 / m.latency_100
    print(f"\nall {len(m)} paired rows, ratio H200/H100 per dtype and routing:")
    print(m.groupby(["moe_dtype", "distribution"]).ratio.describe(percentiles=[.1, .5, .9]).round(2).to_string())
    q = m[(m.moe_dtype == "fp8") & (m.hidden_size == 5120) & (m.inter_size == 8192)]
    print("\nLlama 4 FP8 (hidden 5120, inter 8192): median ratio H200/H100 over the token counts")
    print(q.groupby(["num_experts", "moe_tp_size", "moe_ep_size", "distribution"]).ratio.median()
          .unstack().round(2).to_string())
    for system, df in tables.items():
        b = df[(df.distribution == "balanced") & df.moe_dtype.isin(list(WIDTH_BYTES))]
        x = [r.latency * 1e-3 / roofline_s(SYSTEMS[system], r.moe_dtype,
                                           ("", r.hidden_size, r.inter_size * (2 / 3 if "nongated" in r.kernel_source
                                                                               else 1), r.num_experts, r.topk,
                                            r.moe_tp_size, r.moe_ep_size), int(r.num_tokens))
             for r in b.itertuples()]
        print(f"{system}: {len(x)} balanced rows, {sum(v < 1 for v in x)} under their roofline; "
              f"min measured/roofline {min(x):.3f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="aiconfigurator-core's systems/data")
    ap.add_argument("--dtype", default="fp8", choices=sorted(WIDTH_BYTES))
    ap.add_argument("--all", action="store_true", help="also every row the two tables share")
    args = ap.parse_args(argv)
    tables = {s: load(args.data, s) for s in SYSTEMS}
    for s, df in tables.items():
        ks = df.groupby(["moe_dtype", "kernel_source"]).size()
        print(f"{s}: device {sorted(set(df.device))}; rows per (moe_dtype, kernel_source): "
              + ", ".join(f"{d}/{ksrc} {n}" for (d, ksrc), n in ks.items()))
    for shape in SHAPES:
        report(tables, args.dtype, shape)
    if args.all:
        all_rows(tables)
    return 0


if __name__ == "__main__":
    sys.exit(main())
