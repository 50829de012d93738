"""Which TensorRT-LLM's MoE kernel the published MoE cells ran: the fitted MoE tables on, the routed layer re-timed.

    python benchmarks/serving_moe_versions.py --data DIR --old OLD              # the H100 Qwen3-235B-A22B cells
    python benchmarks/serving_moe_versions.py --gpu h200 --data DIR --old OLD   # the H200 ones (held out)

DIR: aiconfigurator-core 0.12.0's ``aiconfigurator_core/systems/data`` (the fused-MoE layer the catalog's
``moe_grouped_gemm`` / ``moe_rows`` terms are fitted on: TensorRT-LLM 1.3.0rc20, ``moe_torch_flow_cutlass``,
balanced routing). OLD: aiconfigurator 0.4.0's ``aiconfigurator/systems/data`` (PyPI wheel, NVIDIA, Apache-2.0):
the same layer measured on the same GPUs with TensorRT-LLM 0.20.0 (uniform random routing) and 1.0.0rc3
(power_law_1.01), the releases of the perf-overview revision that carries the H100/H200 MoE rows (it announces
v1.0). The older tables hold one served MoE shape, Qwen3-235B-A22B's (hidden 4096, 128 experts, top-8, inter
1536), so the cells are that model's.

Per cell: the signed error with the stored constants (``off``) and with ``moe_tables`` (``on``, as
benchmarks/serving_moe_terms.py), and the ``on``
prediction with every step's routed experts and rows (the ``experts`` and ``rows`` classes of serving_moe_terms)
scaled by (older layer / 1.3.0rc20 balanced layer) at that step's pooled token count (interpolated in log
tokens, rank 0 of EP 8, MoE TP 1); the 1.3.0rc20 power_law_1.01 rows as a third column (routing alone). A step
whose pooled tokens lie outside a table's measured range drops the cell from that column (no extrapolation).
Nothing is fitted. Goal: none — this prints a diagnosis (docs/accuracy.md, "Kernel tables", the MoE layer).
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import serving_moe_terms as smt  # noqa: E402
import trtllm_h100 as h100  # noqa: E402

MODEL = "qwen3-235b-a22b"
SHAPE = {"hidden_size": 4096, "num_experts": 128, "topk": 8, "inter_size": 1536, "moe_ep_size": 8, "moe_tp_size": 1}
OLD = {"h100": (("0.20.0", "uniform"), ("1.0.0rc3", "power_law_1.01")),
       "h200": (("0.20.0", "uniform"), ("1.0.0rc3", "power_law_1.01")),
       "b200": (("1.0.0rc6", "power_law_1.01"),)}      # the older releases aiconfigurator 0.4.0 measured per GPU


def old_curve(old: Path, gpu: str, version: str, dist: str, dtype: str) -> tuple | None:
    """(tokens, seconds) of the older table's layer at SHAPE, or None where that table lacks it."""
    path = old / smt.SYSTEM[gpu] / "trtllm" / version / "moe_perf.txt"
    if not path.exists():
        return None
    rows = {}
    with path.open() as f:
        for r in csv.DictReader(f):
            if r["moe_dtype"] != dtype or r["distribution"] != dist or r["kernel_source"] != "moe_torch_flow":
                continue
            if all(int(r[k]) == v for k, v in SHAPE.items()):
                rows.setdefault(int(r["num_tokens"]), []).append(float(r["latency"]) * 1e-3)   # ms
    if not rows:
        return None
    n = sorted(rows)
    return np.array(n, float), np.array([statistics.median(rows[k]) for k in n])


def new_curve(data: Path, gpu: str, dist: str, dtype: str) -> tuple:
    from ironlaw.measure.calibrate import kerneltable
    for t in kerneltable.read(data / smt.SYSTEM[gpu] / smt.TABLE, ops=("moe",)):
        r = t.rows
        keep = (r.kernel_source == "moe_torch_flow_cutlass") & (r.moe_dtype == dtype) & (r.distribution == dist)
        for k, v in SHAPE.items():
            keep &= r[k] == v
        med = r[keep].groupby("num_tokens")["latency_s"].median()
        return med.index.to_numpy(float), med.to_numpy(float)
    raise SystemExit(f"no MoE table under {data / smt.SYSTEM[gpu] / smt.TABLE}")


