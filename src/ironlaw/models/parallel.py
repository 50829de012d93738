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
from dataclasses import dataclass, field, replace

import numpy as np

from ..core.errors import IronlawError
from .gemm_rows import with_kernel_rows
from ..core.graph import Graph, Op, dtype_bytes
from ..machine.network.topology import build as build_topology, check_count, nodes_for
from . import host, nvfp4, offload
from .precision import in_layers

RECOMPUTE = ("none", "selective", "full")
COLUMN = {"attn_pre_proj", "mlp_up_proj", "lm_head"}          # input replicated, output split over TP
ROW = {"attn_post_proj", "mlp_down_proj"}                     # input split, output full (then all-reduced)
SPLIT = {"attn_rope", "attention", "attention_cp_merge", "mlp_act", "cross_entropy",
         "embedding"}                                         # every byte and FLOP split
REPLICATED = {"input_layernorm", "post_attention_layernorm", "attn_layernorm", "mlp_layernorm", "final_norm",
              "embedding_layernorm", "attn_residual_add", "mlp_residual_add", "moe_router", "moe_topk",
              "moe_permute", "moe_combine", "pooler_dense", "pooler_tanh",
              "embedding_dropout", "attn_dropout", "mlp_dropout"}      # dropout: on the full (reduced) hidden state
FIRST_STAGE = {"embedding", "embedding_layernorm", "embedding_dropout"}
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

    @property
    def microbatches(self) -> int:
        return self.global_batch // (self.micro_batch * self.dp)


OPTION_NAMES = ("gpus", "nodes", "tp", "pp", "dp", "ep", "cp", "global_batch", "micro_batch", "interleave",
                "sequence_parallel", "recompute", "zero", "fsdp", "expert_imbalance", "tp_comm_overlap", "overlap_p2p",
                "grad_fp32", "moe_a2a_overlap", "cuda_graph",
                "redundant_experts", "offload_layers")


def requested(options: dict) -> bool:
    """True when the user asked for more than one device or any parallel knob."""
    o = {k: v for k, v in (options or {}).items() if k in OPTION_NAMES and v not in (None, False)}
    return any(k not in ("gpus", "nodes") or v != 1 for k, v in o.items())


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
    return Plan(gpus, nodes, tp, pp, dp, ep, gb, mb, v, sp, rc, zero, cp, imbalance, overlap, p2p,
                bool(o.get("grad_fp32", False)), a2a, graph_scopes(o.get("cuda_graph", ())), red, off)


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
        if tp > 1 or pp > 1 or ep > 1 or cp > 1:
            raise IronlawError(f"{g.name}: tensor/pipeline/context/expert parallelism needs a transformer built by "
                               f"ironlaw (layers and heads known); use data parallelism (--dp) only")
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
def _base(name: str) -> str:
    return name.split(".")[0]


def _shapes(grp: tuple) -> str:
    shared = f", {grp[2]} groups per node at once" if len(grp) > 2 and grp[1] > 1 and grp[2] > 1 else ""
    return f"{grp[0]} ranks on {grp[1]} node(s){shared}"


def _coll(name: str, kind: str, nbytes, grp: tuple, of: Op, dtype: str, module: str) -> Op:
    """A collective run as often as ``of``, the op it belongs to, and in its layers (``in_layers``)."""
    layers = {"per_layer": of.attrs["per_layer"]} if "per_layer" in of.attrs else {}
    return Op(name, "collective", network_bytes=nbytes, dtype=dtype, count=of.count, module=module,
              collective=kind, group=grp, shapes=_shapes(grp), attrs=layers)


def _topology(hw, grp: tuple):
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


