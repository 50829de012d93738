"""Llama 4 Scout's max-throughput step on one B200 or GB200 (TensorRT-LLM, NVFP4), term by term against the tables.

    python benchmarks/trtllm_scout_terms.py --data DIR                          # B200, 128/2048, its decode step
    python benchmarks/trtllm_scout_terms.py --data DIR --gpu gb200 --cell 2048/128 --step prompt
    python benchmarks/trtllm_scout_terms.py --batches [--gpu gb200] [--model llama3.3-70b]   # the batch each cell's
                                                                                        # published rate fits

The cell is priced as benchmarks/trtllm_blackwell.py prices it (``trtllm_h100.predict``: the catalog's kernel
terms, the H100-fitted constants, the routed experts on the device's fitted MoE layer). Of its steps, the most
frequent decode-only one (``--step decode``, a replayed CUDA graph) or the most frequent one that carries prompt
tokens (``--step prompt``) is split into the terms of one layer and the step, beside what aiconfigurator-core
0.12.0's TensorRT-LLM 1.3.0rc20 tables on that GPU time at the same shape (``DIR/<system>/<op>/trtllm/1.3.0rc20``):

    qkv, o_proj, shared expert   gemm nvfp4 (TensorRT-LLM's Llama 4 linear layers in the checkpoint's NVFP4), at the
                                 step's M, linear in M between the table's rows at the same N and K
    router                       gemm bf16 (``Llama4MoE.router``: ``Linear(..., quant_config=None)``), N 16 read at
                                 the table's smallest N (32)
    routed experts               moe nvfp4, CUTLASS (``moe_torch_flow_cutlass``), 16 experts top-1, 5120 × 8192,
                                 MoE TP 1 / EP 1, balanced and power_law_1.2, interpolated in log tokens; beside it
                                 the other same-chip table (B200 ↔ GB200), which disagrees at this shape
    decode attention             generation attention, 40 / 8 heads × 128, FP8 KV, no window, at the step's decode
                                 sequences and mean context (log-bilinear); outside the table's rows: —, and the
                                 stored class against the table's largest-KV row instead (``largest_row``)
    prefill attention            context attention fp8 / FP8 KV, 40 / 8 heads, the step's prompts at their length
    LM head                      gemm bf16 (ModelOpt leaves lm_head unquantized), N 202,048 read as the table's
                                 N 65,536 row at the same M and K times 202,048 / 65,536
    the rest                     norms, residual adds, RoPE, qk-norm, the activations: no table row, ironlaw's only

Nothing is fitted here. Printed last: the step's sum on the table terms (ironlaw's own where a term has none) and
the step the published rate would ask for were every step of the run slower by the same factor. ``--batches`` (no
tables read): for every one-GPU cell of the GPU (Scout's, or ``--model``'s) that the model prices above its
published rate, the fewest sequences in flight (``serve --max-batch``) at which it still does, beside the batch the
model runs: the batch the published rate fits at the model's step prices.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import trtllm_blackwell as bw  # noqa: E402
import trtllm_h100 as h100  # noqa: E402

MODEL, RELEASE = "llama4-scout", "1.3.0rc20"
SYSTEM = {"b200": "b200_sxm", "gb200": "gb200"}
OTHER = {"b200": "gb200", "gb200": "b200"}
HIDDEN, INTER, HEADS, KV_HEADS, HEAD_DIM, VOCAB, EXPERTS = 5120, 8192, 40, 8, 128, 202048, 16
QKV = (HEADS + 2 * KV_HEADS) * HEAD_DIM
ONE_GPU_MODELS = ("llama4-scout", "llama3.3-70b", "qwen3-30b-a3b")     # the Blackwell CSV's TP 1 models
KV_BYTES = 2 * KV_HEADS * HEAD_DIM           # FP8 KV: bytes per token per layer
# term -> (ops of the step it sums, the table's (dtype, N, K) for GEMM terms)
TERMS = {"qkv": (("attn_pre_proj",), [("nvfp4", QKV, HIDDEN)]),
         "o_proj": (("attn_post_proj",), [("nvfp4", HIDDEN, HIDDEN)]),
         "shared expert": (("mlp_up_proj.shared", "mlp_act.shared", "mlp_down_proj.shared"),
                           [("nvfp4", 2 * INTER, HIDDEN), ("nvfp4", HIDDEN, INTER)]),
         "router": (("moe_router", "moe_topk"), [("bfloat16", 32, HIDDEN)]),
         "routed experts": (("moe_permute", "mlp_up_proj", "mlp_act", "mlp_down_proj", "moe_combine"), None),
         "decode attention": (("attention.decode", "attention.chunk.decode"), None),
         "prefill attention": (("attention.prefill", "attention.chunk.prefill"), None),
         "LM head": (("lm_head", "final_norm"), None)}


def cell_of(gpu: str, isl_osl: str) -> dict:
    for c in h100.cells(bw.CSV):
        if c["model"] == MODEL and c["gpu"] == gpu and f"{c['isl']}/{c['osl']}" == isl_osl:
            return {**c, "spec": h100.spec_for(MODEL)}
    raise ValueError(f"--cell {isl_osl}: no {MODEL} {gpu} cell of that ISL/OSL in {bw.CSV.name}")


def chosen_step(est, kind: str):
    """(steps of that kind, its Estimate): the most frequent decode-only or prompt-carrying step."""
    steps = [(n, e) for n, e in est.steps if bool(e.graph.meta["eager"]) == (kind == "prompt")]
    if not steps:
        raise ValueError(f"--step {kind}: this cell prices no such step")
    return max(steps, key=lambda s: s[0])


def ironlaw_terms(est) -> tuple[dict, dict, dict]:
    """({term: µs per layer (per step for LM head)}, {term: calls a step}, {op name: Op}) of the priced step."""
    times = np.asarray(est.op_time_s).reshape(len(est.graph.ops), -1)[:, 0]
    ops = {op.name: op for op in est.graph.ops}
    per, calls = {}, {}
    for term, (names, _) in TERMS.items():
        hit = [(ops[n], float(times[j])) for j, n in enumerate(ops) if n in names]
        # the chunked and the global attention layers are ops of their own: their calls add up
        layers = sum(op.count for op, _ in hit) if term.endswith("attention") else \
            max((op.count for op, _ in hit), default=0)
        calls[term] = layers
        per[term] = sum(t * op.count for op, t in hit) / layers * 1e6 if layers else 0.0
    known = {n for names, _ in TERMS.values() for n in names}
    calls["the rest"] = 1
    per["the rest"] = sum(float(times[j]) * op.count for j, op in enumerate(est.graph.ops)
                          if op.name not in known) * 1e6
    return per, calls, ops


def gemm_us(g, dtype: str, m: float, n: int, k: int) -> float:
    """The GEMM table at (M, N, K), linear in M between its rows at that N and K (nan outside them)."""
    r = g[(g.gemm_dtype == dtype) & (g.n == n) & (g.k == k)].sort_values("m")
    if r.empty or not r.m.min() <= m <= r.m.max():
        return float("nan")
    return float(np.interp(m, r.m.astype(float), r.latency)) * 1e3


def moe_us(data: Path, gpu: str, tokens: float) -> dict:
    """{distribution: µs} of the CUTLASS NVFP4 fused-MoE layer at Scout's shape on ``gpu``'s table."""
    import pandas as pd
    m = pd.read_parquet(data / SYSTEM[gpu] / f"moe/trtllm/{RELEASE}/moe_perf.parquet")
    m = m[(m.kernel_source == "moe_torch_flow_cutlass") & (m.moe_dtype == "nvfp4") & (m.hidden_size == HIDDEN)
          & (m.inter_size == INTER) & (m.num_experts == EXPERTS) & (m.topk == 1) & (m.moe_tp_size == 1)
          & (m.moe_ep_size == 1)]
    out = {}
    for dist in ("balanced", "power_law_1.2"):
        med = m[m.distribution == dist].groupby("num_tokens")["latency"].median()
        x = np.log(med.index.to_numpy(float))
        out[dist] = float(np.exp(np.interp(np.log(tokens), x, np.log(med.to_numpy(float))))) * 1e3 \
            if x[0] <= np.log(tokens) <= x[-1] else float("nan")
    return out


def attention_rows(data: Path, gpu: str, phase: str):
    import pandas as pd
    a = pd.read_parquet(data / SYSTEM[gpu] / f"attention/trtllm/{RELEASE}/{phase}_attention_perf.parquet")
    return a[(a.num_heads == HEADS) & (a.num_key_value_heads == KV_HEADS) & (a.head_dim == HEAD_DIM)
             & (a.kv_cache_dtype == "fp8") & (a.window_size == 0)]


def grid_us(rows, x: str, y: str, xv: float, yv: float) -> float:
    """Log-bilinear interpolation of the rows' latency (ms) over columns ``x`` and ``y``, in µs (nan outside the
    grid)."""
    p = rows.pivot_table(index=x, columns=y, values="latency")
    xs, ys = p.index.to_numpy(float), p.columns.to_numpy(float)
    if not (xs[0] <= xv <= xs[-1] and ys[0] <= yv <= ys[-1]):
        return float("nan")
    i = min(np.searchsorted(xs, xv, side="right") - 1, len(xs) - 2)
    j = min(np.searchsorted(ys, yv, side="right") - 1, len(ys) - 2)
    cell = p.iloc[i:i + 2, j:j + 2].to_numpy(float)
    if np.isnan(cell).any():
        return float("nan")
    fx = (np.log(xv) - np.log(xs[i])) / (np.log(xs[i + 1]) - np.log(xs[i]))
    fy = (np.log(yv) - np.log(ys[j])) / (np.log(ys[j + 1]) - np.log(ys[j]))
    v = np.log(cell)
    return float(np.exp((1 - fx) * ((1 - fy) * v[0, 0] + fy * v[0, 1]) + fx * ((1 - fy) * v[1, 0] + fy * v[1, 1]))) * 1e3


def step_shape(e, isl: int) -> dict:
    """The step's GEMM rows (M), decode sequences, their mean context, prompts and the LM head's M."""
    meta = e.graph.meta
    ops = {op.name: op for op in e.graph.ops}
    seqs = float(meta.get("decode_sequences", 0))
    # each decode attention op's calls and the mean context its layers read (a chunked layer: its chunk's tokens)
    contexts = [(op.count, float(op.bytes["kv_cache"]) / (seqs * KV_BYTES)) for name, op in ops.items()
                if name in TERMS["decode attention"][0]] if seqs else []
    head = float(ops["lm_head"].bytes["activations"]) / (2 * (HIDDEN + VOCAB))
    return {"m": float(meta["tokens"]), "seqs": seqs, "contexts": contexts,
            "prompts": float(meta.get("prefill_tokens", 0.0)) / isl, "head_m": head}


def table_terms(data: Path, gpu: str, shape: dict, isl: int) -> dict:
    """{term: (µs per layer, or per step for LM head; source)} of the tables at the step's shape."""
    import pandas as pd
    g = pd.read_parquet(data / SYSTEM[gpu] / f"gemm/trtllm/{RELEASE}/gemm_perf.parquet")
    m = shape["m"]
    out = {}
    for term, (_, gemms) in TERMS.items():
        if gemms:
            out[term] = (sum(gemm_us(g, d, m, n, k) for d, n, k in gemms),
                         " + ".join(f"gemm {d} [{m:,.0f},{k}]x[{k},{n}]" for d, n, k in gemms))
    moe = moe_us(data, gpu, m)
    other = moe_us(data, OTHER[gpu], m)
    out["routed experts"] = (moe["balanced"], f"moe nvfp4 CUTLASS, {m:,.0f} tokens, balanced; power_law_1.2 "
                             f"{moe['power_law_1.2']:.0f}; {OTHER[gpu]}'s table {other['balanced']:.0f} / "
                             f"{other['power_law_1.2']:.0f}")
    gen = attention_rows(data, gpu, "generation")
    calls = sum(n for n, _ in shape["contexts"])
    dec = sum(n * grid_us(gen, "batch_size", "step", shape["seqs"], ctx) for n, ctx in shape["contexts"])
    out["decode attention"] = (dec / calls if calls else float("nan"),
                               f"generation, {shape['seqs']:,.0f} sequences at context " +
                               " / ".join(f"{ctx:,.0f} (x{n})" for n, ctx in shape["contexts"]))
    ctx = attention_rows(data, gpu, "context")
    ctx = ctx[ctx.attn_dtype == "fp8"]
    out["prefill attention"] = (grid_us(ctx, "batch_size", "isl", shape["prompts"], isl) if shape["prompts"]
                                else float("nan"), f"context fp8, {shape['prompts']:.2f} prompts of {isl}"
                                if shape["prompts"] else "")
    out["LM head"] = (gemm_us(g, "bfloat16", shape["head_m"], 65536, HIDDEN) * VOCAB / 65536,
                      f"gemm bf16 [{shape['head_m']:,.0f},{HIDDEN}]x[{HIDDEN},65536] x {VOCAB}/65536")
    return out


