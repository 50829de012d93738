"""The host term of an eager training step (ironlaw.models.host): the [host] table, the kernels a layer issues,
the MoE layer's device→host sync, CUDA-graph scopes, and the term in the breakdown and the reason."""
from __future__ import annotations

import pytest

from conftest import run_cli
from ironlaw.core.errors import IronlawError
from ironlaw.machine import hardware
from ironlaw.machine.hostcpu import HostCPU, check
from ironlaw.models import host, parallel, precision, workloads

CPU = HostCPU("test", 10e-6, 0.0, 5e-6, "test")
MOE = {"experts": 128, "experts_per_token": 8, "layers": 48, "moe_layers": 48}


def _step(spec="qwen3-30b-a3b", on="b200", dtype="mxfp8", **opts):
    hw = hardware.get(on)
    g = workloads.resolve(workloads.Request(spec, phase="train", batch=opts.get("micro_batch", 1), seq=4096,
                                            dtype="bf16"))
    g = precision.lower(g, dtype, hw.features.get("fp8_any_layout", False)) if dtype else g
    return parallel.train_step(g, hw, parallel.make_plan(opts, g, hw))


def test_host_table_is_checked_field_by_field():
    good = {"cpu": "x", "op_s": "7 us", "module_s": 0, "sync_s": "1 us", "source": "measured: x"}
    assert check(good, "t").op_s == pytest.approx(7e-6)
    for bad, msg in (({**good, "speed": 1}, "unknown field 'speed'"), ({k: v for k, v in good.items() if k != "op_s"},
                     "missing field 'op_s'"), ({**good, "op_s": "7 GB"}, "t.op_s"), ({**good, "sync_s": "1 s"},
                     "outside 0 to 10 ms"), ({**good, "cpu": ""}, "t.cpu")):
        with pytest.raises(IronlawError, match=msg):
            check(bad, "t")


def test_catalog_names_x86_and_grace_hosts():
    x86, grace = hardware.get("b200").extra["host"], hardware.get("gb200").extra["host"]
    assert "Xeon" in x86.cpu and "Grace" in grace.cpu
    # Grace pays TransformerEngine #2053's torch.nn.Linear ratio, 37.08 / 13.48 us, per eager op
    assert grace.op_s / x86.op_s == pytest.approx(37.08 / 13.48, rel=1e-3)
    assert "h200-probe-2026-12-04" in x86.source and "#2053" in grace.source


def test_kernels_per_moe_layer_follow_the_local_experts_and_the_recipe():
    d8, m8 = host.layers(MOE, CPU, ep=8, precision="mxfp8")
    _, m4 = host.layers(MOE, CPU, ep=4, precision="mxfp8")
    # GroupedLinear: per local expert 2 GEMMs forward, a dgrad and a wgrad per linear backward, and in low
    # precision a quantize of each expert's input and output gradient: 2 + 4 + 2 + 2 = 10 kernels
    assert m4.kernels - m8.kernels == pytest.approx(10 * (128 / 4 - 128 / 8))
    assert m8.syncs == 1 and d8.syncs == 0 and d8.after_s == 0
    _, bf = host.layers(MOE, CPU, ep=8)
    # QKV, projection, fc1, fc2 per expert; and TE's padding copies of the routed rows (3 forward, 3 backward)
    assert m8.kernels - bf.kernels == pytest.approx(2 * (2 + 2 * 128 / 8) + 6)
    _, f8 = host.layers(MOE, CPU, ep=8, precision="fp8")      # current scaling: amax, reduction, scale, cast
    assert f8.kernels - bf.kernels == pytest.approx(4 * 2 * (2 + 2 * 128 / 8) + 6)
    # CUDA graphs replay the captured parts as one launch per pass
    _, g = host.layers(MOE, CPU, ep=8, precision="mxfp8", graphed=("attn", "moe_router", "moe_preprocess"))
    captured = (host.ATTENTION.fwd + host.ATTENTION.bwd + 2 * 2) + (6 + 6) + (17 + 1)
    assert m8.kernels - g.kernels == pytest.approx(captured - 3 * 2)


