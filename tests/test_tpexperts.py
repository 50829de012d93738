"""vLLM's and SGLang's expert parallelism under TP attention (``serving.tpexperts``): E/ep whole experts a GPU on every
token, the TP all-reduce combining, priced on the framework's fused-MoE fit with the other ranks' token-expert pairs
on the Triton classes (``core.routing.pairs_bytes``, the rows class's ``pairs``). The measured layer: aiconfigurator-
core 0.12.0 (NVIDIA, Apache-2.0), h100_sxm/moe/vllm/0.24.0/moe_perf.parquet, bfloat16, Qwen3-30B-A3B's shape (hidden
2,048, inter 768, 128 experts, top-8), moe_tp_size 1, moe_ep_size 4, balanced routing, 256 tokens: 156.0 µs."""
from __future__ import annotations

import glob
from pathlib import Path

import numpy as np
import pytest

import ironlaw
from ironlaw.core.errors import IronlawError
from ironlaw.machine import calibration, engines
from ironlaw.measure.calibrate.kernelfit import rules
from ironlaw.models.serving import engine, frameworks, step

TABLE_EP4_256_US = 156.0


def _run(spec: str, gpu: str, fw: str, dtype: str, tp: int, ep: int):
    eng = frameworks.select(fw, gpu, tp, offline=True)
    c = frameworks.constants(eng, engine.FITTED)
    lay = engine.Layout(tp=tp, ep=ep)
    meta, limits, mem = engine.prepare(spec, eng.hw, lay, dtype, "bf16", 1024, 256, 1.0, 512, 8192, c)
    return engine.engine_of(spec, eng.hw, lay, dtype, "bf16", (1024, 256), meta, limits, mem, 256, c)


def _routed(est):
    return [(i, op) for i, op in enumerate(est.graph.ops) if op.module == "experts"]


@pytest.fixture(scope="module")
def ep4():
    return step.step_seconds(_run("qwen3-30b-a3b", "h100", "vllm", "bf16", 4, 4), 256, 0.0, 0.0, True)[1]


def test_each_gpu_runs_its_whole_experts_on_every_token_with_the_other_ranks_pairs(ep4):
    ops = dict((op.name, op) for _, op in _routed(ep4))
    up, down, act = ops["mlp_up_proj"], ops["mlp_down_proj"], ops["mlp_act"]
    assert tuple(down.attrs["nk"]) == (2048, 768) and tuple(up.attrs["nk"]) == (1536, 2048)   # not split by TP
    assert up.flops == pytest.approx(2 * 256 * 8 / 4 * 1536 * 2048)                         # t·k/ep rows
    assert up.bytes["weights"] == pytest.approx(32 * 1536 * 2048 * 2)                        # the 32 local experts
    assert act.attrs["pairs_bytes"] == pytest.approx(2 * (256 * 8 * 3 / 4) * (5 * 768 + 2 * 2048))
    assert [op.kind for op in ep4.graph.ops].count("collective") == 2                  # TP's all-reduces, no exchange
    assert "EP 4" in ep4.graph.name


def test_the_routed_layer_lands_on_the_tables_ep_row(ep4):
    t = np.asarray(ep4.op_time_s).reshape(len(ep4.graph.ops))
    us = sum(t[i] for i, _ in _routed(ep4)) * 1e6
    assert us == pytest.approx(TABLE_EP4_256_US, rel=0.05)      # without the pairs: −8%


def test_a_class_fitted_without_the_pairs_moves_none():
    est = step.step_seconds(_run("hf:" + str(Path(__file__).parent / "data/llm_configs/qwen3-235b-a22b-fp8.json"),
                                 "h100", "vllm", "fp8", 4, 4), 64, 0.0, 0.0, True)[1]
    act = next(op for _, op in _routed(est) if op.name == "mlp_act")
    assert act.attrs["kernel"] == "moe_rows.fp8_block" and "pairs_bytes" not in act.attrs     # FlashInfer CUTLASS


def test_serve_prices_vllm_ep_without_attention_dp_and_says_so():
    est = ironlaw.serve("qwen3-30b-a3b", "h100", prompt=256, output=64, tp=4, ep=4, engine="vllm",
                        max_throughput=True, requests=64, dtype="bf16")
    assert any("EP 4 under TP attention" in n and "fused-MoE fit in bf16" in n for n in est.notes)


def test_tensorrt_llm_and_uneven_groups_are_refused_in_one_line():
    with pytest.raises(IronlawError, match="modelled with attention data parallelism"):
        ironlaw.serve("qwen3-30b-a3b", "h100", prompt=256, output=64, tp=4, ep=4, engine="trtllm",
                      max_throughput=True, requests=8, dtype="bf16")
    with pytest.raises(IronlawError, match="so --ep equals --tp: use --tp 2 --ep 2 or --tp 4 --ep 4"):
        ironlaw.serve("qwen3-30b-a3b", "h100", prompt=256, output=64, tp=4, ep=2, engine="sglang",
                      max_throughput=True, requests=8, dtype="bf16")


def test_pairs_bytes_are_zero_at_ep_1():
    from ironlaw.core.routing import pairs_bytes
    assert pairs_bytes("triton", 2048.0, 2048.0, 2048, 768) == 0.0


def test_the_stored_pairs_are_the_rules():
    """Every vLLM and SGLang fused-MoE rows class states ``pairs`` exactly where ``kernelfit.rules.pair_kernel``
    names its kernel (what benchmarks/kernel_moe.py --framework --write stores)."""
    root = Path(engines.__file__).parent / "catalog" / "engine"
    for fw in ("vllm", "sglang"):
        for path in glob.glob(str(root / fw / "*.toml")):
            gpu = Path(path).stem
            kern = engines.load(gpu, fw)["kernel"]
            for name, p in kern.items():
                if name.startswith("moe_rows."):
                    assert p.get("pairs") == rules.pair_kernel(fw, name.split(".", 1)[1], gpu), (fw, gpu, name)


def test_an_unknown_pairs_kernel_is_refused():
    cal = {"schema": calibration.SCHEMA, "source": "derived: a test", "fitted": ["moe bf16"],
           "kernel": {"moe_rows.bf16": {"memory": 0.5, "pairs": "cutlass"}}}
    with pytest.raises(IronlawError, match="pairs: must be one of triton, marlin"):
        calibration.check(cal, "t")
