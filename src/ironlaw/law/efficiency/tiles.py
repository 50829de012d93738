"""A launch's query tiles and CTAs in waves of the SMs: the waves of a query-tiled context class and of a chunked
or FA2 launch (divided into η), and the seconds a context class's CTAs past the first wave (its tile cost, one term
however its table states it) and FlashInfer's prefill plan add per call.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.errors import IronlawError
from ...core.gemmshape import gemm_dims, grid_units
from ...core.graph import Columns
from ...core.querytiles import causal_tile_share, wave_factor
from ...core.splitkv import FA2_SPLIT_BLOCK_M, FA3_SM8X_BLOCK_M, prefill_plan_splits, sm_wave_factor
from ...machine.calibration import Calibration
from ...machine.hardware import Hardware
from .coords import Split, grid_coords, past_first_wave
from .shared import at_chunk_head_dims, classes_with, launch_sms, op_names, split_kind


def query_waves(cal: Calibration, cols: Columns, hw: Hardware | None) -> np.ndarray | float:
    """Per op of a context class that tiles each query head's rows (``query_tiles``: [[head dim, BLOCK_M, CTAs per
    SM], …], ``gemmshape.SHAPE_FIELDS``) at its head dim (K), the waves of its launch over their balanced time
    (``querytiles.wave_factor``, ≥ 1), which the law divides both η by as it does the grid's factor; 1 for every other
    op. A causal pass's query rows s = 2N − 1 (N the keys per query, ``gemm_dims``), at most M; the CTAs per tile the
    sequences × query heads, units / 2 × M / s. Such an op on a device without an SM count is an error."""
    sms = getattr(hw, "sms", None)
    launch = _tiled_launch(cal, cols, sms, ("query_tiles",), "launches its query tiles in waves (query_tiles)",
                           getattr(hw, "name", "the device"))
    if launch is None:
        return 1.0
    names, own, (m, n, k, units) = launch
    rows = np.minimum(2.0 * n - 1.0, m)
    out = np.ones(cols.flops.shape)
    for name, p in own:
        for dim, block_m, slots in p["query_tiles"]:
            r = (names.reshape((-1,) + (1,) * len(cols.cfg_shape)) == name) & (k == float(dim))
            if np.any(r):
                per_tile = units[r] / 2.0 * m[r] / np.maximum(rows[r], 1.0)
                out[r] = wave_factor(rows[r], per_tile, float(block_m), float(sms) * slots)
    return out


def causal_tiles(cal: Calibration, cols: Columns) -> np.ndarray | float:
    """Per op of a context class that names its causal pass's key blocks (``causal_blocks``: [[head dim, BLOCK_N], …]
    beside its ``query_tiles``' BLOCK_M) at one of their head dims (K), the pairs its whole tiles compute over the
    pairs the op counts (``querytiles.causal_tile_share`` of its query rows per head, s = 2N − 1 at most M, as
    ``query_waves`` counts them), which the law divides the op's compute η by; 1 for every other op."""
    if not cal.kernel or cols.kernels is None:
        return 1.0
    names = op_names(cols, "kernels")
    own = classes_with(cal, names, "causal_blocks")
    if not own:
        return 1.0
    m, n, k, _ = (np.broadcast_to(x, cols.flops.shape) for x in grid_coords(cols))
    rows = np.minimum(2.0 * n - 1.0, m)
    out = np.ones(cols.flops.shape)
    for name, p in own:
        tile_rows = {dim: block_m for dim, block_m, _ in p["query_tiles"]}
        for dim, block_n in p["causal_blocks"]:
            r = (names.reshape((-1,) + (1,) * len(cols.cfg_shape)) == name) & (k == float(dim))
            if np.any(r):
                out[r] = causal_tile_share(rows[r], tile_rows[dim], block_n)
    return out


def _tiled_launch(cal: Calibration, cols: Columns, sms: int | None, fields: tuple, pays: str,
                  device: str = "the device") -> tuple | None:
    """For the terms of a context class's CTAs over the SMs (its query tiles' waves, its tile cost, FlashInfer's
    plan): the ops' kernel names, the classes that state one of ``fields`` and that an op names (with their tables),
    and every op's (M, N, K, units), ``grid_coords``; None where no op's class states one. Such a class on a device
    without an SM count is an error (``pays``: what it pays over the SMs)."""
    if not cal.kernel or cols.kernels is None:
        return None
    names = op_names(cols, "kernels")
    own = classes_with(cal, names, *fields)
    if not own:
        return None
    if not sms:
        raise IronlawError(f"kernel class {own[0][0]} {pays} over the SMs: {device} states no [vector] sms")
    return names, own, tuple(np.broadcast_to(x, cols.flops.shape) for x in grid_coords(cols))


