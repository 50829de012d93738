"""Rows as ironlaw ops: each table row built as the op ironlaw itself builds for it (GEMM, attention, MLA, MLA
BMM), timed as its collector ran it (``observations``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ....core.graph import Graph
from ..fitcore import Observation
from .collector import COLLECTOR_OUTPUT_SHARE, as_collected, cache_resident, warm_through
from .rules import (CACHE_DECIDES_OPS, REPLAY_CACHE_OPS, REPLAY_L2, REPLAY_L2_SOURCE, RESIDENT_OPS, WARM_THROUGH_OPS,
                    WRITTEN_ONCE_OPS, holds, k_only_pool, resident_context, warm_class)
from .vocabulary import (ATTENTION_DTYPES, Group, MLA_BMM_PRODUCTS, MLA_DIMS, MODULE_GEMM_DTYPES, MODULE_HIDDEN,
                         MODULE_PHASES, PHASES)


def observations(g: Group, rows, hw=None) -> list[Observation]:
    """The rows as ironlaw ops with their measured seconds; with ``hw``, a generation row whose operands fit its
    last cache level marked so (``cache_resident``)."""
    build = gemm_op if g.op == "gemm" else mla_op if g.op.endswith("_mla") else \
        mla_bmm_op if g.op == "mla_bmm" else module_op if g.op in MODULE_PHASES else attention_op
    ops = [build(r, g) for r in rows.itertuples()]
    if k_only_pool(g):
        ops = [replace(op, bytes={**op.bytes, "kv_cache": op.bytes["kv_cache"] / 2.0}) for op in ops]
    if hw is not None and (g.op in RESIDENT_OPS or g.operands == "cache" or resident_context(g)):
        ops = cache_resident(ops, hw, g.op in CACHE_DECIDES_OPS)
        share = 1.0 if holds(WRITTEN_ONCE_OPS, g.op, g.table.gpu) else COLLECTOR_OUTPUT_SHARE
        ops = warm_through(ops, hw, share) if g.op in WARM_THROUGH_OPS or warm_class(g) or resident_context(g) else ops
    elif hw is not None and g.operands == "copies":
        ops = as_collected(ops, rows, g, hw)
    offsets = gemm_offsets(g, rows, hw) if g.module_form == "apart" else [0.0] * len(ops)
    return [Observation(op, float(r.latency_s), f"kernels:{g.name}", offset_s=o)
            for op, r, o in zip(ops, rows.itertuples(), offsets)]


def gemm_offsets(g: Group, rows, hw) -> list[float]:
    """Per row of an MLA module table, the seconds of its projections (``mla_module.projection_ops``: DeepSeek-V3's at
    the row's heads, tokens and ``gemm_type``) on the GEMM classes of the table's framework as its engine file holds
    them (``engines.with_engine``): what a module class fitted "apart" leaves out (``forms.module_form``)."""
    import numpy as np
    from ....core.graph import Graph
    from ....law.law import predict
    from ....machine import engines
    from ....models.serving.step.mla_module import ModuleShape, projection_ops
    dev, phase, out = engines.with_engine(hw, g.table.framework)[0], MODULE_PHASES[g.op], []
    for r in rows.itertuples():
        dt = MODULE_GEMM_DTYPES[r.gemm_type]
        shape = ModuleShape(int(r.num_heads), float(r.batch_size), float(r.step if phase == "decode" else r.isl),
                            phase, dt, ATTENTION_DTYPES[r.kv_cache_dtype])
        ops = projection_ops(MLA_DIMS, MODULE_HIDDEN, shape)
        out.append(float(np.sum(predict(Graph("projections", "infer", dt, ops), dev).op_time_s)))
    return out


def replayed_hw(g: Group, hw):
    """``hw`` with the cache level ``g``'s rows replay out of where its catalog file states none
    (``REPLAY_CACHE_OPS``, ``REPLAY_L2``): the device a class of such a GPU is fitted and scored on, so that its rows
    whose operands fit that level are read from there (``cache_resident``, ``warm_through``). Else ``hw`` itself."""
    if hw is None or not holds(REPLAY_CACHE_OPS, g.op, g.table.gpu) or any(t.role == "cache" for t in hw.memory):
        return hw
    from ....machine.hardware import Tier
    capacity, rate, latency = REPLAY_L2[g.table.gpu]
    source = (f"the L2 the collector's replayed operands stay in: {REPLAY_L2_SOURCE[g.table.gpu]} "
              "(kernelfit.rules.REPLAY_L2)")
    tier = Tier("l2", "cache", capacity, rate, source, latency)
    return replace(hw, memory=(tier, *hw.memory))


def gemm_op(r, g: Group):
    from ....models.workloads.micro import gemm
    from ....models.workloads.registry import Request
    spec = f"{int(r.m)},{int(r.n)},{int(r.k)}"
    return gemm(spec, Request(f"gemm:{spec}", phase="infer", dtype=g.key[1], device="cuda")).ops[0]


def attention_op(r, g: Group):
    """The analytic transformer's attention op of one row (window 0: global), its KV cache in the row's dtype."""
    from ....models.serving.online import with_kv_dtype
    from ....models.workloads.attention import CoreHeads, CoreShape, attention_core
    phase = "prefill" if g.op == "context_attention" else "decode"
    dt, kv = _row_dtype(r.attn_dtype, g), _row_dtype(r.kv_cache_dtype, g)
    a = CoreHeads(int(r.num_heads), int(r.num_key_value_heads))
    sh = CoreShape(float(r.batch_size), float(r.step if phase == "decode" else r.isl), phase)
    d, kvd, qd = int(r.head_dim), int(r.num_key_value_heads) * int(r.head_dim), int(r.num_heads) * int(r.head_dim)
    geo = {"qk": d, "pv": d, "q": qd, "kv_new": 2 * kvd, "o": qd, "cache": 2 * kvd, "shape": f"{a.heads}/{a.kv_heads}x{d}"}
    op = attention_core(a, sh, dt, int(r.window_size) or None, 1, 1, geo)
    op = with_kv_dtype(Graph("attention", phase, dt, [op]), kv).ops[0]
    if getattr(r, "as_class", False) is True:      # another class's row this class's kernel runs (``with_dispatched``)
        op.attrs = {**op.attrs, "kernel": g.key[1]}
    return op


def mla_op(r, g: Group):
    """The analytic transformer's MLA attention op of one row (DeepSeek-V3's dims, ``MLA_DIMS``; ``num_heads`` the
    heads on one GPU), its cache in the row's KV dtype."""
    from ....models.serving.online import with_kv_dtype
    from ....models.workloads.attention import CoreHeads, CoreShape, attention_core, mla_geometry
    phase = PHASES[g.op]
    xqa = g.key[1].endswith("_mla_xqa")          # the XQA MLA kernel's rows: its math in FP8 (``_mla_groups``)
    dt, kv = "fp8" if xqa else _row_dtype(r.mla_dtype, g), _row_dtype(r.kv_cache_dtype, g)
    a = CoreHeads(int(r.num_heads), int(r.num_heads))
    sh = CoreShape(float(r.batch_size), float(r.step if phase == "decode" else r.isl), phase)
    op = with_kv_dtype(Graph("attention", phase, dt, [attention_core(a, sh, dt, None, 1, 1,
                                                                  mla_geometry(MLA_DIMS, a.heads, phase))]), kv).ops[0]
    if xqa:                                      # the variant class's rows, named as ``efficiency.with_variants`` does
        op.attrs = {**op.attrs, "kernel": g.key[1]}
    return op


