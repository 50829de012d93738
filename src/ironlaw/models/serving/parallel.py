"""Mixture-of-experts serving with attention data parallelism and expert parallelism over the same GPUs.

TensorRT-LLM's MoE recipe (``enable_attention_dp`` with ``--ep`` = ``--tp``, the published MoE rows): each of
the ``ep`` ranks runs attention, norms, router, shared experts, embedding and LM head for its OWN sequences
with the full (replicated) weights of those layers; the routed experts are sharded, E/ep per rank. Per MoE
layer the ranks pool their tokens (tensorrt_llm/_torch/modules/fused_moe/fused_moe_cutlass.py, Apache-2.0):
    dispatch   all-gather of every rank's tokens (the experts' input, quantized before the gather where the
               experts run in a one-byte dtype; bf16 otherwise) before the experts' up-projection
    combine    reduce-scatter of the experts' bf16 outputs back to the ranks after the down-projection (the
               fused MoE's finalize writes a row for every gathered token first: on the measured MoE rows
               class, whose fit counts that write, the combine op does too; ``pooled_combine``)
    On a multi-node NVLink fabric (an NVLink domain of more than one 8-GPU board: GB200/GB300 NVL72) the
    tokens go all-to-all instead (MnnvlMoe): each rank sends its tokens' k expert copies, bf16.
    (``network.collectives``: α + β over the NVLink domain, or across nodes when ep exceeds it)
    ``dispatcher`` names one of TensorRT-LLM's DeepEP strategies instead (``TRTLLM_FORCE_COMM_METHOD``;
    tensorrt_llm/_torch/modules/fused_moe/communication/, Apache-2.0), each token's k expert copies sent to the
    ranks that hold them and the weighted rows summed back, timed by the device's measured DeepEP curves
    (machine/network/curves.py, fitted by benchmarks/kernel_deepep.py), never by another collective:
    deepep     ``DeepEP``, the high-throughput kernels: dispatch of bf16 rows (``alltoall-deepep-dispatch``), or
               of NVFP4 rows and their scales where the experts run NVFP4 (its only post-quant dispatch:
               ``alltoall-deepep-dispatch-fp4``); combine of bf16 rows (``alltoall-deepep-combine``)
    deepep-ll  ``DeepEPLowLatency``, the low-latency kernels of decode (CUDA-graph safe): dispatch of the
               experts' dtype where it is FP8 or NVFP4 (post-quant), else bf16 (``alltoall-deepep-ll-dispatch``),
               combine of bf16 rows (``alltoall-deepep-ll-combine``). Its buffers hold a set number of tokens per
               rank; past it TensorRT-LLM switches the layer to all-gather/reduce-scatter for the rest of the run
               (``ConfigurableMoE`` on ``is_workload_feasible``, fused_moe/configurable_moe.py), so an engine
               whose step may carry more than the measured rows reach (``DEEPEP_LL_MAX_TOKENS`` per rank) is
               refused (``check_dispatcher`` on its token budget, ``_check_ll_tokens`` on each step).
    nvlink-one-sided, nvlink-two-sided  TensorRT-LLM's MNNVL all-to-all kernels on a multi-node NVLink domain
               (``NVLinkOneSided``, the first its factory tries, measured dispatching NVFP4 alone; ``NVLinkTwoSided``
               with its prepare step, the routing metadata: 4 bytes per routed row), dispatch of the experts' dtype
               where it is FP8 or NVFP4, else bf16; combine of bf16 rows (``alltoall-mnnvl-*``: GB200, EP 2–64).
    A device without the curves is refused, and so is a DeepEP group TensorRT-LLM refuses (``deepep_feasible``:
    its ``DeepEP`` strategy raises in its constructor, which a forced method does not survive). An EP group across nodes (the curves are one node's or one NVLink
    domain's) takes the rule training's exchange takes (``network.collectives``): DeepEP's high-throughput
    collectives are priced as the law's α-β all-to-all over the nodes, said in the exchange's source line; the
    measured-only ones (``curves.MEASURED_ONLY``: low-latency, MNNVL) are refused.
Redundant expert slots (``redundant_experts``, EPLB's replicas of hot experts) add (E + R)/ep slots per rank in all:
their weights are held, and the pooled rows spread over E + R slots (the replicas share their expert's load).
The ranks step together with equal shares of the tokens (serving_throughput: they admit prompts in the same
steps). Attention, norms, router and shared experts run a rank's own tokens; the routed experts run on the
pooled tokens, E/ep experts per rank, so a rank does its share of the experts' work, times ``imbalance``
(1.0 = balanced routing) on the busiest expert rank. Its expert weights: the experts it holds that the
pooled tokens touch, E/ep · (1 − (1 − k/E)^tokens) (uniform routing). With a named routing (``Layout.routing``:
``core.routing``, e.g. power_law_1.2, aiconfigurator's serving default) the busiest rank's routed rows and the
local experts they reach come from that routing at each step's pooled tokens instead.
"""
from __future__ import annotations

