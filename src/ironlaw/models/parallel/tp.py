"""Tensor parallelism: ``tp_shard`` splits each op of a graph over the TP group by the rule registered for its role
(``SHARDING``: column- and row-parallel linears, heads; norms and residual adds replicated, split with sequence
parallelism) and inserts the TP collectives where Megatron puts them (an all-reduce per sublayer and pass; with
sequence parallelism a reduce-scatter and an all-gather, and in the backward the re-gather of the column GEMM's input
for its weight gradient), and the expert all-to-alls around the experts (``experts``).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ...core import passes
from ...core.errors import IronlawError
from ...core.gemmshape import attention_kernel_parts, attention_regime, window_kernel
from ...core.graph import Graph, Op, dtype_bytes
from ...core.registry import registrar
from ...machine.network.topology import build as build_topology
from .experts import expert_all_to_alls
from .kvheads import kv_head_replicas, replicated_kv_weight_bytes
from .layout import collective_op, group
from .plan import make_plan
from .roles import base_name, is_backward, role, sublayer
from .shards import expert_param


def kv_cache_split(meta: dict, tp: int) -> int:
    """The ranks of a tensor-parallel group of ``tp`` that divide the KV cache between them. Key/value heads split
    over the ranks (a GQA head held by several ranks when tp exceeds them: min(tp, kv_heads)). Multi-head latent
    attention caches ONE latent per token that every head reads, so each TP rank keeps all of it: 1 (SGLang's
    DP-attention guide and PR #1970, "Support DP MLA … to reduce replicated KV cache"; vLLM gives MLA one KV head,
    "MLA is always replicated as the hidden dim can't be split": vllm/distributed/kv_transfer/kv_connector/utils.py).
    Attention data parallelism instead gives each rank its own sequences and their whole cache
    (``serving.parallel``)."""
    if meta.get("kv_shared_by_heads"):
        return 1
    return max(min(tp, int(meta.get("kv_heads", meta.get("heads", tp)) or tp)), 1)


# The builders say what each op is to parallelism in ``op.attrs["role"]`` (``workloads.common.linear``'s
# ``role``; backward ops keep their forward's); ``tp_shard`` splits an op by the rule registered for its role.
SHARDING: dict[str, Callable] = {}            # role → rule(op, new, at: TpSplit): splits the copy ``new``
COLUMN_ROLES = ("column", "head")             # input replicated, output split over TP (head: the LM head, whose
                                              # output the vocabulary-parallel loss reads split: no collective)


sharding = registrar(SHARDING, "sharding")     # @sharding(*roles): the tensor-parallel rule for ops of those roles


@dataclass
class TpSplit:
    """What a sharding rule reads: the TP degree, sequence parallelism, the ranks that divide the KV cache
    (``kv_cache_split``), the ranks each KV head is held by (``kvheads.kv_head_replicas``), and each linear's
    activation split as its forward set it (for its backward)."""
    tp: int
    sp: bool
    kv: int
    ratio: dict = field(default_factory=dict)
    replicas: int = 1
    heads: int = 0

    def share(self, op: Op) -> float:
        """The part of ``op`` one rank runs: 1/tp, its K/V part (``attrs["kv_share"]``) replicas/tp."""
        s = op.attrs.get("kv_share", 0.0) if self.replicas > 1 else 0.0
        return (1.0 - s + s * self.replicas) / self.tp


def _split(new: Op, tp: int, kv: int | None = None, share: float | None = None) -> None:
    f = 1.0 / tp if share is None else share
    new.flops, new.vector_flops = new.flops * f, new.vector_flops * f
    new.bytes = {k: v / kv if k == "kv_cache" and kv is not None else v * f for k, v in new.bytes.items()}
    new.bytes_written = new.bytes_written * f


@sharding("column", "head", "row")
def _linear(op: Op, new: Op, at: TpSplit) -> None:
    """Column-parallel (input replicated, output split) and row-parallel (input split, output full, then
    reduced) linears: FLOPs and weights over tp; activations as the forward splits them (the backward at the
    forward's ratio; a captured linear's matmuls share it through ``attrs["linear"]``); ``nk`` the device's
    share of N (column) or of K (row), the other way round for a captured dgrad (x's gradient: N is K's)."""
    base, bwd, column = op.attrs.get("linear", base_name(op.name)), is_backward(op), op.attrs["role"] in COLUMN_ROLES
    tp, ratio, f = at.tp, at.ratio, at.share(op)              # f: 1/tp, more where K/V heads are replicated
    if not bwd:
        act, w = op.bytes.get("activations", 0.0), op.bytes_written
        read = act - w
        split = read + w * f if column else read * f + w
        ratio[base] = split / np.where(act > 0, act, 1.0)
    new.flops, new.vector_flops = op.flops * f, op.vector_flops * f
    new.bytes = {k: (v * ratio.get(base, f) if k == "activations" else v * f) for k, v in op.bytes.items()}
    if "nk" in op.attrs:
        n, k = op.attrs["nk"]
        new.attrs = {**op.attrs, "nk": (n * f, k) if column != (op.attrs.get("grad") == "dgrad") else (n, k * f)}
    if not bwd and column:                                    # a column-parallel op writes its share of the output
        new.bytes_written = op.bytes_written * f
    elif op.attrs.get("grad") == "wgrad" or (op.attrs.get("grad") == "dgrad" and not column):
        new.bytes_written = op.bytes_written * f              # a weight's gradient, a row's input gradient: split


@sharding("heads", "activation", "loss", "embedding", "optimizer")
def _split_all(op: Op, new: Op, at: TpSplit) -> None:
    """Split by heads (attention, rotary, per-head norms, the CP merge), by the column GEMM's output (the
    activation) or by the vocabulary (embedding, loss): every byte and FLOP over tp, the KV cache over the
    ranks that divide it. A captured optimizer step updates each rank's share of the weights (the builders'
    ``optimizer`` op has no role: ``train_step`` sizes it). A matmul batched over heads keeps its share of them
    in ``nk``'s N."""
    _split(new, at.tp, at.kv, at.share(op))
    if "nk" in op.attrs:
        n, k = op.attrs["nk"]
        new.attrs = {**op.attrs, "nk": (n / at.tp, k)}
    if "cache_write_width" in op.attrs:                  # the KV heads a rank writes: kv / tp, at least one
        new.attrs = {**new.attrs, "cache_write_width": op.attrs["cache_write_width"] * at.replicas / at.tp}
    if at.replicas > 1 and "kv_new_share" in op.attrs:    # an attention on one KV head: its new K/V and the cache
        _one_kv_head_bytes(op, new, at)                   # it writes are that head's, 1/(tp / replicas) of them
    if at.replicas > 1 and "mnk" in op.attrs:
        new.attrs = {**new.attrs, **_one_kv_head(op.attrs, at)}


