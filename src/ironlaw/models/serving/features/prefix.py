"""Prefix caching: a share F of each prompt's tokens is already in the KV cache (a shared system prompt, an
earlier turn), so the prefill computes only the n = ⌈P·(1 − F)⌉ new tokens (at least one: the last token's
logits are always computed):
    projections, MLP, norms   FLOPs and activations × n / P            (the prefill graph at seq n)
    attention                 the n new queries attend over the whole prompt: causal pairs
                              P(P+1)/2 − P_c(P_c+1)/2 with P_c = P − n cached tokens; the cached K,V are read
    KV cache                  the whole prompt's stays held (footprint and capacity unchanged)
    cycle = output · T_decode + B · T_prefill(n),  TTFT = T_prefill(n) + T_decode
"""
from __future__ import annotations

import copy
import math

from ....core.errors import IronlawError
from . import common


def new_tokens(prompt: int, hit: float) -> int:
    if not isinstance(hit, (int, float)) or isinstance(hit, bool) or not 0.0 <= hit <= 1.0:
        raise IronlawError(f"--prefix-hit must be a share of the prompt between 0 and 1, got {hit!r}")
    return max(1, math.ceil(prompt * (1.0 - hit) - 1e-9))


def prefill_graph(spec: str, hw, prompt: int, hit: float, s: common.Setup):
    """One prompt's prefill with ``hit`` of its tokens served from the prefix cache."""
    n = new_tokens(prompt, hit)
    g = common.graph(spec, hw, "prefill", 1, n, s)
    if n == prompt:
        return g
    cached = prompt - n
    pairs_ratio = (prompt * (prompt + 1) - cached * (cached + 1)) / (n * (n + 1.0))
    out = copy.copy(g)
    out.ops = []
    for op in g.ops:
        if op.kind == "attention":
            op = copy.copy(op)
            op.flops, op.vector_flops = op.flops * pairs_ratio, op.vector_flops * pairs_ratio
            op.bytes = {k: (v * prompt / n if k == "kv_cache" else v) for k, v in op.bytes.items()}
        out.ops.append(op)
    out.footprint = {k: (v * prompt / n if k == "kv_cache" else v) for k, v in g.footprint.items()}
    out.meta = dict(g.meta, prefix_hit=hit, prefix_cached_tokens=cached)
    out.name = f"{g.name} prefill of {n} new tokens after {cached} cached"
    return out


def estimate(base, hit: float, s: common.Setup, energy: dict | None = None) -> dict:
    """Serving ``base`` with ``hit`` of every prompt served from the prefix cache, the cached prefill priced as
    ``base`` priced its steps (``base.price``)."""
    common.no_chunk(base, "--prefix-hit", s)
    g = prefill_graph(base.spec, base.hw, base.prompt, hit, s)
    pre, t_pre = base.price(g)
    b, out_tok = base.concurrency, base.output
    cycle = out_tok * base.decode_step_s + b * t_pre
    whole = prefill_graph(base.spec, base.hw, base.prompt, 0.0, s)
    proj, base_proj = _projections(g), _projections(whole)
    doc = {"schema": "ironlaw.serve-prefix/1", "prefix_hit": hit, "new_tokens": new_tokens(base.prompt, hit),
           "cached_tokens": base.prompt - new_tokens(base.prompt, hit), "prefill_s": t_pre,
           "baseline_prefill_s": base.prefill_s, "ttft_s": t_pre + base.decode_step_s, "baseline_ttft_s": base.ttft_s,
           "itl_s": cycle / out_tok, "tokens_per_s": b * out_tok / cycle, "baseline_tokens_per_s": base.tokens_per_s,
           "prefill_flops": float(g.flops), "baseline_prefill_flops": float(whole.flops),
           "projection_flops": proj, "baseline_projection_flops": base_proj,
           "prefill_bottleneck": _bound(pre),
           "kv_bytes_per_sequence": base.capacity["kv_bytes_per_token"] * base.capacity["tokens_reserved_per_sequence"]}
    if energy is not None:
        from .energy import of_phases
        phases = [(base.decode, base.decode_step_s, out_tok), (pre, t_pre, b)]
        doc["energy"] = of_phases(base.hw, phases, cycle, b * out_tok, **energy)
    return doc


def _bound(pre) -> str:
    """The resource that binds the cached prefill: the host where an engine step's host work outlasts the device
    (``step.bottleneck``: an eager prefill's launches do not shrink with the tokens the cache serves), else the
    law's."""
    if pre.graph.meta.get("host") is not None:
        from ..step import bottleneck
        return bottleneck(pre)["resource"]
    return pre.bottleneck()["resource"]


def _projections(g) -> float:
    """FLOPs of the per-token projections and MLP (every matmul but the LM head, which sees one token)."""
    return float(sum(op.flops * op.count for op in g.ops if op.kind == "matmul" and op.name != "lm_head"))
