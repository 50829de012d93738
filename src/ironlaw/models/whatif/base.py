"""What a what-if transform is: its parameters, the registry it is filed in, helpers for transform modules
(the package's own docstring describes the steps)."""
from __future__ import annotations

import math

import numpy as np
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

from ...core.errors import IronlawError, unknown
from ...core import passes
from ...core.graph import Op

STAGES = ("rebuild", "hardware", "graph")


# ---------------------------------------------------------------- parameter parsers
@dataclass(frozen=True)
class Choice:
    values: tuple[str, ...]

    def __call__(self, raw: str, what: str):
        if raw not in self.values:
            raise unknown(what, raw, self.values)
        return raw


def _bound(x: float) -> str:
    """A range's bound as a person writes it: 16,777,216 (not 1.67772e+07), 0.5, inf."""
    return f"{int(x):,}" if math.isfinite(x) and x == int(x) else f"{x:g}"


@dataclass(frozen=True)
class Number:
    lo: float = -math.inf
    hi: float = math.inf
    lo_open: bool = False
    hi_open: bool = False
    integer: bool = False

    def __call__(self, raw: str, what: str):
        try:
            x = int(raw) if self.integer else float(raw)
        except ValueError:
            kind = "a whole number" if self.integer else "a number"
            raise IronlawError(f"{what}: expected {kind}, got '{raw}'") from None
        if not math.isfinite(x) or x < self.lo or x > self.hi or (self.lo_open and x == self.lo) \
                or (self.hi_open and x == self.hi):
            lo, hi = ("(" if self.lo_open else "[") + _bound(self.lo), _bound(self.hi) + (")" if self.hi_open else "]")
            raise IronlawError(f"{what} must be in {lo}, {hi}, got {raw}")
        return x


@dataclass(frozen=True)
class Text:
    def __call__(self, raw: str, what: str):
        if not raw.strip():
            raise IronlawError(f"{what}: empty value")
        return raw.strip()


@dataclass(frozen=True)
class Flag:
    """A transform without a value ('flash-attention'); '=on/true/1' also accepted."""

    def __call__(self, raw: str, what: str):
        if raw.lower() not in ("", "on", "true", "1", "yes"):
            raise IronlawError(f"{what} takes no value, got '{raw}'")
        return True


# ---------------------------------------------------------------- the registry
@dataclass(frozen=True)
class Transform:
    name: str
    fn: Callable
    main: str | None                      # parameter that takes the step's own value
    params: dict[str, Callable]           # name -> parser
    defaults: dict[str, object]
    help: str
    stage: str = "graph"
    aliases: tuple[str, ...] = ()


TRANSFORMS: dict[str, Transform] = {}
ALIASES: dict[str, str] = {}


def transform(name: str, *, help: str, main: str | None = None, params: dict | None = None,
              defaults: dict | None = None, stage: str = "graph", aliases: Iterable[str] = ()):
    """File ``fn(graph, hw, **params) -> Graph`` under ``name`` (see the module docstring)."""
    assert stage in STAGES

    def deco(fn):
        TRANSFORMS[name] = Transform(name, fn, main, dict(params or {}), dict(defaults or {}), help, stage,
                                     tuple(aliases))
        for a in aliases:
            ALIASES[a] = name
        return fn
    return deco


@dataclass
class Step:
    transform: Transform
    params: dict = field(default_factory=dict)
    text: str = ""

    def __str__(self) -> str:
        return self.text


# ---------------------------------------------------------------- helpers for transform modules
def copy_op(op: Op, **changes) -> Op:
    """A copy of ``op`` with fresh ``bytes`` and ``attrs`` dicts (never share mutable state)."""
    changes.setdefault("bytes", dict(op.bytes))
    changes.setdefault("attrs", dict(op.attrs))
    return replace(op, **changes)


is_backward = passes.is_backward_op          # the builders' ``….backward`` or a captured linear's dgrad/wgrad


def weight_dtype(op: Op) -> str:
    return op.attrs.get("weight_dtype", op.dtype)


def has(x) -> bool:
    """True when a byte/FLOP quantity (float or array) is positive anywhere."""
    return bool(np.any(np.asarray(x) > 0))