import copy

from ...core.errors import IronlawError
from ...core.graph import Graph, Op, dtype_bytes
from ...machine.network.topology import node_size, nodes_for

COMBINE_DTYPE = "bf16"
BOARD_GPUS = 8            # GPUs on one NVLink board (DGX/HGX H100, H200, B200); a larger NVLink domain is multi-node
DISPATCHERS = ("deepep", "deepep-ll", "nvlink-one-sided", "nvlink-two-sided")
STRATEGY = {"allgather": "AllGatherReduceScatter", "alltoall": "MNNVL all-to-all", "deepep": "DeepEP",
            "deepep-ll": "DeepEPLowLatency", "nvlink-one-sided": "NVLinkOneSided",
            "nvlink-two-sided": "NVLinkTwoSided"}     # TensorRT-LLM's name for each exchange


# TensorRT-LLM's DeepEP feasibility rule (tensorrt_llm/_torch/modules/fused_moe/communication/deep_ep.py,
# ``DeepEP._is_deepep_feasible``, checked in ``DeepEP.__init__``; the same rule as ``is_deepep_feasible`` in
# fused_moe_wide_ep.py ``select_alltoall_method_type`` of the releases before it): one host of 2, 4 or 8 ranks
# with EP = its ranks, or 8 ranks a host on 2, 4, 8 or 16 hosts (``local_mpi_size()``: the ranks on one host)
DEEPEP_INTRANODE_RANKS = (2, 4, 8)
DEEPEP_HOST_RANKS = 8
DEEPEP_HOSTS = (2, 4, 8, 16)
# GPUs on one host of a multi-node NVLink rack: GB200/GB300 NVL72 datasheets, 18 compute trays of 2 Grace CPUs and
# 4 Blackwell GPUs each (72 GPUs); one tray is one operating system, the MPI node ``local_mpi_size`` counts
TRAY_GPUS = 4


def host_gpus(hw) -> int:
    """GPUs on one host of ``hw``: an NVLink board's (at most ``BOARD_GPUS``), a compute tray's on a multi-node
    NVLink fabric (``TRAY_GPUS``)."""
    size = node_size(hw)
    if size is not None and size > BOARD_GPUS:
        return TRAY_GPUS
    return min(size or BOARD_GPUS, BOARD_GPUS)


def deepep_feasible(hw, lay) -> bool:
    """TensorRT-LLM's DeepEP rule (``DEEPEP_INTRANODE_RANKS``): the ranks on one host are the run's GPUs up to a
    host's (``host_gpus``); EP must be those ranks (2, 4 or 8), or span 2, 4, 8 or 16 hosts of 8 ranks."""
    local = min(lay.gpus, host_gpus(hw))
    if lay.ep == local and lay.ep in DEEPEP_INTRANODE_RANKS:
        return True
    return local == DEEPEP_HOST_RANKS and lay.ep // local in DEEPEP_HOSTS


