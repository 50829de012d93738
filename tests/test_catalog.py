"""The hardware catalog checked against outside numbers and physical invariants, and through the CLI.

Oracles: tests/data/datasheet_specs.csv, peak specs from vendor datasheets
(its header lines carry the sources): every value it gives must agree with the catalog
within 2 %, except the deliberate disagreements listed in DISAGREE with their reasons. And
tests/data/gpu_memory_reported.csv: device memory as drivers report it on real parts.

Units: a vendor "GB" of DRAM or HBM is binary (80 GB of HBM = 5 stacks x 16 GiB; nvidia-smi shows 81,559 MiB
on an H100 80 GB, more than 80e9 bytes), so memory capacities are compared in GiB; storage stays decimal.
"""
from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import pytest

from ironlaw.machine import hardware
from ironlaw.core.errors import IronlawError

CSV = Path(__file__).parent / "data" / "datasheet_specs.csv"
REPORTED = Path(__file__).parent / "data" / "gpu_memory_reported.csv"
TOL = 0.02

REQUIRED = ("a100", "a100-40gb", "h100", "h100-pcie", "h200", "b200", "mi300x", "mi250x", "tpu-v4", "tpu-v5e",
            "tpu-v5p", "l4", "t4", "rtx-4090", "jetson-agx-orin", "apple-m2", "apple-m3-max", "xeon-8480",
            "xeon-8592", "epyc-9654", "gb10")

# csv row -> catalog name
ROWS = {
    "NVIDIA A100-SXM4-80GB": "a100",
    "NVIDIA A100-SXM4-40GB": "a100-40gb",
    "NVIDIA H100-SXM5-80GB": "h100",
    "NVIDIA H200-SXM-141GB": "h200",
    "NVIDIA B200 (HGX 1000 W)": "b200",
    "AMD Instinct MI300X": "mi300x",
    "Google TPU v4": "tpu-v4",
    "Google TPU v5e": "tpu-v5e",
    "Google TPU v5p": "tpu-v5p",
    "NVIDIA Jetson AGX Orin 64GB": "jetson-agx-orin",
    "Apple M2 (10-core GPU)": "apple-m2",
    "Apple M2 Ultra (76-core GPU)": "apple-m2-ultra",
    "Intel Xeon Platinum 8480+ (SPR) per socket": "xeon-8480",
    "Intel Xeon Platinum 8592+ (EMR) per socket": "xeon-8592",
    "AMD EPYC 9654 (Genoa) per socket": "epyc-9654",
    "NVIDIA GB10 (DGX Spark)": "gb10",
}
SKIPPED_ROWS = {
    "Apple M3 (10-core GPU)": "the catalog carries the M3 Max (40-core GPU, 400 GB/s), not the base M3",
}

# (csv row, column) -> (the value the catalog holds, in the csv's unit; None = deliberately absent, reason)
DISAGREE = {
    ("NVIDIA B200 (HGX 1000 W)", "fp32_vector_TFLOPS"):
        (75.0, "NVIDIA's HGX B200 spec table prints 75 TFLOPS FP32 per GPU; the csv's 80 comes from an earlier "
               "technical brief via a secondary page"),
    ("Google TPU v4", "TDP_W"):
        (192.0, "the csv cell is Google's measured min/mean/max 90/170/192 W; the catalog keeps the maximum"),
    ("NVIDIA Jetson AGX Orin 64GB", "int8_TOPS"):
        (85.0, "the csv's 275 is the sparse total of GPU (170) and two DLAs (105); the catalog keeps the GPU's "
               "dense rate, 170 / 2, because PyTorch runs on the GPU only"),
    ("Apple M2 (10-core GPU)", "int8_TOPS"):
        (None, "15.8 TOPS is the Neural Engine, which PyTorch cannot use; the GPU has no int8 matrix path"),
    ("Apple M2 Ultra (76-core GPU)", "int8_TOPS"):
        (None, "31.6 TOPS is the Neural Engine, which PyTorch cannot use"),
    ("Intel Xeon Platinum 8480+ (SPR) per socket", "mem_GB"):
        (512.0, "the csv gives the socket's maximum (4 TB); the catalog models one 64 GB RDIMM per channel"),
    ("AMD EPYC 9654 (Genoa) per socket", "mem_GB"):
        (768.0, "the csv gives the socket's maximum (6 TB); the catalog models one 64 GB RDIMM per channel"),
}
# '-' in a compute column of a row that has compute numbers means the device lacks the dtype, except:
DISAGREE_ABSENT = {
    ("Google TPU v5p", "fp8"): "Google's current v5p spec table lists peak FP8 459 TFLOPs (the bf16 rate)",
    ("NVIDIA Jetson AGX Orin 64GB", "tf32"): "the csv leaves Orin's TF32 blank; Ampere Tensor Cores run TF32 "
                                              "(derived at half the FP16 rate)",
}

