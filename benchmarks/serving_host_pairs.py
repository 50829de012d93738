"""The host CPU in TensorRT-LLM's published serving cells: GB200 (Grace) against B200 (x86), and the tail per term.

    python benchmarks/serving_host_pairs.py              # the GB200/B200 pairs, the launch cost each implies, what-ifs
    python benchmarks/serving_host_pairs.py --terms      # … and the tail cells' device step by term (B200, GB200, H200)
    python benchmarks/serving_host_pairs.py --launch-s 5.438e-5   # the what-ifs at another launch_s (fit host)

B200 (DGX B200: 2 × Xeon Platinum 8570) and GB200 (GB200 NVL72: Grace, Neoverse V2) run the same Blackwell GPU;
the perf-overview's columns of one cell differ in the host CPU, the power limit and the memory (180 / 192 GB).
Arithmetic on the model's own priced steps and the published rates; nothing is fitted and nothing is stored.

``pairs`` (default): per cell of the single-GPU models, the share of its steps that run eagerly (they carry
prompts: no CUDA graph, the host launches each kernel), the launches of such a step, the model's device time of
its eager and its decode-only steps, the published step time (the cell's output tokens per step over the published
rate) and, if the eager steps were bound by the host's launches and the decode-only steps took the model's device
time, the host seconds per launch that the published rate implies (``implied_launch_s``; only where at least a
quarter of the steps are eager). Then the 98 Blackwell cells with the eager steps' launch floor re-priced
(``SCENARIOS``): the engine's ``launch_s`` (fitted on DGX H100's Xeon 8480C) carried to each host by a sourced speed
ratio, or with the one op dispatch a launch holds at the host's own ``[host] op_s``, and the routed experts launched
as one call per layer. The ratios (machine/catalog ``[host]`` and docs/accuracy.md, "Grace against x86 for the
executor's host work"): torch.nn.Linear's host time, NVIDIA/TransformerEngine #2053: Grace 37.08 / 13.48 µs = 2.75;
DGX B200's Xeon 8570 by boost clock 3.8 / 4.0 = 0.95; one pure-Python call, pytorch/pytorch #187862: GB200 71.6 ns
against 67.5 ns on an H100 system, 1.06. The H100 cells keep ratio 1 and their own op_s in every scenario, so the
H100 fit of ``launch_s`` stands under each but the fused count (which moves the H100 MoE cells' eager steps too and
is scored without a refit).

``--terms``: the cells past the p90 goal (Blackwell 15%, H200 12%), each step kind's device time per step split
by term (decode and prefill attention, dense GEMMs, the routed experts, the router, the rest, the all-to-all or
other network ops), the host's time, the step's tokens and prompts, and the cell's error; then the H200 MoE cells
beside the same cells on H100 (the GPU the engine constants were fitted on): sequences per rank and the H200/H100
throughput, published and predicted.
"""
from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import trtllm_h100 as h100  # noqa: E402

BLACKWELL = h100.ROOT / "tests/data/trtllm_perf_overview_blackwell.csv"
H200 = h100.ROOT / "tests/data/trtllm_perf_overview_h200.csv"
SINGLE = ("qwen3-30b-a3b", "llama4-scout", "llama3.3-70b")    # the models both columns run on one GPU
EAGER_LEAST = 0.25                # the eager share of steps from which a cell's implied launch cost is printed
# the what-ifs: each host's seconds per launch of an eager step from the engine's ``launch_s`` (fitted on DGX H100's
# Xeon 8480C), by a sourced ratio (module docstring) or by swapping the one op dispatch a launch holds from the fit
# host's measured ``[host] op_s`` (7.22 µs, the x86 probe) to the device host's (Grace 19.86 µs, the catalog), the
# rest of the launch as Python at the Python-call ratio or unchanged; ``fused``: the routed experts (permute, the two
# grouped GEMMs, activation, combine) launched by the host as one call per layer, as TensorRT-LLM's fused MoE op is
# (``torch.ops.trtllm.fused_moe`` in tensorrt_llm/_torch/modules/fused_moe/fused_moe_cutlass.py, NVIDIA/TensorRT-LLM,
# Apache-2.0), not one per kernel
TORCH_LINEAR = {"b200": 12.81 / 13.48, "gb200": 37.08 / 13.48}
PYTHON_CALL = {"b200": 12.81 / 13.48, "gb200": 71.6 / 67.5}
FIT_OP_S = 7.22e-6


