"""The ``[calibration]`` table of a device: its fields, their checks, and the typed form the law reads.

A calibration refines the flat ``[efficiency]`` defaults per op class and shape, per reuse pattern of the
traffic and per op (fixed latency). docs/how-it-models.md lists every field, the formulas that use them
(``ironlaw.law.efficiency``) and the order they are fitted in (``ironlaw.measure.calibrate.calibrate``, ``ironlaw.measure.calibrate.fit``).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Mapping

from ..core.errors import IronlawError, unknown
from ..core.gemmshape import (EXPERT_S_MAX, TOKEN_S_MAX, GEMV_PASS_MAX, GEMV_ROW_MAX, GRID_AXES, GRID_KEYS, GRID_LOG_MAX,
                              KEY_S_MAX, KEY_CTAS_MAX, CTA_S_MAX, MERGE_KINDS, MERGE_S_MAX,
                              ROW_FIELDS, SHAPE_FIELDS, SPLIT_KV, SPLIT_S_MAX, SWAP_S_MAX, TOUCHED_S_MAX, UNIT_S_MAX,
                              UNALIGNED_K_MAX,
                              WRITE_S_MAX, TILE_S_MAX, PLAN_SPLIT_S_MAX, PLAN_MERGE_S_MAX,
                              UNIT_LAUNCHES, VARIANT_RULES, VECTOR_MODES, LATENCY_HEAD_DIM_S_MAX,
                              LATENCY_TILE_POWER_MAX, TILE_HEAD_DIM_S_MAX)
from ..core.graph import CLASSES, DTYPE_BYTES, FRONTENDS, KINDS
from ..core.keyblocks import KEY_BLOCK_KERNELS
from ..core.routing import M_BLOCKS, PAIR_KERNELS
from ..core.splitkv import CHUNK_OCCUPANCY, CHUNK_PLANS, MMHA_OCCUPANCY, MMHA_THREADS, PLAN_BLOCKS_PER_SM

SCHEMA = "ironlaw.calibration/1"
STREAMED = tuple(c for c in CLASSES if c != "activations")   # read once per pass: weights, KV, tables, …
MAX_MEMORY_ETA = 1.5      # what a file may hold (fits from before the bound); the law holds every η at 1 (efficiency.within_peak)
MAX_LATENCY_S = 1.0
SHAPE_KINDS = ("conv", "attention")          # kinds with a GEMM shape table besides matmul
FRAMEWORK_FIELDS = ("framework_s", "framework_share")
OP_FIELDS = ("compute", "memory", "latency_s")
# a kernel class without a GEMM shape table: an op's fields, an MoE layer's seconds per token it takes in
# (``token_s``: ``efficiency.token_setup_s``) and, on a fused-MoE layer's routed rows, the kernel whose intermediates
# span every token-expert pair of the step under EP (``pairs``: ``core.routing.PAIR_KERNELS``, ``pairs_bytes``)
KERNEL_OP_FIELDS = (*OP_FIELDS, "token_s", "pairs")
TOP_FIELDS = ("schema", "source", "fitted", "held_out", "matmul", "compute", "memory", "latency_s",
              "conv", "attention", "op", "kernel", "framework_s", "framework_share", "frontend", "provenance")
# [calibration.provenance."<what was fitted>"]: the measured table each fitted group came from
PROVENANCE_FIELDS = {"table": str, "version": str, "license": str, "rows_fitted": int, "rows_held_out": int,
                     "date": str}
# a GEMM class whose form ``calibrate --kernels`` chose (``measure.calibrate.kernelfit.forms.chosen_form``): the form
# kept and each form's held-out median and p90 |error| (fractions)
FORM_FIELDS = {"gemm_form": str, **{f"held_out_{f}_{s}": float for f in ("half", "stream") for s in ("median", "p90")},
               # an MLA module class fitted whole and less its projections (``kernelfit.forms.module_form``)
               "module_form": str, **{f"held_out_{f}_{s}": float for f in ("whole", "apart") for s in ("median", "p90")}}
# a GEMM class's rows as its collector timed them (``measure.calibrate.kernelfit.forms.fit_operands``): "cache", the
# operands that fit the last cache level read from there on the repeated calls; "copies", the weights read from there
# where all the collector's copies of them fit it together; "memory", from device memory unless the workload fits
OPERANDS_FIELDS = {"operands_from": str}
OPERANDS_FROM = ("cache", "copies", "memory")
# a GEMM class carried from another catalog GPU's fit (``measure.calibrate.kernelfit.carried``): the source GPU, the
# factor on its compute rate and the factor's evidence
CARRIED_FIELDS = {"carried_from": str}


@dataclass(frozen=True)
class Calibration:
    """A calibration as the law reads it; ``table()`` gives back the TOML table it came from."""
    source: str
    fitted: tuple[str, ...]
    held_out: tuple[str, ...] = ()
    compute: Mapping[str, float] = field(default_factory=dict)      # op kind -> η on its unit
    memory_streamed: float | None = None       # η of weights, KV cache, tables, … (read once per pass)
    memory_produced: float | None = None       # η of activations just produced by the op before
    memory_kind: Mapping[str, float] = field(default_factory=dict)  # op kind -> η of its activations (attention: KV)
    latency_s: Mapping[str, float] = field(default_factory=dict)    # op kind | 'default' -> seconds per invocation
    shapes: Mapping[str, Mapping[str, dict]] = field(default_factory=dict)  # matmul|conv|attention -> dtype -> table
    kernel: Mapping[str, dict] = field(default_factory=dict)        # op.attrs["kernel"] -> compute / memory / latency_s
    op: Mapping[str, dict] = field(default_factory=dict)            # op name -> compute / memory / latency_s
    framework_s: float | None = None           # seconds per op spent between ops
    framework_share: float | None = None       # share of kernel time added end to end
    frontend: Mapping[str, dict] = field(default_factory=dict)      # front end -> its own framework terms
    provenance: Mapping[str, dict] = field(default_factory=dict)    # fitted group -> table, version, rows …

    @classmethod
    def of(cls, t: Mapping) -> "Calibration":
        """The typed form of a table (unchecked: ``check`` first for anything read from a file)."""
        mem = t.get("memory", {})
        return cls(source=t.get("source", ""), fitted=tuple(t.get("fitted", ())), held_out=tuple(t.get("held_out", ())),
                   compute=t.get("compute", {}), memory_streamed=mem.get("streamed"),
                   memory_produced=mem.get("produced"), memory_kind=mem.get("kind", {}),
                   latency_s=t.get("latency_s", {}),
                   shapes={k: t[k] for k in ("matmul",) + SHAPE_KINDS if t.get(k)},
                   kernel=t.get("kernel", {}), op=t.get("op", {}), framework_s=t.get("framework_s"),
                   framework_share=t.get("framework_share"), frontend=t.get("frontend", {}),
                   provenance=t.get("provenance", {}))

    def shape(self, kind: str) -> Mapping[str, dict]:
        """dtype -> GEMM shape table of ``kind`` (matmul, conv, attention); empty where none."""
        return self.shapes.get(kind, {})

    def table(self) -> dict:
        """The ``[calibration]`` TOML table."""
        mem = {k: v for k, v in (("streamed", self.memory_streamed), ("produced", self.memory_produced))
               if v is not None}
        if self.memory_kind:
            mem["kind"] = dict(self.memory_kind)
        out: dict = {"schema": SCHEMA, "source": self.source, "fitted": list(self.fitted),
                     "held_out": list(self.held_out)}
        for key, value in (("compute", dict(self.compute)), ("memory", mem), ("latency_s", dict(self.latency_s)),
                           *((k, dict(v)) for k, v in self.shapes.items()), ("kernel", dict(self.kernel)),
                           ("op", dict(self.op)), ("framework_s", self.framework_s),
                           ("framework_share", self.framework_share), ("frontend", dict(self.frontend)),
                           ("provenance", dict(self.provenance))):
            if value not in (None, {}):
                out[key] = value
        return out


def with_calibration(hw, cal: "dict | Calibration"):
    """``hw`` using ``cal`` (a table, checked, or a Calibration) for every prediction."""
    if not isinstance(cal, Calibration):
        cal = Calibration.of(check(cal, "calibration"))
    return replace(hw, calibration=cal)


def for_training(hw):
    """``hw`` without the terms fitted on measured inference kernels (``[calibration.provenance]``: the GEMM
    dtypes and attention kernel classes of ``ironlaw calibrate --kernels``). Those tables time TensorRT-LLM's
    serving kernels — an FP8 GEMM quantizing its own activations each call, attention per serving phase — not
    Transformer Engine's training kernels, whose casts the training graph counts apart; a training step keeps
    the device's other terms (datasheet, probe or published fits)."""
    cal = hw.calibration
    if cal is None or not cal.provenance:
        return hw
    t = cal.table()
    gemm = {dt: p for dt, p in t.get("matmul", {}).items() if f"gemm {dt}" not in cal.provenance}
    kern = {k: p for k, p in t.get("kernel", {}).items() if not (k.startswith("attention_") and "eta_max" in p)}
    rest = {k: v for k, v in t.items() if k not in ("matmul", "kernel", "provenance")}
    rest.update({k: v for k, v in (("matmul", gemm), ("kernel", kern)) if v})
    keep = any(rest.get(k) for k in ("matmul", "kernel", "compute", "memory", "latency_s", "conv", "attention",
                                     "op", "frontend")) or rest.get("framework_s") is not None
    return replace(hw, calibration=Calibration.of(rest) if keep else None)


