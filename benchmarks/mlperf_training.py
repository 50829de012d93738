"""Training steps against MLPerf Training v5.0 / v5.1 Llama 3.1 pre-training and Llama 2 70B LoRA results, held out.

    python benchmarks/mlperf_training.py [--rows] [--gpu NAME]

Prints, per GPU, the median and p90 |error| of ironlaw's tokens/s per GPU against the throughput derived from
the submitters' logs (tests/data/mlperf_training_v5.0_v5.1_llama31.csv: training blocks only, no evaluation or
init; tests/mlperf_train_ref.py: the layout rules, the same for every row), then over all rows; the same again
for the Llama 2 70B LoRA fine-tuning rows (tests/data/mlperf_training_v5.0_v5.1_llama2_70b_lora.csv,
``--lora-rank 16``). ``--rows``
prints every row first: release, submitter, system, GPUs, layout, dtype, published and predicted tokens/s per
GPU, the error, what binds the predicted step and the ``ironlaw analyze`` command. Nothing is fitted on these
rows.

    python benchmarks/mlperf_training.py --steps

prints instead, per Llama 3.1 8B row (no pipeline: the step is its micro-batches end to end), the step the
published throughput implies beside ironlaw's and its parts (micro-batches, the DP gradient reduction and its
exposed share, the host's exposed issue time), attention's share of the predicted step, and for a row that runs
its attention in FP8 (``fp8_attention`` 1) either the speedup ``--fp8-attention`` prices it at (``x1.18``) or,
where the device's catalog entry cannot price it (MI355X), the throughput with attention at twice its bf16
rate (FP8's datasheet peak over bf16's, the rest unchanged): a bound; and each row's context-parallel ring
(``CP ring``: its sends' whole time per step, hidden under attention or not).

    python benchmarks/mlperf_training.py --steps --cp-send-rate GBPS

adds, for the Llama 3.1 rows at CP > 1 (whose configs run the CP group on one CTA, docs/accuracy.md "Not
priced"), the error with each ring send taking at least its bytes / GBPS (GB/s, one direction), the rest of the
step as ironlaw prices it, and all Llama 3.1 rows' median and p90 |error| so: a what-if, to be read with a
measured one-CTA rate; nothing is fitted.

    python benchmarks/mlperf_training.py --derive 5.0=DIR --derive 5.1=DIR

re-derives each row's samples/s from the result files of a clone of mlcommons/training_results_v5.0 and _v5.1
(a work tree or a bare git directory; ``mlperf_train_ref.samples_per_s``) and prints it beside the extract's.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main() -> int:
    import argparse
    import numpy as np
    from ironlaw.core.errors import IronlawError
    from ironlaw.machine import hardware
    from mlperf_train_ref import LORA_TABLE, command, predict, table
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group()             # one output each: a second is an error (exit 2)
    mode.add_argument("--rows", action="store_true", help="print every row and its command before the summary")
    mode.add_argument("--steps", action="store_true", help="diagnostic: the 8B rows' step parts and the "
                                                           "FP8-attention bound (nothing is fitted)")
    mode.add_argument("--derive", action="append", metavar="RELEASE=DIR",
                      help="re-derive the rows' throughput from a clone of mlcommons/training_results_v<RELEASE>")
    ap.add_argument("--gpu", action="append", metavar="NAME", help="only the rows on this catalog GPU (repeatable)")
    ap.add_argument("--cp-send-rate", type=float, metavar="GBPS",
                    help="with --steps: each CP ring send takes at least its bytes / GBPS (GB/s one way), a what-if")
    args = ap.parse_args()
    rate = args.cp_send_rate
    if rate is not None and not (args.steps and np.isfinite(rate) and rate > 0):
        print(f"--cp-send-rate {rate:g}: " + ("a what-if of --steps: add --steps" if not args.steps else
                                              "GB/s must be a finite number > 0"), file=sys.stderr)
        return 2
    rows = table() + table(LORA_TABLE)
    known = sorted({r["gpu"] for r in rows})
    for g in args.gpu or []:
        if g not in known:
            print(f"--gpu {g}: no row on it (rows are on {', '.join(known)})", file=sys.stderr)
            return 2
    rows = [r for r in rows if not args.gpu or r["gpu"] in args.gpu]
    if args.steps:
        steps(rows, rate)
        if rate is not None:
            at_rate(rows, rate)
        return 0
    if args.derive:
        return derive(rows, args.derive)
    errs: dict[tuple, list[float]] = {}
    if args.rows:
        print(f"{'rel':>3} {'submitter':10s} {'system':28s} {'gpu':6s} {'GPUs':>5} {'model':5s} {'dtype':5s} "
              f"{'TP':>2} {'PP':>2} {'VP':>2} {'CP':>2} {'MBS':>3} {'GBS':>5} {'published':>9} {'ironlaw':>8} "
              f"{'error':>7}  binds")
    for r in rows:
        try:
            st = predict(r, hardware.get(r["gpu"]))
        except IronlawError as e:
            print(f"{r['system']}: {e}")
            continue
        err = st.tokens_per_s_per_gpu / r["tokens_per_s_per_gpu"] - 1
        errs.setdefault((family(r), r["gpu"]), []).append(err)
        if args.rows:
            print(f"{r['release']:>3} {r['submitter'][:10]:10s} {r['system'][:28]:28s} {r['gpu']:6s} {r['gpus']:5d} "
                  f"{r['benchmark'].split('-')[1][:5]:5s} {r['dtype'] + ('*' if r['note'] else ''):5s} {r['tp']:2d} "
                  f"{r['pp']:2d} {r['vp']:2d} {r['cp']:2d} {r['micro_batch']:3d} {r['global_batch']:5d} "
                  f"{r['tokens_per_s_per_gpu']:9.0f} {st.tokens_per_s_per_gpu:8.0f} {err:+7.1%}  "
                  f"{st.bottleneck['resource']}")
            print(f"    {command(r)}")
    if args.rows:
        print("* precision inferred (the extract's header)\n")
    for fam in sorted({f for f, _ in errs}, reverse=True):
        mine = {g: e for (f, g), e in errs.items() if f == fam}
        print(f"{fam}\n{'gpu':8s} {'rows':>4} {'median |err|':>12} {'p90 |err|':>9} {'median err':>10}")
        for g, e in sorted(mine.items()) + [("all", [x for v in mine.values() for x in v])]:
            a = np.abs(e)
            print(f"{g:8s} {len(e):4d} {np.median(a):12.1%} {np.percentile(a, 90):9.1%} {np.median(e):+10.1%}")
    return 0


def family(row: dict) -> str:
    """The summary a row joins: Llama 3.1 pre-training or Llama 2 70B LoRA fine-tuning."""
    return "Llama 2 70B LoRA" if row["benchmark"].endswith("-lora") else "Llama 3.1 pre-training"


RESULT_DIRS = {"llama3.1-8b": "llama31_8b", "llama3.1-405b": "llama31_405b", "llama2-70b-lora": "llama2_70b_lora"}


def steps(rows: list, cp_rate: float | None = None) -> None:
    """Per Llama 3.1 8B row: published and predicted step, the predicted step's parts, attention's share of it
    and the tokens/s per GPU with attention's time halved (``--steps`` in the module doc); with ``cp_rate`` (GB/s),
    the error with the CP ring's sends at ``ring_slower_s``."""
    from ironlaw.machine import hardware
    from mlperf_train_ref import predict
    print("ms per step; attn: attention's share of the predicted step; FP8 attn: --fp8-attention's speedup (x), "
          "or the error with attention at twice its bf16 rate where the device cannot price it; CP ring: the "
          "ring's sends per step" + (f"; @{cp_rate:g}: the error with each send at ≥ its bytes / "
                                     f"{cp_rate:g} GB/s" if cp_rate else ""))
    print(f"{'system':26s} {'gpu':6s} {'dtype':5s} {'CP':>2} {'fp8 att':>7} {'tok/GPU':>7} {'published':>9} "
          f"{'ironlaw':>7} {'mb x n':>8} {'DP red':>6} {'exposed':>7} {'host':>5} {'attn':>5} {'error':>7} "
          f"{'FP8 attn':>8} {'CP ring':>7}" + (f" {'@' + format(cp_rate, 'g'):>7}" if cp_rate else ""))
    for r in rows:
        if r["pp"] != 1:
            continue
        st = predict(r, hardware.get(r["gpu"]))
        b = st.breakdown
        attn = b.microbatches * sum(x["time_s"] for x in st.per_microbatch.rows() if x["kind"] == "attention")
        published = st.flops.tokens_per_step / (r["tokens_per_s_per_gpu"] * r["gpus"])
        fast = st.tokens_per_s_per_gpu * b.step_s / (b.step_s - 0.5 * attn)
        rate = st.plan.fp8_attention and f"x{predict_graph_rate(r):.2f}"
        bound = rate or (f"{fast / r['tokens_per_s_per_gpu'] - 1:+8.1%}" if r["fp8_attention"] else "")
        print(f"{r['system'][:26]:26s} {r['gpu']:6s} {r['dtype']:5s} {r['cp']:2d} {r['fp8_attention']:7d} "
              f"{st.flops.tokens_per_step / r['gpus']:7.0f} {published * 1e3:9.1f} {b.step_s * 1e3:7.1f} "
              f"{b.microbatches * b.microbatch_s * 1e3:8.1f} {b.dp_grad_comm_s * 1e3:6.1f} "
              f"{b.dp_grad_exposed_s * 1e3:7.1f} {b.host_exposed_s * 1e3:5.1f} {attn / b.step_s:5.1%} "
              f"{st.tokens_per_s_per_gpu / r['tokens_per_s_per_gpu'] - 1:+7.1%} {bound:>8s} "
              f"{b.cp_ring_s * 1e3:7.1f}" + (f" {error_at(r, st, cp_rate):+7.1%}" if cp_rate and capped(r) else ""))