def _check_deepep_layout(hw, lay) -> None:
    """One line where TensorRT-LLM's DeepEP strategy refuses the EP group (``deepep_feasible``)."""
    if lay.dispatcher == "deepep" and not deepep_feasible(hw, lay):
        local = min(lay.gpus, host_gpus(hw))
        raise IronlawError(f"--moe-dispatcher deepep: TensorRT-LLM's DeepEP refuses EP {lay.ep} with {local} ranks "
                           f"on a host of {hw.name} (DeepEP._is_deepep_feasible: EP 2, 4 or 8 on one host of that "
                           f"many ranks, or 2, 4, 8 or 16 hosts of 8 ranks); use --ep "
                           f"{local if local in DEEPEP_INTRANODE_RANKS else 8} or another --moe-dispatcher")


def _touched(experts: int, k: int, tokens: float) -> float:
    return experts * (1.0 - (1.0 - k / experts) ** tokens)


def exchange(hw) -> str:
    """How the experts' tokens travel: "alltoall" on a multi-node NVLink fabric, else "allgather"."""
    size = node_size(hw)
    return "alltoall" if size is not None and size > BOARD_GPUS else "allgather"


def _collective(name: str, kind: str, nbytes: float, ranks: int, nodes: int, count: int, dtype: str) -> Op:
    return Op(name, "collective", network_bytes=nbytes, dtype=dtype, count=count, module="ep",
              collective=kind, group=(ranks, nodes), shapes=f"{ranks} ranks on {nodes} node(s)")


def _measured_names(dispatcher: str, dtype: str) -> dict:
    """{phase: (collective, wire dtype)} of a measured strategy (module docstring): prepare (NVLinkTwoSided's routing
    metadata, int32 slot ids), dispatch, combine."""
    from ...machine.network import curves as c
    quantized = dtype if dtype in ("fp8", "fp4") else COMBINE_DTYPE        # TensorRT-LLM's post-quant dispatch
    table = {"deepep": {"dispatch": (c.DEEPEP_DISPATCH_FP4, "fp4") if dtype == "fp4" else (c.DEEPEP_DISPATCH,
                                                                                           COMBINE_DTYPE),
                        "combine": (c.DEEPEP_COMBINE, COMBINE_DTYPE)},
             "deepep-ll": {"dispatch": (c.DEEPEP_LL_DISPATCH, quantized), "combine": (c.DEEPEP_LL_COMBINE, COMBINE_DTYPE)},
             "nvlink-one-sided": {"dispatch": (c.MNNVL_ONE[0], "fp4"), "combine": (c.MNNVL_ONE[1], COMBINE_DTYPE)},
             "nvlink-two-sided": {"prepare": (c.MNNVL_TWO[0], "int32"), "dispatch": (c.MNNVL_TWO[1], quantized),
                                  "combine": (c.MNNVL_TWO[2], COMBINE_DTYPE)}}
    return table[dispatcher]


def _exchanges(hw, meta: dict, lay, tokens: float, dtype: str, count: int) -> list[tuple[str, Op]]:
    """[(phase, collective)] of one MoE layer's exchange, in order: prepare (where the strategy has one), dispatch
    before the experts, combine after (module docstring)."""
    ep, hidden = lay.ep, meta["hidden"]
    k = int(meta.get("experts_per_token", 1))
    nodes = nodes_for(hw, ep)
    if lay.dispatcher in DISPATCHERS:
        from ...machine.network.curves import DEEPEP_WIRE_BYTES
        wire = dict(DEEPEP_WIRE_BYTES, int32=4.0 / hidden)               # the slot ids: 4 bytes per routed row
        return [(phase, _collective(f"ep.{lay.dispatcher}.{phase}", name, tokens * k * hidden * wire[w], ep, nodes,
                                    count, dtype))
                for phase, (name, w) in _measured_names(lay.dispatcher, dtype).items()]
    if exchange(hw) == "alltoall":
        a2a = tokens * k * hidden * dtype_bytes(COMBINE_DTYPE)
        return [("dispatch", _collective("ep.alltoall.dispatch", "alltoall", a2a, ep, nodes, count, dtype)),
                ("combine", _collective("ep.alltoall.combine", "alltoall", a2a, ep, nodes, count, dtype))]
    pooled = tokens * lay.dp * hidden
    wire = dtype if dtype_bytes(dtype) <= 1.0 else COMBINE_DTYPE
    return [("dispatch", _collective("ep.allgather.dispatch", "allgather", pooled * dtype_bytes(wire), ep, nodes,
                                     count, dtype)),
            ("combine", _collective("ep.reducescatter.combine", "reducescatter", pooled * dtype_bytes(COMBINE_DTYPE),
                                    ep, nodes, count, dtype))]


