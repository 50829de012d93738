"""AMD Instinct GEMM terms fitted on AMD's own measured, tuned GEMM latencies; the held-out rows scored per dtype.

    python benchmarks/amd_kernels.py [--gpu NAME …] [--gemm-fill half|tile|stream|auto] [--write | --stored]
    python benchmarks/amd_kernels.py --extract AITER_REPO        # rewrite tests/data/aiter_kernels/ from aiter
    python benchmarks/amd_kernels.py --gpu mi325x --hipblaslt FILE   # what-if: fitted on a hipBLASLt tuning file

Data: ROCm/aiter (AMD, MIT license; github.com/ROCm/aiter, commit ``COMMIT``), its tuned-GEMM tables
``aiter/configs/**/*tuned_gemm*.csv``: one row per GEMM shape that AMD's tuner timed on a GPU, with the GPU's
architecture (``gfx``) and compute-unit count (``cu_num``), M, N, K, the weight dtype and ``us``, the measured
microseconds of the fastest kernel it found. Matched to catalog GPUs by (gfx, CUs) (``GPUS``): gfx950 with 256 CUs is
the MI350 series (MI350X and MI355X both have 256 CUs; the table does not say which), gfx942 with 304 CUs is MI300X
(MI325X has the same die and CU count; the tables fitted there were tuned on an MI300X, ROCm/aiter pull request #3324).
MI325X has no rows of its own: ``--gpu mi325x --write`` stores the MI300X's stored GEMM terms carried to it at the
ratio of AMD's measured max-achievable FP8 GEMM rates of the two (``kernelfit.rules.CARRIED_GEMM``,
``kernelfit.carried``); ``--stored`` prints what it carries. Kept (``KEEP``):

- gfx950/256 ``bfloat16`` rows (bf16 in, bf16 out, no bias) -> mi355x gemm bf16;
- gfx950/256 ``float8_e4m3fn`` rows of the a8w8 tables (FP8 activations with per-token scales times FP8 weights with
  per-channel scales) -> mi355x gemm fp8;
- gfx950/256 rows of the a4w4_blockscale tables (MXFP4 times MXFP4, one E8M0 scale per 32 values, bf16 out; the
  kernels are ``f4gemm_bf16_per1x32Fp4``) -> mi355x gemm mxfp4;
- gfx942/304 rows of the a8w8_blockscale tables (FP8 with 1x128 activation and 128x128 weight scales, bf16 out;
  23,414 shapes, every 8th of them sorted by shape) -> mi300x gemm fp8 (fitted as fp8: ``kernelfit.groups``
  ``fp8_block_as``; the only FP8 GEMM timings of the MI300X the data holds; the provenance says so);
- gfx942/304 ``int8`` rows (INT8 per-token times INT8 per-channel, TensorRT-LLM's ``sq``) -> mi300x gemm int8: 32
  rows, scored on the datasheet only (under ``MIN_FIT_ROWS`` to fit: nothing stored).

Left out, each for a reason: gfx950's block-scaled FP8 (its per-token FP8 rows fit fp8), batched GEMMs (the fitted op
is one GEMM), bf16 GEMMs with a bias or an fp32 output, gfx942 with 80 CUs (MI308X, not in the catalog), gfx1250 (not in the catalog). A shape
timed in more than one file keeps its fastest time (the tuner's pick). ``--extract`` writes the kept rows in the
kernel-table layout ``<gpu>/gemm/aiter/<commit>/gemm_perf.csv`` (``ironlaw.measure.calibrate.kerneltable``,
``latency_us``), so ``ironlaw calibrate --kernels tests/data/aiter_kernels --gpu mi355x --framework aiter`` reads
them. Each class's rows are sorted by shape; the even rows are fitted (``kernelfit.fit``), the odd rows scored here,
beside the datasheet-only prediction (the catalog without ``[calibration]``) on the same rows. ``--write`` stores
the fitted terms in src/ironlaw/machine/catalog/<gpu>.toml's ``[calibration]``; ``--stored`` scores the stored ones.
``--gemm-fill`` is the GEMM classes' M term (``kernelfit.GEMM_FILLS``, as in benchmarks/kernel_tables.py): ``auto``
fits "half" and "stream" and keeps per class the one whose held-out p90 is lower (``kernelfit.forms.better_form``) and
prints the choice and both scores.
"""
from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))
from bench import print_table  # noqa: E402
from aiter_extract import keep_fastest, write_per_gpu  # noqa: E402

