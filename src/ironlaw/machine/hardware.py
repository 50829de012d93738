"""Hardware descriptions: the catalog's TOML files and measured profiles, in one format.

A device is a set of sourced numbers: peak FLOP/s per dtype, memory tiers from fastest to
slowest, a fixed per-op latency, links, power and default efficiencies. Every table that holds a
number also holds a ``source`` ("datasheet: …", "measured …", "derived: …", "estimate: …").
A dtype the device lacks is an error, never a fallback.

File format (``schema = "ironlaw.hardware/1"``)::

    name = "h100"                      # lowercase, hyphens
    title = "NVIDIA H100 SXM5 80 GB"
    kind = "gpu"                       # gpu | cpu | tpu | soc
    aliases = ["h100-sxm"]             # optional
    [compute.bf16]                     # one table per dtype the device has (dense rate)
    peak_flops = "989.4 TFLOP/s"       # number in SI, or a string with units
    source = "datasheet: …"
    [vector]                           # the non-matrix unit: elementwise, norms, softmax
    peak_flops = "67 TFLOP/s"
    source = "…"
    sms = 132                          # optional (GPUs): streaming multiprocessors, a split-KV kernel's grid
    sms_source = "datasheet: …"        # (ironlaw.core.splitkv); its own source
    [[memory]]                         # fastest first
    name = "hbm3"
    role = "device"                    # cache | device | host | storage
    capacity_bytes = "80 GB"
    bw_Bps = "3.35 TB/s"
    latency_s = "600 ns"               # optional access latency
    source = "…"
    [latency]
    op_s = "4 us"                      # fixed cost per op: kernel launch / dispatch
    source = "…"
    [[links]]                          # optional
    name = "nvlink4"; kind = "nvlink"; bw_Bps = "450 GB/s"; latency_s = "2 us"; source = "…"
    ports_per_node = 8                 # network links (infiniband, ethernet) only, optional: the ports a
                                       # node has for the devices' traffic (else one per device)
    max_devices = 8                    # links inside a node only, optional: the most devices the fabric
                                       # joins in one node (DGX A100's NVSwitch: 8; an NVLink bridge: 2).
                                       # A "node" is the scale-up domain: a GB200 NVL72 rack is one node
                                       # of 72 GPUs (NVLink Switch trays), a TPU v6e pod one of 256 chips.
                                       # A slower in-node link stating more makes two levels: bridged
                                       # PCIe cards (nvlink 2, pcie 8: a server of 4 pairs; network.topology)
    [power]                            # optional
    tdp_w = 700
    source = "…"
    idle_w = 70                        # optional: board power with a context and no work (ironlaw.law.power)
    idle_source = "estimate: …"
    memory_w = 470                     # optional (with idle_w): board power while device memory streams flat
    memory_source = "measured: …"      # out and nothing else works (default: tdp_w)
    compute_w = 650                    # optional (with idle_w): board power with the compute units flat out
    compute_source = "measured: …"     # (default: tdp_w)
    [efficiency]                       # fractions of peak reached by real kernels
    matmul = 0.7                       # keys: op kinds (see graph.KINDS), 'other', 'memory'
    memory = 0.8
    source = "estimate: …"
    [features]                         # optional
    sparsity_2_4 = true                # 2:4 structured sparsity at twice the dense rate
    fp8_any_layout = true              # FP8 GEMMs in any operand layout: one FP8 copy (``ironlaw.models.precision``)
    source = "…"

Profiles written by ``ironlaw probe`` use the same format plus ``[probe]`` (``ironlaw.machine.probetable``) and
``[calibration]`` (``ironlaw.machine.calibration``) tables; ``local`` names the newest (``ironlaw.machine.home``).
"""
from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..core import units
from .calibration import Calibration, check as check_calibration
from ..core.errors import IronlawError, suggest, unknown
from ..core.files import read_text
from ..core.graph import KINDS as OP_KINDS
from .home import newest
from .hostcpu import check as check_host
from .network.calibration import check_table as check_network, for_hardware as network_for
from .probetable import check_probe
from .tomlcache import parsed

