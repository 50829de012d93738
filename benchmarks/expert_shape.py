"""The routed experts' time against their rows per expert: the end-to-end expert η against the measured MoE layer.

    python benchmarks/expert_shape.py                  # Hopper FP8 MoE layers (H100, H200) at the served layouts
    python benchmarks/expert_shape.py --gpu b200 --dtype fp4

For each MoE model of the perf overview at its served layout (EP = TP, attention DP: Qwen3-235B-A22B and Llama 4
Maverick on 8 GPUs, Scout on 4) and each decode batch per attention rank, one decode step (CUDA-graph padded, as
``serve`` prices it) is priced twice: with ``engine.FITTED``'s routed experts (``expert_gemm_eta`` /
``expert_stream_eta``, fitted end to end on the H100 cells and carried by ``expertcarry.carried``) and on the
device's MoE layer fitted on measured fused-MoE kernel tables (``expert_layer_scale`` 1:
``expertcarry.measured_layer``; measure/calibrate/moefit.py, aiconfigurator-core 0.12.0, TensorRT-LLM 1.3.0rc20).
Printed per row: the routed GEMM's rows per expert (its M), the microseconds one MoE layer's routed GEMMs and rows
take under each, and their ratio. Where the ratio is flat in the rows, the end-to-end η already have the measured
layer's shape and differ from it by a level alone; where it grows, the end-to-end η price the larger batches too
slowly. Nothing is fitted here.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

LAYOUTS = (("qwen3-235b-a22b", 8), ("llama4-maverick", 8), ("llama4-scout", 4))
BATCHES = (8, 16, 32, 64, 128, 192, 256, 384, 512)
ROUTED = ("moe_grouped_gemm", "moe_rows")
SEQUENCE = (128, 128)        # prompt, output: a short context, so that every batch's KV cache fits


def routed_layer(est) -> tuple[float, float]:
    """(rows per expert of the routed GEMM, seconds of one MoE layer's routed GEMMs and rows) of a step."""
    from ironlaw.core.graph import dtype_bytes
    t = est.op_time_s.reshape(len(est.graph.ops), -1)[:, 0]
    layers = max(op.count for op in est.graph.ops if op.module == "experts")
    rows, own = 0.0, 0.0
    for j, op in enumerate(est.graph.ops):
        routed = op.attrs.get("expert") == "routed" or str(est.cols.kernels[j]).startswith(ROUTED) or \
            (op.module == "experts" and op.kind != "collective" and op.name in ("moe_permute", "moe_combine",
                                                                                 "mlp_act"))
        if routed:
            own += float(t[j]) * op.count
        if op.kind == "matmul" and op.attrs.get("expert") == "routed" and op.bytes.get("weights") and not rows:
            rows = float(op.flops / (2.0 * op.bytes["weights"] / dtype_bytes(op.dtype)))
    return rows, own / layers


def layer_rows(gpu: str, dtype: str, spec: str, tp: int, batches=BATCHES) -> list[tuple]:
    """[(batch per rank, rows per expert, end-to-end η µs, measured layer µs)] for one model on ``gpu``."""
    from ironlaw.machine import hardware
    from ironlaw.models.serving import engine, step
    hw = hardware.get(gpu)
    lay = engine.Layout(tp=tp, ep=tp, attention_dp=True)
    out = []
    for b in batches:
        times, rows = [], 0.0
        for constants in (engine.FITTED, replace(engine.FITTED, expert_layer_scale=1.0)):
            meta, limits, mem = engine.prepare(spec, hw, lay, dtype, "fp8", *SEQUENCE, 0.95, 2048, None, constants)
            run = engine.engine_of(spec, hw, lay, dtype, "fp8", SEQUENCE, meta, limits, mem, b, constants)
            try:
                rows, s = routed_layer(step.step_seconds(run, b, 0.0, 0.0, True)[1])
            except RuntimeError:             # the batch's KV cache does not fit this GPU: no row
                break
            times.append(s)
        if len(times) == 2:
            out.append((b, rows, times[0] * 1e6, times[1] * 1e6))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", nargs="+", default=("h100", "h200"))
    ap.add_argument("--dtype", default="fp8")
    a = ap.parse_args()
    print(f"{'model':<16} {'gpu':<6} {'batch/rank':>10} {'rows/expert':>11} {'end-to-end µs':>14} "
          f"{'measured µs':>12} {'ratio':>6}")
    for spec, tp in LAYOUTS:
        for gpu in a.gpu:
            for b, rows, e2e, measured in layer_rows(gpu, a.dtype, spec, tp):
                print(f"{spec:<16} {gpu:<6} {b:>10} {rows:>11.0f} {e2e:>14.0f} {measured:>12.0f} "
                      f"{e2e / measured:>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
