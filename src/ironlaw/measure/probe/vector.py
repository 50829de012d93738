"""Elementwise and transcendental throughput, on cache-resident and on DRAM-sized tensors.

FLOPs per element follow ``ironlaw.core.flopcount``, as the capture counts: an arithmetic step 1, an
elementary function (exp, tanh, erf …) TRANSCENDENTAL (4); gelu (erf form) 8, silu 7.
Cache-resident sizes show the arithmetic rate (where a transcendental is compute-bound on a CPU);
large sizes show the streaming rate.
"""
from __future__ import annotations

from ...core import flopcount as fc
from .timing import Budget, stable

# op -> (flops per element, inputs)
OPS = {"add": (1.0, 2), "mul": (1.0, 2), "tanh": (fc.TRANSCENDENTAL, 1), "exp": (fc.TRANSCENDENTAL, 1),
       "gelu": (fc.GELU_ERF, 1), "silu": (fc.SILU, 1)}
QUICK_OPS = ("add", "tanh", "gelu")
SIZES = (1 << 16, 1 << 18, 1 << 23)          # elements: L2-, L3-, DRAM-sized for fp32
QUICK_SIZES = (1 << 18, 1 << 22)


def cases(quick: bool) -> list[tuple[str, int]]:
    ops = QUICK_OPS if quick else tuple(OPS)
    return [(op, n) for op in ops for n in (QUICK_SIZES if quick else SIZES)]


def measure(op: str, elems: int, budget: Budget, device: str = "cpu", dtype: str = "fp32") -> dict:
    import torch
    import torch.nn.functional as F
    x = torch.randn(elems, device=device)
    y = torch.randn(elems, device=device)
    out = torch.empty_like(x)
    fn = {"add": lambda: torch.add(x, y, out=out), "mul": lambda: torch.mul(x, y, out=out),
          "tanh": lambda: torch.tanh(x, out=out), "exp": lambda: torch.exp(x, out=out),
          "gelu": lambda: F.gelu(x), "silu": lambda: F.silu(x)}[op]
    st = stable(fn, budget, device)
    per, inputs = OPS[op]
    return {"op": op, "elems": elems, "dtype": dtype, "time_s": st.time_s, "cv": st.cv,
            "elems_per_s": elems / st.time_s, "flops_per_elem": per, "_inputs": inputs, "_ok": st.ok,
            "_tries": st.tries}
