"""The MoE layer's law terms fitted per GPU and weight dtype on measured MoE tables; held-out shapes scored.

Data: the moe_perf tables of aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0;
systems/data/<system>/moe/trtllm/1.3.0rc20/moe_perf.parquet: TensorRT-LLM 1.3.0rc20's fused MoE timed on one
GPU per row), read by ironlaw.measure.calibrate.kerneltable from ``--data DIR`` (the wheel's systems/data)
or, by default, from the extract in tests/data/kernel_tables (every 8th layer shape of two GPUs' fp8 rows).
Rows used: ``kernel_source`` moe_torch_flow_cutlass (the gated CUTLASS path), ``distribution`` balanced (the
collector's deterministic routing, reconstructed exactly), weight dtypes bfloat16, fp8 and nvfp4; and the
block-scaled FP8 rows (``fp8_block``, DeepSeek-V3/R1's recipe) as a class of their own, whichever gated kernel the
GPU's table times them with (Hopper: moe_torch_flow_cutlass; Blackwell: deepgemm); and the weight-only MXFP4 rows
(``w4a16_mxfp4``, gpt-oss's experts: ``moe_torch_flow``, gpt-oss's 13–14 layer shapes per GPU) as another.

Fitted (ironlaw.measure.calibrate.moefit): per GPU and dtype L, η_w, η_c, η_a (and L_e per local expert slot,
``PER_EXPERT``; L_t per token of the layer, ``PER_TOKEN``; L_u per expert the rows reach and L_t on the
``STORED_TOUCHED`` classes, and with ``--touched`` on the ``TOUCHED`` ones) on every other layer shape (all its token
counts);
scored: the other shapes. Goal: median |error| ≤ 8%, p90 ≤ 20% per GPU × dtype. Also printed,
not stored: the same form fitted and scored on the MoE TP 1 rows alone (the regime the serving engine runs).

    python benchmarks/kernel_moe.py [--data DIR] [--write] [--only DTYPE] [--gpu GPU] [--touched]
    # --write: into the catalog's [calibration] (--only, --gpu: those classes); --touched: ``TOUCHED`` below
    python benchmarks/kernel_moe.py --data DIR --extract tests/data/kernel_tables
    python benchmarks/kernel_moe.py --data DIR --framework vllm|sglang [--gpu GPU] [--only DTYPE] [--write]
    # vLLM's or SGLang's own fused-MoE tables, into their engine files (benchmarks/moe_frameworks.py)

A TensorRT-LLM release's own MoE layer (``release_fits``: aiconfigurator 0.8.0's 1.0-line ``moe_perf.txt``,
``kernel_source`` moe_torch_flow, ``distribution`` power_law_1.01 — the only routing those tables hold, its rows
and experts per rank the collector's expectation, ``moefit.power_law_local``; float16 rows for bf16) is fitted
in ``RELEASE_FORM`` and stored by benchmarks/kernel_tables.py --release 1.0, in the release's kernel file, or (its
MoE classes alone, merged over the file) by

    python benchmarks/kernel_moe.py --data DIR08 --release 1.0 [--gpu GPU] [--only DTYPE] [--write]
"""
from __future__ import annotations

import datetime
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "kernel_tables"
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from kernel_rows import arguments, held_out, median_p90, tables, write_extract  # noqa: E402
from ironlaw.core.routing import TORCH_ROUTER_ABOVE  # noqa: E402
from ironlaw.measure.calibrate.kernelfit import rules  # noqa: E402

