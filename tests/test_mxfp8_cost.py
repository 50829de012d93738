"""MXFP8's own cost against FP8 current scaling, as Transformer Engine v2.9 and Megatron-Core v0.15 run them
(``ironlaw.models.precision``): the amax a norm in front finds, the scale swizzles before every block-scaled GEMM,
the weights' per-step copies, and the parameter all-gather MXFP8's recipes leave after the step."""
from __future__ import annotations

import pytest

from conftest import run_cli
from ironlaw.core.errors import IronlawError
from ironlaw.machine import hardware
from ironlaw.machine.network.collectives import collective_time
from ironlaw.models import parallel, precision, workloads

T, H, F = 2048, 4096, 14336          # llama3-8b at seq 2048: tokens, hidden, MLP width


def _graph(spec="llama3-8b", seq=2048, dtype="mxfp8", any_layout=True):
    g = workloads.resolve(workloads.Request(spec, phase="train", batch=1, seq=seq, dtype="bf16"))
    return precision.lower(g, dtype, any_layout)


def _op(g, name):
    return next(op for op in g.ops if op.name == name)


def _step(dtype, on="b200", spec="llama3-8b", seq=8192, **opts):
    hw = hardware.get(on)
    g = _graph(spec, seq, dtype, hw.features.get("fp8_any_layout", False))
    return parallel.train_step(g, hw, parallel.make_plan(opts, g, hw))


def test_current_scaling_reads_once_where_the_norm_in_front_found_the_amax():
    """TE's FUSED_NORM_AMAX_FP8: the QKV and fc1 inputs (TELayerNormColumnParallelLinear) cast in one read; the
    projection's and fc2's inputs and every output gradient pay the amax pass too. MXFP8 reads once everywhere
    and writes both block-scaled copies."""
    f8, mx = _graph(dtype="fp8"), _graph(dtype="mxfp8")
    for name, elems, fused in (("attn_pre_proj", T * H, True), ("mlp_up_proj", T * H, True),
                               ("attn_post_proj", T * H, False), ("mlp_down_proj", T * F, False)):
        read = 2 if fused else 4
        assert _op(f8, f"fp8_cast.{name}").bytes["activations"] == pytest.approx((read + 1) * elems), name
        assert _op(mx, f"fp8_cast.{name}").bytes["activations"] == pytest.approx((2 + 2 * (1 + 1 / 32)) * elems)
    assert _op(f8, "fp8_cast.mlp_up_proj.backward").bytes["activations"] == pytest.approx((4 + 1) * T * 2 * F)


def test_norm_fused_linears_follow_megatron_core_modules():
    """MLA's down-projection sits behind a TENorm of its own; its up-projections fuse q/kv_layernorm; the
    experts' (routed and shared) inputs come from the permute, not a norm."""
    g = workloads.resolve(workloads.Request("deepseek-v3", phase="train", batch=1, seq=1024, dtype="bf16"))
    low = precision.lower(g, "fp8", True)
    fwd = {op.name: op for op in g.ops if precision.lowers(op, g.meta["layers"])}
    fused = precision.norm_fused(fwd)
    assert {"attn_pre_proj.q_up", "attn_pre_proj.kv_up", "mlp_up_proj.dense"} <= fused
    assert "attn_pre_proj" not in fused and "mlp_up_proj" not in fused and "mlp_up_proj.shared" not in fused
    def per_elem(n):
        cast = _op(low, f"fp8_cast.{n}")
        return cast.bytes["activations"] / cast.bytes_written
    assert per_elem("attn_pre_proj.q_up") == pytest.approx(3.0) and per_elem("attn_pre_proj") == pytest.approx(5.0)


