"""Accuracy of ironlaw on this CPU: run real models, fit the calibration on some, report on the others.

    python benchmarks/accuracy.py [--on local|FILE.toml] [--threads N] [--stat median|min] [--rounds 3]
                                  [--out out/accuracy] [--from out/accuracy] [--save] [--only NAME]
                                  [--interleave] [--probe-only]

For each case: `ironlaw validate` (real model, random weights, warm-up, repeats; end to end and per op),
in --rounds rounds over all cases, merged per case (validate.merge): on a shared machine a neighbour's
burst then lands on many cases a little, not on one case entirely.
Then the calibration is fitted on the FIT cases only and every case is predicted again with it. The
HELD-OUT cases were never looked at by the fit; their numbers are the ones the goals apply to:
    end to end: median |error| ≤ 8%, 90th percentile ≤ 20%
    per op:     ≥ 80% of measured op time in ops predicted within ±25% (mean over held-out cases)
Also printed, from the same run: the naive per-op roofline of the design notes (max(FLOPs/R, bytes/BW) +
L with the profile's flat numbers) and the law with the profile's own numbers before calibration.
--from DIR re-fits and re-scores saved measurements without running anything; --save writes the
fitted [calibration] into the profile (atomic). The machine may be shared: spread (CV) is printed per
case; --stat min compares the fastest run instead of the median (both sides use the same statistic).
--interleave probes the machine afresh, one probe round before each round of cases (the profile goes to
OUT/profile.toml; re-fit later with --from OUT --on OUT/profile.toml): on a shared machine whose speed
drifts, the probe's rows and the models are then measured in the same stretches.
--probe-only fits nothing: every case (and MobileNetV2, examples/mobilenet.py) is predicted with the profile's
own calibration, the one `ironlaw probe` fitted on its micro-benchmarks and built-in reference runs; the goals
are then median |error| ≤ 10%, p90 ≤ 25%, ≥ 80% of measured times inside their predicted range, that range no
wider than ±30% for compute-bound cases, and MobileNetV2 within ±15%. With --interleave too, the probe's rounds
alternate with the cases' and its reference runs and fit follow the last round, as `ironlaw probe` ends.
The 'machine' column: how fast the machine ran while the case was measured, fp32 GEMM / DRAM copy as a share of
the rates in the profile it was measured with (--on; with --interleave, that profile too, not the interleaved
one, which did not exist yet): validate's before and after timings, mean over the rounds ('—' where a saved run
has none). Compare the cases of one run with each other; --from with another --on does not change them.
The 'faults' column: the share of the measured run spent faulting in fresh memory (validate counts the page
faults, the probe prices them); the prediction's time does not hold that cost, its ``fresh_memory_max_s`` bounds
it (--probe-only also scores the range with that bound added to its high end; benchmarks/fresh_memory.py runs
each case in a process of its own, where the faults are larger: this benchmark's long process reuses its heap).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench import print_table  # noqa: E402

HERE = Path(__file__).parent
BERT = f"hf:{HERE / 'configs' / 'bert-small.json'}"
# (spec, batch, seq, phase, repeats, role) — roles fixed before any result was seen; each family is
# fitted at one size and held out at another, in both directions
CASES = [
    ("resnet18", 1, None, None, 5, "fit"),
    ("resnet18", 8, None, None, 3, "held"),
    ("resnet50", 1, None, None, 5, "held"),
    ("resnet50", 8, None, None, 3, "fit"),
    ("mlp", 1, None, None, 7, "held"),
    ("mlp", 8, None, None, 7, "fit"),
    (BERT, 1, 128, None, 5, "fit"),
    (BERT, 8, 128, None, 3, "held"),
    ("gpt2", 1, 128, "prefill", 3, "fit"),
    ("gpt2", 8, 64, "prefill", 3, "held"),
    ("gpt2", 1, 128, "decode", 5, "held"),
    ("gpt2", 8, 128, "decode", 5, "fit"),
    # sets 2–6: each written down before any of its cases was first run
    ("resnet34", 2, None, None, 3, "held2"),
    ("mlp", 4, None, None, 7, "held2"),
    (BERT, 4, 64, None, 3, "held2"),
    ("gpt2", 2, 96, "prefill", 3, "held2"),
    ("gpt2", 4, 256, "decode", 5, "held2"),
    ("resnet18", 2, None, None, 3, "held3"),
    ("resnet50", 2, None, None, 3, "held3"),
    ("mlp", 2, None, None, 7, "held3"),
    (BERT, 2, 96, None, 3, "held3"),
    ("gpt2", 4, 48, "prefill", 3, "held3"),
    ("gpt2", 2, 192, "decode", 5, "held3"),
    ("resnet34", 1, None, None, 3, "held4"),
    ("resnet50", 4, None, None, 3, "held4"),
    ("mlp", 16, None, None, 7, "held4"),
    (BERT, 1, 32, None, 5, "held4"),
    ("gpt2", 1, 32, "prefill", 3, "held4"),
    ("gpt2", 1, 512, "decode", 5, "held4"),
    ("gpt2", 16, 64, "decode", 5, "held4"),
    ("resnet101", 1, None, None, 3, "held5"),
    ("resnet18", 4, None, None, 3, "held5"),
    ("mlp", 32, None, None, 7, "held5"),
    (BERT, 2, 256, None, 3, "held5"),
    ("gpt2", 2, 128, "prefill", 3, "held5"),
    ("gpt2", 8, 512, "decode", 5, "held5"),
    ("gpt2", 1, 64, "decode", 5, "held5"),
    ("resnet34", 4, None, None, 3, "held6"),
    ("mlp", 64, None, None, 7, "held6"),
    (BERT, 16, 64, None, 3, "held6"),
    ("gpt2", 1, 256, "prefill", 3, "held6"),
    ("gpt2", 4, 1000, "decode", 5, "held6"),        # GPT-2 has 1024 positions
    ("gpt2", 32, 32, "decode", 5, "held6"),
    ("mobilenet", 1, None, None, 5, "held7"),
    ("mobilenet", 8, None, None, 3, "held7"),
]

GROUPS = {"fit": "FITTED (the calibration saw these)", "held": "HELD OUT, set 1 (never fitted)",
          **{f"held{i}": f"HELD OUT, set {i} (never fitted)" for i in range(2, 8)}}
GOALS = {"median_abs_err": 0.08, "p90_abs_err": 0.20, "within_25pct_share": 0.80}
PROBE_ONLY_GOALS = {"median_abs_err": 0.10, "p90_abs_err": 0.25, "in_range_share": 0.80, "compute_range": 0.30,
                    "mobilenet": 0.15}
BUDGET_S = 8.0


def file_name(spec: str, batch: int, seq, phase) -> str:
    base = spec.split("/")[-1].replace(".json", "").replace(":", "-")
    return f"{base}-{phase or 'infer'}-b{batch}" + (f"-s{seq}" if seq else "") + ".json"


def machine_speed(hw) -> tuple[float, float]:
    """(fp32 GEMM, DRAM copy) rate now as a fraction of the profile's (ironlaw.measure.probe.moment), NaN where the
    profile has no such row: compute and memory drift apart on this shared VM (its DRAM copy ran 28–52 GB/s
    within one probe)."""
    import torch
    from ironlaw.measure.probe.moment import speed_now
    probe = hw.extra.get("probe", {})
    if probe.get("threads"):
        torch.set_num_threads(int(probe["threads"]))
    now = speed_now(probe) or {}
    return now.get("gemm_share", float("nan")), now.get("dram_share", float("nan"))


# GPT-2's decode GEMV shapes (x @ W, N, K): c_fc and the MLP's c_proj, timed probe-style (cold, rotating copies)
GEMV_SENTINELS = ((3072, 768), (768, 3072))


def gemv_sentinels(hw) -> dict[str, float]:
    """µs per MB of weights of GPT-2's decode GEMV shapes timed probe-style now: set next to the recorder's
    in-model times of the same shapes, they tell the machine's moment from the model's context."""
    from ironlaw.measure.probe import gemm
    from ironlaw.measure.probe.timing import Budget
    l3 = hw.extra.get("probe", {}).get("capacity", {}).get("l3", 0.0)
    out = {}
    for n, k in GEMV_SENTINELS:
        r = gemm.measure_cold("fp32", 1, n, k, gemm.cold_pool_bytes(l3), Budget(), layout="kn")
        out[f"x@W N={n} K={k}"] = r["time_s"] * 1e6 / (n * k * 4 / 1e6)
    return out


def measure(args, hw) -> tuple[dict[str, dict], object]:
    """Every case measured in ``args.rounds`` rounds (each round runs all cases, a share of the repeats
    and time budget each), then merged: a neighbour's burst on this shared machine lands on several
    cases a little instead of on one case entirely. With ``args.interleave`` the machine is probed afresh,
    one probe round before each round of cases, and the cases are predicted with that profile (returned
    with them; else ``hw``): the probe's rows and the models then see the same stretches of the machine's speed."""
    from ironlaw.measure import validate
    from ironlaw.machine.calibration import without_calibration
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rounds: dict[str, list[dict]] = {}
    if args.interleave:
        try:
            hw = interleaved_probe(args, hw, lambda k: measure_round(args, hw, k, rounds))
        except Exception:
            (out / "rounds.json").write_text(json.dumps(rounds), encoding="utf-8")   # ten minutes of measuring
            print(f"accuracy: the interleaved profile could not be built; the rounds measured are in {out / 'rounds.json'}, "
                  f"the probe's rows in {out / 'probe-rows.json'}")
            raise
    else:
        for k in range(args.rounds):
            measure_round(args, hw, k, rounds)
    bare = without_calibration(hw)
    docs = {}
    for name, ds in rounds.items():
        docs[name] = validate.merge(ds, bare, args.stat)
        (out / name).write_text(json.dumps(docs[name]), encoding="utf-8")
    return docs, hw


def gemv_by_row_length(scored: list[dict]) -> None:
    """The never-fitted cases' matrix-vector products (M = 1, weights from memory: decode at batch 1), summed
    per weight layout and length of the weight's stored rows (x @ W: N, x @ Wᵀ: K): measured and predicted µs
    per MB of weights — what the probe's ``gemv_row`` factor is for, checked on the models' own ops."""
    from ironlaw.measure.validate.compare import row_attrs
    per: dict[tuple[str, int], list[float]] = {}
    for case in scored:
        for r in case["doc"]["ops"]:
            nk, w = row_attrs(r).get("nk"), r["bytes"].get("weights", 0.0)
            if r["kind"] != "matmul" or not nk or not w or r["flops"] / (2.0 * nk[0] * nk[1]) >= 1.5:
                continue
            kn = bool(r.get("weights_kn"))
            a = per.setdefault(("x@W" if kn else "x@Wᵀ", nk[0] if kn else nk[1]), [0.0, 0.0, 0.0, 0])
            a[0] += r["measured_s"]
            a[1] += r["predicted_s"]
            a[2] += w * r["count"] / 1e6
            a[3] += r["count"]
    if not per:
        return
    print("\nnever-fitted GEMVs (M = 1) by weight-row length: µs per MB of weights, measured vs predicted")
    print(f"{'layout':<7} {'row length':>10} {'ops':>5} {'measured':>9} {'predicted':>9} {'pred/meas':>9}")
    for (layout, length), (meas, pred, mb, n) in sorted(per.items()):
        print(f"{layout:<7} {length:>10} {n:>5} {1e6 * meas / mb:>9.0f} {1e6 * pred / mb:>9.0f} {pred / meas:>9.2f}")


def interleaved_probe(args, hw, between):
    """Probe this machine in ``args.rounds`` rounds with ``between(k)`` run after each; the profile is written
    to OUT/profile.toml (not among the saved profiles) and returned. A probe the CLI would refuse (too noisy,
    the load changed) is kept and its reasons printed: the cases measured between its rounds saw the same
    machine, and they are what this benchmark scores."""
    from ironlaw.machine import hardware, profile
    from ironlaw.measure import probe
    from ironlaw.measure.calibrate import build
    threads = args.threads or hw.extra.get("probe", {}).get("threads")
    rows = probe.run(threads=threads, rounds=args.rounds, between=between, refuse=False)
    for reason in rows.get("checks", {}).get("refused", []):
        print(f"interleaved probe, kept although `ironlaw probe` would refuse it: {reason}")
    drift = rows.get("checks", {}).get("drift", {})
    print(f"interleaved probe ({rows['duration_s']:.0f} s with the cases): {drift.get('what', '')}; "
          f"between rounds: {drift.get('across_rounds', '—')}")
    (Path(args.out) / "probe-rows.json").write_text(json.dumps(rows), encoding="utf-8")
    doc = build.profile(rows, calibrate_fit=not args.probe_only)
    if args.probe_only:              # as `ironlaw probe` ends: its reference runs, after the last round, and its fit
        from ironlaw.measure.calibrate import selfcal
        doc = selfcal.calibrate(doc)
    path = profile.save(doc, Path(args.out) / "profile.toml")
    return hardware.load_file(path)


def measure_round(args, hw, k: int, rounds: dict[str, list[dict]]) -> None:
    """Round ``k`` of every case, appended to ``rounds`` (case file name → round documents)."""
    from ironlaw.measure import validate
    from ironlaw.machine.calibration import without_calibration
    bare = without_calibration(hw)
    cases = [c for c in CASES if not args.only or args.only in file_name(*c[:4])]
    for spec, batch, seq, phase, repeats, role in cases:
        name = file_name(spec, batch, seq, phase)
        t0 = time.perf_counter()
        doc = validate.run(spec, batch=batch, seq=seq, phase=phase, hw=bare,
                           repeats=max(3, -(-repeats // args.rounds)), threads=args.threads,
                           budget_s=BUDGET_S / args.rounds, stat=args.stat)
        rounds.setdefault(name, []).append(doc)
        s = doc["spread"]
        print(f"round {k + 1}/{args.rounds} {name:<36} {1e3 * s['median_s']:9.2f} ms median (CV "
              f"{100 * s['cv']:4.1f}%, min {1e3 * s['min_s']:.2f} ms) in {time.perf_counter() - t0:5.1f} s", flush=True)


def load(path: str) -> dict[str, dict]:
    docs = {}
    for spec, batch, seq, phase, _, _ in CASES:
        p = Path(path) / file_name(spec, batch, seq, phase)
        if p.is_file():
            docs[p.name] = json.loads(p.read_text(encoding="utf-8"))
    if not docs:
        sys.exit(f"no saved measurements in {path}")
    return docs


def fresh(total: dict) -> str:
    """The measured run's page faults as a share of it (priced with the probe's cost of fresh memory)."""
    share = total.get("fresh_memory_share")
    return "—" if share is None else f"{100 * share:.0f}%"


def moment(doc: dict) -> str:
    """The machine's fp32 GEMM / DRAM-copy speed while the case ran, against the probe rows of the profile it was
    measured with: the mean over its rounds of validate's before and after shares (ironlaw.measure.probe.moment), e.g.
    '96/112%'."""
    m = doc.get("case", {}).get("machine") or {}
    times = [x for rnd in (m.get("rounds") or [m]) for x in (rnd.get("before"), rnd.get("after")) if x]
    vals = [[x[k] for x in times if k in x] for k in ("gemm_share", "dram_share")]
    return "/".join(f"{100 * np.mean(v):.0f}" for v in vals) + "%" if all(vals) else "—"


def summarize(rows: list[dict]) -> dict:
    err = np.array([abs(r["error"]) for r in rows])
    return {"n": len(rows), "median_abs_err": float(np.median(err)), "p90_abs_err": float(np.percentile(err, 90)),
            "within_25pct_share": float(np.mean([r["within_25pct_share"] for r in rows])),
            "naive_ratio": [1 + r["naive_error"] for r in rows],
            "naive_median_abs_err": float(np.median([abs(r["naive_error"]) for r in rows])),
            "uncal_median_abs_err": float(np.median([abs(r["uncalibrated_error"]) for r in rows]))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--on", default="local")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: the profile's)")
    ap.add_argument("--stat", default="median", choices=("median", "min"))
    ap.add_argument("--out", default="out/accuracy")
    ap.add_argument("--from", dest="src", default=None, help="re-fit saved measurements from this folder")
    ap.add_argument("--only", default=None, help="measure only cases whose file name contains this")
    ap.add_argument("--rounds", type=int, default=3, help="measure every case this many times, at different "
                    "times, and merge (default 3)")
    ap.add_argument("--save", action="store_true", help="write the fitted [calibration] into the profile")
    ap.add_argument("--interleave", action="store_true", help="probe afresh, one probe round before each round "
                    "of cases, and predict with that profile (written to OUT/profile.toml): both then see the same "
                    "stretches of a drifting machine's speed")
    ap.add_argument("--probe-only", action="store_true", help="fit nothing: predict every case with the profile's "
                    "own calibration (its probe rows and reference runs) and score the range")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from ironlaw.machine import calibration, hardware
    from ironlaw.measure.calibrate import fit
    from ironlaw.cli.fit import framework_line
    hw = hardware.get(args.on)
    print(f"profile: {hw.path} ({hw.name}); threads {args.threads or 'from profile'}; statistic {args.stat}")
    docs, hw = (load(args.src), hw) if args.src else measure_watched(args, hw)
    if args.probe_only:
        return probe_only(hw, docs, args.stat)
    role = {file_name(s, b, q, p): r for s, b, q, p, _, r in CASES}
    docs = {n: d for n, d in docs.items() if role[n] != "held7"}      # MobileNetV2 is scored by --probe-only
    by_role = {r: [d for n, d in docs.items() if role[n] == r] for r in GROUPS}
    fit_docs = by_role["fit"]
    if not fit_docs:
        sys.exit(f"accuracy: none of the FIT cases is among the {len(docs)} measured (--only?); nothing to fit "
                 f"or score{'' if args.src else f' — the measurements are saved in {args.out}'}")
    t0 = time.perf_counter()
    cal = fit.fit(hw, fit_docs, held_out=[d for r, ds in by_role.items() if r != "fit" for d in ds], stat=args.stat)
    print(f"fitted on {len(fit_docs)} cases in {time.perf_counter() - t0:.1f} s: "
          f"{len(cal.get('op', {}))} op classes, {framework_line(cal)}")
    hw_cal = calibration.with_calibration(hw, cal)

    groups = {}
    for r, title in GROUPS.items():
        groups[title] = print_group(title, fit.score(hw_cal, by_role[r], args.stat))
    pooled = [row for r in GROUPS if r != "fit" for row in groups[GROUPS[r]]]
    gemv_by_row_length(pooled)
    misses = 0
    groups["pooled"] = pooled
    for label in (f"all {len(pooled)} never-fitted",):     # the goals apply to every held-out case together
        if not pooled:
            continue
        s = summarize(pooled)
        misses += print_table([
            (f"{label} end to end: median |error|", f"{100 * s['median_abs_err']:.1f}%", "≤ 8%",
             s["median_abs_err"] <= GOALS["median_abs_err"]),
            (f"{label} end to end: 90th percentile", f"{100 * s['p90_abs_err']:.1f}%", "≤ 20%",
             s["p90_abs_err"] <= GOALS["p90_abs_err"]),
            (f"{label} per op: time within ±25%", f"{100 * s['within_25pct_share']:.0f}%", "≥ 80%",
             s["within_25pct_share"] >= GOALS["within_25pct_share"]),
        ], f"accuracy goals ({label} cases only)")
    if args.save:
        path = fit.save(hw.path, cal)
        print(f"\nsaved the calibration into {path}")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "calibration.json").write_text(json.dumps(cal, indent=1), encoding="utf-8")
    return 1 if misses else 0


def measure_watched(args, hw):
    """Measure the cases (``measure``), with the machine's speed and the probe-style cold GEMVs before and after,
    printed and kept with the run (machine.json, for re-fits later); (documents, the profile predicted with)."""
    gemv_before = gemv_sentinels(hw)
    before = (float("nan"), float("nan")) if args.interleave else machine_speed(hw)   # no profile yet
    docs, hw = measure(args, hw)
    after, gemv_after = machine_speed(hw), gemv_sentinels(hw)
    (Path(args.out) / "machine.json").write_text(json.dumps(         # kept with the run, for re-fits later
        {"profile": str(hw.path), "gemm_share": {"before": before[0], "after": after[0]},
         "dram_share": {"before": before[1], "after": after[1]},
         "gemv_us_per_MB": {"before": gemv_before, "after": gemv_after}}, indent=1), encoding="utf-8")
    print("probe-style cold GEMVs (µs per MB of weights), before → after: " + ", ".join(
        f"{key} {gemv_before[key]:.0f} → {gemv_after[key]:.0f}" for key in gemv_before))
    share = lambda x: "—" if x != x else f"{x:.0%}"                        # noqa: E731 (NaN: not measured)
    print(f"machine speed, the profile's fastest fp32 GEMM: {share(before[0])} of it before measuring, "
          f"{share(after[0])} after; its largest DRAM copy: {share(before[1])} before, {share(after[1])} after "
          f"(a run measured on a slower machine than it was probed on reads as under-prediction)")
    return docs, hw


def print_group(title: str, rows: list[dict]) -> list[dict]:
    """One group's table of cases and its summary line; ``rows`` back."""
    print(f"\n{title}")
    print(f"{'case':<34} {'measured':>10} {'CV':>5} {'predicted':>10} {'error':>7} {'naive':>7} "
          f"{'uncal.':>7} {'ops ±25%':>9} {'faults':>7} {'machine':>9}")
    for r in rows:
        print(f"{r['case']:<34} {1e3 * r['measured_s']:8.2f}ms {100 * r['cv']:4.0f}% {1e3 * r['predicted_s']:8.2f}ms "
              f"{100 * r['error']:+6.1f}% {100 * r['naive_error']:+6.1f}% {100 * r['uncalibrated_error']:+6.1f}% "
              f"{100 * r['within_25pct_share']:8.0f}% {fresh(r['doc']['total']):>7} {moment(r['doc']):>9}")
    if rows:
        s = summarize(rows)
        print(f"  median |error| {100 * s['median_abs_err']:.1f}%, p90 {100 * s['p90_abs_err']:.1f}%, ops within ±25%: "
              f"{100 * s['within_25pct_share']:.0f}% of measured op time; naive roofline pred/meas "
              f"{min(s['naive_ratio']):.2f}–{max(s['naive_ratio']):.2f} (median |error| "
              f"{100 * s['naive_median_abs_err']:.0f}%), uncalibrated profile median |error| "
              f"{100 * s['uncal_median_abs_err']:.0f}%")
    return rows


