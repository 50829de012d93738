"""The MoE serving cells with each step's routed MoE layer timed by the measured fused-MoE table itself (a what-if).

    python benchmarks/moe_measured_layer.py --data DIR                          # B200 + GB200, 98 cells
    python benchmarks/moe_measured_layer.py --data DIR --gpu h200|h100          # the Hopper cells (fp8 tables)
    python benchmarks/moe_measured_layer.py --data DIR --cells                  # every MoE cell
    python benchmarks/moe_measured_layer.py --data DIR --release-data DIR08     # the v1.0 line's layer where it has it
    python benchmarks/moe_measured_layer.py --data DIR --same-chip              # B200 against GB200, row by row
    (DIR: aiconfigurator-core 0.12.0's systems/data; DIR08: aiconfigurator 0.8.0's systems/data)

Each cell is priced as ``trtllm_blackwell.py`` / ``trtllm_h200.py`` / ``trtllm_h100.py`` price it with
``--constants moe_tables=1 --routing power_law_1.2`` (the routed experts on the MoE layer fitted on the tables,
``measure/calibrate/moefit.py``; the busiest expert rank of an EP group loaded as power_law_1.2 at each step's
pooled tokens). Then, step kind by step kind, the law's routed-layer time (the grouped GEMMs and the routed rows'
permute, activation and combine: ``serving_moe_terms.op_class`` "experts" and "rows") is replaced by the
measured layer at the cell's own layer shape (hidden, expert inter size, top-k, experts, MoE TP 1, the cell's EP)
and the step's pooled tokens:

    step = max(device − own routed layers + layers · table(tokens), host) + step_s
    table(tokens)   TensorRT-LLM 1.3.0rc20's ``moe_torch_flow_cutlass`` rows (the CUTLASS fused MoE, the v1.0
                    line's default ``MoeConfig.backend``; the perf overview's options set no moe_config), median
                    over repeated rows, interpolated in log tokens between rows; below the first row its time;
                    above the last row (16,384 tokens) its time × tokens / 16,384 (aiconfigurator extrapolates
                    the same way). Distribution: ``balanced`` on one GPU (EP 1: the rows the fit used), the
                    ``--routing`` rows (default power_law_1.2) where EP > 1.
    --release-data  where aiconfigurator 0.8.0's TensorRT-LLM 1.0-line table (1.0.0rc3 on H100/H200, 1.0.0rc6 on
                    B200/GB200: the release of the published runs) times the cell's shape, its ``moe_torch_flow``
                    rows instead; it holds power-law rows only (power_law_1.2, or ``--routing``'s α where EP > 1),
                    and of the served shapes only Qwen3-235B-A22B's (4096 / 1536, top-8 of 128) on B200.

``--same-chip``: B200 and GB200 carry the same Blackwell die and HBM3e (8 TB/s), so their two tables should time a
layer alike; it prints, per weight dtype, how often the two disagree by more than 1.5× (CUTLASS rows, MoE TP 1,
every distribution, 32 tokens and more) and the B200 / GB200 ratio at the served single-GPU shapes.

Nothing is fitted and nothing here is the model: it measures how far the law's fitted MoE form (one L, η_w, η_c,
η_a per GPU and dtype over every layer shape of the table) sits from the measured layer at the served shapes, and
what the cells would say if the law's MoE terms reproduced the table there. Goal (issue 35): B200/GB200 FP4
median ≤ 6%, p90 ≤ 15%.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import serving_moe_terms as terms  # noqa: E402
import trtllm_h100 as h100  # noqa: E402

KERNEL = "moe_torch_flow_cutlass"
RELEASE, RELEASE_KERNEL = "1.0", "moe_torch_flow"      # the v1.0 line's tables (aiconfigurator 0.8.0)
GOALS = {"b200": (6.0, 15.0), "h200": (5.0, 12.0), "h100": (5.0, None)}


def layer_shape(est) -> dict:
    """The routed layer's shape of a priced cell: hidden, experts, top-k and EP from its step graph's meta."""
    meta = max(est.steps, key=lambda s: s[0])[1].graph.meta
    return {"hidden_size": int(meta["hidden"]), "num_experts": int(meta["experts"]),
            "topk": int(meta.get("experts_per_token", 1)), "moe_ep_size": int(meta.get("ep", 1))}


def curve(data: Path, gpu: str, dtype: str, shape: dict, distribution: str,
          release: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
    """(tokens, seconds) of the measured layer at ``shape`` on ``gpu`` (median over repeated rows), MoE TP 1;
    ``release``: the v1.0 line's table under ``data`` (None where it lacks the shape)."""
    from ironlaw.core.errors import IronlawError
    from ironlaw.measure.calibrate import kerneltable
    if release:
        folder, kernel = data / terms.SYSTEM[gpu], RELEASE_KERNEL
        tables = kerneltable.read(folder, ops=("moe",), framework="trtllm", release=RELEASE)
    else:
        folder, kernel = data / terms.SYSTEM[gpu] / terms.TABLE, KERNEL
        tables = kerneltable.read(folder, ops=("moe",))
    for t in tables:
        r = t.rows
        r = r[(r.kernel_source == kernel) & (r.moe_dtype == terms.TABLE_DTYPE[dtype]) & (r.moe_tp_size == 1) &
              (r.distribution == distribution)]
        for k, v in shape.items():
            r = r[r[k] == v]
        if r.inter_size.nunique() > 1:
            raise IronlawError(f"{gpu}: several expert inter sizes at {shape}: {sorted(r.inter_size.unique())}")
        if len(r):
            med = r.groupby("num_tokens")["latency_s"].median()
            return med.index.to_numpy(float), med.to_numpy(float)
    if release:
        return None
    raise IronlawError(f"{gpu}: no {KERNEL} {dtype} rows at {shape}, {distribution} in {folder}")


