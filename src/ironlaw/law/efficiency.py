"""How close real kernels come to the peaks, per op: the one evaluated efficiency table of a graph on a device.

``evaluate(cols, hw)`` reads the hardware file's flat defaults (``[efficiency]``: one fraction per op kind,
'other' for the rest, 'memory' for bandwidth; ``[latency] op_s``) and, where the device carries one, its
``[calibration]`` (per kind, op class, kernel and op name; the GEMM and conv shape tables of
``ironlaw.core.gemmshape``; the framework's share) once, and returns ``Terms``: per op, compute η, memory η,
fixed latency, serial share, epilogue share and extra weight bytes. The law reads only that table; the
formulas and the fields are in docs/how-it-models.md.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ..machine.cache import pack_limit_bytes
from ..machine.calibration import SHAPE_KINDS, STREAMED, Calibration
from ..core.gemmshape import (KEY_WALK_FREE, SPLIT_KERNEL_TOKENS, SPLIT_KV, gemm_dims, gemm_eta, gemm_serial, gemv_passes, grid_factor, grid_units,
                              is_gemv, kn_rows, row_factor, row_length, streamed_eta, WRITE_CTA_THREADS,
                              xqa_blocks)
from ..core.errors import IronlawError
from ..core.graph import KINDS, Columns, dtype_bytes
from ..core.keyblocks import KEY_BLOCK_KERNELS, fa2_window_keys, fa3_block_n, window_blocks
from ..core.querytiles import wave_factor
from ..core.splitkv import (FA2_SPLIT_BLOCK_M, FA3_SPLITS_MAX, MMHA_THREADS, blocks_per_sequence, chunks_per_sequence,
                            fa2_splits, fa3_dynamic_splits, in_whole_waves, mmha_blocks_per_sequence,
                            mmha_tokens_per_loop, mmha_tuned_launch, prefill_plan_splits, prefill_query_tiles,
                            sm_wave_factor)
from ..machine.hardware import Hardware


@dataclass(frozen=True)
class Terms:
    """Per op of one graph on one device: what the law divides and adds by (arrays over ops × configurations)."""
    compute_eta: np.ndarray           # (n_ops, *cfg) fraction of the unit's peak each op reaches
    memory_eta: np.ndarray            # (n_ops, 1… | *cfg) fraction of a tier's bandwidth each op's traffic reaches
    memory_eta_base: np.ndarray | None   # the same without the ops' own values (kind, op class, kernel): the
                                         # plain reuse patterns' η (``slow_tier_eta``); None uncalibrated
    latency_s: np.ndarray             # (n_ops, 1…) fixed seconds per invocation (launch / dispatch, framework)
    serial: np.ndarray                # (n_ops, *cfg) share of min(data, compute) not overlapped (0 = overlapped)
    epilogue: np.ndarray              # (n_ops, *cfg) share of the data time stored after the main loop
    vector_eta: float                 # η of the vector unit for an op's added vector work (what-ifs)
    extra_bytes: np.ndarray           # (n_ops, *cfg) device-memory bytes a calibrated CPU GEMM reads beyond
                                      # its weights once (packed copies that spill, GEMV passes and rows)
    vector_overlap: np.ndarray | bool = False   # (n_ops, 1…) whether an op's vector work runs beside its matrix
                                                # work, not after it (``vector_overlap``)


def evaluate(cols: Columns, hw: Hardware, resident=None) -> Terms:
    """The efficiency table of ``cols`` on ``hw``: the flat defaults, refined by ``hw.calibration`` where it
    has one. ``resident`` (1 | n_ops, *cfg): ops whose weights stay in the last cache level (a GEMV's cost
    per stored row applies only to weights read from device memory)."""
    per_kind = np.array([hw.eta(k) for k in KINDS])          # the device, read once
    eta_mem, lat_s, vector_eta, cal = hw.efficiency["memory"], hw.op_latency_s, hw.eta("elementwise"), hw.calibration
    limit = pack_limit_bytes(hw) if cal is not None else None
    lead = (len(cols.kind_idx),) + (1,) * len(cols.cfg_shape)
    shape = cols.flops.shape
    eta_c = per_kind[cols.kind_idx].reshape(lead)
    eta_m, lat = np.full(lead, eta_mem), np.full(lead, lat_s)
    epilogue = epilogue_share(hw.kind, cols)
    if cal is None:
        return Terms(np.broadcast_to(eta_c, shape), eta_m, None, lat, np.zeros(shape), epilogue, vector_eta,
                     np.zeros(shape))
    cols, math = with_variants(cal, cols, hw)
    split = split_blocks(cal, cols, hw)
    grid = kernel_grid(cal, cols, split) * query_waves(cal, cols, hw) * chunk_waves(cal, cols, hw, split)
    eta_walk = with_framework_share(cal, walk_eta(cal, cols, hw), cols.frontend)
    eta_comp = np.minimum(compute_eta(cal, cols, eta_c, grid, split) * math, eta_walk)
    keys_read, bytes_read = key_block_share(cal, cols)
    return Terms(compute_eta=np.broadcast_to(eta_comp / keys_read, shape),
                 memory_eta=memory_eta(cal, cols, eta_m, grid=grid) / bytes_read,
                 memory_eta_base=memory_eta(cal, cols, np.full(lead, eta_mem), own=False, grid=grid) / bytes_read,
                 latency_s=op_latency(cal, cols, lat) + class_latency_s(cal, cols, getattr(hw, "sms", None), split),
                 serial=np.broadcast_to(serial_share(cal, cols), shape),
                 epilogue=epilogue, vector_eta=vector_eta,
                 extra_bytes=np.broadcast_to(extra_weight_bytes(cal, cols, limit, resident), shape),
                 vector_overlap=vector_overlap(cal, cols))


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


def epilogue_share(device_kind: str, cols: Columns) -> np.ndarray:
    """(n_ops, *cfg) share of an op's data time that its kernel spends storing its output after the main
    loop, not overlapped with compute: a GPU GEMM's epilogue (the written bytes' share of its traffic);
    0 elsewhere (CPU GEMMs: see ``serial_share``). A CTA computes its output tile over the K loop, its
    loads pipelined under the MMAs, then stores the tile; with one or two CTAs per SM launched in waves
    the stores of a wave are not hidden. Negligible for a deep K (a 4096-deep projection: ~1%), it is
    most of the time of a batched QKᵀ (K = 128 writing the s² scores)."""
    if not isinstance(device_kind, str):      # a Hardware here would read as a non-GPU: zeros, silently
        raise TypeError(f"epilogue_share takes the device's kind ('gpu', 'cpu' …), got {type(device_kind).__name__}")
    out = np.zeros(cols.flops.shape)
    if device_kind != "gpu" or cols.written is None:
        return out
    rows = np.array(KINDS)[cols.kind_idx] == "matmul"
    total = sum(cols.bytes.values(), np.zeros(cols.flops.shape))
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(total > 0, np.minimum(np.broadcast_to(cols.written, total.shape) / total, 1.0), 0.0)
    out[rows] = share[rows]
    return out


def composed(data_s, compute_s, serial, written_s):
    """An op's overlapped time: its reads overlap its compute but for the ``serial`` share of the shorter
    of the two; the ``written_s`` part of its data time (the epilogue's stores) follows them."""
    read = data_s - written_s
    return np.maximum(read, compute_s) + serial * np.minimum(read, compute_s) + written_s


# ---------------------------------------------------------------- a calibration, per op

def within_peak(eta, grid=1.0) -> np.ndarray:
    """An op's kernel η over its class's grid factor (``kernel_grid``), at most 1: the law's bound. No kernel runs
    above its unit's peak or its tier's bandwidth, so FLOPs / (peak · η) is never under FLOPs / peak and bytes /
    (BW · η) never under bytes / BW, whatever a fitted table (a ``streamed`` at its fit bound above 1) or a grid
    (measured ÷ modelled below 1) says. Applied before the framework's share, which only slows the op further."""
    return np.minimum(eta / grid, 1.0)


def compute_eta(cal: Calibration, cols: Columns, eta: np.ndarray, grid=1.0, split=None) -> np.ndarray:
    """η per op: the GEMM shape model for matmuls of a calibrated dtype, per-kind values otherwise; over the
    kernel grid's factor ``grid`` and at most 1 (``within_peak``), then the framework's share. ``split``
    (``split_blocks``): a split-KV kernel class's shape model sees the keys and query rows per launched CTA."""
    out = np.broadcast_to(eta, cols.flops.shape).astype(float).copy()
    kinds = np.array(KINDS)[cols.kind_idx]
    for kind, value in cal.compute.items():
        out[kinds == kind] = value
    gemm = cal.shapes.get("matmul", {})
    if gemm:
        dts = np.array(cols.dtypes)
        rows = (kinds == "matmul") & np.isin(dts, list(gemm))
        if rows.any():
            m, n, k = gemm_dims(cols)
            kn = kn_rows(cols)
            for dt, p in gemm.items():
                r = rows & (dts == dt)
                if r.any() and "eta_max" in p:        # (a table being fitted may hold only gemv_m yet)
                    out[r] = gemm_eta(p, m[r], n[r], k[r], kn[r])
    out = _shape_eta(cal, cols, out)
    return with_framework_share(cal, within_peak(_scoped(cal, cols, out, "compute", split), grid), cols.frontend)


def kernel_grid(cal: Calibration, cols: Columns, split=None) -> np.ndarray | float:
    """Per op, the measured kernel's time over its shape model's (``gemmshape.grid_factor``) where its table — a
    GEMM dtype's, or its kernel class's own or the one it names in ``grid_of`` — has a grid; 1 elsewhere, at the
    op's M, N, K and units as its kernel launches them (``grid_coords``, ``split``: a windowed decode's split-KV
    launch, ``split_blocks``). The law divides both of the op's η by it, each held at 1 (``within_peak``)."""
    names = _names(cols, "kernels")
    mine = _gemm_kernels(cal, names)
    tables = [(kind, dt, p) for kind in ("matmul",) + SHAPE_KINDS for dt, p in cal.shapes.get(kind, {}).items()
              if "grid_log" in p]
    kernels = [(name, cal.kernel[p["grid_of"]] if "grid_of" in p else p) for name, p in mine
               if "grid_log" in p or "grid_of" in p]
    if not tables and not kernels:
        return 1.0
    kinds, dts = np.array(KINDS)[cols.kind_idx], np.array(cols.dtypes)
    own = np.isin(names, [name for name, _ in mine])
    rows = [((kinds == kind) & (dts == dt) & ~own, p) for kind, dt, p in tables] + [(names == nm, p) for nm, p in kernels]
    rows = [(r, p) for r, p in rows if r.any()]          # (n_ops,) masks: the ops each grid times
    if not rows:
        return 1.0
    out = np.ones(cols.flops.shape)
    m, n, k, units = kernel_coords(cal, cols, split)
    for r, p in rows:
        out[r] = grid_factor(p, m[r], n[r], k[r], units[r])
    return out


def query_waves(cal: Calibration, cols: Columns, hw: Hardware | None) -> np.ndarray | float:
    """Per op of a context class that tiles each query head's rows (``query_tiles``: [[head dim, BLOCK_M, CTAs per
    SM], …], ``gemmshape.SHAPE_FIELDS``) at its head dim (K), the waves of its launch over their balanced time
    (``querytiles.wave_factor``, ≥ 1), which the law divides both η by as it does the grid's factor; 1 for every other
    op. A causal pass's query rows s = 2N − 1 (N the keys per query, ``gemm_dims``), at most M; the CTAs per tile the
    sequences × query heads, units / 2 × M / s. Such an op on a device without an SM count is an error."""
    if not cal.kernel or cols.kernels is None:
        return 1.0
    names = _names(cols, "kernels")
    own = classes_with(cal, names, "query_tiles")
    if not own:
        return 1.0
    sms = getattr(hw, "sms", None)
    if not sms:
        raise IronlawError(f"kernel class {own[0][0]} launches its query tiles in waves over the SMs (query_tiles): "
                           f"{getattr(hw, 'name', 'the device')} states no [vector] sms")
    m, n, k, units = (np.broadcast_to(x, cols.flops.shape) for x in grid_coords(cols))
    rows = np.minimum(2.0 * n - 1.0, m)
    out = np.ones(cols.flops.shape)
    for name, p in own:
        for dim, block_m, slots in p["query_tiles"]:
            r = (names.reshape((-1,) + (1,) * len(cols.cfg_shape)) == name) & (k == float(dim))
            if np.any(r):
                per_tile = units[r] / 2.0 * m[r] / np.maximum(rows[r], 1.0)
                out[r] = wave_factor(rows[r], per_tile, float(block_m), float(sms) * slots)
    return out


def query_tile_s(cal: Calibration, cols: Columns, sms: int | None) -> np.ndarray | float:
    """Per op of a context class that states ``tile_s`` with its ``query_tiles``, at one of their head dims (K), the
    seconds its launch's waves past the first add whatever the keys its CTAs walk (``gemmshape``, tile_s): its CTAs
    one per sequence, query head and tile of BLOCK_M query rows (the sequences × query heads units / 2 × M / s, s =
    2N − 1 at most M, as ``query_waves`` counts them), CTAs per SM × SMs of them a wave; 0 for every other op."""
    names = _names(cols, "kernels")
    own = [(name, p) for name, p in classes_with(cal, names, "tile_s")]
    if not own:
        return 0.0
    if not sms:
        raise IronlawError(f"kernel class {own[0][0]} pays tile_s per wave of its query tiles over the SMs: the device "
                           f"states no [vector] sms")
    m, n, k, units = (np.broadcast_to(x, cols.flops.shape) for x in grid_coords(cols))
    rows = np.maximum(np.minimum(2.0 * n - 1.0, m), 1.0)
    out = np.zeros(cols.flops.shape)
    for name, p in own:
        for dim, block_m, slots in p["query_tiles"]:
            r = (names.reshape((-1,) + (1,) * len(cols.cfg_shape)) == name) & (k == float(dim))
            ctas = units[r] / 2.0 * m[r] / rows[r] * np.ceil(rows[r] / float(block_m))
            out[r] = float(p["tile_s"]) * past_first_wave(ctas, float(sms) * slots, name) / (float(sms) * slots)
    return out


def plan_split_s(cal: Calibration, cols: Columns, sms: int | None, field: str = "plan_split_s") -> np.ndarray | float:
    """Per op of a prefill class that states ``plan_split_s`` (``field``; or ``plan_merge_s``, per query row and head
    merged), at one of its ``plan_head_dims`` (K), the seconds FlashInfer's prefill plan adds where it splits the keys
    (``splitkv.prefill_plan_splits``: its query tiles fill at most half its grid): the partial outputs written and
    merged, a call's and its query rows × heads'; 0 for every other op. Its sequences × KV heads are the op's units
    over 2, its packed rows M (its query rows × heads those × M), its tokens a windowed prefill's whole sequence
    (``op.attrs["history"]``) or else a causal pass's 2N − 1."""
    names = _names(cols, "kernels")
    own = [(name, p) for name, p in classes_with(cal, names, field)]
    if not own:
        return 0.0
    if not sms:
        raise IronlawError(f"kernel class {own[0][0]} pays plan_split_s where FlashInfer's plan splits over the SMs: "
                           f"the device states no [vector] sms")
    m, n, k, units = (np.broadcast_to(x, cols.flops.shape) for x in grid_coords(cols))
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
    names = _names(cols, "kernels")
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
    names = _names(cols, "kernels")
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


def split_blocks(cal: Calibration, cols: Columns, hw: Hardware | None) -> Split | None:
    """How each op of a split-KV kernel class launches (``Split``) on ``hw``'s SMs: ``history_split`` (the ops that
    state the whole sequence), ``chunk_split`` (FlashInfer's decode plan), ``fa2_split`` (FlashAttention 2's
    split) and ``fa3_split`` (FlashAttention 3's scheduler) together; None where no op is such."""
    if not cal.kernel:
        return None
    splits = [x for x in (history_split(cal, cols, hw), chunk_split(cal, cols, hw), fa2_split(cal, cols, hw),
                                 fa3_split(cal, cols, hw))
              if x is not None]
    if len(splits) < 2:
        return splits[0] if splits else None
    return Split(np.prod([x.blocks for x in splits], axis=0), np.prod([x.fold for x in splits], axis=0),
                 np.any([x.splits for x in splits], axis=0))


def fa2_split(cal: Calibration, cols: Columns, hw: Hardware | None) -> Split | None:
    """How the ops of a kernel class on FlashAttention 2's split-KV decode (``split_kv = "fa2"``) launch on ``hw``'s
    SMs: ``splitkv.fa2_splits`` of the op's keys per sequence and KV head, its M the swapped query rows; every other
    op 1 split. None where no op is such."""
    launch = _split_launch(cal, cols, hw, "fa2", "FlashAttention 2's split-KV decode")
    if launch is None:
        return None
    own, sms, (m, n, k), units = launch
    splits = np.broadcast_to(np.where(own, fa2_splits(n, m, units / 2.0, sms, k), 1.0), units.shape)
    return Split(splits, np.ones(units.shape), splits > 1.0)


def fa3_split(cal: Calibration, cols: Columns, hw: Hardware | None) -> Split | None:
    """Whether the windowed decode ops (``op.attrs['history']``) of a kernel class that runs FlashAttention 3 under
    vLLM (``split_kv = "fa3"``) split on ``hw``'s SMs (``splitkv.fa3_dynamic_splits``: its scheduler splits the whole
    sequence's blocks of BLOCK_N keys, ``keyblocks.fa3_block_n`` at the op's head dim and cache dtype, up to
    ``FA3_SPLITS_MAX`` where the call's tokens, one per sequence, are at most ``SPLIT_KERNEL_TOKENS``, and not
    beyond). The splits before the window exit at once, so the op keeps its window's keys and its CTAs (1 block, no
    fold) and only pays the split's reduction (``split_reduce_s``). None where no op is such; such an op on a device
    without an SM count, or that states no sequences (``cache_writes``), is an error."""
    if cols.history is None:
        return None
    launch = _split_launch(cal, cols, hw, "fa3", "FlashAttention 3's split-KV scheduler", cols.history > 0)
    if launch is None:
        return None
    own, sms, (m, n, k), units = launch
    if cols.cache_writes is None:
        raise IronlawError("a windowed decode on FlashAttention 3's split-KV scheduler (split_kv = \"fa3\") needs its "
                           "sequences (op.attrs['cache_writes'])")
    sequences = np.maximum(np.broadcast_to(cols.cache_writes, units.shape), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):    # the cache's bytes per key element: 1 for an FP8 cache
        per_element = cols.bytes.get("kv_cache", np.zeros(units.shape)) / (units * n * k)
    static = np.where(sequences <= SPLIT_KERNEL_TOKENS + 1e-9, float(FA3_SPLITS_MAX), 1.0)
    splits = fa3_dynamic_splits(np.broadcast_to(cols.history, units.shape), sequences, units / 2.0 / sequences, m,
                                fa3_block_n(k, per_element < 1.5), sms, static)
    ones = np.ones(units.shape)
    return Split(ones, ones, np.broadcast_to(own, units.shape) & (splits > 1.0))


def chunk_split(cal: Calibration, cols: Columns, hw: Hardware | None) -> Split | None:
    """How the ops of a kernel class that splits each sequence's keys into chunks (``split_kv = "chunks"``,
    FlashInfer's decode plan) launch on ``hw``'s SMs: ``splitkv.chunks_per_sequence`` of the op's keys per sequence
    and KV head at the class's ``chunk_occupancy`` CTAs per SM, at its ``chunk_head_dims`` only where it states them;
    every other op 1 chunk. None where no op is such;
    such an op on a device without an SM count is an error."""
    launch = _split_launch(cal, cols, hw, "chunks", "a chunked decode attention's split-KV launch")
    if launch is None:
        return None
    own, sms, (m, n, k), units = launch
    names = _names(cols, "kernels")
    lead = (-1,) + (1,) * len(cols.cfg_shape)
    occupancy = _per_op(cal, names, "chunk_occupancy", 1.0, lead)
    dims = [(nm, p["chunk_head_dims"]) for nm, p in cal.kernel.items() if "chunk_head_dims" in p]
    for nm, ds in dims:                       # a class's other head dims decode on another backend, unsplit
        own = own & ((names.reshape(lead) != nm) | np.isin(k, ds))
    tiles = np.broadcast_to(np.where(own, plan_query_tiles(cal, names, m, k, lead), 1.0), units.shape)
    chunks = np.broadcast_to(np.where(own, chunks_per_sequence(n, units / 2.0 * tiles, sms, occupancy), 1.0),
                             units.shape)
    return Split(chunks, tiles, chunks > 1.0)


def plan_query_tiles(cal: Calibration, names: np.ndarray, m, k, lead: tuple) -> np.ndarray:
    """Per op, the query tiles each sequence and KV head of a chunked class planned as a prefill (``chunk_plan =
    "prefill"``) launches (``splitkv.prefill_query_tiles`` of its M rows at its head dim K); 1 for every other op."""
    planned = np.isin(names, [nm for nm, p in cal.kernel.items() if p.get("chunk_plan") == "prefill"]).reshape(lead)
    return np.where(planned, prefill_query_tiles(m, k), 1.0)


def chunk_waves(cal: Calibration, cols: Columns, hw: Hardware | None, split: Split | None) -> np.ndarray | float:
    """Per op of a chunked class planned as a prefill (``chunk_plan``) or on FlashAttention 2's split (``split_kv =
    "fa2"``), its launch's whole waves of the SMs over their balanced time (``splitkv.sm_wave_factor`` of its
    sequences × KV heads × query tiles (FA2's blocks of 64 rows) × splits, ``split``), which the law divides both η
    by as it does the grid's factor; 1 for every other op."""
    if not cal.kernel or not any(p.get("chunk_plan") or p.get("split_kv") == "fa2" for p in cal.kernel.values()):
        return 1.0
    names = _names(cols, "kernels")
    lead = (-1,) + (1,) * len(cols.cfg_shape)
    fa2 = _split_kind(cal, names, "fa2", lead)
    planned = np.isin(names, [nm for nm, p in cal.kernel.items() if p.get("chunk_plan") == "prefill"]).reshape(lead)
    planned = planned | fa2
    if not np.any(planned):
        return 1.0
    sms = _launch_sms(hw, "a chunked decode attention's split-KV launch")
    m, n, k = gemm_dims(cols)
    units = np.broadcast_to(grid_units(cols.flops, m, n, k), cols.flops.shape)
    blocks = np.where(fa2, np.ceil(np.maximum(m, 1.0) / FA2_SPLIT_BLOCK_M), 1.0)
    ctas = units / 2.0 * blocks * (1.0 if split is None else split.blocks * split.fold)
    return np.broadcast_to(np.where(planned, sm_wave_factor(ctas, sms), 1.0), cols.flops.shape)


def history_split(cal: Calibration, cols: Columns, hw: Hardware | None) -> Split | None:
    """How the ops that state the whole sequence (``op.attrs['history']``, a windowed decode) of a kernel class that
    splits it launch (``Split``) on ``hw``'s SMs: ``split_kv = "history"``, TensorRT-LLM's XQA
    (``splitkv.blocks_per_sequence``, per sequence and KV head); ``"mmha"``, its MMHA kernel, one CTA per sequence
    and query head, split by ``splitkv.mmha_blocks_per_sequence`` (blocks of the class's ``mmha_threads``), or, for a
    class that states its kernel's CTAs per SM (``mmha_occupancy``), launched as ``splitkv.mmha_tuned_launch``;
    ``"heads"``, one CTA per sequence and query head, unsplit (FlashAttention 2 under a window). Every
    other op: 1 block, no fold; None where no op is such. Such an op on a device without an SM count is an error:
    its launch cannot be placed."""
    if cols.history is None:
        return None
    names = _names(cols, "kernels")
    lead = (-1,) + (1,) * len(cols.cfg_shape)
    kinds = {kind: _split_kind(cal, names, kind, lead) for kind in SPLIT_KV}
    history = np.where(kinds["history"] | kinds["mmha"] | kinds["heads"], cols.history, 0.0)
    if not np.any(history > 0):
        return None
    sms = _launch_sms(hw, "a sliding-window decode attention's split-KV launch")
    m, n, k = gemm_dims(cols)
    units = np.broadcast_to(grid_units(cols.flops, m, n, k), cols.flops.shape)
    history = np.broadcast_to(history, units.shape)
    xqa = np.broadcast_to(kinds["history"], units.shape) & (history > 0)
    mmha = np.broadcast_to(kinds["mmha"], units.shape) & (history > 0)
    blocks = np.where(xqa, blocks_per_sequence(history, units / 2.0, sms), 1.0)
    heads = units / 2.0 * np.maximum(m, 1.0)           # sequences × KV heads × heads per KV head
    threads = _per_op(cal, names, "mmha_threads", max(MMHA_THREADS), lead)
    tiles = mmha_blocks_per_sequence(history, heads, sms, mmha_tokens_per_loop(k, threads))
    slots = in_whole_waves(tiles, heads, sms, threads)
    occupancy = np.broadcast_to(_per_op(cal, names, "mmha_occupancy", 0.0, lead), units.shape)
    for c in np.unique(occupancy[mmha & (occupancy > 0)]):
        tuned = mmha & (occupancy == c)
        slots, tiles = (np.where(tuned, x, y) for x, y in zip(mmha_tuned_launch(history, heads, sms, k, int(c)),
                                                              (slots, tiles)))
    splits = np.where(mmha, tiles > 1.0, blocks > 1.0)
    fold = mmha | (np.broadcast_to(kinds["heads"], units.shape) & (history > 0))
    return Split(np.where(mmha, slots, blocks), np.where(fold, np.maximum(m, 1.0), 1.0), splits)


def _split_launch(cal: Calibration, cols: Columns, hw: Hardware | None, kind: str, launch: str, where=True):
    """For the split-KV launches: the ops whose kernel class splits as ``kind`` (and ``where``), ``hw``'s SM count
    (``_launch_sms``, naming ``launch``), the ops' (M, N, K) and grid units; None where no op is such."""
    names = _names(cols, "kernels")
    own = _split_kind(cal, names, kind, (-1,) + (1,) * len(cols.cfg_shape)) & where
    if not np.any(own):
        return None
    sms = _launch_sms(hw, launch)
    m, n, k = gemm_dims(cols)
    return own, sms, (m, n, k), np.broadcast_to(grid_units(cols.flops, m, n, k), cols.flops.shape)


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


def _per_op(cal: Calibration, names: np.ndarray, field: str, default: float, lead: tuple) -> np.ndarray:
    """(n_ops, 1…) each op's kernel class's ``field``, ``default`` where its class has none."""
    return np.array([float(cal.kernel.get(nm, {}).get(field, default)) if nm else default
                     for nm in names]).reshape(lead)


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
    names = _names(cols, "kernels")
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


def tile_share(p: dict, n, k) -> np.ndarray | float:
    """The share of a class's latency_head_dim_s an op of N keys at head dim K pays where its kernel splits the
    sequence's KV tiles over CTAs (``latency_tile_keys``, ``latency_tile_power``): ⌈N · K / tile⌉^(−power); 1 for a
    class that states no tile."""
    if "latency_tile_keys" not in p:
        return 1.0
    tiles = np.maximum(np.ceil(np.asarray(n, float) * np.asarray(k, float) / float(p["latency_tile_keys"]) - 1e-9), 1.0)
    return tiles ** -float(p["latency_tile_power"])


def head_dim_cta_s(cal: Calibration, cols: Columns, sms: int | None) -> np.ndarray | float:
    """Per op of a context class that states ``tile_head_dims``, the seconds its launch's CTAs past the first wave of
    ``sms`` SMs add at the op's head dim (its K, ``gemm_dims``) whatever their keys: ``tile_head_dim_s`` per CTA
    (``past_first_wave``), one CTA per sequence, query head and tile of ``tile_rows`` query rows at that head dim (0:
    one per sequence and query head), a causal pass's rows s = 2N − 1 (N the keys per query), at most M; the sequences
    × query heads units / 2 × M / s (``query_waves``'s count); 0 at another head dim and for every other op
    (``gemmshape.TILE_HEAD_DIM_S_MAX``). Each CTA loads its query tile and its first key and value tiles and runs one
    tile's products however few of its rows and keys are real (SGLang's Triton prefill masks, not skips, them:
    python/sglang/srt/layers/attention/triton_ops/extend_attention.py, ``_fwd_kernel``), so calls whose keys fit one
    tile take time in their CTAs, not in their FLOPs. Not a query-tiled class's cost per wave of its tiles (``tile_s``
    read with ``query_tiles``): this one holds its own seconds per head dim, the head dims of one class running
    different backends (SGLang's Blackwell FP8-cache prefill: FlashInfer at 128, one CTA per sequence and query head;
    Triton at 192 and 256), and puts no waves into the op's η (``query_tiles`` there priced a few CTAs' launch up to 6×
    too slow, docs/accuracy.md, "SGLang's Blackwell FP8-cache prefill: a cost per CTA")."""
    names = _names(cols, "kernels")
    own = classes_with(cal, names, "tile_head_dims")
    if not own:
        return 0.0
    m, n, k, units = (np.broadcast_to(x, cols.flops.shape) for x in grid_coords(cols))
    rows = np.maximum(np.minimum(2.0 * n - 1.0, m), 1.0)
    heads = units / 2.0 * m / rows
    out = np.zeros(cols.flops.shape)
    for name, p in own:
        r = (names.reshape((-1,) + (1,) * len(cols.cfg_shape)) == name) & np.ones(cols.flops.shape, bool)
        for dim, secs, tile in zip(p["tile_head_dims"], p["tile_head_dim_s"], p["tile_rows"]):
            at = r & (k == float(dim))
            ctas = heads[at] * (np.ceil(rows[at] / float(tile)) if tile else 1.0)
            out[at] = float(secs) * past_first_wave(ctas, sms, name)
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


def expert_setup_s(cal: Calibration, cols: Columns) -> np.ndarray | float:
    """Per op, the seconds a grouped MoE GEMM launch spends on each expert slot of its rank, whether its tokens reach
    it or not: its kernel class's ``expert_s`` × the op's local experts (``op.attrs["local_experts"]``); 0 for every
    other op. aiconfigurator-core 0.12.0's TensorRT-LLM 1.3.0rc20 block-scaled FP8 MoE tables (H200, one token,
    top-8): 27 µs with 1–16 local experts, 63 µs with 128, 107 µs with 256 (``measure/calibrate/moefit``)."""
    if cols.local_experts is None:
        return 0.0
    return per_unit_s(cal, cols, "expert_s", cols.local_experts, (len(cols.kind_idx),) + (1,) * len(cols.cfg_shape))


def touched_setup_s(cal: Calibration, cols: Columns) -> np.ndarray | float:
    """Per op, the seconds a grouped MoE GEMM launch spends on each expert its rows reach: its kernel class's
    ``touched_s`` × the experts whose weights it streams, its weight elements over one expert's N × K
    (``op.attrs["nk"]``, the elements at ``op.attrs["weight_elem_bytes"]`` or its dtype's size: the U the routing
    gives it); 0 for every other op. aiconfigurator-core 0.12.0's TensorRT-LLM 1.3.0rc20 CUTLASS MoE tables on
    Blackwell (``measure/calibrate/moefit``, ``fit``'s per_touched)."""
    names = _names(cols, "kernels")
    if cols.nk is None or not classes_with(cal, names, "touched_s"):
        return 0.0
    n_ops = len(cols.kind_idx)
    eb = np.array([dtype_bytes(d) for d in cols.dtypes], float).reshape((n_ops,) + (1,) * len(cols.cfg_shape))
    if cols.weight_elem_bytes is not None:
        eb = np.where(cols.weight_elem_bytes > 0, cols.weight_elem_bytes, eb)
    nk = (cols.nk[:, 0] * cols.nk[:, 1]).reshape((n_ops,) + (1,) * len(cols.cfg_shape))
    w = cols.bytes.get("weights", np.zeros(cols.flops.shape))
    with np.errstate(divide="ignore", invalid="ignore"):
        touched = np.broadcast_to(np.where(nk > 0, w / (nk * eb), 0.0), cols.flops.shape)
    return per_unit_s(cal, cols, "touched_s", touched, cols.flops.shape)


def token_setup_s(cal: Calibration, cols: Columns) -> np.ndarray | float:
    """Per op, the seconds an MoE layer spends on each token it takes in, routed to the rank or not: its kernel
    class's ``token_s`` × the op's tokens (``op.attrs["tokens"]``, the combine's); 0 for every other op.
    TensorRT-LLM's Triton MoE (gpt-oss's weight-only MXFP4 experts on Hopper) runs its router's top-k and, under
    EP, its pruning and compaction one program per token (fused_moe_triton.py, ``TritonEPRouter``): ~60 ns per
    token of aiconfigurator-core 0.12.0's H100 and H200 tables (``measure/calibrate/moefit``)."""
    if cols.tokens is None:
        return 0.0
    return per_unit_s(cal, cols, "token_s", cols.tokens, cols.tokens.shape)


def per_unit_s(cal: Calibration, cols: Columns, field: str, units: np.ndarray, shape: tuple) -> np.ndarray | float:
    """Per op (an array of ``shape``), its kernel class's seconds per unit ``field`` × the op's ``units``; 0 for an
    op whose class states no ``field``."""
    names = _names(cols, "kernels")
    own = [(name, float(p[field])) for name, p in classes_with(cal, names, field)]
    if not own:
        return 0.0
    out = np.zeros(shape)
    for name, unit_s in own:
        r = names == name
        out[r] = (unit_s * units[r]).reshape((-1,) + tuple(shape[1:]))
    return out


def split_reduce_s(cal: Calibration, cols: Columns, split: Split | None) -> np.ndarray | float:
    """Per op, the seconds a split-KV kernel class (``split_kv``) adds once its launch splits the op's sequences
    (``split``'s blocks > 1, ``split_blocks``): its class's ``split_s``, the blocks' partial results (a row of
    outputs and the softmax's max and sum each) written out and reduced once the last block of a sequence is done,
    and, for XQA ("history"), ``merge_s`` per block: that last block merges the blocks' partial results one after
    another; 0 for every other op and for a launch that does not split. aiconfigurator-core 0.12.0's H100 table,
    window 128, 2 heads on 1 KV head × 64, batch 1: 8.6 µs at 255 cached tokens (one block), 13.3 µs at 1,023 (7
    blocks of 18 keys each, fewer keys than one block of 128 read), 13.5, 16.3 and 19.0 µs at 16,383, 65,535 and
    131,071 (32, 64 and 90 blocks, one wave on 132 SMs, the window's keys the same)."""
    if split is None:
        return 0.0
    names = _names(cols, "kernels")
    own = [(name, float(p.get("split_s", 0.0)), float(p.get("merge_s", 0.0)))
           for name, p in classes_with(cal, names, "split_s", "merge_s")]
    if not own:
        return 0.0
    blocks = np.broadcast_to(split.blocks, cols.flops.shape)
    splits = np.broadcast_to(blocks > 1.0 if split.splits is None else split.splits, cols.flops.shape)
    out = np.zeros(cols.flops.shape)
    for name, split_s, merge_s in own:
        r = names == name
        out[r] = np.where(splits[r], split_s + merge_s * blocks[r], 0.0)
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
    "tile_head_dim_s": lambda cal, cols, sms, split: head_dim_cta_s(cal, cols, sms),
    "write_s": lambda cal, cols, sms, split: cache_write_s(cal, cols, sms),
    "swap_s": lambda cal, cols, sms, split: swap_copy_s(cal, cols),
    "tile_s": lambda cal, cols, sms, split: query_tile_s(cal, cols, sms),
    "plan_split_s": lambda cal, cols, sms, split: plan_split_s(cal, cols, sms),
    "plan_merge_s": lambda cal, cols, sms, split: plan_split_s(cal, cols, sms, "plan_merge_s"),
}