COMPUTE_COLUMNS = {"tf32_TFLOPS": "tf32", "bf16_fp16_TFLOPS": "bf16", "fp8_TFLOPS": "fp8", "int8_TOPS": "int8",
                   "fp4_TFLOPS": "fp4"}
ABSENCE_COLUMNS = {"tf32_TFLOPS": "tf32", "fp8_TFLOPS": "fp8", "fp4_TFLOPS": "fp4"}


def _rows() -> list[dict]:
    lines = [ln for ln in CSV.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.startswith("#")]
    return list(csv.DictReader(lines))


def cell(text: str) -> float | None:
    """The number a csv cell states, in the column's unit: '-' -> None; '~42.5 …' -> 42.5; 'a-b' -> b (the top
    of a range); 'up to 4 TB' -> 4096 (memory GB are GiB); text without a leading number -> None."""
    t = text.strip()
    if t in ("", "-"):
        return None
    t = t.lstrip("~").strip()
    for prefix in ("up to ", "measured "):
        if t.lower().startswith(prefix):
            t = t[len(prefix):]
    m = re.match(r"(\d+(?:\.\d+)?)(?:\s*-\s*(\d+(?:\.\d+)?))?\s*(TB|GiB|GB)?\b", t)
    if not m:
        return None
    x = float(m.group(2) or m.group(1))
    return x * (1024.0 if m.group(3) == "TB" else 1.0)


def _catalog_value(hw: hardware.Hardware, column: str) -> float | None:
    """The catalog's number for a csv column, in the csv's unit (TFLOPS, TOPS, GiB, GB/s, W)."""
    dev = hw.memory[hw.device_tier]
    if column == "fp32_vector_TFLOPS":
        return hw.vector_flops / 1e12
    if column in COMPUTE_COLUMNS:
        d = COMPUTE_COLUMNS[column]
        return hw.peak_flops[d] / 1e12 if d in hw.peak_flops else None
    if column == "mem_GB":
        return dev.capacity_bytes / 2**30
    if column == "mem_BW_GBps":
        return dev.bw_Bps / 1e9
    if column == "TDP_W":
        return hw.tdp_w
    raise KeyError(column)


def _checks() -> list[tuple[str, str, float]]:
    out = []
    for row in _rows():
        if row["device"] not in ROWS:
            continue
        for col in ("fp32_vector_TFLOPS", *COMPUTE_COLUMNS, "mem_GB", "mem_BW_GBps", "TDP_W"):
            v = cell(row[col])
            if v is not None:
                out.append((row["device"], col, v))
    return out


# ------------------------------------------------------------------ names, files, aliases

def test_required_names_exist_and_every_file_loads():
    names = hardware.names()
    assert len(names) >= 20
    missing = [n for n in REQUIRED if n not in names]
    assert not missing, f"catalog lacks {missing}"
    assert "local" not in names, "'local' is reserved for the newest measured profile"
    for n in names:
        hw = hardware.get(n)
        assert hw.name == n == Path(hw.path).stem
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", n), n


