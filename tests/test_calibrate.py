"""calibrate: the shape model, reuse-pattern bandwidth, latency, the fit, and refusing nonsense tables.

Expected numbers are computed by hand in the tests (the Iron Law written out), not read back from the
module: a fit must recover parameters that generated the data, and a prediction must equal the
formula evaluated independently.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from ironlaw.measure.calibrate import calibrate
from ironlaw.law import efficiency, law
from ironlaw.machine import calibration, hardware
from ironlaw.core import gemmshape
from ironlaw.measure.calibrate.calibrate import Observation
from ironlaw.core.errors import IronlawError
from ironlaw.core.graph import Graph, Op
from ironlaw.models.workloads.common import elementwise, linear

PEAK = 100e12      # the toy device below
BW = 1e12
LAT = 5e-6


def toy(cal: dict | None = None):
    """A device with one memory tier (no cache, so no activation goes to a cache tier)."""
    doc = {
        "schema": "ironlaw.hardware/1", "name": "toy", "title": "toy", "kind": "gpu",
        "compute": {"fp16": {"peak_flops": PEAK, "source": "estimate: test"}},
        "vector": {"peak_flops": 10e12, "source": "estimate: test"},
        "memory": [{"name": "hbm", "role": "device", "capacity_bytes": 1e11, "bw_Bps": BW, "source": "estimate: t"}],
        "latency": {"op_s": LAT, "source": "estimate: test"},
        "efficiency": {"other": 0.5, "memory": 0.8, "matmul": 0.7, "source": "estimate: test"},
    }
    if cal:
        doc["calibration"] = cal
    return hardware.parse_hardware(doc, "toy")


TRUE = {"eta_max": 0.9, "m_half": 40.0, "nk_half": 120.0}


def by_hand(m, n, k, eta_max, m_half, nk_half, streamed, produced, lat):
    """The Iron Law for one GEMM on the toy GPU, written out, 2 bytes per element: its reads overlap its
    compute, the epilogue stores its output after: max(read, compute) + write + latency, where the write
    is the output's share of the data time (data time = bytes at the byte-weighted η)."""
    eta = eta_max * m / (m + m_half) * n / (n + nk_half) * k / (k + nk_half)
    act, w, out = 2.0 * (m * k + m * n), 2.0 * k * n, 2.0 * m * n
    data = act / (BW * produced) + w / (BW * streamed)
    write = data * out / (act + w)
    return max(data - write, 2.0 * m * n * k / (PEAK * eta)) + write + lat


def test_gemm_dims_recovered_from_flops_and_bytes():
    ops = [linear("a", 7, 4096, 1024, "fp16"), linear("b", 2048, 512, 8192, "bf16")]
    cols = Graph("g", "infer", "fp16", ops).columns()
    m, n, k = gemmshape.gemm_dims(cols)
    assert m.tolist() == pytest.approx([7, 2048])
    # the model is symmetric in N and K, so the pair is what must come back
    assert sorted([n[0], k[0]]) == pytest.approx([1024, 4096])
    assert sorted([n[1], k[1]]) == pytest.approx([512, 8192])


def test_prediction_equals_the_law_written_by_hand():
    cal = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["hand"],
           "matmul": {"fp16": TRUE}, "memory": {"streamed": 0.6, "produced": 0.9}, "latency_s": {"matmul": 3e-6}}
    hw = toy(cal)
    for m, n, k in ((1, 4096, 4096), (64, 1024, 1024), (4096, 4096, 4096), (300, 50, 7000)):
        g = Graph("g", "infer", "fp16", [linear("mm", m, k, n, "fp16")])
        got = float(law.predict(g, hw).op_time_s[0])
        assert got == pytest.approx(by_hand(m, n, k, **TRUE, streamed=0.6, produced=0.9, lat=3e-6), rel=1e-9)