def class_latency_s(cal: Calibration, cols: Columns, sms: int | None, split: Split | None) -> np.ndarray | float:
    """Per op, the seconds its kernel class adds to each call whatever its η: the sum of ``CLASS_LATENCY_TERMS``
    (``sms`` the device's SM count, ``split`` the launch's split of the keys, ``split_blocks``)."""
    return sum(term(cal, cols, sms, split) for term in CLASS_LATENCY_TERMS.values())


def serial_share(cal: Calibration, cols: Columns) -> np.ndarray:
    """Per op, the share of min(data, compute) not overlapped (``serial`` of the GEMM shape tables)."""
    out = np.zeros(cols.flops.shape)
    kinds = np.array(KINDS)[cols.kind_idx]
    dts = np.array(cols.dtypes)
    dims = None
    for kind in ("matmul",) + SHAPE_KINDS:
        for dt, p in cal.shapes.get(kind, {}).items():
            r = (kinds == kind) & (dts == dt)
            if "serial" in p and r.any():
                dims = dims or gemm_dims(cols)
                kn = kn_rows(cols) if kind == "matmul" else np.zeros(dims[0].shape, bool)
                out[r] = gemm_serial(p, dims[0][r], kn[r])
    names = _names(cols, "kernels")
    for name, p in _gemm_kernels(cal, names):
        out[names == name] = float(p.get("serial", 0.0))
    return out


