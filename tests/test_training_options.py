"""The training options of published Blackwell runs: Transformer Engine's FP8 attention (``--fp8-attention``,
ironlaw.models.fp8_attention) and Megatron-Core's whole-layer and whole-step CUDA graphs (``--cuda-graph full``,
``full_iteration``; ironlaw.models.host)."""
from __future__ import annotations

import pytest

from conftest import run_cli
from ironlaw.core.errors import IronlawError
from ironlaw.machine import hardware
from ironlaw.machine.hostcpu import HostCPU
from ironlaw.models import fp8_attention, host, parallel
from ironlaw.models.parallel.step import training_graph

CPU = HostCPU("test", 10e-6, 0.0, 5e-6, "test")
# Llama 3.1 8B as NVIDIA's 512-GPU MLPerf rows split it (TP 2 · CP 4, one sequence per micro-batch), on 8 GPUs
SMALL = dict(gpus=8, tp=2, cp=4, global_batch=1, micro_batch=1, zero=1, sequence_parallel=True)


def _step(on="gb200", dtype="fp8", seq=8192, **opts):
    hw = hardware.get(on)
    g = training_graph("llama3.1-8b", hw, seq, dtype, opts)
    return parallel.train_step(g, hw, parallel.make_plan(opts, g, hw))


def _rows(st, kind="attention"):
    return {r["name"]: r for r in st.per_microbatch.rows() if r["kind"] == kind or r["name"].startswith(kind)}


def test_fp8_attention_runs_at_the_measured_fp8_speedup_after_its_quantizes():
    opts = dict(gpus=8, global_batch=8, micro_batch=1, zero=1)
    bf16, fp8 = _step(seq=4096, **opts), _step(seq=4096, fp8_attention=True, **opts)
    rate = fp8_attention.speedup(training_graph("llama3.1-8b", hardware.get("gb200"), 4096, "fp8", opts).meta,
                                 hardware.get("gb200"), 1)
    assert 1.05 < rate < 2.0                   # GB200's FP8 context attention class over its bf16 one
    a, b = _rows(bf16), _rows(fp8)
    for name in ("attention", "attention.backward"):          # products and softmax, as the kernels' whole time
        assert a[name]["compute_s"] / b[name]["compute_s"] == pytest.approx(rate, rel=1e-9)
        assert a[name]["flops"] == b[name]["flops"]
    casts = _rows(fp8, "fp8_cast.attention")
    assert set(casts) == {"fp8_cast.attention", "fp8_cast.attention.backward"}
    q, do = casts["fp8_cast.attention"]["bytes"], casts["fp8_cast.attention.backward"]["bytes"]
    assert q / do == pytest.approx((32 + 2 * 8) / 32)          # Q, K, V (32 + 8 + 8 heads) against dO (32)
    assert fp8.breakdown.step_s < bf16.breakdown.step_s
    assert any("attention in FP8" in n and f"{rate:.2f}×" in n for n in fp8.notes)


def test_fp8_attention_is_refused_where_it_cannot_be_priced():
    with pytest.raises(IronlawError, match="a100 has no FP8 matrix peak"):
        fp8_attention.require(hardware.get("a100"))
    assert "no attention_context" in fp8_attention.unpriced(hardware.get("mi355x"))
    res = run_cli("analyze", "llama3.1-8b", "--phase", "train", "--on", "mi355x", "--dtype", "fp8", "--seq", "4096",
                  "--gpus", "8", "--global-batch", "8", "--fp8-attention")
    assert res.rc == 2 and len(res.err.strip().splitlines()) == 1 and "--fp8-attention" in res.err
    res = run_cli("analyze", "llama3.1-8b", "--phase", "prefill", "--on", "gb200", "--fp8-attention")
    assert res.rc == 2 and "--fp8-attention shapes a training step" in res.err


def test_fp8_attention_quantizes_are_host_kernels_a_graph_captures():
    meta = {"layers": 32}
    eager, _ = host.layers(meta, CPU)
    fp8, _ = host.layers({**meta, "fp8_attention": 1.2}, CPU)
    assert fp8.kernels - eager.kernels == 2 * host.QUANTIZE_KERNELS["fp8"]
    graphed, _ = host.layers({**meta, "fp8_attention": 1.2}, CPU, graphed=("attn",))
    plain, _ = host.layers(meta, CPU, graphed=("attn",))
    assert graphed.kernels == plain.kernels


def test_whole_step_graph_leaves_no_host_wait_and_whole_layer_graphs_one_launch_per_pass():
    eager = _step(**SMALL)
    assert eager.breakdown.host_exposed_s > 0            # a 1,024-token micro-batch per GPU: the host binds eagerly
    full = _step(cuda_graph="full", **SMALL)
    whole = _step(cuda_graph="full_iteration", **SMALL)
    assert 0 < full.breakdown.host_issue_s < eager.breakdown.host_issue_s
    assert whole.breakdown.host_exposed_s == 0 and whole.breakdown.host_issue_s == 0
    assert whole.breakdown.step_s == pytest.approx(eager.breakdown.step_s - eager.breakdown.host_exposed_s)
    assert any("one CUDA graph" in n for n in whole.notes)
    dense, _ = host.layers({"layers": 32}, CPU, graphed=("full",))
    assert dense.kernels == 2                             # one replay forward, one backward


def test_whole_layer_graphs_are_refused_on_dropless_moe():
    hw = hardware.get("gb200")
    g = training_graph("qwen3-30b-a3b", hw, 4096, "fp8", {"micro_batch": 1})
    for scope in ("full", "full_iteration"):
        with pytest.raises(IronlawError, match=f"--cuda-graph {scope} captures whole layers"):
            parallel.make_plan({"gpus": 8, "ep": 8, "global_batch": 8, "cuda_graph": scope}, g, hw)
