"""A floor that a call's work overlaps (``floor_s``, ``floor_share``; ``efficiency.floored``): the law prices a call of
such a class at max(floor, its law time) plus a share of the shorter, in the op's time, the critical path and the
range alike; the fitter tries it on the classes of ``kernelfit.rules.OVERLAP_FLOOR`` only; the B60's vLLM attention
classes store it (aiconfigurator-core 0.12.0's eager XPU timings: docs/accuracy.md, "Intel Arc Pro B60 on vLLM's XPU
kernels"); a calibration file's values are checked."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from attention_cases import decode_case, op_s, relaunched
from ironlaw.core.errors import IronlawError
from ironlaw.law import critical_path, efficiency, law
from ironlaw.machine import calibration, engines, hardware
from ironlaw.measure.calibrate.kernelfit import rules, shapefit

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import kernel_versions  # noqa: E402

SHARE = 1.0 / 6.0


def test_floored_is_the_longer_of_floor_and_work_and_a_share_of_the_shorter():
    got = efficiency.floored(np.array([30e-6, 60e-6, 100e-6]), 60e-6, SHARE)
    assert got == pytest.approx([60e-6 + 5e-6, 70e-6, 100e-6 + 10e-6])
    assert efficiency.floored(np.array([30e-6]), 0.0, 0.0) == pytest.approx([30e-6])     # no floor: as composed


@pytest.fixture(scope="module")
def b60_decode():
    """B60 under its vLLM engine file, and a decode step's attention op (32 heads on 8 KV heads × 128, batch 64 at
    1,023 cached tokens)."""
    hw, _ = engines.with_engine(hardware.get("b60"), "vllm")
    return (hw, *decode_case(32, 8, 64, 1023, 128))


def test_a_class_floor_is_overlapped_by_the_work_not_added_to_it(b60_decode):
    """The op's law time t without a floor: a floor under t prices t + share · floor, one over it floor + share · t.
    """
    hw, g, i, op = b60_decode
    plain = op_s(g, i, replace(hw, calibration=relaunched(hw, op, floor_s=0.0)))
    for floor in (0.5 * plain, 3.0 * plain):
        cal = relaunched(hw, op, floor_s=floor, floor_share=SHARE)
        got = op_s(g, i, replace(hw, calibration=cal))
        assert got == pytest.approx(max(floor, plain) + SHARE * min(floor, plain), rel=1e-9)


def test_the_critical_path_prices_the_floor_as_the_law_does(b60_decode):
    hw, g, i, op = b60_decode
    floored = replace(hw, calibration=relaunched(hw, op, floor_s=1e-2, floor_share=SHARE))
    est = law.predict(g, floored)
    cp = critical_path.from_estimate(est)
    assert float(np.sum(est.op_time_s * est.cols.count)) == pytest.approx(cp.time_s, rel=1e-6)
    assert cp.time_s > 1e-2        # the attention op's floor holds on the path


def test_the_stored_b60_attention_classes_take_the_overlapped_floor():
    """Every vLLM decode class of the engine file, fitted with the floor beside the plain form, kept it: a floor at
    its fastest fitted call (57.6-64 µs in the decode table) and the collector's share of one call in six."""
    cal = engines.with_engine(hardware.get("b60"), "vllm")[0].calibration
    gen = {k: p for k, p in cal.kernel.items() if k.startswith("attention_generation")}
    assert len(gen) == 8
    for name, p in gen.items():
        assert 57.6e-6 <= p["floor_s"] <= 65e-6 and p["floor_share"] == pytest.approx(SHARE, abs=1e-4), name


def test_the_floor_is_tried_on_the_rule_s_gpu_framework_and_ops_only():
    def group(gpu, framework, op):
        return SimpleNamespace(table=SimpleNamespace(gpu=gpu, framework=framework), op=op)
    assert shapefit.overlap_floored(group("b60", "vllm", "generation_attention"))
    assert shapefit.overlap_floored(group("b60", "vllm", "context_attention"))
    assert not shapefit.overlap_floored(group("h100", "vllm", "generation_attention"))
    assert not shapefit.overlap_floored(group("b60", "vllm", "gemm"))
    assert rules.OVERLAP_FLOOR_RUNS == 6


def test_the_fit_adds_a_floor_bounded_by_the_fastest_call_only_where_asked():
    rows = _Rows(np.array([80e-6, 58e-6, 300e-6]))
    bounds, starts = (("latency_s", 1e-3),), [[1e-5]]
    assert shapefit.with_overlap_floor({}, rows, bounds, starts) == (bounds, starts)
    b, s = shapefit.with_overlap_floor({"floor_s": 1e-6}, rows, bounds, starts)
    assert b[-1] == ("floor_s", 58e-6) and s[0][-1] == pytest.approx(shapefit.OVERLAP_FLOOR_START * 58e-6)


class _Rows:
    def __init__(self, latency_s):
        self.latency_s = latency_s

    def __len__(self):
        return len(self.latency_s)


@pytest.mark.parametrize("fields", [{"floor_s": -1e-6}, {"floor_s": 2.0}, {"floor_s": 5e-5, "floor_share": 1.5},
                                    {"floor_s": None, "floor_share": 0.2}])
def test_a_floor_out_of_range_or_a_share_without_one_is_refused(b60_decode, fields):
    hw, g, i, op = b60_decode
    cal = hw.calibration.table()
    table = {**cal["kernel"][op.attrs["kernel"]], **fields}
    cal["kernel"][op.attrs["kernel"]] = {k: v for k, v in table.items() if v is not None}
    with pytest.raises(IronlawError, match="floor_s"):
        calibration.check(cal, "calibration")



def test_the_range_prices_the_floor_as_the_law_does(b60_decode):
    """A probe whose every rate held steady (factor 1 at both ends): the range's ends are the law's time, floor
    included (the range recomposes each op from its terms)."""
    from ironlaw.law import timerange
    hw, g, i, op = b60_decode
    steady = replace(hw, calibration=relaunched(hw, op, floor_s=1e-2, floor_share=SHARE),
                     extra={**hw.extra, "probe": {"checks": {}}})
    est = law.predict(g, steady)
    assert timerange.time_range(est) == pytest.approx([float(est.time_s)] * 2, rel=1e-9)
    assert float(est.time_s) > 1e-2 * sum(int(o.count) for o in g.ops if o.kind == "attention")


def test_kernel_versions_refuses_a_table_version_it_cannot_find_in_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(sys, "argv", ["kernel_versions.py", "--data", str(tmp_path), "--gpu", "b60", "--op",
                                      "generation_attention", "--version", "0.20.0"])
    assert kernel_versions.main() == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kernel_versions: no table") and "\n" not in err
