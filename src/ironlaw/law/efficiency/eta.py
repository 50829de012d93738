"""An op's compute and memory η: the per-kind values, the shape tables, the per-kernel and per-op values over
them, held at the law's bound and slowed by the framework's share.
"""
from __future__ import annotations

import numpy as np

from ...core.gemmshape import gemm_dims, gemm_eta, kn_rows
from ...core.graph import Columns, KINDS
from ...machine.calibration import Calibration, SHAPE_KINDS, STREAMED
from .coords import grid_coords
from .framework import with_framework_share
from .shared import op_names, shape_tables
from .weights import streamed_table


def within_peak(eta, grid=1.0) -> np.ndarray:
    """An op's kernel η over its class's grid factor (``kernel_grid``), at most 1: the law's bound. No kernel runs
    above its unit's peak or its tier's bandwidth, so FLOPs / (peak · η) is never under FLOPs / peak and bytes /
    (BW · η) never under bytes / BW, whatever a fitted table (a ``streamed`` at its fit bound above 1) or a grid
    (measured ÷ modelled below 1) says. Applied before the framework's share, which only slows the op further."""
    return np.minimum(eta / grid, 1.0)


def compute_eta(cal: Calibration, cols: Columns, eta: np.ndarray, grid=1.0, split=None) -> np.ndarray:
    """η per op: the GEMM shape model for matmuls of a calibrated dtype, per-kind values otherwise; over the
    kernel grid's factor ``grid`` and at most 1 (``within_peak``), then the framework's share. ``split``
    (``split_blocks``): a split-KV kernel class's shape model sees the keys and query rows per launched CTA."""
    out = np.broadcast_to(eta, cols.flops.shape).astype(float).copy()
    kinds = np.array(KINDS)[cols.kind_idx]
    for kind, value in cal.compute.items():
        out[kinds == kind] = value
    tables = shape_tables(cal, cols, "eta_max", kinds=("matmul",))   # (a table being fitted may hold only gemv_m yet)
    if tables:
        m, n, k = gemm_dims(cols)
        kn = kn_rows(cols)
        for _, p, r in tables:
            out[r] = gemm_eta(p, m[r], n[r], k[r], kn[r])
    out = _shape_eta(cal, cols, out)
    return with_framework_share(cal, within_peak(scoped(cal, cols, out, "compute", split), grid), cols.frontend)


def memory_eta(cal: Calibration, cols: Columns, eta: np.ndarray, own: bool = True, grid=1.0) -> np.ndarray:
    """η of the data term per op: the byte-weighted reuse patterns (activations at ``produced``, the rest
    at ``streamed``), a kind's value in place of both — or of ``produced`` only where the op's shape
    table (matmul, conv) gives its weights their own ``streamed``; over the kernel grid's factor ``grid`` and at
    most 1 (``within_peak``), then the framework's share."""
    base = np.broadcast_to(eta, cols.flops.shape).astype(float)
    table_streamed = streamed_table(cal, cols)
    kinds = np.array(KINDS)[cols.kind_idx]
    by_kind = cal.memory_kind if own else {}
    if cal.memory_streamed is not None or cal.memory_produced is not None or table_streamed is not None or by_kind:
        streamed = np.broadcast_to(base if cal.memory_streamed is None else cal.memory_streamed, base.shape).copy()
        produced = np.broadcast_to(base if cal.memory_produced is None else cal.memory_produced, base.shape).copy()
        for kind, value in by_kind.items():        # a kind's own η is its activations' (how it walks them)
            produced[kinds == kind] = value
            if kind == "attention":                # … and, for attention, its KV cache's: a decode step's
                streamed[kinds == kind] = value    # flash kernel walks the cache as a prefill walks K and V
        if table_streamed is not None:
            streamed = np.where(np.isnan(table_streamed), streamed, table_streamed)
        zero = np.zeros(cols.flops.shape)
        act = cols.bytes.get("activations", zero)
        other = sum((cols.bytes[c] for c in STREAMED if c in cols.bytes), zero)
        total = act + other
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(total > 0, total / (act / produced + other / streamed), produced)
    else:
        out = base.copy()
    return with_framework_share(cal, within_peak(scoped(cal, cols, out, "memory") if own else out, grid),
                                cols.frontend)


def _shape_eta(cal: Calibration, cols: Columns, out: np.ndarray) -> np.ndarray:
    for _, p, r in shape_tables(cal, cols, kinds=SHAPE_KINDS):
        m, n, k = gemm_dims(cols)
        out[r] = gemm_eta(p, m[r], n[r], k[r])
    return out


def scoped(cal: Calibration, cols: Columns, out: np.ndarray, field: str, split=None) -> np.ndarray:
    """Per-kernel values, then per-op-name values (the most specific wins) over the per-kind ones; a kernel
    entry with ``eta_max`` is a GEMM shape table of its own (a grouped GEMM's η follows its M per group), at the
    keys and query rows per launched CTA where ``split`` (``split_blocks``) splits them."""
    for table, attr in ((cal.kernel, "kernels"), (cal.op, "names")):
        if table:
            names = op_names(cols, attr)
            for name, p in table.items():
                if field in p and name:
                    out[names == name] = p[field]
                elif field == "compute" and "eta_max" in p and name and (names == name).any():
                    r = names == name
                    m, n, k, _ = grid_coords(cols, split)
                    out[r] = gemm_eta(p, m[r], n[r], k[r])
    return out
