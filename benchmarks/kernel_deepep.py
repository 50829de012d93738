"""DeepEP dispatch and combine (wide expert parallelism) from measured tables, against the law's all-to-all.

Data: the moe_a2a tables of aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0;
systems/data/<system>/comm/trtllm/1.3.0rc11/moe_a2a_perf.parquet: TensorRT-LLM's DeepEP high-throughput
kernels, ``comm_backend`` trtllm_deepep_ht, bf16, EP 8 on one node, and its low-latency kernels,
trtllm_deepep_ll, 1–256 tokens per rank), read by kerneltable from ``--data DIR`` or, by default, from the
extract in tests/data/kernel_tables (B200 and H100).

Two things per GPU and phase: (1) the law's all-to-all — ironlaw times an expert-parallel exchange as an
all-to-all of tokens · top-k · hidden · 2 bytes (models/parallel/, models/serving/parallel.py), which on one
node is the catalog's measured NCCL all-to-all curve — against DeepEP's measured time (nothing fitted);
(2) one line T = α + f(p)·n/B per phase (commfit.fit_lines, one line: more hold out no better) fitted on every
other token count, scored on the rest; the high-throughput line (fitted on bf16) is also scored on the table's
NVFP4 rows (post-quant dispatch, their own bytes), none of which it saw. (3) The low-latency kernels: one line per
GPU and phase on the bytes the kernel moves (tokens · top-k · hidden · the wire dtype's bytes,
``curves.DEEPEP_WIRE_BYTES``) — dispatch on its bf16, fp8 and nvfp4 rows together, combine on its bf16 rows (what
TensorRT-LLM combines in without ``use_low_precision_moe_combine``) — fitted on every other token count of each
shape (hidden, top-k, experts, dtype), scored on the rest. ``--write`` stores (2) and (3) in each GPU's catalog
``[network]`` as the curves ``alltoall-deepep-dispatch`` / ``-combine`` and ``alltoall-deepep-ll-dispatch`` /
``-ll-combine`` (machine/network/curves.py) with their provenance: what ``--moe-dispatcher deepep`` times the
expert exchange with (training: Megatron-Core's flex dispatcher on its DeepEP backend, models/dispatcher.py;
serving: TensorRT-LLM's DeepEP and DeepEPLowLatency strategies, models/serving/parallel.py).

    python benchmarks/kernel_deepep.py [--data DIR] [--write]
    python benchmarks/kernel_deepep.py --data DIR --extract tests/data/kernel_tables
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "kernel_tables"
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from kernel_rows import arguments, held_out, median_p90, tables, write_extract  # noqa: E402

VERSION = "1.3.0rc11"
SYSTEMS = ("h100_sxm", "h200_sxm", "b200_sxm", "b300_sxm", "gb200", "gb300")
BACKEND, DTYPE = "trtllm_deepep_ht", "bfloat16"
LL_BACKEND = "trtllm_deepep_ll"
WIRE = {"bfloat16": "bf16", "fp8": "fp8", "nvfp4": "fp4", "fp4": "fp4"}   # the table's comm_dtype → wire dtype
LL_FIT_DTYPES = {"dispatch": ("bfloat16", "fp8", "nvfp4"), "combine": ("bfloat16",)}
EXTRACT = ("b200_sxm", "h100_sxm")
PACKAGE = "aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0)"
CLAUSE = "; DeepEP dispatch/combine curves: "       # where the [network] source names the DeepEP curves
CURVE_BLOCK = re.compile(r'\[\[network\.curve\]\]\ncollective = "alltoall-(?:deepep|mnnvl)-[\w-]+"\n(?:\w+ = [^\n]*\n)*\n?')
MNNVL_VERSION, MNNVL_SYSTEMS = "1.3.0rc10", ("gb200",)        # the folder; its rows ran TensorRT-LLM 1.2.0rc6
MNNVL_OPS = {("NVLinkOneSided", "alltoall_dispatch"): 1, ("NVLinkOneSided", "alltoall_combine"): 2,
             ("NVLinkTwoSided", "alltoall_prepare"): 0, ("NVLinkTwoSided", "alltoall_dispatch"): 1,
             ("NVLinkTwoSided", "alltoall_combine"): 2}       # → index in curves.MNNVL_ONE / MNNVL_TWO (+ prepare)
TABLE_KEYS = ("moe_a2a_perf", "trtllm_alltoall_perf")
NETWORK = re.compile(r"^\[network\]\n.*?(?=^\[(?!\[network\.curve\]\])|\Z)", re.S | re.M)


def rows(data: Path) -> list[tuple[str, str, object]]:
    """[(gpu, table path, rows of the DeepEP HT bf16 exchange)]."""
    return [(t.gpu, path, t.rows[(t.rows.comm_backend == BACKEND) & (t.rows.comm_dtype == DTYPE) &
                                 (t.rows.node_num == 1)])
            for _, t, path in tables(data, SYSTEMS, "comm", "trtllm", VERSION, "moe_a2a")]


def ll_rows(data: Path) -> list[tuple[str, str, object]]:
    """[(gpu, table path, rows of the DeepEP low-latency exchange on one node, every dtype)]."""
    return [(t.gpu, path, t.rows[(t.rows.comm_backend == LL_BACKEND) & (t.rows.node_num == 1)])
            for _, t, path in tables(data, SYSTEMS, "comm", "trtllm", VERSION, "moe_a2a")]


def wire_bytes(g) -> np.ndarray:
    """The bytes a DeepEP kernel moves for each row: tokens · top-k · hidden · the wire dtype's bytes."""
    from ironlaw.machine.network.curves import DEEPEP_WIRE_BYTES
    per = g.comm_dtype.map(lambda d: DEEPEP_WIRE_BYTES[WIRE[d]]).to_numpy(float)
    return (g.num_tokens * g.topk * g.hidden_size).to_numpy(float) * per


