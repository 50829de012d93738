#!/usr/bin/env bash
# One short run on a lent CUDA machine (the device tool runs it in the repository root; $OUT comes back):
#   1. benchmarks/gpu_llm.py: GEMM (bf16, fp8), copy, attention and whole decode/prefill steps of a
#      Llama-3.1-8B-shaped decoder, timed with CUDA events → gpu_measured.json
#   2. benchmarks/probe_check.py --quick: ironlaw's probe on CUDA against a large torch.mm and a device copy
#   3. the default probe, saved as a profile
# Each step has its own timeout so that one hang leaves the others' output; about 8 minutes at most.
set -u -o pipefail
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
py=${PYTHON:-python3}
out=${OUT:-out/gpu}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit,memory.total --format=csv \
    2>&1 | tee "$out/device.txt"
"$py" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" 2>&1 | tee -a "$out/device.txt"
timeout 200 "$py" benchmarks/gpu_llm.py --out "$out/gpu_measured.json" --budget-s 160 2>&1 | tee "$out/gpu_llm.txt"
timeout 140 "$py" benchmarks/probe_check.py --quick --out "$out/probe-quick.toml" 2>&1 | tee "$out/probe_check.txt"
timeout 120 "$py" -m ironlaw probe --out "$out/probe.toml" 2>&1 | tail -40 > "$out/probe.txt"
