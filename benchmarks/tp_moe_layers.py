"""vLLM / SGLang routed layers that TP shards, per layer: ironlaw against the framework's own measured fused-MoE layer.

    python benchmarks/tp_moe_layers.py --data DIR [--ep]     # DIR: aiconfigurator-core 0.12.0's systems/data

For the TP-sharded MoE layers of benchmarks/vllm_sglang_published.py (Qwen3-235B-A22B on 4 H100, DeepSeek-R1 on 8
H200; no EP, so every expert runs at intermediate / TP on each GPU), the routed layer's seconds in a decode step of
8, 64 and 256 tokens as ``serve --engine vllm|sglang`` prices it (its grouped GEMMs and rows, per layer:
``expertcarry.tp_layer``, the framework's fused-MoE fit at the sharded shape), as the H100-fitted expert constants
price it, and the framework's ``moe_perf`` row at the same shape, ``moe_tp_size`` = TP, EP 1, balanced routing,
with the framework's stored fused-MoE class priced on that row as the collector routed it (``fit at table``:
kernel_moe.py ``layer_terms``; DeepSeek-R1's rows went through its group-limited router, which kept 4 of the 8
expert groups, 128 of the 256 experts, for every token: ``kernelfit.rules.MOE_GROUPED_ROUTING``). Serving prices
real routing, which reaches nearly every expert over a batch, so ``serve`` and ``table`` differ by the weights of
the experts the table's rows skip. ``--ep``: the same models with EP = TP under TP attention (vLLM
``--enable-expert-parallel``, SGLang ``--ep-size``; ``serving.tpexperts``: E/ep whole experts a GPU on every token,
the other ranks' pairs on the Triton classes), against the rows at ``moe_tp_size`` 1, ``moe_ep_size`` = EP, with
Qwen3-30B-A3B in bf16 in place of the per-tensor FP8 layer (H100 vLLM's Triton class, fitted with the every-pair
bytes). Nothing is fitted here.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# (spec, gpu, framework, dtype, the table's moe_dtype, TP, (hidden, inter, experts, top-k), table version)
QWEN_FP8 = "hf:" + str(ROOT / "tests/data/llm_configs/qwen3-235b-a22b-fp8.json")
CASES = [("qwen3-235b-a22b", "h100", "vllm", "fp8", "fp8", 4, (4096, 1536, 128, 8), "0.24.0"),
         (QWEN_FP8, "h100", "vllm", "fp8", "fp8_block", 4, (4096, 1536, 128, 8), "0.24.0"),
         ("deepseek-r1", "h200", "vllm", "fp8", "fp8_block", 8, (7168, 2048, 256, 8), "0.24.0"),
         ("deepseek-r1", "h200", "sglang", "fp8", "fp8_block", 8, (7168, 2048, 256, 8), "0.5.14")]
# the same layers with EP = TP under TP attention (``--ep``), and a bf16 layer on a Triton class
EP_CASES = [("qwen3-30b-a3b", "h100", "vllm", "bf16", "bfloat16", 4, (2048, 768, 128, 8), "0.24.0")] + CASES[1:]
TOKENS = (8, 64, 256)


def routed_us(run, tokens: int) -> float:
    """Microseconds per layer of the routed experts (grouped GEMMs, permute, activation, combine) in a decode step."""
    import numpy as np
    from ironlaw.models.serving import step
    _, est = step.step_seconds(run, tokens, 0.0, 0.0, True)
    ops = est.graph.ops
    mask = np.array([op.attrs.get("expert") == "routed" or
                     (op.module == "experts" and op.attrs.get("role") in step.ROUTED_ROLES) for op in ops])
    counts = np.array([op.count for op in ops], float)
    layers = max(counts[mask])
    return float(np.sum(np.asarray(est.op_time_s).reshape(len(ops))[mask] * counts[mask]) / layers * 1e6)


def case_lines(data: Path, case, ep: bool = False) -> list[str]:
    """One line per step size of ``case``: TP-sharded experts, or (``ep``) EP = TP under TP attention."""
    import pyarrow.parquet as pq
    from ironlaw.models.serving import engine, frameworks, step
    spec, gpu, fw, dtype, table_dtype, tp, (h, i, e, k), version = case
    eng = frameworks.select(fw, gpu, tp, offline=True)
    c = frameworks.constants(eng, engine.FITTED)
    lay = engine.Layout(tp=tp, ep=tp if ep else 1)
    moe_tp, moe_ep = (1, tp) if ep else (tp, 1)
    meta, limits, mem = engine.prepare(spec, eng.hw, lay, dtype, "bf16", 1024, 256, 1.0, 512, 8192, c)
    t = pq.read_table(data / f"{gpu}_sxm/moe/{fw}/{version}/moe_perf.parquet").to_pandas()
    t = t[(t.hidden_size == h) & (t.inter_size == i) & (t.num_experts == e) & (t.topk == k) & (t.moe_tp_size == moe_tp)
          & (t.moe_ep_size == moe_ep) & (t.moe_dtype == table_dtype) & (t.distribution == "balanced")]
    run = engine.engine_of(spec, eng.hw, lay, dtype, "bf16", (1024, 256), meta, limits, mem, max(TOKENS), c)
    eta = replace(run, constants=c, law_hw=step.engine_hw(eng.hw, c))
    fit = table_fit_us(gpu, fw, version, table_dtype, t)
    out = []
    for n in TOKENS:
        row = t[t.num_tokens == n]
        meas = f"{float(row.latency.iloc[0]) * 1e3:9.1f}" if len(row) else "        —"
        at = f"{fit[n]:12.1f}" if n in fit else "           —"
        out.append(f"{Path(spec).stem:<22} {gpu:<4} {fw:<6} {table_dtype:<9} {'EP' if ep else 'TP'} {tp}  "
                   f"{n:>4} tokens   "
                   f"{routed_us(run, n):9.1f} {routed_us(eta, n):9.1f} {at} {meas}"
                   + ("" if run.constants.moe_tables else "   (not on the framework's layer)"))
    return out


def table_fit_us(gpu: str, fw: str, version: str, table_dtype: str, t) -> dict:
    """{tokens: µs} of ``fw``'s stored fused-MoE class of the table's dtype on ``t``'s rows, routed as the collector
    routed them (moe_frameworks.row_groups); {} where the engine file has no such class."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import numpy as np
    from kernel_moe import layer_terms, stored_predict
    from moe_frameworks import DTYPES, row_groups
    from ironlaw.machine import engines
    from ironlaw.measure.calibrate.kernelfit import rules
    dt = DTYPES[table_dtype]
    kern = (engines.load(gpu, fw) or {}).get("kernel", {})
    if f"moe_grouped_gemm.{dt}" not in kern or not len(t):
        return {}
    rows = {c: t[c].to_numpy() for c in t.columns} | {"latency_s": t.latency.to_numpy() * 1e-3}
    x = layer_terms(gpu, dt, rows, pairs=rules.pair_kernel(fw, dt, gpu), groups=row_groups(fw, version, rows))[0]
    return dict(zip((int(n) for n in rows["num_tokens"]), np.asarray(stored_predict(kern, dt, x)) * 1e6))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="aiconfigurator_core/systems/data of aiconfigurator-core 0.12.0")
    ap.add_argument("--ep", action="store_true", help="EP = TP under TP attention (vLLM --enable-expert-parallel, "
                    "SGLang --ep-size) against the rows at moe_ep_size = EP")
    args = ap.parse_args()
    data = Path(args.data)
    if not data.is_dir():
        print(f"--data {data}: no such folder", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT / "src"))
    print("model                  gpu  engine table     TP   step         serve µs  constants  fit at table  table µs")
    for case in EP_CASES if args.ep else CASES:
        print("\n".join(case_lines(data, case, args.ep)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
