"""Convolutions as the GEMMs they compute: each conv op states its N (output channels) and K (input
channels per group × kernel area), the shape model gives K its own half point, and no flat per-op-name
η replaces that model. In one ResNet-50 run on a 2-vCPU AMD EPYC VM 3×3 convs (K ≥ 576) ran at 190–211
GFLOP/s, 1×1 convs at 86 (K = 64) to 175 (K = 1024)."""
import numpy as np
import pytest

from ironlaw.measure.calibrate import calibrate, fit, fitcore
from ironlaw.machine import calibration
from ironlaw.core.gemmshape import conv_nk, gemm_dims, gemm_eta
from ironlaw.core.graph import Graph, Op
from ironlaw.measure.validate.compare import row_attrs

from test_cpu_gemm_model import PEAK, cpu


def conv_op(b, cin, cout, size, k, name="aten::convolution", stated=True):
    flops = 2.0 * b * size * size * cout * cin * k * k
    return Op(name, "conv", flops=flops, dtype="fp32",
              bytes={"activations": 4.0 * b * size * size * (cin + cout), "weights": 4.0 * cout * cin * k * k},
              attrs={"nk": (cout, cin * k * k)} if stated else {})


def test_captured_convs_state_n_and_k_and_backward_ones_do_not():
    torch = pytest.importorskip("torch")
    from ironlaw.models.capture import capture_graph
    m = torch.nn.Sequential(torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.Conv2d(32, 32, 3, padding=1, groups=4),
                            torch.nn.Conv2d(32, 8, 1))
    convs = [op for op in capture_graph(m, (torch.randn(2, 16, 10, 10),)).ops if op.kind == "conv"]
    assert [op.attrs["nk"] for op in convs] == [(32, 16 * 9), (32, 8 * 9), (8, 32)]
    for op in convs:                                  # M = batch · output pixels follows from the FLOPs
        n, k = op.attrs["nk"]
        assert op.flops / (2 * n * k) == 2 * 10 * 10
    train = capture_graph(m, (torch.randn(2, 16, 10, 10),), phase="train")
    assert not [op for op in train.ops if op.kind == "conv" and "backward" in op.name and "nk" in op.attrs]
    assert conv_nk([32, 16]) is None and conv_nk([0, 16, 3, 3]) is None


def test_builtin_resnet_and_probe_convs_state_the_same_n_and_k():
    from ironlaw.models import workloads
    from ironlaw.measure.calibrate import build
    g = workloads.resolve(workloads.Request("resnet18", phase="infer", batch=1, dtype="fp32"))
    assert {op.attrs["nk"] for op in g.ops if op.kind == "conv"} >= {(64, 3 * 49), (64, 64 * 9), (128, 64)}
    probe = {"conv": [{"dtype": "fp32", "batch": 2, "cin": 256, "size": 28, "cout": 128, "kernel": 1,
                       "time_s": 1e-3, "cv": 0.01, "flops_per_s": 1e11}]}
    (obs,) = [o for o in build.observations(probe) if o.op.kind == "conv"]
    assert obs.op.attrs["nk"] == (128, 256)


def test_stated_n_and_k_replace_the_symmetric_split():
    ops = [conv_op(8, 64, 64, 56, 3), conv_op(8, 64, 64, 56, 3, stated=False)]
    m, n, k = gemm_dims(Graph("g", "infer", "fp32", ops).columns())
    assert (m[0], n[0], k[0]) == (8 * 56 * 56, 64, 576)
    assert m[1] == 8 * 56 * 56 and n[1] == pytest.approx(192) and k[1] == pytest.approx(192)   # 3·Cin both


def test_k_half_is_k_s_own_half_point():
    p = {"eta_max": 1.0, "m_half": 0.0, "nk_half": 0.0, "k_half": 80.0}
    one_by_one, three_by_three = gemm_eta(p, 1000.0, 256.0, 64.0), gemm_eta(p, 1000.0, 64.0, 576.0)
    assert one_by_one == pytest.approx(64 / 144) and three_by_three == pytest.approx(576 / 656)
    without = {"eta_max": 1.0, "m_half": 0.0, "nk_half": 80.0}        # no k_half: nk_half serves N and K
    assert gemm_eta(without, 1000.0, 256.0, 64.0) == pytest.approx(256 / 336 * 64 / 144)


def test_rows_carry_n_and_k_and_old_rows_get_them_from_their_shapes():
    row = {"name": "aten::convolution", "kind": "conv", "shapes": "[8,64,56,56],[256,64,1,1]"}
    assert row_attrs(row) == {"nk": (256, 64)}
    assert row_attrs({**row, "nk": [128, 9]}) == {"nk": (128, 9)}
    assert row_attrs({**row, "name": "aten::convolution_backward (backward)"}) == {}
    assert row_attrs({**row, "shapes": "[8,64,56,56]"}) == {}
    assert row_attrs({"name": "aten::mm", "kind": "matmul", "shapes": "[4,8],[8,8]", "weights_kn": True}) == {"weights_kn": True}


SHAPES = [(8, 64, 64, 56, 3), (8, 64, 256, 56, 1), (8, 256, 64, 56, 1), (8, 128, 128, 28, 3), (8, 128, 512, 28, 1),
          (8, 512, 128, 28, 1), (8, 256, 256, 14, 3), (8, 1024, 256, 14, 1), (8, 512, 512, 7, 3), (8, 2048, 512, 7, 1),
          (1, 64, 64, 56, 3), (1, 256, 64, 56, 1)]


def synthetic_convs(k_half: float) -> list:
    """Conv ops timed as pure compute at η = K / (K + k_half) of the toy CPU's peak."""
    out = []
    for s in SHAPES:
        op = conv_op(*s)
        k = op.attrs["nk"][1]
        out.append(calibrate.Observation(op, op.flops / (PEAK * k / (k + k_half)), "validate:synthetic", 0.01))
    return out


def test_the_fit_recovers_a_k_dependent_conv_rate_and_keeps_it():
    obs = synthetic_convs(80.0)
    prob = fitcore.Problem(cpu(), obs)
    cal = fit.fit_kinds(prob, {"schema": calibration.SCHEMA, "source": "measured: test", "fitted": ["test"]})
    assert "k_half" in cal["conv"]["fp32"]
    err = np.abs(prob.times(cal) / prob.meas - 1)
    assert np.all(err[:10] < 0.03) and np.all(err < 0.15), err     # the two small batch-1 ops weigh least (√time)
    # an op class 'aten::convolution' would flatten the shape model to one η: not fitted where one exists
    assert "aten::convolution" not in fit.fit_classes(prob, cal).get("op", {})
    flat = {k: v for k, v in cal.items() if k != "conv"}
    assert "aten::convolution" in fit.fit_classes(prob, flat).get("op", {})   # (it would be without one)