def probe_only(hw, docs: dict[str, dict], stat: str) -> int:
    """Every case predicted with the profile's own calibration (nothing fitted here) and its range."""
    from ironlaw.measure.calibrate import fit
    from ironlaw.law import law
    from ironlaw.measure import validate
    refs = hw.extra.get("probe", {}).get("references", {})
    if not refs.get("fitted"):
        sys.exit(f"accuracy --probe-only: {hw.path} has no reference runs fitted; write the profile with "
                 "`ironlaw probe` (its reference runs on)")
    print(f"calibration: the profile's own, fitted on its probe rows and {', '.join(refs['fitted'])}")
    rows = fit.score(hw, list(docs.values()), stat)
    print(f"\n{'case':<34} {'measured':>10} {'CV':>5} {'predicted':>10} {'range':>19} {'error':>7} {'in':>3} "
          f"{'binds':>8} {'ops ±25%':>9} {'faults':>7} {'machine':>9}")
    inside, with_fresh, widths, mobilenet = [], [], [], []
    for r in rows:
        t = r["doc"]["total"]
        lo, hi = t["predicted_range_s"]
        binds = law.predict(validate.graph_of(r["doc"]), hw).bottleneck()["resource"]
        inside.append(lo <= r["measured_s"] <= hi)
        with_fresh.append(lo <= r["measured_s"] <= hi + (t.get("fresh_memory_max_s") or 0.0))
        if binds == "compute":
            widths.append(max(hi / r["predicted_s"] - 1.0, 1.0 - lo / r["predicted_s"]))
        if r["case"].startswith("mobilenet"):
            mobilenet.append(abs(r["error"]))
        print(f"{r['case']:<34} {1e3 * r['measured_s']:8.2f}ms {100 * r['cv']:4.0f}% {1e3 * r['predicted_s']:8.2f}ms "
              f"{1e3 * lo:8.2f}–{1e3 * hi:8.2f}ms {100 * r['error']:+6.1f}% {'yes' if inside[-1] else 'no':>3} "
              f"{binds:>8} {100 * r['within_25pct_share']:8.0f}% {fresh(t):>7} {moment(r['doc']):>9}")
    s = summarize(rows)
    g = PROBE_ONLY_GOALS
    checks = [("never-fitted end to end: median |error|", f"{100 * s['median_abs_err']:.1f}%", "≤ 10%",
               s["median_abs_err"] <= g["median_abs_err"]),
              ("never-fitted end to end: 90th percentile", f"{100 * s['p90_abs_err']:.1f}%", "≤ 25%",
               s["p90_abs_err"] <= g["p90_abs_err"]),
              ("measured inside the predicted range", f"{100 * np.mean(inside):.0f}% of {len(inside)}", "≥ 80%",
               np.mean(inside) >= g["in_range_share"]),
              ("… with the fresh-memory bound on its high end", f"{100 * np.mean(with_fresh):.0f}%", "reported", True)]
    if widths:
        checks.append(("range half-width, compute-bound cases (max)", f"±{100 * max(widths):.0f}% ({len(widths)} cases)",
                       "≤ ±30%", max(widths) <= g["compute_range"]))
    if mobilenet:
        checks.append(("MobileNetV2 end to end, |error| (max)", f"{100 * max(mobilenet):.1f}%", "≤ 15%",
                       max(mobilenet) <= g["mobilenet"]))
    return 1 if print_table(checks, "accuracy on the probe's own profile (nothing fitted on these cases)") else 0


if __name__ == "__main__":
    raise SystemExit(main())
