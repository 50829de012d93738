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
says so. The framework's own fused-MoE layer (``moe_grouped_gemm.<dtype>`` / ``moe_rows.<dtype>``, fitted on its
moe_perf tables by benchmarks/kernel_moe.py --framework) replaces the catalog's TensorRT-LLM fit of the same dtype;
``EngineKernels.moe`` and ``moe_borrowed`` name, per dtype, whose fit prices the routed experts.

A TensorRT-LLM release other than the one the catalog is fitted on (1.3.0rc20) has its own file: the GEMM,
attention, MLA and fused-MoE terms fitted on that release's kernel tables (``RELEASES``; benchmarks/kernel_tables.py
--release 1.0 --write), read only when a prediction names the release:

    src/ironlaw/machine/catalog/engine/trtllm-<release>/<gpu>.toml   [calibration]: matmul, kernel, provenance

    hw2, cov = engines.with_engine(hw, "trtllm", release="1.0")   # TensorRT-LLM 1.0's kernels, MoE included

Its classes replace the catalog's of the same name (the ``moe_grouped_gemm.<dtype>`` / ``moe_rows.<dtype>`` MoE
layer terms too); a GEMM or attention class its tables lack keeps the catalog's (1.3.0rc20) terms, named in
``borrowed``. The catalog's MoE layer never prices a release: a dtype the release's MoE tables lack has no MoE
layer under it (``EngineKernels.moe`` names the ones it has).
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
MOE_CLASSES = ("moe_grouped_gemm.", "moe_rows.", "moe_router.")   # the fused-MoE layer's kernel classes (serving/step/moe.py)
# engine -> releases with their own kernel file (catalog/engine/<engine>-<release>/), the table versions they hold
RELEASES = {"trtllm": {"1.0": "TensorRT-LLM 1.0.0rc3 (H100, H200) / 1.0.0rc6 (B200, GB200), aiconfigurator 0.8.0"}}


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
    release: str | None = None  # a TensorRT-LLM release with its own kernel file ('1.0'), else None
    moe: tuple = ()            # the release's (or vLLM's, SGLang's) MoE-layer kernel classes ('moe_grouped_gemm.fp8', …)
    moe_borrowed: tuple = ()   # vLLM, SGLang: the MoE dtypes priced on the device's TensorRT-LLM fit ('fp4', …)

    def line(self) -> str:
        """One line: whose kernels price the step."""
        name = NAMES[self.engine]
        if self.release is not None:
            return self._release_line(name)
        if self.engine == DEFAULT:
            return f"kernels: {name}'s (the catalog's [calibration]; {self.source})"
        if not self.own:
            return f"kernels: {self.gpu} has no {name} kernel tables: {self.source}"
        text = (f"kernels: {', '.join(self.versions)} on {self.gpu} ({len(self.own)} GEMM and attention classes "
                f"fitted on its tables)")
        if self.borrowed:
            text += (f"; TensorRT-LLM's for the {len(self.borrowed)} its tables lack ({'; '.join(self.borrowed)})")
        return text + self._moe_clause(name)

    def _moe_clause(self, name: str) -> str:
        """vLLM, SGLang: whose fused-MoE fit prices the routed experts, per dtype (never silent)."""
        own = moe_dtypes(self.moe)
        mine = f"{name}'s fused-MoE fit ({', '.join(own)}, {self.source})" if own else ""
        theirs = f"the device's TensorRT-LLM fused-MoE fit ({', '.join(self.moe_borrowed)})" if self.moe_borrowed else ""
        if not (mine or theirs):
            return ""
        return "; routed experts: " + (f"{mine}, other dtypes on {theirs}" if mine and theirs else mine or theirs)

    def _release_line(self, name: str) -> str:
        if not self.own:
            return f"kernels: {self.gpu} has no {name} {self.release} kernel tables: {self.source}"
        text = (f"kernels: {', '.join(self.versions)} on {self.gpu} ({len(self.own)} kernel classes fitted on its "
                f"tables)")
        if self.borrowed:
            text += f"; the catalog's for the {len(self.borrowed)} its tables lack ({'; '.join(self.borrowed)})"
        return text

    def to_dict(self) -> dict:
        d = {"engine": self.engine, "gpu": self.gpu, "own": list(self.own), "borrowed": list(self.borrowed),
             "versions": list(self.versions), "source": self.source}
        if self.release is not None:           # the default's document stays as it was
            d.update(release=self.release, moe=list(self.moe))
        elif self.engine != DEFAULT:
            d.update(moe=list(self.moe), moe_borrowed=list(self.moe_borrowed))
        return d


