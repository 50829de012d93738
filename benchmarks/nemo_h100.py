"""Training steps against NVIDIA's published DGX-H100 pre-training throughput (NeMo Megatron-Bridge 25.11).

    python benchmarks/nemo_h100.py

Prints, per row of tests/data/nemo_megatron_bridge_25.11_dgx_h100.csv (Llama 3 8B and 70B, Llama 3.1 405B
with CP 2, gpt-oss-120b and Qwen3-30B-A3B with EP 8), the published tokens/s per GPU, ironlaw's prediction
with the layout the row's 25.11 recipe runs (tests/nemo_ref.py: nothing fitted per row; the MoE rows print
other micro-batches than their recipes, nemo_ref.RECIPE), the error, what binds the predicted step, and the
model FLOPs per token of both (NVIDIA's: model TFLOP/s ÷ tokens/s; ironlaw's: its MFU convention,
parallel.MODEL_FLOPS); then, per row, the wall time of one layer and micro-batch on the slowest stage that
the published throughput implies (step ÷ (micro-batches + bubble) ÷ layers per stage) beside ironlaw's; what
the MoE rows' printed layouts give (beside the 25.09 token-drop run of the same layout,
tests/data/nemo_megatron_bridge_25.09_tokendrop.csv, where there is one); a later, tuned Qwen3-30B-A3B run on 16 H100 (Megatron-Bridge PR #5123); and
the median and the largest |error| against the goal (8%, 20%).

    python benchmarks/nemo_h100.py --host-counts

prints instead, per MoE row, the host's kernels per MoE layer and micro-batch by part, their time at the catalog's
``[host]`` costs, the serial bound (that host time and ironlaw's layer one after the other: the longest any
placement of device→host syncs can make the layer, ``nemo_ref.serial_bound_s``), and the cost per launch at which
the host alone would take as long as the published layer.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
GOAL_MEDIAN, GOAL_MAX = 0.08, 0.20


def main() -> int:
    import argparse
    from ironlaw.machine import hardware
    from ironlaw.core.errors import IronlawError
    from nemo_ref import DENSE, available, command, predict, print_host_counts, summary, table
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host-counts", action="store_true",
                    help="diagnostic: per MoE row, the host's kernels per MoE layer by part, their priced time and "
                         "the cost per launch a host-bound layer would need (nothing is fitted)")
    hw = hardware.get("h100")
    if ap.parse_args().host_counts:
        moe = [r for r in table() if r["model"] not in DENSE and available(r)]
        print_host_counts([("h100", r, predict(r, hw), hw) for r in moe])
        return 0
    errs, dense = [], []
    print(f"{'model':15s} {'GPUs':>5} {'prec':>4} {'published':>9} {'ironlaw':>8} {'error':>7} {'MFU':>6} "
          f"{'GF/token NVIDIA':>15} {'ironlaw':>8}  binds")
    for r in table():
        if not available(r):
            print(f"{r['model']:15s} {r['gpus']:5d} {r['precision']:>4} {r['tokens_per_s_per_gpu']:9.0f} "
                  f"{'—':>8}  model not built in yet")
            continue
        try:
            st = predict(r, hw)
        except IronlawError as e:
            print(f"{r['model']:15s} {r['gpus']:5d} {r['precision']:>4} {r['tokens_per_s_per_gpu']:9.0f} "
                  f"{'—':>8}  {e}")
            continue
        tps = st.tokens_per_s_per_gpu
        err = tps / r["tokens_per_s_per_gpu"] - 1
        errs.append(abs(err))
        if r["model"] in DENSE:
            dense.append(abs(err))
        nv = r["model_tflops_per_gpu"] * 1e3 / r["tokens_per_s_per_gpu"]
        ours = st.flops.model_per_step / st.flops.tokens_per_step / 1e9
        print(f"{r['model']:15s} {r['gpus']:5d} {r['precision']:>4} {r['tokens_per_s_per_gpu']:9.0f} {tps:8.0f} "
              f"{err:+7.1%} {st.mfu:6.1%} {nv:15.1f} {ours:8.1f}  {st.bottleneck['resource']}: {st.bottleneck['why']}")
    print()
    per_layer(hw)
    print()
    printed(hw)
    tuned_run(hw)
    print()
    for r in table():
        print(command(r))
    print()
    for what, e in (("dense", dense), ("all predicted", errs)):
        if e:
            print(summary(what, e, len(table()), GOAL_MEDIAN, GOAL_MAX))
    return 0


def per_layer(hw) -> None:
    """Milliseconds per layer and micro-batch on a stage: what the published tokens/s imply, and ironlaw."""
    from nemo_ref import layer_s, predict, recipe, table
    print(f"{'model':15s} {'tokens/mb':>9} {'ms/layer published':>18} {'ironlaw':>8} {'ratio':>6}")
    for r in table():
        st, rr = predict(r, hw), recipe(r)
        implied, ours = layer_s(r, st)
        print(f"{r['model']:15s} {rr['micro_batch'] * rr['seq'] // st.plan.cp:9d} {implied * 1e3:18.1f} "
              f"{ours * 1e3:8.1f} {implied / ours:6.2f}")


def printed(hw) -> None:
    """The MoE rows with the layout the table prints (nemo_ref.RECIPE says why it is not the recipe's)."""
    from ironlaw.core.errors import IronlawError
    from nemo_ref import RECIPE, predict, table, tokendrop
    for r in table():
        if r["model"] not in RECIPE:
            continue
        try:
            st = predict(r, hw, printed=True)
            what = f"{st.tokens_per_s_per_gpu:.0f} tokens/s/GPU ({st.tokens_per_s_per_gpu / r['tokens_per_s_per_gpu'] - 1:+.1%})"
            t = tokendrop(r)
            what += (f"; the 25.09 token-drop run of this layout: {t['tokens_per_s_per_gpu']:.0f} "
                     f"({st.tokens_per_s_per_gpu / t['tokens_per_s_per_gpu'] - 1:+.1%})" if t else "")
        except IronlawError as e:
            what = str(e)
        print(f"{r['model']} as printed (MBS {r['micro_batch']}, VP {r['vp']}): {what}")


def tuned_run(hw) -> None:
    """The later, tuned 16 x H100 Qwen3-30B-A3B run (tests/data/megatron_bridge_qwen3_30b_h100_tuned.csv)."""
    from nemo_ref import predict_tuned, tuned
    r, st = tuned(), predict_tuned(hw)
    print(f"qwen3-30b-a3b tuned (Megatron-Bridge PR #5123: 16 GPUs, bf16, EP 16, all-to-alls overlapped): "
          f"measured {r['step_s']:.2f} s per step, ironlaw {st.step_s:.2f} s ({st.step_s / r['step_s'] - 1:+.1%})")


if __name__ == "__main__":
    sys.exit(main())
