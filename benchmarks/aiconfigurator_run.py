"""Run NVIDIA aiconfigurator 0.12 on the Llama cells of TensorRT-LLM's perf overview; write its predictions.

    python3 -m venv /tmp/aic-venv && /tmp/aic-venv/bin/pip install 'aiconfigurator==0.12.*'
    python benchmarks/aiconfigurator_run.py [--aic /tmp/aic-venv/bin/aiconfigurator]

aiconfigurator is not a dependency of ironlaw: it runs from its own virtual environment, offline, as a new user
would: ``aiconfigurator cli default --backend trtllm --serving-mode agg --system h100_sxm|h200_sxm
--total-gpus <the published TP> --isl … --osl …`` with latency limits loose enough not to bind (TTFT 10⁶ ms,
TPOT 10⁵ ms), on a local model directory (the model's config.json shapes and a ModelOpt FP8 hf_quant_config:
no network). Its top configuration's tokens/s/gpu × GPUs is its prediction of the system's output tokens/s.
Writes benchmarks/data/aiconfigurator_0.12.csv: model, gpu, tp, isl, osl, predicted tokens/s, its chosen
layout, wall seconds per prediction. H200 rows use the H200 column's TP of perf-overview.md (8B TP1, 70B TP1).
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks/data/aiconfigurator_0.12.csv"
CONFIGS = {"llama3.1-8b": ROOT / "src/ironlaw/models/workloads/configs/llama3-8b.json",
           "llama3.3-70b": ROOT / "src/ironlaw/models/workloads/configs/llama3-70b.json"}
TP = {("llama3.1-8b", "h100"): 1, ("llama3.3-70b", "h100"): 2, ("llama3.1-8b", "h200"): 1,
      ("llama3.3-70b", "h200"): 1}
SYSTEM = {"h100": "h100_sxm", "h200": "h200_sxm"}
PAIRS = ((128, 128), (128, 2048), (128, 4096), (500, 2000), (1000, 1000), (1000, 2000), (2048, 128),
         (2048, 2048), (5000, 500), (20000, 2000))


def model_dir(model: str, root: Path) -> Path:
    cfg = json.loads(CONFIGS[model].read_text())
    cfg.pop("_source", None)
    cfg["max_position_embeddings"] = 131072                      # Llama 3.1 / 3.3 context
    quant = {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}
    cfg["quantization_config"] = {"quant_method": "modelopt", **quant}
    d = root / f"{model}-fp8"
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg, indent=1))
    (d / "hf_quant_config.json").write_text(json.dumps({"producer": {"name": "modelopt"}, "quantization": quant}))
    return d


def run_one(aic: str, path: Path, gpu: str, tp: int, isl: int, osl: int, save: Path) -> tuple[float, str, float]:
    cmd = [aic, "cli", "default", "--model-path", str(path), "--total-gpus", str(tp), "--system", SYSTEM[gpu],
           "--backend", "trtllm", "--serving-mode", "agg", "--isl", str(isl), "--osl", str(osl),
           "--ttft", "1000000", "--tpot", "100000", "--save-dir", str(save)]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900).stdout
    wall = time.perf_counter() - t0
    row = next((ln for ln in out.splitlines() if re.match(r"^\|\s+1\s+\|\s+trtllm", ln)), None)
    if row is None:
        return float("nan"), "no result", wall
    f = [c.strip() for c in row.strip("|").split("|")]
    return float(f[2]) * tp, f[12], wall                          # tokens/s/gpu × GPUs; its parallel layout


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--aic", default="/tmp/aic-venv/bin/aiconfigurator")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for (model, gpu), tp in TP.items():
            path = model_dir(model, Path(tmp))
            for isl, osl in PAIRS:
                pred, layout, wall = run_one(args.aic, path, gpu, tp, isl, osl, Path(tmp) / "out")
                rows.append({"model": model, "gpu": gpu, "tp": tp, "isl": isl, "osl": osl,
                             "predicted_tokens_per_s": round(pred, 1), "layout": layout, "wall_s": round(wall, 2)})
                print(rows[-1], flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", newline="") as f:
        f.write("# NVIDIA aiconfigurator 0.12.0 (PyPI, Apache-2.0), run offline by benchmarks/aiconfigurator_run.py\n")
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
