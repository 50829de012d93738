"""What both fitters share: measured ops, the law evaluated on them, the loss, the minimiser, the bounds.

A ``Problem`` places the observed ops once (``law.place``) and evaluates every candidate calibration with
``law.timed`` — the same code every prediction runs, so what is fitted is exactly what later predictions
use. ``ironlaw.measure.calibrate.calibrate`` fits probe rows and published measurements, ``ironlaw.measure.calibrate.fit`` validate runs; the
order they fit things in is in docs/how-it-models.md.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import numpy as np

from ...law import law
from ...machine.cache import pack_limit_bytes
from ...machine.calibration import MAX_LATENCY_S, Calibration, without_calibration
from ...core.errors import IronlawError
from ...core.gemmshape import gemm_dims, is_gemv, kn_rows
from ...core.graph import KINDS, Columns, Graph, Op

# fitting bounds: a parameter that runs to the edge says the data cannot pin it, not that it is 0 or ∞
ETA_MIN = 1e-4
LAT_BOUNDS = (1e-8, MAX_LATENCY_S)
KEY_S_FLOOR = 1e-13      # a kernel's seconds per key walked (``key_s``) per split or per merged block: none
HALF_BOUNDS = (1e-2, 1e6)
KERNEL_ONLY = ("framework_s", "framework_share", "frontend")   # spent between ops, not in a timed op


@dataclass
class Observation:
    """One measured op: what ran (an ironlaw Op) and its median time per invocation."""
    op: Op
    time_s: float
    dataset: str            # where it came from: 'probe:gemm', 'validate:resnet50 b1', 'vidur llama2-7b' …
    cv: float | None = None
    offset_s: float = 0.0   # time the measurement adds outside the op (a host-side timing harness)


def neutral(hw):
    """``hw`` with η = 1, no per-op latency and no calibration: the law's raw data and compute terms."""
    eff = {k: 1.0 for k in KINDS + ("other", "memory")}
    return replace(hw, efficiency=eff, op_latency_s=0.0, extra={}, calibration=None)


class Problem:
    """Observations, the law placed on them once, and a weighted mean |log(predicted / measured)|.

    ``weighting``: 'sqrt_time' — each dataset weighs the same, within it each op by √(measured time) (big
    ops count most, many small ones still add up); a subset keeps its ops' weights. 'per_case' — each
    dataset weighs the same, its ops alike; a subset re-weighs its own datasets."""

    def __init__(self, hw, obs: list[Observation], weighting: str = "sqrt_time"):
        if not obs:
            raise IronlawError("calibration: no observations to fit or score")
        self.obs, self.weighting = obs, weighting
        self.hw = without_calibration(hw)
        g = Graph("calibration", "infer", obs[0].op.dtype, [o.op for o in obs])
        self.placed = law.place(g, self.hw)
        raw = law.timed(self.placed, neutral(self.hw))
        self.cols = raw.cols
        self.d0 = np.asarray(raw.data_s, float).reshape(-1)       # data seconds at η = 1
        self.c0 = np.asarray(raw.compute_s, float).reshape(-1)    # compute seconds at η = 1
        self.meas = np.array([o.time_s for o in obs])
        self.offset = np.array([o.offset_s for o in obs])
        self.ds = np.array([o.dataset for o in obs], dtype=object)
        self.kinds = np.array(KINDS)[self.cols.kind_idx]
        self.names = np.array([o.op.name for o in obs], dtype=object)
        self.dtypes = np.array(self.cols.dtypes)
        self.w = self._weights()

    def _weights(self) -> np.ndarray:
        w = np.zeros(len(self.obs))
        for d in set(self.ds.tolist()):
            sel = self.ds == d
            w[sel] = np.sqrt(self.meas[sel]) / np.sqrt(self.meas[sel]).sum() if self.weighting == "sqrt_time" \
                else 1.0 / sel.sum()
        return w

    def sub(self, rows: np.ndarray) -> "Problem":
        p = Problem(self.hw, [o for o, r in zip(self.obs, rows) if r], self.weighting)
        if self.weighting == "sqrt_time":
            p.w = self.w[rows]
        return p

    def times(self, cal: dict) -> np.ndarray:
        """Per-op kernel times of ``cal`` (a table), the measurement's own offset added: ``law.timed``."""
        kernel = Calibration.of({k: v for k, v in cal.items() if k not in KERNEL_ONLY})
        est = law.timed(self.placed, replace(self.hw, calibration=kernel))
        return np.asarray(est.op_time_s, float).reshape(-1) + self.offset

    def loss(self, cal: dict, rows: np.ndarray | None = None) -> float:
        rows = np.ones(len(self.meas), bool) if rows is None else rows
        if not rows.any():
            return 0.0
        t = self.times(cal)[rows]
        return float(np.sum(self.w[rows] * np.abs(np.log(t / self.meas[rows]))) / np.sum(self.w[rows]))

    def all(self) -> np.ndarray:
        return np.ones(len(self.meas), bool)


# ---------------------------------------------------------------- what the data can pin

def packs_weights(hw) -> bool:
    """Whether GEMMs on ``hw`` may leave weight traffic and compute un-overlapped (``serial``): a CPU
    BLAS copies (packs) each weight panel before computing on it; GPU kernels stream tiles through
    shared memory while computing, so on a GPU ``serial`` is not fitted."""
    return hw.kind == "cpu"


def spills(hw, cols: Columns, rows: np.ndarray) -> bool:
    """Whether some of ``rows`` is a GEMM (not a GEMV) whose weights exceed the resident fraction of the
    last cache level, so that ``pack`` (the spilled packed copy) can be fitted."""
    limit = pack_limit_bytes(hw)
    if limit is None:
        return False
    w = cols.bytes.get("weights", np.zeros(cols.flops.shape)).reshape(len(rows), -1)[:, 0]
    m = gemm_dims(cols)[0].reshape(len(rows), -1)[:, 0]
    return bool(np.any(rows & (w > limit) & (m >= 2)))


