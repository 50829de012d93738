"""How well a GEMM kernel table predicts itself: each row against its neighbours in M, a floor under any model's error.

    python benchmarks/kernel_table_noise.py --data DIR [--gpu FOLDER …] [--framework NAME …]

Data: aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0), ``--data`` its ``aiconfigurator_core/systems/data``. Per GPU,
framework and GEMM dtype, the rows sorted by (N, K, M); each row whose two neighbours in M share its N and K is
compared with their geometric mean, |latency / √(latency₋ · latency₊) − 1|, and the median and 90th percentile of that
over the rows are printed. The neighbours stand one step of the table's M grid away (every M up to 17, then powers of
two and their midpoints), so a kernel switch between them counts too: the figure is what a smooth interpolation of
the table itself misses, against which kernel_tables.py's held-out p90 (goal ≤ 20%) can be read.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

GPUS = ("l40s", "rtx_pro_6000_server", "h100_sxm", "b200_sxm")
FRAMEWORKS = ("trtllm", "vllm", "sglang")
DTYPES = ("bfloat16", "fp8")


def neighbour_errors(rows) -> np.ndarray:
    """|latency over the geometric mean of its two M-neighbours − 1| of each row whose neighbours share its N and K."""
    x = rows.sort_values(["n", "k", "m"])
    lat, n, k = x["latency_s"].to_numpy(float), x["n"].to_numpy(), x["k"].to_numpy()
    same = (n[1:-1] == n[:-2]) & (n[1:-1] == n[2:]) & (k[1:-1] == k[:-2]) & (k[1:-1] == k[2:])
    return np.abs(lat[1:-1] / np.sqrt(lat[:-2] * lat[2:]) - 1.0)[same]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="aiconfigurator_core/systems/data of aiconfigurator-core 0.12.0")
    ap.add_argument("--gpu", action="append", help=f"table folder(s) (default: {', '.join(GPUS)})")
    ap.add_argument("--framework", action="append", choices=FRAMEWORKS, help="default: all three")
    a = ap.parse_args()
    from ironlaw.core.errors import IronlawError
    from ironlaw.measure.calibrate import kerneltable
    print(f"{'gpu':<20} {'framework':<8} {'dtype':<9} {'rows':>6}  M-neighbour |error| median / p90")
    for folder in a.gpu or GPUS:
        for fw in a.framework or FRAMEWORKS:
            try:
                tables = kerneltable.read(Path(a.data) / folder, ops=("gemm",), framework=fw)
            except IronlawError as e:
                print(f"{folder:<20} {fw:<8} no table: {e}")
                continue
            for t in tables:
                for dt in DTYPES:
                    err = neighbour_errors(t.rows[t.rows["gemm_dtype"] == dt])
                    if len(err):
                        print(f"{folder:<20} {fw:<8} {dt:<9} {len(err):>6}  "
                              f"{100 * np.median(err):4.1f}% / {100 * np.percentile(err, 90):5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
