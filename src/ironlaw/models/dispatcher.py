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
    deepep    ``MoEFlexTokenDispatcher`` with ``moe_flex_dispatcher_backend = "deepep"`` (``_DeepepManager``): the
              same fused exchange, timed by DeepEP's own measured dispatch and combine kernels where the device has
              them (``[[network.curve]]`` ``alltoall-deepep-dispatch`` / ``-combine``, fitted on aiconfigurator-core
              0.12.0's TensorRT-LLM DeepEP high-throughput tables by benchmarks/kernel_deepep.py; one node, bf16
              rows; a device without them is refused, ``check_device``; a group size or node count they do not
              cover is priced as the coverage says); no sort, but Transformer Engine's
              padding copies with quantized experts (DeepEP pads only through the routing-map option, below).

The exchange itself is the law's all-to-all for alltoall and flex (the catalog's collectives), DeepEP's curves for
deepep (``on_deepep``). ``with_sorts`` adds the
alltoall dispatcher's own: its sorts as memory-bound ops of the routed experts, each reading and writing the bytes
its all-to-all carries, after the dispatch and before the combine, in every pass; and the second all-to-all of
the dispatch, the routed rows' probabilities (``token_dispatch``; flex carries them in its kernel). Only with
EP > 1 (the all-to-alls exist) and more than one local expert. The host's kernel counts (``host.DISPATCH``) are the alltoall
dispatcher's for both; the padding copies' launches (``host.PADDING``) the alltoall dispatcher's only.

