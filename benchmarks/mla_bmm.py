"""MLA's per-head products in decode (``attention.q_absorb``, ``attention.v_up``) against the measured BMM kernels.

DeepSeek's absorbed MLA multiplies each head's query by its own [128, 512] slice of the KV up-projection before
attention (``mla_gen_pre``) and each head's output by its own [512, 128] slice after it (``mla_gen_post``): a
matmul batched over the heads on the rank, one GEMM of M = tokens, K = k and N = heads·n in ironlaw
(``models.workloads.attention.per_head``), which names its kernel class ``mla_bmm_<dtype>``
(``core.gemmshape.mla_bmm_kernel``). Each catalog GPU's class is fitted on the even rows of its table
(``python benchmarks/kernel_tables.py --data DIR --op mla_bmm --write``); this scores the held-out odd rows per product
with it ("kernel class") and with the dtype's GEMM terms the op keeps on a device without the class ("GEMM terms"),
each row timed as the fit times it (operands that fit the last cache level read from there: ``kernelfit.observations``).

Data: aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0) ``<gpu>/mla_bmm/trtllm/1.3.0rc20/mla_bmm_perf.parquet``
(``--data DIR``: the wheel's systems/data): TensorRT-LLM's BMM kernels over tokens 1–20480 and heads 1–128 per rank;
bf16 ``trtllm_bmm_out``; fp8 ``trtllm_fp8_block_scaling_bmm_out`` (block-scaled, where ironlaw's fp8 is per-tensor)
on H100, H200, L40S and RTX PRO 6000, ``trtllm_bmm_out_dequant_bf16`` (the FP8 weights dequantized, the product in
BF16) on B200, B300, GB200 and GB300.

    python benchmarks/mla_bmm.py --data DIR [--gpu h200_sxm ...]
    python benchmarks/mla_bmm.py --data DIR --by-bytes [--framework vllm] --gpu b200_sxm b300_sxm

Prints per GPU × product × dtype the held-out rows' median and p90 |error| and signed median with the GEMM terms and
with the kernel class; the goal is the kernel tables' (median ≤ 8%, p90 ≤ 20%), on the kernel class. ``--by-bytes``
prints instead, per GPU, the bf16 class's held-out rows (the framework's tables, scored on its stored class: the
catalog's for TensorRT-LLM, the engine file's for vLLM and SGLang) by their operands' bytes (``BYTE_EDGES_MIB``):
median |error|, signed median and rows over 20% off (docs/accuracy.md, "MLA's per-head decode products on the measured
BMM kernels").
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from dataclasses import replace

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

GPUS = {"h100_sxm": "h100", "h200_sxm": "h200", "b200_sxm": "b200", "b300_sxm": "b300", "gb200": "gb200",
        "gb300": "gb300", "l40s": "l40s", "rtx_pro_6000_server": "rtx-pro-6000"}
PRODUCTS = {"mla_gen_pre": "attention.q_absorb", "mla_gen_post": "attention.v_up"}
DTYPES_RUN = {"mla_bmm_bf16": "bf16", "mla_bmm_fp8": "fp8"}
GOAL_MEDIAN, GOAL_P90 = 0.08, 0.20
BYTE_EDGES_MIB = (0.0, 8.0, 64.0, 128.0, float("inf"))    # --by-bytes: the operands' bytes, MiB


def scored(data: Path, gpu: str) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
    """[(product, dtype, errors with the GEMM terms, errors with the kernel class)] of one GPU's held-out rows."""
    from ironlaw.machine import hardware
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    from ironlaw.measure.calibrate.fitcore import Problem
    files = sorted((data / gpu / "mla_bmm" / "trtllm").glob("1.3*/mla_bmm_perf.parquet"))
    if not files:
        return []
    hw, out = hardware.get(GPUS[gpu]), []
    cal = hw.calibration.table()
    for g in kernelfit.groups(kerneltable.read(files[-1].parent, ops=("mla_bmm",))):
        if DTYPES_RUN.get(g.key[1]) not in hw.peak_flops:
            continue
        held, dev = kernelfit.held_out(g), kernelfit.ops.replayed_hw(g, hw)
        obs = kernelfit.observations(g, held, dev)
        gemm = [replace(o, op=replace(o.op, attrs={k: v for k, v in o.op.attrs.items() if k != "kernel"}))
                for o in obs]
        errs = [Problem(dev, x, weighting="per_case").times(cal) / np.array([o.time_s for o in x]) - 1.0
                for x in (gemm, obs)]
        for op_name in PRODUCTS:
            sel = (held.op_name == op_name).to_numpy()
            out.append((op_name, DTYPES_RUN[g.key[1]], errs[0][sel], errs[1][sel]))
    return out


