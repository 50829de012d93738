"""The routed experts of an MoE inference graph as `analyze` and `sweep` price them: one grouped launch, on the
device's measured MoE layer where its calibration has one (the pricing `serve` gives them with ``moe_tables``).
docs/how-it-models.md, "The routed experts in `analyze`"."""
from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np

from ..core.weightonly import elem_bytes


def routed_experts(graph, hw):
    """``graph`` with its routed experts' grouped GEMM priced as one launch, the way ``serve`` prices it.

    An inference graph (prefill, decode) on a device whose calibration holds the MoE layer fitted on measured
    fused-MoE kernel tables (``moe_grouped_gemm.<dtype>``, ``moe_rows.<dtype>``: measure/calibrate/moefit.py) runs
    its routed GEMMs, permute, activation and combine on those kernel classes (``on_moe_layer``, as an engine step
    with ``moe_tables`` does). On a GPU without such a table each routed GEMM states the shape the
    grouped kernel launches (``grouped_launch``). A CPU loops over its experts one GEMM at a time, and a training
    graph's grouped GEMMs run the rows ``gemm_rows`` gives them (``parallel.step``): those are left as they are."""
    if hw.kind != "gpu" or graph.phase not in ("prefill", "decode") or \
            not any(op.attrs.get("expert") == "routed" for op in graph.ops):
        return graph
    from .precision import moe_recipe
    from .serving.step import GROUPED_GEMM, fitted_moe, moe_kernels
    recipe = moe_recipe(graph)
    kernels = moe_kernels(hw, graph.dtype, recipe)
    if kernels[0] == GROUPED_GEMM:
        # a device with measured MoE layers in other dtypes, or a weight format of its own: say which class the
        # dense GEMM table stands in for (``law.coverage``)
        want = f"{GROUPED_GEMM}.{recipe or graph.dtype}" if recipe or fitted_moe(hw) else None
        return replace(graph, ops=[grouped_launch(op, want) for op in graph.ops])
    from .dispatcher import local_experts
    slots = local_experts(graph.meta)
    tokens = np.asarray(graph.meta.get("tokens", 0.0), float)
    gathered = tokens * float(graph.meta.get("experts_per_token", 0.0))
    from .serving.step import blocked_rows
    return replace(graph, ops=[blocked_rows(on_moe_layer(op, graph.dtype, kernels, slots), hw.calibration, gathered,
                                            slots, tokens) for op in graph.ops])


def on_moe_layer(op, dtype: str, kernels: tuple, slots: float = 0.0):
    """An op of the routed layer on the fitted MoE kernel classes (``serving.step.grouped``), its activations in
    bf16 between the kernels as the fit counts them (``moefit.HALF_BYTES``; ``serving.step.modelopt``), a routed
    GEMM stating the expert slots its launch covers (``slots``, ``attrs["local_experts"]``: a class fitted with a
    cost per slot, ``expert_s``, pays it); any other op as it is."""
    from .serving.step import grouped, modelopt
    on = grouped(op, *kernels)
    if on is op:
        return op
    o = grouped(modelopt(op, dtype), *kernels)
    if slots and o.kind == "matmul":
        o.attrs["local_experts"] = slots
    return o


def grouped_launch(op, kernel_for: str | None = None):
    """A routed expert GEMM (``attrs["expert"] == "routed"``, ``attrs["nk"]``: one expert's N, K) as the grouped
    kernel launches it: the touched experts' weight tiles side by side, one GEMM of M = the rows per expert,
    N = touched experts × N, K (``attrs["mnk"]``; same FLOPs and bytes). The dense GEMM table then sees the CTAs
    in flight and the weight tiles a grouped launch streams, not one small expert GEMM's (at 64 decode tokens,
    DeepSeek-V3 under TP 8: N = 512, K = 7168 per expert, streamed at a tenth of the HBM bandwidth alone).
    ``kernel_for``: the measured MoE class the device lacks and this launch stands in for (``attrs["kernel_for"]``)."""
    if op.kind != "matmul" or op.attrs.get("expert") != "routed" or "nk" not in op.attrs or "mnk" in op.attrs:
        return op
    w = op.bytes.get("weights", 0.0) / elem_bytes(op)               # elements, whatever dtype they are stored in
    if not np.all(np.asarray(w) > 0):
        return op
    k = float(op.attrs["nk"][1])
    o = copy.copy(op)
    o.attrs = {**op.attrs, "mnk": (op.flops / (2.0 * w), w / k, k)} | ({"kernel_for": kernel_for} if kernel_for else {})
    return o
