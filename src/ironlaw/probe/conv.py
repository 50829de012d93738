"""Convolution rate per dtype on a few ResNet-like shapes.

A framework runs convolutions through another library than its GEMMs (PyTorch on a CPU: oneDNN for
conv, MKL for ``torch.mm``), and the two need not reach the same rate (MKL takes an AVX2 path on AMD
CPUs, oneDNN AVX-512). So the probe times convolutions too, and a dtype's peak is the fastest of its
GEMMs and convolutions (``build._peaks``): the GEMM model then sits below 1 on such a machine instead
of the conv running "faster than the peak".

Shapes are (batch, channels in, size, channels out, kernel), stride 1, padding kernel // 2 (output size
= input size); FLOPs 2·B·size²·C_out·C_in·k² (a multiply-accumulate is 2).
"""
from __future__ import annotations

from .timing import Budget, stable

GRID = {"fp32": [(2, 64, 56, 64, 3), (2, 256, 28, 256, 1), (1, 128, 28, 128, 3)],
        "bf16": [(2, 64, 56, 64, 3)]}
QUICK = {"fp32": 1, "bf16": 0}
TORCH_DTYPE = {"fp32": "float32", "bf16": "bfloat16"}


def shapes(dtype: str, quick: bool) -> list[tuple[int, int, int, int, int]]:
    grid = GRID.get(dtype, [])
    return grid[:QUICK.get(dtype, 0)] if quick else grid


def flops(b: int, cin: int, size: int, cout: int, k: int) -> float:
    return 2.0 * b * size * size * cout * cin * k * k


def measure(dtype: str, b: int, cin: int, size: int, cout: int, k: int, budget: Budget, device: str = "cpu") -> dict:
    import torch
    import torch.nn.functional as F
    dt = getattr(torch, TORCH_DTYPE[dtype])
    x = torch.randn(b, cin, size, size, device=device).to(dt)
    w = torch.randn(cout, cin, k, k, device=device).to(dt)
    # fp32 means fp32: cuDNN would run an fp32 conv on TF32 tensor cores by default (torch.mm does not)
    tf32 = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        st = stable(lambda: F.conv2d(x, w, padding=k // 2), budget, device)
    finally:
        torch.backends.cudnn.allow_tf32 = tf32
    return {"dtype": dtype, "batch": b, "cin": cin, "size": size, "cout": cout, "kernel": k, "time_s": st.time_s,
            "cv": st.cv, "flops_per_s": flops(b, cin, size, cout, k) / st.time_s, "_ok": st.ok, "_tries": st.tries}
