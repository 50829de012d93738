"""Board power and energy per token of a Llama-3.1-8B-shaped decoder on a CUDA GPU, for ironlaw.law.power to be
checked against (benchmarks/energy_check.py reads the JSON this writes).

    python benchmarks/gpu_energy.py --out gpu_energy.json [--seconds 5]

Idle: the board with a CUDA context and nothing running, sampled for --seconds. Then decode steps (one new
token per sequence over a 1024-token cache, replayed as one CUDA graph) at batch 1, 16, 64 and 256 and one
2048-token prefill, each looped for --seconds while the board power is sampled (NVML when pynvml imports,
else `nvidia-smi -lms 50`). Energy = mean sampled power × elapsed time; per token = per step / batch.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from gpu_llm import Decoder  # noqa: E402

CONTEXT, PROMPT = 1024, 2048


class Sampler:
    """Board power samples (W) in a background thread while a block runs."""

    def __init__(self, period_s: float = 0.05):
        self.period_s, self.samples, self._stop = period_s, [], threading.Event()
        try:
            import pynvml
            pynvml.nvmlInit()
            h = pynvml.nvmlDeviceGetHandleByIndex(0)
            self.read, self.how = (lambda: pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0), "nvml"
        except Exception:
            self.read, self.how = self._smi, "nvidia-smi"

    @staticmethod
    def _smi() -> float:
        out = subprocess.run(["nvidia-smi", "--query-gpu=power.draw", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=5).stdout
        return float(out.strip().splitlines()[0])

    def _run(self):
        while not self._stop.is_set():
            self.samples.append(self.read())
            time.sleep(self.period_s)

    def __enter__(self):
        self.samples, self._t = [], threading.Thread(target=self._run, daemon=True)
        self._stop.clear()
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()

    @property
    def mean_w(self) -> float:
        s = self.samples[len(self.samples) // 5:] or self.samples          # skip the ramp
        return sum(s) / max(len(s), 1)


def loop(fn, seconds: float, sampler: Sampler) -> dict:
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    n, t0 = 0, time.perf_counter()
    with sampler:
        while time.perf_counter() - t0 < seconds:
            for _ in range(10):
                fn()
            n += 10
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
    return {"steps": n, "time_s": dt / n, "power_w": sampler.mean_w, "joules_per_step": sampler.mean_w * dt / n,
            "samples": len(sampler.samples)}


def graph_of(fn):
    import torch
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


def main() -> None:
    import torch
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="gpu_energy.json")
    ap.add_argument("--seconds", type=float, default=5.0)
    a = ap.parse_args()
    torch.zeros(1, device="cuda")
    sampler = Sampler()
    doc = {"schema": "ironlaw.gpu-energy/1", "device": torch.cuda.get_device_name(0), "sampler": sampler.how,
           "torch": torch.__version__, "context": CONTEXT, "date": time.strftime("%Y-%m-%d")}
    time.sleep(2.0)
    with sampler:
        time.sleep(a.seconds)
    doc["idle_w"] = sampler.mean_w
    print(f"idle with a CUDA context: {doc['idle_w']:.1f} W ({sampler.how})", flush=True)
    doc["decode"] = []
    for b in (1, 16, 64, 256):
        m = Decoder("cuda", 1, b, CONTEXT + 1)
        ids = torch.zeros(b, 1, dtype=torch.long, device="cuda")
        r = {"batch": b, **loop(graph_of(lambda: m.forward(ids, CONTEXT, CONTEXT + 1, False)), a.seconds, sampler)}
        r["joules_per_token"] = r["joules_per_step"] / b
        doc["decode"].append(r)
        print(f"decode batch {b}: {1e3 * r['time_s']:.2f} ms/step, {r['power_w']:.0f} W, "
              f"{r['joules_per_token']:.3f} J/token", flush=True)
        del m
        torch.cuda.empty_cache()
    m = Decoder("cuda", 1, 1, PROMPT)
    ids = torch.zeros(1, PROMPT, dtype=torch.long, device="cuda")
    doc["prefill"] = {"seq": PROMPT, **loop(lambda: m.forward(ids, 0, PROMPT, True), a.seconds, sampler)}
    print(f"prefill {PROMPT}: {1e3 * doc['prefill']['time_s']:.1f} ms, {doc['prefill']['power_w']:.0f} W", flush=True)
    Path(a.out).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
