"""One workload predicted the way `ironlaw analyze` does: on one device or sharded for tensor-parallel inference;
with the energy, cost and carbon of one step. One training step on many devices is ``ironlaw.models.training``'s
(its names stay reachable here: ``analysis.Training``, ``analysis.train``, ``analysis.training_graph``).

    est = predict("llama3-8b", hardware.get("h100"), batch=8, seq=1024, phase="decode", options={"tp": 2, "gpus": 2})
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from ..law.estimate import Estimate


@dataclass(repr=False)                          # Estimate's short repr
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
    return on_device(graph_of(spec, hw, batch, seq, phase, dtype, options), hw, composition)


def graph_of(spec: str, hw, batch=1, seq=None, phase: str | None = None, dtype: str | None = None,
             options: dict | None = None):
    """``spec``'s graph for ``hw``'s kind of device, sharded over tensor-parallel devices when ``options`` ask for
    them (inference); its routed experts as the workload states them (``on_device`` prices them for a device)."""
    from . import precision, workloads
    from .plan_options import refuse_unread, requested

    options = dict(options or {})
    # a training step in fp8, mxfp8 or fp4 lowers its layers' linear GEMMs of a bf16 step, as on many devices
    low = dtype if phase == "train" and dtype is not None and precision.is_low(dtype) else None
    req = workloads.Request(spec, phase=phase, batch=batch, seq=seq, dtype=precision.WIDE if low else dtype,
                            device="cuda" if hw.kind == "gpu" else "cpu", options=options)
    graph = workloads.resolve(req)
    workloads.check_context(graph, seq)
    refuse_unread(options, graph)
    if low:
        from .parallel.step import lowered
        graph = lowered(precision.lower(graph, low, hw.features.get("fp8_any_layout", False)), hw)
    if requested(options) and "collective" not in graph.meta:      # tensor-parallel inference
        from .parallel.tp import shard_inference
        graph = shard_inference(graph, hw, options)
    return graph


def on_device(graph, hw, composition: str = "overlap") -> Estimate:
    """``graph`` predicted on ``hw`` as ``priced`` prices it; a single configuration that fits in no memory tier at
    all is refused."""
    from ..law import law
    from .priced import priced

    g, h = priced(graph, hw)
    return law.placed(law.predict(g, h, composition), h)


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
    """The devices one step of ``graph`` runs on (``law.power.devices_of``)."""
    from ..law.power import devices_of
    return devices_of(graph)


def __getattr__(name: str):
    """``Training``, ``train`` and ``training_graph`` live in ``ironlaw.models.training`` (imported on first use, so
    one device's analysis does not import the parallel model)."""
    if name in ("Training", "train", "training_graph"):
        from . import training
        return getattr(training, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
