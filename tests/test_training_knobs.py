"""Today's training knobs: context parallelism, FSDP, expert parallelism with imbalance, FP8 GEMMs, and the
train-step JSON (time_s, tokens_per_s_per_gpu, mfu); bad plans through the CLI (one line, exit 2)."""
from __future__ import annotations

import pytest

from ironlaw.machine import hardware
from ironlaw.models import parallel, precision, workloads
from ironlaw.models.analysis import training_graph
from ironlaw.core.errors import IronlawError
from ironlaw.core.graph import Graph, Op


def _train(spec="llama3-8b", seq=8192, mb=1, dtype=None):
    g = workloads.resolve(workloads.Request(spec, phase="train", batch=mb, seq=seq,
                                            dtype="bf16" if dtype in precision.TRAINING_DTYPES else dtype))
    return precision.lower(g, dtype) if dtype in precision.TRAINING_DTYPES else g


def _step(g, hw="h100", **opts):
    hw = hardware.get(hw)
    return parallel.train_step(g, hw, parallel.make_plan(opts, g, hw))


def test_context_parallel_splits_activations_and_adds_the_ring():
    g = _train()
    one = _step(g, gpus=8, tp=8, sequence_parallel=True, global_batch=8)
    two = _step(g, gpus=16, tp=8, cp=2, sequence_parallel=True, global_batch=8)
    assert two.memory.activations_bytes == pytest.approx(one.memory.activations_bytes / 2)
    assert two.memory.weights_bytes == pytest.approx(one.memory.weights_bytes)          # weights whole on every rank
    b = two.breakdown
    # K and V of seq/cp tokens, 2·kv_dim/tp wide, sent cp − 1 = 1 time forward and twice backward per layer
    assert b.cp_ring_s > 0 and 0 <= b.cp_ring_exposed_s <= b.cp_ring_s
    assert one.breakdown.cp_ring_s == 0
    # each rank computes half the causal pairs: the micro-batch's attention FLOPs halve
    att = {s: sum(r["flops"] for r in st.per_microbatch.rows() if r["kind"] == "attention")
           for s, st in (("one", one), ("two", two))}
    assert att["two"] == pytest.approx(att["one"] / 2)
    # the same global batch on twice the devices: tokens per step unchanged, the step shorter
    assert two.flops.tokens_per_step == one.flops.tokens_per_step and two.step_s < one.step_s


def test_context_parallel_ring_by_hand():
    """Llama-3-8B, seq 8192, tp 1, cp 2 (× dp 4, FSDP) inside one node: K and V of 4096 tokens × 8 heads × 128
    × 2 bytes = 16.8 MB per step; NVLink at the calibration's p2p efficiency; 32 layers × (1 forward + 2
    backward)."""
    from ironlaw.machine.network.collectives import collective_time
    from ironlaw.machine.network.topology import build
    g, hw = _train(), hardware.get("h100")
    st = _step(g, gpus=8, cp=2, fsdp=True, global_batch=4)
    chunk = 2 * 8 * 128 * 4096 * 2
    a, b = collective_time("sendrecv", chunk, build(hw, 2, 1))
    assert st.breakdown.cp_ring_s == pytest.approx(32 * 3 * float(a + b), rel=1e-9)


