"""Context parallelism: ``cp_shard`` gives each rank seq/cp tokens of every sequence; the K/V ring overlapped with
attention (``cp_ring_exposed``) and the merge of its steps after it (``cp_merge``).
"""
from __future__ import annotations

import copy

import numpy as np

from ...core import passes
from ...core.graph import Graph, Op, dtype_bytes
from .layout import group_topology
from .plan import Plan
from .roles import base_name


CP_MERGE_BYTES = {"fwd": (10.0, 12.0), "bwd": (10.0, 6.0)}    # (per ring step, once) per output element: cp_merge


def cp_shard(g: Graph, cp: int) -> Graph:
    """The per-device graph under context parallelism ``cp``: each rank holds seq/cp tokens of every sequence
    (two chunks of 2·cp, the load-balanced causal split), so every per-token op does 1/cp of the work and
    attention computes 1/cp of the causal pairs (its queries against every key, K and V passed around the ring:
    ``cp_ring_exposed``), each attention followed by the merge of its ring steps' partial results
    (``cp_merge``). Weights and their gradients stay whole on every rank."""
    if cp == 1:
        return g
    ops = []
    for op in g.ops:
        if op.kind == "collective" or passes.is_optimizer(op.name):
            ops.append(op)
            continue
        new = copy.copy(op)
        new.flops, new.vector_flops, new.bytes_written = op.flops / cp, op.vector_flops / cp, op.bytes_written / cp
        new.bytes = {k: (v if k in ("weights", "gradients") else v / cp) for k, v in op.bytes.items()}
        ops.append(new)
        if op.kind == "attention":
            ops.append(cp_merge(new, cp, g.meta))
    meta = dict(g.meta, tokens=g.meta["tokens"] / cp, cp=cp)
    return Graph(f"{g.name} [cp {cp}]", g.phase, g.dtype, ops, footprint=dict(g.footprint), meta=meta,
                 uncounted_ops=dict(g.uncounted_ops))


def cp_merge(att: Op, cp: int, meta: dict) -> Op:
    """The merge of an attention's ``cp`` ring steps on a rank of t = tokens/cp tokens (Transformer Engine's
    AttnFuncWithCPAndKVP2P, cp_comm_type "p2p"): each step's attention writes a partial output [t, q_dim] in
    bf16 and its softmax statistics; the forward rescales and adds steps 2…cp into an fp32 output (read the
    step's 2 bytes, read and write the running 4-byte sum: 10 bytes per element and step) after the first step's
    init and before the cast back to bf16 (6 + 6 bytes once); the backward adds each step's dQ into an fp32 dQ
    (10 bytes per element and step, 6 for the final cast) and each step's dK, dV into the bf16 buffer that
    travels the ring with K and V (6 bytes per element of [t, 2·kv_dim] and step). Memory-bound kernels that
    run after their attention kernels, not under them."""
    bwd = passes.is_backward(att.name)
    tokens = np.asarray(meta["tokens"], dtype=float) / cp
    q = tokens * meta["heads"] * meta["head_dim"]
    kv = tokens * 2 * meta.get("kv_heads", meta["heads"]) * meta["head_dim"]
    step, once = CP_MERGE_BYTES["bwd" if bwd else "fwd"]
    nbytes = (step * (cp if bwd else cp - 1) + once) * q + (6.0 * cp * kv if bwd else 0.0)
    base = base_name(att.name)
    return Op("attention_cp_merge" + att.name[len(base):], "elementwise", flops=2.0 * cp * q,
              bytes={"activations": nbytes}, dtype=att.dtype, count=att.count, module=att.module,
              shapes=f"{cp} ring steps merged", bytes_written=nbytes * 0.4,
              attrs={k: v for k, v in att.attrs.items() if k == "per_layer"} | {"cp_merge": True, "role": "heads"})


def cp_ring_exposed(sg: Graph, hw, plan: Plan, grp: dict, rows: list[dict]) -> tuple[float, float]:
    """(total, exposed) seconds per micro-batch of the context-parallel ring (Megatron's ring attention).

    In each of cp − 1 steps a rank sends its K and V chunk (2·kv_dim/tp·tokens/cp, bf16) to the next rank of
    the CP group while it computes attention on the chunk it holds, one cp-th of its attention; the backward
    passes K, V and their gradients (twice the bytes). A step exposes what its send takes beyond its compute."""
    if plan.cp == 1:
        return 0.0, 0.0
    send = float(cp_ring_send_s(hw, sg.meta, plan.tp, float(np.max(sg.meta["tokens"])), dtype_bytes(sg.dtype),
                                grp["cp"]))
    total = exposed = 0.0
    for op, r in zip(sg.ops, rows):
        if r["kind"] != "attention":
            continue
        passes = ring_passes(op)
        total += op.count * (plan.cp - 1) * send * passes
        exposed += op.count * float(cp_ring_step_exposed(send, passes, r["time_s"] / op.count, plan.cp))
    return total, exposed


def cp_ring_send_s(hw, meta: dict, tp: int, tokens, by: float, cp_grp: tuple):
    """One step of the ring: a rank sends its K and V chunk (``cp_ring_send_bytes``) to the next."""
    from ...machine.network.collectives import collective_time
    a, b = collective_time("sendrecv", cp_ring_send_bytes(meta, tp, tokens, by), group_topology(hw, cp_grp))
    return a + b


def cp_ring_send_bytes(meta: dict, tp: int, tokens, by: float):
    """Bytes of one ring send: a rank's K and V chunk, 2·kv_dim/tp × ``tokens`` on the rank at ``by`` bytes."""
    kv_dim = max(meta.get("kv_heads", meta["heads"]) // tp, 1) * meta["head_dim"]
    return 2.0 * kv_dim * tokens * by


def ring_passes(op: Op) -> float:
    """Chunks an attention passes around the ring per step: K and V forward, and their gradients backward."""
    return 2.0 if passes.is_backward(op.name) else 1.0


def cp_ring_step_exposed(send, passes: float, t_attention, cp: int):
    """Seconds of the ring one attention invocation (``t_attention``) leaves exposed: cp − 1 steps, each
    sending ``passes`` chunks beside one cp-th of the attention."""
    return (cp - 1) * np.maximum(send * passes - t_attention / cp, 0.0)
