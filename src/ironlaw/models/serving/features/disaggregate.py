"""Disaggregated prefill and decode: two pools of devices, instances of ``tp`` devices each.

    prefill pool   N_p / tp instances, each prefilling one prompt at a time: μ_p = 1 / T_prefill requests/s each
    transfer       the prompt's KV cache (kv bytes/token · prompt, a tp-th of it per device) goes from a prefill
                   device to a decode device over one link: NVLink when both pools fit one NVLink domain (the
                   nvlink link's max_devices), PCIe when they fit one server of bridged PCIe cards past the bridge
                   (the pcie link's max_devices), else the scale-out network (its per-device share of the node's
                   ports_per_node ports):  T_xfer = bytes / (tp · bw) + link latency
    decode pool    N_d / tp instances, each decoding ``concurrency`` sequences with no prefill stalls:
                   ITL = T_decode(concurrency), a request holds its decode slot D = output · ITL
    the loop       as the rest of ``serve`` prices its load: a closed loop of n = (N_d / tp) · concurrency requests
                   in flight, each finished request replaced by the next, deterministic steps (no random
                   arrivals). Each request cycles prefill → transfer → decode; the prefill pool completes at most
                   μ = (N_p / tp) / T_prefill requests/s, the loop at most n / (T_prefill + T_xfer + D):
                       rate λ = min(μ, n / (T_prefill + T_xfer + D))
                       TTFT   = n / λ − D  (Little's law over the loop; = T_prefill + T_xfer while the decode pool
                                binds, plus the wait for a prefill instance once the prefill pool binds)
                   With a TTFT target the loop admits at most n ≤ μ · (target + D) requests (the rest wait outside,
                   as a router holding requests back does); ITL stays priced at the full decode batch (an upper
                   bound when fewer are admitted).
    tokens/s       = λ · output, per device / (N_p + N_d)
The best split of N devices is the N_p (a multiple of tp) with the most tokens/s that meets the targets.
"""
from __future__ import annotations

import math
import re

from ....core.errors import IronlawError
from ....machine.hardware import NETWORK_KINDS
from . import common

MAX_DEVICES = 1 << 16


def parse(text: str) -> tuple[int, int]:
    """'prefill=GPUS,decode=GPUS' -> (prefill devices, decode devices)."""
    m = re.fullmatch(r"\s*prefill\s*=\s*(\d+)\s*,\s*decode\s*=\s*(\d+)\s*", str(text))
    if not m:
        raise IronlawError(f"--disaggregate expects 'prefill=GPUS,decode=GPUS', got '{text}'")
    p, d = int(m.group(1)), int(m.group(2))
    if not (1 <= p <= MAX_DEVICES and 1 <= d <= MAX_DEVICES):
        raise IronlawError(f"--disaggregate pools must have 1 to {MAX_DEVICES} devices each, got prefill={p}, decode={d}")
    return p, d


def link(hw, devices: int) -> tuple[object, float, str]:
    """(link, bytes/s one device sends at, why) between two pools of ``devices`` devices in all."""
    nv = [l for l in hw.links if l.kind == "nvlink" and l.max_devices]
    if nv and devices <= nv[0].max_devices:
        return nv[0], nv[0].bw_Bps, f"{nv[0].name}: both pools in one NVLink domain of {nv[0].max_devices}"
    pcie = [l for l in hw.links if l.kind == "pcie" and l.max_devices and devices <= l.max_devices]
    if nv and pcie:              # bridged PCIe cards (topology.py): past the bridge, through the host's PCIe
        return pcie[0], pcie[0].bw_Bps, (f"{pcie[0].name}: both pools in one server of {pcie[0].max_devices}, "
                                         f"past the {nv[0].max_devices}-device {nv[0].name}")
    net = [l for l in hw.links if l.kind in NETWORK_KINDS]
    if not net:
        raise IronlawError(f"{hw.name} has no scale-out network link to move the KV cache between {devices} devices "
                           f"(its links: {', '.join(l.name for l in hw.links) or 'none'})")
    per_node = nv[0].max_devices if nv else 1
    share = min(1.0, (net[0].ports_per_node or per_node) / per_node)
    return net[0], net[0].bw_Bps * share, f"{net[0].name}: {devices} devices span nodes of {per_node}"


