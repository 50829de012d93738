"""The plan of a run on many devices and its checks (Megatron-LM's knobs): ``make_plan`` reads the options,
checks each against the others and, given the model, against its layers, heads, experts and sequence.

    --gpus --nodes --tp --pp --cp --dp --ep --global-batch --micro-batch --interleave
    --sequence-parallel --recompute none|selective|full [--recompute-layers N --recompute-method block|uniform]
    --zero 0|1|2|3 (--fsdp = --zero 3)
    --expert-imbalance --tp-comm-overlap --overlap-p2p --grad-fp32 --moe-a2a-overlap;
    gpus = tp × pp × cp × dp
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.errors import IronlawError
from ...core.graph import Graph
from ...machine.network.topology import check_count, nodes_for
from .. import dispatcher, offload
from . import recompute as partial
from .kvheads import kv_tp_choices, tp_fits_kv_heads
from .stages import uneven


RECOMPUTE = ("none", "selective", "full")
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
    fp8_attention: bool = False                # attention's products in FP8 (``fp8_attention``: TE's fp8_dpa)
    recompute_layers: int | None = None        # with recompute "full": N layers per model chunk (``recompute``)
    recompute_method: str = "block"            # which N: the chunk's first N (block) or groups of N (uniform)

    @property
    def microbatches(self) -> int:
        return self.global_batch // (self.micro_batch * self.dp)

    def recomputed(self, chunk_layers: float) -> partial.Recompute:
        """What full recomputation keeps and re-runs on a model chunk of ``chunk_layers`` layers."""
        return partial.of(self.recompute_layers, self.recompute_method, chunk_layers)


def _no_layers(flag: str, value, graph: Graph) -> str:
    """Why ``flag`` is refused on a graph without layers: the step splits its recomputation and memory by the
    layers of a transformer ironlaw builds; a captured graph has only the ops torch ran."""
    what = (f"{graph.name} is captured op by op, without them" if graph.meta.get("captured") else
            f"{graph.name} has none")
    hint = (f"; `ironlaw compare {graph.name} --phase train --what-if recompute={value}` prices it on one device, "
            f"{', checkpointing each numbered block' if value == 'full' else ''}"
            if graph.meta.get("captured") and flag == "--recompute" else "")
    return (f"{flag} {value} in a training step needs the layers of a transformer ironlaw builds (a built-in or an "
            f"hf: config); {what}{hint}")


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
        raise IronlawError(_no_layers("--recompute", rc, graph))
    red = _redundant(o, ep, graph)
    if graph is not None:
        check_model(graph, tp, pp, v, ep, cp, red)
    rc_layers, rc_method = partial.check(o, rc, graph, pp, v)
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
    exposed = check_param_gather(bool(o.get("param_gather_exposed", False)), zero)
    return Plan(gpus, nodes, tp, pp, dp, ep, gb, mb, v, sp, rc, zero, cp, imbalance, overlap, p2p,
                bool(o.get("grad_fp32", False)), a2a, graph_scopes(o.get("cuda_graph", ()), graph), red, off, exposed,
                dispatcher.check(o.get("moe_dispatcher"), ep), bool(o.get("fp8_attention", False)), rc_layers,
                rc_method)


def check_param_gather(exposed: bool, zero: int | None) -> bool:
    """``--param-gather-exposed``: the distributed optimizer's (ZeRO-1) gather, refused with another ZeRO stage
    (None: not fixed)."""
    if exposed and zero is not None and zero != 1:
        raise IronlawError(f"--param-gather-exposed is the distributed optimizer's (--zero 1) parameter all-gather "
                           f"left after the step; --zero {zero} has {'none' if zero == 0 else 'its own gathers'}")
    return exposed


def check_redundant(r, graph: Graph | None = None) -> int:
    """``--redundant-experts N``: a count ≥ 0 of extra expert slots; a model without routed experts (``graph``'s,
    where given) has none to replicate (``analyze`` and ``search`` check it alike)."""
    if isinstance(r, bool) or not isinstance(r, int) or r < 0:
        raise IronlawError(f"--redundant-experts is a count of extra expert slots (≥ 0), got {r!r}")
    if r and graph is not None and "layers" in graph.meta and not graph.meta.get("experts"):
        raise IronlawError(f"--redundant-experts {r}: {graph.name} is dense (no routed experts to replicate); "
                           f"leave it out")
    return r


def check_redundant_slots(r, graph: Graph) -> int:
    """``--redundant-experts N`` as ``search`` checks it for training and serving layouts alike: a count of slots
    (``check_redundant``) of ``graph``'s model, and where N > 0 at most its experts (``check_model`` with every
    degree 1: the EP degrees are the search's)."""
    r = check_redundant(r, graph)
    if r:
        check_model(graph, 1, 1, 1, 1, 1, r)
    return r


