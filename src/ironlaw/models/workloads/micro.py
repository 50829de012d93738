"""Micro-workloads: one GEMM or one GEMV, for checking the law against a single kernel."""
from __future__ import annotations

from ...core.errors import IronlawError
from ...core.graph import Graph, Op, dtype_bytes
from .registry import Request, check_phase, prefix

MAX_DIM = 1 << 24


def unread_sizes(req: Request, what: str, sizes: str) -> None:
    """--batch and --seq do not apply to one kernel or one collective: its sizes are in its spec (``sizes``)."""
    import numpy as np
    if req.seq is not None:
        raise IronlawError(f"--seq does not apply to {what}: its sizes are {sizes}; drop --seq")
    if np.any(np.asarray(req.batch) != 1):
        raise IronlawError(f"--batch does not apply to {what}: its sizes are {sizes}; drop --batch")


def _dims(arg: str, n: int, usage: str) -> list[int]:
    parts = [p.strip() for p in arg.split(",")]
    if len(parts) != n:
        raise IronlawError(f"'{arg}': expected {usage}")
    try:
        vals = [int(p) for p in parts]
    except ValueError:
        raise IronlawError(f"'{arg}': expected {usage} with whole numbers") from None
    for v, name in zip(vals, usage.split(",")):
        if v < 1:
            raise IronlawError(f"'{arg}': {name} must be a positive whole number, got {v}")
        if v > MAX_DIM:
            raise IronlawError(f"'{arg}': {name} {v} is out of range (1 … {MAX_DIM:,})")
    return vals


@prefix("gemm", "gemm:M,N,K — one matrix multiply C[M,N] = A[M,K]·B[K,N] (B counted as weights)")
def gemm(arg: str, req: Request) -> Graph:
    m, n, k = _dims(arg, 3, "M,N,K")
    check_phase(req, ("infer",), "infer", "gemm")
    unread_sizes(req, f"gemm:{arg}", "M,N,K (M rows)")
    dt = req.dtype or "bf16"
    b = dtype_bytes(dt)
    op = Op(f"gemm {m}x{n}x{k}", "matmul", flops=2.0 * m * n * k,
            bytes={"activations": (m * k + m * n) * b, "weights": k * n * b}, dtype=dt,
            shapes=f"[{m},{k}]x[{k},{n}]", bytes_written=m * n * b, attrs={"nk": (n, k)})
    return Graph(f"gemm:{m},{n},{k}", "infer", dt, [op],
                 footprint={"activations": (m * k + m * n) * b, "weights": k * n * b},
                 meta={"M": m, "N": n, "K": k})


@prefix("gemv", "gemv:M,K — one matrix-vector product y[M] = A[M,K]·x[K] (A counted as weights)")
def gemv(arg: str, req: Request) -> Graph:
    m, k = _dims(arg, 2, "M,K")
    check_phase(req, ("infer",), "infer", "gemv")
    unread_sizes(req, f"gemv:{arg}", "M,K")
    dt = req.dtype or "bf16"
    b = dtype_bytes(dt)
    op = Op(f"gemv {m}x{k}", "matmul", flops=2.0 * m * k,
            bytes={"activations": (k + m) * b, "weights": m * k * b}, dtype=dt,
            shapes=f"[{m},{k}]x[{k}]", bytes_written=m * b)
    return Graph(f"gemv:{m},{k}", "infer", dt, [op],
                 footprint={"activations": (k + m) * b, "weights": m * k * b}, meta={"M": m, "K": k})