def tp_shard(g: Graph, tp: int, sp: bool = False, grp: tuple | None = None, ep: int = 1,
             ep_grp: tuple | None = None) -> Graph:
    """The per-device graph of ``g`` under tensor parallelism ``tp`` (and expert parallelism ``ep``)."""
    if tp == 1 and ep == 1:
        return g
    meta = g.meta
    if "hidden" not in meta or "tokens" not in meta:
        raise IronlawError(f"{g.name}: tensor parallelism needs a transformer built by ironlaw (hidden size and "
                           f"tokens known)")
    grp = grp or (tp, 1)
    kv = kv_cache_split(meta, tp)
    by = dtype_bytes(g.dtype)
    slots_per_expert = meta.get("expert_slots", meta.get("experts", 1)) / max(meta.get("experts", 1), 1)
    act_bytes = meta["tokens"] * meta["hidden"] * by                 # one [tokens, hidden] tensor
    ratio: dict[str, float] = {}
    ops: list[Op] = []
    for op in g.ops:
        base, bwd = _base(op.name), op.name.endswith(".backward")
        if op.kind == "collective" or base == "optimizer":
            ops.append(op)
            continue
        new = copy.copy(op)
        new.bytes = dict(op.bytes)
        if base in COLUMN or base in ROW:
            if not bwd:
                act, w = op.bytes.get("activations", 0.0), op.bytes_written
                read = act - w
                split = read + w / tp if base in COLUMN else read / tp + w
                ratio[base] = split / np.where(act > 0, act, 1.0)
            new.flops, new.vector_flops = op.flops / tp, op.vector_flops / tp
            new.bytes = {k: (v * ratio.get(base, 1.0 / tp) if k == "activations" else v / tp)
                         for k, v in op.bytes.items()}
            if "nk" in op.attrs:                              # each device holds 1/tp of N (column) or of K (row)
                n, k = op.attrs["nk"]
                new.attrs = {**op.attrs, "nk": (n / tp, k) if base in COLUMN else (n, k / tp)}
            if not bwd and base in COLUMN:                    # a column-parallel op writes its share of the output
                new.bytes_written = op.bytes_written / tp
        elif base in SPLIT:
            new.flops, new.vector_flops = op.flops / tp, op.vector_flops / tp
            new.bytes = {k: v / (kv if k == "kv_cache" else tp) for k, v in op.bytes.items()}
            new.bytes_written = op.bytes_written / tp
        elif base in REPLICATED or base in ("fp8_cast", "fp4_cast"):    # a cast follows its tensor (precision.py)
            if sp or op.attrs.get("tp_split"):
                new.flops, new.vector_flops = op.flops / tp, op.vector_flops / tp
                new.bytes = {k: v / tp for k, v in op.bytes.items()}
                new.bytes_written = op.bytes_written / tp
        elif tp > 1:                                          # expert parallelism alone splits no op
            raise IronlawError(f"op '{op.name}' of {g.name} has no tensor-parallel rule; tensor parallelism works "
                               f"on graphs of ironlaw's transformer builder")
        if ep > 1 and op.module == "experts" and "weights" in new.bytes:
            new.bytes["weights"] = new.bytes["weights"] * slots_per_expert / ep      # (E + redundant) / E slots
            if "gradients" in new.bytes:
                new.bytes["gradients"] = new.bytes["gradients"] * slots_per_expert / ep
        ops.append(new)
        if tp > 1 and ((not bwd and base in ROW) or (bwd and base in ("attn_pre_proj", "mlp_up_proj"))):
            where = f"{'bwd' if bwd else 'fwd'}.{'attn' if base.startswith('attn') else 'mlp'}"
            if sp:
                ops.append(_coll(f"tp.reducescatter.{where}", "reducescatter", act_bytes, grp, op, g.dtype, "tp"))
                ops.append(_coll(f"tp.allgather.{where}", "allgather", act_bytes, grp, op, g.dtype, "tp"))
                if bwd:                       # the column GEMM's input gathered again for its weight gradient
                    ops.append(_coll(f"tp.allgather.wgrad.{where[4:]}", "allgather", act_bytes, grp, op, g.dtype,
                                     "tp"))
            else:
                ops.append(_coll(f"tp.allreduce.{where}", "allreduce", act_bytes, grp, op, g.dtype, "tp"))
        if ep > 1 and op.module == "experts" and base in ("mlp_up_proj", "mlp_down_proj"):
            k = meta.get("experts_per_token", 1)
            first = (base == "mlp_up_proj") != bwd
            if first:
                ops.insert(len(ops) - 1, _coll(f"ep.alltoall.dispatch{'.bwd' if bwd else ''}", "alltoall",
                                               act_bytes * k / tp, ep_grp or (ep, 1), op, g.dtype, "ep"))
            else:
                ops.append(_coll(f"ep.alltoall.combine{'.bwd' if bwd else ''}", "alltoall",
                                 act_bytes * k / tp, ep_grp or (ep, 1), op, g.dtype, "ep"))
    out = Graph(f"{g.name} [tp {tp}{', sp' if sp else ''}{f', ep {ep}' if ep > 1 else ''}]", g.phase, g.dtype, ops,
                footprint=dict(g.footprint), meta=dict(g.meta), uncounted_ops=dict(g.uncounted_ops))
    out.footprint = {k: v / (kv if k == "kv_cache" else tp) for k, v in g.footprint.items()
                     if k in ("weights", "kv_cache")} | \
        {k: v for k, v in g.footprint.items() if k not in ("weights", "kv_cache")}
    out.meta.update(tp=tp, sequence_parallel=sp, ep=ep)
    return out


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
    layer_bwd = [i for i, op in enumerate(sg.ops) if op.name.endswith(".backward") and in_layers(op, L)]
    if not layer_bwd:
        return 0.0, 0.0
    layer_grads = grad_scale * sum(float(np.max(sg.ops[i].bytes.get("gradients", 0.0))) * sg.ops[i].count
                                   for i in layer_bwd) / L
    other = grad_scale * sum(float(np.max(op.bytes.get("gradients", 0.0))) * op.count for i, op in enumerate(sg.ops)
                if op.name.endswith(".backward") and i not in layer_bwd)
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


