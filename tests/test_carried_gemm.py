"""A GPU's GEMM terms carried from another catalog GPU's fit (kernelfit.rules.CARRIED_GEMM, kernelfit.carried): the
compute rate scaled by the rule's factor, the rest as fitted, and the carry named wherever the terms are read."""
import pytest

from ironlaw.core.errors import IronlawError
from ironlaw.machine import engines, hardware
from ironlaw.measure.calibrate.kernelfit import carried, rules

SOURCE = {"schema": "ironlaw.calibration/1", "source": "derived: fitted", "fitted": ["gemm fp8 (even rows)",
          "context attention bf16 (even rows)"], "held_out": ["gemm fp8 (odd rows)"],
          "matmul": {"fp8": {"eta_max": 0.5, "m_half": 98.0, "streamed": 0.2, "latency_s": 3e-6,
                             "grid_nodes": [[1.0, 4.0], [256.0], [256.0], [1.0]], "grid_log": "10 -20"}},
          "kernel": {"attention_context_bf16_kv_bf16": {"eta_max": 0.3}},
          "provenance": {"gemm fp8": {"table": "t.csv", "version": "v; x 1", "license": "MIT", "rows_fitted": 4,
                                      "rows_held_out": 4, "date": "2026-12-07"},
                         "context attention bf16": {"table": "a.csv", "version": "v", "license": "MIT",
                                                    "rows_fitted": 4, "rows_held_out": 4, "date": "2026-12-07"}}}


def test_carried_scales_the_compute_rate_alone_and_names_its_source():
    src, factor = rules.CARRIED_GEMM["mi325x"]
    out = carried.carried(SOURCE, "mi325x")
    fp8 = out["matmul"]["fp8"]
    assert fp8["eta_max"] == round(0.5 * factor, 4) and factor == pytest.approx(1519 / 1273)
    assert {k: v for k, v in fp8.items() if k != "eta_max"} == \
        {k: v for k, v in SOURCE["matmul"]["fp8"].items() if k != "eta_max"}
    assert SOURCE["matmul"]["fp8"]["eta_max"] == 0.5                       # the source's table untouched
    assert set(out["provenance"]) == {"gemm fp8"} and "kernel" not in out     # GEMM classes only
    assert out["provenance"]["gemm fp8"]["carried_from"].startswith(f"{src}, compute x {factor:.3f}")
    assert out["fitted"] == ["gemm fp8 (even rows)"] and "CARRIED_GEMM" in out["source"]


def test_carried_refuses_a_gpu_without_a_rule_and_a_table_without_gemms():
    with pytest.raises(IronlawError, match="no kernelfit.rules.CARRIED_GEMM entry"):
        carried.carried(SOURCE, "mi355x")
    with pytest.raises(IronlawError, match="no GEMM class"):
        carried.carried({"matmul": {}}, "mi325x")


def test_the_catalog_mi325x_holds_the_mi300x_fp8_terms_carried_and_its_engine_line_says_so():
    mi300x, mi325x = hardware.get("mi300x").calibration, hardware.get("mi325x").calibration
    regenerated = _amd_kernels().with_moe(hardware.get("mi325x"), carried.carried(mi300x.table(), "mi325x"))
    assert mi325x.table() == regenerated        # amd_kernels.py --write: the carried GEMMs, its own MoE classes kept
    _, cov = engines.with_engine(hardware.get("mi325x"), "vllm")
    assert "gemm fp8 fitted on aiter e4048607 tables, carried from mi300x, compute x 1.193" in cov.source


def _amd_kernels():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import amd_kernels
    return amd_kernels


def _hip_line(m, n, k, a_type, us, trans="T"):
    """One hipblaslt-bench CSV line: the fields ``amd_kernels.HIP_FIELDS`` reads, the rest placeholders."""
    f = ["0"] * 38
    f[0], f[1], f[4], f[5], f[6], f[17], f[33], f[34], f[36] = trans, "N", m, n, k, a_type, us, "gfx942", "304"
    return "    " + ",".join(str(x) for x in f)


def test_hipblaslt_rows_read_tokens_as_m_and_keep_each_shapes_fastest(tmp_path):
    """A hipBLASLt tuning file (transA T): its m is the output features and its n the tokens, so gemm:M,N,K is
    (n, m, k); a shape timed twice keeps its fastest time; other inputs and layouts are left out."""
    path = tmp_path / "tuning.txt"
    path.write_text("\n".join(["Git Version: 0000000", _hip_line(10240, 688, 8192, "f8_fnuz_r", 110.0),
                               _hip_line(10240, 688, 8192, "f8_fnuz_r", 100.5),
                               _hip_line(8192, 16, 8192, "bf16_r", 20.0), _hip_line(8192, 16, 8192, "i8_r", 9.0),
                               _hip_line(8192, 32, 8192, "f8_fnuz_r", 9.0, trans="N")]))
    assert _amd_kernels().hipblaslt_rows(path) == [("bfloat16", 16, 8192, 8192, 20.0), ("fp8", 688, 10240, 8192, 100.5)]


def test_hipblaslt_what_if_refuses_a_missing_file_and_a_write_in_one_line(tmp_path, monkeypatch, capsys):
    ak = _amd_kernels()
    for argv, why in ((["--gpu", "mi325x", "--hipblaslt", str(tmp_path / "none.txt")], "no such file"),
                      (["--gpu", "mi325x", "--hipblaslt", str(tmp_path / "none.txt"), "--write"], "one --gpu")):
        monkeypatch.setattr("sys.argv", ["amd_kernels.py", *argv])
        with pytest.raises(SystemExit) as e:
            ak.main()
        assert e.value.code == 2 and why in capsys.readouterr().err