def shape_split(g) -> np.ndarray:
    """Every other token count of each measured shape (hidden, top-k, experts, dtype) for the fit; the rest scored."""
    from ironlaw.measure.calibrate.commfit import split
    keep = np.zeros(len(g), bool)
    for idx in g.groupby(["comm_dtype", "hidden_size", "topk", "num_experts"]).indices.values():
        keep[idx] = split(g.num_tokens.to_numpy()[idx])
    return keep


def ll_fits(data: Path) -> dict:
    """{(gpu, collective, ep): (lines, rows fitted, held-out |errors|, table path, {dtype: held-out |errors|})}: one
    line per GPU and low-latency phase on ``LL_FIT_DTYPES``' rows, fitted on ``shape_split``."""
    from ironlaw.machine.network.curves import DEEPEP_LL_COMBINE, DEEPEP_LL_DISPATCH
    from ironlaw.measure.calibrate.commfit import fit_lines, predict_s
    out = {}
    for gpu, path, r in ll_rows(data):
        for phase, g in r.groupby("phase"):
            g = g[g.comm_dtype.isin(LL_FIT_DTYPES[phase])].reset_index(drop=True)
            coll = {"dispatch": DEEPEP_LL_DISPATCH, "combine": DEEPEP_LL_COMBINE}[phase]
            n, t, keep = wire_bytes(g), g.latency_s.to_numpy(float), shape_split(g)
            ep = int(g.ep_size.iloc[0])
            lines = fit_lines(coll, ep, n[keep], t[keep], lines=1)
            err = np.abs(predict_s(lines, coll, ep, n[~keep]) / t[~keep] - 1)
            dt = g.comm_dtype.to_numpy()[~keep]
            out[(gpu, coll, ep)] = (lines, int(keep.sum()), err, path, {d: err[dt == d] for d in sorted(set(dt))})
    return out


