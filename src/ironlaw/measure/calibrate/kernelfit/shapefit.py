"""The shape model fitted on a class's rows (``fit_one``; the GEMM stream form, ``fit_stream``): its parameters,
bounds and starts, and the per-class latency terms the fit adds (``with_*``, ``fixed_seconds``).
"""
from __future__ import annotations

import numpy as np

from ....core.gemmshape import (CTA_S_MAX, KEY_S_MAX, MERGE_KINDS, MERGE_S_MAX, PLAN_MERGE_S_MAX, PLAN_SPLIT_S_MAX,
                                SPLIT_S_MAX, SWAP_S_MAX, TILE_S_MAX, UNIT_S_MAX, WRITE_S_MAX)
from ....law.efficiency import class_latency_s
from ....machine.calibration import SCHEMA, Calibration
from ..fitcore import Problem, fit_group, grid
from .ops import observations
from .rows import main_kernel
from .rules import (FLOOR_ANY_OPS, FLOOR_CONTEXT_FRAMEWORKS, FLOOR_CONTEXT_OPS, FLOOR_FREE_KERNELS, FLOOR_FREE_REGIMES,
                    FLOOR_OPS, KEY_WALK_CLASSES, KEY_WALK_OPS, OVERLAP_FLOOR, SWAP_CLASSES, SWAP_KERNELS,
                    UNIT_FRAMEWORKS, UNIT_OPS,
                    WRITE_CACHE_CLASSES, WRITE_CLASSES, floor_class, holds, regime_of, tile_class)
from .vocabulary import Group, PHASES

CTA_S_STARTS = (1e-6, 1e-5)
M_TILES = (8.0, 16.0, 32.0)   # rows per tile a generation kernel's grouped queries may fill (tried in turn)
STREAMED_PHYSICAL = 1.0
STREAM_PARAMS = (("eta_max", 1.0), ("nk_half", 1e6), ("k_half", 1e6), ("streamed", STREAMED_PHYSICAL),
                 ("streamed_half", 1e9), ("serial", 1.0), ("latency_s", 1e-3))
STREAM_STARTS = grid([0.8], [50.0, 500.0], [50.0, 500.0], [0.8], [1e6, 1e7], [0.3, 1.0], [3e-6])
STREAM_M_HALF = (("m_half", 1e6), (10.0, 100.0))     # the M term's second try: its bound and starts
KEY_S_STARTS = (1e-11, 5e-8)
UNIT_S_START = 2e-8
WRITE_S_START = 1e-9
SWAP_S_START = 3e-6
TILE_S_START = 2e-6
PLAN_SPLIT_S_START = 3e-5
PLAN_MERGE_S_START = 3e-9
# a split-KV launch's fit (``SPLIT_CLASSES``) also fits ``split_s``, the seconds its split adds (the partial results
# written and reduced, ``efficiency.split_reduce_s``), from each of these starts
SPLIT_S_STARTS = (1e-8, 3e-6)
# an XQA split launch (``split_kv = "history"``) fits ``merge_s`` too, its last block's merge per block, from this start
MERGE_S_START = 3e-8
FLOOR_START = 0.9        # a GEMM fit's start of latency_s, as a share of its bound (``within_floor``)
PARAMS = (("eta_max", 1.0), ("m_half", 1e6), ("nk_half", 1e6), ("k_half", 1e6), ("streamed", 1.5),
          ("latency_s", 1e-3))
STARTS = {"gemm": grid([0.8], [50.0, 300.0], [50.0, 500.0], [50.0, 500.0], [0.8], [3e-6, 1e-5]),
          "attention": grid([0.5], [10.0, 1000.0], [100.0, 3000.0], [50.0], [0.8], [5e-6, 1e-5])}


