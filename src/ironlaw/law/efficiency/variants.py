"""The kernel an op runs: a class's variant (XQA MLA, MMHA) and math dtype, and whether its vector work runs
beside its matrix work.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...core.gemmshape import grid_units, xqa_blocks
from ...core.graph import Columns
from ...machine.calibration import Calibration
from ...machine.hardware import Hardware


def with_variants(cal: Calibration, cols: Columns, hw: Hardware) -> tuple[Columns, np.ndarray | float]:
    """``cols`` with each op of a kernel class that names a ``variant`` (``gemmshape.SHAPE_FIELDS``) whose M, the
    query rows per KV head its shape states (``op.attrs['mnk']``), is the class's ``variant_m`` at every
    configuration, named as that variant's op: the kernel the device runs there (TensorRT-LLM's XQA MLA decode at
    128 heads on an FP8 cache, SM 12.0 only; ``gemmshape.XQA_MLA_HEADS``); and per op (n_ops, 1…) the math peak of
    the kernel it runs over the op's own, which its compute η is multiplied by: the variant's (``variant_dtype``: the
    XQA MLA kernel computes in FP8 whatever the model's dtype) or its class's ``math`` (a context FMHA that runs FP8
    math on an FP8 cache), at its ``math_head_dims`` where it names them (``at_math_head_dim``); ``cols`` itself and 1
    where no op runs either."""
    own = {name: (p["variant"], p, p["variant_dtype"]) for name, p in (cal.kernel or {}).items() if "variant" in p}
    maths = {name: (p["math"], p.get("math_head_dims")) for name, p in (cal.kernel or {}).items() if "math" in p}
    if (not own and not maths) or cols.kernels is None:
        return cols, 1.0
    kernels, math = list(cols.kernels), np.ones((len(cols.kernels),) + (1,) * len(cols.cfg_shape))
    mnk, history = cols.mnk, cols.history
    for i, name in enumerate(kernels):
        if name in own and cols.mnk is not None and runs_variant(own[name][1], cols, i):
            kernels[i] = own[name][0]
            math[i] = hw.peak(own[name][2]) / hw.peak(cols.dtypes[i])
            if "variant_blocks_below" in own[name][1]:    # MMHA: one query head to a CTA (M = 1), over the keys
                mnk, history = as_mmha(cols, i, mnk, history)
        elif name in maths and at_math_head_dim(maths[name][1], cols, i):
            math[i] = hw.peak(maths[name][0]) / hw.peak(cols.dtypes[i])
    if kernels == list(cols.kernels) and np.all(math == 1.0):
        return cols, 1.0
    return replace(cols, kernels=kernels, mnk=mnk, history=history), math


def as_mmha(cols: Columns, i: int, mnk: np.ndarray, history: np.ndarray | None) -> tuple:
    """(mnk, history) with op ``i`` a decode as TensorRT-LLM's MMHA runs it: one query head to a CTA (M = 1) over its
    whole sequence, the op's keys (its history, as ``workloads.attention`` states an MMHA decode's), so that an MMHA
    class's split-KV launch (``split_blocks``) places it; the arrays copied before the first change."""
    mnk = np.array(mnk) if mnk is cols.mnk else mnk
    if history is None or history is cols.history:
        history = np.zeros(cols.flops.shape) if history is None else np.array(history)
    mnk[i, 0] = 1.0
    history[i] = mnk[i, 1]
    return mnk, history


def runs_variant(p: dict, cols: Columns, i: int) -> bool:
    """Whether op ``i`` of a class with a ``variant`` (``p``, the class's fields) runs it at every configuration:
    where its M (query rows per KV head, ``op.attrs['mnk']``) is ``variant_m``, or above ``variant_m_above``, or
    where XQA would launch fewer CTAs than ``variant_blocks_below`` (``gemmshape.xqa_blocks``: TensorRT-LLM 1.0's
    decode then runs its MMHA kernel, ``decoderXQARunner.cpp``, ``mayHavePerfGain``, which runs each query head on
    CTAs of its own: ``with_variants`` prices it at M = 1, its units the sequences × query heads)."""
    m, n, k = (cols.mnk[i, j] for j in range(3))
    if "variant_m" in p:
        return bool(np.all(m == float(p["variant_m"])))
    if "variant_m_above" in p:
        return bool(np.all(m > float(p["variant_m_above"])))
    units = grid_units(cols.flops[i], m, n, k)
    return bool(np.all(xqa_blocks(units, n) < float(p["variant_blocks_below"])))


def vector_overlap(cal: Calibration, cols: Columns) -> np.ndarray | bool:
    """Per op (n_ops, 1…), whether its kernel class runs its vector work beside its matrix work (``vector =
    "overlap"``, ``gemmshape.VECTOR_MODES``), at the class's ``vector_head_dims`` where it names them, else at its
    ``math_head_dims`` where it names them; False where no class says so."""
    modes = {name: p.get("vector_head_dims", p.get("math_head_dims")) for name, p in (cal.kernel or {}).items()
             if p.get("vector") == "overlap"}
    if not modes or cols.kernels is None:
        return False
    out = np.array([name in modes and at_math_head_dim(modes[name], cols, i) for i, name in enumerate(cols.kernels)])
    return out.reshape((-1,) + (1,) * len(cols.cfg_shape))


def at_math_head_dim(dims: list | None, cols: Columns, i: int) -> bool:
    """Whether op ``i`` runs its class's ``math`` kernel: at every head dim where the class names none
    (``math_head_dims``), else where the op's head dim (its stated K, ``op.attrs['mnk']``) is one of ``dims``."""
    if dims is None:
        return True
    return cols.mnk is not None and bool(np.all(np.isin(cols.mnk[i, 2], np.asarray(dims, float))))
