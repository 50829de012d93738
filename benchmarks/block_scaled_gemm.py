"""Is a block-scaled FP8 GEMM slower than a per-tensor one on Blackwell? The kernel tables' answer.

    python benchmarks/block_scaled_gemm.py --data DIR

DIR: aiconfigurator-core 0.12.0's ``systems/data`` (NVIDIA, Apache-2.0). Its TensorRT-LLM 1.3.0rc20 GEMM tables
(``<gpu>/gemm/trtllm/1.3.0rc20/gemm_perf.parquet``) time no MXFP8 GEMM; the nearest are ``fp8_block`` (DeepGEMM,
1×128 activation and 128×128 weight scales, which on sm_100 it runs as UE8M0 scales on the block-scaled tensor
core instruction) and ``fp8`` (per-tensor scales, torch ``_scaled_mm`` → cuBLASLt). Prints, per GPU and M, the
median and quartiles of the fp8_block ÷ fp8 latency over the shapes both tables hold (N, K ≥ 2048): below 1 the
block-scaled kernel is the faster. Reads parquet (pandas): a benchmark, not the prediction path.
"""
from __future__ import annotations

import argparse
from pathlib import Path

TABLE = "gemm/trtllm/1.3.0rc20/gemm_perf.parquet"
GPUS = ("b200_sxm", "gb200", "b300_sxm", "gb300")
MS = (1024, 4096, 8192, 16384, 32768)


def main() -> int:
    import pandas as pd
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, type=Path, help="aiconfigurator-core 0.12.0 systems/data")
    args = ap.parse_args()
    print(f"{'GPU':9s} {'M':>6} {'shapes':>6} {'p25':>6} {'median':>6} {'p75':>6}   fp8_block ÷ fp8 latency")
    for gpu in GPUS:
        path = args.data / gpu / TABLE
        if not path.exists():
            print(f"{gpu:9s} no table at {path}")
            continue
        d = pd.read_parquet(path)
        both = d.pivot_table(index=["m", "n", "k"], columns="gemm_dtype", values="latency").dropna(
            subset=["fp8", "fp8_block"]).reset_index()
        both = both[(both.n >= 2048) & (both.k >= 2048)]
        for m in MS:
            r = (both[both.m == m].fp8_block / both[both.m == m].fp8)
            if len(r):
                print(f"{gpu:9s} {m:6d} {len(r):6d} {r.quantile(0.25):6.3f} {r.median():6.3f} {r.quantile(0.75):6.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
