"""What Megatron-Core runs eagerly for gpt-oss in training (ironlaw.models.grouped_mlp, ironlaw.models.rope_unfused):
the clamp of the clamped GLU's input, the fc2 bias weighted by the routing probabilities outside the grouped
GEMM, and RoPE unfused under a YaRN concentration factor; none of it for models without them, nor outside training."""
from __future__ import annotations

import math

import pytest
from ironlaw.machine import hardware
from ironlaw.models import grouped_mlp, host, parallel, rope_unfused, workloads
from ironlaw.models.workloads.hfconfig import yarn_concentration


def _step(spec, **opts):
    hw = hardware.get("gb200")
    g = workloads.resolve(workloads.Request(spec, phase="train", batch=1, seq=4096, dtype="bf16"))
    plan = parallel.make_plan({"gpus": 64, "global_batch": 64, "ep": 64, **opts}, g, hw)
    return parallel.train_step(g, hw, plan)


def _ops(st):
    return {op.name: op for op in st.per_microbatch.graph.ops}


def test_gpt_oss_pays_the_clamp_and_the_bias_sized_by_its_expert_gemms_outputs():
    ops = _ops(_step("gpt-oss-120b"))
    up, down = ops["mlp_up_proj"], ops["mlp_down_proj"]
    u, x = up.bytes_written, down.bytes_written
    # fc1's output: the routed rows (4096 tokens × top-4, balanced over 64 ranks, 2 experts each) × 2 × 2880, bf16
    assert u == pytest.approx(4096 * 4 * 2 * 2880 * 2) and x == pytest.approx(u / 2)
    terms = {"moe_glu_clamp": (u, 2, 2), "moe_glu_clamp.backward": (u, 4.5, 3),
             "moe_expert_bias": (x, 3, 3), "moe_expert_bias.backward": (x, 4, 2)}
    for name, (size, reads, writes) in terms.items():
        op = ops[name]
        assert op.bytes["activations"] == pytest.approx((reads + writes) * size), name
        assert op.bytes_written == pytest.approx(writes * size) and op.count == up.count == 36
        assert op.module == "experts" and op.attrs["expert"] == "routed"
    # in autograd's order: the clamp between fc1 and the activation, the bias after fc2; backward in reverse
    order = list(ops)
    assert order.index("mlp_up_proj") < order.index("moe_glu_clamp") < order.index("mlp_act")
    assert order.index("mlp_down_proj") < order.index("moe_expert_bias")
    assert order.index("moe_expert_bias.backward") < order.index("mlp_down_proj.backward")
    assert order.index("mlp_act.backward") < order.index("moe_glu_clamp.backward") < order.index("mlp_up_proj.backward")
    # the forward ones are issued after the MoE layer's sync; the backward ones are the backward's
    assert host.after_sync(ops["moe_glu_clamp"]) and host.after_sync(ops["moe_expert_bias"])
    assert host.backward("moe_expert_bias.backward") and host.backward("moe_glu_clamp.backward")


def test_models_without_biased_or_clamped_experts_and_inference_pay_nothing():
    assert not any(n.startswith(("moe_glu_clamp", "moe_expert_bias")) for n in _ops(_step("qwen3-30b-a3b", ep=8)))
    g = workloads.resolve(workloads.Request("gpt-oss-120b", phase="prefill", batch=1, seq=4096, dtype="bf16"))
    assert not any(op.name.startswith(("moe_glu_clamp", "moe_expert_bias")) for op in g.ops)
    # only the training step adds them (``parallel.step.shard``); a graph without the marks passes unchanged
    q = workloads.resolve(workloads.Request("qwen3-30b-a3b", phase="train", batch=1, seq=4096, dtype="bf16"))
    assert grouped_mlp.with_eager_ops(q) is q


def test_host_counts_the_eager_kernels_per_local_expert():
    g = workloads.resolve(workloads.Request("gpt-oss-120b", phase="train", batch=1, seq=4096, dtype="bf16"))
    parts = dict((name, calls) for name, _, calls in host.moe_parts(g.meta, ep=64))
    assert parts["expert bias"].fwd == 2 * 2 + 1 and parts["expert bias"].bwd == 4 * 2      # 2 local experts
    assert parts["expert clamp"].fwd == 3 and parts["expert clamp"].bwd == 7
    assert parts["attention"].fwd == host.ATTENTION.fwd + host.UNFUSED_ROPE.fwd
    q = workloads.resolve(workloads.Request("qwen3-30b-a3b", phase="train", batch=1, seq=4096, dtype="bf16"))
    qparts = dict((name, calls) for name, _, calls in host.moe_parts(q.meta, ep=8))
    assert qparts["expert bias"].fwd == qparts["expert clamp"].fwd == 0
    assert qparts["attention"].fwd == host.ATTENTION.fwd


def test_yarn_concentration_follows_megatron_core():
    oss = {"rope_scaling": {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096}}
    assert yarn_concentration(oss) == pytest.approx(0.1 * math.log(32) + 1)
    ds = {"rope_scaling": {"type": "yarn", "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0}}
    assert yarn_concentration(ds) == 1.0
    assert yarn_concentration({}) == 1.0 and yarn_concentration({"rope_scaling": {"rope_type": "llama3"}}) == 1.0


def test_gpt_oss_rope_runs_unfused_in_training_and_fused_elsewhere():
    oss, qwen = _ops(_step("gpt-oss-120b")), _ops(_step("qwen3-30b-a3b", ep=8))
    t = 4096 * (64 + 8) * 64 * 2                     # q and k of one micro-batch, bf16
    assert oss["attn_rope"].bytes_written == pytest.approx(5.5 * t)
    assert oss["attn_rope"].bytes["activations"] == pytest.approx(12 * t)
    assert oss["attn_rope.backward"].bytes["activations"] == pytest.approx(13 * t)
    assert "unfused" in oss["attn_rope"].shapes and "kernel" not in oss["attn_rope"].attrs
    tq = 4096 * (32 + 4) * 128 * 2                   # Qwen3-30B-A3B keeps the fused kernel: read q/k + freqs, write
    assert qwen["attn_rope"].bytes["activations"] == pytest.approx(3 * tq)
    g = workloads.resolve(workloads.Request("gpt-oss-120b", phase="prefill", batch=1, seq=4096, dtype="bf16"))
    assert rope_unfused.unfused(g.meta)
    assert next(op for op in g.ops if op.name == "attn_rope").bytes["activations"] == pytest.approx(3 * t)


def test_the_clamped_copy_is_kept_for_the_backward():
    from dataclasses import replace
    from ironlaw.models.workloads.transformer import builtin_arch, mlp_elems
    oss = builtin_arch("gpt-oss-120b")
    plain = replace(oss, act="silu")                  # the same layer with an unclamped GLU
    # per token: the clamped copy of fc1's output, 2 × 2880 per routed row, top-4; kept only for the backward
    assert mlp_elems(oss, saved=True) - mlp_elems(plain, saved=True) == 2 * 2880 * 4
    assert mlp_elems(oss) == mlp_elems(plain)