def fit_one(hw, g: Group, rows, extra: dict | None = None, tiles: tuple | None = None,
            m_half_max: float | None = None) -> dict:
    """One group's shape table (eta_max, m_half, nk_half, k_half, streamed, latency_s), fitted on ``rows``; a
    generation group tries each of ``M_TILES`` for whole tiles of rows in place of ``m_half`` and keeps the best.
    ``extra``: fields the table holds as given (``split_kv``). ``tiles``: only whole tiles of each of these rows
    tried, ``streamed`` at most ``STREAMED_PHYSICAL`` (a GEMM's tile fill, ``GEMM_FILLS``). ``m_half_max``: m_half's
    upper bound in place of ``PARAMS``' (the small-M rule, ``gemvs_stream``)."""
    prob = Problem(hw, observations(g, rows, hw), weighting="per_case")
    start = {"eta_max": 0.5, "m_half": 100.0, "nk_half": 100.0, "k_half": 100.0, "streamed": 0.8,
             "latency_s": 5e-6, **(extra or {})}
    starts = STARTS["gemm" if g.op in ("gemm", "mla_bmm") else "attention"]
    best, best_loss = None, float("inf")
    bounds = PARAMS if tiles is None else tuple((n, STREAMED_PHYSICAL if n == "streamed" else u) for n, u in PARAMS)
    bounds = with_m_half_max(bounds, m_half_max)
    bounds, starts = with_walk_waves(extra, *with_split_cost(extra, *with_key_walk(g, *within_floor(g, rows, bounds,
                                                                                                  starts))))
    bounds, starts = with_unit_cost(g, bounds, starts)
    bounds, starts = with_write_cost(g, bounds, starts)
    bounds, starts = with_swap_cost(g, rows, bounds, starts)
    bounds, starts = with_tile_cost(g, bounds, starts)
    bounds, starts = with_plan_cost(extra, bounds, starts)
    bounds, starts = with_overlap_floor(extra, rows, bounds, starts)
    for tile in tiles or (None,) + (M_TILES if PHASES.get(g.op) == "decode" else ()):
        s0 = dict(start, m_half=0.0, m_tile=tile) if tile else start
        cal = {"schema": SCHEMA, "source": "derived: fitting", "fitted": [g.name], g.key[0]: {g.key[1]: s0}}
        params = [((g.key[0], g.key[1], name), upper) for name, upper in bounds if not (tile and name == "m_half")]
        pick = [[min(x, upper) for (name, upper), x in zip(bounds, st) if not (tile and name == "m_half")]
                for st in starts]
        if tiles:             # without m_half the starts repeat: the best two distinct ones
            pick = [list(x) for x in dict.fromkeys(tuple(x) for x in pick)]
        c = fit_group(prob, cal, params, pick)
        loss = prob.loss(c)
        if loss < best_loss:
            best, best_loss = c[g.key[0]][g.key[1]], loss
    return best


def latency_floor(g: Group, rows) -> float | None:
    """A class's bound on its fixed ``latency_s`` (a GEMM's, a generation attention's or MLA's, ``FLOOR_OPS``, but
    not ``FLOOR_FREE_REGIMES``; a context attention class's of ``FLOOR_CONTEXT_FRAMEWORKS``, any regime; a class of
    ``FLOOR_ANY_OPS``, any framework's, whose rows run mostly on no kernel of ``FLOOR_FREE_KERNELS``): the fastest
    call among ``rows`` (every call pays it); None for another. Unbounded,
    the fit let the fixed latency take up what the smallest GEMMs' streaming costs and the grid, which scales only the
    time above it, could not bring the smallest shapes back down (aiconfigurator-core 0.12.0's A100 bf16 table: its
    smallest shapes 2.6-3.6 µs measured, 4.8 µs fitted; with ``fit_operands``, held out 5.7% / 23.9% → 5.0% / 15.4%,
    docs/accuracy.md)."""
    regime = regime_of(g)
    context = g.op in FLOOR_CONTEXT_OPS and getattr(g.table, "framework", None) in FLOOR_CONTEXT_FRAMEWORKS \
        or g.op in FLOOR_ANY_OPS and main_kernel(rows) not in FLOOR_FREE_KERNELS or floor_class(g)
    if not context and (g.op not in FLOOR_OPS or regime in FLOOR_FREE_REGIMES) or not len(rows):
        return None
    return float(np.min(rows.latency_s))


