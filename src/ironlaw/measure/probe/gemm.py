"""GEMM rate per dtype across a grid of shapes (efficiency as a function of shape).

Every dtype the device offers is measured, fast path or not: on a CPU without AVX512-FP16 an fp16
GEMM runs at a few GFLOP/s against hundreds for bf16, and the profile must say so. Shapes run
from GEMV (M = 1) to square GEMMs large enough to reach the peak.

Two kinds of rows:
- hot (``GRID``): the same operands every call, so they stay in cache — the kernel's own rate (``torch.mm``,
  x @ W; ``HOT_NT_GRID`` adds a few small-M shapes as x @ Wᵀ, ``layout = "nt"``);
- cold (``COLD_GRID``, ``weights = "cold"``): small-M products ``x @ Wᵀ`` (the layout of every
  ``nn.Linear``) that rotate through enough weight copies to overflow the last cache level, so every
  call streams its weights from main memory, as decoding a model does. These show how weight traffic
  and compute combine: on a CPU a GEMM packs the weight panel before its micro-kernel runs, so the
  two add up (cold − hot ≈ bytes / DRAM bandwidth), while a GEMV streams the matrix once (a cold GEMV runs
  at the DRAM rate).
"""
from __future__ import annotations

from ...core.graph import TORCH_NAMES
from .pool import ColdPool
from .timing import Budget, stable

# (M, N, K); the first rows are the quick grid
GRID = {
    "fp32": [(1024, 1024, 1024), (512, 512, 512), (256, 256, 256), (64, 1024, 1024), (1, 4096, 4096),
             (2048, 2048, 2048), (128, 128, 128), (16, 4096, 1024), (32, 32, 32), (1024, 4096, 256),
             (8, 1024, 1024), (128, 768, 3072)],
    "bf16": [(1024, 1024, 1024), (128, 128, 128), (1, 4096, 8192), (2048, 2048, 2048), (512, 512, 512),
             (64, 1024, 1024), (256, 256, 256), (16, 4096, 1024), (32, 32, 32)],
    "fp16": [(128, 128, 128), (256, 256, 256), (1, 1024, 1024)],
    "fp64": [(512, 512, 512), (128, 128, 128), (1024, 1024, 1024)],
}
QUICK = {"fp32": 5, "bf16": 3, "fp16": 1, "fp64": 1}
# weights streamed from memory: M from GEMV to where compute takes over; first rows are the quick grid
# (8, 40960, 1024): 168 MB of weights, more than a server CPU's usable last cache level, for the spilled
# packed copy (``pack``). M = 1, 2, 4 of one shape tell up to which M the library stays on its matrix-vector
# path (``gemv_m``). M = 1 at other lengths of the stored weight rows (x @ Wᵀ: K), ~16 MB each: a GEMV pays
# a fixed time per row (``gemv_row``: short rows run slower per byte than long ones)
COLD_GRID = {"fp32": [(1, 4096, 1024), (8, 4096, 1024), (2, 4096, 1024), (4, 4096, 1024), (32, 4096, 1024),
                      (128, 4096, 1024), (4, 3072, 768), (8, 40960, 1024),
                      (1, 16384, 256), (1, 4096, 768), (1, 1024, 4096), (1, 256, 16384)],
             "bf16": [(1, 4096, 1024), (8, 4096, 1024)]}
COLD_QUICK = {"fp32": 2, "bf16": 0}
# x @ W with W row-major K×N (GPT-2's Conv1D layout): where its GEMV path ends (``layout = "kn"``) and, from
# M = 4 to 32, its packed GEMM's weight traffic (``streamed_kn``; several M, so that one noisy row cannot set
# x @ W's weight η for the whole fit); M = 1 at other row lengths (N)
COLD_GRID_KN = {"fp32": [(1, 4096, 1024), (2, 4096, 1024), (4, 4096, 1024), (8, 4096, 1024), (16, 4096, 1024),
                         (32, 4096, 1024), (1, 256, 16384), (1, 768, 4096), (1, 1024, 4096), (1, 16384, 256)]}
COLD_MIN_BYTES, COLD_MAX_BYTES = 256 * 2**20, 2 * 2**30
# x @ Wᵀ with the same W every call (``layout = "nt"``, nn.Linear's layout; GRID's torch.mm is x @ W): at
# small M the two differ (``m_half_nt``: MKL packs a K×N weight more slowly; alike from M ≈ 256)
HOT_NT_GRID = {"fp32": [(8, 1024, 1024), (32, 1024, 1024), (16, 4096, 1024), (64, 1024, 1024)]}
HOT_NT_QUICK = {"fp32": 0}
# on a GPU every dtype gets the same grid (a small fp16 grid would make a fast fp16 look slow)
GPU_GRID = [(4096, 4096, 4096), (1024, 1024, 1024), (1, 8192, 8192), (8192, 8192, 8192), (2048, 2048, 2048),
            (256, 256, 256), (64, 4096, 4096), (16, 8192, 8192), (8192, 1024, 1024), (128, 128, 128)]
GPU_QUICK = 3


def shapes(dtype: str, quick: bool, device: str = "cpu") -> list[tuple[int, int, int]]:
    """The dtype's grid, its smallest shape first (``FastPathGate`` decides on it)."""
    if device == "cuda":
        grid = GPU_GRID[:GPU_QUICK] if quick else GPU_GRID
    else:
        grid = GRID[dtype][:QUICK[dtype]] if quick else GRID[dtype]
    small = min(grid, key=lambda s: s[0] * s[1] * s[2])
    return [small] + [s for s in grid if s != small]


