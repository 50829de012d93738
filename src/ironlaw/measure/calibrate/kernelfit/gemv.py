"""The GEMV rule: a GEMV whose weights exceed the last cache level streams them from device memory, and a GEMM
class's table is refitted until it prices such a row's compute at most at its data time.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ....core.errors import IronlawError
from ....core.gemmshape import GEMV_STREAM_MARGIN
from ....core.graph import Graph
from ....machine.calibration import SCHEMA, Calibration, without_calibration
from ..fitcore import HALF_BOUNDS
from .ops import gemm_op
from .vocabulary import Group

# the small-M rule (``gemvs_stream``): a GEMV, gemm:1,N,K with N and K at least GEMV_RULE_NK (a 1024 × 1024 weight: an
# LLM's smallest projection) whose weights exceed the last cache level (a decode step's), streams its weights from
# device memory (L40S bf16, aiconfigurator-core 0.12.0: gemm:1,8192,8192 at 924 GB/s of the GDDR6's 864 GB/s,
# gemm:1,16384,16384 at 793 GB/s); a GEMM class's fitted table, in any form, prices such a row's compute
# at most at its data time, so that its binding resource is a memory tier and the time a half-point M term carried as a
# tiny compute η is the weights' streaming (their η, the grid) instead. Where the fit's m_half breaks it, the class is
# refitted with m_half at most GEMV_STREAM_MARGIN (core.gemmshape) of the value at which the worst GEMV's compute would equal its data
# time (a GEMV's compute term scales as 1 + m_half), up to GEMV_RULE_TRIES times, then with m_half at its floor; in
# the stream form, which holds an m_half 0 table beside it, its half-point is refitted at its floor (``streaming_gemvs``).
# Without the rule the half-point forms put H200 bf16 gemm:1,8192,8192, the L40S, RTX PRO 6000 and Blackwell FP4
# GEMVs on the tensor cores (docs/accuracy.md, "A GEMV's time is its weights' streaming")
GEMV_RULE_NK = 1024
GEMV_RULE_TRIES = 3


def gemv_share(hw, g: Group, rows, table: dict) -> float | None:
    """The largest compute over data time the law with ``table`` gives ``g``'s GEMVs that stream their weights from
    device memory, each weighed by the power its resource draws flat out (``power_ratio``): gemm:1,N,K at each N, K
    of ``rows`` both at least ``GEMV_RULE_NK`` whose weights exceed ``hw``'s last cache level
    (``cache.repeated_limit_bytes``: neither a lone op nor the collector's repeated calls keep them there), or where
    no such pair's do, at the largest N and K of ``rows`` (ROCm/aiter's MI300X fp8 rows reach 131 M weight elements,
    its 256 MiB cache holds them); None where those do not exceed it either. At most 1: the GEMVs bind memory both in
    time (``explain.labels``) and in power (``power.utilization``)."""
    from types import SimpleNamespace
    from ....law import law
    from ....machine.cache import repeated_limit_bytes
    limit = repeated_limit_bytes(hw) or 0.0
    gemv = lambda pairs: [op for op in (gemm_op(SimpleNamespace(m=1, n=n, k=k), g) for n, k in sorted(pairs))  # noqa: E731
                          if op.bytes.get("weights", 0.0) > limit]
    ops = gemv({(int(n), int(k)) for n, k in zip(rows.n, rows.k) if n >= GEMV_RULE_NK and k >= GEMV_RULE_NK}) or \
        gemv({(int(np.max(rows.n)), int(np.max(rows.k)))})
    if not ops:
        return None
    bare = without_calibration(hw)
    placed = law.place(Graph("gemvs", "infer", g.key[1], ops), bare)
    cal = {"schema": SCHEMA, "source": "derived: fitting", "fitted": [g.name], g.key[0]: {g.key[1]: table}}
    est = law.timed(placed, replace(bare, calibration=Calibration.of(cal)))
    data, compute = (np.asarray(x, float).reshape(-1) for x in (est.data_s, est.compute_s))
    return float(np.max(compute / np.maximum(data, 1e-30))) * power_ratio(hw)


def power_ratio(hw) -> float:
    """The tensor cores' power flat out over the device memory's (``power.dynamic_w``): where a hardware file states
    its memory's own power (H200: 469 W of a 700 W TDP, 120 W idle, 0.60 of the compute's above idle), a GEMV whose
    compute time is 0.6-1 of its data time binds memory in time but draws the tensor cores' power
    (tests/test_gemv_binding.py); 1 on a device without that figure or without power figures."""
    from ....law.power import dynamic_w, has_power
    if not has_power(hw):
        return 1.0
    return dynamic_w(hw, "compute") / dynamic_w(hw, f"bandwidth:{hw.memory[hw.device_tier].name}")


def streaming_gemvs(hw, g: Group, rows, tables: list[dict], at_floor) -> list[dict]:
    """The small-M rule in the stream form (``fit_stream``'s tables, each with its grid): those whose GEMVs bind
    memory (``gemv_share`` at most 1), and where one breaks it, ``at_floor()``'s tables in its place: its half-point
    refitted with m_half at its floor (from the half-point try's own starts), not at the rule's edge, since the m_half
    0 table already prices a small-M GEMM's cost per weight element as the weights' streaming, and a bound the fit
    runs into says the rows cannot pin it. None left is an error."""
    kept = [t for t in tables if (gemv_share(hw, g, rows, t) or 0.0) <= 1.0]
    if len(kept) < len(tables):
        kept += [t for t in at_floor() if (gemv_share(hw, g, rows, t) or 0.0) <= 1.0]
    if not kept:
        raise IronlawError(f"calibrate --kernels: {g.name}: its GEMVs (gemm:1,N,K) come out compute-bound in "
                           f"the stream form; no GEMM form prices them so")
    return kept


def gemvs_stream(hw, g: Group, rows, table: dict, refit) -> dict:
    """``table`` where its GEMVs bind memory (``gemv_share`` at most 1: the small-M rule, ``GEMV_RULE_NK``); else
    ``refit(m_half_max)``'s table, m_half at most ``GEMV_STREAM_MARGIN`` of the value at which the worst GEMV's compute
    would equal its data time, until they do (at most ``GEMV_RULE_TRIES`` times, then with m_half at its floor).
    A table whose GEMVs still bind compute with m_half at its floor is an error: no form may price them so."""
    share = gemv_share(hw, g, rows, table)
    for i in range(GEMV_RULE_TRIES + 1):
        if share is None or share <= 1.0:
            return table
        m_half = float(table.get("m_half", 0.0))
        if m_half <= HALF_BOUNDS[0]:
            break
        top = HALF_BOUNDS[0] if i == GEMV_RULE_TRIES else \
            max(GEMV_STREAM_MARGIN * (1.0 + m_half) / share - 1.0, HALF_BOUNDS[0])
        table = refit(top)
        share = gemv_share(hw, g, rows, table)
    raise IronlawError(f"calibrate --kernels: {g.name}: its GEMVs (gemm:1,N,K) come out compute-bound "
                       f"({share:.2f} × their data time) with m_half at its floor; no GEMM form prices them so")
