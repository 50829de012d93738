"""One kernel class's table (``fit_class``): the shape model and its grid for each launch or form the class
tries, the one with the smallest loss on the fitted rows kept.
"""
from __future__ import annotations

import numpy as np

from ....machine.calibration import SCHEMA
from ..fitcore import HALF_BOUNDS, Problem
from .gemv import gemvs_stream, streaming_gemvs
from .grid import fit_grid
from .launches import (chunk_launches_of, fa2_launch_of, fa3_splits_of, head_ctas_of, head_dim_latency, kernel_math,
                       key_blocks_of, math_of, plan_of, query_tile_cost, query_tiles_of, tile_latencies_of,
                       unit_waves_of, vector_of)
from .ops import observations
from .rows import shape_rows
from .rules import (OVERLAP_FLOOR_RUNS, P90_CHOICE_CLASSES, SPLIT_CLASSES, SPLIT_FRAMEWORK, WALK_WAVES, holds,
                    regime_of)
from .shapefit import fit_one, fit_stream, overlap_floored
from .vocabulary import Group

GEMM_TILES = (16.0, 64.0, 128.0, 256.0)
OVERLAP_FLOOR_MARK = 1e-6    # the floored form's floor_s before its fit (``shapefit.with_overlap_floor`` fits it)


def fit_class(hw, g: Group, rows, steps: tuple | None = None, gemm_fill: str = "half") -> dict:
    """One group's table, its shape model (``fit_one``, on at most ``FIT_ROWS`` of ``rows``) and its grid
    (``fit_grid``, on all of them). A sliding-window generation class (``SPLIT_CLASSES``) on a device that states its
    SMs is fitted as the kernel that launches one CTA per sequence and KV head and, for TensorRT-LLM's tables
    (``SPLIT_FRAMEWORK``), as each split-KV launch its kernel may make over the whole sequence (``split_kv``,
    ``core.splitkv``); the one with the smallest loss on the fitted rows is kept (for a class of
    ``P90_CHOICE_CLASSES``, the smallest 90th percentile of their |error|); a class of ``rules.OVERLAP_FLOOR`` is
    fitted in each of those forms and with a floor its work overlaps (``floor_s``), the better kept alike; so is one
    of the "stream" form's two shape tables (``fit_stream``), each with its grid. ``gemm_fill``: a GEMM class's M
    term (``GEMM_FILLS``)."""
    spaced = shape_rows(rows)
    regime = regime_of(g)
    splits = getattr(hw, "sms", None) and g.table.framework == SPLIT_FRAMEWORK
    tries = ({},) + (SPLIT_CLASSES.get((g.op, regime), ()) + WALK_WAVES.get((g.op, regime), ()) if splits else ())
    tries = tries + tuple({**extra, **blocks} for extra in tries for blocks in key_blocks_of(g, rows))
    tries = tries + head_ctas_of(hw, g, rows)
    tries = tries + tuple({**extra, **fa3} for extra in tries for fa3 in fa3_splits_of(hw, g, rows))
    tries = tries + tuple({**extra, **waves} for extra in tries for waves in unit_waves_of(hw, g, rows))
    chunked = chunk_launches_of(hw, g, rows)          # FlashInfer's plan splits: the plain launch is not its
    tries = tuple({**extra, **chunks} for extra in tries for chunks in chunked) if chunked else tries
    tries = tuple({**extra, **fa2_launch_of(hw, g)} for extra in tries)
    tries = tuple({**extra, **math_of(g), **kernel_math(hw, g), **query_tiles_of(hw, g),
                   **vector_of(g), **head_dim_latency(g, rows, hw), **plan_of(g, rows),
                   **query_tile_cost(g, rows, hw)} for extra in tries)
    tries = tuple(tiled for extra in tries for tiled in tile_latencies_of(g, extra))
    floor = {"floor_s": OVERLAP_FLOOR_MARK, "floor_share": round(1.0 / OVERLAP_FLOOR_RUNS, 4)}
    tries = tries + (tuple({**extra, **floor} for extra in tries) if overlap_floored(g) else ())
    tiles = GEMM_TILES if g.op == "gemm" and gemm_fill == "tile" else None
    shapes = fit_stream if g.op == "gemm" and gemm_fill == "stream" else \
        (lambda *a: [fit_one(*a)])  # noqa: E731
    tables = [fit_grid(hw, g, rows, t, steps) for extra in tries for t in shapes(hw, g, spaced, extra, tiles)]
    if g.op == "gemm" and gemm_fill == "stream":
        tables = streaming_gemvs(hw, g, rows, tables, lambda: [fit_grid(hw, g, rows, t, steps) for t in fit_stream(
            hw, g, spaced, m_half_max=HALF_BOUNDS[0])])
    elif g.op == "gemm":
        tables = [gemvs_stream(hw, g, rows, t, lambda top: fit_grid(hw, g, rows, fit_one(
            hw, g, spaced, None, tiles, m_half_max=top), steps)) for t in tables]
    if len(tables) == 1:
        return tables[0]
    prob = Problem(hw, observations(g, spaced, hw), weighting="per_case")
    cals = [{"schema": SCHEMA, "source": "derived: fitting", "fitted": [g.name], g.key[0]: {g.key[1]: t}}
            for t in tables]
    if holds(P90_CHOICE_CLASSES, (g.op, regime)):
        return tables[int(np.argmin([np.percentile(np.abs(prob.times(c) / prob.meas - 1.0), 90) for c in cals]))]
    return tables[int(np.argmin([prob.loss(c) for c in cals]))]
