"""How a GEMM class's rows are timed when fitted on measured kernel tables: the operands the collector's repeated calls
keep in the last cache level (``kernelfit.forms.fit_operands``, provenance ``operands_from``), and the fixed latency
held under the fastest measured call (``shapefit.latency_floor``); on the H100 extract of aiconfigurator-core
0.12.0 (tests/data/kernel_tables)."""
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.machine import calibration, hardware  # noqa: E402
from ironlaw.machine.cache import repeated_limit_bytes  # noqa: E402
from ironlaw.measure.calibrate import kernelfit  # noqa: E402
from ironlaw.measure.calibrate.kernelfit import shapefit  # noqa: E402
from ironlaw.measure.calibrate.fitcore import Problem  # noqa: E402


def test_the_fixed_latency_stays_under_the_fastest_fitted_call(h100_gemm_fit):
    hw, gs, fit = h100_gemm_fit
    for fill in ("half", "stream"):
        cal = fit(fill)
        for g in gs:
            fitted_rows, _ = kernelfit.split(g.rows, g.op)
            floor = float(np.min(kernelfit.rows.shape_rows(fitted_rows).latency_s))
            assert 0 < cal["matmul"][g.key[1]]["latency_s"] <= floor * (1 + 1e-3), (fill, g.name)


def test_the_floor_bounds_gemm_decode_and_serving_framework_prefill_latency_only():
    g = kernelfit.Group("gemm bf16", ("matmul", "bf16"), "gemm", None, None)
    rows = type("Rows", (), {"latency_s": np.array([4e-6, 2.5e-6, 9e-6]), "__len__": lambda self: 3})()
    bounds, starts = shapefit.within_floor(g, rows, shapefit.STREAM_PARAMS, [[0.8, 1.0, 2.0, 0.5, 1e6, 0.3, 3e-6]])
    assert dict(bounds)["latency_s"] == 2.5e-6 and starts[0][-1] == pytest.approx(0.9 * 2.5e-6)
    assert dict(bounds)["eta_max"] == 1.0 and starts[0][:-1] == [0.8, 1.0, 2.0, 0.5, 1e6, 0.3]
    attn = replace(g, op="context_attention", table=SimpleNamespace(framework="trtllm"))
    assert shapefit.within_floor(attn, rows, shapefit.PARAMS, [[1.0] * 6]) == (shapefit.PARAMS, [[1.0] * 6])
    for framework in ("vllm", "sglang"):                      # their context classes are capped, every regime
        for regime in ("", "_mha", "_wide", "_window"):
            ctx = replace(attn, key=("kernel", f"attention_context_bf16_kv_bf16{regime}"),
                          table=SimpleNamespace(framework=framework))
            bounds, starts = shapefit.within_floor(ctx, rows, shapefit.PARAMS, [[1.0] * 6])
            assert dict(bounds)["latency_s"] == 2.5e-6 and starts[0][-1] == pytest.approx(0.9 * 2.5e-6)
    for op in ("generation_attention", "generation_mla"):     # decode classes are capped as GEMMs are
        bounds, starts = shapefit.within_floor(replace(g, op=op), rows, shapefit.PARAMS, [[1.0] * 6])
        assert dict(bounds)["latency_s"] == 2.5e-6 and starts[0][-1] == pytest.approx(0.9 * 2.5e-6)
        assert dict(bounds)["m_half"] == 1e6 and starts[0][:-1] == [1.0] * 5
    wide = replace(g, op="generation_attention", key=("kernel", "attention_generation_bf16_kv_bf16_wide"))
    assert shapefit.within_floor(wide, rows, shapefit.PARAMS, [[1.0] * 6]) == (shapefit.PARAMS, [[1.0] * 6])


def test_cache_operands_mark_the_rows_that_fit_the_last_cache_level(h100_gemm_fit):
    hw, gs, _ = h100_gemm_fit
    g = next(g for g in gs if g.name == "gemm bf16")
    limit = repeated_limit_bytes(hw)
    cached = kernelfit.observations(replace(g, operands="cache"), g.rows, hw)
    byts = np.array([sum(o.op.bytes.values()) for o in cached])
    marked = np.array([bool(o.op.attrs.get("resident")) for o in cached])
    assert marked.any() and (~marked).any() and np.array_equal(marked, byts <= limit)
    assert not any(o.op.attrs.get("resident") for o in kernelfit.observations(g, g.rows, hw))   # "memory"


def test_the_fit_keeps_the_operands_with_the_smaller_loss_and_scores_as_it_fitted(h100_gemm_fit):
    hw, gs, fit = h100_gemm_fit
    cal = fit("half")
    g = gs[0]
    how = cal["provenance"][g.name]["operands_from"]
    assert how in kernelfit.vocabulary.OPERANDS and kernelfit.collector.timed_as(cal, g).operands == how
    rows = kernelfit.rows.shape_rows(kernelfit.split(g.rows, g.op)[0])
    loss = {}
    for other in kernelfit.vocabulary.OPERANDS:
        timed = replace(g, operands=other)
        table = kernelfit.classfit.fit_class(hw, timed, kernelfit.split(g.rows, g.op)[0])
        one = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": [g.name], "matmul": {g.key[1]: table}}
        loss[other] = Problem(hw, kernelfit.observations(timed, rows, hw), weighting="per_case").loss(one)
    assert how == min(loss, key=loss.get) and loss["copies"] != loss["memory"]
    flipped = {**cal, "provenance": {**cal["provenance"], g.name: {**cal["provenance"][g.name],
                                                                     "operands_from": "copies" if how == "memory" else "memory"}}}
    as_fitted, other = (kernelfit.score(hw, c, [g])[0] for c in (cal, flipped))
    assert as_fitted.median_abs_err != other.median_abs_err     # the score reads the recorded choice


def test_a_device_without_a_cache_level_fits_memory_operands():
    b200 = hardware.get("b200")
    assert repeated_limit_bytes(b200) is None
    g = kernelfit.Group("gemm bf16", ("matmul", "bf16"), "gemm", None, None)
    assert kernelfit.collector.timed_as({}, g).operands == "memory"


def test_an_unknown_operands_source_is_refused():
    base = hardware.get("l40s").calibration.table()
    name = next(iter(base["provenance"]))
    bad = {**base, "provenance": {**base["provenance"], name: {**base["provenance"][name], "operands_from": "l2"}}}
    with pytest.raises(IronlawError, match="operands_from: must be one of cache, copies, memory, got 'l2'"):
        calibration.check(bad, "calibration")