def host_op_s(gpu: str) -> float:
    """The catalog's ``[host] op_s`` of the device's host CPU: one eager op's host time."""
    from ironlaw.machine import hardware
    from ironlaw.machine.hostcpu import of
    return of(hardware.get(gpu)).op_s


SCENARIOS = {
    "fitted (launch_s on every host)": (lambda g, L: L, False),
    "torch Linear: 8570 0.95, Grace 2.75": (lambda g, L: L * TORCH_LINEAR[g], False),
    "Python call: 8570 0.95, Grace 1.06": (lambda g, L: L * PYTHON_CALL[g], False),
    "one op at the host's op_s": (lambda g, L: L - FIT_OP_S + host_op_s(g), False),
    "… the rest at the Python-call ratio": (lambda g, L: (L - FIT_OP_S) * PYTHON_CALL[g] + host_op_s(g), False),
    "fused MoE one call (launch_s everywhere)": (lambda g, L: L, True),
    "fused MoE, one op at the host's op_s": (lambda g, L: L - FIT_OP_S + host_op_s(g), True),
}
TAIL = {"b200": 15.0, "gb200": 15.0, "h200": 12.0}


def priced(path: Path, gpus: tuple[str, ...], models: tuple[str, ...] | None = None) -> list[dict]:
    """Every cell of ``path`` on ``gpus`` (of ``models``) with its estimate and error (percent)."""
    out = []
    for c in h100.cells(path):
        if c["gpu"] not in gpus or (models and c["model"] not in models):
            continue
        c = {**c, "spec": h100.spec_for(c["model"])}
        est = h100.predict(c, c["gpu"])
        out.append({**c, "est": est, "error": 100.0 * (est.output_tokens_per_s / c["published"] - 1.0)})
    return out


def step_kinds(est) -> dict:
    """{'eager': (share, device_s, launches, per_launch_s), 'graph': (share, device_s)} over the cell's priced
    steps, each a step-weighted mean."""
    total = sum(n for n, _ in est.steps)
    out = {}
    for kind in ("eager", "graph"):
        part = [(n, e) for n, e in est.steps if bool(e.graph.meta["eager"]) == (kind == "eager")]
        w = sum(n for n, _ in part)
        if not w:
            continue
        dev = sum(n * float(e.time_s) for n, e in part) / w
        hosts = [e.graph.meta["host"] for _, e in part]
        out[kind] = (w / total, dev, max(h.kernels for h in hosts), max(h.per_launch_s for h in hosts))
    return out


def published_step_s(row: dict) -> float:
    """The published mean step: the model's mean charged step (``step.charged_s``) times predicted over published
    throughput (the same tokens per step, so the step the published rate allows)."""
    from ironlaw.models.serving.step import charged_s
    est = row["est"]
    mean = sum(n * charged_s(e, est.constants) for n, e in est.steps) / sum(n for n, _ in est.steps)
    return mean * est.output_tokens_per_s / row["published"]


def implied_launch_s(row: dict) -> float | None:
    """Host seconds per launch if the eager steps were host-bound and the decode-only ones at the model's device
    time: (published step − step_s − graph share · its device time) / (eager share · launches)."""
    kinds = step_kinds(row["est"])
    if "eager" not in kinds or kinds["eager"][0] < EAGER_LEAST:
        return None
    share, _, launches, _ = kinds["eager"]
    graph = kinds.get("graph", (0.0, 0.0))
    rest = published_step_s(row) - row["est"].constants.step_s - graph[0] * graph[1]
    return rest / (share * launches) if rest > 0 else None


def host_calls(e, fused: bool) -> int:
    """The launches the host pays for the priced step ``e``: its own count, or with the routed experts' kernels as
    one call per layer (``fused``)."""
    n = e.graph.meta["host"].kernels
    if not fused or not n:
        return n
    routed = [op for op in e.graph.ops if term_of(op) == "experts"]
    return n - sum(op.count for op in routed) + max((op.count for op in routed), default=0)


def repriced_error(row: dict, ratio: float = 1.0, per_launch=None, fused: bool = False) -> float:
    """The cell's error (percent) with each eager step's launch floor re-priced: its launches (``host_calls``) at
    ``per_launch(gpu, launch_s)`` seconds each, else at ``ratio`` × the step's own (the executor's Python part
    unchanged): the run re-timed over the same priced steps."""
    est = row["est"]
    t = 0.0
    for n, e in est.steps:
        h = e.graph.meta["host"]
        each = per_launch(row["gpu"], h.per_launch_s) if per_launch else h.per_launch_s * ratio
        host = host_calls(e, fused) * each + h.python_s
        t += n * (max(float(e.time_s), host) + est.constants.step_s)
    return 100.0 * (est.output_tokens_per_s * est.time_s / t / row["published"] - 1.0)