def table_s(tokens_seconds: tuple[np.ndarray, np.ndarray], tokens: float) -> float:
    """The measured layer at ``tokens`` pooled tokens (module docstring: log interpolation, linear past the end)."""
    x, y = tokens_seconds
    if tokens > x[-1]:
        return float(y[-1] * tokens / x[-1])
    return float(np.exp(np.interp(math.log(max(tokens, 1.0)), np.log(x), np.log(y))))


def step_parts(e) -> tuple[float, float, int, float]:
    """(device seconds, the law's routed-layer seconds in them, MoE layers, pooled tokens) of one priced step."""
    g = e.graph
    t = e.op_time_s.reshape(len(g.ops), -1)[:, 0]
    own = sum(float(t[j]) * op.count for j, op in enumerate(g.ops)
              if terms.op_class(op, str(e.cols.kernels[j])) in ("experts", "rows"))
    layers = max(op.count for op in g.ops if op.module == "experts")
    return float(e.time_s), own, layers, float(g.meta["tokens"]) * g.meta.get("attention_dp", 1)


def repriced_s(est, tokens_seconds, step_s: float) -> float:
    """The run's seconds with every step's routed layers on the measured table (module docstring)."""
    return repriced(est, tokens_seconds, step_s)[0]


def repriced(est, tokens_seconds, step_s: float) -> tuple[float, float]:
    """(the run's seconds with every step's routed layers on the measured table, the share of them in steps whose
    host work — an eager step's kernel launches, ``step.HostStep`` — outlasts the device)."""
    total = bound = 0.0
    for n, e in est.steps:
        device, own, layers, tokens = step_parts(e)
        device += layers * table_s(tokens_seconds, tokens) - own
        host = e.graph.meta["host"].time_s
        total += n * (max(device, host) + step_s)
        bound += n * (host + step_s) if host > device else 0.0
    return total, bound / total


TWIN = {"b200": "gb200", "gb200": "b200"}      # the same Blackwell die and HBM3e


def paired(own: tuple, twin: tuple, pair: str) -> tuple[np.ndarray, np.ndarray]:
    """The layer curve at ``own``'s token counts: the slower or the faster of the two GPUs' measured times."""
    other = np.array([table_s(twin, t) for t in own[0]])
    pick = np.maximum if pair == "slower" else np.minimum
    return own[0], pick(own[1], other)


