"""The seconds a decode or prefill launch's CTAs add per call: the walk over the keys (in one CTA, or in waves
that bound the op's compute η), each sequence and KV head's own work, FlashAttention 2's swap copies and
a prefill's cache writer.
"""
from __future__ import annotations

import numpy as np

from ...core.errors import IronlawError
from ...core.gemmshape import KEY_WALK_FREE, SPLIT_KERNEL_TOKENS, WRITE_CTA_THREADS, gemm_dims, grid_units
from ...core.graph import Columns
from ...machine.calibration import Calibration
from ...machine.hardware import Hardware
from .coords import Split, grid_coords, past_first_wave, sequence_heads
from .shared import _names, classes_with


def key_walk_s(cal: Calibration, cols: Columns) -> np.ndarray | float:
    """Per op, the seconds a decode kernel that walks each sequence's cache in one CTA, unsplit, spends on its keys
    one after another: its kernel class's ``key_s`` × the op's keys (the grid's N, ``gemm_dims``) beyond the first
    ``KEY_WALK_FREE``, which its fixed latency holds; 0 for every other op. Concurrent sequences and heads run beside that walk, not shortening it, so it adds to the op's time
    like a latency. aiconfigurator-core 0.12.0's TensorRT-LLM 1.3.0rc20 generation MLA tables on A100, L40S and RTX
    PRO 6000: at batch 1 the time is the same from 1 to 128 heads and grows as the cached tokens (L40S: 1.28 ms at 16,383
    tokens, 5.10 ms at 65,535, 78 ns per key), far under any bandwidth (docs/accuracy.md)."""
    names = _names(cols, "kernels")
    own = [(name, float(p["key_s"])) for name, p in classes_with(cal, names, "key_s") if "key_ctas" not in p]
    if not own:
        return 0.0
    n = gemm_dims(cols)[1]
    out = np.zeros(cols.flops.shape)
    for name, key_s in own:
        r = names == name
        out[r] = key_s * np.maximum(n[r] - KEY_WALK_FREE, 0.0)
    return out


def unit_launch_s(cal: Calibration, cols: Columns, sms: int | None = None,
                  split: Split | None = None) -> np.ndarray | float:
    """Per op, the seconds a decode kernel class's launch adds per sequence and KV head (``unit_s``, the grid's
    units over QKᵀ and PV, halved): each CTA's own work whatever its keys (the query loaded, the page table read, the
    output written), which the device runs its SMs' worth at a time, so that it adds like a latency growing with the
    batch; 0 for every other op. aiconfigurator-core 0.12.0's vLLM 0.24.0 and SGLang 0.5.14 generation tables at one
    cached token: 11-37 ns per sequence and KV head at batch 2048 on H100, B200, L40S and RTX PRO 6000, far above
    their bytes' time (``gemmshape.UNIT_S_MAX``). A class with ``unit_launch = "waves"`` pays it on the units past the
    first wave of ``sms`` SMs, in whole waves (``past_first_wave``); with "split_waves", in waves of ``sms`` CTAs up to
    ``SPLIT_KERNEL_TOKENS`` tokens a call and of twice that beyond (``split_wave_ctas``). A launch of one CTA per query
    head (``split``'s ``fold``, ``split_blocks``) pays it per sequence and query head."""
    names = _names(cols, "kernels")
    own = [(name, float(p["unit_s"]), p.get("unit_launch")) for name, p in classes_with(cal, names, "unit_s")]
    if not own:
        return 0.0
    m, n, k = gemm_dims(cols)
    units = sequence_heads(cols, m, n, k) * (1.0 if split is None else np.broadcast_to(split.fold, cols.flops.shape))
    out = np.zeros(cols.flops.shape)
    for name, unit_s, launch in own:
        r = names == name
        wave = sms if launch != "split_waves" else split_wave_ctas(cols, sms, name)[r]
        out[r] = unit_s * (units[r] if launch is None else past_first_wave(units[r], wave, name))
    return out


def split_wave_ctas(cols: Columns, sms: int | None, name: str) -> np.ndarray:
    """Per op, the CTAs one wave of vLLM's FlashAttention 3 decode runs (``unit_launch = "split_waves"``): ``sms``
    where its tokens (a decode's, one per sequence: the tokens it writes, ``op.attrs["cache_writes"]``) are at most
    ``SPLIT_KERNEL_TOKENS`` (FA3's split kernel), twice that beyond (its plain kernel; ``gemmshape.UNIT_LAUNCHES``)."""
    if not sms or cols.cache_writes is None:
        raise IronlawError(f"kernel class {name} pays its unit_s in FlashAttention 3's waves (unit_launch = "
                           f"split_waves): the op states no tokens (cache_writes) or the device no [vector] sms")
    tokens = np.broadcast_to(cols.cache_writes, cols.flops.shape)
    return np.where(tokens <= SPLIT_KERNEL_TOKENS + 1e-9, float(sms), 2.0 * float(sms))


