"""Whether a kernel table's times come in steps: the lattice its short rows sit on, and what rounding to it does.

    python benchmarks/timer_steps.py --data DIR [--gpu FOLDER …] [--framework NAME …] [--op mla_bmm]
    python benchmarks/timer_steps.py --data DIR --gpu b200_sxm --framework trtllm --held-out "mla bmm bf16"

Data: aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0), ``--data`` its ``aiconfigurator_core/systems/data``. Per GPU,
framework and dtype of one op's table, the rows under ``SHORT_S`` are tested for a lattice: the step between
``STEPS_S`` that concentrates their times most (the length of the mean of exp(2πi·t / step), 1 on a lattice, about 0
on times spread evenly), its phase, and the share of rows within ``NEAR_S`` of a lattice point against the share
that even spreading would put there (2·NEAR_S / step). A table whose rows sit on a lattice measures each call in whole
steps, and no law term that falls smoothly with bytes or FLOPs can price a row a step off better than a step.

``--held-out CLASS``: the class's held-out rows (as ``kernel_tables.py --stored`` scores them, with the stored terms)
with the law's predictions as they are and moved to the nearest lattice point (steps fitted on the whole table), the
median and p90 of each: rounding takes every row within half a step onto its measured value and a row a step or more
off a whole step away, so the median falls and the p90 does not.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))

# rows shorter than this are tested for a lattice (longer ones span many steps, and a step is a small share of them)
SHORT_S = 20e-6
# the steps tried, and how near a lattice point a row must sit to count as on it
STEPS_S = np.arange(1.0e-6, 3.0e-6, 5e-9)
NEAR_S = 0.25e-6
GPUS = ("a100_sxm", "h100_sxm", "h200_sxm", "b200_sxm", "b300_sxm", "gb200", "gb300", "l40s", "rtx_pro_6000_server")
FRAMEWORKS = ("trtllm", "vllm", "sglang")
DTYPE_COLUMN = {"mla_bmm": "bmm_dtype", "gemm": "gemm_dtype"}


@dataclass(frozen=True)
class Lattice:
    step_s: float      # the spacing of the lattice
    phase_s: float     # the lattice points: phase_s + k · step_s
    strength: float    # |mean(exp(2πi·t / step))|: 1 on the lattice, ~0 for times spread evenly
    near: float        # share of the rows within NEAR_S of a lattice point
    chance: float      # the share even spreading would put there: 2·NEAR_S / step_s


def lattice(times_s: np.ndarray) -> Lattice:
    """The lattice of ``STEPS_S`` that the times under ``SHORT_S`` concentrate on most."""
    t = np.asarray(times_s, float)
    t = t[t < SHORT_S]
    if not len(t):
        raise ValueError("no row under SHORT_S to test for a lattice")
    z = np.exp(2j * np.pi * t[None, :] / STEPS_S[:, None]).mean(axis=1)
    i = int(np.argmax(np.abs(z)))
    step = float(STEPS_S[i])
    phase = float(np.angle(z[i]) / (2 * np.pi) % 1.0 * step)
    off = (t - phase + step / 2) % step - step / 2
    return Lattice(step, phase, float(np.abs(z[i])), float(np.mean(np.abs(off) <= NEAR_S)), 2 * NEAR_S / step)


def on_lattice(pred_s: np.ndarray, lat: Lattice) -> np.ndarray:
    """``pred_s`` moved to the nearest lattice point (at least the first past zero) where under ``SHORT_S``."""
    p = np.asarray(pred_s, float)
    k = np.maximum(1.0, np.round((p - lat.phase_s) / lat.step_s))
    return np.where(p < SHORT_S, lat.phase_s + k * lat.step_s, p)


def table_lines(data: Path, gpus, frameworks, op: str) -> list[str]:
    """One line per GPU, framework and dtype of ``op``'s tables: its lattice."""
    from ironlaw.core.errors import IronlawError
    from ironlaw.measure.calibrate import kerneltable
    out = [f"{'gpu':<20} {'framework':<8} {'dtype':<9} {'rows':>5}  step µs  phase µs  strength  on it (chance)"]
    for folder in gpus:
        for fw in frameworks:
            try:
                tables = kerneltable.read(data / folder, ops=(op,), framework=fw)
            except IronlawError:
                continue
            for t in tables:
                for dt in sorted(t.rows[DTYPE_COLUMN[op]].astype(str).unique()):
                    x = t.rows[t.rows[DTYPE_COLUMN[op]].astype(str) == dt]["latency_s"].to_numpy(float)
                    if not np.any(x < SHORT_S):
                        continue
                    lt = lattice(x)
                    out.append(f"{folder:<20} {fw:<8} {dt:<9} {int(np.sum(x < SHORT_S)):>5}  {1e6 * lt.step_s:7.3f}"
                               f"  {1e6 * lt.phase_s:8.2f}  {lt.strength:8.2f}  {100 * lt.near:5.0f}% "
                               f"({100 * lt.chance:.0f}%)")
    return out


def held_out_lines(data: Path, gpu: str, framework: str, op: str, name: str) -> list[str]:
    """The held-out score of each class of ``op`` whose name holds ``name``, as predicted and on the lattice."""
    import kernel_tables
    import kernel_worst
    from ironlaw.machine import engines, hardware
    from ironlaw.measure.calibrate import kernelfit
    tables = [replace(t, path=f"{gpu}/{t.path}") for t in kernel_tables.readable(data / gpu, framework, None, (op,))]
    hw = hardware.get(kernel_tables.GPUS[gpu])
    table = hw.calibration.table() if framework == "trtllm" else engines.load(hw.name, framework)
    out = []
    for g in kernel_tables.chosen(kernelfit.groups(tables), (name,)):
        rows, meas, pred = kernel_worst.priced(hw, table, g)[:3]
        lt = lattice(g.rows["latency_s"].to_numpy(float))
        score = [(np.median(e), np.percentile(e, 90)) for e in
                 (np.abs(pred / meas - 1.0), np.abs(on_lattice(pred, lt) / meas - 1.0))]
        out.append(f"{gpu} {framework} {g.name}: {len(rows)} held-out rows, step {1e6 * lt.step_s:.3f} µs; predicted "
                   f"{100 * score[0][0]:.1f}% / {100 * score[0][1]:.1f}%, on the lattice "
                   f"{100 * score[1][0]:.1f}% / {100 * score[1][1]:.1f}%")
    if not out:
        raise SystemExit(f"no {op} class of {gpu} ({framework}) holds '{name}'")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="aiconfigurator_core/systems/data of aiconfigurator-core 0.12.0")
    ap.add_argument("--gpu", action="append", choices=GPUS, help="table folder(s) (default: all)")
    ap.add_argument("--framework", action="append", choices=FRAMEWORKS, help="default: all three")
    ap.add_argument("--op", default="mla_bmm", choices=tuple(DTYPE_COLUMN))
    ap.add_argument("--held-out", metavar="CLASS", help="score this class's held-out rows, predicted and on the "
                                                        "lattice (one --gpu and one --framework)")
    a = ap.parse_args()
    data = Path(a.data)
    if not data.is_dir():
        ap.error(f"--data {a.data}: no such folder")
    if a.held_out is not None:
        if len(a.gpu or ()) != 1 or len(a.framework or ()) != 1:
            ap.error("--held-out takes one --gpu and one --framework")
        print("\n".join(held_out_lines(data, a.gpu[0], a.framework[0], a.op, a.held_out)))
        return 0
    print("\n".join(table_lines(data, a.gpu or GPUS, a.framework or FRAMEWORKS, a.op)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