SCHEMA = "ironlaw.hardware/1"
DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4", "fp4", "mxfp8", "mxfp4")
# The matrix unit by vendor, as a refusal names it ("h100 has no fp4 tensor cores"); else "matrix unit".
MATRIX_UNIT = {"NVIDIA": "tensor cores", "AMD": "matrix cores", "Google": "MXU mode"}
# Block-scaled MX formats are a hardware feature: a device without them dequantizes MX weights in software
# and runs the GEMM at a wider dtype (gpt-oss's MXFP4 experts on Hopper run as bf16 GEMMs).
MX_DTYPES = ("mxfp8", "mxfp4")
KINDS = ("gpu", "cpu", "tpu", "soc")
# what one device of a kind is called where a count or a per-device rate names it ("up to 8 GPUs", "tok/s/CPU")
UNIT_NAMES = {"gpu": "GPU", "cpu": "CPU", "tpu": "TPU", "soc": "device"}


def unit_name(kinds) -> str:
    """'GPU' for devices of kind gpu, 'CPU', 'TPU', 'device' for a system-on-chip or devices of several kinds."""
    kinds = set(kinds)
    return UNIT_NAMES[kinds.pop()] if len(kinds) == 1 else "device"
ROLES = ("cache", "device", "host", "storage")
LINK_KINDS = ("nvlink", "pcie", "infiniband", "ethernet", "ici", "xgmi", "nvlink-c2c", "neuronlink", "roce-mesh")
# neuronlink: AWS Trainium's chip-to-chip fabric; roce-mesh: Gaudi's on-board all-to-all RoCE ports (scale-up)
NETWORK_KINDS = ("infiniband", "ethernet")          # links between nodes: they may state ports_per_node
MAX_PORTS_PER_NODE = 1024
SOURCE_PREFIXES = ("datasheet:", "measured", "derived:", "estimate:", "paper:", "vendor:")
CATALOG_DIR = Path(__file__).with_name("catalog")


@dataclass(frozen=True)
class Tier:
    name: str
    role: str
    capacity_bytes: float
    bw_Bps: float
    source: str
    latency_s: float | None = None
    capacity_binary: bool | None = None   # the capacity as the catalog writes it: binary prefix, decimal, bare number


@dataclass(frozen=True)
class Link:
    name: str
    kind: str
    bw_Bps: float
    latency_s: float
    source: str
    ports_per_node: int | None = None     # network links: ports per node (None: one per device)
    max_devices: int | None = None        # links inside a node: most devices one node's fabric joins (None: unstated)


