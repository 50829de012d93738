"""The framework gap (end to end minus ops timed one by one) splits into a per-op constant and a share
of kernel time; the fit recovers both from synthetic runs generated with known values."""
import numpy as np
import pytest

from ironlaw.law import efficiency
from ironlaw.machine import calibration
from ironlaw.measure.calibrate import fit


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
    cal = {"schema": calibration.SCHEMA, "source": "measured: test", "fitted": ["synthetic"], "framework_share": 0.25}
    calibration.check(cal, "test")
    eta = np.full((3,), 0.8)
    assert np.allclose(efficiency.with_framework_share(calibration.Calibration.of(cal), eta), 0.8 / 1.25)
    with pytest.raises(Exception, match="framework_share"):
        calibration.check({**cal, "framework_share": -0.1}, "test")


def test_each_front_end_gets_its_own_framework_terms():
    """Hugging Face runs with a 10% share and 20 µs per op, plain torch runs with 1% and none: one pair for all
    splits the difference; per front end both are recovered."""
    hf = [{**case(n, t, 20e-6, 0.10), "workload": {"architecture": "GPT2LMHeadModel"}}
          for n, t in ((314, 130e-6), (57, 400e-6), (235, 900e-6))]
    torch_ = [{**case(n, t, 0.0, 0.01), "workload": {"frontend": "torch"}} for n, t in ((68, 400e-6), (9, 80e-6))]
    got = fit.framework_by_frontend(hf + torch_)
    assert got["transformers"]["framework_s"] == pytest.approx(20e-6, abs=2e-7)
    assert got["transformers"]["framework_share"] == pytest.approx(0.10, abs=2e-3)
    assert got["torch"]["framework_s"] == pytest.approx(0.0, abs=2e-7)
    assert got["torch"]["framework_share"] == pytest.approx(0.01, abs=2e-3)
    assert fit.framework_by_frontend(hf) == {}                    # one front end: the global pair serves
    assert "torch" not in fit.framework_by_frontend(hf + torch_[:1])   # one run is too few to fit a pair


def test_the_law_uses_the_graphs_front_end_terms():
    from ironlaw.core.graph import Graph, Op
    cal = {"schema": calibration.SCHEMA, "source": "measured: test", "fitted": ["synthetic"], "framework_s": 1e-6,
           "framework_share": 0.05, "frontend": {"transformers": {"framework_s": 20e-6, "framework_share": 0.25}}}
    calibration.check(cal, "test")
    ops = [Op("mm", "matmul", flops=2e9, bytes={"weights": 4e6}, dtype="fp32")]
    eta = np.full((1,), 0.8)
    for meta, per_op, share in (({"architecture": "BertModel"}, 20e-6, 0.25), ({}, 1e-6, 0.05),
                                ({"frontend": "transformers"}, 20e-6, 0.25)):
        cols = Graph("g", "infer", "fp32", ops, meta=meta).columns()
        assert np.allclose(efficiency.with_framework_share(calibration.Calibration.of(cal), eta, cols.frontend), 0.8 / (1 + share))
        assert np.allclose(efficiency.op_latency(calibration.Calibration.of(cal), cols, np.zeros((1,))), per_op)
    for bad, field in (({"jax": {"framework_s": 1e-6}}, "jax"), ({"torch": {"framework_s": -1.0}}, "torch.framework_s"),
                       ({"torch": {"share": 0.1}}, "share")):
        with pytest.raises(Exception, match=field):
            calibration.check({**cal, "frontend": bad}, "test")


def test_hugging_face_workloads_say_their_front_end():
    from ironlaw.models import workloads
    from ironlaw.core.graph import frontend
    gpt2 = workloads.resolve(workloads.Request("gpt2", phase="decode", batch=1, seq=64, dtype="fp32"))
    assert gpt2.columns().frontend == "transformers"
    assert frontend(workloads.resolve(workloads.Request("resnet50", phase="infer", batch=1, dtype="fp32")).meta) == "torch"