def nvfp4_fits(data: Path) -> dict:
    """{(gpu, collective, ep): (lines, rows fitted, held-out |errors|, table path, |errors| of the bf16 line on all)}:
    the high-throughput dispatch of NVFP4 activations, one line per GPU on its wire bytes, fitted on every other
    token count; beside it the bf16 dispatch line's error on the same rows (none of which it saw)."""
    from ironlaw.machine.network.curves import DEEPEP_DISPATCH, DEEPEP_DISPATCH_FP4
    from ironlaw.measure.calibrate.commfit import fit_lines, predict_s, split
    bf16, out = fits(data), {}
    for _, t, path in tables(data, SYSTEMS, "comm", "trtllm", VERSION, "moe_a2a"):
        g = t.rows[(t.rows.comm_backend == BACKEND) & (t.rows.comm_dtype == "nvfp4") & (t.rows.node_num == 1) &
                   (t.rows.phase == "dispatch")]
        if g.empty:
            continue
        ep, n, s = int(g.ep_size.iloc[0]), wire_bytes(g), g.latency_s.to_numpy(float)
        keep = split(n)
        lines = fit_lines(DEEPEP_DISPATCH_FP4, ep, n[keep], s[keep], lines=1)
        base = bf16[(t.gpu, DEEPEP_DISPATCH, ep)][0]
        out[(t.gpu, DEEPEP_DISPATCH_FP4, ep)] = (
            lines, int(keep.sum()), np.abs(predict_s(lines, DEEPEP_DISPATCH_FP4, ep, n[~keep]) / s[~keep] - 1), path,
            np.abs(predict_s(base, DEEPEP_DISPATCH, ep, n) / s - 1))
    return out


def mnnvl_bytes(g) -> np.ndarray:
    """The bytes of each MNNVL all-to-all row: dispatch tokens · top-k · hidden · the wire dtype's bytes, combine in
    bf16 (2), prepare the routed slot ids (tokens · top-k · 4: int32)."""
    from ironlaw.machine.network.curves import DEEPEP_WIRE_BYTES
    rows = (g.num_tokens * g.topk).to_numpy(float)
    if g.op_name.iloc[0] == "alltoall_prepare":
        return rows * 4.0
    if g.op_name.iloc[0] == "alltoall_combine":
        return rows * g.hidden_size.to_numpy(float) * 2.0
    return rows * g.hidden_size.to_numpy(float) * g.moe_dtype.map(lambda d: DEEPEP_WIRE_BYTES[WIRE[d]]).to_numpy(float)


def mnnvl_fits(data: Path) -> dict:
    """{(gpu, collective, ep): (lines, rows fitted, held-out |errors|, table path)}: TensorRT-LLM's MNNVL all-to-all,
    one line per kernel, phase and EP size on its rows' bytes (``mnnvl_bytes``; dispatch over its dtypes, combine
    in bf16 — the low-precision combine is not fitted), fitted on every other token count of each dtype."""
    from ironlaw.machine.network.curves import MNNVL_ONE, MNNVL_TWO
    from ironlaw.measure.calibrate.commfit import fit_lines, predict_s, split
    out = {}
    for _, t, path in tables(data, MNNVL_SYSTEMS, "comm", "trtllm", MNNVL_VERSION, "trtllm_alltoall"):
        r = t.rows[t.rows.distribution == "balanced"]
        for (source, op, ep), g in r.groupby(["kernel_source", "op_name", "moe_ep_size"]):
            if (source, op) not in MNNVL_OPS:
                continue
            g = g.reset_index(drop=True)
            names = MNNVL_ONE if source == "NVLinkOneSided" else MNNVL_TWO[1:]
            coll = MNNVL_TWO[0] if op == "alltoall_prepare" else names[MNNVL_OPS[(source, op)] - 1]
            n, s = mnnvl_bytes(g), g.latency_s.to_numpy(float)
            keep = np.zeros(len(g), bool)
            for idx in g.groupby("moe_dtype").indices.values():
                keep[idx] = split(g.num_tokens.to_numpy()[idx])
            lines = fit_lines(coll, int(ep), n[keep], s[keep], lines=1)
            out[(t.gpu, coll, int(ep))] = (lines, int(keep.sum()),
                                           np.abs(predict_s(lines, coll, int(ep), n[~keep]) / s[~keep] - 1), path)
    return out


def law_s(gpu: str, ep: int, nbytes: np.ndarray) -> np.ndarray:
    from ironlaw.machine import hardware
    from ironlaw.machine.network import build, collective_time
    a, b = collective_time("alltoall", nbytes, build(hardware.get(gpu), ep, 1))
    return a + b


def score(gpu: str, r) -> list[tuple]:
    """Per phase: (phase, rows, law median signed error, law median |error|, line median |error| held out)."""
    from ironlaw.measure.calibrate.commfit import fit_line, split
    out = []
    for phase, g in r.groupby("phase"):
        n = (g.num_tokens * g.topk * g.hidden_size * 2.0).to_numpy(float)
        t = g.latency_s.to_numpy(float)
        ep = int(g.ep_size.iloc[0])
        law = law_s(gpu, ep, n) / t - 1
        (a, s), line = held_out(fit_line, lambda f, x: f[0] + x * f[1], n, t, split(n))
        med, p90 = median_p90(line)
        out.append((phase, len(t), float(np.median(law)), float(np.median(np.abs(law))), med, p90, a, 1 / s))
    return out