def test_context_parallel_merge_by_hand():
    """Llama-3-8B, seq 8192, cp 2, tp 2: a rank holds 4096 tokens; its attention output is 4096 × 32 heads ×
    128 elements before TP (8192 per token), 2·8 × 128 K and V elements per token. Transformer Engine's P2P
    ring (context_parallel.py, AttnFuncWithCPAndKVP2P) merges step 2's bf16 partial output into an fp32 output
    (2 + 4 + 4 bytes per element) after step 1's init and before the cast back (6 + 6); the backward adds
    both steps' dQ into fp32 (10 bytes each, 6 for the cast) and their dK, dV into the bf16 ring buffer (6
    each). Per layer and TP rank: forward 22, backward 26 bytes per output element, + 12 per K/V element."""
    g = _train()
    sg = parallel.tp_shard(parallel.cp_shard(g, 2), 2, True, (2, 1))
    merge = {op.name: op for op in sg.ops if op.name.startswith("attention_cp_merge")}
    assert set(merge) == {"attention_cp_merge", "attention_cp_merge.backward"}
    q, kv = 4096 * 4096, 4096 * 2048
    assert merge["attention_cp_merge"].bytes["activations"] == pytest.approx((10 + 12) * q / 2)
    assert merge["attention_cp_merge.backward"].bytes["activations"] == pytest.approx((10 * 2 + 6) * q / 2
                                                                                      + 6 * 2 * kv / 2)
    assert all(op.count == 32 for op in merge.values())
    assert not any(op.name.startswith("attention_cp_merge") for op in parallel.cp_shard(g, 1).ops)
    # they cost what their bytes take at the device's memory bandwidth, after their attention
    st = _step(g, gpus=16, tp=2, cp=2, sequence_parallel=True, global_batch=8)
    rows = [r for r in st.per_microbatch.rows() if r["name"].startswith("attention_cp_merge")]
    assert len(rows) == 2 and all(r["bound"] == "bandwidth" and r["time_s"] > 0 for r in rows)


def test_fsdp_memory_is_params_over_dp_and_its_comm_overlaps():
    g = _train()
    n = g.meta["params"]
    st = _step(g, gpus=8, fsdp=True, global_batch=16)
    assert st.plan.zero == 3
    m = st.memory
    assert m.weights_bytes == pytest.approx(2 * n / 8) and m.gradients_bytes == pytest.approx(2 * n / 8)
    assert m.optimizer_bytes == pytest.approx(12 * n / 8)
    ddp = _step(g, gpus=8, zero=1, global_batch=16).memory
    assert ddp.weights_bytes == pytest.approx(2 * n) and ddp.optimizer_bytes == pytest.approx(12 * n / 8)
    b = st.breakdown
    # two gathers and one reduce-scatter of the parameters per micro-batch, mostly hidden under the layers
    assert b.fsdp_comm_s > 0 and 0 < b.fsdp_exposed_s < 0.25 * b.fsdp_comm_s
    assert b.dp_grad_exposed_s == 0


def test_expert_all_to_all_bytes_by_hand():
    """Mixtral-8x7B, micro-batch 1 × 4096 tokens, top-2, hidden 4096, bf16, ep 8: each rank dispatches its
    4096 × 2 token copies of 4096 × 2 bytes (and combines as many back), forward and backward (16 GPUs:
    ep 8 inside each node, FSDP over dp 16)."""
    g = _train("mixtral-8x7b", seq=4096)
    st = _step(g, gpus=16, ep=8, global_batch=16, fsdp=True)
    a2a = {op.name: op for op in st.per_microbatch.graph.ops if op.name.startswith("ep.alltoall")}
    assert set(a2a) == {"ep.alltoall.dispatch", "ep.alltoall.combine", "ep.alltoall.dispatch.bwd",
                        "ep.alltoall.combine.bwd"}
    for op in a2a.values():
        assert op.network_bytes == pytest.approx(4096 * 2 * 4096 * 2) and op.count == 32
    hot = _step(g, gpus=16, ep=8, global_batch=16, fsdp=True, expert_imbalance=1.5)
    rank = 1 + 0.5 * 8 / 8                                     # 1 expert per rank: the rank carries the hot expert
    for op in hot.per_microbatch.graph.ops:
        if op.name.startswith("ep.alltoall"):
            assert op.network_bytes == pytest.approx(rank * 4096 * 2 * 4096 * 2)
    assert hot.step_s > st.step_s
    # expert weights split over EP: the dense part whole, 8 experts → 1 per rank
    assert st.memory.params_per_device < 0.25 * g.meta["params"]


