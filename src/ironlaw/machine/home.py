"""Where ironlaw keeps what it measures: ``$IRONLAW_HOME/profiles`` (default
``~/.local/share/ironlaw/profiles``); ``--on local`` is the newest profile there."""
from __future__ import annotations

import os
from pathlib import Path

from ..core.errors import IronlawError


def profiles_dir() -> Path:
    home = os.environ.get("IRONLAW_HOME")
    base = Path(home) if home else Path.home() / ".local" / "share" / "ironlaw"
    return base / "profiles"


def newest() -> Path:
    """The most recently written profile; an error when there is none."""
    d = profiles_dir()
    files = list(d.glob("*.toml")) if d.is_dir() else []   # temporary files end in .tmp
    if not files:
        raise IronlawError(f"no profile yet; run `ironlaw probe` (looked in {d})")
    return max(files, key=lambda p: (p.stat().st_mtime, p.name))
