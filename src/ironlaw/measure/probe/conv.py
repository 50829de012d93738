"""Convolution rate per dtype on a few ResNet-like shapes.

A framework runs convolutions through another library than its GEMMs (PyTorch on a CPU: oneDNN for
conv, MKL for ``torch.mm``), and the two need not reach the same rate (MKL takes an AVX2 path on AMD
CPUs, oneDNN AVX-512). So the probe times convolutions too, and a dtype's peak is the fastest of its
GEMMs and convolutions (``build.compute_peaks``): the GEMM model then sits below 1 on such a machine instead
of the conv running "faster than the peak".

Depthwise and grouped convolutions run other kernels again (oneDNN's depthwise path streams its input
once per output; a dense conv's rate says nothing about them), so the probe times them as rows of their
own at 1, 8 and 32 input channels per group (``GROUPED``); they calibrate the op classes conv-depthwise
and conv-grouped (``ironlaw.core.graph.op_class``).

Shapes are (batch, channels in, size, channels out, kernel), stride 1, padding kernel // 2 (output size
= input size); FLOPs 2·B·size²·C_out·(C_in/groups)·k² (a multiply-accumulate is 2).
"""
from __future__ import annotations

from ...core.graph import TORCH_NAMES
from .timing import Budget, stable

GRID = {"fp32": [(2, 64, 56, 64, 3), (2, 256, 28, 256, 1), (1, 128, 28, 128, 3)],
        "bf16": [(2, 64, 56, 64, 3)]}
QUICK = {"fp32": 1, "bf16": 0}
# grouped convolutions, 3×3 and C_in = C_out (MobileNet's inverted residuals, ResNeXt's blocks), by input
# channels per group: (batch, channels, size, kernel, channels per group)
GROUPED = {"fp32": [(1, 128, 56, 3, 1), (1, 256, 28, 3, 1), (1, 256, 28, 3, 8), (1, 256, 28, 3, 32)]}
GROUPED_QUICK = {"fp32": 3}                # quick: the two depthwise rows and channels per group 8


def shapes(dtype: str, quick: bool) -> list[tuple[int, int, int, int, int]]:
    grid = GRID.get(dtype, [])
    return grid[:QUICK.get(dtype, 0)] if quick else grid


def grouped_shapes(dtype: str, quick: bool) -> list[tuple[int, int, int, int, int]]:
    grid = GROUPED.get(dtype, [])
    return grid[:GROUPED_QUICK.get(dtype, 0)] if quick else grid


def flops(b: int, cin: int, size: int, cout: int, k: int, groups: int = 1) -> float:
    return 2.0 * b * size * size * cout * (cin // groups) * k * k


def measure(dtype: str, b: int, cin: int, size: int, cout: int, k: int, budget: Budget, device: str = "cpu",
            groups: int = 1) -> dict:
    import torch
    import torch.nn.functional as F
    dt = getattr(torch, TORCH_NAMES[dtype])
    x = torch.randn(b, cin, size, size, device=device).to(dt)
    w = torch.randn(cout, cin // groups, k, k, device=device).to(dt)
    # fp32 means fp32: cuDNN would run an fp32 conv on TF32 tensor cores by default (torch.mm does not)
    tf32 = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        st = stable(lambda: F.conv2d(x, w, padding=k // 2, groups=groups), budget, device)
    finally:
        torch.backends.cudnn.allow_tf32 = tf32
    return {"dtype": dtype, "batch": b, "cin": cin, "size": size, "cout": cout, "kernel": k, "time_s": st.time_s,
            "cv": st.cv, "flops_per_s": flops(b, cin, size, cout, k, groups) / st.time_s,
            **({"groups": groups} if groups > 1 else {}), "_ok": st.ok, "_tries": st.tries}