GOAL_MEDIAN, GOAL_P90 = 0.08, 0.20            # issue 35: held-out rows per GPU and kernel class
DATA = ROOT / "tests" / "data" / "aiter_kernels"
COMMIT = "e4048607a535ace3a2b51ded31b1c8c2d45c0879"
ORIGIN = f"ROCm/aiter {COMMIT[:8]} (AMD), tuned-GEMM tables (tests/data/aiter_kernels)"
GPUS = {("gfx950", "256"): "mi355x", ("gfx942", "304"): "mi300x"}
# (gfx, CUs, the table's weight dtype) -> gemm_dtype of the kernel-table layout
KEEP = {("gfx950", "256", "torch.bfloat16"): "bfloat16", ("gfx950", "256", "torch.float8_e4m3fn"): "fp8",
        ("gfx942", "304", "torch.int8"): "sq", ("gfx950", "256", "mxfp4"): "mxfp4",
        ("gfx942", "304", "fp8_block"): "fp8_block"}
# the block-scaled FP8 rows of gfx942/304 (23,414 shapes): every EVERY-th of the shape-sorted rows is extracted
EVERY = {("mi300x", "fp8_block"): 8}
from ironlaw.measure.calibrate.kernelfit.rules import CARRIED_GEMM as CARRIED  # noqa: E402
MIN_FIT_ROWS = 100       # a class with fewer fitted rows is scored, never stored (the shape model and grid overfit)
# the tuned tables whose rows are plain GEMMs: bf16 (``dtype`` column) and a8w8 per-token (``q_dtype_w``)
# (a4w4_blockscale: MXFP4 times MXFP4, 32-element E8M0 scales, bf16 out; the kernels' names say per1x32Fp4)
TABLE = re.compile(r"(^|/)([A-Za-z0-9._]+_)?(bf16|a8w8|a8w8_bpreshuffle|a4w4_blockscale)_tuned_gemm(_[A-Za-z0-9._]+)?\.csv$")
# 128-element block-scaled FP8 (1x128 activation, 128x128 weight scales; bf16 out): a8w8_blockscale_tuned_gemm*.csv
BLOCK = re.compile(r"(^|/)a8w8_blockscale_tuned_gemm(_[A-Za-z0-9._]+)?\.csv$")


def aiter_rows(repo: Path) -> dict:
    """{(gpu, gemm_dtype, m, n, k): (us, file)} from the aiter checkout's tuned-GEMM tables at ``COMMIT``."""
    git = ["git", "-C", str(repo)]
    names = subprocess.run(git + ["ls-tree", "-r", "--name-only", COMMIT, "aiter/configs"], check=True,
                           capture_output=True, text=True).stdout.split()
    best: dict = {}
    for name in sorted(n for n in names if TABLE.search(n) or BLOCK.search(n)):
        text = subprocess.run(git + ["show", f"{COMMIT}:{name}"], check=True, capture_output=True, text=True).stdout
        for r in csv.DictReader(text.splitlines()):
            dtype = ("mxfp4" if "a4w4_blockscale" in name else "fp8_block" if BLOCK.search(name)
                     else r.get("q_dtype_w") or r.get("dtype", ""))
            key = (r.get("gfx", ""), r.get("cu_num", ""), dtype)
            if key not in KEEP or r.get("outdtype", "torch.bfloat16") != "torch.bfloat16" or \
                    r.get("bias", "False") != "False" or r.get("scaleAB", "False") != "False":
                continue                                  # bf16 out, no bias, no scale: the plain GEMM
            us = float(r["us"])
            if not us > 0 or us == float("inf"):
                continue
            keep_fastest(best, (GPUS[key[:2]], KEEP[key], int(r["M"]), int(r["N"]), int(r["K"])), us, name)
    return best


def extract(repo: Path) -> None:
    """``aiter_rows`` as one kernel table per GPU: <gpu>/gemm/aiter/<commit>/gemm_perf.csv, each class sorted by
    shape (every ``EVERY``-th row where it says)."""
    best = aiter_rows(repo)

    def rows_of(gpu: str) -> list[list]:
        rows = []
        for dt in sorted({k[1] for k in best if k[0] == gpu}):
            mine = sorted((k, v) for k, v in best.items() if k[:2] == (gpu, dt))
            rows += [[g, d, m, n, k, f"{us:g}", name.removeprefix("aiter/configs/")]
                     for (g, d, m, n, k), (us, name) in mine[::EVERY.get((gpu, dt), 1)]]
        return rows
    header = ["device", "gemm_dtype", "m", "n", "k", "latency_us", "aiter_table"]
    write_per_gpu(best, DATA, ROOT, COMMIT, "gemm", header, rows_of)


