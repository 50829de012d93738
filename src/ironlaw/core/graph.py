"""The workload graph: a flat list of operators, each with its work, its traffic and its dtype.

Every quantity may be a plain float or a numpy array over configurations (a sweep over batch
sizes builds one graph whose columns are arrays). ``count`` repeats an op (identical transformer
layers are one row with count = n_layers); captured graphs use count 1.

Traffic is split by *storage class* (what the bytes are), so that capacity placement can charge
each class at the bandwidth of the tier it lives in:
    weights, gradients, optimizer, activations, kv_cache, tables
``footprint`` holds the resident bytes of each class.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Union

import numpy as np

from .errors import IronlawError, unknown

Num = Union[float, np.ndarray]

KINDS = ("matmul", "conv", "attention", "elementwise", "norm", "softmax", "embedding", "pool",
         "reduction", "collective", "copy")
MATRIX_KINDS = ("matmul", "conv", "attention")          # run on the matrix unit (tensor cores, AMX…)
CLASSES = ("weights", "gradients", "optimizer", "activations", "kv_cache", "tables")
PHASES = ("infer", "prefill", "decode", "train")
# Bytes per element in memory. The block-scaled formats count their scales, spread over the block:
#   fp4    NVFP4 (NVIDIA): 4-bit E2M1 values + one 8-bit E4M3 scale per 16 values = 4 + 8/16 = 4.5 bits
#   mxfp4  OCP Microscaling MXFP4: 4-bit E2M1 values + one 8-bit E8M0 scale per 32 = 4 + 8/32 = 4.25 bits
#   mxfp8  OCP Microscaling MXFP8: 8-bit E4M3/E5M2 values + one E8M0 scale per 32 = 8 + 8/32 = 8.25 bits
# (NVFP4 also keeps one fp32 scale per tensor: negligible, not counted.) int4 and fp8 here carry no block scale.
BLOCK_SCALED = {"fp4": (4, 16), "mxfp4": (4, 32), "mxfp8": (8, 32)}     # dtype -> (value bits, values per 8-bit scale)
DTYPE_BYTES = {"fp64": 8.0, "fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0,
               "int4": 0.5, **{d: (bits + 8.0 / block) / 8.0 for d, (bits, block) in BLOCK_SCALED.items()}}


# the dtypes torch runs here (py: and hf --capture builders, the probe), by torch's names; capture reads more back
TORCH_NAMES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "fp64": "float64"}


def dtype_bytes(dtype: str) -> float:
    if dtype not in DTYPE_BYTES:
        raise unknown("dtype", dtype, DTYPE_BYTES)
    return DTYPE_BYTES[dtype]


FOUR_BIT_FLOATS = ("fp4", "mxfp4")      # weight formats no attention kernel computes in


def attention_dtype(dtype: str, kv_dtype: str | None = None) -> str:
    """The dtype attention runs its matmuls in: the wider of the graph's and the KV cache's, and FP8 for a 4-bit
    float (an FMHA reads K and V in the cache's dtype; FP4 checkpoints run FP8 attention)."""
    att = max((dtype, kv_dtype or dtype), key=dtype_bytes)
    return "fp8" if att in FOUR_BIT_FLOATS else att


@dataclass
class Op:
    name: str
    kind: str
    flops: Num = 0.0
    bytes: dict[str, Num] = field(default_factory=dict)   # storage class -> bytes read + written
    dtype: str = "bf16"
    count: int = 1
    module: str = ""
    shapes: str = ""
    bytes_written: Num = 0.0          # informational: the part of ``bytes`` that is written
    network_bytes: Num = 0.0          # bytes a collective puts on a link (ironlaw.machine.network)
    collective: str = ""              # kind 'collective': allreduce | allgather | … (see ironlaw.machine.network)
    group: tuple = (1, 1)             # (ranks, nodes[, concurrent groups per node]) a collective spans
    # what-if transforms (ironlaw.models.whatif) use these; builders may leave them at their defaults
    vector_flops: Num = 0.0           # FLOPs of this op's kernel run on the vector unit (fused epilogues,
                                      # dequantization, sparse kernels); counted in Graph.flops
    eta_scale: Num = 1.0              # multiplies the op's compute efficiency (irregular access: sparse kernels)
    attrs: dict = field(default_factory=dict)   # facts a transform records (weight dtype, density, format …)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise unknown(f"op kind of '{self.name}'", self.kind, KINDS)
        for c in self.bytes:
            if c not in CLASSES:
                raise unknown(f"storage class of '{self.name}'", c, CLASSES)

    @property
    def total_bytes(self) -> Num:
        return sum(self.bytes.values(), 0.0)


@dataclass
class Graph:
    name: str
    phase: str
    dtype: str
    ops: list[Op]
    footprint: dict[str, Num] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)          # batch, seq, params, model_flops, tokens, spec …
    uncounted_ops: dict[str, int] = field(default_factory=dict)

    def __repr__(self) -> str:                  # every op's dataclass would be printed: say what the graph is
        return f"Graph({self.name!r}, {self.phase!r}, {self.dtype!r}, {len(self.ops)} ops)"

    def __post_init__(self):
        for c in self.footprint:
            if c not in CLASSES:
                raise unknown("footprint class", c, CLASSES)

    def columns(self) -> "Columns":
        return Columns.of(self)

    @property
    def flops(self) -> Num:
        return sum(((op.flops + op.vector_flops) * op.count for op in self.ops), 0.0)

    @property
    def bytes(self) -> Num:
        return sum((op.total_bytes * op.count for op in self.ops), 0.0)


