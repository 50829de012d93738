"""Goodput under latency targets, and the concurrency frontier.

``estimate_at(c)`` is a ServeEstimate at concurrency c (all other options fixed). TTFT and ITL both grow with
the concurrency (a bigger decode batch per step, more prefills per cycle), so the highest concurrency meeting
``ttft ≤ T`` and ``itl ≤ I`` is found by bisection between 1 and the KV-cache capacity. Its request rate is
tokens/s / output (Little's law over the steady cycle). The frontier is tokens/s per device against tokens/s
per user (1 / ITL) over concurrency 1, 2, 4, … up to the capacity: the trade a deployment picks a point on.
"""
from __future__ import annotations

from .. import online as serving
from ....core.errors import IronlawError
from ....core.units import fmt_time

parse_slo = serving.parse_slo


def row(e, devices: int = 1, slo: dict | None = None) -> dict:
    r = {"concurrency": e.concurrency, "ttft_s": e.ttft_s, "itl_s": e.itl_s, "tokens_per_s": e.tokens_per_s,
         "tokens_per_s_per_device": e.tokens_per_s / devices, "tokens_per_s_per_user": 1.0 / e.itl_s,
         "requests_per_s": e.tokens_per_s / e.output, "decode_bottleneck": e.decode.bottleneck()["resource"]}
    if slo:
        r["meets_slo"] = meets(e, slo)
    return r


def meets(e, slo: dict) -> bool:
    return e.ttft_s <= slo.get("ttft_s", float("inf")) and e.itl_s <= slo.get("itl_s", float("inf"))


def capacity(estimate_at) -> int:
    return int(estimate_at(1).capacity["max_concurrency"])


def highest(ok, lo: int, hi: int) -> int:
    """The largest c in [lo, hi] with ok(c), given ok(lo) and ok monotone (true, then false)."""
    while hi > lo:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
    return lo


def goodput(estimate_at, slo: dict, devices: int = 1) -> dict:
    """The highest concurrency (and request rate) meeting ``slo``; when none does, the best reachable."""
    cmax = capacity(estimate_at)
    if cmax < 1:
        raise IronlawError("no sequence fits in the KV-cache budget; use --tp or a smaller --dtype")
    first = estimate_at(1)
    doc = {"schema": "ironlaw.serve-goodput/1", "slo": slo, "max_concurrency": cmax}
    if not meets(first, slo):
        doc.update(met=False, best_reachable=row(first, devices, slo), why=_miss(first, slo))
        return doc
    c = highest(lambda k: meets(estimate_at(k), slo), 1, cmax)
    best = estimate_at(c)
    limit = "KV-cache capacity" if c == cmax else _failing(estimate_at(c + 1), slo)
    doc.update(met=True, concurrency=c, requests_per_s=best.tokens_per_s / best.output, limited_by=limit,
               at=row(best, devices, slo))
    return doc


def _failing(e, slo: dict) -> str:
    return " and ".join(k[:-2].upper() for k, v in slo.items() if getattr(e, k) > v)


def _miss(e, slo: dict) -> str:
    parts = [f"{k[:-2].upper()} {fmt_time(getattr(e, k))} > {fmt_time(v)}" for k, v in slo.items() if getattr(e, k) > v]
    return (f"no concurrency meets the targets: even one sequence has {' and '.join(parts)}; the best reachable "
            f"is concurrency 1 (TTFT {fmt_time(e.ttft_s)}, ITL {fmt_time(e.itl_s)})")


def frontier(estimate_at, devices: int = 1, slo: dict | None = None, energy: dict | None = None) -> dict:
    """Tokens/s per device against tokens/s per user over concurrency 1, 2, 4, … up to the capacity."""
    cmax = capacity(estimate_at)
    rows = []
    for c in serving.concurrency_grid(cmax):
        e = estimate_at(c)
        r = row(e, devices, slo)
        if energy is not None:
            from .energy import of_serving
            en = of_serving(e, **energy)
            r.update({k: en[k] for k in ("joules_per_output_token", "usd_per_million_output_tokens",
                                         "gco2_per_million_output_tokens")})
        rows.append(r)
    e1 = estimate_at(1)
    return {"schema": "ironlaw.serve-frontier/1", "workload": e1.spec, "hardware": e1.hw.name, "devices": devices,
            "dtype": e1.decode.graph.dtype, "kv_dtype": e1.kv_dtype,
            "prompt_tokens": e1.prompt, "output_tokens": e1.output, "slo": slo, "max_concurrency": cmax,
            "points": rows}
