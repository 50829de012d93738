"""NVFP4 training steps against NVIDIA's published Blackwell throughput, held out (NeMo Megatron-Bridge 26.02).

    python benchmarks/nemo_nvfp4.py

Prints, per row of tests/data/megatron_bridge_26.02_nvfp4.csv (every NVFP4 row of the 26.02 summary on DGX-GB300
and DGX-GB200, and the FP8 or MXFP8 row of the same model, system and layout), the published tokens/s per GPU,
ironlaw's prediction with the printed layout on the system's catalog entry (tests/nemo_ref.py's rules; the NVFP4
rows without TP communication overlap, as their recipes run), the error, and for each pair the NVFP4 speed-up over
its FP8/MXFP8 sibling, published and predicted: the ratio cancels what the two share (the layout, the catalog's
efficiencies) and leaves what NVFP4 changes (ironlaw.models.nvfp4). Nothing is fitted on these rows.
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
DATA = ROOT / "tests" / "data" / "megatron_bridge_26.02_nvfp4.csv"


def predict(row: dict):
    from ironlaw.models.analysis import training_graph
    from ironlaw.machine import hardware
    from ironlaw.models import parallel
    from nemo_ref import SPECS, options
    hw = hardware.get(row["system"])
    opts = options(row, printed=True)
    if row["precision"] == "fp4":                      # the recipes turn TP comm overlap off for NVFP4
        opts["tp_comm_overlap"] = False
    g = training_graph(SPECS[row["model"]], hw, row["seq"], row["precision"], opts)
    return parallel.train_step(g, hw, parallel.make_plan(opts, g, hw))


def main() -> int:
    from nemo_ref import table
    rows = table(DATA)
    print(f"{'system':6s} {'model':14s} {'prec':>5} {'layout':>16} {'published':>9} {'ironlaw':>8} {'error':>7}")
    got, errs = {}, []
    for r in rows:
        st = predict(r)
        got[(r["system"], r["model"], r["precision"])] = (r["tokens_per_s_per_gpu"], st.tokens_per_s_per_gpu)
        e = st.tokens_per_s_per_gpu / r["tokens_per_s_per_gpu"] - 1
        errs.append(abs(e))
        lay = f"TP{r['tp']} PP{r['pp']} VP{r['vp']}"
        print(f"{r['system']:6s} {r['model']:14s} {r['precision']:>5} {lay:>16} {r['tokens_per_s_per_gpu']:9.0f} "
              f"{st.tokens_per_s_per_gpu:8.0f} {e:+7.1%}")
    print()
    print(f"{'system':6s} {'model':14s} {'NVFP4 over':>10} {'published':>9} {'ironlaw':>8} {'error':>7}")
    ratio_errs = []
    for (s, m, p), (pub, ours) in got.items():
        if p == "fp4":
            continue
        pub4, ours4 = got[(s, m, "fp4")]
        e = (ours4 / ours) / (pub4 / pub) - 1
        ratio_errs.append(abs(e))
        print(f"{s:6s} {m:14s} {p:>10} {pub4 / pub:9.3f} {ours4 / ours:8.3f} {e:+7.1%}")
    print()
    print(f"tokens/s: {len(errs)} rows, median |error| {statistics.median(errs):.1%}, max {max(errs):.1%}")
    print(f"NVFP4 speed-up: {len(ratio_errs)} pairs, median |error| {statistics.median(ratio_errs):.1%}, "
          f"max {max(ratio_errs):.1%}")
    from nemo_ref import options
    for r in rows:
        exposed = " --param-gather-exposed" if options(r, printed=True)["param_gather_exposed"] else ""
        print(f"ironlaw analyze {SPEC(r)} --phase train --on {r['system']} --dtype {r['precision']} --seq {r['seq']} "
              f"--global-batch {r['global_batch']} --micro-batch {r['micro_batch']} --gpus {r['gpus']} "
              f"{'--nodes 4 ' if r['gpus'] > 72 else ''}--tp {r['tp']} --pp {r['pp']} --interleave {r['vp']} "
              f"--zero 1{' --sequence-parallel' if r['tp'] > 1 else ''}"
              f"{' --tp-comm-overlap' if r['tp'] > 1 and r['precision'] != 'fp4' else ''} --overlap-p2p{exposed}")
    return 0


def SPEC(r: dict) -> str:
    from nemo_ref import DATA as TD, SPECS
    return SPECS[r["model"]].replace(str(TD), "tests/data")


if __name__ == "__main__":
    raise SystemExit(main())