def _redundant(o: dict, ep: int, graph: Graph | None = None) -> int:
    """``--redundant-experts N``: N extra expert slots over the EP group (DeepSeek's EPLB: 256 + 32 over 72);
    ``check_redundant``'s, and an EP group to spread them over."""
    r = check_redundant(o.get("redundant_experts", 0), graph)
    if r and ep == 1:
        raise IronlawError(f"--redundant-experts {r} spreads replicas of hot experts over the EP group; add --ep > 1")
    return r


def graph_scopes(value, graph: Graph | None = None) -> tuple:
    """``--cuda-graph attn,moe_router,moe_preprocess,full,full_iteration`` (or a sequence; ``none``: eager, the
    default): the parts captured in CUDA graphs; a whole layer or step (``host.LAYER_SCOPES``) not on a model with routed experts (``graph``'s,
    where given), whose dropless layers wait on the host."""
    from ..host import LAYER_SCOPES, SCOPES
    if not isinstance(value, str) and not (isinstance(value, (list, tuple)) and all(isinstance(x, str) for x in value)):
        raise IronlawError(f"--cuda-graph takes part names, comma-separated ('attn,moe_router') or a list of them, "
                           f"got {value!r}")
    items = [x.strip() for x in value.split(",")] if isinstance(value, str) else list(value)
    if items == ["none"]:                           # the default, named: eager, nothing captured
        return ()
    if "none" in items:
        raise IronlawError(f"--cuda-graph none captures nothing; it does not combine with other parts, got "
                           f"'{','.join(map(str, items))}'")
    twice = [x for i, x in enumerate(items) if x in items[:i]]
    if twice:
        raise IronlawError(f"--cuda-graph names '{twice[0]}' twice")
    bad = [x for x in items if x not in SCOPES]
    if bad:
        raise IronlawError(f"--cuda-graph takes {', '.join(SCOPES)} (comma-separated) or none, got '{bad[0]}'")
    whole = [x for x in items if x in LAYER_SCOPES]
    if whole and graph is not None and graph.meta.get("experts"):
        raise IronlawError(f"--cuda-graph {whole[0]} captures whole layers; {graph.name}'s dropless MoE layers wait "
                           f"on the host for each expert's token count, which a CUDA graph cannot hold: capture "
                           f"attn, moe_router, moe_preprocess instead")
    return tuple(x for x in SCOPES if x in items)


def _devices(o: dict, hw, tp: int, pp: int, cp: int) -> tuple[int, int, int]:
    """(gpus, nodes, dp): the devices equal tp × pp × cp × dp."""
    model = tp * pp * cp
    typed = [f"--{k} {v}" for k, v in (("tp", tp), ("pp", pp), ("cp", cp)) if k in o or v > 1]
    names = " × ".join(typed) + (f" = {model}" if len(typed) > 1 else "")       # the degrees the user gave
    gpus = check_count(o.get("gpus", model * o.get("dp", 1) if "dp" in o else model), "--gpus")
    nodes = nodes_for(hw, gpus, o.get("nodes")) if hw is not None else check_count(o.get("nodes", 1), "--nodes")
    if gpus % model:
        raise IronlawError(f"{names} does not divide --gpus {gpus}; choose degrees whose product "
                           f"divides the devices")
    dp = check_count(o.get("dp", gpus // model), "--dp")
    if model * dp != gpus:
        raise IronlawError(f"{' × '.join([*typed, f'--dp {dp}'])} = {model * dp} devices, but --gpus is {gpus}; the product of the "
                           f"parallel degrees must equal the devices")
    if gpus % nodes:
        if "gpus" not in o:                       # the devices the degrees imply, not a --gpus the user typed
            raise IronlawError(f"--nodes {nodes} needs --gpus N, a multiple of {nodes} (the parallel degrees given "
                               f"make {gpus} device{'s' if gpus > 1 else ''})")
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


def either(values: list[int]) -> str:
    """``values`` as a message offers them: "8", "1 or 2", "1, 2, 4 or 8"."""
    words = [str(v) for v in values]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def check_model(g: Graph, tp: int, pp: int, v: int, ep: int, cp: int = 1, redundant: int = 0) -> None:
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
    model = meta.get("spec", g.name)       # the model the user named, not a step graph's name
    if heads % tp:
        raise IronlawError(f"--tp {tp} does not divide the {heads} attention heads of {model}; use "
                           f"{either([t for t in kv_tp_choices(heads, kv) if g.phase != 'train' or kv % t == 0])}")
    if kv % tp and (g.phase == "train" or not tp_fits_kv_heads(tp, kv)):
        raise IronlawError(f"--tp {tp} does not divide the {kv} key/value heads of {model}"
                           + (f"; use a divisor of {kv} (training splits them: Megatron-Core)" if g.phase == "train"
                              else f" nor is a multiple of them; use {either(kv_tp_choices(heads, kv))}"))
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
