"""What-ifs on the configuration: batch, seq, the device, scheduling, and the parallel-degree hook.

batch= / seq=   rebuild the workload from its spec at the new size (they run before other steps)
hardware=       predict the same graph on another device (catalog name, alias or .toml file)
network=        the same device, its collectives on another network calibration (default | a100-vidur)
prefetch[=k]    copies of data that lives beyond device memory (spilled weights, tables) may start
                k ops ahead on the copy stream (see ironlaw.law.critical_path); default k = 1
overlap-comm    gradient collectives run on the network stream, overlapped with the rest of
                the backward pass; only the optimizer step waits for them (ironlaw.law.critical_path)
tp= / dp= / pp= tensor, data, pipeline parallel degree: tp=N on an inference graph is its per-device graph
                with the TP collectives (``parallel.shard_inference``); data and pipeline parallelism and
                any parallel training step are a plan of many devices, not a what-if on one graph: they
                raise IronlawError pointing to ``ironlaw analyze --gpus N --tp/--pp/--dp`` and
                ``ironlaw search``.
"""
from __future__ import annotations

from ...core.errors import IronlawError
from ...core.graph import Graph
from .base import Flag, Number, Text, transform


def _rebuild(g: Graph, hw, **change) -> Graph:
    from .. import workloads
    spec = g.meta.get("spec")
    if not spec:
        raise IronlawError(f"what-if {', '.join(change)}: '{g.name}' was not built from a spec; cannot rebuild it")
    for k in change:
        if k not in g.meta:
            raise IronlawError(f"what-if {k}=: workload '{g.name}' has no {k} to change")
    req = workloads.Request(spec, phase=g.phase, batch=change.get("batch", g.meta.get("batch", 1)),
                            seq=change.get("seq", g.meta.get("seq")), dtype=g.dtype,
                            device="cuda" if hw.kind == "gpu" else "cpu", options=dict(g.meta.get("options", {})))
    new = workloads.resolve(req)
    low = g.meta.get("precision", g.dtype)
    if low != g.dtype:                         # a training step with its GEMMs lowered: lowered alike
        from .. import precision
        from ..parallel.step import lowered
        new = lowered(precision.lower(new, low, hw.features.get("fp8_any_layout", False)), hw)
    if "seq" in change:                        # beyond the model's context, as analyze --seq refuses it
        workloads.check_context(new, change["seq"], "what-if seq")
    if "whatif" in g.meta:                     # earlier rebuild steps (the rebuild stage runs first)
        new.meta["whatif"] = list(g.meta["whatif"])
    return new


@transform("batch", main="size", params={"size": Number(1, 1 << 24, integer=True)}, stage="rebuild",
           help="batch=N: the same workload at another batch size")
def batch(g: Graph, hw, size: int) -> Graph:
    return _rebuild(g, hw, batch=size)


@transform("seq", main="length", aliases=("seq_len", "context"), params={"length": Number(1, 1 << 22, integer=True)},
           stage="rebuild", help="seq=N: the same workload at another sequence / context length")
def seq(g: Graph, hw, length: int) -> Graph:
    return _rebuild(g, hw, seq=length)


@transform("hardware", main="name", aliases=("hw", "device", "on"), params={"name": Text()}, stage="hardware",
           help="hardware=NAME: predict the same graph on another device")
def hardware(g: Graph, hw, name: str):
    from ...machine import hardware as hwmod
    return hwmod.get(name)                      # the 'hardware' stage returns a Hardware, not a Graph


@transform("network", main="name", aliases=("fabric",), params={"name": Text()}, stage="hardware",
           help="network=NAME: collectives on another network calibration (default | a100-vidur)")
def network(g: Graph, hw, name: str):
    from ...machine.network.calibration import with_network
    return with_network(hw, name)               # a 'hardware' stage step returns a Hardware


@transform("prefetch", main="depth", params={"depth": Number(1, 64, integer=True)}, defaults={"depth": 1},
           help="prefetch[=k]: copies of spilled data start k ops ahead on the copy stream")
def prefetch(g: Graph, hw, depth: int = 1) -> Graph:
    return Graph(g.name, g.phase, g.dtype, list(g.ops), footprint=dict(g.footprint),
                 meta=dict(g.meta, schedule={**g.meta.get("schedule", {}), "prefetch_depth": depth}),
                 uncounted_ops=dict(g.uncounted_ops))


@transform("overlap-comm", main="on", aliases=("overlap",), params={"on": Flag()}, defaults={"on": True},
           help="overlap-comm: gradient all-reduce overlapped with the backward pass")
def overlap_comm(g: Graph, hw, on: bool = True) -> Graph:
    if g.phase != "train":
        raise IronlawError(f"overlap-comm overlaps gradient collectives with the backward pass; "
                           f"'{g.name}' is phase '{g.phase}', not train")
    meta = dict(g.meta, schedule={**g.meta.get("schedule", {}), "overlap_comm": True})
    if not any(op.kind == "collective" for op in g.ops):
        meta["notes"] = list(meta.get("notes", [])) + [
            "overlap-comm: this single-device graph has no gradient collectives to overlap "
            "(see `ironlaw analyze --gpus N --dp N`)"]
    return Graph(g.name, g.phase, g.dtype, list(g.ops), footprint=dict(g.footprint), meta=meta,
                 uncounted_ops=dict(g.uncounted_ops))


def _parallel(g: Graph, hw, **degrees) -> Graph:
    from .. import parallel
    if set(degrees) == {"tp"} and g.phase != "train":         # tensor-parallel inference: its per-device graph
        return parallel.shard_inference(g, hw, {"tp": degrees["tp"], "gpus": degrees["tp"]})
    what = ", ".join(f"{k}={v}" for k, v in degrees.items())
    raise IronlawError(f"what-if {what}: a plan of many devices, not a what-if on one graph; use `ironlaw analyze "
                       f"--gpus N --tp/--pp/--dp …` for one plan or `ironlaw search` for the best one")


for _name, _what in (("tp", "tensor"), ("dp", "data"), ("pp", "pipeline")):
    def _make(name=_name):
        def fn(g: Graph, hw, degree: int) -> Graph:
            return _parallel(g, hw, **{name: degree})
        fn.__name__ = name
        return fn

    transform(_name, main="degree", params={"degree": Number(1, 1 << 16, integer=True)},
              help=f"{_name}=N: {_what} parallel degree (tp: inference; the rest: ironlaw analyze --gpus N)")(_make())