def without_calibration(hw):
    """``hw`` with its [calibration] table removed (the flat [efficiency] defaults)."""
    return replace(hw, calibration=None)


# ---------------------------------------------------------------- checking a hand-edited table

def check(cal: object, where: str) -> dict:
    """Refuse a [calibration] table that is not what ironlaw writes, naming the field."""
    if not isinstance(cal, dict):
        raise IronlawError(f"{where}: expected a table")
    for key in cal:
        if key not in TOP_FIELDS:
            raise unknown(f"field in {where}", key, TOP_FIELDS)
    if cal.get("schema") != SCHEMA:
        raise IronlawError(f"{where}.schema: must be '{SCHEMA}', got {cal.get('schema')!r}")
    src = cal.get("source")
    if not isinstance(src, str) or not src.startswith(("measured", "derived:")):
        raise IronlawError(f"{where}.source: must start with 'measured' or 'derived:' and say what was fitted")
    for key in ("fitted", "held_out"):
        v = cal.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise IronlawError(f"{where}.{key}: expected a list of strings")
    if not cal.get("fitted"):
        raise IronlawError(f"{where}.fitted: must list what the calibration was fitted on")
    _check_kinds(cal, where)
    _check_shape_tables(cal, where)
    _check_op_tables(cal, where)
    _check_framework(cal, where)
    _check_provenance(cal, where)
    for name in _table(cal, "frontend", where):
        if name not in FRONTENDS:
            raise unknown(f"front end in {where}.frontend", name, FRONTENDS)
        p = _table(cal["frontend"], name, f"{where}.frontend")
        w = f"{where}.frontend.{name}"
        for key in p:
            if key not in FRAMEWORK_FIELDS:
                raise unknown(f"field in {w}", key, FRAMEWORK_FIELDS)
        _check_framework(p, w)
    return cal