def swap_copy_s(cal: Calibration, cols: Columns) -> np.ndarray | float:
    """Per op of a decode class that states ``swap_s``, the seconds FlashAttention 2's grouped-query swap adds: at one
    query token with more query heads than KV heads it runs each sequence's head group as the rows of one query
    (``seqlenq_ngroups_swapped``), and the query's reshape into those rows and the output's back are copies, two
    launches of their own, wherever the call holds more than one sequence and more than one KV head (with either at 1
    the reshape is a view; ``gemmshape.SWAP_S_MAX``). The sequences are the tokens a decode writes to the cache
    (``op.attrs["cache_writes"]``, one each), its KV heads its grid units (sequences × KV heads, ``grid_units``) over
    them, its query rows per KV head its M; 0 for every other op, and for an op that states no sequences."""
    names = _names(cols, "kernels")
    own = [(name, float(p["swap_s"])) for name, p in classes_with(cal, names, "swap_s")]
    if not own or cols.cache_writes is None:
        return 0.0
    m, n, k = gemm_dims(cols)
    units = sequence_heads(cols, m, n, k)
    sequences = np.broadcast_to(cols.cache_writes, cols.flops.shape)
    rows = np.broadcast_to(m, cols.flops.shape)
    swapped = (sequences > 1.5) & (units > 1.5 * sequences) & (rows > 1.5)
    out = np.zeros(cols.flops.shape)
    for name, swap_s in own:
        r = names == name
        out[r] = np.where(swapped[r], swap_s, 0.0)
    return out


def cache_write_s(cal: Calibration, cols: Columns, sms: int | None) -> np.ndarray | float:
    """Per op of a prefill class that states ``write_s``, the seconds its cache writer adds: one CTA per token it
    writes (``op.attrs["cache_writes"]``), each of min(KV heads · head dim, ``WRITE_CTA_THREADS``) threads, run its
    SMs' worth at a time: write_s · tokens · threads / ``sms`` (``gemmshape.WRITE_S_MAX``); 0 for every other op.
    The KV heads · head dim a token writes are the op's ``cache_write_width`` (on its GPU) where it states one, else
    units · M · K / (2 · tokens), the units (``grid_units``: sequences × KV heads, × 2 for QKᵀ and PV) as the op is
    split over its GPUs: one query head per KV head, where M is a sequence's tokens."""
    names = _names(cols, "kernels")
    own = [(name, float(p["write_s"])) for name, p in classes_with(cal, names, "write_s")]
    if not own or cols.cache_writes is None:
        return 0.0
    if not sms:
        raise IronlawError(f"kernel class {own[0][0]} writes the cache one CTA per token over the SMs (write_s): the "
                           f"device states no [vector] sms")
    m, n, k = gemm_dims(cols)
    units = np.broadcast_to(grid_units(cols.flops, m, n, k), cols.flops.shape)
    tokens = np.broadcast_to(cols.cache_writes, cols.flops.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_token = np.where(tokens > 0, units * m * k / (2.0 * tokens), 0.0)
    if cols.cache_write_width is not None:
        width = np.broadcast_to(cols.cache_write_width, cols.flops.shape)
        per_token = np.where(width > 0, width, per_token)
    out = np.zeros(cols.flops.shape)
    for name, write_s in own:
        r = names == name
        out[r] = write_s * tokens[r] * np.minimum(per_token[r], WRITE_CTA_THREADS) / float(sms)
    return out


def walk_s(cal: Calibration, cols: Columns, sms: int | None) -> np.ndarray | float:
    """Per op of a walking class in waves (``key_ctas``, ``gemmshape.SHAPE_FIELDS``), its CTAs' walk: ceil(units ·
    key_ctas / ``sms``) waves, each of cta_s + key_s · (keys − ``KEY_WALK_FREE``) (units and keys the op's grid
    units and N, ``grid_coords``); 0 for every other op."""
    names = _names(cols, "kernels")
    own = classes_with(cal, names, "key_ctas")
    if not own:
        return 0.0
    if not sms:
        raise IronlawError(f"kernel class {own[0][0]} walks its keys in waves over the SMs (key_ctas): the device "
                           f"states no [vector] sms")
    _, n, _, units = grid_coords(cols)
    out = np.zeros(cols.flops.shape)
    for name, p in own:
        r = names == name
        waves = np.ceil(units[r] * float(p["key_ctas"]) / float(sms))
        out[r] = waves * (float(p.get("cta_s", 0.0)) + float(p["key_s"]) * np.maximum(n[r] - KEY_WALK_FREE, 0.0))
    return out


def walk_eta(cal: Calibration, cols: Columns, hw: Hardware) -> np.ndarray | float:
    """Per op, the compute η at which its FLOPs take its walk (``walk_s``): FLOPs / (peak · walk), so that the
    law's compute term is never shorter than the walk its CTAs take one key after another, which overlaps the
    op's data as its compute does, at most 1; infinite (no bound) for an op that does not walk in waves, whose compute
    η (``compute_eta``, at most 1 but for a kernel that computes in a faster dtype than the op's, ``with_variants``)
    stands."""
    walk = walk_s(cal, cols, getattr(hw, "sms", None))
    if np.ndim(walk) == 0:
        return np.inf
    lead = (len(cols.kind_idx),) + (1,) * len(cols.cfg_shape)
    walks = np.any(walk > 0, axis=tuple(range(1, walk.ndim))) if walk.ndim > 1 else walk > 0
    peak = np.array([hw.peak(dt) if w else 1.0 for dt, w in zip(cols.dtypes, walks)]).reshape(lead)
    with np.errstate(divide="ignore", invalid="ignore"):
        eta = np.where(walk > 0, cols.flops / (peak * walk), np.inf)
    return np.where(walk > 0, np.minimum(eta, 1.0), np.inf)
