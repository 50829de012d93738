"""Helpers the kernel-table benchmarks share: find one op's measured tables per system, score a fit on the rows
it did not see, and write the tests' CSV extract of a table.

Tables are aiconfigurator-core's layout, <data>/<system>/<family>/<framework>/<version>/<op>_perf.parquet (or the
extract's .csv), read by ironlaw.measure.calibrate.kerneltable.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

import numpy as np


def arguments(doc: str, default: Path, write: str | None = None, only: str | None = None, gpu: str | None = None,
              flags: dict[str, str] | None = None, choices: dict[str, tuple] | None = None
              ) -> tuple[argparse.Namespace, Path]:
    """(the command line of a kernel-table benchmark: ``--data DIR``, ``--extract DIR`` and, given their help,
    ``--write``, ``--only X`` and ``--gpu X`` (repeatable), each of ``flags`` (name: help, a switch) and of ``choices``
    (name: (help, its values), one value); the tables' folder: ``--data`` or ``default``, the repository's extract)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--data", help="aiconfigurator_core/systems/data of an unpacked aiconfigurator-core 0.12.0 wheel")
    if write:
        ap.add_argument("--write", action="store_true", help=write)
    if only:
        ap.add_argument("--only", action="append", help=only)
    if gpu:
        ap.add_argument("--gpu", action="append", help=gpu)
    for name, text in (flags or {}).items():
        ap.add_argument(f"--{name}", action="store_true", help=text)
    for name, (text, values) in (choices or {}).items():
        ap.add_argument(f"--{name}", choices=values, help=text)
    ap.add_argument("--extract", help="write the tests' CSV extract (from --data) to this folder and stop")
    a = ap.parse_args()
    return a, Path(a.data) if a.data else default


def tables(data: Path, systems: tuple[str, ...], family: str, framework: str, version: str,
           op: str) -> list[tuple[str, object, str]]:
    """[(system, table, its path under ``data``)] of ``op`` in every one of ``systems`` whose
    <family>/<framework>/<version> folder exists (the path names the wheel's .parquet either way)."""
    from ironlaw.measure.calibrate import kerneltable
    out = []
    for system in systems:
        folder = data / system / family / framework / version
        if folder.exists():
            out += [(system, t, f"{system}/{family}/{framework}/{version}/{op}_perf.parquet")
                    for t in kerneltable.read(folder, ops=(op,))]
    return out


def held_out(fit: Callable, predict: Callable, x, t: np.ndarray, keep: np.ndarray) -> tuple[object, np.ndarray]:
    """(``fit(x[keep], t[keep])``, |relative error| of ``predict(that fit, x[~keep])`` against ``t[~keep]``): fitted
    on the rows ``keep`` marks, scored on the rest."""
    fitted = fit(x[keep], t[keep])
    return fitted, np.abs(predict(fitted, x[~keep]) / t[~keep] - 1)


def median_p90(err: np.ndarray) -> tuple[float, float]:
    return float(np.median(err)), float(np.percentile(err, 90))


def write_extract(frame, columns: list[str], dest: Path) -> None:
    """``frame[columns]`` as CSV at ``dest`` (6 significant digits), its folder made, the row count printed."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    frame[columns].to_csv(dest, index=False, float_format="%.6g")
    print(f"{dest}: {len(frame)} rows")
