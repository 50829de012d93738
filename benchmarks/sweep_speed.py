"""Speed of sweeps and of `ironlaw compare`: measured vs goal.

Goals: a 10,000-point sweep (workloads × hardware × batch × seq) ≤ 1 s; 1,000,000 points ≤ 10 s
(the textbook's mlsysim spends 1.2–2.2 ms per evaluation: 12–22 s for 10,000); ≥ 1e5
whole-workload evaluations per second from the Python API (with bottleneck labels); `ironlaw
compare` on a built-in workload ≤ 0.5 s cold (a fresh process, as a user runs it).
Median and spread of several runs; the machine is shared, so expect noise.
Run: python benchmarks/sweep_speed.py [--quick]
"""
from __future__ import annotations

import subprocess
import sys
import time

import numpy as np

from bench import print_table, repeat, summary

WORKLOADS = [("llama3-8b", "decode"), ("llama3-70b", "decode"), ("gpt2", "prefill"), ("mixtral-8x7b", "prefill"),
             ("llama3-8b", "prefill")]
HW_4 = ["h100", "a100", "b200", "h200"]
HW_10 = HW_4 + ["mi300x", "h100-pcie", "a100-40gb", "l4", "tpu-v5p", "gb10"]


def grid(hws: list[str], n_batch: int, n_seq: int) -> int:
    """Workloads × hardware × batch × seq through the public sweep API (bottleneck labels included)."""
    from ironlaw.models import sweep
    b = np.arange(1, n_batch + 1, dtype=float)
    s = np.unique(np.linspace(1, 1000, n_seq).round())          # GPT-2 has 1,024 learned positions
    n = 0
    for spec, phase in WORKLOADS:
        res = sweep.run(spec, hws, b, s, phase=phase, ridge=False)
        n += res.points
    return n


def evals_per_s(n: int = 100_000) -> list[float]:
    from ironlaw.law import explain, law
    from ironlaw.models import workloads
    from ironlaw.machine import hardware
    hw = hardware.get("h100")
    batch = np.arange(1, n + 1, dtype=float)
    rates = []
    for _ in range(5):
        t0 = time.perf_counter()
        g = workloads.resolve(workloads.Request("llama3-8b", phase="decode", seq=1024, batch=batch, device="cuda"))
        est = law.predict(g, hw)
        labels = explain.labels(est)
        rates.append(n / (time.perf_counter() - t0))
        assert est.total_s.shape == (n,) and labels.shape == (n,)
    return rates


def compare_cold() -> tuple[list[float], list[float]]:
    """Wall seconds and CPU seconds (user + sys) of a fresh `ironlaw compare` process."""
    import resource
    args = ["compare", "llama3-8b", "--on", "h100", "--phase", "decode", "--seq", "1024",
            "--what-if", "sparsity=0.9,format=csr", "--format", "json"]
    cpu = []

    def once():
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = subprocess.run([sys.executable, "-m", "ironlaw", *args], capture_output=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
        assert r.returncode == 0, r.stderr.decode()
    wall = repeat(once, n=7, warmup=1)
    return wall, cpu[1:]


def main() -> int:
    quick = "--quick" in sys.argv
    rows = []

    def timed(fn, n):
        pts = []
        xs = repeat(lambda: pts.append(fn()), n=n, warmup=1)
        return xs, pts[-1]

    xs, pts = timed(lambda: grid(HW_4, 25, 20), 5)
    med, lo, hi, cv = summary(xs)
    rows.append((f"sweep {pts:,} points (5 workloads × 4 hw × 25 batch × 20 seq)",
                 f"{med:.3f} s ({lo:.3f}–{hi:.3f}, CV {cv:.0%})", "≤ 1 s", med <= 1.0))
    if not quick:
        xs, pts = timed(lambda: grid(HW_10, 100, 200), 3)
        med, lo, hi, cv = summary(xs)
        rows.append((f"sweep {pts:,} points (5 × 10 hw × 100 batch × 200 seq)",
                     f"{med:.2f} s ({lo:.2f}–{hi:.2f}, CV {cv:.0%})", "≤ 10 s", med <= 10.0))
        per_eval = med / pts
        rows.append(("  per evaluation (mlsysim: 1.2–2.2 ms)", f"{per_eval * 1e6:.2f} µs", "—", True))
    rates = evals_per_s(20_000 if quick else 100_000)
    med, lo, hi, cv = summary(rates)
    rows.append(("whole-workload evaluations / s (llama3-8b decode, with labels)",
                 f"{med:,.0f} ({lo:,.0f}–{hi:,.0f})", "≥ 100,000", med >= 1e5))
    xs, cpu = compare_cold()
    med, lo, hi, cv = summary(xs)
    rows.append(("`ironlaw compare llama3-8b --what-if sparsity=0.9` cold", f"{med:.3f} s ({lo:.3f}–{hi:.3f}, CV {cv:.0%})",
                 "≤ 0.5 s", med <= 0.5))
    med, lo, hi, cv = summary(cpu)
    rows.append(("  its CPU time (user + sys; less sensitive to other load)", f"{med:.3f} s ({lo:.3f}–{hi:.3f})",
                 "—", True))
    import os
    rows.append(("  machine load average (1 min) during the run", f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs",
                 "—", True))
    misses = print_table(rows, "sweep and compare speed")
    return 1 if misses else 0


if __name__ == "__main__":
    raise SystemExit(main())
