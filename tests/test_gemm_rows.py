"""The rows each training GEMM's kernels run (ironlaw.models.gemm_rows): tokens/tp per ring-exchange step under TP
communication overlap, a routed expert's share of the tokens, the η those rows allow on a GPU without a GEMM
table of its own (gemmshape.GPU_M_HALF) and on one with its own table (a100: only the kernel's share)."""
from __future__ import annotations

import pytest

from ironlaw.machine import hardware
from ironlaw.models import parallel, workloads
from ironlaw.models.gemm_rows import share, with_kernel_rows
from ironlaw.core.gemmshape import GPU_M_HALF


def _layer(spec="llama3-8b", seq=4096, dtype="bf16"):
    return workloads.resolve(workloads.Request(spec, phase="train", batch=1, seq=seq, dtype=dtype))


def _scales(g, hw, **kw):
    from ironlaw.machine.calibration import for_training          # as parallel.train_step prices a step
    return {op.name: float(op.eta_scale) for op in with_kernel_rows(g, for_training(hardware.get(hw)), **kw).ops
            if op.kind == "matmul" and "weights" in op.bytes}


def test_share_is_rows_over_rows_plus_half():
    assert share(GPU_M_HALF, GPU_M_HALF) == pytest.approx(0.5)
    assert share(8192.0, GPU_M_HALF) == pytest.approx(8192 / (8192 + 179.0))


def test_ring_exchange_steps_run_tokens_over_tp_rows():
    g = parallel.tp_shard(_layer(), 8, sp=True)
    t = 4096.0
    s = _scales(g, "h100", tp=8, overlap=True)
    for fwd in ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj"):
        assert s[fwd] == pytest.approx(share(t / 8, GPU_M_HALF))
    # row-parallel dgrad in ring steps, column-parallel dgrad whole; wgrad at the top η (half the FLOPs each)
    assert s["mlp_down_proj.backward"] == pytest.approx(1 / (0.5 / share(t / 8, GPU_M_HALF) + 0.5))
    assert s["mlp_up_proj.backward"] == pytest.approx(1 / (0.5 / share(t, GPU_M_HALF) + 0.5))
    assert s["lm_head"] == pytest.approx(share(t, GPU_M_HALF))              # not a TE linear: never chunked
    plain = _scales(g, "h100", tp=8, overlap=False)
    assert plain["mlp_down_proj"] == pytest.approx(share(t, GPU_M_HALF))


def test_a_device_with_its_own_table_applies_only_the_kernels_share():
    g = parallel.tp_shard(_layer(dtype="fp16"), 4, sp=True)          # the A100's fp16 table (LLMCompass, vidur)
    m_half = hardware.get("a100").calibration.shape("matmul")["fp16"]["m_half"]
    assert set(_scales(g, "a100", tp=4, overlap=False).values()) == {1.0}
    on = _scales(g, "a100", tp=4, overlap=True)
    assert on["mlp_up_proj"] == pytest.approx(share(1024.0, m_half) / share(4096.0, m_half))


def test_a_cpu_without_a_table_is_left_alone():
    assert set(_scales(_layer(), "xeon-8480", tp=1).values()) == {1.0}


def test_routed_experts_run_their_share_of_the_tokens():
    g = _layer("qwen3-30b-a3b", seq=4096)
    s = _scales(g, "h100", ep=8)
    rows = 4096 * 8 * 8 / 128                      # tokens · k · ep / E per local expert
    assert s["mlp_up_proj"] == pytest.approx(share(rows, GPU_M_HALF))
    assert s["attn_pre_proj"] == pytest.approx(share(4096.0, GPU_M_HALF))
