"""DeepSeek-R1's small-batch decode step on 8 H200 under vLLM, term by term against vLLM's own kernel tables.

    python benchmarks/vllm_decode_terms.py --data DIR     # DIR: aiconfigurator-core 0.12.0's systems/data

The step ``serve deepseek-r1 --on h200 --tp 8 --engine vllm --concurrency 4 --prompt 228 --output 213
--kv-dtype bf16`` prices (4 sequences at the mean context 334, one replayed CUDA graph), split into the terms of
one layer and the step, beside what aiconfigurator-core 0.12.0's vLLM tables on H200 time at the same shape
(systems/data/h200_sxm/<op>/vllm/<version>/*.parquet; per GPU of TP 8):

    MLA attention   mla_generation_module (vLLM's DeepseekV2MLAAttention forward, projections, BMMs, the decode
                    kernel and o_proj, replayed as a CUDA graph: collector/vllm/collect_mla_module.py), 16 heads
                    (128 / TP 8), batch 4, bf16 KV, fp8_block GEMMs, interpolated in the cached length
    its BMMs        mla_bmm (mla_gen_pre / mla_gen_post, bf16), 4 tokens, 16 heads
    TP all-reduce   custom_allreduce (vLLM's tensor_model_parallel_all_reduce, vllm_graph rows), 8 GPUs, 4 × 7168
                    bf16 elements (its message_size counts elements), interpolated in log size
    router          gemm bf16 (vLLM's gate is unquantized), [4, 7168] × [7168, 256]
    routed experts  moe (fused MoE, fp8_block, moe_tp_size 8, EP 1, balanced), 4 tokens
    shared expert   gemm fp8 (per-tensor CUTLASS, the table's nearest device-time class at M = 4), [4, 7168] ×
                    [7168, 512] and [4, 256] × [256, 7168]

Under ``--engine vllm`` the step prices the whole attention module on vLLM's own module class where the engine
file holds it (``mla_module_decode_<gemm>_kv_<kv>``, fitted on the same mla_generation_module tables by
benchmarks/kernel_tables.py --framework vllm --op mla_generation_module; ``serving.step.mla_module``), its BMMs
inside it. Terms without a row at their shape print —. The fp8_block GEMM rows at M ≤ 17 are printed apart: they lie at
55–62 µs (FlashInfer) and ~170 µs (CUTLASS) whatever N × K, above the whole graph-replayed attention module that
runs three such GEMMs, so they do not time a replayed kernel. Last, the step with every kernel-table class's fixed
latency paid whole (``kernel_latency_share`` 1 in place of the stored TensorRT-LLM H100 fit; a what-if, nothing
stored). Nothing is fitted here.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SPEC, GPU, TP, BATCH, PROMPT, OUTPUT = "deepseek-r1", "h200", 8, 4, 228, 213
HIDDEN, HEADS = 7168, 128 // TP
TERMS = ("MLA attention", "TP all-reduce", "router", "routed experts", "shared expert", "dense MLP",
         "LM head", "norms, residuals")


# an op's module -> the term of the table it belongs to (any other module: norms, residuals)
MODULE_TERMS = {"attn": "MLA attention", "router": "router", "experts": "routed experts",
                "shared_experts": "shared expert", "mlp": "dense MLP", "lm_head": "LM head"}


def term_of(op) -> str:
    """Which term of the table an op of the step belongs to."""
    return "TP all-reduce" if op.kind == "collective" else MODULE_TERMS.get(op.module, "norms, residuals")


def decode_step(latency_share: float | None = None):
    """((seconds, Estimate), run) of the decode step ``serve`` prices for the case (module docstring); with
    ``latency_share`` the engine constant ``kernel_latency_share`` replaced (a what-if, nothing stored)."""
    from dataclasses import replace
    from ironlaw.models.serving import engine, frameworks, step
    eng = frameworks.select("vllm", GPU, TP)
    c = frameworks.constants(eng, engine.FITTED)
    if latency_share is not None:
        c = replace(c, kernel_latency_share=latency_share)
    run = engine.engine_run(SPEC, eng.hw, PROMPT, OUTPUT, BATCH, tp=TP, kv_dtype="bf16", constants=c,
                            max_batch=eng.scheduler.max_num_seqs,
                            max_num_tokens=eng.scheduler.max_num_batched_tokens).run
    return step.step_seconds(run, BATCH, 0.0, 0.0, pad=True), run


def ironlaw_terms(est) -> tuple[dict, dict]:
    """({term: µs per step}, {op name: µs per invocation}) of the priced step."""
    per_step = dict.fromkeys(TERMS, 0.0)
    each = {}
    times = np.asarray(est.op_time_s).reshape(len(est.graph.ops))
    for op, t in zip(est.graph.ops, times):
        per_step[term_of(op)] += float(t) * op.count * 1e6
        each[op.name] = float(t) * 1e6
    return per_step, each


def table_terms(data: Path, context: int) -> dict:
    """{term: (µs per invocation, source)} of vLLM's H200 tables at the case's shapes (module docstring)."""
    import pandas as pd
    d = data / "h200_sxm"
    out = {}
    m = pd.read_parquet(d / "mla/vllm/0.24.0/mla_generation_module_perf.parquet")
    m = m[(m.batch_size == BATCH) & (m.num_heads.astype(int) == HEADS) & (m.kv_cache_dtype == "bfloat16")
          & (m.gemm_type == "fp8_block")].assign(step=lambda x: x.step.astype(int)).sort_values("step")
    out["MLA attention"] = (float(np.interp(context, m.step, m.latency)) * 1e3,
                            f"mla_generation_module {m.kernel_source.iloc[0]}, batch {BATCH}, {HEADS} heads, "
                            f"bf16 KV, fp8_block GEMMs, {context} cached")
    ar = pd.read_parquet(d / "comm/vllm/0.24.0/custom_allreduce_perf.parquet")
    ar = ar[(ar.num_gpus == TP) & (ar.backend == "vllm_graph")].sort_values("message_size")
    elements = BATCH * HIDDEN             # message_size counts bf16 elements (collector/collect_all_reduce.py)
    at = np.interp(np.log(elements), np.log(ar.message_size.astype(float)), ar.latency)
    out["TP all-reduce"] = (float(at) * 1e3,
                            f"custom_allreduce vllm_graph, {TP} GPUs, {elements:,} bf16 elements")
    g = pd.read_parquet(d / "gemm/vllm/0.24.0/gemm_perf.parquet")
    def gemm(dtype, n, k):
        r = g[(g.gemm_dtype == dtype) & (g.m == BATCH) & (g.n == n) & (g.k == k)]
        return float(r.latency.iloc[0]) * 1e3 if len(r) else float("nan")
    out["router"] = (gemm("bfloat16", 256, HIDDEN), f"gemm bf16 [{BATCH},{HIDDEN}]x[{HIDDEN},256]")
    moe = pd.read_parquet(d / "moe/vllm/0.24.0/moe_perf.parquet")
    moe = moe[(moe.hidden_size == HIDDEN) & (moe.inter_size == 2048) & (moe.num_experts == 256) & (moe.topk == 8)
              & (moe.moe_tp_size == TP) & (moe.moe_ep_size == 1) & (moe.moe_dtype == "fp8_block")
              & (moe.num_tokens == BATCH) & (moe.distribution == "balanced")]
    out["routed experts"] = (float(moe.latency.iloc[0]) * 1e3, f"moe {moe.kernel_source.iloc[0]}, fp8_block, "
                             f"moe_tp_size {TP}, {BATCH} tokens, balanced")
    out["shared expert"] = (gemm("fp8", 512, HIDDEN) + gemm("fp8", HIDDEN, 256),
                            "gemm fp8 (per-tensor) [4,7168]x[7168,512] + [4,256]x[256,7168]")
    block = [gemm("fp8_block", n, k) for n, k in ((3072, 1536), (HIDDEN, 2048), (512, HIDDEN), (HIDDEN, 256))]
    out["fp8_block GEMM rows, M = 4"] = (float(np.median(block)), "gemm fp8_block (FlashInfer) at q_b, o_proj, shared "
                                         "gate_up, shared down: " + " / ".join(f"{b:.1f}" for b in block) + " µs")
    b = pd.read_parquet(d / "mla_bmm/vllm/0.24.0/mla_bmm_perf.parquet")
    b = b[(b.num_tokens == BATCH) & (b.num_heads == HEADS)]
    out["MLA BMMs"] = (float(b.latency.sum()) * 1e3, "mla_bmm vllm_torch_bmm bf16, mla_gen_pre + mla_gen_post")
    return out


def row(term: str, n: int, mine: float, table, mine_step: float, table_step, src: str) -> str:
    """One printed line: µs per call and ms per step, ironlaw and table (None: no row at the shape)."""
    t = f"{table:>9.1f}" if table is not None else f"{'—':>9}"
    ts = f"{table_step / 1e3:>8.2f} ms" if table_step is not None else f"{'—':>11}"
    return f"{term:<18} {n:>6} {mine:>11.1f} {t} {mine_step / 1e3:>11.2f} ms {ts}  {src}".rstrip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="aiconfigurator-core 0.12.0's systems/data")
    a = ap.parse_args()
    if not (a.data / "h200_sxm/mla/vllm/0.24.0").is_dir():
        print(f"error: --data {a.data}: no h200_sxm/mla/vllm/0.24.0 tables there", file=sys.stderr)
        return 2
    (t_step, est), run = decode_step()
    per_step, each = ironlaw_terms(est)
    context = PROMPT + OUTPUT // 2
    table = table_terms(a.data, context)
    layers, moe_layers = 61, 58
    count = {"MLA attention": layers, "TP all-reduce": 2 * layers, "router": moe_layers,
             "routed experts": moe_layers, "shared expert": moe_layers, "dense MLP": layers - moe_layers}
    print(f"decode step: {t_step * 1e3:.2f} ms ({SPEC} on {TP} {GPU}, vLLM, {BATCH} sequences at context {context})")
    print(f"{'term':<18} {'n/step':>6} {'ironlaw µs':>11} {'table µs':>9} {'ironlaw/step':>13} {'table/step':>11}  source")
    for term in TERMS:
        n = count.get(term)
        mine = per_step[term] / n if n else per_step[term]
        if term in table:
            t, src = table[term]
            print(row(term, n, mine, t, per_step[term], t * n, src))
        else:
            print(row(term, n or 1, mine, None, per_step[term], None, ""))
    t, src = table["MLA BMMs"]
    if "attention.q_absorb" in each:
        bmm = each["attention.q_absorb"] + each["attention.v_up"]
        print(row("  of it, BMMs", layers, bmm, t, bmm * layers, t * layers, src))
    else:
        module = next(op.attrs["kernel"] for op in est.graph.ops if op.name.startswith("attention.module"))
        print(f"{'  of it, BMMs':<18} {layers:>6} {'—':>11} {t:>9.1f} {'—':>14} {t * layers / 1e3:>8.2f} ms  {src}; "
              f"ironlaw prices them inside the module class {module}")
    t, src = table["fp8_block GEMM rows, M = 4"]
    print(f"not read: {src}")
    print(f"total: ironlaw {sum(per_step.values()) / 1e3:.2f} ms")
    (t_one, one), _ = decode_step(latency_share=1.0)
    per_one, _ = ironlaw_terms(one)
    print(f"what-if, each table kernel's fixed latency paid whole (kernel_latency_share 1, stored "
          f"{run.constants.kernel_latency_share:g}): step {t_one * 1e3:.2f} ms, MLA attention "
          f"{per_one['MLA attention'] / layers:.1f} µs a layer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