def check_dispatcher(hw, meta: dict, lay, dtype: str, max_tokens_per_rank: int) -> None:
    """One line where ``lay.dispatcher`` cannot be priced from measurements: an unknown name, no expert exchange to
    run it (attention DP with EP > 1), a device without its curves, an EP group across nodes, a dtype the strategy
    was not measured in (NVLinkOneSided: NVFP4 alone), or (deepep-ll) steps of more tokens per rank than the
    measured low-latency rows reach."""
    from ...machine.network.collectives import measured_curve
    from ...machine.network.curves import DEEPEP_LABELS, DEEPEP_LL_MAX_TOKENS, MEASURED_ONLY
    d = lay.dispatcher
    if d is None:
        return
    check_dispatcher_name(lay)
    _check_deepep_layout(hw, lay)
    nodes = nodes_for(hw, lay.ep)
    for name, _ in _measured_names(d, dtype).values():
        if measured_curve(hw, name, lay.ep, 1) is None:
            raise IronlawError(f"--moe-dispatcher {d}: {hw.name} has no measured {' '.join(DEEPEP_LABELS[name])} "
                               f"curve, {name} (measured: {_measured_on(name)})")
        if nodes > 1 and name in MEASURED_ONLY:
            raise IronlawError(f"--moe-dispatcher {d}: EP {lay.ep} spans {nodes} nodes of {hw.name} and the measured "
                               f"{name} curves are one node's (measured: {_measured_on(name)})")
    if d == "nvlink-one-sided" and dtype != "fp4":
        raise IronlawError(f"--moe-dispatcher nvlink-one-sided: its kernels are measured dispatching NVFP4 alone, "
                           f"not --dtype {dtype}; use --dtype fp4 or --moe-dispatcher nvlink-two-sided")
    if d == "deepep-ll" and max_tokens_per_rank > DEEPEP_LL_MAX_TOKENS:
        raise IronlawError(f"--moe-dispatcher deepep-ll: a step carries up to {max_tokens_per_rank:,} tokens per rank "
                           f"and DeepEP's low-latency kernels are measured up to {DEEPEP_LL_MAX_TOKENS} (past its "
                           f"token limit TensorRT-LLM switches to all-gather/reduce-scatter): use --max-num-tokens "
                           f"{DEEPEP_LL_MAX_TOKENS} or less, or --moe-dispatcher deepep")


def _check_ll_tokens(lay, tokens: float) -> None:
    """One line where a step of the engine carries more tokens per rank than DeepEP's low-latency rows measure (a
    mixed step: its decode tokens beside a prompt chunk)."""
    from ...machine.network.curves import DEEPEP_LL_MAX_TOKENS
    if lay.dispatcher == "deepep-ll" and tokens > DEEPEP_LL_MAX_TOKENS:
        raise IronlawError(f"--moe-dispatcher deepep-ll: a step carries {tokens:,.0f} tokens per rank (its decode "
                           f"tokens beside a prompt chunk) and DeepEP's low-latency kernels are measured up to "
                           f"{DEEPEP_LL_MAX_TOKENS} (past its token limit TensorRT-LLM switches to "
                           f"all-gather/reduce-scatter): lower --max-num-tokens and --max-batch so that a step's "
                           f"tokens stay within {DEEPEP_LL_MAX_TOKENS}, or use --moe-dispatcher deepep")


def check_dispatcher_name(lay) -> None:
    """One line for a dispatcher name serving does not model, or one given without an expert exchange to run."""
    from ...core.errors import unknown
    if lay.dispatcher not in DISPATCHERS:
        raise unknown("--moe-dispatcher (serving)", str(lay.dispatcher), DISPATCHERS)
    if not (lay.attention_dp and lay.ep > 1):
        raise IronlawError(f"--moe-dispatcher {lay.dispatcher} prices the expert exchange of attention DP with "
                           f"expert parallelism: add --attention-dp and --ep > 1")