def _check_kinds(cal: dict, where: str) -> None:
    """[calibration.compute], [calibration.memory] (and .kind), [calibration.latency_s]."""
    comp = _table(cal, "compute", where)
    for kind in comp:
        if kind not in KINDS:
            raise unknown(f"op kind in {where}.compute", kind, KINDS)
        _num(comp, kind, f"{where}.compute", 1.0 + 1e-9)
    mem = _table(cal, "memory", where)
    for key in mem:
        if key not in ("streamed", "produced", "kind"):
            raise unknown(f"field in {where}.memory", key, ("streamed", "produced", "kind"))
        if key != "kind":
            _num(mem, key, f"{where}.memory", MAX_MEMORY_ETA)
    mk = _table(mem, "kind", f"{where}.memory")
    for kind in mk:
        if kind not in KINDS:
            raise unknown(f"op kind in {where}.memory.kind", kind, KINDS)
        _num(mk, kind, f"{where}.memory.kind", MAX_MEMORY_ETA)
    lat = _table(cal, "latency_s", where)
    for kind in lat:
        if kind not in KINDS + ("default",):
            raise unknown(f"op kind in {where}.latency_s", kind, KINDS + ("default",))
        _num(lat, kind, f"{where}.latency_s", MAX_LATENCY_S)


def _check_shape_tables(cal: dict, where: str) -> None:
    """[calibration.matmul.<dtype>], [calibration.conv.<dtype>], [calibration.attention.<dtype>]."""
    for kind in ("matmul",) + SHAPE_KINDS:
        for dt in _table(cal, kind, where):
            if dt not in DTYPE_BYTES:
                raise unknown(f"dtype in {where}.{kind}", dt, DTYPE_BYTES)
            _check_shape_table(_table(cal[kind], dt, f"{where}.{kind}"), f"{where}.{kind}.{dt}")