@dataclass(frozen=True)
class Hardware:
    name: str
    title: str
    kind: str
    peak_flops: dict[str, float]          # dtype -> dense FLOP/s of the matrix unit
    vector_flops: float                   # non-matrix unit FLOP/s
    memory: tuple[Tier, ...]              # fastest first
    op_latency_s: float
    efficiency: dict[str, float]          # op kind | 'other' | 'memory' -> fraction
    sources: dict[str, str]               # table path -> source text
    links: tuple[Link, ...] = ()
    tdp_w: float | None = None
    idle_w: float | None = None           # [power] idle_w: drawn with nothing to do (ironlaw.law.power)
    memory_w: float | None = None         # [power] memory_w: drawn streaming device memory flat out (else tdp_w)
    compute_w: float | None = None        # [power] compute_w: drawn with the compute units flat out (else tdp_w)
    features: dict[str, bool] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    path: str = ""
    extra: dict = field(default_factory=dict)   # [probe] of measured profiles, [network] by name

    def __repr__(self) -> str:                  # the fields (calibration, sources) run to 100 kB: name the device
        return f"Hardware({self.name!r}, {self.title!r}, kind={self.kind!r})"
    calibration: Calibration | None = None       # [calibration]: refines [efficiency] per op (ironlaw.law.efficiency)
    sms: int | None = None                # [vector] sms: streaming multiprocessors (a split-KV kernel's grid, core.splitkv)
    vendor: str = ""                      # who makes it, where the file says so ('AMD'); else ``maker`` reads the title

    @property
    def maker(self) -> str:
        """Who makes the device: the file's ``vendor`` where it states one, else its title's first word, as the
        catalog's titles all begin ('NVIDIA H100 SXM5 80 GB', 'AMD Instinct MI300X 192 GB')."""
        return self.vendor or self.title.split(" ", 1)[0]

    def peak(self, dtype: str) -> float:
        """Dense matrix-unit FLOP/s for ``dtype``; an error when the device lacks it or no such dtype exists."""
        if dtype not in self.peak_flops:
            if dtype not in DTYPES:
                raise unknown("dtype", dtype, DTYPES)
            raise IronlawError(self.lacks(dtype))
        return self.peak_flops[dtype]

    def lacks(self, dtype: str) -> str:
        """The one line that refuses ``dtype`` on this device, with what it has and what to do instead."""
        have = ", ".join(d for d in DTYPES if d in self.peak_flops)
        unit = next((u for v, u in MATRIX_UNIT.items() if self.maker.lower() == v.lower()), "matrix unit")
        hint = "choose one with --dtype"
        if dtype in MX_DTYPES:
            wide = next((d for d in ("bf16", "fp16", "fp8") if d in self.peak_flops), None)
            if wide:
                hint = (f"MX weights are dequantized on it: use --dtype {wide} with the weights stored as {dtype} "
                        f"(ironlaw compare --what-if quant={dtype})")
        elif dtype == "fp4" and "mxfp4" in self.peak_flops:
            hint = "its 4-bit format is OCP MXFP4: use --dtype mxfp4"
        return f"{self.name} has no {dtype} {unit} (its dtypes: {have}); {hint}"

    def eta(self, kind: str) -> float:
        return self.efficiency.get(kind, self.efficiency["other"])

    @property
    def device_tier(self) -> int:
        """Index of the main memory of the device (HBM / DRAM / unified)."""
        for i, t in enumerate(self.memory):
            if t.role == "device":
                return i
        raise IronlawError(f"{self.name}: no memory tier with role 'device'")

    def tier(self, name: str) -> Tier:
        for t in self.memory:
            if t.name == name:
                return t
        raise unknown(f"memory tier of {self.name}", name, [t.name for t in self.memory])

    def link(self, kind: str) -> Link:
        for link in self.links:
            if link.kind == kind or link.name == kind:
                return link
        raise unknown(f"link of {self.name}", kind, [l.name for l in self.links])

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "name": self.name,
            "title": self.title,
            "kind": self.kind,
            **({"vendor": self.vendor} if self.vendor else {}),
            "aliases": list(self.aliases),
            "compute": {d: {"peak_flops": self.peak_flops[d], "source": self.sources[f"compute.{d}"]}
                        for d in DTYPES if d in self.peak_flops},
            "vector": {"peak_flops": self.vector_flops, "source": self.sources["vector"]},
            "memory": [{"name": t.name, "role": t.role, "capacity_bytes": t.capacity_bytes, "bw_Bps": t.bw_Bps,
                        "latency_s": t.latency_s, "source": t.source} for t in self.memory],
            "latency_s": self.op_latency_s,
            "latency_source": self.sources["latency"],
            "links": [{"name": l.name, "kind": l.kind, "bw_Bps": l.bw_Bps, "latency_s": l.latency_s,
                       "ports_per_node": l.ports_per_node, "max_devices": l.max_devices, "source": l.source}
                      for l in self.links],
            "tdp_w": self.tdp_w,
            "idle_w": self.idle_w,
            "memory_w": self.memory_w,
            "compute_w": self.compute_w,
            "efficiency": dict(self.efficiency),
            "efficiency_source": self.sources["efficiency"],
            "features": dict(self.features),
            "host": (lambda h: None if h is None else {"cpu": h.cpu, "op_s": h.op_s, "module_s": h.module_s,
                                                       "sync_s": h.sync_s, "linear_s": h.linear_s,
                                                       "source": h.source})(self.extra.get("host")),
            "network": self.network_calibration(),
            "path": self.path,
        }

    def network_calibration(self) -> dict:
        """The collective model's calibration: the fitted one ``[network]`` names, else the estimates."""
        c = network_for(self)
        return {"calibration": c.name, "source": self.extra.get("network", {}).get("source", c.source)}