def check_engine(engine: str, flag: str = "--engine") -> str:
    """``engine`` if known, else one line naming the known ones (and ``flag``, the option that gave it)."""
    if engine not in ENGINES:
        raise unknown(flag, engine, ENGINES)
    return engine


# A GPU whose maker is one of these (``Hardware.maker``: its file's vendor, else its title's first word) runs no
# TensorRT-LLM: its kernels are CUDA's (NVIDIA/TensorRT-LLM README, "TensorRT-LLM ... on NVIDIA GPUs"); vLLM and
# SGLang build for ROCm (AMD) and Gaudi (Intel, vLLM's HPU plugin). A file that states a vendor other than NVIDIA
# is off CUDA too, whoever makes it.
NOT_CUDA = ("AMD", "Intel")
OFF_CUDA_DEFAULT = "vllm"              # the engine a serve on such a GPU runs when none is named


def _maker_off_cuda(hw) -> str | None:
    """The maker of ``hw`` when it is a GPU TensorRT-LLM does not run on ('AMD', 'Intel', a stated vendor other
    than NVIDIA), else None."""
    maker = hw.maker
    off = maker.lower() in (m.lower() for m in NOT_CUDA) or (hw.vendor and maker.lower() != "nvidia")
    return maker if hw.kind == "gpu" and off else None


def default_for(hw) -> str:
    """The engine a prediction on ``hw`` runs when none is named: vLLM on an AMD or Intel GPU (TensorRT-LLM runs
    on NVIDIA GPUs only), else TensorRT-LLM (``DEFAULT``: the catalog's own [calibration] holds its kernels)."""
    return OFF_CUDA_DEFAULT if _maker_off_cuda(hw) else DEFAULT


def default_note(hw) -> str | None:
    """Why the engine ``default_for(hw)`` is not TensorRT-LLM, in a few words; None where it is."""
    maker = _maker_off_cuda(hw)
    return (f"the default on {maker} GPUs: TensorRT-LLM runs on NVIDIA GPUs only") if maker else None


def resolve(engine: str | None, hw, flag: str = "--engine") -> str:
    """``engine`` (``default_for(hw)`` where None) if known and it runs on ``hw``, else one line; an engine named
    for a device that is not a GPU (whose serving steps are priced on its own calibration, no framework's) too."""
    if engine is None:
        return default_for(hw)
    check_engine(engine, flag)
    if hw.kind != "gpu":
        raise IronlawError(f"{flag} {engine}: {NAMES[engine]} is modelled on GPUs; {hw.name} is kind '{hw.kind}', "
                           f"whose serving steps are priced on its own calibration, no framework's: leave {flag} out")
    return check_runs_on(engine, hw, flag)


def named(engine: str, given: str | None, hw, flag: str = "--engine") -> str:
    """How a refusal names the engine: as the user gave it ('--engine vllm'), or as the default it is."""
    return f"{flag} {engine}" if given is not None else f"the default engine on {hw.name} ({NAMES[engine]})"