def test_grouped_linear_gemms_pay_their_measured_cublaslt_call():
    # TransformerEngine PR #3134: 8 expert GEMMs on TE's multi-stream cuBLASLt path 0.267 ms, CUTLASS's one launch
    # of the same GEMMs 0.069 ms: 24.75 us per expert GEMM on the DGX B200 host, a multiple of its eager op
    assert host.STREAMED_GEMM_S == pytest.approx(24.75e-6)
    assert host.STREAMED_GEMM_OPS * hardware.get("b200").extra["host"].op_s == pytest.approx(24.75e-6)
    grace = hardware.get("gb200").extra["host"]                       # carried with the host's op_s
    assert host.STREAMED_GEMM_OPS * grace.op_s == pytest.approx(24.75e-6 * 37.08 / 13.48, rel=1e-3)
    # per local expert 2 GEMMs forward and 4 backward at that cost, each still one kernel; MXFP8's quantizes of the
    # expert's input and output gradient at one eager op each
    _, m8 = host.layers(MOE, CPU, ep=8, precision="mxfp8")
    _, m4 = host.layers(MOE, CPU, ep=4, precision="mxfp8")
    more, gemm = 128 / 4 - 128 / 8, host.STREAMED_GEMM_OPS * CPU.op_s
    assert m4.after_s - m8.after_s == pytest.approx(more * (2 * gemm + 2 * CPU.op_s))
    assert m4.bwd_s - m8.bwd_s == pytest.approx(more * (4 * gemm + 2 * CPU.op_s))
    assert m4.kernels - m8.kernels == pytest.approx(10 * more) and m4.before_s == m8.before_s
    assert host.Calls(streamed_fwd=1) + host.Calls(fwd=2, streamed_bwd=3) == host.Calls(2, 0, 0, 0, 1, 3)
    assert host.EXPERT.scaled(2) == host.Calls(4, 8, 0, 4, 4, 8)


def test_padding_copies_are_issued_by_the_alltoall_dispatcher_only():
    # Fp8Padding of the rows and the probabilities, Fp8Unpadding of fc2's output: one TE launch each, forward and
    # backward, after the sync, with quantized experts and expert parallelism on the alltoall dispatcher
    _, a2a = host.layers(MOE, CPU, ep=8, precision="mxfp8")
    _, flex = host.layers(MOE, CPU, ep=8, precision="mxfp8", dispatcher="flex")
    assert a2a.kernels - flex.kernels == pytest.approx(6)
    assert a2a.after_s - flex.after_s == pytest.approx(3 * CPU.op_s)
    assert a2a.bwd_s - flex.bwd_s == pytest.approx(3 * CPU.op_s) and a2a.before_s == flex.before_s
    for kw in ({"ep": 8}, {"ep": 1, "precision": "mxfp8"}):         # bf16 experts; no all-to-all
        assert dict((n, c) for n, _, c in host.moe_parts(MOE, **kw))["padding"] == host.Calls()


def test_moe_parts_add_up_to_the_layer():
    kw = {"tp": 2, "sp": True, "ep": 8, "precision": "fp8", "graphed": ("moe_router",)}
    _, moe = host.layers({**MOE, "shared_expert": True}, CPU, **kw)
    parts = host.moe_parts({**MOE, "shared_expert": True}, **kw)
    before = sum((c for _, after, c in parts if not after), host.Calls())
    after = sum((c for _, after, c in parts if after), host.Calls())
    assert host.seconds(before, CPU, "fp8")[0] == pytest.approx(moe.before_s)
    assert host.seconds(after, CPU, "fp8")[0] == pytest.approx(moe.after_s)
    assert sum(host.seconds(c, CPU, "fp8")[2] for _, _, c in parts) == pytest.approx(moe.kernels)
    assert [n for n, *_ in parts] == ["attention", "router", "preprocess", "dispatch", "experts", "padding",
                                      "expert bias", "expert clamp", "shared expert"]
    assert host.moe_parts({"layers": 32}) == []


def test_backward_collectives_count_as_backward_device_time():
    # the expert all-to-alls of the backward and the TP collectives of the backward (a ``bwd`` or ``wgrad`` name
    # part) are the backward's device time, not time after the forward's sync
    for name in ("ep.alltoall.dispatch.bwd", "ep.alltoall.combine.bwd", "ep.alltoall.probs.bwd",
                 "tp.allgather.bwd.mlp", "tp.reducescatter.bwd.attn", "tp.allgather.wgrad.mlp", "qkv.backward",
                 "attn_core.recompute"):
        assert host.backward(name), name
    for name in ("ep.alltoall.dispatch", "ep.alltoall.probs", "tp.allgather.fwd.mlp", "moe_router"):
        assert not host.backward(name), name
    st = _step(gpus=8, ep=8, global_batch=64)
    ops = st.per_microbatch.graph.ops
    assert any(host.after_sync(op) and host.backward(op.name) for op in ops if op.module == "ep")


