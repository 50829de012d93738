"""DeepEP dispatch and combine (wide expert parallelism) from measured tables, against the law's all-to-all.

Data: the moe_a2a tables of aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0;
systems/data/<system>/comm/trtllm/1.3.0rc11/moe_a2a_perf.parquet: TensorRT-LLM's DeepEP high-throughput
kernels, ``comm_backend`` trtllm_deepep_ht, bf16, EP 8 on one node), read by kerneltable from ``--data DIR``
or, by default, from the extract in tests/data/kernel_tables (B200 and H100).

Two things per GPU and phase: (1) the law as it stands — ironlaw times an expert-parallel exchange as an
all-to-all of tokens · top-k · hidden · 2 bytes (models/parallel/, models/serving/parallel.py), which on one
node is the catalog's measured NCCL all-to-all curve — against DeepEP's measured time (nothing fitted);
(2) one line T = α + n/B per phase fitted on every other token count, scored on the rest: how much of the
kernel a two-term law holds. The law has no DeepEP kernel class yet; (2) is what one would store for it.

    python benchmarks/kernel_deepep.py [--data DIR]
    python benchmarks/kernel_deepep.py --data DIR --extract tests/data/kernel_tables
"""
from __future__ import annotations

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


def extract(data: Path, out: Path) -> None:
    keys = ["framework", "version", "device", "op_name", "kernel_source", "comm_backend", "phase", "comm_dtype",
            "ep_size", "node_num", "hidden_size", "topk", "num_experts", "num_tokens", "latency"]
    for gpu, path, r in rows(data):
        if Path(path).parts[0] in EXTRACT:
            write_extract(r, keys, out / Path(path).with_suffix(".csv"))


def main() -> int:
    a, data = arguments(__doc__, DATA)
    if a.extract:
        extract(data, Path(a.extract))
        return 0
    print(f"DeepEP high-throughput dispatch / combine, bf16, EP 8 on one node (TensorRT-LLM {VERSION} tables); "
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
