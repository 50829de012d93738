"""A GPU's GEMM terms carried from another catalog GPU's fit (``rules.CARRIED_GEMM``): the source's GEMM classes, their
compute rate scaled by the rule's factor, each class's provenance naming where it came from."""
from __future__ import annotations

import copy

from ....core.errors import IronlawError
from .rules import CARRIED_GEMM, CARRIED_GEMM_SOURCE

TOP = ("schema", "fitted", "held_out")       # the source table's fields the carried table keeps beside its classes


def carried_from(gpu: str) -> str:
    """What a carried class's provenance says of its source (``carried_from``): the GPU, the factor and its evidence."""
    src, factor = CARRIED_GEMM[gpu]
    return f"{src}, compute x {factor:.3f} ({CARRIED_GEMM_SOURCE[gpu]}; kernelfit.rules.CARRIED_GEMM)"


def carried(source_table: dict, gpu: str) -> dict:
    """``gpu``'s ``[calibration]`` table from its ``CARRIED_GEMM`` source's (``source_table``): every GEMM class
    (``matmul.<dtype>``) with its ``eta_max`` times the rule's factor, its streamed η, latency and grid as fitted, its
    provenance with ``carried_from``; nothing else of the source's (no attention, MoE or other kernel class)."""
    if gpu not in CARRIED_GEMM:
        raise IronlawError(f"{gpu}: no kernelfit.rules.CARRIED_GEMM entry; it carries no other GPU's GEMM terms")
    src, factor = CARRIED_GEMM[gpu]
    shapes = {dt: copy.deepcopy(t) for dt, t in source_table.get("matmul", {}).items() if "eta_max" in t}
    if not shapes:
        raise IronlawError(f"{src}'s [calibration] holds no GEMM class to carry to {gpu}")
    for dt, t in shapes.items():
        t["eta_max"] = round(t["eta_max"] * factor, 4)
        if t["eta_max"] > 1.0:
            raise IronlawError(f"{gpu} gemm {dt}: {src}'s eta_max times {factor:.3f} passes 1")
    groups = {f"gemm {dt}" for dt in shapes}
    prov = {g: dict(p, carried_from=carried_from(gpu)) for g, p in source_table.get("provenance", {}).items()
            if g in groups}
    out = {k: copy.deepcopy(source_table[k]) for k in TOP if k in source_table}
    out["source"] = (f"derived: {src}'s GEMM terms carried to {gpu} (kernelfit.rules.CARRIED_GEMM: compute x "
                     f"{factor:.3f}, {CARRIED_GEMM_SOURCE[gpu]}); {src}'s: {source_table.get('source', '')}")
    out["fitted"] = [f for f in out.get("fitted", []) if f.split(" (")[0] in groups]
    out["held_out"] = [f for f in out.get("held_out", []) if f.split(" (")[0] in groups]
    out["matmul"] = shapes
    out["provenance"] = prov
    return out