def _check_pools(p: int, d: int, tp: int) -> None:
    for name, n in (("prefill", p), ("decode", d)):
        if n % tp:
            raise IronlawError(f"--disaggregate {name}={n} is not a multiple of --tp {tp} (instances of {tp} devices)")


def split(base, p: int, d: int, s: common.Setup, ttft_slo: float | None = None) -> dict:
    """Serving ``base`` (its concurrency = sequences per decode instance) on a prefill pool of ``p`` devices
    and a decode pool of ``d``."""
    _check_pools(p, d, s.tp)
    lk, bw, why = link(base.hw, p + d)
    kv_bytes = base.capacity["kv_bytes_per_token"] * s.tp * base.prompt        # the whole prompt, all shards
    t_x = kv_bytes / (s.tp * bw) + lk.latency_s
    mu, first = (p // s.tp) / base.prefill_s, base.prefill_s + t_x
    serve_s = base.output * base.decode_step_s                   # D: a request's time in a decode slot
    n = (d // s.tp) * base.concurrency
    if ttft_slo is not None:
        n = min(n, math.floor(mu * (ttft_slo + serve_s) * (1 + 1e-12))) if ttft_slo >= first else 0
    lam, ttft = closed_loop(n, mu, first, serve_s)
    tps = lam * base.output
    return {"prefill_devices": p, "decode_devices": d, "link": lk.name, "link_bw_Bps": bw, "link_why": why,
            "kv_bytes_per_prompt": kv_bytes, "transfer_s": t_x, "prefill_s": base.prefill_s, "ttft_s": ttft,
            "itl_s": base.decode_step_s, "requests_per_s": lam, "tokens_per_s": tps,
            "tokens_per_s_per_device": tps / (p + d), "prefill_load": lam / mu,
            "sequences_in_flight": n, "prefill_wait_s": ttft - first,
            "bound": "TTFT target" if not n else "decode pool" if ttft == first else "prefill pool"}


def closed_loop(n: int, mu: float, first_s: float, serve_s: float) -> tuple[float, float]:
    """(requests/s, TTFT) of ``n`` requests cycling through a prefill pool of rate ``mu``, ``first_s`` to their first
    token when none waits, then ``serve_s`` decoding (module docstring); no rate when none is admitted."""
    if n < 1:
        return 0.0, first_s
    loop = n / (first_s + serve_s)                    # the rate the loop carries when none waits
    return (loop, first_s) if loop <= mu else (mu, n / mu - serve_s)


def best_split(estimate_at, total: int, s: common.Setup, slo: dict | None = None) -> dict:
    """Every split of ``total`` devices into prefill and decode pools, and the one with the most tokens/s that
    meets ``slo``; each decode instance runs the highest concurrency whose decode step meets the ITL target."""
    from .goodput import capacity, highest
    slo = slo or {}
    if total < 2 * s.tp:
        raise IronlawError(f"splitting {total} devices needs at least two instances of --tp {s.tp}")
    itl, ttft = slo.get("itl_s"), slo.get("ttft_s")
    cmax = capacity(estimate_at)
    doc = {"schema": "ironlaw.serve-disaggregate/1", "devices": total, "slo": slo}
    if itl is not None and estimate_at(1).decode_step_s > itl:
        return dict(doc, met=False, why=f"one decode step at concurrency 1 takes "
                                        f"{1e3 * estimate_at(1).decode_step_s:.3g} ms, above the ITL target")
    c = cmax if itl is None else highest(lambda k: estimate_at(k).decode_step_s <= itl, 1, cmax)
    base = estimate_at(c)
    rows = [split(base, p, total - p, s, ttft) for p in range(s.tp, total, s.tp)]
    ok = [r for r in rows if r["requests_per_s"] > 0 and (ttft is None or r["ttft_s"] <= ttft * (1 + 1e-9))]
    doc.update(decode_concurrency=c, splits=rows, met=bool(ok))
    if ok:
        doc["best"] = max(ok, key=lambda r: r["tokens_per_s"])
    else:
        doc["why"] = "no split meets the TTFT target: one prefill plus the KV transfer already exceeds it"
    return doc