VERSION = "1.3.0rc20"          # rc23's moe table holds the DeepSeek-V4 shapes only (its reuse.yaml)
SYSTEMS = ("h100_sxm", "h200_sxm", "b200_sxm", "b300_sxm", "gb200", "gb300", "l40s", "rtx_pro_6000_server")
DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "nvfp4": "fp4", "fp8_block": "fp8_block", "w4a16_mxfp4": "w4a16_mxfp4"}
KERNEL, ROUTING = "moe_torch_flow_cutlass", "balanced"
MIN_LATENCY = "moe_torch_flow_min_latency"     # Llama 4's min-latency NVFP4 layer (SM 100 tables only)
# table dtype -> the gated kernels timing it (weight-only MXFP4: TensorRT-LLM's torch-flow MoE, gpt-oss's shapes)
KERNELS = {"fp8_block": ("moe_torch_flow_cutlass", "deepgemm"), "w4a16_mxfp4": ("moe_torch_flow",)}
# the classes fitted with a cost per local expert slot (moefit.fit per_expert): block-scaled FP8, where the rows
# show it (H200, one token: 27 µs at 1–16 local experts, 107 µs at 256); the other dtypes' ~0.04 µs per slot
# (bf16, fp8) moves their held-out median by under 0.5 point, and the serving cells rest on their stored terms
PER_EXPERT = ("fp8_block",)
# the classes fitted under their bounds exactly (moefit.fit exact): weight-only MXFP4, where the clipped iteration
# lands Hopper's η_a at 0.02 and holds out at 34% / 175% (H100) against 17.9% / 37.0% solved within the bounds; on
# Blackwell both give the same fit. The other classes keep the clipped fit they are stored with
EXACT = ("w4a16_mxfp4",)
# the classes fitted with a cost per token the layer takes in (moefit.fit per_token): weight-only MXFP4, whose Hopper
# layer is TensorRT-LLM's Triton MoE (the collector's moe_backend "triton" below SM 100): its router runs the top-k
# and, under EP, prunes and compacts the routing one program per token of the step, local or not
# (tensorrt_llm/_torch/modules/fused_moe/fused_moe_triton.py, TritonEPRouter.__call__ / prune_routing_ep)
PER_TOKEN = ("w4a16_mxfp4",)
# the (GPU, class) whose grouped GEMMs pad each expert's rows to an M block (core.routing.M_BLOCKS): gpt-oss's layer
# on Hopper, which the collector runs on TensorRT-LLM's Triton MoE (aiconfigurator collector/trtllm/collect_moe.py:
# GPT-OSS below SM 100 takes moe_backend "triton"), triton_kernels' matmul_ogs picking its block_m from the rows per
# expert. Without it Hopper's held-out rows miss on the block changes (H100 10.1% / 23.2%)
M_BLOCK = {("h100", "w4a16_mxfp4"): "triton", ("h200", "w4a16_mxfp4"): "triton"}
# --touched: the (GPU, class) fitted with a cost per expert the rows reach and per token the layer takes in
# (moefit.fit per_touched and per_token, solved within the bounds, T += L_u·U + L_t·t): TensorRT-LLM's CUTLASS MoE on
# Blackwell, every one of whose classes both terms improve in median and p90 (benchmarks/moe_forms.py, "U+t": B200
# fp4 14.7% / 38.6% → 9.8% / 29.5%, GB300 fp4 10.3% / 33.2% → 5.9% / 17.3%); on Hopper they lower the medians and not
# the p90 (H200 fp8 54.1% → 56.1%). Not the stored form: written, they take benchmarks/trtllm_blackwell.py's MoE
# cells from 8.6% to 14.2% median (docs/accuracy.md, the MoE layer). The 1.0 release's classes: RELEASE_FORM
TOUCHED = {(gpu, dt) for gpu in ("b200", "b300", "gb200", "gb300") for dt in ("bf16", "fp8", "fp4")}
# the (GPU, class) stored with the costs per touched expert and per token (fitted so without --touched): each meets
# both goals with them and misses without (held out, median / p90, base → U+t; docs/accuracy.md, the MoE layer).
# Block-scaled FP8 on Blackwell is DeepGEMM's masked grouped GEMM (tensorrt_llm/_torch/modules/fused_moe/
# fused_moe_deepgemm.py, DeepGemmFusedMoE.forward_chunk): per token a Triton index copy with the 1 × 128 group
# quantization into each expert's slice of a [local experts, M, hidden] buffer and a gather back before the
# finalize (masked_index_copy_group_quant_fp8, triton_masked_index_gather), per touched expert its rows padded to the
# kernel's M block (masked_m): B200 6.5% / 21.2% → 5.4% / 15.9%, B300 6.4% / 21.3% → 5.6% / 15.9%, GB200 6.3% /
# 20.4% → 5.5% / 15.6%, GB300 6.2% / 20.6% → 5.4% / 15.6% (Hopper's CUTLASS fp8_block rows: L_t fits to 0, the p90
# within 0.2 point: kept). The CUTLASS classes that store the same two costs are fitted on their own-key rows
# (OWN_KEY, below)
STORED_TOUCHED = frozenset({(gpu, "fp8_block") for gpu in ("b200", "b300", "gb200", "gb300")})
# the (GPU, class) fitted and scored on the rows of their own autotuner key (moefit.shared_tuning: no other collected
# case writes or loads the cache file their layer shape is tuned into), with the costs per touched expert and per
# token; the held-out rows of the other shapes are scored beside them, never fitted. aiconfigurator's collector tunes
# once per (dtype, hidden, inter/TP, local experts) file and a later case of the file loads it untuned
# (collector/trtllm/collect_moe.py, run_moe_torch: cache_path, glob.glob(f"{cache_path}*")), so those rows run
# another case's tactics or the autotuner's fallback; a serving engine tunes its own layers' shapes before it serves
# (TensorRT-LLM tensorrt_llm/_torch/pyexecutor/model_engine.py, _run_autotuner_warmup: a forward pass of the model
# at its max_num_tokens under autotune()). Held out with U + t, own-key rows (all rows), median / p90: fp8 H100 4.7%
# / 15.1% (6.3% / 45.1%), H200 5.2% / 14.9% (6.8% / 56.7%), B200 5.6% / 15.8%, B300 5.5% / 15.8%, GB200 5.5% /
# 15.3%, GB300 5.6% / 15.7%; bf16 H100 5.0% / 19.7%, B200 6.7% / 18.6%, B300 6.7% / 19.4%, GB200 6.5% / 18.6%,
# GB300 6.4% / 18.4%; fp4 B300 5.5% / 15.5%, GB300 5.3% / 14.9% (docs/accuracy.md, the MoE layer). B200 and GB200
# fp4: on SM 100 the min-latency NVFP4 layer shares every file up to 256 experts; a shape it alone shares is own where
# its rows agree with SM 103's same shape (kernelfit.rules.MOE_CROSS_CHECK, ``cross_checked``): 6.0% / 16.3%, 5.4% /
# 15.2% (every row 14.7% / 38.6%, 13.1% / 40.7% on the base form before). H200 bf16 misses on its own-key
# rows (5.6% / 21.9%) and keeps the base form; L40S and RTX PRO 6000 keep their tail on own-key rows (it is not the
# cache there)
OWN_KEY = frozenset({(g, "fp8") for g in ("h100", "h200", "b200", "b300", "gb200", "gb300")} |
                    {(g, "bf16") for g in ("h100", "b200", "b300", "gb200", "gb300")} |
                    {(g, "fp4") for g in ("b200", "b300", "gb200", "gb300")})
