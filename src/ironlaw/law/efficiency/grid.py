"""A kernel class's or GEMM dtype's grid: the measured time over its shape model's at the op's coordinates as its
kernel reads them (a whole sequence's keys, a windowed decode's whole key blocks), and the keys and bytes
those key blocks add.
"""
from __future__ import annotations

import numpy as np

from ...core.gemmshape import gemm_dims, grid_factor
from ...core.graph import Columns
from ...core.keyblocks import KEY_BLOCK_KERNELS, fa2_window_keys, fa3_block_n, window_blocks
from ...machine.calibration import Calibration
from .coords import Split, grid_coords
from .shared import gemm_kernels, op_names, shape_tables


def kernel_grid(cal: Calibration, cols: Columns, split=None) -> np.ndarray | float:
    """Per op, the measured kernel's time over its shape model's (``gemmshape.grid_factor``) where its table — a
    GEMM dtype's, or its kernel class's own or the one it names in ``grid_of`` — has a grid; 1 elsewhere, at the
    op's M, N, K and units as its kernel launches them (``grid_coords``, ``split``: a windowed decode's split-KV
    launch, ``split_blocks``). The law divides both of the op's η by it, each held at 1 (``within_peak``)."""
    names = op_names(cols, "kernels")
    mine = gemm_kernels(cal, names)
    tables = shape_tables(cal, cols, "grid_log")
    kernels = [(name, cal.kernel[p["grid_of"]] if "grid_of" in p else p) for name, p in mine
               if "grid_log" in p or "grid_of" in p]
    if not tables and not kernels:
        return 1.0
    own = np.isin(names, [name for name, _ in mine])
    rows = [(r & ~own, p) for _, p, r in tables] + [(names == nm, p) for nm, p in kernels]
    rows = [(r, p) for r, p in rows if r.any()]          # (n_ops,) masks: the ops each grid times
    if not rows:
        return 1.0
    out = np.ones(cols.flops.shape)
    m, n, k, units = kernel_coords(cal, cols, split)
    for r, p in rows:
        out[r] = grid_factor(p, m[r], n[r], k[r], units[r])
    return out


def kernel_coords(cal: Calibration, cols: Columns, split: Split | None = None) -> tuple:
    """``grid_coords``, but N of each op of a kernel class whose grid reads the whole sequence's keys
    (``grid_keys = "sequence"``, ``gemmshape.GRID_KEYS``) and that states it (``op.attrs['history']``, a windowed
    prefill's s tokens): the keys per query of a causal pass over it, (s + 1) / 2, at least the window's. Such a
    kernel (SGLang's Triton prefill, ``triton_ops/extend_attention.py``) loops over every key block up to each query
    tile and only masks those outside the window, so its time follows the sequence, which the window's keys do not
    show."""
    m, n, k, units = grid_coords(cols, split)
    if cols.history is None or not cal.kernel:
        return m, n, k, units
    names = op_names(cols, "kernels")
    lead = (-1,) + (1,) * len(cols.cfg_shape)
    n = key_block_coords(cal, cols, names, n, k)
    walks = np.isin(names, [nm for nm, p in cal.kernel.items() if p.get("grid_keys") == "sequence"]).reshape(lead)
    history = np.broadcast_to(np.where(walks, cols.history, 0.0), np.shape(n))
    if not np.any(history > 0):
        return m, n, k, units
    return m, np.where(history > 0, np.maximum(n, (history + 1.0) / 2.0), n), k, units


def key_block_coords(cal: Calibration, cols: Columns, names: np.ndarray, n, k):
    """The grid's N of each windowed decode op (``op.attrs['history']``) of a kernel class that names its kernel's key
    blocks (``key_blocks = "fa3"``, ``core.keyblocks``): the keys of the whole blocks its window touches, which that
    kernel computes in full; ``n`` as given for every other op."""
    keys, tiled = window_key_blocks(cal, cols, names, n, k)
    return np.where(tiled, keys, n)


def key_block_share(cal: Calibration, cols: Columns) -> tuple:
    """(keys, bytes) per op: the keys a windowed decode of a class naming its kernel's ``key_blocks`` computes (whole
    blocks, ``key_block_coords``) over the window's keys the op states, and the bytes it moves over the op's, its
    KV cache read in those blocks; (1, 1) for every other op. The law divides the op's compute η by the first and
    its data η by the second: the kernel computes and reads the blocks' keys, whichever of them the window masks."""
    if cols.history is None or not cal.kernel:
        return 1.0, 1.0
    names = op_names(cols, "kernels")
    _, n, k = gemm_dims(cols)
    read, tiled = window_key_blocks(cal, cols, names, n, k)
    if not np.any(tiled):
        return 1.0, 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        keys = np.where(tiled, read / np.maximum(n, 1.0), 1.0)
        zero = np.zeros(cols.flops.shape)
        total = sum(cols.bytes.values(), zero)
        cache = cols.bytes.get("kv_cache", zero)
        data = np.where(total > 0, (total + cache * (keys - 1.0)) / total, 1.0)
    return keys, data


def window_key_blocks(cal: Calibration, cols: Columns, names: np.ndarray, n, k) -> tuple:
    """(keys, tiled) per op, shaped as ``n``: the keys a windowed decode (``op.attrs['history']``) of a class naming its
    kernel's ``key_blocks`` computes — FlashAttention 3's whole blocks its window touches (``keyblocks.window_blocks``
    × ``fa3_block_n`` at the op's head dim ``k``), FlashAttention 2's keys from the block of the window's first key on
    (``keyblocks.fa2_window_keys``) — and whether it is such an op; ``n`` and False for every other op."""
    shape = np.shape(n)
    kinds = {kind: np.isin(names, [nm for nm, p in cal.kernel.items() if p.get("key_blocks") == kind])
             for kind in KEY_BLOCK_KERNELS}
    if cols.history is None or not any(np.any(v) for v in kinds.values()):
        return np.broadcast_to(n, shape), np.zeros(shape, bool)
    history = np.broadcast_to(cols.history, shape)
    k = np.broadcast_to(k, shape)
    lead = (-1,) + (1,) * len(cols.cfg_shape)
    fa3, fa2 = (np.broadcast_to(kinds[kind].reshape(lead), shape) & (history > 0) for kind in ("fa3", "fa2"))
    keys = np.where(fa3, window_blocks(history, n, fa3_block_n(k)) * fa3_block_n(k), n)
    keys = np.where(fa2, fa2_window_keys(history, n, k), keys)
    return keys, fa3 | fa2
