"""A TensorRT-LLM release's own kernel file (catalog/engine/trtllm-<release>/<gpu>.toml): loaded through the checked
path, swapped in by engines.with_engine(hw, "trtllm", release=...), MoE layer terms included."""
import pytest

from ironlaw.core.errors import IronlawError
from ironlaw.machine import engines, hardware

GPUS = ("h100", "h200", "b200", "gb200")         # the 1.0 line's tables: aiconfigurator 0.8.0


def _table(hw, eta: float) -> dict:
    """A small release table: the catalog's fp8 GEMM with another eta_max, and MoE fp8 entries."""
    prov = {"table": "h100_sxm/trtllm/1.0.0rc3/gemm_perf.txt (NVIDIA H100 80GB HBM3)",
            "version": "aiconfigurator 0.8.0 (NVIDIA, PyPI); trtllm 1.0.0rc3", "license": "Apache-2.0",
            "rows_fitted": 10, "rows_held_out": 10, "date": "2026-01-01"}
    gemm = {k: v for k, v in hw.calibration.table()["matmul"]["fp8"].items()}
    return {"schema": "ironlaw.calibration/1", "source": "derived: a test's release table",
            "fitted": ["gemm fp8 (even rows)", "moe fp8 (x): even layer shapes"], "held_out": [],
            "matmul": {"fp8": {**gemm, "eta_max": eta}},
            "kernel": {"moe_grouped_gemm.fp8": {"eta_max": 0.5, "m_half": 0.0, "nk_half": 0.0, "streamed": 0.7,
                                                "serial": 1.0, "latency_s": 2e-5},
                       "moe_rows.fp8": {"memory": 0.3}},
            "provenance": {"gemm fp8": prov, "moe fp8": {**prov, "table": "h100_sxm/trtllm/1.0.0rc3/moe_perf.txt"}}}


@pytest.fixture
def engine_dir(tmp_path, monkeypatch):
    d = tmp_path / "src" / "ironlaw" / "machine" / "catalog" / "engine"
    monkeypatch.setattr(engines, "ENGINE_DIR", d)
    return d


def test_the_release_file_replaces_its_classes_and_keeps_the_rest(engine_dir):
    hw = hardware.get("h100")
    p = engines.write("h100", "trtllm", _table(hw, 0.5), release="1.0")
    assert p == engine_dir / "trtllm-1.0" / "h100.toml"
    hw2, cov = engines.with_engine(hw, "trtllm", release="1.0")
    assert hw2.calibration.shapes["matmul"]["fp8"]["eta_max"] == 0.5 != hw.calibration.shapes["matmul"]["fp8"]["eta_max"]
    assert hw2.calibration.kernel["moe_rows.fp8"] == {"memory": 0.3}
    assert hw2.calibration.shapes["matmul"]["bf16"] == hw.calibration.shapes["matmul"]["bf16"]          # not in the file: kept
    assert cov.release == "1.0" and set(cov.own) == {"gemm fp8", "moe fp8"}
    assert "gemm bf16" in cov.borrowed and "moe fp8" not in cov.borrowed
    assert cov.versions == ("trtllm 1.0.0rc3",)
    assert cov.line().startswith("kernels: trtllm 1.0.0rc3 on h100 (2 kernel classes fitted on its tables); "
                                 "the catalog's for the")
    assert cov.to_dict()["release"] == "1.0"
    assert engines.with_engine(hw, "trtllm")[0] is hw                  # no release named: the catalog's own


def test_a_gpu_without_the_releases_file_keeps_the_catalog(engine_dir):
    hw = hardware.get("a100")
    hw2, cov = engines.with_engine(hw, "trtllm", release="1.0")
    assert hw2 is hw and cov.own == () and "has no TensorRT-LLM 1.0 kernel tables" in cov.line()


def test_a_bad_release_file_is_refused(engine_dir):
    hw = hardware.get("h100")
    bad = _table(hw, 0.5)
    bad["matmul"]["fp8"]["eta_max"] = 7.0
    with pytest.raises(IronlawError, match="eta_max"):
        engines.write("h100", "trtllm", bad, release="1.0")
    p = engines.path("h100", "trtllm", "1.0")
    assert not p.exists()                                     # refused before anything is written
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text('[calibration]\nschema = "ironlaw.calibration/1"\nsource = "derived: x"\nfitted = ["x"]\n'
                 '[calibration.matmul.fp8]\neta_max = 7.0\n')
    with pytest.raises(IronlawError, match="h100.toml: calibration"):
        engines.with_engine(hw, "trtllm", release="1.0")


@pytest.mark.parametrize("engine, release, message", [
    ("trtllm", "0.9", "unknown TensorRT-LLM release '0.9'"),
    ("vllm", "1.0", "vLLM has no kernel release files"),
])
def test_unknown_release_is_one_line(engine, release, message):
    with pytest.raises(IronlawError, match=message) as e:
        engines.with_engine(hardware.get("h100"), engine, release=release)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("gpu", GPUS)
def test_the_stored_release_files_name_their_data(gpu):
    table = engines.load(gpu, "trtllm", "1.0")
    assert table is not None, f"no catalog/engine/trtllm-1.0/{gpu}.toml"
    rc = "1.0.0rc3" if gpu in ("h100", "h200") else "1.0.0rc6"
    for group, prov in table["provenance"].items():
        assert prov["version"].startswith("aiconfigurator 0.8.0 (NVIDIA, PyPI); trtllm ") and rc in prov["version"]
        assert prov["license"] == "Apache-2.0" and prov["rows_fitted"] > 0 and prov["rows_held_out"] > 0
    want = {"gemm bf16", "gemm fp8", "context attention fp8, KV fp8", "generation attention bf16, KV fp8",
            "context mla bf16, KV bf16", "generation mla bf16, KV fp8", "moe bf16", "moe fp8"}
    want |= {"gemm fp4", "moe fp4"} if gpu in ("b200", "gb200") else set()
    assert want <= set(table["provenance"])
    assert "float16 rows, for bf16" in table["provenance"]["gemm bf16"]["table"]
    hw2, cov = engines.with_engine(hardware.get(gpu), "trtllm", release="1.0")
    assert hw2.calibration.kernel["moe_grouped_gemm.fp8"] == table["kernel"]["moe_grouped_gemm.fp8"]
    assert any("sliding window" in g for g in cov.borrowed)       # the 1.0 tables time no window: the catalog's
