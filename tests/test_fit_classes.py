"""Op classes in a fitted calibration: an op name gets values of its own only where its ops' shapes can pin them."""
from __future__ import annotations

from ironlaw.machine import calibration
from ironlaw.measure.calibrate import fit, fitcore
from ironlaw.core.graph import Op

from test_cpu_gemm_model import cpu

VECTOR = 30e9                                     # the toy CPU's vector peak (test_cpu_gemm_model.cpu)
TABLE = {"schema": calibration.SCHEMA, "source": "measured: test", "fitted": ["test"]}


def mean_op(channels: int) -> Op:
    """A global average pool's mean over 7×7 of ``channels`` channels (fp32)."""
    elems = channels * 49
    return Op("aten::mean", "reduction", flops=float(elems), bytes={"activations": 4.0 * (elems + channels)},
              dtype="fp32")


def observed(channels: list[int], time_s) -> list[fitcore.Observation]:
    """Each mean at ``time_s(op)``, beside sums the kind's own values price exactly (so the kind fits them)."""
    out = [fitcore.Observation(mean_op(c), time_s(mean_op(c)), "validate:synthetic", 0.01) for c in channels]
    for n in (2**16, 2**18, 2**20):
        op = Op("aten::sum", "reduction", flops=float(n), bytes={"activations": 4.0 * n}, dtype="fp32")
        out.append(fitcore.Observation(op, n / VECTOR, "validate:synthetic", 0.01))
    return out


def test_an_op_name_seen_at_one_shape_gets_no_class_of_its_own():
    # a launch-bound mean (60 µs whatever its size), timed three times at one shape: one η fitted to it would
    # scale those 60 µs with the FLOPs of a batch-8 call (8× the channels) to 480 µs
    prob = fitcore.Problem(cpu(), observed([1280] * 3, lambda op: 60e-6))
    assert "aten::mean" not in fit.fit_classes(prob, dict(TABLE)).get("op", {})


def test_an_op_name_seen_at_several_shapes_gets_the_values_they_pin():
    # a mean that really runs at 1% of the vector peak, at four sizes: its own compute η, near 0.01
    prob = fitcore.Problem(cpu(), observed([320, 640, 1280, 2560], lambda op: op.flops / (0.01 * VECTOR)))
    own = fit.fit_classes(prob, dict(TABLE)).get("op", {}).get("aten::mean", {})
    assert 0.007 < own.get("compute", 0.0) < 0.014