def _check_shape_table(p: dict, w: str) -> None:
    """One GEMM shape table (a dtype's under matmul, conv, attention, or a kernel class's of its own)."""
    for key in p:
        if key not in SHAPE_FIELDS:
            raise unknown(f"field in {w}", key, SHAPE_FIELDS)
    _num(p, "eta_max", w, 1.0 + 1e-9, required=True)
    for key in ("m_half", "nk_half"):
        _num(p, key, w, 1e9, required=True, zero_ok=True)
    for key in ("m_half_nt", "k_half"):
        _num(p, key, w, 1e9, zero_ok=True)
    _num(p, "m_tile", w, 4096)
    _num(p, "gemv_eta", w, 1.0 + 1e-9)
    for key in ("gemv_m", "gemv_m_kn"):
        _num(p, key, w, 4096)
    _num(p, "serial", w, 1.0, zero_ok=True)
    for key in ("streamed", "streamed_kn"):
        _num(p, key, w, MAX_MEMORY_ETA)
    _num(p, "streamed_half", w, 1e12, zero_ok=True)
    if "streamed_half" in p and "streamed" not in p:
        raise IronlawError(f"{w}: streamed_half needs the streamed η it scales")
    _num(p, "pack", w, 8.0, zero_ok=True)
    for key in ("gemv_pass", "gemv_pass_kn"):
        _num(p, key, w, GEMV_PASS_MAX, zero_ok=True)
    _num(p, "latency_s", w, MAX_LATENCY_S, zero_ok=True)
    _num(p, "key_s", w, KEY_S_MAX, zero_ok=True)
    _num(p, "unit_s", w, UNIT_S_MAX, zero_ok=True)
    _num(p, "floor_s", w, MAX_LATENCY_S, zero_ok=True)
    _num(p, "floor_share", w, 1.0, zero_ok=True)
    if "floor_share" in p and "floor_s" not in p:
        raise IronlawError(f"{w}: floor_share needs the floor_s it shares")
    _num(p, "swap_s", w, SWAP_S_MAX, zero_ok=True)
    _num(p, "write_s", w, WRITE_S_MAX, zero_ok=True)
    _num(p, "cta_s", w, CTA_S_MAX, zero_ok=True)
    _num(p, "key_ctas", w, KEY_CTAS_MAX)
    if "key_ctas" in p and "key_s" not in p:
        raise IronlawError(f"{w}: key_ctas is a walking class's CTAs per grid unit: it needs key_s")
    if "cta_s" in p and "key_ctas" not in p:
        raise IronlawError(f"{w}: cta_s is a walking class's seconds per CTA in waves: it needs key_ctas")
    for key, upper in (("expert_s", EXPERT_S_MAX), ("touched_s", TOUCHED_S_MAX), ("unaligned_k", UNALIGNED_K_MAX)):
        _num(p, key, w, upper, zero_ok=True)
    if "m_block" in p and p["m_block"] not in M_BLOCKS:
        raise IronlawError(f"{w}.m_block: must be one of {', '.join(M_BLOCKS)}, got {p['m_block']!r}")
    if "split_kv" in p and p["split_kv"] not in SPLIT_KV:
        raise IronlawError(f"{w}.split_kv: must be one of {', '.join(SPLIT_KV)}, got {p['split_kv']!r}")
    _num(p, "split_s", w, SPLIT_S_MAX, zero_ok=True)
    if "split_s" in p and "split_kv" not in p:
        raise IronlawError(f"{w}: split_s is a split-KV class's cost of splitting: it needs split_kv")
    _num(p, "merge_s", w, MERGE_S_MAX, zero_ok=True)
    if "merge_s" in p and p.get("split_kv") not in MERGE_KINDS:
        raise IronlawError(f"{w}: merge_s is a split XQA or FlashAttention launch's merge per block: it needs "
                           f"split_kv = {' or '.join(repr(x) for x in MERGE_KINDS)}")
    for key in ROW_FIELDS:
        _row_table(p, key, w)
    _check_grid(p, w)
    _check_variant(p, w)
    if "math" in p and (not isinstance(p["math"], str) or p["math"] not in DTYPE_BYTES):
        raise IronlawError(f"{w}.math: must be a dtype ({', '.join(DTYPE_BYTES)}), got {p['math']!r}")
    if "math" in p and "key_ctas" in p:
        raise IronlawError(f"{w}: math and key_ctas exclude each other (a walk's bound is at the op's own peak)")
    if "math_head_dims" in p:
        _check_head_dims(p, w)
    if "query_tiles" in p:
        _check_query_tiles(p["query_tiles"], w)
    if "causal_blocks" in p:
        _check_causal_blocks(p, w)
    _check_launch_and_module(p, w)
    if "unit_launch" in p and (p["unit_launch"] not in UNIT_LAUNCHES or "unit_s" not in p):
        raise IronlawError(f"{w}.unit_launch: must be one of {', '.join(UNIT_LAUNCHES)}, with the unit_s it pays, got "
                           f"{p['unit_launch']!r}")
    if "vector" in p and p["vector"] not in VECTOR_MODES:
        raise IronlawError(f"{w}.vector: must be one of {', '.join(VECTOR_MODES)}, got {p['vector']!r}")
    if any(f in p for f in ("latency_head_dims", "latency_head_dim_s", "latency_groups", "latency_units_max",
                            "latency_keys_max", "latency_tile_keys", "latency_tile_power")):
        _check_latency_head_dims(p, w)
    if "vector_head_dims" in p:
        _check_head_dims(p, w, "vector_head_dims", "vector")
    if any(f in p for f in ("tile_head_dims", "tile_head_dim_s", "tile_rows", "tile_swap")):
        _check_tile_head_dims(p, w)
    if "key_blocks" in p and p["key_blocks"] not in KEY_BLOCK_KERNELS:
        raise IronlawError(f"{w}.key_blocks: must be one of {', '.join(KEY_BLOCK_KERNELS)}, got {p['key_blocks']!r}")


def _check_launch_and_module(p: dict, w: str) -> None:
    """A prefill class's launch costs (``_check_prefill_launch``) and an MLA module class's ``gemms``: "apart" only
    (its table the module less its projections, ``kernelfit.forms.module_form``)."""
    _check_prefill_launch(p, w)
    if "gemms" in p and p["gemms"] != "apart":
        raise IronlawError(f"{w}.gemms: must be 'apart' (the module class less its projections), got {p['gemms']!r}")


