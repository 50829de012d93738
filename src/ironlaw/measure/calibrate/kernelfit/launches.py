"""What a kernel class's fit tries or fixes beyond the shape model, per class: its split-KV, chunked, per-head
and per-wave launches, its key blocks, its math and vector modes, its query tiles and its fixed latency per head
dim or head group.
"""
from __future__ import annotations

import re

import numpy as np

from ....core.gemmshape import TILE_HEAD_DIM_S_MAX
from ....core.querytiles import ctas_per_sm
from ....core.splitkv import PLAN_BLOCKS_PER_SM
from ....law.efficiency import past_first_wave
from .rows import main_kernel
from .rules import (CAUSAL_BLOCK_CLASSES, CHUNK_CLASSES, CHUNK_SOURCES, FA2_SPLIT_CLASSES, FA3_SPLIT_CLASSES,
                    FA3_SPLIT_SOURCES, FA3_SM8X_SPLIT_CLASSES,
                    GROUP_TILE_CLASSES, GROUP_TILE_KEYS, GROUP_TILE_POWERS, PLAN_CHUNK_CLASSES, FP8_CONTEXT,
                    FP8_CONTEXT_CLASS, FP8_CONTEXT_FRAMEWORK, FP8_CONTEXT_VERSIONS, GROUP_FASTEST_CLASSES,
                    GROUP_LATENCY, GROUP_SPLIT, GROUP_SPLIT_KEYS, GROUP_SPLIT_STEP, GROUP_LATENCY_CLASSES,
                    GROUP_LATENCY_STEP, GROUP_WAVE_UNITS, HEAD_CTA_CLASSES, HEAD_CTA_LAUNCHES, HEAD_CTA_SOURCES,
                    HEAD_DIM_LATENCY, HEAD_DIM_LATENCY_CLASSES, HEAD_DIM_LATENCY_GPUS, KEY_BLOCK_CLASSES,
                    KEY_BLOCK_SOURCES, MATH_OPS, ONE_KEY_TILE, OVERLAP_KERNELS, QUERY_AS_CACHE, TILE_COST_CLASSES,
                    TILE_GPU_REGIMES, TILE_KERNEL_ROWS, TILE_REGIMES, TILE_SWAP_KERNELS, TRITON_KERNELS,
                    TRITON_TILES, PLAN_SOURCES,
                    PLAN_SPLIT_CLASSES, UNIT_WAVE_CLASSES, UNIT_WAVE_GPU_CLASSES, UNIT_WAVE_GPU_KERNELS,
                    UNIT_WAVE_KERNELS, holds, regime_of, tile_class)
from .vocabulary import Group


def chunk_launches_of(hw, g: Group, rows) -> tuple:
    """The chunked launch (``split_kv = "chunks"``) a class of ``CHUNK_CLASSES`` or ``PLAN_CHUNK_CLASSES`` on one of
    its GPUs, whose rows run mostly on a kernel of ``CHUNK_SOURCES``, takes in place of the plain one, on a device that
    states its SMs, at the head dims that kernel runs (``chunk_head_dims``, where another backend runs the class's
    other head dims): FlashInfer's tensor-core decode at its prefill plan's ``PLAN_BLOCKS_PER_SM`` CTAs per SM, over 32
    heads per KV head with that plan's query tiles and waves (``chunk_plan``); () for another."""
    key = (g.table.framework, g.key[1])
    own = g.key[0] == "kernel" and holds(CHUNK_CLASSES, key, g.table.gpu)
    planned = g.key[0] == "kernel" and holds(PLAN_CHUNK_CLASSES, key, g.table.gpu)
    if not ((own or planned) and getattr(hw, "sms", None) and main_kernel(rows) in CHUNK_SOURCES):
        return ()
    dims = sorted(int(d) for d in rows.loc[rows["kernel_source"].isin(CHUNK_SOURCES), "head_dim"].unique())
    by_dim = {"chunk_head_dims": dims} if set(dims) != set(int(d) for d in rows["head_dim"].unique()) else {}
    plan = {"chunk_plan": "prefill"} if planned else {}
    return ({"split_kv": "chunks", "chunk_occupancy": PLAN_BLOCKS_PER_SM, **plan, **by_dim},)


