"""The kernel-choice grid: per class, the measured over the modelled time at each node of a log-spaced grid over
M, N, K and units (``fit_grid``), its nodes, steps, switch steps and ridge.
"""
from __future__ import annotations

import math

import numpy as np

from ....core.gemmshape import GRID_LOG_MAX, grid_nodes, grid_text, grid_weights
from ....law.efficiency import kernel_coords, split_blocks
from ....machine.calibration import SCHEMA, Calibration
from ..fitcore import Problem
from .ops import observations
from .rows import shape_rows
from .rules import (COARSE, FINE_GEMMS, GRID_RIDGE_CLASSES, GROUP_GRID_FLOOR, GROUP_LATENCY_CLASSES, GROUP_SWITCH, GROUP_SWITCH_REGIMES, M_PAST_GEMMS, M_SWITCH_GEMMS, N_SWITCH_GEMMS,
                    RESIDENT_CONTEXT_FRAMEWORKS, TILE_REGIMES, coarse_for, holds, regime_of, switches, walks)
from .shapefit import fixed_seconds
from .vocabulary import Group

# the kernel-choice grid's node spacing per axis (M, N, K, units), each node this many times the one before: GEMMs
# over M, N, K (units 1); attention over the query rows per KV head, the keys, the head dim and the sequences × KV
# heads (the kernel's CTAs; a generation step's query rows per KV head span 1-128, coarse). docs/accuracy.md gives the held-out rows that chose them and the stored size.
GRID_STEPS = {"gemm": (4.0, 4.0, 4.0, 4.0), "context_attention": (4.0, 4.0, 2.0, 4.0),
              "generation_attention": (8.0, 2.0, 2.0, 2.0), "context_mla": (8.0, 8.0, 2.0, 8.0),
              "generation_mla": (2.0, 4.0, 2.0, 4.0), "mla_bmm": (4.0, 4.0, 4.0, 4.0),
              "mla_context_module": (8.0, 8.0, 2.0, 8.0), "mla_generation_module": (2.0, 4.0, 2.0, 4.0)}
GROUP_SWITCH_M_STEP = 2.0
M_SWITCH_STEP = 2.0
N_SWITCH_STEP = 2.0        # the N axis of an ``N_SWITCH_GEMMS`` class's grid
FINE_GEMM_STEP = 2.0       # every axis of a ``FINE_GEMMS`` class's grid
M_PAST_FROM = 4            # the smallest power of two whose M + 1 takes a node (the tables hold every M up to 17)
GRID_ROWS_PER_NODE = 4   # fewer fitted rows per grid node than this: a coarser grid (small or user tables)
# axes a coarser grid keeps at their step: attention's head dim (K), where each value the tables hold (64, 128, 192,
# 256) runs a kernel of its own (L40S FP8 context attention, one head per KV head: head dim 128 +48% off with nodes at
# 64 and 256 only, docs/accuracy.md); and generation MLA's heads per GPU (M: 1, 2, 4 … 128, a node each, step 2),
# which the grid interpolates only where each has its node (held out, the B200 bf16 class: 7.9% / 23.5% with a node
# every 8×, squared to 1, 64, 128; 7.1% / 18.7% with a node per head count; docs/accuracy.md)
GRID_KEEP = {"gemm": (), "context_attention": (2,), "generation_attention": (2,), "context_mla": (2,),
             "generation_mla": (0, 2), "mla_bmm": (2,), "mla_context_module": (2,), "mla_generation_module": (0, 2)}
