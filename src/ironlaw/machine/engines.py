"""Kernel terms per serving framework: the GEMM and attention terms fitted on one framework's kernel tables.

A catalog GPU's ``[calibration]`` holds the terms fitted on TensorRT-LLM's kernels (benchmarks/kernel_tables.py
--write). vLLM's and SGLang's kernels — the tables aiconfigurator-core 0.12.0 ships per framework — are fitted
the same way (``--framework vllm``) and stored apart, one file per framework and GPU, read only when a
prediction asks for that framework (``serve --engine vllm``), so no other command reads or parses them:

    src/ironlaw/machine/catalog/engine/<framework>/<gpu>.toml      [calibration]: matmul, kernel, provenance

    hw2, cov = engines.with_engine(hw, "vllm")     # hw with vLLM's GEMM and attention terms in place
    cov.line()                                     # which kernel classes are vLLM's, which stay TensorRT-LLM's

A framework's older release whose kernels were measured too (``RELEASES``) is stored the same way, one file per
release and GPU, and read only when a prediction names that release (``serve --release 1.0``):

    src/ironlaw/machine/catalog/engine/<framework>-<release>/<gpu>.toml

    hw2, cov = engines.with_engine(hw, "trtllm", release="1.0")   # TensorRT-LLM 1.0's terms, its MoE layer too

A release's file replaces the GEMM, attention and MoE-layer classes it holds; a class it lacks keeps the
catalog's (the default release's) terms and ``EngineKernels.borrowed`` names it. An unknown release, or a GPU
without that release's file, is an error: a prediction that names a release is priced on its kernels or not at all.

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
# per framework: the release of the kernels its default terms were fitted on (the catalog's [calibration] for
# TensorRT-LLM: aiconfigurator-core 0.12.0's tables; the engine files for the others), then the older releases
# stored apart (catalog/engine/<framework>-<release>/): TensorRT-LLM 1.0, the release line of the published perf
# overview's cells (perf-overview.md "NEW for v1.0"), measured by aiconfigurator 0.8.0 (1.0.0rc3 on Hopper,
# 1.0.0rc6 on Blackwell)
RELEASES = {"trtllm": ("1.3.0rc20", "1.0"), "vllm": ("0.24.0",), "sglang": ("0.5.14",)}
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
    release: str | None = None  # the framework release named (``RELEASES``), None: its default
    moe: tuple = ()            # MoE-layer kernel classes ('moe_grouped_gemm.fp8', …) the release's tables hold

    def line(self) -> str:
        """One line: whose kernels price the step."""
        name = NAMES[self.engine]
        if self.release is not None:
            text = (f"kernels: {name} {self.release} ({', '.join(self.versions)}) on {self.gpu}: {len(self.own)} "
                    f"GEMM and attention classes{f' and the MoE layer ({len(self.moe)} classes)' if self.moe else ''}"
                    f" fitted on its tables ({self.source})")
            if self.borrowed:
                text += f"; {RELEASES[self.engine][0]}'s for the {len(self.borrowed)} they lack"
            return text
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
        d = {"engine": self.engine, "gpu": self.gpu, "own": list(self.own), "borrowed": list(self.borrowed),
             "versions": list(self.versions), "source": self.source}
        if self.release is not None:           # the default's document stays as it was
            d.update(release=self.release, moe=list(self.moe))
        return d


def check_engine(engine: str) -> str:
    """``engine`` if known, else one line naming the known ones."""
    if engine not in ENGINES:
        raise unknown("--engine", engine, ENGINES)
    return engine


def check_release(engine: str, release: str | None) -> str | None:
    """``release`` if ``engine`` has it stored (None or the default's: None), else one line naming them."""
    check_engine(engine)
    if release is None or release == RELEASES[engine][0]:
        return None
    if release not in RELEASES[engine]:
        raise unknown(f"--release for --engine {engine}", release, RELEASES[engine])
    return release


def path(gpu: str, engine: str, release: str | None = None) -> Path:
    return ENGINE_DIR / (engine if release is None else f"{engine}-{release}") / f"{gpu}.toml"


def load(gpu: str, engine: str, release: str | None = None) -> dict | None:
    """The checked [calibration] table of ``engine``'s kernels (of ``release``: ``check_release``) on catalog GPU
    ``gpu``, or None without one."""
    from .hardware import read_toml
    release = check_release(engine, release)
    p = path(gpu, engine, release)
    if (engine == DEFAULT and release is None) or not p.is_file():
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


def moe_classes(table: dict) -> tuple:
    """The MoE-layer kernel classes (``moe_grouped_gemm.<dtype>``, ``moe_rows.<dtype>``) of a [calibration] table."""
    return tuple(sorted(k for k in table.get("kernel", {}) if k.startswith(("moe_grouped_gemm.", "moe_rows."))))


def with_engine(hw, engine: str, release: str | None = None):
    """(``hw`` with ``engine``'s GEMM and attention terms in place — ``release``'s, its MoE layer too, where one is
    named — EngineKernels): see the module docstring."""
    if check_release(engine, release) is not None:
        return _with_release(hw, engine, release)
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


def _with_release(hw, engine: str, release: str):
    """``with_engine`` for a stored older ``release``: its file over the catalog's terms, or an error without one."""
    table = load(hw.name, engine, release)
    where = str(path(hw.name, engine, release).relative_to(ENGINE_DIR.parents[2]))
    if table is None:
        have = sorted(p.stem for p in path("x", engine, release).parent.glob("*.toml"))
        raise IronlawError(f"--release {release}: {hw.name} has no {NAMES[engine]} {release} kernel tables (no "
                           f"{where}; {', '.join(have) if have else 'no GPU'} has them)")
    base = _without_moe(hw.calibration.table()) if hw.calibration is not None else None
    own = tuple(g for g in table.get("provenance", {}) if not g.startswith("moe "))
    versions = tuple(sorted({p["version"].split("; ")[-1] for p in table["provenance"].values()}))
    borrowed = tuple(g for g in kernel_groups(hw.calibration) if g not in own)
    merged = _merged(base, table)
    cov = EngineKernels(engine, hw.name, own, borrowed, versions, where, release, moe_classes(table))
    return replace(hw, calibration=Calibration.of(merged)), cov


def _without_moe(table: dict) -> dict:
    """``table`` without its MoE-layer classes and their provenance: the MoE layer of one release never prices
    another's (a release without it leaves the routed experts to the engine's own expert constants)."""
    out = dict(table)
    out["kernel"] = {k: v for k, v in table.get("kernel", {}).items() if k not in moe_classes(table)}
    out["provenance"] = {k: v for k, v in table.get("provenance", {}).items() if not k.startswith("moe ")}
    for key in ("fitted", "held_out"):
        out[key] = [x for x in table.get(key, []) if not x.startswith("moe ")]
    return out


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