def memory_eta(cal: Calibration, cols: Columns, eta: np.ndarray, own: bool = True, grid=1.0) -> np.ndarray:
    """η of the data term per op: the byte-weighted reuse patterns (activations at ``produced``, the rest
    at ``streamed``), a kind's value in place of both — or of ``produced`` only where the op's shape
    table (matmul, conv) gives its weights their own ``streamed``; over the kernel grid's factor ``grid`` and at
    most 1 (``within_peak``), then the framework's share."""
    base = np.broadcast_to(eta, cols.flops.shape).astype(float)
    table_streamed = streamed_table(cal, cols)
    kinds = np.array(KINDS)[cols.kind_idx]
    by_kind = cal.memory_kind if own else {}
    if cal.memory_streamed is not None or cal.memory_produced is not None or table_streamed is not None or by_kind:
        streamed = np.broadcast_to(base if cal.memory_streamed is None else cal.memory_streamed, base.shape).copy()
        produced = np.broadcast_to(base if cal.memory_produced is None else cal.memory_produced, base.shape).copy()
        for kind, value in by_kind.items():        # a kind's own η is its activations' (how it walks them)
            produced[kinds == kind] = value
            if kind == "attention":                # … and, for attention, its KV cache's: a decode step's
                streamed[kinds == kind] = value    # flash kernel walks the cache as a prefill walks K and V
        if table_streamed is not None:
            streamed = np.where(np.isnan(table_streamed), streamed, table_streamed)
        zero = np.zeros(cols.flops.shape)
        act = cols.bytes.get("activations", zero)
        other = sum((cols.bytes[c] for c in STREAMED if c in cols.bytes), zero)
        total = act + other
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(total > 0, total / (act / produced + other / streamed), produced)
    else:
        out = base.copy()
    return with_framework_share(cal, within_peak(_scoped(cal, cols, out, "memory") if own else out, grid),
                                cols.frontend)