def _measured_on(name: str) -> str:
    """The catalog devices with a measured curve for ``name``, each with its group sizes."""
    from ...machine import hardware
    from ...machine.network.calibration import for_hardware
    where = [f"{h.name} (EP {'/'.join(str(g) for c, g in sorted(for_hardware(h).curves) if c == name)})"
             for h in hardware.catalog() if any(c == name for c, _ in for_hardware(h).curves)]
    return ", ".join(where) or "none"


def experts_per_rank(meta: dict, lay) -> dict:
    """The routed experts' placement: the model's experts, the redundant slots, the slots each rank holds."""
    e, r = int(meta["experts"]), int(lay.redundant_experts)
    return {"experts": e, "redundant_slots": r, "ranks": lay.ep, "slots_per_rank": (e + r) // lay.ep,
            "experts_per_rank": e / lay.ep, "redundant_per_rank": r / lay.ep}


def _wires(d: str, dtype: str) -> dict:
    """{phase: wire dtype} of exchange ``d`` (module docstring)."""
    if d in DISPATCHERS:
        return {phase: w for phase, (_, w) in _measured_names(d, dtype).items()}
    if d == "alltoall":
        return {"dispatch": COMBINE_DTYPE, "combine": COMBINE_DTYPE}
    return {"dispatch": dtype if dtype_bytes(dtype) <= 1.0 else COMBINE_DTYPE, "combine": COMBINE_DTYPE}


def exchange_plan(hw, meta: dict, lay, dtype: str) -> dict:
    """What prices the expert exchange: TensorRT-LLM's strategy, and per phase the collective, its wire dtype and
    the source of its time (``network.collectives.time_source``)."""
    from ...machine.network.collectives import time_source
    d = lay.dispatcher or exchange(hw)
    out = {"dispatcher": d, "strategy": STRATEGY[d], "chosen": "given" if lay.dispatcher else "engine default"}
    wires = _wires(d, dtype)
    for phase, op in _exchanges(hw, meta, lay, 1.0, dtype, 1):
        ranks, nodes = op.group
        out[phase] = {"collective": op.collective, "wire_dtype": wires[phase], "ranks": ranks, "nodes": nodes,
                      "source": time_source(hw, op.collective, ranks, nodes)}
    return out


def expert_share(op, share: float, weight_scale: float):
    """A rank's routed expert op: ``share`` of ``op``'s FLOPs and traffic, its weights times ``weight_scale``."""
    o = copy.copy(op)
    o.flops = op.flops * share
    o.vector_flops = op.vector_flops * share
    o.bytes = {c: v * share for c, v in op.bytes.items() if c != "weights"}
    o.bytes_written = op.bytes_written * share
    if "weights" in op.bytes:
        o.bytes["weights"] = op.bytes["weights"] * weight_scale
    return o


def pooled_combine(op, share: float, dp: int):
    """The routed rows' combine on one EP rank of the all-gather exchange: it sums the rank's own routed rows
    (``share`` of the step's, as ``expert_share``) into an output row for every token the ranks pooled (``dp`` times
    the rank's own), which the reduce-scatter then sums over the ranks. TensorRT-LLM's CUTLASS fused MoE under
    attention DP runs on the gathered tokens and its finalize writes each one's row (fused_moe_cutlass.py,
    Apache-2.0); the fused-MoE tables time the layer so at the pooled token count, and the fitted rows' term
    counts that write (measure/calibrate/moefit.py: (R + t)·h, t the layer's tokens). Applied to a combine whose
    class was fitted so (``attrs["pooled_write"]``, set by ``step.grouped`` on the measured rows class); on the
    end-to-end expert η (FITTED) the combine stays the rank's own tokens, as those η were fitted with it."""
    o = expert_share(op, share, 1.0)
    write = op.bytes_written
    o.bytes["activations"] = (op.bytes.get("activations", 0.0) - write) * share + write * dp
    o.bytes_written = write * dp
    if "tokens" in op.attrs:
        o.attrs = {**op.attrs, "tokens": op.attrs["tokens"] * dp}
    return o