def test_aliases_do_not_collide_and_resolve():
    seen: dict[str, str] = {n: n for n in hardware.names()}
    for hw in hardware.catalog():
        for a in hw.aliases:
            assert a == a.lower() and a != "local", a
            assert a not in seen, f"alias {a!r} of {hw.name} collides with {seen[a]}"
            seen[a] = hw.name
    # alias lookup parses the whole catalog, so resolve a few rather than all
    for alias, name in (("h100-sxm", "h100"), ("a100-sxm4-80gb", "a100"), ("dgx-spark", "gb10"), ("SPR", "xeon-8480")):
        assert hardware.get(alias).name == name


@pytest.mark.parametrize("name,title_words,capacity_bytes,bw_Bps", [
    ("h100", ("H100", "SXM"), 81559 * 2**20, 3.35e12),     # nvidia-smi totals, see the tiers' sources
    ("a100", ("A100", "SXM"), 80 * 2**30, 2.039e12),
    ("h200", ("H200", "SXM"), 143771 * 2**20, 4.8e12),
])
def test_headline_names_are_the_sxm_parts(name, title_words, capacity_bytes, bw_Bps):
    hw = hardware.get(name)
    assert all(w in hw.title for w in title_words), hw.title
    dev = hw.memory[hw.device_tier]
    assert dev.capacity_bytes == pytest.approx(capacity_bytes, rel=1e-9)
    assert dev.bw_Bps == pytest.approx(bw_Bps, rel=1e-9)


# ------------------------------------------------------------------ against the datasheet csv

def test_every_csv_row_is_mapped_or_skipped_with_a_reason():
    devices = [r["device"] for r in _rows()]
    assert len(devices) >= 15
    unmapped = [d for d in devices if d not in ROWS and d not in SKIPPED_ROWS]
    assert not unmapped, f"new csv rows need a catalog name in ROWS: {unmapped}"
    assert set(ROWS.values()) <= set(hardware.names())
    assert all(k[0] in devices for k in DISAGREE), "a DISAGREE entry names a row the csv no longer has"


@pytest.mark.parametrize("device,column,csv_value", _checks(), ids=lambda x: str(x)[:40])
def test_catalog_agrees_with_datasheet_csv(device, column, csv_value):
    hw = hardware.get(ROWS[device])
    got = _catalog_value(hw, column)
    if (device, column) in DISAGREE:
        want, reason = DISAGREE[(device, column)]
        assert reason
        if want is None:
            assert got is None, f"{hw.name} {column}: expected absent ({reason})"
        else:
            assert got == pytest.approx(want, rel=TOL), f"{hw.name} {column}: {got} ({reason})"
        return
    assert got is not None, f"{hw.name} has no value for {column}; csv says {csv_value}"
    assert got == pytest.approx(csv_value, rel=TOL), f"{hw.name} {column}: catalog {got}, csv {csv_value}"
    if column == "bf16_fp16_TFLOPS" and "fp16" in hw.peak_flops:
        assert hw.peak_flops["fp16"] / 1e12 == pytest.approx(csv_value, rel=TOL)


def test_dtypes_the_csv_marks_absent_are_absent():
    checked = 0
    for row in _rows():
        if row["device"] not in ROWS:
            continue
        if all(cell(row[c]) is None for c in ("fp32_vector_TFLOPS", *COMPUTE_COLUMNS)):
            continue            # no compute numbers at all: '-' means unknown, not absent
        hw = hardware.get(ROWS[row["device"]])
        for col, dtype in ABSENCE_COLUMNS.items():
            if row[col].strip() != "-":
                continue
            if (row["device"], dtype) in DISAGREE_ABSENT:
                assert dtype in hw.peak_flops
                continue
            checked += 1
            with pytest.raises(IronlawError, match=dtype):
                hw.peak(dtype)
    assert checked >= 15


_LINK_PATTERNS = (   # csv interconnect text -> (link kind, per-direction GB/s)
    (r"NVLink\d\s+(\d+)\s*GB/s", "nvlink", lambda x: x / 2),
    (r"PCIe Gen\d\s+(\d+)\s*GB/s", "pcie", lambda x: x / 2),
    (r"XGMI\)\s*~?(\d+)\s*GB/s", "xgmi", lambda x: x / 2),
    (r"ICI (\d+) Gbps", "ici", lambda x: x / 8),
)


