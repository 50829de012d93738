"""Speed of `ironlaw search --phase train`: candidate layouts evaluated per second, measured vs goal (issue 27).

The search: Llama-3-70B, 1,024 H100 (128 DGX nodes), global batch 1,024, sequence 8,192, bf16 — every valid
(tp, pp, dp, micro-batch, interleave, recompute, ZeRO, sequence parallel) layout. Goal: ≥ 10,000 candidates/s
in one process on a 2-core machine. Also measured: a local process pool of 2 workers (`--workers 2`) and Ray
with 2 local workers (`--engine ray`, when Ray is installed; its start-up is timed apart), and the whole
search as a user runs it (`train.search`: space, fast path, the top 5 re-predicted by parallel.train_step).
Median of several runs; the machine is shared, so expect noise.

Calculon (calculon-ai/calculon, the peer that searches Megatron layouts) is run when its checkout is given
(--calculon DIR [--calculon-python PY]; it needs numpy and psutil): its `llm-optimal-execution` on the same model shape, GPUs, batch and
system, one CPU, and its own printed "Calculation rate". Without it, its README's published figure is quoted.
Run: python benchmarks/search_speed.py [--quick] [--calculon DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _table import print_table, repeat, summary

SPEC, GPUS, GBS, SEQ, DTYPE = "llama3-70b", 1024, 1024, 8192, "bf16"
GOAL = 10_000
# Calculon's model format: GPT blocks with a 2-matrix MLP; Llama-3-70B's SwiGLU (3 matrices of 8192×28672)
# has the FLOPs of a 2-matrix MLP of width 1.5 × 28672 = 43008; attention is multi-head (no GQA) there
CALCULON_MODEL = {"hidden": 8192, "feedforward": 43008, "seq_size": SEQ, "attn_heads": 64, "attn_size": 128,
                  "num_blocks": 80}


def setup():
    from ironlaw import hardware
    from ironlaw.network.topology import nodes_for
    from ironlaw.search import fast, space, train
    hw = hardware.get("h100")
    nodes = nodes_for(hw, GPUS)
    g = train._model(SPEC, hw, SEQ, DTYPE)
    m = g.meta
    s = space.Space(GPUS, GBS, SEQ, m["layers"], m["heads"], m["kv_heads"], 0, gpus_per_node=GPUS // nodes)
    return space.enumerate_space(s), fast.Context(SPEC, hw, GPUS, nodes, GBS, SEQ, g.dtype)


def rate(c, ctx, n: int, **engine) -> tuple[float, float, float]:
    """(median, min, max) candidates/s of the fast path over the whole space, by the wall clock."""
    from ironlaw.search import train
    xs = repeat(lambda: train.evaluate_all(ctx, c, **engine), n=n)
    med, lo, hi, _ = summary(xs)
    k = len(c["tp"])
    return k / med, k / hi, k / lo


def cpu_rate(c, ctx, n: int) -> float:
    """Candidates per CPU-second of this process (the wall clock counts other jobs on a shared machine)."""
    from ironlaw.search import train
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


def calculon(checkout: Path, python: str) -> tuple[float, int, str]:
    """Calculon's own printed rate and execution count for the same search, one CPU."""
    with tempfile.TemporaryDirectory() as d:
        model = Path(d) / "llama3-70b.json"
        model.write_text(json.dumps(CALCULON_MODEL))
        # its H100 system file lists float16, not bfloat16 (the same rates)
        cmd = [python, "./bin/calculon", "llm-optimal-execution", str(model), str(GPUS), str(GBS),
               "float16", "systems/h100_80g_nvl8.json", str(Path(d) / "out.json"), "-c", "1"]
        p = subprocess.run(cmd, cwd=checkout, capture_output=True, text=True, env={"PYTHONPATH": "."})
    out = p.stdout + p.stderr
    r = re.search(r"Calculation rate: ([\d.]+)", out)
    n = re.search(r"Total executions: (\d+)", out)
    if not r:
        return 0.0, 0, f"did not run: {out.strip()[-200:]}"
    return float(r.group(1)), int(n.group(1)), "measured here, 1 CPU"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--calculon", type=Path, help="a checkout of calculon-ai/calculon")
    ap.add_argument("--calculon-python", default=sys.executable, help="a Python with numpy and psutil for it")
    a = ap.parse_args()
    n = 3 if a.quick else 7
    from ironlaw.search import train
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
        cr, cn, how = calculon(a.calculon, a.calculon_python)
        rows.append((f"Calculon llm-optimal-execution ({cn:,} executions)", f"{cr:,.0f}/s ({how})", "-", True))
    else:
        rows.append(("Calculon (published)", "Turing-530B on 5,128 A100: '~1 min'", "-", True))
    return print_table(rows, "search speed (candidates/s)")


if __name__ == "__main__":
    raise SystemExit(main())