def slow_tier_eta(eta_op, eta_base, bw_llc_Bps: float, bw_tier_Bps: float):
    """The η of an op's traffic on a tier slower than the last cache level:
    η_t = min(η_op · BW_llc / BW_t, max(η_base, η_op)). An op's own η (its kind's, op class's or kernel's)
    is fitted mostly where its activations sat in that cache: it is a rate the kernel reaches there, not
    a fraction it keeps of any bandwidth; on a slower tier it runs at the slower of that rate and the
    tier's rate at the plain patterns' η (``eta_base``), never below its own η."""
    return np.minimum(eta_op * (bw_llc_Bps / bw_tier_Bps), np.maximum(eta_base, eta_op))


def extra_weight_bytes(cal: Calibration, cols: Columns, limit: float | None, resident=None) -> np.ndarray:
    """Per op, the device-memory bytes a calibrated GEMM reads beyond its weights once: ``pack`` × weight
    bytes where a GEMM's weights exceed ``limit`` (the device's ``pack_limit_bytes``: its packed copy spills), and on the GEMV path
    ``gemv_pass(_kn)`` × (M − 1) × weight bytes plus, where the weights come from device memory (not
    ``resident``), (``row_factor`` − 1) × weight bytes. 0 elsewhere."""
    out = np.zeros(cols.flops.shape)
    tables = {dt: p for dt, p in cal.shapes.get("matmul", {}).items()
              if any(p.get(f) for f in ("pack", "gemv_pass", "gemv_pass_kn", "gemv_row", "gemv_row_kn"))}
    rows = np.array(KINDS)[cols.kind_idx] == "matmul"
    if not tables or not rows.any():
        return out
    w = cols.bytes.get("weights", np.zeros(cols.flops.shape))
    spill = w > limit if limit is not None else np.zeros(w.shape, bool)
    m, n, k = gemm_dims(cols)
    kn = kn_rows(cols)
    length = row_length(cols, n, k)
    streamed = ~np.broadcast_to(np.asarray(False if resident is None else resident, bool), out.shape)
    dts = np.array(cols.dtypes)
    for dt, p in tables.items():
        r = rows & (dts == dt)
        if r.any():
            gemv = is_gemv(p, m[r], kn[r])
            packed = np.where(gemv | ~spill[r], 0.0, float(p.get("pack", 0.0)) * w[r])
            per_row = np.where(gemv & streamed[r], row_factor(p, length[r], kn[r]) - 1.0, 0.0) * w[r]
            out[r] = packed + gemv_passes(p, m[r], kn[r]) * w[r] + per_row
    return out


