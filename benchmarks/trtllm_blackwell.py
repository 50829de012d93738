"""Offline max-throughput serving against TensorRT-LLM's published B200 and GB200 FP4 tables, HELD OUT.

    python benchmarks/trtllm_blackwell.py
    python benchmarks/trtllm_blackwell.py --host-costs STEP_S,SEQUENCE_S   # what-if: the executor's host work
    python benchmarks/trtllm_blackwell.py --release cell   # each cell on the kernels of the release it ran (1.0)
    python benchmarks/trtllm_blackwell.py --tail   # … and the cells past the p90 goal, with what binds their steps

Also printed: the GB200 / B200 ratio of each cell both GPUs ran (the same Blackwell GPU; GB200 has the higher power
limit and a Grace host), published and predicted, and the pairs whose published ratio no prediction at the
predicted ratio meets within 12% on both cells (``floor``): published GB200 cells up to 39% below B200's.

Source: tests/data/trtllm_perf_overview_blackwell.csv (NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md,
Apache-2.0): the B200 180GB (DGX B200) and GB200 192GB (GB200 NVL72) columns of the page whose H100 columns fit the
serving constants (benchmarks/trtllm_h100.py), NVFP4 ModelOpt checkpoints. Every cell is predicted with the
constants in src/ironlaw/models/serving/engine.py (fitted on the H100 FP8 cells only) and the ``b200`` / ``gb200``
catalog entries (datasheet peaks: FP4 9 / 10 PFLOPS dense, 8 TB/s), run as the H100 cells are
(``trtllm_h100.predict``: --kv-fraction 0.95, the page's $num_requests, trtllm-bench's own engine limits, MoE rows
with EP = TP and attention DP where TP > 1, an FP8 KV cache and FP8 attention, ``graph.attention_dtype``). No
per-GPU or per-dtype factor: only the datasheet and the weights' format change from H100 FP8. Each cell is priced
on the catalog's kernel terms; ``--release cell`` on the kernels of the TensorRT-LLM release it ran (the CSV's
``release`` column, 1.0: ``serve --release 1.0``, the terms fitted on that release's B200 / GB200 tables).
"""
from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import trtllm_h100 as h100  # noqa: E402

CSV = h100.ROOT / "tests/data/trtllm_perf_overview_blackwell.csv"
TAIL = 15.0                        # the p90 goal of these cells (issue 35): a cell past it is in the tail


def scored(constants=None, gpus=("b200", "gb200")) -> list[dict]:
    """Every B200 and GB200 cell (of ``gpus``) with its prediction and error (percent), the H100-fitted constants
    (or ``constants``)."""
    out = []
    for c in h100.cells(CSV):
        if c["gpu"] not in gpus:
            continue
        c = {**c, "spec": h100.spec_for(c["model"])}
        est = h100.predict(c, c["gpu"], constants)
        out.append({**c, "predicted": est.output_tokens_per_s, "batch": est.batch, "limit": est.batch_limit,
                    "error": 100.0 * (est.output_tokens_per_s / c["published"] - 1.0), **run_shares(est)})
    return out


def run_shares(est) -> dict:
    """Where a cell's predicted run goes (shares of its time): ``eager``, in steps that carry prompts (no CUDA
    graph; the host launches every kernel); ``host``, the time by which the host's work outlasts the device's in
    those steps (the launch floor, ``step.host_floor_s``: what an eager step costs beyond its kernels);
    ``ramp``, the one wave's admission steps (0 where the cell is not one wave, ``throughput.one_wave``)."""
    eager = host = 0.0
    for n, e in est.steps:
        dev, h = float(e.time_s), e.graph.meta["host"].time_s
        if e.graph.meta["eager"]:
            eager += n * (max(dev, h) + est.constants.step_s)
        host += n * max(0.0, h - dev)
    ramp = 0.0
    if est.steady.get("ramp_steps"):                  # one wave: its first priced part is the ramp
        n, e = est.steps[0]
        ramp = n * (max(float(e.time_s), e.graph.meta["host"].time_s) + est.constants.step_s)
    return {"eager_share": eager / est.time_s, "host_share": host / est.time_s, "ramp_share": ramp / est.time_s}


def summary(rows: list[dict]) -> dict:
    """{set: (median, p90, max) of |error|} over all cells, per GPU, dense and MoE, per model and GPU."""
    groups = {"all": rows}
    for g in dict.fromkeys(r["gpu"] for r in rows):
        groups[g] = [r for r in rows if r["gpu"] == g]
    groups["dense"] = [r for r in rows if r["model"] not in h100.MOE]
    groups["MoE"] = [r for r in rows if r["model"] in h100.MOE]
    for m, g in dict.fromkeys((r["model"], r["gpu"]) for r in rows):
        groups[f"{m} {g}"] = [r for r in rows if r["model"] == m and r["gpu"] == g]
    return {g: h100.stats([r["error"] for r in rs]) for g, rs in groups.items() if rs}


def gap(rows: list[dict]) -> dict:
    """{model: [(ISL/OSL, published GB200/B200, predicted GB200/B200)]} over the cells both GPUs ran: same
    Blackwell GPU, a Grace host against DGX B200's x86 one."""
    by = {(r["model"], r["isl"], r["osl"], r["gpu"]): r for r in rows}
    out: dict = {}
    for (m, i, o, g), r in by.items():
        b = by.get((m, i, o, "b200"))
        if g == "gb200" and b is not None:
            out.setdefault(m, []).append((f"{i}/{o}", r["published"] / b["published"], r["predicted"] / b["predicted"]))
    return out


