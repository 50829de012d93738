"""Per-op dispatch latency: the fixed cost of one framework call on a tiny tensor.

Eager PyTorch pays it on every aten op (1–4 µs on this kind of CPU; HF model code adds more).
On CUDA the same tiny ops measure host dispatch + kernel launch (see ``cuda.py`` for the launch
alone).
"""
from __future__ import annotations

from .timing import Budget, stable

OPS = ("add", "mul_", "linear", "relu")
KIND = {"add": "elementwise", "mul_": "elementwise", "linear": "matmul", "relu": "elementwise"}


def measure(op: str, budget: Budget, device: str = "cpu") -> dict:
    import torch
    import torch.nn.functional as F
    x = torch.randn(8, device=device)
    y = torch.randn(8, device=device)
    w = torch.randn(8, 8, device=device)
    fn = {"add": lambda: torch.add(x, y), "mul_": lambda: x.mul_(1.0), "relu": lambda: torch.relu(x),
          "linear": lambda: F.linear(x, w)}[op]
    st = stable(fn, budget, device, graph=False)      # the host's cost is what this row measures
    return {"op": op, "time_s": st.time_s, "cv": st.cv, "_ok": st.ok, "_tries": st.tries}