def framework_terms(cal: Calibration | None, frontend: str = "torch") -> tuple[float, float]:
    """(framework_s, framework_share) of a graph run by ``frontend``: its own [calibration.frontend.<name>]
    values where fitted, else the calibration's global ones (0 without a calibration)."""
    if cal is None:
        return 0.0, 0.0
    own = cal.frontend.get(frontend, {})
    glob_s = 0.0 if cal.framework_s is None else cal.framework_s
    glob_share = 0.0 if cal.framework_share is None else cal.framework_share
    return float(own.get("framework_s", glob_s)), float(own.get("framework_share", glob_share))


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
    dts = np.array(cols.dtypes)
    own = np.isin(_names(cols, "kernels"), [name for name, _ in _gemm_kernels(cal)])   # a kernel's own table
    for kind in ("matmul",) + SHAPE_KINDS:            # a shape table's own latency (a dtype's fixed cost)
        for dt, p in cal.shapes.get(kind, {}).items():
            if "latency_s" in p:
                out[(kinds == kind) & (dts == dt) & ~own] = p["latency_s"]
    out = _scoped(cal, cols, out, "latency_s")
    return out + framework_terms(cal, cols.frontend)[0]


def streamed_table(cal: Calibration, cols: Columns) -> np.ndarray | None:
    """Per op, the weight-traffic η its shape table gives (matmul: ``streamed``, or ``streamed_kn`` for
    x @ W, on GEMMs, not GEMVs, or with ``streamed_half`` ``gemmshape.streamed_eta`` on all; conv: ``streamed`` on all), NaN where the table gives none (the
    calibration's memory.streamed applies); None if no table gives one."""
    kinds = np.array(KINDS)[cols.kind_idx]
    dts = np.array(cols.dtypes)
    out, dims = None, None
    for kind in ("matmul",) + SHAPE_KINDS:
        for dt, p in cal.shapes.get(kind, {}).items():
            r = (kinds == kind) & (dts == dt)
            if not r.any() or not any(f in p for f in ("streamed", "streamed_kn")):
                continue
            if out is None:
                out = np.full(cols.flops.shape, np.nan)
            if kind == "matmul":
                dims = dims or gemm_dims(cols)
                kn = kn_rows(cols)[r]
                gemm = np.where(kn, p.get("streamed_kn", p.get("streamed", np.nan)), p.get("streamed", np.nan))
                if "streamed_half" in p:            # the weight tiles' CTAs in flight (gemmshape.streamed_eta)
                    gemm = streamed_eta(p, dims[1][r], dims[2][r])
                out[r] = np.where(is_gemv(p, dims[0][r], kn), np.nan, gemm)
            elif "streamed" in p:
                out[r] = p["streamed"]
    names = _names(cols, "kernels")
    for name, p in _gemm_kernels(cal, names):
        r = names == name
        if "streamed" in p and r.any():
            out = np.full(cols.flops.shape, np.nan) if out is None else out
            out[r] = p["streamed"]
    return out


