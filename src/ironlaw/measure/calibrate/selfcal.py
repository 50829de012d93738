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

from . import fit
from .. import validate
from ...machine.calibration import with_calibration
from ...machine.hardware import parse_hardware
from . import build
from ..probe.references import Reference, references
from ...law.timerange import QUANTILES

Progress = Callable[[int, int, str], None]
MIN_KIND_OPS = 8                  # a kind with fewer measured ops in the runs takes the interval over all ops


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


def model_spread(scored: list[dict]) -> dict[str, list[float]]:
    """{op kind: [low, high]}: how far the reference runs' ops land from the law (``fit.score`` rows, with
    the calibration just fitted), as measured over predicted op time at ``timerange.QUANTILES`` (an 80%
    interval) weighted by measured time — per kind with at least ``MIN_KIND_OPS`` ops, and ``"all"`` over
    every op (the model term of ``timerange``)."""
    ratios: dict[str, list[tuple[float, float]]] = {}
    for row in scored:
        for op in row["doc"]["ops"]:
            if op["predicted_s"] > 0 and op["median_s"] > 0:
                for key in (op["kind"], "all"):
                    ratios.setdefault(key, []).append((op["median_s"] / op["predicted_s"], op["median_s"]))
    return {kind: [round(min(_weighted_quantile(r, QUANTILES[0]), 1.0), 4),
                   round(max(_weighted_quantile(r, QUANTILES[1]), 1.0), 4)]
            for kind, r in sorted(ratios.items()) if kind == "all" or len(r) >= MIN_KIND_OPS}


def _weighted_quantile(pairs: list[tuple[float, float]], q: float) -> float:
    """The value below which a share ``q`` of the weight lies, ``pairs`` being (value, weight)."""
    pairs = sorted(pairs)
    total = sum(w for _, w in pairs)
    acc = 0.0
    for value, w in pairs:
        acc += w
        if acc >= q * total:
            return value
    return pairs[-1][0]


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
            probe, f"fitted by ironlaw.measure.calibrate.fit to the probe's {len(cases)} reference runs ({'; '.join(names)}) and "
                   f"its own rows"))
    elif "calibration" not in doc:
        doc["calibration"] = build.probe_calibration(doc)
    refs = {"fitted": [fit.label(c) for c in cases], "failed": failed}
    if cases:
        refs["run_spread"] = run_spread(cases)
        refs["model_spread"] = model_spread(fit.score(with_calibration(hw, doc["calibration"]), cases))
    probe["references"] = {**refs, "wall_s": round(time.perf_counter() - t0, 2)}
    if doc["kind"] != "cpu":
        probe["references"]["skipped"] = "the reference runs run on the CPU; this profile is a GPU's"
    return doc

