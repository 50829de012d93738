"""Op classes, which of them a profile calibrated (``calibration_coverage``), and a prediction's range.

The profiles are built from planted probe rows (test_probe.fake_probe plus convolutions, pooling and a
drift sentinel made here), so the numbers each test expects follow from the rows it planted.
"""
from __future__ import annotations

import copy
import json
import sys

import pytest

from ironlaw.machine import hardware, profile
from ironlaw.law import law
from ironlaw.law.coverage import coverage, line
from ironlaw.core.errors import IronlawError
from ironlaw.core.graph import Graph, Op, op_class
from ironlaw.measure.calibrate import build
from ironlaw.machine.probetable import check_probe
from ironlaw.law.timerange import factors, time_range

from test_probe import fake_probe

DENSE_RATE = 150e9           # planted conv rates (FLOP/s): dense below the fp32 GEMM peak (180 GFLOP/s)
DEPTHWISE_RATE = 6e9         # a depthwise conv runs far below the dense rate (MobileNet's 3×3 on a CPU)
GROUPED_RATE = 40e9
LAT = 2e-6


def conv_flops(b, cin, size, cout, k, groups=1):
    return 2.0 * b * size * size * cout * (cin // groups) * k * k


def conv_row(b, cin, size, cout, k, rate, groups=1, cv=0.03):
    t = conv_flops(b, cin, size, cout, k, groups) / rate + LAT
    row = {"dtype": "fp32", "batch": b, "cin": cin, "size": size, "cout": cout, "kernel": k, "time_s": t,
           "cv": cv, "flops_per_s": conv_flops(b, cin, size, cout, k, groups) / t, "threads": 2}
    return {**row, "groups": groups} if groups > 1 else row


def planted(depthwise: bool = True, gemm_drift=(176e9, 180e9, 184e9), copy_drift=(32e9, 33e9, 34e9)) -> dict:
    p = fake_probe()
    p["conv"] = [conv_row(2, 64, 56, 64, 3, DENSE_RATE), conv_row(2, 256, 28, 256, 1, DENSE_RATE),
                 conv_row(1, 128, 28, 128, 3, DENSE_RATE),
                 conv_row(2, 256, 28, 256, 3, GROUPED_RATE, groups=32), conv_row(2, 256, 28, 256, 3, GROUPED_RATE, 8)]
    if depthwise:
        p["conv"] += [conv_row(2, 128, 56, 128, 3, DEPTHWISE_RATE, groups=128),
                      conv_row(2, 256, 28, 256, 3, DEPTHWISE_RATE, groups=256)]
    p["checks"]["drift"] = {"gemm_flops_per_s": list(gemm_drift), "copy_Bps": list(copy_drift),
                            "max_change": 0.05, "what": "planted"}
    return p


def device(probe: dict):
    return hardware.parse_hardware(build.profile(probe), "planted")


def conv_op(name, b, c, size, k, groups):
    per = c // groups
    attrs = {"nk": (c, per * k * k), **({"groups": groups, "group_channels": per} if groups > 1 else {})}
    return Op(name, "conv", flops=conv_flops(b, c, size, c, k, groups),
              bytes={"activations": 2.0 * b * size * size * c * 4, "weights": c * per * k * k * 4.0},
              dtype="fp32", attrs=attrs)


def graph(*ops):
    return Graph("g", "infer", "fp32", list(ops))


# ---------------------------------------------------------------- op classes

@pytest.mark.parametrize("groups, cls", [(1, "conv-dense"), (256, "conv-depthwise"), (32, "conv-grouped"),
                                         (8, "conv-grouped")])
def test_conv_class_follows_channels_per_group(groups, cls):
    assert op_class(conv_op("c", 1, 256, 14, 3, groups)) == cls


def test_pool_and_other_classes():
    assert op_class(Op("aten::max_pool2d_with_indices", "pool")) == "pool-max"
    assert op_class(Op("aten::_adaptive_avg_pool2d", "pool")) == "pool-avg"
    assert op_class(Op("aten::embedding", "embedding")) == "embedding"
    assert op_class(Op("aten::addmm", "matmul")) == "matmul"


def test_capture_records_groups_of_a_depthwise_conv():
    torch = pytest.importorskip("torch")
    from ironlaw.models.capture import capture_graph
    m = torch.nn.Sequential(torch.nn.Conv2d(32, 32, 3, padding=1, groups=32), torch.nn.Conv2d(32, 64, 1),
                            torch.nn.Conv2d(64, 64, 3, padding=1, groups=8))
    g = capture_graph(m, (torch.randn(1, 32, 16, 16),))
    convs = [op for op in g.ops if op.kind == "conv"]
    assert [op_class(op) for op in convs] == ["conv-depthwise", "conv-dense", "conv-grouped"]
    assert convs[2].attrs["groups"] == 8 and convs[2].attrs["group_channels"] == 8


# ---------------------------------------------------------------- coverage

def test_depthwise_conv_is_priced_by_its_own_probe_row():
    """The planted depthwise row calibrates conv-depthwise; without it the same op borrows the dense conv's η
    and comes out several times too fast."""
    op = conv_op("dw", 2, 256, 28, 3, 256)
    measured = conv_flops(2, 256, 28, 256, 3, 256) / DEPTHWISE_RATE + LAT
    own = law.predict(graph(op), device(planted()))
    assert own.time_s == pytest.approx(measured, rel=0.15)
    assert "conv-depthwise" in coverage(own)["calibrated"]
    borrowed = law.predict(graph(op), device(planted(depthwise=False)))
    assert borrowed.time_s < 0.5 * measured
    cov = coverage(borrowed)
    assert cov["borrowed"] == [{"class": "conv-depthwise", "borrows": "conv-dense", "share_of_time": 1.0}]
    assert line(cov) == "uncalibrated: conv-depthwise 100% of the predicted time (borrows conv-dense's η)"


def test_share_of_time_is_the_class_share_of_the_prediction():
    hw = device(planted(depthwise=False))
    dense, dw = conv_op("dense", 2, 64, 56, 3, 1), conv_op("dw", 2, 256, 28, 3, 256)
    est = law.predict(graph(dense, dw), hw)
    share = float(est.op_total_s[1]) / float(est.op_total_s.sum())
    cov = coverage(est)
    assert cov["calibrated"] == ["conv-dense"]
    assert cov["borrowed"][0]["share_of_time"] == pytest.approx(share, abs=1e-4)
    assert 0 < share < 1


def test_catalog_device_without_calibration_says_so():
    from ironlaw.machine.calibration import without_calibration     # the H100's datasheet alone
    est = law.predict(graph(conv_op("dw", 1, 64, 28, 3, 64)), without_calibration(hardware.get("h100")))
    doc = est.to_dict()
    assert doc["calibration_coverage"]["calibrated"] == [] and "no [calibration]" in doc["calibration_coverage"]["note"]
    assert doc["time_range_s"] is None and "not probed" in doc["time_range_source"]


def test_probe_table_refuses_groups_that_do_not_divide_the_channels():
    p = planted()
    p["conv"][-1]["groups"] = 3
    with pytest.raises(IronlawError, match="groups"):
        check_probe(p, "probe")


# ---------------------------------------------------------------- range

def test_range_brackets_the_prediction():
    op = conv_op("dw", 2, 256, 28, 3, 256)
    copy_op = Op("copy", "copy", bytes={"activations": 512e6}, dtype="fp32")
    est = law.predict(graph(op, copy_op), device(planted()))
    lo, hi = time_range(est)
    assert lo < est.time_s < hi
    doc = est.to_dict()
    assert doc["time_range_s"] == [lo, hi]


def test_range_widens_with_a_wider_observed_spread():
    ops = graph(conv_op("dw", 2, 256, 28, 3, 256), Op("copy", "copy", bytes={"activations": 512e6}, dtype="fp32"))
    narrow = law.predict(ops, device(planted()))
    wide = law.predict(ops, device(planted(gemm_drift=(120e9, 180e9, 190e9), copy_drift=(20e9, 33e9, 60e9))))
    (lo_n, hi_n), (lo_w, hi_w) = time_range(narrow), time_range(wide)
    assert lo_w < lo_n and hi_w > hi_n
    f = factors(wide.hw)
    # the sentinels' 10th / 90th percentile (linear between samples) over their median, × (1 ∓ the rows' cv)
    assert f["tiers"]["dram"][0] == pytest.approx((20 + 0.2 * (33 - 20)) / 33 * (1 - 0.02))
    assert f["compute"][1] == pytest.approx((180 + 0.8 * (190 - 180)) / 180 * (1 + 0.03))


def test_a_probe_in_rounds_spans_every_rounds_sentinels():
    """With --rounds the drift check compares each position's median over the rounds; the range takes every
    round's sentinels (``checks.drift.rounds``), a slow round included."""
    p = planted()
    calm = factors(device(p))["compute"]
    p["checks"]["drift"]["rounds"] = {"gemm_flops_per_s": [176e9, 180e9, 184e9, 90e9, 92e9, 95e9, 178e9, 181e9, 183e9],
                                      "copy_Bps": [32e9, 33e9, 34e9] * 3}
    check_probe(p, "probe")
    slow = factors(device(p))["compute"]
    assert slow[0] < 0.6 * calm[0] and slow[1] == pytest.approx(calm[1], rel=0.02)


def test_reference_runs_spread_widens_a_range_the_terms_leave_narrow():
    """Micro-benchmarks a few ms long see less of the machine's swings than whole model runs: where the probe's
    reference runs went from 0.85× to 1.2× their median run, a range is at least that wide around time_s."""
    ops = graph(conv_op("dw", 2, 256, 28, 3, 256), Op("copy", "copy", bytes={"activations": 512e6}, dtype="fp32"))
    p = planted()
    narrow = law.predict(ops, device(p))
    p["references"] = {"fitted": ["reference-cnn infer b1"], "failed": [], "wall_s": 9.0, "run_spread": [0.85, 1.2]}
    check_probe(p, "probe")
    est = law.predict(ops, device(p))
    lo, hi = time_range(est)
    assert lo == pytest.approx(min(time_range(narrow)[0], 0.85 * est.time_s))
    assert hi == pytest.approx(max(time_range(narrow)[1], 1.2 * est.time_s))
    assert hi > time_range(narrow)[1]
    p["references"]["run_spread"] = [1.1, 1.2]                 # the fastest run cannot be slower than the median
    with pytest.raises(IronlawError, match="run_spread"):
        check_probe(p, "probe")


def test_model_spread_widens_each_kind_by_its_own_miss_in_quadrature_with_the_machine():
    """The law's own miss on the reference runs (``model_spread``: per kind, measured over predicted op time)
    and the machine's observed rates are independent: their log half-widths add in quadrature."""
    import math
    conv, copy_op = conv_op("dw", 2, 256, 28, 3, 256), Op("copy", "copy", bytes={"activations": 512e6}, dtype="fp32")
    ops = graph(conv, copy_op)
    p = planted()
    machine = law.predict(ops, device(p))
    p["references"] = {"fitted": ["reference-cnn infer b1"], "failed": [], "run_spread": [1.0, 1.0],
                       "model_spread": {"conv": [0.8, 1.25], "all": [0.9, 1.1]}}
    check_probe(p, "probe")
    est = law.predict(ops, device(p))
    t = est.time_s
    conv_s, copy_s = est.op_total_s                       # the copy kind takes the pooled "all" interval
    m_lo, m_hi = 0.8 * conv_s + 0.9 * copy_s, 1.25 * conv_s + 1.1 * copy_s
    (d_lo, d_hi), (lo, hi) = time_range(machine), time_range(est)
    assert lo == pytest.approx(t * math.exp(-math.hypot(math.log(t / d_lo), math.log(t / m_lo))))
    assert hi == pytest.approx(t * math.exp(math.hypot(math.log(d_hi / t), math.log(m_hi / t))))
    assert lo < d_lo and hi > d_hi
    p["references"]["model_spread"] = {"conv": [1.2, 1.3]}        # a low end above 1 is no interval around it
    with pytest.raises(IronlawError, match="model_spread.conv"):
        check_probe(p, "probe")
    p["references"]["model_spread"] = {"convolution": [0.9, 1.3]}
    with pytest.raises(IronlawError, match="conv"):
        check_probe(p, "probe")


def test_model_spread_takes_time_weighted_quantiles_per_kind_and_pools_the_rest():
    from ironlaw.measure.calibrate.selfcal import MIN_KIND_OPS, model_spread

    def op(kind, measured, predicted):
        return {"kind": kind, "median_s": measured, "predicted_s": predicted}
    # ten matmuls: one slow op holding most of the time sets the high end; the fast ones hold little time
    mm = [op("matmul", 1e-3, 1e-3)] * 8 + [op("matmul", 1e-4, 2e-4), op("matmul", 20e-3, 10e-3)]
    few = [op("pool", 1e-3, 4e-3)] * (MIN_KIND_OPS - 1)
    spread = model_spread([{"doc": {"ops": mm}}, {"doc": {"ops": few}}])
    assert spread["matmul"] == [1.0, 2.0]
    assert "pool" not in spread                         # too few ops of its own: predictions use "all"
    assert spread["all"][0] == 0.25 and spread["all"][1] == 2.0


def test_run_spread_is_the_median_of_the_reference_runs_extremes():
    from ironlaw.measure.calibrate.selfcal import run_spread
    cases = [{"spread": {"min_s": lo, "median_s": 1.0, "max_s": hi}} for lo, hi in ((0.9, 1.1), (0.8, 1.5), (0.95, 1.2))]
    assert run_spread(cases) == [0.9, 1.2]


def test_range_of_an_unprobed_device_is_none():
    est = law.predict(graph(conv_op("c", 1, 64, 28, 3, 1)), hardware.get("h100"))
    assert factors(est.hw) is None and time_range(est) is None


def test_cli_prints_range_and_borrowers(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IRONLAW_HOME", str(tmp_path))
    path = profile.save(build.profile(planted(depthwise=False)))
    from ironlaw.cli import main
    with pytest.raises(SystemExit) as e:
        main(["analyze", "resnet18", "--on", str(path), "--dtype", "fp32"]) or sys.exit(0)
    assert e.value.code in (0, None)
    out = capsys.readouterr().out
    assert "on this machine's observed range)" in out
    with pytest.raises(SystemExit):
        main(["analyze", "resnet18", "--on", str(path), "--dtype", "fp32", "--format", "json"]) or sys.exit(0)
    doc = json.loads(capsys.readouterr().out)
    lo, hi = doc["time_range_s"]
    assert lo < doc["time_s"] < hi
    assert "conv-dense" in doc["calibration_coverage"]["calibrated"]


# ---------------------------------------------------------------- real rows (torch)

def test_probe_times_grouped_convs_and_gathers():
    pytest.importorskip("torch")
    from ironlaw.measure.probe import conv, reduce, timing
    budget = timing.Budget(repeat_s=0.002, repeats=3, max_cv=0.9, retries=0)
    row = conv.measure("fp32", 1, 32, 14, 32, 3, budget, groups=32)
    assert row["groups"] == 32 and row["flops_per_s"] == pytest.approx(conv_flops(1, 32, 14, 32, 3, 32) / row["time_s"])
    g = reduce.measure("embedding", 1, budget)
    assert g["kind"] == "embedding" and g["bytes"] == 2 * 4.0 * 2048 * 256 + 8.0 * 2048
    p = copy.deepcopy(fake_probe())
    p["conv"] = [{k: v for k, v in row.items() if not k.startswith("_")}]
    p["reduce"].append({k: v for k, v in g.items() if not k.startswith("_")})
    check_probe(p, "probe")                            # what the probe writes passes its own checks


def test_fit_keeps_depthwise_convs_in_their_own_class():
    """``ironlaw fit`` on a probed profile: the run's depthwise convs (rebuilt from validate rows, groups in
    their shapes text) and the probe's depthwise rows fit conv-depthwise's own entry, not the dense conv's η."""
    from ironlaw.measure.calibrate import fit
    hw = device(planted())
    rows = []
    for i, c in enumerate((64, 128, 256, 512)):
        op = conv_op("aten::convolution", 1, c, 28, 3, c)
        t = conv_flops(1, c, 28, c, 3, c) / DEPTHWISE_RATE + LAT
        rows.append({"index": i, "name": op.name, "kind": "conv", "dtype": "fp32", "count": 1, "flops": op.flops,
                     "bytes": op.bytes, "shapes": f"[1,{c},28,28],[{c},1,3,3]", "median_s": t, "min_s": t,
                     "measured_cv": 0.0, "spread_s": 0.0})
    e2e = sum(r["median_s"] for r in rows)
    case = {"workload": {"name": "dw", "phase": "infer", "batch": 1}, "ops": rows,
            "spread": {"median_s": e2e, "min_s": e2e, "spread_s": 0.0, "cv": 0.0}, "total": {"views": 0}}
    cal = fit.fit(hw, [case])
    assert "compute" in cal["kernel"]["conv-depthwise"]
    from ironlaw.machine.calibration import with_calibration
    op = conv_op("dw", 1, 192, 28, 3, 192)
    measured = conv_flops(1, 192, 28, 192, 3, 192) / DEPTHWISE_RATE + LAT
    assert law.predict(graph(op), with_calibration(hw, cal)).time_s == pytest.approx(measured, rel=0.15)


def test_probe_prints_what_its_ranges_hold():
    """The probe's text names the machine's rate factors and the law's per-kind miss every range carries."""
    from ironlaw.cli.probe import range_line
    p = planted()
    p["references"] = {"fitted": ["reference-cnn infer b1"], "failed": [], "run_spread": [0.95, 1.05],
                       "model_spread": {"all": [0.9, 1.1], "conv": [0.8, 1.25]}}
    doc = build.profile(p)
    f = factors(device(p))
    line = range_line(doc, "planted")
    assert f"compute ×{f['compute'][0]:.2f}–{f['compute'][1]:.2f}" in line
    assert f"dram ×{f['tiers']['dram'][0]:.2f}–" in line and "conv 0.80–1.25" in line and "all 0.90–1.10" in line