def fits(data: Path) -> dict:
    """{(gpu, collective, ep): (lines, rows fitted, held-out |errors|, table path)}: one line per GPU and phase
    fitted on every other token count."""
    from ironlaw.machine.network.curves import DEEPEP_COMBINE, DEEPEP_DISPATCH
    from ironlaw.measure.calibrate.commfit import fit_lines, predict_s, split
    out = {}
    for gpu, path, r in rows(data):
        for phase, g in r.groupby("phase"):
            coll = {"dispatch": DEEPEP_DISPATCH, "combine": DEEPEP_COMBINE}[phase]
            n = (g.num_tokens * g.topk * g.hidden_size * 2.0).to_numpy(float)
            t = g.latency_s.to_numpy(float)
            ep, keep = int(g.ep_size.iloc[0]), split(n)
            lines = fit_lines(coll, ep, n[keep], t[keep], lines=1)
            out[(gpu, coll, ep)] = (lines, int(keep.sum()), np.abs(predict_s(lines, coll, ep, n[~keep]) / t[~keep] - 1),
                                    path)
    return out


def deepep_parts(text: str) -> tuple[str, str, list[str]]:
    """(the DeepEP curve blocks, the source's DeepEP clause, the fitted / held_out entries naming the DeepEP table)
    a catalog file's [network] holds (empty where none): what another writer of [network] keeps."""
    m = NETWORK.search(text)
    block = m.group(0) if m else ""
    src = re.search(r'^source = "(.*)"$', block, re.M)
    clause = src.group(1)[src.group(1).index(CLAUSE):] if src and CLAUSE in src.group(1) else ""
    lists = "".join(m.group(1) for m in re.finditer(r"^(?:fitted|held_out) = \[(.*)\]$", block, re.M))
    entries = re.findall(r'"([^"]*(?:moe_a2a_perf|trtllm_alltoall_perf)[^"]*)"', lists)
    return "".join(CURVE_BLOCK.findall(block)), clause, entries


def with_deepep(text: str, blocks: str, clause: str, entries: list[str]) -> str:
    """``text`` with its [network]'s DeepEP curves, source clause and fitted / held_out entries replaced by these."""
    m = NETWORK.search(text)
    if m is None:
        return text
    block = CURVE_BLOCK.sub("", m.group(0))
    src = re.search(r'^source = "(.*)"$', block, re.M)
    if src:
        keep = src.group(1).split(CLAUSE)[0]
        block = block[:src.start(1)] + keep + clause + block[src.end(1):]
    for key, half in (("fitted", "even"), ("held_out", "odd")):
        row = re.search(rf"^{key} = \[(.*)\]$", block, re.M)
        if row:
            items = [x for x in re.findall(r'"[^"]*"', row.group(1)) if not any(k in x for k in TABLE_KEYS)]
            items += [f'"{e}"' for e in entries if f"{half}-ranked" in e]
            block = block[:row.start(1)] + ", ".join(items) + block[row.end(1):]
    block = block.rstrip("\n") + "\n\n" + blocks
    return text[:m.start()] + block.rstrip("\n") + "\n\n" + text[m.end():].lstrip("\n")


