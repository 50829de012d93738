"""ironlaw: the Iron Law of ML systems, per operator, with measurement.

    T ≈ D_vol/BW + O/(R_peak·η) + L_lat

    >>> import ironlaw
    >>> est = ironlaw.analyze("llama3-8b", on="h100", phase="decode", seq=1024)
    >>> est.time_s, est.bottleneck()["resource"]

The core imports without torch; capture, probe and validate import it when called.
"""
from __future__ import annotations

from ._version import __version__
from .core.errors import IronlawError


def analyze(spec: str, on: str = "h100", *, batch=1, seq=None, phase=None, dtype=None,
            composition: str = "overlap", **options):
    """Predict ``spec`` on hardware ``on``; returns an :class:`ironlaw.law.estimate.Estimate`.

    ``batch`` and ``seq`` may be numpy arrays: the estimate then holds one value per configuration.
    """
    from .machine import hardware
    from .law import law
    from .models import workloads
    hw = hardware.get(on) if isinstance(on, str) else on
    req = workloads.Request(spec, phase=phase, batch=batch, seq=seq, dtype=dtype,
                            device="cuda" if hw.kind == "gpu" else "cpu", options=options)
    return law.predict(workloads.resolve(req), hw, composition)


__all__ = ["analyze", "IronlawError", "__version__"]
