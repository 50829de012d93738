"""A table scored on each group's held-out rows: median and 90th percentile |error| per kernel class."""
from __future__ import annotations

import numpy as np

from ..fitcore import Problem
from .collector import timed_as
from .ops import observations, replayed_hw
from .rows import held_out
from .vocabulary import Group, Score


def score(hw, cal: dict, gs: list[Group]) -> list[Score]:
    """Per group, the law with ``cal`` against its held-out rows (at most ``SCORE_ROWS``, evenly spaced): median
    and 90th-percentile |error|."""
    out = []
    for g in gs:
        err = held_errors(hw, cal, timed_as(cal, g))
        if len(err):
            out.append(Score(g.table.gpu, g.name, int(len(err)), float(np.median(err)),
                             float(np.percentile(err, 90))))
    return out


def held_errors(hw, cal: dict, g: Group) -> np.ndarray:
    """|predicted / measured − 1| of the law with ``cal`` on ``g``'s held-out rows (``held_out``)."""
    held = held_out(g)
    if not len(held):
        return np.zeros(0)
    hw = replayed_hw(g, hw)
    prob = Problem(hw, observations(g, held, hw), weighting="per_case")
    return np.abs(prob.times(cal) / prob.meas - 1.0)
