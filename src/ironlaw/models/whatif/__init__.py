"""What-if transforms: Graph → Graph, one small registered function each, composable.

A what-if is a string of steps separated by ';'. A step is the transform's name, optionally
``=value`` for its main parameter, then ``,key=value`` for the others::

    sparsity=0.9,format=csr        quant=int8,target=weights      fusion=elementwise
    flash-attention                batch=64                       recompute=full
    hardware=b200                  prefetch=2                     overlap-comm

``apply(graph, hw, ["quant=int8", "sparsity=0.5"])`` returns the transformed (graph, hardware).
Order: steps that rebuild the workload (batch=, seq=) run first, then hardware= picks the
device, then the graph transforms run in the order given (so that a transform that depends on
the device, such as 2:4 sparsity or int8 compute, checks the device the graph will run on).
Two steps that set the same thing (one transform twice, flash- and eager-attention, quant on a shared
target) are refused: the later would replace the earlier (``check_stack``); quant composes over disjoint
targets (``quant=int8,target=weights; quant=fp8,target=kv``).

Adding a transform is one decorated function in a module of this package::

    @transform("name", main="param", params={"param": Choice(...)}, help="…")
    def name(g: Graph, hw: Hardware, param=…) -> Graph: …

Every transform returns a new Graph (ops are copied with ``dataclasses.replace``; the input is
never mutated) and appends its step to ``meta["whatif"]``.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from ...core.errors import IronlawError, suggest, unknown
from ...core.graph import Graph
from .base import (STAGES, TRANSFORMS, ALIASES, Choice, Flag, Number, Step, Text, Transform, copy_op, has,  # noqa: F401
                   is_backward, transform, weight_dtype)


def _load_all() -> None:
    from . import config, fusion, quant, sparsity, training  # noqa: F401  (files the transforms)


def names() -> list[str]:
    _load_all()
    return sorted(TRANSFORMS)


def catalog() -> list[dict]:
    _load_all()
    return [{"name": t.name, "main": t.main, "params": sorted(t.params), "help": t.help, "stage": t.stage}
            for t in sorted(TRANSFORMS.values(), key=lambda t: t.name)]


def parse(text: str) -> list[Step]:
    """'quant=int8,target=weights; fusion=elementwise' -> [Step, Step]; bad input -> IronlawError."""
    _load_all()
    if not isinstance(text, str) or not text.replace(";", " ").strip():          # "" and ";;" alike
        raise IronlawError("--what-if: empty; e.g. --what-if \"sparsity=0.9,format=csr\" "
                           f"(transforms: {', '.join(sorted(TRANSFORMS))})")
    return [_parse_step(s.strip()) for s in text.split(";") if s.strip()]


def _parse_step(text: str) -> Step:
    parts = [p.strip() for p in text.split(",")]
    head, _, value = parts[0].partition("=")
    head = head.strip().lower()
    key = ALIASES.get(head, head)
    if key not in TRANSFORMS:                 # the nearest name (an alias too), else every transform, none cut
        raise unknown("what-if transform", head, list(TRANSFORMS) + list(ALIASES), listed=TRANSFORMS,
                      listed_as="transforms")
    t = TRANSFORMS[key]
    given: dict[str, str] = {}
    if value.strip() or "=" in parts[0]:
        if t.main is None:
            raise IronlawError(f"what-if '{key}' takes no value, got '{parts[0]}'")
        given[t.main] = value.strip()
    elif t.main is not None and isinstance(t.params.get(t.main), Flag):
        given[t.main] = ""
    for p in parts[1:]:
        if not p:
            raise IronlawError(f"what-if '{text}': empty parameter (stray comma?)")
        k, eq, v = p.partition("=")
        k = k.strip().lower()
        if k not in t.params:
            hint = suggest(k, t.params) or (f"; it takes: {', '.join(sorted(t.params))}" if t.params
                                             else "; it takes no parameters")
            raise IronlawError(f"unknown parameter '{k}' of what-if '{key}'{hint}")
        if not eq:
            raise IronlawError(f"what-if '{key}': parameter '{k}' needs a value ('{k}=…')")
        if k in given:
            raise IronlawError(f"what-if '{key}': parameter '{k}' given twice")
        given[k] = v.strip()
    params = dict(t.defaults)
    for k, raw in given.items():
        params[k] = t.params[k](raw, f"what-if {key}" if k == key else f"what-if {key}: {k}")
    missing = [k for k in t.params if k not in params and k == t.main]
    if missing:
        raise IronlawError(f"what-if '{key}' needs a value: '{key}=…'")
    return Step(t, params, text)


# transforms that set the same thing of the workload: a later one replaces an earlier one
SETS = {"flash-attention": "the attention's form", "eager-attention": "the attention's form"}
COMPOSE = ("different transforms compose (quant=int8;fusion=elementwise), and quant composes over disjoint targets "
           "(quant=int8,target=weights;quant=fp8,target=kv)")


def _slots(s: Step) -> list[str]:
    """What step ``s`` sets: its transform's name (or the thing in ``SETS``); for quant, one per target."""
    name = s.transform.name
    if name == "quant":
        return [f"the {t} dtype (quant)" for t in sorted(s.params["target"])]
    return [SETS.get(name, name)]


def check_stack(steps: Iterable[Step]) -> None:
    """Refuse two steps that set the same thing, where the later would silently replace the earlier (``COMPOSE``
    says which steps compose)."""
    seen: dict[str, Step] = {}
    for s in steps:
        for slot in _slots(s):
            if slot in seen:
                raise IronlawError(f"--what-if: '{seen[slot].text}' and '{s.text}' both set {slot}; the later would "
                                   f"replace the earlier: give one ({COMPOSE})")
            seen[slot] = s


def apply(graph: Graph, hw, steps: Iterable[str | Step]):
    """Apply what-if steps; returns (graph, hardware). Strings are parsed first; two steps that set the same thing
    are refused (``check_stack``)."""
    parsed: list[Step] = []
    for s in steps:
        parsed += parse(s) if isinstance(s, str) else [s]
    check_stack(parsed)
    for stage in STAGES:
        for s in (p for p in parsed if p.transform.stage == stage):
            if stage == "hardware":
                hw = s.transform.fn(graph, hw, **s.params)
                graph = _record(graph, s)
            else:
                graph = _record(s.transform.fn(graph, hw, **s.params), s)
    for s in parsed:
        if s.transform.name == "network" and not any(op.kind == "collective" for op in graph.ops):
            raise IronlawError(f"what-if {s.text} calibrates collectives; {graph.name} {graph.phase} on one device runs "
                               f"none: add what-if tp=N (or analyze a collective spec) or drop it")
    return graph, hw


def _record(g: Graph, s: Step) -> Graph:
    meta = dict(g.meta)
    meta["whatif"] = list(meta.get("whatif", [])) + [s.text]
    return replace(g, meta=meta)


__all__ = ["transform", "parse", "apply", "check_stack", "names", "catalog", "TRANSFORMS", "Step", "Choice", "Number", "Text",
           "Flag", "copy_op"]
