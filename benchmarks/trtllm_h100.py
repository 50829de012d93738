"""Offline max-throughput serving against TensorRT-LLM's published H100 table: fit, leave-one-model-out, peers.

    python benchmarks/trtllm_h100.py            # score the constants in src/ironlaw/models/serving/engine.py
    python benchmarks/trtllm_h100.py --fit      # refit them on the H100 cells, then score (prints the new values)
    python benchmarks/trtllm_h100.py --release cell   # … each cell on the kernels of the release it ran (1.0)
    python benchmarks/trtllm_h100.py --fit --host   # … with the executor's host work per step and per request
    python benchmarks/trtllm_h100.py --fit --experts   # … with the routed experts' grouped-GEMM η refitted too
    python benchmarks/trtllm_h100.py --fit --gemm-form half --data DIR   # … the H100 GEMM classes refitted in
                                                    # another form on the kernel tables under DIR (not written)

Source: tests/data/trtllm_perf_overview_h100.csv (NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md,
Apache-2.0): total output tokens/s of ``trtllm-bench throughput`` on DGX H100, FP8 ModelOpt checkpoints.
Runs as published: ``--kv-fraction 0.95`` (the page: "in many cases … 0.95"), the page's $num_requests per
ISL/OSL, trtllm-bench's own max_batch_size / max_num_tokens, MoE rows with EP = TP and attention DP (the
page's later revision puts ``enable_attention_dp: true`` at the top level of the Qwen3 MoE / Llama 4 options),
the KV cache in each checkpoint's dtype (``KV_DTYPE``).
Each cell is priced on the catalog's kernel terms (TensorRT-LLM 1.3.0rc20's tables); ``--release cell`` prices it
on the kernels of the release it ran (the CSV's ``release`` column: 1.0, the page's "NEW for v1.0"; ``serve
--release 1.0``: that release's GEMM, attention and fused-MoE terms, the routed experts on its MoE tables), and
``--release R`` names one for every cell. The catalog stays the default: every set scores worse on the 1.0 terms
(docs/accuracy.md, "The published cells on the release they ran").
Fitted (``--fit``): the engine's own costs no kernel table times (``ENGINE``: fixed seconds per step, host seconds
per kernel of an eager step, the share of the kernel tables' fixed seconds per call a kernel still pays inside the
engine's step) — minimising the mean |log(predicted / published)| over every H100 cell, dense and
MoE; nothing per model, per cell or per GPU. GEMM and attention run at the H100's kernel-fitted terms (the
catalog ``[calibration]``, or with ``--release cell`` the release's file catalog/engine/trtllm-1.0/h100.toml,
fitted on aiconfigurator-core 0.12.0's H100 kernel tables, by benchmarks/kernel_tables.py); the other ``ServingConstants`` (HBM streaming η, the routed experts' grouped GEMM,
the GEMM and attention η of devices without kernel tables) keep the values the earlier eight-constant fit on
these cells gave them. Leave-one-model-out: refit without
each model, score that model's cells.
Also printed: the same cells on H200 and B200 from their datasheets with the same constants (the published H200
column is scored, held out, by benchmarks/trtllm_h200.py), NVIDIA aiconfigurator's predictions where
benchmarks/data/aiconfigurator_0.12.csv holds them, and the time per ironlaw prediction.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench import csv_rows  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT / "tests/data/trtllm_perf_overview_h100.csv"
AIC = ROOT / "benchmarks/data/aiconfigurator_0.12.csv"
# the table's models as ironlaw names them (built-in names where they exist; the same shapes otherwise)
SPECS = {"llama3.1-8b": ("llama3.1-8b", "llama3-8b"),
         "llama3.3-70b": ("llama3.3-70b", "llama3-70b"),
         "llama3.1-405b": ("llama3.1-405b", "hf:" + str(ROOT / "tests/data/llama3.1-405b-config.json")),
         "qwen3-235b-a22b": ("qwen3-235b-a22b",), "llama4-maverick": ("llama4-maverick",),
         "llama4-scout": ("llama4-scout",), "qwen3-30b-a3b": ("qwen3-30b-a3b",)}
MOE = ("qwen3-235b-a22b", "llama4-maverick", "llama4-scout", "qwen3-30b-a3b")
# the KV cache dtype TensorRT-LLM takes from each checkpoint's hf_quant_config.json (kv_cache_quant_algo; trtllm-bench
# leaves kv_cache_config.dtype at "auto"): FP8 for the Llama 4 FP8 checkpoints (TensorRT-LLM's accuracy tests assert
# kv_cache_quant_algo == FP8 for them: tests/integration/defs/accuracy/test_llm_api_pytorch.py); FP8 for the others
# as ModelOpt's FP8 recipe writes it (for Qwen3-235B-A22B a bf16 cache would halve the batch: −20…−40% on its cells);
# FP8 assumed for the FP4 checkpoints of the Blackwell columns too (benchmarks/trtllm_blackwell.py)
KV_DTYPE = {m: "fp8" for m in SPECS}
KV_FRACTION = 0.95
NAMES = ("gemm_eta", "gemm_m_half", "memory_eta", "attention_eta", "step_s", "launch_s", "expert_gemm_eta",
         "expert_stream_eta", "host_step_s", "host_sequence_s", "kernel_latency_share", "expert_layer_scale",
         "host_prompt_s", "expert_serial")
# constants ``--constants`` may set that no fit moves: they change what the engine holds (its batch), so each
# takes a full re-prediction of the cells, not ``CellTerms``' fast re-timing
SCORED = ("reserve_bytes", "moe_tables", "pad_on_dummy")
BOOLEAN = ("moe_tables", "pad_on_dummy")      # switches among them: 1 on, 0 off
# … and one that is not an engine constant at all: the KV fraction of the attention-DP MoE cells (what-if; default
# KV_FRACTION, the overview's 0.95; benchmarks/moe_implied_memory.py: what the Hopper MoE cells imply for it)
MOE_KV = "moe_kv_fraction"
# what --fit refits: the engine's own costs that no kernel table times (the fixed seconds per step, the host's
# seconds per kernel of an eager step, and how much of the kernel tables' fixed seconds per call — launch, prologue,
# tail, measured on each kernel alone — a kernel still pays inside the step: ``kernel_latency_share``, 0 for none,
# 1 for all of it, one share for every GPU, each GPU's own measured latencies). GEMM and attention η come from the device's kernel tables where its
# calibration has them (``models.serving.step.kernel_terms``; H100, H200, B200, GB200 … in the catalog), so they
# are not end-to-end fits any more; the others keep the values the eight-constant fit gave them
ENGINE = ("step_s", "launch_s", "kernel_latency_share")
# the kernel classes of a release's fused-MoE tables (``step.moe_kernels``): the routed experts' GEMMs and rows
# priced on them depend on none of ENGINE, so ``CellTerms`` keeps their seconds as the model gave them
MOE_TABLES = ("moe_grouped_gemm.", "moe_rows.")
# --host adds the executor's host work per step, overlapped with the device's step (``serving.step.HostStep``): a
# fixed part and one per request the step carries, on DGX H100's Xeon 8480C; Blackwell cells never fit them
HOST = ("host_step_s", "host_sequence_s")
# --experts adds the routed experts' grouped-GEMM η (compute and weight streaming), which the engine refits since the
# eight-constant fit have left where that fit put them (the kernel terms, the token budget and the KV sizing moved
# under them): refitted on the H100 cells only, with ENGINE, and left out per model in the leave-one-model-out
EXPERTS = ("expert_gemm_eta", "expert_stream_eta")
# --layer-scale adds the level constant of the routed experts on the measured MoE layer (``expert_layer_scale``:
# the expert-parallel layers' measured time × this, ``expertcarry.measured_layer``); the cells must be priced with
# one set (``--constants expert_layer_scale=K``): the fit rescales their measured layers' seconds from K
LAYER = ("expert_layer_scale",)
# --prompt-host adds the executor's host work per prompt a step admits (``host_prompt_s``: a context request's own
# Python, overlapped with the device's step like the others), on DGX H100's Xeon 8480C; Blackwell cells never fit it
PROMPT = ("host_prompt_s",)
PROMPT_STARTS = (0.0, 1e-4, 3e-4, 1e-3)
BOUNDS = {"host_step_s": (1e-6, 0.05), "host_sequence_s": (1e-8, 1e-4), "host_prompt_s": (1e-8, 1e-2), "gemm_eta": (0.2, 1.0), "gemm_m_half": (1.0, 2048.0), "memory_eta": (0.3, 1.0),
          "attention_eta": (0.05, 1.0), "step_s": (1e-5, 0.05), "launch_s": (1e-7, 1e-3),
          "expert_gemm_eta": (0.05, 1.0), "expert_stream_eta": (0.05, 1.0), "kernel_latency_share": (1e-3, 1.0),
          "expert_layer_scale": (0.5, 5.0), "expert_serial": (1e-3, 1.0)}


def spec_for(model: str) -> str | None:
    from ironlaw.models import workloads
    workloads.load_all()
    for s in SPECS.get(model, ()):
        if s in workloads.BUILTINS or s.startswith("hf:"):
            return s
    return None


def cells(path: Path = CSV) -> list[dict]:
    return [{**r, "tp": int(r["tp"]), "isl": int(r["isl"]), "osl": int(r["osl"]),
             "published": float(r["output_tokens_per_s"])} for r in csv_rows(path)]


# which TensorRT-LLM release's kernels price a cell: the catalog's (1.3.0rc20) unless ``--release`` names one for
# every cell, or ``CELL``: each cell's own (the CSVs' ``release`` column: 1.0, the perf overview's "NEW for v1.0").
# The catalog stays the default: on the 1.0 tables every set scores worse (docs/accuracy.md, "The published cells
# on the release they ran").
CATALOG, CELL = "catalog", "cell"
RELEASE = {"override": CATALOG, "h100": None}
# --gemm-form: the GEMM forms a refit may take (kernelfit.GEMM_FILLS) and the catalog's H100 GEMM classes it refits
GEMM_FORMS = ("half", "tile", "stream", "auto")
GEMM_FORM_DTYPES = ("bf16", "fp8")


def release_arg(ap) -> None:
    ap.add_argument("--release", default=CATALOG,
                    help=f"price every cell on this TensorRT-LLM release's kernels (default '{CATALOG}': the "
                         f"catalog's 1.3.0rc20; '{CELL}': each cell's own, the CSV's release column)")
    ap.add_argument("--release-classes", choices=tuple(CLASSES), default="all",
                    help="diagnosis: only these of the release's kernel classes, the catalog's for the rest")
    ap.add_argument("--routing", help="the MoE cells' busiest expert rank as this routing loads it at each step's "
                                      "pooled tokens (core.routing: power_law_1.2, aiconfigurator's serving default; "
                                      "power_law_1.01, the 1.0 tables' own), not uniform")
    ap.add_argument("--constants", help="score with these engine constants in place of engine.FITTED's, e.g. the "
                                        "values `trtllm_h100.py --fit` printed: step_s=0.01,launch_s=4e-05; also "
                                        "reserve_bytes=B (runtime memory per GPU kept from the KV cache: a what-if "
                                        "that moves the batches, which --fit then leaves where it put them); "
                                        "moe_tables=1: the routed experts on the device's measured MoE layer, not "
                                        "on the expert η; pad_on_dummy=1: a padded step's padding rows on the k "
                                        "experts of TensorRT-LLM's one dummy request; moe_kv_fraction=F: the attention-DP MoE cells' KV "
                                        "fraction (default 0.95, the overview's)")


def constants_arg(text: str | None) -> None:
    """``--constants K=V,…``: FITTED with those values, for every prediction of this run (nothing is stored)."""
    RELEASE["constants"], RELEASE[MOE_KV] = {}, None
    for part in (text or "").split(","):
        if part.strip():
            k, v = part.split("=")
            if k.strip() == MOE_KV:
                RELEASE[MOE_KV] = float(v)
                if not 0.0 < RELEASE[MOE_KV] <= 1.0:
                    raise SystemExit(f"--constants: {MOE_KV} is a fraction in (0, 1], got {v.strip()}")
                continue
            if k.strip() not in NAMES + SCORED:
                known = ", ".join(NAMES + SCORED + (MOE_KV,))
                raise SystemExit(f"--constants: unknown constant '{k.strip()}' (known: {known})")
            RELEASE["constants"][k.strip()] = bool(float(v)) if k.strip() in BOOLEAN else float(v)


def use_release(name: str | None, classes: str = "all", routing: str | None = None) -> None:
    RELEASE["override"], RELEASE["classes"], RELEASE["routing"] = name, classes, routing


def defaults() -> None:
    """Every option of a run back to its default: the catalog's kernels and FITTED as it is (``RELEASE``)."""
    constants_arg(None)
    use_release(CATALOG)
    RELEASE["h100"] = None