def test_memory_eta_weights_each_class_by_its_reuse_pattern():
    cal = {"schema": calibration.SCHEMA, "source": "derived: t", "fitted": ["t"],
           "memory": {"streamed": 0.5, "produced": 1.0, "kind": {"norm": 0.25}}}
    ops = [Op("w", "copy", bytes={"weights": 100.0}, dtype="fp16"),
           Op("a", "copy", bytes={"activations": 100.0}, dtype="fp16"),
           Op("mix", "copy", bytes={"weights": 100.0, "activations": 300.0}, dtype="fp16"),
           elementwise("n", 50, "fp16", kind="norm")]
    cols = Graph("g", "infer", "fp16", ops).columns()
    eta = efficiency.memory_eta(calibration.Calibration.of(cal), cols, np.full((4,), 0.8)).reshape(-1)
    # 400 bytes in 100/0.5 + 300/1.0 = 500 byte-times -> 0.8; a calibrated kind replaces the pattern
    assert eta.tolist() == pytest.approx([0.5, 1.0, 0.8, 0.25])


def test_fit_recovers_the_parameters_that_made_the_data():
    shapes = [(m, n, k) for m in (1, 8, 64, 256, 2048) for n, k in ((256, 256), (1024, 4096), (4096, 1024), (8192, 8192))]
    obs = [Observation(linear(f"mm{m}x{n}x{k}", m, k, n, "fp16"),
                       by_hand(m, n, k, **TRUE, streamed=0.7, produced=0.9, lat=4e-6), "synthetic gemm")
           for m, n, k in shapes]
    obs += [Observation(Op(f"copy{s}", "copy", bytes={"activations": s}, dtype="fp16"), s / (BW * 0.9) + 2e-6,
                        "synthetic copy") for s in (1e5, 1e6, 1e7, 1e8, 1e9)]
    cal = calibrate.fit(toy(), obs, source="derived: synthetic", held_out=[])
    p = cal["matmul"]["fp16"]
    assert p["eta_max"] == pytest.approx(0.9, rel=0.02)
    assert p["m_half"] == pytest.approx(40.0, rel=0.15)
    assert p["nk_half"] == pytest.approx(120.0, rel=0.15)
    assert cal["memory"]["streamed"] == pytest.approx(0.7, rel=0.03)
    assert cal["memory"]["kind"]["copy"] == pytest.approx(0.9, rel=0.02)
    assert cal["latency_s"]["copy"] == pytest.approx(2e-6, rel=0.1)
    rep = calibrate.report(calibration.with_calibration(toy(), cal), obs)
    assert rep["synthetic gemm"]["median_abs_err"] < 0.01 and rep["synthetic gemm"]["fitted"]


def test_fit_is_robust_to_a_few_outliers():
    """|log error| loss: two rows 3x slow (a noisy neighbour) do not drag η_max."""
    shapes = [(m, 2048, 2048) for m in (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)]
    obs = [Observation(linear("mm", m, k, n, "fp16"), by_hand(m, n, k, **TRUE, streamed=0.7, produced=0.9, lat=4e-6),
                       "s") for m, n, k in shapes]
    obs[3].time_s *= 3
    obs[7].time_s *= 3
    cal = calibrate.fit(toy(), obs, source="derived: synthetic")
    assert cal["matmul"]["fp16"]["eta_max"] == pytest.approx(0.9, rel=0.08)


def test_latency_table_per_kind_with_default():
    cal = {"latency_s": {"default": 1e-6, "matmul": 7e-6}}
    ops = [linear("mm", 4, 4, 4, "fp16"), elementwise("e", 4, "fp16"), Op("c", "copy", dtype="fp16")]
    cols = Graph("g", "infer", "fp16", ops).columns()
    assert efficiency.op_latency(calibration.Calibration.of(cal), cols, np.full(3, 5e-6)).tolist() == [7e-6, 1e-6, 1e-6]


def good_table() -> dict:
    return {"schema": calibration.SCHEMA, "source": "measured by probe on 2026-12-02 (h, torch 2.13, 2 threads)",
            "fitted": ["probe:gemm"], "held_out": [], "matmul": {"fp32": dict(TRUE)},
            "compute": {"elementwise": 0.3}, "memory": {"streamed": 0.6, "produced": 0.9, "kind": {"norm": 0.4}},
            "latency_s": {"default": 2e-6}}


