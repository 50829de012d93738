"""The catalog's parsed TOML kept as JSON (ironlaw.machine.tomlcache): used only for the very text it was parsed
from, identical to a fresh parse, and never needed (an unwritable folder only means no entry)."""
from __future__ import annotations

import json
import tomllib

import pytest

from ironlaw.machine import hardware, tomlcache


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("IRONLAW_HOME", str(tmp_path))
    monkeypatch.delenv("IRONLAW_NO_CACHE", raising=False)
    return tmp_path


def test_every_catalog_file_reads_back_as_its_parse(home):
    for path in sorted(hardware.CATALOG_DIR.glob("*.toml")):
        fresh = tomllib.loads(path.read_text(encoding="utf-8"))
        assert hardware.read_toml(path) == fresh                  # parsed, entry written
        assert tomlcache.entry(path).is_file()
        assert hardware.read_toml(path) == fresh                  # read from the entry
        assert hardware.load_file(path) == hardware.load_file(path)


def test_an_entry_is_used_only_for_the_text_it_was_parsed_from(home):
    path = hardware.CATALOG_DIR / "h100.toml"
    text = path.read_text(encoding="utf-8")
    e = tomlcache.entry(path)
    e.parent.mkdir(parents=True)
    planted = {"name": "planted"}
    e.write_text(json.dumps({"text": text, "doc": planted}))
    assert hardware.read_toml(path) == planted                    # the entry is what is read
    e.write_text(json.dumps({"text": text + "\n# edited", "doc": planted}))
    assert hardware.read_toml(path) == tomllib.loads(text)        # another text: parsed afresh, entry replaced
    assert json.loads(e.read_text())["text"] == text
    e.write_text("{not json")
    assert hardware.read_toml(path)["name"] == "h100"


def test_no_entry_for_a_file_outside_the_catalog(home, tmp_path):
    p = tmp_path / "mine.toml"
    p.write_text((hardware.CATALOG_DIR / "t4.toml").read_text(encoding="utf-8"))
    assert hardware.load_file(p).name == "t4"
    assert not (home / "cache").exists()


def test_an_unwritable_folder_only_means_no_entry(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("IRONLAW_HOME", str(blocker))              # cache/toml cannot be made under a file
    assert hardware.get("h100").name == "h100"
    assert not tomlcache.entry(hardware.CATALOG_DIR / "h100.toml").exists()