def serial_identifiable(cols: Columns, rows: np.ndarray, table: dict | None = None) -> bool:
    """``serial`` can be told apart from η only with GEMMs (not GEMVs) that read weights from memory."""
    m = gemm_dims(cols)[0].reshape(len(rows), -1)[:, 0]
    kn = kn_rows(cols).reshape(-1)
    w = cols.bytes.get("weights", np.zeros(cols.flops.shape)).reshape(len(rows), -1)[:, 0]
    return int(np.sum(rows & ~is_gemv(table or {}, m, kn) & (w > 0))) >= 2


def layouts_identifiable(cols: Columns, rows: np.ndarray, table: dict | None = None) -> bool:
    """``m_half_nt`` can be told from ``m_half`` only with GEMMs (not GEMVs) of both weight layouts, two of each."""
    m = gemm_dims(cols)[0].reshape(len(rows), -1)[:, 0]
    kn = kn_rows(cols).reshape(len(rows), -1)[:, 0]
    g = rows & ~is_gemv(table or {}, m, kn)
    return int(np.sum(g & kn)) >= 2 and int(np.sum(g & ~kn)) >= 2


# ---------------------------------------------------------------- fitting a group of parameters

def fit_group(prob: Problem, cal: dict, params: list[tuple], starts: list[list[float]]) -> dict:
    """Fit ``params`` [(path, upper)] (log space) on all of ``prob`` from the best two of ``starts``; the
    fitted values rounded to 4 significant digits."""
    def apply(x):
        c = copy_table(cal)
        for (path, upper), xi in zip(params, x):
            set_path(c, path, float(min(max(math.exp(max(min(xi, 50.0), -200.0)), floor(path)), upper)))
        return c
    loss = lambda x: prob.loss(apply(x))  # noqa: E731
    ranked = sorted(([math.log(v) for v in s] for s in starts), key=loss)
    best = min((minimize(loss, x0, rounds=2, iters=250) for x0 in ranked[:2]), key=loss)
    out = apply(best)
    for path, _ in params:
        d = out
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = float(f"{d[path[-1]]:.4g}")
    return out


def grid(*axes) -> list[list[float]]:
    return [list(p) for p in itertools.product(*axes)]


def set_path(cal: dict, path: tuple, value: float) -> None:
    d = cal
    for k in path[:-1]:
        d = d.setdefault(k, {})
    d[path[-1]] = value


def floor(path: tuple) -> float:
    """The smallest value a fitted parameter may take (exp of a wandering simplex can underflow to 0,
    which the table's check rightly refuses)."""
    if "latency_s" in path:
        return LAT_BOUNDS[0]
    if path[-1] in ("key_s", "split_s", "merge_s", "cta_s", "unit_s", "write_s", "swap_s", "tile_s", "plan_split_s", "plan_merge_s"):
        return KEY_S_FLOOR
    if path[-1] in ("m_half", "nk_half", "m_half_nt", "k_half"):
        return HALF_BOUNDS[0]
    return ETA_MIN


def exp(x: float) -> float:
    return math.exp(min(max(float(x), -60.0), 60.0))       # the simplex may wander; keep exp finite


def clip(x: float, lo: float, hi: float) -> float:
    return min(max(x, lo), hi)


def copy_table(c: dict) -> dict:
    return {k: (copy_table(v) if isinstance(v, dict) else (list(v) if isinstance(v, list) else v)) for k, v in c.items()}


def round4(x):
    """A fitted number to 4 significant digits; a measured table (``gemv_row``'s pairs) as the probe wrote it."""
    if isinstance(x, (list, tuple)):
        return [list(v) for v in x]
    return float(f"{x:.4g}")


def minimize(f, x0, rounds: int = 2, iters: int = 300, rtol: float = 1e-5) -> np.ndarray:
    """Nelder–Mead with restarts (no scipy needed); small problems, a few parameters. A round stops when the
    simplex's losses agree within ``rtol`` of the best (or within 1e-10: a noiseless fit down to zero loss)."""
    x = np.asarray(x0, float)
    for _ in range(rounds):
        n = len(x)
        simplex = [x] + [x + 0.3 * np.eye(n)[i] for i in range(n)]
        vals = [f(s) for s in simplex]
        for _ in range(iters):
            order = np.argsort(vals)
            simplex, vals = [simplex[i] for i in order], [vals[i] for i in order]
            if abs(vals[-1] - vals[0]) <= rtol * abs(vals[0]) + 1e-10:
                break
            simplex, vals = _step(f, simplex, vals)
        x = simplex[int(np.argmin(vals))]
    return x


def _step(f, simplex: list, vals: list) -> tuple[list, list]:
    """One Nelder–Mead move of a sorted simplex: reflect, expand, contract or shrink."""
    c = np.mean(simplex[:-1], axis=0)
    xr = c + (c - simplex[-1])
    fr = f(xr)
    if fr < vals[0]:
        xe = c + 2.0 * (c - simplex[-1])
        fe = f(xe)
        simplex[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
    elif fr < vals[-2]:
        simplex[-1], vals[-1] = xr, fr
    else:
        xc = c + 0.5 * (simplex[-1] - c)
        fc = f(xc)
        if fc < vals[-1]:
            simplex[-1], vals[-1] = xc, fc
        else:
            simplex = [simplex[0]] + [simplex[0] + 0.5 * (s - simplex[0]) for s in simplex[1:]]
            vals = [vals[0]] + [f(s) for s in simplex[1:]]
    return simplex, vals
