"""The probe's self-calibration: after its micro-benchmarks, `ironlaw probe` times its built-in reference
runs (``probe.references``: small models, end to end and per op, as `ironlaw validate` does) and fits the
profile's [calibration] on them together with its own rows (``fit.fit``), so `--on local` is calibrated
from the first run. `ironlaw fit` stays for runs of the user's own models.

A reference run that fails (a model library missing, a run refused as not fitting memory) is named in the
profile (``[probe.references]``) with its reason; the fit uses the runs that succeeded, and with none the
profile keeps the calibration fitted to the probe's rows alone. An interrupted probe saves nothing.
"""
from __future__ import annotations

import statistics
import time
import warnings
from typing import Callable

from . import fit, validate
from .hardware import parse_hardware
from .probe import build
from .probe.references import Reference, references

Progress = Callable[[int, int, str], None]


def model(ref: Reference) -> str:
    """The reference model's name in reports and fit labels: ``reference-cnn``, ``reference-decoder``."""
    if ref.spec.startswith("py:"):
        return "reference-" + ref.spec.rsplit(":", 1)[-1]
    return "reference-" + ref.spec.rsplit("/", 1)[-1].removesuffix(".json").removeprefix("reference_")


def name(ref: Reference) -> str:
    """A reference run's name as the fit labels it: ``reference-cnn infer b1``, ``reference-decoder decode b1 s128``."""
    return " ".join([model(ref), ref.phase or "infer", f"b{ref.batch}"]
                    + ([f"s{ref.seq}"] if ref.seq else []))


def run_references(hw, quick: bool, progress: Progress | None = None) -> tuple[list[dict], list[dict]]:
    """(validate case documents of the runs that succeeded, [{"run", "error"}] of those that failed)."""
    cases, failed = [], []
    refs = references(quick)
    for i, ref in enumerate(refs):
        if progress:
            progress(i, len(refs), f"reference {name(ref)}")
        try:
            with warnings.catch_warnings():                # the model library's notices, not the probe's
                warnings.simplefilter("ignore")
                doc = validate.run(ref.spec, ref.batch, ref.seq, ref.phase, hw=hw, repeats=ref.repeats)
            doc["workload"]["name"] = model(ref)
            cases.extend(validate.cases_of(doc, name(ref)))
        except Exception as e:                   # noqa: BLE001 — recorded in the profile and printed, never hidden
            failed.append({"run": name(ref), "error": f"{e.__class__.__name__}: {str(e)[:300]}"})
    if progress:
        progress(len(refs), len(refs), "fitting the calibration")
    return cases, failed


def run_spread(cases: list[dict]) -> list[float]:
    """[fastest, slowest] end-to-end run against the median run, the median over the reference runs: how much
    this machine's speed moves from one whole model run to the next (``timerange`` widens ranges by it)."""
    lo = statistics.median(c["spread"]["min_s"] / c["spread"]["median_s"] for c in cases)
    hi = statistics.median(c["spread"]["max_s"] / c["spread"]["median_s"] for c in cases)
    return [round(lo, 4), round(hi, 4)]


def calibrate(doc: dict, quick: bool = False, progress: Progress | None = None) -> dict:
    """``doc`` (a probe profile from ``probe.build.profile``, with or without the probe rows' own fit) with
    its [calibration] fitted on the reference runs and the probe's rows — on the rows alone where no run
    succeeded — and ``[probe.references]`` saying what ran, what failed and how long it took."""
    t0 = time.perf_counter()
    probe = doc["probe"]
    cases, failed = [], []
    hw = parse_hardware(doc, "probe")
    if doc["kind"] == "cpu":
        cases, failed = run_references(hw, quick, progress)
    if cases:
        names = [fit.label(c) for c in cases]
        doc["calibration"] = fit.fit(hw, cases, source=build.source(
            probe, f"fitted by ironlaw.fit to the probe's {len(cases)} reference runs ({'; '.join(names)}) and "
                   f"its own rows"))
    elif "calibration" not in doc:
        doc["calibration"] = build.probe_calibration(doc)
    probe["references"] = {"fitted": [fit.label(c) for c in cases], "failed": failed,
                           "wall_s": round(time.perf_counter() - t0, 2)}
    if cases:
        probe["references"]["run_spread"] = run_spread(cases)
    if doc["kind"] != "cpu":
        probe["references"]["skipped"] = "the reference runs run on the CPU; this profile is a GPU's"
    return doc

