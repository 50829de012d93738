"""A GEMM class's operands and M-term form chosen by the data: the collector's copies or device memory
(``fit_operands``), and the form that holds out better (``chosen_form``, ``better_form``).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ....machine.calibration import SCHEMA
from ..fitcore import Problem
from .classfit import fit_class
from .collector import COLLECTOR_COPIES
from .ops import observations
from .rows import shape_rows
from .scoring import held_errors
from .vocabulary import AUTO_FORMS, Group, OPERANDS

# the digits each form's held-out |error| is stored with: the 0.1 % every output prints it at, so the kept form's
# stored score prints as the class's held-out line does (a 4-digit 0.2045 printed "20.4%" beside "20.5%" of 0.20454)
FORM_SCORE_DIGITS = 3


def fit_operands(hw, g: Group, rows, steps: tuple | None = None, gemm_fill: str = "half") -> tuple[Group, dict]:
    """A GEMM group timed as its collector ran it (``OPERANDS``), and its table (``fit_class``): fitted with the rows
    whose weights' copies fit ``hw``'s last cache level together read from there (``as_collected``, "copies") and as
    the law prices them unmarked ("memory": from device memory, but a workload whose whole footprint fits half the
    cache), the one with the smaller loss on the fitted rows kept. Without a cache level, or without a known collector
    (``COLLECTOR_COPIES``), "memory"."""
    from ....machine.cache import repeated_limit_bytes
    if repeated_limit_bytes(hw) is None or g.table.framework not in COLLECTOR_COPIES:
        return g, fit_class(hw, g, rows, steps, gemm_fill)
    spaced, best = shape_rows(rows), None
    for how in OPERANDS:
        timed = replace(g, operands=how)
        table = fit_class(hw, timed, rows, steps, gemm_fill)
        cal = {"schema": SCHEMA, "source": "derived: fitting", "fitted": [g.name], g.key[0]: {g.key[1]: table}}
        loss = Problem(hw, observations(timed, spaced, hw), weighting="per_case").loss(cal)
        if best is None or loss < best[0]:
            best = (loss, timed, table)
    return best[1], best[2]


def chosen_form(hw, g: Group, rows, steps: tuple | None = None) -> tuple[dict, dict]:
    """A GEMM group's table in the form of ``AUTO_FORMS`` that holds out better (``better_form``): each fitted on
    ``rows`` (``fit_class``) and scored on the group's held-out rows (``held_out``) over ``hw``'s own calibration, as
    ``score`` scores them; and the provenance fields (``FORM_FIELDS``) that say which form and both scores, rounded
    to ``FORM_SCORE_DIGITS``."""
    tables = {f: fit_class(hw, g, rows, steps, f) for f in AUTO_FORMS}
    base = hw.calibration.table() if getattr(hw, "calibration", None) is not None else {}
    held = {}
    for f, t in tables.items():
        cal = {"fitted": [g.name], **base, "schema": SCHEMA, "source": "derived: choosing the form",
               g.key[0]: {**base.get(g.key[0], {}), g.key[1]: t}}
        err = held_errors(hw, cal, g)
        held[f] = (float(np.median(err)), float(np.percentile(err, 90)))
    form = better_form(held)
    fields = {"gemm_form": form}
    for f, (med, p90) in held.items():
        fields[f"held_out_{f}_median"], fields[f"held_out_{f}_p90"] = (round(med, FORM_SCORE_DIGITS),
                                                                        round(p90, FORM_SCORE_DIGITS))
    return tables[form], fields


def better_form(held: dict[str, tuple[float, float]]) -> str:
    """The form (name -> held-out (median, p90) |error|) that holds out better: the lower p90, then the lower
    median, then the half-point form. The rule that kept the catalog's A100 int8, L40S and RTX PRO 6000 GEMM classes
    in the half-point form and moved the other 17 to the stream form (docs/accuracy.md, "The GEMM weights'
    streaming that grows with their tiles")."""
    return min(held, key=lambda f: (held[f][1], held[f][0], f != "half"))


def module_form(hw, g: Group, rows, steps: tuple | None, whole: dict) -> tuple[dict, dict]:
    """An MLA module class's table in the form that holds out better (``better_form``): ``whole`` (fitted on the
    whole module) or fitted "apart", on the module less its projections, which ``ops.gemm_offsets`` prices on the
    framework's GEMM classes (the table's ``gemms = "apart"``), each scored on the group's held-out rows; and the
    provenance fields that say which form and both scores (``FORM_SCORE_DIGITS``)."""
    forms = {"whole": (g, whole)}
    split = replace(g, module_form="apart")
    forms["apart"] = (split, {**fit_class(hw, split, rows, steps), "gemms": "apart"})
    held = {}
    for f, (grp, t) in forms.items():
        cal = {"schema": SCHEMA, "source": "derived: choosing the form", "fitted": [g.name],
               g.key[0]: {g.key[1]: t}}
        err = held_errors(hw, cal, grp)
        held[f] = (float(np.median(err)), float(np.percentile(err, 90)))
    form = min(held, key=lambda f: (held[f][1], held[f][0], f != "whole"))
    fields = {"module_form": form}
    for f, (med, p90) in held.items():
        fields[f"held_out_{f}_median"], fields[f"held_out_{f}_p90"] = (round(med, FORM_SCORE_DIGITS),
                                                                        round(p90, FORM_SCORE_DIGITS))
    return forms[form][1], fields


def form_choices(cal: dict) -> list[dict]:
    """Per GEMM class of ``cal`` whose form was chosen (``chosen_form``): its name, the form kept and each form's
    held-out median and p90 |error|, from the class's provenance."""
    out = []
    for name, p in (cal.get("provenance") or {}).items():
        if "gemm_form" in p:
            out.append({"group": name, "form": p["gemm_form"],
                        **{f: {"median_abs_err": p[f"held_out_{f}_median"], "p90_abs_err": p[f"held_out_{f}_p90"]}
                           for f in AUTO_FORMS if f"held_out_{f}_median" in p}})
    return out
