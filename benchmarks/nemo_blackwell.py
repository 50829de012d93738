"""Training steps against NVIDIA's published Blackwell pre-training throughput, held out (NeMo Megatron-Bridge 25.11).

    python benchmarks/nemo_blackwell.py

Prints, per row of tests/data/nemo_megatron_bridge_25.11_blackwell.csv (DGX-GB300, DGX-GB200, DGX-B200), the
published tokens/s per GPU, ironlaw's prediction with the layout the table prints on the catalog entry of the
row's system (tests/nemo_ref.py: datasheets and kernel-table calibration; nothing is fitted on these rows or per
row; the one layout its recipe contradicts, nemo_ref.HELD_RECIPE, runs the recipe's; each row the CUDA graphs
its recipe sets, nemo_ref.recipe_graph, and bf16 attention, as no recipe sets FP8 attention), the error and what
binds the predicted step. Then, for the MoE rows, per layer and micro-batch on a stage: the milliseconds the published
throughput implies (step ÷ (micro-batches + (pp − 1)/vp) ÷ layers per stage), those the 25.09 token-drop run of
the same layout implies where there is one (tests/data/nemo_megatron_bridge_25.09_tokendrop.csv: experts padded
to capacity, no device→host sync, whole layers CUDA-graph-capturable), ironlaw's, and ironlaw's parts (summed op
times, before overlap): the routed and shared experts' GEMMs, attention (projections and core), the expert
all-to-alls, the rest; the host's time to issue the layer's kernels (``ironlaw.models.host``) and what of it the
step exposes; the token dispatcher each row's config runs (tests/nemo_ref.HELD_CONFIG: Megatron-Core's alltoall
or the flex dispatcher with HybridEP, ``ironlaw.models.dispatcher``) and its experts per GPU. Then the MoE rows'
|error| by dispatcher. Last, the median and largest |error| of the dense rows, the MoE rows and all rows against
the issue's goals (dense ≤ 5% / ≤ 12%, MoE ≤ 12% / ≤ 30%), and each row's command.

    python benchmarks/nemo_blackwell.py --host-counts

prints instead, per MoE row, the host's kernels per MoE layer and micro-batch by part (``ironlaw.models.host``,
counted from Megatron-Core's and Transformer Engine's code), their time at the catalog's ``[host]`` costs, and the
serial bound (that host time and ironlaw's layer one after the other: the longest any placement of device→host
syncs can make the layer, ``nemo_ref.serial_bound_s``), the cost per launch at which the host alone would take as
long as the published layer, and last the Grace ÷ x86 cost per launch the rows allow beside the catalog's
(``nemo_ref.launch_cost_ratio``). Then, per MoE row, the published layer's time beyond ironlaw's per kernel the
host issues for each local expert (``nemo_ref.expert_gap``), and its range on the x86 alltoall rows with at least
16 local experts and on the flex rows.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
GOALS = {"dense": (0.05, 0.12), "MoE": (0.12, 0.30), "all predicted": (0.12, 0.30)}


def main() -> int:
    import argparse
    import statistics
    from ironlaw.core.errors import IronlawError
    from nemo_ref import BLACKWELL, DENSE, command, predict, summary, table
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host-cost-factor", type=float, default=1.0, metavar="F",
                    help="diagnostic: every system's [host] op_s and module_s times F (how large a host cost "
                         "the rows would need; nothing is fitted)")
    ap.add_argument("--host-counts", action="store_true",
                    help="diagnostic: per MoE row, the host's kernels per MoE layer by part, their priced time and "
                         "the cost per launch a host-bound layer would need (nothing is fitted)")
    args = ap.parse_args()
    hardware = _Hosts(args.host_cost_factor)
    rows = table(BLACKWELL)
    if args.host_counts:
        from nemo_ref import print_expert_gaps, print_host_counts
        moe = [r for r in rows if r["model"] not in DENSE]
        runs = [(r["system"], r, predict(r, hardware.get(r["system"])), hardware.get(r["system"])) for r in moe]
        print_host_counts(runs)
        print()
        print_expert_gaps(runs)
        return 0
    errs = {"dense": [], "MoE": [], "all predicted": []}
    print(f"{'system':6s} {'model':16s} {'GPUs':>5} {'prec':>5} {'published':>9} {'ironlaw':>8} {'error':>7} "
          f"{'MFU':>6}  binds")
    for r in rows:
        head = f"{r['system']:6s} {r['model']:16s} {r['gpus']:5d} {r['precision']:>5} {r['tokens_per_s_per_gpu']:9.0f}"
        try:
            st = predict(r, hardware.get(r["system"]))
        except IronlawError as e:
            print(f"{head} {'—':>8}  {e}")
            continue
        err = st.tokens_per_s_per_gpu / r["tokens_per_s_per_gpu"] - 1
        errs["all predicted"].append(abs(err))
        errs["dense" if r["model"] in DENSE else "MoE"].append(abs(err))
        print(f"{head} {st.tokens_per_s_per_gpu:8.0f} {err:+7.1%} {st.mfu:6.1%}  {st.bottleneck['resource']}")
    print()
    by_dispatcher = moe_layers(rows, hardware)
    print()
    for name, e in sorted(by_dispatcher.items()):
        print(f"MoE rows, {name + ' dispatcher:':20s} {len(e)} rows, |error| median {statistics.median(e):.1%}, "
              f"min {min(e):.1%}, max {max(e):.1%}")
    print()
    for r in rows:
        print(command(r))
    print()
    for what, e in errs.items():
        n = sum(1 for r in rows if what == "all predicted" or (r["model"] in DENSE) == (what == "dense"))
        if e:
            print(summary(what, e, n, *GOALS[what]))
    return 0


class _Hosts:
    """``hardware.get`` with each device's ``[host]`` per-op costs scaled by ``factor`` (1: as catalogued)."""

    def __init__(self, factor: float):
        if factor <= 0:
            raise SystemExit(f"--host-cost-factor must be positive, got {factor:g}")
        self.factor = factor

    def get(self, name: str):
        import dataclasses
        from ironlaw.machine import hardware
        hw = hardware.get(name)
        h = hw.extra.get("host")
        if self.factor == 1.0 or h is None:
            return hw
        h = dataclasses.replace(h, op_s=h.op_s * self.factor, module_s=h.module_s * self.factor)
        return dataclasses.replace(hw, extra={**hw.extra, "host": h})


