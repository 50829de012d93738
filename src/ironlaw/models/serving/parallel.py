"""Mixture-of-experts serving with attention data parallelism and expert parallelism over the same GPUs.

TensorRT-LLM's MoE recipe (``enable_attention_dp`` with ``--ep`` = ``--tp``, the published MoE rows): each of
the ``ep`` ranks runs attention, norms, router, shared experts, embedding and LM head for its OWN sequences
with the full (replicated) weights of those layers; the routed experts are sharded, E/ep per rank. Per MoE
layer the ranks pool their tokens (tensorrt_llm/_torch/modules/fused_moe/fused_moe_cutlass.py, Apache-2.0):
    dispatch   all-gather of every rank's tokens (the experts' input, quantized before the gather where the
               experts run in a one-byte dtype; bf16 otherwise) before the experts' up-projection
    combine    reduce-scatter of the experts' bf16 outputs back to the ranks after the down-projection
    On a multi-node NVLink fabric (an NVLink domain of more than one 8-GPU board: GB200/GB300 NVL72) the
    tokens go all-to-all instead (MnnvlMoe): each rank sends its tokens' k expert copies, bf16.
    (``network.collectives``: α + β over the NVLink domain, or across nodes when ep exceeds it)
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

from ...core.graph import Graph, Op, dtype_bytes
from ...machine.network.topology import node_size, nodes_for

COMBINE_DTYPE = "bf16"
BOARD_GPUS = 8            # GPUs on one NVLink board (DGX/HGX H100, H200, B200); a larger NVLink domain is multi-node


def _touched(experts: int, k: int, tokens: float) -> float:
    return experts * (1.0 - (1.0 - k / experts) ** tokens)


def exchange(hw) -> str:
    """How the experts' tokens travel: "alltoall" on a multi-node NVLink fabric, else "allgather"."""
    size = node_size(hw)
    return "alltoall" if size is not None and size > BOARD_GPUS else "allgather"


def _collective(name: str, kind: str, nbytes: float, ranks: int, nodes: int, count: int, dtype: str) -> Op:
    return Op(name, "collective", network_bytes=nbytes, dtype=dtype, count=count, module="ep",
              collective=kind, group=(ranks, nodes), shapes=f"{ranks} ranks on {nodes} node(s)")


def _exchanges(hw, meta: dict, lay, tokens: float, dtype: str, count: int) -> tuple[Op, Op]:
    """(dispatch, combine) collectives of one MoE layer (module docstring)."""
    ep, hidden = lay.ep, meta["hidden"]
    k = int(meta.get("experts_per_token", 1))
    nodes = nodes_for(hw, ep)
    if exchange(hw) == "alltoall":
        a2a = tokens * k * hidden * dtype_bytes(COMBINE_DTYPE)
        return (_collective("ep.alltoall.dispatch", "alltoall", a2a, ep, nodes, count, dtype),
                _collective("ep.alltoall.combine", "alltoall", a2a, ep, nodes, count, dtype))
    pooled = tokens * lay.dp * hidden
    wire = dtype if dtype_bytes(dtype) <= 1.0 else COMBINE_DTYPE
    return (_collective("ep.allgather.dispatch", "allgather", pooled * dtype_bytes(wire), ep, nodes, count, dtype),
            _collective("ep.reducescatter.combine", "reducescatter", pooled * dtype_bytes(COMBINE_DTYPE), ep, nodes,
                        count, dtype))


def _expert_op(op, share: float, weight_scale: float):
    o = copy.copy(op)
    o.flops = op.flops * share
    o.vector_flops = op.vector_flops * share
    o.bytes = {c: v * share for c, v in op.bytes.items() if c != "weights"}
    o.bytes_written = op.bytes_written * share
    if "weights" in op.bytes:
        o.bytes["weights"] = op.bytes["weights"] * weight_scale
    return o


def _busiest(lay, tokens: float, e: int, k: int) -> tuple[float, float]:
    """(the busiest rank's routed rows, its experts' weights) over those of ``tokens`` tokens routed over all
    ``e`` experts (how the unsharded step's expert ops are built): ``Layout.routing``'s at the pooled tokens, or
    uniform routing times ``expert_imbalance``."""
    if lay.routing is None:
        return lay.expert_imbalance, _touched(e, k, tokens * lay.dp) / lay.ep / _touched(e, k, tokens)
    from ...core.routing import slowest_rank
    rows, used = slowest_rank(lay.routing, tokens * lay.dp, e, k, lay.ep)
    return rows / (tokens * k), used / _touched(e, k, tokens)


def shard_attention_dp(g: Graph, hw, lay) -> Graph:
    """One rank's step: ``g`` is its step over its own tokens, unsharded (module docstring)."""
    meta = g.meta
    e, k, ep = int(meta["experts"]), int(meta.get("experts_per_token", 1)), lay.ep
    tokens = float(meta["tokens"])
    share, weight_scale = _busiest(lay, tokens, e, k)
    ops = []
    for op in g.ops:
        if op.module != "experts":
            ops.append(op)
            continue
        dispatch, combine = _exchanges(hw, meta, lay, tokens, g.dtype, op.count)
        if op.attrs.get("role") == "column":          # the experts' first GEMM (up) and last (down)
            ops.append(dispatch)
        ops.append(_expert_op(op, share, weight_scale))
        if op.attrs.get("role") == "row":
            ops.append(combine)
    return Graph(f"{g.name} [attention DP {lay.dp}, EP {ep}]", g.phase, g.dtype, ops, footprint=dict(g.footprint),
                 meta={**meta, "ep": ep, "attention_dp": lay.dp})