# ---------------------------------------------------------------- reading and checking files

def toml_loads(text: str) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib.loads(text)


def read_toml(path: Path, what: str = "TOML file") -> dict:
    p = Path(path)
    if p.is_dir():
        raise IronlawError(f"{p}: is a directory, expected a {what}")
    text = read_text(p, what)
    try:
        if p.parent.resolve() == CATALOG_DIR.resolve():     # the catalog's files: kept as JSON (``tomlcache``)
            return parsed(p, text, toml_loads)
        return toml_loads(text)
    except Exception as e:  # tomllib.TOMLDecodeError
        raise IronlawError(f"{p}: malformed TOML: {e}") from None


class _Table:
    """A TOML table read under strict rules: unknown keys and missing keys are errors."""

    def __init__(self, data: object, where: str, allowed: tuple[str, ...]):
        if not isinstance(data, dict):
            raise IronlawError(f"{where}: expected a table, got {type(data).__name__}")
        extra = sorted(set(data) - set(allowed))
        if extra:
            raise IronlawError(f"{where}: unknown field '{extra[0]}'" + _hint(extra[0], allowed))
        self.data, self.where = data, where

    def get(self, key: str, default=None):
        return self.data.get(key, default)

    def req(self, key: str):
        if key not in self.data:
            raise IronlawError(f"{self.where}: missing required field '{key}'")
        return self.data[key]

    def text(self, key: str, required: bool = True) -> str:
        v = self.req(key) if required else self.data.get(key, "")
        if not isinstance(v, str) or (required and not v.strip()):
            raise IronlawError(f"{self.where}.{key}: expected a non-empty string")
        return v

    def qty(self, key: str, unit: str, required: bool = True, upper: float = math.inf) -> float | None:
        if key not in self.data and not required:
            return None
        x = units.parse(self.req(key), unit, f"{self.where}.{key}")
        return units.positive(x, f"{self.where}.{key}", upper)

    def source(self) -> str:
        s = self.text("source")
        if not s.startswith(SOURCE_PREFIXES):
            raise IronlawError(f"{self.where}.source: must start with one of {', '.join(SOURCE_PREFIXES)}; got {s[:40]!r}")
        return s


def _hint(key: str, allowed) -> str:
    return suggest(key, allowed)


REQUIRED = ("schema", "name", "title", "kind", "compute", "vector", "memory", "latency", "efficiency")


def parse_hardware(data: dict, where: str) -> Hardware:
    """A checked Hardware from a TOML document (catalog entry or measured profile)."""
    top = _Table(data, where, ("schema", "name", "title", "kind", "vendor", "aliases", "compute", "vector", "memory",
                               "latency", "links", "power", "efficiency", "features", "probe", "calibration",
                               "network", "host"))
    missing = [k for k in REQUIRED if k not in data]            # all at once: a hand-written file lacks several
    if len(missing) > 1:
        raise IronlawError(f"{where}: missing required fields {', '.join(repr(k) for k in missing)}")
    name, kind, aliases = _identity(top, where)
    sources: dict[str, str] = {}
    peaks = _compute(top, where, sources)
    vector, sms = _vector(top, where, sources)
    tiers = _tiers(top, where)
    lat = _Table(top.req("latency"), f"{where}.latency", ("op_s", "source"))
    op_latency = lat.qty("op_s", "s", upper=1.0)
    sources["latency"] = lat.source()
    links = _links(top, where)
    tdp, idle, memory_w, compute_w = _power(top, where, sources)
    eff = _efficiency(top, where, sources)
    feats = _features(top, where, sources)
    extra, cal = _measured(data, where)
    return Hardware(name=name, title=top.text("title"), kind=kind, peak_flops=peaks, vector_flops=vector,
                    memory=tuple(tiers), op_latency_s=op_latency, efficiency=eff, sources=sources,
                    links=tuple(links), tdp_w=tdp, idle_w=idle, memory_w=memory_w,
                    compute_w=compute_w, features=feats, aliases=tuple(aliases), path=where,
                    extra=extra, calibration=cal, sms=sms, vendor=top.text("vendor") if "vendor" in data else "")


