"""A vLLM or SGLang engine file's stored kernel classes scored on another version's table of the same GPU and op.

    python benchmarks/kernel_versions.py --data DIR --gpu b60 --op generation_attention --version 0.20.0
    python benchmarks/kernel_versions.py --data DIR --gpu b60 --op generation_attention --version 0.20.0 \\
                                         --engine-file OLD.toml      # another engine file's terms, e.g. a commit's

Data: aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0), as benchmarks/kernel_tables.py reads it (``--data``: its
``aiconfigurator_core/systems/data``). The fit reads a GPU's newest table (``kerneltable.newest``); an older
version's table is another collection run of the same kernels, which no stored class was fitted on. Its held-out
half (``kernelfit.held_out``) is priced by the engine file's classes (``--engine-file``: a file of the same layout,
``[calibration]`` at its top), per class median and p90 |error|: whether a form the fit chose on the newest table
holds on a run it never saw (docs/accuracy.md, "Intel Arc Pro B60 on vLLM's XPU kernels").
"""
from __future__ import annotations

import argparse
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402

import kernel_tables  # noqa: E402
import kernel_worst  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="aiconfigurator_core/systems/data of an unpacked aiconfigurator-core 0.12.0 wheel")
    ap.add_argument("--gpu", required=True, choices=tuple(kernel_tables.GPUS), help="the table folder")
    ap.add_argument("--framework", default="vllm", choices=("vllm", "sglang"))
    ap.add_argument("--op", required=True, choices=("gemm", "context_attention", "generation_attention"))
    ap.add_argument("--version", required=True, help="the table version folder to score on (e.g. 0.20.0)")
    ap.add_argument("--engine-file", help="score this engine file's [calibration] in place of the stored one")
    a = ap.parse_args()
    from ironlaw.core.errors import IronlawError
    from ironlaw.machine import engines, hardware
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    folder = kernel_tables.data_dir(a.data) / a.gpu
    group = "gemm" if a.op == "gemm" else "attention"
    path = folder / group / a.framework / a.version / f"{a.op}_perf.parquet"
    if not path.is_file():
        print(f"kernel_versions: no table {path}", file=sys.stderr)
        return 2
    hw = hardware.get(kernel_tables.GPUS[a.gpu])
    try:
        table = tomllib.loads(Path(a.engine_file).read_text())["calibration"] if a.engine_file \
            else engines.load(hw.name, a.framework)
        tables = kerneltable.read(path, ops=(a.op,), framework=a.framework)
    except (IronlawError, OSError, KeyError, tomllib.TOMLDecodeError) as e:
        print(f"kernel_versions: {e}", file=sys.stderr)
        return 2
    tables = [replace(t, path=f"{a.gpu}/{group}/{a.framework}/{a.version}/{path.name}") for t in tables]
    for g in kernelfit.groups(tables):
        if g.key[1] not in table.get(g.key[0], {}):
            print(f"{g.name}: no stored class")
            continue
        rows, meas, pred, *_ = kernel_worst.priced(hw, table, g)
        err = np.abs(pred / meas - 1.0)
        print(f"{a.gpu} {a.framework} {a.version} {g.name}: {len(rows)} held-out rows, "
              f"{100 * np.median(err):.1f}% / {100 * np.percentile(err, 90):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
