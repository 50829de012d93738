"""Speed of `ironlaw search --phase serve`: one device, and several in one ranking, measured vs goal.

In-process time of ``models.search.serve.search`` (the library call the CLI makes; interpreter start-up and
imports not counted), median of a few runs after one warm-up. Goal: a search on one device within 2 s; a search
over devices costs about the sum of theirs (each device is searched alike), so its goal is 2 s per device searched (a device skipped, its
reason in the result, is named in the row and not counted).
The machine is shared, so expect noise; --cpu times this process's CPU seconds instead (``time.process_time``:
the search runs in this process), which a neighbour's load does not lengthen.
Run: python benchmarks/serve_search_speed.py [--quick] [--cpu]
"""
from __future__ import annotations

import argparse
import time

from bench import print_table, repeat, summary

PER_DEVICE_GOAL_S = 2.0
SLO = "ttft=2s,itl=50ms"
FOUR = "h100,h200,b200,mi355x"
PRICES = "b200=6,mi355x=4"             # USD per GPU-hour for the devices without a default, to rank them by cost
CASES = [  # (what, spec, on, slo, rank)
    ("llama3-70b on 8 h100, max throughput", "llama3-70b", "h100", None, "tokens-per-gpu"),
    ("llama3-70b on 8 h100, --slo", "llama3-70b", "h100", SLO, "tokens-per-gpu"),
    ("qwen3-235b-a22b on 8 h200, max throughput", "qwen3-235b-a22b", "h200", None, "tokens-per-gpu"),
    ("qwen3-235b-a22b on 8 h200, --slo (EP)", "qwen3-235b-a22b", "h200", SLO, "tokens-per-gpu"),
    ("llama3-70b on 4 devices, --slo, by $", "llama3-70b", FOUR, SLO, "usd-per-million-tokens"),
    ("qwen3-235b-a22b on 4 devices, --slo, by $", "qwen3-235b-a22b", FOUR, SLO, "usd-per-million-tokens"),
]


def searched(what: str, on: str, skipped: list) -> tuple[str, int]:
    """(the case's label, the devices actually searched): a device the search skipped (its reason in the result's
    ``skipped``) is named in the label and costs no time, so the goal counts only the devices searched."""
    names = [s["hardware"] for s in skipped]
    n = len(on.split(",")) - len(names)
    return (f"{what} ({n} searched; skipped {', '.join(names)})" if names else what), n


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="one run per case")
    ap.add_argument("--cpu", action="store_true", help="this process's CPU seconds, not wall time")
    args = ap.parse_args()
    n = 1 if args.quick else 3
    clock = time.process_time if args.cpu else time.perf_counter
    from ironlaw.models.search import serve
    rows = []
    for what, spec, on, slo, rank in CASES:
        prices = PRICES if "," in on else None
        last = {}

        def run():
            last["r"] = serve.search(spec, on, 8, 1024, 256, slo=slo, rank=rank, prices=prices)
        med, lo, hi, _ = summary(repeat(run, n=n, clock=clock))
        label, devices = searched(what, on, last["r"].setup["skipped"])
        goal = PER_DEVICE_GOAL_S * devices
        rows.append((label, f"{med:.2f} s ({last['r'].candidates_evaluated} evaluated)", f"≤ {goal:.0f} s",
                     med <= goal))
    return print_table(rows, f"ironlaw search --phase serve: {'CPU ' if args.cpu else ''}seconds per search "
                             "(in process)")


if __name__ == "__main__":
    raise SystemExit(main())