# a dtype whose smallest GEMM runs below this share of fp32's best rate has no fast path (a CPU without
# bf16 or fp16 matrix instructions: 1.1 GFLOP/s bf16 against 113 fp32 on an AMD EPYC without AVX-512, measured
# by probe on 2026-12-04); its larger shapes would take minutes and tell nothing more
GATE_SHARE = 0.05
GATE_MAX_FLOPS = 2.0 * 256**3      # shapes up to this much work still run on a slow dtype


class FastPathGate:
    """Measures GEMMs and skips (returns None for) a dtype's shapes above ``GATE_MAX_FLOPS`` once its first
    shape ran below ``GATE_SHARE`` of the best fp32 rate seen: a dtype without a fast path keeps a measured
    peak, and the profile marks it NO FAST PATH, without the probe spending minutes on it."""

    def __init__(self) -> None:
        self.fp32_flops_per_s = 0.0
        self.slow: set[str] = set()
        self.seen: set[str] = set()

    def allows(self, dtype: str, flops: float) -> bool:
        return dtype not in self.slow or flops <= GATE_MAX_FLOPS

    def record(self, row: dict) -> dict:
        dt = row["dtype"]
        if dt == "fp32":
            self.fp32_flops_per_s = max(self.fp32_flops_per_s, row["flops_per_s"])
        elif dt not in self.seen and row["flops_per_s"] < GATE_SHARE * self.fp32_flops_per_s:
            self.slow.add(dt)
        self.seen.add(dt)
        return row

    def measure(self, dtype: str, m: int, n: int, k: int, budget: Budget, device: str = "cpu",
                layout: str = "kn") -> dict | None:
        if not self.allows(dtype, 2.0 * m * n * k):
            return None
        return self.record(measure(dtype, m, n, k, budget, device, layout))

    def measure_cold(self, dtype: str, m: int, n: int, k: int, pool: "ColdPool", budget: Budget,
                     device: str = "cpu", layout: str = "nt") -> dict | None:
        if dtype in self.slow:
            return None
        return measure_cold(dtype, m, n, k, pool, budget, device, layout)


def cold_shapes(dtype: str, quick: bool) -> list[tuple[int, int, int, str]]:
    """(M, N, K, layout) with layout "nt" (x @ Wᵀ) or "kn" (x @ W)."""
    grid = [s + ("nt",) for s in COLD_GRID.get(dtype, [])]
    if quick:
        return grid[:COLD_QUICK.get(dtype, 0)]
    return grid + [s + ("kn",) for s in COLD_GRID_KN.get(dtype, [])]


def hot_nt_shapes(dtype: str, quick: bool) -> list[tuple[int, int, int]]:
    grid = HOT_NT_GRID.get(dtype, [])
    return grid[:HOT_NT_QUICK.get(dtype, 0)] if quick else grid


def cold_pool_bytes(last_cache_bytes: float) -> float:
    """Weight copies to rotate through: twice the last cache level, within [256 MiB, 2 GiB]."""
    return min(max(2.0 * last_cache_bytes, COLD_MIN_BYTES), COLD_MAX_BYTES)


def measure(dtype: str, m: int, n: int, k: int, budget: Budget, device: str = "cpu", layout: str = "kn") -> dict:
    """The same operands every call: ``torch.mm`` (x @ W, W row-major K×N) or, with ``layout="nt"``,
    ``F.linear`` (x @ Wᵀ, W stored N×K as nn.Linear keeps it; the row says so)."""
    import torch
    import torch.nn.functional as F
    dt = getattr(torch, TORCH_NAMES[dtype])
    a = torch.randn(m, k, device=device).to(dt)
    if layout == "nt":
        w = torch.randn(n, k, device=device).to(dt)
        st = stable(lambda: F.linear(a, w), budget, device)
    else:
        b = torch.randn(k, n, device=device).to(dt)
        c = torch.empty(m, n, device=device, dtype=dt)
        st = stable(lambda: torch.mm(a, b, out=c), budget, device)
    return {"dtype": dtype, "m": m, "n": n, "k": k, "time_s": st.time_s, "cv": st.cv,
            "flops_per_s": 2.0 * m * n * k / st.time_s, **({"layout": "nt"} if layout == "nt" else {}),
            "_ok": st.ok, "_tries": st.tries}


def measure_cold(dtype: str, m: int, n: int, k: int, pool: "ColdPool | float", budget: Budget, device: str = "cpu",
                 layout: str = "nt") -> dict:
    """``x @ Wᵀ`` (W is N×K, as ``nn.Linear`` stores it; layout "kn": ``x @ W`` with W row-major K×N), a
    different W each call from ``pool`` (a ``ColdPool`` shared by the probe's cold rows, or its size in bytes
    for one of its own), so the weights come from main memory every time."""
    import torch
    import torch.nn.functional as F
    dt = getattr(torch, TORCH_NAMES[dtype])
    pool = pool if isinstance(pool, ColdPool) else ColdPool(pool, device)
    weights = pool.cycle([(n, k) if layout == "nt" else (k, n)], dt)
    x = torch.randn(m, k, device=device).to(dt)

    def call():
        return F.linear(x, *weights()) if layout == "nt" else torch.mm(x, *weights())
    st = stable(call, budget, device)
    return {"dtype": dtype, "m": m, "n": n, "k": k, "time_s": st.time_s, "cv": st.cv,
            "flops_per_s": 2.0 * m * n * k / st.time_s, "weights": "cold", **({"layout": "kn"} if layout == "kn" else {}),
            "_ok": st.ok, "_tries": st.tries}
