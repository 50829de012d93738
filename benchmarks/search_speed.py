"""Speed of `ironlaw search --phase train`: candidate layouts evaluated per second, measured vs goal.

The search: Llama-3-70B, 1,024 H100 (128 DGX nodes), global batch 1,024, sequence 8,192, bf16 — every valid
(tp, pp, dp, micro-batch, interleave, recompute, ZeRO, sequence parallel) layout. Goal: ≥ 10,000 candidates/s
in one process on a 2-core machine. Also measured: a local process pool of 2 workers (`--workers 2`) and Ray
with 2 local workers (`--engine ray`, when Ray is installed; its start-up is timed apart), and the whole
search as a user runs it (`train.search`: space, fast path, the top 5 re-predicted by parallel.train_step).
Median of several runs; the machine is shared, so expect noise.

Calculon (calculon-ai/calculon, the peer that searches Megatron layouts) is timed when its checkout is given
(--calculon DIR [--calculon-python PY]; it needs numpy, psutil and pandas): its own example execution compiled
and run repeatedly, which is what its `llm-optimal-execution` does per candidate. Without it, its README's
published figure is quoted.
Run: python benchmarks/search_speed.py [--quick] [--calculon DIR]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from bench import print_table, repeat, summary

SPEC, GPUS, GBS, SEQ, DTYPE = "llama3-70b", 1024, 1024, 8192, "bf16"
GOAL = 10_000

def setup():
    from ironlaw.machine import hardware
    from ironlaw.machine.network.topology import nodes_for
    from ironlaw.models.search import fast, space, train
    hw = hardware.get("h100")
    nodes = nodes_for(hw, GPUS)
    g = train.training_model(SPEC, hw, SEQ, DTYPE)
    m = g.meta
    s = space.Space(GPUS, GBS, SEQ, m["layers"], m["heads"], m["kv_heads"], 0, gpus_per_node=GPUS // nodes)
    return space.enumerate_space(s), fast.Context(SPEC, hw, GPUS, nodes, GBS, SEQ, g.dtype)


def rate(c, ctx, n: int, **engine) -> tuple[float, float, float]:
    """(median, min, max) candidates/s of the fast path over the whole space, by the wall clock."""
    from ironlaw.models.search import train
    xs = repeat(lambda: train.evaluate_all(ctx, c, **engine), n=n)
    med, lo, hi, _ = summary(xs)
    k = len(c["tp"])
    return k / med, k / hi, k / lo


def cpu_rate(c, ctx, n: int) -> float:
    """Candidates per CPU-second of this process (the wall clock counts other jobs on a shared machine)."""
    from ironlaw.models.search import train
    xs = []
    for _ in range(n):
        t0 = time.process_time()
        train.evaluate_all(ctx, c)
        xs.append(time.process_time() - t0)
    return len(c["tp"]) / summary(xs)[0]


def ray_rate(c, ctx, n: int):
    try:
        import ray
    except ImportError as e:
        return None, f"not installed ({e})"
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    start = time.perf_counter() - t0
    try:
        return rate(c, ctx, n, engine="ray"), f"ray.init {start:.1f} s, not counted"
    finally:
        ray.shutdown()


CALCULON_TIMER = """
import logging, sys, time
import calculon
from calculon.llm import Llm
from calculon.system import System
app = Llm.Application(calculon.io.read_json_file("models/megatron-1T.json"))
syst = System(calculon.io.read_json_file("systems/a100_80g.json"))
exe = Llm.Execution.from_json(calculon.io.read_json_file("examples/3072_t4_p64_d12_mbs4_full.json"))
n = int(sys.argv[1])
t0, c0 = time.perf_counter(), time.process_time()
for _ in range(n):
    m = Llm(app, logging.Logger("x")); m.compile(syst, exe); m.run(syst); m.get_stats_json(False)
print(n / (time.perf_counter() - t0), n / (time.process_time() - c0))
"""


def calculon(checkout: Path, python: str, n: int = 30) -> tuple[float, float, str]:
    """Calculon's evaluations/s: its own example execution (Megatron-1T on 3,072 A100, README) compiled and run
    ``n`` times, as its ``llm-optimal-execution`` does for every candidate (one process; its search spreads
    them over a multiprocessing pool). Its full search of this benchmark's space did not finish in 25 min here."""
    p = subprocess.run([python, "-c", CALCULON_TIMER, str(n)], cwd=checkout, capture_output=True, text=True,
                       env={"PYTHONPATH": "."})
    try:
        wall, cpu = (float(x) for x in p.stdout.split())
    except ValueError:
        return 0.0, 0.0, f"did not run: {(p.stdout + p.stderr).strip()[-200:]}"
    return wall, cpu, "measured here"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--calculon", type=Path, help="a checkout of calculon-ai/calculon")
    ap.add_argument("--calculon-python", default=sys.executable, help="a Python with numpy and psutil for it")
    a = ap.parse_args()
    n = 3 if a.quick else 7
    from ironlaw.models.search import train
    c, ctx = setup()
    k = len(c["tp"])
    print(f"{SPEC} on {GPUS} × h100, GBS {GBS}, seq {SEQ}, {DTYPE}: {k:,} candidate layouts")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (other jobs slow the wall clock)")
    rows = []
    one = rate(c, ctx, n)
    rows.append(("one process (vectorised), wall clock", f"{one[0]:,.0f}/s ({one[1]:,.0f}–{one[2]:,.0f})",
                 f"≥ {GOAL:,}/s", one[0] >= GOAL))
    cpu = cpu_rate(c, ctx, n)
    rows.append(("one process, per CPU-second", f"{cpu:,.0f}/s", f"≥ {GOAL:,}/s", cpu >= GOAL))
    two = rate(c, ctx, n, workers=2)
    rows.append(("--workers 2 (process pool)", f"{two[0]:,.0f}/s ({two[1]:,.0f}–{two[2]:,.0f})", "-", True))
    ray, note = ray_rate(c, ctx, n)
    rows.append(("--engine ray, 2 local workers", f"{ray[0]:,.0f}/s ({note})" if ray else note, "-", True))
    whole = repeat(lambda: train.search(SPEC, "h100", GPUS, GBS, SEQ, DTYPE, top=5), n=max(n // 2, 2))
    med = summary(whole)[0]
    rows.append(("whole search incl. top 5 by train_step", f"{med:.2f} s ({k / med:,.0f}/s)", "-", True))
    if a.calculon:
        wall, cpu, how = calculon(a.calculon, a.calculon_python)
        rows.append(("Calculon, one execution at a time", f"{wall:,.0f}/s wall, {cpu:,.0f}/s per CPU-s ({how})",
                     "-", True))
    else:
        rows.append(("Calculon (published)", "Turing-530B on 5,128 A100: '~1 min'", "-", True))
    return print_table(rows, "search speed (candidates/s)")


if __name__ == "__main__":
    raise SystemExit(main())
