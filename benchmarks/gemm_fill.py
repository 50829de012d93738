"""The GEMM M term, half-point against tile fill and tile streaming, on measured kernel tables: held-out error by M
band and bound labels.

    python benchmarks/gemm_fill.py [--data DIR] [--gpu NAME …] [--dtype bf16|fp8|fp4 …] [--form half|tile|stream …]

Per GPU × GEMM dtype, the catalog's stored terms against the forms fitted here: "half" (η's M term M/(M+m_half),
``gemmshape.gemm_eta``), "tile" (``kernelfit.fit(gemm_fill="tile")``: the rows' fill of whole tiles of
``kernelfit.classfit.GEMM_TILES`` rows, the best kept, the streamed weights' η at most 1) and "stream"
(``kernelfit.shapefit.fit_stream``: the weights' streamed η growing with their tiles, streamed · N·K/(N·K +
streamed_half), at most 1; a fitted serial share; the compute's M term 1 or a half-point, the better kept), each with
its kernel grid, on the same held-out rows as ``benchmarks/kernel_tables.py --op gemm`` (the odd rows of the
shape-sorted class): median / p90 |error| over all of them and over M ≤ 16, 16 < M ≤ 256 and M > 256; then the bound
label ``ironlaw analyze`` gives gemm:M,4096,4096 at M = 1, 8, 64, 256, 4096 and Llama-3-8B decode at batch 1 and 1,024
tokens in that dtype, under each. Nothing is written.

Data: aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0; PyPI ``aiconfigurator-core==0.12.0``), its
``aiconfigurator_core/systems/data/<gpu>/gemm/trtllm/<version>/gemm_perf.parquet``; ``--data`` names that folder.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
from kernel_tables import GPUS, LABEL_M, data_dir, gemm_label  # noqa: E402

BANDS = ((0, 16), (16, 256), (256, float("inf")))      # M ranges the held-out error is split into
DEFAULT_GPUS = ("b200_sxm", "gb200", "h100_sxm", "h200_sxm")
MODEL = ("llama3-8b", 1, 1024)                           # decode: model, batch, cached tokens
FORMS = ("half", "tile", "stream")                       # the forms fitted (kernelfit.GEMM_FILLS), beside the stored


def band_errors(prob, cal: dict, m: np.ndarray) -> list[tuple[str, int, float, float]]:
    """(band, rows, median, p90 |error|) over all held-out rows and per M band of ``BANDS``."""
    err = np.abs(prob.times(cal) / prob.meas - 1.0)
    out = [("all", len(err), float(np.median(err)), float(np.percentile(err, 90)))]
    for lo, hi in BANDS:
        e = err[(m > lo) & (m <= hi)]
        if len(e):
            out.append((f"{lo}<M<={hi:g}", len(e), float(np.median(e)), float(np.percentile(e, 90))))
    return out


def model_label(hw, table: dict, dtype: str) -> str:
    """The bound label of ``MODEL``'s decode step in ``dtype`` on ``hw`` with the calibration ``table``."""
    from ironlaw.law.explain import labels
    from ironlaw.machine.calibration import Calibration
    from ironlaw.models.analysis import predict
    name, batch, seq = MODEL
    est = predict(name, replace(hw, calibration=Calibration.of(table)), batch, seq, "decode", dtype)
    return str(np.asarray(labels(est)).reshape(-1)[0])


def terms(p: dict) -> str:
    """A GEMM table's shape terms in a line: its M term (m_tile or m_half), eta_max, the streamed weights' η (with
    its half-point in weight elements and the serial share, "stream" form) and the fixed latency."""
    term = f"m_tile {p['m_tile']:g}" if "m_tile" in p else f"m_half {p['m_half']:g}"
    stream = f" · NK/(NK+{p['streamed_half']:g}), serial {p.get('serial', 0.0):g}" if "streamed_half" in p else ""
    return (f"{term}, eta_max {p['eta_max']:g}, streamed {p.get('streamed', 1.0):g}{stream}, "
            f"latency {1e6 * p.get('latency_s', 0.0):.2f} us")


def run(data: Path, folder: str, dtypes: tuple, forms: tuple = FORMS) -> list[str]:
    """One GPU's lines: per GEMM class of ``dtypes``, the stored terms and those of each fitted form of ``forms``
    (``kernelfit.GEMM_FILLS``), errors and labels."""
    from ironlaw.machine import hardware
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    from ironlaw.measure.calibrate.fitcore import Problem
    hw = hardware.get(GPUS[folder])
    tables = [replace(t, path=f"{folder}/{t.path}")
              for t in kerneltable.read(data / folder, ops=("gemm",), framework="trtllm")]
    gs = [g for g in kernelfit.groups(tables) if g.key[1] in dtypes]
    stored = hw.calibration.table()
    origin, license = kernelfit.origin_of(data)
    fitted = [(form, kernelfit.merged(stored, kernelfit.fit(hw, gs, origin=origin, license=license, gemm_fill=form)))
              for form in forms]
    out = []
    for g in gs:
        held = kernelfit.held_out(g)
        prob = Problem(hw, kernelfit.observations(g, held, hw), weighting="per_case")
        for what, cal in [("stored", stored)] + fitted:
            p = cal["matmul"][g.key[1]]
            errs = " | ".join(f"{b} {100 * med:.1f}%/{100 * p90:.1f}% ({n})"
                              for b, n, med, p90 in band_errors(prob, cal, held.m.to_numpy()))
            marks = " ".join(f"{m}:{gemm_label(hw, cal, g.key[1], m)}" for m in LABEL_M)
            out.append(f"{hw.name:<6} {g.name:<10} {what}: {terms(p)}\n"
                       f"    held out: {errs}\n    gemm:M,4096,4096 {marks}; {MODEL[0]} decode b{MODEL[1]} "
                       f"s{MODEL[2]}: {model_label(hw, cal, g.key[1])}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="aiconfigurator_core/systems/data of an unpacked aiconfigurator-core 0.12.0 wheel")
    ap.add_argument("--gpu", action="append", choices=tuple(GPUS), help=f"table folder(s) (default: {DEFAULT_GPUS})")
    ap.add_argument("--dtype", action="append", choices=("bf16", "fp8", "fp4"), help="GEMM classes (default: bf16, fp8)")
    ap.add_argument("--form", action="append", choices=FORMS, help=f"fitted forms (default: {FORMS})")
    a = ap.parse_args()
    data = data_dir(a.data)
    for folder in a.gpu or DEFAULT_GPUS:
        for line in run(data, folder, tuple(a.dtype or ("bf16", "fp8")), tuple(a.form or FORMS)):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
