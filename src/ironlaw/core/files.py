"""The user's files: read with one-line errors (``read_text``); written, checked before any work, atomically.

Every output (plots, HTML reports, profiles, validate runs) goes through here: its missing folders
created, a temporary file in the target folder, fsync, then ``os.replace``. On any failure — a full
disk, Ctrl-C — the temporary file is removed and an existing file at the path is left as it was.
Problems are IronlawErrors that name the option and the path.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Union

from .errors import IronlawError

Payload = Union[str, bytes, Callable]


def read_text(path, what: str, hint: str = "", max_bytes: int | None = None) -> str:
    """The UTF-8 text of the file ``path``, a ``what`` ("hardware file", "config file" …), each failure one line:
    no such file (``hint`` appended), larger than ``max_bytes``, unreadable (a folder, no permission, not UTF-8)."""
    p = Path(path)
    try:
        if max_bytes is not None and p.stat().st_size > max_bytes:
            raise IronlawError(f"{p}: larger than {max_bytes >> 20} MB; not a {what}")
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise IronlawError(f"{p}: no such {what}{hint}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise IronlawError(f"{p}: cannot read {what}: {e.__class__.__name__}") from None


def check_output(path, option: str, suffixes: tuple[str, ...] = ()) -> Path:
    """The file ``option`` will write, checked before any work: its folder, or the nearest one above it that
    exists (``write_atomic`` creates the missing ones, as every ``--out``, ``--plot`` and ``--html`` does), is a
    writable directory, the path is not a directory, and (if given) the name ends in one of ``suffixes``."""
    if path is None or str(path).strip() == "":
        raise IronlawError(f"{option}: empty output path; give a file name")
    if not isinstance(path, (str, os.PathLike)):
        raise IronlawError(f"{option} takes a file name, got {path!r}")
    p = Path(path)
    if p.is_dir():
        raise IronlawError(f"{option} {path}: is a directory; give a file name inside it")
    if suffixes and p.suffix.lower() not in suffixes:
        names = ", ".join(suffixes[:-1]) + " or " + suffixes[-1] if len(suffixes) > 1 else suffixes[0]
        raise IronlawError(f"{option} {path}: the file name must end in {names}")
    folder = _nearest_folder(p)
    if not folder.is_dir():
        raise IronlawError(f"{option} {path}: '{folder}' is not a directory")
    if p.exists() and not p.is_file():
        raise IronlawError(f"{option} {path}: exists and is not a regular file")
    if not os.access(folder, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise IronlawError(f"{option} {path}: not writable; choose another path")
    return p


def _nearest_folder(p: Path) -> Path:
    """The folder ``p`` is written into, or the nearest existing one above it (a missing folder is created)."""
    folder = p.parent if str(p.parent) else Path(".")
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def check_plot(path, suffixes: tuple[str, ...]) -> Path:
    """``--plot FILE``: the file checked as :func:`check_output` does, and matplotlib installed (found, not
    imported), so that a missing optional dependency is one line before any work."""
    p = check_output(path, "--plot", suffixes)
    import importlib.util
    if importlib.util.find_spec("matplotlib") is None:
        raise IronlawError(f"--plot {path}: drawing needs matplotlib; install it with pip install 'ironlaw[plot]'")
    return p


def write_atomic(path, payload: Payload, option: str = "output") -> Path:
    """Write ``payload`` (text, bytes, or a function that writes into a binary file object) to
    ``path`` through a temporary file and ``os.replace``; nothing partial survives."""
    import tempfile                      # here, not at the top: reading a file stays off this import
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    tmp = None
    try:
        folder.mkdir(parents=True, exist_ok=True)   # one rule for every output: a missing folder is created
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=str(folder))
        with os.fdopen(fd, "wb") as f:
            if callable(payload):
                payload(f)
            else:
                f.write(payload.encode("utf-8") if isinstance(payload, str) else payload)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)              # the permissions a plain open() would give
        os.replace(tmp, p)
        tmp = None
    except OSError as e:
        raise IronlawError(f"{option} {p}: cannot write ({e.strerror or e.__class__.__name__}); "
                           "choose a writable path") from None
    finally:                                       # also on KeyboardInterrupt
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return p


def write_json(path, doc: dict, option: str = "--out") -> Path:
    """``doc`` as JSON at ``path`` (checked as ``check_output`` checks it; a missing folder is created), atomically."""
    import json
    return write_atomic(check_output(path, option), json.dumps(doc, indent=1, allow_nan=False), option)