def _one_kv_head_bytes(op: Op, new: Op, at: TpSplit) -> None:
    """The new K/V an attention reads (``attrs["kv_new_share"]`` of its activations) and the K/V it writes to the
    cache (``attrs["kv_write_share"]`` of its written bytes) on a rank that holds one KV head: replicas / tp of
    them, the query and output heads' 1 / tp."""
    def part(total, s):
        return total * (1.0 - s + s * at.replicas) / at.tp
    if "activations" in op.bytes:
        new.bytes["activations"] = part(op.bytes["activations"], op.attrs["kv_new_share"])
    new.bytes_written = part(op.bytes_written, op.attrs.get("kv_write_share", 0.0))


def _one_kv_head(attrs: dict, at: TpSplit) -> dict:
    """An attention's kernel and shape on a rank that holds one KV head (``kvheads``): its heads / tp query heads
    grouped on that head (g = heads / tp), the kernel regime that group selects (``attention_regime``) and
    M = the query rows per sequence × g (a prefill over ``WIDE_GQA`` heads per KV head: the query rows alone)."""
    parts = attention_kernel_parts(attrs.get("kernel", ""))
    if parts is None or parts[1].startswith("_mla"):
        return {}
    phase, regime = parts
    heads, kv = at.heads, at.tp // at.replicas
    g = heads // at.tp
    m, n, k = attrs["mnk"]
    rows = m / heads * kv if not (phase == "prefill" and regime == "_wide") else m      # query rows per sequence
    new = attention_regime(regime.startswith("_window"), g, 1, int(k), phase == "decode")
    kernel = attrs["kernel"][:len(attrs["kernel"]) - len(regime)] + new
    out = {"kernel": kernel, "mnk": (rows if phase == "prefill" and new == "_wide" else rows * g, n, k)}
    if phase == "decode" and "history" not in attrs and window_kernel(g, 1, int(k)) == "mmha":
        out["history"] = n        # a decode moved to MMHA splits the whole sequence, its keys (s + 1), as the
    return out                    # builder states it (``models.workloads.attention``)


