"""Run NVIDIA aiconfigurator 0.12 on the cells of TensorRT-LLM's perf overview; write its predictions, resumably.

    python3 -m venv /tmp/aic-venv && /tmp/aic-venv/bin/pip install 'aiconfigurator==0.12.*'
    nice -n 10 python benchmarks/aiconfigurator_run.py [--aic /tmp/aic-venv/bin/aiconfigurator] [--gpu b200 ...]
        [--model qwen3-30b-a3b ...]

aiconfigurator is not a dependency of ironlaw: it runs from its own virtual environment, offline, as a new user
would: ``aiconfigurator cli default --backend trtllm --serving-mode agg --system <its system> --total-gpus <the
published TP> --isl … --osl …`` with latency limits loose enough not to bind (TTFT 10⁶ ms, TPOT 10⁵ ms), on a local
model directory: the model's config.json shapes (ironlaw's workload config, HF-sourced) and a ModelOpt
hf_quant_config — FP8 weights and FP8 KV cache on H100/H200 (the page's FP8 checkpoints), NVFP4 weights (group 16)
and FP8 KV cache on B200/GB200 (the page's FP4 checkpoints); no network. Its top configuration's tokens/s/gpu × GPUs
is its prediction of the system's output tokens/s. Cells: tests/data/trtllm_perf_overview_{h100,h200,blackwell}.csv
(the page's TP per GPU column), the model families aiconfigurator 0.12 supports (Llama 3.x, Llama 4, Qwen3 MoE);
a cell it cannot predict is written with an empty prediction and its reason in ``layout``.

Writes benchmarks/data/aiconfigurator_0.12.csv: model, gpu, tp, isl, osl, predicted tokens/s, its chosen layout,
wall seconds per prediction. Resumable: a row is appended as soon as it finishes, and cells already in the file are
skipped, so the run can be stopped and restarted (each prediction takes 5–20 s of CPU).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench import csv_rows  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks/data/aiconfigurator_0.12.csv"
HEADER = ("# NVIDIA aiconfigurator 0.12.0 (PyPI, Apache-2.0), run offline by benchmarks/aiconfigurator_run.py "
          "(its docstring has the command)\n")
FIELDS = ["model", "gpu", "tp", "isl", "osl", "predicted_tokens_per_s", "layout", "wall_s"]
TABLES = [ROOT / f"tests/data/trtllm_perf_overview_{t}.csv" for t in ("h100", "h200", "blackwell")]
CONFIG_DIR = ROOT / "src/ironlaw/models/workloads/configs"
CONFIGS = {"llama3.1-8b": "llama3-8b.json", "llama3.3-70b": "llama3-70b.json", "llama3.1-405b": "llama3.1-405b.json",
           "llama4-scout": "llama4-scout.json", "llama4-maverick": "llama4-maverick.json",
           "qwen3-30b-a3b": "qwen3-30b-a3b.json", "qwen3-235b-a22b": "qwen3-235b-a22b.json"}
SYSTEM = {"h100": "h100_sxm", "h200": "h200_sxm", "b200": "b200_sxm", "gb200": "gb200"}
QUANT = {"fp8": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]},
         "fp4": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16,
                 "exclude_modules": ["lm_head"]}}
OFFLINE = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}   # no network
CONTEXT = {"llama3.1-8b": 131072, "llama3.3-70b": 131072, "llama3.1-405b": 131072}   # Llama 3.1 / 3.3 context


def cells(gpus: set[str] | None = None, models: set[str] | None = None) -> list[dict]:
    """The published cells aiconfigurator is run on, in table order (H100, H200, Blackwell)."""
    out = []
    for path in TABLES:
        for r in csv_rows(path):
            if r["model"] not in CONFIGS or (gpus and r["gpu"] not in gpus) or (models and r["model"] not in models):
                continue
            out.append({"model": r["model"], "gpu": r["gpu"], "tp": int(r["tp"]), "isl": int(r["isl"]),
                        "osl": int(r["osl"]), "precision": r.get("precision") or "fp8"})
    return out


def model_dir(model: str, precision: str, root: Path) -> Path:
    """A local HF-style model directory: config.json with a ModelOpt quantization_config, hf_quant_config.json."""
    cfg = json.loads((CONFIG_DIR / CONFIGS[model]).read_text())
    cfg.pop("_source", None)
    if model in CONTEXT:
        cfg["max_position_embeddings"] = CONTEXT[model]
    quant = QUANT[precision]
    cfg["quantization_config"] = {"quant_method": "modelopt", **quant}
    d = root / f"{model}-{precision}"
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg, indent=1))
    (d / "hf_quant_config.json").write_text(json.dumps({"producer": {"name": "modelopt"}, "quantization": quant}))
    return d


def run_one(aic: str, path: Path, cell: dict, save: Path) -> tuple[float, str, float]:
    cmd = [aic, "cli", "default", "--model-path", str(path), "--total-gpus", str(cell["tp"]),
           "--system", SYSTEM[cell["gpu"]], "--backend", "trtllm", "--serving-mode", "agg",
           "--isl", str(cell["isl"]), "--osl", str(cell["osl"]),
           "--ttft", "1000000", "--tpot", "100000", "--save-dir", str(save)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=OFFLINE)
    except subprocess.TimeoutExpired:
        return float("nan"), "timeout 900 s", time.perf_counter() - t0
    wall = time.perf_counter() - t0
    row = next((ln for ln in proc.stdout.splitlines() if re.match(r"^\|\s+1\s+\|\s+trtllm", ln)), None)
    if row is None:
        errs = [ln for ln in (proc.stderr + proc.stdout).splitlines() if "[E]" in ln or "Error" in ln]
        reason = (errs[-1].split("]")[-1].strip() if errs else "no result")[:120].replace(",", ";")
        return float("nan"), f"no result: {reason}", wall
    f = [c.strip() for c in row.strip("|").split("|")]
    return float(f[2]) * cell["tp"], f[12], wall                  # tokens/s/gpu × GPUs; its parallel layout


def done_keys(path: Path) -> set[tuple]:
    if not path.exists():
        return set()
    return {(r["model"], r["gpu"], int(r["tp"]), int(r["isl"]), int(r["osl"])) for r in csv_rows(path)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--aic", default="/tmp/aic-venv/bin/aiconfigurator")
    ap.add_argument("--gpu", nargs="*", choices=sorted(SYSTEM), help="only these GPU columns")
    ap.add_argument("--model", nargs="*", choices=sorted(CONFIGS), help="only these models")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    done = done_keys(args.out)
    todo = [c for c in cells(set(args.gpu or ()), set(args.model or ()))
            if (c["model"], c["gpu"], c["tp"], c["isl"], c["osl"]) not in done]
    print(f"{len(done)} cells done, {len(todo)} to run", flush=True)
    if not args.out.exists():
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("w", newline="") as f:
            f.write(HEADER)
            csv.DictWriter(f, fieldnames=FIELDS).writeheader()
    with tempfile.TemporaryDirectory() as tmp:
        for c in todo:
            path = model_dir(c["model"], c["precision"], Path(tmp))
            pred, layout, wall = run_one(args.aic, path, c, Path(tmp) / "out")
            row = {"model": c["model"], "gpu": c["gpu"], "tp": c["tp"], "isl": c["isl"], "osl": c["osl"],
                   "predicted_tokens_per_s": "" if pred != pred else round(pred, 1), "layout": layout,
                   "wall_s": round(wall, 2)}
            with args.out.open("a", newline="") as f:
                csv.DictWriter(f, fieldnames=FIELDS).writerow(row)
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
