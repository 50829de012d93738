"""The registries a workload module files itself in: built-in names and spec prefixes, the Request the
builders read, and the checks of its sizes and phase (``ironlaw.models.workloads`` resolves specs through them)."""
from __future__ import annotations


from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ...core.errors import IronlawError, suggest, unknown
from ...core.graph import PHASES, Graph, Num

MAX_BATCH = 1 << 24
MAX_SEQ = 1 << 22


@dataclass
class Request:
    """What the user asked for; builders read what they need."""
    spec: str
    phase: str | None = None          # None: the builder's default
    batch: Num = 1
    seq: Num | None = None            # None: the builder's default
    dtype: str | None = None          # None: the builder's default
    device: str = "cpu"               # fake-tensor device for capture ('cpu' | 'cuda' | 'meta')
    options: dict = field(default_factory=dict)


@dataclass
class Builtin:
    name: str
    description: str
    build: Callable[[Request], Graph]
    phases: tuple[str, ...]
    family: str
    options: tuple[str, ...] = ()


# options read by the run around the builder (parallelism, capture), valid for every spec
RUN_OPTIONS = ("capture", "gpus", "nodes", "tp", "pp", "dp", "ep", "global_batch", "micro_batch", "interleave",
               "recompute", "recompute_layers", "recompute_method", "zero", "sequence_parallel", "cp", "fsdp", "expert_imbalance", "tp_comm_overlap",
               "overlap_p2p", "grad_fp32", "moe_a2a_overlap", "cuda_graph", "redundant_experts",
               "offload_layers", "param_gather_exposed", "moe_dispatcher", "fp8_attention", "lora_rank",
               "lora_targets")


BUILTINS: dict[str, Builtin] = {}
PREFIXES: dict[str, tuple[str, Callable[[str, Request], Graph]]] = {}
PREFIX_OPTIONS: dict[str, tuple[str, ...]] = {}


def builtin(name: str, description: str, phases: tuple[str, ...], family: str, options: tuple[str, ...] = ()):
    """File a built-in workload; ``options`` are the builder options (``--opt KEY=VALUE``) it reads."""
    def deco(fn):
        _file_once(name, BUILTINS, fn)
        BUILTINS[name] = Builtin(name, description, fn, phases, family, tuple(options))
        return fn
    return deco


def prefix(name: str, usage: str, options: tuple[str, ...] = ()):
    """File a spec prefix (``name:argument``); ``options`` as for :func:`builtin`."""
    def deco(fn):
        _file_once(name, PREFIXES, fn)
        PREFIXES[name] = (usage, fn)
        PREFIX_OPTIONS[name] = tuple(options)
        return fn
    return deco


def _file_once(name: str, registry: dict, fn) -> None:
    """A name is filed by one builder: the workload modules are imported only until a spec's name is found
    (``workloads.load_for``), so a name filed twice would build what the modules imported so far say."""
    if name in registry:
        kept = registry[name]
        kept = kept.build if isinstance(kept, Builtin) else kept[1]
        if (kept.__module__, kept.__qualname__) != (fn.__module__, fn.__qualname__):
            raise ValueError(f"workload '{name}' filed twice: {kept.__module__} and {fn.__module__}")


def check_options(req: Request, what: str, accepted: tuple[str, ...]) -> None:
    extra = sorted(set(req.options) - set(RUN_OPTIONS) - set(accepted))
    if extra:
        takes = f"it takes: {', '.join(accepted)}" if accepted else "it takes no builder options"
        raise IronlawError(f"{what}: unknown option '{extra[0]}'{suggest(extra[0], accepted)}; {takes}")


# prefixes whose builders import torch: their module is imported only when such a spec is asked for,
# so that built-in workloads answer without torch (usage strings shown by `ironlaw workloads list`)
TORCH_PREFIXES = {
    "py": "py:path/file.py:factory — your own torch model: factory() returns (module, args) or (module, args, "
          "kwargs); captured op by op on fake tensors (takes batch=, seq= if it wants them)",
    "torchvision": "torchvision:NAME — a torchvision model (when torchvision imports), no weights",
    "timm": "timm:NAME — a timm model (when timm imports), no weights",
    "onnx": "onnx:file.onnx — an ONNX model (optional format): one op per node, FLOPs from inferred shapes",
}


def check_size(value: Num, what: str, upper: int) -> Num:
    """``value`` (a number or an array of them, a sweep's grid) if every entry is a whole number from 1 to
    ``upper``; else one line naming the first entry that is not, as given."""
    if isinstance(value, int) and not isinstance(value, bool) and value > upper:   # past int64: numpy's object
        raise IronlawError(f"--{what} {value} is out of range (1 … {upper:,})")
    a = np.asarray(value)
    if a.size == 0:
        raise IronlawError(f"--{what}: an empty array; give one value or more")
    if a.dtype.kind not in "iuf" or not np.all(np.isfinite(a)) or np.any(a <= 0) or np.any(a != np.floor(a)):
        bad = value if a.ndim == 0 or a.dtype.kind not in "iuf" else \
            a.flat[int(np.argmax(~np.isfinite(a) | (a <= 0) | (a != np.floor(a))))]
        raise IronlawError(f"--{what} must be a positive whole number, got {_shown(bad)}")
    if np.any(a > upper):
        raise IronlawError(f"--{what} {_shown(value if a.ndim == 0 else a.flat[int(np.argmax(a > upper))])} is "
                           f"out of range (1 … {upper:,})")
    return value


def check_grid(batch: Num, seq: Num) -> None:
    """Batch and seq arrays that numpy can broadcast into one grid; else one line with both shapes and the usual
    fix (a column of one against a row of the other)."""
    b, s = np.shape(batch), np.shape(seq)
    try:
        np.broadcast_shapes(b, s)
    except ValueError:
        raise IronlawError(f"batch (shape {b}) and seq (shape {s}) do not broadcast into one grid; give one of them "
                           f"as a column for every pair (seq=np.array([...])[:, None]), or arrays of one shape for "
                           f"pairs") from None


def _shown(v) -> str:
    """One entry as the user gave it: a whole float without its '.0' (a grid's entries are floats)."""
    if isinstance(v, (float, np.floating)) and np.isfinite(v) and v == int(v):
        return str(int(v))
    return str(v.item()) if isinstance(v, np.generic) else repr(v) if isinstance(v, str) else str(v)


def check_phase(req: Request, phases: tuple[str, ...], default: str, what: str) -> str:
    phase = req.phase or default
    if phase not in PHASES:
        raise unknown("phase", phase, PHASES)
    if phase not in phases:
        raise IronlawError(f"{what} has no phase '{phase}'; it supports: {', '.join(phases)}")
    return phase
