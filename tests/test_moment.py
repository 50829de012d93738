"""ironlaw.measure.probe.moment: the machine's speed now against its profile's probe rows, and what validate says of it."""
from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest

from ironlaw.machine import hardware
from ironlaw.measure.probe import moment

DATA = Path(__file__).parent / "data"
TINY = f"py:{DATA / 'validate_models.py'}:tiny"
PROBE = {"gemm": [{"dtype": "fp32", "m": 64, "n": 64, "k": 64, "flops_per_s": 2e11, "time_s": 2.6e-6, "cv": 0.02},
                  {"dtype": "fp32", "m": 128, "n": 128, "k": 128, "flops_per_s": 4e11, "time_s": 1.05e-5,
                   "layout": "nt", "cv": 0.02},
                  {"dtype": "fp32", "m": 1, "n": 4096, "k": 1024, "flops_per_s": 9e11, "weights": "cold", "time_s": 1e-5, "cv": 0.02},
                  {"dtype": "bf16", "m": 128, "n": 128, "k": 128, "flops_per_s": 8e11, "time_s": 5e-6, "cv": 0.02}],
         "memory": [{"level": "dram", "bytes": 1 << 20, "time_s": 1e-4, "cv": 0.03},
                    {"level": "dram", "bytes": 1 << 22, "time_s": 2e-4, "cv": 0.03},
                    {"level": "l3", "bytes": 1 << 24, "time_s": 1e-5, "cv": 0.03}]}


def test_the_fastest_hot_fp32_gemm_and_the_largest_dram_copy_are_timed_again(monkeypatch):
    from ironlaw.measure.probe import gemm, memory
    calls = []

    def fake_gemm(dtype, m, n, k, budget, device="cpu", layout="kn"):
        calls.append(("gemm", dtype, m, n, k, layout))
        return {"flops_per_s": 3e11}

    def fake_copy(level, nbytes, budget, device="cpu"):
        calls.append(("copy", level, nbytes))
        return {"bytes": nbytes, "time_s": 4e-4}
    monkeypatch.setattr(gemm, "measure", fake_gemm)
    monkeypatch.setattr(memory, "measure", fake_copy)
    now = moment.speed_now(PROBE)
    # the cold GEMV (faster per FLOP in this made-up row) and the bf16 row are not the fp32 GEMM peak
    assert calls == [("gemm", "fp32", 128, 128, 128, "nt"), ("copy", "dram", 1 << 22)]
    assert now["gemm_share"] == pytest.approx(0.75) and now["gemm"] == "128x128x128"
    assert now["dram_share"] == pytest.approx(0.5)                      # 4 MiB in 0.4 ms against 0.2 ms
    assert moment.speed_now({"gemm": [], "memory": []}) is None         # a datasheet profile: nothing to time
    assert moment.drifted(now, None) and not moment.drifted({"gemm_share": 1.05, "dram_share": 0.95}, None)
    said = moment.line(now, {"gemm_share": 0.8})
    assert said.startswith("machine now") and "fp32 GEMM 75% → 80%" in said and "DRAM copy 50% of" in said
    assert moment.line(None, None) is None


def test_validate_measures_the_machine_before_and_after_and_says_so():
    pytest.importorskip("torch")
    from ironlaw.measure import validate
    from ironlaw.cli.validate import render
    from rich.console import Console
    hw = hardware.load_file(DATA / "validate-cpu.toml")
    probed = dataclasses.replace(hw, extra={**hw.extra, "probe": {"gemm": PROBE["gemm"][:1], "memory": PROBE["memory"][:1]}})
    doc = validate.run(TINY, batch=2, hw=probed, repeats=3, warmup=1, threads=1)
    machine = doc["case"]["machine"]
    for when in ("before", "after"):          # real timings: a 64³ GEMM now against a made-up 200 GFLOP/s
        assert machine[when]["gemm"] == "64x64x64" and machine[when]["gemm_share"] > 0
        assert machine[when]["dram_share"] > 0 and machine[when]["copy_bytes"] == 1 << 20
    merged = validate.merge([doc, doc], probed)
    assert machine["against"] == probed.path                       # the profile whose rows were timed again
    pair = {"before": machine["before"], "after": machine["after"]}
    assert merged["case"]["machine"] == {**machine, "rounds": [pair, pair]}
    out = io.StringIO()
    render(doc, top=0, console=Console(file=out, width=200))
    assert "machine now (before → after the runs): fp32 GEMM" in out.getvalue()
    plain = validate.run(TINY, batch=2, hw=hw, repeats=3, warmup=1, threads=1)   # no probe rows: nothing timed
    assert plain["case"]["machine"] == {"before": None, "after": None, "against": hw.path}
