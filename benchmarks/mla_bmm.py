"""MLA's per-head products in decode (``attention.q_absorb``, ``attention.v_up``) against the measured BMM kernels.

DeepSeek's absorbed MLA multiplies each head's query by its own [128, 512] slice of the KV up-projection before
attention (``mla_gen_pre``) and each head's output by its own [512, 128] slice after it (``mla_gen_post``): a
matmul batched over the heads on the rank. ironlaw prices them as one GEMM of M = tokens, K = k and N = heads·n
(the heads' tiles side by side: ``models.workloads.attention.per_head``), on each GPU's fitted GEMM terms; nothing
here is fitted on these rows.

Data: aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0) ``<gpu>/mla_bmm/trtllm/1.3.0rc20/mla_bmm_perf.parquet``
(``--data DIR``: the wheel's systems/data): TensorRT-LLM's BMM kernels (bf16 ``trtllm_bmm_out``, fp8
``trtllm_fp8_block_scaling_bmm_out``: block-scaled, where ironlaw's fp8 is per-tensor) over tokens 1–20480 and
heads 1–128 per rank.

    python benchmarks/mla_bmm.py --data DIR [--gpu h200_sxm ...]

Prints per GPU × dtype × product the median and p90 |error| and the signed median; the goal is the kernel tables'
(median ≤ 8%, p90 ≤ 20%).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

GPUS = {"h100_sxm": "h100", "h200_sxm": "h200", "b200_sxm": "b200", "b300_sxm": "b300", "gb200": "gb200",
        "gb300": "gb300", "l40s": "l40s", "rtx_pro_6000_server": "rtx-pro-6000"}
PRODUCTS = {"mla_gen_pre": ("attention.q_absorb", 128, 512), "mla_gen_post": ("attention.v_up", 512, 128)}
DTYPES = {"bfloat16": "bf16", "fp8": "fp8"}
GOAL_MEDIAN, GOAL_P90 = 0.08, 0.20


def predicted_s(hw, name: str, dtype: str, tokens: int, heads: int, k: int, n: int) -> float:
    """ironlaw's seconds for one per-head product of ``heads`` heads over ``tokens`` tokens on ``hw``."""
    from ironlaw.core.graph import Graph
    from ironlaw.law.law import predict
    from ironlaw.models.workloads.attention import per_head
    op = per_head(name, SimpleNamespace(heads=heads, layers=1), tokens, k, n, dtype)
    return float(np.asarray(predict(Graph(name, "decode", dtype, [op]), hw).time_s).reshape(-1)[0])


def scored(data: Path, gpu: str) -> list[tuple[str, str, np.ndarray]]:
    """[(product, dtype, errors)] of one GPU's measured rows."""
    import pandas as pd
    from ironlaw.machine import hardware
    files = sorted((data / gpu / "mla_bmm" / "trtllm").glob("1.3*/mla_bmm_perf.parquet"))
    if not files:
        return []
    hw, rows, out = hardware.get(GPUS[gpu]), pd.read_parquet(files[-1]), []
    for (op_name, bmm_dtype), grp in rows.groupby(["op_name", "bmm_dtype"]):
        name, k, n = PRODUCTS[op_name]
        dt = DTYPES[bmm_dtype]
        if dt not in hw.peak_flops:
            continue
        pred = np.array([predicted_s(hw, name, dt, int(r.num_tokens), int(r.num_heads), k, n)
                         for r in grp.itertuples()])
        out.append((op_name, dt, pred / (grp["latency"].to_numpy() * 1e-3) - 1.0))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, type=Path, help="aiconfigurator-core's systems/data directory")
    ap.add_argument("--gpu", nargs="*", default=list(GPUS), choices=list(GPUS))
    args = ap.parse_args(argv)
    print(f"{'gpu':<20} {'product':<13} {'dtype':<5} {'rows':>5} {'median':>7} {'p90':>7} {'signed':>8}  goal")
    within = total = 0
    for gpu in args.gpu:
        for op_name, dt, err in scored(args.data, gpu):
            med, p90, signed = (float(np.median(np.abs(err))), float(np.percentile(np.abs(err), 90)),
                                float(np.median(err)))
            ok = med <= GOAL_MEDIAN and p90 <= GOAL_P90
            within, total = within + ok, total + 1
            print(f"{gpu:<20} {op_name:<13} {dt:<5} {len(err):>5} {med:>7.1%} {p90:>7.1%} {signed:>+8.1%}  "
                  f"{'yes' if ok else 'NO'}")
    print(f"within the goal (median <= {GOAL_MEDIAN:.0%}, p90 <= {GOAL_P90:.0%}): {within} of {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
