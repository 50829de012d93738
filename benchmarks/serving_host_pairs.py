"""The host CPU in TensorRT-LLM's published serving cells: GB200 (Grace) against B200 (x86), and the tail per term.

    python benchmarks/serving_host_pairs.py              # the GB200/B200 pairs, the launch cost each implies, what-ifs
    python benchmarks/serving_host_pairs.py --terms      # … and the tail cells' device step by term (B200, GB200, H200)

B200 (DGX B200: 2 × Xeon Platinum 8570) and GB200 (GB200 NVL72: Grace, Neoverse V2) run the same Blackwell GPU;
the perf-overview's columns of one cell differ in the host CPU, the power limit and the memory (180 / 192 GB).
Arithmetic on the model's own priced steps and the published rates; nothing is fitted and nothing is stored.

``pairs`` (default): per cell of the single-GPU models, the share of its steps that run eagerly (they carry
prompts: no CUDA graph, the host launches each kernel), the launches of such a step, the model's device time of
its eager and its decode-only steps, the published step time (the cell's output tokens per step over the published
rate) and, if the eager steps were bound by the host's launches and the decode-only steps took the model's device
time, the host seconds per launch that the published rate implies (``implied_launch_s``; only where at least a
quarter of the steps are eager). Then the 98 Blackwell cells re-priced with the launch floor carried to each host
by a sourced speed ratio (``what_if``): the engine's ``launch_s`` (fitted on DGX H100's Xeon 8480C) times the
ratio of the host's figure to the 8480C's. The ratios (machine/catalog ``[host]`` and docs/accuracy.md, "Grace
against x86 for the executor's host work"): torch.nn.Linear's host time, NVIDIA/TransformerEngine #2053: Grace
37.08 / 13.48 µs = 2.75; DGX B200's Xeon 8570 by boost clock 3.8 / 4.0 = 0.95; one pure-Python call,
pytorch/pytorch #187862: GB200 71.6 ns against 67.5 ns on an H100 system, 1.06. The H100 cells are priced at ratio
1 in every scenario, so the H100 fit of ``launch_s`` is the same under each.

``--terms``: the cells past the p90 goal (Blackwell 15%, H200 12%), each step kind's device time per step split
by term (decode and prefill attention, dense GEMMs, the routed experts, the router, the rest, the all-to-all or
other network ops), the host's time, the step's tokens and prompts, and the cell's error.
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
# the host speed ratios the what-ifs carry ``launch_s`` by (host seconds against DGX H100's Xeon 8480C; sources
# in the module docstring)
SCENARIOS = {
    "fitted (launch_s on every host)": {"b200": 1.0, "gb200": 1.0},
    "torch Linear: 8570 0.95, Grace 2.75": {"b200": 12.81 / 13.48, "gb200": 37.08 / 13.48},
    "Python call: 8570 0.95, Grace 1.06": {"b200": 12.81 / 13.48, "gb200": 71.6 / 67.5},
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


def repriced_error(row: dict, ratio: float) -> float:
    """The cell's error (percent) with each eager step's launch floor times ``ratio`` (the executor's Python part
    unchanged): the run re-timed over the same priced steps."""
    est = row["est"]
    t = 0.0
    for n, e in est.steps:
        h = e.graph.meta["host"]
        host = h.kernels * h.per_launch_s * ratio + h.python_s
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


def print_what_if(rows: list[dict]) -> None:
    print("\nThe 98 cells with the launch floor carried by a host speed ratio (median / p90 |error|)")
    w = (38, 13, 13, 13, 13, 22, 22)
    print(h100.table_row(("scenario", "all", "dense", "MoE", "GB200", "Qwen3-30B GB200/B200", "Scout GB200/B200"), w))
    for name, ratio in SCENARIOS.items():
        errs = [{**r, "e": repriced_error(r, ratio[r["gpu"]])} for r in rows]

        def st(sel, key="e"):
            xs = [abs(r[key]) for r in errs if sel(r)]
            med, p90, _ = h100.stats(xs)
            return f"{med:.1f} / {p90:.1f}%"

        def pair(model):
            return " / ".join(f"{statistics.median(abs(r['e']) for r in errs if r['model'] == model and r['gpu'] == g):.1f}"
                              for g in ("gb200", "b200")) + "%"
        print(h100.table_row((name, st(lambda r: True), st(lambda r: r["model"] not in h100.MOE),
                              st(lambda r: r["model"] in h100.MOE), st(lambda r: r["gpu"] == "gb200"),
                              pair("qwen3-30b-a3b"), pair("llama4-scout")), w))


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


def main() -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--terms", action="store_true", help="also the tail cells' device step by term (B200, GB200, "
                                                         "H200)")
    a = ap.parse_args()
    rows = priced(BLACKWELL, ("b200", "gb200"))
    print_pairs([r for r in rows if r["model"] in SINGLE])
    print_what_if(rows)
    if a.terms:
        print_terms(rows + priced(H200, ("h200",), h100.MOE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