def _gemm_kernels(cal: Calibration, names=None) -> list[tuple[str, dict]]:
    """The kernel entries that are GEMM shape tables of their own (``eta_max``; a grouped GEMM): their
    ``streamed`` is their weights' η, their ``serial`` their non-overlapped share, as a shape table's (only those
    some op names, where ``names``, the ops' kernels, is given)."""
    present = None if names is None else set(names.tolist())
    return [(name, p) for name, p in (cal.kernel or {}).items()
            if name and "eta_max" in p and (present is None or name in present)]


def with_framework_share(cal: Calibration, eta: np.ndarray, frontend: str = "torch") -> np.ndarray:
    """Kernels run (1 + framework_share) times longer end to end than alone."""
    return eta / (1.0 + framework_terms(cal, frontend)[1])


def classes_with(cal: Calibration, names: np.ndarray, *fields: str) -> list[tuple[str, dict]]:
    """The kernel classes that carry one of ``fields`` (non-zero) and that an op names (``names``: the ops'
    kernels), with their tables."""
    return [(name, p) for name, p in (cal.kernel or {}).items()
            if name and any(p.get(f) for f in fields) and (names == name).any()]


def _names(cols: Columns, attr: str = "names") -> np.ndarray:
    names = getattr(cols, attr, None)
    return np.array(names if names is not None else [""] * len(cols.kind_idx), dtype=object)


