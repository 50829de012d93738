"""The catalog devices MLPerf Inference v5.1 named and the catalog lacked: H200 NVL, H100 NVL, GH200 (96 GB HBM3 and
144 GB HBM3e), Intel Arc Pro B60. Oracle: tests/data/datasheet_specs_gaps.csv, each NVIDIA datasheet figure as printed, converted here to
the per-device dense SI value and compared within 2 %. Each is datasheet-only: no kernel calibration is carried from
the SXM part it shares a die with, none fitted for the B60 (its coverage line says so)."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from ironlaw.machine import hardware

CSV = Path(__file__).parent / "data" / "datasheet_specs_gaps.csv"
HOPPER = ("h200-nvl", "h100-nvl", "gh200-96gb", "gh200-144gb")
GAPS = (*HOPPER, "b60")
UNIT = {"TFLOPS": 1e12, "TOPS": 1e12, "GB": 2**30, "TB/s": 1e12, "GB/s": 1e9, "W": 1.0}


def _rows() -> list[dict]:
    lines = [ln for ln in CSV.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.startswith("#")]
    return list(csv.DictReader(lines))


def _got(hw, quantity: str) -> float | None:
    dev = hw.memory[hw.device_tier]
    nvlink = next((link for link in hw.links if link.kind == "nvlink"), None)
    return {"vector": hw.vector_flops, "mem": dev.capacity_bytes, "mem_bw": dev.bw_Bps, "tdp": hw.tdp_w,
            "scale_up_bw": 2 * nvlink.bw_Bps if nvlink else None}.get(quantity, hw.peak_flops.get(quantity))


@pytest.mark.parametrize("row", _rows(), ids=lambda r: f"{r['device']}-{r['quantity']}")
def test_catalog_agrees_with_the_printed_datasheet_figure(row):
    want = float(row["printed"]) * UNIT[row["unit"]] / float(row["per"]) / (2 if row["sparse"] == "yes" else 1)
    got = _got(hardware.get(row["device"]), row["quantity"])
    assert got == pytest.approx(want, rel=0.02), f"{row['device']} {row['quantity']}: {got:.4g} vs {want:.4g}"


def test_every_gap_is_listed_checked_and_sourced():
    rows = _rows()
    assert {r["device"] for r in rows} == set(GAPS)
    for name in GAPS:
        hw = hardware.get(name)
        assert name in hardware.names() and hw.kind == "gpu" and hw.calibration is None
        assert {r["quantity"] for r in rows if r["device"] == name} >= {"mem", "mem_bw", "tdp"}
        for k, src in hw.sources.items():
            assert src.startswith(hardware.SOURCE_PREFIXES) and len(src) > 40, (name, k)
        for t in hw.memory:
            assert t.source.startswith(hardware.SOURCE_PREFIXES), (name, t.name)


@pytest.mark.parametrize("name,sxm", [("h200-nvl", "h200"), ("h100-nvl", "h100"), ("gh200-144gb", "h200"),
                                      ("gh200-96gb", "h100")])
def test_datasheet_only_no_calibration_carried_from_the_sxm_part(name, sxm):
    hw, own = hardware.get(name), hardware.get(sxm)
    assert own.calibration is not None and hw.calibration is None
    assert "datasheet-only" in Path(hw.path).read_text()


def test_nvl_parts_are_the_sxm_die_at_lower_clocks_and_the_same_or_more_memory():
    for nvl, sxm in (("h200-nvl", "h200"), ("h100-nvl", "h100")):
        a, b = hardware.get(nvl), hardware.get(sxm)
        ratio = a.peak_flops["bf16"] / b.peak_flops["bf16"]
        assert 0.8 < ratio < 0.9 and a.peak_flops["fp8"] / b.peak_flops["fp8"] == pytest.approx(ratio, rel=1e-3)
        assert a.memory[a.device_tier].bw_Bps >= b.memory[b.device_tier].bw_Bps and a.tdp_w < b.tdp_w
    assert hardware.get("h200-nvl").memory[hardware.get("h200-nvl").device_tier].capacity_bytes == 141 * 2**30


def test_gh200_reaches_grace_memory_over_nvlink_c2c():
    for name in ("gh200-96gb", "gh200-144gb"):
        hw = hardware.get(name)
        host = next(t for t in hw.memory if t.role == "host")
        assert host.capacity_bytes == 480 * 2**30 and host.bw_Bps == 450e9     # C2C 900 GB/s both ways
        assert host.bw_Bps > 5 * next(link for link in hw.links if link.kind == "pcie").bw_Bps


def test_cli_names_them(cli):
    r = cli("hardware", "list", "--format", "json")
    assert r.rc == 0 and set(GAPS) <= {d["name"] for d in r.json()["devices"]}
    r = cli("serve", "llama3-8b", "--on", "h200-nvl", "--concurrency", "8", "--format", "json")
    assert r.rc == 0, r.err


def test_hopper_parts_carry_132_sms_and_fp8():
    for name in HOPPER:
        hw = hardware.get(name)
        assert hw.sms == 132 and "fp8" in hw.peak_flops


def test_b60_is_an_intel_gpu_without_fp8_served_by_vllm(cli):
    from ironlaw.machine.engines import default_for
    hw = hardware.get("arc-pro-b60")
    assert hw.name == "b60" and default_for(hw) == "vllm" and "fp8" not in hw.peak_flops
    assert hw.peak_flops["bf16"] == pytest.approx(hw.peak_flops["int8"] / 2, rel=0.01)
    r = cli("analyze", "llama3-8b", "--on", "b60", "--dtype", "fp8")
    assert r.rc == 2 and "fp8" in r.err and len(r.err.strip().splitlines()) == 1
