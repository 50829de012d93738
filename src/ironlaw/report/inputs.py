"""Documents the HTML report can show beside an estimate, read strictly.

``--validate FILE.json`` — predicted vs measured, as ``ironlaw validate --format json`` writes it::

    {"schema": "ironlaw.validate/1",
     "workload": "resnet50" | {"name": "resnet50", "spec": …}, # optional; must match the report's workload
     "hardware": "local"    | {"name": "…", …},             # optional, shown
     "total":   {"predicted_s": 0.0601, "measured_s": 0.0624, "spread_s": 0.0011},
     "by_kind": {"conv": {"predicted_s": …, "measured_s": …, "spread_s": …}, …}}

  ``spread_s`` (the measured spread in seconds: IQR or standard deviation, as validate reports it) is
  optional (or null). Times are finite and ≥ 0; the total's measured time is > 0. ``score`` (optional):
  ``{"ops_within_25pct_time_share": 0…1}``. Other fields (``ops``, ``case`` …) are ignored here.

``--compare FILE.json`` — an ``ironlaw.compare/1`` document (``ironlaw compare --format json``):
  ``before``/``after`` estimate documents, ``speedup`` = before time / after time (``time_before_s`` /
  ``time_after_s``, the scheduled critical paths, when present; else the estimates' ``time_s``),
  ``bottleneck_before``, ``bottleneck_after``, ``shortens_critical_path`` (bool, agreeing with the speedup),
  ``verdict``.

``--frontier FILE.json`` — an ``ironlaw.serve-frontier/1`` document (``report.frontier.check``) about the report's
  workload on its hardware.

Anything else — another schema, a missing or mistyped field, NaN, a speedup that disagrees with the two
times, a document about another workload or device — is an IronlawError naming the file and the field.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from ..core.errors import IronlawError
from ..core.files import read_text

VALIDATE_SCHEMA = "ironlaw.validate/1"
COMPARE_SCHEMA = "ironlaw.compare/1"
ESTIMATE_SCHEMA = "ironlaw.estimate/1"
MAX_BYTES = 64 << 20


def read_json(path, what: str) -> dict:
    p = Path(path)
    if p.is_dir():
        raise IronlawError(f"{p}: is a directory, expected a {what} JSON file")
    text = read_text(p, f"{what} JSON file", max_bytes=MAX_BYTES)

    def no_constants(name):
        raise IronlawError(f"{p}: {name} is not a number; {what} JSON must hold finite numbers")
    try:
        doc = json.loads(text, parse_constant=no_constants)
    except json.JSONDecodeError as e:
        raise IronlawError(f"{p}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    if not isinstance(doc, dict):
        raise IronlawError(f"{p}: expected a JSON object, got {type(doc).__name__}")
    return doc


def _field(d: dict, key: str, where: str, types, what: str):
    if not isinstance(d, dict):
        raise IronlawError(f"{where}: expected an object")
    if key not in d:
        raise IronlawError(f"{where}: missing required field '{key}'")
    v, ts = d[key], (types if isinstance(types, tuple) else (types,))
    if not isinstance(v, ts) or (isinstance(v, bool) and bool not in ts):
        raise IronlawError(f"{where}.{key}: expected {what}, got {type(v).__name__}")
    return v


def _seconds(d: dict, key: str, where: str, required: bool = True, positive: bool = False) -> float | None:
    if not required and key not in d:
        return None
    v = _field(d, key, where, (int, float), "a number of seconds")
    v = float(v)
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise IronlawError(f"{where}.{key}: must be a finite number {'> 0' if positive else '≥ 0'}, got {v!r}")
    return v


def _name_of(v, where: str) -> str | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, dict) and isinstance(v.get("name"), str):
        return v["name"]
    raise IronlawError(f"{where}: expected a name or an object with a 'name'")


def _check_workload(doc_name: str | None, est, where: str, also: str | None = None) -> None:
    if doc_name is not None and est is not None:
        ok = {est.graph.name, str(est.graph.meta.get("spec", est.graph.name))}
        if doc_name not in ok and also not in ok:
            raise IronlawError(f"{where}: is about workload '{doc_name}', but the report is about "
                               f"'{est.graph.name}'; give the file for the same workload")


def _check_case(w, est, where: str, keys=("phase", "batch", "seq", "dtype")) -> None:
    """The document's workload must be the report's case: same phase, batch, sequence length (and dtype)."""
    if est is None or not isinstance(w, dict):
        return
    g = est.graph
    mine = {"phase": g.phase, "dtype": g.dtype, **{k: g.meta[k] for k in ("batch", "seq") if k in g.meta}}
    for k in keys:
        if k in w and k in mine and w[k] != _plain(mine[k]):
            raise IronlawError(f"{where}.workload.{k}: is {w[k]!r}, but the report is for {k} {_plain(mine[k])!r}; "
                               f"give the report the same --{k} or use the matching file")


def _plain(v):
    try:
        return v.item()          # numpy scalars
    except AttributeError:
        return v


def _timing(row, where: str, positive: bool = True) -> dict:
    if not isinstance(row, dict):
        raise IronlawError(f"{where}: expected an object with predicted_s and measured_s")
    spread = row.get("spread_s")
    return {"predicted_s": _seconds(row, "predicted_s", where),
            "measured_s": _seconds(row, "measured_s", where, positive=positive),
            "spread_s": None if spread is None else _seconds(row, "spread_s", where)}


def load_validation(path, est=None) -> dict:
    """{'workload', 'hardware', 'total': {…}, 'by_kind': {kind: {predicted_s, measured_s, spread_s}}, 'path'}."""
    doc = read_json(path, "validate")
    w = str(path)
    if doc.get("schema") != VALIDATE_SCHEMA:
        raise IronlawError(f"{w}: schema must be '{VALIDATE_SCHEMA}' (from `ironlaw validate --format json`), "
                           f"got {doc.get('schema')!r}")
    workload = _name_of(doc.get("workload"), f"{w}.workload")
    spec = doc["workload"].get("spec") if isinstance(doc.get("workload"), dict) else None
    _check_workload(workload, est, w, spec if isinstance(spec, str) else None)
    _check_case(doc.get("workload"), est, w, keys=("phase", "batch", "seq"))    # validate measures fp32
    by = _field(doc, "by_kind", w, dict, "an object of op kind → {predicted_s, measured_s}")
    if not by:
        raise IronlawError(f"{w}.by_kind: empty; expected at least one op kind")
    kinds = {}
    for k, row in by.items():
        if not k.strip():
            raise IronlawError(f"{w}.by_kind: an op kind name is empty")
        kinds[k] = _timing(row, f"{w}.by_kind.{k}", positive=False)    # a kind may measure 0 (framework)
    score = None
    if "score" in doc:
        sc = _field(doc, "score", w, dict, "an object")
        share = _field(sc, "ops_within_25pct_time_share", f"{w}.score", (int, float), "a fraction")
        if not (math.isfinite(share) and 0.0 <= share <= 1.0):
            raise IronlawError(f"{w}.score.ops_within_25pct_time_share: must be between 0 and 1, got {share!r}")
        score = float(share)
    return {"workload": workload, "hardware": _name_of(doc.get("hardware"), f"{w}.hardware"),
            "total": _timing(_field(doc, "total", w, dict, "an object"), f"{w}.total"), "by_kind": kinds,
            "score": score, "path": w}


def _estimate_doc(d, where: str) -> dict:
    if not isinstance(d, dict):
        raise IronlawError(f"{where}: expected an estimate document (object)")
    if d.get("schema") != ESTIMATE_SCHEMA:
        raise IronlawError(f"{where}.schema: must be '{ESTIMATE_SCHEMA}', got {d.get('schema')!r}")
    _seconds(d, "time_s", where, positive=True)
    terms = _field(d, "terms", where, dict, "an object of terms")
    for k in ("data_s", "compute_s", "latency_s"):
        _seconds(terms, k, f"{where}.terms")
    _name_of(_field(d, "workload", where, dict, "an object"), f"{where}.workload")
    _name_of(_field(d, "hardware", where, dict, "an object"), f"{where}.hardware")
    return d


def _bottleneck(v, where: str) -> str:
    if isinstance(v, str) and v.strip():
        return v
    if isinstance(v, dict) and isinstance(v.get("resource"), str):
        return v["resource"] + (f":{v['tier']}" if isinstance(v.get("tier"), str) else "")
    raise IronlawError(f"{where}: expected a bottleneck label or an object with a 'resource'")


def load_compare(path, est=None) -> dict:
    doc = read_json(path, "compare")
    return check_compare(doc, str(path), est)


def check_compare(doc: dict, where: str, est=None) -> dict:
    """Check an ``ironlaw.compare/1`` document (from a file or from ironlaw.models.whatif) and return it normalised."""
    w = where
    if doc.get("schema") != COMPARE_SCHEMA:
        raise IronlawError(f"{w}: schema must be '{COMPARE_SCHEMA}' (from `ironlaw compare --format json`), "
                           f"got {doc.get('schema')!r}")
    before = _estimate_doc(_field(doc, "before", w, dict, "an estimate document"), f"{w}.before")
    after = _estimate_doc(_field(doc, "after", w, dict, "an estimate document"), f"{w}.after")
    speedup = _seconds(doc, "speedup", w, positive=True)
    # the critical-path times: scheduled ones when the document has them, else the estimates' own
    if "time_before_s" in doc or "time_after_s" in doc:
        t_b, t_a = _seconds(doc, "time_before_s", w, positive=True), _seconds(doc, "time_after_s", w, positive=True)
        ratio = "time_before_s / time_after_s"
    else:
        t_b, t_a, ratio = before["time_s"], after["time_s"], "before.time_s / after.time_s"
    if not math.isclose(speedup, t_b / t_a, rel_tol=1e-6):
        raise IronlawError(f"{w}.speedup: {speedup:g} disagrees with {ratio} = {t_b / t_a:g}")
    shortens = _field(doc, "shortens_critical_path", w, bool, "true or false")
    if (shortens and speedup <= 1.0) or (not shortens and speedup > 1.0 + 1e-6):
        raise IronlawError(f"{w}.shortens_critical_path: {str(shortens).lower()} contradicts speedup {speedup:g}")
    verdict = _field(doc, "verdict", w, str, "a sentence")
    _check_workload(before["workload"]["name"], est, f"{w}.before")
    _check_case(before["workload"], est, f"{w}.before")
    if est is not None and before["hardware"]["name"] != est.hw.name:
        raise IronlawError(f"{w}.before: is on hardware '{before['hardware']['name']}', but the report is on "
                           f"'{est.hw.name}'; give --on {before['hardware']['name']} or the matching file")
    return {"before": before, "after": after, "speedup": speedup, "time_before_s": t_b, "time_after_s": t_a, "shortens_critical_path": shortens,
            "verdict": verdict, "bottleneck_before": _bottleneck(_field(doc, "bottleneck_before", w, (str, dict), "a label"),
                                                                 f"{w}.bottleneck_before"),
            "bottleneck_after": _bottleneck(_field(doc, "bottleneck_after", w, (str, dict), "a label"),
                                            f"{w}.bottleneck_after"),
            "what_if": doc.get("what_if") if isinstance(doc.get("what_if"), (str, list)) else None, "path": w}


def check_frontier(doc: dict, where: str, est) -> dict:
    """A checked serving frontier (``report.frontier.check``) that is about the report's workload on its hardware."""
    _check_workload(_name_of(doc.get("workload"), f"{where}.workload"), est, where)
    hw = _name_of(doc.get("hardware"), f"{where}.hardware")
    if hw is not None and hw != est.hw.name:
        raise IronlawError(f"{where}: is on hardware '{hw}', but the report is on '{est.hw.name}'; give --on {hw} or "
                           f"the matching file")
    dt = doc.get("dtype")
    if isinstance(dt, str) and dt != est.graph.dtype:
        raise IronlawError(f"{where}: serves the model in {dt}, but the report is in {est.graph.dtype}; give --dtype "
                           f"{dt} or the matching file")
    return doc