def capped(row: dict) -> bool:
    """Whether the row's config runs its CP group on one CTA: every Llama 3.1 config at CP > 1, v5.0 and v5.1,
    points ``NCCL_CFG_PATH`` at conf/nccl/custom_communicator_cta.yaml, whose ``cp:`` entry sets max_ctas 1
    (docs/accuracy.md "Not priced"); NVIDIA's LoRA config gives CP 32 CTAs: the LoRA rows keep ironlaw's ring."""
    return row["benchmark"].startswith("llama3.1-") and row["cp"] > 1


def ring_slower_s(row: dict, st, rate: float) -> float:
    """Seconds the step grows by when each send of the row's CP ring takes at least its bytes / ``rate`` GB/s:
    the ring as ironlaw prices it (``parallel.cp_ring_exposed``: cp − 1 steps per attention, each exposing its
    sends beyond a cp-th of the attention) over the predicted micro-batch's attention rows, its sends floored;
    each micro-batch grows by the difference, the pipeline bubble with it (a fixed fraction of a micro-batch)."""
    from ironlaw.core import passes
    from ironlaw.core.graph import dtype_bytes
    from ironlaw.machine import hardware
    from ironlaw.models import parallel
    from ironlaw.models.analysis import training_graph
    from mlperf_train_ref import MODELS
    b, cp = st.breakdown, row["cp"]
    if cp == 1 or b.cp_ring_s == 0:
        return 0.0
    att = [(x, 2.0 if passes.is_backward(x["name"]) else 1.0) for x in st.per_microbatch.rows()
           if x["kind"] == "attention"]
    send = b.cp_ring_s / b.microbatches / ((cp - 1) * sum(x["count"] * n for x, n in att))
    g = training_graph(MODELS[row["benchmark"]], hardware.get(row["gpu"]), row["seq"], row["dtype"],
                       {"micro_batch": row["micro_batch"]})
    nbytes = parallel.cp_ring_send_bytes(g.meta, row["tp"], row["micro_batch"] * row["seq"] / cp,
                                         dtype_bytes(g.dtype))

    def exposed(s: float) -> float:
        return sum(x["count"] * float(parallel.cp_ring_step_exposed(s, n, x["time_s"] / x["count"], cp))
                   for x, n in att)
    grown = exposed(max(send, nbytes / (rate * 1e9))) - exposed(send)
    return grown * (b.microbatches + b.pipeline_bubble_s / b.microbatch_s)


