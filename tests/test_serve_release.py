"""``serve --engine trtllm --release 1.0``: the kernels of a named TensorRT-LLM release (catalog/engine/trtllm-<release>/
<gpu>.toml) price the steps, the routed experts on that release's fused-MoE tables; the default is unchanged."""
from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from ironlaw import api
from ironlaw.core import schemas
from ironlaw.core.errors import IronlawError
from ironlaw.machine import engines, hardware
from ironlaw.machine.profile import dumps_table
from ironlaw.models.serving import frameworks, step, throughput

DENSE = dict(prompt=1000, output=1000, dtype="fp8")
MOE = dict(prompt=1000, output=1000, dtype="fp8", tp=8, ep=8, attention_dp=True)
OLD = "aiconfigurator 0.8.0 (NVIDIA); trtllm 1.0.0rc3"


def _release_table(gpu: str, stream: float) -> dict:
    """A release file as the fitter writes one: the catalog's terms with the fp8 MoE layer's weight streaming at
    ``stream`` (a slower kernel) and the provenance of the older tables; no bf16 GEMM (a class it lacks), no bf16,
    block-scaled FP8 or weight-only MXFP4 MoE layer (the 1.0 fitter's dtypes: kernel_moe.RELEASE_DTYPES)."""
    t = copy.deepcopy(hardware.get(gpu).calibration.table())
    t["kernel"]["moe_grouped_gemm.fp8"]["streamed"] = stream
    for k in [k for k in t["kernel"] if k.endswith((".bf16", ".fp8_block", ".w4a16_mxfp4")) and k.startswith("moe_")]:
        del t["kernel"][k]
    t["provenance"] = {k: {**v, "version": OLD} for k, v in t["provenance"].items()
                       if k not in ("gemm bf16", "moe bf16", "moe fp8_block", "moe w4a16_mxfp4")}
    t["source"] = "derived: a test release file"
    return t


@pytest.fixture
def release_dir(tmp_path, monkeypatch):
    """catalog/engine/ under ``tmp_path`` holding trtllm-1.0/h100.toml only."""
    root = tmp_path / "src" / "ironlaw" / "machine" / "catalog" / "engine"
    (root / "trtllm-1.0").mkdir(parents=True)
    (root / "trtllm-1.0" / "h100.toml").write_text(dumps_table({"calibration": _release_table("h100", 0.3)}) + "\n")
    monkeypatch.setattr(engines, "ENGINE_DIR", root)
    monkeypatch.setenv("IRONLAW_NO_CACHE", "1")
    return root


def test_unknown_release_is_one_line_and_exit_2(cli):
    r = cli("serve", "llama3-8b", "--on", "h100", "--release", "0.9", "--max-throughput")
    assert r.rc == 2 and "unknown TensorRT-LLM release '0.9'" in r.err and "1.0" in r.err
    assert "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1
    r = cli("serve", "llama3-8b", "--on", "h100", "--engine", "vllm", "--release", "1.0")
    assert r.rc == 2 and "vLLM has no kernel release files" in r.err and len(r.err.strip().splitlines()) == 1


def test_a_gpu_without_the_releases_tables_is_one_line_and_exit_2(cli):
    for args in (("--max-throughput",), ("--concurrency", "8")):
        r = cli("serve", "llama3-8b", "--on", "a100", "--release", "1.0", *args)
        assert r.rc == 2 and "--release 1.0: a100 has no TensorRT-LLM 1.0 kernel tables" in r.err
        assert "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1


def test_the_default_release_is_the_catalogs():
    assert engines.check_release("trtllm", None) is None
    hw = hardware.get("h100")
    assert engines.with_engine(hw, "trtllm")[0] is hw
    base = api.serve("llama3-8b", "h100", max_throughput=True, **DENSE)
    old = throughput.max_throughput("llama3-8b", "h100", 1000, 1000, dtype="fp8")
    assert base.time_s == old.time_s and "release" not in base.to_dict()["engine"]
    assert not base.constants.moe_tables


def test_release_swaps_gemm_attention_and_moe_and_names_what_it_lacks(release_dir):
    hw = hardware.get("h100")
    hw2, cov = engines.with_engine(hw, "trtllm", release="1.0")
    assert cov.release == "1.0" and cov.versions == ("trtllm 1.0.0rc3",)
    assert cov.moe == ("moe_grouped_gemm.fp8", "moe_rows.fp8")
    assert "gemm bf16" in cov.borrowed and "gemm fp8" in cov.own
    assert hw2.calibration.kernel["moe_grouped_gemm.fp8"]["streamed"] == 0.3
    # the catalog's (1.3.0rc20) bf16 MoE layer is not carried into the release: it never prices a 1.0 prediction
    assert "moe_grouped_gemm.bf16" not in hw2.calibration.kernel and "moe bf16" not in hw2.calibration.provenance
    assert hw2.calibration.provenance["gemm fp8"]["version"] == OLD
    assert "trtllm 1.0.0rc3 on h100" in cov.line() and "the catalog's for the" in cov.line()


def test_release_on_another_gpu_is_an_error_naming_who_has_it(release_dir):
    with pytest.raises(IronlawError, match=r"h200 has no TensorRT-LLM 1.0 kernel tables .*h100 has them"):
        frameworks.select("trtllm", "h200", release="1.0")