def within_floor(g: Group, rows, bounds: tuple, starts: list) -> tuple[tuple, list]:
    """``bounds`` ((name, upper) …) and ``starts`` (each a list in the order of ``bounds``) with ``latency_s`` at
    most ``latency_floor`` (a start at ``FLOOR_START`` of it); as given where there is none."""
    floor = latency_floor(g, rows)
    if floor is None:
        return bounds, starts
    at = [n for n, _ in bounds].index("latency_s")
    bounds = tuple((n, min(u, floor) if n == "latency_s" else u) for n, u in bounds)
    return bounds, [[min(x, FLOOR_START * floor) if i == at else x for i, x in enumerate(st)] for st in starts]


def with_key_walk(g: Group, bounds: tuple, starts: list) -> tuple[tuple, list]:
    """``bounds`` and ``starts`` with ``key_s`` (at most ``KEY_S_MAX``, each start from each of ``KEY_S_STARTS``)
    for a class of ``KEY_WALK_OPS``, or of ``KEY_WALK_CLASSES`` on one of its GPUs; as given for another."""
    keyed = g.key[0] == "kernel" and holds(KEY_WALK_CLASSES, (getattr(g.table, "framework", None), g.key[1]),
                                           getattr(g.table, "gpu", None))
    if g.op not in KEY_WALK_OPS and not keyed:
        return bounds, starts
    return bounds + (("key_s", KEY_S_MAX),), [list(st) + [k] for st in starts for k in KEY_S_STARTS]


def with_unit_cost(g: Group, bounds: tuple, starts: list) -> tuple[tuple, list]:
    """``bounds`` and ``starts`` with ``unit_s`` (at most ``UNIT_S_MAX``, each start from ``UNIT_S_START``) for a
    class of ``UNIT_OPS`` fitted on a table of ``UNIT_FRAMEWORKS``; as given for another."""
    if g.op not in UNIT_OPS or g.table.framework not in UNIT_FRAMEWORKS:
        return bounds, starts
    return bounds + (("unit_s", UNIT_S_MAX),), [list(st) + [UNIT_S_START] for st in starts]


def with_write_cost(g: Group, bounds: tuple, starts: list) -> tuple[tuple, list]:
    """``bounds`` and ``starts`` with ``write_s`` (at most ``WRITE_S_MAX``, each start from ``WRITE_S_START``) for a
    class of ``WRITE_CLASSES``, or of ``WRITE_CACHE_CLASSES`` on one of its GPUs; as given for another."""
    regime = regime_of(g)
    framework = getattr(g.table, "framework", None)
    cache = holds(WRITE_CACHE_CLASSES, (framework, g.op, g.key[1]), getattr(g.table, "gpu", None))
    if not holds(WRITE_CLASSES, (framework, g.op, regime)) and not cache:
        return bounds, starts
    return bounds + (("write_s", WRITE_S_MAX),), [list(st) + [WRITE_S_START] for st in starts]


def with_swap_cost(g: Group, rows, bounds: tuple, starts: list) -> tuple[tuple, list]:
    """``bounds`` and ``starts`` with ``swap_s`` (at most ``SWAP_S_MAX``, each start from ``SWAP_S_START``) for a class
    of ``SWAP_CLASSES`` whose ``rows`` run mostly on a kernel of ``SWAP_KERNELS`` and hold calls that swap (``swaps``);
    as given for another (vLLM's tables time over 32 heads per KV head on one KV head only: nothing there to fit)."""
    key = (getattr(g.table, "framework", None), g.op, regime_of(g))
    if not holds(SWAP_CLASSES, key) or main_kernel(rows) not in SWAP_KERNELS \
            or not swaps(rows).any():
        return bounds, starts
    return bounds + (("swap_s", SWAP_S_MAX),), [list(st) + [SWAP_S_START] for st in starts]


