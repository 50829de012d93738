"""The MLPerf Inference v5.1 Llama-2-70B and Mixtral-8x7B Offline extracts (tests/data/mlperf_inference_v5.1_*_offline
.csv, mlcommons/inference_results_v5.1) and the benchmark that scores them (benchmarks/mlperf_inference.py): each header
names its origin, every row parses and its numbers agree with each other, and every row's printed ``ironlaw serve``
command is the library call the benchmark makes. No prediction is run here (the benchmark scores them)."""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import mlperf_inference as bench  # noqa: E402

COMMIT = "965182b03376a00fcae415c54e560e1c83937932"


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return bench.load()


@pytest.mark.parametrize("name", sorted(bench.BENCHMARKS))
def test_header_names_origin_commit_and_workload(name):
    path, _, prompt = bench.BENCHMARKS[name]
    head = " ".join(line[1:].strip() for line in open(path) if line.startswith("#"))
    assert "mlcommons/inference_results_v5.1" in head and COMMIT in head
    assert "mlperf_log_summary.txt" in head and f"mean prompt {prompt}." in head     # 222.33, 427.39 tokens
    assert "71007029fb5bced1d79808e7e64dc4c2af82ea55" in head          # the prompt lengths' source


def test_every_row_parses_and_agrees_with_itself(rows):
    from ironlaw.machine import hardware
    assert len(rows) >= 40 and {r["gpu"] for r in rows} == set(bench.GPUS)
    assert {r["benchmark"] for r in rows} == set(bench.BENCHMARKS)
    assert len({(r["benchmark"], r["id"]) for r in rows}) == len(rows)
    for r in rows:
        hardware.get(r["gpu"])                                           # a catalog name
        assert r["id"].startswith("5.1-") and r["division"] in ("closed", "open")
        assert r["results"].endswith(("/llama2-70b-99/Offline", "/mixtral-8x7b/Offline")), r["id"]
        assert r["benchmark"] in r["results"] and r["submitter"] in r["results"]
        assert r["engine"] == ("trtllm" if r["software"].startswith("TensorRT") else "vllm")
        assert r["gpus"] % r["tp"] == 0 and r["instances"] * r["tp"] == r["gpus"]
        assert (250 <= r["output"] <= 320) if r["benchmark"] == "llama2-70b" else (130 <= r["output"] <= 160)
        assert r["requests"] * r["instances"] <= r["samples_per_query"]
        assert 0.85 <= r["memory_fraction"] <= 0.98 and r["max_num_tokens"] >= 1024


def test_each_command_is_the_call_the_benchmark_makes(rows):
    """The printed command, parsed by the CLI, gives ``ironlaw.serve`` the keywords the benchmark passes."""
    import typer
    from ironlaw.cli import app
    serve = typer.main.get_command(app).commands["serve"]
    for r in rows:
        argv = shlex.split(bench.command(r))
        assert argv[:3] == ["ironlaw", "serve", bench.BENCHMARKS[r["benchmark"]][1]]
        params = serve.make_context("serve", argv[2:]).params
        assert params["on"] == r["gpu"]
        for k, v in bench.serve_kwargs(r).items():
            assert params[k] == v, (r["id"], k)
        kw = bench.serve_kwargs(r)          # the submission's memory knob, as --memory-fraction, on every engine
        assert kw["memory_fraction"] == r["memory_fraction"] and "kv_fraction" not in kw, r["id"]


def test_tensorrt_llm_rows_run_the_release_the_submissions_built(rows):
    """Every TensorRT-LLM row is priced on TensorRT-LLM 1.0's kernels (the submissions' 1.0-mlpinf branch) where the
    catalog holds that release's tables (H200, B200, GB200), on the catalog's 1.3.0rc20 kernels on RTX PRO 6000; no
    vLLM row names a release."""
    for r in rows:
        want = "1.0" if r["engine"] == "trtllm" and r["gpu"] in ("h200", "b200", "gb200") else None
        assert bench.serve_kwargs(r).get("release") == want, r["id"]
    assert {"h200", "b200", "gb200"} <= bench.RELEASE_GPUS and "rtx-pro-6000" not in bench.RELEASE_GPUS


