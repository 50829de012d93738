"""AMD Instinct MoE layers fitted on AMD's own measured, tuned fused-MoE kernels; held-out layer shapes scored.

    python benchmarks/amd_moe.py [--gpu NAME …] [--write]     # fit, score; --write stores the MoE classes
    python benchmarks/amd_moe.py --extract AITER_REPO          # rewrite tests/data/aiter_kernels/*/moe from aiter

Data: ROCm/aiter (AMD, MIT license; github.com/ROCm/aiter, commit ``COMMIT``), its tuned fused-MoE tables
``aiter/configs/tuned_fmoe.csv`` and ``aiter/configs/model_configs/*_tuned_fmoe*.csv``: one row per MoE layer shape
and token count that AMD's tuner timed on a GPU (``cu_num``: compute units; ``token``, ``model_dim`` (hidden),
``inter_dim`` (one expert's intermediate size on the GPU), ``expert``, ``topk``, the activation and the weight and
activation dtypes and scaling) with ``us``, the microseconds of the fastest kernel pair it found.

What a row times (csrc/ck_gemm_moe_2stages_codegen/gemm_moe_tune.py at ``COMMIT``, ``FmoeTuner``): the routed
experts' two grouped GEMMs of one layer on one GPU, every expert local — ``us = us1 + us2``: stage 1 the gated
up-projection (gate and up, ``use_g1u1``) with the SiLU-and-multiply fused and the output quantized for stage 2,
stage 2 the down-projection with the routing weights applied and the k rows of a token summed into its output; a
1-stage row (``run_1stage``: aiter's hand-written ``fmoe_*`` assembly kernel) is the whole layer in one kernel
(``us2`` 0). Timed with the routing already sorted by expert (``moe_sorting`` runs before, untimed, except where
the tuner adds its cost to compare a kernel that sorts inside) and the input already quantized (for block-scaled
FP8 the tuner adds the 1×128 quantization's time where the kernel takes bf16 in: ``xbf16``); the router's top-k is
not timed. Routing: each token's scores ``torch.randn`` (seed 0) and their top-k (``generate_data``), so each token
picks k distinct experts uniformly at random: the fit prices the rows and touched experts of that routing
(``moefit.UNIFORM``, the expectation, ``core.routing.uniform_local``). A model with a shared expert fused in
(``expert`` E + 1, ``topk`` k + 1: DeepSeek-V3.2's and GLM-5.1's rows) is timed with it routed like the others.

Kept (``KEEP``): gated (``use_g1u1`` 1) SiLU layers with bf16 activations in and out — bf16 weights (no scaling;
``bfloat16``), block-scaled FP8 (``QuantType.per_1x128``: 1×128 activation and 128×128 weight scales;
``fp8_block``), FP8 with per-token activation and per-channel weight scales (``QuantType.per_Token``; ``fp8``) and
MXFP4 times MXFP4 (``QuantType.per_1x32``, fp4x2 both; ``mxfp4``) — on gfx942 with 304 CUs and gfx950 with 256.
Left out: other activations (GELU, SwiGLU with its clamp, Situv2), mixed formats (FP8 or bf16 activations times
FP4 or INT4 weights, MXFP8), gfx942 with 80 CUs (MI308X, not in the catalog), rows without a time (``us`` 0: the
tuner's dispatch-only entries). A shape timed in more than one file or with more than one ``doweight_stage1``
keeps its fastest time (the tuner's pick at run time).

GPUs (``gpu_of``): gfx950 with 256 CUs is attributed to the MI355X (as the GEMM extract: the MI350X has the same
CU count). gfx942 with 304 CUs is both the MI300X and the MI325X (one die, one CU count; the tables do not say which),
so each row goes by the commit that last changed it (``git blame`` at ``COMMIT``; ``MI325X_ROWS``): to the MI325X
where that commit names it — aiter 84493f0e ("gfx942 MI325X: tuned a8w8 blockscale GEMM + FMoE configs for DSv3.2
TP8": DeepSeek-V3.2's 15 rows) and 6b831fb2 (GLM-5.1's tunings, "for gfx942 (MI300X/MI325)", whose 257-expert rows
its message names "(MI325)": 8 rows) — and to the MI300X otherwise: commits that name it (ca781d81 "update mi300x
moe qwen bf16 configs"; 11bf1082, "... on MI300X (304 CUs, E=257, topk=9)"; ebc905b0, MiMo's rows, from the branch
mimo_moe_mi300x_prefill), that name both (6b831fb2's 32-expert rows) or neither (c16d44b9, "retune GLM-5 FP8 decode
kernels": 4 of the 257-expert rows), as the GEMM extract takes gfx942 with 304 CUs for the MI300X.

Fitted per GPU and class (``DTYPES``); the gfx942 block-scaled FP8 rows also as the GPU's ``fp8`` MoE class
(``FP8_AS``; the provenance says "fp8_block rows, for fp8"), as the GEMM extract fits them: the only FP8 fused-MoE
timings of those GPUs at ``COMMIT`` (there is no per-tensor FP8 row on 304 CUs; MLPerf's per-tensor FP8 Mixtral runs
another kernel of aiter's, the per-tensor ``fmoe_bf16_pertokenFp8`` family or the CK 2-stage per-tensor pair, without
the block scales' extra multiply). Each class is fitted by ``moefit.fit`` in its base form (L, η_w, η_c, η_a: the
form of benchmarks/kernel_moe.py's bf16 and fp8 classes; no cost per expert slot, which kernel_moe.py gives
TensorRT-LLM's block-scaled CUTLASS layer for what the H200 rows show), every η at most 1, the weights' η_w too (the
tuner's ``run_perftest`` cycles its calls through copies of the weights far past the 256 MB Infinity Cache, so they
stream from HBM: ``kernelfit.rules.ROTATED_MOE_FRAMEWORKS``), solved within those bounds (``moefit.fit`` exact), on
every other layer shape (sorted; all its token counts) and scored on the rest; a class of under ``MIN_SHAPES``
shapes (the gfx942 classes, two or three shapes each, and MI355X bf16, one) on every other token count of each shape
(``token_split``), scored on the others — an interpolation between token counts, not a shape it has not seen.
Goal as kernel_moe.py: median ≤ 8%, p90 ≤ 20%. ``--write`` stores the fitted classes
(``moe_grouped_gemm.<dtype>``, ``moe_rows.<dtype>``) in src/ironlaw/machine/catalog/<gpu>.toml's ``[calibration]``,
merged over what it holds, with their provenance.
"""
from __future__ import annotations

