"""The rows a GPU GEMM's matrix instructions compute at least (``mma_tile_eta``): a GEMM of fewer rows than its
tensor-core tile still issues the whole tile, so its useful FLOPs run at most M / tile of the unit's peak.
"""
from __future__ import annotations

import numpy as np

from ...core.gemmshape import gemm_dims, is_gemv, kn_rows
from ...core.graph import Columns, KINDS
from ...machine.calibration import Calibration
from .shared import gemm_kernels, op_names, shape_tables

# Rows of the smallest tensor-core tile a GEMM kernel issues, by maker (GPUs only). NVIDIA: Hopper's warpgroup MMA
# is m64nNk16 (bf16) / m64nNk32 (fp8) for every N (PTX ISA, wgmma.mma_async shapes; TensorRT-LLM
# cpp/kernels/xqa/gmma_impl.cuh issues wgmma.mma_async.sync.aligned.m64n{n}k32), Blackwell's tcgen05.mma takes M =
# 64 or 128 per CTA (PTX ISA, tcgen05 shapes; CUTLASS's CuTe DSL Blackwell tutorial fp16_gemm_0 runs an sm100
# 128x256x16 MMA); Ampere and Ada issue mma.sync m16n8k16 per warp, their GEMM kernels stack warps to CTA tiles of
# 64 rows or more. Other makers: no bound stated (their MFMA / MXU tile rows are not cited here).
MMA_TILE_ROWS = {"NVIDIA": 64.0}
# the dtypes whose GEMMs run on the tensor cores' tiles (fp32 and fp64 GEMMs price the CUDA cores' or the FP64
# units' peak, whose instructions are not these tiles)
TILE_DTYPES = ("tf32", "bf16", "fp16", "fp8", "int8", "int4", "fp4", "mxfp8", "mxfp4")


def mma_tile_eta(tile: float | None, cal: Calibration | None, cols: Columns) -> np.ndarray | float:
    """(n_ops, *cfg) per op, the most of its unit's peak its useful FLOPs can reach, min(1, M / tile): a plain GEMM
    (kind matmul of a ``TILE_DTYPES`` dtype) of M rows on a GPU whose maker's MMA tile has ``tile`` rows
    (``MMA_TILE_ROWS``; None: no bound) fills M of each tile's rows and computes the rest as padding; ``cal``, the
    device's calibration (or None), names the ops exempt below. Only a dtype whose GEMM table is fitted on measured
    kernels (``gemm <dtype>`` in the calibration's provenance): there the weights' streaming can leave the fitted
    compute η unidentified at small M; a datasheet device's, or an engine constants' half-point table, is not bounded
    (its GEMV stays priced by its streaming, ``gemmshape.gemv_m_half_max``). 1 for every other op: attention and
    convolutions (their own tiles), a kernel class that is a GEMM table of its own (grouped expert GEMMs), a matmul
    without weights or a stated shape (its M unknown), and a row its table runs as a matrix-vector product
    (``gemv_eta``: no tensor-core tile)."""
    lead = (-1,) + (1,) * len(cols.cfg_shape)
    fitted = [dt for dt in TILE_DTYPES if cal is not None and f"gemm {dt}" in (cal.provenance or {})]
    rows = ((np.array(KINDS)[cols.kind_idx] == "matmul") & np.isin(cols.dtypes, fitted)).reshape(lead)
    if tile is None or not rows.any():
        return 1.0
    if cal is not None:
        names = op_names(cols, "kernels")
        rows = rows & ~np.isin(names, [name for name, _ in gemm_kernels(cal, names)]).reshape(lead)
    m = gemm_dims(cols)[0]
    shaped = cols.bytes.get("weights", np.zeros(cols.flops.shape)) > 0     # M known: weights' elements or stated
    if cols.mnk is not None:
        shaped = shaped | (cols.mnk[:, 0] > 0)
    out = np.where(rows & shaped, np.minimum(m / tile, 1.0), 1.0)
    if cal is not None:
        kn = kn_rows(cols)
        for _, p, r in shape_tables(cal, cols, "gemv_eta", kinds=("matmul",)):
            out[r] = np.where(is_gemv(p, m[r], kn[r]), 1.0, out[r])
    return out
