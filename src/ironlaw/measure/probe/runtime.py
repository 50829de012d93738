"""The GPU runtime the probe runs on — CUDA or ROCm — its libraries, and the catalog GPU the device is.

A ROCm build of PyTorch keeps the ``torch.cuda`` API (``torch.version.hip`` is set, ``torch.version.cuda`` is None),
so the probe's GPU rows run unchanged through HIP: GEMMs through ``torch.mm`` on hipBLASLt (or rocBLAS / Composable
Kernel, as ``torch.backends.cuda.preferred_blas_library()`` says), fused attention through SDPA, copies and kernel
launches timed with HIP events and replayed from HIP graphs, pinned host↔device copies. Collectives would run on
RCCL (torch's ``nccl`` backend on ROCm); the probe measures one GPU and times none, on CUDA as on ROCm — it records
the library's version only.

What HIP does not report, the catalog supplies and the probe says so: AMD's Instinct GPUs have a memory-side
last-level cache (the Infinity Cache, 256 MB on MI300X, MI325X and MI355X) that ``L2_cache_size`` does not count
(it reports one XCD's 4 MB L2), so the cold rows and the HBM copies are sized past the Infinity Cache of the
catalog entry — or, for an AMD GPU the catalog does not name, past the largest one any Instinct GPU has.

The device becomes a catalog name from its reported name (``AMD Instinct MI300X`` → mi300x) or, where the name does
not say (some ROCm releases report an empty or generic name), from its architecture (``gcnArchName``: gfx942 is
MI300X or MI325X, told apart by their HBM) — and only when the memory it shows is the catalog GPU's: a partitioned
MI300X (CPX or NPS4 mode) or one GCD of an MI250X is a part of the catalog's GPU, and the probe refuses the name,
with the reason, rather than calling a part the whole. gfx950 alone is MI350X or MI355X (same 288 GB, different
clocks): without the name the probe names neither.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

GiB = float(1 << 30)
# AMD CDNA 3 architecture white paper: 256 MB AMD Infinity Cache (MI300X; MI325X the same die); AMD CDNA 4
# white paper: 256 MB on MI350X/MI355X — the largest memory-side cache of any Instinct GPU
INFINITY_CACHE_MAX_BYTES = 256.0 * (1 << 20)
INFINITY_CACHE_SOURCE = ("AMD CDNA 3 and CDNA 4 white papers: 256 MB Infinity Cache, the largest of any Instinct GPU "
                         "(HIP does not report it)")
# gcnArchName (the part before ':') -> catalog GPUs of that architecture; the HBM each shows tells them apart
ARCH_CATALOG = {"gfx90a": ("mi250x",), "gfx942": ("mi300x", "mi325x"), "gfx950": ("mi355x",)}
ARCH_AMBIGUOUS = {"gfx950": "gfx950 is both the MI350X and the MI355X (same 288 GB HBM3E, 2.2 vs 2.4 GHz)"}
# the memory a whole GPU shows: at least this fraction of the catalog's HBM (the driver keeps a little back:
# an MI300X reports ~191.5 GiB of 192)
WHOLE_MEMORY = 0.9
NVIDIA_PRODUCT = re.compile(r"\b(GB300|GB200|B300|B200|H200|H100|H20|A100|L40S|L4|T4|V100|RTX PRO 6000|RTX 4090|GB10)\b",
                            re.IGNORECASE)
BLAS = {"cublaslt": ("cuBLASLt", "hipBLASLt"), "cublas": ("cuBLAS", "rocBLAS"), "ck": ("CK", "Composable Kernel")}


@dataclass(frozen=True)
class GpuRuntime:
    """What the probe ran on: runtime and version, libraries, the device as reported and the catalog GPU it is."""
    platform: str              # "cuda" | "rocm"
    version: str               # torch.version.cuda / torch.version.hip
    device: str                # torch.cuda.get_device_name(0)
    arch: str                  # "sm_90" (CUDA capability) | "gfx942" (HIP gcnArchName)
    memory_bytes: float        # the device memory it shows (total_memory)
    catalog: str | None        # the catalog name it is, or None (``catalog_note`` says why)
    catalog_note: str          # how the name was found, or why there is none
    gemm_library: str          # the BLAS torch prefers: cuBLAS / cuBLASLt | hipBLASLt / rocBLAS / Composable Kernel
    collectives: str           # "NCCL 2.21.5" | "RCCL 2.21.5" (its version; not measured by the probe)
    last_cache_bytes: float    # the largest on-device cache the cold rows must exceed
    last_cache_source: str

    def to_dict(self) -> dict:
        return asdict(self)


def detect(torch) -> GpuRuntime:
    """The runtime of device 0 of ``torch`` (a CUDA or ROCm build with a GPU)."""
    hip = getattr(torch.version, "hip", None)
    props = torch.cuda.get_device_properties(0)
    name = str(torch.cuda.get_device_name(0) or "").strip()
    memory = float(props.total_memory)
    l2 = float(getattr(props, "L2_cache_size", 0) or 0)
    if hip:
        arch = str(getattr(props, "gcnArchName", "") or "").split(":")[0]
        catalog, note = amd_catalog_name(name, arch, memory)
        cache, cache_src = _infinity_cache(catalog, l2)
        return GpuRuntime("rocm", str(hip), name or "(no name reported)", arch or "(no gcnArchName)", memory,
                          catalog, note, blas_library(torch, rocm=True), _collectives(torch, "RCCL"), cache, cache_src)
    major, minor = torch.cuda.get_device_capability(0)
    catalog = nvidia_catalog_name(name)
    note = f"the reported name '{name}'" + ("" if catalog else " matches no catalog entry")
    return GpuRuntime("cuda", str(torch.version.cuda), name, f"sm_{major}{minor}", memory, catalog, note,
                      blas_library(torch, rocm=False), _collectives(torch, "NCCL"), l2,
                      "L2_cache_size (CUDA device properties)")


def describe(gpu: dict) -> str:
    """One line for the probe's report from a saved ``probe.gpu`` table: runtime, libraries, device, catalog match."""
    rt = "ROCm (HIP " if gpu["platform"] == "rocm" else "CUDA ("
    name = f"= catalog {gpu['catalog']}" if gpu.get("catalog") else f"no catalog name: {gpu['catalog_note']}"
    return (f"{rt}{gpu['version']}), GEMMs on {gpu['gemm_library']}, collectives on {gpu['collectives']} (not "
            f"measured); {gpu['device']} ({gpu['arch']}, {gpu['memory_bytes'] / GiB:.0f} GiB) {name}")


