"""The seconds a call adds whatever its η: the fixed latency per kind, shape table, kernel and op, and the
sum of a kernel class's per-call terms (``CLASS_LATENCY_TERMS``).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...core.gemmshape import gemm_dims
from ...core.graph import Columns, KINDS
from ...machine.calibration import Calibration
from .coords import Split, sequence_heads
from .eta import scoped
from .framework import framework_terms
from .launches import cache_write_s, key_walk_s, swap_copy_s, unit_launch_s
from .moe import expert_setup_s, token_setup_s, touched_setup_s
from .shared import classes_with, gemm_kernels, op_names, shape_tables
from .splits import split_reduce_s
from .tiles import plan_split_s, tile_cost_s, tile_share


def head_dim_latency_s(cal: Calibration, cols: Columns) -> np.ndarray | float:
    """Per op, the seconds its kernel class's call (a decode's; a prefill's where the fitter keys it,
    ``kernelfit.rules.HEAD_DIM_LATENCY_CLASSES``) adds to the class's fixed latency at the op's head dim (its
    K, ``gemm_dims``): ``latency_head_dim_s`` at the matching one of ``latency_head_dims``, 0 at another head dim and
    for every other op. The call at that head dim runs launches of its own (another backend, attention sinks, a
    value head of another width), every one of its calls paying them (``gemmshape.LATENCY_HEAD_DIM_S_MAX``). With
    ``latency_groups`` each entry holds at its head dim and its query rows per KV head (the op's M) together: one CTA's
    tile of G query rows, which at one wave sets the launch's time (``gemmshape``, latency_groups); with
    ``latency_units_max`` and ``latency_keys_max``, only at that many sequences × KV heads and keys per query or
    fewer (a launch of its own there); with ``latency_tile_keys``, at ⌈keys · head dim / latency_tile_keys⌉^(−
    ``latency_tile_power``) of itself, the CTAs its kernel splits a sequence's KV tiles over (``gemmshape``)."""
    names = op_names(cols, "kernels")
    own = [(name, p) for name, p in classes_with(cal, names, "latency_head_dims")]
    if not own:
        return 0.0
    m, n, k = gemm_dims(cols)
    units = sequence_heads(cols, m, n, k)
    m, n, k = (np.broadcast_to(x, cols.flops.shape) for x in (m, n, k))
    out = np.zeros(cols.flops.shape)
    for name, p in own:
        r = names == name
        groups = p.get("latency_groups") or [None] * len(p["latency_head_dims"])
        few = (units[r] <= float(p.get("latency_units_max", np.inf)) * (1.0 + 1e-9)) \
            & (n[r] <= float(p.get("latency_keys_max", np.inf)) * (1.0 + 1e-9))
        for dim, group, secs in zip(p["latency_head_dims"], groups, p["latency_head_dim_s"]):
            at = (k[r] == float(dim)) & (True if group is None else np.isclose(m[r], float(group), rtol=1e-3)) & few
            out[r] = np.where(at, float(secs) * tile_share(p, n[r], k[r]), out[r])
    return out


# The seconds a kernel class adds to each call of its ops whatever their η, one small function per class field (each
# ``(cal, cols, sms, split)`` -> seconds per op, 0 for an op whose class states no such field): the law's L_lat beyond
# an op's fixed latency (``op_latency``). ``evaluate`` prices an op with their sum (``class_latency_s``), and
# ``measure/calibrate/kernelfit`` fits a class against the same sum. A new per-call cost is one more entry here.
CLASS_LATENCY_TERMS: dict[str, Callable] = {
    "key_s": lambda cal, cols, sms, split: key_walk_s(cal, cols),
    "split_s": lambda cal, cols, sms, split: split_reduce_s(cal, cols, split),
    "expert_s": lambda cal, cols, sms, split: expert_setup_s(cal, cols),
    "touched_s": lambda cal, cols, sms, split: touched_setup_s(cal, cols),
    "token_s": lambda cal, cols, sms, split: token_setup_s(cal, cols),
    "unit_s": lambda cal, cols, sms, split: unit_launch_s(cal, cols, sms, split),
    "head_dim_latency_s": lambda cal, cols, sms, split: head_dim_latency_s(cal, cols),
    "tile_s": lambda cal, cols, sms, split: tile_cost_s(cal, cols, sms),
    "write_s": lambda cal, cols, sms, split: cache_write_s(cal, cols, sms),
    "swap_s": lambda cal, cols, sms, split: swap_copy_s(cal, cols),
    "plan_split_s": lambda cal, cols, sms, split: plan_split_s(cal, cols, sms),
    "plan_merge_s": lambda cal, cols, sms, split: plan_split_s(cal, cols, sms, "plan_merge_s"),
}


def class_latency_s(cal: Calibration, cols: Columns, sms: int | None, split: Split | None) -> np.ndarray | float:
    """Per op, the seconds its kernel class adds to each call whatever its η: the sum of ``CLASS_LATENCY_TERMS``
    (``sms`` the device's SM count, ``split`` the launch's split of the keys, ``split_blocks``)."""
    return sum(term(cal, cols, sms, split) for term in CLASS_LATENCY_TERMS.values())


def op_latency(cal: Calibration, cols: Columns, lat: np.ndarray) -> np.ndarray:
    """Fixed seconds per invocation: the per-kind table ('default' for the rest), a shape table's own
    ``latency_s`` for its kind and dtype (not for ops of a kernel class with a GEMM table of its own: a grouped
    GEMM), then per kernel and op name, plus the framework's seconds per op."""
    table = cal.latency_s
    out = np.array(lat, dtype=float, copy=True)
    if "default" in table:
        out[...] = table["default"]
    kinds = np.array(KINDS)[cols.kind_idx]
    for kind, value in table.items():
        if kind != "default":
            out[kinds == kind] = value
    own = np.isin(op_names(cols, "kernels"), [name for name, _ in gemm_kernels(cal)])   # a kernel's own table
    for _, p, r in shape_tables(cal, cols, "latency_s"):   # a shape table's own latency (a dtype's fixed cost)
        out[r & ~own] = p["latency_s"]
    out = scoped(cal, cols, out, "latency_s")
    return out + framework_terms(cal, cols.frontend)[0]
