"""One published MoE serving cell taken apart: its routed layer on the end-to-end η, on the kernel tables, and as
the published rate implies it.

    python benchmarks/serve_moe_cells.py --data DIR [--release-data DIR08]          # the six default cells
    python benchmarks/serve_moe_cells.py --data DIR --cell h200:llama4-scout:1000/1000
    python benchmarks/serve_moe_cells.py --data DIR --all        # every EP cell: implied / measured, by batch limit
    (DIR: aiconfigurator-core 0.12.0's systems/data; DIR08: aiconfigurator 0.8.0's systems/data)

Cells: tests/data/trtllm_perf_overview_{h100,h200,blackwell}.csv (NVIDIA/TensorRT-LLM perf-overview.md, Apache-2.0;
``b200:`` and ``gb200:`` name the Blackwell file's rows), priced as
benchmarks/trtllm_h200.py prices them (``engine.FITTED``; attention DP, EP = TP). Per cell, in its most frequent
step (the steady decode step at the rank's CUDA-graph batch):
    layout       sequences per attention rank, the padded CUDA-graph batch, the tokens the ranks pool into each
                 MoE layer, the routed rows and local experts of the busiest rank (uniform routing, as the step
                 routes them by default, and power_law_1.2, aiconfigurator's serving default: ``core.routing``),
                 and the (MoE TP, MoE EP) layouts the 1.3.0rc20 table times at the cell's layer shape
    per layer    µs of one MoE layer's routed experts (grouped GEMMs, permute, activation, combine):
      FITTED     the end-to-end η: weights / (BW · expert_stream_eta) + FLOPs / (peak · expert_gemm_eta, carried)
                 + the rows at ``memory_eta``, as the step prices them
      tables     the step with ``moe_tables`` (``moe_grouped_gemm.fp8`` / ``moe_rows.fp8``, fitted on the
                 balanced rows by measure/calibrate/moefit.py), uniform and power_law_1.2 routing
      measured   the fused-MoE layer itself at the cell's shape (MoE TP 1, the cell's EP) and pooled tokens:
                 TensorRT-LLM 1.3.0rc20 ``moe_torch_flow_cutlass`` (balanced, power_law_1.01, power_law_1.2) and,
                 with --release-data, the v1.0 line's table (1.0.0rc3 on Hopper, 1.0.0rc6 on Blackwell:
                 ``moe_torch_flow``, power_law_1.2, its only routing) where it times the shape
                 (``moe_measured_layer.curve``)
      implied    what the published rate leaves for the routed layer when the rest of the run is priced as
                 FITTED prices it: the FITTED layer × (its routed seconds − (FITTED's run − the published run's))
                 / its routed seconds
    errors       the cell's signed error: FITTED, tables (uniform), tables (power_law_1.2)
Nothing is fitted. What it shows (docs/accuracy.md, "The routed experts on the kernel tables, cell by cell").
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import moe_measured_layer as mml  # noqa: E402
import serving_moe_terms as terms  # noqa: E402
import trtllm_h100 as h100  # noqa: E402

CELLS = ("h200:qwen3-235b-a22b:128/2048", "h200:llama4-maverick:1000/2000",
         "h100:qwen3-235b-a22b:128/2048", "h100:llama4-maverick:1000/2000",
         "b200:qwen3-235b-a22b:128/2048", "b200:llama4-maverick:1000/2000")
SKEW = "power_law_1.2"


def cell_of(text: str) -> dict:
    gpu, model, io = text.split(":")
    isl, osl = (int(v) for v in io.split("/"))
    for c in h100.cells(terms.CSV["b200" if gpu == "gb200" else gpu]):
        if c["model"] == model and c["isl"] == isl and c["osl"] == osl and c["gpu"] == gpu:
            return {**c, "spec": h100.spec_for(model)}
    raise SystemExit(f"no published {gpu} cell {model} {isl}/{osl}")


def priced(c: dict, constants, routing: str | None):
    h100.use_release(h100.CATALOG, routing=routing)
    est = h100.predict(c, c["gpu"], constants)
    return est, 100.0 * (est.output_tokens_per_s / c["published"] - 1.0)


def fitted_split(est) -> tuple[float, float, float, float]:
    """(weights, FLOPs, the GEMMs' activations, rows) µs of one MoE layer's routed experts on FITTED's η in the most
    frequent step: the grouped GEMMs' weights at ``expert_stream_eta``, their FLOPs at the carried
    ``expert_gemm_eta``, their activations in and out at ``memory_eta`` (the one after the other: serial share 1),
    and the permute, activation and combine (the rest of the layer)."""
    from ironlaw.machine import hardware
    from ironlaw.models.serving.expertcarry import expert_ratio
    e = max(est.steps, key=lambda s: s[0])[1]
    hw, c = hardware.get(est.hw.name), est.constants
    bw = hw.memory[hw.device_tier].bw_Bps
    eta_c = c.expert_gemm_eta * expert_ratio(hw, est.dtype)
    gemms = [op for op in e.graph.ops if op.kind == "matmul" and op.attrs.get("expert") == "routed"]
    w = sum(op.bytes.get("weights", 0.0) for op in gemms) / (bw * c.expert_stream_eta)
    f = sum(op.flops for op in gemms) / (hw.peak(est.dtype) * eta_c)
    a = sum(v for op in gemms for k, v in op.bytes.items() if k != "weights") / (bw * c.memory_eta)
    layer = terms.expert_layer_s(est)[0]
    return 1e6 * w, 1e6 * f, 1e6 * a, 1e6 * (layer - w - f - a)


def busiest(meta: dict, pooled: float, routing: str | None) -> tuple[float, float]:
    """(routed rows, local experts reached) of the busiest EP rank at ``pooled`` tokens."""
    from ironlaw.core.routing import slowest_rank
    e, k, ep = int(meta["experts"]), int(meta.get("experts_per_token", 1)), int(meta.get("ep", 1))
    if routing is None:
        return pooled * k / ep, e / ep * (1.0 - (1.0 - k / e) ** pooled)
    return slowest_rank(routing, pooled, e, k, ep)


def layouts(data: Path, gpu: str, dtype: str, shape: dict) -> str:
    """Whether the 1.3.0rc20 table times ``shape`` (hidden, experts, top-k) at MoE TP 1 and the cell's EP (the
    layout the served layer runs), and how many (MoE TP, MoE EP) layouts it times there."""
    from ironlaw.measure.calibrate import kerneltable
    found = set()
    for t in kerneltable.read(data / terms.SYSTEM[gpu] / terms.TABLE, ops=("moe",)):
        r = t.rows
        r = r[(r.kernel_source == mml.KERNEL) & (r.moe_dtype == terms.TABLE_DTYPE[dtype]) &
              (r.hidden_size == shape["hidden_size"]) & (r.num_experts == shape["num_experts"]) &
              (r.topk == shape["topk"])]
        found |= set(zip(r.moe_tp_size.astype(int), r.moe_ep_size.astype(int)))
    own = (1, shape["moe_ep_size"]) in found
    return f"TP 1 / EP {shape['moe_ep_size']} {'timed' if own else 'NOT timed'} ({len(found)} layouts at this shape)"


def measured(data: Path, release: Path | None, c: dict, shape: dict, tokens: float) -> dict:
    dtype = c.get("precision", "fp8")
    out = {d: mml.table_s(mml.curve(data, c["gpu"], dtype, shape, d), tokens)
           for d in ("balanced", "power_law_1.01", SKEW)}
    old = mml.curve(release, c["gpu"], dtype, shape, SKEW, release=True) if release else None
    out["1.0"] = mml.table_s(old, tokens) if old is not None else None
    return out


def implied_us(c: dict, x) -> tuple[float, float]:
    """(the routed layers' seconds in FITTED's run ``x``, the µs per MoE layer of its most frequent step that the
    published rate implies): the FITTED layer × (its routed seconds − (FITTED's run − the published run's)) / its
    routed seconds (module docstring)."""
    share = terms.shares(x)
    routed = share["experts"] + share["rows"]
    published_s = x.time_s * x.output_tokens_per_s / c["published"]
    return routed, 1e6 * terms.expert_layer_s(x)[0] * (routed - (x.time_s - published_s)) / routed


def survey(data: Path) -> None:
    """``--all``: every expert-parallel MoE cell's implied layer over the measured balanced layer at its pooled
    tokens, one line each, then the median per GPU, model and what set the batch."""
    import statistics
    groups: dict = {}
    for gpu in ("h100", "h200", "b200"):
        for c in h100.cells(terms.CSV[gpu]):
            if c["model"] not in h100.MOE or c["tp"] == 1:
                continue
            c = {**c, "spec": h100.spec_for(c["model"])}
            x, err = priced(c, None, None)
            meta = max(x.steps, key=lambda s: s[0])[1].graph.meta
            pooled = float(meta["tokens"]) * meta.get("attention_dp", 1)
            balanced = 1e6 * mml.table_s(mml.curve(data, c["gpu"], c.get("precision", "fp8"), mml.layer_shape(x),
                                                   "balanced"), pooled)
            ratio = implied_us(c, x)[1] / balanced
            groups.setdefault((c["gpu"], c["model"], x.batch_limit), []).append(ratio)
            print(f"{c['gpu']:6s} {c['model']:16s} {c['isl']:>5d}/{c['osl']:<5d} set by {x.batch_limit:9s} "
                  f"{pooled:>7,.0f} pooled tokens  FITTED {err:+6.1f}%  implied / measured balanced {ratio:5.2f}")
    print("\nmedian implied / measured balanced, by GPU, model and what set the batch:")
    for (gpu, model, limit), r in sorted(groups.items()):
        print(f"  {gpu:6s} {model:16s} {limit:9s} {len(r):3d} cells  {statistics.median(r):5.2f}  "
              f"(range {min(r):.2f}–{max(r):.2f})")


def report(c: dict, data: Path, release: Path | None) -> None:
    on = replace(h100.fitted(), moe_tables=True)
    x, err_off = priced(c, None, None)
    y, err_on = priced(c, on, None)
    z, err_skew = priced(c, on, SKEW)
    n, e = max(x.steps, key=lambda s: s[0])
    meta = e.graph.meta
    pooled = float(meta["tokens"]) * meta.get("attention_dp", 1)
    shape = mml.layer_shape(x)
    r_u, u_u = busiest(meta, pooled, None)
    r_s, u_s = busiest(meta, pooled, SKEW)
    w, f, act, rows = fitted_split(x)
    routed, implied = implied_us(c, x)
    m = measured(data, release, c, shape, pooled)
    print(f"{c['gpu'].upper()} {c['model']} {c['isl']}/{c['osl']}, TP = EP {c['tp']}, attention DP: published "
          f"{c['published']:,.0f} tok/s; batch {x.batch:,} ({x.batch_per_engine} per rank, set by {x.batch_limit}); "
          f"most frequent step ({n:,.0f} of {sum(k for k, _ in x.steps):,.0f}): {meta['tokens']:,} tokens per rank, "
          f"{pooled:,.0f} pooled")
    print(f"  busiest rank: uniform {r_u:,.0f} rows over {u_u:.1f} of {shape['num_experts'] // shape['moe_ep_size']} "
          f"local experts ({r_u / u_u:,.0f} rows each); {SKEW} {r_s:,.0f} rows over {u_s:.1f} "
          f"({r_s / max(u_s, 1e-9):,.0f} each); 1.3.0rc20 table: "
          f"{layouts(data, c['gpu'], c.get('precision', 'fp8'), shape)}")
    old = f"{1e6 * m['1.0']:,.0f}" if m["1.0"] is not None else "no rows at this shape"
    print(f"  µs per MoE layer: FITTED {w + f + act + rows:,.0f} (weights {w:,.0f} + FLOPs {f:,.0f} + GEMM "
          f"activations {act:,.0f} + rows {rows:,.0f}); "
          f"tables uniform {1e6 * terms.expert_layer_s(y)[0]:,.0f}, {SKEW} {1e6 * terms.expert_layer_s(z)[0]:,.0f}; "
          f"measured 1.3.0rc20 balanced {1e6 * m['balanced']:,.0f}, power_law_1.01 {1e6 * m['power_law_1.01']:,.0f}, "
          f"{SKEW} {1e6 * m[SKEW]:,.0f}; v1.0 line {SKEW} {old}; implied by the published rate {implied:,.0f}")
    print(f"  routed layer {100 * routed / x.time_s:.0f}% of FITTED's run; implied / measured balanced "
          f"{implied / (1e6 * m['balanced']):.2f}; signed error FITTED {err_off:+.1f}%, tables {err_on:+.1f}%, "
          f"tables {SKEW} {err_skew:+.1f}%")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="aiconfigurator-core 0.12.0's systems/data")
    ap.add_argument("--release-data", help="aiconfigurator 0.8.0's systems/data (the v1.0 line's MoE tables)")
    ap.add_argument("--cell", action="append", help="gpu:model:isl/osl (repeatable; default: the six of CELLS)")
    ap.add_argument("--all", action="store_true", help="every expert-parallel MoE cell's implied / measured layer")
    a = ap.parse_args()
    if a.all:
        survey(Path(a.data))
        return 0
    for text in a.cell or CELLS:
        report(cell_of(text), Path(a.data), Path(a.release_data) if a.release_data else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
