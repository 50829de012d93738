"""The GEMM tile-fill form (``kernelfit.fit(gemm_fill="tile")``, benchmarks/kernel_tables.py --gemm-fill tile,
benchmarks/gemm_fill.py) fitted on the H100 extract of aiconfigurator-core 0.12.0 (tests/data/kernel_tables): its M
term a whole-tile fill, its streamed η at most 1, its held-out rows as close as the half-point form's bound, and a
small-M GEMM it labels as weight streaming."""
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.machine import hardware  # noqa: E402
from ironlaw.machine.calibration import Calibration  # noqa: E402
from ironlaw.measure.calibrate import kernelfit  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GEMM_BOUND = (0.10, 0.35)        # test_kernelfit.BOUNDS["gemm"]: the extract's every-40th-row fit


@pytest.fixture(scope="module")
def fits(h100_gemm_fit):
    hw, gs, fit = h100_gemm_fit
    return hw, gs, fit("half"), fit("tile")


@pytest.fixture(scope="module")
def stream(h100_gemm_fit):
    return h100_gemm_fit[2]("stream")


def _shape_only(hw, table: dict, dt: str = "bf16"):
    """``hw`` with ``table``'s ``dt`` GEMM terms without their grid (the form alone)."""
    shape = {k: v for k, v in table["matmul"][dt].items() if k not in ("grid_nodes", "grid_log")}
    return replace(hw, calibration=Calibration.of({**table, "matmul": {dt: shape}}))


def _gemm(spec: str, dt: str = "bf16"):
    from ironlaw.models import workloads
    return workloads.resolve(workloads.Request(f"gemm:{spec}", phase="infer", dtype=dt, device="cuda"))


def test_tile_fill_fits_whole_tiles_and_streams_at_most_at_full_bandwidth(fits):
    hw, gs, half, tile = fits
    p = tile["matmul"]["bf16"]
    assert p["m_tile"] in kernelfit.classfit.GEMM_TILES and p["streamed"] <= kernelfit.shapefit.STREAMED_PHYSICAL
    assert "m_tile" not in half["matmul"]["bf16"]           # the default keeps the half-point form
    scores = kernelfit.score(hw, tile, gs)
    assert scores and all(s.median_abs_err <= GEMM_BOUND[0] and s.p90_abs_err <= GEMM_BOUND[1] for s in scores)


def test_below_a_tile_the_compute_term_is_the_whole_tiles(fits):
    hw, _, _, tile = fits
    from ironlaw.law import law
    from ironlaw.models import workloads
    shape = {k: v for k, v in tile["matmul"]["bf16"].items() if k not in ("grid_nodes", "grid_log")}
    hw2 = replace(hw, calibration=Calibration.of({**tile, "matmul": {"bf16": shape}}))   # the form, without its grid
    est = [law.predict(workloads.resolve(workloads.Request(f"gemm:{m},4096,4096", phase="infer", dtype="bf16",
                                                           device="cuda")), hw2) for m in (1, 8)]
    compute = [float(e.term("compute_s")) for e in est]
    assert compute[1] == pytest.approx(compute[0], rel=1e-9)      # 1 and 8 rows both fill one tile
    assert float(est[0].term("data_s")) > compute[0]             # and the weights' streaming binds


def test_the_benchmark_labels_a_small_gemm_by_its_weights(fits):
    hw, _, _, tile = fits
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import kernel_tables
    assert kernel_tables.gemm_label(hw, tile, "bf16", 1).startswith("bandwidth")
    assert kernel_tables.gemm_label(hw, tile, "bf16", 8192) == "compute"


def test_an_unknown_fill_is_an_error(fits):
    hw, gs, _, _ = fits
    with pytest.raises(IronlawError, match="unknown GEMM fill 'wave'"):
        kernelfit.fit(hw, gs, gemm_fill="wave")


def test_the_stream_form_streams_at_most_at_full_bandwidth_and_holds_out(fits, stream):
    hw, gs, _, _ = fits
    for dt, p in stream["matmul"].items():
        assert p["streamed"] <= kernelfit.shapefit.STREAMED_PHYSICAL and p["streamed_half"] > 0, dt
        assert 0.0 < p["serial"] <= 1.0 and "m_tile" not in p, dt
    scores = kernelfit.score(hw, stream, gs)
    assert scores and all(s.median_abs_err <= GEMM_BOUND[0] and s.p90_abs_err <= GEMM_BOUND[1] for s in scores)


def test_the_streamed_eta_grows_with_the_weight_tiles(fits, stream):
    from ironlaw.core.gemmshape import streamed_eta
    p = stream["matmul"]["bf16"]
    small, big = (float(streamed_eta(p, n, n)) for n in (512, 16384))
    assert 0.0 < small < big < p["streamed"]
    assert streamed_eta(p, 4096, 4096) == pytest.approx(p["streamed"] * 4096 ** 2 / (4096 ** 2 + p["streamed_half"]))


def test_the_stream_form_prices_a_small_gemm_as_its_weights_streaming(fits, stream):
    """Every row — M = 1 too, where a table without ``streamed_half`` takes the device's memory η (a GEMV) — streams
    its weights at the ramp's η, and the data term is what a 1- and an 8-row GEMM pay alike."""
    hw, _, _, _ = fits
    from ironlaw.law import law
    hw2 = _shape_only(hw, stream)
    est = [law.predict(_gemm(f"{m},4096,4096"), hw2) for m in (1, 8)]
    data = [float(e.term("data_s")) for e in est]
    p = stream["matmul"]["bf16"]
    from ironlaw.core.gemmshape import streamed_eta
    bw = hw.memory[hw.device_tier].bw_Bps
    weights_s = 2 * 4096 * 4096 / (bw * float(streamed_eta(p, 4096, 4096)))
    assert data[0] == pytest.approx(weights_s, rel=0.01)      # the activations' few bytes aside
    assert data[1] == pytest.approx(data[0], rel=0.01)


def test_a_stream_table_needs_its_streamed_eta(fits):
    from ironlaw.machine.calibration import check
    hw, _, half, _ = fits
    p = {k: v for k, v in half["matmul"]["bf16"].items() if k != "streamed"}
    with pytest.raises(IronlawError, match="streamed_half needs the streamed"):
        check({**half, "matmul": {"bf16": {**p, "streamed_half": 1e6}}}, "calibration")


def test_the_stream_form_labels_a_small_gemm_by_its_weights_and_a_large_one_by_compute(fits, stream):
    hw, _, _, _ = fits
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import kernel_tables
    assert kernel_tables.gemm_label(hw, stream, "bf16", 8).startswith("bandwidth")
    assert kernel_tables.gemm_label(hw, stream, "bf16", 8192) == "compute"


def test_the_catalog_labels_a_small_blackwell_bf16_gemm_by_its_weights():
    """B200's stored bf16 terms (the stream form, fitted on aiconfigurator-core 0.12.0's B200 table, where 4096×4096
    takes 9.9 µs at M = 1 and 9.5 µs at M = 64: the weights' streaming) name HBM, not compute, below a few hundred
    rows."""
    from ironlaw.law import law
    from ironlaw.law.explain import labels
    hw = hardware.get("b200")
    assert "streamed_half" in hw.calibration.table()["matmul"]["bf16"]
    for m, want in ((1, "bandwidth"), (64, "bandwidth"), (8192, "compute")):
        lab = str(np.asarray(labels(law.predict(_gemm(f"{m},4096,4096"), hw))).reshape(-1)[0])
        assert lab.startswith(want), (m, lab)
