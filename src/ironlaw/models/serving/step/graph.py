"""The step's graph (``step_graph``): the workload's graphs of one phase (``build``) cut into one engine step's
ops, its KV cache in the engine's dtype (``with_kv``, ``with_kv_dtype``, ``scale_class``) and its ops scaled to
the tokens they run on (``scaled``, ``is_head``)."""
from __future__ import annotations

import copy

from ....core.errors import IronlawError
from ....core.gemmshape import attention_kernel, attention_kernel_parts
from ....core.graph import Graph, Op, attention_dtype, dtype_bytes
from ...precision import moe_recipe
from ..kvcache import default_kv_dtype
from .checkpoint import StoredExperts, modelopt
from .moe import GROUPED_GEMM, grouped, moe_kernels, on_router, on_table_rows


def is_head(op: Op) -> bool:
    """An op of the step's head, run on the head tokens only: the output layer (role ``head``) and the norm
    before it (the one norm outside the layers, whose ops the builder marks ``per_layer``)."""
    role = op.attrs.get("role")
    return role == "head" or (role == "norm" and not op.attrs.get("per_layer"))


def with_kv(g: Graph, kv_dtype: str | None) -> Graph:
    """``g`` with its KV cache in ``kv_dtype``, or where that is None in the checkpoint's default for the model's
    dtype (``default_kv_dtype``: FP8 for 8- and 4-bit floats)."""
    kv = kv_dtype or default_kv_dtype(g.dtype)
    return g if kv == g.dtype else with_kv_dtype(g, kv)


def scale_class(g: Graph, cls: str, factor: float) -> Graph:
    """``g`` with the traffic and footprint of one byte class (``"kv_cache"``, ``"weights"`` …) times ``factor``
    (``g`` itself at 1)."""
    if factor == 1.0:
        return g
    out = copy.copy(g)
    out.ops = []
    for op in g.ops:
        o = copy.copy(op)
        o.bytes = {k: (v * factor if k == cls else v) for k, v in op.bytes.items()}
        out.ops.append(o)
    out.footprint = {k: (v * factor if k == cls else v) for k, v in g.footprint.items()}
    out.meta = dict(g.meta)
    return out


def with_kv_dtype(g: Graph, kv_dtype: str) -> Graph:
    """KV cache stored in ``kv_dtype`` (fp8 KV halves its traffic and footprint against bf16), attention run in
    ``graph.attention_dtype``."""
    out = copy.copy(scale_class(g, "kv_cache", dtype_bytes(kv_dtype) / dtype_bytes(g.dtype)))
    att = attention_dtype(g.dtype, kv_dtype)
    out.ops = [_with_dtype(op, att, kv_dtype) if op.kind == "attention" else op for op in out.ops]
    return out


def _with_dtype(op, dtype: str, kv_dtype: str):
    """An attention op computing in ``dtype`` on a cache held in ``kv_dtype``."""
    o = copy.copy(op)
    o.dtype = dtype
    o.attrs = {**op.attrs, "kv_dtype": kv_dtype}
    parts = attention_kernel_parts(str(op.attrs.get("kernel", "")))
    if parts is not None:                                   # its kernel class names both dtypes
        o.attrs["kernel"] = attention_kernel(parts[0], dtype, kv_dtype, parts[1])
    return o


def build(spec: str, phase: str, batch: int, seq: int, dtype: str, kv_dtype: str, hw,
          experts: StoredExperts | None = None) -> Graph:
    """The workload graph of one phase in ``dtype``, its KV cache in ``kv_dtype``, its routed experts' weights
    stored as ``experts`` says where given (``StoredExperts``)."""
    from ... import workloads
    from ...workloads.transformer import with_checkpoint_experts
    g = workloads.resolve(workloads.Request(spec, phase=phase, batch=int(batch), seq=int(seq), dtype=dtype,
                                            device="cuda" if hw.kind == "gpu" else "cpu"))
    if g.phase != phase or "kv_cache_bytes" not in g.meta:
        raise IronlawError(f"{spec}: serving needs a decoder LLM with prefill and decode phases")
    if experts is not None:
        g = with_checkpoint_experts(g, experts.dtype, experts.source)
    return with_kv_dtype(g, kv_dtype)


def scaled(op, factor: float, name: str | None = None):
    """``op`` doing ``factor`` times its work (FLOPs and traffic) on the same weights."""
    o = copy.copy(op)
    o.name = name or op.name
    o.flops = op.flops * factor
    o.vector_flops = op.vector_flops * factor
    o.bytes = {k: (v if k == "weights" else v * factor) for k, v in op.bytes.items()}
    o.bytes_written = op.bytes_written * factor
    if "cache_writes" in op.attrs:               # the tokens an attention writes to the cache (a prefill's, a decode's)
        o.attrs = {**op.attrs, "cache_writes": op.attrs["cache_writes"] * factor}
    return o


def step_graph(spec: str, hw, dtype: str, kv_dtype: str, *, gemm_tokens: int, decode: int, context: int,
               prompt: int, prefill_tokens: float, head_tokens: float, moe_tables: bool = False,
               experts: StoredExperts | None = None) -> Graph:
    """The step's graph on one attention rank (unsharded): see the package docstring (``serving.step``); the routed experts' weights
    stored as ``experts`` says where given."""
    T = max(int(round(gemm_tokens)), 1)
    tok = build(spec, "decode", T, 1, dtype, kv_dtype, hw, experts)
    parts: dict[str, list] = {op.name: [] for op in tok.ops if op.kind == "attention"}
    if decode >= 1:                                  # every attention op (global, windowed, chunked) of the model
        for op in build(spec, "decode", decode, context, dtype, kv_dtype, hw).ops:
            if op.kind == "attention":
                parts[op.name].append(scaled(op, 1.0, op.name + ".decode"))
    if prefill_tokens > 0:
        for op in build(spec, "prefill", 1, prompt, dtype, kv_dtype, hw).ops:
            if op.kind == "attention":
                parts[op.name].append(scaled(op, prefill_tokens / prompt, op.name + ".prefill"))
    ops = []
    for op in tok.ops:
        if op.kind == "attention":
            ops.extend(parts[op.name])
        elif is_head(op):
            ops.append(scaled(op, head_tokens / T))
        else:
            ops.append(op)
    kernels = moe_kernels(hw, dtype, moe_recipe(tok)) if moe_tables else (GROUPED_GEMM, None)
    ops = [on_router(on_table_rows(grouped(modelopt(op, dtype), *kernels), hw, tok.meta, T), hw, tok.meta, kernels[0])
           for op in ops]
    meta = dict(tok.meta)
    meta.update(tokens=T, decode_sequences=decode, prefill_tokens=prefill_tokens)
    return Graph(f"{spec} step: {decode} decoding + {prefill_tokens:.0f} prompt tokens", "decode", dtype, ops,
                 footprint=dict(tok.footprint), meta=meta)
