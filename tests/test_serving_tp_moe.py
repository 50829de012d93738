"""vLLM and SGLang at TP > 1 without EP: every expert sharded over TP, the routed layer on the framework's own
measured fused-MoE layer at the sharded shape (models/serving/expertcarry.py ``tp_layer``)."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ironlaw.machine import hardware
from ironlaw.models.serving import engine, expertcarry, frameworks, step
from ironlaw.models.serving.engine import FITTED

CONFIG = Path(__file__).parent / "data" / "llm_configs" / "qwen3-30b-a3b.json"


def _engine(name: str, gpu: str, tp: int):
    eng = frameworks.select(name, gpu, tp, offline=True)
    return eng.hw, frameworks.constants(eng, FITTED)


def _run(spec: str, hw, tp: int, constants, dtype: str = "fp8"):
    lay = engine.Layout(tp=tp)
    meta, limits, mem = engine.prepare(spec, hw, lay, dtype, "bf16", 1024, 256, 1.0, 256, 8192, constants)
    return engine.engine_of(spec, hw, lay, dtype, "bf16", (1024, 256), meta, limits, mem, 64, constants)


def _routed_s(run, decode: int = 64) -> float:
    """Seconds of the decode step's routed layer: its grouped GEMMs and its rows (permute, activation, combine)."""
    _, est = step.step_seconds(run, decode, 0.0, 0.0, True)
    ops = est.graph.ops
    mask = np.array([op.attrs.get("expert") == "routed" or
                     (op.module == "experts" and op.attrs.get("role") in step.ROUTED_ROLES) for op in ops])
    assert mask.any()
    return float(np.sum(np.asarray(est.op_time_s).reshape(len(ops))[mask]))


def _sharded_config(tmp_path, tp: int) -> str:
    """Qwen3-30B-A3B with each expert's intermediate size divided by ``tp``: one GPU's share under TP."""
    cfg = json.loads(CONFIG.read_text())
    cfg["moe_intermediate_size"] //= tp
    path = tmp_path / f"qwen3-30b-a3b-i{tp}.json"
    path.write_text(json.dumps(cfg))
    return f"hf:{path}"


@pytest.mark.parametrize("tp", [2, 4])
def test_a_vllm_tp_routed_layer_is_the_fitted_layer_at_the_sharded_shape(tmp_path, tp):
    """vLLM on H100, FP8 experts, TP 2 / 4, no EP: the decode step's routed layer costs what vLLM's fitted fused-MoE
    layer costs on one GPU for experts of intermediate / TP (the shape vLLM's FusedMoE runs on each rank and the
    tables time at moe_tp_size = TP), and not what the H100-fitted expert η price."""
    hw, c = _engine("vllm", "h100", tp)
    run = _run(f"hf:{CONFIG}", hw, tp, c)
    assert run.constants.moe_tables and run.constants.expert_layer_scale is None
    one = _run(_sharded_config(tmp_path, tp), hw, 1, c)
    assert one.constants.moe_tables
    assert _routed_s(run) == pytest.approx(_routed_s(one), rel=1e-6)
    eta = replace(run, constants=c, law_hw=step.engine_hw(hw, c))
    assert abs(_routed_s(eta) / _routed_s(run) - 1.0) > 0.05


def test_tensorrt_llm_and_the_other_layouts_keep_today_s_path():
    """TensorRT-LLM's constants state no framework layer: TP 4 keeps the expert η. Under vLLM, EP with attention DP
    keeps today's path, and so does SGLang on H100 in per-tensor FP8, which its tables do not time (that layer is
    the device's TensorRT-LLM fit)."""
    h100 = hardware.get("h100")
    tp4 = engine.Layout(tp=4)
    assert expertcarry.tp_layer(FITTED, h100, "fp8", tp4) is FITTED
    run = _run(f"hf:{CONFIG}", h100, 4, FITTED)
    assert not run.constants.moe_tables and run.constants is FITTED
    hw, c = _engine("vllm", "h100", 4)
    assert c.own_moe and "fp8" in c.own_moe
    assert expertcarry.tp_layer(c, hw, "fp8", engine.Layout(tp=4, ep=4, attention_dp=True)) is c
    assert expertcarry.tp_layer(c, hw, "fp8", engine.Layout()) is c
    hw, c = _engine("sglang", "h100", 4)
    assert "fp8" not in c.own_moe
    assert expertcarry.tp_layer(c, hw, "fp8", tp4) is c


def test_the_serve_notes_say_which_layer_prices_a_tp_sharded_routed_layer():
    """``serve --engine vllm --tp 4``: a note names vLLM's fused-MoE fit at the sharded shape; SGLang's H100
    per-tensor FP8 layer, which its tables lack, names the expert constants and the formats they time."""
    from ironlaw.models.serving.frameworks import max_throughput
    kw = {"tp": 4, "dtype": "fp8", "requests": 64}
    vllm = max_throughput(f"hf:{CONFIG}", "h100", 1024, 256, "vllm", kw, 0.95)
    assert ("routed experts: TP 4 shards every expert (intermediate / 4 per GPU, vLLM's default without expert "
            "parallelism), priced on vLLM's fused-MoE fit in fp8 at that shape") in vllm.notes
    sglang = max_throughput(f"hf:{CONFIG}", "h100", 1024, 256, "sglang", kw, 0.95)
    note = next(n for n in sglang.notes if n.startswith("routed experts: TP 4"))
    assert "priced on the H100-fitted expert constants: h100 has no SGLang fused-MoE fit in fp8" in note
    assert not any(n.startswith("routed experts: TP") for n in
                   max_throughput(f"hf:{CONFIG}", "h100", 1024, 256, "trtllm", kw, 0.95).notes)


def test_the_published_qwen3_235b_fp8_rows_run_the_block_scaled_layer():
    """benchmarks/vllm_sglang_published.py prices Qwen3-235B-A22B's FP8 checkpoint rows (128 x 128 block-scaled, as
    its CSV header states) on a config that says so: the experts run vLLM's fp8_block layer at TP 4, not its
    per-tensor FP8 one (at this shape and TP 4 the H100 tables time the two 0.29 ms and 0.99 ms for 256 tokens)."""
    import sys
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    import vllm_sglang_published as bench
    spec = bench.CHECKPOINTS[("qwen3-235b-a22b", "fp8")]
    assert json.loads(Path(spec[3:]).read_text())["quantization_config"]["weight_block_size"] == [128, 128]
    from ironlaw.models.serving.frameworks import max_throughput
    est = max_throughput(spec, "h100", 2000, 100, "vllm", {"tp": 4, "dtype": "fp8", "requests": 100}, 0.95)
    assert any(n.endswith("priced on vLLM's fused-MoE fit in fp8_block at that shape") for n in est.notes)
