"""ironlaw validate and ironlaw.measure.calibrate.fit: real runs join predicted rows one to one, documents are valid,
big models are refused before anything is allocated, nonsense profiles are refused by field, and the
fit recovers efficiencies it was given."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ironlaw.machine import hardware
from ironlaw.core.errors import IronlawError

DATA = Path(__file__).parent / "data"
TINY = f"py:{DATA / 'validate_models.py'}:tiny"
HUGE = f"py:{DATA / 'validate_models.py'}:huge"
PROFILE = DATA / "validate-cpu.toml"


@pytest.fixture(scope="module")
def tiny_doc():
    pytest.importorskip("torch")
    from ironlaw.measure import validate
    return validate.run(TINY, batch=2, hw=hardware.load_file(PROFILE), repeats=3, warmup=1, threads=1)


def test_tiny_model_joins_one_to_one(tiny_doc):
    from ironlaw.models.capture import recorder
    from ironlaw.measure.validate import models

    r = models.resolve(TINY, 2, None, None)
    step = r.real()
    real = [rec for rec in recorder.capture(step.module, step.args, step.kwargs, real=True).records if not rec.no_work]
    rows = tiny_doc["ops"]
    # every op that runs a kernel has exactly one row, same index, same name
    assert [(x["index"], x["name"]) for x in rows] == [(rec.index, rec.name) for rec in real]
    assert len({x["index"] for x in rows}) == len(rows)
    assert {x["name"] for x in rows} >= {"aten::addmm", "aten::gelu"}
    assert all(x["measured_s"] > 0 and x["predicted_s"] > 0 for x in rows)
    # kind rows sum the op rows (the framework row is end to end minus the ops)
    kinds = {k: v for k, v in tiny_doc["by_kind"].items() if k != "framework"}
    assert math.isclose(sum(v["measured_s"] for v in kinds.values()), tiny_doc["total"]["ops_measured_s"], rel_tol=1e-9)
    assert sum(v["ops"] for v in kinds.values()) == len(rows)
    # two 2x64x128 and 2x128x16 GEMMs: FLOPs are 2·M·N·K, not MACs
    mm = sorted(x["flops"] for x in rows if x["name"] == "aten::addmm")
    assert mm == [2 * 2 * 128 * 16, 2 * 2 * 64 * 128]
    s = tiny_doc["spread"]
    assert s["min_s"] <= s["median_s"] <= s["max_s"] and len(s["samples_s"]) == tiny_doc["case"]["repeats"]


def test_json_document_is_valid_and_the_report_reads_it(tiny_doc, tmp_path, capsys):
    pytest.importorskip("torch")
    from ironlaw.cli import main
    from ironlaw.report.inputs import load_validation

    out = tmp_path / "v.json"
    main(["validate", TINY, "--on", str(PROFILE), "--repeats", "2", "--warmup", "1", "--threads", "1",
          "--format", "json", "--out", str(out)])
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "ironlaw.validate/1"
    for key in ("workload", "hardware", "case", "total", "spread", "by_kind", "ops", "score"):
        assert key in doc
    assert json.loads(out.read_text())["schema"] == "ironlaw.validate/1"
    v = load_validation(out)                      # the HTML report's strict reader accepts it
    assert v["total"]["measured_s"] == doc["total"]["measured_s"]
    json.dumps(tiny_doc, allow_nan=False)         # finite numbers only


def test_model_that_does_not_fit_is_refused_before_allocating():
    pytest.importorskip("torch")
    from ironlaw.measure import validate
    # huge() raises if it is ever built outside meta, so reaching the real build would fail differently
    with pytest.raises(IronlawError, match="nothing was allocated") as e:
        validate.run(HUGE, hw=hardware.load_file(PROFILE), repeats=1, threads=1)
    # the dtype it runs in is said: llama3-8b's "weights 29.9 GiB" read as twice its 15 GiB without "in fp32"
    assert "in fp32 (as validate runs it) needs" in str(e.value)


@pytest.mark.parametrize("table, field", [
    ("framework_s = -1.0", "framework_s"),
    ('[calibration.op."aten::tanh"]\ncompute = "fast"', "compute"),
    ('[calibration.op."aten::tanh"]\nspeed = 0.5', "speed"),
    ("[calibration.conv.fp32]\neta_max = 3.0\nm_half = 1.0\nnk_half = 1.0", "eta_max"),
    ("[calibration.conv.fp33]\neta_max = 0.5\nm_half = 1.0\nnk_half = 1.0", "fp33"),
])
def test_nonsense_calibration_is_refused_naming_the_field(tmp_path, table, field, capsys):
    head = ('\n[calibration]\nschema = "ironlaw.calibration/1"\nsource = "measured: by hand"\n'
            'fitted = ["validate:x"]\n')
    bad = tmp_path / "bad.toml"
    bad.write_text(PROFILE.read_text() + head + table + "\n")
    with pytest.raises(IronlawError, match=field):
        hardware.load_file(bad)
    from ironlaw.cli import main
    with pytest.raises(SystemExit) as e:
        main(["validate", TINY, "--on", str(bad)])
    assert e.value.code == 2 and field in capsys.readouterr().err


def _synthetic_cases():
    """Cases whose op times come from a known law: GEMM η(M,N,K), tanh at a known compute η (its own op
    class), GELU at the elementwise kind's memory η, a fixed latency, and a known framework share per op."""
    from ironlaw.machine import calibration
    from ironlaw.core.graph import Graph, Op
    hw = hardware.load_file(PROFILE)
    truth = {"schema": calibration.SCHEMA, "source": "measured: synthetic", "fitted": ["synthetic"],
             "matmul": {"fp32": {"eta_max": 0.8, "m_half": 6.0, "nk_half": 48.0}},
             "memory": {"streamed": 0.6, "produced": 0.9, "kind": {"elementwise": 0.5}},
             "latency_s": {"default": 4e-6},
             "compute": {"elementwise": 1.0}, "op": {"aten::tanh": {"compute": 0.01}}, "framework_s": 12e-6}
    true_hw = calibration.with_calibration(hw, truth)
    rng = np.random.default_rng(0)
    cases = []
    for c in range(4):
        ops = []
        for _ in range(30):
            m, n, k = (int(x) for x in rng.choice([1, 4, 16, 64, 256, 1024], 3))
            ops.append(Op("aten::mm", "matmul", flops=2.0 * m * n * k, dtype="fp32",
                          bytes={"weights": 4.0 * n * k, "activations": 4.0 * (m * k + m * n)}))
            e = float(rng.choice([1e4, 1e5, 1e6, 4e6]))
            ops.append(Op("aten::tanh", "elementwise", flops=e, bytes={"activations": 8.0 * e}, dtype="fp32"))
            ops.append(Op("aten::gelu", "elementwise", flops=5.0 * e, bytes={"activations": 8.0 * e}, dtype="fp32"))
        g = Graph(f"synthetic{c}", "infer", "fp32", ops)
        from ironlaw.law import law
        t = np.asarray(law.predict(g, true_hw).op_time_s, float) - truth["framework_s"]
        rows = [{"index": i, "name": op.name, "kind": op.kind, "dtype": op.dtype, "count": 1, "flops": op.flops,
                 "bytes": op.bytes, "median_s": float(ti), "min_s": float(ti), "measured_cv": 0.0, "spread_s": 0.0}
                for i, (op, ti) in enumerate(zip(ops, t))]
        e2e = float(t.sum()) + truth["framework_s"] * len(ops)
        cases.append({"workload": {"name": f"synthetic{c}", "phase": "infer", "batch": 1}, "ops": rows,
                      "spread": {"median_s": e2e, "min_s": e2e, "spread_s": 0.0, "cv": 0.0},
                      "total": {"views": 0}})
    return hw, truth, cases


