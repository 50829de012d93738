"""Collectives fitted on measured NCCL tables, scored on the sizes left out, per GPU × collective.

Data: the nccl_perf tables of aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0;
systems/data/<system>/comm/nccl/<version>/nccl_perf.parquet, the newest NCCL version per system), read by
ironlaw.measure.calibrate.kerneltable from ``--data DIR`` (the wheel's systems/data) or, by default, from their
extract in tests/data/kernel_tables/<system>/comm/nccl/ (the same rows, repeated runs of a row reduced to their
median, which is what the fit takes of them either way). ``message_size`` counts
elements (half: 2 bytes, int8: 1; at 1 GiB the 8-GPU all-reduce bus bandwidth this gives is H100's ~450 and
A100's ~225 GB/s, as nccl-tests publish for those systems).

Fitted (machine/network/curves.py, measure/calibrate/commfit.py): per GPU, collective and GPU count, NCCL's
own time model min_i(α_i + f(p)·n/B_i) on the half-precision rows, every other message size. Scored: the
other half-precision sizes, and every one-byte (int8) row, predicted from the same 16-bit curve by bytes.
Goal: median |error| ≤ 8%, p90 ≤ 20% per GPU × collective on the held-out sizes.

vLLM's own all-reduce (comm/vllm/<newest>/custom_allreduce_perf, vllm_graph rows) is fitted regime by regime
between the message sizes where vLLM changes kernel (measure/calibrate/commswitch.py: its custom kernel's one-stage /
two-stage switch and its size ceiling, symmetric memory's), each regime its own lines, stored with ``from_bytes``.
SGLang's own all-reduce (comm/sglang/<newest>/custom_allreduce_perf, sglang_graph rows: 0.5.14, A100 0.5.10) the
same way as ``allreduce-sglang``, its regimes either side of its JIT custom kernel's 16 MiB ceiling
(commswitch.sglang_switches); the last block prints NCCL's curve, which timed SGLang's all-reduce before, against
its table.

Also fitted and stored: TensorRT-LLM's own all-reduce op (custom_allreduce_perf of trtllm 1.3.0rc20, bf16,
2–8 GPUs; aiconfigurator's collector times ``AllReduce`` with strategy AUTO, so the table holds TensorRT-LLM's
own choice between its custom kernels and NCCL), the same curve form on every other size, as the collective
``allreduce-trtllm`` (the TensorRT-LLM engine's tensor-parallel all-reduce, models/serving/step/collectives.py); and the
NCCL all-reduce curve against it.

    python benchmarks/kernel_comm.py            # fit, score, and check the catalog holds these curves
    python benchmarks/kernel_comm.py --write    # write the fitted curves into the catalog's [network] tables
    python benchmarks/kernel_comm.py --data DIR --extract tests/data/kernel_tables   # the tests' extract
"""
from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "kernel_tables"
sys.path.insert(0, str(ROOT / "src"))

OPS = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reducescatter",
       "alltoall": "alltoall"}
WORD = {"half": 2, "int8": 1}
GOAL_MEDIAN, GOAL_P90 = 0.08, 0.20
PACKAGE = "aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0)"
BASE = {"a100": "a100-vidur"}          # the α-β calibration kept for groups across nodes