def _shape_eta(cal: Calibration, cols: Columns, out: np.ndarray) -> np.ndarray:
    kinds = np.array(KINDS)[cols.kind_idx]
    dts = np.array(cols.dtypes)
    dims = None
    for kind in SHAPE_KINDS:
        for dt, p in cal.shapes.get(kind, {}).items():
            r = (kinds == kind) & (dts == dt)
            if r.any():
                dims = dims or gemm_dims(cols)
                m, n, k = dims
                out[r] = gemm_eta(p, m[r], n[r], k[r])
    return out


def _scoped(cal: Calibration, cols: Columns, out: np.ndarray, field: str, split=None) -> np.ndarray:
    """Per-kernel values, then per-op-name values (the most specific wins) over the per-kind ones; a kernel
    entry with ``eta_max`` is a GEMM shape table of its own (a grouped GEMM's η follows its M per group), at the
    keys and query rows per launched CTA where ``split`` (``split_blocks``) splits them."""
    for table, attr in ((cal.kernel, "kernels"), (cal.op, "names")):
        if table:
            names = _names(cols, attr)
            for name, p in table.items():
                if field in p and name:
                    out[names == name] = p[field]
                elif field == "compute" and "eta_max" in p and name and (names == name).any():
                    r = names == name
                    m, n, k, _ = grid_coords(cols, split)
                    out[r] = gemm_eta(p, m[r], n[r], k[r])
    return out
