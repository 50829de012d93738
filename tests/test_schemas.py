"""The JSON Schema files shipped in ironlaw/core/schemas: every result schema the code writes has one, and the real
output of every command validates against it (a document missing a required field does not)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from ironlaw.machine import hardware
from ironlaw.core import schemas

SRC = Path(__file__).resolve().parents[1] / "src" / "ironlaw"
DATA = Path(__file__).parent / "data"
TINY = f"py:{DATA / 'validate_models.py'}:tiny"
PROFILE = DATA / "validate-cpu.toml"

COMMANDS = {
    "estimate": ("analyze", "llama3-8b", "--phase", "decode", "--seq", "1024", "--on", "h100"),
    "estimate-collective": ("analyze", "allreduce:64MB", "--on", "a100", "--gpus", "8"),
    "estimate-cnn-cpu": ("analyze", "resnet50", "--batch", "4", "--on", "epyc-9654"),
    "train-step": ("analyze", "llama3-8b", "--phase", "train", "--on", "a100", "--gpus", "16", "--nodes", "2",
                   "--tp", "8", "--dp", "2", "--global-batch", "16"),
    "serve": ("serve", "llama3-8b", "--on", "h100", "--prompt", "1024", "--output", "256", "--concurrency", "32"),
    "serve-frontier": ("serve", "llama3-8b", "--on", "h100", "--sweep-concurrency", "--slo", "itl=20ms"),
    "compare": ("compare", "llama3-8b", "--phase", "decode", "--on", "h100", "--what-if", "quant=int8,target=weights"),
    "sweep": ("sweep", "llama3-8b", "--phase", "decode", "--seq", "128", "--on", "h100,b200", "--batch", "1,8,64"),
    "contract": ("contract", "--on", "h100"),
    "search": ("search", "llama3-8b", "--on", "h100", "--gpus", "16", "--global-batch", "64", "--seq", "4096"),
    "search-serve": ("search", "llama3-8b", "--phase", "serve", "--on", "h100", "--gpus", "2", "--slo", "itl=50ms"),
    "search-serve-max": ("search", "llama3-8b", "--phase", "serve", "--on", "h100", "--gpus", "4"),
    "search-serve-devices": ("search", "llama3-8b", "--phase", "serve", "--on", "h100,b200,mi355x", "--gpus", "2",
                             "--dtype", "fp4", "--price", "b200=5", "--rank", "usd-per-million-tokens"),
    "hardware": ("hardware", "show", "gb10"),
    "hardware-list": ("hardware", "list"),
    "workloads-list": ("workloads", "list"),
}


def written_schema_ids() -> set[str]:
    ids = set()
    for p in SRC.rglob("*.py"):
        ids |= set(re.findall(r'"(ironlaw\.[a-z-]+/1)"', p.read_text()))
    return ids


def test_every_result_schema_the_code_writes_ships_a_schema_file():
    written = written_schema_ids()
    assert {"ironlaw.estimate/1", "ironlaw.train-step/1", "ironlaw.serve/1", "ironlaw.validate/1"} <= written
    assert written <= set(schemas.names())


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_real_command_output_matches_its_schema(cli, name):
    r = cli(*COMMANDS[name], "--format", "json")
    assert r.rc == 0, r.err
    doc = r.json()
    assert doc["schema"] == f"ironlaw.{name.split('-')[0] if name.startswith(('estimate', 'search')) else name}/1"
    schemas.validate(doc)


def test_a_document_without_a_required_field_or_with_a_wrong_type_is_refused(cli):
    doc = cli(*COMMANDS["estimate"], "--format", "json").json()
    schemas.validate(doc)
    with pytest.raises(jsonschema.ValidationError, match="time_s"):
        schemas.validate({k: v for k, v in doc.items() if k != "time_s"})
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate({**doc, "bottleneck": {**doc["bottleneck"], "resource": "vibes"}})
    nested = cli(*COMMANDS["compare"], "--format", "json").json()
    del nested["after"]["ops"]
    with pytest.raises(jsonschema.ValidationError, match="ops"):      # the nested estimate is checked too
        schemas.validate(nested)


def test_the_hardware_schema_names_the_kinds_and_roles_the_loader_accepts():
    """Device kinds and memory roles are closed sets in the schema; link kinds grow with the catalog (a string)."""
    s = schemas.load("ironlaw.hardware/1")
    assert set(s["properties"]["kind"]["enum"]) == set(hardware.KINDS)
    assert set(s["properties"]["memory"]["items"]["properties"]["role"]["enum"]) == set(hardware.ROLES)
    assert s["properties"]["links"]["items"]["properties"]["kind"]["type"] == "string"


def test_an_unknown_schema_id_is_one_clear_error():
    from ironlaw.core.errors import IronlawError
    with pytest.raises(IronlawError, match="ironlaw.estimate/1"):
        schemas.path("ironlaw.estimates/1")


def test_validate_without_jsonschema_or_a_schema_field_is_one_clear_error(monkeypatch):
    """jsonschema ships with [test] only: a user's plain install gets the package to install, not an ImportError;
    a document naming no schema gets what validate takes, not a KeyError."""
    from ironlaw.core.errors import IronlawError
    with pytest.raises(IronlawError, match='with a "schema" field naming its schema, got dict without one'):
        schemas.validate({"time_s": 1.0})
    with pytest.raises(IronlawError, match="got str"):
        schemas.validate("ironlaw.estimate/1")
    monkeypatch.setitem(__import__("sys").modules, "jsonschema", None)
    with pytest.raises(IronlawError, match="needs the jsonschema package: pip install jsonschema"):
        schemas.validate({"schema": "ironlaw.error/1", "error": "x", "exit_code": 2})


@pytest.mark.torch
def test_validate_and_fit_outputs_match_their_schemas(tmp_path, capsys):
    pytest.importorskip("torch")
    from ironlaw.cli import main
    runs = []
    for b in (1, 2, 3):
        out = tmp_path / f"tiny-b{b}.json"
        main(["validate", TINY, "--batch", str(b), "--on", str(PROFILE), "--repeats", "2", "--warmup", "1",
              "--threads", "1", "--format", "json", "--out", str(out)])
        doc = json.loads(capsys.readouterr().out)
        schemas.validate(doc)
        schemas.validate(json.loads(out.read_text()))
        runs.append(str(out))
    main(["fit", *runs[:2], "--hold-out", runs[2], "--on", str(PROFILE), "--format", "json"])
    fit = json.loads(capsys.readouterr().out)
    assert fit["schema"] == "ironlaw.fit/1"
    schemas.validate(fit)


@pytest.mark.torch
def test_probe_output_matches_its_schema(monkeypatch, tmp_path, capsys):
    pytest.importorskip("torch")
    import ironlaw.measure.probe as probe_mod
    from ironlaw.cli import main
    from test_probe import fake_probe
    monkeypatch.setenv("IRONLAW_HOME", str(tmp_path))
    monkeypatch.setattr(probe_mod, "run", lambda **kw: fake_probe())
    with pytest.raises(SystemExit) as e:
        main(["probe", "--quick", "--no-references", "--format", "json"]) or exit(0)
    assert e.value.code in (0, None)
    doc = json.loads(capsys.readouterr().out)
    schemas.validate(doc)
    schemas.validate(doc["profile"]["calibration"])       # the probe's own fit, as stored in the profile


def test_the_schema_files_ship_as_package_data():
    try:
        import tomllib
    except ImportError:                                   # Python 3.10
        import tomli as tomllib
    pyproject = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text())
    assert "core/schemas/*.json" in pyproject["tool"]["setuptools"]["package-data"]["ironlaw"]
    assert "jsonschema>=4.18" in pyproject["project"]["optional-dependencies"]["test"]
    assert len(list((SRC / "core" / "schemas").glob("*.schema.json"))) == len(schemas.names()) >= 12


def test_a_serving_search_without_its_devices_or_a_row_without_its_price_is_refused(cli):
    doc = cli(*COMMANDS["search-serve-devices"], "--format", "json").json()
    schemas.validate(doc)
    assert [k["hardware"] for k in doc["skipped"]] == ["h100", "mi355x"]
    with pytest.raises(jsonschema.ValidationError, match="skipped"):
        schemas.validate({k: v for k, v in doc.items() if k != "skipped"})
    row = {k: v for k, v in doc["top"][0].items() if k != "usd_per_million_output_tokens"}
    with pytest.raises(jsonschema.ValidationError, match="usd_per_million_output_tokens"):
        schemas.validate({**doc, "top": [row]})


def test_serve_time_s_only_where_the_result_has_one_wall_time(cli):
    """Offline (--max-throughput): requests stated, time_s the time to serve them all. Online: a steady state of
    concurrent sequences with no stated number of requests has no one wall time, so time_s is refused there (one
    request's wall time is request_latency_s)."""
    off = cli("serve", "llama3-8b", "--on", "h100", "--max-throughput", "--format", "json").json()
    schemas.validate(off)
    assert off["time_s"] == pytest.approx(off["requests"] / off["requests_per_s"])
    on = cli(*COMMANDS["serve"], "--format", "json").json()
    schemas.validate(on)
    assert "time_s" not in on and on["request_latency_s"] > on["ttft_s"] > 0
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate({**on, "time_s": on["request_latency_s"]})


def test_search_time_s_only_where_the_layout_has_one_wall_time(cli):
    """The serving search as serve: an online row (continuous batching at a set concurrency, ``--slo`` on a dense
    model) carries its request's ``request_latency_s`` and no ``time_s``, nor does its document; a max-throughput
    row keeps ``time_s`` (its requests served), and so does the document, the best row's."""
    on = cli(*COMMANDS["search-serve"], "--format", "json").json()
    schemas.validate(on)
    best = on["top"][0]
    assert "time_s" not in on and all("time_s" not in e for e in on["top"])
    assert best["latency_from"] == "serving.estimate" and best["request_latency_s"] > best["ttft_s"] > 0
    for bad in ({**on, "time_s": best["request_latency_s"]}, {**on, "top": [{**best, "time_s": 1.0}]},
                {**on, "top": [{k: v for k, v in best.items() if k != "request_latency_s"}]}):
        with pytest.raises(jsonschema.ValidationError):
            schemas.validate(bad)
    off = cli(*COMMANDS["search-serve-max"], "--format", "json").json()
    schemas.validate(off)
    assert off["time_s"] == off["top"][0]["time_s"] > 0 and "request_latency_s" not in off["top"][0]
    with pytest.raises(jsonschema.ValidationError, match="time_s"):
        schemas.validate({k: v for k, v in off.items() if k != "time_s"})
