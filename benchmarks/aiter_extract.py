"""What the aiter extracts share (benchmarks/amd_kernels.py's GEMMs, amd_moe.py's fused-MoE layers): a key timed in
more than one row or file keeps its fastest time (the tuner's pick at run time), and the kept rows are written as one
kernel table per GPU, ``<data>/<gpu>/<family>/aiter/<commit[:8]>/<op>_perf.csv`` (the kernel-table layout
``ironlaw.measure.calibrate.kerneltable`` reads)."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Callable


def keep_fastest(best: dict, key: tuple, us: float, *rest) -> None:
    """``best[key] = (us, *rest)`` unless ``best`` holds ``key`` with a time at most ``us``."""
    if key not in best or us < best[key][0]:
        best[key] = (us, *rest)


def write_per_gpu(best: dict, data: Path, root: Path, commit: str, family: str, header: list[str],
                  rows_of: Callable[[str], list[list]]) -> list[Path]:
    """One CSV per GPU of ``best`` (keyed by GPU first): ``header``, then ``rows_of(gpu)``; prints what it wrote
    (the path under ``root``, the row count) and returns the paths."""
    written = []
    for gpu in sorted({k[0] for k in best}):
        out = data / gpu / family / "aiter" / commit[:8] / f"{family}_perf.csv"
        out.parent.mkdir(parents=True, exist_ok=True)
        rows = rows_of(gpu)
        with out.open("w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(header)
            w.writerows(rows)
        print(f"wrote {out.relative_to(root)}: {len(rows)} rows")
        written.append(out)
    return written