def swaps(rows) -> np.ndarray:
    """Per decode row, whether FlashAttention 2's grouped-query swap copies its query and output: more than one
    sequence, more than one KV head and more query heads than KV heads (``efficiency.swap_copy_s``)."""
    return ((rows.batch_size > 1) & (rows.num_key_value_heads > 1)
            & (rows.num_heads > rows.num_key_value_heads)).to_numpy()


def with_split_cost(extra: dict | None, bounds: tuple, starts: list) -> tuple[tuple, list]:
    """``bounds`` and ``starts`` with ``split_s`` (at most ``SPLIT_S_MAX``, from each of ``SPLIT_S_STARTS``) where
    ``extra`` names a split-KV launch (``split_kv``), and ``merge_s`` (at most ``MERGE_S_MAX``, from
    ``MERGE_S_START``) where that launch is XQA's ("history") or FlashAttention's ("fa2", "fa3_sm8x", whose combine
    kernel reads every split's partial output; ``gemmshape.MERGE_KINDS``); as given otherwise."""
    kind = (extra or {}).get("split_kv")
    if not kind or kind == "heads":      # one CTA per query head, unsplit: nothing to reduce
        return bounds, starts
    bounds, starts = bounds + (("split_s", SPLIT_S_MAX),), [list(st) + [x] for st in starts for x in SPLIT_S_STARTS]
    if kind not in MERGE_KINDS:
        return bounds, starts
    return bounds + (("merge_s", MERGE_S_MAX),), [list(st) + [MERGE_S_START] for st in starts]


def with_walk_waves(extra: dict | None, bounds: tuple, starts: list) -> tuple[tuple, list]:
    """``bounds`` and ``starts`` with ``cta_s`` (at most ``CTA_S_MAX``, from each of ``CTA_S_STARTS``) where ``extra``
    names a walk in waves (``key_ctas``); as given otherwise."""
    if not (extra or {}).get("key_ctas"):
        return bounds, starts
    return bounds + (("cta_s", CTA_S_MAX),), [list(st) + [x] for st in starts for x in CTA_S_STARTS]


def fixed_seconds(table: dict, cal: dict, prob: Problem, split) -> np.ndarray:
    """Per row of ``prob``, the seconds a class's ``table`` (within ``cal``) adds to an op whatever its η: its
    ``latency_s`` and the per-call terms its fields state (``efficiency.class_latency_s``: its walk over the keys,
    its split's reduction, ``split`` the launch, its cost per sequence and KV head, its head dim's own launches,
    its cache writer's CTAs)."""
    extra = class_latency_s(Calibration.of(cal), prob.cols, getattr(prob.hw, "sms", None), split)
    return float(table.get("latency_s", 0.0)) + np.reshape(extra, -1)


