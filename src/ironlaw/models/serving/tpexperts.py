"""Expert parallelism under TP attention, as vLLM and SGLang run it: the routed experts whole, E/ep per GPU, on
every token of the step; no token exchange, the TP all-reduce sums the ranks' partial outputs.

vLLM ``--enable-expert-parallel`` without data parallelism: ``FusedMoEParallelConfig.make``
(vllm/model_executor/layers/fused_moe/config.py) makes ep_size = tp_size × dp_size with the experts' own TP 1, so
each rank holds E/ep whole experts. Its all-to-all backends (``VLLM_ALL2ALL_BACKEND``: naive,
allgather_reducescatter, pplx, deepep_*) run only where ``use_all2all_kernels`` holds (use_ep and dp_size > 1), so
with DP 1 every rank runs the fused MoE on the whole batch (attention's output is whole on every TP rank) through its
``expert_map`` (other ranks' experts −1), and the layer's output is summed by the TP all-reduce (``FusedMoE``'s
``reduce_results``: ``tensor_model_parallel_all_reduce``). SGLang ``--ep-size`` = ``--tp-size`` with its default
``--moe-a2a-backend`` "none" (python/sglang/srt/server_args.py): moe_tp_size = tp_size / ep_size = 1, ``FusedMoE``
on the whole batch with its expert map, then the TP all-reduce (python/sglang/srt/layers/moe/fused_moe_triton/
layer.py). The frameworks' tables time that layer at moe_ep_size = ep, moe_tp_size 1 (aiconfigurator
collector/vllm/collect_moe.py and collector/sglang/collect_moe.py, ``run_moe_torch``), fitted on the law's terms
(measure/calibrate/moefit.py ``terms``): R the rank's routed rows, U the local experts they reach, t every token,
and on the Triton and Marlin classes every pair routed to another rank (``core.routing.pairs_bytes``; the routed
rows' class states its kernel as ``pairs``).

One rank's step (``shard_ep_under_tp``): every op but the routed experts' as tensor parallelism shards it, with its
all-reduces; the routed GEMMs on R = t·k/ep rows (times ``expert_imbalance``, or a named routing's busiest rank:
``parallel.busiest_share``) at the whole intermediate size over the local experts the rows reach; the permute and the
activation on R rows, the activation also moving the other ranks' pairs where the class states ``pairs``; the
combine summing R rows into a row for each of the t tokens (``parallel.pooled_combine`` over one rank's tokens).
"""
from __future__ import annotations

from ...core.graph import Graph

ROUTED_ROLES = ("permute", "activation", "combine")


def ep_under_tp(lay) -> bool:
    """Whether ``lay`` shards the routed experts by EP under TP attention (no attention DP)."""
    return lay.ep > 1 and not lay.attention_dp


def check_ep_under_tp(lay, framework: str) -> None:
    """One line where EP without attention DP is asked of an engine that does not run it so (TensorRT-LLM: its
    recipe is attention DP; ``framework`` empty), or with an EP group other than the TP group (redundant expert
    slots are TensorRT-LLM's alone: ``machine.engines.check_wide_ep``)."""
    from ...core.errors import IronlawError
    if not ep_under_tp(lay):
        return
    if not framework:
        raise IronlawError(f"--ep {lay.ep} is modelled with attention data parallelism (TensorRT-LLM's MoE recipe); "
                           f"add --attention-dp")
    if lay.ep != lay.tp:
        raise IronlawError(f"--ep {lay.ep} without --attention-dp: {framework} shards the experts over the TP group "
                           f"(EP = TP × DP, DP 1), so --ep equals --tp: use --tp {lay.ep} --ep {lay.ep}"
                           + (f" or --tp {lay.tp} --ep {lay.tp}" if lay.tp > 1 else ""))


def _routed(op) -> bool:
    return op.module == "experts" and (op.attrs.get("expert") == "routed" or op.attrs.get("role") in ROUTED_ROLES)


def _pair_kernel(hw, op) -> str | None:
    """The every-pair kernel (``core.routing.PAIR_KERNELS``) the class of ``op`` states, None where it states none."""
    cal = hw.calibration
    return ((cal.kernel or {}).get(op.attrs.get("kernel", ""), {}) if cal is not None else {}).get("pairs")


def _with_pairs(op, hw, pairs: float, local_rows: float, hidden: float, inter: float):
    """``op`` (the routed activation on the rank's rows) with the bytes the other ranks' pairs move in its layer
    (``core.routing.pairs_bytes``) where its class states ``pairs``; ``op`` itself elsewhere."""
    kernel = _pair_kernel(hw, op)
    if not kernel:
        return op
    from ...core.routing import pairs_bytes
    extra = float(pairs_bytes(kernel, pairs, local_rows, hidden, inter))
    op.bytes = {**op.bytes, "activations": op.bytes.get("activations", 0.0) + extra}
    op.attrs = {**op.attrs, "pairs_bytes": extra}
    return op


def _down_nk(g: Graph) -> tuple[float, float]:
    """(hidden, intermediate) of the routed experts: the down GEMM's N and K in the unsharded step."""
    for op in g.ops:
        if op.kind == "matmul" and op.attrs.get("expert") == "routed" and op.attrs.get("role") == "row":
            n, k = op.attrs["nk"]
            return float(n), float(k)
    return float(g.meta["hidden"]), 0.0


def shard_ep_under_tp(g: Graph, hw, lay) -> Graph:
    """One rank's step of ``g`` (the unsharded step) under TP ``lay.tp`` with the routed experts by EP ``lay.ep``
    (module docstring)."""
    from .. import parallel as tp_parallel
    from .parallel import busiest_share, expert_share, pooled_combine
    meta = g.meta
    e, k, tokens = int(meta["experts"]), int(meta.get("experts_per_token", 1)), float(meta["tokens"])
    share, weight_scale = busiest_share(lay, tokens, e, k)
    hidden, inter = _down_nk(g)
    own = {(op.name, op.module): op for op in g.ops if _routed(op)}
    sharded = tp_parallel.shard_inference(g, hw, {"tp": lay.tp, "gpus": lay.tp})
    ops = []
    for op in sharded.ops:
        if op.kind == "collective" or not _routed(op):
            ops.append(op)
            continue
        whole = own[(op.name, op.module)]
        role = whole.attrs.get("role")
        if role == "combine" and whole.attrs.get("pooled_write"):
            ops.append(pooled_combine(whole, share, 1))
        elif role == "activation":
            ops.append(_with_pairs(expert_share(whole, share, 1.0), hw, tokens * k, share * tokens * k, hidden, inter))
        else:
            ops.append(expert_share(whole, share, weight_scale if whole.kind == "matmul" else 1.0))
    return Graph(f"{sharded.name} [EP {lay.ep}]", sharded.phase, sharded.dtype, ops,
                 footprint=dict(sharded.footprint), meta={**sharded.meta, "ep": lay.ep},
                 uncounted_ops=dict(sharded.uncounted_ops))
