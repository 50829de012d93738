"""The routed experts' grouped GEMM pays its weights' streaming and its FLOPs one after the other in ``engine.FITTED``
(``ServingConstants.expert_serial`` 1); ``expert_serial`` 0 overlaps them, a what-if (docs/accuracy.md, "The routed
experts' streaming and FLOPs overlapped"), priced the same by the model and by trtllm_h100.py's fast path."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ironlaw.core.errors import IronlawError
from ironlaw.machine import hardware
from ironlaw.models.serving import engine, step
from ironlaw.models.serving.engine import FITTED

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import trtllm_h100 as h100  # noqa: E402

EP8 = engine.Layout(tp=8, ep=8, attention_dp=True)


def test_fitted_pays_the_two_one_after_the_other():
    assert FITTED.expert_serial == 1.0
    assert FITTED.grouped_gemm()["serial"] == 1.0
    assert replace(FITTED, expert_serial=0.0).grouped_gemm()["serial"] == 0.0
    with pytest.raises(IronlawError, match=r"expert_serial must be a share in \[0, 1\], got 1.5"):
        replace(FITTED, expert_serial=1.5).grouped_gemm()


def _routed(serial: float):
    """(data, compute, latency, composed) seconds of the routed GEMMs in Qwen3-235B-A22B's decode step on H200
    (375 sequences per rank, EP 8)."""
    h = hardware.get("h200")
    c = replace(FITTED, expert_serial=serial)
    meta, limits, mem = engine.prepare("qwen3-235b-a22b", h, EP8, "fp8", "fp8", 128, 2048, 0.95, 2048, None, c)
    run = engine.engine_of("qwen3-235b-a22b", h, EP8, "fp8", "fp8", (128, 2048), meta, limits, mem, 375, c)
    est = step.step_seconds(run, 375, 0.0, 0.0, True)[1]
    n = len(est.graph.ops)
    rows = [j for j, k in enumerate(est.cols.kernels) if str(k) == step.GROUPED_GEMM]
    assert rows, "the step has routed GEMMs on the grouped-GEMM class"
    pick = [np.asarray(a, float).reshape(n, -1)[rows, 0] for a in
            (est.data_s, est.compute_s, est.latency_s, est.op_time_s)]
    return pick


def test_overlapped_the_routed_gemm_lasts_the_longer_of_the_two():
    d1, c1, l1, t1 = _routed(1.0)
    d0, c0, l0, t0 = _routed(0.0)
    assert d0 == pytest.approx(d1) and c0 == pytest.approx(c1)        # the same terms, composed otherwise
    # the epilogue's stores follow either way (``efficiency.composed``): what the overlap saves is the shorter of
    # the reads and the FLOPs, at most min(data, compute)
    saved = t1 - t0
    assert np.all(saved > 0.2 * np.minimum(d1, c1)) and np.all(saved <= np.minimum(d1, c1) * (1 + 1e-6))
    assert np.all(t0 >= np.maximum(c0, 0.5 * d0) + l0) and np.all(t1 <= d1 + c1 + l1 + 1e-12)


def test_the_fast_path_prices_the_overlap_as_the_model_does():
    """trtllm_h100.CellTerms re-times a cell from its per-op terms; with ``expert_serial`` 0 it must give the
    model's own time (its main() asserts the same for every cell it scores)."""
    cell = next(c for c in h100.cells(h100.ROOT / "tests/data/trtllm_perf_overview_h200.csv")
                if (c["model"], c["isl"], c["osl"]) == ("qwen3-235b-a22b", 1000, 2000))
    cell = {**cell, "spec": h100.spec_for(cell["model"])}
    c = replace(h100.fitted(), expert_serial=0.0)
    est = h100.predict(cell, "h200", c)
    terms = h100.CellTerms(est, cell)
    assert terms.time(vars(est.constants)) == pytest.approx(est.time_s, rel=1e-6)
    assert terms.time({**vars(est.constants), "expert_serial": 1.0}) > 1.05 * est.time_s
