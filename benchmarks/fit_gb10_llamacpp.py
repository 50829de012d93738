"""Fit GB10's int8 GEMM efficiency (llama.cpp Q8_0) to the prefill rows of llama.cpp's DGX Spark bench.

    python benchmarks/fit_gb10_llamacpp.py

Source: tests/data/llamacpp/llamacpp_dgx_spark_batched_bench_qwen2.5_7b_q8.csv (ggml-org/llama.cpp
benches/dgx-spark.md, MIT): llama-batched-bench, Qwen2.5-Coder-7B Q8_0 (7.54 GiB), flash attention.
Fitted: eta_max of [calibration.matmul.int8] on the three single-sequence prefill rows (PP 512, 4096, 8192 at
B = 1; S_PP tokens/s), with serial = 1 (see gb10.toml) — compute-bound GEMMs at M = 512…8192 tokens.
Held out: every decode (TG) row — B = 1…32 at PP 512, B = 1 and 32 at PP 4096 and 8192 — reported here and
asserted in tests/test_serving.py. The batch-1 decode row at context 0 of llamacpp_official_benches.csv sets
the memory efficiency ([efficiency] memory), as the catalog entry says.
Prints the value to put in src/ironlaw/machine/catalog/gb10.toml and the held-out errors.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench import csv_rows  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT / "tests/data/llamacpp/llamacpp_dgx_spark_batched_bench_qwen2.5_7b_q8.csv"
QWEN = "hf:" + str(ROOT / "tests/data/qwen2.5-7b-config.json")
SIZE = 7.54 * 2.0**30           # the Q8_0 file, block scales included
KW = dict(dtype="int8", kv_dtype="fp16", weight_bytes=SIZE)


def rows() -> list[dict]:
    return [{k: float(v) for k, v in r.items()} for r in csv_rows(CSV)]


def with_eta(hw, eta: float):
    from ironlaw.machine.calibration import with_calibration
    cal = hw.calibration.table()
    cal["matmul"] = {**cal["matmul"], "int8": {**cal["matmul"]["int8"], "eta_max": eta}}
    return with_calibration(hw, cal)


def main() -> int:
    from ironlaw.machine import hardware
    from ironlaw.models.serving import online as serving
    hw = hardware.get("gb10")
    data = rows()
    fit = [r for r in data if r["B"] == 1]
    held = data

    def loss(eta: float) -> float:
        h = with_eta(hw, eta)
        return sum(math.log(serving.prefill_tokens_per_s(QWEN, h, int(r["PP"]), **KW)[0] / r["S_PP_tps"]) ** 2
                   for r in fit)

    lo, hi = math.log(0.02), math.log(1.0)            # golden-section search on log eta
    g = (math.sqrt(5) - 1) / 2
    for _ in range(40):
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        if loss(math.exp(a)) < loss(math.exp(b)):
            hi = b
        else:
            lo = a
    eta = round(math.exp((lo + hi) / 2), 4)
    h = with_eta(hw, eta)
    print(f"[calibration.matmul.int8] eta_max = {eta}   (catalog has {hw.calibration.shape('matmul')['int8']['eta_max']})")
    print("fitted (prefill, B = 1):")
    for r in fit:
        p = serving.prefill_tokens_per_s(QWEN, h, int(r["PP"]), **KW)[0]
        print(f"  PP {int(r['PP']):5d}  pred {p:8.1f}  meas {r['S_PP_tps']:8.1f} tok/s  {p / r['S_PP_tps'] - 1:+6.1%}")
    print("held out (decode, S_TG; context = PP + TG/2):")
    for r in held:
        b, ctx = int(r["B"]), int(r["PP"] + r["TG"] / 2)
        p = serving.decode_tokens_per_s(QWEN, h, b, ctx, **KW)[0]
        print(f"  PP {int(r['PP']):5d}  B {b:2d}  pred {p:7.1f}  meas {r['S_TG_tps']:7.1f} tok/s  {p / r['S_TG_tps'] - 1:+6.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