MAX_SMS = 4096


def _vector(top: _Table, where: str, sources: dict) -> tuple[float, int | None]:
    """[vector]: peak_flops and its source; ``sms``, the streaming multiprocessors (GPU compute units) a kernel's
    launch heuristic divides its blocks over (``core.splitkv``), optional, with its own ``sms_source``."""
    v = _Table(top.req("vector"), f"{where}.vector", ("peak_flops", "source", "sms", "sms_source"))
    vector = v.qty("peak_flops", "flops", upper=1e19)
    sources["vector"] = v.source()
    if "sms" not in v.data:
        if "sms_source" in v.data:
            raise IronlawError(f"{where}.vector.sms_source: given without sms")
        return vector, None
    sms = v.data["sms"]
    if isinstance(sms, bool) or not isinstance(sms, int) or not 1 <= sms <= MAX_SMS:
        raise IronlawError(f"{where}.vector.sms: expected a whole number of SMs, 1 … {MAX_SMS}, got {sms!r}")
    src = v.text("sms_source")
    if not src.startswith(SOURCE_PREFIXES):
        raise IronlawError(f"{where}.vector.sms_source must start with one of {', '.join(SOURCE_PREFIXES)}")
    sources["vector.sms"] = src
    return vector, sms


def _identity(top: _Table, where: str) -> tuple[str, str, list]:
    if top.req("schema") != SCHEMA:
        raise IronlawError(f"{where}: schema must be '{SCHEMA}', got {top.get('schema')!r}")
    name = top.text("name")
    if name != name.lower() or " " in name or "_" in name:
        raise IronlawError(f"{where}.name: '{name}' must be lowercase with hyphens")
    kind = top.text("kind")
    if kind not in KINDS:
        raise unknown(f"hardware kind in {where}", kind, KINDS)
    aliases = top.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise IronlawError(f"{where}.aliases: expected a list of strings")
    return name, kind, aliases


def _compute(top: _Table, where: str, sources: dict) -> dict[str, float]:
    compute = top.req("compute")
    if not isinstance(compute, dict) or not compute:
        raise IronlawError(f"{where}.compute: expected at least one [compute.<dtype>] table")
    peaks = {}
    for dtype, tbl in compute.items():
        if dtype not in DTYPES:
            raise unknown(f"dtype in {where}.compute", dtype, DTYPES)
        t = _Table(tbl, f"{where}.compute.{dtype}", ("peak_flops", "source"))
        peaks[dtype] = t.qty("peak_flops", "flops", upper=1e19)
        sources[f"compute.{dtype}"] = t.source()
    return peaks


def _tiers(top: _Table, where: str) -> list[Tier]:
    mem = top.req("memory")
    if not isinstance(mem, list) or not mem:
        raise IronlawError(f"{where}.memory: expected at least one [[memory]] tier")
    tiers = []
    for i, tbl in enumerate(mem):
        t = _Table(tbl, f"{where}.memory[{i}]", ("name", "role", "capacity_bytes", "bw_Bps", "latency_s", "source"))
        role = t.text("role")
        if role not in ROLES:
            raise unknown(f"memory role in {where}.memory[{i}]", role, ROLES)
        tiers.append(Tier(t.text("name"), role, t.qty("capacity_bytes", "bytes", upper=1e18),
                          t.qty("bw_Bps", "Bps", upper=1e16), t.source(), t.qty("latency_s", "s", False, upper=1.0),
                          units.is_binary(t.get("capacity_bytes"))))
    _check_tiers(tiers, where)
    return tiers


