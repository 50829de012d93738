"""The two ``serve`` modes on one step model: Llama 3.1 8B FP8, 2048 in / 2048 out, one H100.

    PYTHONPATH=src python benchmarks/serve_modes.py

Rows: ``ironlaw serve --concurrency 256`` (the online steady state, every step priced by the engine step model
``step.step_seconds``, the rule ``online.step_model`` picks on a GPU) and, for reference, the same steady state
with its steps on the H100's own calibration (``steps="device"``: the law on the workload's decode and prefill
graphs, the pricing CPUs and systems-on-chip keep); then, at 256 and at the engine's KV limit of 269 sequences,
the online steady state with ``--chunk`` at the prompt tokens max-throughput's mixed step carries (the whole
prompts its token budget takes, ``throughput.burst``; max_num_tokens where a prompt needs several steps) against
``serve --max-throughput`` at the same batch. Goals: the two modes share one capacity (the sequences the KV cache holds) and, at the same batch,
lengths and engine limits, the same steady step time and steady output rate (relative difference below 1e-9);
what is left between them is how batches form (the waves' tail of the 1,500 queued requests).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench import print_table  # noqa: E402

from ironlaw.models.serving import online, throughput  # noqa: E402

SPEC, HW, PROMPT, OUTPUT = "llama3.1-8b", "h100", 2048, 2048


def main() -> int:
    a = (SPEC, HW, PROMPT, OUTPUT)
    serve = online.estimate(*a, 256, dtype="fp8")
    dev = online.estimate(*a, 256, dtype="fp8", steps="device")
    print(f"\n{SPEC} fp8 on {HW}, prompt {PROMPT}, output {OUTPUT}")
    print(f"  serve --concurrency 256 ({serve.step_model.name} step model): {serve.tokens_per_s:,.0f} tokens/s "
          f"(decode step {serve.decode_step_s * 1e3:.2f} ms, prefill {serve.prefill_s * 1e3:.2f} ms); capacity "
          f"{serve.capacity['max_concurrency']} sequences")
    print(f"  the same on the device calibration (reference): {dev.tokens_per_s:,.0f} tokens/s (decode step "
          f"{dev.decode_step_s * 1e3:.2f} ms, prefill {dev.prefill_s * 1e3:.2f} ms); its own capacity "
          f"{dev.capacity['max_concurrency']} sequences")
    rows, misses = [], 0
    for mb in (256, None):
        m = throughput.max_throughput(*a, dtype="fp8", max_batch=mb)
        s, b = m.steady, m.batch_per_engine
        chunk = (int(s["prompts_per_mixed_step"]) * PROMPT if s["context_steps"] == 1 else
                 m.limits.max_num_tokens)          # the prompt tokens one mixed step carries (throughput.burst)
        e = online.estimate(*a, b, dtype="fp8", chunk=chunk, max_batch=mb)
        plain = online.estimate(*a, b, dtype="fp8", max_batch=mb)
        q = s["mixed_step_share"]
        step_online = q * e.mixed_step_s + (1 - q) * e.decode_step_s
        steady_rate = s["output_tokens_per_step"] / s["step_s"]
        print(f"  batch {b}: online {plain.tokens_per_s:,.0f} tokens/s unchunked, {e.tokens_per_s:,.0f} with --chunk "
              f"{e.chunk} (decode step {e.decode_step_s * 1e3:.2f} ms, mixed {e.mixed_step_s * 1e3:.2f} ms); "
              f"max-throughput steady {steady_rate:,.0f}, whole run of {m.requests:,} requests "
              f"{m.output_tokens_per_s:,.0f} (mean step {s['step_s'] * 1e3:.2f} ms)")
        d_step = abs(step_online / s["step_s"] - 1)
        d_rate = abs(e.tokens_per_s / steady_rate - 1)
        rows.append((f"batch {b}: mean step, online vs max-throughput", f"{d_step:.1e}", "< 1e-9", d_step < 1e-9))
        rows.append((f"batch {b}: steady tokens/s, online vs max-throughput", f"{d_rate:.1e}", "< 1e-9",
                     d_rate < 1e-9))
        if mb is None:
            cap = serve.capacity["max_concurrency"]
            rows.append(("capacity: online sequences vs max-throughput's KV batch", f"{cap} vs {b}", "equal",
                         cap == b))
    misses += print_table(rows, "one step model under both serve modes")
    return misses


if __name__ == "__main__":
    raise SystemExit(1 if main() else 0)