def check_runs_on(engine: str, hw, flag: str = "--engine") -> str:
    """``engine`` if it runs on ``hw``, else one line: TensorRT-LLM on an AMD or Intel GPU. A device the engine
    step model does not price (kind not 'gpu') passes: its steps are priced on its own calibration."""
    maker = _maker_off_cuda(hw)
    if engine == "trtllm" and maker:
        raise IronlawError(f"{flag} {engine}: {NAMES[engine]} runs on NVIDIA GPUs only, and {hw.name} "
                           f"({hw.title}) is {maker}'s; use {flag} vllm or {flag} sglang (leave {flag} out: "
                           f"{NAMES[OFF_CUDA_DEFAULT]} is the default there)")
    return engine


# kernel frameworks that build for one maker's GPUs only: AITER, "AI Tensor Engine for ROCm" (ROCm/aiter
# README), for AMD Instinct GPUs; TensorRT-LLM for NVIDIA's (its README, "on NVIDIA GPUs")
KERNEL_MAKERS = {"aiter": "AMD", "trtllm": "NVIDIA"}
KERNEL_NAMES = {**NAMES, "aiter": "AITER"}


def check_kernels_run_on(framework: str, hw, table: str | None, given: bool) -> None:
    """``calibrate``: one line where a kernel table's framework (``given`` by --framework, else named by the
    table) does not run on the table's GPU ``hw`` (``KERNEL_MAKERS``; no ``table``: on the GPU --gpu names): an
    NVIDIA table fitted as AITER's, an AMD one as TensorRT-LLM's. A user's own device whose title starts with no
    known maker passes."""
    maker, title_maker = KERNEL_MAKERS.get(framework), hw.title.split(" ", 1)[0]
    if maker is None or hw.kind != "gpu" or title_maker == maker or title_maker not in (*NOT_CUDA, "NVIDIA"):
        return                         # a device of the framework's maker, or one whose title names no known maker
    runs = f"{KERNEL_NAMES[framework]}'s kernels run on {maker} GPUs only"
    if given:
        what = f"{table} is a table of {hw.name} ({hw.title})" if table else f"--gpu {hw.name} is an {hw.title}"
        raise IronlawError(f"--framework {framework}: {runs}, and {what}")
    raise IronlawError(f"{table}: its framework is {framework}, but {runs} and its GPU is {hw.name} ({hw.title}); "
                       f"correct its framework column or <framework>/ folder")


def check_release(engine: str, release: str | None) -> str | None:
    """``release`` if ``engine`` has a kernel file for it (or None), else one line naming the known ones."""
    if release is None:
        return None
    known = RELEASES.get(check_engine(engine), {})
    if release not in known:
        raise unknown(f"{NAMES[engine]} release", release, tuple(known)) if known else \
            IronlawError(f"{NAMES[engine]} has no kernel release files; --release is for "
                         f"{', '.join(NAMES[e] for e in RELEASES)}")
    return release


def check_wide_ep(engine: str, moe_dispatcher: str | None, redundant_experts: int, named: str | None = None) -> None:
    """``--moe-dispatcher`` and ``--redundant-experts``, TensorRT-LLM's wide-EP strategies (its measured tables):
    refused in one line with another engine, naming the options given and the engine as ``named`` does (default
    ``--engine ENGINE``); ``serve`` and the serving search check them alike."""
    if engine == "trtllm" or (moe_dispatcher is None and not redundant_experts):
        return
    given = " ".join(([f"--moe-dispatcher {moe_dispatcher}"] if moe_dispatcher is not None else []) +
                     ([f"--redundant-experts {redundant_experts}"] if redundant_experts else []))
    raise IronlawError(f"{given}: --moe-dispatcher and --redundant-experts price TensorRT-LLM's wide-EP "
                       f"strategies (its measured tables); {named or '--engine ' + engine} is not modelled with them")


