"""ironlaw's datasheet H200 against kernels and whole steps measured on a real H200 (held out: nothing is fitted).

    python benchmarks/h200_measured.py [--data tests/data/h200_llama8b_measured.json]

The data come from benchmarks/gpu_llm.py (see the file's `_source`): a Llama-3.1-8B-shaped decoder in plain
torch, bf16. Rows:
  GEMM        bf16 and fp8 projection GEMMs at M ≥ 256 tokens (smaller ones were timed one launch at a time and
              carry the host's launch time, so they say nothing about the device)
  decode      whole decode steps over a 2048-token cache replayed as a CUDA graph (no per-kernel launch on the
              host), batch 1 … 256 — what serving engines run
  prefill     one eager prompt of 2048 and 8192 tokens
Prints measured, predicted, predicted/measured and the median |error| per group.
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def gemm_rows(doc: dict, hw) -> list[tuple]:
    from ironlaw.law import law
    from ironlaw.models import workloads
    out = []
    for r in doc["gemm"]:
        if r["m"] < 256:
            continue
        g = workloads.resolve(workloads.Request(f"gemm:{r['m']},{r['n']},{r['k']}", dtype=r["dtype"], device="cuda"))
        out.append((f"{r['op']} {r['dtype']} M={r['m']}", r["time_s"], float(law.predict(g, hw).time_s)))
    return out


def step_rows(doc: dict, hw) -> list[tuple]:
    from ironlaw.models.serving import online as serving
    from ironlaw.models import workloads
    out = []
    for r in doc["step"]:
        if "phase" not in r:
            continue
        decode = r["phase"] == "decode"
        if decode and "graph" not in r:
            continue
        seq = r["context"] if decode else r["seq"]
        g = workloads.resolve(workloads.Request("llama3-8b", phase=r["phase"], batch=r["batch"], seq=seq,
                                                dtype="bf16", device="cuda"))
        est, launch = serving.predict_step(g, hw, "overlap", captured=decode)
        meas = r["graph"]["time_s"] if decode else r["eager"]["time_s"]
        name = f"{r['phase']} b={r['batch']} {'ctx' if decode else 'seq'}={seq}{' (graph)' if decode else ' (eager)'}"
        out.append((name, meas, float(est.time_s) + launch))
    return out


def show(title: str, rows: list[tuple]) -> None:
    print(f"\n{title}")
    print(f"{'case':34s} {'measured':>10s} {'predicted':>10s} {'pred/meas':>9s}")
    for name, m, p in rows:
        print(f"{name:34s} {m * 1e3:8.3f}ms {p * 1e3:8.3f}ms {p / m:9.2f}")
    errs = [abs(p / m - 1) for _, m, p in rows]
    print(f"median |error| {100 * statistics.median(errs):.1f}%  max {100 * max(errs):.1f}%  ({len(rows)} rows)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT / "tests/data/h200_llama8b_measured.json"))
    ap.add_argument("--on", default="h200")
    a = ap.parse_args()
    from ironlaw.machine import hardware
    doc = json.loads(Path(a.data).read_text())
    hw = hardware.get(a.on)
    print(f"{doc['device']} measured {doc['date']} vs ironlaw '{hw.name}' (datasheet catalog)")
    show("GEMM (single kernels, M >= 256)", gemm_rows(doc, hw))
    show("Llama-3.1-8B-shaped steps", step_rows(doc, hw))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
