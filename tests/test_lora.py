"""LoRA fine-tuning (``ironlaw.models.lora``, ``--lora-rank``): the adapters' GEMMs, the frozen base's backward, the
adapter-only gradients, optimizer state and memory, and the refusals."""
from __future__ import annotations

import pytest

from conftest import run_cli
from ironlaw.core import passes
from ironlaw.machine import hardware

# llama3-8b: hidden 4096, 8 KV heads of 128 (QKV out 4096 + 2·1024 = 6144), 32 layers
T, R, L = 2048, 16, 32
QKV_K, QKV_N, O_K, O_N = 4096, 6144, 4096, 4096


@pytest.fixture(scope="module")
def graphs():
    from ironlaw.models.parallel.step import training_graph
    hw = hardware.get("h100")
    return (training_graph("llama3-8b", hw, T, "bf16", {"micro_batch": 1}),
            training_graph("llama3-8b", hw, T, "bf16", {"micro_batch": 1, "lora_rank": R}))


def _op(g, name):
    return next(op for op in g.ops if op.name == name)


def test_one_lora_layer_costs_its_hand_arithmetic(graphs):
    """The QKV adapter: A [4096,16] and B [16,6144] on 2,048 tokens, 2·T·(k+n)·R FLOPs forward (FLOPs, not MACs),
    twice that backward (both products' input and weight gradients); one per layer; its input dropout reads x and
    writes the masked copy in bf16, its backward the same (the mask drawn again, not stored)."""
    _, g = graphs
    fwd = _op(g, "attn_pre_proj_lora_a").flops + _op(g, "attn_pre_proj_lora_b").flops
    assert fwd == 2 * T * (QKV_K + QKV_N) * R == 671_088_640
    bwd = _op(g, "attn_pre_proj_lora_a.backward").flops + _op(g, "attn_pre_proj_lora_b.backward").flops
    assert bwd == 2 * fwd
    assert _op(g, "attn_pre_proj_lora_a").count == L
    drop, back = _op(g, "attn_pre_proj_lora_dropout"), _op(g, "attn_pre_proj_lora_dropout.backward")
    assert drop.bytes["activations"] == back.bytes["activations"] == 2 * T * QKV_K * 2   # x read, masked x written


def test_the_frozen_base_computes_input_gradients_only(graphs):
    """A frozen linear's backward is its dgrad (its forward's FLOPs, half of full training's) and writes no weight
    gradient; the embedding has no backward; the attention backward is unchanged."""
    full, g = graphs
    for name in ("attn_pre_proj", "mlp_up_proj", "mlp_down_proj", "lm_head"):
        assert _op(g, passes.backward_of(name)).flops == _op(g, name).flops == _op(full, passes.backward_of(name)).flops / 2
        assert "gradients" not in _op(g, passes.backward_of(name)).bytes
    assert not any(op.name == "embedding.backward" for op in g.ops)
    assert _op(g, "attention.backward").flops == _op(full, "attention.backward").flops


def test_gradients_and_optimizer_are_the_adapters_only(graphs):
    """The gradient bytes a LoRA step writes (and the data-parallel reduction reads) are the adapters' in bf16:
    R·(k+n) parameters per target per layer, 9,437,184 in all; the AdamW step covers those only."""
    _, g = graphs
    trainable = R * (QKV_K + QKV_N + O_K + O_N) * L
    assert trainable == 9_437_184 == g.meta["trainable_params"]
    grads = sum(op.bytes.get("gradients", 0.0) * op.count for op in g.ops if passes.is_backward(op.name))
    assert grads == 2.0 * trainable
    assert _op(g, "optimizer.adamw").flops == 12.0 * trainable


def test_a_lora_step_holds_no_base_gradients_or_optimizer_state():
    """On one device without ZeRO: gradients 2 bytes and optimizer state 12 bytes per adapter parameter, the base
    weights once in bf16; the step is faster than full training's."""
    import ironlaw
    kw = dict(on="h100", gpus=1, seq=T, global_batch=1, micro_batch=1)
    lora = ironlaw.train("llama3-8b", lora_rank=R, **kw)
    full = ironlaw.train("llama3-8b", gpus=8, dp=8, global_batch=8, on="h100", seq=T, micro_batch=1, zero=1)
    m = lora.memory
    assert m.gradients_bytes == pytest.approx(2.0 * 9_437_184)
    assert m.optimizer_bytes == pytest.approx(12.0 * 9_437_184)
    assert m.weights_bytes == pytest.approx(2.0 * lora.graph.meta["params"])
    assert lora.breakdown.microbatch_s < full.breakdown.microbatch_s


