"""Hardware profiles measured by ``ironlaw probe``: where they live, how they are written and checked.

A profile is a hardware TOML file in the catalog's own format (see ``ironlaw.hardware``) whose
numbers are all "measured by probe on <date> (<host>, torch <version>, <n> threads)", plus:

    [probe]                 # what was run: date, host, cpu, torch, threads, quick, duration_s, max_cv
    [[probe.gemm]]          # one row per measurement: dtype, m, n, k, time_s, cv, flops_per_s …
    [[probe.memory]] …      # (families: gemm, conv, memory, vector, reduce, dispatch, cuda)
    [calibration]           # fitted from the rows above (see ``ironlaw.calibrate``)

Profiles live in ``$IRONLAW_HOME/profiles`` (default ``~/.local/share/ironlaw/profiles``); ``--on
local`` is the newest one. Writing is atomic: a temporary file in the same folder, then
``os.replace``; an interrupt (Ctrl-C) removes the temporary file and leaves nothing behind.
"""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

from .errors import IronlawError, unknown

FAMILIES = ("gemm", "conv", "memory", "vector", "reduce", "dispatch", "cuda", "pages", "attention")


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


def default_path(host: str, stamp: str) -> Path:
    safe = re.sub(r"[^a-z0-9-]+", "-", host.lower()).strip("-") or "host"
    return profiles_dir() / f"{safe}-{stamp}.toml"


# ---------------------------------------------------------------- writing TOML (the subset we use)

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k)


