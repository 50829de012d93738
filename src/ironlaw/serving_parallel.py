"""Mixture-of-experts serving with attention data parallelism and expert parallelism over the same GPUs.

TensorRT-LLM's MoE recipe (``enable_attention_dp`` with ``--ep`` = ``--tp``, the published MoE rows): each of
the ``ep`` ranks runs attention, norms, router, embedding and LM head for its OWN sequences with the full
(replicated) weights of those layers; the routed experts are sharded, E/ep per rank. Per MoE layer the
tokens travel to the ranks that hold their experts and back:
    dispatch   all-to-all of every token's k expert copies (bf16 hidden states) before the experts' up-projection
    combine    all-to-all of the k expert outputs back to the token's rank after the down-projection
    (``network.collectives``: α + β over the NVLink domain, or across nodes when ep exceeds it)
The busiest rank sets the pace: it receives ``imbalance`` × the mean share of the routed tokens
(1.0 = balanced routing), so its expert GEMMs and activations scale by it. Its expert weights: the experts it
holds that the whole system's tokens touch, E/ep · (1 − (1 − k/E)^(tokens of all ranks)) (uniform routing).
"""
from __future__ import annotations

import copy

from .graph import Graph, Op, dtype_bytes
from .network.topology import nodes_for

DISPATCH_DTYPE = "bf16"


def _touched(experts: int, k: int, tokens: float) -> float:
    return experts * (1.0 - (1.0 - k / experts) ** tokens)


def _alltoall(name: str, nbytes: float, ranks: int, nodes: int, count: int, dtype: str) -> Op:
    return Op(name, "collective", network_bytes=nbytes, dtype=dtype, count=count, module="ep",
              collective="alltoall", group=(ranks, nodes), shapes=f"{ranks} ranks on {nodes} node(s)")


def shard_attention_dp(g: Graph, hw, lay) -> Graph:
    """The busiest rank's step: ``g`` is one rank's step over its own tokens, unsharded."""
    meta = g.meta
    e, k, ep = int(meta["experts"]), int(meta.get("experts_per_token", 1)), lay.ep
    tokens = float(meta["tokens"])
    hidden = meta["hidden"]
    nodes = nodes_for(hw, ep)
    a2a = tokens * k * hidden * dtype_bytes(DISPATCH_DTYPE)
    mine = _touched(e, k, tokens * lay.dp) / ep                   # of its E/ep experts, those touched
    ops = []
    for op in g.ops:
        if op.module != "experts":
            ops.append(op)
            continue
        o = copy.copy(op)
        o.flops = op.flops * lay.expert_imbalance
        o.vector_flops = op.vector_flops * lay.expert_imbalance
        o.bytes = {c: v * lay.expert_imbalance for c, v in op.bytes.items() if c != "weights"}
        o.bytes_written = op.bytes_written * lay.expert_imbalance
        if "weights" in op.bytes:
            o.bytes["weights"] = op.bytes["weights"] / _touched(e, k, tokens) * mine
        if op.name == "mlp_up_proj":
            ops.append(_alltoall("ep.alltoall.dispatch", a2a, ep, nodes, op.count, g.dtype))
        ops.append(o)
        if op.name == "mlp_down_proj":
            ops.append(_alltoall("ep.alltoall.combine", a2a, ep, nodes, op.count, g.dtype))
    out = Graph(f"{g.name} [attention DP {lay.dp}, EP {ep}]", g.phase, g.dtype, ops, footprint=dict(g.footprint),
                meta={**meta, "ep": ep, "attention_dp": lay.dp})
    return out
