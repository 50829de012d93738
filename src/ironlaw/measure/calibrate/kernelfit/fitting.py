"""The fit of every group of one GPU's tables into a checked [calibration] table with its provenance (``fit``)."""
from __future__ import annotations

import datetime as _dt

from ....core.errors import IronlawError
from ....machine.calibration import SCHEMA, check
from ..kerneltable import PROVENANCE, check_gemm_dims
from .classfit import fit_class
from .dispatch import derived_generation, dispatch_rule, dispatched, linked_dispatch, linked_variants, with_dispatched
from .forms import chosen_form, fit_operands, module_form
from .ops import replayed_hw
from .provenance import source
from .rows import despiked, split, split_names
from .rules import MODULE_APART_OPS, holds
from .vocabulary import GEMM_FILLS, Group, LICENSE


def fit(hw, gs: list[Group], date: str | None = None, origin: str = PROVENANCE, license: str = LICENSE,
        grid_steps: dict | None = None, gemm_fill: str = "half") -> dict:
    """A checked [calibration] table of every group's fitted terms, with its provenance: ``origin`` names the
    tables' publisher and version, ``license`` their license; ``grid_steps`` (op or kernel class -> steps)
    replaces ``GRID_STEPS`` for the ops it names, a class's own entry its op's; ``gemm_fill`` the GEMM classes' M
    term (``GEMM_FILLS``)."""
    if not gs:
        raise IronlawError("calibrate --kernels: no GEMM or attention rows to fit")
    if gemm_fill not in GEMM_FILLS:
        raise IronlawError(f"unknown GEMM fill '{gemm_fill}' (known: {', '.join(GEMM_FILLS)})")
    date = date or _dt.date.today().isoformat()
    cal = {"schema": SCHEMA, "source": source(gs, origin), "fitted": [], "held_out": [], "provenance": {}}
    for g in gs:
        if g.op == "gemm":
            check_gemm_dims(g.rows, g.table.path)
        fit_rows, held = split(g.rows, g.op)
        steps, form, replayed = (grid_steps or {}).get(g.key[1], (grid_steps or {}).get(g.op)), {}, ""
        if g.op == "gemm":
            fit_rows = despiked(g, fit_rows)
            g, table = fit_operands(hw, g, fit_rows, steps, "half" if gemm_fill == "auto" else gemm_fill)
            form = {"operands_from": g.operands}
        if g.op == "gemm" and gemm_fill == "auto":
            table, chosen = chosen_form(hw, g, fit_rows, steps)
            form = {**form, **chosen}
        elif g.op != "gemm":
            rule = dispatch_rule(g, hw)           # rows another kernel runs: that class's, not fitted here
            fit_rows = fit_rows[~dispatched(g, fit_rows, rule)] if rule else fit_rows
            fit_rows = with_dispatched(g, fit_rows, hw)    # and those this class's kernel runs for another
            dev = replayed_hw(g, hw)                       # the cache level its rows replay out of, if any
            table = fit_class(dev, g, fit_rows, steps, gemm_fill)
            if holds(MODULE_APART_OPS, (g.table.framework, g.op)):     # whole, or less its projections
                table, form = module_form(dev, g, fit_rows, steps, table)
            replayed = replayed_from(dev, hw)
        cal.setdefault(g.key[0], {})[g.key[1]] = table
        fitted_as, held_as = split_names(g.rows, g.op)
        cal["fitted"].append(f"{g.name} ({fitted_as})")
        cal["held_out"].append(f"{g.name} ({held_as})")
        timed = "".join(f"; {x}" for x in (g.timed, replayed) if x)
        cal["provenance"][g.name] = {"table": f"{g.table.path} ({g.table.device}{timed})",
                                     "version": "; ".join(x for x in (origin, f"{g.table.framework} "
                                                                         f"{g.table.version}".strip()) if x),
                                     "license": license, "rows_fitted": int(len(fit_rows)),
                                     "rows_held_out": int(len(held)), "date": date, **form}
    linked_variants(cal, gs)
    linked_dispatch(hw, cal, gs)
    derived_generation(hw, cal)
    return check(cal, "calibration")


def replayed_from(dev, hw) -> str:
    """The provenance's note of the cache level a class was fitted through where its catalog file states none
    (``ops.replayed_hw``: ``dev`` is not ``hw``); "" where it was not."""
    if dev is hw:
        return ""
    t = dev.memory[0]
    return (f"rows read through the {t.capacity_bytes / 1e6:g} MB L2 they replay out of at {t.bw_Bps / 1e12:g} TB/s "
            f"(kernelfit.rules.REPLAY_L2)")
