"""Block-scaled FP8 MoE (DeepSeek-V3/R1's recipe) on its own kernel classes, the routed rows' latency, and the cost
per local expert slot a grouped MoE launch pays.

Data: aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0; tests/data/kernel_tables/LICENSE.aiconfigurator-core),
``h200_sxm/moe/trtllm/1.3.0rc20/moe_perf.parquet``: the extract in tests/data/kernel_tables holds every 8th layer
shape of its ``fp8_block`` balanced rows (benchmarks/kernel_moe.py --extract). The full table's held-out fit (every
other shape): 5.2% median, 15.1% p90 with the per-slot cost; 7.6% / 26.0% without it (docs/accuracy.md).
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from ironlaw import api
from ironlaw.core.errors import IronlawError
from ironlaw.core.weightonly import elem_bytes
from ironlaw.law import efficiency
from ironlaw.machine import hardware
from ironlaw.measure.calibrate import moefit
from ironlaw.models import precision
from ironlaw.models.workloads import hfconfig

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import kernel_moe  # noqa: E402

# the extract's held-out h200 fp8_block shapes reach 5.4% / 14.2% (without the per-slot cost 7.5% / 32.0%)
MEDIAN_BOUND, P90_BOUND = 0.07, 0.18
ROUTED = ("moe_permute", "mlp_up_proj", "mlp_act", "mlp_down_proj", "moe_combine")


def routed_kernels(est) -> dict:
    return {op.name: op.attrs.get("kernel") for op in est.graph.ops if op.module == "experts" and op.name in ROUTED}


def test_a_block_scaled_checkpoint_names_its_format():
    block = {"quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}}
    per_tensor = {"quantization_config": {"quant_method": "fp8"}}
    assert hfconfig.weight_format(block) == "fp8_block"
    assert hfconfig.weight_format(per_tensor) is None and hfconfig.weight_format({}) is None


def test_deepseek_fp8_runs_on_the_block_scaled_class_and_others_do_not():
    kw = dict(on="h200", batch=64, seq=4096, phase="decode", tp=8)
    ds = api.analyze("deepseek-v3", dtype="fp8", **kw)
    assert precision.moe_recipe(ds.graph) == "fp8_block"
    k = routed_kernels(ds)
    assert k["mlp_up_proj"] == k["mlp_down_proj"] == "moe_grouped_gemm.fp8_block"
    assert k["moe_permute"] == k["mlp_act"] == k["moe_combine"] == "moe_rows.fp8_block"
    # the same model in bf16, and a model whose fp8 is per-tensor (ModelOpt), keep their dtype's classes
    assert routed_kernels(api.analyze("deepseek-v3", dtype="bf16", **kw))["mlp_up_proj"] == "moe_grouped_gemm.bf16"
    qwen = api.analyze("qwen3-30b-a3b", on="h200", batch=64, seq=4096, phase="decode", dtype="fp8")
    assert precision.moe_recipe(qwen.graph) is None
    assert routed_kernels(qwen)["mlp_up_proj"] == "moe_grouped_gemm.fp8"


def test_the_catalog_holds_the_block_scaled_fits():
    for gpu in ("h100", "h200", "b200", "b300", "gb200", "gb300"):
        cal = hardware.get(gpu).calibration
        g = cal.kernel["moe_grouped_gemm.fp8_block"]
        assert 0 < g["expert_s"] <= 1e-6 and 0 < g["latency_s"] < 30e-6
        assert cal.kernel["moe_rows.fp8_block"]["latency_s"] == 0.0
        p = cal.provenance["moe fp8_block"]
        assert "fp8_block rows" in p["table"] and p["license"] == "Apache-2.0" and p["rows_fitted"] > 1000


def test_routed_rows_pay_no_default_latency():
    """The layer's fixed cost is the grouped GEMMs' (moefit): the permute, activation and combine pay none of the
    device's default 5 µs per op on top of it; the combine pays the class's cost per token of the layer (``token_s``,
    H200 fp8 fitted on its own-key rows) for the 64 tokens, and nothing else."""
    est = api.analyze("qwen3-30b-a3b", on="h200", batch=64, seq=4096, phase="decode", dtype="fp8")
    assert est.hw.op_latency_s > 0
    lat = {op.name: float(np.ravel(est.latency_s[i])[0]) for i, op in enumerate(est.graph.ops)}
    assert lat["moe_permute"] == lat["mlp_act"] == 0.0
    assert lat["moe_combine"] == pytest.approx(64 * est.hw.calibration.kernel["moe_rows.fp8"].get("token_s", 0.0))
    g = est.hw.calibration.kernel["moe_grouped_gemm.fp8"]
    op = next(o for o in est.graph.ops if o.name == "mlp_up_proj" and o.module == "experts")
    n, k = op.attrs["nk"]
    touched = float(np.ravel(op.bytes["weights"])[0]) / (n * k * elem_bytes(op))     # the experts its rows reach
    assert lat["mlp_up_proj"] == pytest.approx(g["latency_s"] + g.get("touched_s", 0.0) * touched)


def test_a_grouped_launch_pays_per_local_expert_slot():
    """DeepSeek-V3 under TP 8 keeps all 256 experts on each rank: each routed GEMM pays expert_s per slot."""
    est = api.analyze("deepseek-v3", on="h200", batch=64, seq=4096, phase="decode", tp=8, dtype="fp8")
    g = est.hw.calibration.kernel["moe_grouped_gemm.fp8_block"]
    up = next(i for i, op in enumerate(est.graph.ops) if op.name == "mlp_up_proj" and op.module == "experts")
    assert est.graph.ops[up].attrs["local_experts"] == 256
    assert float(np.ravel(est.latency_s[up])[0]) == pytest.approx(g["latency_s"] + 256 * g["expert_s"])
    cols = dataclasses.replace(est.cols, local_experts=None)     # an op that states no slots pays none
    assert efficiency.expert_setup_s(est.hw.calibration, cols) == 0.0


def test_expert_s_is_checked():
    data = hardware.read_toml(hardware.CATALOG_DIR / "h200.toml")
    data["calibration"]["kernel"]["moe_grouped_gemm.fp8_block"]["expert_s"] = 2e-6
    with pytest.raises(IronlawError, match="expert_s"):
        hardware.parse_hardware(data, "h200.toml")


def test_block_scaled_rows_of_the_extract_held_out():
    """The extract's h200 fp8_block shapes: fitted on every other one, scored on the rest; the per-slot cost is what
    holds the many-expert shapes (without it the median and p90 are worse)."""
    groups = {(g, dt): rows for g, dt, _, rows in kernel_moe.groups(kernel_moe.DATA)}
    rows = groups[("h200", "fp8_block")]
    x, t, keep = kernel_moe.layer_terms("h200", "fp8_block", rows)
    err = {}
    for per_expert in (True, False):
        f = moefit.fit(x[keep], t[keep], per_expert=per_expert)
        err[per_expert] = np.abs(moefit.predict_s(f, x[~keep]) / t[~keep] - 1)
    assert len(err[True]) > 300
    assert np.median(err[True]) <= MEDIAN_BOUND and np.percentile(err[True], 90) <= P90_BOUND
    assert np.percentile(err[True], 90) < np.percentile(err[False], 90)


def test_block_scaled_experts_on_a_gpu_without_their_classes_say_they_are_carried():
    """L40S and RTX PRO 6000 are fitted on per-tensor FP8 MoE rows only: DeepSeek-V3's block-scaled experts run on
    those classes, and the coverage (JSON and text line) names the class each stands in for; on H200, which holds
    the block-scaled fits, nothing is carried."""
    from ironlaw.law.coverage import coverage, line
    for gpu in ("l40s", "rtx-pro-6000"):
        est = api.analyze("deepseek-v3", on=gpu, batch=64, seq=4096, phase="decode", tp=8, dtype="fp8")
        k = routed_kernels(est)
        assert k["mlp_up_proj"] == "moe_grouped_gemm.fp8" and k["moe_permute"] == "moe_rows.fp8"
        cov = coverage(est)
        assert est.to_dict()["calibration_coverage"] == cov                    # the JSON carries the same
        carried = {b["class"]: b for b in cov["borrowed"] if b["class"].endswith(".fp8_block")}
        assert carried["moe_grouped_gemm.fp8_block"]["borrows"] == "moe_grouped_gemm.fp8", gpu
        assert carried["moe_rows.fp8_block"]["borrows"] == "moe_rows.fp8", gpu
        assert carried["moe_grouped_gemm.fp8_block"]["share_of_time"] > 0.1
        assert "moe_grouped_gemm.fp8_block" in line(cov) and "(borrows moe_grouped_gemm.fp8's η)" in line(cov)
    h200 = api.analyze("deepseek-v3", on="h200", batch=64, seq=4096, phase="decode", tp=8, dtype="fp8")
    assert not any(b["class"].endswith(".fp8_block") for b in coverage(h200)["borrowed"])


def test_routed_experts_on_the_dense_gemm_name_the_moe_class_they_stand_in_for(tmp_path):
    """H100's measured MoE layer holds bf16, fp8 and fp8_block: fp16 experts run as one grouped launch on the dense
    GEMM, and the coverage says which class that stands in for; the MI300X without its measured MoE classes (its
    GEMMs alone), so DeepSeek-V3's block-scaled experts on its dense fp8 GEMM are named the same way. Per-tensor fp8
    on H100, and DeepSeek-V3 on the MI300X's own fp8_block class (ROCm/aiter's rows), carry nothing."""
    from ironlaw.law.coverage import coverage
    kw = dict(batch=64, seq=4096, phase="decode")
    for spec, gpu, dtype, want, extra in (("qwen3-30b-a3b", "h100", "fp16", "moe_grouped_gemm.fp16", {}),
                                          ("deepseek-v3", _without_moe(tmp_path, "mi300x"), "fp8",
                                           "moe_grouped_gemm.fp8_block", {"tp": 8})):
        cov = coverage(api.analyze(spec, on=gpu, dtype=dtype, **kw, **extra))
        got = [b for b in cov["borrowed"] if b["class"] == want]
        assert len(got) == 1 and got[0]["borrows"] == "matmul" and got[0]["share_of_time"] > 0.3, (gpu, cov)
    for spec, gpu, extra in (("qwen3-30b-a3b", "h100", {}), ("deepseek-v3", "mi300x", {"tp": 8})):
        cov = coverage(api.analyze(spec, on=gpu, dtype="fp8", **kw, **extra))
        assert not any(b["class"].startswith("moe_") for b in cov["borrowed"]), (gpu, cov)


def _without_moe(tmp_path, gpu: str) -> str:
    """A copy of ``gpu``'s catalog file (renamed) whose [calibration] lacks its MoE classes and their provenance."""
    from pathlib import Path

    from ironlaw.machine import hardware
    from ironlaw.machine.profile import replace_table
    hw = hardware.get(gpu)
    table = hw.calibration.table()
    table["kernel"] = {k: v for k, v in table["kernel"].items() if not k.startswith("moe_")}
    table["provenance"] = {k: v for k, v in table["provenance"].items() if not k.startswith("moe ")}
    path = tmp_path / f"{gpu}-gemm-only.toml"
    path.write_text(Path(hw.path).read_text().replace(f'name = "{gpu}"', f'name = "{gpu}-gemm-only"', 1))
    replace_table(path, "calibration", table)
    return str(path)