def largest_row(data: Path, gpu: str, per_call_us: float, shape: dict) -> str:
    """The generation table's largest-KV row: its rate, the rate of its last doubling of context at the same
    batch, and the rate the step's decode attention runs at in ironlaw (TB/s of FP8 KV read)."""
    gen = attention_rows(data, gpu, "generation").dropna(subset=["latency"])
    gen = gen.assign(kv=gen.batch_size * (gen.step + 1) * KV_BYTES)
    top = gen.loc[gen.kv.idxmax()]
    half = gen[(gen.batch_size == top.batch_size) & (gen.step == (top.step + 1) // 2 - 1)]
    marginal = (top.kv / 2) / ((top.latency - half.latency.iloc[0]) * 1e-3) if len(half) else float("nan")
    calls = sum(n for n, _ in shape["contexts"])
    mine = shape["seqs"] * sum(n * ctx for n, ctx in shape["contexts"]) / calls * KV_BYTES / (per_call_us * 1e-6)
    return (f"decode attention outside the table: its largest-KV row (batch {top.batch_size}, context "
            f"{top.step + 1:,}) {top.latency * 1e3:.1f} µs, {top.kv / (top.latency * 1e-3) / 1e12:.2f} TB/s, its last "
            f"doubling of context {marginal / 1e12:.2f} TB/s; ironlaw here {mine / 1e12:.2f} TB/s")


def least_batch(rate_at, published: float, most: int) -> int:
    """The fewest sequences in flight, 1 … ``most``, whose rate (``rate_at(batch)``, rising with the batch) is above
    ``published``; ``most`` where none below it is."""
    lo, hi = 0, most
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if rate_at(mid) > published else (mid, hi)
    return hi


def cell_rate(c: dict, batch: int | None) -> float:
    """Output tokens/s of a one-GPU cell as ``trtllm_h100.predict`` prices it, with at most ``batch`` sequences in
    flight (``serve --max-batch``; None: trtllm-bench's limit)."""
    from ironlaw.models.serving import throughput as st
    eng = h100.release_engine(c["gpu"], None)
    return st.max_throughput(c["spec"], eng.hw, c["isl"], c["osl"], dtype=c["precision"], kv_dtype=h100.KV_DTYPE[c["model"]],
                             kv_fraction=h100.KV_FRACTION, constants=eng.constants(h100.fitted()),
                             max_batch=batch).output_tokens_per_s


def batch_lines(gpu: str, model: str = MODEL) -> list[str]:
    """``--batches``: per one-GPU cell of ``model`` on ``gpu``, its error and batch, and the batch its published rate
    fits."""
    out = []
    for c in h100.cells(bw.CSV):
        if c["model"] != model or c["gpu"] != gpu or c["tp"] != 1:
            continue
        c = {**c, "spec": h100.spec_for(model)}
        est = h100.predict(c, gpu)
        err = 100 * (est.output_tokens_per_s / c["published"] - 1)
        head = f"{gpu:<6} {c['isl']:>5}/{c['osl']:<5} {err:+6.1f}%  batch {est.batch:>5} ({est.batch_limit})"
        if err <= 0:
            out.append(f"{head}: already below the published rate")
            continue
        b = least_batch(lambda n, c=c: cell_rate(c, n), c["published"], est.batch)
        out.append(f"{head}: the published rate at {b:>5}, {b / est.batch:.2f} of it")
    return out


def row(term: str, n: int, mine: float, table: float, src: str) -> str:
    t = f"{table:>9.1f}" if np.isfinite(table) else f"{'—':>9}"
    ratio = f"{table / mine:>6.2f}" if np.isfinite(table) and mine else f"{'':>6}"
    ts = f"{table * n / 1e3:>8.2f}" if np.isfinite(table) else f"{'—':>8}"
    return f"{term:<18} {n:>4} {mine:>10.1f} {t} {ratio} {mine * n / 1e3:>10.2f} {ts}  {src}".rstrip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, help="aiconfigurator-core 0.12.0's systems/data (the term table)")
    ap.add_argument("--gpu", choices=tuple(SYSTEM), default="b200")
    ap.add_argument("--cell", help="the cell's ISL/OSL (default 128/2048)")
    ap.add_argument("--step", choices=("decode", "prompt"),
                    help="the most frequent decode-only step (default) or prompt-carrying step")
    ap.add_argument("--batches", action="store_true", help="per cell, the batch its published rate fits (no tables)")
    ap.add_argument("--model", choices=ONE_GPU_MODELS, help=f"--batches: another model's one-GPU cells (default {MODEL})")
    a = ap.parse_args()
    if a.batches:
        given = [f"--{k}" for k in ("data", "cell", "step") if getattr(a, k) is not None]
        if given:
            print(f"error: --batches reads every cell and no table; it takes no {', '.join(given)}", file=sys.stderr)
            return 2
        print("\n".join(batch_lines(a.gpu, a.model or MODEL)))
        return 0
    if a.model is not None:
        print(f"error: --model is for --batches; the term table is {MODEL}'s", file=sys.stderr)
        return 2
    if a.data is None:
        print("error: the term table needs --data DIR (aiconfigurator-core 0.12.0's systems/data)", file=sys.stderr)
        return 2
    if not (a.data / SYSTEM[a.gpu] / f"moe/trtllm/{RELEASE}").is_dir():
        print(f"error: --data {a.data}: no {SYSTEM[a.gpu]}/moe/trtllm/{RELEASE} tables there", file=sys.stderr)
        return 2
    a.cell, a.step = a.cell or "128/2048", a.step or "decode"
    try:
        c = cell_of(a.gpu, a.cell)
        est = h100.predict(c, c["gpu"])
        n, e = chosen_step(est, a.step)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    per, calls, _ = ironlaw_terms(e)
    shape = step_shape(e, c["isl"])
    table = table_terms(a.data, a.gpu, shape, c["isl"])
    print(f"{MODEL} on one {a.gpu}, {a.cell}: published {c['published']:,.0f} tok/s, predicted "
          f"{est.output_tokens_per_s:,.0f} ({100 * (est.output_tokens_per_s / c['published'] - 1):+.1f}%), batch "
          f"{est.batch}; its {a.step} step x{n:,.0f} of the run: {float(e.time_s) * 1e3:.2f} ms, {shape['m']:,.0f} "
          f"tokens")
    print(f"{'term':<18} {'n':>4} {'ironlaw µs':>10} {'table µs':>9} {'t/i':>6} {'ironlaw ms':>10} {'table ms':>8}  source")
    total = 0.0
    for term in (*TERMS, "the rest"):
        if not calls[term]:
            continue
        t, src = table.get(term, (float("nan"), "no table row"))
        print(row(term, calls[term], per[term], t, src))
        total += (t if np.isfinite(t) else per[term]) * calls[term]
    if shape["seqs"] and not np.isfinite(table["decode attention"][0]):
        print(largest_row(a.data, a.gpu, per["decode attention"], shape))
    print(f"step: ironlaw {float(e.time_s) * 1e3:.2f} ms, on the table terms (ironlaw's where none) {total / 1e3:.2f} "
          f"ms; the published rate asks for {float(e.time_s) * est.output_tokens_per_s / c['published'] * 1e3:.2f} ms "
          f"were every step slower alike")
    return 0


if __name__ == "__main__":
    sys.exit(main())