def test_fp8_is_faster_than_bf16_on_a_compute_bound_step_but_not_twice():
    bf = _step(_train(), gpus=8, fsdp=True, global_batch=16)
    f8 = _step(_train(dtype="fp8"), gpus=8, fsdp=True, global_batch=16)
    assert bf.bottleneck["resource"] == "compute"
    assert 1.15 < bf.step_s / f8.step_s < 2.0
    # MFU against the dtype's own peak: FP8 doubles the denominator
    assert f8.peak_flops == hardware.get("h100").peak("fp8") and f8.mfu < bf.mfu
    # bf16 weights plus the FP8 row- and column-wise copies; optimizer state unchanged
    n = _train().meta["params"]
    assert f8.memory.weights_bytes == pytest.approx((2 + 2) * n / 8)
    assert f8.memory.optimizer_bytes == pytest.approx(bf.memory.optimizer_bytes)


def test_fp8_on_a_device_with_any_layout_keeps_one_copy():
    """Blackwell (fp8_any_layout): per-tensor FP8 keeps one copy, no transpose: its casts write 1 byte per
    element, its weights one FP8 copy; MXFP8 writes both block-scaled copies on every device."""
    assert hardware.get("b200").features["fp8_any_layout"] and "fp8_any_layout" not in hardware.get("h100").features
    g = _train(seq=2048)
    cast = lambda low: next(op for op in low.ops if op.name == "fp8_cast.mlp_down_proj")   # noqa: E731
    assert cast(precision.lower(g, "fp8", any_layout=True)).bytes["activations"] == pytest.approx(5 * 2048 * 14336)
    mx = 2 + 2 * (1 + 1 / 32)
    for any_layout in (False, True):
        assert cast(precision.lower(g, "mxfp8", any_layout)).bytes["activations"] == pytest.approx(mx * 2048 * 14336)
    h, b = (_step(training_graph("llama3-8b", hardware.get(hw), 8192, "fp8", {}), hw, gpus=8, global_batch=8, zero=3)
            for hw in ("h100", "b200"))
    n = _train().meta["params"]
    assert h.memory.weights_bytes == pytest.approx((2 + 2) * n / 8)            # bf16 + the FP8 copy and its transpose
    assert b.memory.weights_bytes == pytest.approx((2 + 1) * n / 8)            # bf16 + one FP8 copy


def test_fp8_lowering_keeps_attention_and_the_head_in_bf16_and_counts_the_casts():
    g = _train(seq=2048)
    low = precision.lower(g, "fp8")
    dt = {op.name: op.dtype for op in low.ops}
    assert dt["mlp_up_proj"] == dt["attn_post_proj.backward"] == "fp8"
    assert dt["attention"] == dt["lm_head"] == dt["attention.backward"] == "bf16"
    assert low.flops == pytest.approx(g.flops, rel=1e-3)         # the casts add ~2 FLOPs per element only
    # the forward cast of mlp_down_proj's input [T, 14336]: amax + cast reads 4 B, writes 2 B per element
    cast = next(op for op in low.ops if op.name == "fp8_cast.mlp_down_proj")
    assert cast.bytes["activations"] == pytest.approx(6 * 2048 * 14336)
    # a graph built in fp8 throughout lowers to the same step
    built8 = workloads.resolve(workloads.Request("llama3-8b", phase="train", batch=1, seq=2048, dtype="fp8"))
    same = precision.lower(built8, "fp8")
    assert sum(op.bytes.get("activations", 0) * op.count for op in same.ops) == pytest.approx(
        sum(op.bytes.get("activations", 0) * op.count for op in low.ops))


def test_mxfp8_needs_a_device_with_it():
    with pytest.raises(IronlawError, match="no mxfp8"):
        _step(_train(dtype="mxfp8"), gpus=8, global_batch=8, zero=1)


