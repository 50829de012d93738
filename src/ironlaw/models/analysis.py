"""One workload predicted the way `ironlaw analyze` does: on one device or sharded for tensor-parallel inference;
with the energy, cost and carbon of one step. One training step on many devices is ``ironlaw.models.training``'s
(its names stay reachable here: ``analysis.Training``, ``analysis.train``, ``analysis.training_graph``).

    est = predict("llama3-8b", hardware.get("h100"), batch=8, seq=1024, phase="decode", options={"tp": 2, "gpus": 2})
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, fields, replace

from ..core.errors import IronlawError
from ..core.graph import dtype_bytes
from ..law.estimate import Estimate


@dataclass
class Analysis(Estimate):
    """An Estimate with the energy, cost and carbon of its step (``ironlaw.law.power``; None for a sweep over
    arrays or a device that states no power) and, with ``--train-tokens``, the whole training run
    (``ironlaw.models.run_cost``). Its document is ``ironlaw analyze --format json``'s."""
    energy: dict | None = None
    run: dict | None = None

    @classmethod
    def of(cls, est: Estimate, energy: dict | None, run: dict | None = None) -> "Analysis":
        return cls(**{f.name: getattr(est, f.name) for f in fields(Estimate)}, energy=energy, run=run)

    def to_dict(self, top: int | None = None) -> dict:
        return {**super().to_dict(top), "energy": self.energy, "run": self.run}


def predict(spec: str, hw, batch=1, seq=None, phase: str | None = None, dtype: str | None = None,
            composition: str = "overlap", options: dict | None = None) -> Estimate:
    """Build ``spec``, shard it over tensor-parallel devices when ``options`` ask for them (inference), predict it
    on ``hw``; a single configuration that fits in no memory tier at all is refused."""
    from ..core.units import fmt_size
    from ..law import law
    from . import workloads
    from .plan_options import refuse_unread, requested

    options = dict(options or {})
    req = workloads.Request(spec, phase=phase, batch=batch, seq=seq, dtype=dtype,
                            device="cuda" if hw.kind == "gpu" else "cpu", options=options)
    graph = workloads.resolve(req)
    workloads.check_context(graph, seq)
    refuse_unread(options, graph)
    if requested(options) and "collective" not in graph.meta:      # tensor-parallel inference
        from .parallel.tp import shard_inference
        graph = shard_inference(graph, hw, options)
    est = law.predict(routed_experts(graph, hw), hw, composition)
    if est.cols.cfg_shape == () and not bool(est.placement.fits):
        fp = est.footprint()
        total = sum(t.capacity_bytes for t in hw.memory if t.role != "cache")
        raise IronlawError(f"{graph.name} does not fit on {hw.name}: footprint {fmt_size(fp['total_bytes'])} "
                           f"exceeds all memory tiers together ({fmt_size(total)})")
    return est


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
    from .serving.step import GROUPED_GEMM, grouped, moe_kernels
    kernels = moe_kernels(hw, graph.dtype)
    if kernels[0] == GROUPED_GEMM:
        return replace(graph, ops=[grouped_launch(op) for op in graph.ops])
    return replace(graph, ops=[on_moe_layer(op, graph.dtype, kernels) for op in graph.ops])


def on_moe_layer(op, dtype: str, kernels: tuple):
    """An op of the routed layer on the fitted MoE kernel classes (``serving.step.grouped``), its activations in
    bf16 between the kernels as the fit counts them (``moefit.HALF_BYTES``; ``serving.step.modelopt``); any other
    op as it is."""
    from .serving.step import grouped, modelopt
    on = grouped(op, *kernels)
    return op if on is op else grouped(modelopt(op, dtype), *kernels)


def grouped_launch(op):
    """A routed expert GEMM (``attrs["expert"] == "routed"``, ``attrs["nk"]``: one expert's N, K) as the grouped
    kernel launches it: the touched experts' weight tiles side by side, one GEMM of M = the rows per expert,
    N = touched experts × N, K (``attrs["mnk"]``; same FLOPs and bytes). The dense GEMM table then sees the CTAs
    in flight and the weight tiles a grouped launch streams, not one small expert GEMM's (at 64 decode tokens,
    DeepSeek-V3 under TP 8: N = 512, K = 7168 per expert, streamed at a tenth of the HBM bandwidth alone)."""
    if op.kind != "matmul" or op.attrs.get("expert") != "routed" or "nk" not in op.attrs or "mnk" in op.attrs:
        return op
    w = op.bytes.get("weights", 0.0) / dtype_bytes(op.dtype)
    k = float(op.attrs["nk"][1])
    o = copy.copy(op)
    o.attrs = {**op.attrs, "mnk": (op.flops / (2.0 * w), w / k, k)}
    return o


def analysis(est: Estimate, usd_per_device_hour: float | None = None,
             gco2_per_kwh: float | None = None, cost=None) -> Analysis:
    """``est`` with the energy of its step (none for a sweep over arrays) and, with ``cost.tokens``
    (``run_cost.RunInputs``), the whole training run."""
    from ..law import power
    energy = power.of_estimate(est, usd_per_device_hour, gco2_per_kwh, devices(est.graph)) \
        if est.cols.cfg_shape == () else None
    if cost is None:                                   # no run asked for: run_cost is not imported
        return Analysis.of(est, energy)
    from . import run_cost
    return Analysis.of(est, energy, run_cost.of_estimate(est, energy, cost))


def devices(graph) -> int:
    """The devices one step of ``graph`` runs on, each doing the work the graph describes: the shards of
    tensor-parallel inference (``tp``), the ranks of a collective (``gpus``), else one."""
    return int(graph.meta.get("tp") or graph.meta.get("gpus") or 1)


def __getattr__(name: str):
    """``Training``, ``train`` and ``training_graph`` live in ``ironlaw.models.training`` (imported on first use, so
    one device's analysis does not import the parallel model)."""
    if name in ("Training", "train", "training_graph"):
        from . import training
        return getattr(training, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