def load(root: Path = DATA) -> tuple[dict, dict]:
    """({(gpu, collective, dtype, gpus): (bytes, seconds)}, {gpu: (table path, nccl version[, custom table])})
    of the newest nccl_perf table of every system folder under ``root``, the median of a size's repeated runs,
    and of its TensorRT-LLM all-reduce table (``CUSTOM``; collective ``allreduce-trtllm``, bf16 as "half")."""
    from ironlaw.measure.calibrate import kerneltable
    curves: dict = {}
    meta: dict = {}
    for path in newest_tables(root):
        for t in kerneltable.read(path, ops=("nccl", "oneccl")):
            meta[t.gpu] = (str(path.relative_to(root)), t.version)
            for (op, dt, p), rows in t.rows.groupby(["op_name", "nccl_dtype", "num_gpus"]):
                med = rows.groupby("message_size")["latency_s"].median()
                curves[(t.gpu, OPS[op], dt, int(p))] = (med.index.to_numpy(float) * WORD[dt], med.to_numpy(float))
    for path in sorted(root.glob(f"*/comm/{CUSTOM}.*")):
        for t in kerneltable.read(path, ops=("custom_allreduce",)):
            if t.gpu not in meta:
                continue
            meta[t.gpu] += (str(path.relative_to(root)),)
            for p, rows in t.rows.groupby("num_gpus"):
                med = rows.groupby("message_size")["latency_s"].median()
                curves[(t.gpu, TRTLLM, "half", int(p))] = (med.index.to_numpy(float) * WORD["half"],
                                                         med.to_numpy(float))
    for engine, (coll, graph) in ENGINES.items():
        for path in newest_engine(root, engine):
            for t in kerneltable.read(path, ops=("custom_allreduce",)):
                rows = t.rows[t.rows["backend"] == graph] if "backend" in t.rows.columns else t.rows[:0]
                if t.gpu not in meta or rows.empty:
                    continue
                meta[t.gpu] += ((engine, str(path.relative_to(root)), t.version),)
                for p, r in rows.groupby("num_gpus"):
                    med = r.groupby("message_size")["latency_s"].median()
                    curves[(t.gpu, coll, "half", int(p))] = (med.index.to_numpy(float) * WORD["half"],
                                                           med.to_numpy(float))
    return curves, meta


def _newest_per_system(data: Path, pattern: str, fallback=None) -> list[Path]:
    """Per system folder of ``data``, its table matching ``pattern`` in the folder of the highest version (its
    numbers compared in order), else where ``fallback(system)`` gives a pattern, the last table matching that."""
    def version(p: Path) -> tuple:
        return tuple(int(x) for x in re.findall(r"\d+", p.parent.name))
    out = []
    for system in sorted(d for d in data.iterdir() if d.is_dir()):
        found = sorted(system.glob(pattern), key=version)
        if not found and fallback is not None and fallback(system.name):
            found = sorted(system.glob(fallback(system.name)))
        if found:
            out.append(found[-1])
    return out


def newest_engine(data: Path, engine: str) -> list[Path]:
    """Per system folder of ``data``, its newest comm/<engine>/<version>/custom_allreduce_perf table (``ENGINES``:
    vllm, sglang)."""
    return _newest_per_system(data, f"comm/{engine}/*/custom_allreduce_perf.*")


# a system without NCCL tables: its oneCCL table (Intel GPUs; the same columns, kerneltable's "oneccl" op), the
# version named here. b60: 2021.15.9 times 2, 4 and 8 GPUs (315 rows); the newer 2021.17.2 times 2 and 4 only
ONECCL = {"b60": "2021.15.9"}


def newest_tables(data: Path) -> list[Path]:
    """Per system folder of ``data``, its newest comm/nccl/<version>/nccl_perf table (older ones lack columns), or
    where it has none, its comm/oneccl/<version>/oneccl_perf table of the version ``ONECCL`` names."""
    return _newest_per_system(data, "comm/nccl/*/nccl_perf.*",
                              lambda system: system in ONECCL and f"comm/oneccl/{ONECCL[system]}/oneccl_perf.*")


def library(where: str) -> tuple[str, str]:
    """(library, its table's stem) of a comm table's path: NCCL's nccl_perf, or oneCCL's oneccl_perf."""
    return ("oneCCL", "oneccl_perf") if "oneccl" in Path(where).parts else ("NCCL", "nccl_perf")


