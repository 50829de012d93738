"""The ``[probe]`` table of a measured profile: the rows ``ironlaw probe`` writes, and their checks."""
from __future__ import annotations

import math

from ..core.errors import IronlawError, unknown
from ..core.graph import KINDS

FAMILIES = ("gemm", "conv", "memory", "vector", "reduce", "dispatch", "cuda", "pages", "attention")


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
_OPTIONAL = {"gemm": ("threads", "weights", "layout"), "conv": ("threads", "groups"), "memory": ("threads",), "vector": ("flops_per_elem", "threads"),
             "reduce": ("flops_per_elem", "bytes"), "dispatch": (), "cuda": (), "pages": ("threads",),
             "attention": ("kv_bytes", "threads", "inputs")}


def _check_references(refs: object, where: str) -> None:
    """[probe.references]: the built-in reference runs fitted, those that failed (run, error), the wall time."""
    if not isinstance(refs, dict):
        raise IronlawError(f"{where}: expected a table")
    fields = ["fitted", "failed", "wall_s", "skipped", "run_spread", "model_spread"]
    for key in refs:
        if key not in fields:
            raise unknown(f"field in {where}", key, fields)
    _check_factors(refs.get("run_spread", [1.0, 1.0]), f"{where}.run_spread", "run over the median run")
    model = refs.get("model_spread", {})
    if not isinstance(model, dict):
        raise IronlawError(f"{where}.model_spread: expected a table of op kind = [low, high]")
    for kind, factors in model.items():
        if kind != "all" and kind not in KINDS:
            raise unknown(f"op kind in {where}.model_spread", kind, list(KINDS) + ["all"])
        _check_factors(factors, f"{where}.model_spread.{kind}", "measured over predicted op time")
    if not isinstance(refs.get("fitted", []), list) or not all(isinstance(x, str) for x in refs.get("fitted", [])):
        raise IronlawError(f"{where}.fitted: expected a list of run names")
    for i, f in enumerate(refs.get("failed", [])):
        if not isinstance(f, dict) or not isinstance(f.get("run"), str) or not isinstance(f.get("error"), str):
            raise IronlawError(f"{where}.failed[{i}]: expected a table with 'run' and 'error'")
    if "wall_s" in refs:
        _check_type(refs["wall_s"], float, f"{where}.wall_s")


def _check_factors(spread: object, where: str, what: str) -> None:
    """A [low, high] pair of ratios around 1 (low ≤ 1 ≤ high, both positive)."""
    if (not isinstance(spread, list) or len(spread) != 2 or any(isinstance(x, bool) or not isinstance(x, (int, float))
                                                                for x in spread) or not 0 < spread[0] <= 1 <= spread[1]):
        raise IronlawError(f"{where}: [low, high] {what}, with 0 < low ≤ 1 ≤ high; got {spread!r}")


# [probe.gpu]: the GPU runtime a GPU probe ran on (ironlaw.measure.probe.runtime.GpuRuntime; catalog optional)
GPU_FIELDS = {"platform": str, "version": str, "device": str, "arch": str, "memory_bytes": float,
              "catalog_note": str, "gemm_library": str, "collectives": str, "last_cache_bytes": float,
              "last_cache_source": str}


def _check_gpu(gpu: object, where: str) -> None:
    if not isinstance(gpu, dict):
        raise IronlawError(f"{where}: expected a table")
    for key in gpu:
        if key not in GPU_FIELDS and key != "catalog":
            raise unknown(f"field in {where}", key, list(GPU_FIELDS) + ["catalog"])
    for key, typ in GPU_FIELDS.items():
        if key not in gpu:
            raise IronlawError(f"{where}: missing required field '{key}'")
        _check_type(gpu[key], typ, f"{where}.{key}")
    if gpu["platform"] not in ("cuda", "rocm"):
        raise IronlawError(f"{where}.platform: \"cuda\" or \"rocm\", got {gpu['platform']!r}")
    if gpu.get("catalog") is not None:
        _check_type(gpu["catalog"], str, f"{where}.catalog")


def check_probe(probe: object, where: str) -> dict:
    """Refuse a hand-edited [probe] table that is not what ``ironlaw probe`` writes, naming the field."""
    if not isinstance(probe, dict):
        raise IronlawError(f"{where}: expected a table")
    top = {"date": str, "stamp": str, "host": str, "cpu": str, "torch": str, "threads": int, "quick": bool,
           "duration_s": float, "max_cv": float, "device": str, "rounds": int}
    for key in probe:
        if key not in top and key not in FAMILIES and key not in ("fits", "checks", "capacity", "references", "gpu"):
            raise unknown(f"field in {where}", key, list(top) + list(FAMILIES) + ["fits", "checks", "capacity",
                                                                                  "references", "gpu"])
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
    if "references" in probe:
        _check_references(probe["references"], f"{where}.references")
    if "gpu" in probe:
        _check_gpu(probe["gpu"], f"{where}.gpu")
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
            if fam == "conv" and "groups" in row:
                _check_type(row["groups"], int, f"{w}.groups")
                if row["groups"] < 1 or row["cin"] % row["groups"] or row["cout"] % row["groups"]:
                    raise IronlawError(f"{w}.groups: must be a whole number ≥ 1 dividing cin ({row['cin']}) and "
                                       f"cout ({row['cout']}), got {row['groups']!r}")
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