def _links(top: _Table, where: str) -> list[Link]:
    links = []
    for i, tbl in enumerate(top.get("links", [])):
        t = _Table(tbl, f"{where}.links[{i}]", ("name", "kind", "bw_Bps", "latency_s", "ports_per_node", "max_devices",
                                                               "source"))
        lk = t.text("kind")
        if lk not in LINK_KINDS:
            raise unknown(f"link kind in {where}.links[{i}]", lk, LINK_KINDS)
        links.append(Link(t.text("name"), lk, t.qty("bw_Bps", "Bps", upper=1e16), t.qty("latency_s", "s", upper=1.0),
                          t.source(), _ports(t, lk, f"{where}.links[{i}].ports_per_node"),
                          _max_devices(t, lk, f"{where}.links[{i}].max_devices")))
    return links


def _efficiency(top: _Table, where: str, sources: dict) -> dict[str, float]:
    e = _Table(top.req("efficiency"), f"{where}.efficiency", OP_KINDS + ("other", "memory", "source"))
    eff = {}
    for k, x in e.data.items():
        if k == "source":
            continue
        eff[k] = units.positive(units.parse(x, "1", f"{where}.efficiency.{k}"), f"{where}.efficiency.{k}", 1.0 + 1e-9)
    missing = [req for req in ("other", "memory") if req not in eff]
    if missing:
        raise IronlawError(f"{where}.efficiency: missing required field{'s' if len(missing) > 1 else ''} "
                           f"{', '.join(repr(k) for k in missing)}")
    sources["efficiency"] = e.source()
    return eff


# [features]: sparsity_2_4, the matrix unit runs 2:4 structured sparsity at twice its dense rate; fp8_any_layout,
# its FP8 GEMMs take either operand layout (Blackwell, compute capability 10.x: one FP8 copy of a tensor serves
# both GEMMs that read it, where Hopper's take only the TN layout and need a transposed copy, ``precision``)
# nvfp4_training: NVIDIA's NVFP4 training recipe runs there (``ironlaw.models.nvfp4``)
FEATURES = ("sparsity_2_4", "fp8_any_layout", "nvfp4_training")


def _features(top: _Table, where: str, sources: dict) -> dict[str, bool]:
    feats = {}
    if "features" in top.data:
        f = _Table(top.get("features"), f"{where}.features", FEATURES + ("source",))
        for k, x in f.data.items():
            if k != "source":
                if not isinstance(x, bool):
                    raise IronlawError(f"{where}.features.{k}: expected true or false")
                feats[k] = x
        sources["features"] = f.source()
    return feats


def _measured(data: dict, where: str) -> tuple[dict, Calibration | None]:
    """[probe] and [network] (kept in ``extra``) and [calibration], each refused field by field when
    hand-edited into nonsense."""
    extra = {k: data[k] for k in ("probe",) if k in data}
    if "network" in data:                     # a fitted network calibration by name (network.calibration)
        extra["network"] = check_network(data["network"], f"{where}.network")
    if "probe" in extra:
        check_probe(extra["probe"], f"{where}.probe")
    if "host" in data:                        # the host CPU and what issuing work costs it (machine.hostcpu)
        extra["host"] = check_host(data["host"], f"{where}.host")
    cal = None
    if "calibration" in data:
        cal = Calibration.of(check_calibration(data["calibration"], f"{where}.calibration"))
    return extra, cal