def fa2_launch_of(hw, g: Group) -> dict:
    """``{"split_kv": "fa2"}`` for a class of ``FA2_SPLIT_CLASSES`` on one of its GPUs (``"fa3_sm8x"`` for one of
    ``FA3_SM8X_SPLIT_CLASSES``), on a device that states its SMs; {} for another."""
    key = (g.table.framework, g.key[1])
    for kind, rule in (("fa2", FA2_SPLIT_CLASSES), ("fa3_sm8x", FA3_SM8X_SPLIT_CLASSES)):
        if g.key[0] == "kernel" and holds(rule, key, g.table.gpu) and getattr(hw, "sms", None):
            return {"split_kv": kind}
    return {}


def tile_latencies_of(g: Group, extra: dict) -> tuple:
    """``extra`` with its latency shared by the CTAs of the KV tiles, once per GROUP_TILE_POWERS (``latency_tile_keys``
    GROUP_TILE_KEYS, no ``latency_keys_max``), for a class of ``GROUP_TILE_CLASSES`` on one of its GPUs whose
    ``extra`` holds a latency per head dim; (``extra``,) for another."""
    own = g.key[0] == "kernel" and holds(GROUP_TILE_CLASSES, (g.table.framework, g.key[1]), g.table.gpu)
    if not own or "latency_head_dims" not in extra:
        return (extra,)
    plain = {k: v for k, v in extra.items() if k != "latency_keys_max"}
    return tuple({**plain, "latency_tile_keys": GROUP_TILE_KEYS, "latency_tile_power": p} for p in GROUP_TILE_POWERS)


def unit_waves_of(hw, g: Group, rows) -> tuple:
    """``({"unit_launch": launch},)`` for a class of ``UNIT_WAVE_CLASSES`` whose rows run mostly on a kernel of
    ``UNIT_WAVE_KERNELS`` (its launch), or of ``UNIT_WAVE_GPU_CLASSES`` on one of its GPUs, on a kernel of
    ``UNIT_WAVE_GPU_KERNELS``, on a device that states its SMs (its fit tries its ``unit_s`` in waves beside
    it on every sequence and KV head); () for another."""
    framework = getattr(g.table, "framework", None)
    own = holds(UNIT_WAVE_CLASSES, (framework, g.op, regime_of(g)))
    launch = UNIT_WAVE_KERNELS.get(main_kernel(rows)) if own else None
    if g.key[0] == "kernel" and holds(UNIT_WAVE_GPU_CLASSES, (framework, g.key[1]), getattr(g.table, "gpu", None)):
        launch = UNIT_WAVE_GPU_KERNELS.get(main_kernel(rows))
    return ({"unit_launch": launch},) if getattr(hw, "sms", None) and launch else ()


def key_blocks_of(g: Group, rows) -> tuple:
    """``({"key_blocks": kernel},)`` for a class of ``KEY_BLOCK_CLASSES`` whose rows all time that kernel
    (``kernel_source``, ``KEY_BLOCK_SOURCES``): its fit tries the law over the whole key blocks the window touches
    (``core.keyblocks``, ``efficiency.key_block_share`` and ``kernel_coords``) beside the window's keys; () for
    another."""
    regime = regime_of(g)
    if not holds(KEY_BLOCK_CLASSES, (g.table.framework, g.op, regime)) or "kernel_source" not in rows.columns:
        return ()
    sources = set(rows["kernel_source"].unique())
    kernels = {KEY_BLOCK_SOURCES.get(s) for s in sources}
    return ({"key_blocks": kernels.pop()},) if len(kernels) == 1 and None not in kernels else ()