def test_exposed_host_time_by_hand():
    lay = host.LayerHost(before_s=1.0, after_s=2.0, bwd_s=3.0, kernels=0, syncs=1)
    dense = host.LayerHost(before_s=1.0, after_s=0.0, bwd_s=1.0, kernels=0, syncs=0)
    # one MoE layer: the host issues the expert part (2 s) after the sync while the device idles, then the rest
    # (1 s) while the device runs the experts (0.5 s) and the rest (1.5 s): max(2 + 1, 2 + 1.5, 0.5 + 1.5) + sync
    got = host.exposed_s(dense, lay, 0.1, 0, 1, fwd_after=0.5, fwd_rest=1.5, bwd=4.0)
    assert got == pytest.approx((3.5 + 0.1) + 4.0 - (0.5 + 1.5 + 4.0))
    # without a sync the host runs ahead: a dense pass is max(host, device)
    assert host.exposed_s(dense, lay, 0.1, 2, 0, 0.0, 1.5, 1.0) == pytest.approx((2.0 - 1.5) + (2.0 - 1.0))
    assert host.exposed_s(dense, lay, 0.1, 2, 0, 0.0, 5.0, 5.0) == 0.0


def test_a_sync_exposes_at_most_the_hosts_own_time():
    """Whatever the split of host and device time around the MoE layer's sync, the device waits at most the
    host's whole issue time (and the syncs): a sync takes the host's run-ahead away, never more. This is the
    serial bound ``tests/nemo_ref.serial_bound_s`` prints."""
    import numpy as np
    rng = np.random.default_rng(7)
    for _ in range(200):
        b, a, bwd_h, d_b, d_a, d_bwd = rng.uniform(0.0, 3.0, 6)
        moe = host.LayerHost(before_s=b, after_s=a, bwd_s=bwd_h, kernels=0, syncs=1)
        dense = host.LayerHost(before_s=b, after_s=0.0, bwd_s=bwd_h, kernels=0, syncs=0)
        n_dense, n_moe = rng.integers(0, 4), rng.integers(1, 4)
        layers = n_dense + n_moe
        got = host.exposed_s(dense, moe, 0.01, n_dense, n_moe, fwd_after=n_moe * d_a, fwd_rest=layers * d_b,
                             bwd=layers * d_bwd)
        issue = n_dense * (b + bwd_h) + n_moe * (b + a + bwd_h)
        assert 0.0 <= got <= issue + n_moe * 0.01 + 1e-12


def test_train_step_shows_the_host_term_and_grace_pays_more():
    x86 = _step(on="b200", gpus=8, ep=8, global_batch=64)
    grace = _step(on="gb200", gpus=8, ep=8, global_batch=64)
    for st in (x86, grace):
        assert st.breakdown.host_exposed_s > 0
        assert st.breakdown.step_s >= st.breakdown.host_exposed_s
        assert any("device→host syncs" in n and "48 device→host" in n for n in st.notes)
    assert grace.breakdown.host_exposed_s > x86.breakdown.host_exposed_s
    # a host-bound step says so: a tiny micro-batch on Grace, every kernel a few microseconds of device work, in
    # FP8 current scaling (4 host calls per quantized tensor; MXFP8's one cast and the device's scale swizzles,
    # precision.scale_swizzles, leave this micro-batch just device-bound), with the flex dispatcher of the GB200
    # recipes (no separate sorts by local expert, ``dispatcher``)
    tiny = _step(spec="qwen3-30b-a3b", on="gb200", dtype="fp8", gpus=8, ep=8, global_batch=8, moe_dispatcher="flex")
    assert tiny.bottleneck["share"] == "host" and tiny.bottleneck["resource"] == "latency"
    assert "device→host syncs" in tiny.bottleneck["why"]


def test_device_without_host_table_says_so():
    st = _step(spec="llama3-8b", on="a100", dtype=None, gpus=8, global_batch=8, fsdp=True)
    assert st.breakdown.host_exposed_s == 0
    assert any("names no host CPU" in n for n in st.notes)


def test_cli_cuda_graph_scope_and_bad_value():
    args = ("analyze", "qwen3-30b-a3b", "--phase", "train", "--on", "gb200", "--seq", "4096", "--gpus", "8",
            "--ep", "8", "--global-batch", "8", "--format", "json")
    eager, graphed = run_cli(*args), run_cli(*args, "--cuda-graph", "attn,moe_router,moe_preprocess")
    assert eager.rc == 0 and graphed.rc == 0
    assert graphed.json()["breakdown"]["host_exposed_s"] < eager.json()["breakdown"]["host_exposed_s"]
    assert graphed.json()["plan"]["cuda_graph"] == ["attn", "moe_router", "moe_preprocess"]
    bad = run_cli(*args, "--cuda-graph", "mlp")
    assert bad.rc == 2 and "--cuda-graph takes attn, moe_router, moe_preprocess" in bad.err