def print_pairs(rows: list[dict]) -> None:
    w = (15, 10, 6, 6, 6, 5, 8, 8, 8, 9, 7)
    print(h100.table_row(("model", "ISL/OSL", "gpu", "batch", "eager", "kern", "dev e ms", "dev g ms", "pub ms",
                          "implied", "error"), w))
    by = {(r["model"], r["isl"], r["osl"], r["gpu"]): r for r in rows}
    ratios = []
    for (m, i, o, g), r in sorted(by.items()):
        k = step_kinds(r["est"])
        e, gr = k.get("eager", (0.0, 0.0, 0, 0.0)), k.get("graph", (0.0, 0.0))
        imp = implied_launch_s(r)
        print(h100.table_row((m, f"{i}/{o}", g, r["est"].batch, f"{e[0]:.2f}", e[2], f"{e[1] * 1e3:.1f}",
                              f"{gr[1] * 1e3:.1f}", f"{published_step_s(r) * 1e3:.1f}",
                              "-" if imp is None else f"{imp * 1e6:.0f} µs", f"{r['error']:+.1f}%"), w))
        if g == "gb200" and (m, i, o, "b200") in by:
            b = implied_launch_s(by[(m, i, o, "b200")])
            if imp is not None and b is not None:
                ratios.append((m, f"{i}/{o}", imp / b))
    print(f"\nlaunch cost implied, GB200 over B200 (cells at least {EAGER_LEAST:.0%} eager on both): "
          + ", ".join(f"{m} {c} {q:.2f}" for m, c, q in ratios))
    if ratios:
        print(f"  median {statistics.median(q for *_, q in ratios):.2f}; sourced: torch Linear 2.89 (Grace 37.08 "
              f"against the 8570's 12.81 µs), Python call 1.06-1.09")


def print_what_if(rows: list[dict], launch_s: float | None = None) -> None:
    print("\nThe 98 cells with the eager steps' launch floor re-priced (median / p90 |error|)")
    w = (42, 13, 13, 13, 13, 22, 22, 12)
    low = low_pairs(rows)
    print(f"(pairs: the median predicted GB200/B200 ratio of the {len(low)} pairs published below {LOW_PAIR:.2f}, "
          f"published median {statistics.median(p for *_, p in low):.2f})")
    print(h100.table_row(("scenario", "all", "dense", "MoE", "GB200", "Qwen3-30B GB200/B200", "Scout GB200/B200",
                          "pairs"), w))
    if launch_s is not None:
        print(f"(launch_s {launch_s * 1e6:.1f} µs on the fit host in place of the engine's)")
    for name, (per_launch, fused) in SCENARIOS.items():
        each = per_launch if launch_s is None else (lambda g, _, f=per_launch: f(g, launch_s))
        errs = [{**r, "e": repriced_error(r, per_launch=each, fused=fused)} for r in rows]

        def st(sel, key="e"):
            xs = [abs(r[key]) for r in errs if sel(r)]
            med, p90, _ = h100.stats(xs)
            return f"{med:.1f} / {p90:.1f}%"

        def pair(model):
            return " / ".join(f"{statistics.median(abs(r['e']) for r in errs if r['model'] == model and r['gpu'] == g):.1f}"
                              for g in ("gb200", "b200")) + "%"
        pred = {(r["model"], r["isl"], r["osl"], r["gpu"]): r["published"] * (1 + r["e"] / 100) for r in errs}
        ratio = statistics.median(pred[(m, i, o, "gb200")] / pred[(m, i, o, "b200")] for m, i, o, _ in low)
        print(h100.table_row((name, st(lambda r: True), st(lambda r: r["model"] not in h100.MOE),
                              st(lambda r: r["model"] in h100.MOE), st(lambda r: r["gpu"] == "gb200"),
                              pair("qwen3-30b-a3b"), pair("llama4-scout"), f"{ratio:.2f}"), w))


LOW_PAIR = 0.85                   # a GB200/B200 pair published below this ratio: GB200 slower than B200


