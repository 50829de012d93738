"""The rows each GEMM kernel of a training step runs, and the efficiency those rows allow.

A GEMM whose output has M rows (tokens) per kernel reaches η_top · M / (M + m_half) of the matrix peak: fewer
rows leave output tiles, and with them SMs, idle. ``m_half`` is the device's own calibrated GEMM table's where it
has one for the op's dtype (that table already follows the op's whole M, so only the kernel's share of it is
applied here), else, on a GPU, ``gemmshape.GPU_M_HALF``.

    a layer's linear   the micro-batch's tokens on the rank (seq · micro-batch / cp). Under Transformer Engine's
                       userbuffers overlap (--tp-comm-overlap) the four forward GEMMs and the row-parallel
                       linears' dgrad run as tp ring-exchange steps, one GEMM of tokens/tp rows per step
                       (Megatron-Bridge comm_overlap.py, the H100 configs: qkv/proj/fc1/fc2 fprop and proj/fc2
                       dgrad RingExchangeOverlapCfg, aggregate=False); the column-parallel linears' dgrad runs
                       whole beside its bulk collective.
    a routed expert    its share of the tokens gathered from the EP group: tokens · k · ep / E (balanced
                       dispatch); the shared experts and every other linear: the tokens.
    a backward op      dgrad and wgrad, half its FLOPs each. The wgrad's output is the weight (its rows the
                       weight's, the tokens its reduction), so it runs at the top η: time ∝ ½ / s(M_dgrad) + ½.
"""
from __future__ import annotations

import copy

import numpy as np

from ..core.gemmshape import GPU_M_HALF
from ..core.graph import Graph

# The layers' TP linears by op role (``attrs["role"]``, as ``parallel.SHARDING``): role → whether its backward's
# dgrad also runs as ring-exchange steps (the row-parallel linears'; a column-parallel dgrad runs whole).
RING: dict[str, bool] = {"column": False, "row": True}


def share(rows, m_half: float):
    """s(M) = M / (M + m_half): the part of its top η a GEMM of ``rows`` rows reaches."""
    return rows / (rows + m_half)


def m_half_of(hw, dtype: str) -> tuple[float | None, bool]:
    """(m_half, whether the device's own table already applies it to the op's whole M); None where no
    rows law applies (a device without a table of its own that is not a GPU)."""
    table = hw.calibration.shape("matmul").get(dtype) if hw.calibration is not None else None
    if table is not None:
        return float(table["m_half"]), True
    return (GPU_M_HALF, False) if hw.kind == "gpu" else (None, False)


def kernel_rows(op, tokens, per_expert, tp: int, overlap: bool) -> tuple:
    """(rows of the op's GEMM kernel, rows of the op as a whole) for a linear of the training graph."""
    role = op.attrs.get("role", "")
    whole = per_expert if op.attrs.get("expert") == "routed" else tokens
    ring = overlap and tp > 1 and role in RING and op.attrs.get("expert") != "routed"
    chunked = ring and (not op.name.endswith(".backward") or RING[role])
    return (whole / tp if chunked else whole), whole


def with_kernel_rows(sg: Graph, hw, tp: int = 1, overlap: bool = False, ep: int = 1) -> Graph:
    """``sg`` (one stage's per-device training graph) with each GEMM's ``eta_scale`` set for the rows its
    kernels run (module doc)."""
    tokens = np.asarray(sg.meta.get("tokens", 0.0), dtype=float)    # an array where micro-batches are an axis
    if not np.all(tokens > 0):
        return sg
    experts = sg.meta.get("expert_slots", sg.meta.get("experts", 0))      # redundant slots share the load
    per_expert = tokens * sg.meta.get("experts_per_token", 1) * ep / experts if experts else tokens
    ops = []
    for op in sg.ops:
        m_half, own = m_half_of(hw, op.dtype) if op.kind == "matmul" and "weights" in op.bytes else (None, False)
        if m_half is None:
            ops.append(op)
            continue
        rows, whole = kernel_rows(op, tokens, per_expert, tp, overlap)
        f = share(rows, m_half) / share(whole, m_half) if own else share(rows, m_half)
        if op.name.endswith(".backward"):
            f = 1.0 / (0.5 / f + 0.5)
        new = copy.copy(op)
        new.eta_scale = op.eta_scale * f
        ops.append(new)
    return Graph(sg.name, sg.phase, sg.dtype, ops, footprint=dict(sg.footprint), meta=dict(sg.meta),
                 uncounted_ops=dict(sg.uncounted_ops))
