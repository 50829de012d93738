"""DeepEP dispatch and combine (wide expert parallelism) from measured tables, against the law's all-to-all.

Data: the moe_a2a tables of aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0;
systems/data/<system>/comm/trtllm/1.3.0rc11/moe_a2a_perf.parquet: TensorRT-LLM's DeepEP high-throughput
kernels, ``comm_backend`` trtllm_deepep_ht, bf16, EP 8 on one node), read by kerneltable from ``--data DIR``
or, by default, from the extract in tests/data/kernel_tables (B200 and H100).

Two things per GPU and phase: (1) the law's all-to-all — ironlaw times an expert-parallel exchange as an
all-to-all of tokens · top-k · hidden · 2 bytes (models/parallel/, models/serving/parallel.py), which on one
node is the catalog's measured NCCL all-to-all curve — against DeepEP's measured time (nothing fitted);
(2) one line T = α + f(p)·n/B per phase (commfit.fit_lines, one line: more hold out no better) fitted on every
other token count, scored on the rest. ``--write`` stores (2) in each GPU's catalog ``[network]`` as the curves
``alltoall-deepep-dispatch`` / ``alltoall-deepep-combine`` (machine/network/curves.py) with their provenance:
what ``--moe-dispatcher deepep`` (Megatron-Core's flex dispatcher on its DeepEP backend, models/dispatcher.py)
times the expert exchange with.

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
EXTRACT = ("b200_sxm", "h100_sxm")
PACKAGE = "aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0)"
CLAUSE = "; DeepEP dispatch/combine curves: "       # where the [network] source names the DeepEP curves
CURVE_BLOCK = re.compile(r'\[\[network\.curve\]\]\ncollective = "alltoall-deepep-\w+"\n(?:\w+ = [^\n]*\n)*\n?')
NETWORK = re.compile(r"^\[network\]\n.*?(?=^\[(?!\[network\.curve\]\])|\Z)", re.S | re.M)


def rows(data: Path) -> list[tuple[str, str, object]]:
    """[(gpu, table path, rows of the DeepEP HT bf16 exchange)]."""
    return [(t.gpu, path, t.rows[(t.rows.comm_backend == BACKEND) & (t.rows.comm_dtype == DTYPE) &
                                 (t.rows.node_num == 1)])
            for _, t, path in tables(data, SYSTEMS, "comm", "trtllm", VERSION, "moe_a2a")]


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
    entries = re.findall(r'"([^"]*moe_a2a_perf[^"]*)"', lists)
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
            items = [x for x in re.findall(r'"[^"]*"', row.group(1)) if "moe_a2a_perf" not in x]
            items += [f'"{e}"' for e in entries if f"{half}-ranked" in e]
            block = block[:row.start(1)] + ", ".join(items) + block[row.end(1):]
    block = block.rstrip("\n") + "\n\n" + blocks
    return text[:m.start()] + block.rstrip("\n") + "\n\n" + text[m.end():].lstrip("\n")


def write(gpu: str, fitted: dict) -> Path:
    """``gpu``'s catalog file with its DeepEP curves (``fits``) and their provenance in [network]."""
    from ironlaw.machine import hardware
    path = Path(hardware.get(gpu).path)
    own = {k: v for k, v in fitted.items() if k[0] == gpu}
    table = sorted({v[3] for v in own.values()})
    blocks = "".join(f'[[network.curve]]\ncollective = "{c}"\ngpus = {p}\nalpha_s = [{lines[0][0]:.4g}]\n'
                     f"bus_Bps = [{lines[0][1]:.4g}]\nrows = {k}\n\n" for (_, c, p), (lines, k, _, _) in sorted(own.items()))
    clause = (f"{CLAUSE}TensorRT-LLM {VERSION}'s DeepEP high-throughput kernels ({BACKEND}, bf16, one node) timed by "
              f"{PACKAGE}, systems/data/{', '.join(table)}: one line alpha + f(p)*n/B per phase on the all-to-all's "
              f"bytes (tokens x top-k x hidden x 2), fitted by benchmarks/kernel_deepep.py on every other token count "
              f"({sum(v[1] for v in own.values())} rows)")
    entries = [f"{PACKAGE} {t.split('/')[0]} trtllm {VERSION} moe_a2a_perf: {BACKEND} bf16, {h}-ranked token counts"
               for t in table for h in ("even", "odd")]
    text = with_deepep(path.read_text(), blocks, clause, entries)
    from ironlaw.machine.profile import write_atomic
    from ironlaw.machine.hardware import parse_hardware, toml_loads
    parse_hardware(toml_loads(text), str(path))
    return write_atomic(path, text)


def extract(data: Path, out: Path) -> None:
    keys = ["framework", "version", "device", "op_name", "kernel_source", "comm_backend", "phase", "comm_dtype",
            "ep_size", "node_num", "hidden_size", "topk", "num_experts", "num_tokens", "latency"]
    for gpu, path, r in rows(data):
        if Path(path).parts[0] in EXTRACT:
            write_extract(r, keys, out / Path(path).with_suffix(".csv"))


def main() -> int:
    a, data = arguments(__doc__, DATA, write="store the fitted DeepEP curves in the catalog's [network]")
    if a.extract:
        extract(data, Path(a.extract))
        return 0
    fitted = fits(data)
    if a.write:
        for gpu in sorted({k[0] for k in fitted}):
            print(f"wrote {write(gpu, fitted).relative_to(ROOT)}")
    print(f"DeepEP high-throughput dispatch / combine, bf16, EP 8 (GB200, GB300: 4) on one node (TensorRT-LLM {VERSION} tables); "
          f"bytes = tokens · top-k · hidden · 2")
    print(f"{'GPU':7s} {'phase':9s} {'rows':>4s}  {'law: signed':>11s} {'|err|':>6s}   "
          f"{'line held out: median':>21s} {'p90':>5s}  {'α µs':>6s} {'B GB/s':>7s}")
    for gpu, _, r in rows(data):
        for phase, k, signed, law, med, p90, alpha, bw in score(gpu, r):
            print(f"{gpu:7s} {phase:9s} {k:4d}  {100 * signed:+10.1f}% {100 * law:5.1f}%   {100 * med:20.1f}% "
                  f"{100 * p90:4.0f}%  {alpha * 1e6:6.1f} {bw / 1e9:7.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
