"""The results of the front door's measuring and writing commands (probe, validate, fit, calibrate, report);
the predicting commands return their models' own results."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass
class Probe:
    """``ironlaw probe``'s result: the profile written (the catalog's format, with its [probe] rows and fitted
    [calibration]) and where."""
    path: str
    profile: dict
    strict: bool = False

    @property
    def unsteady(self) -> list[str]:
        """The checks the probe failed and was saved past (``checks.refused``); [] for a steady machine."""
        return list(self.profile["probe"].get("checks", {}).get("refused", []))

    def to_dict(self) -> dict:
        return {"schema": "ironlaw.probe-result/1", "path": self.path, "strict": self.strict,
                "unsteady": self.unsteady, "profile": self.profile}


@dataclass
class Validation:
    """``ironlaw validate``'s document (schema ironlaw.validate/1): the case, the machine, per-op and total
    measured and predicted times, their spread and the score."""
    doc: dict

    @property
    def measured_s(self) -> float:
        return self.doc["total"]["measured_s"]

    @property
    def predicted_s(self) -> float:
        return self.doc["total"]["predicted_s"]

    @property
    def error(self) -> float:
        return self.doc["total"]["error"]

    def to_dict(self) -> dict:
        return self.doc


@dataclass
class Fit:
    """``ironlaw fit``'s result: the fitted [calibration] table, where it was saved, and each run scored (fitted
    and held out) against it."""
    hardware: str
    calibration: dict
    saved: Optional[str]
    fitted: list = field(default_factory=list)
    held_out: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"schema": "ironlaw.fit/1", "hardware": self.hardware, "calibration": self.calibration,
                "saved": self.saved, **{g: [{k: v for k, v in r.items() if k != "doc"} for r in rows]
                                         for g, rows in (("fitted", self.fitted), ("held_out", self.held_out))}}


@dataclass
class KernelCalibration:
    """``ironlaw calibrate``'s result: the calibrated [calibration] table of ``hardware``, fitted on ``groups``
    kernel classes of ``framework``, each scored on its held-out rows, where the profile was saved, and per GEMM
    class the form it took (``kernelfit.form_choices``)."""
    hardware: str
    framework: str
    groups: int
    held_out: list
    calibration: dict
    saved: Optional[str]
    gemm_forms: list = field(default_factory=list)   # per GEMM class: the form kept, each form's held-out errors
    skipped: list = field(default_factory=list)      # rows left out: table, gemm_dtype, rows, why (kernelfit.skipped)
    assumed: list = field(default_factory=list)      # what reading the tables assumed (kerneltable.assumptions)

    def to_dict(self) -> dict:
        return {"schema": "ironlaw.calibrate-kernels/1", "hardware": self.hardware, "framework": self.framework,
                "held_out": [s.__dict__ for s in self.held_out], "calibration": self.calibration,
                "saved": self.saved, "gemm_forms": self.gemm_forms, "skipped": self.skipped, "assumed": self.assumed}


@dataclass
class Report:
    """``ironlaw report``'s result: the HTML file written, its size and the estimate it shows."""
    path: str
    size_bytes: int
    estimate: object