def floor(published: float, predicted: float) -> float:
    """The least max |error| (percent) any prediction with the ``predicted`` GB200/B200 ratio reaches on a pair of
    cells whose published ratio is ``published``: the two cells' errors at one common scale s are s·a − 1 and
    s·a·predicted/published − 1, and their larger magnitude is least where they are equal and opposite,
    |predicted − published| / (predicted + published). At least one cell of the pair is that far off."""
    return 100.0 * abs(predicted - published) / (predicted + published)


def floors(rows: list[dict], least: float = 12.0) -> list[tuple]:
    """[(model, ISL/OSL, published ratio, predicted ratio, floor)] of the GB200/B200 pairs whose floor is past
    ``least`` percent (``floor``), largest first."""
    out = [(m, c, p, q, floor(p, q)) for m, cells in gap(rows).items() for c, p, q in cells]
    return sorted((f for f in out if f[4] > least), key=lambda f: -f[4])


def print_tail(rows: list[dict]) -> None:
    """The cells past ``TAIL``, largest first, with where their run goes (``run_shares``) and the floor of their
    GB200/B200 pair (``floor``); then how many are past it against the most the p90 goal leaves (a tenth)."""
    pairs = {(m, c): f for m, c, _, _, f in floors(rows, 0.0)}
    w = (16, 6, 10, 8, 10, 7, 7, 7, 7)
    print(f"\nThe tail: cells past |error| {TAIL:.0f}%, largest first (shares of the predicted run)")
    print(h100.table_row(("model", "gpu", "ISL/OSL", "error", "set by", "eager", "host", "ramp", "floor"), w))
    tail = sorted((r for r in rows if abs(r["error"]) > TAIL), key=lambda r: -abs(r["error"]))
    for r in tail:
        f = pairs.get((r["model"], f"{r['isl']}/{r['osl']}"))
        print(h100.table_row((r["model"], r["gpu"], f"{r['isl']}/{r['osl']}", f"{r['error']:+.1f}%", r["limit"],
                              f"{r['eager_share']:.2f}", f"{r['host_share']:.2f}", f"{r['ramp_share']:.2f}",
                              "-" if f is None else f"{f:.1f}%"), w))
    forced = sum(1 for _, _, _, _, f in floors(rows, TAIL))
    room = len(rows) - math.ceil(0.9 * len(rows))
    print(f"  {len(tail)} cells past {TAIL:.0f}%; the p90 goal leaves room for {room}; {forced} GB200/B200 pairs have "
          f"a floor past {TAIL:.0f}% (one cell of each is past it whatever the common scale)")
    print(f"  too slow, the host outlasting the device in at least a fifth of the run: "
          f"{sum(r['error'] < 0 and r['host_share'] >= 0.2 for r in tail)}; too fast, mostly decode-only steps "
          f"(eager under a tenth): {sum(r['error'] > 0 and r['eager_share'] < 0.1 for r in tail)}")


def main() -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    h100.release_arg(ap)
    h100.host_option(ap)
    ap.add_argument("--gpu", nargs="+", choices=("b200", "gb200"), default=("b200", "gb200"))
    ap.add_argument("--tail", action="store_true", help="print the cells past the p90 goal with where their run "
                                                        "goes (print_tail)")
    a = ap.parse_args()
    h100.use_release(a.release, a.release_classes, a.routing)
    h100.constants_arg(a.constants)
    rows = scored(h100.constants_of(a), tuple(a.gpu))
    w = (16, 6, 3, 10, 10, 10, 8, 6, 10)
    print(h100.table_row(("model", "gpu", "tp", "ISL/OSL", "published", "predicted", "error", "batch", "set by"), w))
    for r in rows:
        print(h100.table_row((r["model"], r["gpu"], r["tp"], f"{r['isl']}/{r['osl']}", f"{r['published']:,.0f}",
                          f"{r['predicted']:,.0f}", f"{r['error']:+.1f}%", r["batch"], r["limit"]), w))
    print(f"\nB200 and GB200 FP4 cells, held out (H100-fitted constants, datasheets): {len(rows)}")
    for g, (med, p90, mx) in summary(rows).items():
        print(f"  {g:<24} |error| median {med:.1f}%  p90 {p90:.1f}%  max {mx:.1f}%")
    print("\nGB200 / B200 throughput, the same cell (Grace host vs x86): published, predicted")
    for m, cells in gap(rows).items():
        pairs = "  ".join(f"{c} {p:.2f}/{q:.2f}" for c, p, q in cells)
        print(f"  {m:<16} {pairs}")
    tight = floors(rows)
    print(f"  pairs no prediction at its predicted ratio gets both cells of within 12% (the floor: the least "
          f"max |error| of the two): {len(tight)}")
    for m, c, p, q, f in tight:
        print(f"    {m:<16} {c:>10}  published {p:.2f}, predicted {q:.2f}: floor {f:.1f}%")
    signed = [r["error"] for r in rows]
    print(f"  signed error: median {statistics.median(signed):+.1f}% ({sum(e > 0 for e in signed)} of "
          f"{len(signed)} cells above the published throughput)")
    if a.tail:
        print_tail(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