GOAL_MEDIAN, GOAL_P90 = 0.08, 0.20
PACKAGE, LICENSE = "aiconfigurator-core 0.12.0 (NVIDIA)", "Apache-2.0"
EXTRACT = (("b200_sxm", "fp8"), ("h200_sxm", "fp8"), ("h200_sxm", "fp8_block"))  # (table folder, dtype): every 8th shape
SHAPE = ["hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size"]


@dataclass(frozen=True)
class ClassFit:
    """One MoE class's fit: its GPU (ironlaw's name) and ironlaw dtype, the table it was fitted on, its kernel entries
    as stored, the |relative error| of its scored held-out rows (``fit_and_score``), the rows fitted and held out, and
    (the balanced tables' classes) the |relative error| of every held-out row, its own key or not (``all_rows``)."""
    gpu: str
    dtype: str
    path: str
    kern: dict
    err: np.ndarray
    n_fit: int
    n_held: int
    every: np.ndarray | None = None


def groups(data: Path) -> list[tuple]:
    """[(gpu, ironlaw dtype, table path, rows as a dict of arrays)] of every system and dtype found."""
    from ironlaw.measure.calibrate import moefit
    out = []
    for _, t, path in tables(data, SYSTEMS, "moe", "trtllm", VERSION, "moe"):
        rows = t.rows[t.rows.distribution == ROUTING]
        for dt, law_dt in DTYPES.items():
            r = rows[(rows.moe_dtype == dt) & rows.kernel_source.isin(KERNELS.get(dt, (KERNEL,)))]
            if len(r):
                said = f" ({dt} rows, {', '.join(sorted(set(r.kernel_source)))})" if dt in KERNELS else ""
                got = {c: r[c].to_numpy() for c in r.columns}
                every = t.rows[t.rows.moe_dtype == dt]
                got["shared_key"] = moefit.shared_tuning(got, {c: every[c].to_numpy() for c in every.columns})
                if rules.holds(rules.MOE_CROSS_CHECK, law_dt, t.gpu):
                    alone = every[every.kernel_source != MIN_LATENCY]
                    got["shared_other"] = moefit.shared_tuning(got, {c: alone[c].to_numpy() for c in alone.columns})
                out.append((t.gpu, law_dt, path + said, got))
    return cross_checked(out)


def cross_checked(out: list[tuple]) -> list[tuple]:
    """``groups`` with the ``shared_key`` of each class of ``kernelfit.rules.MOE_CROSS_CHECK`` read again: a layer shape
    whose cache file the min-latency NVFP4 layer alone shares is its own key where its rows run within
    ``MOE_CROSS_RATIO`` of the same shape's on ``MOE_CROSS_REFERENCE``'s GPU (``moefit.agrees``), shared where they
    run slower or the reference's table is not there. The class keeps its file's sharing as read before
    (``shared_file``) beside ``shared_other``, the sharing by a case other than the min-latency layer."""
    from ironlaw.measure.calibrate import moefit
    by = {(gpu, dt): rows for gpu, dt, _, rows in out}
    for gpu, dt, _, rows in out:
        if "shared_other" in rows:
            ref = by.get((rules.MOE_CROSS_REFERENCE[gpu], dt))
            vouched = (moefit.agrees(rows, ref, rules.MOE_CROSS_RATIO) if ref is not None
                       else np.zeros(len(rows["num_tokens"]), bool))
            rows["shared_file"] = rows["shared_key"]
            rows["shared_key"] = rows["shared_other"] | (rows["shared_key"] & ~vouched)
    return out