def test_fit_recovers_known_efficiencies_and_overhead():
    from ironlaw.measure.calibrate import calibrate, fit, fitcore
    from ironlaw.law import efficiency
    from ironlaw.machine import calibration
    hw, truth, cases = _synthetic_cases()
    cal = fit.fit(hw, cases[:3], held_out=cases[3:])
    assert cal["fitted"] == [f"validate:synthetic{i} infer b1" for i in range(3)]
    assert cal["held_out"] == ["validate:synthetic3 infer b1"]
    assert cal["framework_s"] == pytest.approx(truth["framework_s"], rel=0.05)
    # the efficiencies the fitted table gives, against the ones the data were made with
    from ironlaw.core.graph import Graph, Op
    probe = Graph("probe", "infer", "fp32", [
        Op("aten::tanh", "elementwise", flops=1e6, bytes={"activations": 8e6}, dtype="fp32"),
        Op("aten::gelu", "elementwise", flops=5e6, bytes={"activations": 8e6}, dtype="fp32"),
        Op("aten::mm", "matmul", flops=2.0 * 1024 ** 3, dtype="fp32",
           bytes={"weights": 4.0 * 1024 ** 2, "activations": 8.0 * 1024 ** 2})]).columns()
    base = np.ones(3)
    got, want = efficiency.compute_eta(calibration.Calibration.of(cal), probe, base), efficiency.compute_eta(calibration.Calibration.of(truth), probe, base)
    assert got[0] == pytest.approx(0.01, rel=0.05)                 # tanh, its own class
    assert got[2] == pytest.approx(want[2], rel=0.05)              # a large GEMM
    # GELU streams at the kind's memory η in the cache and at the slower of that kernel rate and the plain
    # pattern's η in device memory (efficiency.slow_tier_eta): its time at both sizes as the truth's
    from ironlaw.law import law
    gelus = Graph("gelus", "infer", "fp32", [Op("aten::gelu", "elementwise", flops=5.0 * e, bytes={"activations": 8.0 * e},
                                                dtype="fp32") for e in (1e5, 4e6)])
    t_got = np.asarray(law.predict(gelus, calibration.with_calibration(hw, cal)).op_time_s, float).reshape(-1)
    t_want = np.asarray(law.predict(gelus, calibration.with_calibration(hw, truth)).op_time_s, float).reshape(-1)
    assert np.allclose(t_got, t_want, rtol=0.05)
    # and the held-out case, never fitted, is predicted as the truth predicts it
    rows = fit.score(calibration.with_calibration(hw, cal), cases[3:])
    assert abs(rows[0]["error"]) < 0.05


