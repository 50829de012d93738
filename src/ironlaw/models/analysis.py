"""One workload predicted the way `ironlaw analyze` does: on one device, sharded for tensor-parallel inference, or
one training step on many devices; with the energy, cost and carbon of one step.

    est = predict("llama3-8b", hardware.get("h100"), batch=8, seq=1024, phase="decode", options={"tp": 2, "gpus": 2})
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from ..core.errors import IronlawError
from ..core.graph import Graph
from ..law.estimate import Estimate
from ..machine.hardware import Hardware
from .parallel import StepEstimate, training_graph


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


@dataclass
class Training(StepEstimate):
    """One training step on many devices (a StepEstimate) with the micro-batch graph it was planned on and the
    hardware; its document is ``ironlaw analyze --phase train --gpus N … --format json``'s."""
    graph: Graph | None = None
    hw: Hardware | None = None
    energy: dict | None = None        # one step on every device (``ironlaw.models.train_energy``)
    run: dict | None = None           # the whole run, with ``--train-tokens`` (``ironlaw.models.run_cost``)

    @classmethod
    def of(cls, step: StepEstimate, graph: Graph, hw: Hardware, cost: dict | None = None) -> "Training":
        return cls(**{f.name: getattr(step, f.name) for f in fields(StepEstimate)}, graph=graph, hw=hw,
                   **(cost or {}))

    def to_dict(self) -> dict:
        return {**super().to_dict(), "energy": self.energy, "run": self.run}


def predict(spec: str, hw, batch=1, seq=None, phase: str | None = None, dtype: str | None = None,
            composition: str = "overlap", options: dict | None = None) -> Estimate:
    """Build ``spec``, shard it over tensor-parallel devices when ``options`` ask for them (inference), predict it
    on ``hw``; a single configuration that fits in no memory tier at all is refused."""
    from ..core.units import fmt_size
    from ..law import law
    from . import parallel, workloads

    options = dict(options or {})
    req = workloads.Request(spec, phase=phase, batch=batch, seq=seq, dtype=dtype,
                            device="cuda" if hw.kind == "gpu" else "cpu", options=options)
    graph = workloads.resolve(req)
    if parallel.requested(options) and "collective" not in graph.meta:      # tensor-parallel inference
        graph = parallel.shard_inference(graph, hw, options)
    est = law.predict(graph, hw, composition)
    if est.cols.cfg_shape == () and not bool(est.placement.fits):
        fp = est.footprint()
        total = sum(t.capacity_bytes for t in hw.memory if t.role != "cache")
        raise IronlawError(f"{graph.name} does not fit on {hw.name}: footprint {fmt_size(fp['total_bytes'])} "
                           f"exceeds all memory tiers together ({fmt_size(total)})")
    return est


def analysis(est: Estimate, usd_per_device_hour: float | None = None,
             gco2_per_kwh: float | None = None, cost=None) -> Analysis:
    """``est`` with the energy of its step (none for a sweep over arrays) and, with ``cost.tokens``
    (``run_cost.RunInputs``), the whole training run."""
    from ..law import power
    from . import run_cost
    energy = power.of_estimate(est, usd_per_device_hour, gco2_per_kwh) if est.cols.cfg_shape == () else None
    return Analysis.of(est, energy, run_cost.of_estimate(est, energy, cost or run_cost.RunInputs()))


def train(spec: str, hw, seq=None, dtype: str | None = None, composition: str = "overlap",
          options: dict | None = None, cost=None) -> Training:
    """One training step of ``spec`` on the devices and plan ``options`` name (``ironlaw.models.parallel``), with
    its energy and, with ``cost.tokens`` (``run_cost.RunInputs``: price, grid, tokens, interruptions), the whole
    run."""
    from . import parallel, run_cost
    opts = dict(options or {})
    graph = training_graph(spec, hw, seq, dtype, opts)
    plan = parallel.make_plan(opts, graph, hw)
    step = parallel.train_step(graph, hw, plan, composition)
    return Training.of(step, graph, hw, run_cost.of_train_step(step, cost or run_cost.RunInputs()))