def check_profile_framework(framework: str, out: str | None) -> None:
    """``calibrate --kernels --framework F --out FILE``: a profile's [calibration] holds the default engine's
    kernel terms (TensorRT-LLM's: what ``analyze`` and ``serve`` price with), and ``serve --engine vllm|sglang``
    reads that engine's terms from its catalog file by GPU name (``with_engine``), so a vLLM or SGLang fit saved
    into a profile would be priced as TensorRT-LLM's and replaced under its own ``--engine``: one line."""
    if out is not None and framework in ENGINES and framework != DEFAULT:
        raise IronlawError(f"--framework {framework} --out {out}: a profile's [calibration] holds the kernel terms "
                           f"analyze and serve price as {NAMES[DEFAULT]}'s, and serve --engine {framework} reads "
                           f"{NAMES[framework]}'s from the catalog's engine file, so this fit would be used as the "
                           f"wrong engine's; drop --out to score the fit on its held-out rows")


def path(gpu: str, engine: str, release: str | None = None) -> Path:
    return ENGINE_DIR / (f"{engine}-{release}" if release else engine) / f"{gpu}.toml"


def load(gpu: str, engine: str, release: str | None = None) -> dict | None:
    """The checked [calibration] table of ``engine``'s kernels (of ``release``, where given) on catalog GPU
    ``gpu``, or None without one."""
    from .hardware import read_toml
    p = path(gpu, check_engine(engine), check_release(engine, release))
    if (engine == DEFAULT and release is None) or not p.is_file():
        return None
    doc = read_toml(p, "engine kernel file")
    if set(doc) != {"calibration"}:
        raise IronlawError(f"{p}: expected one [calibration] table, found {', '.join(sorted(doc)) or 'none'}")
    return check(doc["calibration"], f"{p.name}: calibration")


def write(gpu: str, engine: str, table: dict, release: str | None = None) -> Path:
    """Store ``engine``'s fitted kernel table for ``gpu`` (benchmarks/kernel_tables.py --framework … --write;
    ``--release 1.0`` for a TensorRT-LLM release's own file)."""
    from ..core.files import write_atomic
    from .profile import dumps_table
    if check_engine(engine) == DEFAULT and check_release(engine, release) is None:
        raise IronlawError("TensorRT-LLM's kernel terms live in the catalog file's own [calibration]")
    p = path(gpu, engine, release)
    p.parent.mkdir(parents=True, exist_ok=True)
    check(table, f"{p.name}: calibration")
    return write_atomic(p, dumps_table({"calibration": table}) + "\n", "engine kernel file")


def kernel_groups(cal: Calibration | None) -> list[str]:
    """The GEMM and attention kernel classes a calibration holds from measured kernel tables."""
    if cal is None:
        return []
    return [g for g in cal.provenance if not g.startswith("moe ")]


def with_engine(hw, engine: str, release: str | None = None):
    """(``hw`` with ``engine``'s GEMM and attention terms in place, EngineKernels): see the module docstring.
    ``release`` (TensorRT-LLM only: ``RELEASES``) puts that release's kernel terms, MoE layer included, in place."""
    check_engine(engine)
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
        why = f"the catalog's kernel terms stay ({_fitted_on(base, trt)})" if trt else \
            "its datasheet and own calibration stay"
        return hw, EngineKernels(engine, hw.name, (), tuple(trt), (), f"no {where}; {why}")
    own = tuple(g for g in table.get("provenance", {}) if not g.startswith("moe "))
    merged = _merged(base.table() if base is not None else None, table)
    versions = tuple(sorted({p["version"].split("; ")[-1] for p in table["provenance"].values()}))
    moe = moe_classes(table)
    catalog = moe_dtypes(moe_classes(base.table())) if base is not None else ()
    cov = EngineKernels(engine, hw.name, own, tuple(g for g in trt if g not in own), versions, where, None, moe,
                        tuple(d for d in catalog if d not in moe_dtypes(moe)))
    return replace(hw, calibration=Calibration.of(merged)), cov