def gemm_form_arg(ap) -> None:
    ap.add_argument("--gemm-form", choices=GEMM_FORMS, help="price the H100 cells on H100 GEMM classes (bf16, fp8) "
                                                            "refitted in this form (kernelfit.GEMM_FILLS) on the "
                                                            "kernel tables of --data, in memory (nothing written): "
                                                            "the form's end-to-end effect beside the catalog's")
    ap.add_argument("--data", help="with --gemm-form: aiconfigurator_core/systems/data of an unpacked "
                                   "aiconfigurator-core 0.12.0 wheel (default: the installed package's)")


def use_gemm_form(form: str | None, data: str | Path | None = None) -> None:
    """``--gemm-form``: every H100 prediction of this run on ``gemm_form_hw(form, data)`` (None: the catalog)."""
    RELEASE["h100"] = None if form is None else gemm_form_hw(form, data)


def gemm_form_hw(form: str, data: str | Path | None = None, folder: str = "h100_sxm"):
    """The H100 with its catalog calibration, but the GEMM classes of ``GEMM_FORM_DTYPES`` fitted in ``form`` on
    the TensorRT-LLM GEMM table under ``data`` (``folder``: that GPU's table folder), as
    ``benchmarks/kernel_tables.py --gpu h100_sxm --op gemm --gemm-fill FORM`` fits them (``kernelfit.fit``)."""
    from ironlaw.machine import hardware
    from ironlaw.machine.calibration import Calibration
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    from ironlaw.core.errors import IronlawError
    from kernel_tables import data_dir
    root = data_dir(str(data) if data else None)
    hw = hardware.get("h100")
    try:
        tables = [replace(t, path=f"{folder}/{t.path}")
                  for t in kerneltable.read(root / folder, ops=("gemm",), framework="trtllm")]
    except IronlawError as e:
        sys.exit(f"--gemm-form: {e}")
    gs = [g for g in kernelfit.groups(tables) if g.key[1] in GEMM_FORM_DTYPES]
    if not gs:
        sys.exit(f"--gemm-form: no TensorRT-LLM GEMM table of {folder} under {root}")
    origin, license = kernelfit.origin_of(root)
    table = kernelfit.fit(hw, gs, origin=origin, license=license, gemm_fill=form)
    return replace(hw, calibration=Calibration.of(kernelfit.merged(hw.calibration.table(), table)))


