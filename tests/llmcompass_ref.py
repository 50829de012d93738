"""LLMCompass's GPT-3-175B layer on 4×A100, TP 4 (tests/data/llmcompass_*): the measured per-op latencies and
ironlaw's prediction of the same ops as LLMCompass's harness timed them, shared by tests/test_parallel.py (what
must hold) and benchmarks/published_references.py (the rows printed)."""
from __future__ import annotations

import csv
import json
from pathlib import Path

from ironlaw.law import law
from ironlaw.machine import hardware
from ironlaw.models import parallel, whatif, workloads

DATA = Path(__file__).parent / "data"

# LLMCompass timed each op from the host: time.time() around one torch call and torch.cuda.synchronize()
# (software_model/*.py run_on_gpu), so every call carries a host-side cost beyond the kernel. That cost is
# measured by LLMCompass's own per-op sweeps (tests/data/a100_measured, not the layer): the smallest case
# of each sweep minus a tiny kernel's CUDA time (ironlaw.measure.calibrate.published: matmul 26.6 µs, softmax 10.1 µs,
# layernorm 49.1 µs, GELU 43.8 µs). It belongs to that harness, not to the A100, so it is added here only.
SWEEPS = DATA / "a100_measured"


def measured(phase):
    rows = csv.DictReader(l for l in (DATA / f"llmcompass_gpt3_layer_{phase}_a100x4_tp4.csv").open()
                          if not l.startswith("#"))
    return {r["op"]: float(r["latency_s"]) for r in rows}


# LLMCompass ran attention eagerly (TransformerBlock*TP: Q_mul_K = torch.bmm writing the [s, s] scores,
# A_softmax, A_mul_V = torch.bmm reading them), so the layer graph gets the eager-attention what-if and
# its three kernels are compared with the three rows one by one
ATTENTION = ("Q_mul_K", "Softmax", "A_mul_V")
OPS = {"Q_K_V": "attn_pre_proj", "Q_mul_K": "attention.qk", "Softmax": "attention.softmax",
       "A_mul_V": "attention.av", "Wo_proj": "attn_post_proj", "W1_proj": "mlp_up_proj",
       "W2_proj": "mlp_down_proj", "GeLU": "mlp_act", "LayerNorm_MHA": "input_layernorm",
       "LayerNorm_FFN": "post_attention_layernorm", "AllReduce_MHA": "tp.allreduce.fwd.attn",
       "AllReduce_FFN": "tp.allreduce.fwd.mlp"}
# the torch calls LLMCompass's TransformerBlock*.run_on_gpu makes for each measured op: Q_K_V is
# Q_proj.run_on_gpu() * 3 (three [d, d/4] GEMMs); Q_mul_K and A_mul_V are one torch.bmm each (host cost
# taken from the torch.matmul sweep: same time.time()/synchronize harness), Softmax one softmax call; the
# all-reduce rows were entered by hand (no harness call)
HARNESS_CALLS = {"Q_K_V": ("matmul",) * 3, "Q_mul_K": ("matmul",), "Softmax": ("softmax",), "A_mul_V": ("matmul",),
                 "Wo_proj": ("matmul",), "W1_proj": ("matmul",), "W2_proj": ("matmul",), "GeLU": ("gelu",),
                 "LayerNorm_MHA": ("layernorm",), "LayerNorm_FFN": ("layernorm",), "AllReduce_MHA": (),
                 "AllReduce_FFN": ()}


def harness_offsets():
    """Host-side seconds per torch call in LLMCompass's harness, from its sweeps (see above)."""
    from ironlaw.measure.calibrate import published
    out = {"matmul": published.llmcompass_matmul(SWEEPS / "llmcompass_matmul_a100.csv")[0].offset_s}
    for name, kind in (("softmax", "softmax"), ("layernorm", "norm"), ("gelu", "elementwise")):
        out[name] = published.llmcompass_rows(SWEEPS / f"llmcompass_{name}_a100.csv", kind, name)[0].offset_s
    return out


def predict_layer(tmp_path, phase, batch, seq):
    """One GPT-3 layer per device as LLMCompass timed it: the a100 catalog entry (its [calibration] was
    fitted on vidur and the even rows of LLMCompass's GEMM sweep, never on this layer), attention made
    eager (the what-if registry's eager-attention, as ``ironlaw compare --what-if eager-attention`` applies
    it: every (query, key) pair, as LLMCompass's unmasked torch.bmm computes them, not the s(s+1)/2 of a
    causal FlashAttention kernel), plus the harness's host cost per torch call. A fused op the harness ran as
    k kernels (Q_K_V) also pays k − 1 more kernel latencies."""
    cfg = json.loads((DATA / "gpt3-175b-config.json").read_text())
    cfg["n_layer"] = 1
    p = tmp_path / "gpt3-layer.json"
    p.write_text(json.dumps(cfg))
    hw = hardware.get("a100")
    g = workloads.resolve(workloads.Request(f"hf:{p}", phase=phase, batch=batch, seq=seq, dtype="fp16"))
    g = parallel.shard_inference(g, hw, {"tp": 4, "gpus": 4})
    g, hw = whatif.apply(g, hw, ["eager-attention"])
    rows = {r["name"]: r for r in law.predict(g, hw).rows()}
    off = harness_offsets()
    pred = {}
    for k, name in OPS.items():
        r, calls = rows[name], HARNESS_CALLS[k]
        pred[k] = r["time_s"] + sum(off[c] for c in calls) + max(len(calls) - 1, 0) * r["latency_s"]
    return pred