def extract(data: Path, out: Path) -> None:
    """The tests' extract: each catalog GPU's newest nccl_perf table, a size's repeated runs as their median;
    the custom_allreduce tables of TensorRT-LLM 1.3.0rc20 as they are."""
    from ironlaw.measure.calibrate import kerneltable
    keys = ["framework", "version", "device", "op_name", "kernel_source", "nccl_dtype", "num_gpus", "message_size"]
    for path in newest_tables(data):
        for t in kerneltable.read(path, ops=("nccl", "oneccl")):
            rows = t.rows.groupby(keys, as_index=False, sort=True)["latency"].median()
            dest = out / path.relative_to(data).with_suffix(".csv")
            dest.parent.mkdir(parents=True, exist_ok=True)
            rows[keys + ["latency"]].to_csv(dest, index=False, float_format="%.6g")
            print(f"{dest}: {len(rows)} rows")
    keys = ["framework", "version", "device", "op_name", "kernel_source", "allreduce_dtype", "num_gpus",
            "message_size", "implementation", "latency"]
    for path in sorted(data.glob(f"*/comm/{CUSTOM}.*")):
        for t in kerneltable.read(path, ops=("custom_allreduce",)):
            dest = out / path.relative_to(data).with_suffix(".csv")
            dest.parent.mkdir(parents=True, exist_ok=True)
            t.rows[[c for c in keys if c in t.rows.columns]].to_csv(dest, index=False, float_format="%.6g")
            print(f"{dest}: {len(t.rows)} rows")
    keys = keys[:-2] + ["backend", "latency"]
    for path, graph in [(p, g) for e, (_, g) in ENGINES.items() for p in newest_engine(data, e)]:
        for t in kerneltable.read(path, ops=("custom_allreduce",)):
            rows = t.rows[t.rows["backend"] == graph] if "backend" in t.rows.columns else t.rows[:0]
            if rows.empty:
                continue
            dest = out / path.relative_to(data).with_suffix(".csv")
            dest.parent.mkdir(parents=True, exist_ok=True)
            rows[[c for c in keys if c in rows.columns]].to_csv(dest, index=False, float_format="%.6g")
            print(f"{dest}: {len(rows)} rows")


CUSTOM = "trtllm/1.3.0rc20/custom_allreduce_perf"
TRTLLM = "allreduce-trtllm"           # machine.network.curves.TRTLLM_ALLREDUCE
VLLM = "allreduce-vllm"               # machine.network.curves.VLLM_ALLREDUCE
VLLM_GRAPH = "vllm_graph"             # the rows timed inside a CUDA graph, as vLLM's captured steps run it
SGLANG = "allreduce-sglang"           # machine.network.curves.SGLANG_ALLREDUCE
SGLANG_GRAPH = "sglang_graph"         # the rows timed by a CUDA graph's replay, as SGLang's captured steps run it
# an engine's own all-reduce as its catalog source names it: (collective, engine, its dispatch, how its rows were
# timed, their backend column)
VLLM_OWN = (VLLM, "vLLM", "its custom all-reduce over NVLink peer memory where it takes the message, symmetric memory "
            "or NCCL beyond", "timed inside a CUDA graph", VLLM_GRAPH)
SGLANG_OWN = (SGLANG, "SGLang", "its JIT custom all-reduce over NVLink peer memory up to 16 MiB, NCCL beyond",
              "timed by a CUDA graph's replay", SGLANG_GRAPH)
# an engine's comm/<engine>/ folder -> (its all-reduce's collective, the backend of its rows timed in a CUDA graph)
ENGINES = {"vllm": (VLLM, VLLM_GRAPH), "sglang": (SGLANG, SGLANG_GRAPH)}
OWN = (TRTLLM, VLLM, SGLANG)          # the engines' own all-reduce ops, beside NCCL's collectives


def nccl_vs_trtllm(curves: dict, fits: dict, own: str = TRTLLM) -> list[tuple]:
    """Per GPU and GPU count: (gpu, gpus, sizes, median signed error of the NCCL all-reduce curve against
    the engine's measured all-reduce ``own`` (TensorRT-LLM's unless given) at the same sizes, and the same below
    16 MB)."""
    from ironlaw.measure.calibrate.commfit import predict_s
    out = []
    for (gpu, coll, _, p), (n, t) in sorted(curves.items()):
        nccl = fits.get((gpu, "allreduce", p))
        if coll != own or nccl is None:
            continue
        e = predict_s(nccl[0], "allreduce", p, n) / t - 1
        out.append((gpu, p, len(n), float(np.median(e)), float(np.median(e[n <= 16e6]))))
    return out