def write(gpu: str, fitted: dict, ll: dict, mnnvl: dict) -> Path:
    """``gpu``'s catalog file with its DeepEP curves (``fits``, ``nvfp4_fits``, ``ll_fits``), its MNNVL all-to-all
    curves (``mnnvl_fits``) and their provenance in [network]."""
    from ironlaw.machine import hardware
    from ironlaw.machine.network.curves import MAX_BUS_BPS    # a flat curve (no byte term): the file's largest B
    path = Path(hardware.get(gpu).path)
    own = {k: v for k, v in {**fitted, **ll, **mnnvl}.items() if k[0] == gpu}
    table = sorted({v[3] for k, v in own.items() if k not in mnnvl})
    blocks = "".join(f'[[network.curve]]\ncollective = "{c}"\ngpus = {p}\nalpha_s = [{v[0][0][0]:.4g}]\n'
                     f"bus_Bps = [{min(v[0][0][1], MAX_BUS_BPS):.4g}]\nrows = {v[1]}\n\n" for (_, c, p), v in sorted(own.items()))
    ht = sum(v[1] for k, v in fitted.items() if k[0] == gpu)
    low = sum(v[1] for k, v in ll.items() if k[0] == gpu)
    clause = (f"{CLAUSE}TensorRT-LLM {VERSION}'s DeepEP high-throughput kernels ({BACKEND}, bf16, one node) timed by "
              f"{PACKAGE}, systems/data/{', '.join(table)}: one line alpha + f(p)*n/B per phase on the all-to-all's "
              f"bytes (tokens x top-k x hidden x 2), fitted by benchmarks/kernel_deepep.py on every other token count "
              f"({ht} rows, the NVFP4 dispatch's own line on its rows' wire bytes among them); low-latency curves "
              f"alltoall-deepep-ll-dispatch/-ll-combine: the same table's {LL_BACKEND} rows (1-256 tokens per rank; "
              f"dispatch bf16, fp8, nvfp4 on their wire bytes, combine bf16), one line per phase fitted on every "
              f"other token count of each shape ({low} rows)")
    entries = [f"{PACKAGE} {t.split('/')[0]} trtllm {VERSION} moe_a2a_perf: {b}, {h}-ranked token counts"
               for t in table for b in (f"{BACKEND} bf16, nvfp4 dispatch", f"{LL_BACKEND} bf16/fp8/nvfp4 dispatch, bf16 combine")
               for h in ("even", "odd")]
    mine = {k: v for k, v in mnnvl.items() if k[0] == gpu}
    if mine:
        where = sorted({v[3] for v in mine.values()})
        clause += (f"; MNNVL all-to-all curves alltoall-mnnvl-one-sided-*/-two-sided-*: TensorRT-LLM 1.2.0rc6's "
                   f"NVLinkOneSided (nvfp4 dispatch) and NVLinkTwoSided (prepare; dispatch bf16, fp8, nvfp4; combine "
                   f"bf16) kernels timed by {PACKAGE}, systems/data/{', '.join(where)}: one line per phase and EP size "
                   f"(2-64) on the bytes it moves, fitted on every other token count of each dtype "
                   f"({sum(v[1] for v in mine.values())} rows)")
        entries += [f"{PACKAGE} {gpu} trtllm {MNNVL_VERSION} trtllm_alltoall_perf: balanced, {h}-ranked token counts"
                    for h in ("even", "odd")]
    text = with_deepep(path.read_text(), blocks, clause, entries)
    from ironlaw.machine.profile import write_atomic
    from ironlaw.machine.hardware import parse_hardware, toml_loads
    parse_hardware(toml_loads(text), str(path))
    return write_atomic(path, text)


def extract(data: Path, out: Path) -> None:
    keys = ["framework", "version", "device", "op_name", "kernel_source", "comm_backend", "phase", "comm_dtype",
            "ep_size", "node_num", "hidden_size", "topk", "num_experts", "num_tokens", "latency"]
    for _, t, path in tables(data, SYSTEMS, "comm", "trtllm", VERSION, "moe_a2a"):
        if Path(path).parts[0] in EXTRACT:
            write_extract(t.rows[t.rows.node_num == 1], keys, out / Path(path).with_suffix(".csv"))
    mnnvl = ["framework", "version", "device", "op_name", "kernel_source", "moe_dtype", "num_tokens", "hidden_size",
             "topk", "num_experts", "moe_ep_size", "distribution", "latency"]
    for _, t, path in tables(data, MNNVL_SYSTEMS, "comm", "trtllm", MNNVL_VERSION, "trtllm_alltoall"):
        keep = [(a, b) in MNNVL_OPS for a, b in zip(t.rows.kernel_source, t.rows.op_name)]
        write_extract(t.rows[keep], mnnvl, out / Path(path).with_suffix(".csv"))


