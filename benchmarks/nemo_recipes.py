"""Does `ironlaw search` find NVIDIA's recipes?

For each DGX-H100 pre-training row of NeMo Megatron-Bridge 25.11 (tests/data/nemo_megatron_bridge_25.11_dgx_h100.csv,
Apache-2.0; tests/nemo_ref.py reads it), run the layout search with the row's GPUs, global batch, sequence and
precision on the h100 catalog entry, and place the published layout (its TP, PP, CP, VP, EP, micro-batch and
FSDP as the row's 25.11 recipe runs them, tests/nemo_ref.recipe; sequence parallelism whenever TP > 1, the
distributed optimizer (ZeRO-1) unless FSDP, no recomputation —
the recipes' settings, tests/nemo_ref.py) in the ranking: found when it is in the top 5 or within 5% of the
best predicted tokens/s per GPU. The search's settings are the recipes' (train.SETTINGS): TP communication
overlap with sequence parallelism, overlapped stage sends when interleaved, bf16 gradient reduction, and the
expert all-to-alls beside another micro-batch's compute where the row's recipe sets it (Qwen3-30B-A3B).
With --blackwell, the same for the held-out DGX-GB300, GB200 and B200 rows of the page
(tests/data/nemo_megatron_bridge_25.11_blackwell.csv), each on its system's catalog entry, the layout as the table
prints it.
Run: python benchmarks/nemo_recipes.py [--rows N] [--blackwell]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
TOP, WITHIN = 5, 0.05


def published(row: dict) -> dict:
    """The row's recipe layout in the search's columns."""
    from ironlaw.models.search import space
    from nemo_ref import recipe
    row = row if "system" in row else recipe(row)           # held-out rows: the layout the table prints
    return {"tp": row["tp"], "pp": row["pp"], "cp": row["cp"], "dp": row["gpus"] // (row["tp"] * row["pp"] * row["cp"]),
            "ep": row["ep"], "micro_batch": row["micro_batch"], "interleave": row["vp"],
            "recompute": space.RECOMPUTE.index("none"), "zero": 3 if row["fsdp"] else 1,
            "sequence_parallel": int(row["tp"] > 1)}


def locate(res, layout: dict) -> int | None:
    c = res.columns
    m = np.ones(len(c["tp"]), dtype=bool)
    for k, v in layout.items():
        m &= c[k] == v
    hit = np.nonzero(m)[0]
    return int(hit[0]) if hit.size else None


def describe(r: dict) -> str:
    s = f"tp{r['tp']}{'sp' if r['sequence_parallel'] else ''} pp{r['pp']}" + (f"/v{r['interleave']}" if r["interleave"] > 1 else "")
    s += (f" cp{r['cp']}" if r["cp"] > 1 else "") + f" dp{r['dp']}" + (f" ep{r['ep']}" if r["ep"] > 1 else "")
    rc = r["recompute"] if isinstance(r["recompute"], str) else ("none", "selective", "full")[r["recompute"]]
    return s + f" mb{r['micro_batch']} z{r['zero']}" + (f" rc:{rc}" if rc != "none" else "")


def check(row: dict, hw) -> dict:
    from ironlaw.core.errors import IronlawError
    from ironlaw.models.search import train
    from nemo_ref import SPECS, options
    t0 = time.perf_counter()
    o = options(row)
    try:
        res = train.search(SPECS[row["model"]], hw, row["gpus"], row["global_batch"], row["seq"], row["precision"],
                           nodes=o.get("nodes"), top=TOP, settings={"moe_a2a_overlap": o["moe_a2a_overlap"]})
    except IronlawError as e:
        return {"verdict": f"search failed: {e}"}
    out = {"search_s": time.perf_counter() - t0, "n": res.candidates_evaluated, "fits": res.fits,
           "best": res.top[0], "best_tps": res.top[0]["tokens_per_s_per_gpu"]}
    i = locate(res, published(row))
    if i is None:
        out["verdict"] = "MISS: the published layout is not in the search space"
        return out
    r = res.results
    if not r["fits"][i]:
        out["verdict"] = f"MISS: the published layout does not fit ({r['memory_per_gpu_bytes'][i] / 1e9:.1f} GB/GPU)"
        return out
    tps = r["tokens_per_s_per_gpu"]
    ok = np.nonzero(r["fits"])[0]
    out["rank"] = int(np.sum(tps[ok] > tps[i])) + 1
    out["pub_tps"] = float(tps[i])
    out["gap"] = 1.0 - tps[i] / out["best_tps"]
    found = out["rank"] <= TOP or out["gap"] <= WITHIN
    out["verdict"] = "found" if found else "MISS"
    same = ok[(res.columns["tp"][ok] == row["tp"]) & (res.columns["cp"][ok] == row["cp"])]
    out["same"] = (int(np.sum(tps[same] > tps[i])) + 1, 1.0 - tps[i] / tps[same].max())
    return out


def memory_line(row: dict, hw) -> str:
    """parallel.plan_memory of the published layout, by class."""
    from ironlaw.models import parallel
    from ironlaw.models.search import train
    from nemo_ref import SPECS, options
    g = train.graph(SPECS[row["model"]], hw, row["seq"], row["precision"], options(row)["micro_batch"])
    plan = parallel.make_plan(options(row), g, hw)
    mem = parallel.plan_memory(g, plan, plan.zero, plan.recompute)
    return "its memory per GPU: " + ", ".join(f"{k} {v / 1e9:.1f} GB" for k, v in mem.footprint().items())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=None, help="only the first N rows")
    ap.add_argument("--blackwell", action="store_true", help="the held-out DGX-GB300/GB200/B200 rows, each on "
                    "its system, with the layout the table prints")
    a = ap.parse_args()
    from ironlaw.machine import hardware
    from nemo_ref import BLACKWELL, TABLE, table
    rows = table(BLACKWELL if a.blackwell else TABLE)[: a.rows]
    print(f"{'model':14s} {'GPUs':>4} {'prec':>4} {'published layout':28s} {'rank':>6} {'its tok/s':>9} "
          f"{'best':>7} {'gap':>6}  {'verdict':8s} best layout (search time, candidates)")
    found = 0
    for row in rows:
        hw = hardware.get(row.get("system", "h100"))
        o = check(row, hw)
        pub = describe({**published(row), "recompute": 0})
        if "best" not in o:
            print(f"{row['model']:14s} {row['gpus']:4d} {row['precision']:>4} {pub:28s} {o['verdict']}"
                  f"{' (' + row['system'] + ')' if 'system' in row else ''}")
            continue
        rank = f"{o['rank']:,}" if "rank" in o else "—"
        its = f"{o['pub_tps']:9.0f}" if "pub_tps" in o else f"{'—':>9}"
        gap = f"{o['gap']:6.1%}" if "gap" in o else f"{'—':>6}"
        found += o["verdict"] == "found"
        print(f"{row['model']:14s} {row['gpus']:4d} {row['precision']:>4} {pub:28s} {rank:>6} {its} "
              f"{o['best_tps']:7.0f} {gap}  {o['verdict'].split(':')[0]:8s} {describe(o['best'])} "
              f"({o['search_s']:.0f} s, {o['n']:,}){'' if o['verdict'] in ('found', 'MISS') else ': ' + o['verdict']}")
        print(f"{'':14s} {row.get('system', 'h100')}: published {row['tokens_per_s_per_gpu']:.0f} tok/s/GPU; "
              f"best predicted binds: "
              f"{o['best']['bottleneck']['why'][:90]}")
        if "same" in o and o["verdict"] != "found":
            print(f"{'':14s} among layouts with the published tp {row['tp']} and cp {row['cp']}: rank {o['same'][0]:,}, "
                  f"{o['same'][1]:.1%} below their best")
        if "does not fit" in o["verdict"]:
            print(f"{'':14s} " + memory_line(row, hw))
    print(f"\nfound {found} of {len(rows)} published layouts (top {TOP} or within {WITHIN:.0%} of the best)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
