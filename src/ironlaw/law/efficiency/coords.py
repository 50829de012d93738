"""An op as its kernel tiles and launches it: (M, N, K, units), a split-KV launch's ``Split`` of them, the
sequences × KV heads of an attention and the CTAs a launch runs past its first wave of the SMs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.errors import IronlawError
from ...core.gemmshape import gemm_dims, grid_units
from ...core.graph import Columns


@dataclass(frozen=True)
class Split:
    """How a split-KV decode kernel launches each op (``split_blocks``), arrays (n_ops, *cfg): ``blocks`` the blocks
    each sequence is split into (1 where none), ``fold`` the query rows a kernel gives a CTA each of its own (MMHA's
    one CTA per query head: the heads per KV head; 1 where the rows share a tile), ``splits`` whether the launch
    splits a sequence (where a tuned MMHA launch counts its unsplit CTAs in whole waves, ``blocks`` > 1 does not say)."""
    blocks: np.ndarray
    fold: np.ndarray
    splits: np.ndarray | None = None


def grid_coords(cols: Columns, split: Split | None = None) -> tuple:
    """(M, N, K, units) of every op as its kernel tiles and launches it: ``gemmshape.gemm_dims`` and ``grid_units``;
    with ``split`` (``split_blocks``), N the keys per launched block, M the query rows per CTA (÷ ``fold``) and the
    units × the blocks × ``fold`` (the FLOPs, 2 · units · M · N · K, unchanged)."""
    m, n, k = gemm_dims(cols)
    units = grid_units(cols.flops, m, n, k)
    if split is None:
        return m, n, k, units
    return m / split.fold, n / split.blocks, k, units * split.blocks * split.fold


def sequence_heads(cols: Columns, m, n, k) -> np.ndarray:
    """Per op (the shape of ``cols.flops``), an attention's sequences × KV heads: its ``grid_units`` (× 2, QKᵀ and PV)
    over 2; the CTAs a decode launch runs one per sequence and KV head."""
    return np.broadcast_to(grid_units(cols.flops, m, n, k) / 2.0, cols.flops.shape)


def past_first_wave(units: np.ndarray, sms, name: str) -> np.ndarray:
    """The CTAs (one per sequence and KV head) a launch runs past its first wave over ``sms`` SMs (or per op, the CTAs
    of one wave), in whole waves: a class with ``unit_launch`` pays ``unit_s`` on those (``gemmshape.UNIT_LAUNCHES``)."""
    if sms is None or not np.all(np.asarray(sms) > 0):
        raise IronlawError(f"kernel class {name} pays its unit_s in waves over the SMs (unit_launch): the device states "
                           f"no [vector] sms")
    wave = np.asarray(sms, float)
    return wave * np.maximum(np.ceil(units / wave - 1e-9) - 1.0, 0.0)