# ``--release-classes`` (a diagnosis, not what ``serve --release`` does): which of the release's kernel classes
# price the cell, the rest the catalog's — all of them (serve), only its fused-MoE layer, or the MoE layer and GEMMs
CLASSES = {"all": None, "moe": ("moe",), "moe+gemm": ("moe", "gemm")}


def _subset(table: dict, keep: tuple) -> dict:
    """The release file ``table`` holding only the classes of ``keep`` (provenance groups starting so)."""
    prov = {k: v for k, v in table["provenance"].items() if k.startswith(keep)}
    dts = {k.split(" ", 1)[1] for k in prov if k.startswith("gemm ")}
    return {**table, "provenance": prov, "matmul": {d: v for d, v in table.get("matmul", {}).items() if d in dts},
            "kernel": {k: v for k, v in table.get("kernel", {}).items() if k.startswith(("moe_grouped_gemm.",
                                                                                          "moe_rows."))},
            **{key: [x for x in table.get(key, []) if x.startswith(keep)] for key in ("fitted", "held_out")}}


def release_engine(hw: str, release: str | None):
    """``frameworks.select`` at ``release``, restricted to ``--release-classes``."""
    from dataclasses import replace as _replace
    from ironlaw.machine import engines, hardware
    from ironlaw.models.serving import frameworks
    own = RELEASE.get("h100") if hw == "h100" else None     # --gemm-form's refitted H100
    eng = frameworks.select("trtllm", own or hw, offline=True, release=release)
    keep = CLASSES[RELEASE.get("classes", "all")]
    if release is None or keep is None:
        return eng
    table = _subset(engines.load(eng.hw.name, "trtllm", release), keep)
    return _replace(eng, hw=engines.over_catalog(hardware.get(hw), table, catalog_moe=False))