def test_uneven_pipeline_with_the_embedding_and_loss_in_a_layers_place():
    assert parallel.stage_layers(126, 8, 8) == (16, 15, 15)
    assert parallel.stage_layers(32, 4, 2) == (8, 8, 8)
    g = Graph("x", "train", "bf16", [], meta={"layers": 126, "heads": 8, "kv_heads": 8})
    parallel.check_model(g, 1, 8, 8, 1)                          # 126 + 2 = 128 = 8 × 8 × 2
    assert not parallel.uneven(126, 8, 8) and parallel.uneven(126, 5, 1)


def test_uneven_pipeline_layout_as_deepseek_v3s_recipes_split_61_layers():
    """Megatron-Bridge's DeepSeek-V3 layouts of its 61 layers: pp 16 [E + 4] + 14 × [4] + [1 + loss]; pp 4 ×
    vp 4 the same 16 chunks, four to a stage; pp 8 × vp 4 "Et|(tt|)*30mL" (30 chunks of 2, the last empty);
    pp 4 as 16, 16, 16, 13."""
    assert parallel.stage_layers(61, 16, 1) == (4, 4, 1)
    assert parallel.stage_layers(61, 4, 4) == (16, 16, 3 * 4 + 1)
    assert parallel.stage_layers(61, 8, 4) == (8, 8, 6)           # stage 8 holds chunks 7, 15, 23 and 31
    assert parallel.stage_layers(61, 4, 1) == (16, 16, 13)
    assert sum(parallel.stage_layers(61, 2, 1)[1:]) == 61
    g = Graph("x", "train", "bf16", [], meta={"layers": 61, "heads": 8, "kv_heads": 8})
    parallel.check_model(g, 1, 16, 1, 1)
    parallel.check_model(g, 1, 8, 4, 1)
    with pytest.raises(IronlawError, match="64 model chunks cannot hold the 61 layers of x; use at most 61"):
        parallel.check_model(g, 1, 64, 1, 1)
    assert parallel.uneven_note(61, 32).startswith("the 61 layers split unevenly over 32 model chunks: 30 of 2 "
                                                  "layers, one of 1, 1 with none")
    st = _step(_train("deepseek-v3", seq=4096, dtype="mxfp8"), "b200", gpus=256, pp=16, ep=8, global_batch=2048, zero=1)
    assert any("split unevenly over 16 model chunks: 15 of 4 layers, one of 1 (" in n for n in st.notes)
    assert st.plan.pp == 16


def test_train_step_json(cli):
    r = cli("analyze", "llama3-8b", "--phase", "train", "--on", "h100", "--gpus", "16", "--tp", "2", "--cp", "2",
            "--sequence-parallel", "--tp-comm-overlap", "--seq", "8192", "--global-batch", "8", "--dtype", "fp8",
            "--format", "json")
    assert r.rc == 0, r.err
    d = r.json()
    assert d["schema"] == "ironlaw.train-step/1" and d["time_s"] == d["step_s"] > 0
    assert d["tokens_per_s_per_gpu"] == pytest.approx(8 * 8192 / (d["time_s"] * 16))
    assert 0 < d["mfu"] < 1 and "6·N" in d["mfu_convention"] and d["plan"]["cp"] == 2


@pytest.mark.parametrize("args,match", [
    (("--gpus", "64", "--tp", "8", "--pp", "3"), "does not divide --gpus"),
    (("--gpus", "16", "--tp", "2", "--cp", "2", "--dp", "2"), "must equal the devices"),
    (("--gpus", "6", "--cp", "6", "--seq", "8192"), "does not divide the sequence"),
    (("--gpus", "8", "--ep", "2", "--expert-imbalance", "0.5"), "expert-imbalance"),
    (("--gpus", "8", "--fsdp", "--zero", "1"), "--fsdp is --zero 3"),
    (("--gpus", "8", "--ep", "2"), "does not divide the 0 experts"),
    (("--gpus", "8", "--dtype", "mxfp8"), "no mxfp8"),
])
def test_bad_training_plans_via_the_cli(cli, args, match):
    r = cli("analyze", "llama3-8b", "--phase", "train", "--on", "h100", *args)
    assert r.rc == 2 and match in r.err and len(r.err.strip().splitlines()) == 1, r.err