@dataclass(frozen=True)
class TileCost:
    """What a context class's CTAs past the first wave of the SMs cost at one head dim (``tile_costs``): ``seconds``
    per ``per_ctas`` of them (a wave's, or one)."""
    head_dim: float
    rows: float          # query rows per CTA, one CTA per sequence, query head and tile of them; 0: one CTA per
                         # sequence and query head whatever its rows
    wave_ctas: float     # the CTAs one wave runs: CTAs per SM × SMs
    seconds: float       # the seconds ``per_ctas`` CTAs past the first wave add
    per_ctas: float      # the CTAs ``seconds`` are per: a wave's (``tile_s``) or one (``tile_head_dim_s``)


def tile_costs(p: dict, sms: int) -> list[TileCost]:
    """A class's ``TileCost`` per head dim on ``sms`` SMs, as its table states them: ``tile_s``, seconds per wave of
    its ``query_tiles`` ([head dim, BLOCK_M, CTAs per SM]: a query-tiled class, whose waves its η holds too,
    ``query_waves``), and ``tile_head_dim_s``, seconds per CTA at each of ``tile_head_dims`` with its ``tile_rows``
    (one CTA an SM a wave, no waves in its η: the head dims of one class run different backends)."""
    out = []
    if p.get("tile_s"):
        out += [TileCost(float(dim), float(block_m), float(sms) * slots, float(p["tile_s"]), float(sms) * slots)
                for dim, block_m, slots in p["query_tiles"]]
    if p.get("tile_head_dims"):
        out += [TileCost(float(dim), float(rows), float(sms), float(secs), 1.0)
                for dim, secs, rows in zip(p["tile_head_dims"], p["tile_head_dim_s"], p["tile_rows"])]
    return out


def tile_cost_s(cal: Calibration, cols: Columns, sms: int | None) -> np.ndarray | float:
    """Per op of a context class that states a tile cost (``tile_costs``), at one of its head dims (K), the seconds its
    launch's waves past the first add whatever the keys its CTAs walk (``gemmshape``, tile_s and tile_head_dim_s): its
    ``seconds`` per ``per_ctas`` of the CTAs past the first wave, in whole waves (``past_first_wave``), its CTAs one per
    sequence, query head and tile of ``rows`` query rows (one per sequence and query head at rows 0), a causal pass's
    rows s = 2N − 1 (N the keys per query) at most M, the sequences × query heads units / 2 × M / s (``query_waves``'
    count); 0 at another head dim and for every other op. Each CTA loads its query tile and its first key and value
    tiles and runs one tile's products however few of its rows and keys are real (SGLang's Triton prefill masks, not
    skips, them: python/sglang/srt/layers/attention/triton_ops/extend_attention.py, ``_fwd_kernel``), so calls whose
    keys fit one tile take time in their CTAs, not in their FLOPs (docs/accuracy.md, "SGLang's Blackwell FP8-cache
    prefill: a cost per CTA"). A class that states ``tile_swap`` runs a call of one query row per sequence as
    FlashAttention 2's grouped-query swap: each sequence and KV head's M query rows (its heads per KV head) in
    ⌈M / rows⌉ CTAs (flash_api.cpp, ``mha_varlen_fwd``, ``seqlenq_ngroups_swapped``)."""
    launch = _tiled_launch(cal, cols, sms, ("tile_s", "tile_head_dims"), "pays its tile cost per wave of its CTAs "
                           "(tile_s, tile_head_dim_s)")
    if launch is None:
        return 0.0
    names, own, (m, n, k, units) = launch
    rows = np.maximum(np.minimum(2.0 * n - 1.0, m), 1.0)
    heads = units / 2.0 * m / rows
    groups = swap_groups(cols, heads, k)
    out = np.zeros(cols.flops.shape)
    for name, p in own:
        r = (names.reshape((-1,) + (1,) * len(cols.cfg_shape)) == name) & np.ones(cols.flops.shape, bool)
        for c in tile_costs(p, sms):
            at = r & (k == c.head_dim)
            ctas = heads[at] * (np.ceil(rows[at] / c.rows) if c.rows else 1.0)
            if p.get("tile_swap") and c.rows and groups is not None:
                ctas = np.where(rows[at] <= 1.0, heads[at] / groups[at] * np.ceil(groups[at] / c.rows - 1e-9), ctas)
            out[at] += c.seconds * past_first_wave(ctas, c.wave_ctas, name) / c.per_ctas
    return out


