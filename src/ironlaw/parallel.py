"""Many devices: tensor, pipeline, data and expert parallelism and ZeRO/FSDP sharding (Megatron-LM's knobs).

    plan        --gpus --nodes --tp --pp --dp --ep --global-batch --micro-batch --interleave
                --sequence-parallel --recompute none|selective|full --zero 0|1|2|3
    tp_shard    Graph → per-device Graph: matmul/attention ops split over the TP group (column- and
                row-parallel linears, heads), norms and residual adds replicated (split with sequence
                parallelism), TP collectives inserted where Megatron puts them (2 per layer forward,
                2 backward; all-reduce, or all-gather + reduce-scatter with sequence parallelism)
    train_step  the step on the slowest pipeline stage: m micro-batches of forward+backward, the pipeline
                bubble ((pp−1)/v micro-batch times, v = --interleave), stage-to-stage send/recv (1/tp of
                the activation per rank, all-gathered over the TP group: Megatron's scatter/gather), the
                data-parallel gradient reduction (overlapped with the backward of the last micro-batch on
                ``ironlaw.critical_path``'s network stream), the optimizer step;
                memory per device; model FLOPs, hardware FLOPs, MFU = model FLOPs / (step time × peak × gpus)

Ranks are laid out as Megatron does: TP fastest, then DP, then PP (rank = t + tp·(d + dp·s)); a group of
ranks spaced ``stride`` apart spans ``stride·size / gpus_per_node`` nodes, so the topology decides which
link each collective uses. Every rank of a node belongs to one group of each kind, so a node holds
G / (ranks per node of one group) groups of a kind, and they run the same collective at the same time
(same layer, same micro-batch): between nodes they share the node's network ports and ceiling
(``network.collectives.inter_node_Bps``), inside a node they do not (NVSwitch is non-blocking).
Activation memory per device follows Korthikanti et al. 2022 ("Reducing activation recomputation"): of the
34·s·b·h bytes a layer saves, 24 split over TP and 10 do not unless sequence parallelism splits them too.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from .errors import IronlawError
from .graph import Graph, Op, dtype_bytes
from .network.topology import build as build_topology, check_count, nodes_for

RECOMPUTE = ("none", "selective", "full")
COLUMN = {"attn_pre_proj", "mlp_up_proj", "lm_head"}          # input replicated, output split over TP
ROW = {"attn_post_proj", "mlp_down_proj"}                     # input split, output full (then all-reduced)
SPLIT = {"attn_rope", "attention", "mlp_act", "cross_entropy", "embedding"}   # every byte and FLOP split
REPLICATED = {"input_layernorm", "post_attention_layernorm", "attn_layernorm", "mlp_layernorm", "final_norm",
              "embedding_layernorm", "attn_residual_add", "mlp_residual_add", "moe_router", "moe_topk",
              "moe_combine", "pooler_dense", "pooler_tanh",
              "embedding_dropout", "attn_dropout", "mlp_dropout"}      # dropout: on the full (reduced) hidden state
FIRST_STAGE = {"embedding", "embedding_layernorm", "embedding_dropout"}
ACT_SPLIT_FRACTION = 24.0 / 34.0                              # Korthikanti et al. 2022, Eq. 2
GRAD_BUCKET_BYTES = 40e6 * 2                                   # Megatron-LM DDP default bucket, 40M bf16 params


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

    @property
    def microbatches(self) -> int:
        return self.global_batch // (self.micro_batch * self.dp)


OPTION_NAMES = ("gpus", "nodes", "tp", "pp", "dp", "ep", "global_batch", "micro_batch", "interleave",
                "sequence_parallel", "recompute", "zero")


def requested(options: dict) -> bool:
    """True when the user asked for more than one device or any parallel knob."""
    o = {k: v for k, v in (options or {}).items() if k in OPTION_NAMES and v not in (None, False)}
    return any(k not in ("gpus", "nodes") or v != 1 for k, v in o.items())


def make_plan(options: dict, graph: Graph | None = None, hw=None) -> Plan:
    """Read and check the plan; ``graph`` (a transformer) lets it check layers and heads too, ``hw`` gives
    the default node count (whole nodes of the catalog's node size, ``topology.nodes_for``; else 1)."""
    o = {k: v for k, v in (options or {}).items() if v is not None}
    tp, pp, ep = (check_count(o.get(k, 1), f"--{k}") for k in ("tp", "pp", "ep"))
    gpus = check_count(o.get("gpus", tp * pp * o.get("dp", 1) if "dp" in o else tp * pp), "--gpus")
    nodes = nodes_for(hw, gpus, o.get("nodes")) if hw is not None else check_count(o.get("nodes", 1), "--nodes")
    if gpus % (tp * pp):
        raise IronlawError(f"--tp {tp} × --pp {pp} = {tp * pp} does not divide --gpus {gpus}; "
                           f"choose degrees whose product divides the devices")
    dp = check_count(o.get("dp", gpus // (tp * pp)), "--dp")
    if tp * pp * dp != gpus:
        raise IronlawError(f"--tp {tp} × --pp {pp} × --dp {dp} = {tp * pp * dp} devices, but --gpus is {gpus}; "
                           f"the product of the parallel degrees must equal the devices")
    if gpus % nodes:
        raise IronlawError(f"--gpus {gpus} does not divide evenly over --nodes {nodes}")
    if dp % ep:
        raise IronlawError(f"--ep {ep} does not divide --dp {dp}; expert parallelism splits the data-parallel group")
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
    rc = o.get("recompute", "none")
    if rc not in RECOMPUTE:
        raise IronlawError(f"--recompute must be one of {', '.join(RECOMPUTE)}, got '{rc}'")
    zero = o.get("zero", 0)
    if zero not in (0, 1, 2, 3):
        raise IronlawError(f"--zero must be 0, 1, 2 or 3, got {zero!r}")
    sp = bool(o.get("sequence_parallel", False))
    if sp and tp == 1:
        raise IronlawError("--sequence-parallel needs tensor parallelism (--tp > 1)")
    if graph is not None and rc != "none" and "layers" not in graph.meta:
        raise IronlawError(f"--recompute {rc} needs a transformer built by ironlaw (layers known)")
    if graph is not None:
        _check_model(graph, tp, pp, v, ep)
    return Plan(gpus, nodes, tp, pp, dp, ep, gb, mb, v, sp, rc, zero)


def _check_model(g: Graph, tp: int, pp: int, v: int, ep: int) -> None:
    meta = g.meta
    if "layers" not in meta or "heads" not in meta:
        if tp > 1 or pp > 1 or ep > 1:
            raise IronlawError(f"{g.name}: tensor/pipeline/expert parallelism needs a transformer built by ironlaw "
                               f"(layers and heads known); use data parallelism (--dp) only")
        return
    L, heads, kv = meta["layers"], meta["heads"], meta.get("kv_heads", meta["heads"])
    for what, n in (("attention heads", heads), ("key/value heads", kv)):
        if n % tp:
            raise IronlawError(f"--tp {tp} does not divide the {n} {what} of {g.name}; use a divisor of {n}")
    if L % (pp * v):
        raise IronlawError(f"--pp {pp}{f' × --interleave {v}' if v > 1 else ''} does not divide the {L} layers "
                           f"of {g.name}; use a divisor of {L}")
    if ep > 1 and meta.get("experts", 0) % ep:
        raise IronlawError(f"--ep {ep} does not divide the {meta.get('experts', 0)} experts of {g.name}")


# ---------------------------------------------------------------------- rank layout → groups
def group(stride: int, size: int, gpus_per_node: int) -> tuple[int, int, int]:
    """(ranks, nodes, concurrent) of a group of ``size`` ranks spaced ``stride`` apart.

    ``concurrent``: the groups of this kind with ranks on one node, all running the collective at once —
    every rank of a node is in one, so ``gpus_per_node / (ranks of one group per node)``. TP (stride 1)
    spanning nodes fills them: 1. DP and EP (stride tp): tp ≥ G puts one rank of a group per node, G
    groups (tp 8 on DGX: 8 DP groups share each node's 8 ports and its ceiling); tp < G, tp of them."""
    if size == 1 or stride * size <= gpus_per_node:
        nodes = 1
    else:
        nodes = size if stride >= gpus_per_node else stride * size // gpus_per_node
    return size, nodes, max(gpus_per_node // (size // nodes), 1)


# ---------------------------------------------------------------------- tensor parallelism
def _base(name: str) -> str:
    return name.split(".")[0]


def _shapes(grp: tuple) -> str:
    shared = f", {grp[2]} groups per node at once" if len(grp) > 2 and grp[1] > 1 and grp[2] > 1 else ""
    return f"{grp[0]} ranks on {grp[1]} node(s){shared}"


def _coll(name: str, kind: str, nbytes, grp: tuple, count: int, dtype: str, module: str) -> Op:
    return Op(name, "collective", network_bytes=nbytes, dtype=dtype, count=count, module=module,
              collective=kind, group=grp, shapes=_shapes(grp))


def _topology(hw, grp: tuple):
    """The topology of one group (ranks, nodes[, concurrent]) of ``group``."""
    return build_topology(hw, grp[0], grp[1], concurrent=grp[2] if len(grp) > 2 else 1)


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
    by = dtype_bytes(g.dtype)
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
            new.flops = op.flops / tp
            new.bytes = {k: (v * ratio.get(base, 1.0 / tp) if k == "activations" else v / tp)
                         for k, v in op.bytes.items()}
            if "nk" in op.attrs:                              # each device holds 1/tp of N (column) or of K (row)
                n, k = op.attrs["nk"]
                new.attrs = {**op.attrs, "nk": (n / tp, k) if base in COLUMN else (n, k / tp)}
            if not bwd and base in COLUMN:                    # a column-parallel op writes its share of the output
                new.bytes_written = op.bytes_written / tp
        elif base in SPLIT:
            new.flops = op.flops / tp
            new.bytes = {k: v / tp for k, v in op.bytes.items()}
            new.bytes_written = op.bytes_written / tp
        elif base in REPLICATED:
            if sp:
                new.flops = op.flops / tp
                new.bytes = {k: v / tp for k, v in op.bytes.items()}
                new.bytes_written = op.bytes_written / tp
        else:
            raise IronlawError(f"op '{op.name}' of {g.name} has no tensor-parallel rule; tensor parallelism works "
                               f"on graphs of ironlaw's transformer builder")
        if ep > 1 and op.module == "experts" and "weights" in new.bytes:
            new.bytes["weights"] = new.bytes["weights"] / ep
            if "gradients" in new.bytes:
                new.bytes["gradients"] = new.bytes["gradients"] / ep
        ops.append(new)
        n = op.count
        if tp > 1 and ((not bwd and base in ROW) or (bwd and base in ("attn_pre_proj", "mlp_up_proj"))):
            where = f"{'bwd' if bwd else 'fwd'}.{'attn' if base.startswith('attn') else 'mlp'}"
            if sp:
                ops.append(_coll(f"tp.reducescatter.{where}", "reducescatter", act_bytes, grp, n, g.dtype, "tp"))
                ops.append(_coll(f"tp.allgather.{where}", "allgather", act_bytes, grp, n, g.dtype, "tp"))
            else:
                ops.append(_coll(f"tp.allreduce.{where}", "allreduce", act_bytes, grp, n, g.dtype, "tp"))
        if ep > 1 and op.module == "experts" and base in ("mlp_up_proj", "mlp_down_proj"):
            k = meta.get("experts_per_token", 1)
            first = (base == "mlp_up_proj") != bwd
            if first:
                ops.insert(len(ops) - 1, _coll(f"ep.alltoall.dispatch{'.bwd' if bwd else ''}", "alltoall",
                                               act_bytes * k / tp, ep_grp or (ep, 1), n, g.dtype, "ep"))
            else:
                ops.append(_coll(f"ep.alltoall.combine{'.bwd' if bwd else ''}", "alltoall",
                                 act_bytes * k / tp, ep_grp or (ep, 1), n, g.dtype, "ep"))
    out = Graph(f"{g.name} [tp {tp}{', sp' if sp else ''}{f', ep {ep}' if ep > 1 else ''}]", g.phase, g.dtype, ops,
                footprint=dict(g.footprint), meta=dict(g.meta), uncounted_ops=dict(g.uncounted_ops))
    out.footprint = {k: v / tp for k, v in g.footprint.items() if k in ("weights", "kv_cache")} | \
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
def exposed_after_overlap(comm_s: float, window_s: float, last_bucket_s: float) -> float:
    """Placeholder overlap (used for ZeRO-3 parameter gathers, and for graphs ``critical_path`` cannot
    schedule): every bucket but the last hides under ``window_s`` of compute, the last never does."""
    return max(comm_s - window_s, min(last_bucket_s, comm_s))


def grad_sync_exposed(sg: Graph, hw, kind: str, grp: tuple, composition: str) -> tuple[float, float]:
    """(total, exposed) seconds of the data-parallel gradient reduction of the last micro-batch.

    Scheduled by ``ironlaw.critical_path``: one collective per layer is issued on the network stream as soon
    as that layer's backward finishes (DDP/Megatron gradient buckets) and overlaps the backward of the layers
    below; the gradients outside the layers (embeddings, head) follow the last backward op; the optimizer and
    the end of the step wait for all of them. TP collectives stay blocking (they are not marked grad_sync).
    """
    from . import critical_path, law
    L = max(op.count for op in sg.ops)
    layer_bwd = [i for i, op in enumerate(sg.ops) if op.name.endswith(".backward") and op.count == L]
    if not layer_bwd:
        return 0.0, 0.0
    layer_grads = sum(float(np.max(sg.ops[i].bytes.get("gradients", 0.0))) for i in layer_bwd)
    other = sum(float(np.max(op.bytes.get("gradients", 0.0))) * op.count for i, op in enumerate(sg.ops)
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

    @property
    def step_s(self) -> float:
        return self.breakdown["step_s"]

    def to_dict(self) -> dict:
        from dataclasses import asdict
        return {"schema": "ironlaw.train-step/1", "plan": asdict(self.plan), "topology": self.topology,
                "step_s": self.step_s, "breakdown": self.breakdown, "memory_per_device": self.memory,
                "flops": self.flops, "mfu": self.mfu, "bottleneck": self.bottleneck, "notes": self.notes,
                "per_microbatch": self.per_microbatch.to_dict(top=20)}


def _stage_ops(g: Graph, plan: Plan) -> tuple[list[list[Op]], Op | None]:
    """Ops of the first and last pipeline stage (one list when pp == 1), and the optimizer op."""
    L = g.meta.get("layers", -1)
    per_stage = L // plan.pp
    opt, first, last = None, [], []
    recompute = []
    for op in g.ops:
        if _base(op.name) == "optimizer":
            opt = op
            continue
        layer = op.count == L
        o = op
        if layer and plan.pp > 1:
            o = copy.copy(op)
            o.count = per_stage
        if layer:
            first.append(o)
            last.append(o)
            fwd = not op.name.endswith(".backward")
            if fwd and (plan.recompute == "full" or (plan.recompute == "selective" and op.kind == "attention")):
                r = copy.copy(o)
                r.name = op.name + ".recompute"
                recompute.append(r)
        elif _base(op.name) in FIRST_STAGE:
            first.append(o)
        else:
            last.append(o)
    # recomputed forward ops run at the start of the backward
    def with_rc(ops):
        i = next((j for j, op in enumerate(ops) if op.name.endswith(".backward")), len(ops))
        return ops[:i] + recompute + ops[i:]
    if plan.pp == 1:
        return [with_rc([op for op in g.ops if _base(op.name) != "optimizer"])], opt
    return [with_rc(first), with_rc(last)], opt


def megatron_flops(batch: float, seq: float, layers: int, hidden: int, vocab: int) -> float:
    """FLOPs of one GPT training step with full activation recomputation as Megatron-LM counts them when it
    reports teraFLOP/s per GPU (Narayanan et al. 2021, eq. 3): 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) — the
    dense GEMMs and attention of forward, backward and the recomputed forward, and the LM head."""
    return 96.0 * batch * seq * layers * hidden ** 2 * (1.0 + seq / (6.0 * hidden) + vocab / (16.0 * layers * hidden))


def recompute_flops(g: Graph, recompute: str):
    """FLOPs the backward re-runs: every layer's forward (full) or the attention core (selective)."""
    L = g.meta.get("layers")
    return sum((op.flops * op.count for op in g.ops
                if op.count == L and not op.name.endswith(".backward") and _base(op.name) != "optimizer"
                and (recompute == "full" or (recompute == "selective" and op.kind == "attention"))), 0.0) \
        if recompute != "none" else 0.0


def _memory(g: Graph, plan: Plan, zero: int, recompute: str) -> dict[str, float]:
    by = dtype_bytes(g.dtype)
    params = float(g.meta["params"])
    expert = 0.0
    if g.meta.get("experts"):
        e, k = g.meta["experts"], g.meta.get("experts_per_token", 1)
        expert = (params - float(g.meta.get("active_params", params))) * e / max(e - k, 1)
    p_dev = (params - expert) / (plan.tp * plan.pp) + expert / (plan.tp * plan.pp * plan.ep)
    act = float(np.max(g.footprint.get("activations", 0.0)))
    tp_factor = 1.0 / plan.tp if plan.sequence_parallel else (1 - ACT_SPLIT_FRACTION) + ACT_SPLIT_FRACTION / plan.tp
    inflight = 1.0 + ((plan.pp - 1) / (plan.pp * plan.interleave) if plan.interleave > 1 else 0.0)
    if recompute == "full":
        L = g.meta["layers"]
        inputs = L * float(np.max(g.meta["tokens"])) * g.meta["hidden"] * by
        act_dev = inputs * (1.0 / plan.tp if plan.sequence_parallel else 1.0) * inflight + act / L * tp_factor
    else:
        act_dev = act * tp_factor * inflight
    return {"weights": p_dev * by / (plan.dp if zero >= 3 else 1),
            "gradients": p_dev * by / (plan.dp if zero >= 2 else 1),
            "optimizer": 12.0 * p_dev / (plan.dp if zero >= 1 else 1),
            "activations": act_dev, "params_per_device": p_dev}


def _check_fits(g: Graph, hw, plan: Plan, mem: dict) -> None:
    from .units import fmt
    cap = hw.memory[hw.device_tier].capacity_bytes
    need = sum(v for k, v in mem.items() if k != "params_per_device")
    if need <= cap:
        return
    full = _memory(g, plan, 3, "full")
    need_full = sum(v for k, v in full.items() if k != "params_per_device")
    if need_full > cap:
        raise IronlawError(f"{g.meta.get('spec', g.name)} cannot fit on {plan.gpus} × {hw.name} even fully sharded "
                           f"(--zero 3 --recompute full): {fmt(need_full, 'B')} per device exceeds "
                           f"{fmt(cap, 'B')}; use more devices, larger --tp/--pp, or a smaller --micro-batch")
    raise IronlawError(f"this plan needs {fmt(need, 'B')} per device, more than the {fmt(cap, 'B')} of {hw.name} "
                       f"(weights {fmt(mem['weights'], 'B')}, gradients {fmt(mem['gradients'], 'B')}, optimizer "
                       f"{fmt(mem['optimizer'], 'B')}, activations {fmt(mem['activations'], 'B')}); "
                       f"try --zero 3, --recompute full, or larger --tp/--pp")


def _shared_network_notes(hw, plan: Plan, dp_grp: tuple, pp_grp: tuple, ep_grp: tuple) -> list[str]:
    """One line per kind of group whose concurrent groups share a node's network (what each gets)."""
    from .network.calibration import for_hardware
    from .network.collectives import inter_node_Bps
    from .units import fmt
    out = []
    for what, grp, fam, used in (("data-parallel gradient sync", dp_grp, "collective", plan.dp > 1),
                                 ("stage-to-stage send/recv", pp_grp, "p2p", plan.pp > 1),
                                 ("expert all-to-all", ep_grp, "p2p", plan.ep > 1)):
        t = _topology(hw, grp)
        if used and t.inter is not None and t.concurrent > 1:
            out.append(f"{what}: {t.concurrent} groups per node run at once and share its network, "
                       f"{fmt(inter_node_Bps(t, fam, for_hardware(hw)), 'B/s')} each between nodes")
    return out


def train_step(g: Graph, hw, plan: Plan, composition: str = "overlap") -> StepEstimate:
    """One optimizer step of ``g`` (a training graph of ONE micro-batch on one device) under ``plan``."""
    from . import law
    from .network.collectives import collective_time
    from .workloads.common import optimizer_step

    if g.phase != "train":
        raise IronlawError(f"a training step needs --phase train (got '{g.phase}')")
    topo = build_topology(hw, plan.gpus, plan.nodes)
    G = topo.gpus_per_node
    tp_grp, dp_grp, ep_grp = group(1, plan.tp, G), group(plan.tp, plan.dp, G), group(plan.tp, plan.ep, G)
    # a rank of stage s sends to its peer in s + 1, tp·dp ranks further: a pair spaced tp·dp apart, across
    # nodes when a stage fills its nodes, and then every rank of the node sends at once (G pairs). Stages
    # smaller than a node still cross at a node's edge when there are several: the slowest boundary, where
    # the last stage of a node sends its tp·dp ranks to the next node, sets the pipeline's pace
    pp_grp = group(plan.tp * plan.dp, 2, G)
    if plan.pp > 1 and plan.nodes > 1 and pp_grp[1] == 1:
        pp_grp = (2, 2, min(plan.tp * plan.dp, G))
    mem = _memory(g, plan, plan.zero, plan.recompute)
    _check_fits(g, hw, plan, mem)
    notes = _shared_network_notes(hw, plan, dp_grp, pp_grp, ep_grp)

    stages, opt = _stage_ops(g, plan)
    ests = []
    for i, ops in enumerate(stages):
        sg = Graph(g.name, "train", g.dtype, ops, footprint={k: v for k, v in mem.items() if k != "params_per_device"},
                   meta=dict(g.meta), uncounted_ops=dict(g.uncounted_ops))
        sg = tp_shard(sg, plan.tp, plan.sequence_parallel, tp_grp, plan.ep, ep_grp)
        sg.footprint = {k: v for k, v in mem.items() if k != "params_per_device"}
        sg.name = f"{g.name} · stage {'1' if i == 0 else plan.pp} of {plan.pp} · micro-batch {plan.micro_batch}"
        ests.append(law.predict(sg, hw, composition))
    est = max(ests, key=lambda e: float(e.time_s))
    t_mb, m, v = float(est.time_s), plan.microbatches, plan.interleave
    net_mb = float(est.term("network_s")) + float(sum(
        r["latency_s"] for r in est.rows() if r["kind"] == "collective"))

    by = dtype_bytes(g.dtype)
    tokens_mb = float(np.max(g.meta.get("tokens", g.meta.get("batch", 1))))
    p2p_s = 0.0
    if plan.pp > 1:
        # each TP rank sends 1/tp of the boundary activation (Megatron's scatter/gather, Narayanan et al.
        # 2021 §4.1; with sequence parallelism it is already split); without sequence parallelism the
        # receiving stage all-gathers it back over the TP group (NVLink inside a node)
        full = tokens_mb * g.meta["hidden"] * by
        a, b = collective_time("sendrecv", full / plan.tp, _topology(hw, pp_grp))
        if plan.tp > 1 and not plan.sequence_parallel:
            ga, gb = collective_time("allgather", full, _topology(hw, tp_grp))
            a, b = a + ga, b + gb
        p2p_s = 2.0 * v * m * float(a + b)
        notes.append("stage-to-stage send/recv (1/tp per rank, scatter/gather) counted on the critical path "
                     "(not overlapped)")
    bubble_s = (plan.pp - 1) / v * t_mb

    p_dev = mem["params_per_device"]
    dp_s = exposed = zero3_s = 0.0
    if plan.dp > 1:
        grad_bytes = p_dev * by
        kind = "allreduce" if plan.zero < 2 else "reducescatter"
        slow = stages[[float(e.time_s) for e in ests].index(t_mb)] if len(stages) > 1 else stages[0]
        sg = tp_shard(Graph(g.name, "train", g.dtype, slow, footprint=est.graph.footprint, meta=dict(g.meta)),
                      plan.tp, plan.sequence_parallel, tp_grp, plan.ep, ep_grp)
        dp_s, exposed = grad_sync_exposed(sg, hw, kind, dp_grp, composition)
        a1, b1 = collective_time(kind, min(GRAD_BUCKET_BYTES, grad_bytes), _topology(hw, dp_grp))
        if plan.zero >= 2:                 # updated parameter shards gathered back after the step
            a, b = collective_time("allgather", grad_bytes, _topology(hw, dp_grp))
            zero3_s += float(a + b) if plan.zero == 2 else 0.0
        if plan.zero == 3:                 # parameters gathered before forward and backward, prefetched
            a, b = collective_time("allgather", grad_bytes, _topology(hw, dp_grp))
            zero3_s += 2.0 * m * exposed_after_overlap(float(a + b), t_mb, float(a1 + b1))
            notes.append("ZeRO-3 parameter gathers: placeholder overlap (all but the last bucket hidden)")
    opt_params = p_dev / (plan.dp if plan.zero >= 1 else 1)
    og = Graph("optimizer", "train", g.dtype, [optimizer_step(opt_params, g.dtype)],
               footprint={"optimizer": 12.0 * opt_params})
    opt_s = float(law.predict(og, hw, composition).time_s) if opt is not None else 0.0

    step = m * t_mb + bubble_s + p2p_s + exposed + zero3_s + opt_s
    model_flops = float(np.max(g.meta["model_flops"])) * m * plan.dp
    hw_flops = float(np.max(g.flops)) + float(np.max(recompute_flops(g, plan.recompute)))
    hw_flops = hw_flops * m * plan.dp
    peak = hw.peak(g.dtype)
    mfu = model_flops / (step * peak * plan.gpus)
    breakdown = {"step_s": step, "microbatch_s": t_mb, "microbatches": m, "compute_and_tp_s": m * t_mb,
                 "tp_ep_network_s": m * net_mb, "pipeline_bubble_s": bubble_s, "pipeline_p2p_s": p2p_s,
                 "dp_grad_comm_s": dp_s, "dp_grad_exposed_s": exposed, "zero_param_gather_s": zero3_s,
                 "optimizer_s": opt_s}
    shares = {"compute": m * (t_mb - net_mb), "network": m * net_mb + p2p_s + exposed + zero3_s,
              "pipeline bubble": bubble_s, "optimizer": opt_s}
    top = max(shares, key=shares.get)
    if top == "compute":
        b = est.bottleneck()
        res = b["resource"]
        why = f"per micro-batch: {b['why']}"
    else:
        res = "network" if top == "network" else ("latency" if top == "pipeline bubble" else "bandwidth")
        why = f"{top} owns {100 * shares[top] / step:.0f}% of the step"
    return StepEstimate(plan, est, breakdown,
                        {k: float(v) for k, v in mem.items()} | {"total_bytes": float(sum(
                            v for k, v in mem.items() if k != "params_per_device"))},
                        {"model_per_step": model_flops, "hardware_per_step": hw_flops,
                         "tokens_per_step": tokens_mb * m * plan.dp},
                        mfu, {"resource": res, "share": top, "why": why}, topo.describe(), notes)