def fit(curves: dict) -> dict:
    """{(gpu, collective, gpus): (lines, fitted sizes)} on the half-precision rows' fit half."""
    from ironlaw.measure.calibrate.commfit import fit_lines, split
    from ironlaw.measure.calibrate.commswitch import switches
    out = {}
    for (gpu, coll, dt, p), (n, t) in sorted(curves.items()):
        if dt == "half":
            keep = split(n)
            engine = next((e for e, (c, _) in ENGINES.items() if c == coll), "")
            out[(gpu, coll, p)] = (fit_lines(coll, p, n[keep], t[keep], switches=switches(engine, gpu, p),
                                             fewest=bool(engine)), int(keep.sum()))
    return out


def score(curves: dict, fits: dict) -> dict:
    """{(gpu, class): |relative error| of every row not fitted}: class is the collective, or
    'collective, int8' for the one-byte rows predicted from the 16-bit curve."""
    from ironlaw.measure.calibrate.commfit import predict_s, split
    out: dict = {}
    for (gpu, coll, dt, p), (n, t) in sorted(curves.items()):
        lines = fits[(gpu, coll, p)][0]
        rows = ~split(n) if dt == "half" else np.ones(len(n), bool)
        err = np.abs(predict_s(lines, coll, p, n[rows]) / t[rows] - 1)
        out.setdefault((gpu, coll if dt == "half" else f"{coll}, int8"), []).append(err)
    return {k: np.concatenate(v) for k, v in out.items()}


def network_block(gpu: str, fits: dict, meta: dict) -> str:
    """The [network] table of ``gpu``'s catalog file holding its fitted curves."""
    where, version, *extra = meta[gpu]
    custom = [c for c in extra if isinstance(c, str)]                 # TensorRT-LLM's table
    vllm = next((c[1:] for c in extra if isinstance(c, tuple) and c[0] == "vllm"), None)  # vLLM's (table, version)
    sglang = next((c[1:] for c in extra if isinstance(c, tuple) and c[0] == "sglang"), None)
    system = Path(where).parts[0]
    lib, stem = library(where)
    name = f"{lib.lower()} {version} {stem}"
    where = f"systems/data/{Path(where).with_suffix('.parquet')}"
    base = BASE.get(gpu, "default")
    rows = sum(k for (g, c, _), (_, k) in fits.items() if g == gpu and c not in OWN)
    trt = trt_fit = trt_held = ""
    if custom:
        table = f"systems/data/{Path(custom[0]).with_suffix('.parquet')}"
        k = sum(n for (g, c, _), (_, n) in fits.items() if g == gpu and c == TRTLLM)
        trt = (f"; collective {TRTLLM}: TensorRT-LLM 1.3.0rc20's own all-reduce op (strategy AUTO: its custom "
               f"one-/two-shot kernels up to its workspace, NCCL beyond) timed by {PACKAGE}, {table}, the same "
               f"lines fitted on every other message size ({k} rows): what TensorRT-LLM's engine runs a "
               f"tensor-parallel all-reduce with (models/serving/step/collectives.py)")
        trt_fit = f', "{PACKAGE} {system} trtllm 1.3.0rc20 custom_allreduce_perf: bf16, even-ranked message sizes"'
        trt_held = f', "{PACKAGE} {system} trtllm 1.3.0rc20 custom_allreduce_perf: bf16, odd-ranked message sizes"'
    for own, engine in ((vllm, VLLM_OWN), (sglang, SGLANG_OWN)):
        if own:
            trt, trt_fit, trt_held = _own_parts(gpu, system, own, fits, (trt, trt_fit, trt_held), engine)
    beyond = ("groups across nodes: NCCL all-reduce and send/recv on DGX A100 by microsoft/vidur (MIT), fitted by "
              "benchmarks/fit_nccl_a100.py (ironlaw.machine.network.calibration.A100_VIDUR: per-call launch, "
              "per-link efficiency, an InfiniBand ceiling of 19.85 GB/s per node); that cluster's InfiniBand "
              "reached ~24% of a port's rate. Set calibration = 'default' for a rail-optimised fabric whose "
              "ports add up (the sourced estimates)" if base == "a100-vidur"
              else "groups across nodes: the sourced α-β estimates")
    out = ["[network]", f'calibration = "{base}"',
           f'source = "measured: {lib} {version} {stem} table of {PACKAGE}, {where}: one curve per collective '
           f'and GPU count on one node, NCCL\'s latency-plus-bandwidth lines min(α_i + f(p)·n/B_i) fitted by '
           f'benchmarks/kernel_comm.py (ironlaw.measure.calibrate.commfit) on the half-precision rows, every other '
           f'message size ({rows} rows){trt}; {beyond}"',
           f'fitted = ["{PACKAGE} {system} {name}: half, even-ranked message sizes"{trt_fit}]',
           f'held_out = ["{PACKAGE} {system} {name}: half, odd-ranked message sizes", '
           f'"{PACKAGE} {system} {name}: int8, all message sizes"{trt_held}]']
    for (g, coll, p), (lines, k) in sorted(fits.items()):
        if g != gpu:
            continue
        out += ["", "[[network.curve]]", f'collective = "{coll}"', f"gpus = {p}",
                "alpha_s = [" + ", ".join(f"{l[0]:.4g}" for l in lines) + "]",
                "bus_Bps = [" + ", ".join(f"{l[1]:.4g}" for l in lines) + "]", f"rows = {k}"]
        if any(len(l) > 2 for l in lines):
            out.append("from_bytes = [" + ", ".join(f"{l[2]:.0f}" for l in lines) + "]")
    return "\n".join(out) + "\n"