def _check_prefill_launch(p: dict, w: str) -> None:
    """A prefill class's launch costs: ``tile_s`` (per wave of its ``query_tiles``, which it needs) and FlashInfer's
    plan's ``plan_split_s`` with its ``plan_head_dims`` (a non-empty list of whole numbers > 0) and ``plan_merge_s``."""
    _num(p, "tile_s", w, TILE_S_MAX, zero_ok=True)
    if "tile_s" in p and "query_tiles" not in p:
        raise IronlawError(f"{w}: tile_s is a query-tiled launch's cost per wave: it needs query_tiles")
    _num(p, "plan_split_s", w, PLAN_SPLIT_S_MAX, zero_ok=True)
    _num(p, "plan_merge_s", w, PLAN_MERGE_S_MAX, zero_ok=True)
    if "plan_merge_s" in p and "plan_split_s" not in p:
        raise IronlawError(f"{w}: plan_merge_s is FlashInfer's split prefill's merge per query row: it needs plan_split_s")
    if ("plan_split_s" in p) != ("plan_head_dims" in p) or "plan_head_dims" in p and (
            not isinstance(p["plan_head_dims"], list) or not p["plan_head_dims"] or not all(
                isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in p["plan_head_dims"])):
        raise IronlawError(f"{w}: plan_split_s and plan_head_dims go together, the seconds FlashInfer's prefill plan "
                           f"adds where it splits and the head dims it runs (a list of whole numbers > 0)")


def _check_query_tiles(tiles, w: str) -> None:
    """``query_tiles``: a non-empty list of [head dim, BLOCK_M, CTAs per SM], each a whole number > 0."""
    ok = isinstance(tiles, list) and tiles and all(
        isinstance(x, list) and len(x) == 3 and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in x)
        for x in tiles)
    if not ok:
        raise IronlawError(f"{w}.query_tiles: must be a non-empty list of [head dim, BLOCK_M, CTAs per SM] whole "
                           f"numbers > 0, "
                           f"got {tiles!r}")


def _check_causal_blocks(p: dict, w: str) -> None:
    """``causal_blocks``: a non-empty list of [head dim, BLOCK_N], whole numbers > 0, at head dims the class's
    ``query_tiles`` name (their BLOCK_M is the tile's rows)."""
    blocks, tiled = p["causal_blocks"], {x[0] for x in p.get("query_tiles", []) if isinstance(x, list) and x}
    ok = isinstance(blocks, list) and blocks and all(
        isinstance(x, list) and len(x) == 2 and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in x)
        for x in blocks)
    if not ok or not {x[0] for x in blocks} <= tiled:
        raise IronlawError(f"{w}.causal_blocks: must be a non-empty list of [head dim, BLOCK_N] whole numbers > 0 at "
                           f"head dims its query_tiles name, got {blocks!r}")


def _check_head_dims(p: dict, w: str, field: str = "math_head_dims", needs: str = "math") -> None:
    """``math_head_dims`` / ``vector_head_dims``: a non-empty list of positive head dims, on a class that names its
    ``math`` / ``vector`` (the head dims the class computes in its math dtype at / runs its softmax beside its
    products at)."""
    if needs not in p:
        raise IronlawError(f"{w}: {field} are the head dims a {needs} class applies its {needs} at: it needs {needs}")
    _head_dim_list(p[field], w, field)


