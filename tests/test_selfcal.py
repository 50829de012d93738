"""The probe's self-calibration: its built-in reference runs are timed and fitted into the profile it
saves; a run that fails is named and the rest still fitted; an interrupted probe saves nothing."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ironlaw.machine import hardware
from ironlaw.measure.calibrate import selfcal
from ironlaw.measure import validate
from ironlaw.measure.calibrate import build
from ironlaw.measure.probe.references import Reference, references

sys.path.insert(0, str(Path(__file__).parent))
from test_probe import fake_probe  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("IRONLAW_HOME", str(tmp_path))
    return tmp_path / "profiles"


def test_reference_runs_cover_both_front_ends_and_stay_off_the_benchmark_models():
    """The framework term is fitted per front end: each set holds a plain-torch and a Hugging Face run; none
    is a model benchmarks/accuracy.py scores as never fitted (GPT-2 12 layers, BERT-Small, ResNets, the MLP)."""
    for quick in (True, False):
        refs = references(quick)
        assert any(r.spec.startswith("py:") for r in refs) and any(r.spec.startswith("hf:") for r in refs)
    names = {selfcal.model(r) for r in references(False)}
    assert names == {"reference-cnn", "reference-decoder", "reference-mlp"}
    cfg = json.loads(Path(references(False)[1].spec[3:]).read_text())
    assert (cfg["n_layer"], cfg["n_embd"]) != (12, 768)          # not GPT-2 itself


def test_cli_probe_fits_its_reference_runs_into_the_profile(monkeypatch, home, capsys):
    pytest.importorskip("transformers")
    import ironlaw.measure.probe as probe_mod
    from ironlaw.cli import main
    monkeypatch.setattr(probe_mod, "run", lambda **kw: fake_probe(threads=1))
    with pytest.raises(SystemExit) as e:
        main(["probe", "--quick", "--format", "json"]) or sys.exit(0)
    assert e.value.code in (0, None)
    out = json.loads(capsys.readouterr().out)
    refs = out["profile"]["probe"]["references"]
    assert refs["failed"] == [] and len(refs["fitted"]) == len(references(True))
    hw = hardware.get(out["path"])                                # saved, and it loads
    cal = hw.calibration.table()
    assert all(f"validate:{name}" in cal["fitted"] for name in refs["fitted"])
    assert "reference runs" in cal["source"]


def test_a_failed_reference_run_is_named_and_the_rest_still_fitted(monkeypatch, home, capsys):
    pytest.importorskip("transformers")
    import ironlaw.measure.probe as probe_mod
    from ironlaw.cli import main
    good = references(True)[0]
    bad = Reference("py:/nonexistent/model.py:factory", 1, None, None, 3)
    monkeypatch.setattr(selfcal, "references", lambda quick: [bad, good])
    monkeypatch.setattr(probe_mod, "run", lambda **kw: fake_probe(threads=1))
    with pytest.raises(SystemExit) as e:
        main(["probe", "--quick"]) or sys.exit(0)
    assert e.value.code in (0, None)
    text = capsys.readouterr().out
    assert "reference run failed, not fitted" in text and "factory" in text
    hw = hardware.get("local")
    refs = hw.extra["probe"]["references"]
    assert [f["run"] for f in refs["failed"]] == ["reference-factory infer b1"]
    assert refs["fitted"] == ["reference-cnn infer b1"]
    assert "validate:reference-cnn infer b1" in hw.calibration.table()["fitted"]


def test_all_reference_runs_failed_keeps_the_probe_rows_fit(monkeypatch):
    monkeypatch.setattr(selfcal, "references", lambda quick: [Reference("py:/nonexistent.py:f", 1, None, None, 3)])
    out = selfcal.calibrate(build.profile(fake_probe(threads=1), calibrate_fit=False), quick=True)
    assert out["calibration"] == build.profile(fake_probe(threads=1))["calibration"]     # the rows' own fit
    assert "probe rows" in out["calibration"]["source"]
    assert out["probe"]["references"]["fitted"] == [] and len(out["probe"]["references"]["failed"]) == 1


def test_an_interrupted_reference_run_saves_no_profile(monkeypatch, home):
    import ironlaw.measure.probe as probe_mod
    from ironlaw.cli import main

    def interrupted(*a, **kw):
        raise KeyboardInterrupt
    monkeypatch.setattr(probe_mod, "run", lambda **kw: fake_probe(threads=1))
    monkeypatch.setattr(validate, "run", interrupted)
    with pytest.raises(SystemExit) as e:
        main(["probe", "--quick"])
    assert e.value.code == 130
    assert not home.exists() or not any(home.iterdir())


def test_a_gpu_profile_skips_the_cpu_reference_runs():
    doc = build.profile(fake_probe(threads=1))
    doc["kind"] = "gpu"
    out = selfcal.calibrate(doc)
    assert "GPU" in out["probe"]["references"]["skipped"] and out["probe"]["references"]["fitted"] == []