import csv
import datetime
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))
from amd_kernels import COMMIT, DATA  # noqa: E402
from kernel_rows import held_out, median_p90  # noqa: E402
from aiter_extract import keep_fastest, write_per_gpu  # noqa: E402

GOAL_MEDIAN, GOAL_P90 = 0.08, 0.20
ORIGIN = f"ROCm/aiter {COMMIT[:8]} (AMD), tuned fused-MoE tables (tests/data/aiter_kernels)"
TABLE = re.compile(r"^aiter/configs/(model_configs/)?([A-Za-z0-9._-]+_)?tuned_fmoe(_[A-Za-z0-9._-]+)?\.csv$")
GFX = {"256": "gfx950", "304": "gfx942"}
# (q_dtype_a, q_dtype_w, q_type) with the ``torch.`` / ``QuantType.`` prefixes dropped -> the extract's moe_dtype
KEEP = {("bfloat16", "bfloat16", "No"): "bfloat16", ("float8_e4m3fnuz", "float8_e4m3fnuz", "per_1x128"): "fp8_block",
        ("float8_e4m3fn", "float8_e4m3fn", "per_1x128"): "fp8_block",
        ("float8_e4m3fn", "float8_e4m3fn", "per_Token"): "fp8",
        ("float4_e2m1fn_x2", "float4_e2m1fn_x2", "per_1x32"): "mxfp4"}