@pytest.mark.parametrize("dtype", ["mxfp4", "int8"])
def test_four_bit_and_integer_training_is_refused(cli, dtype):
    """MXFP4 and integer training recipes are not modelled (NVFP4 is: tests/test_nvfp4.py): one line, exit 2,
    not a step built in them."""
    r = cli("analyze", "llama3-8b", "--phase", "train", "--on", "b200", "--gpus", "8", "--dtype", dtype)
    assert r.rc == 2 and f"--dtype {dtype} training is not modelled" in r.err
    assert len(r.err.strip().splitlines()) == 1, r.err


def test_ep_that_does_not_divide_the_experts(cli):
    r = cli("analyze", "mixtral-8x7b", "--phase", "train", "--on", "h100", "--gpus", "6", "--ep", "3", "--seq", "1024")
    assert r.rc == 2 and "does not divide the 8 experts" in r.err


def test_tp_comm_overlap_hides_collectives_under_the_gemms():
    g = _train(seq=4096)
    base = dict(gpus=8, tp=8, sequence_parallel=True, global_batch=8)
    off, on = _step(g, **base), _step(g, **base, tp_comm_overlap=True)
    hidden = off.breakdown.tp_ep_network_s - on.breakdown.tp_ep_network_s
    assert 0 < hidden <= off.breakdown.tp_ep_network_s

    def gemm_s(st):
        return sum(r["time_s"] for op, r in zip(st.per_microbatch.graph.ops, st.per_microbatch.rows())
                   if parallel.role(op) in ("column", "row"))
    # the overlap runs each forward GEMM and the row-parallel dgrads as tp ring steps of tokens/tp rows
    # (gemm_rows): the GEMMs take longer, the collectives hide beside them
    chunked = off.breakdown.microbatches * (gemm_s(on) - gemm_s(off))
    assert chunked > 0
    assert on.step_s == pytest.approx(off.step_s - hidden + chunked, rel=1e-6)
    assert hidden <= off.breakdown.microbatches * gemm_s(on)
    with pytest.raises(IronlawError, match="add --sequence-parallel"):
        parallel.make_plan(dict(gpus=8, tp=8, tp_comm_overlap=True), g)


def test_sequence_parallel_collectives_and_what_each_overlaps():
    """With sequence parallelism a layer runs a reduce-scatter and an all-gather per sublayer forward and, in the
    backward, also re-gathers each column GEMM's input for its weight gradient (Megatron-LM's
    LinearWithGradAccumulationAndAsyncCommunication): 10 collectives per layer. Each hides only under the GEMM
    share it runs beside (parallel.TP_OVERLAP): the forward all-gather under the next column GEMM, the
    reduce-scatter under its row GEMM, a backward one under a dgrad or wgrad half."""
    g = _train(seq=4096)
    sg = parallel.tp_shard(g, 8, True, (8, 1))
    tp = [op.name for op in sg.ops if op.module == "tp"]
    assert len(tp) == 10 and all(n.split(".", 1)[1] in parallel.TP_OVERLAP for n in tp)
    assert sum(".wgrad." in n for n in tp) == 2
    ops = [Op("tp.reducescatter.fwd.attn", "collective", module="tp", attrs={"tp_comm": "reducescatter.fwd.attn"}),
           Op("attn_post_proj", "matmul", module="attn", attrs={"role": "row"}),
           Op("attn_pre_proj", "matmul", module="attn", attrs={"role": "column"}),
           Op("tp.allgather.wgrad.attn", "collective", module="tp", attrs={"tp_comm": "allgather.wgrad.attn"}),
           Op("attn_pre_proj.backward", "matmul", module="attn", attrs={"role": "column"})]
    # 3 s of reduce-scatter beside the 2 s row GEMM (not the 5 s column GEMM): 2 hidden; the re-gather beside
    # the dgrad half (2 s) of the column GEMM's backward: 2 hidden
    assert parallel.tp_overlap_hidden_s(ops, [3.0, 2.0, 5.0, 3.0, 4.0]) == pytest.approx(4.0)
    assert {op.attrs["tp_comm"] for op in sg.ops if op.module == "tp"} == set(parallel.TP_OVERLAP)