def _is_number(x) -> bool:
    """A TOML number: an int or a float, not a bool."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _head_dim_list(dims, w: str, field: str) -> None:
    """``field`` (``dims``): a non-empty list of head dims > 0."""
    if not isinstance(dims, list) or not dims or not all(_is_number(d) and d > 0 for d in dims):
        raise IronlawError(f"{w}.{field}: must be a non-empty list of head dims > 0, got {dims!r}")


def _seconds_per_head_dim(secs, dims: list, w: str, field: str, most: float, of: str) -> None:
    """``field`` (``secs``): one number of seconds in [0, ``most``] per head dim of ``of`` (``dims``)."""
    if not isinstance(secs, list) or len(secs) != len(dims) or not all(
            _is_number(x) and 0.0 <= x <= most for x in secs):
        raise IronlawError(f"{w}.{field}: must be one number of seconds in [0, {most:g}] per head dim of {of}, "
                           f"got {secs!r}")


def _check_latency_head_dims(p: dict, w: str) -> None:
    """``latency_head_dims`` (head dims > 0) and ``latency_head_dim_s`` (seconds, each ≥ 0 and at most
    ``LATENCY_HEAD_DIM_S_MAX``) come together, one second count per head dim."""
    dims, secs = p.get("latency_head_dims"), p.get("latency_head_dim_s")
    if dims is None or secs is None:
        raise IronlawError(f"{w}: latency_head_dims and latency_head_dim_s come together (the head dims and the seconds "
                           f"each adds to the fixed latency)")
    _head_dim_list(dims, w, "latency_head_dims")
    _seconds_per_head_dim(secs, dims, w, "latency_head_dim_s", LATENCY_HEAD_DIM_S_MAX, "latency_head_dims")
    groups = p.get("latency_groups")
    if groups is not None and (not isinstance(groups, list) or len(groups) != len(dims) or not all(
            _is_number(g) and g > 0 for g in groups)):
        raise IronlawError(f"{w}.latency_groups: must be one number of query rows per KV head > 0 per head dim of "
                           f"latency_head_dims, got {groups!r}")
    for field, what in (("latency_units_max", "sequences × KV heads"), ("latency_keys_max", "keys per query"),
                        ("latency_tile_keys", "key elements per KV tile")):
        most = p.get(field)
        if most is not None and not (_is_number(most) and most >= 1):
            raise IronlawError(f"{w}.{field}: must be a number of {what} ≥ 1, got {most!r}")
    power = p.get("latency_tile_power")
    if ("latency_tile_keys" in p) != (power is not None) or \
            power is not None and not (_is_number(power) and 0.0 <= power <= LATENCY_TILE_POWER_MAX):
        raise IronlawError(f"{w}: latency_tile_keys and latency_tile_power come together, the power in "
                           f"[0, {LATENCY_TILE_POWER_MAX:g}]; got {p.get('latency_tile_keys')!r}, {power!r}")


def _check_tile_head_dims(p: dict, w: str) -> None:
    """``tile_head_dims`` (head dims > 0), ``tile_head_dim_s`` (seconds per CTA, each ≥ 0 and at most
    ``TILE_HEAD_DIM_S_MAX``) and ``tile_rows`` (query rows per CTA, whole numbers ≥ 0) come together, one of each per
    head dim; ``tile_swap``, with them, is true."""
    dims, secs, rows = p.get("tile_head_dims"), p.get("tile_head_dim_s"), p.get("tile_rows")
    if dims is None or secs is None or rows is None:
        raise IronlawError(f"{w}: tile_head_dims, tile_head_dim_s and tile_rows come together (the head dims, the "
                           f"seconds per CTA at each and each CTA's query rows)")
    _head_dim_list(dims, w, "tile_head_dims")
    _seconds_per_head_dim(secs, dims, w, "tile_head_dim_s", TILE_HEAD_DIM_S_MAX, "tile_head_dims")
    if not isinstance(rows, list) or len(rows) != len(dims) or not all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in rows):
        raise IronlawError(f"{w}.tile_rows: must be one whole number of query rows ≥ 0 per head dim of "
                           f"tile_head_dims, got {rows!r}")
    if "tile_swap" in p and p["tile_swap"] is not True:
        raise IronlawError(f"{w}.tile_swap: must be true where given (FlashAttention 2's grouped-query swap at one "
                           f"query row), got {p['tile_swap']!r}")


def _check_variant(p: dict, w: str) -> None:
    """``variant`` (a kernel class's name), ``variant_dtype`` (the dtype its kernel computes in) and one rule for
    the ops that run it come together (``gemmshape.SHAPE_FIELDS``, ``VARIANT_RULES``): ``variant_m``, the M (query
    rows per KV head) they run it at, a whole number > 0; ``variant_m_above``, the M above which they do, a whole
    number ≥ 0; or ``variant_blocks_below``, the XQA CTA count below which they do, a number > 0."""
    rules = [k for k in VARIANT_RULES if k in p]
    given = [k for k in ("variant", "variant_dtype") if k in p] + rules
    if given and (len(given) != 3 or len(rules) != 1):
        raise IronlawError(f"{w}: variant, variant_dtype and one of {', '.join(VARIANT_RULES)} come together (the "
                           f"class, the dtype it computes in and which ops run it), got {', '.join(given)}")
    if "variant" not in p:
        return
    if p["variant_dtype"] not in DTYPE_BYTES:
        raise unknown(f"{w}.variant_dtype", str(p["variant_dtype"]), DTYPE_BYTES)
    if not isinstance(p["variant"], str) or not p["variant"]:
        raise IronlawError(f"{w}.variant: must be a kernel class's name, got {p['variant']!r}")
    rule, m = rules[0], p[rules[0]]
    whole = not isinstance(m, bool) and isinstance(m, int)
    if rule == "variant_m" and (not whole or m <= 0):
        raise IronlawError(f"{w}.variant_m: must be a whole number > 0, got {m!r}")
    if rule == "variant_m_above" and (not whole or m < 0):
        raise IronlawError(f"{w}.variant_m_above: must be a whole number ≥ 0, got {m!r}")
    if rule == "variant_blocks_below" and (isinstance(m, bool) or not isinstance(m, (int, float))
                                           or not math.isfinite(m) or m <= 0):
        raise IronlawError(f"{w}.variant_blocks_below: must be a number > 0, got {m!r}")


_GRID_WORD = rf"(?:-?(?:{'|'.join(str(x) for x in range(GRID_LOG_MAX // 100))})?\d{{1,2}}|-?{GRID_LOG_MAX // 100}00|0\*\d+)"
_GRID_WORD_RE = re.compile(_GRID_WORD)
_GRID_RUN = re.compile(r"0\*(\d+)")
_GRID_NUMBERS = frozenset(str(x) for x in range(-GRID_LOG_MAX, GRID_LOG_MAX + 1))   # as grid_text writes them


def grid_log_nodes(text: object) -> int | None:
    """The grid nodes a ``grid_log`` string holds (``0*n`` counts n), or None where it is not ``_GRID_WORD``s
    joined by single spaces. Only the distinct words grid_text would not write as a plain number are matched
    (its ``0*n`` runs, a hand-written "007"): a catalog grid's ~1,000 words hold a few dozen such."""
    if not isinstance(text, str):
        return None
    words = text.split(" ")
    if not all(_GRID_WORD_RE.fullmatch(w) for w in set(words) - _GRID_NUMBERS):
        return None
    return len(words) + sum(int(r) - 1 for r in _GRID_RUN.findall(text))


def _check_grid(p: dict, w: str) -> None:
    """``grid_nodes`` (GRID_AXES increasing lists of numbers > 0) and ``grid_log`` (one whole number per node, |x| ≤
    GRID_LOG_MAX, space-separated, ``0*n`` for n zeros) come together."""
    if "grid_of" in p and not isinstance(p["grid_of"], str):
        raise IronlawError(f"{w}.grid_of: must be a kernel class's name, got {p['grid_of']!r}")
    if "grid_keys" in p and p["grid_keys"] not in GRID_KEYS:
        raise IronlawError(f"{w}.grid_keys: must be one of {', '.join(GRID_KEYS)}, got {p['grid_keys']!r}")
    if "mmha_threads" in p and (p.get("split_kv") != "mmha" or p["mmha_threads"] not in MMHA_THREADS
                                or isinstance(p["mmha_threads"], bool)):
        raise IronlawError(f"{w}.mmha_threads: an MMHA class's (split_kv = \"mmha\") threads per block, one of "
                           f"{', '.join(map(str, MMHA_THREADS))}; got {p['mmha_threads']!r}")
    if "mmha_occupancy" in p and (p.get("split_kv") != "mmha" or "mmha_threads" in p
                                  or p["mmha_occupancy"] not in MMHA_OCCUPANCY or isinstance(p["mmha_occupancy"], bool)):
        raise IronlawError(f"{w}.mmha_occupancy: an MMHA class's (split_kv = \"mmha\", no mmha_threads) 256-thread "
                           f"CTAs per SM, one of {', '.join(map(str, MMHA_OCCUPANCY))}; got {p['mmha_occupancy']!r}")
    if "chunk_occupancy" in p and (p.get("split_kv") != "chunks" or p["chunk_occupancy"] not in CHUNK_OCCUPANCY
                                   or isinstance(p["chunk_occupancy"], bool)):
        raise IronlawError(f"{w}.chunk_occupancy: a chunked decode class's (split_kv = \"chunks\") CTAs per SM, one "
                           f"of {', '.join(map(str, CHUNK_OCCUPANCY))}; got {p['chunk_occupancy']!r}")
    if p.get("split_kv") == "chunks" and "chunk_occupancy" not in p:
        raise IronlawError(f"{w}: a chunked decode class (split_kv = \"chunks\") needs its chunk_occupancy")
    if "chunk_plan" in p and (p.get("split_kv") != "chunks" or p["chunk_plan"] not in CHUNK_PLANS
                              or p.get("chunk_occupancy") != PLAN_BLOCKS_PER_SM):
        raise IronlawError(f"{w}.chunk_plan: a chunked decode class's (split_kv = \"chunks\") plan, one of "
                           f"{', '.join(CHUNK_PLANS)}, its grid {PLAN_BLOCKS_PER_SM} CTAs per SM "
                           f"(chunk_occupancy); got {p['chunk_plan']!r}")
    if "chunk_head_dims" in p and (p.get("split_kv") != "chunks" or not isinstance(p["chunk_head_dims"], list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in p["chunk_head_dims"])):
        raise IronlawError(f"{w}.chunk_head_dims: a chunked decode class's (split_kv = \"chunks\") head dims, a list "
                           f"of whole numbers > 0; got {p['chunk_head_dims']!r}")
    if "grid_nodes" not in p and "grid_log" not in p:
        return
    nodes, text = p.get("grid_nodes"), p.get("grid_log")
    num = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0  # noqa: E731
    ok = isinstance(nodes, list) and len(nodes) == GRID_AXES and all(
        isinstance(a, list) and a and all(map(num, a)) and all(x < y for x, y in zip(a, a[1:])) for a in nodes)
    if not ok:
        raise IronlawError(f"{w}.grid_nodes: must be {GRID_AXES} lists (M, N, K, units) of increasing numbers > 0, "
                           f"got {nodes!r}")
    size = math.prod(len(a) for a in nodes)
    if grid_log_nodes(text) != size:
        raise IronlawError(f"{w}.grid_log: must be a string of {size} whole numbers (one per grid node, |x| ≤ "
                           f"{GRID_LOG_MAX}; 0*n for n zeros), space-separated")


def _check_op_tables(cal: dict, where: str) -> None:
    """[calibration.kernel."<kernel>"] and [calibration.op."<op name>"]."""
    for table in ("kernel", "op"):
        for name in _table(cal, table, where):
            w = f"{where}.{table}.{name}"
            p = _table(cal[table], name, f"{where}.{table}")
            if not p:
                raise IronlawError(f"{w}: empty; give at least one of {', '.join(OP_FIELDS)}")
            if table == "kernel" and "eta_max" in p:       # a kernel class with a GEMM shape table of its own
                _check_shape_table(p, w)
                src = cal["kernel"].get(p.get("grid_of", name), {})
                if "grid_of" in p and ("grid_log" not in src or "grid_log" in p):
                    raise IronlawError(f"{w}.grid_of: must name another kernel class with a grid of its own "
                                       f"(and the class none), got {p['grid_of']!r}")
                if "variant" in p and (p["variant"] == name or "eta_max" not in cal["kernel"].get(p["variant"], {})):
                    raise IronlawError(f"{w}.variant: must name another kernel class with a shape table, "
                                       f"got {p['variant']!r}")
                continue
            fields = KERNEL_OP_FIELDS if table == "kernel" else OP_FIELDS
            for key in p:
                if key not in fields:
                    raise unknown(f"field in {w}", key, fields)
            if "pairs" in p and p["pairs"] not in PAIR_KERNELS:
                raise IronlawError(f"{w}.pairs: must be one of {', '.join(PAIR_KERNELS)}, got {p['pairs']!r}")
            _num(p, "token_s", w, TOKEN_S_MAX, zero_ok=True)
            _num(p, "compute", w, 1.0 + 1e-9)
            _num(p, "memory", w, MAX_MEMORY_ETA)
            _num(p, "latency_s", w, MAX_LATENCY_S, zero_ok=True)


def _check_provenance(cal: dict, where: str) -> None:
    """[calibration.provenance."<group>"]: table, version, license, rows_fitted, rows_held_out, date; a GEMM class
    whose form was chosen, ``FORM_FIELDS`` too; one fitted on measured GEMM kernels, ``OPERANDS_FIELDS``; one carried
    from another GPU's fit, ``CARRIED_FIELDS``."""
    for name in _table(cal, "provenance", where):
        p = _table(cal["provenance"], name, f"{where}.provenance")
        w = f"{where}.provenance.{name}"
        for key in p:
            if key not in PROVENANCE_FIELDS and key not in {**FORM_FIELDS, **OPERANDS_FIELDS, **CARRIED_FIELDS}:
                raise unknown(f"field in {w}", key, {**PROVENANCE_FIELDS, **FORM_FIELDS, **OPERANDS_FIELDS,
                                                     **CARRIED_FIELDS})
        for key in set(p) & (set(FORM_FIELDS) | set(OPERANDS_FIELDS) | set(CARRIED_FIELDS)):
            typ = {**FORM_FIELDS, **OPERANDS_FIELDS, **CARRIED_FIELDS}[key]
            if not isinstance(p[key], (int, float) if typ is float else typ) or isinstance(p[key], bool):
                raise IronlawError(f"{w}.{key}: expected a {'number' if typ is float else 'string'}, got {p[key]!r}")
        if p.get("operands_from", OPERANDS_FROM[0]) not in OPERANDS_FROM:
            raise IronlawError(f"{w}.operands_from: must be one of {', '.join(OPERANDS_FROM)}, got {p['operands_from']!r}")
        for key, typ in PROVENANCE_FIELDS.items():
            ok = isinstance(p.get(key), typ) and not isinstance(p.get(key), bool)
            if not ok or (typ is int and p[key] < 0):
                raise IronlawError(f"{w}.{key}: expected a{'n' if typ is int else ''} "
                                   f"{'whole number >= 0' if typ is int else 'string'}, got {p.get(key)!r}")


def _check_framework(t: dict, where: str) -> None:
    _num(t, "framework_s", where, MAX_LATENCY_S, zero_ok=True)
    _num(t, "framework_share", where, 1.0, zero_ok=True)


def _table(parent: dict, key: str, where: str) -> dict:
    v = parent.get(key, {})
    if not isinstance(v, dict):
        raise IronlawError(f"{where}.{key}: expected a table")
    return v


def _row_table(t: dict, key: str, where: str) -> None:
    """``key`` absent, or [[length, factor], …]: lengths ≥ 1 element, all different, factors in (0, GEMV_ROW_MAX]."""
    if key not in t:
        return
    x = t[key]
    num = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)  # noqa: E731
    pairs = isinstance(x, list) and len(x) >= 2 and all(isinstance(q, list) and len(q) == 2 and all(map(num, q))
                                                       for q in x)
    if not pairs or any(q[0] < 1 or not 0 < q[1] <= GEMV_ROW_MAX for q in x) or len({q[0] for q in x}) < len(x):
        raise IronlawError(f"{where}.{key}: must be a list of at least two [row length ≥ 1, factor in (0, "
                           f"{GEMV_ROW_MAX:g}]] pairs with different lengths, got {x!r}")


def _num(t: dict, key: str, where: str, upper: float, required: bool = False, zero_ok: bool = False) -> None:
    if key not in t:
        if required:
            raise IronlawError(f"{where}: missing required field '{key}'")
        return
    x = t[key]
    ok = isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and \
        (x >= 0 if zero_ok else x > 0) and x <= upper
    if not ok:
        lo = ">= 0" if zero_ok else "> 0"
        raise IronlawError(f"{where}.{key}: must be a number {lo} and at most {upper:g}, got {x!r}")
