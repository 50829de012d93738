"""The framework gap (end to end minus ops timed one by one) splits into a per-op constant and a share
of kernel time; the fit recovers both from synthetic runs generated with known values."""
import numpy as np
import pytest

from ironlaw import calibrate, fit


def case(n_ops: int, op_s: float, per_op: float, share: float) -> dict:
    ops = [{"median_s": op_s, "min_s": op_s} for _ in range(n_ops)]
    e2e = n_ops * op_s * (1 + share) + n_ops * per_op
    return {"ops": ops, "total": {}, "spread": {"median_s": e2e, "min_s": e2e}}


@pytest.mark.parametrize("per_op,share", [(0.0, 0.08), (14e-6, 0.0), (5e-6, 0.12)])
def test_recovers_known_per_op_cost_and_share(per_op, share):
    cases = [case(9, 80e-6, per_op, share), case(68, 400e-6, per_op, share), case(314, 130e-6, per_op, share),
             case(235, 900e-6, per_op, share), case(57, 20e-6, per_op, share)]
    got_per_op, got_share = fit.framework_gap(cases)
    assert got_per_op == pytest.approx(per_op, abs=2e-7)
    assert got_share == pytest.approx(share, abs=2e-3)


def test_never_negative():
    # runs faster end to end than their ops (noise): no negative framework cost
    assert fit.framework_gap([case(10, 1e-3, 0.0, -0.05)]) == (0.0, 0.0)


def test_share_scales_kernel_time_in_the_law():
    cal = {"schema": calibrate.SCHEMA, "source": "measured: test", "fitted": ["synthetic"], "framework_share": 0.25}
    calibrate.check(cal, "test")
    eta = np.full((3,), 0.8)
    assert np.allclose(calibrate._framework(cal, eta), 0.8 / 1.25)
    with pytest.raises(Exception, match="framework_share"):
        calibrate.check({**cal, "framework_share": -0.1}, "test")