# ---------------------------------------------------------------- op classes
# An op's class is its kind, split where kernels of one kind run at different rates:
#   conv-dense (one group), conv-depthwise (groups > 1, one input channel per group: MobileNet's 3×3),
#   conv-grouped (groups > 1, more channels per group: ResNeXt), pool-max, pool-avg; every other kind is
#   its own class. A conv states op.attrs["groups"] and op.attrs["group_channels"] (input channels per
#   group; the capture reads both from the weight [C_out, C_in/groups, k, k]), without them it is dense;
#   pooling is told apart by its op name (aten::max_pool2d_with_indices, maxpool). A calibration fits the
#   split classes under their own name ([calibration.kernel."conv-depthwise"], ``own_kernel``).
SPLIT_CLASSES = {"conv-dense": "conv", "conv-depthwise": "conv", "conv-grouped": "conv", "pool-max": "pool",
                 "pool-avg": "pool"}          # class -> the kind it splits
OP_CLASSES = tuple(SPLIT_CLASSES) + tuple(k for k in KINDS if k not in ("conv", "pool"))


def op_class(op: Op) -> str:
    """The op's class (OP_CLASSES)."""
    if op.kind == "conv":
        if int(op.attrs.get("groups", 1)) <= 1:
            return "conv-dense"
        return "conv-depthwise" if int(op.attrs.get("group_channels", 0)) == 1 else "conv-grouped"
    if op.kind == "pool":
        return "pool-max" if "max" in op.name.lower() else "pool-avg"
    return op.kind


def own_kernel(op: Op) -> str:
    """The name a calibration fits the op under besides its kind: ``op.attrs["kernel"]`` where given, else
    its class where that splits a kind (dense convs keep the kind: the conv shape model), else ''."""
    if op.attrs.get("kernel"):
        return str(op.attrs["kernel"])
    cls = op_class(op)
    return cls if cls in SPLIT_CLASSES and cls != "conv-dense" else ""


# the Python library that runs a model's ops eagerly. A calibration may give each its own framework terms
# (cost between ops): Hugging Face modules build masks, caches and reshapes in Python around their
# kernels, several times what torchvision models or a plain nn.Sequential spend (benchmarks/accuracy.py
# reports the fitted terms per front end)
FRONTENDS = ("torch", "transformers")


def frontend(meta: dict) -> str:
    """A graph's front end: its meta's 'frontend', else 'transformers' for a model built from a Hugging
    Face config (its 'architecture'; validate documents saved before the field), else 'torch'."""
    if meta.get("frontend") in FRONTENDS:
        return meta["frontend"]
    return "transformers" if "architecture" in meta else "torch"


