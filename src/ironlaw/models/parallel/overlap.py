"""Overlap rules: the TP collectives Transformer Engine's userbuffers run beside the GEMMs they feed or follow
(``--tp-comm-overlap``), and the expert all-to-alls run beside another micro-batch's compute (``--moe-a2a-overlap``).
"""
from __future__ import annotations

import numpy as np

from ...core import passes
from ...core.graph import Op
from .roles import role, sublayer


# each TP collective of sequence parallelism and the GEMM share it runs beside under Transformer Engine's
# userbuffers overlap (Megatron-Bridge comm_overlap.py: qkv_fprop, proj_fprop, fc1_fprop, fc2_fprop; in the
# backward proj_dgrad, fc2_dgrad ring exchanges and the bulk qkv_dgrad/qkv_wgrad, fc1_dgrad/fc1_wgrad pairs):
# (GEMM's role, its sublayer, its backward, share of its time: a backward op is its dgrad and wgrad halves).
# tp_shard marks a forward sublayer's reduce-scatter and the all-gather that follows it (the next sublayer's
# input) after it, a backward sublayer's reduce-scatter (dgrad), the all-gather of the gradient for the
# sublayer below and the re-gather of its input for the weight gradient after its column GEMM.
TP_OVERLAP = {"reducescatter.fwd.attn": ("row", "attn", False, 1.0),
              "allgather.fwd.attn": ("column", "mlp", False, 1.0),
              "reducescatter.fwd.mlp": ("row", "mlp", False, 1.0),
              "allgather.fwd.mlp": ("column", "attn", False, 1.0),
              "reducescatter.bwd.mlp": ("column", "mlp", True, 0.5),
              "allgather.wgrad.mlp": ("column", "mlp", True, 0.5),
              "allgather.bwd.mlp": ("row", "attn", True, 0.5),
              "reducescatter.bwd.attn": ("column", "attn", True, 0.5),
              "allgather.wgrad.attn": ("column", "attn", True, 0.5),
              "allgather.bwd.attn": ("row", "mlp", True, 0.5)}


def tp_overlap_hidden_s(ops: list[Op], times) -> float:
    """Seconds of TP collectives hidden per micro-batch by overlapping them with the GEMMs they feed or follow
    (Transformer Engine's userbuffers, chunked and pipelined with the GEMM): each collective up to the time
    of the GEMM share it runs beside (``TP_OVERLAP``), no more — a longer one shows the rest. ``times``: each
    op's seconds per micro-batch."""
    comm: dict = {}
    gemm: dict = {}
    for op, t in zip(ops, times):
        tp_overlap_add(op, t, comm, gemm)
    return float(tp_overlap_hidden(comm, gemm))


def tp_overlap_add(op: Op, t, comm: dict, gemm: dict) -> None:
    """Add ``t`` seconds of ``op`` to the TP collective (``op.attrs["tp_comm"]``, tp_shard's mark) or to the
    GEMM of ``TP_OVERLAP`` it is."""
    if op.kind == "collective":
        if "tp_comm" in op.attrs:
            comm[op.attrs["tp_comm"]] = comm.get(op.attrs["tp_comm"], 0.0) + t
        return
    if role(op) in ("column", "row"):
        key = (role(op), sublayer(op), passes.is_backward(op.name))
        gemm[key] = gemm.get(key, 0.0) + t


def tp_overlap_hidden(comm: dict, gemm: dict, start=0.0):
    """Σ over the TP collectives of min(its seconds, the share of its GEMM's seconds it runs beside)."""
    return sum((np.minimum(t, TP_OVERLAP[k][3] * gemm.get(TP_OVERLAP[k][:3], 0.0)) for k, t in comm.items()
                if k in TP_OVERLAP), start)


def ep_overlap_hidden_s(rows: list[dict]) -> float:
    """Seconds of expert all-to-all hidden per micro-batch when they run beside another micro-batch's compute
    (Megatron's overlap_moe_expert_parallel_comm: the 1F1B steady state merges one micro-batch's forward with
    another's backward, layer by layer, so each dispatch and combine overlaps the other pass's compute): the
    all-to-alls up to the micro-batch's compute. The first forward and the last backward of a step have no
    partner: ``train_step`` adds one micro-batch's all-to-alls back."""
    a2a = sum(r["time_s"] for r in rows if r["kind"] == "collective" and r["module"] == "ep")
    compute = sum(r["time_s"] for r in rows if r["kind"] != "collective")
    return float(ep_overlap_hidden(a2a, compute))


def ep_overlap_hidden(a2a, compute):
    """The expert all-to-alls (``a2a`` seconds per micro-batch) hidden beside another micro-batch's ``compute``."""
    return np.minimum(a2a, compute)
