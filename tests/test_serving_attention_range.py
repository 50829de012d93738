"""benchmarks/serving_attention_range.py --what-if: each decode attention op held to a KV read rate, never faster
than it (the cap) or, the converse, never slower (the floor)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import serving_attention_range as sar  # noqa: E402
import trtllm_h100 as h100  # noqa: E402


def _cell():
    c = next(c for c in h100.cells(sar.CSV["h200"]) if (c["model"], c["isl"], c["osl"]) == ("qwen3-235b-a22b", 128, 2048))
    c = {**c, "spec": h100.spec_for(c["model"])}
    return c, h100.predict(c, "h200")


def test_the_cap_only_slows_and_the_floor_only_speeds():
    c, est = _cell()
    base = 100.0 * (est.output_tokens_per_s / c["published"] - 1.0)
    slow, fast = 1e9, 1e15                       # bytes per second: far below / far above the op's own rate
    assert sar.capped_error(est, c, fast) == base                      # never faster than 1 PB/s: no change
    assert sar.capped_error(est, c, slow) < base - 10                  # never faster than 1 GB/s: much slower
    assert sar.capped_error(est, c, slow, floor=True) == base          # never slower than 1 GB/s: no change
    assert sar.capped_error(est, c, fast, floor=True) > base + 1       # never slower than 1 PB/s: faster
