"""Hardware profiles measured by ``ironlaw probe``: where they live, how they are written and checked.

A profile is a hardware TOML file in the catalog's own format (see ``ironlaw.machine.hardware``) whose
numbers are all "measured by probe on <date> (<host>, torch <version>, <n> threads)", plus:

    [probe]                 # what was run: date, host, cpu, torch, threads, quick, duration_s, max_cv
    [[probe.gemm]]          # one row per measurement: dtype, m, n, k, time_s, cv, flops_per_s …
    [[probe.memory]] …      # (families: gemm, conv, memory, vector, reduce, dispatch, cuda)
    [calibration]           # fitted from the rows above (see ``ironlaw.measure.calibrate.calibrate``)

Profiles live in ``$IRONLAW_HOME/profiles`` (default ``~/.local/share/ironlaw/profiles``); ``--on
local`` is the newest one. Writing is atomic: a temporary file in the same folder, then
``os.replace``; an interrupt (Ctrl-C) removes the temporary file and leaves nothing behind.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

from ..core.errors import IronlawError
from .hardware import toml_loads, parse_hardware
from .home import newest, profiles_dir  # noqa: F401  (re-exported: where profiles live)
from .probetable import FAMILIES, check_probe  # noqa: F401  (re-exported: the [probe] table's checks)


def default_path(host: str, stamp: str) -> Path:
    safe = re.sub(r"[^a-z0-9-]+", "-", host.lower()).strip("-") or "host"
    return profiles_dir() / f"{safe}-{stamp}.toml"


# ---------------------------------------------------------------- writing TOML (the subset we use)

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k)


_NUMBERS = re.compile(r"[-0-9*. ]+")


def _value(v, where: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise IronlawError(f"{where}: {v!r} is not a finite number; refusing to write it")
        return repr(v)
    if isinstance(v, str):        # a long run of numbers (a kernel grid): a literal string, which TOML reads fast
        return f"'{v}'" if len(v) > 64 and _NUMBERS.fullmatch(v) else json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x, where) for x in v) + "]"
    try:  # numpy scalars
        return _value(v.item(), where)
    except AttributeError:
        raise IronlawError(f"{where}: cannot write a {type(v).__name__} to TOML") from None


def _is_table_list(v) -> bool:
    return isinstance(v, (list, tuple)) and len(v) > 0 and all(isinstance(x, dict) for x in v)


def dumps_table(doc: dict, prefix: str = "") -> str:
    """TOML text for ``doc``: scalars first, then sub-tables and arrays of tables."""
    lines = []
    for k, v in doc.items():
        if v is None or isinstance(v, dict) or _is_table_list(v):
            continue
        lines.append(f"{_key(k)} = {_value(v, prefix + k)}")
    for k, v in doc.items():
        path = f"{prefix}{_key(k)}"
        if isinstance(v, dict):
            body = dumps_table(v, path + ".")
            own = any(not (x is None or isinstance(x, dict) or _is_table_list(x)) for x in v.values())
            lines += (["", f"[{path}]"] if own or not v else [""]) + ([body] if body else [])
        elif _is_table_list(v):
            for row in v:
                body = dumps_table(row, path + ".")
                lines += ["", f"[[{path}]]"] + ([body] if body else [])
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")


def write_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (see ironlaw.core.files), creating the profiles folder."""
    from ..core.files import write_atomic as write
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write(path, text, "profile")


def save(doc: dict, path: Path | None = None) -> Path:
    """Check ``doc`` loads as a hardware profile, then write it atomically; return the path."""
    target = Path(path) if path else default_path(doc["probe"]["host"], doc["probe"]["stamp"])
    parse_hardware(doc, str(target))            # never write what `--on` would refuse to read
    if target.suffix != ".toml":
        raise IronlawError(f"--out {target}: a profile file name must end in .toml")
    return write_atomic(target, dumps_table(doc) + "\n")


def replace_table(path: Path, name: str, table: dict) -> Path:
    """Rewrite ``[name]`` (and its sub-tables) of a TOML file, keeping every other line as it is."""
    text = Path(path).read_text(encoding="utf-8")
    out, skipping = [], False
    header = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\-\"]+)\s*\]\]?")
    for line in text.splitlines():
        m = header.match(line)
        if m:
            skipping = m.group(1) == name or m.group(1).startswith(name + ".")
        if not skipping:
            out.append(line)
    body = "\n".join(out).rstrip("\n")
    new = body + "\n\n" + dumps_table({name: table}) + "\n"
    parse_hardware(toml_loads(new), str(path))
    return write_atomic(Path(path), new)


def copy_with_table(src: Path, target: Path, name: str, table: dict) -> Path:
    """``src``'s TOML written to ``target`` (unless they are one file) with its ``[name]`` replaced by ``table``."""
    if Path(target).resolve() != Path(src).resolve():
        write_atomic(Path(target), Path(src).read_text(encoding="utf-8"))
    return replace_table(Path(target), name, table)
