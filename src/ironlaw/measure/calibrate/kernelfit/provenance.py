"""Where a fitted table came from: the tables' publisher, version and license (``origin_of``, ``source``), and a
fitted table merged over a stored one (``merged``, ``merged_source``).
"""
from __future__ import annotations

from ....machine.calibration import check
from ..kerneltable import PROVENANCE
from .vocabulary import Group, LICENSE


def origin_of(root) -> tuple[str, str]:
    """(publisher and version, license) of the tables under ``root``: aiconfigurator-core's where ``root`` lies in
    its package (the version from the wheel's dist-info beside it), else the user's own, license unstated."""
    from pathlib import Path
    p = Path(root).resolve()
    for parent in (p, *p.parents):
        if parent.name == "aiconfigurator_core":
            info = sorted(parent.parent.glob("aiconfigurator_core-*.dist-info"))
            version = info[-1].name[len("aiconfigurator_core-"):-len(".dist-info")] if info else "version unknown"
            return f"aiconfigurator-core {version} (NVIDIA)", LICENSE
    return f"kernel tables in {root}", "unstated"


def source(gs: list[Group], origin: str = PROVENANCE) -> str:
    files = sorted({f"{g.table.path} ({g.table.framework} {g.table.version})".replace(" ( )", "") for g in gs})
    return f"derived: {KERNEL_SOURCE} ({origin}: {'; '.join(files)})"


KERNEL_SOURCE = ("GEMM η(M, N, K) per dtype and attention per phase and KV dtype fitted to measured kernel tables by "
                 "`ironlaw calibrate --kernels`, each class on the rows its fitted entry names and scored on those its "
                 "held_out entry names")


def merged(base: dict | None, new: dict) -> dict:
    """``new`` over a device's existing calibration ``base``: its shape tables, kernel classes and
    provenance replace base's of the same name, and so do its fitted and held_out entries of a class it fitted
    (``"<class> (<rows>)"``); the other entries and the source add up."""
    if not base:
        return new
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    for key in ("matmul", "kernel", "provenance"):
        if new.get(key):
            out[key] = {**out.get(key, {}), **new[key]}
    for key in ("fitted", "held_out"):           # a class fitted again names its rows as ``new`` splits them
        classes = tuple(f"{name} (" for name in new.get("provenance", {}))
        again = tuple(c for c in classes if any(e.startswith(c) for e in new.get(key, [])))
        kept = [e for e in base.get(key, []) if not e.startswith(again)] if again else list(base.get(key, []))
        out[key] = list(dict.fromkeys(kept + list(new.get(key, []))))
    out["source"] = merged_source(base["source"], new["source"])
    return check(out, "calibration")


def merged_source(base: str, new: str) -> str:
    """One ``derived:`` source for a calibration fitted in parts: ``base``'s clauses, then ``new``'s; a clause of
    this fitter (``source``) once per origin, naming every table file either fitted, any other clause once."""
    head = "derived: "
    clauses, files = [], {}
    for text in (base, new):
        for c in _top_level(text[len(head):] if text.startswith(head) else text, "; "):
            if c.startswith(KERNEL_SOURCE + " (") and c.endswith(")"):
                origin, _, listed = c[len(KERNEL_SOURCE) + 2:-1].partition(": ")
                if origin not in files:
                    files[origin] = {}
                    clauses.append(("kernel", origin))
                files[origin].update(dict.fromkeys(_top_level(listed, "; ")))
            elif ("text", c) not in clauses:
                clauses.append(("text", c))
    return head + "; ".join(f"{KERNEL_SOURCE} ({c}: {'; '.join(sorted(files[c]))})" if kind == "kernel" else c
                            for kind, c in clauses)


def _top_level(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside parentheses."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i = i + len(sep)
            continue
        i += 1
    return parts + [text[start:]]