def test_links_agree_with_datasheet_csv():
    checked = 0
    for row in _rows():
        if row["device"] not in ROWS:
            continue
        hw = hardware.get(ROWS[row["device"]])
        for pattern, kind, per_direction in _LINK_PATTERNS:
            m = re.search(pattern, row["interconnect"])
            if m:
                want = per_direction(float(m.group(1))) * 1e9
                assert hw.link(kind).bw_Bps == pytest.approx(want, rel=TOL), (hw.name, kind)
                checked += 1
    assert checked >= 10


# ------------------------------------------------------------------ dtypes the silicon lacks

@pytest.mark.parametrize("name,dtype", [
    ("a100", "fp8"), ("a100-40gb", "fp8"), ("a100-pcie", "fp8"), ("a100", "fp4"),
    ("t4", "bf16"), ("t4", "tf32"), ("t4", "fp8"),
    ("h100", "fp4"), ("h100", "int4"), ("h200", "int4"), ("mi250x", "tf32"), ("mi250x", "fp8"),
    ("mi300x", "int4"), ("mi300x", "fp4"), ("tpu-v4", "fp32"), ("tpu-v4", "fp16"), ("tpu-v5e", "fp8"),
    ("epyc-9654", "fp16"), ("jetson-agx-orin", "fp8"), ("l4", "fp4"), ("rtx-4090", "fp4"),
    ("apple-m2", "int8"), ("xeon-8480", "fp8"),
])
def test_lacking_dtype_is_an_error(name, dtype):
    hw = hardware.get(name)
    with pytest.raises(IronlawError) as e:
        hw.peak(dtype)
    msg = str(e.value)
    assert name in msg and dtype in msg and "\n" not in msg


# ------------------------------------------------------------------ sources

def test_every_number_has_a_source():
    prefixes = hardware.SOURCE_PREFIXES
    for hw in hardware.catalog():
        keys = [f"compute.{d}" for d in hw.peak_flops] + ["vector", "latency", "efficiency"]
        keys += ["power"] if hw.tdp_w is not None else []
        keys += ["features"] if hw.features else []
        for k in keys:
            assert hw.sources.get(k, "").startswith(prefixes), (hw.name, k)
        for t in hw.memory:
            assert t.source.startswith(prefixes), (hw.name, t.name)
        for link in hw.links:
            assert link.source.startswith(prefixes), (hw.name, link.name)
        # defaults that are guesses say so
        assert hw.sources["efficiency"].startswith("estimate:"), hw.name
        assert hw.sources["latency"].startswith(("estimate:", "measured")), hw.name


def test_sparse_datasheet_numbers_are_halved_and_say_so():
    for hw in hardware.catalog():
        for d in hw.peak_flops:
            src = hw.sources[f"compute.{d}"].lower()
            if "sparsity" in src and "datasheet" in src and "no sparse" not in src:
                assert "half" in src or "dense" in src, (hw.name, d, src)


# ------------------------------------------------------------------ physical sanity

def _all():
    return hardware.catalog()


# (device, slower narrow dtype): the silicon really is slower there, with the reason
NARROW_BUT_SLOWER = {
    ("b300", "int8"): "Blackwell Ultra cut INT8 Tensor Core throughput to 1/12 of BF16 to make room for dense NVFP4",
    ("gb300", "int8"): "Blackwell Ultra cut INT8 Tensor Core throughput to 1/15 of BF16 to make room for dense NVFP4",
}


