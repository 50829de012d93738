"""Cold-start speed of the CLI without torch, and whole-workload evaluations per second.

Goals: `ironlaw --help` and `ironlaw analyze llama3-8b --on h100` cold ≤ 0.3 s;
≥ 1e5 whole-workload evaluations per second from the Python API in a sweep over batch sizes.
Run: python benchmarks/cli_speed.py
"""
from __future__ import annotations

import subprocess
import sys
import time

import numpy as np

from bench import print_table, repeat, summary


def cold(args: list[str]) -> list[float]:
    # -X importtime is not used: we time the whole process, as a user would feel it
    def once():
        r = subprocess.run([sys.executable, "-m", "ironlaw", *args], capture_output=True)
        assert r.returncode == 0, r.stderr.decode()
    return repeat(once, n=9, warmup=1)


def torch_free() -> bool:
    code = "import sys, ironlaw.cli; from ironlaw import analyze; analyze('llama3-8b', on='h100'); print('torch' in sys.modules)"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def evals_per_s(n: int = 100_000) -> list[float]:
    import ironlaw
    batch = np.arange(1, n + 1, dtype=float)
    rates = []
    for _ in range(5):
        t0 = time.perf_counter()
        est = ironlaw.analyze("llama3-8b", on="h100", phase="decode", seq=1024, batch=batch)
        t = est.total_s
        rates.append(n / (time.perf_counter() - t0))
        assert t.shape == (n,)
    return rates


def main() -> int:
    rows = []
    for args in (["--help"], ["analyze", "llama3-8b", "--on", "h100"]):
        med, lo, hi, cv = summary(cold(args))
        rows.append((f"ironlaw {' '.join(args)} (cold)", f"{med:.3f} s [{lo:.3f}–{hi:.3f}] cv {cv:.0%}", "≤ 0.3 s",
                     med <= 0.3))
    rows.append(("core answers without importing torch", str(torch_free()), "True", torch_free()))
    med, lo, hi, cv = summary(evals_per_s())
    rows.append(("llama3-8b decode evaluations / s (100k batch sweep)", f"{med:,.0f} [{lo:,.0f}–{hi:,.0f}]", "≥ 100,000",
                 med >= 1e5))
    return print_table(rows, "CLI cold start and sweep throughput")


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
