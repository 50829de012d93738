"""Board power of one kernel at a time on a CUDA GPU: how much of the TDP a bandwidth-bound and a compute-bound
kernel draw (the measurement behind docs/accuracy.md, 'Energy per token').

    python benchmarks/gpu_power_kernels.py OUT.json

Idle with a CUDA context, then each kernel looped for 5 s while NVML samples the board power every 50 ms (the
first fifth of the samples, the ramp, is dropped): a 2 GiB device copy (HBM-bound), a bf16 8192³ GEMM
(tensor-core-bound) and a bf16 8192 × 8192 GEMV (HBM-bound, as a decode step's projections).
"""
import json
import sys
import threading
import time

import pynvml
import torch

SECONDS = 5.0


def sampled(fn):
    """(fn's result, mean board power in W while it ran)."""
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    watts, stop = [], threading.Event()

    def run():
        while not stop.is_set():
            watts.append(pynvml.nvmlDeviceGetPowerUsage(h) / 1e3)
            time.sleep(0.05)
    t = threading.Thread(target=run)
    t.start()
    v = fn()
    stop.set()
    t.join()
    watts = watts[len(watts) // 5:]
    return v, sum(watts) / len(watts)


def loop(fn):
    """(calls, seconds, mean W) of ``fn`` repeated for SECONDS."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()

    def body():
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < SECONDS:
            for _ in range(10):
                fn()
            n += 10
            torch.cuda.synchronize()
        return n, time.perf_counter() - t0
    (n, dt), w = sampled(body)
    return n, dt, w


def main(out: str) -> None:
    d = {}
    torch.zeros(1, device="cuda")
    time.sleep(2)
    _, d["idle_w"] = sampled(lambda: time.sleep(SECONDS))
    a = torch.empty(2**31, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    n, dt, w = loop(lambda: b.copy_(a))
    d["copy"] = {"bytes_per_s": 2 * 2**31 * n / dt, "power_w": w}
    del a, b
    m = 8192
    x = torch.randn(m, m, dtype=torch.bfloat16, device="cuda")
    y = torch.randn_like(x)
    n, dt, w = loop(lambda: x @ y)
    d["gemm"] = {"flops_per_s": 2 * m**3 * n / dt, "power_w": w, "m": m}
    v = torch.randn(m, 1, dtype=torch.bfloat16, device="cuda")
    n, dt, w = loop(lambda: x @ v)
    d["gemv"] = {"bytes_per_s": 2 * m * m * n / dt, "power_w": w}
    d["device"], d["date"] = torch.cuda.get_device_name(0), time.strftime("%Y-%m-%d")
    print(json.dumps(d))
    with open(out, "w") as f:
        f.write(json.dumps(d, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