def run_gpu(gpu: str, write: bool, stored: bool, gemm_fill: str = "half") -> list:
    """[(gpu, held-out score with the fitted or stored terms, score of the datasheet alone)] per kernel class."""
    from ironlaw.machine import hardware
    from ironlaw.machine.profile import replace_table
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    tables = [replace(t, path=f"{gpu}/{t.path}")                    # paths from tests/data/aiter_kernels
              for t in kerneltable.read(DATA / gpu, ops=("gemm",), gpu=gpu, framework="aiter")]
    hw = hardware.get(gpu)
    every = kernelfit.groups(tables, fp8_block_as="fp8")
    gs = [g for g in every if len(kernelfit.split(g.rows)[0]) >= MIN_FIT_ROWS]
    for g in every:
        if all(g is not x for x in gs):
            print(f"{gpu} {g.name}: {len(kernelfit.split(g.rows)[0])} rows to fit, under {MIN_FIT_ROWS}: scored on "
                  "the datasheet only, nothing stored", flush=True)
    if stored:
        table = hw.calibration.table() if hw.calibration is not None else None
    else:
        table = None
    if not stored and gs:
        table = kernelfit.fit(hw, gs, origin=ORIGIN, license="MIT", gemm_fill=gemm_fill)
        for c in kernelfit.form_choices(table):           # --gemm-fill auto: the form each class took
            print(f"{gpu} {c['group']}: {c['form']} form; held out, median / p90: " + ", ".join(
                f"{f} {100 * c[f]['median_abs_err']:.1f}% / {100 * c[f]['p90_abs_err']:.1f}%"
                for f in kernelfit.AUTO_FORMS), flush=True)
        if write:
            replace_table(Path(hw.path), "calibration", with_moe(hw, table))
            print(f"wrote {Path(hw.path).relative_to(ROOT)} [calibration]", flush=True)
    after = {s.group: s for s in kernelfit.score(hw, table, gs)} if table else {}
    return [(gpu, g.name, after.get(g.name), datasheet_score(hw, g)) for g in every]


def carry_gpu(gpu: str, write: bool) -> None:
    """Print (and with ``write`` store in ``gpu``'s catalog file) the GEMM terms ``gpu`` carries from its
    ``kernelfit.rules.CARRIED_GEMM`` source's stored ``[calibration]``."""
    from ironlaw.machine import hardware
    from ironlaw.machine.profile import replace_table
    from ironlaw.measure.calibrate.kernelfit import carried, rules
    src = hardware.get(rules.CARRIED_GEMM[gpu][0])
    if src.calibration is None:
        raise SystemExit(f"{src.name} has no stored [calibration] to carry to {gpu}: run --gpu {src.name} --write")
    table = carried.carried(src.calibration.table(), gpu)
    for dt, t in table["matmul"].items():
        print(f"{gpu} gemm {dt}: carried from {carried.carried_from(gpu)}: eta_max "
              f"{src.calibration.table()['matmul'][dt]['eta_max']} -> {t['eta_max']}; no rows of its own to score")
    if write:
        hw = hardware.get(gpu)
        replace_table(Path(hw.path), "calibration", with_moe(hw, table))
        print(f"wrote {Path(hw.path).relative_to(ROOT)} [calibration]", flush=True)


# hipblaslt-bench's CSV line (a tuning override file's rows): the fields read, by position
HIP_FIELDS = {"trans_a": 0, "m": 4, "n": 5, "k": 6, "a_type": 17, "us": 33, "cu_num": 36}
HIP_DTYPES = {"f8_fnuz_r": "fp8", "f8_r": "fp8", "bf16_r": "bfloat16"}


def hipblaslt_rows(path: Path) -> list[tuple]:
    """[(gemm_dtype, M, N, K, µs)] of a hipBLASLt tuning file (AMD's ``HIPBLASLT_TUNING_OVERRIDE_FILE``: after a
    'Git Version' line, one hipblaslt-bench CSV line per timed GEMM). hipBLASLt's m is the GEMM's output features
    and its n the tokens (transA T: the weights transposed), so ironlaw's gemm:M,N,K is (n, m, k); one row per
    shape, its fastest time."""
    best: dict = {}
    for line in Path(path).read_text().splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) <= max(HIP_FIELDS.values()) or f[0] not in ("T", "N"):
            continue
        dtype = HIP_DTYPES.get(f[HIP_FIELDS["a_type"]])
        if dtype is None or f[HIP_FIELDS["trans_a"]] != "T":
            continue
        key = (dtype, int(f[HIP_FIELDS["n"]]), int(f[HIP_FIELDS["m"]]), int(f[HIP_FIELDS["k"]]))
        us = float(f[HIP_FIELDS["us"]])
        if us > 0 and (key not in best or us < best[key]):
            best[key] = us
    return [(*k, us) for k, us in sorted(best.items())]