@sharding("norm", "residual", "dropout", "router", "permute", "combine", "pooler", "cast", "replicated")
def _replicated(op: Op, new: Op, at: TpSplit) -> None:
    """On the full hidden state on every rank (dropout: after the reduction; a cast follows its tensor,
    ``precision.py``; replicated: a captured op on whole tensors, ``capture.roles``), split with sequence
    parallelism or where the op says its tensor is (``tp_split``)."""
    if at.sp or op.attrs.get("tp_split"):
        _split(new, at.tp)


def tp_shard(g: Graph, tp: int, sp: bool = False, grp: tuple | None = None, ep: int = 1,
             ep_grp: tuple | None = None) -> Graph:
    """The per-device graph of ``g`` under tensor parallelism ``tp`` (and expert parallelism ``ep``): each op
    split by the rule of its role (``SHARDING``), the TP collectives after each row-parallel forward and each
    column-parallel backward, the expert all-to-alls around the experts."""
    if tp == 1 and ep == 1:
        return g
    meta = g.meta
    if ("hidden" not in meta or "tokens" not in meta) and not meta.get("captured"):
        raise IronlawError(f"{g.name}: tensor parallelism needs a transformer built by ironlaw (hidden size and "
                           f"tokens known) or a captured model")
    grp = grp or (tp, 1)
    act_bytes = (meta["tokens"] * meta["hidden"] * dtype_bytes(g.dtype)     # one [tokens, hidden] tensor
                 if "hidden" in meta and "tokens" in meta else None)        # captured: per op
    slots_per_expert = meta.get("expert_slots", meta.get("experts", 1)) / max(meta.get("experts", 1), 1)
    at = TpSplit(tp, sp, kv_cache_split(meta, tp), replicas=kv_head_replicas(meta, tp), heads=int(meta.get("heads", 0)))
    ops: list[Op] = []
    for op in g.ops:
        if op.kind == "collective" or passes.is_optimizer(op.name):
            ops.append(op)
            continue
        new = copy.copy(op)
        new.bytes = dict(op.bytes)
        if role(op) in SHARDING:
            SHARDING[role(op)](op, new, at)
        elif tp > 1:                                          # expert parallelism alone splits no op
            where = f" (module '{op.module}')" if op.module else ""
            raise IronlawError(f"op '{op.name}' of {g.name} has no tensor-parallel rule{where}: its role "
                               f"({role(op) or 'none'}) is unknown; tensor parallelism works on graphs of "
                               f"ironlaw's transformer builder and on captured models whose roles capture can tell")
        if ep > 1 and expert_param(op) and "weights" in new.bytes:
            new.bytes["weights"] = new.bytes["weights"] * slots_per_expert / ep      # (E + redundant) / E slots
            if "gradients" in new.bytes:
                new.bytes["gradients"] = new.bytes["gradients"] * slots_per_expert / ep
        _parts_follow(op, new)
        ops.append(new)
        ops += _tp_collectives(op, tp, sp, act_bytes, grp, g.dtype) if tp > 1 and not _summed_first(op, g) else []
        if ep > 1 and expert_param(op) and role(op) in ("column", "row"):
            expert_all_to_alls(ops, op, tp, act_bytes * meta.get("experts_per_token", 1) / tp, ep_grp or (ep, 1),
                                g.dtype)
    out = Graph(f"{g.name} [tp {tp}{', sp' if sp else ''}{f', ep {ep}' if ep > 1 else ''}]", g.phase, g.dtype, ops,
                footprint=dict(g.footprint), meta=dict(g.meta), uncounted_ops=dict(g.uncounted_ops))
    out.footprint = {k: v / (at.kv if k == "kv_cache" else tp) for k, v in g.footprint.items()
                     if k in ("weights", "kv_cache")} | \
        {k: v for k, v in g.footprint.items() if k not in ("weights", "kv_cache")}
    if "weights" in out.footprint and at.replicas > 1:                  # each rank's replicas of its K/V head
        out.footprint["weights"] = out.footprint["weights"] + replicated_kv_weight_bytes(meta, tp, dtype_bytes(g.dtype))
    out.meta.update(tp=tp, sequence_parallel=sp, ep=ep)
    return out


# attrs that state a part of an op's vector FLOPs or weight bytes (``core.weightonly``: the dequantization of weights
# stored narrower, their block scales): a rank's op holds that part of its own share
PARTS = {"dequant_flops": lambda o: o.vector_flops, "weight_scale_bytes": lambda o: o.bytes.get("weights", 0.0)}