def _own_parts(gpu: str, system: str, own: tuple, fits: dict, parts: tuple, engine: tuple) -> tuple[str, str, str]:
    """``parts`` (the source's engine clauses, the fitted and held-out lists' tails) with the all-reduce clause of
    ``engine`` (``VLLM_OWN``, ``SGLANG_OWN``: its collective, name, dispatch, how its rows were timed, their backend)
    on ``own``, its (table, version)."""
    trt, trt_fit, trt_held = parts
    coll, label, dispatch, timed, graph = engine
    table = f"systems/data/{Path(own[0]).with_suffix('.parquet')}"
    k = sum(n for (g, c, _), (_, n) in fits.items() if g == gpu and c == coll)
    trt += (f"; collective {coll}: {label} {own[1]}'s tensor-parallel all-reduce (tensor_model_parallel_all_reduce: "
            f"{dispatch}) {timed} ({graph} rows) by {PACKAGE}, {table}, the same lines fitted on every other message "
            f"size ({k} rows) regime by regime between the sizes where {label} changes kernel (from_bytes; "
            f"ironlaw.measure.calibrate.commswitch): what {label}'s engine runs a tensor-parallel all-reduce with "
            f"(models/serving/step/collectives.py)")
    name = label.lower()
    trt_fit += f', "{PACKAGE} {system} {name} {own[1]} custom_allreduce_perf: {graph} bf16, even-ranked message sizes"'
    trt_held += f', "{PACKAGE} {system} {name} {own[1]} custom_allreduce_perf: {graph} bf16, odd-ranked message sizes"'
    return trt, trt_fit, trt_held


def write_catalog(fits: dict, meta: dict) -> list[Path]:
    """Replace (or append) the [network] table of every fitted GPU's catalog file."""
    from ironlaw.machine import hardware
    import kernel_deepep
    done = []
    for gpu in sorted(meta):
        path = hardware.CATALOG_DIR / f"{gpu}.toml"
        text = path.read_text()
        block = network_block(gpu, fits, meta)
        pattern = re.compile(r"^\[network\]\n.*?(?=^\[(?!\[network\.curve\]\])|\Z)", re.S | re.M)
        deepep = kernel_deepep.deepep_parts(text)           # the DeepEP curves kernel_deepep.py stored: kept
        if pattern.search(text):
            text = pattern.sub(lambda _: block + "\n", text, count=1).rstrip("\n") + "\n"
        else:
            text = text.rstrip("\n") + "\n\n" + block
        if deepep[0]:
            text = kernel_deepep.with_deepep(text, *deepep).rstrip("\n") + "\n"
        path.write_text(text)
        done.append(path)
    return done