def fa3_splits_of(hw, g: Group, rows) -> tuple:
    """``({"split_kv": "fa3"},)`` for a class of ``FA3_SPLIT_CLASSES`` on one of its GPUs whose rows all time a kernel
    of ``FA3_SPLIT_SOURCES``, on a device that states its SMs (its fit tries FlashAttention 3's split beside each
    launch it tries without it); () for another."""
    own = g.key[0] == "kernel" and holds(FA3_SPLIT_CLASSES, (g.table.framework, g.key[1]), g.table.gpu)
    if not own or not getattr(hw, "sms", None) or "kernel_source" not in rows.columns:
        return ()
    return ({"split_kv": "fa3"},) if set(rows["kernel_source"].unique()) <= set(FA3_SPLIT_SOURCES) else ()


def head_ctas_of(hw, g: Group, rows) -> tuple:
    """``HEAD_CTA_LAUNCHES`` for a class of ``HEAD_CTA_CLASSES`` whose rows all time a kernel of ``HEAD_CTA_SOURCES``,
    on a device that states its SMs (its fit tries each beside the plain launch); () for another."""
    key = (getattr(g.table, "framework", None), g.op, regime_of(g))
    if not holds(HEAD_CTA_CLASSES, key) or not getattr(hw, "sms", None) \
            or "kernel_source" not in rows.columns:
        return ()
    return HEAD_CTA_LAUNCHES if set(rows["kernel_source"].unique()) <= set(HEAD_CTA_SOURCES) else ()


def head_dim_latency(g: Group, rows, hw=None) -> dict:
    """``{"latency_head_dims": [...], "latency_head_dim_s": [...]}`` for a class of ``HEAD_DIM_LATENCY`` (or of
    ``HEAD_DIM_LATENCY_GPUS`` or ``HEAD_DIM_LATENCY_CLASSES`` on one of its GPUs, ``hw``; one per head dim and head
    group for a class of ``GROUP_LATENCY``, ``group_latency``, of ``GROUP_LATENCY_CLASSES`` on one of its GPUs,
    ``group_latency`` over its rows of few cached tokens, or of ``GROUP_FASTEST_CLASSES`` on one of its GPUs,
    ``group_latency`` read at each pair's fastest call): each head dim whose fastest call among ``rows`` is slower
    than the class's fastest, and by how much (the seconds its own launches add, every call at that head dim paying
    them; ``efficiency.head_dim_latency_s``); {} for another class, or where no head dim is slower."""
    regime = regime_of(g)
    key = (g.table.framework, g.op, regime)
    if holds(GROUP_FASTEST_CLASSES, (g.table.framework, g.key[1]), g.table.gpu) and len(rows):
        return group_latency(rows, keys=None, read="fastest")
    if holds(GROUP_LATENCY, key) and len(rows):
        return group_latency(rows, group_split_units(hw, g))
    if holds(GROUP_LATENCY_CLASSES, (g.table.framework, g.key[1]), g.table.gpu) and len(rows):
        return group_latency(rows, keys=GROUP_LATENCY_STEP)
    own = holds(HEAD_DIM_LATENCY, key) or holds(HEAD_DIM_LATENCY_GPUS, key, g.table.gpu) \
        or holds(HEAD_DIM_LATENCY_CLASSES, (g.table.framework, g.key[1]), g.table.gpu)
    if not own or "head_dim" not in rows.columns or not len(rows):
        return {}
    fastest = rows.groupby("head_dim")["latency_s"].min()
    extra = fastest - fastest.min()
    extra = extra[extra > 0.0]
    if not len(extra):
        return {}
    return {"latency_head_dims": [int(d) for d in extra.index],
            "latency_head_dim_s": [float(f"{x:.4g}") for x in extra.to_numpy()]}


