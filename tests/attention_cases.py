"""Shared builders of attention test cases: a decode step's attention op on a reshaped Llama-3-8B, a device's
calibration with that op's kernel class launched another way, and the fixed latency the law gives one measured
prefill row under a class of given fields (the tables' columns, aiconfigurator-core 0.12.0's layout)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

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


def prefill_latency_s(row: dict, table: tuple, kernel: str, p: dict, gpu: str, graph_dtype: str) -> float:
    """The fixed seconds (``Terms.latency_s``) the law gives the prefill op of one table ``row`` (the tables'
    columns; ``table``: the device as the table names it, framework, version) on ``gpu`` under a class ``kernel``
    of fields ``p`` alone."""
    import pandas as pd
    from ironlaw.measure.calibrate import kernelfit
    from ironlaw.measure.calibrate.kerneltable import KernelTable
    rows = pd.DataFrame([{"step": 0, "latency_s": 1e-4, **row}])
    t = KernelTable("context_attention", gpu, *table, "x.parquet", rows)
    g = kernelfit.Group("g", ("kernel", kernel), "context_attention", t, None)
    op = kernelfit.ops.attention_op(next(rows.itertuples()), g)
    cal = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"], "kernel": {kernel: p}}
    hw = replace(hardware.get(gpu), calibration=Calibration.of(cal))
    return float(np.ravel(efficiency.evaluate(law.place(Graph("t", "prefill", graph_dtype, [op]), hw).cols, hw)
                          .latency_s)[0])
