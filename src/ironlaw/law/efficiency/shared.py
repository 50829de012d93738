"""Per op, what a calibration's kernel classes say: the ops' kernel (or op) names, the classes that carry a
field, a field per op, the GEMM shape tables that price an op (a kind's per dtype, and the kernel entries that are
tables of their own), a class's split kind and the SM count a launch needs.
"""
from __future__ import annotations

import numpy as np

from ...core.errors import IronlawError
from ...core.graph import Columns, KINDS
from ...machine.calibration import Calibration, SHAPE_KINDS
from ...machine.hardware import Hardware


def op_names(cols: Columns, attr: str = "names") -> np.ndarray:
    """(n_ops,) each op's ``attr`` of ``cols`` (its name, or its kernel class: "kernels") as objects, '' for every op
    where ``cols`` states none."""
    names = getattr(cols, attr, None)
    return np.array(names if names is not None else [""] * len(cols.kind_idx), dtype=object)


def classes_with(cal: Calibration, names: np.ndarray, *fields: str) -> list[tuple[str, dict]]:
    """The kernel classes that carry one of ``fields`` (non-zero) and that an op names (``names``: the ops'
    kernels), with their tables."""
    return [(name, p) for name, p in (cal.kernel or {}).items()
            if name and any(p.get(f) for f in fields) and (names == name).any()]


def per_op(cal: Calibration, names: np.ndarray, field: str, default: float, lead: tuple) -> np.ndarray:
    """(n_ops, 1…) each op's kernel class's ``field``, ``default`` where its class has none."""
    return np.array([float(cal.kernel.get(nm, {}).get(field, default)) if nm else default
                     for nm in names]).reshape(lead)


def shape_tables(cal: Calibration, cols: Columns, *fields: str,
                 kinds: tuple[str, ...] = ("matmul",) + SHAPE_KINDS) -> list[tuple[str, dict, np.ndarray]]:
    """[(kind, table, (n_ops,) the ops it prices)] of each GEMM shape table of ``kinds`` (``cal.shapes``: a kind's,
    one per dtype) that states one of ``fields`` (any table where none is named) and prices an op of ``cols``: an op
    of its kind and dtype. In ``kinds``' order, then the calibration's."""
    if not any(cal.shapes.get(kind) for kind in kinds):
        return []
    op_kinds, dts = np.array(KINDS)[cols.kind_idx], np.array(cols.dtypes)
    out = []
    for kind in kinds:
        for dt, p in cal.shapes.get(kind, {}).items():
            r = (op_kinds == kind) & (dts == dt)
            if (not fields or any(f in p for f in fields)) and r.any():
                out.append((kind, p, r))
    return out


def gemm_kernels(cal: Calibration, names=None) -> list[tuple[str, dict]]:
    """The kernel entries that are GEMM shape tables of their own (``eta_max``; a grouped GEMM): their
    ``streamed`` is their weights' η, their ``serial`` their non-overlapped share, as a shape table's (only those
    some op names, where ``names``, the ops' kernels, is given)."""
    present = None if names is None else set(names.tolist())
    return [(name, p) for name, p in (cal.kernel or {}).items()
            if name and "eta_max" in p and (present is None or name in present)]


def split_kind(cal: Calibration, names: np.ndarray, kind: str, lead: tuple) -> np.ndarray:
    """(n_ops, 1…) whether each op's kernel class splits its keys as ``kind`` (its ``split_kv``)."""
    return np.isin(names, [nm for nm, p in cal.kernel.items() if p.get("split_kv") == kind]).reshape(lead)


def at_chunk_head_dims(cal: Calibration, names: np.ndarray, k, lead: tuple) -> np.ndarray:
    """Per op, whether its chunked class decodes it on its chunked launch: at one of the class's
    ``chunk_head_dims`` (K) where it states them (its other head dims decode on another backend), at any head dim
    where it states none; True for every op of another class."""
    out = np.ones(np.broadcast(names.reshape(lead), k).shape, bool)
    for nm, p in cal.kernel.items():
        if "chunk_head_dims" in p:
            out = out & ((names.reshape(lead) != nm) | np.isin(k, p["chunk_head_dims"]))
    return out


def launch_sms(hw: Hardware | None, launch: str) -> int:
    """``hw``'s SM count, which placing ``launch`` on the device needs; a device without one is an error."""
    sms = getattr(hw, "sms", None)
    if sms is None:
        raise IronlawError(f"{getattr(hw, 'name', 'this device')}: {launch} needs the device's SM count ([vector] sms "
                           f"in its hardware file)")
    return sms
