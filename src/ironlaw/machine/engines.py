"""Kernel terms per serving framework: the GEMM and attention terms fitted on one framework's kernel tables.

A catalog GPU's ``[calibration]`` holds the terms fitted on TensorRT-LLM's kernels (benchmarks/kernel_tables.py
--write). vLLM's and SGLang's kernels — the tables aiconfigurator-core 0.12.0 ships per framework — are fitted
the same way (``--framework vllm``) and stored apart, one file per framework and GPU, read only when a
prediction asks for that framework (``serve --engine vllm``), so no other command reads or parses them:

    src/ironlaw/machine/catalog/engine/<framework>/<gpu>.toml      [calibration]: matmul, kernel, provenance

    hw2, cov = engines.with_engine(hw, "vllm")     # hw with vLLM's GEMM and attention terms in place
    cov.line()                                     # which kernel classes are vLLM's, which stay TensorRT-LLM's

The framework's GEMM dtypes and attention kernel classes replace the TensorRT-LLM ones of the same name
(their provenance too); a class the framework's tables lack keeps TensorRT-LLM's terms, and ``EngineKernels``
names each such class, never silently. A GPU without the framework's tables keeps its catalog calibration and
says so.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..core.errors import IronlawError, unknown
from .calibration import Calibration, check

ENGINES = ("trtllm", "vllm", "sglang")
NAMES = {"trtllm": "TensorRT-LLM", "vllm": "vLLM", "sglang": "SGLang"}
DEFAULT = "trtllm"                     # the catalog's own [calibration] is fitted on TensorRT-LLM's kernels
ENGINE_DIR = Path(__file__).with_name("catalog") / "engine"


@dataclass(frozen=True)
class EngineKernels:
    """Whose kernel terms a prediction under ``engine`` uses on one GPU."""
    engine: str
    gpu: str
    own: tuple                 # kernel classes ('gemm bf16', 'context attention bf16, KV bf16', …) fitted on
                               # the engine's tables
    borrowed: tuple            # kernel classes fitted on TensorRT-LLM's tables that the engine's tables lack
    versions: tuple            # the engine's table versions ('vllm 0.24.0', …)
    source: str                # the engine file, or why there is none

    def line(self) -> str:
        """One line: whose kernels price the step."""
        name = NAMES[self.engine]
        if self.engine == DEFAULT:
            return f"kernels: {name}'s (the catalog's [calibration]; {self.source})"
        if not self.own:
            return f"kernels: {self.gpu} has no {name} kernel tables: {self.source}"
        text = (f"kernels: {', '.join(self.versions)} on {self.gpu} ({len(self.own)} GEMM and attention classes "
                f"fitted on its tables)")
        if self.borrowed:
            text += (f"; TensorRT-LLM's for the {len(self.borrowed)} its tables lack ({'; '.join(self.borrowed)})")
        return text

    def to_dict(self) -> dict:
        return {"engine": self.engine, "gpu": self.gpu, "own": list(self.own), "borrowed": list(self.borrowed),
                "versions": list(self.versions), "source": self.source}


def check_engine(engine: str) -> str:
    """``engine`` if known, else one line naming the known ones."""
    if engine not in ENGINES:
        raise unknown("--engine", engine, ENGINES)
    return engine


def path(gpu: str, engine: str) -> Path:
    return ENGINE_DIR / engine / f"{gpu}.toml"


def load(gpu: str, engine: str) -> dict | None:
    """The checked [calibration] table of ``engine``'s kernels on catalog GPU ``gpu``, or None without one."""
    from .hardware import read_toml
    p = path(gpu, check_engine(engine))
    if engine == DEFAULT or not p.is_file():
        return None
    doc = read_toml(p, "engine kernel file")
    if set(doc) != {"calibration"}:
        raise IronlawError(f"{p}: expected one [calibration] table, found {', '.join(sorted(doc)) or 'none'}")
    return check(doc["calibration"], f"{p.name}: calibration")


def write(gpu: str, engine: str, table: dict) -> Path:
    """Store ``engine``'s fitted kernel table for ``gpu`` (benchmarks/kernel_tables.py --framework … --write)."""
    from ..core.files import write_atomic
    from .profile import dumps_table
    if check_engine(engine) == DEFAULT:
        raise IronlawError("TensorRT-LLM's kernel terms live in the catalog file's own [calibration]")
    p = path(gpu, engine)
    p.parent.mkdir(parents=True, exist_ok=True)
    check(table, f"{p.name}: calibration")
    return write_atomic(p, dumps_table({"calibration": table}) + "\n", "engine kernel file")


def kernel_groups(cal: Calibration | None) -> list[str]:
    """The GEMM and attention kernel classes a calibration holds from measured kernel tables."""
    if cal is None:
        return []
    return [g for g in cal.provenance if not g.startswith("moe ")]


def with_engine(hw, engine: str):
    """(``hw`` with ``engine``'s GEMM and attention terms in place, EngineKernels): see the module docstring."""
    check_engine(engine)
    base = hw.calibration
    trt = kernel_groups(base)
    if engine == DEFAULT:
        src = "fitted on its TensorRT-LLM tables" if trt else "no kernel tables: datasheet and its own calibration"
        return hw, EngineKernels(engine, hw.name, tuple(trt), (), (), src)
    table = load(hw.name, engine)
    where = str(path(hw.name, engine).relative_to(ENGINE_DIR.parents[2]))
    if table is None:
        why = "TensorRT-LLM's kernel terms stay" if trt else "its datasheet and own calibration stay"
        return hw, EngineKernels(engine, hw.name, (), tuple(trt), (), f"no {where}; {why}")
    own = tuple(table.get("provenance", {}))
    merged = _merged(base.table() if base is not None else None, table)
    versions = tuple(sorted({p["version"].split("; ")[-1] for p in table["provenance"].values()}))
    cov = EngineKernels(engine, hw.name, own, tuple(g for g in trt if g not in own), versions, where)
    return replace(hw, calibration=Calibration.of(merged)), cov


def _merged(base: dict | None, eng: dict) -> dict:
    """``eng``'s shape tables, kernel classes and provenance over ``base``'s; fitted and held-out lists: base's
    entries for a replaced class go, the engine's come in; the source names both."""
    if not base:
        return check(eng, "engine calibration")
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    for key in ("matmul", "kernel", "provenance"):
        if eng.get(key):
            out[key] = {**out.get(key, {}), **eng[key]}
    own = tuple(eng.get("provenance", {}))
    for key in ("fitted", "held_out"):
        kept = [x for x in base.get(key, []) if not x.startswith(tuple(f"{g} (" for g in own))]
        out[key] = list(dict.fromkeys(kept + list(eng.get(key, []))))
    out["source"] = f"{base['source']}; over it: {eng['source'][len('derived: '):]}"
    return check(out, "engine calibration")