# axes with a node at each value the rows hold, not at a step: context attention's head dim, each value a kernel of
# its own (vLLM 0.24.0 and SGLang 0.5.14 run head dim 192 on Triton, 64/128/256/512 on FlashInfer's TRT-LLM kernels or
# FlashAttention: B200, held out with nodes at 64, 128, 256, 512 only, head dim 192 24% too fast at the median;
# docs/accuracy.md)
VALUE_NODES = {"context_attention": (2,), "generation_attention": (2,), "mla_bmm": (2,)}
# passes of the grid's least squares per op, each on the residual of the one before: where the law's η bound holds a
# term (η / factor ≤ 1: context attention's streamed bytes at η 1.5) the op's time is not proportional to the factor
# and one pass under-corrects (SGLang B200, head dim 192 on Triton, 4-5× the shape model: fitted rows 15% too fast
# after one pass, 2% after two; docs/accuracy.md)
GRID_PASSES = {"context_attention": 2}
GRID_RIDGE = 1e-3        # pull of each node toward factor 1, relative to the rows' mean weight per node
GRID_RIDGE_HARD = 1e-1
# the least share of a row's measured time the grid reads as its time above the fixed latency (``grid_floor``)
GRID_FLOOR = 0.1
# the farthest a row stands from a GEMM grid's node, in grid steps along each axis, and still covers it
# (``covered_nodes``): past it the node is held at the nearest covered one (``fitted_nodes``)
GRID_COVER = 0.75


def fit_grid(hw, g: Group, rows, table: dict, steps: tuple | None = None, walk: bool = True,
             tiles: bool = True) -> dict:
    """``table`` with the kernel-choice grid (``gemmshape.grid_factor``) fitted on all of ``rows``: per node, the
    log of measured over modelled time without the fixed latency, least squares over the rows' multilinear weights,
    each node pulled toward 0 by ``GRID_RIDGE`` (a node no row reaches stays at factor 1; a GEMM's node its
    rows do not cover is held at the nearest covered one, ``fitted_nodes``); the steps of
    ``GRID_STEPS``, each squared (but those of ``GRID_KEEP``) while there are fewer than ``GRID_ROWS_PER_NODE`` rows
    per node (an attention's: per node some row reaches, ``reached_count``). Where even the coarsest grid has too many
    nodes for the rows, ``table`` stays without a grid. ``steps``: the node spacing in place of ``GRID_STEPS[g.op]``
    (a release's, ``fit(grid_steps=…)``), every node counted and fitted and every step squared, as ``COARSE``'s.
    The grid's axes are the op's as its kernel launches it (``efficiency.grid_coords``: with ``split_kv``, the keys
    per block and the blocks of a split-KV kernel). A class of ``WALK_CLASSES`` (``walk``) is fitted both ways,
    its grid over the window's keys and over the whole sequence's (``walked_grid``). A class that walks its keys in
    waves (``key_ctas``) keeps no grid: its walk bounds the time the grid would scale (``efficiency.walk_eta``), and
    fitted over it the grid took the RTX PRO 6000 XQA MLA class's held-out rows from 4.9% / 26.0% to 4.3% / 39.0%.
    A class with ``query_tiles`` (``tiles``) is fitted with and without its grid (``tiled_grid``)."""
    if "key_ctas" in table:
        return table
    if tiles and "query_tiles" in table:
        return tiled_grid(hw, g, rows, table, steps, walk)
    if walk and walks(g):
        return walked_grid(hw, g, rows, table, steps)
    own = {k: v for k, v in table.items() if k not in ("grid_nodes", "grid_log")}
    cal = {"schema": SCHEMA, "source": "derived: fitting", "fitted": [g.name], g.key[0]: {g.key[1]: own}}
    prob = Problem(hw, observations(g, rows, hw), weighting="per_case")
    pred = prob.times(cal)
    regime = regime_of(g)
    coarse = COARSE.get((g.op, regime)) if coarse_for(g.table.framework, regime) else None
    every = g.op == "gemm" or coarse is not None or steps is not None     # count and fit every node
    split = split_blocks(Calibration.of(cal), prob.cols, hw)
    lat = fixed_seconds(own, cal, prob, split)
    coords = tuple(np.asarray(x, float).reshape(-1)
                   for x in kernel_coords(Calibration.of(cal), prob.cols, split))
    nodes = fit_nodes(g.op, coords, len(prob.meas), steps or coarse or group_switch_steps(g, regime)
                      or gemm_switch_steps(g), every)
    if nodes is None:
        return own
    nodes = past_switch_nodes(g, nodes, coords, len(prob.meas))
    cols, hold = fitted_nodes(g, nodes, coords, every)
    coef = np.zeros(_size(nodes))
    for _ in range(GRID_PASSES.get(g.op, 1)):         # each pass fits the residual the last one left
        y = np.log(np.maximum(prob.meas - lat, grid_floor(g) * prob.meas) / np.maximum(pred - lat, 1e-12))
        coef[cols] += grid_solve(nodes, coords, y, cols, grid_ridge(g), hold)
        coef = held_at_the_rows(nodes, coef, cols)
        out = {**own, "grid_nodes": nodes,
               "grid_log": grid_text(np.clip(np.round(100.0 * coef), -GRID_LOG_MAX, GRID_LOG_MAX).astype(int))}
        pred = prob.times({**cal, g.key[0]: {g.key[1]: out}})
    return out


