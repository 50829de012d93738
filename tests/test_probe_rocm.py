"""The GPU probe on a ROCm build of torch, with a faked torch (no GPU here): the runtime and libraries it reports,
the catalog GPU it names or refuses to, and the memory sets it sizes past the Infinity Cache that HIP does not
report; the coverage line of devices without measured kernels."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from ironlaw.core.errors import IronlawError
from ironlaw.measure import probe as probe_mod
from ironlaw.measure.probe import gemm, runtime

GiB = float(1 << 30)
MiB = float(1 << 20)


def fake_gpu(monkeypatch, name: str, memory_gib: float, arch: str = "", hip: str | None = "6.2.41133-dd7f95766",
             l2_mib: float = 4.0, blas: str = "_BlasBackend.Cublaslt", capability=(9, 4)):
    """Real torch (CPU build) with the torch.cuda calls the probe makes answering as the GPU described would."""
    import torch
    props = SimpleNamespace(total_memory=int(memory_gib * GiB), L2_cache_size=int(l2_mib * MiB),
                            **({"gcnArchName": arch} if arch else {}))
    monkeypatch.setattr(torch.version, "hip", hip, raising=False)
    monkeypatch.setattr(torch.version, "cuda", None if hip else "12.8", raising=False)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i=0: props)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: name)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i=0: capability)
    monkeypatch.setattr(torch.cuda.nccl, "version", lambda: (2, 21, 5), raising=False)
    monkeypatch.setattr(torch.backends.cuda, "preferred_blas_library", lambda *a: blas)
    return torch


def test_rocm_mi300x_is_named_and_says_rocm_hipblaslt_and_rccl(monkeypatch):
    torch = fake_gpu(monkeypatch, "AMD Instinct MI300X", 191.5, "gfx942:sramecc+:xnack-")
    rt = runtime.detect(torch)
    assert (rt.platform, rt.arch, rt.catalog) == ("rocm", "gfx942", "mi300x")
    assert rt.gemm_library == "hipBLASLt" and rt.collectives == "RCCL 2.21.5"
    # the Infinity Cache from the catalog entry (HIP reports one XCD's 4 MB L2), with its source
    assert rt.last_cache_bytes == 256 * MiB and "catalog mi300x, infinity-cache" in rt.last_cache_source
    line = runtime.describe(rt.to_dict())
    assert line.startswith("ROCm (HIP 6.2.41133") and "= catalog mi300x" in line and "not measured" in line


def test_rocm_blas_names_follow_torchs_preference(monkeypatch):
    torch = fake_gpu(monkeypatch, "AMD Instinct MI300X", 191.5, "gfx942", blas="_BlasBackend.Cublas")
    assert runtime.detect(torch).gemm_library == "rocBLAS"
    torch = fake_gpu(monkeypatch, "AMD Instinct MI300X", 191.5, "gfx942", blas="_BlasBackend.Ck")
    assert runtime.detect(torch).gemm_library == "Composable Kernel"


@pytest.mark.parametrize("name, arch, gib, want", [
    ("AMD Instinct MI325X", "gfx942", 255.9, "mi325x"),
    ("AMD Instinct MI355X", "gfx950", 287.6, "mi355x"),
    ("AMD Instinct MI300X VF", "gfx942", 191.5, "mi300x"),        # a cloud VM's virtual function
    ("", "gfx942", 191.5, "mi300x"),                              # no name: the architecture and the HBM decide
    ("AMD Radeon Graphics", "gfx942", 255.9, "mi325x"),
])
def test_amd_names_from_the_name_or_the_architecture_and_memory(monkeypatch, name, arch, gib, want):
    torch = fake_gpu(monkeypatch, name, gib, arch + ":sramecc+:xnack-")
    assert runtime.detect(torch).catalog == want


@pytest.mark.parametrize("name, arch, gib, reason", [
    ("AMD Instinct MI300X", "gfx942", 23.9, "partition"),          # CPX / NPS4: an eighth of the GPU
    ("AMD Instinct MI250X", "gfx90a", 63.98, "one GCD"),           # one of the module's two dies
    ("", "gfx950", 287.6, "MI350X and the MI355X"),                # the architecture alone is two products
    ("AMD Instinct MI300A", "gfx942", 128.0, "not in the catalog"),
    ("AMD Radeon RX 7900 XTX", "gfx1100", 24.0, "names a catalog GPU"),
])
def test_amd_parts_and_unknowns_are_refused_a_catalog_name_with_the_reason(monkeypatch, name, arch, gib, reason):
    torch = fake_gpu(monkeypatch, name, gib, arch)
    rt = runtime.detect(torch)
    assert rt.catalog is None and reason in rt.catalog_note
    assert f"no catalog name: {rt.catalog_note}" in runtime.describe(rt.to_dict())


def test_unnamed_amd_gpu_sizes_its_cold_rows_past_the_largest_infinity_cache(monkeypatch):
    torch = fake_gpu(monkeypatch, "AMD Radeon RX 7900 XTX", 24.0, "gfx1100", l2_mib=6.0)
    rt = runtime.detect(torch)
    assert rt.last_cache_bytes == runtime.INFINITY_CACHE_MAX_BYTES and "HIP does not report it" in rt.last_cache_source
    levels = probe_mod.gpu_levels(False, rt)
    assert "infinity-cache" not in levels                          # no catalog entry says how large it is
    assert min(levels["hbm"]) >= 4 * runtime.INFINITY_CACHE_MAX_BYTES


def test_rocm_memory_levels_and_cold_pool_exceed_the_infinity_cache(monkeypatch):
    fake_gpu(monkeypatch, "AMD Instinct MI300X", 191.5, "gfx942")
    levels = probe_mod.gpu_levels(False, probe_mod.gpu_runtime())
    assert max(levels["l2"]) < 4 * MiB
    assert 30 * MiB < min(levels["infinity-cache"]) and max(levels["infinity-cache"]) < 256 * MiB
    assert min(levels["hbm"]) >= 1 * GiB                          # 4× the 256 MiB cache, not CUDA's 256 MiB
    pool = probe_mod.cold_pool("cuda")
    assert pool.nbytes == gemm.cold_pool_bytes(256 * MiB) >= 512 * MiB


def test_cuda_runtime_keeps_its_l2_levels_and_names_nvidia_gpus(monkeypatch):
    torch = fake_gpu(monkeypatch, "NVIDIA H100 80GB HBM3", 79.2, hip=None, l2_mib=50.0, capability=(9, 0),
                     blas="_BlasBackend.Cublas")
    rt = runtime.detect(torch)
    assert (rt.platform, rt.arch, rt.catalog, rt.gemm_library) == ("cuda", "sm_90", "h100", "cuBLAS")
    assert rt.collectives == "NCCL 2.21.5" and rt.last_cache_bytes == 50 * MiB
    levels = probe_mod.gpu_levels(False, rt)
    assert "infinity-cache" not in levels and levels["hbm"] == [float(s) for s in probe_mod.HBM_SIZES]
    assert runtime.describe(rt.to_dict()).startswith("CUDA (12.8)")


@pytest.mark.parametrize("name, want", [("NVIDIA H100 PCIe", "h100-pcie"), ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
                                        ("NVIDIA B300 SXM6 AC", "b300"), ("NVIDIA GeForce RTX 3090", None)])
def test_nvidia_names(name, want):
    assert runtime.nvidia_catalog_name(name) == want


def test_a_rocm_profile_keeps_its_infinity_cache_tier_and_runtime(monkeypatch):
    """A probe table with the ROCm rows builds a profile with the Infinity Cache as its own cache tier."""
    from ironlaw.measure.calibrate import build
    from ironlaw.machine.hardware import parse_hardware
    fake_gpu(monkeypatch, "AMD Instinct MI300X", 191.5, "gfx942")
    gpu = probe_mod.gpu_runtime()
    levels = probe_mod.gpu_levels(False, gpu)
    bw = {"l2": 14e12, "infinity-cache": 10e12, "hbm": 4.3e12}
    mem = [{"level": lv, "bytes": s, "time_s": s / bw[lv], "cv": 0.02} for lv, ss in levels.items() for s in ss]
    gemm_rows = [{"dtype": "bf16", "m": n, "n": n, "k": n, "time_s": 2 * n ** 3 / 7e14, "cv": 0.02,
                  "flops_per_s": 7e14} for n in (2048, 4096, 8192)]
    p = {"date": "2026-12-05T10:00:00+00:00", "stamp": "20261205-100000", "host": "mi300x-host", "cpu": "EPYC",
         "device": gpu.device, "torch": "2.13.0+rocm6.2", "threads": 16, "quick": False, "duration_s": 60.0,
         "max_cv": 0.15, "gemm": gemm_rows, "memory": mem,
         "dispatch": [{"op": "add", "time_s": 9e-6, "cv": 0.02}],
         "vector": [{"op": "add", "elems": n, "dtype": "fp32", "time_s": 12 * n / 4.3e12, "cv": 0.02,
                     "elems_per_s": 4.3e12 / 12, "flops_per_elem": 1.0} for n in (1 << 24, 1 << 26)],
         "cuda": [{"what": "launch", "bytes": 4.0, "time_s": 5e-6, "cv": 0.02}],
         "capacity": {"hbm": gpu.memory_bytes, "l2": 4 * MiB, "infinity-cache": gpu.last_cache_bytes},
         "gpu": gpu.to_dict()}
    doc = build.profile(p, calibrate_fit=False)
    hw = parse_hardware(doc, "probe")
    assert [t.name for t in hw.memory][:3] == ["l2", "infinity-cache", "hbm"]
    assert hw.tier("infinity-cache").capacity_bytes == 256 * MiB
    assert doc["probe"]["gpu"]["catalog"] == "mi300x"
    # saved and read back as `--on` reads a profile (TOML), the runtime table kept
    from ironlaw.machine import profile
    from ironlaw.machine.hardware import toml_loads
    back = parse_hardware(toml_loads(profile.dumps_table(doc)), "saved")
    assert back.extra["probe"]["gpu"]["gemm_library"] == "hipBLASLt"
    bad = {**doc, "probe": {**doc["probe"], "gpu": {**doc["probe"]["gpu"], "platform": "metal"}}}
    with pytest.raises(IronlawError, match="probe.gpu.platform"):
        parse_hardware(bad, "probe")


@pytest.mark.parametrize("hw, way", [
    ("mi250x", "ironlaw probe on it with a ROCm build of torch"),
    ("tpu-v5p", "not on tpu-v5p"), ("gaudi3", "not on gaudi3"), ("trn2", "not on trn2"),
])
def test_devices_without_tables_say_which_numbers_are_datasheet_only(cli, hw, way):
    r = cli("analyze", "llama3-8b", "--phase", "decode", "--batch", "8", "--seq", "1024", "--on", hw)
    assert r.rc == 0, r.err
    text = " ".join(r.out.split())
    assert (f"datasheet only: {hw} has no measured kernel tables; its datasheet peaks, memory and link bandwidths "
            f"and [efficiency] defaults price every op") in text
    assert way in text and "ironlaw calibrate --kernels DIR" in text
    j = cli("analyze", "gemm:4096,4096,4096", "--on", hw, "--format", "json").json()
    assert j["calibration_coverage"]["datasheet_only"] == ["peak FLOP/s per dtype", "memory bandwidths",
                                                           "link bandwidths and latencies", "[efficiency] defaults"]
