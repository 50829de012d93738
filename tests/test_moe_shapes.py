"""Mixture-of-experts ops against hand counts: the routed experts' grouped GEMM runs M = tokens·k/E rows per
expert (not every routed token), in one rank's serving step with attention data parallelism and in an
expert-parallel training micro-batch; the permute of the routed tokens moves t·k·hidden elements each way."""
from __future__ import annotations

import pytest

from ironlaw.machine import hardware
from ironlaw.models import parallel, workloads
from ironlaw.core.gemmshape import gemm_dims
from ironlaw.core.graph import dtype_bytes
from ironlaw.models.serving.parallel import shard_attention_dp
from ironlaw.models.serving.throughput import Layout

QWEN3_235B = dict(hidden=4096, experts=128, top_k=8, expert_inter=1536)      # Qwen/Qwen3-235B-A22B config.json
QWEN3_30B = dict(hidden=2048, experts=128, top_k=8, expert_inter=768)        # Qwen/Qwen3-30B-A3B config.json


def _graph(spec: str, phase: str, batch: int, seq: int, dtype: str = "bf16"):
    return workloads.resolve(workloads.Request(spec, phase=phase, batch=batch, seq=seq, dtype=dtype, device="cuda"))


def _m(g, name: str) -> float:
    """The GEMM M the law sees for the op ``name`` of ``g``."""
    m, _, _ = gemm_dims(g.columns())
    return float(m[[op.name for op in g.ops].index(name)])


def _op(g, name: str):
    return next(op for op in g.ops if op.name == name)


@pytest.mark.parametrize("tokens", [256, 4096])
def test_builder_expert_gemm_m_is_tokens_per_expert(tokens):
    c = QWEN3_235B
    g = _graph("qwen3-235b-a22b", "decode", tokens, 1)
    per_expert = tokens * c["top_k"] / c["experts"]               # every expert hit at these token counts
    for name in ("mlp_up_proj", "mlp_down_proj"):
        assert _m(g, name) == pytest.approx(per_expert, rel=1e-3)
    assert _op(g, "mlp_up_proj").attrs["nk"] == (2 * c["expert_inter"], c["hidden"])


def test_attention_dp_rank_expert_gemm_m():
    """216 sequences per rank × 8 attention ranks × top-8 / 128 experts = 108 rows per expert GEMM; the rank
    holds 16 experts, so its up-projection reads 16 experts' weights."""
    c, per_rank, ep = QWEN3_235B, 216, 8
    g = _graph("qwen3-235b-a22b", "decode", per_rank, 1, "fp8")
    g.meta["tokens"] = per_rank
    sg = shard_attention_dp(g, hardware.get("h100"), Layout(tp=ep, ep=ep, attention_dp=True))
    assert _m(sg, "mlp_up_proj") == pytest.approx(per_rank * ep * c["top_k"] / c["experts"], rel=1e-3)
    up = _op(sg, "mlp_up_proj")
    assert up.bytes["weights"] == pytest.approx(c["experts"] / ep * c["hidden"] * 2 * c["expert_inter"], rel=1e-3)
    assert up.flops == pytest.approx(2.0 * per_rank * c["top_k"] * c["hidden"] * 2 * c["expert_inter"])


def test_expert_parallel_training_gemm_m():
    """Qwen3-30B-A3B, micro-batch 2 × 4096 tokens per rank, EP 8: each rank's 16 experts see 8192·8·8/128 =
    4096 rows each."""
    c, tokens, ep = QWEN3_30B, 2 * 4096, 8
    g = _graph("qwen3-30b-a3b", "train", 2, 4096)
    sg = parallel.tp_shard(g, 1, ep=ep)
    for name in ("mlp_up_proj", "mlp_down_proj"):
        assert _m(sg, name) == pytest.approx(tokens * c["top_k"] * ep / c["experts"], rel=1e-3), name
    assert _op(sg, "mlp_up_proj").bytes["weights"] == pytest.approx(
        c["experts"] / ep * c["hidden"] * 2 * c["expert_inter"] * dtype_bytes("bf16"), rel=1e-6)


def test_permute_bytes_by_hand():
    """Gather of 512 tokens into their 8 experts' rows: reads and writes 512·8·4096 bf16 elements."""
    c, t = QWEN3_235B, 512
    g = _graph("qwen3-235b-a22b", "decode", t, 1)
    p = _op(g, "moe_permute")
    rows = t * c["top_k"] * c["hidden"] * dtype_bytes("bf16")
    assert p.bytes["activations"] == pytest.approx(2 * rows)
    assert p.bytes_written == pytest.approx(rows)
    assert p.flops == 0.0 and p.module == "experts" and p.count == 94
    names = [op.name for op in g.ops]
    assert names.index("moe_topk") < names.index("moe_permute") < names.index("mlp_up_proj")


def _mlp_allreduces(g) -> list[tuple[int, str]]:
    """(invocations, the op it follows) of each forward MLP all-reduce of a sharded graph."""
    names = [op.name for op in g.ops]
    return [(op.count, names[i - 1]) for i, op in enumerate(g.ops) if op.name == "tp.allreduce.fwd.mlp"]


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_inference_reduces_shared_and_routed_experts_once(phase):
    """DeepSeek-V3 (3 dense + 58 MoE layers) at TP 8: vLLM's DeepseekV2MoE and TensorRT-LLM's Deepseekv3MoE add
    the shared expert's output to the routed one and all-reduce the sum once per MoE layer, after the shared
    expert's down projection; the dense layers keep theirs."""
    sg = parallel.tp_shard(_graph("deepseek-v3", phase, 4, 1 if phase == "decode" else 512), 8)
    assert _mlp_allreduces(sg) == [(3, "mlp_down_proj.dense"), (58, "mlp_down_proj.shared")]


def test_training_and_a_model_without_a_shared_expert_keep_their_reductions():
    """Megatron-Core reduces the shared expert and the routed experts apart; Qwen3-30B-A3B has no shared expert:
    its routed experts' down projection carries the layer's all-reduce."""
    sg = parallel.tp_shard(_graph("deepseek-v3", "train", 1, 512), 8)
    assert _mlp_allreduces(sg) == [(3, "mlp_down_proj.dense"), (58, "mlp_down_proj"), (58, "mlp_down_proj.shared")]
    sg = parallel.tp_shard(_graph("qwen3-30b-a3b", "decode", 4, 1), 4)
    assert _mlp_allreduces(sg) == [(48, "mlp_down_proj")]