@dataclass
class StepEstimate:
    plan: Plan
    per_microbatch: object                     # Estimate: one micro-batch, forward+backward, slowest stage
    breakdown: dict[str, float]
    memory: dict[str, float]
    flops: dict[str, float]
    mfu: float
    bottleneck: dict
    topology: str
    notes: list[str] = field(default_factory=list)
    peak_flops: float = 0.0                    # the dtype's peak per device, MFU's denominator

    @property
    def step_s(self) -> float:
        return self.breakdown["step_s"]

    @property
    def time_s(self) -> float:
        return self.step_s

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.flops["tokens_per_step"] / (self.step_s * self.plan.gpus)

    def to_dict(self) -> dict:
        from dataclasses import asdict
        return {"schema": "ironlaw.train-step/1", "plan": asdict(self.plan), "topology": self.topology,
                "time_s": self.step_s, "step_s": self.step_s, "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
                "mfu": self.mfu, "mfu_convention": f"model FLOPs / (time_s × gpus × {self.peak_flops:.4g} FLOP/s, "
                                                   f"the dtype's dense peak); model FLOPs: {MODEL_FLOPS}",
                "breakdown": self.breakdown, "memory_per_device": self.memory, "flops": self.flops,
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
    n = pp * v
    if pp == 1 or L % n == 0:
        return L // pp, L // pp, L // pp
    if (L + 2) % n == 0:
        return (L + 2) // pp, (L + 2) // pp - 1, (L + 2) // pp - 1
    c = -(-L // n)

    def stage(s: int) -> int:
        return sum(min(c, max(0, L - (s + j * pp) * c)) for j in range(v))
    return stage(1), stage(0), stage(pp - 1)


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


def _stage_ops(g: Graph, plan: Plan) -> tuple[list[list[Op]], Op | None]:
    """Ops of the first and last pipeline stage (and of a middle one when the embedding and the loss take a
    layer's place: ``stage_layers``; one list when pp == 1), and the optimizer op."""
    L = g.meta.get("layers", -1)
    opt = next((op for op in g.ops if _base(op.name) == "optimizer"), None)
    ops = [op for op in g.ops if _base(op.name) != "optimizer"]
    if plan.pp == 1:
        return [_with_recompute(ops, L, L, plan.recompute)], opt
    middle, n_first, n_last = stage_layers(L, plan.pp, plan.interleave)
    first = [op for op in ops if in_layers(op, L) or _base(op.name) in FIRST_STAGE]
    last = [op for op in ops if in_layers(op, L) or _base(op.name) not in FIRST_STAGE]
    stages = [_with_recompute(first, L, n_first, plan.recompute), _with_recompute(last, L, n_last, plan.recompute)]
    if middle != n_first:
        stages.insert(1, _with_recompute([op for op in ops if in_layers(op, L)], L, middle, plan.recompute))
    return stages, opt


def _with_recompute(ops: list[Op], L: int, layers: int, recompute: str) -> list[Op]:
    """The stage's ops with its ``layers`` of the ``L`` layers (an op of some layers only, in proportion),
    the recomputed forward ops at the start of the backward."""
    out, rc = [], []
    for op in ops:
        layer = L > 0 and in_layers(op, L)
        if layer and layers != L:
            op = copy.copy(op)
            op.count = op.count * layers / L
        out.append(op)
        fwd = not op.name.endswith(".backward")
        if layer and fwd and (recompute == "full" or (recompute == "selective" and op.kind == "attention")):
            r = copy.copy(op)
            r.name = op.name + ".recompute"
            rc.append(r)
    i = next((j for j, op in enumerate(out) if op.name.endswith(".backward")), len(out))
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
                if in_layers(op, L) and not op.name.endswith(".backward") and _base(op.name) != "optimizer"
                and (recompute == "full" or (recompute == "selective" and op.kind == "attention"))), 0.0) \
        if recompute != "none" else 0.0


def _params_per_device(g: Graph, plan: Plan) -> tuple[float, float]:
    """(dense, expert) parameters one device holds: dense over tp·pp, experts over tp·pp·ep."""
    params = float(g.meta["params"])
    expert, e = 0.0, g.meta.get("experts", 0)
    if e:
        e, k = g.meta["experts"], g.meta.get("experts_per_token", 1)
        expert = (params - float(g.meta.get("active_params", params))) * e / max(e - k, 1)
    slots = (e + plan.redundant_experts) / e if e else 1.0              # replicas held on the EP group
    return (params - expert) / (plan.tp * plan.pp), expert * slots / (plan.tp * plan.pp * plan.ep)