# a release's own MoE rows (aiconfigurator 0.8.0's 1.0-line tables): table dtype -> ironlaw dtype, kernel, routing
RELEASE_DTYPES = {"float16": "bf16", "fp8": "fp8", "nvfp4": "fp4"}   # fp8_block, w4afp8: no ironlaw dtype runs them
RELEASE_KERNEL, RELEASE_ROUTING = "moe_torch_flow", "power_law_1.01"
# the release's form: the base terms, a cost per touched expert and per token, and the router's PyTorch top-k where the
# layer routes on it (core.routing.TORCH_ROUTER_ABOVE: above 128 experts or top-8; the collector times the layer with
# TensorRT-LLM's renormalize router), solved within the bounds (moefit.fit per_touched, per_token, per_router, exact).
# Held out on the full tables it takes the 10 classes (H100, H200 bf16/fp8; B200, GB200 bf16/fp8/fp4) from 7.6–20.1% /
# p90 23.2–38.5% to 4.3–6.5% / 11.4–18.6% (docs/accuracy.md, "Kernel tables of the v1.0 release")
RELEASE_FORM = {"per_touched": True, "per_token": True, "per_router": True, "exact": True}
RELEASE_ROUTER = {"1.0": TORCH_ROUTER_ABOVE}
FRAMEWORKS = ("vllm", "sglang")     # --framework: their own fused-MoE tables (benchmarks/moe_frameworks.py)


def release_groups(data: Path, folder: str, release: str) -> list[tuple]:
    """[(gpu, ironlaw dtype, table path, rows)] of one GPU folder's MoE rows of ``release`` (``RELEASE_*``)."""
    from ironlaw.measure.calibrate import kerneltable
    out = []
    for t in kerneltable.read(data / folder, ops=("moe",), framework="trtllm", release=release):
        rows = t.rows[(t.rows.kernel_source == RELEASE_KERNEL) & (t.rows.distribution == RELEASE_ROUTING)]
        for src, dt in RELEASE_DTYPES.items():
            r = rows[rows.moe_dtype == src]
            if len(r):
                out.append((t.gpu, dt, f"{folder}/{t.path}", {c: r[c].to_numpy() for c in r.columns}))
    return out


def release_fits(data: Path, folder: str, release: str) -> list[ClassFit]:
    """The fits (``ClassFit``, without ``every``) of a release's MoE classes."""
    fits = []
    for gpu, dt, path, rows in release_groups(data, folder, release):
        kern, err, n_fit = fit_and_score(gpu, dt, rows, RELEASE_ROUTING, release=release)
        fits.append(ClassFit(gpu, dt, path, kern, err, n_fit, len(err)))
    return fits


def release_table(gpu: str, fits: list[ClassFit], release: str) -> dict | None:
    """A release's MoE entries for ``gpu`` as a [calibration] table (None without MoE rows), its provenance
    the release's tables: aiconfigurator 0.8.0 (NVIDIA, PyPI, Apache-2.0)."""
    if not any(f.gpu == gpu for f in fits):
        return None
    versions = sorted({Path(f.path).parent.name for f in fits if f.gpu == gpu})
    cal = calibration_table(gpu, fits, package="aiconfigurator 0.8.0 (NVIDIA, PyPI)", version=", ".join(versions),
                            what=f"TensorRT-LLM {release} fused MoE ({RELEASE_KERNEL}), {RELEASE_ROUTING} routing")
    for name, p in cal["provenance"].items():
        if name == "moe bf16":
            p["table"] += " (float16 rows, for bf16)"
    return cal


def release_stored(data: Path, folder: str, release: str, table: dict) -> list[tuple]:
    """[(gpu, dtype, held-out |errors|)] of a release file's stored MoE entries on the release's held-out shapes."""
    out = []
    for gpu, dt, _, rows in release_groups(data, folder, release):
        if f"moe_grouped_gemm.{dt}" not in table.get("kernel", {}):
            continue
        x, t, keep = layer_terms(gpu, dt, rows, RELEASE_ROUTING, RELEASE_ROUTER.get(release))
        out.append((gpu, dt, np.abs(stored_predict(table["kernel"], dt, x[~keep]) / t[~keep] - 1)))
    return out