def scored(gpu: str, data: Path, routing: str, release_data: Path | None = None, pair: str = "own") -> list[dict]:
    """Every cell of ``gpu``'s CSV (``serving_moe_terms.CSV``): the tables-on error and the measured layer's
    (on the v1.0 line's table where ``release_data`` has the shape; ``pair``: on B200 and GB200, the slower or the
    faster of the two same-chip tables at each token count, or each GPU's own)."""
    constants = replace(h100.fitted(), moe_tables=True)
    h100.use_release(h100.CATALOG, routing=routing)
    out = []
    for c in h100.cells(terms.CSV[gpu]):
        c = {**c, "spec": h100.spec_for(c["model"])}
        est = h100.predict(c, c["gpu"], constants)
        on = est.output_tokens_per_s
        row = {**c, "on": 100 * (on / c["published"] - 1), "table": None, "layer": None}
        if c["model"] in h100.MOE:
            shape = layer_shape(est)
            dist = routing if shape["moe_ep_size"] > 1 else "balanced"
            dtype = c.get("precision", "fp8")
            ts = None
            if release_data is not None:
                old = routing if shape["moe_ep_size"] > 1 and routing != "balanced" else "power_law_1.2"
                ts = curve(release_data, c["gpu"], dtype, shape, old, release=True)
                dist = f"{old}, {RELEASE}" if ts is not None else dist
            if ts is None:
                ts = curve(data, c["gpu"], dtype, shape, dist)
                twin = TWIN.get(c["gpu"]) if pair != "own" else None
                if twin is not None:
                    ts = paired(ts, curve(data, twin, dtype, shape, dist), pair)
                    dist += f", {pair} of {c['gpu']} and {twin}"
            time_s, host = repriced(est, ts, constants.step_s)
            rate = est.requests * est.output / time_s
            lo, tokens, _ = terms.expert_layer_s(est)
            row.update(table=100 * (rate / c["published"] - 1), layer=(lo, table_s(ts, tokens), tokens, dist),
                       host=host)
        out.append(row)
    return out


SERVED = {"llama4-scout": (5120, 8192, 1, 16, 1), "qwen3-30b-a3b": (2048, 768, 8, 128, 1)}  # h, inter, k, E, ep
SHAPE = ["hidden_size", "inter_size", "topk", "num_experts", "moe_ep_size"]


def same_chip(data: Path) -> None:
    """``--same-chip`` (module docstring)."""
    from ironlaw.measure.calibrate import kerneltable
    rows = {}
    for gpu in ("b200", "gb200"):
        t = kerneltable.read(data / terms.SYSTEM[gpu] / terms.TABLE, ops=("moe",))[0].rows
        t = t[(t.kernel_source == KERNEL) & (t.moe_tp_size == 1) & (t.num_tokens >= 32)]
        rows[gpu] = t.groupby(["moe_dtype", "distribution", "num_tokens"] + SHAPE)["latency_s"].median()
    ratio = (rows["b200"] / rows["gb200"]).dropna()
    print("B200 / GB200 fused-MoE layer time, the same row (CUTLASS, MoE TP 1, >= 32 tokens)")
    for dt, r in ratio.groupby(level="moe_dtype"):
        off = (r > 1.5) | (r < 1 / 1.5)
        shapes = r[off].reset_index().groupby(SHAPE).ngroups
        print(f"  {dt:<9} rows {len(r):6d}: median ratio {r.median():.2f}, B200 > 1.5x GB200 {100 * (r > 1.5).mean():4.1f}%, "
              f"GB200 > 1.5x B200 {100 * (r < 1 / 1.5).mean():4.1f}% ({shapes} shapes)")
    for model, shape in SERVED.items():
        r = ratio.xs(("nvfp4", "balanced"), level=("moe_dtype", "distribution"))
        r = r.xs(shape, level=SHAPE)
        print(f"  {model} nvfp4 balanced: ratio " + " ".join(f"{int(n)}:{v:.2f}" for n, v in r.items()))


