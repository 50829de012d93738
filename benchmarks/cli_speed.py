"""Cold-start speed of the CLI without torch, one max-throughput prediction, and whole-workload evaluations per
second.

Goals: `ironlaw --help` and `ironlaw analyze llama3-8b --on h100` cold ≤ 0.3 s; a max-throughput serving
prediction (`ironlaw.serve(..., max_throughput=True)`, warm process) ≤ 0.2 s; ≥ 1e5 whole-workload evaluations
per second from the Python API in a sweep over batch sizes.
Run: python benchmarks/cli_speed.py [--baseline OTHER/src]

A shared machine's speed swings two- to fourfold within minutes: ``--baseline`` times another checkout's ``src``
(main's, say) in the same run, each cold start alternated with this tree's, and prints its rows beside these.
Every cold row also gives the process's CPU seconds (user + system), which waiting for a busy CPU does not add to.
The evaluations row is timed the same way: in a process per checkout, alternated, wall and CPU rates.
A line after the table times the floor the same way: the interpreter and the third-party modules a cold `analyze`
imports (``FLOOR``: numpy, typer, rich), without ironlaw; what no change to ironlaw's own code takes off.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from bench import print_table, repeat, summary

SRC = Path(__file__).resolve().parents[1] / "src"
COLD = (["--help"], ["analyze", "llama3-8b", "--on", "h100"])
# what any cold `ironlaw analyze` imports before ironlaw's own code: the interpreter, numpy (one OpenBLAS thread,
# as the CLI asks), typer with click, rich's console and table; the row after the table times it alone
FLOOR = "import numpy, typer, typer.main, rich.console, rich.table, rich.markup, json, dataclasses, pathlib"
MAX_THROUGHPUT = dict(spec="llama3.1-8b", on="h100", dtype="fp8", prompt=2048, output=2048, max_throughput=True)


def env_for(src: Path) -> dict:
    """The environment a timed process of ``src`` runs in: ``src`` first on PYTHONPATH, bytecode written (the
    warm-up round writes it, as an installed package has it; under PYTHONDONTWRITEBYTECODE a fresh checkout, a
    --baseline extracted from git, compiled every module on each start: ~0.7G more instructions a cold analyze)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def cold(args: list[str], srcs: list[Path], n: int = 9,
         code: str | None = None) -> dict[Path, tuple[list[float], list[float]]]:
    """Wall and CPU seconds of ``ironlaw ARGS`` (or of ``python -c CODE``) run cold with each of ``srcs`` first on
    PYTHONPATH, alternated; one warm-up round."""
    # -X importtime is not used: we time the whole process, as a user would feel it
    out = {s: ([], []) for s in srcs}
    cmd = [sys.executable, "-c", code] if code else [sys.executable, "-m", "ironlaw", *args]
    for k in range(n + 1):
        for s in srcs:
            env = env_for(s)
            if code:                                  # as the CLI asks before numpy loads
                env.setdefault("OPENBLAS_NUM_THREADS", "1")
            r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
            r = subprocess.run(cmd, capture_output=True, env=env)
            wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
            assert r.returncode == 0, r.stderr.decode()
            if k:
                out[s][0].append(wall)
                out[s][1].append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return out


def torch_free() -> bool:
    code = "import sys, ironlaw.cli; from ironlaw import analyze; analyze('llama3-8b', on='h100'); print('torch' in sys.modules)"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


# one process's whole-workload evaluations per second, wall and CPU ("wall cpu" per timed sweep, one per line)
EVALS = """
import time, numpy as np, ironlaw
n = {n}
batch = np.arange(1, n + 1, dtype=float)
ironlaw.analyze("llama3-8b", on="h100", phase="decode", seq=1024, batch=batch[:10]).total_s
for _ in range({sweeps}):
    t0, c0 = time.perf_counter(), time.process_time()
    t = ironlaw.analyze("llama3-8b", on="h100", phase="decode", seq=1024, batch=batch).total_s
    assert t.shape == (n,)
    print(n / (time.perf_counter() - t0), n / (time.process_time() - c0))
"""