def fitted():
    """engine.FITTED, with ``--constants`` in place."""
    from ironlaw.models.serving import throughput as st
    return replace(st.FITTED, **RELEASE.get("constants", {}))


def release_of(cell: dict) -> str | None:
    """The release whose kernels price ``cell`` (None: the catalog's)."""
    r = cell.get("release") if RELEASE["override"] == CELL else RELEASE["override"]
    return None if r in (CATALOG, None, "") else r


def predict(cell: dict, hw: str = "h100", constants=None):
    """``cell`` as ``ironlaw serve --max-throughput --release R`` runs it (``release_of``): the release's GEMM,
    attention and fused-MoE terms where it names one (``frameworks.Engine.constants``), ``constants`` otherwise."""
    from ironlaw.models.serving import throughput as st
    moe = cell["model"] in MOE
    eng = release_engine(hw, release_of(cell))
    kv_fraction = (RELEASE.get(MOE_KV) or KV_FRACTION) if moe and cell["tp"] > 1 else KV_FRACTION
    return st.max_throughput(
        cell["spec"], eng.hw, cell["isl"], cell["osl"], tp=cell["tp"], dtype=cell.get("precision", "fp8"),
        kv_dtype=KV_DTYPE[cell["model"]], ep=cell["tp"] if moe else 1, attention_dp=moe and cell["tp"] > 1,
        kv_fraction=kv_fraction, constants=eng.constants(constants or fitted()),
        routing=RELEASE.get("routing") if moe and cell["tp"] > 1 else None)


def host_option(ap) -> None:
    """``--host-costs STEP_S,SEQUENCE_S``: score with the executor's host work at these values (on DGX H100's
    host; ``--fit --host`` prints them), not FITTED's: a what-if, nothing committed."""
    ap.add_argument("--host-costs", metavar="STEP_S,SEQUENCE_S", default=None,
                    help="host seconds per step and per request on the fit host, e.g. 0.0047,34e-6 (what --fit "
                         "--host of trtllm_h100.py reports); default: the constants in engine.py")


def constants_of(args):
    """FITTED with ``--host-costs`` applied, or None (FITTED itself)."""
    if args.host_costs is None:
        return None
    from ironlaw.models.serving import throughput as st
    try:
        a, b = (float(x) for x in args.host_costs.split(","))
    except ValueError:
        sys.exit(f"--host-costs: expected STEP_S,SEQUENCE_S (two numbers of seconds), got {args.host_costs!r}")
    if a < 0 or b < 0:
        sys.exit(f"--host-costs: seconds cannot be negative, got {args.host_costs!r}")
    return replace(st.FITTED, host_step_s=a, host_sequence_s=b)