def error_at(row: dict, st, rate: float) -> float:
    """The row's error with its CP ring's sends at ``rate`` GB/s (``ring_slower_s``)."""
    tokens = st.tokens_per_s_per_gpu * st.breakdown.step_s / (st.breakdown.step_s + ring_slower_s(row, st, rate))
    return tokens / row["tokens_per_s_per_gpu"] - 1


def at_rate(rows: list, rate: float) -> None:
    """The Llama 3.1 pre-training rows' median and p90 |error| as predicted and with the CP ring's sends of the
    rows ``capped`` at ``rate`` GB/s (``error_at``)."""
    import numpy as np
    from ironlaw.machine import hardware
    from mlperf_train_ref import predict
    before, after = [], []
    for r in rows:
        if family(r) != "Llama 3.1 pre-training":
            continue
        st = predict(r, hardware.get(r["gpu"]))
        before.append(abs(st.tokens_per_s_per_gpu / r["tokens_per_s_per_gpu"] - 1))
        after.append(abs(error_at(r, st, rate) if capped(r) else before[-1]))
    if before:
        print(f"Llama 3.1 pre-training, {len(before)} rows: median |err| {np.median(before):.1%}, p90 "
              f"{np.percentile(before, 90):.1%}; the CP rows' sends at ≥ bytes / {rate:g} GB/s: "
              f"{np.median(after):.1%}, p90 {np.percentile(after, 90):.1%}")


