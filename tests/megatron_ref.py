"""Megatron-LM's published A100 table (Narayanan et al. 2021, Table 1) and ironlaw's prediction of one of its
rows, shared by tests/test_megatron_reference.py (what must hold) and benchmarks/megatron_a100.py (the
full table, three ways). How each row is predicted: see the test module's docstring."""
from __future__ import annotations

import csv
import json
from pathlib import Path

from ironlaw.models import parallel, whatif, workloads

DATA = Path(__file__).parent / "data"
SEQ, VOCAB = 2048, 51200


def table() -> list[dict]:
    with (DATA / "megatron_lm_2021_table1.csv").open() as fh:
        return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(l for l in fh if not l.startswith("#"))]


def predict(row: dict, hw, tmp: Path, eager: bool = True) -> float:
    """Predicted teraFLOP/s per GPU (the table's unit) of one Table 1 row on ``hw`` (``eager``: attention as
    Megatron-LM ran it in 2021; else the builder's FlashAttention)."""
    h, L, a = int(row["hidden"]), int(row["layers"]), int(row["heads"])
    cfg = dict(architectures=["GPT2LMHeadModel"], model_type="gpt2", activation_function="gelu_new", n_embd=h,
               n_head=a, n_layer=L, n_positions=SEQ, n_inner=4 * h, vocab_size=VOCAB, tie_word_embeddings=True)
    p = tmp / f"gpt-{row['params_billion']}b.json"
    p.write_text(json.dumps(cfg))
    gpus, batch = int(row["gpus"]), int(row["batch"])
    opts = dict(gpus=gpus, tp=int(row["tp"]), pp=int(row["pp"]), global_batch=batch, micro_batch=1,
                recompute="full")
    g = workloads.resolve(workloads.Request(f"hf:{p}", phase="train", batch=1, seq=SEQ, dtype="fp16",
                                            device="cuda", options=opts))
    if eager:
        g, _ = whatif.apply(g, hw, ["eager-attention"])
    step = parallel.train_step(g, hw, parallel.make_plan(opts, g, hw))
    return parallel.megatron_flops(batch, SEQ, L, h, VOCAB) / (step.step_s * gpus) / 1e12