# ---------------------------------------------------------------------- fast re-evaluation for the fit
class CellTerms:
    """A cell's steps as per-op arrays at η = 1, so that new constants re-time it without rebuilding graphs
    (the batch and the step mix do not depend on the constants). ``time(c)`` equals max_throughput's time_s."""

    def __init__(self, est, cell):
        from ironlaw.law import law
        from ironlaw.core.gemmshape import gemm_dims
        from ironlaw.law.efficiency import kernel_grid, streamed_table
        from ironlaw.core.graph import KINDS
        from ironlaw.machine.calibration import STREAMED
        from ironlaw.models.serving.step import GROUPED_GEMM, ServingConstants, engine_hw
        neutral = ServingConstants(1.0, 1e-9, 1.0, 1.0, 0.0, "neutral", kernel_latency_share=1.0)
        self.cell, self.requests, self.output = cell, est.requests, est.output
        # the level the expert-parallel measured layers were priced at (None: not on the measured layer)
        self.layer_scale = est.constants.expert_layer_scale if est.constants.moe_tables and cell["tp"] > 1 else None
        self.parts = []
        for n, e in est.steps:
            hw = engine_hw(replace(est.hw, calibration=None), neutral)
            z = law.predict(e.graph, hw)
            hk = engine_hw(est.hw, neutral)          # the device's kernel-fitted terms where it has them
            zk = law.predict(e.graph, hk)
            kinds = np.array(KINDS)[z.cols.kind_idx]
            kern = np.array(z.cols.kernels, dtype=object)
            cal = hk.calibration
            fixed = ((kinds == "matmul") & np.isin(np.array(z.cols.dtypes), list(cal.shape("matmul")))
                     & np.array([f"gemm {d}" in (est.hw.calibration.provenance if est.hw.calibration else {})
                                 for d in z.cols.dtypes])) | np.isin(kern, [k for k in cal.kernel
                                                                          if k.startswith("attention_")])
            fixed = (fixed & (kern != GROUPED_GEMM)).reshape(z.compute_s.shape)
            epi = z.terms.epilogue
            peak = np.array([hw.peak(dt) if np.any(f > 0) else np.inf for dt, f in zip(z.cols.dtypes, z.cols.flops)])
            mat = np.where(kinds == "attention", z.cols.flops / peak, 0.0)
            act = z.cols.bytes.get("activations", np.zeros_like(z.cols.flops))
            other = sum((z.cols.bytes[k] for k in STREAMED if k in z.cols.bytes), np.zeros_like(z.cols.flops))
            with np.errstate(divide="ignore", invalid="ignore"):
                act_share = np.where(act + other > 0, act / (act + other), 1.0)
            act_s = z.data_s * act_share                       # activations' seconds at η = 1
            grid = np.broadcast_to(kernel_grid(cal, z.cols), act_s.shape) if cal is not None else 1.0
            act_s = np.where(fixed, act_s * grid, act_s)       # a kernel class's grid scales all its traffic
            streamed = streamed_table(cal, z.cols) if cal is not None else None
            streamed = np.ones(act_s.shape) if streamed is None else np.where(np.isnan(streamed), 1.0, streamed)
            with np.errstate(divide="ignore", invalid="ignore"):   # the rest at its table's η, before the bound
                other_fixed = np.where(fixed, z.data_s * (1.0 - act_share) * grid / streamed, zk.data_s - act_s)
            frozen = np.array([str(k).startswith(MOE_TABLES) for k in z.cols.kernels]).reshape(z.compute_s.shape)
            self.parts.append(dict(act_share=act_share, fixed=fixed, act_s=act_s, other_fixed=other_fixed,
                floor=z.data_s, frozen=frozen, frozen_s=np.where(frozen, e.op_time_s.reshape(z.compute_s.shape), 0.0),
                n=n, count=z.cols.count, read=z.data_s * (1 - epi), written=z.data_s * epi, epi=epi,
                comp=np.where(kinds == "attention", mat, z.compute_s), vec=np.where(kinds == "attention",
                                                                                     z.compute_s - mat, 0.0),
                comp_fixed=zk.compute_s, lat_fixed=zk.latency_s, serial_fixed=np.broadcast_to(zk.terms.serial, zk.compute_s.shape),
                lat=z.latency_s, net=z.network_s, coll=z.cols.network_bytes > 0, matmul=kinds == "matmul",
                attention=kinds == "attention", grouped=kern == GROUPED_GEMM,
                m=gemm_dims(z.cols)[0], launches=e.graph.meta["launches"] if e.graph.meta["eager"] else 0,
                host=e.graph.meta["host"], expert_ratio=expert_ratio(est.hw, z.cols.dtypes, kern == GROUPED_GEMM)))

    def time(self, c: dict) -> float:
        """The step times as the law composes them (``serving_step``: the grouped GEMM streams, then computes;
        an op the device's kernel-fitted terms price keeps their η, its activations at ``memory_eta``, and their
        ``serial`` share: ``efficiency.composed``)."""
        from ironlaw.law.efficiency import composed
        total = 0.0
        eta_w = c.get("expert_stream_eta") or c["memory_eta"]
        for p in self.parts:
            g = p["grouped"]
            eta = np.where(p["matmul"], c["gemm_eta"] * p["m"] / (p["m"] + c["gemm_m_half"]),
                           np.where(p["attention"], c["attention_eta"], 1.0))
            expert = c["expert_gemm_eta"] * p["expert_ratio"] if c.get("expert_gemm_eta") else c["gemm_eta"]
            eta = np.where(g, expert, eta)                     # carried to the device (serving/expertcarry.py)
            per_byte = np.where(g, p["act_share"] / c["memory_eta"] + (1.0 - p["act_share"]) / eta_w,
                                1.0 / c["memory_eta"])
            read, comp = p["read"] * per_byte, p["comp"] / eta + p["vec"]
            op = np.maximum(read, comp) + np.where(g, c.get("expert_serial", 1.0) * np.minimum(read, comp), 0.0) + \
                p["written"] * per_byte + p["lat"] + p["net"]
            data = np.maximum(p["act_s"] / c["memory_eta"] + p["other_fixed"], p["floor"])   # η ≤ 1 (within_peak)
            kop = composed(data * (1 - p["epi"]), p["comp_fixed"], p["serial_fixed"], 0.0) + data * p["epi"] + \
                p["lat_fixed"] * c["kernel_latency_share"] + p["net"]       # the tables' fixed seconds per call
            op = np.where(p["fixed"], kop, op)
            layer = c["expert_layer_scale"] / self.layer_scale if self.layer_scale and c.get("expert_layer_scale") \
                else 1.0                                       # the measured layer's level (LAYER)
            op = np.where(p["frozen"], p["frozen_s"] * layer, op)   # on measured MoE tables: no other constant
            h = p["host"]                                      # the host's work overlaps the device's step
            host = p["launches"] * c["launch_s"] + h.speed * (c["host_step_s"] + c["host_sequence_s"] * h.sequences
                                                               + c.get("host_prompt_s", 0.0) * h.prompts)
            total += p["n"] * (max(float(np.sum(op * p["count"])), host) + c["step_s"])
        return total

    def tokens_per_s(self, c: dict) -> float:
        return self.requests * self.output / self.time(c)