@pytest.mark.parametrize("args, says", [
    (["llama3-8b", "--phase", "train", "--gpus", "1", "--lora-rank", "0"], "--lora-rank takes the adapters' rank"),
    (["llama3-8b", "--phase", "decode", "--lora-rank", "16"], "--lora-rank shapes a training step"),
    (["mixtral-8x7b", "--phase", "train", "--gpus", "8", "--tp", "8", "--lora-rank", "16"],
     "LoRA on a mixture-of-experts model"),
])
def test_lora_refusals(args, says):
    """Rank ≤ 0, an inference phase and an MoE model: one line, exit 2."""
    res = run_cli("analyze", *args, "--on", "h100")
    assert res.rc == 2, res.out
    assert says in res.err and len(res.err.strip().splitlines()) == 1, res.err


def test_lora_targets_choose_the_adapted_linears():
    """``lora_targets`` with all four of NeMo's linears: the MLP's adapters join (R·(k+n) each: up 4,096 → 28,672,
    down 14,336 → 4,096); the step's notes say what trains."""
    import ironlaw
    st = ironlaw.train("llama3-8b", on="h100", gpus=1, seq=T, global_batch=1, micro_batch=1, lora_rank=R,
                       lora_targets="linear_qkv,linear_proj,linear_fc1,linear_fc2")
    per_layer = (QKV_K + QKV_N) + (O_K + O_N) + (4096 + 28672) + (14336 + 4096)
    assert st.graph.meta["trainable_params"] == R * per_layer * L
    assert any(n.startswith("LoRA rank 16 on linear_qkv, linear_proj, linear_fc1, linear_fc2") for n in st.notes)


def test_fp8_lora_holds_one_frozen_fp8_copy_and_transposes_it_for_dgrad():
    """FP8 on H100 (whose FP8 GEMMs take one layout): the frozen weights are one FP8 byte per parameter, and each
    frozen linear's dgrad reads W, writes and reads its transpose (3 weight passes), with no weight gradient."""
    import ironlaw
    st = ironlaw.train("llama3-8b", on="h100", gpus=1, seq=T, global_batch=1, micro_batch=1, lora_rank=R,
                       dtype="fp8")
    assert st.memory.weights_bytes == pytest.approx(1.0 * st.graph.meta["params"])
    up, dgrad = _op(st.graph, "mlp_up_proj"), _op(st.graph, "mlp_up_proj.backward")
    assert dgrad.bytes["weights"] == pytest.approx(3.0 * up.bytes["weights"]) and "gradients" not in dgrad.bytes


@pytest.mark.parametrize("args, says", [
    (["--lora-rank", "16", "--lora-targets", "q_proj"], "--lora-targets takes linear_qkv, linear_proj"),
    (["--lora-targets", "linear_qkv"], "add --lora-rank R"),
])
def test_lora_target_refusals(args, says):
    res = run_cli("analyze", "llama3-8b", "--phase", "train", "--gpus", "1", "--on", "h100", *args)
    assert res.rc == 2 and says in res.err and len(res.err.strip().splitlines()) == 1, res.err


def test_the_data_parallel_reduction_moves_the_adapters_gradients_only():
    """Over DP 8 the gradient all-reduce of a LoRA step carries 2 bytes per adapter parameter (18.9 MB), not the
    16 GB of full training's: under a fiftieth of full training's time (its per-layer launches' latency stays)."""
    import ironlaw
    kw = dict(on="h100", gpus=8, dp=8, seq=T, global_batch=8, micro_batch=1, zero=1)
    lora, full = ironlaw.train("llama3-8b", lora_rank=R, **kw), ironlaw.train("llama3-8b", **kw)
    assert 0 < lora.breakdown.dp_grad_comm_s < 0.02 * full.breakdown.dp_grad_comm_s