def moe_layers(rows: list, hardware) -> dict:
    """Per MoE row, milliseconds per layer and micro-batch on a stage: published (25.11, dropless), the 25.09
    token-drop run of the same layout, ironlaw and its parts (``nemo_ref.layer_parts``), the host's issue time and
    its exposed part; the row's dispatcher and experts per GPU. Returns each dispatcher's rows' |error|."""
    from nemo_ref import DENSE, layer_parts, layer_s, predict, tokendrop
    print("ms per layer and micro-batch on a stage; ironlaw's parts are op times summed before overlap")
    print(f"{'system':6s} {'model':16s} {'prec':>5} {'EP':>3} {'MBS':>3} {'rows/exp':>8} {'published':>9} "
          f"{'tokendrop':>9} {'ironlaw':>8} {'experts':>7} {'attn':>6} {'a2a':>6} {'rest':>6} {'host':>6} "
          f"{'exposed':>7} {'dispatcher':>10} {'local':>5}")
    by_dispatcher: dict[str, list] = {}
    for r in rows:
        if r["model"] in DENSE:
            continue
        st = predict(r, hardware.get(r["system"]))
        by_dispatcher.setdefault(st.plan.moe_dispatcher, []).append(
            abs(st.tokens_per_s_per_gpu / r["tokens_per_s_per_gpu"] - 1))
        p, meta = st.plan, st.per_microbatch.graph.meta
        implied, ours = layer_s(r, st)
        t = tokendrop(r)
        td = f"{implied * r['tokens_per_s_per_gpu'] / t['tokens_per_s_per_gpu'] * 1e3:9.1f}" if t else f"{'—':>9}"
        rows_e = meta["tokens"] * meta["experts_per_token"] * p.ep / meta["experts"]
        parts = layer_parts(st)
        per = p.microbatches * meta["layers"] / p.pp            # layer passes per step on the stage
        print(f"{r['system']:6s} {r['model']:16s} {r['precision']:>5} {p.ep:3d} {p.micro_batch:3d} {rows_e:8.0f} "
              f"{implied * 1e3:9.1f} {td} {ours * 1e3:8.1f} "
              + " ".join(f"{parts[k] * 1e3:{w}.1f}" for k, w in (("experts", 7), ("attention", 6), ("a2a", 6),
                                                                  ("rest", 6)))
              + f" {st.breakdown.host_issue_s / per * 1e3:6.2f} {st.breakdown.host_exposed_s / per * 1e3:7.2f}"
              + f" {p.moe_dispatcher:>10} {meta['experts'] / p.ep:5.0f}")
    return by_dispatcher


if __name__ == "__main__":
    raise SystemExit(main())
