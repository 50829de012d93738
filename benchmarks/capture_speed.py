"""How fast and how lean is graph capture? Measured vs goal, each case in a fresh subprocess.

    .venv/bin/python benchmarks/capture_speed.py [--repeats 3]

Goals: Llama-3-8B from its config at seq 2048 ≤ 3 s and ≤ 1.5 GB peak RSS; ResNet-50 ≤ 0.5 s.
Times are split: `import` = import torch, torch._dynamo (which any TorchDispatchMode pulls in on first
use) and transformers; `capture_s` = the first capture after those imports (it still imports the model's
modeling code and warms torch's dispatch caches); `warm_s` = the same capture again in the same process
(building the model on meta, fake tensors, recording, the Graph). Peak RSS is the subprocess's ru_maxrss. The machine is shared: medians and ranges.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, os, resource, sys, time
os.environ["HF_HUB_OFFLINE"] = "1"
case = sys.argv[1]
t0 = time.perf_counter()
import torch
import torch._dynamo        # any TorchDispatchMode imports it on first use (~1/3 of a cold capture)
if case == "llama3-8b":
    import transformers
t1 = time.perf_counter()
from ironlaw.models import workloads
def once():
    t = time.perf_counter()
    if case == "llama3-8b":
        from ironlaw.models.capture import hf
        g = hf.build("tests/data/llama3_8b_config.json", workloads.Request("hf:llama", seq=2048, phase="prefill"))
    else:
        g = workloads.resolve(workloads.Request("py:examples/resnet.py:resnet50"))
    return time.perf_counter() - t, g
cap_s, g = once()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
warm_s, _ = once()
print(json.dumps({"import_s": t1 - t0, "capture_s": cap_s, "warm_s": warm_s, "rss_bytes": rss,
                  "ops": len(g.ops), "flops": g.flops}))
"""

GOALS = {"llama3-8b": {"capture_s": 3.0, "warm_s": 3.0, "rss_bytes": 1.5e9},
         "resnet50": {"capture_s": 0.5, "warm_s": 0.5}}


def run(case: str) -> dict:
    p = subprocess.run([sys.executable, "-c", CHILD, case], cwd=ROOT, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"{case}: child failed:\n{p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    print(f"{'case':<10} {'metric':<10} {'median':>10} {'min..max':>18} {'goal':>9}  verdict")
    import os
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for case, goals in GOALS.items():
        runs = [run(case) for _ in range(a.repeats)]
        for key in ("import_s", "capture_s", "warm_s", "rss_bytes"):
            vals = [r[key] for r in runs]
            med = statistics.median(vals)
            unit = (lambda v: f"{v / 1e9:.2f} GB") if key == "rss_bytes" else (lambda v: f"{v:.2f} s")
            goal = goals.get(key)
            verdict = "" if goal is None else ("meets goal" if med <= goal else "MISSES goal")
            print(f"{case:<10} {key:<10} {unit(med):>10} {unit(min(vals)) + '..' + unit(max(vals)):>18} "
                  f"{unit(goal) if goal else '':>9}  {verdict}")
        print(f"{case:<10} {'graph':<10} {runs[0]['ops']} ops, {runs[0]['flops'] / 1e9:,.1f} GFLOP")


if __name__ == "__main__":
    main()
