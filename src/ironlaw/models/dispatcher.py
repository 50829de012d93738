"""Megatron-Core's token dispatcher for expert parallelism: the copies it makes beside its all-to-alls.

A training step with expert parallelism exchanges each MoE layer's routed tokens over the EP group. Megatron-Core
(core_v0.15.0, Megatron-LM 0d8e0714, the version NeMo 25.11's Megatron-Bridge v0.2.0 pins) offers two ways over
all-to-alls (``moe_token_dispatcher_type``):

    alltoall  ``MoEAlltoAllTokenDispatcher`` (token_dispatcher.py): permute the tokens by destination rank, an NCCL
              all-to-all, then, with more than one local expert, sort the received chunks from [rank][expert] to
              [expert][rank] order (``dispatch_postprocess``: ``sort_chunks_by_idxs``; token drop transposes the
              padded chunks instead, the same copy); before the combine's all-to-all the chunks are sorted back
              (``combine_preprocess``). Each sort reads and writes every routed row; the backward sorts the
              gradients the same way. The model providers' dispatcher (Qwen3, DeepSeek-V3, gpt-oss:
              ``moe_token_dispatcher_type = "alltoall"``) and what the DGX-B200 and DGX-H100 performance recipes run.
    flex      ``MoEFlexTokenDispatcher`` with DeepEP or HybridEP: each way one fused kernel permutes, exchanges and
              sorts ("permute + dispatch a2a + permute", ``_HybridEPManager``), no separate sort. Megatron-Bridge
              sets it with ``moe_flex_dispatcher_backend`` (HybridEP on GB200/GB300 NVL72 only,
              ``apply_flex_dispatcher_backend``), as its GB200 and GB300 Qwen3 and DeepSeek-V3 recipes do.

The exchange itself is the law's all-to-all either way (the catalog's collectives). ``with_sorts`` adds the
alltoall dispatcher's own: its sorts as memory-bound ops of the routed experts, each reading and writing the bytes
its all-to-all carries, after the dispatch and before the combine, in every pass; and the second all-to-all of
the dispatch, the routed rows' probabilities (``token_dispatch``; flex carries them in its kernel). Only with
EP > 1 (the all-to-alls exist) and more than one local expert. The host's kernel counts (``host.DISPATCH``) are the alltoall
dispatcher's for both.
"""
from __future__ import annotations

import copy

from ..core import passes
from ..core.errors import IronlawError
from ..core.graph import Graph, Op, dtype_bytes

DISPATCHERS = ("alltoall", "flex")
DEFAULT = "alltoall"
SORT, UNSORT = "moe_sort_chunks", "moe_unsort_chunks"     # after the dispatch / before the combine (forward)
PROBS_BYTES = 4.0                                          # a routed row's probability, fp32


def check(value, ep: int) -> str:
    """``--moe-dispatcher``: one of ``DISPATCHERS``; flex needs expert parallelism."""
    name = DEFAULT if value is None else value
    if name not in DISPATCHERS:
        raise IronlawError(f"--moe-dispatcher takes {' or '.join(DISPATCHERS)} (Megatron-Core's "
                           f"moe_token_dispatcher_type), got '{name}'")
    if name != DEFAULT and ep == 1:
        raise IronlawError(f"--moe-dispatcher {name} exchanges the routed tokens over the expert-parallel group; "
                           f"add --ep > 1")
    return name


def local_experts(meta: dict) -> float:
    """Expert slots per rank of a stage graph (its meta's ``ep``; redundant slots included)."""
    return meta.get("expert_slots", meta.get("experts", 0)) / max(meta.get("ep", 1), 1)


def with_sorts(sg: Graph, dispatcher: str) -> Graph:
    """The per-device graph ``sg`` (after ``parallel.tp_shard``) with the alltoall dispatcher's sorts by local
    expert beside its all-to-alls; ``sg`` itself for flex, without EP or with one local expert."""
    if dispatcher != "alltoall" or sg.meta.get("ep", 1) == 1 or local_experts(sg.meta) <= 1:
        return sg
    ops = list(sg.ops)
    out: list[Op] = []
    for i, op in enumerate(ops):
        dispatch = op.kind == "collective" and op.module == "ep" and ".dispatch" in op.name
        combine = op.kind == "collective" and op.module == "ep" and ".combine" in op.name
        if combine:
            expert = _nearest_expert(ops[i - 1::-1] if i else [], op)
            out.append(_sort(op, expert, UNSORT))
        out.append(op)
        if dispatch:
            expert = _nearest_expert(ops[i + 1:], op)
        if (dispatch or combine) and (passes.of(expert.name) is passes.Pass.BACKWARD) == combine:
            out.append(_probs(op, sg.meta.get("hidden")))
        if dispatch:
            out.append(_sort(op, expert, SORT))
    return Graph(sg.name, sg.phase, sg.dtype, out, footprint=dict(sg.footprint), meta=dict(sg.meta),
                 uncounted_ops=dict(sg.uncounted_ops))


def _probs(a2a: Op, hidden) -> Op:
    """The all-to-all of the routed rows' probabilities beside the tokens' (``token_dispatch``), fp32 (the Qwen3
    and DeepSeek-V3 providers' ``moe_router_dtype``): the forward's dispatch and, in the backward, their gradients
    with the dispatch's backward (ironlaw's ``.combine.bwd``, after the experts' backward)."""
    rows = a2a.network_bytes / (hidden * dtype_bytes(a2a.dtype)) if hidden else 0.0
    op = copy.copy(a2a)
    op.name = "ep.alltoall.probs" + (".bwd" if a2a.name.endswith(".bwd") else "")
    op.network_bytes = rows * PROBS_BYTES
    op.attrs = dict(a2a.attrs)
    return op


def _nearest_expert(ops, default: Op) -> Op:
    """The first op of the routed experts in ``ops`` (the all-to-all itself if none): its pass is the sort's."""
    return next((op for op in ops if op.module == "experts"), default)


def _sort(a2a: Op, expert: Op, name: str) -> Op:
    """The sort beside ``a2a``, in the pass of ``expert``, the expert op next to it. In the backward the
    gradients arrive through the combine's all-to-all (named ``.dispatch.bwd`` here: it feeds the experts'
    backward) and are sorted as the forward's unsort undoes, and leave sorted back as its sort: the backward's
    op after the dispatch is the unsort's backward, the one before the combine the sort's."""
    p = passes.of(expert.name)
    if p is passes.Pass.BACKWARD:
        name = passes.backward_of(UNSORT if name == SORT else SORT)
    elif p is passes.Pass.RECOMPUTE:
        name = passes.recompute_of(name)
    layers = {"per_layer": a2a.attrs["per_layer"]} if "per_layer" in a2a.attrs else {}
    nbytes = a2a.network_bytes
    return Op(name, "elementwise", flops=0.0, bytes={"activations": 2.0 * nbytes}, dtype=a2a.dtype, count=a2a.count,
              module="experts", shapes="the routed rows, chunks by local expert", bytes_written=nbytes,
              attrs=layers | {"role": "sort", "expert": "routed"})


def notes(rows: list[dict]) -> list[str]:
    """The step's note on the sorts (``rows``: the stage's law rows), none without them."""
    t = sum(r["time_s"] for r in rows if r["name"].split(".")[0] in (SORT, UNSORT))
    if not t:
        return []
    return [f"Megatron-Core's alltoall token dispatcher sorts the routed rows by local expert after each dispatch and "
            f"back before each combine, forward and backward: {1e3 * t:.1f} ms per micro-batch (--moe-dispatcher "
            f"flex fuses them into DeepEP's or HybridEP's exchange)"]