def query_tile_cost(g: Group, rows, hw=None) -> dict:
    """``{"tile_head_dims": [...], "tile_head_dim_s": [...], "tile_rows": [...]}`` for a class of ``TILE_COST_CLASSES``
    on one of its GPUs, on a device that states its SMs (``hw``): per head dim whose ``rows`` time a kernel of
    ``TILE_KERNEL_ROWS``, the seconds per CTA its calls of at most ``ONE_KEY_TILE`` tokens a sequence grow by past the
    first wave (the slope of a least-squares line, relative errors, of their time on the CTAs past the first wave of
    the SMs, ``efficiency.past_first_wave``, one CTA per sequence and query head, each one tile's work), and that
    kernel's rows per CTA; {} for another class (``efficiency.tile_cost_s``). On a kernel of ``TILE_SWAP_KERNELS`` the
    calls of one token a sequence (FlashAttention 2's grouped-query swap, another grid) are left out of the slope and
    the class states ``tile_swap``."""
    own = g.key[0] == "kernel" and holds(TILE_COST_CLASSES, (g.table.framework, g.key[1]), g.table.gpu)
    sms = getattr(hw, "sms", None)
    if not own or not sms or "kernel_source" not in rows.columns or not len(rows):
        return {}
    dims, secs, tiles, swap = [], [], [], False
    for dim, at in rows[rows.isl <= ONE_KEY_TILE].groupby("head_dim"):
        kernel = main_kernel(at)
        at = at[at.isl > 1] if kernel in TILE_SWAP_KERNELS else at
        if kernel not in TILE_KERNEL_ROWS or len(at) < 3:
            continue
        swap = swap or kernel in TILE_SWAP_KERNELS
        past = past_first_wave((at.batch_size * at.num_heads).to_numpy(float), sms, g.name)
        t = at.latency_s.to_numpy(float)
        a = np.stack([np.ones_like(past), past], axis=1) / t[:, None]
        slope = float(np.linalg.lstsq(a, np.ones_like(t), rcond=None)[0][1])
        dims.append(int(dim))
        secs.append(float(f"{min(max(slope, 0.0), TILE_HEAD_DIM_S_MAX):.4g}"))
        tiles.append(TILE_KERNEL_ROWS[kernel])
    return {"tile_head_dims": dims, "tile_head_dim_s": secs, "tile_rows": tiles,
            **({"tile_swap": True} if swap else {})} if dims else {}


