"""Operator fusion: ``fusion=elementwise``, ``flash-attention`` and its inverse ``eager-attention``.

fusion=elementwise: each elementwise op joins the op just before it (its producer, same
``count``) as an epilogue: its launch latency vanishes, the intermediate tensor is neither
written nor read back, its FLOPs run on the vector unit inside the producer's kernel
(``Op.vector_flops``). Inputs that do not come from the producer (the residual of an add) are
still read. Ops that touch optimizer state (the AdamW step) are not fused; the footprint is
unchanged.

flash-attention: a materialized-score chain (QKᵀ matmul → scale/mask/softmax → ·V matmul, as
captured from eager PyTorch, or made by eager-attention) becomes one attention kernel that never
writes the score matrix: Q, K, V read, O written, softmax FLOPs on the vector unit, masks
applied in-kernel. The analytic transformer builders are FlashAttention-style already; then the
transform changes nothing and says so in ``meta['notes']``.

eager-attention: the opposite, for forward attention ops of the analytic builders: QKᵀ writes
the scores, softmax reads and writes them, ·V reads them (4 score-matrix passes, three kernels).
Score elements = matrix FLOPs / (4·head_dim), from the builder's FLOP convention (QKᵀ and ·V on the
matrix unit, the fused softmax as ``vector_flops``).
"""
from __future__ import annotations

import numpy as np

from ...core import passes
from ...core.errors import IronlawError
from ...core.graph import Graph, Op, dtype_bytes
from .base import Choice, Flag, copy_op, has, is_backward, transform

CONSUMER_CLASSES = {"activations", "weights", "gradients"}
NOT_PRODUCERS = ("collective", "copy")
# the kernel an eager softmax over the score rows names (torch.softmax's; [calibration.kernel.softmax]: a100
# fits it on LLMCompass's measured softmax sweep, benchmarks/a100_calibration.py)
SOFTMAX_KERNEL = "softmax"


@transform("fusion", main="scope", aliases=("fuse",), params={"scope": Choice(("elementwise",))},
           help="fusion=elementwise: elementwise chains become epilogues of their producer")
def fusion(g: Graph, hw, scope: str = "elementwise") -> Graph:
    out: list[Op] = []
    fused = 0
    for op in g.ops:
        prod = out[-1] if out else None
        if (op.kind == "elementwise" and prod is not None and prod.count == op.count
                and prod.kind not in NOT_PRODUCERS and "optimizer" not in prod.bytes
                and set(op.bytes) <= CONSUMER_CLASSES and not has(op.network_bytes)):
            out[-1] = _merge(prod, op)
            fused += 1
        else:
            out.append(op)
    meta = dict(g.meta)
    if not fused:
        meta["notes"] = list(meta.get("notes", [])) + ["fusion: no elementwise op follows a producer it could join"]
    return Graph(g.name, g.phase, g.dtype, out, footprint=dict(g.footprint), meta=meta,
                 uncounted_ops=dict(g.uncounted_ops))


def _merge(prod: Op, op: Op) -> Op:
    p = copy_op(prod, name=f"{prod.name}+{op.name}")
    act, written = op.bytes.get("activations", 0.0), op.bytes_written
    p_written = prod.bytes_written
    extra_in = np.maximum(act - written - p_written, 0.0)          # inputs not produced by ``prod``
    p.bytes["activations"] = p.bytes.get("activations", 0.0) - p_written + written + extra_in
    for cls in ("weights", "gradients"):
        if cls in op.bytes:
            p.bytes[cls] = p.bytes.get(cls, 0.0) + op.bytes[cls]
    p.bytes_written = written
    p.vector_flops = p.vector_flops + op.flops + op.vector_flops
    p.attrs["fused"] = list(prod.attrs.get("fused", [])) + [op.name]
    p.attrs.pop("kernel", None)                    # a fused kernel is not the one a calibration saw
    return p


