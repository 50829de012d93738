"""`ironlaw analyze` on DeepSeek-V3's routed MoE layer (H200, TP 8, FP8) against the measured fused-MoE layer, and
its decode step against `serve`'s.

Data: aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0) ``h200_sxm/moe/trtllm/1.3.0rc20/moe_perf.parquet`` (``--data
DIR``: the wheel's systems/data; every token count), or by default the extract tests/data/moe_layer_deepseek_v3_h200.csv
(32, 64, 128 tokens). Rows: hidden 7168, inter 2048, top-8 of 256 experts, moe_tp_size 8, moe_ep_size 1 (analyze's
--tp 8 shards each expert eight ways), fp8_block (the only FP8 rows at that shape; DeepSeek-V3's checkpoint is
block-scaled FP8, priced on the ``moe_*.fp8_block`` classes fitted on the table's other fp8_block shapes),
balanced and power_law_1.01 routing. Analyze's routed layer: moe_permute + mlp_up_proj + mlp_act + mlp_down_proj +
moe_combine of one layer (what the fused kernel times; the router GEMM and top-k are apart in both).

    python benchmarks/moe_analyze.py [--data DIR]

Goal: analyze's layer at 64 tokens (the decode step of the issue) within 25% of the measured layer under either
routing (the block-scaled fit's own gap to the rows at this shape, stated in tests/test_moe_analyze.py); analyze's
decode step at 64 sequences within 1.5× of serve's (serve keeps its end-to-end fitted expert terms: engine.FITTED).
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
from ironlaw import api  # noqa: E402

EXTRACT = ROOT / "tests" / "data" / "moe_layer_deepseek_v3_h200.csv"
TABLE = "h200_sxm/moe/trtllm/1.3.0rc20/moe_perf.parquet"
SHAPE = {"hidden_size": 7168, "inter_size": 2048, "topk": 8, "num_experts": 256, "moe_tp_size": 8, "moe_ep_size": 1}
ROUTED = ("moe_permute", "mlp_up_proj", "mlp_act", "mlp_down_proj", "moe_combine")
ROUTINGS = ("balanced", "power_law_1.01")
GOAL_LAYER, GOAL_STEP = 0.25, 1.5


def measured(data: str | None) -> dict:
    """{tokens: {routing: seconds}} of the DeepSeek-V3 layer rows."""
    if data is None:
        with EXTRACT.open() as f:
            rows = list(csv.DictReader(f))
    else:
        import pandas as pd
        d = pd.read_parquet(Path(data) / TABLE)
        d = d[(d.moe_dtype == "fp8_block") & (d.kernel_source == "moe_torch_flow_cutlass")]
        for col, v in SHAPE.items():
            d = d[d[col] == v]
        rows = d.to_dict("records")
    out: dict = {}
    for r in rows:
        if r["distribution"] in ROUTINGS:
            out.setdefault(int(r["num_tokens"]), {})[r["distribution"]] = float(r["latency"]) * 1e-3
    return out


def layer_s(tokens: int) -> float:
    """One layer's routed part: a decode step of ``tokens`` sequences (short context: no KV spill at 512), or a
    prefill of one ``tokens``-token prompt past 512."""
    phase, batch, seq = ("decode", tokens, 256) if tokens <= 512 else ("prefill", 1, tokens)
    est = api.analyze("deepseek-v3", on="h200", batch=batch, seq=seq, phase=phase, tp=8, dtype="fp8")
    return sum(float(np.ravel(est.op_time_s[i])[0]) for i, op in enumerate(est.graph.ops)
               if op.module == "experts" and op.name in ROUTED)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", help="aiconfigurator-core's systems/data (default: the test extract)")
    a = ap.parse_args(argv)
    table = measured(a.data)
    print(f"{'tokens':>6}  {'analyze':>9}  " + "  ".join(f"{r:>15}  {'err':>6}" for r in ROUTINGS))
    worst, every = 0.0, []
    for tok in sorted(table):
        t = layer_s(tok)
        errs = {r: t / table[tok][r] - 1.0 for r in ROUTINGS if r in table[tok]}
        every += [abs(e) for e in errs.values()]
        if tok == 64:
            worst = max(abs(e) for e in errs.values())
        print(f"{tok:>6}  {t * 1e3:>7.3f}ms  " + "  ".join(
            f"{table[tok][r] * 1e3:>13.3f}ms  {errs[r]:>+6.0%}" for r in ROUTINGS if r in errs))
    dec = api.analyze("deepseek-v3", on="h200", batch=64, seq=4096, phase="decode", tp=8, dtype="fp8")
    srv = api.serve("deepseek-v3", on="h200", tp=8, concurrency=64, prompt=4096, output=256)
    ratio = float(dec.total_s) / float(srv.estimate.decode_step_s)
    print()
    print(f"{'what':<52} {'measured':>10} {'goal':>10} ok")
    print(f"{'routed layer at 64 tokens vs measured, worst routing':<52} {worst:>10.0%} {'<= 25%':>10} "
          f"{'yes' if worst <= GOAL_LAYER else 'NO'}")
    print(f"{'routed layer, every row: median |error|':<52} {float(np.median(every)):>10.0%} {'-':>10} -")
    print(f"{'analyze decode step / serve decode step (64 seqs)':<52} {ratio:>10.2f} {'<= 1.5x':>10} "
          f"{'yes' if 1 / GOAL_STEP <= ratio <= GOAL_STEP else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
