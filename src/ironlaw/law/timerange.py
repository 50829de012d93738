"""A prediction's range on a probed machine: the rates the probe saw and the law's own miss on its reference runs.

A probed profile keeps the spread of what it measured (``[probe]``): each row's coefficient of variation
over its repeats (``cv``) and the drift sentinels, the same fp32 GEMM and DRAM copy timed at the start,
the end and evenly through the run (``checks.drift``; every round's with --rounds). Per term, a rate factor
range [lo, hi] around the profile's rate:

    compute      [q10(g)/med(g) · (1 − cv_gemm), q90(g)/med(g) · (1 + cv_gemm)]   g: the sentinel GEMM rates
    device tier  the same with the sentinel copy rates and the tier's copy rows' cv
    cache tier   [1 − cv, 1 + cv] of its copy rows
    latency      the compute factors with the dispatch rows' cv on a CPU (the host's cores run the
                 dispatch); [1 − cv, 1 + cv] of the dispatch rows on a GPU

(cv: the median over the rows; 1 − cv never below ``MIN_FACTOR``). A probe saved past the checks that
``ironlaw probe --strict`` refuses on (``checks.refused``: a row that stayed noisy, a lost core, a threefold
drift) is unsteady: each term takes the largest cv of its rows instead of the median, and ``source`` says
why. The machine's low end is the law with every term at its fast end (each tier's seconds / hi, compute /
hi, latency / hi), composed as the prediction was; its high end with every term at its slow end.

The law's own miss on the probe's reference runs (``[probe.references].model_spread``: per op kind, an
80% interval of measured over predicted op time) gives the model's ends, each op scaled by its kind's
interval. Machine and model are independent: their log half-widths add in quadrature,
``t · exp(±√(ln(machine end / t)² + ln(model end / t)²))``.

Micro-benchmarks last milliseconds; a whole model run is slower to sample the machine's swings. Where the
probe timed its reference runs (``[probe.references].run_spread``: the median over them of the fastest and
slowest run against the median run), each end is the wider of the term-by-term end and the prediction
scaled by that spread. A catalog device was not probed: no range.
"""
from __future__ import annotations

import math

import numpy as np

from .efficiency import composed, floored
from ..core.graph import KINDS

MIN_FACTOR = 0.2           # a rate factor's floor: a cv near 1 says the row is noise, not that the rate is 0
QUANTILES = (0.1, 0.9)     # an 80% interval: of the machine's rates here, of the law's miss in selfcal.model_spread


def factors(hw) -> dict | None:
    """{"compute": (lo, hi), "latency": (lo, hi), "tiers": {name: (lo, hi)}} rate factors, None unless
    ``hw`` was probed."""
    probe = hw.extra.get("probe")
    if not probe:
        return None
    drift = probe.get("checks", {}).get("drift", {})
    every = drift.get("rounds", drift)             # with --rounds, every round's sentinels
    g = _drift(every.get("gemm_flops_per_s"))
    c = _drift(every.get("copy_Bps"))
    import statistics                              # a probed profile only: a cold `analyze` skips its import
    spread = max if unsteady(hw) else statistics.median
    gemm = [r for r in probe.get("gemm", []) if r.get("weights") != "cold"] + probe.get("conv", [])
    compute = _widened(g, _cv(gemm, spread))
    dispatch_cv = _cv(probe.get("dispatch", []), spread)
    latency = _widened(g if hw.kind == "cpu" else (1.0, 1.0), dispatch_cv)
    tiers = {}
    for t in hw.memory:
        rows = [r for r in probe.get("memory", []) if r["level"] == t.name]
        tiers[t.name] = _widened(c if t.role == "device" else (1.0, 1.0), _cv(rows, spread))
    return {"compute": compute, "latency": latency, "tiers": tiers}


def unsteady(hw) -> list[str]:
    """The checks the probe of ``hw`` did not pass and was saved past (``ironlaw probe`` without --strict);
    [] for a steady probe or a device that was not probed."""
    probe = hw.extra.get("probe") or {}
    return list(probe.get("checks", {}).get("refused", []))