def group_split_units(hw, g: Group) -> int | None:
    """The most sequences × KV heads at which ``g``'s decode kernel splits each sequence's keys (``GROUP_SPLIT``: half
    ``hw``'s SMs, two CTAs per sequence and KV head), None where it names none."""
    sms = getattr(hw, "sms", None)
    split = holds(GROUP_SPLIT, getattr(g.table, "framework", None), getattr(hw, "name", None))
    return int(sms // 2) if sms and split else None


def group_latency(rows, most: int | None = None, keys: int | None = GROUP_SPLIT_STEP, read: str = "median") -> dict:
    """For a class of ``GROUP_LATENCY``, ``GROUP_LATENCY_CLASSES`` or ``GROUP_FASTEST_CLASSES``: each (head dim, query
    heads per KV head) whose call at one wave (``GROUP_WAVE_UNITS`` sequences × KV heads or fewer) and at most ``keys``
    cached tokens (None: any) among ``rows``, read as ``read`` ("median": the median call; "fastest": the fastest), is
    slower than the fastest such pair's, and by how much (``latency_head_dims``, ``latency_groups``,
    ``latency_head_dim_s``); {} where none is. A pair without such rows takes none (L40S, head dim 128 at 48 and 64
    heads on one KV head, timed from batch 1,024 on: 55 µs, no launch's latency). The fastest call, where the median
    would hold the pair's data and compute time too, which the law then adds again (docs/accuracy.md, "vLLM's GDDR
    FP8-cache window decode: a latency per head dim and head group"). With ``most`` (``group_split_units``): its call at
    that many sequences × KV heads or fewer, over the class's fastest call (the launch beyond), held there only
    (``latency_units_max``, ``latency_keys_max``)."""
    if read not in ("median", "fastest"):
        raise ValueError(f"group_latency reads a pair's median or fastest call, not {read!r}")
    group = rows["num_heads"] // rows["num_key_value_heads"].clip(lower=1)
    at = rows.assign(group=group, units=rows["batch_size"] * rows["num_key_value_heads"])
    keep = at.units <= (GROUP_WAVE_UNITS if most is None else most)
    at = at[keep & (at.step <= keys)] if keys is not None else at[keep]
    calls = at.groupby(["head_dim", "group"])["latency_s"]
    per = calls.median() if read == "median" else calls.min()
    extra = per - (per.min() if most is None else float(rows["latency_s"].min()))
    extra = extra[extra > 0.0]
    if not len(extra):
        return {}
    return {"latency_head_dims": [int(d) for d, _ in extra.index], "latency_groups": [int(q) for _, q in extra.index],
            "latency_head_dim_s": [float(f"{x:.4g}") for x in extra.to_numpy()],
            **({"latency_units_max": most, "latency_keys_max": GROUP_SPLIT_KEYS} if most is not None else {})}


def kernel_math(hw, g: Group) -> dict:
    """``{"math": "fp8"}`` for a bf16-math FP8-cache context class whose kernel runs FP8 math on ``hw``
    (``FP8_CONTEXT``: TensorRT-LLM's, of the versions named there); ``{}`` otherwise."""
    fp8 = g.key[0] == "kernel" and g.key[1].startswith(FP8_CONTEXT_CLASS) and g.table.framework == FP8_CONTEXT_FRAMEWORK \
        and holds(FP8_CONTEXT, g.op, hw.name) and str(g.table.version).startswith(FP8_CONTEXT_VERSIONS)
    return {"math": "fp8"} if fp8 else {}


def math_of(g: Group) -> dict:
    """``{"math": the KV cache's dtype}`` for a context attention or MLA class (``MATH_OPS``) whose rows run mostly
    on a kernel of ``QUERY_AS_CACHE`` with a cache in another dtype than the class's math (its ops compute in the
    cache's dtype, ``efficiency.with_variants``); {} for any other class. aiconfigurator-core 0.12.0's vLLM 0.24.0 B300
    table, 4,096 tokens and more: up to 2.61 PFLOP/s on the FP8 cache, over bf16's 2.25 peak; its SGLang 0.5.14 B300
    MLA table, 16,384 tokens and more: the FP8 cache 1.55× faster than the bf16 one at the median (docs/accuracy.md)."""
    if g.op not in MATH_OPS or g.key[0] != "kernel" or "kernel_source" not in g.rows.columns or \
            not len(g.rows) or g.rows["kernel_source"].value_counts().index[0] not in QUERY_AS_CACHE:
        return {}
    m = re.fullmatch(r"attention_context_([a-z0-9]+)_kv_([a-z0-9]+).*", g.key[1])
    return {"math": m.group(2), **math_head_dims(g.rows)} if m and m.group(1) != m.group(2) else {}


def query_tiles_of(hw, g: Group) -> dict:
    """``{"query_tiles": [[head dim, BLOCK_M, CTAs per SM], …]}`` for a context attention class without a window
    (``TILE_REGIMES``) of a framework of ``TRITON_KERNELS`` whose rows time a head dim of ``TRITON_TILES[hw.name]`` on
    that kernel, its CTAs per SM those its shared memory holds (``querytiles.ctas_per_sm``), and for a class of
    ``CAUSAL_BLOCK_CLASSES`` on one of its GPUs their BLOCK_N (``causal_blocks``); {} otherwise.
    aiconfigurator-core 0.12.0's SGLang 0.5.14 H100 table, head dim 512, one head: 138 µs at 1,024 tokens, 555 µs at
    4,096, linear in the length under one wave of CTAs (docs/accuracy.md)."""
    kernel, (shared, tiles) = TRITON_KERNELS.get(g.table.framework), TRITON_TILES.get(hw.name, (0, {}))
    regime = regime_of(g, None)
    if g.op != "context_attention" or kernel is None or not tiles or "kernel_source" not in g.rows.columns or \
            regime not in TILE_GPU_REGIMES.get(hw.name, TILE_REGIMES) and not tile_class(g):
        return {}
    dims = sorted(int(d) for d in set(g.rows["head_dim"][g.rows["kernel_source"] == kernel]) if int(d) in tiles)
    if not dims:
        return {}
    causal = holds(CAUSAL_BLOCK_CLASSES, (g.table.framework, g.key[1]), hw.name) and g.key[0] == "kernel"
    return {"query_tiles": [[d, tiles[d][0], ctas_per_sm(d, *tiles[d], shared)] for d in dims],
            **({"causal_blocks": [[d, tiles[d][1]] for d in dims]} if causal else {})}


def vector_of(g: Group) -> dict:
    """``{"vector": "overlap"}`` for a context attention class whose rows run mostly on a kernel of
    ``OVERLAP_KERNELS`` (its softmax beside its matrix work, ``law.compute_term``), with ``vector_head_dims``, the
    head dims its rows time on those kernels alone, where some other head dim runs another kernel and the class
    names no ``math_head_dims`` (which the overlap then follows); {} for any other class."""
    if g.op != "context_attention" or g.key[0] != "kernel" or "kernel_source" not in g.rows.columns or \
            not len(g.rows) or g.rows["kernel_source"].value_counts().index[0] not in OVERLAP_KERNELS:
        return {}
    if "head_dim" not in g.rows.columns or math_head_dims(g.rows):
        return {"vector": "overlap"}
    on = g.rows["kernel_source"].isin(OVERLAP_KERNELS)
    other = set(g.rows["head_dim"][~on])
    dims = sorted(int(d) for d in set(g.rows["head_dim"][on]) - other)
    return {"vector": "overlap", "vector_head_dims": dims} if other and dims else {"vector": "overlap"}


def math_head_dims(rows) -> dict:
    """``{"math_head_dims": [...]}``, the head dims ``rows`` time on a kernel of ``QUERY_AS_CACHE`` alone, where some
    other head dim of theirs runs another kernel (vLLM 0.24.0's head dim 192 on its Triton prefill,
    ``vllm_triton_attn``: ``gemmshape`` math_head_dims); {} where every head dim runs one (or rows without head
    dims: MLA's)."""
    if "head_dim" not in rows.columns:
        return {}
    on = rows["kernel_source"].isin(QUERY_AS_CACHE)
    other = set(rows["head_dim"][~on])
    dims = sorted(int(d) for d in set(rows["head_dim"][on]) - other)
    return {"math_head_dims": dims} if other and dims else {}


def plan_of(g: Group, rows) -> dict:
    """``{"plan_head_dims": [...]}`` for a class of ``PLAN_SPLIT_CLASSES`` on one of its GPUs: the head dims its
    ``rows`` time on a kernel of ``PLAN_SOURCES`` (its fit then adds ``plan_split_s`` and ``plan_merge_s``); {} for
    another, or where none does."""
    key = (getattr(g.table, "framework", None), g.key[1])
    if g.key[0] != "kernel" or not holds(PLAN_SPLIT_CLASSES, key, getattr(g.table, "gpu", None)) or \
            "kernel_source" not in rows.columns:
        return {}
    dims = sorted(int(d) for d in rows.loc[rows["kernel_source"].isin(PLAN_SOURCES), "head_dim"].unique())
    return {"plan_head_dims": dims} if dims else {}
