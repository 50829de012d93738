"""Shared builders of attention test cases: a decode step's attention op on a reshaped Llama-3-8B, a device's
calibration with that op's kernel class launched another way, and the fixed latency the law gives one measured
prefill row under a class of given fields (the tables' columns, aiconfigurator-core 0.12.0's layout)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ironlaw.core.gemmshape import attention_kernel
from ironlaw.core.graph import Graph
from ironlaw.law import efficiency, law
from ironlaw.machine import calibration, hardware
from ironlaw.machine.calibration import Calibration
from ironlaw.models.workloads import Request
from ironlaw.models.workloads import transformer as T

# the fields that say how a class splits its keys, which a relaunched class drops before taking its own
SPLIT_FIELDS = ("split_kv", "split_s", "merge_s", "mmha_threads", "mmha_occupancy")


def decode_case(heads: int, kv_heads: int, batch: int, seq: int, head_dim: int, phase: str = "decode", **arch):
    """A decode step (or ``phase``) of Llama 3 8B reshaped to ``heads`` query heads on ``kv_heads`` KV heads of
    ``head_dim``, with the architecture's other ``arch`` fields (``sliding_window=128``): (graph, index of its
    attention op, the op)."""
    arch = replace(T.builtin_arch("llama3-8b"), kv_heads=kv_heads, heads=heads, head_dim=head_dim,
                   hidden=heads * head_dim, **arch)
    g = T.build(arch, Request("x", phase=phase, batch=batch, seq=seq), "x")
    (i, op), = [(i, o) for i, o in enumerate(g.ops) if o.kind == "attention"]
    return g, i, op


def op_s(g, i: int, hw) -> float:
    """The law's seconds for one call of ``g``'s op ``i`` on ``hw``."""
    return float(np.asarray(law.predict(g, hw).op_time_s).reshape(len(g.ops), -1)[i, 0])


def unsplit(cal: dict, name: str) -> dict:
    """The calibration table ``cal``'s class ``name`` without a split of its own."""
    return {k: v for k, v in cal["kernel"][name].items() if k not in SPLIT_FIELDS}


def relaunched(hw, op, **fields) -> Calibration:
    """``hw``'s calibration with ``op``'s kernel class unsplit and given ``fields`` (checked as the catalog is)."""
    cal = hw.calibration.table()
    name = op.attrs["kernel"]
    cal["kernel"][name] = {**unsplit(cal, name), **fields}
    return Calibration.of(calibration.check(cal, "calibration"))


def table_prefill_op(row: dict, table: tuple, kernel: str, gpu: str):
    """The prefill op the fitter builds from one table ``row`` (the tables' columns; ``table``: the device as the
    table names it, framework, version) of class ``kernel`` on ``gpu``."""
    import pandas as pd
    from ironlaw.measure.calibrate import kernelfit
    from ironlaw.measure.calibrate.kerneltable import KernelTable
    rows = pd.DataFrame([{"step": 0, "latency_s": 1e-4, **row}])
    t = KernelTable("context_attention", gpu, *table, "x.parquet", rows)
    g = kernelfit.Group("g", ("kernel", kernel), "context_attention", t, None)
    return kernelfit.ops.attention_op(next(rows.itertuples()), g)


def prefill_terms(op, kernel: str, p: dict, gpu: str, graph_dtype: str):
    """The law's efficiency terms (``efficiency.Terms``) of the prefill ``op`` alone on ``gpu`` under a class
    ``kernel`` of fields ``p`` alone."""
    cal = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"], "kernel": {kernel: p}}
    hw = replace(hardware.get(gpu), calibration=Calibration.of(cal))
    return efficiency.evaluate(law.place(Graph("t", "prefill", graph_dtype, [op]), hw).cols, hw)


def prefill_latency_s(row: dict, table: tuple, kernel: str, p: dict, gpu: str, graph_dtype: str) -> float:
    """The fixed seconds (``Terms.latency_s``) the law gives the prefill op of one table ``row`` (the tables'
    columns; ``table``: the device as the table names it, framework, version) on ``gpu`` under a class ``kernel``
    of fields ``p`` alone."""
    op = table_prefill_op(row, table, kernel, gpu)
    return float(np.ravel(prefill_terms(op, kernel, p, gpu, graph_dtype).latency_s)[0])


# SGLang 0.5.14's H100 FP8-cache prefill class: one sequence of one head, the query-tile and causal-block cases
FP8_CACHE_MHA = attention_kernel("prefill", "bf16", "fp8", "_mha")


def sglang_h100_prefill(tokens: float, head_dim: int = 512, batch: int = 1):
    """The prefill op of ``batch`` sequences of ``tokens`` tokens, one head on one KV head at ``head_dim``, in
    SGLang 0.5.14's H100 FP8-cache class (``FP8_CACHE_MHA``)."""
    row = dict(batch_size=batch, isl=tokens, num_heads=1, num_key_value_heads=1, head_dim=head_dim, window_size=0,
               attn_dtype="bfloat16", kv_cache_dtype="fp8")
    return table_prefill_op(row, ("NVIDIA H100", "sglang", "0.5.14"), FP8_CACHE_MHA, "h100")


def h100_compute_eta(op, p: dict) -> float:
    """The op's compute η on H100 under an FP8-cache prefill class (``FP8_CACHE_MHA``) of fields ``p``."""
    return float(np.ravel(prefill_terms(op, FP8_CACHE_MHA, p, "h100", "bf16").compute_eta)[0])
