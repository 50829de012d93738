"""What-if, nothing stored: vLLM's serial executor work at a given host time per step, a benchmark run under it.

    python benchmarks/vllm_host_whatif.py HOST_S benchmarks/vllm_sglang_published.py
    python benchmarks/vllm_host_whatif.py HOST_S benchmarks/mlperf_inference.py --benchmark llama3.1-8b --rows

vLLM V1 without async scheduling runs its executor's work serially with the device (``frameworks.VLLM_HOST``); the
engine carries TensorRT-LLM's per-step executor work, 0, since no published measurement of vLLM V1's exists. This
runs the named benchmark with vLLM's ``host_step_s`` at HOST_S seconds (on the fit host's CPU speed, scaled per host
by ``linear_s`` as the term always is), serial with the device by default and overlapped with it where the run gives
``async_scheduling`` (the same work, vLLM's other ordering), to show how much a term of that size moves the held-out
rows: ``vllm_sglang_published.py --async`` sets each async run beside its serial twin.
Scored, never fitted: no value found here is stored (docs/accuracy.md).
"""
from __future__ import annotations

import runpy
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ironlaw.models.serving import frameworks  # noqa: E402


def serial_host(host_s: float):
    """``frameworks.constants`` with vLLM's ``host_step_s`` at ``host_s``, in whichever ordering the run has."""
    carried = frameworks.constants

    def constants(eng, base):
        c = carried(eng, base)
        return replace(c, host_step_s=host_s) if eng.name == "vllm" else c
    return constants


def main(argv: list[str]) -> int:
    try:
        host_s, script = float(argv[0]), argv[1]
    except (IndexError, ValueError):
        print("usage: vllm_host_whatif.py HOST_S BENCHMARK.py [ARGS...] (HOST_S in seconds, e.g. 0.004)",
              file=sys.stderr)
        return 2
    if not 0.0 <= host_s < 1.0 or not Path(script).is_file():
        print(f"vllm_host_whatif.py: HOST_S must be in [0, 1) s and the benchmark a file, got {argv[0]} {script}",
              file=sys.stderr)
        return 2
    frameworks.constants = serial_host(host_s)
    sys.argv = [script, *argv[2:]]
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
