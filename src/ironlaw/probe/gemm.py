"""GEMM rate per dtype across a grid of shapes (efficiency as a function of shape).

Every dtype the device offers is measured, fast path or not: on a CPU without AVX512-FP16 an fp16
GEMM runs at a few GFLOP/s against hundreds for bf16, and the profile must say so. Shapes run
from GEMV (M = 1, weights streamed from memory) to square GEMMs large enough to reach the peak.
"""
from __future__ import annotations

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
# on a GPU every dtype gets the same grid (a small fp16 grid would make a fast fp16 look slow)
GPU_GRID = [(4096, 4096, 4096), (1024, 1024, 1024), (1, 8192, 8192), (8192, 8192, 8192), (2048, 2048, 2048),
            (256, 256, 256), (64, 4096, 4096), (16, 8192, 8192), (8192, 1024, 1024), (128, 128, 128)]
GPU_QUICK = 3
TORCH_DTYPE = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "fp64": "float64"}


def shapes(dtype: str, quick: bool, device: str = "cpu") -> list[tuple[int, int, int]]:
    if device == "cuda":
        return GPU_GRID[:GPU_QUICK] if quick else GPU_GRID
    grid = GRID[dtype]
    return grid[:QUICK[dtype]] if quick else grid


def measure(dtype: str, m: int, n: int, k: int, budget: Budget, device: str = "cpu") -> dict:
    import torch
    dt = getattr(torch, TORCH_DTYPE[dtype])
    a = torch.randn(m, k, device=device).to(dt)
    b = torch.randn(k, n, device=device).to(dt)
    c = torch.empty(m, n, device=device, dtype=dt)
    st = stable(lambda: torch.mm(a, b, out=c), budget, device)
    return {"dtype": dtype, "m": m, "n": n, "k": k, "time_s": st.time_s, "cv": st.cv,
            "flops_per_s": 2.0 * m * n * k / st.time_s, "_ok": st.ok, "_tries": st.tries}