def expert_ratio(hw, dtypes, grouped) -> float:
    """The routed experts' compute η carry to ``hw`` in their dtype (``expertcarry.expert_ratio``; 1 on H100 FP8,
    where the constants are fitted, and where a step has no routed experts)."""
    from ironlaw.models.serving.expertcarry import expert_ratio as ratio
    dts = {d for d, g in zip(dtypes, np.ravel(grouped)) if g}
    return ratio(hw, dts.pop()) if len(dts) == 1 else 1.0


def _to_x(c: dict, names=NAMES) -> np.ndarray:
    out = []
    for k in names:
        lo, hi = BOUNDS[k]
        u = (math.log(max(c[k], lo)) - math.log(lo)) / (math.log(hi) - math.log(lo))   # 0 (a term off) starts at lo
        u = min(max(u, 1e-6), 1 - 1e-6)
        out.append(math.log(u / (1 - u)))
    return np.array(out)


def _from_x(x: np.ndarray, names=NAMES) -> dict:
    out = {}
    for k, v in zip(names, x):
        lo, hi = BOUNDS[k]
        u = 1.0 / (1.0 + math.exp(-min(max(v, -500.0), 500.0)))
        out[k] = math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))
    return out


# where the host fit starts (host_step_s, host_sequence_s): a host cost below the device's step changes no cell, so
# the loss is flat from zero up to where one cell's host binds; the fit starts on this grid and keeps its best
HOST_STARTS = tuple((a, b) for a in (0.0, 2e-3, 5e-3) for b in (0.0, 10e-6, 20e-6, 30e-6, 35e-6, 40e-6))


def loss_of(terms: list[CellTerms], c: dict) -> float:
    """The mean |log(predicted / published)| over ``terms`` at the constants ``c``."""
    return float(np.mean([abs(math.log(t.tokens_per_s(c) / t.cell["published"])) for t in terms]))


def fit(terms: list[CellTerms], start: dict, names=ENGINE) -> dict:
    """``names`` refitted on ``terms`` (the others kept at ``start``); with the host terms in ``names``, from
    every start of ``HOST_STARTS``; and from the middle of BOUNDS (in the logistic coordinates of ``_to_x``): a
    value stored at its bound sits where the loss is flat in those coordinates, and the simplex would stop there
    whatever the cells say. The best fit is kept."""
    from ironlaw.measure.calibrate.fitcore import minimize

    def loss(x):
        return loss_of(terms, {**start, **_from_x(x, names)})
    starts = [start] if not set(HOST) <= set(names) else \
        [{**start, "host_step_s": a, "host_sequence_s": b} for a, b in HOST_STARTS]
    if set(PROMPT) <= set(names):
        starts = [{**s0, "host_prompt_s": p} for s0 in starts for p in PROMPT_STARTS]
    x0s = [_to_x(s0, names) for s0 in starts] + [np.zeros(len(names))]
    fits = [{**start, **_from_x(minimize(loss, x0, rounds=4, iters=600), names)} for x0 in x0s]
    return min(fits, key=lambda c: loss_of(terms, c))


# ---------------------------------------------------------------------- report
def stats(errs: list[float]) -> tuple[float, float, float]:
    a = sorted(abs(e) for e in errs)
    p90 = a[min(len(a) - 1, math.ceil(0.9 * len(a)) - 1)]
    return statistics.median(a), p90, a[-1]


def table_row(cols, widths) -> str:
    return "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(cols, widths)))


def score(terms: list[CellTerms], c: dict) -> list[float]:
    return [100.0 * (t.tokens_per_s(c) / t.cell["published"] - 1.0) for t in terms]


def aiconfigurator_rows() -> list[dict]:
    if not AIC.exists():
        return []
    return [{**r, "isl": int(r["isl"]), "osl": int(r["osl"]), "tp": int(r["tp"]),
             "pred": float(r["predicted_tokens_per_s"]), "wall_s": float(r["wall_s"])} for r in csv_rows(AIC)
            if r["predicted_tokens_per_s"]]           # an empty prediction: a cell aiconfigurator could not run