def summary(rows: list[dict], key: str) -> dict:
    """{set: (median, p90, max) |error|}: all, per GPU, dense, MoE, per model and GPU (``key``: 'on' or 'table')."""
    err = [(r, r[key] if r[key] is not None else r["on"]) for r in rows]
    groups = {"all": err}
    for g in dict.fromkeys(r["gpu"] for r in rows):
        groups[g] = [x for x in err if x[0]["gpu"] == g]
    groups.update(dense=[x for x in err if x[0]["model"] not in h100.MOE],
                  MoE=[x for x in err if x[0]["model"] in h100.MOE])
    for m, g in dict.fromkeys((r["model"], r["gpu"]) for r in rows):
        groups[f"{m} {g}"] = [x for x in err if x[0]["model"] == m and x[0]["gpu"] == g]
    return {k: h100.stats([e for _, e in v]) for k, v in groups.items() if v}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="aiconfigurator-core 0.12.0's systems/data")
    ap.add_argument("--gpu", choices=("b200", "h200", "h100"), default="b200", help="b200: the B200 and GB200 cells")
    ap.add_argument("--routing", default="power_law_1.2", help="the EP > 1 cells' routing (core.routing)")
    ap.add_argument("--cells", action="store_true", help="print every MoE cell")
    ap.add_argument("--release-data", help="aiconfigurator 0.8.0's systems/data: the v1.0 line's MoE layer where "
                                           "its table has the cell's shape")
    ap.add_argument("--same-chip", action="store_true", help="only compare the B200 and GB200 tables, row by row")
    ap.add_argument("--pair", choices=("own", "slower", "faster"), default="own",
                    help="B200 and GB200 cells: each GPU's own table (default), or the slower / faster of the two "
                         "same-chip tables at each token count (a sensitivity, not a rule)")
    a = ap.parse_args()
    if a.same_chip:
        same_chip(Path(a.data))
        return 0
    rows = scored(a.gpu, Path(a.data), a.routing, Path(a.release_data) if a.release_data else None, a.pair)
    if a.cells:
        print(f"{'model':16s} {'gpu':5s} {'ISL/OSL':>10s} {'tables':>8s} {'measured':>9s} {'host-bound':>10s}   "
              "routed layer µs: fitted form vs table (tokens, rows)")
        for r in rows:
            if r["table"] is None:
                continue
            lo, lt, tok, dist = r["layer"]
            print(f"{r['model']:16s} {r['gpu']:5s} {r['isl']:>5d}/{r['osl']:<4d} {r['on']:+7.1f}% {r['table']:+8.1f}%"
                  f" {100 * r['host']:9.0f}%   {1e6 * lo:6.0f} vs {1e6 * lt:6.0f} ({tok:.0f}, {dist})")
        print()
    on, tab = summary(rows, "on"), summary(rows, "table")
    print(f"{len(rows)} cells ({a.gpu}{' + gb200' if a.gpu == 'b200' else ''}), |error| median / p90 / max: "
          f"tables on (fitted form) -> routed layer on the measured table")
    for k in on:
        print(f"  {k:<24} {on[k][0]:5.1f}% / {on[k][1]:5.1f}% / {on[k][2]:5.1f}%  ->  "
              f"{tab[k][0]:5.1f}% / {tab[k][1]:5.1f}% / {tab[k][2]:5.1f}%")
    signed = [r["table"] for r in rows if r["table"] is not None]
    print(f"  MoE signed median {statistics.median(signed):+.1f}% ({sum(e > 0 for e in signed)} of {len(signed)} "
          "above the published throughput)")
    med, p90 = GOALS[a.gpu]
    from bench import print_table
    checks = [("all cells, median |error|", f"{tab['all'][0]:.1f}%", f"<= {med:g}%", tab["all"][0] <= med)]
    if p90 is not None:
        checks.append(("all cells, p90 |error|", f"{tab['all'][1]:.1f}%", f"<= {p90:g}%", tab["all"][1] <= p90))
    return print_table(checks, f"MoE layer on the measured table (what-if), {a.gpu}")


if __name__ == "__main__":
    sys.exit(main())