def _fitted_on(cal: Calibration, groups) -> str:
    """'gemm fp8 fitted on aiter e4048607 tables': the classes ``groups`` of ``cal`` and the tables they came from,
    and the GPU a class carried from another's fit came from (its provenance's ``carried_from``)."""
    vers = sorted({cal.provenance[g].get("version", "?").split("; ")[-1] for g in groups})
    carried = sorted({cal.provenance[g]["carried_from"].split(" (")[0] for g in groups
                      if "carried_from" in cal.provenance[g]})
    how = f", carried from {'; '.join(carried)}" if carried else ""
    return f"{', '.join(groups)} fitted on {', '.join(vers)} tables{how}; the rest on its catalog efficiency"


def _with_release(hw, engine: str, release: str):
    """``with_engine`` for a release's own kernel file: every class it holds, MoE included, over the catalog's."""
    base = hw.calibration
    have = tuple(base.provenance) if base is not None else ()
    table = load(hw.name, engine, release)
    where = str(path(hw.name, engine, release).relative_to(ENGINE_DIR.parents[2]))
    if table is None:
        why = f"its catalog kernel terms stay ({RELEASES[engine][release]} has no tables for it)"
        return hw, EngineKernels(engine, hw.name, (), have, (), f"no {where}; {why}", release)
    own = tuple(table.get("provenance", {}))
    versions = tuple(sorted({p["version"].split("; ")[-1] for p in table["provenance"].values()}))
    cov = EngineKernels(engine, hw.name, own, tuple(g for g in have if g not in own), versions, where, release,
                        moe_classes(table))
    return over_catalog(hw, table, catalog_moe=False), cov


def moe_classes(table: dict) -> tuple:
    """The MoE-layer kernel classes (``moe_grouped_gemm.<dtype>``, ``moe_rows.<dtype>``) of a [calibration] table."""
    return tuple(sorted(k for k in table.get("kernel", {}) if k.startswith(MOE_CLASSES)))


def moe_part(table: dict | None) -> dict | None:
    """The fused-MoE layer of a framework's kernel file (its ``MOE_CLASSES`` entries, their provenance, fitted and
    held-out entries), None where it holds none: what a refit of the file's GEMM and attention classes keeps
    (benchmarks/kernel_tables.py --framework --write; the layer is benchmarks/kernel_moe.py --framework's)."""
    if not table or not moe_classes(table):
        return None
    moe = [k for k in table.get("provenance", {}) if k.startswith("moe ")]
    return {"schema": table["schema"], "kernel": {k: table["kernel"][k] for k in moe_classes(table)},
            "provenance": {k: table["provenance"][k] for k in moe},
            **{key: [x for x in table.get(key, []) if x.startswith("moe ")] for key in ("fitted", "held_out")},
            "source": "derived: the fused-MoE layer fitted to the framework's moe_perf tables by "
                      "benchmarks/kernel_moe.py --framework"}


def moe_dtypes(classes) -> tuple:
    """The dtypes of MoE-layer kernel classes: those of their grouped GEMMs ('moe_grouped_gemm.fp8' -> 'fp8')."""
    return tuple(sorted({c.split(".", 1)[1] for c in classes if c.startswith(MOE_CLASSES[0])}))


def over_catalog(hw, table: dict, catalog_moe: bool = True):
    """``hw`` with a kernel file's ``table`` over its catalog calibration (what ``with_engine`` returns); without
    the catalog's MoE layer (its classes and their provenance) unless ``catalog_moe``."""
    base = hw.calibration.table() if hw.calibration is not None else None
    if base is not None and not catalog_moe:
        base = {**base, "kernel": {k: v for k, v in base.get("kernel", {}).items() if not k.startswith(MOE_CLASSES)},
                "provenance": {k: v for k, v in base.get("provenance", {}).items() if not k.startswith("moe ")},
                **{key: [x for x in base.get(key, []) if not x.startswith("moe ")] for key in ("fitted", "held_out")}}
    return replace(hw, calibration=Calibration.of(_merged(base, table)))


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