With quantized expert GEMMs (FP8, MXFP8, FP4) the alltoall dispatcher also pays Transformer Engine's padding of
each local expert's rows to the quantized GEMM's alignment (16 rows; 32 for MXFP8): core_v0.15.0 / 0d8e0714
``TEGroupedMLP.forward`` runs ``Fp8Padding`` on the experts' input and ``Fp8Unpadding`` on their output whenever
``config.fp8`` (or ``fp4``), and TE v2.9's ``_Fp8Padding`` / ``_Fp8Unpadding`` copy every row into a new tensor
(``fused_multi_row_padding`` / ``fused_multi_row_unpadding``), forward and, on the gradients, backward. Dropless
routing's splits are almost never all aligned (the copy is skipped only then), and none of the Megatron-Bridge
v0.2.0 recipes set ``moe_router_padding_for_quantization``, the routing-map padding that makes them so. HybridEP
writes the padded layout in its dispatch kernel (``_HybridEPManager.dispatch``, ``pad_multiple``), so flex pays no
copy (DeepEP pads only through that routing-map option, ``_DeepepManager``; flex is priced as HybridEP, which
every flex row checked runs). Token drop's capacity-sized splits are aligned too; ironlaw prices dropless MoE only.
"""
from __future__ import annotations

import copy

from ..core import passes
from ..core.errors import IronlawError
from ..core.graph import Graph, Op, dtype_bytes

DISPATCHERS = ("alltoall", "flex", "deepep")
DEFAULT = "alltoall"
SORT, UNSORT = "moe_sort_chunks", "moe_unsort_chunks"     # after the dispatch / before the combine (forward)
PAD, UNPAD = "moe_quant_pad", "moe_quant_unpad"           # the experts' input / output (forward), quantized GEMMs
PROBS_BYTES = 4.0                                          # a routed row's probability, fp32


def check(value, ep: int) -> str:
    """``--moe-dispatcher``: one of ``DISPATCHERS``; flex needs expert parallelism."""
    name = DEFAULT if value is None else value
    if name not in DISPATCHERS:
        raise IronlawError(f"--moe-dispatcher takes {', '.join(DISPATCHERS[:-1])} or {DISPATCHERS[-1]} (Megatron-Core's "
                           f"moe_token_dispatcher_type), got '{name}'")
    if name != DEFAULT and ep == 1:
        raise IronlawError(f"--moe-dispatcher {name} exchanges the routed tokens over the expert-parallel group; "
                           f"add --ep > 1")
    return name


def check_device(name: str, hw) -> None:
    """``--moe-dispatcher deepep`` prices the exchange on DeepEP's measured curves; a device whose hardware file
    holds none is refused, naming the devices that have them (the law's all-to-all in its place would be flex's
    price under deepep's name). A group size or node count the curves do not cover is priced as stated in the
    coverage (``law.coverage``)."""
    if name != "deepep" or _deepep_sizes(hw):
        return
    from ..machine import hardware
    where = [f"{h.name} (EP {'/'.join(map(str, s))})" for h in hardware.catalog() if (s := _deepep_sizes(h))]
    raise IronlawError(f"--moe-dispatcher deepep: {hw.name} has no measured DeepEP curve (measured on "
                       f"{', '.join(where)}); use alltoall or flex")


def _deepep_sizes(hw) -> list[int]:
    """The EP group sizes (one node) of ``hw``'s measured DeepEP dispatch curves."""
    from ..machine.network.calibration import for_hardware
    from ..machine.network.curves import DEEPEP_DISPATCH
    return sorted(g for c, g in for_hardware(hw).curves if c == DEEPEP_DISPATCH)


def local_experts(meta: dict) -> float:
    """Expert slots per rank of a stage graph (its meta's ``ep``; redundant slots included)."""
    return meta.get("expert_slots", meta.get("experts", 0)) / max(meta.get("ep", 1), 1)


def quantized_experts(sg: Graph) -> bool:
    """Whether the routed experts' GEMMs run on quantized operands (under one byte per element: FP8, MXFP8, FP4)."""
    return any(op.module == "experts" and op.kind == "matmul" and dtype_bytes(op.dtype) < 2.0 for op in sg.ops)


def with_sorts(sg: Graph, dispatcher: str) -> Graph:
    """The per-device graph ``sg`` (after ``parallel.tp_shard``) with the alltoall dispatcher's sorts by local
    expert beside its all-to-alls (more than one local expert) and, with quantized expert GEMMs, Transformer
    Engine's padding copies of the experts' rows next to them; for deepep the exchange on DeepEP's kernels
    (``on_deepep``) and the padding copies alone; ``sg`` itself for flex or without EP."""
    if dispatcher == "deepep" and sg.meta.get("ep", 1) > 1:
        sg = on_deepep(sg)
    sort, pad = local_experts(sg.meta) > 1 and dispatcher == "alltoall", quantized_experts(sg)
    if dispatcher == "flex" or sg.meta.get("ep", 1) == 1 or not (sort or pad):
        return sg
    ops = list(sg.ops)
    out: list[Op] = []
    for i, op in enumerate(ops):
        dispatch = op.kind == "collective" and op.module == "ep" and ".dispatch" in op.name
        combine = op.kind == "collective" and op.module == "ep" and ".combine" in op.name
        if combine:
            expert = _nearest_expert(ops[i - 1::-1] if i else [], op)
            out += [_pad(op, expert, UNPAD)] * pad + [_sort(op, expert, UNSORT)] * sort
        out.append(op)
        if dispatch:
            expert = _nearest_expert(ops[i + 1:], op)
        if sort and (dispatch or combine) and (passes.of(expert.name) is passes.Pass.BACKWARD) == combine:
            out.append(_probs(op, sg.meta.get("hidden")))
        if dispatch:
            out += [_sort(op, expert, SORT)] * sort + [_pad(op, expert, PAD)] * pad
    return Graph(sg.name, sg.phase, sg.dtype, out, footprint=dict(sg.footprint), meta=dict(sg.meta),
                 uncounted_ops=dict(sg.uncounted_ops))


def on_deepep(sg: Graph) -> Graph:
    """``sg`` with its expert exchange on DeepEP's kernels: each EP all-to-all that feeds the experts (``.dispatch``,
    forward and backward) times as DeepEP's dispatch, each that leaves them (``.combine``) as its combine (the
    collectives ``curves.DEEPEP``); the bytes are the all-to-all's, as the curves were fitted on."""
    from ..machine.network.curves import DEEPEP_COMBINE, DEEPEP_DISPATCH
    ops = []
    for op in sg.ops:
        if op.kind == "collective" and op.module == "ep" and op.collective == "alltoall":
            op = copy.copy(op)
            op.collective = DEEPEP_DISPATCH if ".dispatch" in op.name else DEEPEP_COMBINE
        ops.append(op)
    return Graph(sg.name, sg.phase, sg.dtype, ops, footprint=dict(sg.footprint), meta=dict(sg.meta),
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


def _copy_name(expert: Op, name: str, pair: tuple[str, str]) -> str:
    """The name of a copy beside an all-to-all, in the pass of ``expert``, the expert op next to it. In the
    backward the gradients arrive through the combine's all-to-all (named ``.dispatch.bwd`` here: it feeds the
    experts' backward) and pass the forward's copies in reverse: the backward's op after the dispatch is the
    backward of the forward's op before the combine (``pair``: the forward's after-dispatch and before-combine
    names), and the other way round."""
    p = passes.of(expert.name)
    if p is passes.Pass.BACKWARD:
        return passes.backward_of(pair[1] if name == pair[0] else pair[0])
    if p is passes.Pass.RECOMPUTE:
        return passes.recompute_of(name)
    return name


def _copy(a2a: Op, name: str, role: str, shapes: str) -> Op:
    """A memory-bound copy of the rows ``a2a`` carries: reads and writes each once."""
    layers = {"per_layer": a2a.attrs["per_layer"]} if "per_layer" in a2a.attrs else {}
    nbytes = a2a.network_bytes
    return Op(name, "elementwise", flops=0.0, bytes={"activations": 2.0 * nbytes}, dtype=a2a.dtype, count=a2a.count,
              module="experts", shapes=shapes, bytes_written=nbytes,
              attrs=layers | {"role": role, "expert": "routed"})


def _sort(a2a: Op, expert: Op, name: str) -> Op:
    """The sort beside ``a2a`` (``_copy_name``): the received rows from [rank][expert] to [expert][rank] order and
    back."""
    return _copy(a2a, _copy_name(expert, name, (SORT, UNSORT)), "sort", "the routed rows, chunks by local expert")


def _pad(a2a: Op, expert: Op, name: str) -> Op:
    """Transformer Engine's padding copy beside ``a2a`` (``_copy_name``): each local expert's rows padded to the
    quantized GEMM's alignment on the way in, unpadded on the way out (TE v2.9 ``Fp8Padding``, ``Fp8Unpadding``)."""
    return _copy(a2a, _copy_name(expert, name, (PAD, UNPAD)), "pad", "the routed rows, padded per local expert")


def notes(rows: list[dict]) -> list[str]:
    """The step's note on the sorts (``rows``: the stage's law rows), none without them."""
    t = sum(r["time_s"] for r in rows if r["name"].split(".")[0] in (SORT, UNSORT))
    p = sum(r["time_s"] for r in rows if r["name"].split(".")[0] in (PAD, UNPAD))
    out = []
    if t:
        out.append(f"Megatron-Core's alltoall token dispatcher sorts the routed rows by local expert after each "
                   f"dispatch and back before each combine, forward and backward: {1e3 * t:.1f} ms per micro-batch "
                   f"(--moe-dispatcher flex fuses them into DeepEP's or HybridEP's exchange)")
    if p:
        out.append(f"Transformer Engine pads each local expert's rows to the quantized GEMM's alignment and unpads "
                   f"the output, forward and backward: {1e3 * p:.1f} ms per micro-batch (HybridEP's dispatch, "
                   f"--moe-dispatcher flex, writes the padded layout itself)")
    return out


def exchange_note(sg: Graph, hw, dispatcher: str) -> list[str]:
    """The step's note on its expert exchange: the dispatcher, the collective its ops (dispatch, combine, the
    routing probabilities) are timed as and what times it (``network.collectives.time_source``: a measured curve,
    its rows and table, or the α-β model); none without EP."""
    from ..machine.network.collectives import time_source
    seen: dict = {}
    for op in sg.ops:
        if op.kind == "collective" and op.module == "ep" and op.collective and int(op.group[0]) > 1:
            part = op.name.split(".")[2] if op.name.count(".") >= 2 else op.name
            names = seen.setdefault((op.collective, int(op.group[0]), int(op.group[1])), [])
            names += [part] if part not in names else []
    parts = [f"{', '.join(names)} as {name}: {time_source(hw, name, p, m)}" for (name, p, m), names in seen.items()]
    if not parts:
        return []
    e, slots = sg.meta.get("experts", 0), sg.meta.get("expert_slots", sg.meta.get("experts", 0))
    held = (f"{local_experts(sg.meta):g} expert slots per rank ({e}{f' + {slots - e} redundant' if slots > e else ''}"
            f" over EP {sg.meta.get('ep', 1)}); ") if e else ""
    return [f"expert exchange ({dispatcher} dispatcher): {held}" + "; ".join(parts)]