def swap_groups(cols: Columns, heads, k) -> np.ndarray | None:
    """Per op, its query heads per KV head at one query token a sequence, where FlashAttention 2's grouped-query swap
    takes them as one sequence and KV head's query rows: its sequences × query heads ``heads`` over its sequences × KV
    heads, the tokens it writes to the cache (``op.attrs["cache_writes"]``, one a sequence) × its KV heads (their
    ``cache_write_width`` over the head dim K); at least 1. None where the ops state no cache writes."""
    if cols.cache_writes is None or cols.cache_write_width is None:
        return None
    kv = np.broadcast_to(cols.cache_writes * cols.cache_write_width, heads.shape) / np.maximum(k, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(kv > 0, np.maximum(heads / np.maximum(kv, 1e-30), 1.0), 1.0)


def plan_split_s(cal: Calibration, cols: Columns, sms: int | None, field: str = "plan_split_s") -> np.ndarray | float:
    """Per op of a prefill class that states ``plan_split_s`` (``field``; or ``plan_merge_s``, per query row and head
    merged), at one of its ``plan_head_dims`` (K), the seconds FlashInfer's prefill plan adds where it splits the keys
    (``splitkv.prefill_plan_splits``: its query tiles fill at most half its grid): the partial outputs written and
    merged, a call's and its query rows × heads'; 0 for every other op. Its sequences × KV heads are the op's units
    over 2, its packed rows M (its query rows × heads those × M), its tokens a windowed prefill's whole sequence
    (``op.attrs["history"]``) or else a causal pass's 2N − 1."""
    launch = _tiled_launch(cal, cols, sms, (field,), f"pays {field} where FlashInfer's plan splits")
    if launch is None:
        return 0.0
    names, own, (m, n, k, units) = launch
    tokens = np.broadcast_to(cols.history, cols.flops.shape) if cols.history is not None else 2.0 * n - 1.0
    tokens = np.where(np.isfinite(tokens) & (tokens > 0), tokens, 2.0 * n - 1.0)
    splits = prefill_plan_splits(units / 2.0, m, tokens, k, sms)
    out = np.zeros(cols.flops.shape)
    for name, p in own:
        r = (names.reshape((-1,) + (1,) * len(cols.cfg_shape)) == name) & np.isin(k, np.asarray(p["plan_head_dims"],
                                                                                               float))
        per = 1.0 if field == "plan_split_s" else units[r] / 2.0 * m[r]
        out[r] = np.where(splits[r], float(p[field]) * per, 0.0)
    return out


def tile_share(p: dict, n, k) -> np.ndarray | float:
    """The share of a class's latency_head_dim_s an op of N keys at head dim K pays where its kernel splits the
    sequence's KV tiles over CTAs (``latency_tile_keys``, ``latency_tile_power``): ⌈N · K / tile⌉^(−power); 1 for a
    class that states no tile."""
    if "latency_tile_keys" not in p:
        return 1.0
    tiles = np.maximum(np.ceil(np.asarray(n, float) * np.asarray(k, float) / float(p["latency_tile_keys"]) - 1e-9), 1.0)
    return tiles ** -float(p["latency_tile_power"])


def chunk_waves(cal: Calibration, cols: Columns, hw: Hardware | None, split: Split | None) -> np.ndarray | float:
    """Per op of a chunked class planned as a prefill (``chunk_plan``) or on FlashAttention 2's split (``split_kv =
    "fa2"``, or FlashAttention 3's on SM 8.x, "fa3_sm8x"), its launch's whole waves of the SMs over their balanced time
    (``splitkv.sm_wave_factor`` of its sequences × KV heads × query tiles (FA2's blocks of 64 rows, FA3's of 128) ×
    splits, ``split``), which the law divides both η by as it does the grid's factor, at the class's
    ``chunk_head_dims`` only where it states them (as
    ``splits.chunk_split``); 1 for every other op."""
    if not cal.kernel or not any(p.get("chunk_plan") or p.get("split_kv") in ("fa2", "fa3_sm8x")
                                 for p in cal.kernel.values()):
        return 1.0
    names = op_names(cols, "kernels")
    lead = (-1,) + (1,) * len(cols.cfg_shape)
    fa3 = split_kind(cal, names, "fa3_sm8x", lead)
    fa2 = split_kind(cal, names, "fa2", lead) | fa3
    m, n, k = gemm_dims(cols)
    planned = np.isin(names, [nm for nm, p in cal.kernel.items() if p.get("chunk_plan") == "prefill"]).reshape(lead)
    planned = (planned & at_chunk_head_dims(cal, names, k, lead)) | fa2    # its other head dims: another backend
    if not np.any(planned):
        return 1.0
    sms = launch_sms(hw, "a chunked decode attention's split-KV launch")
    units = np.broadcast_to(grid_units(cols.flops, m, n, k), cols.flops.shape)
    blocks = np.where(fa2, np.ceil(np.maximum(m, 1.0) / np.where(fa3, FA3_SM8X_BLOCK_M, FA2_SPLIT_BLOCK_M)), 1.0)
    ctas = units / 2.0 * blocks * (1.0 if split is None else split.blocks * split.fold)
    return np.broadcast_to(np.where(planned, sm_wave_factor(ctas, sms), 1.0), cols.flops.shape)