def _parts_follow(op: Op, new: Op) -> None:
    """``new`` (a rank's share of ``op``) with each part ``PARTS`` names scaled as its whole was."""
    for key, whole in PARTS.items():
        if key in op.attrs and np.all(np.asarray(whole(op)) > 0):
            new.attrs = {**new.attrs, key: op.attrs[key] * (whole(new) / whole(op))}


def _summed_first(op: Op, g: Graph) -> bool:
    """Inference's routed experts beside a shared expert: no all-reduce of their own. The engines add the
    shared expert's partial output to the routed one and all-reduce the sum once per MoE layer (vLLM
    model_executor/models/deepseek_v2.py DeepseekV2MoE: the shared DeepseekV2MLP built with reduce_results=False,
    the fused MoE reducing the combined output; TensorRT-LLM _torch/models/modeling_deepseekv3.py
    Deepseekv3MoE.forward: ``shared_output + routed_output``, then one ``self.allreduce``). The shared expert's
    row-parallel GEMM, after the routed ones, carries that one all-reduce. Training keeps Megatron-Core's two
    (the shared expert's own row-parallel reduction and the token dispatcher's)."""
    return (g.phase in ("prefill", "decode") and bool(g.meta.get("shared_expert"))
            and op.attrs.get("expert") == "routed" and not is_backward(op))


def _tp_collectives(op: Op, tp: int, sp: bool, act_bytes, grp: tuple, dtype: str) -> list[Op]:
    """What Megatron runs after a row-parallel forward and a column-parallel backward: an all-reduce; with
    sequence parallelism a reduce-scatter and an all-gather, and in the backward the re-gather of the column
    GEMM's input for its weight gradient. Each marked with its ``TP_OVERLAP`` key (``attrs["tp_comm"]``).
    ``act_bytes`` None (a captured graph): the bytes of the tensor reduced, the op's output (a captured column's
    dgrad carries the backward's collectives, its wgrad none)."""
    bwd = is_backward(op)
    if role(op) != ("column" if bwd else "row") or op.attrs.get("grad") == "wgrad":
        return []
    act_bytes = op.bytes_written if act_bytes is None else act_bytes
    sub = sublayer(op)
    where = f"{'bwd' if bwd else 'fwd'}.{sub}"
    kinds = [("allreduce", where)]
    if sp:
        kinds = [("reducescatter", where), ("allgather", where)] + ([("allgather", f"wgrad.{sub}")] if bwd else [])
    return [collective_op(f"tp.{kind}.{at}", kind, act_bytes, grp, op, dtype, "tp", {"tp_comm": f"{kind}.{at}"})
            for kind, at in kinds]


def shard_inference(g: Graph, hw, options: dict) -> Graph:
    """``ironlaw analyze … --phase prefill|decode --tp N``: the per-device graph of tensor-parallel inference."""
    gpus = options.get("gpus")
    for flag, most in (("pp", 1), ("dp", 1), ("ep", 1), ("redundant_experts", 0)):   # refused by what was typed,
        value = options.get(flag)         # before any device arithmetic; out of range: the plan's check
        if isinstance(value, int) and not isinstance(value, bool) and value > most:
            raise IronlawError(f"--{flag.replace('_', '-')} {options[flag]}: inference ({g.phase}) models tensor "
                               f"parallelism only; use --tp N with --gpus N (serve --max-throughput takes --pp, "
                               f"--ep and --redundant-experts)")
    tp, nodes = options.get("tp", 1), options.get("nodes")
    if gpus is None and isinstance(tp, int) and isinstance(nodes, int) and not isinstance(nodes, bool) \
            and nodes > 1 and tp % nodes:                  # no --gpus typed: name what was
        raise IronlawError(f"--nodes {nodes} needs --tp N --gpus N with N a multiple of {nodes}"
                           + (f" (got --tp {tp})" if "tp" in options else ""))
    plan = make_plan({"gpus": tp if gpus is None else gpus, **options}, g, hw)
    if plan.pp > 1 or plan.dp > 1:
        raise IronlawError(f"inference ({g.phase}) models tensor parallelism only; use --tp N with --gpus N")
    topo = build_topology(hw, plan.gpus, plan.nodes)
    return tp_shard(g, plan.tp, plan.sequence_parallel, group(1, plan.tp, topo.gpus_per_node))
