"""Per op, what a calibration's kernel classes say: the ops' kernel (or op) names, the classes that carry a
field, a field per op, the kernel entries that are GEMM shape tables of their own, a class's split kind and
the SM count a launch needs.
"""
from __future__ import annotations

import numpy as np

from ...core.errors import IronlawError
from ...core.graph import Columns
from ...machine.calibration import Calibration
from ...machine.hardware import Hardware


def _names(cols: Columns, attr: str = "names") -> np.ndarray:
    names = getattr(cols, attr, None)
    return np.array(names if names is not None else [""] * len(cols.kind_idx), dtype=object)


def classes_with(cal: Calibration, names: np.ndarray, *fields: str) -> list[tuple[str, dict]]:
    """The kernel classes that carry one of ``fields`` (non-zero) and that an op names (``names``: the ops'
    kernels), with their tables."""
    return [(name, p) for name, p in (cal.kernel or {}).items()
            if name and any(p.get(f) for f in fields) and (names == name).any()]


def _per_op(cal: Calibration, names: np.ndarray, field: str, default: float, lead: tuple) -> np.ndarray:
    """(n_ops, 1…) each op's kernel class's ``field``, ``default`` where its class has none."""
    return np.array([float(cal.kernel.get(nm, {}).get(field, default)) if nm else default
                     for nm in names]).reshape(lead)


def _gemm_kernels(cal: Calibration, names=None) -> list[tuple[str, dict]]:
    """The kernel entries that are GEMM shape tables of their own (``eta_max``; a grouped GEMM): their
    ``streamed`` is their weights' η, their ``serial`` their non-overlapped share, as a shape table's (only those
    some op names, where ``names``, the ops' kernels, is given)."""
    present = None if names is None else set(names.tolist())
    return [(name, p) for name, p in (cal.kernel or {}).items()
            if name and "eta_max" in p and (present is None or name in present)]


def _split_kind(cal: Calibration, names: np.ndarray, kind: str, lead: tuple) -> np.ndarray:
    """(n_ops, 1…) whether each op's kernel class splits its keys as ``kind`` (its ``split_kv``)."""
    return np.isin(names, [nm for nm, p in cal.kernel.items() if p.get("split_kv") == kind]).reshape(lead)


def _launch_sms(hw: Hardware | None, launch: str) -> int:
    """``hw``'s SM count, which placing ``launch`` on the device needs; a device without one is an error."""
    sms = getattr(hw, "sms", None)
    if sms is None:
        raise IronlawError(f"{getattr(hw, 'name', 'this device')}: {launch} needs the device's SM count ([vector] sms "
                           f"in its hardware file)")
    return sms
