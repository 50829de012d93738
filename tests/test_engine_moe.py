"""vLLM's and SGLang's own fused-MoE layer: fitted on their moe_perf tables (benchmarks/kernel_moe.py --framework,
stored in catalog/engine/<framework>/<gpu>.toml), read by their serving steps, and the engine line saying whose fit
prices the routed experts per dtype."""
from __future__ import annotations

import pytest

from ironlaw import api
from ironlaw.machine import engines, hardware
from ironlaw.models.serving import frameworks
from ironlaw.models.serving.step import moe_kernels

MOE = "qwen3-30b-a3b"


def test_vllm_prices_the_routed_experts_on_its_own_fused_moe_fit():
    hw = hardware.get("h200")
    eng = frameworks.select("vllm", hw)
    table = engines.load("h200", "vllm")
    for dt in ("bf16", "fp8", "fp8_block"):
        gemm = f"moe_grouped_gemm.{dt}"
        assert eng.hw.calibration.kernel[gemm] == table["kernel"][gemm] != hw.calibration.kernel[gemm]
        assert moe_kernels(eng.hw, dt)[:2] == (gemm, f"moe_rows.{dt}")
        prov = eng.hw.calibration.provenance[f"moe {dt}"]
        assert prov["table"].startswith("h200_sxm/moe/vllm/0.24.0/moe_perf.parquet")
        assert prov["version"].endswith("vllm 0.24.0") and prov["rows_held_out"] > 0
    line = eng.kernels.line()
    assert "routed experts: vLLM's fused-MoE fit (bf16, fp8, fp8_block, w4a16_mxfp4" in line
    assert "GEMM and attention classes" in line and f"({len(eng.kernels.own)} GEMM" in line
    assert not any(g.startswith("moe ") for g in eng.kernels.own)


def test_the_vllm_serving_step_reads_the_engine_files_moe_fit(tmp_path, monkeypatch):
    """A one-GPU MoE layer (expertcarry.one_gpu_layer) is priced on the engine file's fit: the same vLLM run on a copy
    of the file without its MoE classes (the device's TensorRT-LLM fit in their place) is priced otherwise."""
    kw = dict(max_throughput=True, engine="vllm", prompt=512, output=128, dtype="bf16", requests=64)
    own = api.serve(MOE, "h200", **kw).time_s
    t = engines.load("h200", "vllm")
    t = {**t, "kernel": {k: v for k, v in t["kernel"].items() if not k.startswith(engines.MOE_CLASSES)},
         "provenance": {k: v for k, v in t["provenance"].items() if not k.startswith("moe ")},
         **{key: [x for x in t[key] if not x.startswith("moe ")] for key in ("fitted", "held_out")}}
    monkeypatch.setattr(engines, "ENGINE_DIR", tmp_path / "src" / "ironlaw" / "machine" / "catalog" / "engine")
    engines.write("h200", "vllm", t)
    eng = frameworks.select("vllm", "h200")
    assert eng.hw.calibration.kernel["moe_grouped_gemm.bf16"] == \
        hardware.get("h200").calibration.kernel["moe_grouped_gemm.bf16"]
    line = eng.kernels.line()
    assert "routed experts: the device's TensorRT-LLM fused-MoE fit (" in line and "bf16" in line
    assert api.serve(MOE, "h200", **kw).time_s != own


@pytest.mark.parametrize("engine,gpu", [("vllm", "b200"), ("sglang", "h200"), ("vllm", "b60")])
def test_every_stored_framework_moe_class_names_its_table(engine, gpu):
    table = engines.load(gpu, engine)
    moe = {k for k in table["provenance"] if k.startswith("moe ")}
    assert moe, f"{engine} {gpu}: no MoE class stored"
    for name in moe:
        prov, dt = table["provenance"][name], name.split(" ", 1)[1]
        assert f"/moe/{engine}/" in prov["table"] and prov["license"] == "Apache-2.0"
        assert prov["version"].startswith("aiconfigurator-core 0.12.0") and engine in prov["version"]
        assert f"moe_grouped_gemm.{dt}" in table["kernel"] and f"moe_rows.{dt}" in table["kernel"]
    if gpu == "b60":        # weight-only FP8 rows refused (kernelfit.rules.MOE_WEIGHT_ONLY)
        assert "moe fp8" not in moe and "moe bf16" in moe


def test_a_document_names_the_routed_experts_fit():
    d = frameworks.select("sglang", "h200").kernels.to_dict()
    assert "moe_grouped_gemm.bf16" in d["moe"] and isinstance(d["moe_borrowed"], list)
    assert "moe" not in frameworks.select("trtllm", "h200").kernels.to_dict()


def test_a_refit_of_the_gemm_and_attention_classes_keeps_the_moe_layer():
    """benchmarks/kernel_tables.py --framework --write merges a full refit over the file's MoE part alone."""
    table = engines.load("h200", "vllm")
    part = engines.moe_part(table)
    assert set(part["kernel"]) == set(engines.moe_classes(table)) and part["kernel"]
    assert set(part["provenance"]) == {k for k in table["provenance"] if k.startswith("moe ")}
    assert all(x.startswith("moe ") for x in part["fitted"] + part["held_out"]) and part["fitted"]
    assert engines.moe_part(None) is None
    from ironlaw.measure.calibrate.kernelfit import merged
    refit = {**table, "kernel": {k: v for k, v in table["kernel"].items() if k not in part["kernel"]},
             "provenance": {k: v for k, v in table["provenance"].items() if k not in part["provenance"]},
             **{key: [x for x in table[key] if not x.startswith("moe ")] for key in ("fitted", "held_out")}}
    out = merged(part, refit)
    assert out["kernel"] == table["kernel"] and set(out["provenance"]) == set(table["provenance"])
