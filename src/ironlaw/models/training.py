"""One training step on many devices the way `ironlaw analyze --phase train --gpus N …` and ``ironlaw.train``
give it: the step (``ironlaw.models.parallel``) with the micro-batch graph it was planned on, the hardware, the
energy of one step and, with ``--train-tokens``, the whole run.

Apart from ``ironlaw.models.analysis`` so that one device's analysis never imports the parallel model.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from ..core.graph import Graph
from ..machine.hardware import Hardware
from .parallel.results import StepEstimate
from .parallel.step import training_graph


@dataclass(repr=False)                          # StepEstimate's short repr
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