def at(curve: tuple, tokens: float) -> float | None:
    n, s = curve
    if not n[0] <= tokens <= n[-1]:
        return None
    return float(np.exp(np.interp(np.log(tokens), np.log(n), np.log(s))))


def rescaled_error(est, published: float, curve: tuple, base: tuple) -> float | None:
    """Signed % error of ``est`` with its routed layer's time scaled by curve/base per step (module docstring)."""
    extra = 0.0
    for n, e in est.steps:
        t = e.op_time_s.reshape(len(e.graph.ops), -1)[:, 0]
        routed = sum(float(t[j]) * op.count for j, op in enumerate(e.graph.ops)
                     if smt.op_class(op, str(e.cols.kernels[j])) in ("experts", "rows"))
        tokens = float(e.graph.meta["tokens"]) * e.graph.meta.get("attention_dp", 1)
        a, b = at(curve, tokens), at(base, tokens)
        if a is None or b is None:
            return None
        extra += n * routed * (a / b - 1.0)
    return 100 * (est.output_tokens_per_s * est.time_s / (est.time_s + extra) / published - 1)


def main() -> int:
    from ironlaw.models.serving import throughput as st
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", choices=tuple(OLD), default="h100", help="b200: the B200 FP4 cells (GB200 left out)")
    ap.add_argument("--data", required=True, help="aiconfigurator-core 0.12.0's aiconfigurator_core/systems/data")
    ap.add_argument("--old", required=True, help="aiconfigurator 0.4.0's aiconfigurator/systems/data")
    a = ap.parse_args()
    h100.use_release(h100.CATALOG)        # the diagnosis re-times the catalog's (1.3.0rc20) tables-on steps
    data, old = Path(a.data), Path(a.old)
    dtype = "nvfp4" if a.gpu == "b200" else "fp8"
    base = new_curve(data, a.gpu, "balanced", dtype)
    columns = {"1.3.0rc20 power_law_1.01": new_curve(data, a.gpu, "power_law_1.01", dtype)}
    for version, dist in OLD[a.gpu]:
        c = old_curve(old, a.gpu, version, dist, dtype)
        if c is not None:
            columns[f"{version} {dist}"] = c
    on = replace(st.FITTED, moe_tables=True)
    errs = {k: [] for k in columns}
    print(f"{'gpu':5s} {'ISL/OSL':>10s} {'off':>7s} {'on':>7s}  " + "  ".join(f"{k:>26s}" for k in columns))
    for c in h100.cells(smt.CSV[a.gpu]):
        if c["model"] != MODEL or c["gpu"] != a.gpu:
            continue
        cell = {**c, "spec": h100.spec_for(MODEL)}
        est = h100.predict(cell, c["gpu"], on)
        e_on = 100 * (est.output_tokens_per_s / c["published"] - 1)
        e_off = 100 * (h100.predict(cell, c["gpu"]).output_tokens_per_s / c["published"] - 1)
        cols = []
        for k, curve in columns.items():
            e = rescaled_error(est, c["published"], curve, base)
            cols.append("outside the table" if e is None else f"{e:+.1f}%")
            if e is not None:
                errs[k].append((e_off, e_on, e))
        print(f"{c['gpu']:5s} {c['isl']:>5d}/{c['osl']:<4d} {e_off:+6.1f}% {e_on:+6.1f}%  " + "  ".join(f"{x:>26s}" for x in cols))
    print()
    for k, v in errs.items():
        if v:
            off_, on_, re_ = zip(*v)
            print(f"{k:26s} {len(v):2d} cells in its range: |error| median off {statistics.median(map(abs, off_)):5.1f}%, "
                  f"on {statistics.median(map(abs, on_)):5.1f}% -> {statistics.median(map(abs, re_)):5.1f}%; signed median "
                  f"off {statistics.median(off_):+6.1f}%, on {statistics.median(on_):+6.1f}% -> {statistics.median(re_):+6.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