def test_narrower_dtypes_are_not_slower():
    chains = (("fp64", "fp32", "tf32", "bf16", "fp8", "fp4"), ("fp32", "fp16", "fp8"), ("bf16", "int8", "int4"),
              ("fp8", "mxfp8", "mxfp4"))
    for hw in _all():
        p = hw.peak_flops
        for chain in chains:
            have = [d for d in chain if d in p]
            for a, b in zip(have, have[1:]):
                if (hw.name, b) in NARROW_BUT_SLOWER:
                    assert p[b] < p[a], f"{hw.name}: {NARROW_BUT_SLOWER[(hw.name, b)]}, yet {b} is not slower"
                    continue
                assert p[a] <= p[b] * (1 + 1e-9), f"{hw.name}: {a} {p[a]:g} > {b} {p[b]:g}"
        if "fp32" in p:
            assert p["fp32"] >= hw.vector_flops * (1 - 1e-9), hw.name   # matmul can always run on the vector unit
        assert hw.vector_flops <= max(p.values()) * (1 + 1e-9), hw.name


def test_machine_balance_tiers_latency_power_are_physical():
    for hw in _all():
        dev = hw.memory[hw.device_tier]
        p16 = max(hw.peak_flops.get(d, 0.0) for d in ("bf16", "fp16", "fp32"))
        assert 10 <= p16 / dev.bw_Bps <= 1000, f"{hw.name}: machine balance {p16 / dev.bw_Bps:.0f} FLOP/B"
        assert dev.capacity_bytes >= 1e9 and dev.bw_Bps >= 50e9, hw.name
        lat = [t.latency_s for t in hw.memory]
        assert all(x is not None for x in lat), f"{hw.name}: every tier states an access latency"
        assert lat == sorted(lat) and len(set(lat)) == len(lat), f"{hw.name}: latencies must grow down the tiers"
        assert 0.5e-6 <= hw.op_latency_s <= 50e-6, hw.name
        assert all(0 < e <= 1 for e in hw.efficiency.values()), hw.name
        for link in hw.links:
            assert link.bw_Bps < dev.bw_Bps, f"{hw.name}: link {link.name} faster than device memory"
            assert 0.1e-6 <= link.latency_s <= 100e-6, (hw.name, link.name)
        if hw.tdp_w is not None:
            assert 5 <= hw.tdp_w <= 1500, hw.name
            assert max(hw.peak_flops.values()) / hw.tdp_w < 15e12, f"{hw.name}: over 15 TFLOP/s per watt"


def test_device_tier_is_the_datasheet_memory():
    # vendor memory sizes (GB read as GiB), independent of the csv copy
    gib = {"a100": 80, "a100-40gb": 40, "a100-pcie": 80, "h100": 81559 / 1024, "h100-pcie": 80,
           "h200": 143771 / 1024, "b200": 180,                    # H100, H200, L4, T4: the nvidia-smi totals in MiB
           "mi300x": 192, "mi250x": 128, "l4": 23034 / 1024, "t4": 15360 / 1024, "rtx-4090": 24, "tpu-v4": 32,
           "tpu-v5e": 16, "tpu-v5p": 95, "jetson-agx-orin": 64, "apple-m2": 24, "apple-m2-ultra": 192, "apple-m3-max": 128,
           "gb10": 128}
    for name, g in gib.items():
        hw = hardware.get(name)
        assert hw.memory[hw.device_tier].capacity_bytes == g * 2**30, name