def grid_floor(g: Group) -> float:
    """The least share of a row's measured time ``fit_grid`` reads as its time above the fixed latency:
    ``GRID_FLOOR``, or ``rules.GROUP_GRID_FLOOR`` for a class of ``GROUP_LATENCY_CLASSES`` on one of its GPUs."""
    own = g.key[0] == "kernel" and holds(GROUP_LATENCY_CLASSES, (g.table.framework, g.key[1]), g.table.gpu)
    return GROUP_GRID_FLOOR if own else GRID_FLOOR


def tiled_grid(hw, g: Group, rows, table: dict, steps: tuple | None = None, walk: bool = True) -> dict:
    """A class with ``query_tiles``: ``table`` with its grid (``fit_grid``) and without one, the one with the smaller
    loss on the fitted rows (``shape_rows``) kept. Its launch's waves price what the grid's corners took up where
    the rows are few: aiconfigurator-core 0.12.0's SGLang 0.5.14 H100 table, bf16 on an FP8 cache, one head per KV
    head (Triton, head dim 512, 51 fitted rows, a grid of two nodes per axis), the grid's corners at its ±300 bound
    and its held-out rows 27.3% / 48.6%, 8.7% / 25.5% without it (docs/accuracy.md)."""
    plain = {k: v for k, v in table.items() if k not in ("grid_nodes", "grid_log")}
    gridded = fit_grid(hw, g, rows, plain, steps, walk, tiles=False)
    prob = Problem(hw, observations(g, shape_rows(rows), hw), weighting="per_case")
    loss = [prob.loss({"schema": SCHEMA, "source": "derived: fitting", "fitted": [g.name], g.key[0]: {g.key[1]: t}})
            for t in (gridded, plain)]
    return (gridded, plain)[int(np.argmin(loss))]


def group_switch_steps(g: Group, regime: str) -> tuple | None:
    """The grid steps of a grouped-query class (``GROUP_SWITCH_REGIMES``) whose rows hold a decode kernel that switches
    at a count of query heads per KV head (``GROUP_SWITCH``): ``GRID_STEPS`` with the M axis (query rows per KV head, a
    decode's heads per KV head) at ``GROUP_SWITCH_M_STEP``, so that a node stands on each side of the switch; None
    otherwise (``GRID_STEPS``)."""
    if g.op != "generation_attention" or regime not in GROUP_SWITCH_REGIMES or "kernel_source" not in g.rows.columns:
        return None
    held = set(zip(g.rows["kernel_source"], g.rows["kv_cache_dtype"].astype(str)))
    if not any(holds(GROUP_SWITCH, (g.table.framework, src, kv)) for src, kv in held):
        return None
    return (GROUP_SWITCH_M_STEP,) + tuple(GRID_STEPS[g.op][1:])