def _power(top: _Table, where: str, sources: dict) -> tuple[float | None, float | None, float | None, float | None]:
    """[power]: tdp_w and its source; idle_w (below tdp_w) with its own idle_source when given; memory_w and
    compute_w (each between idle_w and tdp_w) with their own memory_source and compute_source when given."""
    if "power" not in top.data:
        return None, None, None, None
    p = _Table(top.get("power"), f"{where}.power", ("tdp_w", "source", "idle_w", "idle_source", "memory_w",
                                                    "memory_source", "compute_w", "compute_source"))
    tdp = p.qty("tdp_w", "W", upper=1e6)
    sources["power"] = p.source()
    if "idle_w" not in p.data:
        for key in ("memory_w", "compute_w"):
            if key in p.data:
                raise IronlawError(f"{where}.power.{key} needs idle_w: it is the board power above idle that "
                                   f"{'streaming device memory' if key == 'memory_w' else 'the compute units'} add")
        return tdp, None, None, None
    idle = p.qty("idle_w", "W", upper=tdp)
    sources["power.idle"] = _power_source(p, "idle_source", where)
    return tdp, idle, _full_load_w(p, "memory", idle, tdp, where, sources), \
        _full_load_w(p, "compute", idle, tdp, where, sources)


def _full_load_w(p: _Table, what: str, idle: float, tdp: float, where: str, sources: dict) -> float | None:
    """[power] <what>_w (the board power with that resource flat out, above idle_w, at most tdp_w) and its own
    <what>_source; None where the file states none."""
    w = p.qty(f"{what}_w", "W", required=False, upper=tdp * (1 + 1e-9))
    if w is None:
        return None
    if w <= idle:
        raise IronlawError(f"{where}.power.{what}_w must be above idle_w ({idle:g} W), got {w:g} W")
    sources[f"power.{what}"] = _power_source(p, f"{what}_source", where)
    return w


def _power_source(p: _Table, key: str, where: str) -> str:
    src = p.text(key)
    if not src.startswith(SOURCE_PREFIXES):
        raise IronlawError(f"{where}.power.{key} must start with one of {', '.join(SOURCE_PREFIXES)}")
    return src


def _max_devices(t: _Table, kind: str, where: str) -> int | None:
    """``max_devices`` of a link inside a node: a whole number of devices, 2 … MAX_PORTS_PER_NODE; absent is None."""
    if "max_devices" not in t.data:
        return None
    if kind in NETWORK_KINDS:
        raise IronlawError(f"{where}: a network link ({kind}) joins nodes, not devices inside one; remove the field")
    x = t.data["max_devices"]
    if isinstance(x, bool) or not isinstance(x, int) or not 2 <= x <= MAX_PORTS_PER_NODE:
        raise IronlawError(f"{where}: expected a whole number of devices from 2 to {MAX_PORTS_PER_NODE}, got {x!r}")
    return x


def _ports(t: _Table, kind: str, where: str) -> int | None:
    """``ports_per_node`` of a network link: a whole number of ports, 1 … MAX_PORTS_PER_NODE; absent is None."""
    if "ports_per_node" not in t.data:
        return None
    if kind not in NETWORK_KINDS:
        raise IronlawError(f"{where}: only a network link ({', '.join(NETWORK_KINDS)}) has ports per node, "
                           f"not a '{kind}' link; remove the field")
    x = t.data["ports_per_node"]
    if isinstance(x, bool) or not isinstance(x, int) or not 1 <= x <= MAX_PORTS_PER_NODE:
        raise IronlawError(f"{where}: expected a whole number of ports from 1 to {MAX_PORTS_PER_NODE}, got {x!r}")
    return x


def _check_tiers(tiers: list[Tier], where: str) -> None:
    names = [t.name for t in tiers]
    if len(set(names)) != len(names):
        raise IronlawError(f"{where}.memory: tier names must be unique, got {names}")
    if sum(t.role == "device" for t in tiers) != 1:
        raise IronlawError(f"{where}.memory: exactly one tier must have role 'device'")
    order = [ROLES.index(t.role) for t in tiers]
    if order != sorted(order):
        raise IronlawError(f"{where}.memory: tiers must run fastest to slowest (cache, device, host, storage)")
    for a, b in zip(tiers, tiers[1:]):
        if b.bw_Bps > a.bw_Bps:
            raise IronlawError(f"{where}.memory: tier '{b.name}' is faster than '{a.name}' above it; list fastest first")
        if b.capacity_bytes < a.capacity_bytes and b.role != "host":   # a host share may be the smaller (GB300)
            raise IronlawError(f"{where}.memory: tier '{a.name}' is larger than the slower '{b.name}' below it")


