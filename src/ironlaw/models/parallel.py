"""Many devices: tensor, pipeline, context, data and expert parallelism and ZeRO/FSDP sharding (Megatron-LM's
knobs).

    plan        --gpus --nodes --tp --pp --cp --dp --ep --global-batch --micro-batch --interleave
                --sequence-parallel --recompute none|selective|full --zero 0|1|2|3 (--fsdp = --zero 3)
                --expert-imbalance --tp-comm-overlap --overlap-p2p --grad-fp32 --moe-a2a-overlap;
                gpus = tp × pp × cp × dp
    tp_shard    Graph → per-device Graph: matmul/attention ops split over the TP group (column- and
                row-parallel linears, heads), norms and residual adds replicated (split with sequence
                parallelism), TP collectives inserted where Megatron puts them (an all-reduce per sublayer
                and pass; with sequence parallelism a reduce-scatter and an all-gather, and in the backward
                the re-gather of the column GEMM's input for its weight gradient); expert
                all-to-all dispatch and combine around the experts (token-dropless, balanced unless
                --expert-imbalance: ``expert_load``)
    cp_shard    Graph → per-device Graph under context parallelism: seq/cp tokens per rank; the K/V ring
                overlapped with attention (``cp_ring_exposed``), the merge of its steps after it (``cp_merge``)
    train_step  the step on the slowest pipeline stage: m micro-batches of forward+backward, the pipeline
                bubble ((pp−1)/v micro-batch times, v = --interleave), stage-to-stage send/recv (1/tp of
                the activation per rank, all-gathered over the TP group: Megatron's scatter/gather), the
                data-parallel gradient reduction (overlapped with the backward of the last micro-batch on
                ``ironlaw.law.critical_path``'s network stream) or FSDP's per-layer gathers and reduce-scatters
                (``fsdp_exposed_s``), the optimizer step; each GEMM at the η its kernels' rows allow
                (``ironlaw.models.gemm_rows``: tokens/tp per ring-exchange step under --tp-comm-overlap); FP8/MXFP8
                GEMMs (``ironlaw.models.precision``) when the graph's dtype is one; layers split over the pipeline's
                model chunks evenly or as Megatron's layouts split them (``stage_layers``); memory per
                device; tokens/s per device; model FLOPs, hardware FLOPs,
                MFU = model FLOPs / (step time × the dtype's peak × gpus) (``MODEL_FLOPS``)

Ranks are laid out as Megatron does: TP fastest, then CP, DP, PP (rank = t + tp·(c + cp·(d + dp·s))); a group
of ranks spaced ``stride`` apart spans ``stride·size / gpus_per_node`` nodes, so the topology decides which
link each collective uses. Every rank of a node belongs to one group of each kind, so a node holds
G / (ranks per node of one group) groups of a kind, and they run the same collective at the same time
(same layer, same micro-batch): between nodes they share the node's network ports and ceiling
(``network.collectives.inter_node_Bps``), inside a node they do not (NVSwitch is non-blocking).
Activation memory per device follows Korthikanti et al. 2022 ("Reducing activation recomputation"): of the
34·s·b·h bytes a layer saves, 24 split over TP and 10 do not unless sequence parallelism splits them too.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields, replace
from typing import Callable

import numpy as np

from ..core.errors import IronlawError
from .gemm_rows import with_kernel_rows
from ..core import passes
from ..core.graph import Graph, Op, dtype_bytes
from ..core.registry import registrar
from ..machine.network.topology import build as build_topology, check_count, nodes_for
from . import dispatcher, host, nvfp4, offload
from .precision import in_layers

RECOMPUTE = ("none", "selective", "full")
ACT_SPLIT_FRACTION = 24.0 / 34.0                              # Korthikanti et al. 2022, Eq. 2
CP_MERGE_BYTES = {"fwd": (10.0, 12.0), "bwd": (10.0, 6.0)}    # (per ring step, once) per output element: cp_merge
MAX_IMBALANCE = 64.0                                          # --expert-imbalance beyond this is a typo


@dataclass
class Plan:
    gpus: int = 1
    nodes: int = 1
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    global_batch: int = 1
    micro_batch: int = 1
    interleave: int = 1
    sequence_parallel: bool = False
    recompute: str = "none"
    zero: int = 0
    cp: int = 1
    expert_imbalance: float = 1.0
    tp_comm_overlap: bool = False              # TP all-gather/reduce-scatter pipelined with the GEMMs (TE userbuffers)
    overlap_p2p: bool = False                  # interleaved 1F1B: stage sends overlapped with the next chunk
    grad_fp32: bool = False                    # gradients accumulated and reduced in fp32 (Megatron's main_grad)
    moe_a2a_overlap: bool = False              # expert all-to-alls beside another micro-batch's compute
    cuda_graph: tuple = ()                     # parts of a layer captured in CUDA graphs (``host.SCOPES``)
    redundant_experts: int = 0                 # extra expert slots holding replicas of hot experts (EPLB)
    offload_layers: int = 0                    # layers whose saved activations wait in host memory (``offload``)
    param_gather_exposed: bool = False         # ZeRO-1's parameter all-gather after the step, not overlapped with
                                               # the next forward (Megatron's overlap_param_gather off)
    moe_dispatcher: str = "alltoall"           # Megatron-Core's token dispatcher (``dispatcher``)

    @property
    def microbatches(self) -> int:
        return self.global_batch // (self.micro_batch * self.dp)


def make_plan(options: dict, graph: Graph | None = None, hw=None) -> Plan:
    """Read and check the plan; ``graph`` (a transformer) lets it check layers, heads, experts and the sequence
    too, ``hw`` gives the default node count (whole nodes of the catalog's node size, ``topology.nodes_for``;
    else 1). ``fsdp`` (True) is ``zero`` 3."""
    o = {k: v for k, v in (options or {}).items() if v is not None}
    if o.pop("fsdp", False):
        if o.get("zero", 3) != 3:
            raise IronlawError(f"--fsdp is --zero 3 (parameters, gradients and optimizer sharded); it does not "
                               f"combine with --zero {o['zero']}")
        o["zero"] = 3
    tp, pp, cp, ep = (check_count(o.get(k, 1), f"--{k}") for k in ("tp", "pp", "cp", "ep"))
    gpus, nodes, dp = _devices(o, hw, tp, pp, cp)
    if dp % ep:
        raise IronlawError(f"--ep {ep} does not divide --dp {dp}; expert parallelism splits the data-parallel group")
    mb, gb, v = _schedule(o, pp, dp)
    rc, zero, sp, imbalance = _options(o, tp, ep)
    if graph is not None and rc != "none" and "layers" not in graph.meta:
        raise IronlawError(f"--recompute {rc} needs a transformer built by ironlaw (layers known)")
    red = _redundant(o, ep)
    if graph is not None:
        _check_model(graph, tp, pp, v, ep, cp, red)
    off = o.get("offload_layers", 0)
    if off and (graph is None or "layers" not in graph.meta):
        raise IronlawError("--offload-activations needs a transformer built by ironlaw (layers known)")
    off = offload.check(off, graph.meta["layers"] / pp) if off else 0
    overlap = bool(o.get("tp_comm_overlap", False))
    if overlap and not sp:
        raise IronlawError("--tp-comm-overlap pipelines the all-gather and reduce-scatter of sequence parallelism "
                           "with the GEMMs; add --sequence-parallel")
    p2p = bool(o.get("overlap_p2p", False))
    if p2p and v == 1:
        raise IronlawError("--overlap-p2p overlaps the stage sends of the interleaved schedule; add --interleave > 1")
    a2a = bool(o.get("moe_a2a_overlap", False))
    if a2a and ep == 1:
        raise IronlawError("--moe-a2a-overlap overlaps the expert all-to-alls with another micro-batch's compute; "
                           "add --ep > 1")
    exposed = bool(o.get("param_gather_exposed", False))
    if exposed and zero != 1:
        raise IronlawError(f"--param-gather-exposed is the distributed optimizer's (--zero 1) parameter all-gather "
                           f"left after the step; --zero {zero} has {'none' if zero == 0 else 'its own gathers'}")
    return Plan(gpus, nodes, tp, pp, dp, ep, gb, mb, v, sp, rc, zero, cp, imbalance, overlap, p2p,
                bool(o.get("grad_fp32", False)), a2a, graph_scopes(o.get("cuda_graph", ())), red, off, exposed,
                dispatcher.check(o.get("moe_dispatcher"), ep))


def _redundant(o: dict, ep: int) -> int:
    """``--redundant-experts N``: N extra expert slots over the EP group (DeepSeek's EPLB: 256 + 32 over 72)."""
    r = o.get("redundant_experts", 0)
    if isinstance(r, bool) or not isinstance(r, int) or r < 0:
        raise IronlawError(f"--redundant-experts is a count of extra expert slots (≥ 0), got {r!r}")
    if r and ep == 1:
        raise IronlawError("--redundant-experts spreads replicas of hot experts over the EP group; add --ep > 1")
    return r


def graph_scopes(value) -> tuple:
    """``--cuda-graph attn,moe_router,moe_preprocess`` (or a sequence): the parts captured in CUDA graphs."""
    from .host import SCOPES
    items = [x.strip() for x in value.split(",")] if isinstance(value, str) else list(value)
    bad = [x for x in items if x not in SCOPES]
    if bad:
        raise IronlawError(f"--cuda-graph takes {', '.join(SCOPES)} (comma-separated), got '{bad[0]}'")
    return tuple(x for x in SCOPES if x in items)


def _devices(o: dict, hw, tp: int, pp: int, cp: int) -> tuple[int, int, int]:
    """(gpus, nodes, dp): the devices equal tp × pp × cp × dp."""
    model = tp * pp * cp
    names = f"--tp {tp} × --pp {pp}{f' × --cp {cp}' if cp > 1 else ''}"
    gpus = check_count(o.get("gpus", model * o.get("dp", 1) if "dp" in o else model), "--gpus")
    nodes = nodes_for(hw, gpus, o.get("nodes")) if hw is not None else check_count(o.get("nodes", 1), "--nodes")
    if gpus % model:
        raise IronlawError(f"{names} = {model} does not divide --gpus {gpus}; choose degrees whose product "
                           f"divides the devices")
    dp = check_count(o.get("dp", gpus // model), "--dp")
    if model * dp != gpus:
        raise IronlawError(f"{names} × --dp {dp} = {model * dp} devices, but --gpus is {gpus}; the product of the "
                           f"parallel degrees must equal the devices")
    if gpus % nodes:
        raise IronlawError(f"--gpus {gpus} does not divide evenly over --nodes {nodes}")
    return gpus, nodes, dp


def _schedule(o: dict, pp: int, dp: int) -> tuple[int, int, int]:
    """(micro-batch, global batch, interleave), checked against the pipeline."""
    mb = check_count(o.get("micro_batch", 1), "--micro-batch")
    gb = check_count(o.get("global_batch", mb * dp), "--global-batch")
    if gb % (mb * dp):
        raise IronlawError(f"--global-batch {gb} is not a multiple of --micro-batch {mb} × --dp {dp} = {mb * dp}")
    v = check_count(o.get("interleave", 1), "--interleave")
    m = gb // (mb * dp)
    if v > 1 and pp == 1:
        raise IronlawError("--interleave needs pipeline parallelism (--pp > 1)")
    if v > 1 and m % pp:
        raise IronlawError(f"--interleave needs the micro-batches per step ({m}) to be a multiple of --pp {pp}")
    return mb, gb, v


def _options(o: dict, tp: int, ep: int) -> tuple[str, int, bool, float]:
    """(recompute, zero, sequence parallel, expert imbalance)."""
    rc = o.get("recompute", "none")
    if rc not in RECOMPUTE:
        raise IronlawError(f"--recompute must be one of {', '.join(RECOMPUTE)}, got '{rc}'")
    zero = o.get("zero", 0)
    if zero not in (0, 1, 2, 3):
        raise IronlawError(f"--zero must be 0, 1, 2 or 3, got {zero!r}")
    sp = bool(o.get("sequence_parallel", False))
    if sp and tp == 1:
        raise IronlawError("--sequence-parallel needs tensor parallelism (--tp > 1)")
    f = o.get("expert_imbalance", 1.0)
    if isinstance(f, bool) or not isinstance(f, (int, float)) or not 1.0 <= f <= MAX_IMBALANCE:
        raise IronlawError(f"--expert-imbalance is the hottest expert's load over the mean, from 1 (balanced) to "
                           f"{MAX_IMBALANCE:g}; got {f!r}")
    if f > 1.0 and ep == 1:
        raise IronlawError("--expert-imbalance needs expert parallelism (--ep > 1)")
    return rc, zero, sp, float(f)


def _check_model(g: Graph, tp: int, pp: int, v: int, ep: int, cp: int = 1, redundant: int = 0) -> None:
    meta = g.meta
    if "layers" not in meta or "heads" not in meta:
        if meta.get("captured") and g.phase != "train" and pp == ep == cp == 1:
            return                         # tensor parallelism by the roles capture attaches (``tp_shard``)
        if tp > 1 or pp > 1 or ep > 1 or cp > 1:
            raise IronlawError(f"{g.name}: tensor/pipeline/context/expert parallelism needs a transformer built by "
                               f"ironlaw (layers and heads known; a captured model takes --tp alone, in inference); "
                               f"use data parallelism (--dp) only")
        return
    L, heads, kv = meta["layers"], meta["heads"], meta.get("kv_heads", meta["heads"])
    for what, n in (("attention heads", heads), ("key/value heads", kv)):
        if n % tp:
            raise IronlawError(f"--tp {tp} does not divide the {n} {what} of {g.name}; use a divisor of {n}")
    if uneven(L, pp, v) and pp * v > L:
        raise IronlawError(f"--pp {pp}{f' × --interleave {v}' if v > 1 else ''} = {pp * v} model chunks cannot hold "
                           f"the {L} layers of {g.name}; use at most {L} chunks")
    e = meta.get("experts", 0)
    if redundant > e:
        raise IronlawError(f"--redundant-experts {redundant} is more than the {e} experts of {g.name}")
    if ep > 1 and (not e or (e + redundant) % ep):
        extra = f" + {redundant} redundant" if redundant else ""
        raise IronlawError(f"--ep {ep} does not divide the {e} experts{extra} of {g.name}"
                           f"{'' if e else ' (a dense model: use --ep 1)'}"
                           f"{'; --redundant-experts N adds slots so that it does' if e and not redundant else ''}")
    seq = np.asarray(meta.get("seq", 0))
    if cp > 1 and np.any(seq % (2 * cp)):
        raise IronlawError(f"--cp {cp} does not divide the sequence of {int(np.max(seq))} tokens into 2 × cp = "
                           f"{2 * cp} equal chunks (the load-balanced causal ring); use a --seq that is a multiple "
                           f"of {2 * cp}")


# ---------------------------------------------------------------------- rank layout → groups
def group(stride: int, size: int, gpus_per_node: int) -> tuple[int, int, int]:
    """(ranks, nodes, concurrent) of a group of ``size`` ranks spaced ``stride`` apart.

    ``concurrent``: the groups of this kind with ranks on one node, all running the collective at once —
    every rank of a node is in one, so ``gpus_per_node / (ranks of one group per node)``. TP (stride 1)
    spanning nodes fills them: 1. DP and EP (stride tp): tp ≥ G puts one rank of a group per node, G
    groups (tp 8 on DGX: 8 DP groups share each node's 8 ports and its ceiling); tp < G, tp of them. A group
    that fills its nodes but part of the last (dp·cp = 78 ranks of stride 4 on nodes of 64: 16 on each of four
    nodes, 14 on a fifth) spans ⌈ranks / ranks per node⌉ nodes, paced by its fullest one (``topology.build``)."""
    if size == 1 or stride * size <= gpus_per_node:
        nodes = 1
    else:
        nodes = size if stride >= gpus_per_node else -(-size // max(gpus_per_node // stride, 1))
    return size, nodes, max(gpus_per_node // -(-size // nodes), 1)


# ---------------------------------------------------------------------- tensor parallelism
def base_name(name: str) -> str:
    return name.split(".")[0]


def _shapes(grp: tuple) -> str:
    shared = f", {grp[2]} groups per node at once" if len(grp) > 2 and grp[1] > 1 and grp[2] > 1 else ""
    return f"{grp[0]} ranks on {grp[1]} node(s){shared}"


def _coll(name: str, kind: str, nbytes, grp: tuple, of: Op, dtype: str, module: str, attrs: dict | None = None) -> Op:
    """A collective run as often as ``of``, the op it belongs to, and in its layers (``in_layers``)."""
    layers = {"per_layer": of.attrs["per_layer"]} if "per_layer" in of.attrs else {}
    return Op(name, "collective", network_bytes=nbytes, dtype=dtype, count=of.count, module=module,
              collective=kind, group=grp, shapes=_shapes(grp), attrs=layers | (attrs or {}))


def group_topology(hw, grp: tuple):
    """The topology of one group (ranks, nodes[, concurrent]) of ``group``."""
    return build_topology(hw, grp[0], grp[1], concurrent=grp[2] if len(grp) > 2 else 1, uneven=True)


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


# ---------------------------------------------------------------------- sharding rules, by op role
# The builders say what each op is to parallelism in ``op.attrs["role"]`` (``workloads.common.linear``'s
# ``role``; backward ops keep their forward's); ``tp_shard`` splits an op by the rule registered for its role.
SHARDING: dict[str, Callable] = {}            # role → rule(op, new, at: TpSplit): splits the copy ``new``
COLUMN_ROLES = ("column", "head")             # input replicated, output split over TP (head: the LM head, whose
                                              # output the vocabulary-parallel loss reads split: no collective)


sharding = registrar(SHARDING, "sharding")     # @sharding(*roles): the tensor-parallel rule for ops of those roles


@dataclass
class TpSplit:
    """What a sharding rule reads: the TP degree, sequence parallelism, the ranks that divide the KV cache
    (``kv_cache_split``), and each linear's activation split as its forward set it (for its backward)."""
    tp: int
    sp: bool
    kv: int
    ratio: dict = field(default_factory=dict)


def _split(new: Op, tp: int, kv: int | None = None) -> None:
    new.flops, new.vector_flops = new.flops / tp, new.vector_flops / tp
    new.bytes = {k: v / (kv if k == "kv_cache" and kv is not None else tp) for k, v in new.bytes.items()}
    new.bytes_written = new.bytes_written / tp


def is_backward(op: Op) -> bool:
    """A backward op: the builders' ``….backward``, or a captured linear's dgrad or wgrad (``attrs["grad"]``)."""
    return passes.is_backward(op.name) or "grad" in op.attrs


@sharding("column", "head", "row")
def _linear(op: Op, new: Op, at: TpSplit) -> None:
    """Column-parallel (input replicated, output split) and row-parallel (input split, output full, then
    reduced) linears: FLOPs and weights over tp; activations as the forward splits them (the backward at the
    forward's ratio; a captured linear's matmuls share it through ``attrs["linear"]``); ``nk`` the device's
    share of N (column) or of K (row), the other way round for a captured dgrad (x's gradient: N is K's)."""
    base, bwd, column = op.attrs.get("linear", base_name(op.name)), is_backward(op), op.attrs["role"] in COLUMN_ROLES
    tp, ratio = at.tp, at.ratio
    if not bwd:
        act, w = op.bytes.get("activations", 0.0), op.bytes_written
        read = act - w
        split = read + w / tp if column else read / tp + w
        ratio[base] = split / np.where(act > 0, act, 1.0)
    new.flops, new.vector_flops = op.flops / tp, op.vector_flops / tp
    new.bytes = {k: (v * ratio.get(base, 1.0 / tp) if k == "activations" else v / tp) for k, v in op.bytes.items()}
    if "nk" in op.attrs:
        n, k = op.attrs["nk"]
        new.attrs = {**op.attrs, "nk": (n / tp, k) if column != (op.attrs.get("grad") == "dgrad") else (n, k / tp)}
    if not bwd and column:                                    # a column-parallel op writes its share of the output
        new.bytes_written = op.bytes_written / tp
    elif op.attrs.get("grad") == "wgrad" or (op.attrs.get("grad") == "dgrad" and not column):
        new.bytes_written = op.bytes_written / tp             # a weight's gradient, a row's input gradient: split


@sharding("heads", "activation", "loss", "embedding", "optimizer")
def _split_all(op: Op, new: Op, at: TpSplit) -> None:
    """Split by heads (attention, rotary, per-head norms, the CP merge), by the column GEMM's output (the
    activation) or by the vocabulary (embedding, loss): every byte and FLOP over tp, the KV cache over the
    ranks that divide it. A captured optimizer step updates each rank's share of the weights (the builders'
    ``optimizer`` op has no role: ``train_step`` sizes it)."""
    _split(new, at.tp, at.kv)


@sharding("norm", "residual", "dropout", "router", "permute", "combine", "pooler", "cast", "replicated")
def _replicated(op: Op, new: Op, at: TpSplit) -> None:
    """On the full hidden state on every rank (dropout: after the reduction; a cast follows its tensor,
    ``precision.py``; replicated: a captured op on whole tensors, ``capture.roles``), split with sequence
    parallelism or where the op says its tensor is (``tp_split``)."""
    if at.sp or op.attrs.get("tp_split"):
        _split(new, at.tp)


def role(op: Op) -> str:
    return op.attrs.get("role", "")


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
    at = TpSplit(tp, sp, kv_cache_split(meta, tp))
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
        if ep > 1 and op.module == "experts" and "weights" in new.bytes:
            new.bytes["weights"] = new.bytes["weights"] * slots_per_expert / ep      # (E + redundant) / E slots
            if "gradients" in new.bytes:
                new.bytes["gradients"] = new.bytes["gradients"] * slots_per_expert / ep
        ops.append(new)
        ops += _tp_collectives(op, tp, sp, act_bytes, grp, g.dtype) if tp > 1 else []
        if ep > 1 and op.module == "experts" and role(op) in ("column", "row"):
            _expert_all_to_alls(ops, op, tp, act_bytes * meta.get("experts_per_token", 1) / tp, ep_grp or (ep, 1),
                                g.dtype)
    out = Graph(f"{g.name} [tp {tp}{', sp' if sp else ''}{f', ep {ep}' if ep > 1 else ''}]", g.phase, g.dtype, ops,
                footprint=dict(g.footprint), meta=dict(g.meta), uncounted_ops=dict(g.uncounted_ops))
    out.footprint = {k: v / (at.kv if k == "kv_cache" else tp) for k, v in g.footprint.items()
                     if k in ("weights", "kv_cache")} | \
        {k: v for k, v in g.footprint.items() if k not in ("weights", "kv_cache")}
    out.meta.update(tp=tp, sequence_parallel=sp, ep=ep)
    return out


def sublayer(op: Op) -> str:
    """The sublayer a linear belongs to: attention or MLP (its experts' included); a captured linear's is the one
    capture tells (``attrs["sublayer"]``: whether its split reaches an attention op)."""
    return op.attrs.get("sublayer") or ("attn" if op.module == "attn" else "mlp")


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
    return [_coll(f"tp.{kind}.{at}", kind, act_bytes, grp, op, dtype, "tp", {"tp_comm": f"{kind}.{at}"})
            for kind, at in kinds]


def _expert_all_to_alls(ops: list, op: Op, tp: int, nbytes, ep_grp: tuple, dtype: str) -> None:
    """The dispatch before the experts' first GEMM (up in the forward, down in the backward) and the combine
    after their last, appended around ``op``, the last op of ``ops``."""
    bwd = passes.is_backward(op.name)
    suffix = ".bwd" if bwd else ""
    if (role(op) == "column") != bwd:
        ops.insert(len(ops) - 1, _coll(f"ep.alltoall.dispatch{suffix}", "alltoall", nbytes, ep_grp, op, dtype, "ep"))
    else:
        ops.append(_coll(f"ep.alltoall.combine{suffix}", "alltoall", nbytes, ep_grp, op, dtype, "ep"))


def shard_inference(g: Graph, hw, options: dict) -> Graph:
    """``ironlaw analyze … --phase prefill|decode --tp N``: the per-device graph of tensor-parallel inference."""
    plan = make_plan({"gpus": options.get("gpus") or options.get("tp", 1), **options}, g, hw)
    if plan.pp > 1 or plan.dp > 1:
        raise IronlawError(f"inference ({g.phase}) models tensor parallelism only; use --tp N with --gpus N")
    topo = build_topology(hw, plan.gpus, plan.nodes)
    return tp_shard(g, plan.tp, plan.sequence_parallel, group(1, plan.tp, topo.gpus_per_node))


# ---------------------------------------------------------------------- gradient sync on the critical path
def grad_sync_exposed(sg: Graph, hw, kind: str, grp: tuple, composition: str,
                      grad_scale: float = 1.0) -> tuple[float, float]:
    """(total, exposed) seconds of the data-parallel gradient reduction of the last micro-batch.

    Scheduled by ``ironlaw.law.critical_path``: one collective per layer is issued on the network stream as soon
    as that layer's backward finishes (DDP/Megatron gradient buckets) and overlaps the backward of the layers
    below; the gradients outside the layers (embeddings, head) follow the last backward op; the optimizer and
    the end of the step wait for all of them. TP collectives stay blocking (they are not marked grad_sync).
    """
    from ..law import critical_path, law
    L = max(op.count for op in sg.ops)
    layer_bwd = [i for i, op in enumerate(sg.ops) if passes.is_backward(op.name) and in_layers(op, L)]
    if not layer_bwd:
        return 0.0, 0.0
    layer_grads = grad_scale * sum(float(np.max(sg.ops[i].bytes.get("gradients", 0.0))) * sg.ops[i].count
                                   for i in layer_bwd) / L
    other = grad_scale * sum(float(np.max(op.bytes.get("gradients", 0.0))) * op.count for i, op in enumerate(sg.ops)
                if passes.is_backward(op.name) and i not in layer_bwd)
    ops = list(sg.ops)
    sync = [Op(f"dp.grad.{kind}.layer", "collective", network_bytes=layer_grads, dtype=sg.dtype, count=L,
               module="dp", collective=kind, group=grp, shapes=_shapes(grp), attrs={"grad_sync": True})]
    ops.insert(max(layer_bwd) + 1, sync[0])
    if other > 0:
        ops.append(Op(f"dp.grad.{kind}.rest", "collective", network_bytes=other, dtype=sg.dtype, module="dp",
                      collective=kind, group=grp, shapes=_shapes(grp), attrs={"grad_sync": True}))
    # phase "infer": only the ops marked grad_sync may overlap; TP collectives in the backward stay blocking
    g = Graph(sg.name, "infer", sg.dtype, ops, footprint=dict(sg.footprint), meta=dict(sg.meta))
    est = law.predict(g, hw, composition)
    comm = sum(r["time_s"] for r in est.rows() if r["name"].startswith("dp.grad."))
    blocking = critical_path.from_estimate(est, overlap_comm=False).time_s
    overlapped = critical_path.from_estimate(est, overlap_comm=True).time_s
    return comm, max(overlapped - (blocking - comm), 0.0)


# ---------------------------------------------------------------------- the training step
MODEL_FLOPS = ("3 × the forward's FLOPs as the graph counts them: 2·m·n·k per GEMM (6·N per token for the "
               "weights a token meets, LM head included), causal attention's QKᵀ and PV over s(s+1)/2 pairs per "
               "sequence, and the elementwise ops; no recomputation")


@dataclass(frozen=True)
class StepBreakdown:
    """One optimizer step by part (``train_step``), in seconds per step but ``microbatches`` (a count):
    the micro-batches with their TP collectives, and each part that adds to them or hides under them (a
    ``…_comm_s``/``…_ring_s`` is the whole transfer, its ``…_exposed_s`` what the step waits for)."""
    step_s: float
    microbatch_s: float
    microbatches: int
    compute_and_tp_s: float
    tp_ep_network_s: float
    pipeline_bubble_s: float
    pipeline_p2p_s: float
    cp_ring_s: float
    cp_ring_exposed_s: float
    fsdp_comm_s: float
    fsdp_exposed_s: float
    dp_grad_comm_s: float               # FSDP's gathers and reduce-scatters included
    dp_grad_exposed_s: float
    zero_param_gather_s: float
    optimizer_s: float
    host_exposed_s: float
    host_issue_s: float
    offload_exposed_s: float

    def to_dict(self) -> dict:
        """The ``breakdown`` of ``ironlaw.train-step/1``: the fields by name, in this order."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class DeviceMemory:
    """Bytes per device of one plan (``memory_bytes``: floats, or arrays with one layout per element) and the
    parameters the device holds (a count: what the optimizer step and the gradient reduction move)."""
    weights_bytes: object
    gradients_bytes: object
    optimizer_bytes: object
    activations_bytes: object
    params_per_device: object

    @property
    def total_bytes(self):
        return self.weights_bytes + self.gradients_bytes + self.optimizer_bytes + self.activations_bytes

    def footprint(self) -> dict:
        """The four classes under a graph's footprint names (``weights``, ``gradients``, ``optimizer``,
        ``activations``)."""
        return {"weights": self.weights_bytes, "gradients": self.gradients_bytes, "optimizer": self.optimizer_bytes,
                "activations": self.activations_bytes}

    def as_floats(self) -> "DeviceMemory":
        return DeviceMemory(*(float(getattr(self, f.name)) for f in fields(self)))

    def to_dict(self) -> dict:
        """The ``memory_per_device`` of ``ironlaw.train-step/1``: the footprint, ``params_per_device`` and
        ``total_bytes``."""
        return {**self.footprint(), "params_per_device": self.params_per_device, "total_bytes": self.total_bytes}


@dataclass(frozen=True)
class StepFlops:
    """Work of one optimizer step over the whole job (all data-parallel replicas): model FLOPs
    (``MODEL_FLOPS``, MFU's numerator), hardware FLOPs (the ops run, recomputation included) and tokens."""
    model_per_step: float
    hardware_per_step: float
    tokens_per_step: float

    def to_dict(self) -> dict:
        """The ``flops`` of ``ironlaw.train-step/1``: the fields by name, in this order."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class StepEstimate:
    plan: Plan
    per_microbatch: object                     # Estimate: one micro-batch, forward+backward, slowest stage
    breakdown: StepBreakdown
    memory: DeviceMemory
    flops: StepFlops
    mfu: float
    bottleneck: dict
    topology: str
    notes: list[str] = field(default_factory=list)
    peak_flops: float = 0.0                    # the dtype's peak per device, MFU's denominator

    @property
    def step_s(self) -> float:
        return self.breakdown.step_s

    @property
    def time_s(self) -> float:
        return self.step_s

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.flops.tokens_per_step / (self.step_s * self.plan.gpus)

    def to_dict(self) -> dict:
        from dataclasses import asdict
        return {"schema": "ironlaw.train-step/1", "plan": asdict(self.plan), "topology": self.topology,
                "time_s": self.step_s, "step_s": self.step_s, "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
                "mfu": self.mfu, "mfu_convention": f"model FLOPs / (time_s × gpus × {self.peak_flops:.4g} FLOP/s, "
                                                   f"the dtype's dense peak); model FLOPs: {MODEL_FLOPS}",
                "breakdown": self.breakdown.to_dict(), "memory_per_device": self.memory.to_dict(), "flops": self.flops.to_dict(),
                "bottleneck": self.bottleneck, "notes": self.notes, "per_microbatch": self.per_microbatch.to_dict(top=20)}


def stage_layers(L: int, pp: int, v: int = 1) -> tuple[int, int, int]:
    """(layers of a middle stage, of the first, of the last). Layers divide evenly over the n = pp·v model
    chunks; or the embedding and the loss each take one layer's place when L + 2 does (Megatron-LM's
    account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split: Llama 3.1 405B's 126
    layers on pp 8 × interleave 8); else (``uneven``) the chunks fill with c = ⌈L/n⌉ layers from the first,
    the last ones holding what is left: the chunk sizes of Megatron-Bridge's pipeline_model_parallel_layout map
    for DeepSeek-V3's 61 layers (pp 16: [E + 4] + 14 × [4] + [1 + loss]), and the fullest stage of its
    "Et|(tt|)*30mL" on pp 8 × interleave 4; the stage with the LM head is the lightest. Stage s holds chunks
    s, s + pp, …; a middle stage here is the second."""
    mid, first, last = stage_layers_of(L, np.asarray([pp]), np.asarray([v]))
    return int(mid[0]), int(first[0]), int(last[0])


def stage_layers_of(L: int, pp: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``stage_layers`` over arrays of pipeline degrees ``pp`` and interleaves ``v`` (one layout per element)."""
    n = pp * v
    even, plus2 = (pp == 1) | (L % n == 0), (L + 2) % n == 0
    per = (-(-L // n))[:, None]                     # uneven: ⌈L/n⌉ per chunk from the first, what is left after
    j = np.arange(int(np.max(v)))[None, :]

    def stage(s):                                   # Σ over the chunks s, s + pp, … of the stage
        chunk = np.broadcast_to(s, pp.shape)[:, None] + j * pp[:, None]
        return np.where(j < v[:, None], np.clip(L - chunk * per, 0, per), 0).sum(axis=1)
    mid = np.where(even, L // pp, np.where(plus2, (L + 2) // pp, stage(1)))
    first = np.where(even, L // pp, np.where(plus2, (L + 2) // pp - 1, stage(0)))
    last = np.where(even, L // pp, np.where(plus2, (L + 2) // pp - 1, stage(pp - 1)))
    return mid, first, last


def uneven(L: int, pp: int, v: int = 1) -> bool:
    """Whether ``stage_layers`` splits the layers with Megatron's uneven pipeline layout."""
    return pp > 1 and L % (pp * v) != 0 and (L + 2) % (pp * v) != 0


def uneven_note(L: int, n: int) -> str:
    """What ``stage_layers`` does with L layers over n chunks that do not take them evenly."""
    c = -(-L // n)
    full, rest = divmod(L, c)
    empty = n - full - (1 if rest else 0)
    return (f"the {L} layers split unevenly over {n} model chunks: {full} of {c} layers"
            f"{f', one of {rest}' if rest else ''}{f', {empty} with none' if empty else ''} (Megatron's "
            f"pipeline_model_parallel_layout)")


def stage_ops(g: Graph, plan: Plan) -> tuple[list[list[Op]], Op | None]:
    """Ops of the first and last pipeline stage (and of a middle one when the embedding and the loss take a
    layer's place: ``stage_layers``; one list when pp == 1), and the optimizer op."""
    L = g.meta.get("layers", -1)
    opt = next((op for op in g.ops if passes.is_optimizer(op.name)), None)
    ops = [op for op in g.ops if not passes.is_optimizer(op.name)]
    if plan.pp == 1:
        return [with_recompute(ops, L, L, plan.recompute)], opt
    middle, n_first, n_last = stage_layers(L, plan.pp, plan.interleave)
    first = [op for op in ops if in_layers(op, L) or first_stage(op)]
    last = [op for op in ops if in_layers(op, L) or not first_stage(op)]
    stages = [with_recompute(first, L, n_first, plan.recompute), with_recompute(last, L, n_last, plan.recompute)]
    if middle != n_first:
        stages.insert(1, with_recompute([op for op in ops if in_layers(op, L)], L, middle, plan.recompute))
    return stages, opt


def compute_s_by_pass(rows: list[dict]) -> tuple[float, float]:
    """(forward, backward) seconds of the non-collective rows of a micro-batch (recomputed ops count as
    forward)."""
    fwd = sum(r["time_s"] for r in rows if r["kind"] != "collective" and not passes.is_backward(r["name"]))
    bwd = sum(r["time_s"] for r in rows if r["kind"] != "collective" and passes.is_backward(r["name"]))
    return fwd, bwd


def first_stage(op: Op) -> bool:
    """Whether the op runs on the first pipeline stage only (the embedding's: the builder's
    ``attrs["stage"]``)."""
    return op.attrs.get("stage") == "first"


def with_recompute(ops: list[Op], L: int, layers: int, recompute: str) -> list[Op]:
    """The stage's ops with its ``layers`` of the ``L`` layers (an op of some layers only, in proportion),
    the recomputed forward ops at the start of the backward."""
    out, rc = [], []
    for op in ops:
        layer = L > 0 and in_layers(op, L)
        if layer and layers != L:
            op = copy.copy(op)
            op.count = op.count * layers / L
        out.append(op)
        fwd = not passes.is_backward(op.name)
        if layer and fwd and (recompute == "full" or (recompute == "selective" and op.kind == "attention")):
            r = copy.copy(op)
            r.name = passes.recompute_of(op.name)
            rc.append(r)
    i = next((j for j, op in enumerate(out) if passes.is_backward(op.name)), len(out))
    return out[:i] + rc + out[i:]


def megatron_flops(batch: float, seq: float, layers: int, hidden: int, vocab: int) -> float:
    """FLOPs of one GPT training step with full activation recomputation as Megatron-LM counts them when it
    reports teraFLOP/s per GPU (Narayanan et al. 2021, eq. 3): 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) — the
    dense GEMMs and attention of forward, backward and the recomputed forward, and the LM head."""
    return 96.0 * batch * seq * layers * hidden ** 2 * (1.0 + seq / (6.0 * hidden) + vocab / (16.0 * layers * hidden))


def recompute_flops(g: Graph, recompute: str):
    """FLOPs the backward re-runs: every layer's forward (full) or the attention core (selective)."""
    L = g.meta.get("layers")
    return sum((op.flops * op.count for op in g.ops
                if in_layers(op, L) and not passes.is_backward(op.name) and not passes.is_optimizer(op.name)
                and (recompute == "full" or (recompute == "selective" and op.kind == "attention"))), 0.0) \
        if recompute != "none" else 0.0


def params_split(meta: dict) -> tuple[float, float]:
    """(dense, expert) parameters of the whole model; expert weights inferred as (params − active)·E/(E − k)."""
    params = float(meta["params"])
    expert = 0.0
    if meta.get("experts"):
        e, k = meta["experts"], meta.get("experts_per_token", 1)
        expert = (params - float(meta.get("active_params", params))) * e / max(e - k, 1)
    return params - expert, expert


def expert_slots(meta: dict, plan: Plan) -> float:
    """Expert slots per expert: (E + redundant) / E, the replicas the EP group holds (1 for a dense model)."""
    e = meta.get("experts", 0)
    return (e + plan.redundant_experts) / e if e else 1.0


def params_per_device(g: Graph, plan: Plan) -> tuple[float, float]:
    """(dense, expert) parameters one device holds: dense over tp·pp, experts (their replicas too) over tp·pp·ep."""
    dense, expert = params_split(g.meta)
    return dense / (plan.tp * plan.pp), expert * expert_slots(g.meta, plan) / (plan.tp * plan.pp * plan.ep)


def memory_bytes(meta: dict, by: float, grad_b: float, act, tokens, tp, pp, dp, ep, cp, v, zero, full, sp,
                 slots=1.0, offloaded=0.0) -> DeviceMemory:
    """Bytes per device of the layouts given (scalars, or arrays with one layout per element): weights and
    gradients in bf16 (``grad_b`` bytes per gradient: fp32 with ``grad_fp32``; plus the FP8 copies of the
    weights in FP8 training), fp32 master weights and Adam moments; ZeRO (``zero``) shards them over the
    data-parallel group, which context parallelism joins (dp·cp ranks hold the same weights; experts over
    dp·cp/ep); activations (``act``, one micro-batch's, already over cp; ``tokens`` per micro-batch) over tp
    (with sequence parallelism ``sp``, else Korthikanti's 24 of 34) and cp; ``full``: full recomputation keeps
    each layer's input only; ``offloaded``: the share of the activations waiting in host memory (``offload``).
    Dense parameters over tp·pp, experts (``slots`` slots per expert: redundant replicas) over tp·pp·ep."""
    from .precision import weight_copy_bytes
    dense, expert = params_split(meta)
    dense, expert = dense / (tp * pp), expert * slots / (tp * pp * ep)
    p_dev = dense + expert
    shards = dp * cp
    sharded = dense / shards + expert / np.maximum(shards // ep, 1)     # one ZeRO shard of this device's params
    a = ACT_SPLIT_FRACTION
    tp_factor = np.where(sp, 1.0 / tp, (1 - a) + a / tp)
    inflight = 1.0 + np.where(v > 1, (pp - 1) / (pp * v), 0.0)
    act_dev = act * tp_factor * inflight
    if np.any(full):
        L = meta["layers"]
        inputs = L * tokens / cp * meta["hidden"] * by
        act_dev = np.where(full, inputs * np.where(sp, 1.0 / tp, 1.0) * inflight + act / L * tp_factor, act_dev)
    if np.any(offloaded):                    # the offloaded layers' share waits in host memory
        act_dev = act_dev * (1.0 - offloaded)
    weight_b = by + weight_copy_bytes(meta)
    return DeviceMemory(np.where(zero >= 3, sharded, p_dev) * weight_b, np.where(zero >= 2, sharded, p_dev) * grad_b,
                        12.0 * np.where(zero >= 1, sharded, p_dev), act_dev, p_dev)


def plan_memory(g: Graph, plan: Plan, zero: int, recompute: str) -> DeviceMemory:
    """``memory_bytes`` of one plan, as floats."""
    act = float(np.max(g.footprint.get("activations", 0.0))) / plan.cp
    tokens = float(np.max(g.meta["tokens"])) if recompute == "full" else 0.0
    slots = expert_slots(g.meta, plan)                                  # replicas held on the EP group
    off = offload.fraction(plan.offload_layers, g.meta["layers"], plan.pp) if plan.offload_layers else 0.0
    mem = memory_bytes(g.meta, dtype_bytes(g.dtype), _grad_bytes(g, plan), act, tokens, plan.tp, plan.pp, plan.dp,
                       plan.ep, plan.cp, plan.interleave, zero, recompute == "full", plan.sequence_parallel, slots,
                       off)
    return mem.as_floats()


def _grad_bytes(g: Graph, plan: Plan) -> float:
    """Bytes per gradient: fp32 with ``grad_fp32`` (Megatron's main_grad buffer), else the graph's dtype."""
    return 4.0 if plan.grad_fp32 else dtype_bytes(g.dtype)


def _check_fits(g: Graph, hw, plan: Plan, mem: DeviceMemory) -> None:
    from ..core.units import fmt_size
    cap = hw.memory[hw.device_tier].capacity_bytes
    need = mem.total_bytes
    if need <= cap:
        return
    need_full = plan_memory(g, plan, 3, "full").total_bytes
    if need_full > cap:
        raise IronlawError(f"{g.meta.get('spec', g.name)} cannot fit on {plan.gpus} × {hw.name} even fully sharded "
                           f"(--zero 3 --recompute full): {fmt_size(need_full)} per device exceeds "
                           f"{fmt_size(cap)} by {fmt_size(need_full - cap)}; use more devices, larger "
                           f"--tp/--pp/--cp, or a smaller --micro-batch")
    raise IronlawError(f"this plan needs {fmt_size(need)} per device, {fmt_size(need - cap)} more than the "
                       f"{fmt_size(cap)} of {hw.name} (weights {fmt_size(mem.weights_bytes)}, gradients "
                       f"{fmt_size(mem.gradients_bytes)}, optimizer {fmt_size(mem.optimizer_bytes)}, activations "
                       f"{fmt_size(mem.activations_bytes)}); try --zero 3, --recompute full, or larger --tp/--pp/--cp")


def groups(plan: Plan, gpus_per_node: int, nodes: int = 1) -> dict[str, tuple]:
    """The groups of each kind, ranks laid out as Megatron does (TP fastest, then CP, DP, PP:
    rank = t + tp·(c + cp·(d + dp·s))): ``dp`` is the data-parallel group gradients are reduced over, which
    joins the CP ranks (dp·cp, stride tp); ``ep`` splits it (stride tp); ``pp`` the stage-to-stage pair."""
    G = gpus_per_node
    out = {"tp": group(1, plan.tp, G), "cp": group(plan.tp, plan.cp, G), "dp": group(plan.tp, plan.dp * plan.cp, G),
           "ep": group(plan.tp, plan.ep, G)}
    # a rank of stage s sends to its peer in s + 1, tp·cp·dp ranks further: a pair spaced that far apart, across
    # nodes when a stage fills its nodes, and then every rank of the node sends at once (G pairs). Stages
    # smaller than a node still cross at a node's edge when there are several: the slowest boundary, where
    # the last stage of a node sends its tp·cp·dp ranks to the next node, sets the pipeline's pace
    out["pp"] = pp_group(plan.tp * plan.cp * plan.dp, plan.pp, G, nodes)
    return out


def pp_group(stage: int, pp: int, gpus_per_node: int, nodes: int) -> tuple[int, int, int]:
    """The stage-to-stage pair of ``group``: a rank of stage s sends to its peer in s + 1, ``stage`` = tp·cp·dp
    ranks further."""
    grp = group(stage, 2, gpus_per_node)
    if pp > 1 and nodes > 1 and grp[1] == 1:
        grp = (2, 2, min(stage, gpus_per_node))
    return grp


def _shared_network_notes(hw, plan: Plan, grp: dict) -> list[str]:
    """One line per kind of group whose concurrent groups share a node's network (what each gets), and per kind
    whose groups fill their last node partly (timed on the fullest)."""
    from ..machine.network.calibration import for_hardware
    from ..machine.network.collectives import inter_node_Bps
    from ..core.units import fmt
    out = []
    for what, key, fam, used in (("data-parallel gradient sync", "dp", "collective", plan.dp * plan.cp > 1),
                                 ("stage-to-stage send/recv", "pp", "p2p", plan.pp > 1),
                                 ("context-parallel K/V ring", "cp", "p2p", plan.cp > 1),
                                 ("expert all-to-all", "ep", "p2p", plan.ep > 1)):
        t = group_topology(hw, grp[key])
        if used and t.inter is not None and t.concurrent > 1:
            out.append(f"{what}: {t.concurrent} groups per node run at once and share its network, "
                       f"{fmt(inter_node_Bps(t, fam, for_hardware(hw)), 'B/s')} each between nodes")
        if used and t.gpus % t.nodes:
            out.append(f"{what}: each group's {t.gpus} ranks span {t.nodes} nodes unevenly, at most "
                       f"{t.gpus_per_node} on one; timed on the fullest node")
    return out


# ---------------------------------------------------------------------- context parallelism, experts, FSDP
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
    """One step of the ring: a rank sends its K and V chunk (2·kv_dim/tp × ``tokens`` on the rank) to the next."""
    from ..machine.network.collectives import collective_time
    kv_dim = max(meta.get("kv_heads", meta["heads"]) // tp, 1) * meta["head_dim"]
    a, b = collective_time("sendrecv", 2.0 * kv_dim * tokens * by, group_topology(hw, cp_grp))
    return a + b


def ring_passes(op: Op) -> float:
    """Chunks an attention passes around the ring per step: K and V forward, and their gradients backward."""
    return 2.0 if passes.is_backward(op.name) else 1.0


def cp_ring_step_exposed(send, passes: float, t_attention, cp: int):
    """Seconds of the ring one attention invocation (``t_attention``) leaves exposed: cp − 1 steps, each
    sending ``passes`` chunks beside one cp-th of the attention."""
    return (cp - 1) * np.maximum(send * passes - t_attention / cp, 0.0)


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


def expert_load(sg: Graph, plan: Plan) -> Graph:
    """The hottest rank of an expert-parallel MoE: with the hottest expert at ``expert_imbalance`` × the mean
    load and the other experts of its rank at the mean, that rank's expert GEMMs and all-to-all traffic are
    1 + (f − 1)·ep/E times the balanced share (E/ep experts per rank)."""
    f, e = plan.expert_imbalance, sg.meta.get("expert_slots", sg.meta.get("experts", 0))
    if f == 1.0 or plan.ep == 1 or not e:
        return sg
    r = 1.0 + (f - 1.0) * plan.ep / e
    ops = []
    for op in sg.ops:
        if op.module in ("experts", "ep"):
            op = copy.copy(op)
            op.flops, op.vector_flops, op.network_bytes = op.flops * r, op.vector_flops * r, op.network_bytes * r
            op.bytes = {k: (v * r if k == "activations" else v) for k, v in op.bytes.items()}
        ops.append(op)
    return Graph(sg.name, sg.phase, sg.dtype, ops, footprint=dict(sg.footprint), meta=dict(sg.meta),
                 uncounted_ops=dict(sg.uncounted_ops))


def fsdp_exposed_s(sg: Graph, hw, plan: Plan, grp: dict, rows: list[dict], p_dev: float) -> tuple[float, float]:
    """(total, exposed) seconds per micro-batch of FSDP's (``--zero 3``) parameter all-gathers and gradient
    reduce-scatters over the data-parallel group, one layer at a time as Megatron-FSDP and PyTorch FSDP run
    them: the forward gathers layer i+1 while layer i computes; the backward gathers each layer again (freed
    after its forward) and reduce-scatters layer i's gradients while layer i−1 computes. Exposed: what the
    forward's and the backward's compute cannot cover, plus the first gather and the last reduce-scatter."""
    if plan.zero < 3 or plan.dp * plan.cp == 1:
        return 0.0, 0.0
    layers = max(op.count for op in sg.ops)
    by = dtype_bytes(sg.dtype)
    ag, rs = fsdp_comm_s(hw, grp["dp"], p_dev * by / layers, _grad_bytes(sg, plan), by, layers)
    fwd, bwd = compute_s_by_pass(rows)
    return float(2.0 * ag + rs), float(fsdp_exposed(ag, rs, fwd, bwd, layers))


def fsdp_comm_s(hw, dp_grp: tuple, per_layer, grad_b: float, by: float, layers):
    """(gathers, reduce-scatters) seconds of one pass of FSDP over ``layers`` layers of ``per_layer`` parameter
    bytes each (``by`` bytes per parameter, ``grad_b`` per gradient) over the data-parallel group."""
    from ..machine.network.collectives import collective_time
    topo = group_topology(hw, dp_grp)
    ag = layers * sum(collective_time("allgather", per_layer, topo))
    rs = layers * sum(collective_time("reducescatter", per_layer * grad_b / by, topo))
    return ag, rs


def fsdp_exposed(ag, rs, fwd, bwd, layers):
    """FSDP's exposed seconds per micro-batch: what the forward's (``fwd``) and the backward's (``bwd``) compute
    cannot cover of the ``layers`` gathers ``ag`` and reduce-scatters ``rs``, plus the first gather and the last
    reduce-scatter."""
    return np.maximum(ag - fwd, 0.0) + ag / layers + np.maximum(ag + rs - bwd, 0.0) + rs / layers


def shard(sg: Graph, hw, plan: Plan, grp: dict) -> Graph:
    """The per-device graph of one stage's ops under ``plan``: context parallelism, then tensor and expert
    parallelism (``grp``: ``groups``' tp and ep), the token dispatcher's sorts (``dispatcher``), the hottest expert
    rank's load, each GEMM's kernel rows."""
    sg = cp_shard(sg, plan.cp)
    sg = tp_shard(sg, plan.tp, plan.sequence_parallel, grp["tp"], plan.ep, grp["ep"])
    sg = dispatcher.with_sorts(sg, plan.moe_dispatcher)
    sg = expert_load(sg, plan)
    return with_kernel_rows(sg, hw, plan.tp, plan.tp_comm_overlap, plan.ep)


def _stage_estimates(g: Graph, hw, plan: Plan, stages: list, mem: DeviceMemory, grp: dict, composition: str):
    """(estimate, per-device graph) of one micro-batch on the slowest pipeline stage."""
    from ..law import law
    fp = mem.footprint()
    best = None
    for i, ops in enumerate(stages):
        sg = Graph(g.name, "train", g.dtype, ops, footprint=fp, meta=dict(g.meta), uncounted_ops=dict(g.uncounted_ops))
        sg = shard(sg, hw, plan, grp)
        sg.footprint = dict(fp)
        sg.name = f"{g.name} · stage {'1' if i == 0 else plan.pp} of {plan.pp} · micro-batch {plan.micro_batch}"
        est = law.predict(sg, hw, composition)
        if best is None or float(est.time_s) > float(best[0].time_s):
            best = (est, sg)
    return best


def _pipeline_p2p_s(g: Graph, hw, plan: Plan, grp: dict, t_mb: float) -> float:
    """``pipeline_p2p_s`` of one plan: the boundary activation of one micro-batch (tokens/cp × hidden)."""
    if plan.pp == 1:
        return 0.0
    tokens_mb = float(np.max(g.meta.get("tokens", g.meta.get("batch", 1)))) / plan.cp
    one = p2p_transfer_s(hw, tokens_mb * g.meta["hidden"] * dtype_bytes(g.dtype), plan.tp, plan.sequence_parallel,
                         grp["pp"], grp["tp"])
    return float(pipeline_p2p_s(one, plan.pp, plan.interleave, plan.microbatches, t_mb, plan.overlap_p2p))


def p2p_transfer_s(hw, full, tp: int, sp, pp_grp: tuple, tp_grp: tuple):
    """One stage-to-stage transfer of a boundary activation of ``full`` bytes: each TP rank sends 1/tp of it
    (Megatron's scatter/gather, Narayanan et al. 2021 §4.1; with sequence parallelism it is already split);
    without sequence parallelism the receiving stage all-gathers it back over the TP group (NVLink inside a
    node)."""
    from ..machine.network.collectives import collective_time
    a, b = collective_time("sendrecv", full / tp, group_topology(hw, pp_grp))
    one = a + b
    if tp > 1 and not sp:
        ga, gb = collective_time("allgather", full, group_topology(hw, tp_grp))
        one = one + (ga + gb)
    return one


def pipeline_p2p_s(one, pp, v, m, t_mb, overlap):
    """Stage-to-stage send/recv of one step of ``m`` micro-batches, ``one`` transfer each way per micro-batch and
    virtual stage (``v``: the interleave); blocking unless ``overlap``: then each send runs under the next model
    chunk's compute, the warm-up and the cool-down (pp − 1 transfers each) wait for theirs, and a send longer
    than a chunk (``t_mb``/v) exposes the difference. Scalars or arrays of layouts; 0 without a pipeline."""
    blocking = 2.0 * v * m * one
    hidden = 2.0 * (pp - 1) * one + 2.0 * v * m * np.maximum(one - t_mb / v, 0.0)
    return np.where(pp > 1, np.where(overlap, hidden, blocking), 0.0)


def _dp_grad_sync(sg: Graph, hw, plan: Plan, grp: dict, p_dev: float, composition: str) -> tuple[float, float, float]:
    """(total, exposed, after-step gather) seconds of the data-parallel gradient reduction of the last
    micro-batch (ZeRO < 3; FSDP reduces every micro-batch's gradients in ``fsdp_exposed``). ZeRO-1's parameter
    all-gather rides in the all-reduce's bytes, overlapped, unless the plan leaves it after the step
    (``param_gather_exposed``: then a reduce-scatter and the gather, as ZeRO-2's, at the precision's bytes per
    parameter, ``precision.param_gather_bytes``)."""
    from ..machine.network.collectives import collective_time
    from .precision import param_gather_bytes
    if plan.dp * plan.cp == 1 or plan.zero >= 3:
        return 0.0, 0.0, 0.0
    after = plan.zero == 2 or plan.param_gather_exposed
    kind = "reducescatter" if after else "allreduce"
    comm, exposed = grad_sync_exposed(sg, hw, kind, grp["dp"], composition, _grad_bytes(sg, plan) / dtype_bytes(sg.dtype))
    gather = 0.0
    if after:                          # updated parameter shards gathered back after the step
        by = param_gather_bytes(sg.meta, dtype_bytes(sg.dtype)) if plan.param_gather_exposed else dtype_bytes(sg.dtype)
        a, b = collective_time("allgather", p_dev * by, group_topology(hw, grp["dp"]))
        gather = float(a + b)
    return comm, exposed, gather


def _optimizer_s(g: Graph, hw, plan: Plan, p_dev: float, composition: str) -> float:
    """The optimizer step on the device's shard and the low-precision weight copies it leaves
    (``param_quantize_s``)."""
    shard = np.asarray([p_dev / (plan.dp * plan.cp if plan.zero >= 1 else 1)])
    return float(optimizer_s(g, hw, shard, composition)[0]
                 + param_quantize_s(g, hw, np.asarray([p_dev]), shard, composition)[0])


def param_quantize_s(g: Graph, hw, p_dev: np.ndarray, shard: np.ndarray, composition: str) -> np.ndarray:
    """Seconds per step of the low-precision weight copies of a device holding ``p_dev`` parameters of which
    ``shard`` are its optimizer's (``precision.param_step_bytes``): one memory-bound op through the law."""
    from ..law import law
    from .precision import param_step_bytes, WIDE
    b = param_step_bytes(g.meta, np.asarray(p_dev, dtype=float), np.asarray(shard, dtype=float))
    if not np.any(b):
        return np.zeros(np.shape(b))
    op = Op("param_quantize", "elementwise", bytes={"weights": b}, dtype=WIDE, bytes_written=0.5 * b)
    og = Graph("param_quantize", "train", g.dtype, [op])
    return np.asarray(law.predict(og, hw, composition).total_s, dtype=float).reshape(-1)


def optimizer_s(g: Graph, hw, opt_params: np.ndarray, composition: str) -> np.ndarray:
    """The optimizer step of each of ``opt_params`` (the parameters of a device's shard) when ``g`` has one:
    one ``law.predict`` over the distinct shard sizes (AdamW is linear in them)."""
    from dataclasses import replace
    from ..law import law
    from .workloads.common import optimizer_step
    if not any(passes.is_optimizer(op.name) for op in g.ops):
        return np.zeros(opt_params.shape)
    u, inv = np.unique(opt_params, return_inverse=True)
    one = optimizer_step(1.0, g.dtype)
    op = replace(one, flops=one.flops * u, bytes={k: v * u for k, v in one.bytes.items()},
                 bytes_written=one.bytes_written * u)
    og = Graph("optimizer", "train", g.dtype, [op], footprint={"optimizer": 12.0 * u})
    return np.asarray(law.predict(og, hw, composition).total_s, dtype=float).reshape(-1)[inv.reshape(-1)]


def microbatch_s(est, hidden, ring_exposed, fsdp_exposed, host_exposed, offload_exposed=0.0):
    """(compute and TP/EP collectives, the whole micro-batch) on the slowest stage: the law's time ``est`` less
    what TP and EP overlap hide, then the context-parallel ring, FSDP's gathers, the host's wait
    (``host.step_term``) and the activation offload's copies left exposed."""
    t_est = est - hidden
    return t_est, t_est + ring_exposed + fsdp_exposed + host_exposed + offload_exposed


def step_s(m, t_mb, bubble, p2p, exposed, gather, opt, a2a_alone):
    """One optimizer step on the slowest stage: ``m`` micro-batches of ``t_mb``, the pipeline bubble and sends,
    the exposed gradient reduction, ZeRO-2's gather, the optimizer, and one micro-batch's all-to-alls that
    no other micro-batch hides."""
    return m * t_mb + bubble + p2p + exposed + gather + opt + a2a_alone


def bubble_s(pp, v, t_mb):
    """The pipeline bubble: (pp − 1)/v micro-batch times (v: the interleave)."""
    return (pp - 1) / v * t_mb


def _bottleneck(est, step: float, shares: dict, host_why: str = "") -> dict:
    """What binds the step; the host term's account joins the reason where it owns 5% of the step or more."""
    top = max(shares, key=shares.get)
    host = f"; {host_why}" if host_why and shares.get("host", 0.0) >= 0.05 * step else ""
    if top == "compute":
        b = est.bottleneck()
        return {"resource": b["resource"], "share": top, "why": f"per micro-batch: {b['why']}{host}"}
    res = "network" if top == "network" else ("latency" if top in ("pipeline bubble", "host") else "bandwidth")
    return {"resource": res, "share": top, "why": f"{top} owns {100 * shares[top] / step:.0f}% of the step{host}"}


REDUNDANT_NOTE = ("{e} experts in {e} + {r} slots, {per} per rank over EP {ep}: the slots share the load evenly and "
                  "hold the replicas' weights and optimizer state; the replicas' gradient reduction among themselves "
                  "is not timed")
NO_HOST_NOTE = ("{hw} names no host CPU ([host]): the host's kernel launches and device→host syncs of an eager "
                "framework are not timed, and a step they bind runs slower than this")


def training_graph(spec: str, hw, seq, dtype, opts: dict | None = None, micro_batch=None) -> Graph:
    """The training graph of one micro-batch (``micro_batch``, else ``opts["micro_batch"]``, else 1; an array
    gives one graph over every size); ``dtype`` fp8|mxfp8 builds it in bf16 and lowers its linear GEMMs
    (``ironlaw.models.precision``)."""
    from . import precision, workloads
    opts = opts or {}
    low = dtype if dtype is not None and precision.is_low(dtype) else None
    batch = opts.get("micro_batch", 1) if micro_batch is None else micro_batch
    graph = workloads.resolve(workloads.Request(spec, phase="train", batch=batch, seq=seq,
                                                dtype=precision.WIDE if low else dtype,
                                                device="cuda" if hw.kind == "gpu" else "cpu", options=opts))
    return precision.lower(graph, low, hw.features.get("fp8_any_layout", False)) if low else graph


def lowered(g: Graph, hw) -> Graph:
    """``g`` as train_step runs it: a graph built in FP8/MXFP8 with its GEMMs lowered (``precision.lower``); NVFP4
    only where NVIDIA's recipe runs (``nvfp4.require``)."""
    from .precision import is_low, lower
    if is_low(g.dtype):
        g = lower(g, g.dtype, hw.features.get("fp8_any_layout", False))
    if g.meta.get("precision") == nvfp4.DTYPE:
        nvfp4.require(hw)                                      # NVIDIA's NVFP4 recipe, where it runs
    return g


def train_step(g: Graph, hw, plan: Plan, composition: str = "overlap") -> StepEstimate:
    """One optimizer step of ``g`` (a training graph of ONE micro-batch on one device) under ``plan``."""
    from ..machine.calibration import for_training
    if g.phase != "train":
        raise IronlawError(f"a training step needs --phase train (got '{g.phase}')")
    hw = for_training(hw)                                      # no serving-kernel tables in a training step
    g = lowered(g, hw)
    if plan.redundant_experts:
        g = Graph(g.name, g.phase, g.dtype, g.ops, footprint=dict(g.footprint), uncounted_ops=dict(g.uncounted_ops),
                  meta=dict(g.meta, expert_slots=g.meta["experts"] + plan.redundant_experts))
    peak = hw.peak(g.meta.get("precision", g.dtype))          # a dtype the device lacks is an error, first
    topo = build_topology(hw, plan.gpus, plan.nodes)
    grp = groups(plan, topo.gpus_per_node, plan.nodes)
    mem = plan_memory(g, plan, plan.zero, plan.recompute)
    _check_fits(g, hw, plan, mem)
    notes = _shared_network_notes(hw, plan, grp) + ([REDUNDANT_NOTE.format(
        e=g.meta["experts"], r=plan.redundant_experts, ep=plan.ep, per=g.meta["expert_slots"] // plan.ep)]
        if plan.redundant_experts else [])
    if "layers" in g.meta and uneven(g.meta["layers"], plan.pp, plan.interleave):
        notes.append(uneven_note(g.meta["layers"], plan.pp * plan.interleave))
    stages, _ = stage_ops(g, plan)
    est, sg = _stage_estimates(g, hw, plan, stages, mem, grp, composition)
    rows = est.rows()
    ring_s, ring_exposed = cp_ring_exposed(sg, hw, plan, grp, rows)
    fsdp_s, fsdp_exposed = fsdp_exposed_s(sg, hw, plan, grp, rows, mem.params_per_device)
    hidden_tp = (tp_overlap_hidden_s(sg.ops, [r["time_s"] for r in rows]) if plan.tp_comm_overlap else 0.0) + \
        (ep_overlap_hidden_s(rows) if plan.moe_a2a_overlap else 0.0)
    host_t = host.step_term(sg, rows, hw, plan.tp, plan.sequence_parallel, plan.ep, plan.cuda_graph)
    host_mb = host_t.exposed_s if host_t is not None else 0.0
    notes += [host_t.why()] if host_t is not None else [NO_HOST_NOTE.format(hw=hw.name)]
    notes += dispatcher.notes(rows)
    off_mb = _offload_s(g, hw, plan, rows, notes)
    t_est, t_mb = (float(x) for x in microbatch_s(float(est.time_s), hidden_tp, ring_exposed, fsdp_exposed, host_mb,
                                                   off_mb))
    m, v = plan.microbatches, plan.interleave
    net_mb = float(est.term("network_s")) + float(sum(r["latency_s"] for r in rows if r["kind"] == "collective")) \
        - hidden_tp
    p2p_s = _pipeline_p2p_s(g, hw, plan, grp, t_mb)
    if p2p_s:
        notes.append("stage-to-stage send/recv (1/tp per rank, scatter/gather) " + (
            "overlapped with the next model chunk but for the warm-up and cool-down" if plan.overlap_p2p else
            "counted on the critical path (not overlapped)"))
    bubble = float(bubble_s(plan.pp, v, t_mb))
    dp_s, exposed, gather_s = _dp_grad_sync(sg, hw, plan, grp, mem.params_per_device, composition)
    opt_s = _optimizer_s(g, hw, plan, mem.params_per_device, composition)
    a2a_alone = ep_overlap_hidden_s(rows) if plan.moe_a2a_overlap else 0.0     # one micro-batch has no partner
    step = float(step_s(m, t_mb, bubble, p2p_s, exposed, gather_s, opt_s, a2a_alone))
    flops = _step_flops(g, plan)
    breakdown = StepBreakdown(
        step_s=step, microbatch_s=t_mb, microbatches=m, compute_and_tp_s=m * t_est,
        tp_ep_network_s=m * net_mb + a2a_alone, pipeline_bubble_s=bubble, pipeline_p2p_s=p2p_s,
        cp_ring_s=m * ring_s, cp_ring_exposed_s=m * ring_exposed, fsdp_comm_s=m * fsdp_s, fsdp_exposed_s=m * fsdp_exposed,
        dp_grad_comm_s=dp_s + m * fsdp_s * (plan.zero >= 3), dp_grad_exposed_s=exposed,
        zero_param_gather_s=gather_s + m * fsdp_exposed, optimizer_s=opt_s, host_exposed_s=m * host_mb,
        host_issue_s=m * (host_t.issue_s if host_t else 0.0), offload_exposed_s=m * off_mb)
    shares = {"compute": m * (t_est - net_mb),
              "network": m * (net_mb + ring_exposed + fsdp_exposed) + p2p_s + exposed + gather_s + a2a_alone,
              "pipeline bubble": bubble, "optimizer": opt_s, "host": m * host_mb}
    return StepEstimate(plan, est, breakdown, mem, flops, flops.model_per_step / (step * peak * plan.gpus),
                        _bottleneck(est, step, shares, host_t.why() if host_t else ""), topo.describe(), notes, peak)


def _offload_s(g: Graph, hw, plan: Plan, rows: list[dict], notes: list) -> float:
    """Exposed seconds per micro-batch of ``--offload-activations`` (``offload``), the host memory checked and a
    note added; 0 without it."""
    from ..core.units import fmt, fmt_size
    n = plan.offload_layers
    if not n:
        return 0.0
    tier = offload.host_tier(hw)
    L = g.meta["layers"]
    whole = plan_memory(g, replace(plan, offload_layers=0), plan.zero, plan.recompute).activations_bytes
    held = whole * offload.fraction(n, L, plan.pp)
    if held > tier.capacity_bytes:
        raise IronlawError(f"--offload-activations {n} puts {fmt_size(held)} of activations per device in "
                           f"{tier.name}, more than its {fmt_size(tier.capacity_bytes)}")
    per_layer = float(np.max(g.footprint.get("activations", 0.0))) / plan.cp / L * \
        (1.0 / plan.tp if plan.sequence_parallel else (1 - ACT_SPLIT_FRACTION) + ACT_SPLIT_FRACTION / plan.tp)
    fwd, bwd = compute_s_by_pass(rows)
    copied, exposed = offload.exposed_s(n, per_layer, fwd, bwd, L / plan.pp, tier.bw_Bps)
    notes.append(f"activations of {n} layers per stage offloaded to {tier.name}: {fmt_size(held)} per device, "
                 f"{fmt(copied, 's')} of copies per micro-batch at {fmt(tier.bw_Bps, 'B/s')}, "
                 f"{fmt(exposed, 's')} not hidden under the layers' compute")
    return exposed


def _step_flops(g: Graph, plan: Plan) -> StepFlops:
    """Model FLOPs (``MODEL_FLOPS``), hardware FLOPs (with recomputation) and tokens of one step."""
    m = plan.microbatches
    tokens_mb = float(np.max(g.meta.get("tokens", g.meta.get("batch", 1))))
    hw_flops = float(np.max(g.flops)) + float(np.max(recompute_flops(g, plan.recompute)))
    return StepFlops(model_per_step=float(np.max(g.meta["model_flops"])) * m * plan.dp,
                     hardware_per_step=hw_flops * m * plan.dp, tokens_per_step=tokens_mb * m * plan.dp)
