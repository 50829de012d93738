"""Fresh memory on this CPU: what runs in a fresh process pay for page faults, against ironlaw's bound.

    python benchmarks/fresh_memory.py [--on local|FILE.toml] [--out out/fresh-memory] [--from DIR]

Each case runs as a user runs it, `ironlaw validate … --format json` in a process of its own (a long process
whose heap already grew faults less or not at all). Per case: the measured time, the page faults validate
counted per run and their seconds at the probe's measured cost of fresh memory (``pages`` rows), and the
prediction's bound on them (``fresh_memory_max_s``: every new tensor faulted once). The bound must hold in
every case; the table also says whether the measured time falls inside the predicted range, and inside it
with the bound added to its high end. --from DIR predicts the validate documents saved in DIR again (on --on)
without running anything.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench import print_table  # noqa: E402

HERE = Path(__file__).parent
BERT = f"hf:{HERE / 'configs' / 'bert-small.json'}"
MOBILENET = f"py:{HERE.parent / 'examples' / 'mobilenet.py'}:mobilenet_v2"
# (spec, batch, seq, phase): CNNs from batch 1 to 8 (their activations outgrow glibc's thresholds), and
# transformers and an MLP whose tensors stay small
CASES = [("resnet18", 1, None, None), ("resnet18", 4, None, None), ("resnet18", 8, None, None),
         ("resnet50", 1, None, None), ("resnet50", 4, None, None), ("resnet50", 8, None, None),
         (MOBILENET, 1, None, None), (MOBILENET, 4, None, None), (MOBILENET, 8, None, None),
         (BERT, 8, 128, None), ("gpt2", 8, 64, "prefill"), ("gpt2", 2, 128, "prefill"),
         ("gpt2", 1, 128, "decode"), ("mlp", 8, None, None)]


def file_name(spec: str, batch: int, seq, phase) -> str:
    return f"{Path(spec.split(':')[-2] if spec.startswith(('py:', 'hf:')) else spec).stem}-b{batch}" \
           + (f"-s{seq}" if seq else "") + (f"-{phase}" if phase else "") + ".json"


def saved_case(spec: str, batch: int, seq, phase, on: str, src: Path) -> dict:
    """A saved validate document, predicted again on ``on``."""
    from ironlaw.machine import hardware
    from ironlaw.measure import validate
    path = src / file_name(spec, batch, seq, phase)
    if not path.is_file():
        sys.exit(f"no saved measurement {path}")
    return validate.repredict(json.loads(path.read_text(encoding="utf-8")), hardware.get(on))


def run_case(spec: str, batch: int, seq, phase, on: str, out: Path) -> dict:
    path = out / file_name(spec, batch, seq, phase)
    name = path.stem
    cmd = [sys.executable, "-m", "ironlaw", "validate", spec, "--batch", str(batch), "--on", on,
           "--format", "json", "--out", str(path)]
    if seq:
        cmd += ["--seq", str(seq)]
    if phase:
        cmd += ["--phase", phase]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"{name}: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else 'failed'}")
    return json.loads(path.read_text(encoding="utf-8"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--on", default="local")
    ap.add_argument("--out", default="out/fresh-memory")
    ap.add_argument("--from", dest="src", default=None, help="predict the validate documents saved here again")
    args = ap.parse_args()
    out = Path(args.out)
    if not args.src:
        out.mkdir(parents=True, exist_ok=True)
    print(f"{'case':<24} {'measured':>9} {'faulted':>9} {'fresh':>13} {'bound':>9} {'holds':>5} "
          f"{'predicted':>9} {'range':>17} {'in':>3} {'in+fresh':>8}")
    rows = []
    for spec, batch, seq, phase in CASES:
        doc = saved_case(spec, batch, seq, phase, args.on, Path(args.src)) if args.src \
            else run_case(spec, batch, seq, phase, args.on, out)
        t = doc["total"]
        name = Path(spec.split(":")[-2]).stem if spec.startswith(("py:", "hf:")) else spec
        fresh, bound, (lo, hi) = t["fresh_memory_s"], t["fresh_memory_max_s"], t["predicted_range_s"]
        if fresh is None or bound is None:
            sys.exit(f"the profile {args.on} has no probe 'pages' rows: run `ironlaw probe` again")
        meas = t["measured_s"]
        r = {"holds": fresh <= bound, "in": lo <= meas <= hi, "in_fresh": lo <= meas <= hi + bound,
             "share": fresh / meas}
        rows.append(r)
        label = f"{name} b{batch}" + (f" s{seq}" if seq else "") + (f" {phase}" if phase else "")
        print(f"{label:<24} {1e3 * meas:7.1f}ms {t['faulted_bytes_per_run'] / 2**20:5.0f} MiB "
              f"{1e3 * fresh:6.1f}ms {100 * r['share']:3.0f}% {1e3 * bound:7.1f}ms {'yes' if r['holds'] else 'NO':>5} "
              f"{1e3 * t['predicted_s']:7.1f}ms {1e3 * lo:7.1f}–{1e3 * hi:7.1f}ms {'yes' if r['in'] else 'no':>3} "
              f"{'yes' if r['in_fresh'] else 'no':>8}")
    n = len(rows)
    return print_table([
        ("measured fresh memory within the bound", f"{sum(r['holds'] for r in rows)} of {n}", f"{n} of {n}",
         all(r["holds"] for r in rows)),
        ("fresh memory, share of the run (median / max)",
         f"{100 * statistics.median(r['share'] for r in rows):.0f}% / {100 * max(r['share'] for r in rows):.0f}%",
         "reported", True),
        ("measured inside the predicted range", f"{sum(r['in'] for r in rows)} of {n}", "reported", True),
        ("… with the bound added to its high end", f"{sum(r['in_fresh'] for r in rows)} of {n}", "reported", True),
    ], "fresh memory in a fresh process per case")


if __name__ == "__main__":
    sys.exit(main())