def busiest_share(lay, tokens: float, e: int, k: int) -> tuple[float, float]:
    """(the busiest rank's routed rows, its experts' weights) over those of ``tokens`` tokens routed over all
    ``e`` experts (how the unsharded step's expert ops are built): ``Layout.routing``'s at the pooled tokens, or
    uniform routing times ``expert_imbalance`` over the e + redundant slots: dp/ep of the step's rows (1 under
    attention DP, where dp = ep; 1/ep with EP under TP attention, ``serving.tpexperts``)."""
    if lay.routing is None:
        slots = e + lay.redundant_experts
        return (lay.expert_imbalance * lay.dp / lay.ep,
                _touched(slots, k, tokens * lay.dp) / lay.ep / _touched(e, k, tokens))
    from ...core.routing import slowest_rank
    rows, used = slowest_rank(lay.routing, tokens * lay.dp, e, k, lay.ep)
    return rows / (tokens * k), used / _touched(e, k, tokens)


def dummy_padding(meta: dict, lay, e: int, k: int) -> float:
    """The busiest rank's routed rows in a CUDA-graph padded step when every padding row picks the same k experts,
    over its rows with the padding spread like real tokens (1 in a step without padding). TensorRT-LLM pads a
    decode batch with one dummy generation request replicated (tensorrt_llm/_torch/pyexecutor/model_engine.py,
    ``_get_padded_batch``: ``[self.cuda_graph_dummy_request] * padding_size``; under attention DP every rank to the
    size that rounds up the largest rank's batch), so the padding rows are one token's, and all of every rank's go
    to that token's k experts: the rank hosting the most of them (``routing.dummy_rank_experts``) computes them."""
    from ...core.routing import dummy_rank_experts
    padded, real = float(meta["tokens"]), float(meta.get("decode_sequences") or 0.0)
    if float(meta.get("prefill_tokens") or 0.0) > 0 or real < 1 or padded <= real:
        return 1.0
    if lay.routing is not None or lay.redundant_experts:
        raise IronlawError("padding rows on the dummy request's experts are modelled for uniform routing without "
                           "redundant expert slots only")
    hosted = dummy_rank_experts(e, k, lay.ep)
    return (real * k / lay.ep + (padded - real) * hosted) * lay.ep / (padded * k)   # over the spread rows


def shard_attention_dp(g: Graph, hw, lay, dummy_pad: bool = False) -> Graph:
    """One rank's step: ``g`` is its step over its own tokens, unsharded (module docstring); ``dummy_pad``: a
    padded step's padding rows on the dummy request's k experts (``dummy_padding``), not spread like real tokens."""
    meta = g.meta
    e, k, ep = int(meta["experts"]), int(meta.get("experts_per_token", 1)), lay.ep
    tokens = float(meta["tokens"])
    _check_ll_tokens(lay, tokens)
    share, weight_scale = busiest_share(lay, tokens, e, k)
    if dummy_pad:
        share *= dummy_padding(meta, lay, e, k)
    ops = []
    for op in g.ops:
        if op.module != "experts":
            ops.append(op)
            continue
        exchange_ops = _exchanges(hw, meta, lay, tokens, g.dtype, op.count)
        if op.attrs.get("role") == "column":          # the experts' first GEMM (up) and last (down)
            ops += [o for phase, o in exchange_ops if phase != "combine"]
        pooled = op.attrs.get("pooled_write") and (lay.dispatcher or exchange(hw)) == "allgather"
        ops.append(pooled_combine(op, share, lay.dp) if pooled else expert_share(op, share, weight_scale))
        if op.attrs.get("role") == "row":
            ops += [o for phase, o in exchange_ops if phase == "combine"]
    return Graph(f"{g.name} [attention DP {lay.dp}, EP {ep}]", g.phase, g.dtype, ops, footprint=dict(g.footprint),
                 meta={**meta, "ep": ep, "attention_dp": lay.dp})