def gemm_switch_steps(g: Group) -> tuple | None:
    """``GRID_STEPS``' GEMM steps with the M axis at ``M_SWITCH_STEP`` for a class of ``M_SWITCH_GEMMS`` or
    ``M_PAST_GEMMS`` on one of its GPUs (and the N axis at ``N_SWITCH_STEP`` for one of ``N_SWITCH_GEMMS``), with M,
    N and K at ``FINE_GEMM_STEP`` for one of ``FINE_GEMMS``; None otherwise (``GRID_STEPS``)."""
    if g.op == "gemm" and switches(g, FINE_GEMMS):
        return (FINE_GEMM_STEP,) * 3 + tuple(GRID_STEPS["gemm"][3:])
    if g.op != "gemm" or not (switches(g, M_SWITCH_GEMMS) or switches(g, M_PAST_GEMMS)):
        return None
    n_step = N_SWITCH_STEP if switches(g, N_SWITCH_GEMMS) else GRID_STEPS["gemm"][1]
    return (M_SWITCH_STEP, n_step) + tuple(GRID_STEPS["gemm"][2:])


def past_switch_nodes(g: Group, nodes: list, coords, rows: int) -> list:
    """``nodes`` with, for a class of ``M_PAST_GEMMS``, a node on the M axis at each power of two plus one (from
    ``M_PAST_FROM``) that the rows hold and that lies inside the axis: the kernel's time jumps there and falls back
    toward the next power of two, which nodes at the powers alone interpolate across. As given where the rows are too
    few for the added nodes (``GRID_ROWS_PER_NODE``)."""
    if not switches(g, M_PAST_GEMMS):
        return nodes
    m = np.asarray(coords[0], float)
    held = set(np.unique(m).tolist())
    past = [2.0 ** j + 1 for j in range(int(math.log2(M_PAST_FROM)), 40) if 2.0 ** j + 1 in held
            and nodes[0][0] < 2.0 ** j + 1 < nodes[0][-1]]
    out = [sorted(set(nodes[0]) | set(past))] + list(nodes[1:])
    return out if rows >= GRID_ROWS_PER_NODE * _size(out) else nodes


def walked_grid(hw, g: Group, rows, table: dict, steps: tuple | None = None) -> dict:
    """``g``'s grid (``fit_grid``) over the window's keys and over the whole sequence's (``grid_keys =
    "sequence"``, ``efficiency.kernel_coords``), the one with the smaller loss on the fitted rows (``shape_rows``)
    kept: the class's rows may run a kernel that skips the key blocks outside the window (FlashAttention 3,
    TRT-LLM's, FlashInfer's) or one that walks them all (Triton), per head dim (``WALK_CLASSES``)."""
    plain = {k: v for k, v in table.items() if k != "grid_keys"}
    tables = [fit_grid(hw, g, rows, t, steps, walk=False) for t in (plain, {**plain, "grid_keys": "sequence"})]
    prob = Problem(hw, observations(g, shape_rows(rows), hw), weighting="per_case")
    loss = [prob.loss({"schema": SCHEMA, "source": "derived: fitting", "fitted": [g.name], g.key[0]: {g.key[1]: t}})
            for t in tables]
    return tables[int(np.argmin(loss))]


def fit_nodes(op: str, coords, rows: int, steps: tuple | None = None,
                every: bool | None = None) -> list[list[float]] | None:
    """The grid's nodes at ``steps`` (default ``GRID_STEPS``), each step squared while there are fewer than
    ``GRID_ROWS_PER_NODE`` rows per node: with ``every`` (default: a GEMM's) counting every node, else only those
    the rows reach (``reached_count``; the nodes of ``VALUE_NODES``' axes not counted, ``without_values``) and never
    squaring the steps of ``GRID_KEEP``. None where even each axis at its two ends has too many."""
    steps = steps or GRID_STEPS[op]
    every = op == "gemm" if every is None else every
    keep = () if every else GRID_KEEP[op]
    count = _size if every else (lambda nd: reached_count(*without_values(op, nd, coords)))  # noqa: E731
    nodes = _axis_nodes(op, coords, steps)
    while rows < GRID_ROWS_PER_NODE * count(nodes):
        steps = tuple(s if i in keep else s * s for i, s in enumerate(steps))
        coarser = _axis_nodes(op, coords, steps)
        if _size(coarser) == _size(nodes):        # each axis at its two ends already: too few rows for a grid
            return None
        nodes = coarser
    return nodes