def _value(v, where: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise IronlawError(f"{where}: {v!r} is not a finite number; refusing to write it")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
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
    """Write ``text`` to ``path`` atomically (see ironlaw.files), creating the profiles folder."""
    from .files import write_atomic as write
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write(path, text, "profile")


def save(doc: dict, path: Path | None = None) -> Path:
    """Check ``doc`` loads as a hardware profile, then write it atomically; return the path."""
    from .hardware import parse_hardware
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
    from .hardware import _toml_loads, parse_hardware
    parse_hardware(_toml_loads(new), str(path))
    return write_atomic(Path(path), new)


# ---------------------------------------------------------------- checking the [probe] table

_ROW_FIELDS = {
    "gemm": {"dtype": str, "m": int, "n": int, "k": int, "time_s": float, "cv": float, "flops_per_s": float},
    "conv": {"dtype": str, "batch": int, "cin": int, "size": int, "cout": int, "kernel": int, "time_s": float,
             "cv": float, "flops_per_s": float},
    "memory": {"level": str, "bytes": float, "time_s": float, "cv": float},
    "vector": {"op": str, "elems": int, "dtype": str, "time_s": float, "cv": float, "elems_per_s": float},
    "reduce": {"op": str, "kind": str, "elems": int, "dtype": str, "time_s": float, "cv": float},
    "dispatch": {"op": str, "time_s": float, "cv": float},
    "cuda": {"what": str, "bytes": float, "time_s": float, "cv": float},
    "pages": {"bytes": float, "time_s": float, "warm_s": float, "cv": float},
    "attention": {"dtype": str, "batch": int, "heads": int, "q_len": int, "kv_len": int, "head_dim": int,
                  "causal": bool, "time_s": float, "cv": float, "flops": float, "act_bytes": float},
}
_OPTIONAL = {"gemm": ("threads", "weights", "layout"), "conv": ("threads",), "memory": ("threads",), "vector": ("flops_per_elem", "threads"),
             "reduce": ("flops_per_elem", "bytes"), "dispatch": (), "cuda": (), "pages": ("threads",),
             "attention": ("kv_bytes", "threads", "inputs")}


def check_probe(probe: object, where: str) -> dict:
    """Refuse a hand-edited [probe] table that is not what ``ironlaw probe`` writes, naming the field."""
    if not isinstance(probe, dict):
        raise IronlawError(f"{where}: expected a table")
    top = {"date": str, "stamp": str, "host": str, "cpu": str, "torch": str, "threads": int, "quick": bool,
           "duration_s": float, "max_cv": float, "device": str, "rounds": int}
    for key in probe:
        if key not in top and key not in FAMILIES and key not in ("fits", "checks", "capacity"):
            raise unknown(f"field in {where}", key, list(top) + list(FAMILIES) + ["fits", "checks", "capacity"])
    for key in ("date", "host", "torch", "threads"):
        if key not in probe:
            raise IronlawError(f"{where}: missing required field '{key}'")
    for key, typ in top.items():
        if key in probe:
            _check_type(probe[key], typ, f"{where}.{key}")
    cap = probe.get("capacity", {})
    if not isinstance(cap, dict):
        raise IronlawError(f"{where}.capacity: expected a table of bytes per memory level")
    for level, b in cap.items():
        _check_type(b, float, f"{where}.capacity.{level}")
        if not b > 0:
            raise IronlawError(f"{where}.capacity.{level}: must be positive, got {b!r}")
    if probe["threads"] < 1:
        raise IronlawError(f"{where}.threads: must be at least 1, got {probe['threads']}")
    for fam in FAMILIES:
        rows = probe.get(fam, [])
        if not isinstance(rows, list):
            raise IronlawError(f"{where}.{fam}: expected a list of [[{where}.{fam}]] rows")
        for i, row in enumerate(rows):
            w = f"{where}.{fam}[{i}]"
            if not isinstance(row, dict):
                raise IronlawError(f"{w}: expected a table")
            fields = _ROW_FIELDS[fam]
            for key in row:
                if key not in fields and key not in _OPTIONAL[fam]:
                    raise unknown(f"field in {w}", key, list(fields) + list(_OPTIONAL[fam]))
            for key, typ in fields.items():
                if key not in row:
                    raise IronlawError(f"{w}: missing required field '{key}'")
                _check_type(row[key], typ, f"{w}.{key}")
                if typ in (int, float) and key != "cv" and not row[key] > 0:
                    raise IronlawError(f"{w}.{key}: must be positive, got {row[key]!r}")
            if not 0 <= row["cv"] < 10:
                raise IronlawError(f"{w}.cv: a spread (coefficient of variation) must be in [0, 10), got {row['cv']!r}")
            if "layout" in row and row["layout"] not in ("kn", "nt"):
                raise IronlawError(f"{w}.layout: \"kn\" (x @ W, W row-major K×N) or \"nt\" (x @ Wᵀ, W stored N×K); "
                                   f"got {row['layout']!r}")
            if "weights" in row and row["weights"] != "cold":
                raise IronlawError(f"{w}.weights: the only value is \"cold\" (weights streamed from memory), "
                                   f"got {row['weights']!r}")
            if "inputs" in row and row["inputs"] != "cold":
                raise IronlawError(f"{w}.inputs: the only value is \"cold\" (Q, K and V, or a decode row's KV cache, "
                                   f"read from memory), got {row['inputs']!r}")
    return probe


def _check_type(x, typ, where: str) -> None:
    if typ is float:
        ok = isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
    elif typ is int:
        ok = isinstance(x, int) and not isinstance(x, bool)
    else:
        ok = isinstance(x, typ)
    if not ok:
        raise IronlawError(f"{where}: expected {'a number' if typ in (int, float) else typ.__name__}, got {x!r}")
    if typ is str and not x.strip():
        raise IronlawError(f"{where}: expected a non-empty string")


def recalibrate(path: Path, extra: list, source: str, held_out: list[str] = ()) -> dict:
    """Refit a saved profile's [calibration] from its probe rows plus ``extra`` observations
    (``calibrate.Observation``, e.g. per-op times from ``ironlaw validate``); rewrite it atomically.

    ``held_out`` names datasets kept out of the fit (pass their observations elsewhere, to
    ``calibrate.report``); ``source`` says what was fitted ("measured by probe on … and validate …").
    """
    from . import calibrate
    from .hardware import load_file
    from .probe.build import observations
    hw = calibrate.without_calibration(load_file(path))
    probe = hw.extra.get("probe")
    if not probe:
        raise IronlawError(f"{path}: not a probe profile (no [probe] table); run `ironlaw probe` first")
    kept = [o for o in extra if o.dataset not in set(held_out)]
    cal = calibrate.fit(hw, observations(probe) + kept, source=source, held_out=list(held_out))
    replace_table(Path(path), "calibration", cal)
    return cal
