"""The framework's terms: its seconds per op and its share of every kernel's time (``[calibration]``'s
``framework_s`` and ``framework_share``, per frontend where fitted).
"""
from __future__ import annotations

import numpy as np

from ...machine.calibration import Calibration


def framework_terms(cal: Calibration | None, frontend: str = "torch") -> tuple[float, float]:
    """(framework_s, framework_share) of a graph run by ``frontend``: its own [calibration.frontend.<name>]
    values where fitted, else the calibration's global ones (0 without a calibration)."""
    if cal is None:
        return 0.0, 0.0
    own = cal.frontend.get(frontend, {})
    glob_s = 0.0 if cal.framework_s is None else cal.framework_s
    glob_share = 0.0 if cal.framework_share is None else cal.framework_share
    return float(own.get("framework_s", glob_s)), float(own.get("framework_share", glob_share))


def with_framework_share(cal: Calibration, eta: np.ndarray, frontend: str = "torch") -> np.ndarray:
    """Kernels run (1 + framework_share) times longer end to end than alone."""
    return eta / (1.0 + framework_terms(cal, frontend)[1])
