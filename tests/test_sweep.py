"""Sweeps: array math equals point-by-point predictions, the ridge point sits where the bound flips."""
import numpy as np
import pytest

import ironlaw
from ironlaw.law import explain
from ironlaw.models import sweep
from ironlaw.machine import hardware
from ironlaw.core.errors import IronlawError


@pytest.mark.parametrize("text, expect", [
    ("1,2,4,...,1024", [2 ** i for i in range(11)]),
    ("1,2,4,…,64", [1, 2, 4, 8, 16, 32, 64]),
    ("8,16,...,64", [8, 16, 24, 32, 40, 48, 56, 64]),
    ("128", [128]),
    ("1,2,...,5", [1, 2, 3, 4, 5]),
    ("1,10,100,...,10000", [1, 10, 100, 1000, 10000]),
    ("4,1,2", [1, 2, 4]),
])
def test_parse_list(text, expect):
    assert sweep.parse_list(text, "batch").tolist() == expect


@pytest.mark.parametrize("text, needle", [
    ("1,2,x", "cannot read 'x'"),
    ("1,,2", "cannot read ''"),
    ("0,1", "out of range"),
    ("-4", "-4 is out of range"),
    ("1.5", "cannot read '1.5'"),
    ("", "empty list"),
    ("1,...,8", "needs two values before it"),
    ("1,2,4,...,1000", "1000 is not in the series"),
    ("1,2,5,...,100", "neither arithmetic nor geometric"),
    ("1,2,4,...", "needs two values before it and one after"),
    ("99999999999", "out of range"),
])
def test_garbage_lists_are_one_clear_error(text, needle):
    with pytest.raises(IronlawError) as e:
        sweep.parse_list(text, "batch")
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_sweep_equals_point_by_point_analysis():
    res = sweep.run("llama3-8b", ["h100", "b200"], [1, 8, 64], [128, 2048], phase="decode")
    assert res.time_s.shape == (2, 3, 2)
    for h, hw in enumerate(["h100", "b200"]):
        for i, b in enumerate([1, 8, 64]):
            for j, s in enumerate([128, 2048]):
                est = ironlaw.analyze("llama3-8b", on=hw, phase="decode", batch=b, seq=s)
                assert res.time_s[h, i, j] == pytest.approx(est.time_s, rel=1e-12)
                assert res.bottleneck[h, i, j] == explain.labels(est)
                assert res.throughput[h, i, j] == pytest.approx(b / est.time_s)     # one token per sequence


def test_ridge_point_of_llama_decode_on_h100_is_exact_and_physical():
    from ironlaw.machine.calibration import without_calibration     # the closed form below is the datasheet's
    hw = without_calibration(hardware.get("h100"))
    res = sweep.run("llama3-8b", [hw], "1,2,4,...,1024", [128], phase="decode")
    flips = [r for r in res.ridges if r["to"] == "compute"]
    assert len(flips) == 1
    rb = flips[0]["batch"]
    assert flips[0]["from"].startswith("bandwidth") and flips[0]["batch_before"] < rb <= flips[0]["batch_after"]
    lab = lambda b: str(explain.labels(ironlaw.analyze("llama3-8b", on=hw, phase="decode", batch=b, seq=128)))
    assert lab(rb - 1) != "compute" and lab(rb) == "compute"
    # closed form from the datasheet numbers: weights/BW + b·KV/BW = b·2N/(peak·η)
    n, kv = 8.03e9, 2 * 32 * 1024 * 128 * 2.0
    bw, peak = hw.memory[hw.device_tier].bw_Bps * hw.efficiency["memory"], hw.peak("bf16") * hw.eta("matmul")
    b_star = (2 * n / bw) / (2 * n / peak - kv / bw)
    assert 0.5 * b_star < rb < 1.5 * b_star


def test_sweep_marks_what_does_not_fit():
    res = sweep.run("llama3-70b", "h100", [1, 4096], [8191], phase="decode")
    rows = res.rows()
    assert rows[-1]["time_s"] is None and rows[-1]["throughput"] == 0.0
    assert rows[-1]["bottleneck"].startswith("capacity")


def test_cli_sweep_csv_json_and_plot(cli, tmp_path):
    r = cli("sweep", "llama3-8b", "--phase", "decode", "--on", "h100,b200", "--batch", "1,2,4,...,512",
            "--seq", "128", "--format", "csv", "--plot", str(tmp_path / "s.png"))
    assert r.rc == 0, r.err
    lines = r.out.strip().splitlines()
    assert lines[0] == ("hardware,batch,seq,time_s,throughput,throughput_unit,bottleneck,power_w,joules_per_unit,"
                        "usd_per_million_units,gco2_per_million_units") and len(lines) == 1 + 2 * 10
    assert (tmp_path / "s.png").stat().st_size > 1000
    r = cli("sweep", "resnet50", "--phase", "infer", "--batch", "1,2,4,...,256", "--format", "json")
    d = r.json()
    assert d["schema"] == "ironlaw.sweep/1" and d["throughput_unit"] == "samples/s" and len(d["points"]) == 9
    assert all(p["bottleneck"] for p in d["points"])
    r = cli("sweep", "llama3-8b", "--phase", "decode", "--seq", "128")
    assert r.rc == 0 and "ridge point on h100 at seq 128" in r.out


@pytest.mark.parametrize("args, needle", [
    (["--batch", "1,2,banana"], "cannot read 'banana'"),
    (["--on", "h100,,b200"], "empty hardware name"),
    (["--on", "h1000"], "did you mean"),
    (["--format", "xml"], "--format must be one of"),
    (["--plot", "out.txt"], ".png, .svg or .pdf"),
    (["--what-if", "batch=64"], "conflicts with the sweep's own --batch;"),
    (["--what-if", "hw=b200"], "conflicts with the sweep's own --on;"),
    (["--what-if", "network=a100-vidur"], "changes the device (network), and the sweep prices each --on device"),
    (["--what-if", "sparsity=2"], "sparsity must be in [0, 1)"),
])
def test_cli_sweep_bad_input_exit_2(cli, args, needle):
    r = cli("sweep", "llama3-8b", *args)
    assert r.rc == 2 and needle in r.err and r.err.count("\n") == 1


@pytest.mark.parametrize("steps", [["quant=int8"], ["sparsity=0.9,format=bitmap"], ["fusion=elementwise"],
                                   ["eager-attention"], ["quant=fp8,target=all"]])
def test_what_ifs_are_array_math_too(steps):
    """A transformed sweep equals transforming each point on its own."""
    from ironlaw.law import law
    from ironlaw.models import whatif, workloads
    res = sweep.run("llama3-8b", "h100", [1, 64, 512], [128, 4096], phase="decode", whatif=steps)
    hw = hardware.get("h100")
    for i, b in enumerate([1, 64, 512]):
        for j, s in enumerate([128, 4096]):
            g = workloads.resolve(workloads.Request("llama3-8b", phase="decode", batch=b, seq=s, device="cuda"))
            g2, hw2 = whatif.apply(g, hw, steps)
            assert res.time_s[0, i, j] == pytest.approx(float(law.predict(g2, hw2).total_s), rel=1e-12)
