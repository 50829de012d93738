"""Why the fitted MoE layer stays off in serving: each MoE cell with and without it, and which term moves.

    python benchmarks/serving_moe_terms.py                    # the H200 MoE cells (held out)
    python benchmarks/serving_moe_terms.py --gpu b200         # the B200 / GB200 FP4 MoE cells (held out)
    python benchmarks/serving_moe_terms.py --gpu h100         # the H100 MoE cells (the constants' own fit)
    python benchmarks/serving_moe_terms.py --data DIR         # also the measured MoE layer at each cell's shape
    python benchmarks/serving_moe_terms.py --gpu h100 --gap   # what ``on`` leaves unexplained, per step and layer
    python benchmarks/serving_moe_terms.py --release 1.0      # ``on``: the release's kernels, its MoE tables

Cells: the MoE rows of tests/data/trtllm_perf_overview_{h100,h200,blackwell}.csv (NVIDIA/TensorRT-LLM perf-overview.md,
Apache-2.0), run as benchmarks/trtllm_h200.py and trtllm_blackwell.py run them. Two predictions per cell:
``off``, the stored constants (``throughput.FITTED``: the routed experts' grouped GEMM at the H100-fitted
``expert_gemm_eta`` / ``expert_stream_eta``), and ``on``, the same constants with ``moe_tables`` (the routed
experts and their rows on the device's MoE layer fitted on measured kernel tables, measure/calibrate/moefit.py).
Printed per cell: the signed error of each, and the share of the run's time (of ``off``'s total) that the routed
experts' GEMMs, their rows (permute, activation, combine), the EP exchange, the router (its GEMM and top-k), the
shared expert, attention and everything else take, off → on. ``--routing R`` (core.routing, e.g. power_law_1.2):
``on`` loads the busiest expert rank as R does at each step's pooled tokens (``off`` stays uniform). With ``--data`` (aiconfigurator-core 0.12.0's systems/data), the per-layer time of the routed experts
in the cell's most frequent step (``off`` and ``on``) beside the measured fused-MoE layer at the same shape and
pooled token count (TensorRT-LLM 1.3.0rc20 CUTLASS, rank 0 of its EP group, balanced, power_law_1.01 and 1.2 routing,
interpolated in log tokens). With ``--release R``, ``on`` is the cell as ``serve --release R`` prices it: that
release's GEMM, attention and fused-MoE terms (``off`` stays the catalog's with the stored constants). Nothing is
fitted here. Goal: the ``on`` median |error| no worse than ``off``'s
(where it is, the tables stay off: ``models/serving/step/``).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import trtllm_h100 as h100  # noqa: E402

CSV = {"h100": h100.CSV, "h200": h100.ROOT / "tests/data/trtllm_perf_overview_h200.csv",
       "b200": h100.ROOT / "tests/data/trtllm_perf_overview_blackwell.csv"}
CLASSES = ("experts", "rows", "ep", "router", "shared", "attention", "other")
TABLE = "moe/trtllm/1.3.0rc20"
SYSTEM = {"h100": "h100_sxm", "h200": "h200_sxm", "b200": "b200_sxm", "gb200": "gb200"}
TABLE_DTYPE = {"fp8": "fp8", "fp4": "nvfp4", "bf16": "bfloat16"}


def op_class(op, kernel: str) -> str:
    if kernel.startswith(("moe_grouped_gemm", "moe_rows")) or op.attrs.get("expert") == "routed":
        return "rows" if kernel.startswith("moe_rows") else "experts"
    if op.module == "ep":
        return "ep"
    if op.module in ("router", "shared_experts"):
        return "router" if op.module == "router" else "shared"
    return "attention" if op.kind == "attention" else "other"


def shares(est) -> dict:
    """Seconds of the whole run per class (module docstring)."""
    out = dict.fromkeys(CLASSES, 0.0)
    for n, e in est.steps:
        t = e.op_time_s.reshape(len(e.graph.ops), -1)[:, 0] * e.cols.count
        for j, op in enumerate(e.graph.ops):
            out[op_class(op, str(e.cols.kernels[j]))] += n * float(t[j])
    return out


def expert_layer_s(est) -> tuple[float, float, dict]:
    """(seconds of one MoE layer's routed experts and rows in the most frequent step, its pooled tokens, meta)."""
    n, e = max(est.steps, key=lambda s: s[0])
    t = e.op_time_s.reshape(len(e.graph.ops), -1)[:, 0]
    layers = max(op.count for op in e.graph.ops if op.module == "experts")
    own = sum(float(t[j]) * op.count for j, op in enumerate(e.graph.ops)
              if op_class(op, str(e.cols.kernels[j])) in ("experts", "rows") or
              (op.module == "experts" and op.kind != "collective" and op.name in ("moe_permute", "moe_combine",
                                                                                   "mlp_act")))
    meta = e.graph.meta
    return own / layers, float(meta["tokens"]) * meta.get("attention_dp", 1), meta


def measured_layer_s(data: Path, gpu: str, dtype: str, meta: dict, tokens: float) -> dict:
    """{distribution: seconds} of the measured fused-MoE layer at this shape and pooled token count."""
    from ironlaw.measure.calibrate import kerneltable
    folder = data / SYSTEM[gpu] / TABLE
    out = {}
    for t in kerneltable.read(folder, ops=("moe",)):
        r = t.rows
        r = r[(r.kernel_source == "moe_torch_flow_cutlass") & (r.moe_dtype == TABLE_DTYPE[dtype]) &
              (r.hidden_size == meta["hidden"]) & (r.num_experts == meta["experts"]) &
              (r.topk == meta.get("experts_per_token", 1)) & (r.moe_tp_size == 1) &
              (r.moe_ep_size == meta.get("ep", 1))]
        for dist, rows in r.groupby("distribution"):
            med = rows.groupby("num_tokens")["latency_s"].median()
            out[dist] = float(np.exp(np.interp(np.log(tokens), np.log(med.index.to_numpy(float)),
                                               np.log(med.to_numpy(float)))))
    return out


def gap_line(c: dict, est) -> str:
    """``--gap``: the published run's mean step (``est``'s steps at the published rate), ``on``'s, their difference
    per step and per MoE layer, and what a host-bound eager step would need per kernel launch to explain the
    measured step; the share of steps with a prompt on one rank (as priced) and on any of ``dp`` ranks admitting
    independently, 1 - (1 - share)^dp (attention DP runs no CUDA graph unless every rank is decode-only)."""
    steps = sum(n for n, _ in est.steps)
    measured = est.time_s * est.output_tokens_per_s / c["published"] / steps
    mean = est.time_s / steps
    e = max(est.steps, key=lambda s: s[0])[1]
    layers = max(op.count for op in e.graph.ops if op.module == "experts")
    launches = max(int(x.graph.meta.get("launches", 0)) for _, x in est.steps)
    ctx = sum(n for n, x in est.steps if x.graph.meta.get("eager")) / steps
    dp = int(e.graph.meta.get("attention_dp", 1))
    return (f"   step ms: published {1e3 * measured:6.1f}, on {1e3 * mean:6.1f}, gap {1e3 * (measured - mean):5.1f} "
            f"= {1e6 * (measured - mean) / layers:5.0f} µs per MoE layer; published step / launches "
            f"{1e6 * measured / launches:5.1f} µs; prompt steps {100 * ctx:3.0f}% (any of {dp} ranks: "
            f"{100 * (1 - (1 - ctx) ** dp):3.0f}%)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", choices=("h100", "h200", "b200"), default="h200",
                    help="h200; h100 (the cells the constants were fitted on); b200 for the B200/GB200 cells")
    ap.add_argument("--data", help="aiconfigurator_core/systems/data of an unpacked aiconfigurator-core 0.12.0 wheel")
    ap.add_argument("--gap", action="store_true", help="also what the tables leave unexplained (gap_line)")
    h100.release_arg(ap)
    a = ap.parse_args()
    h100.constants_arg(a.constants)                 # --constants: both predictions (moe_kv_fraction: the KV too)
    on = replace(h100.fitted(), moe_tables=True)
    errs = {"off": [], "on": []}
    print(f"{'model':16s} {'gpu':5s} {'ISL/OSL':>10s} {'off':>7s} {'on':>7s}  " +
          "  ".join(f"{c:>12s}" for c in CLASSES) + ("   experts µs/layer off, on | table balanced, power law 1.01, 1.2"
                                                      if a.data else ""))
    for c in h100.cells(CSV[a.gpu]):
        if c["model"] not in h100.MOE:
            continue
        c = {**c, "spec": h100.spec_for(c["model"])}
        h100.use_release(h100.CATALOG)
        x = h100.predict(c, c["gpu"])
        release = a.release not in (None, h100.CATALOG)     # --release R: ``on`` is that release's engine
        h100.use_release(a.release if release else h100.CATALOG, routing=a.routing)
        y = h100.predict(c, c["gpu"], None if release else on)
        eo, en = (100 * (e.output_tokens_per_s / c["published"] - 1) for e in (x, y))
        errs["off"].append(eo)
        errs["on"].append(en)
        so, sn = shares(x), shares(y)
        line = (f"{c['model']:16s} {c['gpu']:5s} {c['isl']:>5d}/{c['osl']:<4d} {eo:+6.1f}% {en:+6.1f}%  " +
                "  ".join(f"{100 * so[k] / x.time_s:4.0f}→{100 * sn[k] / x.time_s:3.0f}%".rjust(12) for k in CLASSES))
        if a.data:
            lo, tokens, meta = expert_layer_s(x)
            ln, _, _ = expert_layer_s(y)
            m = measured_layer_s(Path(a.data), c["gpu"], c.get("precision", "fp8"), meta, tokens)
            line += (f"   {1e6 * lo:6.0f} {1e6 * ln:6.0f} | {1e6 * m.get('balanced', np.nan):6.0f} "
                     f"{1e6 * m.get('power_law_1.01', np.nan):6.0f} {1e6 * m.get('power_law_1.2', np.nan):6.0f}  ({tokens:.0f} tokens)")
        if a.gap:
            line += gap_line(c, y)
        print(line)
    mo = statistics.median(abs(e) for e in errs["off"])
    mn = statistics.median(abs(e) for e in errs["on"])
    print(f"\n{len(errs['off'])} MoE cells: |error| median off {mo:.1f}%, on {mn:.1f}%; signed median off "
          f"{statistics.median(errs['off']):+.1f}%, on {statistics.median(errs['on']):+.1f}%")
    from bench import print_table
    return print_table([("MoE cells with the fitted MoE tables, median |error|", f"{mn:.1f}%",
                         f"<= {mo:.1f}% (off)", mn <= mo)], f"serving MoE terms, {a.gpu}")


if __name__ == "__main__":
    sys.exit(main())