# the gfx942/304 rows whose last commit (git blame at COMMIT) names the MI325X: (commit, experts or None for all)
MI325X_ROWS = {("84493f0e5b0", None), ("6b831fb287a", 257)}
SCALES = {"bfloat16": "no scales", "fp8_block": "1x128 / 128x128 scales", "fp8": "per-token / per-channel scales",
          "mxfp4": "one E8M0 scale per 32 values"}      # what each moe_dtype's rows scale by (the provenance says it)
DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8_block", "mxfp4": "mxfp4"}   # -> ironlaw dtype
# the block-scaled rows also fitted as the GPU's fp8 class (where it has no FP8 rows of another scaling)
FP8_AS = {("mi300x", "fp8_block"): "fp8", ("mi325x", "fp8_block"): "fp8"}
# a class of fewer layer shapes is split by token count within each shape (``token_split``): a shape split would
# leave it one shape to fit, which cannot tell the rows' FLOPs from their traffic (docs/accuracy.md, the AMD MoE table)
MIN_SHAPES = 4
SHAPE = ["hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size"]
COLUMNS = ["device", "moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size",
           "moe_ep_size", "distribution", "latency_us", "kernel_source", "aiter_table"]


def gpu_of(cu: str, commit: str, experts: int) -> str | None:
    """The catalog GPU a row with ``cu`` CUs, last changed by ``commit``, is attributed to (module docstring)."""
    if cu == "256":
        return "mi355x"
    if cu != "304":
        return None
    named = any(commit.startswith(c) and e in (None, experts) for c, e in MI325X_ROWS)
    return "mi325x" if commit and named else "mi300x"


def blame(git: list, name: str) -> list[str]:
    """The commit that last changed each line of ``name`` at ``COMMIT`` (line 1, the header, first)."""
    out = subprocess.run(git + ["blame", "-s", "-l", COMMIT, "--", name], check=True, capture_output=True,
                         text=True).stdout
    return [line.split()[0].lstrip("^") for line in out.splitlines()]


def aiter_rows(repo: Path) -> dict:
    """{(gpu, moe_dtype, hidden, inter, topk, experts, tokens): (us, kernel, file)} of the kept rows at ``COMMIT``."""
    git = ["git", "-C", str(repo)]
    names = subprocess.run(git + ["ls-tree", "-r", "--name-only", COMMIT, "aiter/configs"], check=True,
                           capture_output=True, text=True).stdout.split()
    best: dict = {}
    for name in sorted(n for n in names if TABLE.search(n)):
        text = subprocess.run(git + ["show", f"{COMMIT}:{name}"], check=True, capture_output=True, text=True).stdout
        table = name.removeprefix("aiter/configs/")
        commits = blame(git, name) if re.search(r"(^|,)304,", text, re.M) else []     # gfx942 rows: by commit
        for line, r in enumerate(csv.DictReader(text.splitlines()), start=1):
            quant = tuple(r.get(c, "").removeprefix("torch.").removeprefix("QuantType.")
                          for c in ("q_dtype_a", "q_dtype_w", "q_type"))
            gfx = GFX.get(r.get("cu_num", ""))
            if quant not in KEEP or r.get("act_type") != "ActivationType.Silu" or r.get("use_g1u1") != "1" \
                    or r.get("dtype") != "torch.bfloat16" or r.get("gfx", gfx) != gfx:
                continue
            gpu = gpu_of(r.get("cu_num", ""), commits[line] if commits else "", int(r["expert"]))
            us = float(r.get("us") or 0)
            if gpu is None or not 0 < us < float("inf"):
                continue
            key = (gpu, KEEP[quant]) + tuple(int(r[c]) for c in ("model_dim", "inter_dim", "topk", "expert", "token"))
            keep_fastest(best, key, us, "1-stage" if r.get("run_1stage") == "1" else "2-stage", table)
    return best


