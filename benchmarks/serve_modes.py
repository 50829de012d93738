"""The two ``serve`` modes on one step model: Llama 3.1 8B FP8, 2048 in / 2048 out, one H100.

    PYTHONPATH=src python benchmarks/serve_modes.py

Rows: the online estimate as ``ironlaw serve --concurrency 256`` prices it (the workload's decode and prefill graphs
on the device's calibration, captured: one per-op latency per step); the same online steady state with every step
priced by the engine step model (``online_engine.engine_estimate``: ``step.step_seconds``, the pricing of
``--max-throughput``) at 256 and at the engine's KV limit of 269 sequences; ``serve --max-throughput`` at
``--max-batch 256`` and at its own batch. Goals: at the same batch, lengths and engine limits the steady step
time and the steady output rate of the two modes are the same number (relative difference below 1e-9); what is
left between the modes is how batches form (the waves' tail of the 1,500 queued requests).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _table import print_table  # noqa: E402

from ironlaw.models.serving import online, online_engine, throughput  # noqa: E402

SPEC, HW, PROMPT, OUTPUT = "llama3.1-8b", "h100", 2048, 2048


def main() -> int:
    a = (SPEC, HW, PROMPT, OUTPUT)
    law = online.estimate(*a, 256, dtype="fp8")
    print(f"\n{SPEC} fp8 on {HW}, prompt {PROMPT}, output {OUTPUT}")
    print(f"  online, law on the device calibration, 256 in flight: {law.tokens_per_s:,.0f} tokens/s (decode step "
          f"{law.decode_step_s * 1e3:.2f} ms, prefill {law.prefill_s * 1e3:.2f} ms)")
    rows, misses = [], 0
    for mb in (256, None):
        m = throughput.max_throughput(*a, dtype="fp8", max_batch=mb)
        s, b = m.steady, m.batch_per_engine
        e = online_engine.engine_estimate(*a, b, dtype="fp8", chunk=m.limits.max_num_tokens, max_batch=mb)
        plain = online_engine.engine_estimate(*a, b, dtype="fp8", max_batch=mb)
        q = s["mixed_step_share"]
        step_online = q * e.mixed_step_s + (1 - q) * e.decode_step_s
        steady_rate = s["output_tokens_per_step"] / s["step_s"]
        print(f"  batch {b}: online on the engine step {plain.tokens_per_s:,.0f} tokens/s unchunked, "
              f"{e.tokens_per_s:,.0f} with --chunk {e.chunk} (decode step {e.decode_step_s * 1e3:.2f} ms, mixed "
              f"{e.mixed_step_s * 1e3:.2f} ms); max-throughput steady {steady_rate:,.0f}, whole run of "
              f"{m.requests:,} requests {m.output_tokens_per_s:,.0f} (mean step {s['step_s'] * 1e3:.2f} ms)")
        d_step = abs(step_online / s["step_s"] - 1)
        d_rate = abs(e.tokens_per_s / steady_rate - 1)
        rows.append((f"batch {b}: mean step, online vs max-throughput", f"{d_step:.1e}", "< 1e-9", d_step < 1e-9))
        rows.append((f"batch {b}: steady tokens/s, online vs max-throughput", f"{d_rate:.1e}", "< 1e-9",
                     d_rate < 1e-9))
    misses += print_table(rows, "one step model under both serve modes")
    return misses


if __name__ == "__main__":
    raise SystemExit(1 if main() else 0)