# ---------------------------------------------------------------- attention
@transform("flash-attention", main="on", aliases=("flash",), params={"on": Flag()}, defaults={"on": True},
           help="flash-attention: never write the attention score matrix")
def flash_attention(g: Graph, hw, on: bool = True) -> Graph:
    if not any(op.kind == "attention" or op.kind == "softmax" for op in g.ops):
        raise IronlawError(f"flash-attention: '{g.name}' has no attention")
    ops, i, changed = list(g.ops), 0, 0
    out: list[Op] = []
    while i < len(ops):
        j = _chain_end(ops, i)
        if j is None:
            out.append(ops[i])
            i += 1
            continue
        out.append(_flash(ops[i:j + 1]))
        changed += 1
        i = j + 1
    meta = dict(g.meta)
    fp = dict(g.footprint)
    if changed and "eager_saved_bytes" in meta and "activations" in fp:    # eager-attention's s² tensors
        fp["activations"] = fp["activations"] - meta.pop("eager_saved_bytes")
    if not changed:
        meta["notes"] = list(meta.get("notes", [])) + [
            "flash-attention: no materialized score matrix found (attention is already FlashAttention-style)"]
    return Graph(g.name, g.phase, g.dtype, out, footprint=fp, meta=meta, uncounted_ops=dict(g.uncounted_ops))


def _weightless_matrix(op: Op) -> bool:
    return op.kind in ("matmul", "attention") and not has(op.bytes.get("weights", 0.0)) and has(op.flops)


def _chain_end(ops: list[Op], i: int) -> int | None:
    """Index of the ·V op when ops[i] starts QKᵀ → (elementwise)* softmax (elementwise)* → ·V."""
    if not _weightless_matrix(ops[i]):
        return None
    seen_softmax = False
    for j in range(i + 1, len(ops)):
        op = ops[j]
        if op.count != ops[i].count:
            return None
        if op.kind == "softmax":
            seen_softmax = True
        elif op.kind == "elementwise":
            continue
        elif _weightless_matrix(op) and seen_softmax:
            return j
        else:
            return None
    return None


def _flash(chain: list[Op]) -> Op:
    orig = chain[0].attrs.get("eager_of")
    if orig is not None and all(o.attrs.get("eager_of", (None,))[0] is orig[0] for o in chain):
        # eager-attention's own split: undo it exactly, scaled as the chain was since (tensor parallelism
        # divides every op of it alike)
        op, flops0 = orig
        r = sum((o.flops for o in chain), 0.0) / flops0
        return copy_op(op, flops=op.flops * r, vector_flops=op.vector_flops * r,
                       bytes={k: v * r for k, v in op.bytes.items()}, bytes_written=op.bytes_written * r)
    qk, av, mid = chain[0], chain[-1], chain[1:-1]
    score = qk.bytes_written                                  # the score matrix QKᵀ wrote
    act = (qk.bytes.get("activations", 0.0) - score) + np.maximum(av.bytes.get("activations", 0.0) - score, 0.0)
    unmask = qk.attrs.get("masked_pairs_factor", 1.0)        # a causal chain eager-attention made
    op = copy_op(qk, name="flash_attention", kind="attention", flops=(qk.flops + av.flops) / unmask,
                 vector_flops=(qk.vector_flops + av.vector_flops + sum(m.flops + m.vector_flops for m in mid)) / unmask,
                 bytes_written=av.bytes_written)
    op.attrs.pop("masked_pairs_factor", None)
    op.bytes = {"activations": act}
    for o in chain:
        for cls, b in o.bytes.items():
            if cls != "activations":
                op.bytes[cls] = op.bytes.get(cls, 0.0) + b
    op.attrs["fused"] = [o.name for o in chain]
    return op


@transform("eager-attention", main="on", aliases=("eager",), params={"on": Flag()}, defaults={"on": True},
           help="eager-attention: materialize the score matrix (QKᵀ, softmax, ·V as three kernels; in training also "
                "dropout on P and the eager backward, and the s² tensors it keeps)")