def predict_graph_rate(row: dict) -> float:
    """The speedup ``--fp8-attention`` prices a row's attention at (``fp8_attention.speedup``)."""
    from ironlaw.machine import hardware
    from ironlaw.models.fp8_attention import speedup
    from mlperf_train_ref import MODELS
    from ironlaw.models.analysis import training_graph
    hw = hardware.get(row["gpu"])
    g = training_graph(MODELS[row["benchmark"]], hw, row["seq"], row["dtype"], {"micro_batch": row["micro_batch"]})
    return speedup(g.meta, hw, row["micro_batch"])


def derive(rows: list, clones: list) -> int:
    """Each row's samples/s from its result files in the clones (``RELEASE=DIR``) beside the extract's; exit 2
    on a malformed option or a clone that is not a git directory, 1 if a row differs by more than its rounding."""
    import subprocess
    from mlperf_train_ref import samples_per_s
    dirs = dict(c.split("=", 1) for c in clones if "=" in c)
    if len(dirs) != len(clones) or not set(dirs) <= {"5.0", "5.1"}:
        print(f"--derive takes RELEASE=DIR with RELEASE 5.0 or 5.1, got {' '.join(clones)}", file=sys.stderr)
        return 2

    def git(d: str, *a: str) -> str:
        out = subprocess.run(["git", "-C", d, *a], capture_output=True, text=True)
        if out.returncode:
            print(f"--derive: {d}: {out.stderr.strip().splitlines()[0]}", file=sys.stderr)
            raise SystemExit(2)
        return out.stdout
    bad = 0
    for r in rows:
        d = dirs.get(r["release"])
        if d is None:
            continue
        where = f"{r['submitter']}/results/{r['system']}/{RESULT_DIRS[r['benchmark']]}/"
        files = [f for f in git(d, "ls-tree", "--name-only", "HEAD", where).split() if "/result_" in f]
        got = samples_per_s([git(d, "show", f"HEAD:{f}") for f in files])
        same = abs(got / r["samples_per_s"] - 1) <= 1e-3
        bad += not same
        print(f"{r['release']} {r['system'][:34]:34s} {r['benchmark']:13s} {len(files):3d} files {got:10.3f} "
              f"samples/s, extract {r['samples_per_s']:10.3f}{'' if same else '  DIFFERS'}")
    print(f"{bad} rows differ")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