def _row_dtype(x: str, g: Group) -> str:
    """A row's attention dtype as ironlaw runs it (float16 as bf16 where the group stands for bf16)."""
    return "bf16" if x == "float16" and g.timed.startswith("float16 rows, for bf16") else ATTENTION_DTYPES[x]


def mla_bmm_op(r, g: Group):
    """The analytic transformer's per-head product of one row (``attention.per_head``): ``num_heads`` heads over
    ``num_tokens`` tokens, one layer, named its kernel class."""
    from ....models.workloads.attention import per_head
    name, k, n = MLA_BMM_PRODUCTS[r.op_name]
    return per_head(name, _Layer(int(r.num_heads)), float(r.num_tokens), k, n, g.dtype)


@dataclass(frozen=True)
class _Layer:
    """The part of a model's architecture a per-head product reads: its heads, one layer."""
    heads: int
    layers: int = 1


def module_op(r, g: Group):
    """The whole MLA module of one row as the serving step prices it (``serving.step.mla_module.module_op``):
    DeepSeek-V3's dims (``MLA_DIMS``, ``MODULE_HIDDEN``), ``num_heads`` on the GPU, the row's batch and cached
    (decode) or prompt (prefill) tokens, its projections' and cache's dtypes."""
    from ....models.serving.step.mla_module import ModuleShape, module_op as build
    phase = MODULE_PHASES[g.op]
    seq = float(r.step if phase == "decode" else r.isl)
    shape = ModuleShape(int(r.num_heads), float(r.batch_size), seq, phase, MODULE_GEMM_DTYPES[r.gemm_type],
                        ATTENTION_DTYPES[r.kv_cache_dtype])
    return build(MLA_DIMS, MODULE_HIDDEN, shape, gemms=g.module_form != "apart")