def fit_and_score(gpu: str, dtype: str, rows: dict, routing: str = ROUTING,
                  touched: bool = False, release: str | None = None) -> tuple[dict, np.ndarray, int]:
    """(kernel entries as stored, |relative error| of the held-out shapes, rows fitted); ``touched``: a
    ``TOUCHED`` class on the balanced tables fitted with its costs per touched expert and per token; ``release``: a
    release's own rows, fitted in ``RELEASE_FORM``; an ``OWN_KEY`` class: fitted on, and scored on, the rows of
    shapes of their own tuning key (``own_key``; ``all_rows`` scores every held-out row)."""
    from ironlaw.measure.calibrate import moefit
    x, t, keep = layer_terms(gpu, dtype, rows, routing, RELEASE_ROUTER.get(release))
    touched = routing == ROUTING and with_touched(gpu, dtype, touched)
    def fit(x, t):
        f = moefit.fit(x, t, **RELEASE_FORM) if release else fitted(x, t, dtype, touched)
        return moefit.kernels(f, dtype, M_BLOCK.get((gpu, dtype)))
    own = own_key(gpu, dtype, rows, routing)
    kern, err = held_out(fit, lambda kern, x: stored_predict(kern, dtype, x), x[own], t[own], keep[own])
    return kern, err, int((keep & own).sum())


def own_key(gpu: str, dtype: str, rows: dict, routing: str = ROUTING) -> np.ndarray:
    """The rows a class is fitted and scored on: an ``OWN_KEY`` class's on the balanced tables, those whose layer shape
    no other collected case shares an autotuner cache file with (``groups``' ``shared_key``); every row otherwise."""
    n = len(rows["num_tokens"])
    if routing != ROUTING or (gpu, dtype) not in OWN_KEY:
        return np.ones(n, bool)
    return ~np.asarray(rows["shared_key"], bool)


def all_rows(gpu: str, dtype: str, rows: dict, kern: dict) -> np.ndarray:
    """|relative error| of the stored entries ``kern`` on every held-out row of the class, its own key or not."""
    x, t, keep = layer_terms(gpu, dtype, rows)
    return np.abs(stored_predict(kern, dtype, x[~keep]) / t[~keep] - 1)


def serving_regime(gpu: str, dtype: str, rows: dict, touched: bool = False) -> np.ndarray:
    """|relative error| of the held-out shapes when the fit and the score keep only the rows of the regime the
    serving engine runs (MoE TP 1: attention DP with the experts split by EP, models/serving/parallel.py)."""
    from ironlaw.measure.calibrate import moefit
    tp1 = np.asarray(rows["moe_tp_size"]) == 1
    x, t, keep = layer_terms(gpu, dtype, {k: np.asarray(v)[tp1] for k, v in rows.items()})
    on = with_touched(gpu, dtype, touched)
    return held_out(lambda x, t: fitted(x, t, dtype, on), moefit.predict_s, x, t, keep)[1]


def with_touched(gpu: str, dtype: str, asked: bool = False) -> bool:
    """Whether ``gpu``'s class ``dtype`` is fitted with its costs per touched expert and per token: stored so
    (``STORED_TOUCHED``, ``OWN_KEY``), or asked for (``--touched``) and a candidate (``TOUCHED``)."""
    return (gpu, dtype) in STORED_TOUCHED | OWN_KEY or (asked and (gpu, dtype) in TOUCHED)


def fitted(x: np.ndarray, t: np.ndarray, dtype: str, touched: bool = False):
    """moefit.fit of ``dtype``'s rows in the form this benchmark gives the class (PER_EXPERT, EXACT, PER_TOKEN;
    ``touched``: a class of ``TOUCHED``, with the costs per touched expert and per token)."""
    from ironlaw.measure.calibrate import moefit
    return moefit.fit(x, t, per_expert=dtype in PER_EXPERT, exact=dtype in EXACT or touched,
                      per_token=dtype in PER_TOKEN or touched, per_touched=touched)