def test_block_scaled_gemms_swizzle_their_operands_scales_one_kernel_each():
    """Two swizzles before a forward GEMM (input, weight), four before the dgrad and wgrad; each reads and writes
    one byte per 32 elements (NVFP4: 16); per-tensor FP8 has none."""
    mx, f8, f4 = _graph(dtype="mxfp8"), _graph(dtype="fp8"), _graph(dtype="fp4")
    names = [op.name for op in mx.ops if op.name.startswith("scale_swizzle.mlp_down_proj.")]
    assert names == ["scale_swizzle.mlp_down_proj.input", "scale_swizzle.mlp_down_proj.weight",
                     "scale_swizzle.mlp_down_proj.dgrad.grad.backward",
                     "scale_swizzle.mlp_down_proj.dgrad.weight.backward",
                     "scale_swizzle.mlp_down_proj.wgrad.input.backward",
                     "scale_swizzle.mlp_down_proj.wgrad.grad.backward"]
    assert sum(op.name.startswith("scale_swizzle.") for op in mx.ops) == 4 * 6
    assert not any(op.name.startswith("scale_swizzle.") for op in f8.ops)
    assert _op(mx, "scale_swizzle.mlp_down_proj.input").bytes["activations"] == pytest.approx(2 * T * F / 32)
    assert _op(mx, "scale_swizzle.mlp_down_proj.weight").bytes["activations"] == pytest.approx(2 * F * H / 32)
    assert _op(f4, "scale_swizzle.mlp_down_proj.input").bytes["activations"] == pytest.approx(2 * T * F / 16)
    down = _op(mx, "scale_swizzle.mlp_down_proj.wgrad.grad.backward")
    assert down.count == _op(mx, "mlp_down_proj").count and down.attrs["role"] == "cast"


def test_weights_per_step_copies():
    meta = lambda d, any_layout=True: {"precision": d, "fp8_any_layout": any_layout}       # noqa: E731
    assert precision.param_step_bytes(meta("mxfp8"), 1e9, 1e8) == pytest.approx(1e9 * (2 + 2 * (1 + 1 / 32) + 2))
    assert precision.param_step_bytes(meta("fp8"), 1e9, 1e8) == pytest.approx(1e8 * 9)
    assert precision.param_step_bytes(meta("fp8", False), 1e9, 1e8) == pytest.approx(1e8 * 9 + 1e9 * 2)
    assert precision.param_step_bytes(meta(None), 1e9, 1e8) == 0
    assert precision.param_gather_bytes(meta("fp8"), 2.0) == 1.0
    assert precision.param_gather_bytes(meta("mxfp8"), 2.0) == 2.0
    # the step charges them with the optimizer: MXFP8 copies every weight, FP8 only the shard
    mx, f8 = (_step(d, gpus=8, global_batch=8, zero=1).breakdown.optimizer_s for d in ("mxfp8", "fp8"))
    assert mx > f8 > 0


def test_mxfp8_recipes_gather_the_parameters_after_the_step():
    """--param-gather-exposed: the gradients reduce-scatter under the backward and the parameters gather after
    the step, MXFP8 in bf16 (reuse_grad_buf_for_mxfp8_param_ag), FP8 in one byte."""
    opts = dict(gpus=16, tp=8, sequence_parallel=True, global_batch=16, zero=1)
    on = _step("mxfp8", **opts, param_gather_exposed=True)
    off = _step("mxfp8", **opts)
    assert off.breakdown.zero_param_gather_s == 0 and on.breakdown.zero_param_gather_s > 0
    hw = hardware.get("b200")
    grp = parallel.groups(on.plan, 8, on.plan.nodes)["dp"]
    a, b = collective_time("allgather", on.memory.params_per_device * 2.0, parallel.group_topology(hw, grp))
    assert on.breakdown.zero_param_gather_s == pytest.approx(a + b)
    f8 = _step("fp8", **opts, param_gather_exposed=True)
    assert 0 < f8.breakdown.zero_param_gather_s < on.breakdown.zero_param_gather_s
    assert on.step_s > off.step_s
    with pytest.raises(IronlawError, match="--param-gather-exposed .*--zero 3"):
        _step("mxfp8", gpus=8, global_batch=8, zero=3, param_gather_exposed=True)


def test_param_gather_exposed_without_zero_1_is_one_line():
    r = run_cli("analyze", "llama3-8b", "--phase", "train", "--on", "b200", "--dtype", "mxfp8", "--gpus", "8",
                "--global-batch", "8", "--param-gather-exposed")
    assert r.rc == 2 and len(r.err.strip().splitlines()) == 1 and "--zero 0" in r.err and "Traceback" not in r.err


def test_mxfp8_step_is_slower_than_current_scaling_on_the_same_layout():
    """NVIDIA's published MXFP8 rows run 3.6–5.6% slower than FP8 current scaling on the same recipe (NeMo 25.11,
    llama3-8b on DGX-B200 and GB200): ironlaw has MXFP8 slower too, by less (the swizzles and the unfused cast;
    docs/accuracy.md)."""
    for on in ("b200", "gb200"):
        f8, mx = (_step(d, on=on, gpus=8, global_batch=128, micro_batch=2, zero=1) for d in ("fp8", "mxfp8"))
        assert mx.step_s > f8.step_s, on
        assert mx.step_s / f8.step_s < 1.06, on
