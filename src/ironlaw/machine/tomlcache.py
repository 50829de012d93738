"""The catalog's parsed hardware TOML kept as JSON, so a cold `ironlaw analyze` neither imports ``tomllib`` nor
parses the kernel-fitted tables again (JSON reads several times faster). ``hardware.read_toml`` keeps the
catalog's own files only, never a profile or a file the user names.

An entry holds the file's text and its parsed document; it is used only when the text is the file's text now,
byte for byte, so an edited or regenerated file is parsed afresh. Entries live in ``$IRONLAW_HOME/cache/toml``
(default ``$XDG_CACHE_HOME/ironlaw/toml``, ``~/.cache/ironlaw/toml``); ``IRONLAW_NO_CACHE=1`` turns them off.
A folder that cannot be written, or a document JSON cannot hold (TOML dates), only means no entry.
"""
from __future__ import annotations

import json
import os
import zlib
from pathlib import Path
from typing import Callable


def folder() -> Path:
    home = os.environ.get("IRONLAW_HOME")
    if home:
        return Path(home) / "cache" / "toml"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "ironlaw" / "toml"


def entry(path: Path) -> Path:
    """One entry per file: its name and a checksum of its absolute path."""
    where = str(Path(path).resolve())
    return folder() / f"{Path(path).stem}-{zlib.crc32(where.encode()):08x}.json"


def parsed(path: Path, text: str, parse: Callable[[str], dict]) -> dict:
    """``parse(text)``, or the entry kept for ``path`` when it was parsed from this very text."""
    if os.environ.get("IRONLAW_NO_CACHE"):
        return parse(text)
    e = entry(path)
    try:
        kept = json.loads(e.read_text(encoding="utf-8"))
        if kept.get("text") == text:
            return kept["doc"]
    except (OSError, ValueError, AttributeError, KeyError):
        pass
    doc = parse(text)
    _keep(e, text, doc)
    return doc


def _keep(e: Path, text: str, doc: dict) -> None:
    try:
        payload = json.dumps({"text": text, "doc": doc})
    except (TypeError, ValueError):              # a TOML date or time: JSON has none
        return
    tmp = e.with_name(f".{e.name}.{os.getpid()}.tmp")
    try:
        e.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(payload, encoding="utf-8")
        os.replace(tmp, e)                       # whole or not at all: readers never see half an entry
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