def test_device_memory_is_at_least_what_drivers_report():
    lines = [ln for ln in REPORTED.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    rows = list(csv.DictReader(lines))
    assert len(rows) >= 4
    for r in rows:
        hw = hardware.get(r["catalog_name"])
        cap, seen = hw.memory[hw.device_tier].capacity_bytes, float(r["reported_bytes"])
        # the driver hands out a little less than the physical memory, never more
        assert seen <= cap <= seen * 1.05, f"{hw.name}: catalog {cap:.4g} B, driver reports {seen:.4g} B"


def test_structured_sparsity_flag_follows_the_architecture():
    has = ("a100", "a100-40gb", "a100-pcie", "h100", "h100-pcie", "h200", "b200", "l4", "rtx-4090",
           "jetson-agx-orin", "gb10", "mi300x")
    lacks = ("t4", "mi250x", "tpu-v4", "tpu-v5e", "tpu-v5p", "xeon-8480", "epyc-9654", "apple-m2")
    for n in has:
        assert hardware.get(n).features.get("sparsity_2_4") is True, n
    for n in lacks:
        assert not hardware.get(n).features.get("sparsity_2_4", False), n


def test_cpu_peaks_follow_cores_times_flop_per_cycle_times_clock():
    # (cores, clock Hz, {dtype: FLOP per cycle per core}) from ARK / AMD spec pages and the ISA
    spec = {"xeon-8480": (56, 2.0e9, {"fp64": 32, "fp32": 64, "fp16": 128, "bf16": 1024, "int8": 2048}),
            "xeon-8592": (64, 1.9e9, {"fp64": 32, "fp32": 64, "fp16": 128, "bf16": 1024, "int8": 2048}),
            "epyc-9654": (96, 3.55e9, {"fp64": 16, "fp32": 32, "bf16": 64, "int8": 128})}
    for name, (cores, hz, per_cycle) in spec.items():
        hw = hardware.get(name)
        assert set(hw.peak_flops) == set(per_cycle), name
        for d, f in per_cycle.items():
            assert hw.peak(d) == pytest.approx(cores * f * hz, rel=1e-3), (name, d)
        assert hw.vector_flops == pytest.approx(cores * per_cycle["fp32"] * hz, rel=1e-3)


# ------------------------------------------------------------------ the CLI

def test_cli_hardware_list(cli):
    r = cli("hardware", "list")
    assert r.rc == 0, r.err
    for n in hardware.names():
        assert n in r.out
    r = cli("hardware", "list", "--format", "json")
    assert r.rc == 0, r.err
    doc = r.json()
    assert sorted(d["name"] for d in doc["devices"]) == sorted(hardware.names())


def test_cli_hardware_show_a100_json(cli):
    r = cli("hardware", "show", "a100", "--format", "json")
    assert r.rc == 0, r.err
    doc = r.json()
    assert doc["name"] == "a100" and doc["schema"] == hardware.SCHEMA
    assert doc["compute"]["bf16"]["peak_flops"] == pytest.approx(312e12)
    assert doc["compute"]["tf32"]["peak_flops"] == pytest.approx(156e12)
    assert "fp8" not in doc["compute"]
    assert all(doc["compute"][d]["source"] for d in doc["compute"])
    mem = doc["memory"]
    assert [m["role"] for m in mem] == ["cache", "device", "host", "storage"]
    for m in mem:
        assert {"name", "capacity_bytes", "bw_Bps", "latency_s"} <= set(m)
        assert all(isinstance(m[k], float) and math.isfinite(m[k]) and m[k] > 0
                   for k in ("capacity_bytes", "bw_Bps", "latency_s"))
    assert mem[1]["capacity_bytes"] == 80 * 2**30 and mem[1]["bw_Bps"] == pytest.approx(2.039e12)


def test_cli_hardware_show_text_and_unknown_name(cli):
    r = cli("hardware", "show", "tpu-v5e")
    assert r.rc == 0, r.err
    assert "TPU v5e" in r.out and "819" in r.out
    r = cli("hardware", "show", "a100")
    assert r.rc == 0 and "× 8 per" in r.out                 # the InfiniBand ports of a DGX node
    r = cli("hardware", "show", "gb10")                     # a source's [brackets] are text, not markup
    assert "[calibration]" in " ".join(r.out.split())
    r = cli("hardware", "show", "h10")
    assert r.rc == 2 and r.out == ""
    assert len(r.err.strip().splitlines()) == 1 and "h100" in r.err


def test_a_host_tier_may_be_smaller_than_the_device_but_storage_not(tmp_path):
    """GB300's share of Grace LPDDR5X (236 GB) is below its 288 GiB of HBM and is still its host tier (the NeMo
    recipes offload activations there); a storage tier smaller than the tier above it is refused."""
    hw = hardware.get("gb300")
    host = next(t for t in hw.memory if t.role == "host")
    assert host.capacity_bytes < hw.memory[hw.device_tier].capacity_bytes
    text = (hardware.CATALOG_DIR / "gb300.toml").read_text()
    assert text.count('capacity_bytes = "3.84 TB"') == 1
    p = tmp_path / "small-storage.toml"
    p.write_text(text.replace('capacity_bytes = "3.84 TB"', 'capacity_bytes = "100 GB"'))
    with pytest.raises(IronlawError, match="larger than the slower 'nvme'"):
        hardware.load_file(p)


def _memory_tiers():
    """Every [[memory]] tier of the catalog as written: (device, tier name, capacity text, source)."""
    import tomllib
    for path in sorted(hardware.CATALOG_DIR.glob("*.toml")):
        for m in tomllib.loads(path.read_text()).get("memory", []):
            yield path.stem, m["name"], m["capacity_bytes"], m["source"]


def test_every_capacity_source_names_the_unit_stored():
    """A capacity is stored in the unit its source states or as measured, and the source says which: the stored
    text ("80 GiB", "3.84 TB", "81559 MiB") appears in the source (thousands separators aside), so a datasheet's
    "80 GB" stored as 80 GiB must say why (JEDEC's binary giga for memory, or the driver's measured total)."""
    missing = []
    for dev, tier, cap, source in _memory_tiers():
        assert isinstance(cap, str) and re.fullmatch(r"[\d.]+ [KMGTP]i?B", cap), f"{dev}.{tier}: {cap!r} names no unit"
        if cap not in source.replace(",", ""):
            missing.append(f"{dev}.{tier}: {cap}")
    assert not missing, "sources that do not name the stored capacity: " + "; ".join(missing)


def test_measured_capacities_cite_the_driver_total():
    """H100 and H200 hold the total nvidia-smi reports, below the binary size of the datasheet's figure."""
    for name, mib, sheet_gib in (("h100", 81559, 80), ("h200", 143771, 141)):
        hw = hardware.get(name)
        dev = hw.memory[hw.device_tier]
        assert dev.capacity_bytes == mib * 2**20 < sheet_gib * 2**30
        assert f"{mib:,} MiB" in dev.source and "nvidia-smi" in dev.source and dev.source.startswith("measured")


def test_cli_hardware_show_prints_each_capacity_in_its_source_unit_first(cli):
    r = cli("hardware", "show", "h100")
    assert r.rc == 0, r.err
    assert "79.6 GiB (85.5 GB)" in r.out            # measured in MiB: binary first
    assert "50 MiB (52.4 MB)" in r.out              # on-die SRAM, binary
    assert "3.84 TB (3.49 TiB)" in r.out            # a drive's decimal TB


def test_mi325x_trains_at_amds_measured_dense_gemm_ratio_over_mi300x():
    """MI300X and MI325X are one gfx942 die with the same datasheet peaks; under a dense GEMM the clock is what the
    board's power holds (750 W against 1,000 W: a median 1,230 against 1,464 MHz), and AMD's max-achievable GEMM
    rates (ROCm blogs, 'Measuring Max-Achievable FLOPs - Part 2', Table 1: FP8 1,273 / 1,519, BF16 708 / 843
    TFLOP/s) put MI325X's 1.19x MI300X's. Each catalog's matmul η is the geometric mean of its two shares of the
    peak, and a training step (priced on [efficiency]) runs > 1.1x faster on MI325X (the bandwidth alone: 1.02x)."""
    import ironlaw
    maf = {"mi300x": (1273, 708), "mi325x": (1519, 843)}
    for name, (fp8, bf16) in maf.items():
        hw = hardware.get(name)
        share = math.sqrt(fp8 * 1e12 / hw.peak("fp8") * bf16 * 1e12 / hw.peak("bf16"))
        assert hw.eta("matmul") == pytest.approx(share, abs=1e-3), name
    steps = {name: ironlaw.analyze("llama3-8b", on=name, phase="train", batch=1, seq=2048, dtype="fp8").time_s
             for name in maf}
    assert steps["mi300x"] / steps["mi325x"] > 1.1