def eager_attention(g: Graph, hw, on: bool = True) -> Graph:
    """QKᵀ writes the score matrix S, softmax reads it and writes P, ·V reads P. In training (as Megatron-LM
    and HF eager attention run it) dropout on P follows the softmax where the config has attention dropout
    (reads P, writes P' and a one-byte mask), and the backward is eager too: ·V's two GEMMs (dP' = dO·Vᵀ,
    dV = P'ᵀ·dO) read P' and write dP', dropout's backward reads dP' and the mask, softmax's reads P and
    dP and writes dS, QKᵀ's two GEMMs (dQ = dS·K, dK = dSᵀ·Q) each read dS; the s² tensors the backward
    needs (P, and P' and the mask) join the saved activations. Every op made here remembers the op it
    replaced, so flash-attention restores it exactly."""
    from ...core.flopcount import SOFTMAX as SOFTMAX_FLOPS
    from ..workloads.transformer import DROPOUT_FLOPS, MASK_BYTES
    hd, heads, kv_heads = (g.meta.get(k) for k in ("head_dim", "heads", "kv_heads"))
    if not (hd and heads and kv_heads):
        raise IronlawError(f"eager-attention: '{g.name}' does not record head_dim and heads; only the analytic "
                           f"transformers do")
    # O's share of the attention op's activations (Q, K, V read, O written: q, kv, kv, q wide). Not
    # bytes_written: that also counts the K, V written to the KV cache (prefill, decode), and tensor
    # parallelism splits the op's bytes but leaves bytes_written (informational) whole.
    o_share = heads / (2.0 * heads + 2.0 * kv_heads)
    kv_share = kv_heads / (2.0 * heads + 2.0 * kv_heads)
    # eager attention computes every (query, key) pair and masks afterwards: a causal prefill's s² pairs,
    # not the s(s+1)/2 a FlashAttention kernel visits (flash-attention divides it back out)
    full = 1.0
    if g.meta.get("attention_pairs") == "causal" and g.phase != "decode" and g.meta.get("seq") is not None:
        s = np.asarray(g.meta["seq"], dtype=float)
        full = 2.0 * s / (s + 1.0)
    drop_p = float(g.meta.get("attention_dropout", 0.0)) if g.phase == "train" else 0.0
    out, n, made, saved = [], 0, {}, 0.0
    for op in g.ops:
        if op.kind != "attention":
            out.append(op)
            continue
        if is_backward(op):
            fwd = made.get(passes.forward_of(op.name))
            out += _eager_backward(op, fwd) if fwd else [op]
            continue
        b = dtype_bytes(op.dtype)
        fused_softmax = has(op.vector_flops)                  # the builder files softmax as vector FLOPs
        scale = full if str(op.shapes).startswith("causal,") else 1.0      # not a sliding window
        pairs = op.flops / (4.0 * hd + (0.0 if fused_softmax else SOFTMAX_FLOPS))   # the op's pairs × heads
        scores = scale * pairs                                                  # the ones eager computes
        sm_flops = scale * (op.vector_flops if fused_softmax else pairs * SOFTMAX_FLOPS)
        s_b = scores * b
        act = op.bytes.get("activations", 0.0)
        o_b = act * o_share                                   # O of the builder's "read Q, K, V; write O"
        qk = copy_op(op, name=op.name + ".qk", kind="matmul", flops=scores * 2.0 * hd, vector_flops=0.0,
                     bytes_written=s_b)
        if np.any(np.asarray(scale) != 1.0):
            qk.attrs["masked_pairs_factor"] = scale           # so that flash-attention can undo it
        qk.bytes["activations"] = act - o_b + s_b
        sm = Op(op.name + ".softmax", "softmax", flops=sm_flops, bytes={"activations": 2.0 * s_b},
                dtype=op.dtype, count=op.count, module=op.module, bytes_written=s_b, attrs={"kernel": SOFTMAX_KERNEL})
        chain = [qk, sm]
        if drop_p > 0:
            chain.append(Op(op.name + ".dropout", "elementwise", flops=DROPOUT_FLOPS * scores,
                            bytes={"activations": (2.0 * b + MASK_BYTES) * scores}, dtype=op.dtype, count=op.count,
                            module=op.module, bytes_written=(b + MASK_BYTES) * scores))
        av = Op(op.name + ".av", "matmul", flops=scores * 2.0 * hd, bytes={"activations": s_b + o_b},
                dtype=op.dtype, count=op.count, module=op.module, bytes_written=o_b)
        if "kv_cache" in op.bytes:                            # K read by QKᵀ, V by ·V
            qk.bytes["kv_cache"] = 0.5 * op.bytes["kv_cache"]
            av.bytes["kv_cache"] = 0.5 * op.bytes["kv_cache"]
        chain.append(av)
        _tag(chain, op)
        out += chain
        made[op.name] = dict(scores=scores, b=b, o_b=o_b, kv_b=act * kv_share, drop=drop_p > 0, gemm=av.flops)
        if g.phase == "train":
            saved = saved + op.count * scores * (b + ((b + MASK_BYTES) if drop_p > 0 else 0.0))
        n += 1
    if not n:
        raise IronlawError(f"eager-attention: '{g.name}' has no forward attention op")
    fp, meta = dict(g.footprint), dict(g.meta)
    if g.phase == "train" and "activations" in fp:
        fp["activations"] = fp["activations"] + saved
        meta["eager_saved_bytes"] = meta.get("eager_saved_bytes", 0.0) + saved     # flash-attention takes it back
    return Graph(g.name, g.phase, g.dtype, out, footprint=fp, meta=meta, uncounted_ops=dict(g.uncounted_ops))