def test_llama2_70b_config_builds_with_the_published_parameter_count():
    """Llama-2-70B from its Hugging Face config: 68,976,648,192 parameters (embeddings and head 2 x 32,000 x 8,192;
    per layer q and o 8,192^2 each, k and v 8,192 x 1,024 each, the SwiGLU MLP 3 x 8,192 x 28,672, two norms; 80
    layers; the final norm), the '69B' of its Hugging Face model page; GQA 64 query / 8 KV heads of 128."""
    from ironlaw.models.workloads import Request, resolve
    g = resolve(Request(bench.BENCHMARKS["llama2-70b"][1].replace("hf:", f"hf:{ROOT}/"), phase="decode", seq=16,
                        dtype="bf16"))
    per_layer = 2 * 8192 ** 2 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192
    assert g.meta["params"] == 2 * 32000 * 8192 + 80 * per_layer + 8192 == 68_976_648_192


@pytest.mark.parametrize("grid", [True, False])
@pytest.mark.parametrize("factor", [True, False])
def test_what_if_prices_mi325x_on_the_gfx942_terms_with_or_without_the_carry_factor(rows, tmp_path, grid, factor):
    """``--what-if``'s catalog copy: MI325X's datasheet (256 GiB, its name changed) under the MI300X's fitted fp8
    GEMM terms at CARRIED_GEMM's factor (the stored mi325x terms) or at 1, with or without their grid."""
    from ironlaw.machine import hardware
    from ironlaw.measure.calibrate.kernelfit import rules
    hw = hardware.get(bench.gfx942_terms(next(r for r in rows if r["gpu"] == "mi325x"), tmp_path, grid=grid,
                                         factor=factor))
    assert hw.name == "mi325x-gfx942" + ("" if factor else "-x1") + ("" if grid else "-nogrid")
    assert hw.memory[hw.device_tier].capacity_bytes == 256 * 2 ** 30
    fp8 = hw.calibration.shapes["matmul"]["fp8"]
    own = hardware.get("mi300x").calibration.shapes["matmul"]["fp8"]["eta_max"]
    want = round(own * rules.CARRIED_GEMM["mi325x"][1], 4) if factor else own
    assert fp8["eta_max"] == want
    assert ("grid_log" in fp8) == grid
    if factor and grid:
        assert fp8["eta_max"] == hardware.get("mi325x").calibration.shapes["matmul"]["fp8"]["eta_max"]


def test_what_if_runs_vllm_without_mixed_steps(rows, monkeypatch):
    """``--what-if``'s V0 case prices the row with vLLM's prompt tokens in steps of their own; outside it vLLM mixes."""
    from ironlaw.machine import hardware
    from ironlaw.models.serving import frameworks
    monkeypatch.setattr(bench, "predict", lambda r: frameworks.vllm(hardware.get(r["gpu"]), True).mixed_steps)
    r = next(r for r in rows if r["gpu"] == "mi355x")
    assert bench.unmixed(r) is False and bench.predict(r) is True


def test_h200_nvl_rows_are_priced_on_its_datasheet_and_what_if_carries_the_h200_calibration(rows, tmp_path):
    """The H200 NVL rows (5.1-0005, -0023, -0080) run on the catalog's h200-nvl, which holds no calibration (no
    release tables either: the catalog's kernels); ``--what-if`` prices them on the H200 SXM's calibration laid on
    the NVL's datasheet (600 W, 0.844 of the SXM's Tensor Core peaks), storing nothing."""
    from ironlaw.machine import hardware
    nvl = [r for r in rows if r["gpu"] == "h200-nvl"]
    assert [r["id"] for r in nvl] == ["5.1-0005", "5.1-0023", "5.1-0080"]
    assert all("release" not in bench.serve_kwargs(r) and r["tp"] == 1 for r in nvl)
    assert hardware.get("h200-nvl").calibration is None
    hw = hardware.get(bench.h200_carried(nvl[0], tmp_path))
    assert hw.name == "h200-nvl-h200" and hw.tdp_w == 600
    assert hw.peak_flops["fp8"] == hardware.get("h200-nvl").peak_flops["fp8"]
    assert hw.calibration.shapes["matmul"]["fp8"] == hardware.get("h200").calibration.shapes["matmul"]["fp8"]