def layer_terms(gpu: str, dtype: str, rows: dict, routing: str = ROUTING, router_above: tuple | None = None,
                pairs: str | None = None, groups: np.ndarray | None = None, m_block: str | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the law's MoE terms of each row on ``gpu`` routed as ``routing``, measured seconds, the rows of the fitted
    layer shapes); ``router_above``: the release's router kernel limits (``RELEASE_ROUTER``, moefit.terms);
    ``pairs``: the layer runs over every token-expert pair on that kernel (moefit.terms, ``kernelfit.rules.MOE_PAIRS``);
    ``groups``: per row the group-limited router the collector ran (moefit.terms, ``kernelfit.rules.grouped_routing``);
    ``m_block``: the M block rule the rows are padded by (moefit.terms; None: ``M_BLOCK``'s for the class)."""
    from ironlaw.machine import hardware
    from ironlaw.measure.calibrate import moefit
    hw = hardware.get(gpu)
    x = moefit.terms(rows, dtype, hw.peak_flops[moefit.compute_dtype(dtype)], hw.memory[hw.device_tier].bw_Bps,
                     routing, m_block or M_BLOCK.get((gpu, dtype)), router_above, pairs, groups)
    return x, rows["latency_s"].astype(float), moefit.shape_split(rows)


def stored_predict(kern: dict, dtype: str, x: np.ndarray) -> np.ndarray:
    """The layer time from the stored kernel entries (what the catalog holds, rounded as written)."""
    from ironlaw.measure.calibrate.moefit import MoeFit, predict_s
    g, r = kern[f"moe_grouped_gemm.{dtype}"], kern[f"moe_rows.{dtype}"]
    q = kern.get(f"moe_router.{dtype}", {})
    return predict_s(MoeFit(2 * g["latency_s"], g["streamed"], g["eta_max"], r["memory"], 0, 2 * g.get("expert_s", 0.0),
                            r.get("token_s", 0.0), 2 * g.get("touched_s", 0.0), q.get("latency_s", 0.0),
                            q.get("memory", 0.0), g.get("unaligned_k", 0.0)), x)


def calibration_table(gpu: str, fits: list[ClassFit], package: str = PACKAGE, version: str = VERSION,
                      what: str = "TensorRT-LLM CUTLASS fused MoE, balanced routing") -> dict:
    """The [calibration] entries of ``gpu``'s fits, with provenance, in kernelfit's form."""
    from ironlaw.machine.calibration import SCHEMA
    date = datetime.date.today().isoformat()
    cal = {"schema": SCHEMA, "source": "", "fitted": [], "held_out": [], "kernel": {}, "provenance": {}}
    for f in fits:
        if f.gpu != gpu:
            continue
        dt = f.dtype
        name = f"moe {dt} ({what.replace('CUTLASS ', '') if dt in KERNELS else what})"   # its kernel: the table's
        own = (f.gpu, dt) in OWN_KEY and package == PACKAGE
        cal["kernel"].update(f.kern)
        cal["fitted"].append(f"{name}: even layer shapes")
        cal["held_out"].append(f"{name}: odd layer shapes")
        checked = (f"; or the min-latency layer alone, the shape's rows within {rules.MOE_CROSS_RATIO} of "
                   f"{rules.MOE_CROSS_REFERENCE.get(f.gpu)}'s, kernelfit.rules.MOE_CROSS_CHECK"
                   if rules.holds(rules.MOE_CROSS_CHECK, dt, f.gpu) else "")
        rows = (" (rows: the layer shapes no other collected case shares an autotuner cache file with, "
                f"moefit.shared_tuning{checked})") if own else ""
        cal["provenance"][f"moe {dt}"] = {"table": f.path + rows, "version": f"{package}; trtllm {version}",
                                          "license": LICENSE, "rows_fitted": f.n_fit, "rows_held_out": f.n_held,
                                          "date": date}
    cal["source"] = (f"derived: the MoE layer's L, η_w, η_c, η_a per weight dtype fitted to the even layer shapes "
                     f"of measured fused-MoE tables by benchmarks/kernel_moe.py (ironlaw.measure.calibrate.moefit; "
                     f"{package}, {LICENSE})")
    return cal


def goal_met(err: np.ndarray) -> bool:
    med, p90 = median_p90(err)
    return med <= GOAL_MEDIAN and p90 <= GOAL_P90


def write(gpu: str, fits: list[ClassFit]) -> Path:
    """``gpu``'s catalog [calibration] with these kernel entries and provenance over what it holds."""
    return store(gpu, calibration_table(gpu, fits))


def store(gpu: str, new: dict) -> Path:
    """``gpu``'s catalog [calibration] with ``new``'s kernel entries and provenance merged over what it holds."""
    from ironlaw.machine import hardware
    from ironlaw.machine.profile import replace_table
    from ironlaw.measure.calibrate.kernelfit import merged
    hw = hardware.get(gpu)
    base = hw.calibration.table() if hw.calibration is not None else None
    table = merged(base, new)
    if base and new["source"][len("derived: "):] in base["source"]:     # a rerun: the source says it once
        table["source"] = base["source"]
    return replace_table(Path(hw.path), "calibration", table)


def catalog_matches(fits: list[ClassFit]) -> list[str]:
    """(gpu, dtype) whose catalog kernel entries differ from this fit (empty: the catalog holds them)."""
    from ironlaw.machine import hardware
    bad = []
    for f in fits:
        cal = hardware.get(f.gpu).calibration
        have = cal.kernel if cal is not None else {}
        if any(have.get(k) != v for k, v in f.kern.items()):
            bad.append(f"{f.gpu} {f.dtype}")
    return bad


def extract(data: Path, out: Path) -> None:
    """The tests' extract (``EXTRACT``): every 8th layer shape (all its token counts) of some GPUs' rows, one file
    per GPU."""
    import pandas as pd
    from ironlaw.measure.calibrate import kerneltable
    cols = ["framework", "version", "device", "op_name", "kernel_source", "moe_dtype", "num_tokens"] + \
        SHAPE + ["distribution", "latency"]
    for system in dict.fromkeys(s for s, _ in EXTRACT):
        folder = data / system / "moe" / "trtllm" / VERSION
        parts = []
        for t in kerneltable.read(folder, ops=("moe",)):
            for dt in (d for s, d in EXTRACT if s == system):
                src = {v: k for k, v in DTYPES.items()}[dt]
                rows = t.rows[t.rows.kernel_source.isin(KERNELS.get(src, (KERNEL,))) &
                              (t.rows.distribution == ROUTING) & (t.rows.moe_dtype == src)]
                shapes = sorted(set(map(tuple, rows[SHAPE].to_numpy().tolist())))
                keep = {s for j, s in enumerate(shapes) if j % 8 == 0}
                rows = rows[[tuple(s) in keep for s in rows[SHAPE].to_numpy().tolist()]]
                parts.append(rows.sort_values(SHAPE + ["num_tokens"], kind="stable"))
        write_extract(pd.concat(parts), cols, out / system / "moe" / "trtllm" / VERSION / "moe_perf.csv")


def release_main(a, data: Path) -> int:
    """``--release``: the release's MoE classes fitted in ``RELEASE_FORM`` and scored per GPU and dtype beside the
    release file's stored entries; ``--write``: merged over that file (its other classes untouched)."""
    from ironlaw.machine import engines
    from ironlaw.measure.calibrate.kernelfit import merged
    from kernel_tables import RELEASE_GPUS
    print(f"MoE layer (TensorRT-LLM {a.release}, {RELEASE_ROUTING}), aiconfigurator 0.8.0: fitted on every other "
          f"layer shape, scored on the rest; stored → this fit, median / p90")
    for folder in RELEASE_GPUS:
        fits = [f for f in release_fits(data, folder, a.release)
                if (not a.only or f.dtype in a.only) and (not a.gpu or f.gpu in a.gpu)]
        if not fits:
            continue
        gpu = fits[0].gpu
        table = engines.load(gpu, "trtllm", a.release) or {}
        stored = {dt: err for _, dt, err in release_stored(data, folder, a.release, table)} if table else {}
        for f in fits:
            dt, kern, err = f.dtype, f.kern, f.err
            was = "      —      " if dt not in stored else "{:5.1f}% / {:5.1f}%".format(*(100 * v for v in median_p90(stored[dt])))
            med, p90 = median_p90(err)
            q = kern.get(f"moe_router.{dt}", {})
            print(f"{gpu:6s} {dt:5s} {was} → {100 * med:5.1f}% / {100 * p90:5.1f}%  "
                  f"{'met' if med <= GOAL_MEDIAN and p90 <= GOAL_P90 else 'MISS'}   L_u "
                  f"{2e9 * kern[f'moe_grouped_gemm.{dt}'].get('touched_s', 0.0):5.0f} ns, L_t "
                  f"{1e9 * kern[f'moe_rows.{dt}'].get('token_s', 0.0):4.1f} ns, router L_r "
                  f"{1e6 * q.get('latency_s', 0.0):5.1f} µs η_r {q.get('memory', 0.0):.4f}", flush=True)
        if a.write:
            new = release_table(gpu, fits, a.release)
            print(f"wrote {engines.write(gpu, 'trtllm', merged(table or None, new), a.release).relative_to(ROOT)}")
    return 0


def main() -> int:
    a, data = arguments(__doc__, DATA, write="store the fitted terms in the catalog's [calibration]",
                        only="fit, print and write only this ironlaw MoE dtype (repeatable)",
                        gpu="fit, print and write only this GPU (ironlaw's name, repeatable)",
                        flags={"touched": "the TOUCHED classes with a cost per touched expert and per token"},
                        choices={"release": ("a TensorRT-LLM release's own MoE classes (--data: aiconfigurator 0.8.0's "
                                             "systems/data); --write merges them into its kernel files",
                                             tuple(RELEASE_ROUTER)),
                                 "framework": ("fit vLLM's or SGLang's own fused-MoE tables (benchmarks/moe_frameworks.py; "
                                               "--data: the wheel's systems/data); --write merges them into the "
                                               "framework's engine files", FRAMEWORKS)})
    if a.framework:
        import moe_frameworks
        clash = [f for f, on in (("--release", a.release), ("--touched", a.touched), ("--extract", a.extract)) if on]
        if clash or not a.data:
            why = f"{', '.join(clash)} apply to TensorRT-LLM's tables" if clash else "give --data DIR (the wheel's systems/data)"
            print(f"kernel_moe.py: --framework {a.framework}: {why}", file=sys.stderr)
            return 2
        return moe_frameworks.main(a, data, (GOAL_MEDIAN, GOAL_P90))
    if a.extract:
        extract(data, Path(a.extract))
        return 0
    if a.release:
        return release_main(a, data)
    fits = []
    every = groups(data)
    chosen = [g for g in every if (not a.only or g[1] in a.only) and (not a.gpu or g[0] in a.gpu)]
    if not chosen:
        asked = " ".join([f"--gpu {x}" for x in a.gpu or ()] + [f"--only {x}" for x in a.only or ()])
        print(f"kernel_moe.py: no MoE table matches {asked}: the tables hold GPUs "
              f"{', '.join(sorted({g[0] for g in every}))} (ironlaw's names) and dtypes "
              f"{', '.join(sorted({g[1] for g in every}))}", file=sys.stderr)
        return 2
    for gpu, dt, path, rows in chosen:
        kern, err, n_fit = fit_and_score(gpu, dt, rows, touched=a.touched)
        fits.append(ClassFit(gpu, dt, path, kern, err, n_fit, len(err), all_rows(gpu, dt, rows, kern)))
    if a.write:
        for gpu in sorted({f.gpu for f in fits}):
            print(f"wrote {write(gpu, fits).relative_to(ROOT)}")
    print(f"MoE layer (TensorRT-LLM {VERSION} CUTLASS fused MoE, balanced routing), {PACKAGE}: fitted on every "
          f"other layer shape, scored on the rest; goal median ≤ {GOAL_MEDIAN:.0%}, p90 ≤ {GOAL_P90:.0%}")
    print("(* scored on the class's own-key rows, OWN_KEY; all rows: every held-out row of the class, the same fit)")
    print(f"{'GPU':14s} {'dtype':9s} {'held-out':>9s} {'median':>7s} {'p90':>6s}   L µs   η_w   η_c   η_a  L_e ns  "
          f"L_t ns  L_u ns  goal   all rows: n, median / p90")
    for f in fits:
        gpu, dt, kern, err, every = f.gpu, f.dtype, f.kern, f.err, f.every
        g, r = kern[f"moe_grouped_gemm.{dt}"], kern[f"moe_rows.{dt}"]
        med, p90 = median_p90(err)
        ok = med <= GOAL_MEDIAN and p90 <= GOAL_P90
        star = "*" if (gpu, dt) in OWN_KEY else " "
        print(f"{gpu:14s} {dt:9s} {len(err):8d}{star} {100 * med:6.1f}% {100 * p90:5.1f}% "
              f"{2e6 * g['latency_s']:6.1f} {g['streamed']:5.2f} {g['eta_max']:5.2f} {r['memory']:5.2f} "
              f"{2e9 * g.get('expert_s', 0.0):7.0f} {1e9 * r.get('token_s', 0.0):7.1f} "
              f"{2e9 * g.get('touched_s', 0.0):7.0f}  {'met ' if ok else 'MISS'}   {len(every):6d}, "
              f"{100 * median_p90(every)[0]:4.1f}% / {100 * median_p90(every)[1]:4.1f}%")
    print("\nthe serving regime only (MoE TP 1 rows, fitted and scored on their own shapes), median / p90:")
    for gpu, dt, _, rows in chosen:
        e = serving_regime(gpu, dt, rows, a.touched)
        med, p90 = median_p90(e)
        print(f"{gpu:14s} {dt:9s} {len(e):8d} {100 * med:6.1f}% {100 * p90:5.1f}%")
    for label, parts in (("\nthe classes' scored held-out rows (own-key rows of OWN_KEY)", [f.err for f in fits]),
                        ("all held-out rows", [f.every for f in fits])):
        allr = np.concatenate(parts)
        med, p90 = median_p90(allr)
        print(f"{label}: {len(allr)}, median {100 * med:.1f}%, p90 {100 * p90:.1f}%")
    met, met_all = sum(goal_met(f.err) for f in fits), sum(goal_met(f.every) for f in fits)
    print(f"classes within goal: {met} of {len(fits)} on their scored rows, {met_all} on all held-out rows")
    if not a.data:
        print("catalog [calibration.kernel] MoE entries: fitted on the full tables; check them with --data DIR")
        return 0
    stale = catalog_matches(fits)
    print("catalog [calibration.kernel] MoE entries: " + ("match this fit" if not stale else
                                                         f"STALE for {', '.join(stale)} (run with --data … --write)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