@dataclass(frozen=True)
class Columns:
    """The graph as arrays: one row per op, trailing axes = configurations.

    Immutable once built: its fields cannot be rebound, its arrays are read-only, ``bytes`` is a read-only
    mapping and the per-op lists are tuples; so what is derived from them once (``derived``) never goes stale."""
    flops: np.ndarray                 # (n_ops, *cfg) on the op's own unit (matrix unit for MATRIX_KINDS)
    bytes: Mapping[str, np.ndarray]   # class -> (n_ops, *cfg), read-only
    network_bytes: np.ndarray         # (n_ops, *cfg)
    count: np.ndarray                 # (n_ops, 1…)
    kind_idx: np.ndarray              # (n_ops,) index into KINDS
    dtypes: tuple[str, ...]
    cfg_shape: tuple
    vector_flops: np.ndarray | None = None   # (n_ops, *cfg) extra vector-unit FLOPs; None when no op has any
    eta_scale: np.ndarray | None = None      # (n_ops, *cfg) compute-efficiency multiplier; None when all are 1
    names: tuple[str, ...] | None = None     # op names (calibration may refine an op class by name)
    kernels: tuple[str, ...] | None = None   # own_kernel(op): op.attrs["kernel"], a split op class, or ""
    mnk: np.ndarray | None = None            # (n_ops, 3, *cfg) GEMM M, N, K from op.attrs["mnk"], 0 where not given
    nk: np.ndarray | None = None             # (n_ops, 2) GEMM N, K from op.attrs["nk"] (convolutions, products
                                             # with a weight matrix), 0 where not given
    resident: np.ndarray | None = None       # (n_ops,) op.attrs["resident"]: all its traffic in the last cache
    warm_activations: np.ndarray | None = None  # (n_ops,) op.attrs["warm_activations"]: its activations read from the
                                             # last cache level whatever their size (a table row whose collector
                                             # calls reuse one input the cache holds with all else they touch)
    weights_kn: np.ndarray | None = None     # (n_ops,) op.attrs["weights_kn"]: x @ W with W row-major K×N
    written: np.ndarray | None = None        # (n_ops, *cfg) op.bytes_written: the part of the bytes written
    local_experts: np.ndarray | None = None  # (n_ops,) op.attrs["local_experts"]: the expert slots on the rank a grouped
                                             # MoE GEMM launches over (``efficiency.expert_setup_s``), 0 where not given
    tokens: np.ndarray | None = None         # (n_ops, *cfg) op.attrs["tokens"]: the tokens an MoE layer's op takes in,
                                             # routed to the rank or not (``efficiency.token_setup_s``), 0 where not given
    cache_writes: np.ndarray | None = None   # (n_ops, *cfg) op.attrs["cache_writes"]: the tokens an attention writes
                                             # to the KV cache: a prefill's, one cache writer CTA each
                                             # (``efficiency.cache_write_s``); a decode's, one per sequence
                                             # (``efficiency.swap_copy_s``); 0 where not given
    cache_write_width: np.ndarray | None = None  # (n_ops, *cfg) op.attrs["cache_write_width"]: the KV heads · head dim
                                             # a prefill attention's token writes (its cache writer CTA's threads
                                             # before their cap), 0 where not given
    history: np.ndarray | None = None        # (n_ops, *cfg) op.attrs["history"]: the whole sequence a windowed decode
                                             # attention's split-KV kernel splits (``core.splitkv``), 0 where not given
    weight_elem_bytes: np.ndarray | None = None  # (n_ops, 1…) op.attrs["weight_elem_bytes"]: stored bytes per weight
                                             # element of a GEMM whose weights are narrower than its math
                                             # (``core.weightonly``), 0 where not given (its dtype's size)
    frontend: str = "torch"                  # the graph's front end (FRONTENDS): its framework terms
    _derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self):
        for name in ("dtypes", "names", "kernels"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        object.__setattr__(self, "bytes", MappingProxyType(dict(self.bytes)))
        for x in (self.flops, *self.bytes.values(), self.network_bytes, self.count, self.kind_idx, self.vector_flops,
                  self.eta_scale, self.mnk, self.nk, self.resident, self.warm_activations, self.weights_kn, self.written,
                  self.history, self.cache_writes, self.cache_write_width, self.weight_elem_bytes):
            if x is not None:
                x.setflags(write=False)

    def derived(self, key: str, compute):
        """``compute(self)``, computed once for these columns and kept with them (``gemmshape.gemm_dims``)."""
        kept = self._derived.get(key)
        if kept is None:
            kept = self._derived[key] = compute(self)
        return kept

    @staticmethod
    def of(g: Graph) -> "Columns":
        if not g.ops:
            raise IronlawError(f"workload '{g.name}' has no operators")
        values = [op.flops for op in g.ops] + [v for op in g.ops for v in op.bytes.values()]
        values += [op.vector_flops for op in g.ops] + [op.eta_scale for op in g.ops]
        values += [v for v in g.footprint.values()]
        cfg_shape = np.broadcast_shapes(*[np.shape(v) for v in values])
        n = len(g.ops)

        def stack(get) -> np.ndarray:
            out = np.empty((n, *cfg_shape))
            for i, op in enumerate(g.ops):
                out[i] = get(op)
            return out

        by_class = {c: stack(lambda op, c=c: op.bytes.get(c, 0.0)) for c in CLASSES
                    if any(c in op.bytes for op in g.ops)}
        count = np.array([op.count for op in g.ops], dtype=float).reshape((n,) + (1,) * len(cfg_shape))
        return Columns(flops=stack(lambda op: op.flops), bytes=by_class,
                       network_bytes=stack(lambda op: op.network_bytes), count=count,
                       kind_idx=np.array([KINDS.index(op.kind) for op in g.ops]),
                       dtypes=[op.dtype for op in g.ops], cfg_shape=cfg_shape,
                       vector_flops=stack(lambda op: op.vector_flops)
                       if any(np.any(np.asarray(op.vector_flops) != 0) for op in g.ops) else None,
                       eta_scale=stack(lambda op: op.eta_scale)
                       if any(np.any(np.asarray(op.eta_scale) != 1) for op in g.ops) else None,
                       names=[op.name for op in g.ops],
                       kernels=[own_kernel(op) for op in g.ops],
                       mnk=np.stack([np.stack([np.broadcast_to(np.asarray(x, float), cfg_shape)
                                               for x in op.attrs.get("mnk", (0, 0, 0))]) for op in g.ops])
                       if any("mnk" in op.attrs for op in g.ops) else None,
                       nk=np.array([op.attrs.get("nk", (0, 0)) for op in g.ops], dtype=float)
                       if any("nk" in op.attrs for op in g.ops) else None,
                       resident=np.array([bool(op.attrs.get("resident")) for op in g.ops])
                       if any(op.attrs.get("resident") for op in g.ops) else None,
                       warm_activations=np.array([bool(op.attrs.get("warm_activations")) for op in g.ops])
                       if any(op.attrs.get("warm_activations") for op in g.ops) else None,
                       weights_kn=np.array([bool(op.attrs.get("weights_kn")) for op in g.ops])
                       if any(op.attrs.get("weights_kn") for op in g.ops) else None,
                       written=stack(lambda op: op.bytes_written),
                       local_experts=np.array([float(op.attrs.get("local_experts", 0.0)) for op in g.ops])
                       if any("local_experts" in op.attrs for op in g.ops) else None,
                       tokens=stack(lambda op: op.attrs.get("tokens", 0.0))
                       if any("tokens" in op.attrs for op in g.ops) else None,
                       cache_writes=stack(lambda op: op.attrs.get("cache_writes", 0.0))
                       if any("cache_writes" in op.attrs for op in g.ops) else None,
                       cache_write_width=stack(lambda op: op.attrs.get("cache_write_width", 0.0))
                       if any("cache_write_width" in op.attrs for op in g.ops) else None,
                       history=stack(lambda op: op.attrs.get("history", 0.0))
                       if any("history" in op.attrs for op in g.ops) else None,
                       weight_elem_bytes=np.array([float(op.attrs.get("weight_elem_bytes", 0.0)) for op in g.ops])
                       .reshape((n,) + (1,) * len(cfg_shape))
                       if any("weight_elem_bytes" in op.attrs for op in g.ops) else None, frontend=frontend(g.meta))
