"""The kernel-choice grid of a measured kernel class (``gemmshape.grid_factor``): stored form, checks, and the law
scaling an op's time by it."""
import numpy as np
import pytest

from ironlaw.core.errors import IronlawError
from ironlaw.core.gemmshape import grid_factor, grid_nodes, grid_text, grid_tokens, grid_weights
from ironlaw.law import law
from ironlaw.machine import calibration, hardware
from ironlaw.models import workloads

NODES = [[1.0, 16.0], [1024.0], [1024.0, 4096.0], [1.0]]


def test_text_round_trip_and_zero_runs():
    vals = [0, 0, 0, 12, -7, 0, 300, 0, 0]
    text = grid_text(vals)
    assert text == "0*3 12 -7 0 300 0*2"
    assert grid_tokens(text) == vals
    assert grid_tokens("1 x 2") is None


def test_nodes_span_the_values_log_spaced():
    assert grid_nodes([1, 3, 100], 4.0) == [1.0, 4.0, 16.0, 64.0, 100.0]
    assert grid_nodes([128, 128], 2.0) == [128.0]


def test_factor_is_exact_at_nodes_and_multilinear_in_log_between():
    p = {"grid_nodes": NODES, "grid_log": grid_text([0, 20, 40, 60])}   # (M, K) = (1,1024) (1,4096) (16,1024) (16,4096)
    f = grid_factor(p, np.array([1.0, 16.0, 4.0, 16.0, 1e5]), 1024.0, np.array([1024.0, 4096.0, 2048.0, 1024.0, 1e9]), 1.0)
    assert f[0] == pytest.approx(1.0) and f[1] == pytest.approx(np.exp(0.6)) and f[3] == pytest.approx(np.exp(0.4))
    assert f[2] == pytest.approx(np.exp((0 + 20 + 40 + 60) / 4 / 100))            # halfway on both axes, in log
    assert f[4] == pytest.approx(np.exp(0.6))                                        # held at the ends
    idx, w = grid_weights(NODES, [np.array([4.0]), np.array([1024.0]), np.array([2048.0]), np.array([1.0])])
    assert w.sum() == pytest.approx(1.0) and idx.shape == (1, 4)      # two axes with two nodes or more


def test_check_refuses_a_broken_grid():
    base = {"eta_max": 0.8, "m_half": 10.0, "nk_half": 10.0, "grid_nodes": NODES, "grid_log": "0*4"}
    cal = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"], "matmul": {"bf16": base}}
    calibration.check(cal, "calibration")
    for bad, field in (({"grid_log": "0*3"}, "grid_log"), ({"grid_log": "1 2 3 999"}, "grid_log"),
                       ({"grid_nodes": [[2.0, 1.0], [1.0], [1.0], [1.0]]}, "grid_nodes"),
                       ({"grid_nodes": NODES[:3]}, "grid_nodes")):
        with pytest.raises(IronlawError, match=field):
            calibration.check({**cal, "matmul": {"bf16": {**base, **bad}}}, "calibration")
    with pytest.raises(IronlawError, match="grid_log"):
        calibration.check({**cal, "matmul": {"bf16": {k: v for k, v in base.items() if k != "grid_log"}}}, "calibration")


def test_law_scales_the_time_without_latency_by_the_factor():
    hw = hardware.get("h100")
    table = {"eta_max": 0.8, "m_half": 50.0, "nk_half": 50.0, "streamed": 0.8, "latency_s": 5e-6}
    cal = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"], "matmul": {"bf16": table}}
    g = workloads.resolve(workloads.Request("gemm:2048,4096,4096", phase="infer", dtype="bf16", device="cuda"))
    plain = law.predict(g, calibration.with_calibration(hw, cal))
    grid = {**table, "grid_nodes": [[1.0, 8192.0], [32.0, 65536.0], [32.0, 65536.0], [1.0]], "grid_log": "50 " * 7 + "50"}
    scaled = law.predict(g, calibration.with_calibration(hw, {**cal, "matmul": {"bf16": grid}}))
    lat = float(np.sum(plain.latency_s))
    assert lat >= 5e-6 and float(np.sum(scaled.latency_s)) == pytest.approx(lat)
    assert float(scaled.time_s) - lat == pytest.approx((float(plain.time_s) - lat) * np.exp(0.5), rel=1e-6)
    fp8 = workloads.resolve(workloads.Request("gemm:2048,4096,4096", phase="infer", dtype="fp8", device="cuda"))
    other = calibration.with_calibration(hw, {**cal, "matmul": {"bf16": grid}})
    assert float(law.predict(fp8, other).time_s) == pytest.approx(
        float(law.predict(fp8, calibration.with_calibration(hw, cal)).time_s), rel=1e-12)      # another dtype's op: untouched


def test_a_class_may_share_another_class_grid_by_name():
    own = {"eta_max": 0.5, "m_half": 10.0, "nk_half": 10.0, "grid_nodes": NODES, "grid_log": "0*4"}
    cal = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"],
           "kernel": {"a": own, "b": {"eta_max": 0.25, "m_half": 10.0, "nk_half": 10.0, "grid_of": "a"}}}
    calibration.check(cal, "calibration")
    for bad in ("c", "b"):
        with pytest.raises(IronlawError, match="grid_of"):
            calibration.check({**cal, "kernel": {**cal["kernel"], "b": {**cal["kernel"]["b"], "grid_of": bad}}},
                              "calibration")


def test_grid_log_nodes_reads_what_the_whole_text_pattern_reads():
    """``calibration.grid_log_nodes`` matches each distinct word once; it accepts exactly the strings that one
    pattern over the whole text accepts (whole numbers |x| ≤ GRID_LOG_MAX, up to three digits, ``0*n`` runs, single
    spaces) and counts their nodes as the tokens expand."""
    import random
    import re
    from ironlaw.core.gemmshape import GRID_LOG_MAX
    assert GRID_LOG_MAX == 300                     # the reference pattern below spells 0-299 and 300 out
    word = r"(?:-?[0-2]?\d{1,2}|-?300|0\*\d+)"
    whole = re.compile(rf"{word}(?: {word})*")
    rng = random.Random(7)
    pieces = ["0", "7", "-7", "12", "-12", "299", "300", "-300", "301", "1000", "007", "0*3", "0*12", "0*", "*3",
              "-0*3", "+5", "x", "٣", "", " ", "  ", "\t", "\n", "3 "]
    for _ in range(3000):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 6)))
        if rng.random() < 0.2:
            text = text.strip() + rng.choice(["", " ", "\n"])
        want = None
        if whole.fullmatch(text):
            want = len(text.split()) + sum(int(r) - 1 for r in re.findall(r"0\*(\d+)", text))
            assert want == len(grid_tokens(text))
        assert calibration.grid_log_nodes(text) == want, repr(text)
    assert calibration.grid_log_nodes(None) is None and calibration.grid_log_nodes(["1"]) is None