def nvidia_catalog_name(name: str) -> str | None:
    """The catalog name of an NVIDIA GPU's reported name: the whole name as a catalog name or alias ('NVIDIA
    A100-SXM4-80GB' → a100), else its product token ('NVIDIA H100 80GB HBM3' → h100); None if neither is one."""
    from ...core.errors import IronlawError
    from ...machine import hardware
    whole = re.sub(r"[\s_]+", "-", re.sub(r"^nvidia\s+", "", name.strip().lower()))
    m = NVIDIA_PRODUCT.search(name)
    for key in (whole, re.sub(r"\s+", "-", m.group(1).lower()) if m else None):
        try:
            return hardware.get(key).name if key else None
        except IronlawError:
            continue
    return None


def amd_catalog_name(name: str, arch: str, memory_bytes: float) -> tuple[str | None, str]:
    """(catalog name, how it was found) of an AMD GPU from its reported name, else its gcnArch and memory;
    (None, why not) for a GPU the catalog lacks, an ambiguous architecture or a partition of a catalog GPU."""
    from ...core.errors import IronlawError
    from ...machine import hardware
    said = f"the reported name '{name}'" if name else "no reported name"
    m = re.search(r"\bMI\s?(\d{3}[A-Z]?)\b", name, re.IGNORECASE)
    if m:
        key = "mi" + m.group(1).lower()
        try:
            cands, how = (hardware.get(key).name,), f"the reported name '{name}'"
        except IronlawError:
            return None, f"'{name}' is not in the catalog (AMD Instinct GPUs there: {', '.join(_amd_names())})"
    elif arch in ARCH_AMBIGUOUS:
        return None, f"{ARCH_AMBIGUOUS[arch]}, and {f'its reported name {name!r} names neither' if name else 'it reports no name'}"
    elif arch in ARCH_CATALOG:
        cands, how = ARCH_CATALOG[arch], f"its architecture {arch}"
    else:
        return None, f"neither {said} nor the architecture '{arch}' names a catalog GPU"
    for cand in cands:
        hbm = _hbm_bytes(hardware.get(cand))
        if WHOLE_MEMORY * hbm <= memory_bytes <= 1.02 * hbm:
            return cand, f"{how} and its {memory_bytes / GiB:.0f} GiB"
    whole = " or ".join(f"{c} {_hbm_bytes(hardware.get(c)) / GiB:.0f} GiB" for c in cands)
    return None, (f"{how} points to {'/'.join(cands)}, but it shows {memory_bytes / GiB:.0f} GiB of device memory against "
                  f"the whole GPU's {whole}: a part of it (one GCD of a two-die module, or a compute / memory "
                  f"partition such as CPX or NPS4) — its profile is not the catalog GPU's")


def blas_library(torch, rocm: bool) -> str:
    """The BLAS library torch sends GEMMs to (``torch.backends.cuda.preferred_blas_library()``), by its ROCm
    name on ROCm (torch keeps the cuBLAS enum names there)."""
    try:
        raw = str(torch.backends.cuda.preferred_blas_library())
    except (AttributeError, RuntimeError):
        return "the BLAS torch picks (its preferred library not reported)"
    names = BLAS.get(raw.rsplit(".", 1)[-1].lower())
    return names[1 if rocm else 0] if names else raw


def _collectives(torch, library: str) -> str:
    try:
        v = torch.cuda.nccl.version()
    except (AttributeError, RuntimeError, ImportError):
        return f"{library} (version not reported)"
    return f"{library} {'.'.join(str(x) for x in v) if isinstance(v, tuple) else v}"


def _infinity_cache(catalog: str | None, l2_bytes: float) -> tuple[float, str]:
    """The memory-side cache the cold rows must exceed: the catalog GPU's, else the largest of any Instinct GPU."""
    if catalog:
        from ...machine import hardware
        hw = hardware.get(catalog)
        caches = [t for t in hw.memory if t.role == "cache"]
        if caches:
            t = max(caches, key=lambda t: t.capacity_bytes)
            return max(t.capacity_bytes, l2_bytes), f"catalog {catalog}, {t.name}: {t.source}"
    return max(INFINITY_CACHE_MAX_BYTES, l2_bytes), INFINITY_CACHE_SOURCE


def _hbm_bytes(hw) -> float:
    return hw.memory[hw.device_tier].capacity_bytes


def _amd_names() -> list[str]:
    return sorted({c for cands in ARCH_CATALOG.values() for c in cands})