def print_peers(table: list[dict], ours: dict, lomo: dict) -> None:
    aic = aiconfigurator_rows()
    if not aic:
        print(f"\naiconfigurator: no {AIC.relative_to(ROOT)} (run benchmarks/aiconfigurator_run.py)")
        return
    pub = {(c["model"], c["isl"], c["osl"]): c["published"] for c in table}
    print("\nPeer: NVIDIA aiconfigurator 0.12.0 (agg, trtllm backend, loose latency limits) on the H100 Llama cells")
    w = (14, 10, 10, 9, 9, 9, 9, 9)
    print(table_row(("model", "ISL/OSL", "published", "aic", "aic err", "ironlaw", "il err", "il LOMO"), w))
    a_err, i_err, l_err = [], [], []
    for r in aic:
        key = (r["model"], r["isl"], r["osl"])
        if r["gpu"] != "h100" or key not in pub or key not in ours:
            continue
        ea, ei = 100 * (r["pred"] / pub[key] - 1), 100 * (ours[key] / pub[key] - 1)
        el = 100 * (lomo[key] / pub[key] - 1)
        a_err.append(ea)
        i_err.append(ei)
        l_err.append(el)
        print(table_row((r["model"], f"{r['isl']}/{r['osl']}", f"{pub[key]:,.0f}", f"{r['pred']:,.0f}", f"{ea:+.1f}%",
                     f"{ours[key]:,.0f}", f"{ei:+.1f}%", f"{el:+.1f}%"), w))
    if a_err:
        ma, pa, xa = stats(a_err)
        mi, pi, xi = stats(i_err)
        walls = [r["wall_s"] for r in aic]
        print(f"aiconfigurator |err| median {ma:.1f}%  p90 {pa:.1f}%  max {xa:.1f}%  ({len(a_err)} cells); "
              f"{statistics.median(walls):.1f} s per prediction (median wall, {len(walls)} runs)")
        ml, pl, xl = stats(l_err)
        print(f"ironlaw        |err| median {mi:.1f}%  p90 {pi:.1f}%  max {xi:.1f}%  (same cells; fit on all H100 cells)")
        print(f"ironlaw LOMO   |err| median {ml:.1f}%  p90 {pl:.1f}%  max {xl:.1f}%  (each model's constants fitted "
              f"without it)")
    h200 = [r for r in aic if r["gpu"] == "h200"]
    if h200:
        print(f"aiconfigurator H200 predictions: {len(h200)} cells, scored against the published H200 column "
              "by benchmarks/vs_aiconfigurator.py")


def host_scan(terms: list[CellTerms], const: dict) -> None:
    """How the H100 cells respond to a host cost per request (the fixed part at zero): the fit's loss, the median
    |error| and the cells it moves, from zero up to where the shortest steps' host binds."""
    print("\nHost cost per request on DGX H100's host (host_step_s 0), all H100 cells:")
    base = score(terms, const)
    for us in (0, 10, 20, 30, 33, 34, 35, 36, 38, 40):
        c = {**const, "host_step_s": 0.0, "host_sequence_s": us * 1e-6}
        errs = score(terms, c)
        moved = ", ".join(f"{t.cell['model']} {t.cell['isl']}/{t.cell['osl']} {e0:+.1f}→{e:+.1f}%"
                          for t, e, e0 in zip(terms, errs, base) if abs(e - e0) >= 0.1)
        print(f"  {us:3d} us/request: loss {loss_of(terms, c):.5f}, |error| median {stats(errs)[0]:.2f}%"
              f"{'; moves ' + moved if moved else ''}")


def leave_one_model_out(terms, const: dict, names, models) -> tuple[dict, dict]:
    """Each model's cells predicted with the constants refitted without it: (error %, tokens/s) by (model, ISL,
    OSL); each refit printed."""
    lomo_err, lomo_pred = {}, {}
    for m in models:
        cm = fit([t for t in terms if t.cell["model"] != m], const, names)
        for t in terms:
            if t.cell["model"] == m:
                key = (m, t.cell["isl"], t.cell["osl"])
                lomo_pred[key] = t.tokens_per_s(cm)
                lomo_err[key] = 100.0 * (lomo_pred[key] / t.cell["published"] - 1.0)
        print(f"LOMO {m}: refit without it: " + ", ".join(f"{k}={v:.4g}" for k, v in cm.items()))
    return lomo_err, lomo_pred


def print_summary(terms, errs: list, lomo_err: dict, models) -> tuple[float, float]:
    """The |error| lines: all cells, dense and MoE, leave-one-model-out, per model; (median, LOMO median)."""
    med, p90, mx = stats(errs)
    am, ap, ax = stats(list(lomo_err.values()))
    print(f"\nall H100 cells (all fitted): {len(errs)}; |error| median {med:.1f}%  p90 {p90:.1f}%  max {mx:.1f}%")
    for group, names in (("dense", [m for m in models if m not in MOE]), ("MoE", [m for m in models if m in MOE])):
        ge = stats([e for t, e in zip(terms, errs) if t.cell["model"] in names])
        print(f"  {group:<5} cells: |error| median {ge[0]:.1f}%  p90 {ge[1]:.1f}%  max {ge[2]:.1f}%")
    print(f"leave-one-model-out, all cells: |error| median {am:.1f}%  p90 {ap:.1f}%  max {ax:.1f}%")
    for m in models:
        e = [x for (mm, _, _), x in lomo_err.items() if mm == m]
        f = [x for t, x in zip(terms, errs) if t.cell["model"] == m]
        print(f"  {m:<16} fit median {stats(f)[0]:.1f}%  max {stats(f)[2]:.1f}%   LOMO median {stats(e)[0]:.1f}%  "
              f"max {stats(e)[2]:.1f}%")
    return med, am