@pytest.mark.parametrize("edit, field", [
    (lambda c: c["matmul"]["fp32"].update(eta_max=3.0), "calibration.matmul.fp32.eta_max"),
    (lambda c: c["matmul"]["fp32"].update(eta_max="fast"), "calibration.matmul.fp32.eta_max"),
    (lambda c: c["matmul"]["fp32"].pop("m_half"), "m_half"),
    (lambda c: c["matmul"].update(fp17={"eta_max": 0.5, "m_half": 1, "nk_half": 1}), "fp17"),
    (lambda c: c["compute"].update(elementwse=0.3), "elementwse"),
    (lambda c: c["compute"].update(elementwise=-0.3), "calibration.compute.elementwise"),
    (lambda c: c["memory"].update(streamed=float("nan")), "calibration.memory.streamed"),
    (lambda c: c["memory"]["kind"].update(norm=40.0), "calibration.memory.kind.norm"),
    (lambda c: c["latency_s"].update(default=-1e-6), "calibration.latency_s.default"),
    (lambda c: c["latency_s"].update(default=True), "calibration.latency_s.default"),
    (lambda c: c.update(source="I made it up"), "calibration.source"),
    (lambda c: c.update(fitted=[]), "calibration.fitted"),
    (lambda c: c.update(schema="v2"), "calibration.schema"),
    (lambda c: c.update(eta=0.5), "eta"),
])
def test_nonsense_table_is_refused_naming_the_field(edit, field):
    cal = good_table()
    calibration.check(cal, "calibration")
    edit(cal)
    with pytest.raises(IronlawError) as e:
        calibration.check(cal, "calibration")
    assert field in str(e.value)
    assert "\n" not in str(e.value)


def test_hardware_file_with_nonsense_calibration_is_refused_on_load(tmp_path):
    a100 = hardware.get("a100")
    text = open(a100.path, encoding="utf-8").read()
    bad = text.replace("[calibration.matmul.fp16]\neta_max = ", "[calibration.matmul.fp16]\neta_max = 1")
    assert bad != text
    p = tmp_path / "a100-edited.toml"
    p.write_text(bad)
    with pytest.raises(IronlawError, match=r"calibration\.matmul\.fp16\.eta_max"):
        hardware.get(str(p))


def test_uncalibrated_kinds_keep_the_flat_defaults():
    hw = toy({"schema": calibration.SCHEMA, "source": "derived: t", "fitted": ["t"], "matmul": {"fp16": TRUE}})
    g = Graph("g", "infer", "fp16", [Op("conv", "conv", flops=1e12, dtype="fp16")])
    t = float(law.predict(g, hw).op_time_s[0])
    assert t == pytest.approx(1e12 / (PEAK * 0.5) + LAT)        # conv: [efficiency] other = 0.5
    assert not math.isnan(t)
    flat = calibration.without_calibration(hw)
    assert flat.calibration is None and hw.calibration is not None and flat.extra == hw.extra
    assert replace(flat, calibration=hw.calibration) == hw


def test_the_typed_calibration_gives_back_the_table_it_was_read_from():
    """Calibration.of(table).table() is the table (held_out defaults to []), for every calibrated catalog entry
    and a table using every section; the law reads only the typed form."""
    from ironlaw.machine.hardware import read_toml
    tables = [read_toml(p)["calibration"] for p in sorted(hardware.CATALOG_DIR.glob("*.toml"))
              if "calibration" in read_toml(p)]
    tables.append({"schema": calibration.SCHEMA, "source": "derived: t", "fitted": ["t"], "held_out": ["h"],
                   "compute": {"norm": 0.2}, "memory": {"streamed": 0.6, "produced": 0.9, "kind": {"norm": 0.4}},
                   "latency_s": {"default": 2e-6}, "matmul": {"fp32": {"eta_max": 0.9, "m_half": 4.0, "nk_half": 60.0}},
                   "conv": {"fp32": {"eta_max": 0.8, "m_half": 4.0, "nk_half": 60.0}},
                   "kernel": {"rms_norm": {"memory": 0.36}}, "op": {"aten::tanh": {"compute": 0.1}},
                   "framework_s": 1e-6, "framework_share": 0.02, "frontend": {"torch": {"framework_share": 0.01}}})
    assert len(tables) >= 3
    for t in tables:
        back = calibration.Calibration.of(calibration.check(t, "t")).table()
        assert back == {"held_out": [], **t}
