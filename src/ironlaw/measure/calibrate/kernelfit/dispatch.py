"""Classes tied to other classes' kernels: the rows TensorRT-LLM 1.0's decode dispatch sends to another
class's kernel (``dispatch_rule``, ``dispatched``, ``with_dispatched``), the variants a fitted class names
(``linked_variants``, ``linked_dispatch``), and an FP8 model's decode attention and MLA prefill classes derived from
the bf16-math class's fit (``derived_generation``).
"""
from __future__ import annotations

import numpy as np

from ....core.gemmshape import XQA_MLA_HEADS, attention_kernel, attention_kernel_parts
from .ops import attention_op
from .rows import groups, sorted_rows, split
from .rules import DISPATCH, DISPATCH_BEFORE, XQA_MIN_BLOCK_FACTOR
from .vocabulary import Group, REGIMES, release


def linked_variants(cal: dict, gs: list[Group]) -> None:
    """Each XQA MLA class fitted in ``cal`` named, with its M (``XQA_MLA_HEADS``), as the ``variant`` of the class
    its rows were taken from, where that class was fitted too (``efficiency.with_variants``)."""
    kern, by_name = cal.get("kernel", {}), {g.name: g for g in gs}
    for g in gs:
        parent = by_name.get(g.name.rsplit(f", {REGIMES['_mla_xqa']}", 1)[0]) if g.key[1].endswith("_mla_xqa") else None
        if parent is not None and parent.key[1] in kern and g.key[1] in kern:
            kern[parent.key[1]] = {**kern[parent.key[1]], "variant": g.key[1], "variant_m": XQA_MLA_HEADS,
                                   "variant_dtype": g.dtype}


def dispatch_rule(g: Group, hw) -> dict | None:
    """The ``variant`` fields (``gemmshape.VARIANT_RULES``) of ``g``'s class where TensorRT-LLM's decode dispatch
    as ``g``'s table times it sends some of its rows to another class's kernel (``DISPATCH``: the 1.0 line's
    generation attention on H100, H200, B200 and GB200); None for any other class."""
    rule = DISPATCH.get(g.table.gpu)
    if (rule is None or g.op != "generation_attention" or g.key[0] != "kernel" or g.table.framework != "trtllm"
            or release(g.table.version) >= DISPATCH_BEFORE):
        return None
    regime, variant, field, value = rule
    if (attention_kernel_parts(g.key[1]) or ("", None))[1] != regime:
        return None
    if value is None:
        value = float(getattr(hw, "sms", 0) or 0) / XQA_MIN_BLOCK_FACTOR
        if value <= 0:
            return None
    return {"variant": g.key[1] + variant, "variant_dtype": g.dtype or g.key[1].split("_")[2], field: value}


def dispatched(g: Group, rows, rule: dict) -> np.ndarray:
    """Which of ``g``'s ``rows`` run the kernel of ``rule``'s ``variant`` (as ``efficiency.runs_variant`` decides
    on their ops)."""
    from ....core.gemmshape import grid_units, xqa_blocks
    out = []
    for r in rows.itertuples():
        op = attention_op(r, g)
        m, n, k = (float(np.max(x)) for x in op.attrs["mnk"])
        if "variant_m_above" in rule:
            out.append(m > rule["variant_m_above"])
        else:
            units = grid_units(float(np.max(op.flops)), m, n, k)
            out.append(float(xqa_blocks(units, n)) < rule["variant_blocks_below"])
    return np.array(out, bool)


def with_dispatched(g: Group, rows, hw):
    """``rows`` (``g``'s fit rows) with the fit rows of the class of ``g``'s table whose dispatch sends them by their
    M to ``g``'s kernel (``variant_m_above``: B200's and GB200's 24 and 32 heads per KV head, on the over-32 class),
    marked ``as_class`` (``attention_op`` builds them as ``g``'s ops): that kernel's rows, fitted with its own. The
    other class's split is its own, so none of its held-out rows is fitted."""
    import pandas as pd
    rule = DISPATCH.get(g.table.gpu)
    if rule is None or rule[2] != "variant_m_above" or g.op != "generation_attention" or g.key[0] != "kernel" \
            or not g.key[1].endswith(rule[1]) or g.table.framework != "trtllm" \
            or release(g.table.version) >= DISPATCH_BEFORE:
        return rows
    parent = g.key[1][: -len(rule[1])]
    for half in (None, "bf16"):
        for p in groups([g.table], float16_as=half):
            own = dispatch_rule(p, hw) if p.key == ("kernel", parent) else None
            if own and own["variant"] == g.key[1]:
                fit = split(p.rows, p.op)[0]
                moved = fit[dispatched(p, fit, own)].assign(as_class=True)
                return sorted_rows(pd.concat([rows.assign(as_class=False), moved]), g.op)
    return rows


def linked_dispatch(hw, cal: dict, gs: list[Group]) -> None:
    """Each class fitted in ``cal`` whose table's dispatch sends some rows to another class's kernel
    (``dispatch_rule``) named with that class as its ``variant``, where that class was fitted too
    (``efficiency.with_variants``)."""
    kern = cal.get("kernel", {})
    for g in gs:
        rule = dispatch_rule(g, hw)
        if rule and g.key[1] in kern and rule["variant"] in kern:
            kern[g.key[1]] = {**kern[g.key[1]], **rule}


def derived_generation(hw, cal: dict) -> None:
    """Generation kernels run their math in bf16 on any cache (the tables time them so), and so do MLA's context
    kernels (its tables time bf16 math only): an FP8 model's decode attention, or MLA prefill (math dtype fp8 in
    ironlaw), gets the bf16 math's table, eta_max rescaled from the peak that class computes at (bf16's, or its
    ``math``'s: ``kernel_math``, ``math_of``) to the FP8 peak, its grid by name (``grid_of``)."""
    kern = cal.get("kernel", {})
    pairs = [("decode", kv, r) for kv in ("bf16", "fp8") for r in ("",) + tuple(REGIMES)] + \
        [("prefill", kv, "_mla") for kv in ("bf16", "fp8")]
    for phase, kv, regime in pairs:
        src, dst = (attention_kernel(phase, m, kv, regime) for m in ("bf16", "fp8"))
        if src in kern and dst not in kern and "fp8" in hw.peak_flops and "bf16" in hw.peak_flops:
            own = {k: v for k, v in kern[src].items() if k not in ("grid_nodes", "grid_log", "math")}
            ratio = hw.peak_flops[kern[src].get("math", "bf16")] / hw.peak_flops["fp8"]
            kern[dst] = {**own, "eta_max": float(f"{kern[src]['eta_max'] * ratio:.4g}")}
            if "grid_log" in kern[src]:
                kern[dst]["grid_of"] = src