def evals_per_s(srcs: list[Path], n: int = 100_000, rounds: int = 3, sweeps: int = 2) -> dict[Path, tuple]:
    """Per checkout, (wall, CPU) whole-workload evaluations per second of a 100k batch sweep: ``rounds``
    processes each, alternated between the checkouts, ``sweeps`` timed sweeps in each after a warm-up."""
    out = {s: ([], []) for s in srcs}
    for _ in range(rounds):
        for s in srcs:
            env = env_for(s)
            r = subprocess.run([sys.executable, "-c", EVALS.format(n=n, sweeps=sweeps)], capture_output=True,
                               text=True, env=env)
            assert r.returncode == 0, r.stderr
            for line in r.stdout.split("\n"):
                if line.strip():
                    wall, cpu = map(float, line.split())
                    out[s][0].append(wall)
                    out[s][1].append(cpu)
    return out


def sources(baseline: Path | None) -> list[Path]:
    """This checkout's src, then the baseline's if one is given."""
    return [SRC] + ([baseline] if baseline else [])


def per_source(runs: dict, s: Path) -> tuple[tuple, tuple, str]:
    """(summary of the wall figures, summary of the CPU figures, the row's baseline label) of checkout ``s``."""
    return summary(runs[s][0]), summary(runs[s][1]), "" if s == SRC else f" [baseline {s}]"


def evals_rows(baseline: Path | None) -> list[tuple]:
    srcs = sources(baseline)
    runs, rows = evals_per_s(srcs), []
    for s in srcs:
        (med, lo, hi, _), (cpu, cpu_lo, cpu_hi, _), who = per_source(runs, s)
        rows.append((f"llama3-8b decode evaluations / s (100k batch sweep){who}",
                     f"{med:,.0f} [{lo:,.0f}–{hi:,.0f}]; per cpu s {cpu:,.0f} [{cpu_lo:,.0f}–{cpu_hi:,.0f}]",
                     "≥ 100,000", med >= 1e5))
    return rows


def max_throughput_s() -> list[float]:
    import ironlaw
    kw = {k: v for k, v in MAX_THROUGHPUT.items() if k != "spec"}
    return repeat(lambda: ironlaw.serve(MAX_THROUGHPUT["spec"], **kw), n=7, warmup=1)


def cold_rows(baseline: Path | None) -> list[tuple]:
    srcs = sources(baseline)
    rows = []
    for args in COLD:
        runs = cold(args, srcs)
        for s in srcs:
            (med, lo, hi, cv), (cpu, cpu_lo, cpu_hi, _), who = per_source(runs, s)
            rows.append((f"ironlaw {' '.join(args)} (cold){who}",
                         f"{med:.3f} s [{lo:.3f}–{hi:.3f}] cv {cv:.0%}; cpu {cpu:.3f} s [{cpu_lo:.3f}–{cpu_hi:.3f}]",
                         "≤ 0.3 s", med <= 0.3))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, help="another checkout's src folder, timed alternately in the same run")
    args = ap.parse_args()
    if args.baseline and not (args.baseline / "ironlaw" / "__init__.py").is_file():
        ap.error(f"--baseline {args.baseline}: no ironlaw package there (give a checkout's src folder)")
    rows = cold_rows(args.baseline)
    rows.append(("core answers without importing torch", str(torch_free()), "True", torch_free()))
    med, lo, hi, cv = summary(max_throughput_s())
    rows.append((f"{MAX_THROUGHPUT['spec']} {MAX_THROUGHPUT['on']} {MAX_THROUGHPUT['dtype']} max-throughput "
                 f"prediction (warm)", f"{med:.3f} s [{lo:.3f}–{hi:.3f}] cv {cv:.0%}", "≤ 0.2 s", med <= 0.2))
    rows += evals_rows(args.baseline)
    misses = print_table(rows, "CLI cold start, one max-throughput prediction and sweep throughput")
    (med, lo, hi, _), (cpu, cpu_lo, cpu_hi, _), _ = per_source(cold([], [SRC], code=FLOOR), SRC)
    print(f"floor under these (no goal): python -c '{FLOOR}' cold: {med:.3f} s [{lo:.3f}–{hi:.3f}]; "
          f"cpu {cpu:.3f} s [{cpu_lo:.3f}–{cpu_hi:.3f}]")
    return misses


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