def without_values(op: str, nodes, coords) -> tuple[list, tuple]:
    """``nodes`` and ``coords`` with each axis of ``VALUE_NODES[op]`` folded to one node: what the coarsening counts.
    A value axis's nodes are kernels the rows each hold (head dim 64, 128, 192 …), not a resolution the rows must fill;
    counted, a new head dim squared the other axes' steps (vLLM H100 bf16 decode, one head per KV head, 978 rows:
    4.7% → 8.0% held out when head dim 192 got its node; docs/accuracy.md)."""
    folded = VALUE_NODES.get(op, ())
    return ([[a[0]] if i in folded else a for i, a in enumerate(nodes)],
            tuple(np.full(len(np.asarray(x).reshape(-1)), nodes[i][0]) if i in folded else x
                  for i, x in enumerate(coords)))


def _axis_nodes(op: str, coords, steps: tuple) -> list[list[float]]:
    """Each axis's nodes at its step (``gemmshape.grid_nodes``), but the axes of ``VALUE_NODES[op]``, which take a
    node at each value the rows hold."""
    return [sorted({float(f"{v:.6g}") for v in np.asarray(x, float)}) if i in VALUE_NODES.get(op, ())
            else grid_nodes(x, s) for i, (x, s) in enumerate(zip(coords, steps))]


def grid_ridge(g: Group) -> float:
    """The ridge of ``g``'s grid: ``GRID_RIDGE_HARD`` for a class of ``GRID_RIDGE_CLASSES`` without a window
    (``TILE_REGIMES``) on a table of ``RESIDENT_CONTEXT_FRAMEWORKS``, else ``GRID_RIDGE``."""
    regime = regime_of(g)
    hard = holds(GRID_RIDGE_CLASSES, g.op, g.table.gpu) and g.table.framework in RESIDENT_CONTEXT_FRAMEWORKS
    return GRID_RIDGE_HARD if hard and regime in TILE_REGIMES else GRID_RIDGE


