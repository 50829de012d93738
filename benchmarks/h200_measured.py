"""ironlaw's datasheet H200 against kernels and whole steps measured on a real H200 (held out: nothing is fitted).

    python benchmarks/h200_measured.py [--data tests/data/h200_llama8b_measured.json]

The data come from benchmarks/gpu_llm.py (see the file's `_source`): a Llama-3.1-8B-shaped decoder in plain
torch, bf16. Rows:
  GEMM        bf16 and fp8 projection GEMMs at M ≥ 256 tokens (smaller ones were timed one launch at a time and
              carry the host's launch time, so they say nothing about the device)
  decode      whole decode steps over a 2048-token cache replayed as a CUDA graph (no per-kernel launch on the
              host), batch 1 … 256 — what serving engines run
  prefill     one eager prompt of 2048 and 8192 tokens
Prints measured, predicted, predicted/measured and the median |error| per group. The steps are predicted twice:
on the device's own calibration (the law on the workload's decode or prefill graph, one captured graph per decode
step) and on the engine step model ``ironlaw serve`` prices a GPU's steps with (``step.step_seconds``: the
serving engine's constants over the device's kernel-fitted terms, CUDA-graph decode padded to a captured batch,
an eager prefill of one prompt).
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
        out.append((name, meas, float(est.time_s) + launch, engine_step(hw, r["batch"], seq, decode)))
    return out


def engine_step(hw, batch: int, seq: int, decode: bool) -> float:
    """The step on the engine step model: ``batch`` sequences decoding over ``seq`` cached tokens, or one
    prompt of ``seq`` tokens prefilled alone (bf16, KV in bf16, as measured)."""
    from ironlaw.models.serving.engine import engine_run
    from ironlaw.models.serving.step import step_seconds
    run = engine_run("llama3.1-8b", hw, seq, 1, batch, dtype="bf16", kv_dtype="bf16").run   # 8,192 + 1 tokens: past llama3-8b's context
    if decode:
        return step_seconds(run, batch, 0.0, 0.0, pad=True)[0]
    return step_seconds(run, 0, float(seq), 1.0, pad=False)[0]


def show(title: str, rows: list[tuple], second: str | None = None) -> None:
    """Rows (case, measured, predicted[, predicted by ``second``])."""
    print(f"\n{title}")
    print(f"{'case':34s} {'measured':>10s} {'predicted':>10s} {'pred/meas':>9s}"
          + (f" {second:>10s} {'pred/meas':>9s}" if second else ""))
    for name, m, p, *q in rows:
        print(f"{name:34s} {m * 1e3:8.3f}ms {p * 1e3:8.3f}ms {p / m:9.2f}"
              + (f" {q[0] * 1e3:8.3f}ms {q[0] / m:9.2f}" if q else ""))
    for k, label in ((2, "predicted"), (3, second)):
        if label is None:
            continue
        errs = [abs(r[k] / r[1] - 1) for r in rows]
        print(f"{label}: median |error| {100 * statistics.median(errs):.1f}%  max {100 * max(errs):.1f}%  "
              f"({len(rows)} rows)")


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
    show("Llama-3.1-8B-shaped steps: predicted on the device calibration, and on the engine step model (what "
         "ironlaw serve prices a GPU's steps with)", step_rows(doc, hw), "engine")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