def _eager_backward(op: Op, f: dict) -> list[Op]:
    """The eager backward of one attention op (see eager_attention), in the order it runs."""
    sc, b, o_b, kv_b = f["scores"], f["b"], f["o_b"], f["kv_b"]
    s_b = sc * b
    name, kw = passes.forward_of(op.name), dict(dtype=op.dtype, count=op.count, module=op.module)
    out = [Op(passes.backward_of(name + ".av"), "matmul", flops=2.0 * f["gemm"],
              bytes={"activations": 2.0 * s_b + 2.0 * o_b + 2.0 * kv_b},     # P', dO, V in; dP', dV out
              bytes_written=s_b + kv_b, **kw)]
    if f["drop"]:
        from ..workloads.transformer import MASK_BYTES
        out.append(Op(passes.backward_of(name + ".dropout"), "elementwise", flops=sc,
                      bytes={"activations": (2.0 * b + MASK_BYTES) * sc}, bytes_written=s_b, **kw))
    out.append(Op(passes.backward_of(name + ".softmax"), "softmax", flops=3.0 * sc,    # dS = P ⊙ (dP − Σ dP ⊙ P)
                  bytes={"activations": 3.0 * s_b}, bytes_written=s_b, **kw))
    qk = copy_op(op, name=passes.backward_of(name + ".qk"), kind="matmul", flops=2.0 * f["gemm"], vector_flops=0.0,
                 bytes_written=o_b + kv_b)
    qk.bytes["activations"] = 2.0 * s_b + 2.0 * o_b + 2.0 * kv_b               # dS twice, Q, K in; dQ, dK out
    return _tag(out + [qk], op)


def _tag(chain: list[Op], op: Op) -> list[Op]:
    """Mark the ops eager-attention split ``op`` into with (op, their FLOPs), for flash-attention to undo; each
    keeps the attention's role (split over TP by heads as it is)."""
    total = sum((o.flops for o in chain), 0.0)
    for o in chain:
        o.attrs["eager_of"] = (op, total)
        if "role" in op.attrs:
            o.attrs["role"] = op.attrs["role"]
    return chain
