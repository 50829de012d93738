"""How far below the law's floor (η = 1, no latency) each GPU's measured kernel rows fall: the largest floor /
measured time per kernel class, the data ``kernelfit.floor.FLOOR_MARGIN`` is chosen on.

    python benchmarks/kernel_floor.py --data DIR [--gpu NAME …] [--op gemm|context_attention|… …] [--as-gpu NAME]

Data: aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0), ``<gpu>/{gemm,attention}/trtllm/<version>/*_perf.parquet``
(DIR: its ``aiconfigurator_core/systems/data``). ``--as-gpu`` fits the tables against another catalog GPU (the
wrong ``--gpu`` a user may give), to show how far a table timed elsewhere crosses the floor.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--gpu", action="append")
    ap.add_argument("--op", action="append")
    ap.add_argument("--as-gpu")
    a = ap.parse_args()
    from ironlaw.machine import hardware
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    from ironlaw.measure.calibrate.kernelfit.floor import FLOOR_MARGIN, ratios
    gpus = a.gpu or sorted(p.name for p in Path(a.data).iterdir() if p.is_dir())
    worst_all = (0.0, "")
    for gpu in gpus:
        try:
            tables = kerneltable.read(str(Path(a.data) / gpu), ops=tuple(a.op or kernelfit.OPS), framework="trtllm")
        except Exception as e:                       # a GPU without trtllm tables of these ops
            print(f"{gpu}: skipped ({str(e).splitlines()[0][:100]})")
            continue
        hw = hardware.get(a.as_gpu or tables[0].gpu)
        for g in kernelfit.groups(tables):
            if g.op == "gemm" and g.dtype and g.dtype not in hw.peak_flops:
                continue
            r, meas, names = ratios(hw, g)
            i = int(r.argmax())
            print(f"{gpu:20s} {g.name[:70]:70s} rows {len(r):5d}  max floor/measured {r[i]:6.3f}  "
                  f"over {FLOOR_MARGIN}: {int((r > FLOOR_MARGIN).sum())}  ({names[i]}, {meas[i] * 1e6:.2f} µs)")
            sys.stdout.flush()
            if r[i] > worst_all[0]:
                worst_all = (float(r[i]), f"{gpu} {g.name} {names[i]}")
    print(f"largest floor / measured: {worst_all[0]:.3f} ({worst_all[1]})")


if __name__ == "__main__":
    main()