def hipblaslt_what_if(path: Path, gpu: str) -> None:
    """``--hipblaslt FILE``: ``gpu``'s GEMM classes fitted on a hipBLASLt tuning file's rows (even rows, the odd
    held out), the stored terms scored on the same held-out rows, and the MLPerf v5.1 rows of ``gpu`` priced on
    the fit. Nothing stored."""
    import tempfile

    import numpy as np
    from ironlaw.machine import hardware
    from ironlaw.machine.profile import replace_table
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    from ironlaw.measure.calibrate.fitcore import Problem
    import mlperf_inference as mlperf
    rows = hipblaslt_rows(path)
    if not rows:
        raise SystemExit(f"{path}: no hipblaslt-bench rows (transA T, an fp8 or bf16 input)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / gpu / "gemm" / "hipblaslt" / "tuning" / "gemm_perf.csv"
        out.parent.mkdir(parents=True)
        with out.open("w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["device", "gemm_dtype", "m", "n", "k", "latency_us"])
            w.writerows([gpu, *r] for r in rows)
        tables = [replace(t, path=f"{gpu}/{t.path}")
                  for t in kerneltable.read(Path(tmp) / gpu, ops=("gemm",), gpu=gpu, framework="hipblaslt")]
        hw, gs = hardware.get(gpu), kernelfit.groups(tables)
        table = kernelfit.fit(replace(hw, calibration=None), gs, origin=f"hipBLASLt tuning rows ({Path(path).name})",
                              license="unstated", gemm_fill="auto")
        stored = hw.calibration.table() if hw.calibration is not None else None
        for g in gs:
            held = kernelfit.held_out(g)
            for label, cal in (("fitted on the file's even rows", table), (f"stored {gpu} terms", stored)):
                prob = Problem(hw, kernelfit.observations(g, held, hw), weighting="per_case")
                err = prob.times(cal) / prob.meas - 1.0
                print(f"{gpu} {g.name}, {len(held)} held-out rows, {label}: median |err| "
                      f"{100 * np.median(np.abs(err)):.1f}%, p90 {100 * np.percentile(np.abs(err), 90):.1f}%, "
                      f"signed median {100 * np.median(err):+.1f}%")
        own = Path(hw.path).read_text().split("\n[calibration]\n", 1)[0]
        cat = Path(tmp) / f"{gpu}-hipblaslt.toml"
        cat.write_text(own.replace(f'name = "{gpu}"', f'name = "{gpu}-hipblaslt"', 1))
        replace_table(cat, "calibration", table)
        for r in [r for r in mlperf.load() if r["gpu"] == gpu]:
            print(f"MLPerf {r['id']} {r['benchmark']}: stored {100 * (mlperf.predict(r) / r['published'] - 1):+.1f}%, "
                  f"on the fit {100 * (mlperf.predict(dict(r, gpu=str(cat))) / r['published'] - 1):+.1f}%")


def with_moe(hw, table: dict) -> dict:
    """``table`` (the GEMM classes fitted here) with the MoE-layer classes ``hw``'s catalog holds merged under it
    (``moe_grouped_gemm.*``, ``moe_rows.*``, their provenance and fitted / held-out entries: benchmarks/amd_moe.py),
    so that a GEMM refit leaves them as stored."""
    from ironlaw.machine.engines import MOE_CLASSES
    from ironlaw.measure.calibrate import kernelfit
    base = hw.calibration.table() if hw.calibration is not None else None
    kernel = {k: v for k, v in (base or {}).get("kernel", {}).items() if k.startswith(MOE_CLASSES)}
    if not kernel:
        return table
    moe = {"schema": base["schema"], "source": base["source"], "kernel": kernel,
           "provenance": {k: v for k, v in base.get("provenance", {}).items() if k.startswith("moe ")},
           "fitted": [e for e in base.get("fitted", []) if e.startswith("moe ")],
           "held_out": [e for e in base.get("held_out", []) if e.startswith("moe ")]}
    return kernelfit.merged(moe, table)


def datasheet_score(hw, g) -> tuple[int, float, float]:
    """(rows, median, p90 |error|) of the catalog's datasheet terms alone (no [calibration]) on ``g``'s held-out
    rows, the rows ``kernelfit.score`` runs."""
    import numpy as np
    from ironlaw.law import law
    from ironlaw.measure.calibrate import kernelfit
    from ironlaw.measure.calibrate.fitcore import Problem
    held = kernelfit.held_out(g)
    bare = replace(hw, calibration=None)
    prob = Problem(bare, kernelfit.observations(g, held, bare), weighting="per_case")
    t = np.asarray(law.timed(prob.placed, bare).op_time_s, float).reshape(-1) + prob.offset
    err = np.abs(t / prob.meas - 1.0)
    return len(held), float(np.median(err)), float(np.percentile(err, 90))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpu", action="append", choices=sorted(set(GPUS.values()) | set(CARRIED)))
    ap.add_argument("--write", action="store_true", help="store the fitted terms in the catalog's [calibration]")
    ap.add_argument("--stored", action="store_true", help="score the catalog's stored terms, fitting nothing")
    ap.add_argument("--extract", metavar="AITER_REPO", help="rewrite tests/data/aiter_kernels from an aiter clone")
    ap.add_argument("--hipblaslt", metavar="FILE", help="what-if, nothing stored: the --gpu GPU's GEMM classes fitted "
                    "on a hipBLASLt tuning file (AMD's MLPerf v5.1 MI325X file: closed/AMD/code/llama2-70b-99/scripts/"
                    "gemm_llama2-70b/aa0bda7b/tuning_spx_1700_formatted.txt), scored beside the stored terms")
    ap.add_argument("--gemm-fill", choices=("half", "tile", "stream", "auto"), default="half",
                    help="the GEMM classes' M term (kernelfit.GEMM_FILLS); auto keeps per class the form whose "
                         "held-out p90 is lower, as calibrate --kernels")
    a = ap.parse_args()
    if a.gemm_fill != "half" and (a.stored or a.extract):
        ap.error("--gemm-fill fits the GEMM classes: not with --stored or --extract")
    if a.extract:
        extract(Path(a.extract))
        return 0
    if a.hipblaslt:
        if not a.gpu or len(a.gpu) != 1 or a.write or a.stored or a.gemm_fill != "half":
            ap.error("--hipblaslt fits one GPU's rows as a what-if: give one --gpu, without --write, --stored or "
                     "--gemm-fill (it fits --gemm-fill auto)")
        if not Path(a.hipblaslt).is_file():
            ap.error(f"--hipblaslt: no such file: {a.hipblaslt}")
        hipblaslt_what_if(Path(a.hipblaslt), a.gpu[0])
        return 0
    rows, table = [], []
    named = a.gpu or sorted(set(GPUS.values()) | set(CARRIED))
    if a.gemm_fill != "half" and all(g in CARRIED for g in named):
        ap.error(f"--gemm-fill fits the GEMM classes: {', '.join(named)} carry another GPU's, fitting none")
    for gpu in [g for g in named if g not in CARRIED]:
        for g, name, s, (n, bmed, bp90) in run_gpu(gpu, a.write, a.stored, a.gemm_fill):
            fitted = (f"{100 * s.median_abs_err:.1f}% / {100 * s.p90_abs_err:.1f}%" if s else
                      f"not fitted (under {MIN_FIT_ROWS} rows to fit)")
            ok = s is not None and s.median_abs_err <= GOAL_MEDIAN and s.p90_abs_err <= GOAL_P90
            table.append(f"| {g} | {name} | {n} | {100 * bmed:.1f}% | {100 * bp90:.1f}% | "
                         + (" | ".join(fitted.split(" / ")) if s else "- | -") + " |")
            rows.append((f"{g} {name}: held-out median / p90 (datasheet {100 * bmed:.1f}% / {100 * bp90:.1f}%)",
                         f"{fitted} ({n} rows)", f"<= {GOAL_MEDIAN:.0%} / {GOAL_P90:.0%}", ok))
    for gpu in [g for g in named if g in CARRIED]:        # after the fits: a source written above is carried
        carry_gpu(gpu, a.write)
    if not rows:
        return 0
    print("| GPU | kernel class | held-out rows | datasheet median | datasheet p90 | fitted median | fitted p90 |")
    print("|---|---|---:|---:|---:|---:|---:|")
    print("\n".join(table))
    return 1 if print_table(rows, f"AMD GEMM kernels, ROCm/aiter {COMMIT[:8]} tuned tables: odd rows held out") else 0


if __name__ == "__main__":
    sys.exit(main())