def _memory(g: Graph, plan: Plan, zero: int, recompute: str) -> dict[str, float]:
    """Bytes per device: weights and gradients in bf16 (gradients fp32 with ``grad_fp32``; plus the FP8 copies
    of the weights in FP8 training),
    fp32 master weights and Adam moments; ZeRO shards them over the data-parallel group, which context
    parallelism joins (dp·cp ranks hold the same weights; experts over dp·cp/ep); activations over tp (with
    sequence parallelism, else Korthikanti's 24 of 34) and cp (each rank holds seq/cp tokens)."""
    from .precision import weight_copy_bytes
    by = dtype_bytes(g.dtype)
    dense, expert = _params_per_device(g, plan)
    p_dev = dense + expert
    shards = plan.dp * plan.cp
    sharded = dense / shards + expert / max(shards // plan.ep, 1)       # one ZeRO shard of this device's params
    act = float(np.max(g.footprint.get("activations", 0.0))) / plan.cp
    tp_factor = 1.0 / plan.tp if plan.sequence_parallel else (1 - ACT_SPLIT_FRACTION) + ACT_SPLIT_FRACTION / plan.tp
    inflight = 1.0 + ((plan.pp - 1) / (plan.pp * plan.interleave) if plan.interleave > 1 else 0.0)
    if recompute == "full":
        L = g.meta["layers"]
        inputs = L * float(np.max(g.meta["tokens"])) / plan.cp * g.meta["hidden"] * by
        act_dev = inputs * (1.0 / plan.tp if plan.sequence_parallel else 1.0) * inflight + act / L * tp_factor
    else:
        act_dev = act * tp_factor * inflight
    if plan.offload_layers:                   # the offloaded layers' share waits in host memory
        act_dev *= 1.0 - offload.fraction(plan.offload_layers, g.meta["layers"], plan.pp)
    weight_b = by + weight_copy_bytes(g.meta)
    return {"weights": (sharded if zero >= 3 else p_dev) * weight_b,
            "gradients": (sharded if zero >= 2 else p_dev) * _grad_bytes(g, plan),
            "optimizer": 12.0 * (sharded if zero >= 1 else p_dev),
            "activations": act_dev, "params_per_device": p_dev}


def _grad_bytes(g: Graph, plan: Plan) -> float:
    """Bytes per gradient: fp32 with ``grad_fp32`` (Megatron's main_grad buffer), else the graph's dtype."""
    return 4.0 if plan.grad_fp32 else dtype_bytes(g.dtype)


def _check_fits(g: Graph, hw, plan: Plan, mem: dict) -> None:
    from ..core.units import fmt
    cap = hw.memory[hw.device_tier].capacity_bytes
    need = sum(v for k, v in mem.items() if k != "params_per_device")
    if need <= cap:
        return
    full = _memory(g, plan, 3, "full")
    need_full = sum(v for k, v in full.items() if k != "params_per_device")
    if need_full > cap:
        raise IronlawError(f"{g.meta.get('spec', g.name)} cannot fit on {plan.gpus} × {hw.name} even fully sharded "
                           f"(--zero 3 --recompute full): {fmt(need_full, 'B')} per device exceeds "
                           f"{fmt(cap, 'B')} by {fmt(need_full - cap, 'B')}; use more devices, larger "
                           f"--tp/--pp/--cp, or a smaller --micro-batch")
    raise IronlawError(f"this plan needs {fmt(need, 'B')} per device, {fmt(need - cap, 'B')} more than the "
                       f"{fmt(cap, 'B')} of {hw.name} (weights {fmt(mem['weights'], 'B')}, gradients "
                       f"{fmt(mem['gradients'], 'B')}, optimizer {fmt(mem['optimizer'], 'B')}, activations "
                       f"{fmt(mem['activations'], 'B')}); try --zero 3, --recompute full, or larger --tp/--pp/--cp")


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
    stage = plan.tp * plan.cp * plan.dp
    out["pp"] = group(stage, 2, G)
    if plan.pp > 1 and nodes > 1 and out["pp"][1] == 1:
        out["pp"] = (2, 2, min(stage, G))
    return out


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
        t = _topology(hw, grp[key])
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
        if op.kind == "collective" or _base(op.name) == "optimizer":
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
    bwd = att.name.endswith(".backward")
    tokens = np.asarray(meta["tokens"], dtype=float) / cp
    q = tokens * meta["heads"] * meta["head_dim"]
    kv = tokens * 2 * meta.get("kv_heads", meta["heads"]) * meta["head_dim"]
    step, once = CP_MERGE_BYTES["bwd" if bwd else "fwd"]
    nbytes = (step * (cp if bwd else cp - 1) + once) * q + (6.0 * cp * kv if bwd else 0.0)
    base = _base(att.name)
    return Op("attention_cp_merge" + att.name[len(base):], "elementwise", flops=2.0 * cp * q,
              bytes={"activations": nbytes}, dtype=att.dtype, count=att.count, module=att.module,
              shapes=f"{cp} ring steps merged", bytes_written=nbytes * 0.4,
              attrs={k: v for k, v in att.attrs.items() if k == "per_layer"} | {"cp_merge": True})


def cp_ring_exposed(sg: Graph, hw, plan: Plan, grp: dict, rows: list[dict]) -> tuple[float, float]:
    """(total, exposed) seconds per micro-batch of the context-parallel ring (Megatron's ring attention).

    In each of cp − 1 steps a rank sends its K and V chunk (2·kv_dim/tp·tokens/cp, bf16) to the next rank of
    the CP group while it computes attention on the chunk it holds, one cp-th of its attention; the backward
    passes K, V and their gradients (twice the bytes). A step exposes what its send takes beyond its compute."""
    from ..machine.network.collectives import collective_time
    if plan.cp == 1:
        return 0.0, 0.0
    meta = sg.meta
    kv_dim = max(meta.get("kv_heads", meta["heads"]) // plan.tp, 1) * meta["head_dim"]
    chunk = 2.0 * kv_dim * float(np.max(meta["tokens"])) * dtype_bytes(sg.dtype)
    a, b = collective_time("sendrecv", chunk, _topology(hw, grp["cp"]))
    total = exposed = 0.0
    for op, r in zip(sg.ops, rows):
        if r["kind"] != "attention":
            continue
        send = float(a + b) * (2.0 if r["name"].endswith(".backward") else 1.0)
        block = r["time_s"] / op.count / plan.cp
        total += op.count * (plan.cp - 1) * send
        exposed += op.count * (plan.cp - 1) * max(send - block, 0.0)
    return total, exposed


# each TP collective of sequence parallelism and the GEMM share it runs beside under Transformer Engine's
# userbuffers overlap (Megatron-Bridge comm_overlap.py: qkv_fprop, proj_fprop, fc1_fprop, fc2_fprop; in the
# backward proj_dgrad, fc2_dgrad ring exchanges and the bulk qkv_dgrad/qkv_wgrad, fc1_dgrad/fc1_wgrad pairs):
# (GEMM op, its backward, share of its time: a backward op is its dgrad and wgrad halves). tp_shard names a
# forward sublayer's reduce-scatter and the all-gather that follows it (the next sublayer's input) after it,
# a backward sublayer's reduce-scatter (dgrad), the all-gather of the gradient for the sublayer below and the
# re-gather of its input for the weight gradient after its column GEMM.
TP_OVERLAP = {"reducescatter.fwd.attn": ("attn_post_proj", False, 1.0), "allgather.fwd.attn": ("mlp_up_proj", False, 1.0),
              "reducescatter.fwd.mlp": ("mlp_down_proj", False, 1.0), "allgather.fwd.mlp": ("attn_pre_proj", False, 1.0),
              "reducescatter.bwd.mlp": ("mlp_up_proj", True, 0.5), "allgather.wgrad.mlp": ("mlp_up_proj", True, 0.5),
              "allgather.bwd.mlp": ("attn_post_proj", True, 0.5),
              "reducescatter.bwd.attn": ("attn_pre_proj", True, 0.5), "allgather.wgrad.attn": ("attn_pre_proj", True, 0.5),
              "allgather.bwd.attn": ("mlp_down_proj", True, 0.5)}


def tp_overlap_hidden_s(rows: list[dict]) -> float:
    """Seconds of TP collectives hidden per micro-batch by overlapping them with the GEMMs they feed or follow
    (Transformer Engine's userbuffers, chunked and pipelined with the GEMM): each collective up to the time
    of the GEMM share it runs beside (``TP_OVERLAP``), no more — a longer one shows the rest."""
    comm: dict[str, float] = {}
    gemm: dict[tuple, float] = {}
    for r in rows:
        base, bwd = _base(r["name"]), r["name"].endswith(".backward")
        if r["kind"] == "collective" and r["module"] == "tp":
            key = r["name"].split(".", 1)[1]                       # reducescatter.fwd.attn …
            comm[key] = comm.get(key, 0.0) + r["time_s"]
        elif (base in COLUMN or base in ROW) and base != "lm_head":
            gemm[(base, bwd)] = gemm.get((base, bwd), 0.0) + r["time_s"]
    return sum(min(t, TP_OVERLAP[k][2] * gemm.get(TP_OVERLAP[k][:2], 0.0)) for k, t in comm.items()
               if k in TP_OVERLAP)


def ep_overlap_hidden_s(rows: list[dict]) -> float:
    """Seconds of expert all-to-all hidden per micro-batch when they run beside another micro-batch's compute
    (Megatron's overlap_moe_expert_parallel_comm: the 1F1B steady state merges one micro-batch's forward with
    another's backward, layer by layer, so each dispatch and combine overlaps the other pass's compute): the
    all-to-alls up to the micro-batch's compute. The first forward and the last backward of a step have no
    partner: ``train_step`` adds one micro-batch's all-to-alls back."""
    a2a = sum(r["time_s"] for r in rows if r["kind"] == "collective" and r["module"] == "ep")
    compute = sum(r["time_s"] for r in rows if r["kind"] != "collective")
    return min(a2a, compute)


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
    from ..machine.network.collectives import collective_time
    if plan.zero < 3 or plan.dp * plan.cp == 1:
        return 0.0, 0.0
    layers = max(op.count for op in sg.ops)
    per_layer = p_dev * dtype_bytes(sg.dtype) / layers
    topo = _topology(hw, grp["dp"])
    ag = layers * float(sum(collective_time("allgather", per_layer, topo)))
    rs = layers * float(sum(collective_time("reducescatter", per_layer * _grad_bytes(sg, plan) / dtype_bytes(sg.dtype),
                                            topo)))
    fwd = sum(r["time_s"] for r in rows if r["kind"] != "collective" and not r["name"].endswith(".backward"))
    bwd = sum(r["time_s"] for r in rows if r["kind"] != "collective" and r["name"].endswith(".backward"))
    exposed = max(ag - fwd, 0.0) + ag / layers + max(ag + rs - bwd, 0.0) + rs / layers
    return 2.0 * ag + rs, exposed


def _stage_estimates(g: Graph, hw, plan: Plan, stages: list, mem: dict, grp: dict, composition: str):
    """(estimate, per-device graph) of one micro-batch on the slowest pipeline stage."""
    from ..law import law
    fp = {k: v for k, v in mem.items() if k != "params_per_device"}
    best = None
    for i, ops in enumerate(stages):
        sg = Graph(g.name, "train", g.dtype, ops, footprint=fp, meta=dict(g.meta), uncounted_ops=dict(g.uncounted_ops))
        sg = cp_shard(sg, plan.cp)
        sg = tp_shard(sg, plan.tp, plan.sequence_parallel, grp["tp"], plan.ep, grp["ep"])
        sg = expert_load(sg, plan)
        sg = with_kernel_rows(sg, hw, plan.tp, plan.tp_comm_overlap, plan.ep)
        sg.footprint = dict(fp)
        sg.name = f"{g.name} · stage {'1' if i == 0 else plan.pp} of {plan.pp} · micro-batch {plan.micro_batch}"
        est = law.predict(sg, hw, composition)
        if best is None or float(est.time_s) > float(best[0].time_s):
            best = (est, sg)
    return best


def _pipeline_p2p_s(g: Graph, hw, plan: Plan, grp: dict, t_mb: float) -> float:
    """Stage-to-stage send/recv of one step: each TP rank sends 1/tp of the boundary activation (Megatron's
    scatter/gather, Narayanan et al. 2021 §4.1; with sequence parallelism it is already split); without
    sequence parallelism the receiving stage all-gathers it back over the TP group (NVLink inside a node).
    Forward activation and backward gradient, per micro-batch and virtual stage; blocking unless
    ``overlap_p2p``."""
    from ..machine.network.collectives import collective_time
    if plan.pp == 1:
        return 0.0
    tokens_mb = float(np.max(g.meta.get("tokens", g.meta.get("batch", 1)))) / plan.cp
    full = tokens_mb * g.meta["hidden"] * dtype_bytes(g.dtype)
    a, b = collective_time("sendrecv", full / plan.tp, _topology(hw, grp["pp"]))
    if plan.tp > 1 and not plan.sequence_parallel:
        ga, gb = collective_time("allgather", full, _topology(hw, grp["tp"]))
        a, b = a + ga, b + gb
    one = float(a + b)
    if not plan.overlap_p2p:
        return 2.0 * plan.interleave * plan.microbatches * one
    # overlapped: each send runs under the next model chunk's compute; the warm-up and the cool-down
    # (pp − 1 transfers each) wait for theirs, and a send longer than a chunk exposes the difference
    chunk = t_mb / plan.interleave
    return 2.0 * (plan.pp - 1) * one + 2.0 * plan.interleave * plan.microbatches * max(one - chunk, 0.0)


def _dp_grad_sync(sg: Graph, hw, plan: Plan, grp: dict, p_dev: float, composition: str) -> tuple[float, float, float]:
    """(total, exposed, after-step gather) seconds of the data-parallel gradient reduction of the last
    micro-batch (ZeRO < 3; FSDP reduces every micro-batch's gradients in ``fsdp_exposed``)."""
    from ..machine.network.collectives import collective_time
    if plan.dp * plan.cp == 1 or plan.zero >= 3:
        return 0.0, 0.0, 0.0
    kind = "allreduce" if plan.zero < 2 else "reducescatter"
    comm, exposed = grad_sync_exposed(sg, hw, kind, grp["dp"], composition, _grad_bytes(sg, plan) / dtype_bytes(sg.dtype))
    gather = 0.0
    if plan.zero == 2:                 # updated parameter shards gathered back after the step
        a, b = collective_time("allgather", p_dev * dtype_bytes(sg.dtype), _topology(hw, grp["dp"]))
        gather = float(a + b)
    return comm, exposed, gather


def _optimizer_s(g: Graph, hw, plan: Plan, p_dev: float, composition: str) -> float:
    from ..law import law
    from .workloads.common import optimizer_step
    if not any(_base(op.name) == "optimizer" for op in g.ops):
        return 0.0
    opt_params = p_dev / (plan.dp * plan.cp if plan.zero >= 1 else 1)
    og = Graph("optimizer", "train", g.dtype, [optimizer_step(opt_params, g.dtype)],
               footprint={"optimizer": 12.0 * opt_params})
    return float(law.predict(og, hw, composition).time_s)


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


def train_step(g: Graph, hw, plan: Plan, composition: str = "overlap") -> StepEstimate:
    """One optimizer step of ``g`` (a training graph of ONE micro-batch on one device) under ``plan``."""
    from .precision import is_low, lower
    if g.phase != "train":
        raise IronlawError(f"a training step needs --phase train (got '{g.phase}')")
    if is_low(g.dtype):
        g = lower(g, g.dtype, hw.features.get("fp8_any_layout", False))
    if g.meta.get("precision") == nvfp4.DTYPE:
        nvfp4.require(hw)                                      # NVIDIA's NVFP4 recipe, where it runs
    if plan.redundant_experts:
        g = Graph(g.name, g.phase, g.dtype, g.ops, footprint=dict(g.footprint), uncounted_ops=dict(g.uncounted_ops),
                  meta=dict(g.meta, expert_slots=g.meta["experts"] + plan.redundant_experts))
    peak = hw.peak(g.meta.get("precision", g.dtype))          # a dtype the device lacks is an error, first
    topo = build_topology(hw, plan.gpus, plan.nodes)
    grp = groups(plan, topo.gpus_per_node, plan.nodes)
    mem = _memory(g, plan, plan.zero, plan.recompute)
    _check_fits(g, hw, plan, mem)
    notes = _shared_network_notes(hw, plan, grp) + ([REDUNDANT_NOTE.format(
        e=g.meta["experts"], r=plan.redundant_experts, ep=plan.ep, per=g.meta["expert_slots"] // plan.ep)]
        if plan.redundant_experts else [])
    if "layers" in g.meta and uneven(g.meta["layers"], plan.pp, plan.interleave):
        notes.append(uneven_note(g.meta["layers"], plan.pp * plan.interleave))
    stages, _ = _stage_ops(g, plan)
    est, sg = _stage_estimates(g, hw, plan, stages, mem, grp, composition)
    rows = est.rows()
    ring_s, ring_exposed = cp_ring_exposed(sg, hw, plan, grp, rows)
    fsdp_s, fsdp_exposed = fsdp_exposed_s(sg, hw, plan, grp, rows, mem["params_per_device"])
    hidden_tp = (tp_overlap_hidden_s(rows) if plan.tp_comm_overlap else 0.0) + \
        (ep_overlap_hidden_s(rows) if plan.moe_a2a_overlap else 0.0)
    t_est = float(est.time_s) - hidden_tp
    host_t = host.step_term(sg, rows, hw, plan.tp, plan.sequence_parallel, plan.ep, plan.cuda_graph)
    host_mb = host_t.exposed_s if host_t is not None else 0.0
    notes += [host_t.why()] if host_t is not None else [NO_HOST_NOTE.format(hw=hw.name)]
    off_mb = _offload_s(g, hw, plan, rows, notes)
    t_mb, m, v = t_est + ring_exposed + fsdp_exposed + host_mb + off_mb, plan.microbatches, plan.interleave
    net_mb = float(est.term("network_s")) + float(sum(r["latency_s"] for r in rows if r["kind"] == "collective")) \
        - hidden_tp
    p2p_s = _pipeline_p2p_s(g, hw, plan, grp, t_mb)
    if p2p_s:
        notes.append("stage-to-stage send/recv (1/tp per rank, scatter/gather) " + (
            "overlapped with the next model chunk but for the warm-up and cool-down" if plan.overlap_p2p else
            "counted on the critical path (not overlapped)"))
    bubble_s = (plan.pp - 1) / v * t_mb
    dp_s, exposed, gather_s = _dp_grad_sync(sg, hw, plan, grp, mem["params_per_device"], composition)
    opt_s = _optimizer_s(g, hw, plan, mem["params_per_device"], composition)
    a2a_alone = ep_overlap_hidden_s(rows) if plan.moe_a2a_overlap else 0.0     # one micro-batch has no partner
    step = m * t_mb + bubble_s + p2p_s + exposed + gather_s + opt_s + a2a_alone
    flops = _step_flops(g, plan)
    breakdown = {"step_s": step, "microbatch_s": t_mb, "microbatches": m, "compute_and_tp_s": m * t_est,
                 "tp_ep_network_s": m * net_mb + a2a_alone, "pipeline_bubble_s": bubble_s, "pipeline_p2p_s": p2p_s,
                 "cp_ring_s": m * ring_s, "cp_ring_exposed_s": m * ring_exposed,
                 "fsdp_comm_s": m * fsdp_s, "fsdp_exposed_s": m * fsdp_exposed,
                 "dp_grad_comm_s": dp_s + m * fsdp_s * (plan.zero >= 3), "dp_grad_exposed_s": exposed,
                 "zero_param_gather_s": gather_s + m * fsdp_exposed, "optimizer_s": opt_s,
                 "host_exposed_s": m * host_mb, "host_issue_s": m * (host_t.issue_s if host_t else 0.0),
                 "offload_exposed_s": m * off_mb}
    shares = {"compute": m * (t_est - net_mb),
              "network": m * (net_mb + ring_exposed + fsdp_exposed) + p2p_s + exposed + gather_s + a2a_alone,
              "pipeline bubble": bubble_s, "optimizer": opt_s, "host": m * host_mb}
    memory = {k: float(v) for k, v in mem.items()} | {"total_bytes": float(sum(
        v for k, v in mem.items() if k != "params_per_device"))}
    return StepEstimate(plan, est, breakdown, memory, flops, flops["model_per_step"] / (step * peak * plan.gpus),
                        _bottleneck(est, step, shares, host_t.why() if host_t else ""), topo.describe(), notes, peak)


def _offload_s(g: Graph, hw, plan: Plan, rows: list[dict], notes: list) -> float:
    """Exposed seconds per micro-batch of ``--offload-activations`` (``offload``), the host memory checked and a
    note added; 0 without it."""
    from ..core.units import fmt
    n = plan.offload_layers
    if not n:
        return 0.0
    tier = offload.host_tier(hw)
    L = g.meta["layers"]
    whole = _memory(g, replace(plan, offload_layers=0), plan.zero, plan.recompute)["activations"]
    held = whole * offload.fraction(n, L, plan.pp)
    if held > tier.capacity_bytes:
        raise IronlawError(f"--offload-activations {n} puts {fmt(held, 'B')} of activations per device in "
                           f"{tier.name}, more than its {fmt(tier.capacity_bytes, 'B')}")
    per_layer = float(np.max(g.footprint.get("activations", 0.0))) / plan.cp / L * \
        (1.0 / plan.tp if plan.sequence_parallel else (1 - ACT_SPLIT_FRACTION) + ACT_SPLIT_FRACTION / plan.tp)
    fwd = sum(r["time_s"] for r in rows if r["kind"] != "collective" and not r["name"].endswith(".backward"))
    bwd = sum(r["time_s"] for r in rows if r["kind"] != "collective" and r["name"].endswith(".backward"))
    copied, exposed = offload.exposed_s(n, per_layer, fwd, bwd, L / plan.pp, tier.bw_Bps)
    notes.append(f"activations of {n} layers per stage offloaded to {tier.name}: {fmt(held, 'B')} per device, "
                 f"{fmt(copied, 's')} of copies per micro-batch at {fmt(tier.bw_Bps, 'B/s')}, "
                 f"{fmt(exposed, 's')} not hidden under the layers' compute")
    return exposed


def _step_flops(g: Graph, plan: Plan) -> dict[str, float]:
    """Model FLOPs (``MODEL_FLOPS``), hardware FLOPs (with recomputation) and tokens of one step."""
    m = plan.microbatches
    tokens_mb = float(np.max(g.meta.get("tokens", g.meta.get("batch", 1))))
    hw_flops = float(np.max(g.flops)) + float(np.max(recompute_flops(g, plan.recompute)))
    return {"model_per_step": float(np.max(g.meta["model_flops"])) * m * plan.dp,
            "hardware_per_step": hw_flops * m * plan.dp, "tokens_per_step": tokens_mb * m * plan.dp}
