"""Disaggregated prefill and decode: two pools of devices, instances of ``tp`` devices each.

    prefill pool   N_p / tp instances, each prefilling one prompt at a time: μ_p = 1 / T_prefill requests/s each
    transfer       the prompt's KV cache (kv bytes/token · prompt, a tp-th of it per device) goes from a prefill
                   device to a decode device over one link: NVLink when both pools fit one NVLink domain (the
                   nvlink link's max_devices), else the scale-out network (its per-device share of the node's
                   ports_per_node ports):  T_xfer = bytes / (tp · bw) + link latency
    decode pool    N_d / tp instances, each decoding ``concurrency`` sequences with no prefill stalls:
                   ITL = T_decode(concurrency), λ_d = concurrency / (output · ITL) requests/s each
    TTFT           = T_prefill + T_xfer + the wait for a prefill instance, M/D/1 at load ρ = λ / (instances · μ_p):
                     W = ρ · T_prefill / (2 (1 − ρ))
    rate λ         = the most requests/s both pools carry; with a TTFT target the prefill load is held to
                     ρ ≤ 2S / (T_prefill + 2S), S = target − T_prefill − T_xfer
    tokens/s       = λ · output, per device / (N_p + N_d)
The best split of N devices is the N_p (a multiple of tp) with the most tokens/s that meets the targets.
"""
from __future__ import annotations

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
    mu = (p // s.tp) / base.prefill_s
    lam_d = (d // s.tp) * base.concurrency / (base.output * base.decode_step_s)
    rho_max = 0.999
    if ttft_slo is not None:
        slack = ttft_slo - base.prefill_s - t_x
        rho_max = min(rho_max, 2 * slack / (base.prefill_s + 2 * slack)) if slack > 0 else 0.0
    lam = min(lam_d, rho_max * mu)
    rho = lam / mu
    ttft = base.prefill_s + t_x + rho * base.prefill_s / (2 * (1 - rho))
    tps = lam * base.output
    return {"prefill_devices": p, "decode_devices": d, "link": lk.name, "link_bw_Bps": bw, "link_why": why,
            "kv_bytes_per_prompt": kv_bytes, "transfer_s": t_x, "prefill_s": base.prefill_s, "ttft_s": ttft,
            "itl_s": base.decode_step_s, "requests_per_s": lam, "tokens_per_s": tps,
            "tokens_per_s_per_device": tps / (p + d), "prefill_load": rho,
            "bound": "decode pool" if lam_d <= rho_max * mu else "prefill pool"}


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