def test_moe_a2a_overlap_hides_the_all_to_alls_of_all_micro_batches_but_one():
    """--moe-a2a-overlap (Megatron's overlap_moe_expert_parallel_comm): each micro-batch's dispatch and combine
    run beside another micro-batch's compute, up to that compute; the step's first forward and last backward
    have no partner, so one micro-batch's all-to-alls stay."""
    g = _train("qwen3-30b-a3b", seq=1024)
    base = dict(gpus=8, ep=8, global_batch=32, fsdp=True)
    off, on = _step(g, **base), _step(g, **base, moe_a2a_overlap=True)
    rows = off.per_microbatch.rows()
    a2a = sum(r["time_s"] for r in rows if r["kind"] == "collective" and r["module"] == "ep")
    compute = sum(r["time_s"] for r in rows if r["kind"] != "collective")
    m = off.breakdown.microbatches
    assert m == 4 and 0 < a2a < compute
    assert on.step_s == pytest.approx(off.step_s - (m - 1) * a2a, rel=1e-9)
    assert on.breakdown.tp_ep_network_s == pytest.approx(off.breakdown.tp_ep_network_s - (m - 1) * a2a,
                                                             rel=1e-6)
    with pytest.raises(IronlawError, match="add --ep > 1"):
        parallel.make_plan(dict(gpus=8, moe_a2a_overlap=True), g)


def test_overlapped_stage_sends_leave_the_warm_up_and_cool_down():
    g, hw = _train("llama3-70b", seq=4096), hardware.get("h100")
    base = dict(gpus=64, tp=8, pp=8, interleave=5, sequence_parallel=True, global_batch=16, zero=1)
    off, on = _step(g, **base), _step(g, **base, overlap_p2p=True)
    per_send = off.breakdown.pipeline_p2p_s / (2 * 5 * 16)
    assert on.breakdown.pipeline_p2p_s == pytest.approx(2 * (8 - 1) * per_send)
    with pytest.raises(IronlawError, match="--interleave"):
        parallel.make_plan(dict(gpus=16, pp=2, overlap_p2p=True), g)


def test_fp32_gradients_double_gradient_memory_and_reduction():
    g = _train(seq=4096)
    base = dict(gpus=16, tp=8, sequence_parallel=True, global_batch=16)
    bf, f32 = _step(g, **base), _step(g, **base, grad_fp32=True)
    assert f32.memory.gradients_bytes == pytest.approx(2 * bf.memory.gradients_bytes)
    assert f32.breakdown.dp_grad_comm_s > 1.8 * bf.breakdown.dp_grad_comm_s


def test_a_graph_built_in_fp8_steps_like_the_lowered_bf16_graph():
    """Widening scales every byte by 2 but the optimizer state; the loss's fp32 per-token values and
    FlashAttention's fp32 log-sum-exp rows are the parts the builder does not size by the dtype (0.1% of the
    activations)."""
    built8 = workloads.resolve(workloads.Request("llama3-8b", phase="train", batch=1, seq=4096, dtype="fp8"))
    a = _step(built8, gpus=8, fsdp=True, global_batch=16)
    b = _step(_train(seq=4096, dtype="fp8"), gpus=8, fsdp=True, global_batch=16)
    assert a.step_s == pytest.approx(b.step_s, rel=1e-6) and a.memory.to_dict() == pytest.approx(b.memory.to_dict(), rel=2e-3)
