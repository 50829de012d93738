"""Weight traffic: the η a shape table gives its weights, the bytes a CPU GEMM reads beyond its weights once,
and an op's η on a tier slower than the last cache level.
"""
from __future__ import annotations

import numpy as np

from ...core.gemmshape import gemm_dims, gemv_passes, is_gemv, kn_rows, row_factor, row_length, streamed_eta
from ...core.graph import Columns, KINDS
from ...machine.calibration import Calibration
from .shared import gemm_kernels, op_names, shape_tables


def streamed_table(cal: Calibration, cols: Columns) -> np.ndarray | None:
    """Per op, the weight-traffic η its shape table gives (matmul: ``streamed``, or ``streamed_kn`` for
    x @ W, on GEMMs, not GEMVs, or with ``streamed_half`` ``gemmshape.streamed_eta`` on all; conv: ``streamed`` on all), NaN where the table gives none (the
    calibration's memory.streamed applies); None if no table gives one."""
    out = None
    for kind, p, r in shape_tables(cal, cols, "streamed", "streamed_kn"):
        if out is None:
            out = np.full(cols.flops.shape, np.nan)
        if kind == "matmul":
            dims = gemm_dims(cols)
            kn = kn_rows(cols)[r]
            gemm = np.where(kn, p.get("streamed_kn", p.get("streamed", np.nan)), p.get("streamed", np.nan))
            if "streamed_half" in p:            # the weight tiles' CTAs in flight (gemmshape.streamed_eta)
                gemm = streamed_eta(p, dims[1][r], dims[2][r])
            out[r] = np.where(is_gemv(p, dims[0][r], kn), np.nan, gemm)
        elif "streamed" in p:
            out[r] = p["streamed"]
    names = op_names(cols, "kernels")
    for name, p in gemm_kernels(cal, names):
        r = names == name
        if "streamed" in p and r.any():
            out = np.full(cols.flops.shape, np.nan) if out is None else out
            out[r] = p["streamed"]
    return out


def extra_weight_bytes(cal: Calibration, cols: Columns, limit: float | None, resident=None) -> np.ndarray:
    """Per op, the device-memory bytes a calibrated GEMM reads beyond its weights once: ``pack`` × weight
    bytes where a GEMM's weights exceed ``limit`` (the device's ``pack_limit_bytes``: its packed copy spills), and on the GEMV path
    ``gemv_pass(_kn)`` × (M − 1) × weight bytes plus, where the weights come from device memory (not
    ``resident``), (``row_factor`` − 1) × weight bytes. 0 elsewhere."""
    out = np.zeros(cols.flops.shape)
    tables = {dt: p for dt, p in cal.shapes.get("matmul", {}).items()
              if any(p.get(f) for f in ("pack", "gemv_pass", "gemv_pass_kn", "gemv_row", "gemv_row_kn"))}
    rows = np.array(KINDS)[cols.kind_idx] == "matmul"
    if not tables or not rows.any():
        return out
    w = cols.bytes.get("weights", np.zeros(cols.flops.shape))
    spill = w > limit if limit is not None else np.zeros(w.shape, bool)
    m, n, k = gemm_dims(cols)
    kn = kn_rows(cols)
    length = row_length(cols, n, k)
    streamed = ~np.broadcast_to(np.asarray(False if resident is None else resident, bool), out.shape)
    dts = np.array(cols.dtypes)
    for dt, p in tables.items():
        r = rows & (dts == dt)
        if r.any():
            gemv = is_gemv(p, m[r], kn[r])
            packed = np.where(gemv | ~spill[r], 0.0, float(p.get("pack", 0.0)) * w[r])
            per_row = np.where(gemv & streamed[r], row_factor(p, length[r], kn[r]) - 1.0, 0.0) * w[r]
            out[r] = packed + gemv_passes(p, m[r], kn[r]) * w[r] + per_row
    return out


def slow_tier_eta(eta_op, eta_base, bw_llc_Bps: float, bw_tier_Bps: float):
    """The η of an op's traffic on a tier slower than the last cache level:
    η_t = min(η_op · BW_llc / BW_t, max(η_base, η_op)). An op's own η (its kind's, op class's or kernel's)
    is fitted mostly where its activations sat in that cache: it is a rate the kernel reaches there, not
    a fraction it keeps of any bandwidth; on a slower tier it runs at the slower of that rate and the
    tier's rate at the plain patterns' η (``eta_base``), never below its own η."""
    return np.minimum(eta_op * (bw_llc_Bps / bw_tier_Bps), np.maximum(eta_base, eta_op))