def catalog_matches(fits: dict, meta: dict) -> list[str]:
    """GPUs whose catalog curves differ from this fit (empty: the catalog holds exactly these numbers)."""
    from ironlaw.machine import hardware
    from ironlaw.machine.network.calibration import for_hardware
    bad = []
    for gpu in sorted(meta):
        cal = for_hardware(hardware.get(gpu))
        for (g, coll, p), (lines, _) in fits.items():
            got = cal.curves.get((coll, p)) if g == gpu else lines
            if got is None or not np.allclose(np.array(got), np.array(lines), rtol=1e-3):
                bad.append(f"{gpu} {coll} {p}")
                break
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="write the fitted curves into the catalog files")
    ap.add_argument("--data", help="aiconfigurator_core/systems/data of an unpacked aiconfigurator-core 0.12.0 wheel")
    ap.add_argument("--extract", help="write the tests' CSV extract (from --data) to this folder and stop")
    args = ap.parse_args()
    if args.extract:
        extract(Path(args.data or DATA), Path(args.extract))
        return 0
    curves, meta = load(Path(args.data) if args.data else DATA)
    fits = fit(curves)
    if args.write:
        for p in write_catalog(fits, meta):
            print(f"wrote {p.relative_to(ROOT)}")
    errs = score(curves, fits)
    print(f"NCCL collectives on one node, {PACKAGE} nccl_perf tables; fitted: half, every other size; "
          f"goal median ≤ {GOAL_MEDIAN:.0%}, p90 ≤ {GOAL_P90:.0%}")
    print(f"{'GPU':14s} {'class':22s} {'rows':>5s} {'median':>7s} {'p90':>6s} {'max':>6s}  goal")
    held = []
    for (gpu, cls), e in sorted(errs.items()):
        ok = np.median(e) <= GOAL_MEDIAN and np.percentile(e, 90) <= GOAL_P90
        if "int8" not in cls:
            held.append(ok)
        print(f"{gpu:14s} {cls:22s} {len(e):5d} {100 * np.median(e):6.1f}% {100 * np.percentile(e, 90):5.1f}% "
              f"{100 * e.max():5.0f}%  {'met' if ok else 'MISS'}")
    allh = np.concatenate([e for (g, c), e in errs.items() if "int8" not in c])
    print(f"\nheld-out half-precision sizes, all GPUs: {len(allh)} rows, median {100 * np.median(allh):.1f}%, "
          f"p90 {100 * np.percentile(allh, 90):.1f}%; {sum(held)} of {len(held)} GPU × collective met")
    print(f"\nTensorRT-LLM's all-reduce ({CUSTOM}, bf16; class {TRTLLM} above): what the law timed a "
          f"tensor-parallel all-reduce with before, NCCL's curve, against it (median signed)")
    for gpu, p, k, med, small in nccl_vs_trtllm(curves, fits):
        print(f"{gpu:14s} {p} GPUs {k:3d} sizes  NCCL curve {100 * med:+6.1f}% (≤ 16 MB: {100 * small:+6.1f}%)")
    tables = ", ".join(f"{g} {c[2]}" for g in sorted(meta) for c in meta[g][2:]
                       if isinstance(c, tuple) and c[0] == "sglang")
    print(f"\nSGLang's all-reduce (comm/sglang/<newest>/custom_allreduce_perf, {SGLANG_GRAPH} bf16; class {SGLANG} "
          f"above; {tables}): what the law timed SGLang's tensor-parallel all-reduce with before, NCCL's curve, "
          f"against it (median signed)")
    for gpu, p, k, med, small in nccl_vs_trtllm(curves, fits, SGLANG):
        print(f"{gpu:14s} {p} GPUs {k:3d} sizes  NCCL curve {100 * med:+6.1f}% (≤ 16 MB: {100 * small:+6.1f}%)")
    stale = catalog_matches(fits, meta)
    print("catalog [network] curves: " + ("match this fit" if not stale else f"STALE for {', '.join(stale)} "
                                          f"(run with --write)"))
    return 0 if not stale else 1


if __name__ == "__main__":
    raise SystemExit(main())
