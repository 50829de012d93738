"""Capacity: place each storage class of the footprint in the fastest tier that holds it.

Cache tiers are not placement targets (weights are streamed from where they live, once per
pass); the device tier fills first, then host memory, then storage. Classes are placed in
order of how densely they are touched, so what spills first is what is touched least per byte.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.graph import CLASSES, Num
from .hardware import Hardware

PLACEMENT_ORDER = ("activations", "kv_cache", "weights", "gradients", "optimizer", "tables")
assert set(PLACEMENT_ORDER) == set(CLASSES)


@dataclass
class Placement:
    tiers: list[str]                    # names of all tiers of the device, fastest first
    bytes: dict[str, np.ndarray]        # class -> (n_tiers, *cfg) bytes resident in each tier
    fits: np.ndarray                    # (*cfg) bool: everything found a tier
    spilled_bytes: np.ndarray           # (*cfg) bytes beyond the device tier
    spill_tier: np.ndarray              # (*cfg) index of the slowest tier used (or -1)

    def fraction(self, cls: str) -> np.ndarray:
        b = self.bytes[cls]
        total = b.sum(axis=0)
        return np.divide(b, total, out=np.zeros_like(b), where=total > 0)


def place(footprint: dict[str, Num], hw: Hardware, cfg_shape: tuple = ()) -> Placement:
    n = len(hw.memory)
    free = np.array([t.capacity_bytes if t.role != "cache" else 0.0 for t in hw.memory])
    free = free.reshape((n,) + (1,) * len(cfg_shape)) * np.ones((n, *cfg_shape))
    out: dict[str, np.ndarray] = {}
    left_total = np.zeros(cfg_shape)
    for cls in PLACEMENT_ORDER:
        want = np.broadcast_to(np.asarray(footprint.get(cls, 0.0), dtype=float), cfg_shape).copy()
        got = np.zeros((n, *cfg_shape))
        for t in range(n):
            take = np.minimum(want, free[t])
            got[t] = take
            free[t] -= take
            want -= take
        left_total += want
        out[cls] = got
    dev = hw.device_tier
    beyond = sum(b[dev + 1:].sum(axis=0) for b in out.values()) if dev + 1 < n else np.zeros(cfg_shape)
    used = sum(out.values()) > 0                                  # (n, *cfg)
    idx = np.arange(n).reshape((n,) + (1,) * len(cfg_shape))
    spill_tier = np.where(np.asarray(beyond) > 0, np.max(np.where(used, idx, -1), axis=0), -1)
    return Placement([t.name for t in hw.memory], out, left_total <= 0, np.asarray(beyond, dtype=float), spill_tier)
