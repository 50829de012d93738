"""The devices and dtypes added for today's LLM hardware: Blackwell (Ultra) racks and boards, H20, L40S, RTX PRO 6000,
V100, MI325X/MI355X, TPU v6e, Gaudi 3, Trainium2; NVFP4, MXFP4, MXFP8.

Oracle: tests/data/datasheet_specs_new.csv, the figures AS PRINTED by each vendor table (per rack, per 8-GPU board,
with sparsity), with the source per row. The test converts each printed figure to a per-device dense SI value on its
own (value x unit / devices covered, halved when sparse) and compares it with the catalog within 2 %.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from ironlaw.machine import hardware
from ironlaw.core.errors import IronlawError
from ironlaw.core.graph import DTYPE_BYTES, dtype_bytes
from ironlaw.machine.network import build, collective_time
from ironlaw.machine.network.topology import node_size, nodes_for

CSV = Path(__file__).parent / "data" / "datasheet_specs_new.csv"
TOL = 0.02
NEW = ("h20", "l40s", "rtx-pro-6000", "gb200", "gb300", "b300", "mi325x", "mi355x", "tpu-v6e", "gaudi3", "trn2", "v100")
BLACKWELL = ("b200", "gb200", "gb300", "b300", "rtx-pro-6000")
UNIT = {"TFLOPS": 1e12, "PFLOPS": 1e15, "TOPS": 1e12, "POPS": 1e15, "GB": 2**30, "TB": 1000 * 2**30,   # memory GB read
        "GB/s": 1e9, "TB/s": 1e12, "Gb/s": 1e9 / 8, "W": 1.0, "devices": 1.0}                          # as GiB (catalog)


def _rows() -> list[dict]:
    lines = [ln for ln in CSV.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.startswith("#")]
    return list(csv.DictReader(lines))


def _want(row: dict) -> float:
    """The per-device dense SI value a printed figure stands for."""
    x = float(row["printed"]) * UNIT[row["unit"]] / float(row["per"])
    return x / 2 if row["sparse"] == "yes" else x


def _got(hw: hardware.Hardware, quantity: str) -> float | None:
    dev = hw.memory[hw.device_tier]
    intra = next((l for k in ("nvlink", "xgmi", "ici", "neuronlink", "roce-mesh") for l in hw.links if l.kind == k), None)
    inter = next((l for l in hw.links if l.kind in hardware.NETWORK_KINDS), None)
    return {"vector": hw.vector_flops, "mem": dev.capacity_bytes, "mem_bw": dev.bw_Bps, "tdp": hw.tdp_w,
            "scale_up_bw": 2 * intra.bw_Bps if intra else None,          # the csv's figures are bidirectional
            "scale_up_devices": node_size(hw), "scale_out_bw": inter.bw_Bps if inter else None,
            }.get(quantity, hw.peak_flops.get(quantity))


# ------------------------------------------------------------------ names, files, sources

def test_every_new_device_loads_and_is_listed():
    names = hardware.names()
    assert not [n for n in NEW if n not in names]
    for n in NEW:
        hw = hardware.get(n)
        assert hw.name == n and Path(hw.path).stem == n
        assert hw.memory[hw.device_tier].capacity_bytes >= 16 * 2**30, n
        assert hw.links, f"{n}: a data-center part states its links"


@pytest.mark.parametrize("name", NEW)
def test_every_number_of_a_new_device_has_a_source(name):
    hw = hardware.get(name)
    ok = hardware.SOURCE_PREFIXES
    keys = [f"compute.{d}" for d in hw.peak_flops] + ["vector", "latency", "efficiency"]
    keys += ["power"] if hw.tdp_w is not None else []
    keys += ["features"] if hw.features else []
    for k in keys:
        src = hw.sources[k]
        assert src.startswith(ok) and len(src) > 40, (name, k, src)
        if "sparsity" in src and k.startswith("compute."):       # a sparse figure says how it was made dense
            assert "dense" in src, (name, k, src)
    for t in hw.memory:
        assert t.source.startswith(ok) and t.latency_s is not None, (name, t.name)
    for link in hw.links:
        assert link.source.startswith(ok), (name, link.name)
    assert hw.sources["efficiency"].startswith("estimate:") and hw.sources["latency"].startswith("estimate:")


def test_every_new_device_is_checked_against_the_csv():
    rows = _rows()
    assert all(r["source"].strip() for r in rows), "every csv row names its source"
    for n in NEW:
        mine = {r["quantity"] for r in rows if r["device"] == n}
        assert "mem" in mine and mine & {"bf16", "fp16", "fp8", "fp4"}, f"{n}: csv lacks memory or a matrix peak"
    assert {r["device"] for r in rows} <= set(NEW)


@pytest.mark.parametrize("row", _rows(), ids=lambda r: f"{r['device']}-{r['quantity']}")
def test_catalog_agrees_with_the_printed_datasheet_figure(row):
    hw = hardware.get(row["device"])
    got, want = _got(hw, row["quantity"]), _want(row)
    assert got is not None, f"{hw.name} has no {row['quantity']}; {row['source']} prints {row['printed']} {row['unit']}"
    if row["quantity"] == "mem" and hw.memory[hw.device_tier].source.startswith("measured"):
        assert 0.93 * want <= got < want, f"{hw.name}: a driver's total below the printed size, ECC's 1/16 at most"
        return
    assert got == pytest.approx(want, rel=TOL), f"{hw.name} {row['quantity']}: catalog {got:.4g}, datasheet {want:.4g}"


# ------------------------------------------------------------------ the block-scaled dtypes

@pytest.mark.parametrize("dtype,value_bits,block,scale_bits", [
    ("fp4", 4, 16, 8),       # NVFP4: E2M1 values, one E4M3 scale per 16
    ("mxfp4", 4, 32, 8),     # OCP MX: E2M1 values, one E8M0 scale per 32
    ("mxfp8", 8, 32, 8),     # OCP MX: E4M3/E5M2 values, one E8M0 scale per 32
])
def test_block_scaled_bytes_count_their_scales(dtype, value_bits, block, scale_bits):
    n = 4096 * 14336                                   # a Llama-3-8B MLP weight, counted by hand
    values, scales = n * value_bits / 8, (n // block) * scale_bits / 8
    assert n * dtype_bytes(dtype) == values + scales
    assert DTYPE_BYTES["int4"] < DTYPE_BYTES["mxfp4"] < DTYPE_BYTES["fp4"] < DTYPE_BYTES["fp8"] < DTYPE_BYTES["mxfp8"]


@pytest.mark.parametrize("name", BLACKWELL)
def test_blackwell_runs_mx_formats_at_the_fp4_and_fp8_rates(name):
    p = hardware.get(name).peak_flops
    assert p["mxfp4"] == p["fp4"] and p["mxfp8"] == p["fp8"]
    assert p["fp4"] >= 2 * p["fp8"] * 0.99                # FP4 at least twice FP8 (Blackwell Ultra: three times)


def test_blackwell_ultra_fp4_gain_and_int8_cut():
    b200, b300, gb300 = (hardware.get(n).peak_flops for n in ("b200", "b300", "gb300"))
    assert b300["fp4"] / b200["fp4"] == pytest.approx(1.5, rel=0.02)     # 13.5 vs 9 PFLOPS dense
    assert b300["fp8"] == b200["fp8"] and b300["int8"] < b200["int8"] / 20 and gb300["int8"] < gb300["bf16"] / 10


def test_cdna4_has_mx_but_not_nvfp4():
    hw = hardware.get("mi355x")
    assert hw.peak("mxfp4") == pytest.approx(2 * hw.peak("mxfp8"), rel=0.02) and hw.peak("mxfp8") == hw.peak("fp8")
    with pytest.raises(IronlawError, match="use --dtype mxfp4"):
        hw.peak("fp4")


@pytest.mark.parametrize("name,dtype", [
    ("h100", "fp4"), ("h100", "mxfp4"), ("h100", "mxfp8"), ("h200", "fp4"), ("h20", "fp4"), ("a100", "mxfp4"),
    ("l40s", "fp4"), ("l40s", "mxfp8"), ("v100", "bf16"), ("v100", "fp8"), ("v100", "tf32"), ("mi325x", "fp4"),
    ("mi325x", "mxfp4"), ("mi300x", "mxfp8"), ("mi355x", "fp4"), ("mi355x", "tf32"), ("tpu-v6e", "fp8"),
    ("tpu-v6e", "fp4"), ("gaudi3", "fp4"), ("gaudi3", "fp32"), ("trn2", "fp4"), ("trn2", "mxfp4"),
])
def test_a_dtype_the_device_lacks_is_one_clear_line(name, dtype):
    hw = hardware.get(name)
    with pytest.raises(IronlawError) as e:
        hw.peak(dtype)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{name} has no {dtype} ") and "its dtypes: " in msg
    have = msg.split("its dtypes: ")[1].split(")")[0].split(", ")
    assert have == [d for d in hardware.DTYPES if d in hw.peak_flops]


def test_mx_on_a_device_without_mx_points_to_dequantized_weights():
    msg = hardware.get("h100").lacks("mxfp4")
    assert "tensor cores" in msg and "--dtype bf16" in msg and "quant=mxfp4" in msg


# ------------------------------------------------------------------ NVLink domains larger than a node

def test_nvl72_keeps_64_gpus_on_nvlink_and_an_8_gpu_board_does_not():
    gb200, b200 = hardware.get("gb200"), hardware.get("b200")
    assert node_size(gb200) == 72 and node_size(b200) == 8
    t_gb = build(gb200, 64, nodes_for(gb200, 64))
    t_b = build(b200, 64, nodes_for(b200, 64))
    assert (t_gb.nodes, t_gb.intra.kind, t_gb.inter) == (1, "nvlink", None)
    assert (t_b.nodes, t_b.intra.kind, t_b.inter.kind) == (8, "nvlink", "infiniband")
    n, ring = 1e9, 2 * 63 / 64
    _, b_gb = collective_time("allreduce", n, t_gb)
    _, b_b = collective_time("allreduce", n, t_b)
    # on the NVL72 the ring runs at NVLink speed, β = 2(p-1)/p · n / (η · 900 GB/s), η the estimate (0.5-1)
    eta = ring * n / (float(b_gb) * 900e9)
    assert 0.5 < eta <= 1.0
    # 8 HGX B200 boards: a ring crosses each board's 8 InfiniBand ports (8 x 50 GB/s), never faster than them
    assert float(b_b) >= ring * n / (8 * 50e9) and float(b_b) > 1.5 * float(b_gb)


def test_nvl72_expert_all_to_all_over_72_gpus_stays_on_nvlink_and_144_cross_the_network():
    gb200 = hardware.get("gb200")
    t72 = build(gb200, 72, nodes_for(gb200, 72))
    assert t72.nodes == 1 and t72.inter is None
    t144 = build(gb200, 144, nodes_for(gb200, 144))
    assert t144.nodes == 2 and t144.inter.kind == "infiniband" and t144.nics_per_node == 72
    _, b72 = collective_time("alltoall", 1e9, t72)
    _, b144 = collective_time("alltoall", 1e9, t144)
    assert float(b144) > 5 * float(b72)
    with pytest.raises(IronlawError, match="at most 72"):
        build(gb200, 144, 1)


def test_gb300_scale_out_is_connectx8_per_gpu():
    t = build(hardware.get("gb300"), 144, 2)
    assert t.inter.bw_Bps == 100e9 and t.nics_per_node == 72


# ------------------------------------------------------------------ the CLI

def test_cli_fp4_on_hopper_is_one_line_exit_2(cli):
    r = cli("analyze", "gemm:4096,4096,4096", "--on", "h100", "--dtype", "fp4")
    assert r.rc == 2 and r.out == ""
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and "h100 has no fp4 tensor cores (its dtypes: " in lines[0] and "Traceback" not in r.err


def test_cli_fp4_on_blackwell_runs_at_the_fp4_peak(cli):
    r = cli("analyze", "gemm:8192,8192,8192", "--on", "gb200", "--dtype", "fp4", "--format", "json")
    assert r.rc == 0, r.err
    doc = r.json()
    flops = 2 * 8192**3
    assert doc["time_s"] >= flops / 10e15                          # never faster than the dense FP4 peak
    fp4 = hardware.get("gb200").calibration.shape("matmul")["fp4"]   # fitted on GB200's measured NVFP4 GEMMs
    from ironlaw.core.gemmshape import gemm_eta, grid_factor
    eta = float(gemm_eta(fp4, 8192, 8192, 8192)) / float(grid_factor(fp4, 8192.0, 8192.0, 8192.0, 1.0))  # and its grid
    assert doc["terms"]["compute_s"] == pytest.approx(flops / (10e15 * eta),
                                                      rel=1e-6)


def test_cli_hardware_list_shows_the_new_names(cli):
    r = cli("hardware", "list", "--format", "json")
    assert r.rc == 0, r.err
    listed = {d["name"] for d in r.json()["devices"]}
    assert set(NEW) <= listed
    r = cli("hardware", "list")
    assert r.rc == 0 and all(n in r.out for n in NEW)


def test_cli_allreduce_on_nvl72_vs_hgx(cli):
    on_gb = cli("analyze", "allreduce:1GB", "--on", "gb200", "--gpus", "64", "--format", "json")
    assert on_gb.rc == 0, on_gb.err
    on_b = cli("analyze", "allreduce:1GB", "--on", "b200", "--gpus", "64", "--nodes", "8", "--format", "json")
    assert on_b.rc == 0, on_b.err
    assert on_b.json()["time_s"] > 1.5 * on_gb.json()["time_s"]
    r = cli("analyze", "allreduce:1GB", "--on", "b200", "--gpus", "64")
    assert r.rc == 2 and len(r.err.strip().splitlines()) == 1 and "--nodes 8" in r.err
    assert math.isfinite(on_gb.json()["time_s"])
