"""Predictions against published measurements (each row: measured, predicted, error); tests hold them to ±15%.

    python benchmarks/published_references.py

- ResNet-50 on A100 and T4 vs NVIDIA DeepLearningExamples' PyTorch throughput (tests/test_resnet_reference.py;
  the TF32 row is a known miss, bounded there from both sides)
- llama.cpp batch-1 decode of Qwen2.5-Coder-7B Q8_0 on GB10 and M2 Ultra (tests/test_serving.py)
- one GPT-3-175B layer on 4×A100, TP 4, vs LLMCompass's measured per-op latencies (tests/test_parallel.py)
Nothing here is fitted: the catalog entries are scored as shipped.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).parent))
from bench import csv_rows  # noqa: E402


def row(what: str, measured: float, predicted: float, unit: str) -> None:
    print(f"  {what:44s} {measured:10.4g} {predicted:10.4g} {unit:7s} {100 * (predicted / measured - 1):+6.1f}%")


def resnet() -> None:
    import ironlaw
    print("ResNet-50, NVIDIA DeepLearningExamples (PyTorch, 1 GPU)        measured  predicted")
    for r in csv_rows(DATA / "nvidia_dle_resnet50_pytorch.csv"):
        dtype = "fp16" if r["precision"] == "mixed" else r["precision"]
        est = ironlaw.analyze("resnet50", on=r["hardware"], phase=r["phase"], batch=int(r["batch"]), dtype=dtype)
        row(f"{r['hardware']} {r['phase']} {r['precision']} b{r['batch']}", float(r["throughput_img_s"]),
            int(r["batch"]) / est.time_s, "img/s")


def llamacpp() -> None:
    from ironlaw.models.serving import online as serving
    from test_serving import DECODE, QWEN, SIZE
    print("llama.cpp tg32, Qwen2.5-Coder-7B Q8_0, batch 1")
    for hw, ctx, measured, dt in DECODE:
        rate, _ = serving.decode_tokens_per_s(QWEN, hw, 1, ctx + 16, dtype=dt, kv_dtype="fp16", weight_bytes=SIZE)
        row(f"{hw} context {ctx}", measured, rate, "tok/s")


def gpt3_layer() -> None:
    from llmcompass_ref import measured, predict_layer
    print("GPT-3-175B layer, 4×A100 TP 4 (LLMCompass), sum of the layer's ops")
    with tempfile.TemporaryDirectory() as d:
        for phase, batch, seq in (("prefill", 8, 2048), ("decode", 8, 3072)):
            pred, meas = predict_layer(Path(d), phase, batch, seq), measured(phase)
            row(f"{phase} b{batch} s{seq}", 1e3 * sum(meas.values()), 1e3 * sum(pred.values()), "ms")


def main() -> int:
    resnet()
    llamacpp()
    gpt3_layer()
    return 0


if __name__ == "__main__":
    sys.exit(main())