def by_bytes(data: Path, gpu: str, framework: str = "trtllm") -> list[tuple[str, int, float, float, int]]:
    """[(bytes range, rows, median |error|, signed median, rows over 20%)] of one GPU's bf16 class on ``framework``'s
    held-out rows, by each row's operand bytes (its op's reads and writes) in ``BYTE_EDGES_MIB``."""
    from ironlaw.machine import engines, hardware
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    from ironlaw.measure.calibrate.fitcore import Problem
    files = sorted((data / gpu / "mla_bmm" / framework).glob("*/mla_bmm_perf.parquet"))
    hw = hardware.get(GPUS[gpu])
    cal = hw.calibration.table() if framework == "trtllm" else engines.load(hw.name, framework)
    if not files or cal is None:
        return []
    out = []
    for g in kernelfit.groups(kerneltable.read(files[-1].parent, ops=("mla_bmm",), framework=framework)):
        if g.key[1] != "mla_bmm_bf16":
            continue
        dev = kernelfit.ops.replayed_hw(g, hw)
        obs = kernelfit.observations(g, kernelfit.held_out(g), dev)
        err = Problem(dev, obs, weighting="per_case").times(cal) / np.array([o.time_s for o in obs]) - 1.0
        mib = np.array([sum(float(np.sum(b)) for b in o.op.bytes.values()) for o in obs]) / 2.0 ** 20
        for lo, hi in zip(BYTE_EDGES_MIB, BYTE_EDGES_MIB[1:]):
            e = err[(mib > lo) & (mib <= hi)]
            if len(e):
                out.append((f"{lo:g}-{hi:g} MiB", int(len(e)), float(np.median(np.abs(e))), float(np.median(e)),
                            int(np.sum(np.abs(e) > 0.2))))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, type=Path, help="aiconfigurator-core's systems/data directory")
    ap.add_argument("--gpu", nargs="*", default=list(GPUS), choices=list(GPUS))
    ap.add_argument("--by-bytes", action="store_true", help="the bf16 class's held-out rows by their operand bytes")
    ap.add_argument("--framework", default="trtllm", choices=("trtllm", "vllm", "sglang"),
                    help="--by-bytes: whose tables and stored class")
    args = ap.parse_args(argv)
    if args.by_bytes:
        for gpu in args.gpu:
            for rng, n, med, sgn, over in by_bytes(args.data, gpu, args.framework):
                print(f"{gpu:<20} {args.framework:<7} {rng:<14} {n:>5} rows  median {med:6.1%}  signed {sgn:+7.1%}  "
                      f"over 20%: {over}")
        return 0
    def stats(err):
        return (float(np.median(np.abs(err))), float(np.percentile(np.abs(err), 90)), float(np.median(err)))

    print(f"{'':<47}{'GEMM terms':^24} {'kernel class':^24}")
    print(f"{'gpu':<20} {'product':<13} {'dtype':<5} {'rows':>5}  " + f"{'median':>7} {'p90':>7} {'signed':>8}" * 2
          + "  goal")
    within = total = 0
    for gpu in args.gpu:
        for op_name, dt, before, after in scored(args.data, gpu):
            b, a = stats(before), stats(after)
            ok = a[0] <= GOAL_MEDIAN and a[1] <= GOAL_P90
            within, total = within + ok, total + 1
            print(f"{gpu:<20} {op_name:<13} {dt:<5} {len(after):>5}  {b[0]:>7.1%} {b[1]:>7.1%} {b[2]:>+8.1%}"
                  f"{a[0]:>7.1%} {a[1]:>7.1%} {a[2]:>+8.1%}  {'yes' if ok else 'NO'}")
    print(f"kernel class within the goal (median <= {GOAL_MEDIAN:.0%}, p90 <= {GOAL_P90:.0%}): {within} of {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