def main() -> int:
    a, data = arguments(__doc__, DATA, write="store the fitted DeepEP curves in the catalog's [network]")
    if a.extract:
        extract(data, Path(a.extract))
        return 0
    fitted, ll, nv, mnnvl = fits(data), ll_fits(data), nvfp4_fits(data), mnnvl_fits(data)
    if a.write:
        for gpu in sorted({k[0] for k in fitted}):
            print(f"wrote {write(gpu, {**fitted, **nv}, ll, mnnvl).relative_to(ROOT)}")
    print(f"DeepEP high-throughput dispatch / combine, bf16, EP 8 (GB200, GB300: 4) on one node (TensorRT-LLM {VERSION} tables); "
          f"bytes = tokens · top-k · hidden · 2")
    print(f"{'GPU':7s} {'phase':9s} {'rows':>4s}  {'law: signed':>11s} {'|err|':>6s}   "
          f"{'line held out: median':>21s} {'p90':>5s}  {'α µs':>6s} {'B GB/s':>7s}")
    for gpu, _, r in rows(data):
        for phase, k, signed, law, med, p90, alpha, bw in score(gpu, r):
            print(f"{gpu:7s} {phase:9s} {k:4d}  {100 * signed:+10.1f}% {100 * law:5.1f}%   {100 * med:20.1f}% "
                  f"{100 * p90:4.0f}%  {alpha * 1e6:6.1f} {bw / 1e9:7.0f}")
    print("\nDeepEP high-throughput dispatch of NVFP4 activations (post-quant), one line per GPU on its wire bytes, "
          "fitted on every other token count, scored on the rest; beside it the bf16 line on all of them")
    for (gpu, _, ep), (lines, k, err, _, base) in sorted(nv.items()):
        med, p90 = median_p90(err)
        print(f"{gpu:7s} EP {ep}  fit {k:3d}  held out {100 * med:5.1f}% (p90 {100 * p90:3.0f}%)  α {lines[0][0] * 1e6:6.1f} µs "
              f"B {lines[0][1] / 1e9:5.0f} GB/s   bf16 line: {100 * np.median(base):5.1f}% (p90 {100 * np.percentile(base, 90):3.0f}%)")
    print(f"\nDeepEP low-latency dispatch (bf16, fp8, nvfp4) / combine (bf16), 1–256 tokens per rank, one line per GPU "
          f"and phase on the wire bytes, fitted on every other token count of each shape, scored on the rest")
    print(f"{'GPU':7s} {'phase':9s} {'EP':>3s} {'fit':>4s} {'held':>4s}  {'median':>6s} {'p90':>5s}  {'α µs':>6s} "
          f"{'B GB/s':>7s}  per dtype (median)")
    for (gpu, coll, ep), (lines, k, err, _, per) in sorted(ll.items()):
        med, p90 = median_p90(err)
        dts = ", ".join(f"{d} {100 * np.median(e):.1f}%" for d, e in per.items())
        print(f"{gpu:7s} {coll.rsplit('-', 1)[1]:9s} {ep:3d} {k:4d} {len(err):4d}  {100 * med:5.1f}% {100 * p90:4.0f}%  "
              f"{lines[0][0] * 1e6:6.1f} {lines[0][1] / 1e9:7.0f}  {dts}")
    if mnnvl:
        print("\nTensorRT-LLM's MNNVL all-to-all (NVLinkOneSided: nvfp4 dispatch; NVLinkTwoSided: prepare, dispatch "
              "bf16/fp8/nvfp4, combine bf16), one line per phase and EP size, held out: median (p90) by EP")
        for coll in sorted({k[1] for k in mnnvl}):
            row = [(k[2], v) for k, v in sorted(mnnvl.items(), key=lambda kv: kv[0][2]) if k[1] == coll]
            print(f"  {coll:34s} " + "  ".join(f"EP {ep}: {100 * np.median(v[2]):.1f}% ({100 * np.percentile(v[2], 90):.0f}%)"
                                              for ep, v in row))
        allm = np.concatenate([v[2] for v in mnnvl.values()])
        print(f"  all MNNVL rows held out: median {100 * np.median(allm):.1f}%, p90 {100 * np.percentile(allm, 90):.0f}% "
              f"({len(allm)} rows)")
    every = np.concatenate([v[2] for v in ll.values()])
    print(f"all low-latency rows held out: median {100 * np.median(every):.1f}%, p90 {100 * np.percentile(every, 90):.0f}% "
          f"({len(every)} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