def parse_args() -> argparse.Namespace:
    """The command line: which constants to fit, and the release, GEMM form and constants to price with."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true", help="refit the constants on the H100 cells first")
    ap.add_argument("--host-scan", action="store_true", help="print the H100 cells' response to a host cost per "
                                                             "request (host_scan)")
    ap.add_argument("--host", action="store_true", help="fit (and leave-one-model-out) the executor's host work "
                                                        "per step and per request too (HOST)")
    ap.add_argument("--experts", action="store_true", help="fit (and leave-one-model-out) the routed experts' "
                                                           "grouped-GEMM η too (EXPERTS)")
    ap.add_argument("--experts-alone", action="store_true", help="fit (and leave-one-model-out) the routed experts' "
                                                                 "grouped-GEMM η alone, the engine's constants as "
                                                                 "stored (EXPERTS without ENGINE)")
    ap.add_argument("--layer-scale", action="store_true", help="fit (and leave-one-model-out) the level constant "
                                                               "of the measured MoE layer too (LAYER; needs "
                                                               "--constants expert_layer_scale=K)")
    ap.add_argument("--prompt-host", action="store_true", help="fit (and leave-one-model-out) the executor's host "
                                                               "work per admitted prompt too (PROMPT)")
    release_arg(ap)
    gemm_form_arg(ap)
    args = ap.parse_args()
    if args.experts_alone and (args.host or args.experts or args.layer_scale or args.prompt_host):
        ap.error("--experts-alone fits the experts' η and nothing else: drop --host, --experts, --layer-scale and "
                 "--prompt-host")
    return args


def main() -> int:
    from ironlaw.models.serving import throughput as st
    args = parse_args()
    use_release(args.release, args.release_classes, args.routing)
    use_gemm_form(args.gemm_form, args.data)
    constants_arg(args.constants)
    table, skipped = [], []
    for c in cells():
        spec = spec_for(c["model"])
        (table if spec else skipped).append({**c, "spec": spec})
    if skipped:
        print(f"skipped (model not built in yet): {sorted({c['model'] for c in skipped})}, {len(skipped)} cells")
    terms, walls = [], []
    for c in table:
        t0 = time.perf_counter()
        est = predict(c)
        walls.append(time.perf_counter() - t0)
        t = CellTerms(est, c)
        assert abs(t.time(vars(est.constants)) / est.time_s - 1) < 1e-6, c   # the fast path is the model itself
        t.est = est
        terms.append(t)
    const = {k: getattr(fitted(), k) for k in NAMES if getattr(fitted(), k) is not None}   # a level left off: none
    names = ENGINE + (HOST if args.host else ()) + (EXPERTS if args.experts else ()) + \
        (LAYER if args.layer_scale else ()) + (PROMPT if args.prompt_host else ())
    if args.experts_alone:
        names = EXPERTS
    if args.layer_scale and fitted().expert_layer_scale is None:
        raise SystemExit("--layer-scale: price the cells on the measured MoE layer first "
                         "(--constants expert_layer_scale=K)")
    if args.fit:
        const = fit(terms, const, names)
        print("fitted constants: " + ", ".join(f"{k}={v:.4g}" for k, v in const.items()))
    errs = score(terms, const)
    models = sorted({c["model"] for c in table})
    lomo_err, lomo_pred = leave_one_model_out(terms, const, names, models)
    final = replace(fitted(), **const)
    w = (14, 3, 10, 10, 10, 8, 8, 6, 12, 9, 9)
    print("\n" + table_row(("model", "tp", "ISL/OSL", "published", "predicted", "error", "LOMO", "batch", "set by",
                        "h200", "b200"), w))
    ours = {}
    for t, e in zip(terms, errs):
        c = t.cell
        key = (c["model"], c["isl"], c["osl"])
        ours[key] = t.tokens_per_s(const)
        other = []
        for hw in ("h200", "b200"):
            try:
                other.append(f"{predict(c, hw, final).output_tokens_per_s:,.0f}")
            except Exception as ex:              # a cell another device cannot run is reported, not hidden
                other.append(type(ex).__name__)
        print(table_row((c["model"], c["tp"], f"{c['isl']}/{c['osl']}", f"{c['published']:,.0f}", f"{ours[key]:,.0f}",
                     f"{e:+.1f}%", f"{lomo_err[key]:+.1f}%", t.est.batch, t.est.batch_limit, *other), w))
    med, am = print_summary(terms, errs, lomo_err, models)
    print(f"ironlaw: {statistics.median(walls) * 1e3:.0f} ms per prediction (median over {len(walls)} cells, "
          f"max {max(walls) * 1e3:.0f} ms)")
    print_peers(table, ours, lomo_pred)
    if args.host_scan:
        host_scan(terms, const)
    from bench import print_table
    cell = next((t for t in terms if (t.cell["model"], t.cell["isl"], t.cell["osl"]) == ("llama3.1-8b", 2048, 2048)))
    e9305 = 100.0 * (cell.tokens_per_s(const) / 9305 - 1)
    return print_table([
        ("llama3.1-8b h100 tp1 fp8 2048/2048 vs 9,305 tok/s", f"{e9305:+.1f}%", "within 5%", abs(e9305) <= 5),
        ("all H100 cells, median |error|", f"{med:.1f}%", "<= 5%", med <= 5),
        ("leave-one-model-out, median |error| (all cells)", f"{am:.2f}%", "<= 5%", am <= 5),
        ("time per prediction", f"{statistics.median(walls):.2f} s", "< 1 s", statistics.median(walls) < 1)],
        "TensorRT-LLM H100 max-throughput")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    sys.exit(main())
