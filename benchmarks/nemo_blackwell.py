"""Training steps against NVIDIA's published Blackwell pre-training throughput, held out (NeMo Megatron-Bridge 25.11).

    python benchmarks/nemo_blackwell.py

Prints, per row of tests/data/nemo_megatron_bridge_25.11_blackwell.csv (DGX-GB300, DGX-GB200, DGX-B200), the
published tokens/s per GPU, ironlaw's prediction with the layout the table prints on the catalog entry of the
row's system (tests/nemo_ref.py: datasheets only; nothing is fitted on these rows or per device), the error and
what binds the predicted step, or why ironlaw declines the row; for the MoE rows, the milliseconds per layer and
micro-batch the published throughput implies beside ironlaw's, with the host's time to issue the layer's kernels
and what of it the device waits for (``ironlaw.models.host``); then the median and the largest |error| of the
dense rows and of all predicted rows against the H100 table's goal (8%, 20%), and each row's command.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
GOAL_MEDIAN, GOAL_MAX = 0.08, 0.20


def main() -> int:
    from ironlaw.machine import hardware
    from ironlaw.core.errors import IronlawError
    from nemo_ref import BLACKWELL, DENSE, command, predict, summary, table
    rows = table(BLACKWELL)
    dense, every = [], []
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
        every.append(abs(err))
        if r["model"] in DENSE:
            dense.append(abs(err))
        print(f"{head} {st.tokens_per_s_per_gpu:8.0f} {err:+7.1%} {st.mfu:6.1%}  {st.bottleneck['resource']}")
    print()
    moe_layers(rows)
    print()
    for r in rows:
        print(command(r))
    print()
    for what, e in (("dense", dense), ("all predicted", every)):
        if e:
            print(summary(what, e, len(rows), GOAL_MEDIAN, GOAL_MAX) + " (the H100 table's goal)")
    return 0


def moe_layers(rows: list) -> None:
    """Per MoE row: milliseconds per layer and micro-batch on a stage that the published tokens/s imply (step ÷
    (micro-batches + (pp − 1)/vp) ÷ layers per stage) beside ironlaw's, with the rows each local expert runs."""
    from ironlaw.machine import hardware
    from ironlaw.core.errors import IronlawError
    from nemo_ref import DENSE, layer_s, predict
    print(f"{'system':6s} {'model':16s} {'prec':>5} {'EP':>3} {'MBS':>3} {'rows/expert':>11} "
          f"{'ms/layer published':>18} {'ironlaw':>8} {'ratio':>6} {'host issue':>10} {'waits':>6}")
    for r in rows:
        if r["model"] in DENSE:
            continue
        try:
            st = predict(r, hardware.get(r["system"]))
        except IronlawError:
            continue
        p, meta = st.plan, st.per_microbatch.graph.meta
        implied, ours = layer_s(r, st)
        rows_e = meta["tokens"] * meta["experts_per_token"] * p.ep / meta["experts"]
        per = p.microbatches * meta["layers"] / p.pp            # layer passes per step on the stage
        print(f"{r['system']:6s} {r['model']:16s} {r['precision']:>5} {p.ep:3d} {p.micro_batch:3d} {rows_e:11.0f} "
              f"{implied * 1e3:18.1f} {ours * 1e3:8.1f} {implied / ours:6.2f} "
              f"{st.breakdown.host_issue_s / per * 1e3:10.2f} {st.breakdown.host_exposed_s / per * 1e3:6.2f}")


if __name__ == "__main__":
    raise SystemExit(main())