def test_a_case_cannot_be_both_fitted_and_held_out():
    from ironlaw.measure.calibrate import fit
    hw, _, cases = _synthetic_cases()
    with pytest.raises(IronlawError, match="both fitted and held out"):
        fit.fit(hw, cases[:2], held_out=cases[1:2])


def test_fit_command_reports_fitted_and_held_out_separately(tmp_path, capsys):
    from ironlaw.cli import main
    _, _, cases = _synthetic_cases()
    paths = []
    for i, c in enumerate(cases):
        p = tmp_path / f"run{i}.json"
        p.write_text(json.dumps({"schema": "ironlaw.validate/1", **c}))
        paths.append(str(p))
    main(["fit", *paths[:3], "--hold-out", paths[3], "--on", str(PROFILE), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert [r["case"] for r in doc["held_out"]] == ["synthetic3 infer b1"]
    assert len(doc["fitted"]) == 3 and doc["saved"] is None
    assert doc["calibration"]["held_out"] == ["validate:synthetic3 infer b1"]
    # the library's front door gives the command's document
    import ironlaw
    lib = ironlaw.fit(paths[:3], hold_out=paths[3:], on=str(PROFILE))
    assert json.loads(json.dumps(lib.to_dict())) == doc and lib.held_out[0]["case"] == "synthetic3 infer b1"
    # a catalog-style file without [probe] is not a profile to write into
    with pytest.raises(SystemExit) as e:
        main(["fit", *paths[:3], "--on", str(PROFILE), "--save"])
    assert e.value.code == 2 and "not a probe profile" in capsys.readouterr().err


def test_a_run_past_the_models_positions_is_refused_before_it_starts():
    """GPT-2 has 1024 learned positions: decode after 1024 cached tokens would index past them (an IndexError
    from inside torch without this check)."""
    pytest.importorskip("transformers")
    from ironlaw.measure.validate.models import resolve
    with pytest.raises(IronlawError, match=r"needs 1025 positions but the config allows 1024.*--seq 1023"):
        resolve("gpt2", 1, 1024, "decode")
    with pytest.raises(IronlawError, match="needs 1025 positions"):
        resolve("gpt2", 1, 1025, "prefill")
    assert resolve("gpt2", 1, 1023, "decode").seq == 1023


def test_rounds_of_one_case_merge_and_other_cases_are_refused(tiny_doc):
    pytest.importorskip("torch")
    from ironlaw.measure import validate

    hw = hardware.load_file(PROFILE)
    again = validate.run(TINY, batch=2, hw=hw, repeats=3, warmup=1, threads=1)
    m = validate.merge([tiny_doc, again], hw)
    assert m["case"]["rounds"] == 2
    assert sorted(m["spread"]["samples_s"]) == sorted(tiny_doc["spread"]["samples_s"] + again["spread"]["samples_s"])
    for row, a, b in zip(m["ops"], tiny_doc["ops"], again["ops"]):
        assert (row["index"], row["name"]) == (a["index"], a["name"])
        assert row["median_s"] == pytest.approx((a["median_s"] + b["median_s"]) / 2)     # median of two
        assert row["min_s"] == min(a["min_s"], b["min_s"])
        assert row["measured_cv"] >= min(a["measured_cv"], b["measured_cv"])
    assert m["total"]["measured_s"] == pytest.approx(float(np.median(m["spread"]["samples_s"])))
    assert m["total"]["predicted_s"] == pytest.approx(tiny_doc["total"]["predicted_s"])   # same graph, same profile
    other = validate.run(TINY, batch=3, hw=hw, repeats=3, warmup=1, threads=1)
    with pytest.raises(IronlawError, match="only rounds of the same case"):
        validate.merge([tiny_doc, other], hw)
    with pytest.raises(IronlawError, match="nothing to merge"):
        validate.merge([], hw)


def test_a_batched_gemv_does_not_set_the_bandwidth_of_weights():
    """Cold mm GEMVs at 20 GB/s (as the probe times them) and, in three other cases, a bmm GEMV of a 154 MB head
    at 10 GB/s (GPT-2's tied LM head in a prefill, as one run measured it): the weights' bandwidth follows the
    mm ones, though the bmm cases are the majority (each case weighs the same; see fit.fit_gemv)."""
    from ironlaw.measure.calibrate import calibrate, fit, fitcore
    from ironlaw.law import efficiency
    from ironlaw.machine import calibration
    from ironlaw.core.graph import Op
    hw = hardware.load_file(PROFILE)
    dram = hw.memory[hw.device_tier].bw_Bps

    def gemv(name, n, k, rate, ds):
        w = 4.0 * n * k
        op = Op(name, "matmul", flops=2.0 * n * k, bytes={"weights": w, "activations": 4.0 * (n + k)}, dtype="fp32")
        return calibrate.Observation(op, w / rate, ds)
    obs = [gemv("aten::mm", 4096, 1024, 20e9, "probe:gemm"), gemv("aten::mm", 8192, 1024, 20e9, "probe:gemm"),
           gemv("aten::addmm", 3072, 768, 20e9, "validate:a"), gemv("aten::addmm", 768, 3072, 20e9, "validate:a"),
           *(gemv("aten::bmm", 50257, 768, 10e9, f"validate:{c}") for c in "bcd")]      # three prefills of three
    cal = fit.fit_gemv(fitcore.Problem(hw, obs), {"matmul": {"fp32": {"eta_max": 0.5, "m_half": 8.0, "nk_half": 64.0}}})
    assert cal["memory"]["streamed"] * dram == pytest.approx(20e9, rel=0.05)


def test_a_dtype_that_streams_slower_does_not_set_the_bandwidth_of_weights():
    """fp32 GEMVs at 20 GB/s and, weighing more, bf16 GEMVs at 13 GB/s (bf16 converted before it is
    multiplied, as on a 2-vCPU EPYC VM): the memory's bandwidth follows the fp32 rows, and bf16's slowness goes to
    its own GEMV η, which puts its GEMVs back at their measured time."""
    from ironlaw.measure.calibrate import calibrate, fit, fitcore
    from ironlaw.law import efficiency
    from ironlaw.machine import calibration
    from ironlaw.core.graph import Op
    import dataclasses
    hw = hardware.load_file(PROFILE)
    hw = dataclasses.replace(hw, peak_flops={**hw.peak_flops, "bf16": 2 * hw.peak("fp32")})
    dram = hw.memory[hw.device_tier].bw_Bps

    def gemv(dt, n, k, rate, ds):
        b = 4.0 if dt == "fp32" else 2.0
        w = b * n * k
        op = Op("aten::mm", "matmul", flops=2.0 * n * k, bytes={"weights": w, "activations": b * (n + k)}, dtype=dt)
        return calibrate.Observation(op, w / rate, ds)
    obs = [gemv("fp32", 4096, 1024, 20e9, "probe:gemm"), gemv("fp32", 4096, 4096, 20e9, "probe:gemm"),
           gemv("fp32", 3072, 768, 20e9, "probe:gemm"),
           *(gemv("bf16", n, 4096, 13e9, f"validate:{c}") for c, n in zip("abcd", (4096, 8192, 2048, 6144)))]
    table = {"eta_max": 0.5, "m_half": 8.0, "nk_half": 64.0}
    prob = fitcore.Problem(hw, obs)
    cal = fit.fit_gemv(prob, {"matmul": {"fp32": dict(table), "bf16": dict(table)}})
    assert cal["memory"]["streamed"] * dram == pytest.approx(20e9, rel=0.05)
    bf16 = prob.dtypes == "bf16"
    assert prob.times(cal)[bf16] == pytest.approx(prob.meas[bf16], rel=0.05)


def test_the_runs_gemms_set_the_ceiling_the_probes_shape_model_leaves():
    """The probe's GEMM rows fix the shape model (packing, weight traffic); a model's own GEMMs then set
    its ceiling and M's half point. Here the probe's rows ran at η_max 0.6 and the model runs' GEMMs at 0.85
    (on a 2-vCPU EPYC VM BERT's and GPT-2's prefill GEMMs ran 1.07–1.29× faster than the probe's model said,
    per-shape medians over five runs): a held-out run's GEMM lands at the runs' rate, and the probe's serial share stays."""
    from ironlaw.measure.calibrate import calibrate, fit, fitcore
    from ironlaw.machine import calibration
    from ironlaw.law import law
    from ironlaw.core.graph import Graph, Op
    hw = hardware.load_file(PROFILE)
    shape = {"m_half": 6.0, "nk_half": 30.0, "serial": 1.0, "streamed": 0.5}
    probe_truth = {"schema": calibration.SCHEMA, "source": "measured: synthetic", "fitted": ["synthetic"],
                   "matmul": {"fp32": {"eta_max": 0.6, **shape}}}
    run_truth = {**probe_truth, "matmul": {"fp32": {"eta_max": 0.85, **shape}}}

    def gemm(m, n, k, mnk=False):
        return Op(f"mm {m}x{n}x{k}", "matmul", flops=2.0 * m * n * k, dtype="fp32",
                  bytes={"weights": 4.0 * n * k, "activations": 4.0 * (m * k + m * n)},
                  attrs={"mnk": (m, n, k)} if mnk else {"nk": (n, k)})

    def timed(ops, truth, dataset):
        t = law.predict(Graph("g", "infer", "fp32", ops), calibration.with_calibration(hw, truth)).op_time_s
        return [calibrate.Observation(op, float(ti), dataset) for op, ti in zip(ops, np.asarray(t).reshape(-1))]
    probe = timed([gemm(m, n, k, mnk=True) for m in (8, 32, 128, 512) for n, k in ((2048, 1024), (1024, 1024))],
                  probe_truth, "probe:gemm")
    runs = [o for i, ds in enumerate("abc") for o in
            timed([gemm(m, n, k) for m in (64 * (i + 1), 256 * (i + 1)) for n, k in ((768, 3072), (3072, 768), (768, 768))],
                  run_truth, f"validate:{ds}")]
    cal = fit.fit_kinds(fitcore.Problem(hw, probe + runs), {k: probe_truth[k] for k in ("schema", "source", "fitted")})
    mm = cal["matmul"]["fp32"]
    assert mm["serial"] == pytest.approx(1.0, rel=0.1)           # the probe's packing, kept
    held = [gemm(384, 2304, 768), gemm(1024, 768, 768)]
    got = law.predict(Graph("h", "infer", "fp32", held), calibration.with_calibration(hw, cal)).op_time_s
    want = law.predict(Graph("h", "infer", "fp32", held), calibration.with_calibration(hw, run_truth)).op_time_s
    assert np.allclose(np.asarray(got).reshape(-1), np.asarray(want).reshape(-1), rtol=0.05)
