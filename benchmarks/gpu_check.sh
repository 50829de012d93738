#!/usr/bin/env bash
# The probe on a GPU checked end to end in one short run, for a lent GPU machine (the device tool runs it in the
# repository root with the image's own python3, torch and typer; nothing is installed):
#
#     bash benchmarks/gpu_check.sh            # writes under $OUT (the device tool's folder), else out/gpu
#
# 1. probe_check --quick: the probe on CUDA against a large torch.mm and a large device copy (goals ±10%);
# 2. the default probe, saved as a profile (every number "measured by probe");
# 3. the catalog's datasheet entry and the probed profile side by side on two workloads (compute-bound
#    GEMM-heavy prefill, bandwidth-bound decode) — how far the datasheet roofline sits from the machine.
# Every step has its own timeout so that one hang leaves the others' output; the whole run stays under
# about 6 minutes. On a machine with no GPU it runs the CPU probe instead (a dry run of this script).
set -u -o pipefail
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
py=${PYTHON:-python3}
out=${OUT:-out/gpu}
mkdir -p "$out"

"$py" - <<'EOF' 2>&1 | tee "$out/device.txt"
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda)
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print(p.name, f"{p.multi_processor_count} SMs, {p.total_memory / 2**30:.0f} GiB, L2 {getattr(p, 'L2_cache_size', 0) / 2**20:.0f} MiB")
else:
    print("no CUDA device: this is a dry run on the CPU")
EOF

timeout 150 "$py" benchmarks/probe_check.py --quick --out "$out/probe-quick.toml" 2>&1 | tee "$out/probe_check.txt"
timeout 150 "$py" -m ironlaw probe --out "$out/probe.toml" 2>&1 | tee "$out/probe.txt"

dev=$("$py" -c "import torch; print('h200' if torch.cuda.is_available() and 'H200' in torch.cuda.get_device_name(0) else '')")
targets=("$out/probe.toml")
[ -n "$dev" ] && targets=("$dev" "${targets[@]}")
for hw in "${targets[@]}"; do
    name=$(basename "$hw" .toml)
    timeout 60 "$py" -m ironlaw analyze llama3-8b --phase prefill --batch 1 --seq 2048 --on "$hw" --dtype bf16 --format json \
        > "$out/analyze-prefill-$name.json" 2> "$out/analyze-prefill-$name.err"
    timeout 60 "$py" -m ironlaw analyze llama3-8b --phase decode --batch 1 --seq 2048 --on "$hw" --dtype bf16 --format json \
        > "$out/analyze-decode-$name.json" 2> "$out/analyze-decode-$name.err"
done
"$py" - "$out" <<'EOF'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
for f in sorted(out.glob("analyze-*.json")):
    try:
        d = json.loads(f.read_text())
        b = d["bottleneck"]
        print(f"{f.stem:40s} {1e3 * d['time_s']:9.3f} ms  {b.get('resource')} {b.get('tier') or ''}: {b.get('why', '')}")
    except (ValueError, KeyError):
        print(f"{f.stem:40s} failed: {(f.with_suffix('.err')).read_text().strip()[:200]}")
EOF