def time_range(est) -> list[float] | None:
    """[low, high] seconds of one configuration's estimate: the machine's observed rates and the law's own
    miss on the reference runs, combined; None on a device that was not probed."""
    f = factors(est.hw)
    if f is None or est.cols.cfg_shape != ():
        return None
    t = float(est.time_s)
    if not math.isfinite(t) or t <= 0:
        return [t, t]
    lo, hi = (_total(est, f, end) for end in (1, 0))        # fast end (rates × hi), slow end (rates × lo)
    m_lo, m_hi = _model_ends(est)
    lo, hi = t * math.exp(-math.hypot(math.log(t / lo), math.log(t / m_lo))), \
        t * math.exp(math.hypot(math.log(hi / t), math.log(m_hi / t)))
    runs = run_spread(est.hw)
    return [min(lo, t * runs[0]), max(hi, t * runs[1])]


def _model_ends(est) -> tuple[float, float]:
    """(low, high) seconds with each op's time scaled by its kind's ``model_spread`` (the pooled ``all`` for
    a kind the reference runs lacked); the prediction itself where the probe fitted no reference runs."""
    spread = (est.hw.extra.get("probe") or {}).get("references", {}).get("model_spread")
    t = float(est.time_s)
    if not spread:
        return t, t
    pooled = spread.get("all", [1.0, 1.0])
    f = np.array([spread.get(k, pooled) for k in KINDS])[est.cols.kind_idx]          # (n_ops, 2)
    op_s = np.asarray(est.op_total_s, dtype=float)
    return float(op_s @ f[:, 0]), float(op_s @ f[:, 1])


def run_spread(hw) -> tuple[float, float]:
    """(fastest, slowest) whole run against the median run of the probe's reference runs; (1, 1) without."""
    spread = (hw.extra.get("probe") or {}).get("references", {}).get("run_spread")
    return (float(spread[0]), float(spread[1])) if spread else (1.0, 1.0)


def source(est) -> str:
    """Where the range comes from, in one line (docs/how-it-models.md: "A prediction's range")."""
    if factors(est.hw) is None:
        return (f"none: {est.hw.name} was not probed; its catalog numbers carry no measured spread "
                f"(ironlaw probe measures one)")
    why = unsteady(est.hw)
    return ("each term at the slowest and fastest rate the probe observed on this machine (its drift sentinels "
            "and the rows' spread), in quadrature with the law's miss per op kind on the probe's reference runs, "
            "at least those runs' run-to-run spread"
            + (f"; wider: the probe ran on an unsteady machine and was saved past its checks (each term takes its "
               f"rows' largest spread): {'; '.join(r.removeprefix('probe: ') for r in why)}" if why else ""))


def _total(est, f: dict, end: int) -> float:
    tier_f = np.array([f["tiers"].get(t.name, (1.0, 1.0))[end] for t in est.hw.memory])
    data_tier_s = est.data_tier_s / tier_f.reshape((-1,) + (1,) * (est.data_tier_s.ndim - 1))
    data_s = data_tier_s.sum(axis=0)
    compute_s = est.compute_s / f["compute"][end]
    latency_s = est.latency_s / f["latency"][end]
    if est.composition == "overlap":
        op = composed(data_s, compute_s, est.terms.serial, data_s * est.terms.epilogue)
    else:
        op = data_s + compute_s
    op = floored(op + latency_s + est.network_s, est.terms.floor_s, est.terms.floor_share)
    total = float((op * est.cols.count).sum())
    return total if bool(np.all(est.placement.fits)) else float("inf")


def _drift(values) -> tuple[float, float]:
    """The sentinel values' ``QUANTILES`` over their median (linear between the samples); (1, 1) without at
    least two."""
    if not values or len(values) < 2:
        return 1.0, 1.0
    import statistics
    med = statistics.median(values)
    lo, hi = np.percentile(values, [100 * q for q in QUANTILES])
    return float(lo) / med, float(hi) / med


def _cv(rows: list[dict], spread=None) -> float:
    """The rows' spread: their median cv (``spread`` None), or with ``spread=max`` the largest (an unsteady
    probe)."""
    if spread is None:
        import statistics
        spread = statistics.median
    return spread(r["cv"] for r in rows) if rows else 0.0


def _widened(drift: tuple[float, float], cv: float) -> tuple[float, float]:
    return max(drift[0] * (1.0 - cv), MIN_FACTOR), drift[1] * (1.0 + cv)
