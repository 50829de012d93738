"""Speculative decoding: a cheap drafter proposes K tokens, the target verifies them in one step.

    E[tokens per verify step] = (1 − A^(K+1)) / (1 − A)     (K + 1 at A = 1): each drafted position is
                                 accepted with probability A until the first rejection, plus the target's own token
    verify step  = the target's forward over K + 1 query tokens per sequence: its weights are read once, its
                   FLOPs and activations are K + 1 times a decode step's, each sequence's KV cache is read once
                   (the decode graph at batch B·(K+1) with its KV traffic divided by K + 1)
    draft steps  = K autoregressive steps of the drafter at batch B, each paying its own launch
    T_round      = T_verify + K · T_draft;   ITL = cycle / output,  cycle = (output / E) · T_round + B · T_prefill
Drafters:
    draft   a separate model (``draft=SPEC``): smaller than the target, the same vocabulary; its weights and KV
            cache take device memory, its prefill is charged with the target's
    mtp     DeepSeek-V3's multi-token-prediction module: one more layer of the target's own shape, a 2h → h
            projection of [hidden; embedding] and the shared LM head, per drafted token
    eagle   EAGLE's draft head: one dense decoder layer at the target's hidden size (a mixture-of-experts layer
            becomes one expert's MLP), the 2h → h projection and the target's LM head
When decode is bandwidth-bound the verify step costs about one decode step and speculation wins; once the batch
makes decode compute-bound the verify step costs K + 1 of them and speculation loses throughput.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

from ....core.errors import IronlawError, unknown
from ....core.graph import Graph, Op, dtype_bytes
from ..step import scale_class
from . import common

METHODS = ("draft", "mtp", "eagle")
MAX_DRAFT_TOKENS = 16
KEYS = ("method", "draft", "tokens", "acceptance")
MOE_GLUE = ("router", "combine")       # op roles of an MoE layer's router and combine (not of a dense layer)
OUTSIDE = ("embedding", "norm", "head")   # op roles of the ops outside the layers (not ``per_layer``) a draft
                                          # head reuses: the embedding, the final norm, the LM head


@dataclass(frozen=True)
class Speculation:
    method: str
    tokens: int
    acceptance: float
    draft: str | None = None


def expected_tokens(acceptance: float, k: int) -> float:
    """Tokens one verify step yields: (1 − A^(K+1)) / (1 − A), K + 1 at A = 1."""
    a = acceptance
    return float(k + 1) if a >= 1.0 else (1.0 - a ** (k + 1)) / (1.0 - a)


def parse(text: str) -> Speculation:
    """'method=draft,draft=MODEL,tokens=K,acceptance=A' (method mtp/eagle take no draft)."""
    kv = {}
    for part in str(text).split(","):
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or not value.strip():
            raise IronlawError(f"--speculative expects KEY=VALUE pairs ({', '.join(KEYS)}), got '{part}'")
        if key not in KEYS:
            raise unknown("--speculative key", key, KEYS)
        kv[key] = value.strip()
    method = kv.get("method", "draft")
    if method not in METHODS:
        raise unknown("--speculative method", method, METHODS)
    if method == "draft" and "draft" not in kv:
        raise IronlawError("--speculative method=draft needs draft=MODEL (e.g. draft=hf:llama3.2-1b/config.json)")
    if method != "draft" and "draft" in kv:
        raise IronlawError(f"--speculative method={method} drafts with the target's own head; drop draft=")
    return Speculation(method, _tokens(kv.get("tokens", "4")), _acceptance(kv.get("acceptance")), kv.get("draft"))


def _tokens(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_DRAFT_TOKENS:
        raise IronlawError(f"--speculative tokens must be a whole number from 1 to {MAX_DRAFT_TOKENS}, got '{text}'")
    return int(text)


def _acceptance(text: str | None) -> float:
    if text is None:
        raise IronlawError("--speculative needs acceptance=A, the chance each drafted token is accepted (0 … 1)")
    try:
        a = float(text)
    except ValueError:
        raise IronlawError(f"--speculative acceptance must be a number from 0 to 1, got '{text}'") from None
    if not 0.0 <= a <= 1.0:
        raise IronlawError(f"--speculative acceptance must be between 0 and 1, got {a:g}")
    return a


# ---------------------------------------------------------------------- graphs
def verify_graph(spec: str, hw, batch: int, ctx: int, k: int, s: common.Setup) -> Graph:
    """The target over K + 1 query tokens per sequence: weights once, work × (K + 1), KV read once."""
    g = scale_class(common.graph(spec, hw, "decode", batch * (k + 1), ctx, s), "kv_cache", 1.0 / (k + 1))
    g.name = f"{g.name} verify {k + 1} tokens"
    return g


def head_graph(target: Graph, method: str) -> Graph:
    """One drafted token of an MTP/EAGLE head: one layer of ``target`` (a decode or prefill graph), the
    2h → h projection and the LM head (shared with the target)."""
    from ...workloads.common import linear
    layers, meta = int(target.meta["layers"]), target.meta
    tokens = meta["tokens"]
    ops = []
    for op in _one_layer(target, method):
        o = copy.copy(op)
        o.count, o.bytes = 1, dict(op.bytes)
        if method == "eagle" and "experts" in meta and op.module == "experts":
            _one_expert(o, meta, tokens)
        ops.append(o)
    ops += [op for op in target.ops if op.attrs.get("role") in OUTSIDE and not op.attrs.get("per_layer")]
    h = int(meta["hidden"]) // int(meta.get("tp", 1))
    ops.append(linear("draft_fc", tokens, 2 * int(meta["hidden"]), h, target.dtype, 1, module="draft"))
    fp = {k: (v / layers if k in ("weights", "kv_cache") else v) for k, v in target.footprint.items()}
    return Graph(f"{target.name} {method} head", target.phase, target.dtype, ops, footprint=fp, meta=dict(meta))


def _one_layer(target: Graph, method: str) -> list[Op]:
    """The ops of one decoder layer. Where layers differ (DeepSeek-V3's leading dense layers, interleaved MoE),
    the MTP layer is a mixture-of-experts one (as DeepSeek-V3's is) and the EAGLE layer a dense one when the
    target has dense layers, else its MoE layer with one expert (``_one_expert``)."""
    layers = int(target.meta["layers"])
    per_layer = [op for op in target.ops if op.count == layers]
    partial = [op for op in target.ops if 1 < op.count < layers]
    if not partial:
        return [op for op in per_layer if not (method == "eagle" and "experts" in target.meta
                                               and op.attrs.get("role") in MOE_GLUE)]
    moe = {op.count for op in partial if op.attrs.get("role") == "router" and op.kind == "matmul"}
    dense = {op.count for op in partial if op.module == "mlp"} - moe
    pick = (dense or moe) if method == "eagle" else (moe or dense)
    group = max(pick) if pick else max(op.count for op in partial)
    chosen = [op for op in partial if op.count == group]
    if method == "eagle" and not dense:
        chosen = [op for op in chosen if op.attrs.get("role") not in MOE_GLUE]
    return per_layer + chosen


def _one_expert(op: Op, meta: dict, tokens) -> None:
    """An expert op as a dense MLP of one expert's shape: top-k times fewer FLOPs, one expert's weights."""
    k = float(meta["experts_per_token"])
    by = dtype_bytes(op.dtype)
    if op.kind == "matmul":
        op.bytes["weights"] = op.flops / (2.0 * tokens * k) * by
        op.bytes["activations"] = op.bytes.get("activations", 0.0) / k
    op.flops, op.vector_flops = op.flops / k, op.vector_flops / k


def draft_graphs(sp: Speculation, spec: str, hw, batch: int, ctx: int, prompt: int, s: common.Setup, target):
    """(draft decode step, draft prefill of one prompt) for ``sp``; ``target`` is the target's decode graph."""
    if sp.method == "draft":
        _check_draft(sp.draft, common.graph(sp.draft, hw, "decode", 1, 1, s), spec, target)     # before its sizes
        return common.graph(sp.draft, hw, "decode", batch, ctx, s), common.graph(sp.draft, hw, "prefill", 1, prompt, s)
    if sp.method == "mtp" and not target.meta.get("mtp_layers"):
        raise IronlawError(f"--speculative method=mtp drafts with the checkpoint's own multi-token-prediction "
                           f"module, and {spec} has none (its config states no num_nextn_predict_layers); use "
                           f"method=eagle (a trained EAGLE head) or method=draft,draft=MODEL")
    return head_graph(target, sp.method), head_graph(common.graph(spec, hw, "prefill", 1, prompt, s), sp.method)


def _check_draft(draft: str, d: Graph, spec: str, t: Graph) -> None:
    if d.meta.get("vocab") != t.meta.get("vocab"):
        raise IronlawError(f"draft {draft} has a vocabulary of {d.meta.get('vocab')} tokens, the target {spec} "
                           f"{t.meta.get('vocab')}: a draft must share the target's tokenizer")
    if d.meta["params"] >= t.meta["params"]:
        raise IronlawError(f"draft {draft} ({d.meta['params'] / 1e9:.2f} B parameters) is not smaller than the "
                           f"target {spec} ({t.meta['params'] / 1e9:.2f} B); a draft must be cheaper than its target")


# ---------------------------------------------------------------------- the estimate
def estimate(base, sp: Speculation, s: common.Setup, energy: dict | None = None) -> dict:
    """Speculative decoding against the plain ServeEstimate ``base`` (made with the options in ``s``): the verify,
    draft and draft-prefill steps priced as ``base`` priced its own (``base.price``: the engine step model on a
    GPU, the device's calibration elsewhere)."""
    common.no_chunk(base, "--speculative", s)
    hw, b, k, ctx = base.hw, base.concurrency, sp.tokens, common.mean_context(base)
    ver, t_ver = base.price(verify_graph(base.spec, hw, b, ctx, k, s))
    target = common.graph(base.spec, hw, "decode", b, ctx, s)
    g_step, g_pre = draft_graphs(sp, base.spec, hw, b, ctx, base.prompt, s, target)
    _check_memory(base, sp, g_step, ctx)
    dstep, t_draft = base.price(g_step)
    dpre, t_dpre = base.price(g_pre)
    e_tok = expected_tokens(sp.acceptance, k)
    t_round = t_ver + k * t_draft
    rounds = base.output / e_tok
    cycle = rounds * t_round + b * (base.prefill_s + t_dpre)
    tps, itl = b * base.output / cycle, cycle / base.output
    doc = {"schema": "ironlaw.serve-speculative/1", "method": sp.method, "draft": sp.draft, "tokens": k,
           "acceptance": sp.acceptance, "expected_tokens_per_step": e_tok, "verify_step_s": t_ver,
           "draft_step_s": t_draft, "draft_prefill_s": t_dpre, "round_s": t_round,
           "ttft_s": base.prefill_s + t_dpre + t_round, "itl_s": itl, "tokens_per_s": tps,
           "baseline_itl_s": base.itl_s, "baseline_tokens_per_s": base.tokens_per_s,
           "itl_change": itl / base.itl_s - 1.0, "throughput_change": tps / base.tokens_per_s - 1.0,
           "verify_bottleneck": ver.bottleneck()["resource"], "decode_bottleneck": base.decode.bottleneck()["resource"],
           "why": _why(t_ver, base.decode_step_s, k, e_tok, t_draft)}
    if energy is not None:
        from .energy import of_phases
        phases = [(ver, t_ver, rounds), (dstep, t_draft, rounds * k), (base.prefill, base.prefill_s, b),
                  (dpre, t_dpre, b)]
        doc["energy"] = of_phases(hw, phases, cycle, b * base.output, **energy)
    return doc


def _why(t_ver: float, t_dec: float, k: int, e_tok: float, t_draft: float) -> str:
    return (f"one verify step of {k + 1} tokens costs {t_ver / t_dec:.2f}× a decode step "
            f"({'bandwidth' if t_ver < 1.5 * t_dec else 'compute'}: weights read once, work × {k + 1}), "
            f"plus {k} draft steps of {1e3 * t_draft:.3g} ms, and yields {e_tok:.2f} tokens on average")


def _check_memory(base, sp: Speculation, draft: Graph, ctx: int) -> None:
    """The drafter's weights and KV cache must fit beside the target's sequences."""
    from ....core.units import counted, fmt_size
    cap = base.capacity
    d_kv_tok = float(draft.footprint.get("kv_cache", 0.0)) / (base.concurrency * ctx)
    d_w = float(draft.footprint.get("weights", 0.0))
    need = d_w + base.concurrency * cap["tokens_reserved_per_sequence"] * (cap["kv_bytes_per_token"] + d_kv_tok)
    if need > cap["kv_budget_bytes"]:
        raise IronlawError(f"--speculative {sp.method}: {counted(base.concurrency, 'sequence')} with the drafter need "
                           f"{fmt_size(need)} (draft weights {fmt_size(d_w)}) but {fmt_size(cap['kv_budget_bytes'])} "
                           f"is left after the target; {fmt_size(need - cap['kv_budget_bytes'])} too much — lower "
                           f"--concurrency or use --tp")
