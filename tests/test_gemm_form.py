"""The GEMM form `calibrate --kernels` chooses per class (``kernelfit.fit(gemm_fill="auto")``, ``chosen_form``,
``better_form``): half-point or stream, whichever holds out better on the user's own rows, the choice and both
held-out scores in the class's provenance, fitted on the H100 extract of aiconfigurator-core 0.12.0
(tests/data/kernel_tables)."""
import pytest

pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.machine import calibration  # noqa: E402
from ironlaw.measure.calibrate import kernelfit  # noqa: E402


def test_the_rule_keeps_the_lower_p90():
    """The catalog's own choices (docs/accuracy.md, the stream form's section; held-out median, p90 on the full
    tables): H100 bf16 took the stream form, L40S bf16 (p90 36.4% → 42.8%, median even) and RTX PRO 6000 bf16
    (median 7.4% → 7.1% but p90 27.2% → 29.8%) kept the half-point form."""
    assert kernelfit.forms.better_form({"half": (0.038, 0.123), "stream": (0.031, 0.102)}) == "stream"
    assert kernelfit.forms.better_form({"half": (0.092, 0.364), "stream": (0.092, 0.428)}) == "half"
    assert kernelfit.forms.better_form({"half": (0.074, 0.272), "stream": (0.071, 0.298)}) == "half"
    better_form = kernelfit.forms.better_form
    assert better_form({"half": (0.05, 0.10), "stream": (0.04, 0.10)}) == "stream"   # median breaks a tie
    assert kernelfit.forms.better_form({"stream": (0.05, 0.10), "half": (0.05, 0.10)}) == "half"     # the simpler form


@pytest.fixture(scope="module")
def h100(h100_gemm_fit):
    hw, gs, fit = h100_gemm_fit
    return hw, gs, fit("auto"), fit("half")


def test_auto_keeps_the_form_that_held_out_better_and_says_so(h100):
    hw, gs, auto, half = h100
    p = auto["provenance"]["gemm bf16"]
    held = {f: (p[f"held_out_{f}_median"], p[f"held_out_{f}_p90"]) for f in kernelfit.AUTO_FORMS}
    assert p["gemm_form"] == kernelfit.forms.better_form(held)
    assert held["half"] != held["stream"]                       # both forms were fitted and scored
    table = auto["matmul"]["bf16"]
    assert ("streamed_half" in table) == (p["gemm_form"] == "stream")
    base = hw.calibration.table()
    for form, cal in ((p["gemm_form"], auto), ("half", half)):  # the recorded scores are `score`'s on the final table
        s = kernelfit.score(hw, kernelfit.merged(base, cal), gs)[0]
        assert (s.median_abs_err, s.p90_abs_err) == pytest.approx(held[form], abs=5e-4)
    assert kernelfit.form_choices(auto) == [{"group": "gemm bf16", "form": p["gemm_form"],
                                             **{f: {"median_abs_err": m, "p90_abs_err": q}
                                                for f, (m, q) in held.items()}}]
    assert kernelfit.form_choices(half) == []                   # a form named, not chosen: nothing recorded


def test_the_kept_forms_stored_scores_print_as_its_held_out_line(h100):
    """`calibrate --kernels` printed "gemm bf16 … 7.5% / 20.5%" on the held-out line and "half form (half 7.5% /
    20.4% …)" below it: the form scores were stored to 4 digits (0.2045) and rounded again for print. They are stored
    to the 0.1 % every output prints (``FORM_SCORE_DIGITS``): the kept form's are the held-out score's, rounded once."""
    hw, gs, auto, _ = h100
    p = auto["provenance"]["gemm bf16"]
    s = kernelfit.score(hw, kernelfit.merged(hw.calibration.table(), auto), gs)[0]
    form = p["gemm_form"]
    assert (p[f"held_out_{form}_median"], p[f"held_out_{form}_p90"]) == (round(s.median_abs_err, 3),
                                                                         round(s.p90_abs_err, 3))
    assert all(round(p[f"held_out_{f}_{q}"], 3) == p[f"held_out_{f}_{q}"]
               for f in kernelfit.AUTO_FORMS for q in ("median", "p90"))


def test_provenance_checks_the_form_fields(h100):
    _, _, auto, _ = h100
    calibration.check(auto, "calibration")
    p = auto["provenance"]["gemm bf16"]
    with pytest.raises(IronlawError, match="gemm_form"):
        calibration.check({**auto, "provenance": {"gemm bf16": {**p, "gemm_form": 1}}}, "calibration")
    with pytest.raises(IronlawError, match="unknown field"):
        calibration.check({**auto, "provenance": {"gemm bf16": {**p, "gemm_forms": "stream"}}}, "calibration")


def test_the_h100_benchmark_prices_its_cells_on_a_refitted_form(h100_gemm_fit, trtllm_defaults):
    """benchmarks/trtllm_h100.py --gemm-form FORM --data DIR: the H100 cells on the H100 GEMM classes refitted in
    FORM on DIR's tables (in memory), as ``kernelfit.fit`` fits them; the defaults put the catalog back."""
    import sys
    from pathlib import Path
    root = Path(__file__).parents[1]
    sys.path.insert(0, str(root / "benchmarks"))
    import trtllm_h100 as h100
    _, _, fit = h100_gemm_fit
    hw = h100.gemm_form_hw("half", root / "tests/data/kernel_tables")
    assert hw.calibration.table()["matmul"]["bf16"] == fit("half")["matmul"]["bf16"]   # the extract: bf16
    assert "streamed_half" not in hw.calibration.table()["matmul"]["bf16"]
    cell = {"model": "llama3.3-70b", "spec": "llama3-70b", "tp": 2, "isl": 1000, "osl": 1000, "published": 1.0}
    catalog = h100.predict(cell).output_tokens_per_s
    h100.RELEASE["h100"] = hw
    refit = h100.predict(cell).output_tokens_per_s
    assert refit != pytest.approx(catalog, rel=1e-4)            # the refitted GEMMs price the cell
    h100.defaults()
    assert h100.predict(cell).output_tokens_per_s == pytest.approx(catalog, rel=1e-12)
    with pytest.raises(SystemExit, match="--gemm-form: .*l40s"):
        h100.gemm_form_hw("half", root / "tests/data/kernel_tables", folder="l40s")