def test_release_prices_routed_experts_on_its_moe_tables(release_dir):
    eng = frameworks.select("trtllm", "h100", offline=True, release="1.0")
    c = eng.constants(throughput.FITTED)
    assert c.moe_tables and not throughput.FITTED.moe_tables and "1.0's fused-MoE tables" in c.source
    assert step.moe_kernels(eng.hw, "fp8") == ("moe_grouped_gemm.fp8", "moe_rows.fp8", None)
    assert step.moe_kernels(eng.hw, "bf16") == (step.GROUPED_GEMM, None, None)   # a dtype it lacks: the constants
    est = api.serve("qwen3-235b-a22b", "h100", max_throughput=True, release="1.0", **MOE)
    ref = throughput.max_throughput("qwen3-235b-a22b", eng.hw, 1000, 1000, constants=c,
                                    **{k: v for k, v in MOE.items() if k not in ("prompt", "output")})
    assert est.time_s == ref.time_s and est.constants.moe_tables
    # the slower expert weight streaming of the release's table is what moves the cell
    faster = throughput.max_throughput("qwen3-235b-a22b", hardware.get("h100"), 1000, 1000,
                                       constants=replace(throughput.FITTED, moe_tables=True),
                                       **{k: v for k, v in MOE.items() if k not in ("prompt", "output")})
    assert est.time_s > faster.time_s


def test_release_names_engine_release_and_versions_in_json(release_dir):
    d = api.serve("qwen3-235b-a22b", "h100", max_throughput=True, release="1.0", **MOE).to_dict()
    e = d["engine"]
    assert (e["name"], e["release"], e["versions"], e["routed_experts"]) == ("trtllm", "1.0", ["trtllm 1.0.0rc3"],
                                                                             "moe tables")
    assert e["kernels"]["release"] == "1.0" and e["summary"][0].startswith("engine: TensorRT-LLM — kernels:")
    assert any(s.startswith("routed experts: on the 1.0 fused-MoE tables (fp8)") for s in e["summary"])
    schemas.validate(d)
    with pytest.raises(Exception):
        schemas.validate({**d, "engine": {**e, "routed_experts": "guessed"}})


def test_release_online_runs_on_the_release_kernels(release_dir):
    base = api.serve("llama3-8b", "h100", concurrency=16, dtype="fp8")
    rel = api.serve("llama3-8b", "h100", concurrency=16, dtype="fp8", release="1.0")
    assert rel.to_dict()["engine"]["release"] == "1.0" and "release" not in base.to_dict()["engine"]
    assert rel.estimate.hw.calibration.provenance["gemm fp8"]["version"] == OLD
    # the same GEMM and attention terms (the test file keeps them) and a dense model: the same numbers
    assert rel.to_dict()["tokens_per_s"] == pytest.approx(base.to_dict()["tokens_per_s"], rel=1e-9)


def _kernels(est) -> set:
    return {str(k) for _, e in est.steps for k in e.cols.kernels}


def test_release_10_on_h100_changes_the_terms_it_should():
    """The stored TensorRT-LLM 1.0 file (aiconfigurator 0.8.0's 1.0.0rc3 H100 tables): the routed experts run on its
    fused-MoE classes, not the fitted expert constants; GEMM and attention on its classes; the default on neither."""
    eng = frameworks.select("trtllm", "h100", offline=True, release="1.0")
    cal = eng.hw.calibration
    assert {"moe_grouped_gemm.fp8", "moe_rows.fp8"} <= set(eng.kernels.moe)
    for group in ("moe fp8", "gemm fp8", "generation attention bf16, KV fp8"):
        assert "1.0.0rc3" in cal.provenance[group]["version"], group
    assert cal.kernel["moe_grouped_gemm.fp8"] == engines.load("h100", "trtllm", "1.0")["kernel"]["moe_grouped_gemm.fp8"]
    kw = {k: v for k, v in MOE.items() if k not in ("prompt", "output")}
    rel = api.serve("qwen3-235b-a22b", "h100", max_throughput=True, release="1.0", **MOE)
    base = api.serve("qwen3-235b-a22b", "h100", max_throughput=True, **MOE)
    assert {"moe_grouped_gemm.fp8", "moe_rows.fp8"} <= _kernels(rel) and step.GROUPED_GEMM not in _kernels(rel)
    assert step.GROUPED_GEMM in _kernels(base) and "moe_grouped_gemm.fp8" not in _kernels(base)
    assert rel.time_s != base.time_s
    # the same engine, limits and batch: only the kernels' terms move the time
    assert (rel.limits, rel.batch) == (base.limits, base.batch) and rel.constants.moe_tables
    assert base.time_s == throughput.max_throughput("qwen3-235b-a22b", "h100", 1000, 1000, **kw).time_s
    dense = api.serve("llama3-8b", "h100", max_throughput=True, release="1.0", **DENSE)
    assert dense.time_s != api.serve("llama3-8b", "h100", max_throughput=True, **DENSE).time_s
    assert "moe_grouped_gemm.fp8" not in _kernels(dense)


def test_release_10_cli_text_names_the_release(cli):
    r = cli("serve", "llama3-8b", "--on", "h100", "--dtype", "fp8", "--max-throughput", "--release", "1.0")
    assert r.rc == 0, r.err
    text = " ".join(r.out.split())                     # the console wraps long lines
    assert "engine: TensorRT-LLM — kernels: trtllm 1.0.0rc3 on h100" in text
    assert "routed experts: on the 1.0 fused-MoE tables (bf16, fp8)" in text
    assert "engine:" not in cli("serve", "llama3-8b", "--on", "h100", "--dtype", "fp8", "--max-throughput").out
    r = cli("serve", "llama3-8b", "--on", "h200", "--dtype", "fp8", "--concurrency", "8", "--release", "1.0",
            "--format", "json")
    assert r.rc == 0, r.err
    e = r.json()["engine"]
    assert (e["name"], e["release"], e["versions"]) == ("trtllm", "1.0", ["trtllm 1.0.0rc3"])