def fit_stream(hw, g: Group, rows, extra: dict | None = None, tiles: tuple | None = None,
               m_half_max: float | None = None) -> list[dict]:
    """A GEMM group's two shape tables in the "stream" form (``GEMM_FILLS``), fitted on ``rows``: eta_max, nk_half,
    k_half, streamed (at most 1), streamed_half, serial and latency_s, with m_half 0 and with m_half fitted too
    (``STREAM_M_HALF``); ``fit_class`` keeps the one with the smaller loss after its grid. Both are needed: the
    joint fit stops in the half-point form's minimum (B200 bf16's fitted rows with their grids: 0.0671 against
    0.0606 for m_half 0), while FP8 classes fit better with an M term (B200 fp8 0.0363 against 0.0481).
    ``extra``: fields held as given; ``tiles`` is not used (``fit_one``'s signature). With ``m_half_max`` (the
    small-M rule, ``streaming_gemvs``) only the second table, its m_half at most that."""
    prob = Problem(hw, observations(g, rows, hw), weighting="per_case")
    start = {"eta_max": 0.5, "m_half": 0.0, "nk_half": 100.0, "k_half": 100.0, "streamed": 0.8,
             "streamed_half": 1e6, "serial": 0.5, "latency_s": 5e-6, **(extra or {})}
    cal = {"schema": SCHEMA, "source": "derived: fitting", "fitted": [g.name], g.key[0]: {g.key[1]: start}}
    bounds, starts = within_floor(g, rows, STREAM_PARAMS, STREAM_STARTS)
    params = [((g.key[0], g.key[1], name), upper) for name, upper in bounds]
    (name, upper), m_starts = STREAM_M_HALF
    upper = upper if m_half_max is None else min(upper, m_half_max)
    tries = [] if m_half_max is not None else [fit_group(prob, cal, params, starts)]
    tries.append(fit_group(prob, cal, params + [((g.key[0], g.key[1], name), upper)],
                           [s + [min(m, upper)] for s in starts for m in m_starts]))
    return [c[g.key[0]][g.key[1]] for c in tries]


def with_m_half_max(bounds: tuple, m_half_max: float | None) -> tuple:
    """``bounds`` ((name, upper) …) with m_half's upper bound at most ``m_half_max`` (as given where None)."""
    if m_half_max is None:
        return bounds
    return tuple((n, min(u, m_half_max) if n == "m_half" else u) for n, u in bounds)


def with_tile_cost(g: Group, bounds: tuple, starts: list) -> tuple[tuple, list]:
    """``bounds`` and ``starts`` with ``tile_s`` (at most ``TILE_S_MAX``, each start from ``TILE_S_START``) for a class
    of ``rules.TILE_S_CLASSES`` on one of its GPUs; as given for another."""
    if not tile_class(g):
        return bounds, starts
    return bounds + (("tile_s", TILE_S_MAX),), [list(st) + [TILE_S_START] for st in starts]


def with_plan_cost(extra: dict | None, bounds: tuple, starts: list) -> tuple[tuple, list]:
    """``bounds`` and ``starts`` with ``plan_split_s`` and ``plan_merge_s`` (at most ``PLAN_SPLIT_S_MAX`` and
    ``PLAN_MERGE_S_MAX``, each start from ``PLAN_SPLIT_S_START`` and ``PLAN_MERGE_S_START``) where ``extra`` names the
    head dims FlashInfer's plan runs (``plan_head_dims``, ``launches.plan_of``); as given otherwise."""
    if not (extra or {}).get("plan_head_dims"):
        return bounds, starts
    return bounds + (("plan_split_s", PLAN_SPLIT_S_MAX), ("plan_merge_s", PLAN_MERGE_S_MAX)), \
        [list(st) + [PLAN_SPLIT_S_START, PLAN_MERGE_S_START] for st in starts]


# an overlapped floor's start (``with_overlap_floor``), as a share of the class's fastest fitted call
OVERLAP_FLOOR_START = 0.95


def overlap_floored(g: Group) -> bool:
    """Whether class ``g`` is fitted with an overlapped floor too (``rules.OVERLAP_FLOOR``, its framework and op on
    its GPU)."""
    return holds(OVERLAP_FLOOR, (getattr(g.table, "framework", None), g.op), getattr(g.table, "gpu", None))


def with_overlap_floor(extra: dict | None, rows, bounds: tuple, starts: list) -> tuple[tuple, list]:
    """``bounds`` and ``starts`` with ``floor_s`` (at most the fastest of ``rows``: every call takes it; from
    ``OVERLAP_FLOOR_START`` of that) where ``extra`` names the floored form (``floor_s``, ``classfit.fit_class``); as
    given otherwise."""
    if "floor_s" not in (extra or {}) or not len(rows):
        return bounds, starts
    fastest = float(np.min(rows.latency_s))
    return bounds + (("floor_s", fastest),), [list(st) + [OVERLAP_FLOOR_START * fastest] for st in starts]
