"""ironlaw: the Iron Law of ML systems, per operator, with measurement.

    T ≈ D_vol/BW + O/(R_peak·η) + L_lat

    >>> import ironlaw
    >>> est = ironlaw.analyze("llama3-8b", on="h100", phase="decode", seq=1024)
    >>> est.time_s, est.bottleneck()["resource"]

One function per command of the CLI (``ironlaw.api``): ``analyze``, ``compare``, ``sweep``, ``serve``, ``train``,
``search``, ``contract``, ``calibrate``, ``probe``, ``validate``, ``fit`` take the command's options as keywords and
return results whose ``.to_dict()`` is its ``--format json`` document; ``ironlaw.api.report`` writes the HTML page
(``ironlaw.report`` is the package that draws it). The core imports without torch; capture, probe and validate
import it when called.
"""
from __future__ import annotations

from ._version import __version__
from .api import analyze, calibrate, compare, contract, fit, probe, search, serve, sweep, train, validate
from .core.errors import IronlawError

__all__ = ["analyze", "compare", "sweep", "serve", "train", "search", "probe", "validate", "fit", "contract", "calibrate", "IronlawError", "__version__"]