def fitted_nodes(g: Group, nodes, coords, every: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """(the flat indices of the nodes ``fit_grid`` solves for, per node the node whose value it takes or None): an
    attention class's nodes the rows reach (``reached_nodes``), each other held at the nearest after the solve
    (``held_at_the_rows``); with ``every``, every node, but a GEMM class's nodes its rows do not cover
    (``covered_nodes``) each held at the nearest covered node in the solve too (``held_nodes``): the grid is not
    carried past its rows' (N, K) by a corner their multilinear weights barely reach. ROCm/aiter's gfx942 FP8 rows
    hold K ≥ 8192 at N 5120 only and N ≥ 8192 at K ≤ 5120 only; fitted free, the corner (N 16384, K 12800) they
    reach at weights 0.16 and 0.20 took the grid at (N 8192, K 28672) from 830 TFLOP/s at M 1024 to 472 at M 16384,
    where every measured row with N, K ≥ 4096 runs 634 → 824 TFLOP/s as M grows (docs/accuracy.md, MLPerf
    Inference v5.1). A table whose rows stand near every node fits as before; the fitted rows of aiconfigurator-core
    0.12.0's TensorRT-LLM GEMM tables leave one node per class uncovered (104 of 2,304 on L40S and RTX PRO 6000
    bf16's finer grid), which the stored catalogs do not hold yet."""
    if not every:
        return reached_nodes(nodes, coords), None
    if g.op != "gemm":
        return np.arange(_size(nodes)), None
    cols = covered_nodes(nodes, coords)
    return cols, held_nodes(nodes, cols)


def covered_nodes(nodes, coords) -> np.ndarray:
    """The flat indices (sorted) of the grid nodes some row stands near on every axis: within ``GRID_COVER`` of a
    grid step of the node (in log space; a row past an axis's end at its end node), its multilinear weight on the
    node at least 1 − ``GRID_COVER`` along each axis. A corner the rows only reach from across the grid is not."""
    covered = None
    for nd, x in zip(nodes, coords):
        ln = np.log(np.asarray(nd, float))
        lx = np.clip(np.log(np.maximum(np.asarray(x, float).reshape(-1), 1e-30)), ln[0], ln[-1])
        if len(ln) == 1:
            near = np.ones((len(lx), 1), bool)
        else:
            step = np.diff(ln)
            below = np.concatenate([step[:1], step])          # the step on each node's lower side (upper at 0)
            above = np.concatenate([step, step[-1:]])
            d = lx[:, None] - ln[None, :]
            near = np.where(d < 0, -d <= GRID_COVER * below, d <= GRID_COVER * above)
        covered = near if covered is None else (covered[:, :, None] & near[:, None, :]).reshape(len(lx), -1)
    return np.flatnonzero(covered.any(axis=0))


def held_nodes(nodes, cols: np.ndarray) -> np.ndarray:
    """Per node (flat index), the node of ``cols`` its value is held at: itself where it is among them, else the
    nearest of them in grid steps (L1), as ``held_at_the_rows`` fills it."""
    size = _size(nodes)
    out = np.arange(size)
    if len(cols) == 0 or len(cols) == size:
        return out
    at = np.stack(np.unravel_index(out, [len(a) for a in nodes]), axis=1)
    hole = np.setdiff1d(out, cols)
    out[hole] = cols[np.abs(at[hole][:, None, :] - at[cols][None, :, :]).sum(axis=2).argmin(axis=1)]
    return out


def grid_solve(nodes, coords, y, cols: np.ndarray, ridge: float = GRID_RIDGE,
               hold: np.ndarray | None = None) -> np.ndarray:
    """The grid's ln factors at the nodes ``cols`` (sorted flat indices; every node the rows reach among them),
    least squares with the ``ridge`` per node; ``hold`` (``held_nodes``): each row's weight on a node outside
    ``cols`` counted on the node it is held at."""
    idx, w = grid_weights(nodes, coords)
    if hold is not None:
        idx = hold[idx]
    n = len(cols)
    a = np.zeros((len(idx), n))
    np.add.at(a, (np.arange(len(idx))[:, None], np.minimum(np.searchsorted(cols, idx), n - 1)), w)
    return np.linalg.solve(a.T @ a + ridge * len(idx) / n * np.eye(n), a.T @ y)


def held_at_the_rows(nodes, coef: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``coef`` with each node no row reaches given the value of the nearest node one does (in grid steps, L1):
    the grid held at its measured edge, as at its ends, where a shape model's factor 1 would jump (H100 decode
    attention at 392 sequences of 1,150 cached tokens, beyond the table's 256 at 1,023: 0.82 → 0.86)."""
    if len(cols) == 0 or len(cols) == len(coef):
        return coef
    return coef[held_nodes(nodes, cols)]


def reached_nodes(nodes, coords) -> np.ndarray:
    """The flat indices (sorted) of the grid nodes the rows at ``coords`` weigh on."""
    idx, w = grid_weights(nodes, coords)
    return np.unique(idx[w > 0])


def reached_count(nodes, coords) -> int:
    """How many grid nodes the rows weigh on: an attention's M and N both follow the sequence length, so most of
    the M × N plane holds no row (with one head per KV head, M = 2·N on every context row)."""
    return int(len(reached_nodes(nodes, coords)))


def _size(nodes) -> int:
    return int(np.prod([len(a) for a in nodes]))