def load_file(path: str | os.PathLike) -> Hardware:
    p = Path(path)
    return parse_hardware(read_toml(p, "hardware TOML file"), str(p))


_ALIASES = re.compile(r"^aliases\s*=\s*\[(.*?)\]", re.M | re.S)


def _catalog_files() -> dict[str, Path]:
    """The catalog's files by name, in the names' order (h100 before h100-nvl, where the files' own order puts
    "h100-nvl.toml" and "h100-pcie.toml" first, as '-' sorts before '.')."""
    return {p.stem: p for p in sorted(CATALOG_DIR.glob("*.toml"), key=lambda p: p.stem)}


def catalog() -> list[Hardware]:
    return [load_file(p) for p in _catalog_files().values()]


def names() -> list[str]:
    return list(_catalog_files())


def get(spec: str) -> Hardware:
    """Resolve ``spec``: a catalog name or alias, ``local`` (newest probe profile), or a .toml path."""
    if not isinstance(spec, str):
        raise IronlawError(f"hardware: a name or a .toml file is a text, got {type(spec).__name__} {spec!r}; see "
                           f"`ironlaw hardware list`")
    if not spec.strip():
        raise IronlawError("hardware: empty name; see `ironlaw hardware list`")
    if spec.strip().endswith(".toml") or os.sep in spec:
        return load_file(spec.strip())
    key = spec.strip().lower()                # a name in any case, spaces around it dropped (H100, "h100 ", Local)
    if key == "local":
        return load_file(newest())
    files = _catalog_files()
    if key in files:
        return load_file(files[key])
    for stem, path in files.items():          # aliases: a cheap scan, then one full parse
        m = _ALIASES.search(path.read_text(encoding="utf-8"))
        if m and f'"{key}"' in m.group(1):
            hw = load_file(path)
            if key in hw.aliases:
                return hw
    parts = [x.strip().lower() for x in spec.split(",")]
    if len(parts) > 1 and all(x in files or x == "local" for x in parts):
        raise IronlawError(f"'{spec}' names {len(parts)} devices; this command takes one (sweep --on and the serving "
                           f"search --on take a list; compare takes --vs-hardware)")
    raise unknown("hardware", spec, list(files) + ["local"])


def check_distinct(given: list, hws: list, what: str) -> None:
    """Each device once: ``what`` (a sweep, a search) labels its rows by device name, so two entries of one name
    (an alias, or a profile such as ``calibrate --out my.toml`` that keeps its GPU's name) are refused, naming what
    was given (``given``: the entries as typed; ``hws``: them loaded)."""
    names = [h.name for h in hws]
    for name in sorted({n for n in names if names.count(n) > 1}):
        typed = [str(g) if isinstance(g, str) else g.name for g, h in zip(given, hws) if h.name == name]
        files = {str(Path(h.path).resolve()) for h in hws if h.name == name}
        if len(files) == 1:
            said = name if len(set(typed)) == 1 else f"{name} ({', '.join(typed)})"
            raise IronlawError(f"--on names {said} twice; give each device once")
        raise IronlawError(f"--on {', '.join(typed)}: each is the device {name}, and {what} labels its rows by "
                           f"device name; give one of them (`ironlaw compare SPEC --on {typed[0]} --vs-hardware "
                           f"{typed[1]}` sets two such side by side)")


def listed(on) -> list:
    """The devices ``on`` names, as given (not loaded): one name, a comma-separated list of names (``--on
    h100,b200``), a Hardware, or a list of either; an empty name in the list is an error."""
    items = [h.strip() for h in on.split(",")] if isinstance(on, str) else list(on) if isinstance(on, (list, tuple)) \
        else [on]
    if not items or any(isinstance(h, str) and not h for h in items):
        raise IronlawError(f"--on '{on}': empty hardware name in the list")
    return items