def extract(repo: Path) -> None:
    """``aiter_rows`` as one kernel table per GPU: <gpu>/moe/aiter/<commit>/moe_perf.csv, sorted by class and shape."""
    best = aiter_rows(repo)

    def rows_of(gpu: str) -> list[list]:
        return [[gpu, dt, t, h, i, k, e, 1, 1, "uniform", f"{us:g}", kernel, table]
                for (_, dt, h, i, k, e, t), (us, kernel, table) in sorted((k, v) for k, v in best.items()
                                                                         if k[0] == gpu)]
    write_per_gpu(best, DATA, ROOT, COMMIT, "moe", COLUMNS, rows_of)


def groups(gpus: list[str] | None) -> list[tuple]:
    """[(gpu, ironlaw dtype, the table's moe_dtype, rows as a dict of arrays)] of the extract's classes."""
    from ironlaw.measure.calibrate import kerneltable
    out = []
    for gpu in sorted(p.name for p in DATA.iterdir() if (p / "moe").is_dir()):
        if gpus and gpu not in gpus:
            continue
        for t in kerneltable.read(DATA / gpu, ops=("moe",), gpu=gpu, framework="aiter"):
            for src in sorted(set(t.rows.moe_dtype)):
                r = t.rows[t.rows.moe_dtype == src]
                for dt in (DTYPES[src],) + ((FP8_AS[(gpu, src)],) if (gpu, src) in FP8_AS else ()):
                    out.append((gpu, dt, src, {c: r[c].to_numpy() for c in r.columns}))
    return out


def shapes(rows: dict) -> set:
    """The class's layer shapes (every column ``moefit.shape_split`` splits by)."""
    return set(zip(*(np.asarray(rows[c]).tolist() for c in SHAPE)))


def token_split(rows: dict) -> np.ndarray:
    """The fit half of a class of few layer shapes: every other token count of each shape (sorted), from the first;
    the others are scored."""
    key = list(zip(*(np.asarray(rows[c]).tolist() for c in SHAPE + ["num_tokens"])))
    order = {k: j for j, k in enumerate(sorted(key))}
    first = {}
    for k in sorted(key):
        first.setdefault(k[:-1], order[k])
    return np.array([(order[k] - first[k[:-1]]) % 2 == 0 for k in key])


def fit_class(gpu: str, dtype: str, rows: dict) -> tuple[dict | None, np.ndarray, int, str]:
    """(the class's kernel entries, |relative error| of its held-out rows, rows fitted, what was split: "layer
    shapes" or, under ``MIN_SHAPES`` shapes, "token counts of each layer shape"); no entries for a class of one
    layer shape and one token count."""
    from ironlaw.measure.calibrate import moefit
    from kernel_moe import layer_terms, stored_predict
    x, t, keep = layer_terms(gpu, dtype, rows, moefit.UNIFORM)
    split = "layer shapes"
    if len(shapes(rows)) < MIN_SHAPES:
        keep, split = token_split(rows), "token counts of each layer shape"
    if keep.all() or not keep.any():
        return None, np.array([]), 0, split
    kern, err = held_out(lambda x, t: moefit.kernels(fitted(x, t), dtype),
                         lambda kern, x: stored_predict(kern, dtype, x), x, t, keep)
    return kern, err, int(keep.sum()), split


def fitted(x: np.ndarray, t: np.ndarray):
    """moefit.fit in the base form, the weights' η_w at most 1 and solved within the bounds: aiter's tuner times a
    fresh copy of the weights at every call, so they stream from HBM (``kernelfit.rules.ROTATED_MOE_FRAMEWORKS``)."""
    from ironlaw.measure.calibrate import moefit
    from ironlaw.measure.calibrate.kernelfit import rules
    rotated = rules.holds(rules.ROTATED_MOE_FRAMEWORKS, "aiter")
    return moefit.fit(x, t, exact=rotated, stream_max=1.0 if rotated else moefit.STREAM_MAX)