def low_pairs(rows: list[dict]) -> list[tuple]:
    """[(model, isl, osl, published GB200/B200 ratio)] of the pairs published below ``LOW_PAIR``."""
    by = {(r["model"], r["isl"], r["osl"], r["gpu"]): r["published"] for r in rows}
    out = [(m, i, o, by[(m, i, o, "gb200")] / p) for (m, i, o, g), p in by.items()
           if g == "b200" and (m, i, o, "gb200") in by]
    return [x for x in out if x[3] < LOW_PAIR]


TERMS = ("attn decode", "attn prefill", "gemm", "experts", "router", "network", "rest")


def term_of(op) -> str:
    if op.kind == "attention":
        return "attn prefill" if op.name.endswith("prefill") else "attn decode"
    if op.attrs.get("expert") == "routed" or op.attrs.get("role") in ("permute", "combine"):
        return "experts"
    if op.attrs.get("role") == "router":
        return "router"
    if op.kind == "matmul":
        return "gemm"
    if op.network_bytes:
        return "network"
    return "rest"


def terms_of(e) -> dict:
    """{term: seconds} of one priced step (the law's per-op times over every layer, summed by ``term_of``)."""
    out = dict.fromkeys(TERMS, 0.0)
    for op, t in zip(e.graph.ops, e.op_total_s):
        out[term_of(op)] += float(t)
    return out


def print_terms(rows: list[dict]) -> None:
    print("\nThe tail per term: each step kind's device time per step (ms), the host's, and the step's load")
    w = (16, 6, 10, 7, 6, 6, 7, 7) + (7,) * len(TERMS) + (7,)
    print(h100.table_row(("model", "gpu", "ISL/OSL", "error", "steps", "eager", "tokens", "prompts") + TERMS
                         + ("host",), w))
    tail = sorted((r for r in rows if abs(r["error"]) > TAIL[r["gpu"]]), key=lambda r: -abs(r["error"]))
    for r in tail:
        est = r["est"]
        total = sum(n for n, _ in est.steps)
        for n, e in est.steps:
            t = terms_of(e)
            h = e.graph.meta["host"]
            tokens = sum(op.attrs.get("tokens", 0) for op in e.graph.ops if op.attrs.get("role") == "combine")
            print(h100.table_row((r["model"], r["gpu"], f"{r['isl']}/{r['osl']}", f"{r['error']:+.1f}%",
                                  f"{n / total:.2f}", "yes" if e.graph.meta["eager"] else "no",
                                  f"{tokens:.0f}" if tokens else "-", f"{h.prompts:.1f}")
                                 + tuple(f"{t[k] * 1e3:.1f}" for k in TERMS) + (f"{h.time_s * 1e3:.1f}",), w))


def print_hopper(h200: list[dict], h100_rows: list[dict]) -> None:
    """The H200 MoE cells against the same cells on H100 (the fit's GPU): each GPU's error, sequences per rank,
    and the H200/H100 throughput published and predicted, worst H200 error first."""
    print("\nH200 MoE cells against the same H100 cells (the fit's): per-rank sequences, H200/H100 throughput")
    w = (16, 10, 9, 9, 10, 8, 8)
    print(h100.table_row(("model", "ISL/OSL", "H200", "H100", "per rank", "pub", "pred"), w))
    by = {(r["model"], r["isl"], r["osl"]): r for r in h100_rows}
    for r in sorted(h200, key=lambda r: r["error"]):
        q = by.get((r["model"], r["isl"], r["osl"]))
        if q is None:
            continue
        e, f = r["est"], q["est"]
        print(h100.table_row((r["model"], f"{r['isl']}/{r['osl']}", f"{r['error']:+.1f}%", f"{q['error']:+.1f}%",
                              f"{e.batch_per_engine}/{f.batch_per_engine}", f"{r['published'] / q['published']:.2f}",
                              f"{e.output_tokens_per_s / f.output_tokens_per_s:.2f}"), w))


def main() -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--terms", action="store_true", help="also the tail cells' device step by term (B200, GB200, "
                                                         "H200)")
    ap.add_argument("--launch-s", type=float, default=None,
                    help="the what-ifs with this launch_s on the fit host (seconds; e.g. 5.438e-5, trtllm_h100.py's "
                         "leave-one-model-out refit without Llama 3.3 70B), each step's device time as priced")
    a = ap.parse_args()
    rows = priced(BLACKWELL, ("b200", "gb200"))
    print_pairs([r for r in rows if r["model"] in SINGLE])
    print_what_if(rows, a.launch_s)
    if a.terms:
        h200 = priced(H200, ("h200",), h100.MOE)
        print_terms(rows + h200)
        print_hopper(h200, priced(h100.CSV, ("h100",), h100.MOE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