def calibration_table(gpu: str, fits: list[tuple]) -> dict:
    """The [calibration] entries of ``gpu``'s fitted classes (``fits``: (gpu, dtype, moe_dtype, kern, err, n_fit)),
    with provenance, in kernelfit's form."""
    from ironlaw.machine.calibration import SCHEMA
    cal = {"schema": SCHEMA, "source": "", "fitted": [], "held_out": [], "kernel": {}, "provenance": {}}
    for g, dt, src, kern, err, n_fit, split in fits:
        if g != gpu or kern is None:
            continue
        said = f"{src} rows ({SCALES[src]})" + (f", for {dt}" if DTYPES[src] != dt else "")
        name = f"moe {dt} (aiter fused MoE, {said}, uniform routing)"
        cal["kernel"].update(kern)
        cal["fitted"].append(f"{name}: even {split}")
        cal["held_out"].append(f"{name}: odd {split}")
        cal["provenance"][f"moe {dt}"] = {
            "table": f"tests/data/aiter_kernels/{gpu}/moe/aiter/{COMMIT[:8]}/moe_perf.csv ({said})",
            "version": ORIGIN, "license": "MIT", "rows_fitted": n_fit, "rows_held_out": len(err),
            "date": datetime.date.today().isoformat()}
    cal["source"] = ("derived: the MoE layer's L, η_w, η_c, η_a per weight dtype fitted to the even layer shapes (a "
                     f"class of under {MIN_SHAPES} shapes: the even token counts of each) of "
                     "ROCm/aiter's tuned fused-MoE timings by benchmarks/amd_moe.py (ironlaw.measure.calibrate.moefit; "
                     "AMD, MIT)")
    return cal


def write(gpu: str, fits: list[tuple]) -> Path:
    """``gpu``'s catalog [calibration] with these MoE classes and provenance merged over what it holds."""
    from kernel_moe import store
    return store(gpu, calibration_table(gpu, fits))


def main() -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpu", action="append", choices=("mi300x", "mi325x", "mi355x"))
    ap.add_argument("--write", action="store_true", help="store the fitted MoE classes in the catalog's [calibration]")
    ap.add_argument("--extract", metavar="AITER_REPO",
                    help="rewrite tests/data/aiter_kernels/*/moe from an aiter clone")
    a = ap.parse_args()
    if a.extract:
        if a.gpu or a.write:
            ap.error("--extract writes every GPU's rows: not with --gpu or --write")
        extract(Path(a.extract))
        return 0
    fits = [(g, dt, src) + fit_class(g, dt, rows) for g, dt, src, rows in groups(a.gpu)]
    print(f"MoE layer (ROCm/aiter {COMMIT[:8]} tuned fused MoE, uniform routing): fitted on every other layer shape "
          f"(under {MIN_SHAPES} shapes: every other token count of each), "
          f"scored on the rest; goal median ≤ {GOAL_MEDIAN:.0%}, p90 ≤ {GOAL_P90:.0%}")
    print(f"{'GPU':7s} {'class':22s} {'fit':>4s} {'held':>5s} {'median':>7s} {'p90':>6s}   L µs   η_w   η_c   η_a  "
          "goal  split")
    for g, dt, src, kern, err, n_fit, split in fits:
        label = f"{dt} ({src} rows)" if src != dt else dt
        if kern is None:
            print(f"{g:7s} {label:22s}    - one row: not fitted")
            continue
        gm, r = kern[f"moe_grouped_gemm.{dt}"], kern[f"moe_rows.{dt}"]
        med, p90 = median_p90(err)
        ok = med <= GOAL_MEDIAN and p90 <= GOAL_P90
        print(f"{g:7s} {label:22s} {n_fit:4d} {len(err):5d} {100 * med:6.1f}% {100 * p90:5.1f}% "
              f"{2e6 * gm['latency_s']:6.1f} {gm['streamed']:5.2f} {gm['eta_max']:5.2f} {r['memory']:5.2f}  "
              f"{'met ' if ok else 'MISS'}  {split}")
    if a.write:
        for gpu in sorted({f[0] for f in fits if f[3] is not None}):
            print(f"wrote {write(gpu, fits).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
