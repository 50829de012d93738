"""The attention sublayer of the analytic transformer: which keys each query sees, what the KV cache
holds, and the ops of each attention family (registry ``SUBLAYERS``: grouped-query and multi-head latent).

Spans (per layer, ``Arch.layer_spans``): None is global causal attention; an int is a local layer,
either a sliding window of that many keys ending at the query (Mistral, gpt-oss, Gemma 3) or, for
``Arch.local == "chunk"``, fixed chunks of that many tokens, each query seeing the earlier tokens of its
own chunk (Llama 4). For ``b`` sequences of ``s`` tokens (decode: ``s`` already cached, one new):
    pairs (query, key) computed   global  s(s+1)/2            decode s+1
                                  window  w(w+1)/2 + (s−w)·w  decode min(s+1, w)
                                  chunk   n·c(c+1)/2 + r(r+1)/2 (s = n·c + r)   decode (s mod c) + 1
    cache resident per layer      global  s   window min(s, w)   chunk min(s, c) (a chunk is reserved)

Grouped-query attention (``gqa``): fused QKV projection, OLMo's optional clamp of q, k and v, optional qk-norm,
RoPE (not on Llama 4's NoPE layers; on ``rotary_dims`` of each head), attention, output projection. The cache
holds K and V: 2·kv_heads·head_dim per token and layer.

Multi-head latent attention (``mla``, DeepSeek-V2/V3): the hidden state is projected down to a query
latent (q_lora) and a KV latent (kv_lora) plus one rotary key shared by all heads (rope); the cache
holds the KV latent and the rotary key: kv_lora + rope elements per token and layer, for all heads.
    prefill/train (unabsorbed, as FlashMLA-style prefill kernels run it): the latent is expanded to
        per-head keys (nope + rope) and values (v) for all tokens; attention over heads × (nope + rope)
        for QKᵀ and heads × v for PV.
    decode (absorbed): W_UK is folded into the query (q_nope·W_UK: per head nope -> kv_lora) and W_UV
        applied after attention (per head kv_lora -> v); attention runs over the latent itself:
        QKᵀ over kv_lora + rope and PV over kv_lora per head, reading kv_lora + rope per cached token once.

Op names follow ``base.variant`` (the part before the dot names the op it is a part of); ``attrs["role"]``
says which tensor-parallel rule applies (``parallel.SHARDING``: ``attn_pre_proj`` "column", ``attention``
"heads", ``input_layernorm.latent`` "norm" …); ``attrs["attention"]`` says which attention an op belongs to ("global", "window 128",
"chunk 8192", "mla") and ``attrs["tp_replicated"]`` marks MLA's down-projection, which tensor-parallel
engines replicate rather than split.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core import flopcount
from ...core.gemmshape import (ATTENTION_PHASES, attention_kernel, attention_mnk, attention_regime, mla_bmm_kernel,
                               tiled_kv_heads, window_kernel)
from ...core.graph import Num, Op, attention_dtype, dtype_bytes
from .common import elementwise, linear
from .hfconfig import Arch

ROPE_FLOPS = 3.0                                            # x·cos + rotate(x)·sin


@dataclass(frozen=True)
class CoreHeads:
    """What ``attention_core`` reads of an architecture, for a caller that has heads but no ``Arch`` (a kernel
    table's row, an MLA module class: ``kv_heads`` = ``heads``, one shared latent head per query head)."""
    heads: int
    kv_heads: int
    local: str = "window"
    sinks: bool = False
    encoder: bool = False


@dataclass(frozen=True)
class CoreShape:
    """What ``attention_core`` reads of a step: ``b`` sequences of ``s`` tokens (decode: ``s`` cached, one new)."""
    b: float
    s: float
    phase: str

    @property
    def tokens(self) -> float:
        return self.b if self.phase == "decode" else self.b * self.s


# ---------------------------------------------------------------------- keys per query, cache per layer
def span_label(a: Arch, span: int | None) -> str:
    if a.encoder:
        return "full"
    return "causal" if span is None else f"{a.local} {span}"


def pairs_and_kv(a: Arch, sh, span: int | None) -> tuple[Num, Num, Num]:
    """(query-key pairs, cached tokens read, tokens written to the cache) of one layer with ``span``."""
    b, s = sh.b, sh.s
    if sh.phase == "decode":
        if span is None:
            keys = s + 1.0
        elif a.local == "chunk":
            keys = np.mod(s, span) + 1.0
        else:
            keys = np.minimum(s + 1.0, span)
        return b * keys, b * (keys - 1.0), b
    if a.encoder:
        pairs = b * s * s
    elif span is None:
        pairs = b * s * (s + 1.0) / 2
    elif a.local == "chunk":
        n, r = np.floor_divide(s, span), np.mod(s, span)
        pairs = b * (n * span * (span + 1.0) / 2 + r * (r + 1.0) / 2)
    else:
        w = span
        pairs = b * np.where(s <= w, s * (s + 1.0) / 2, w * (w + 1.0) / 2 + (s - w) * w)
    return pairs, 0.0, (b * s if sh.phase == "prefill" else 0.0)


def resident_tokens(s: Num, span: int | None) -> Num:
    return s if span is None else np.minimum(s, span)


def kv_cache_bytes(a: Arch, b: Num, s: Num, dt: str) -> Num:
    """The cache of every layer for ``b`` sequences of ``s`` tokens (local layers keep their span only)."""
    per = a.kv_elems_per_token() * dtype_bytes(dt)
    return sum(n * per * resident_tokens(s, span) for span, n in a.span_groups().items()) * b


# ---------------------------------------------------------------------- shared ops
def _rope(a: Arch, elems: Num, dt: str, count: int) -> Op:
    op = elementwise("attn_rope", elems, dt, ROPE_FLOPS, inputs=2, count=count, module="attn", role="heads")
    op.attrs["kernel"] = "rotary_embedding"
    return op


def _qk_norm(a: Arch, elems: Num, dt: str, count: int) -> Op:
    gains = {"rms": 2 * a.head_dim, "rms_full": a.q_dim + a.kv_dim}.get(a.qk_norm, 0)
    op = elementwise("attn_rope.qk_norm", elems, dt, flopcount.RMSNORM, count=count, kind="norm",
                     weight_bytes=gains * dtype_bytes(dt), module="attn", role="heads")
    op.shapes = f"{a.qk_norm} norm per head on q and k, [{a.head_dim}] x {a.heads}+{a.kv_heads} heads" \
        if a.qk_norm != "rms_full" else f"rms norm over q [{a.q_dim}] and over k [{a.kv_dim}]"
    return op


def _qkv_clip(a: Arch, elems: Num, dt: str, count: int) -> Op:
    """OLMo's ``clip_qkv``: q, k and v clamped to [-c, c] (a min and a max per element)."""
    return elementwise("attn_pre_proj.clip", elems, dt, 2.0, count=count, module="attn", role="heads")


def attention_core(a: Arch, sh, dt: str, span, count: int, n_spans: int, geo: dict) -> Op:
    """The attention of ``count`` layers with ``span``; ``geo``: per-pair dims and per-token traffic."""
    by = dtype_bytes(dt)
    pairs, kv_read, kv_write = pairs_and_kv(a, sh, span)
    t = sh.tokens
    b = {"activations": t * (geo["q"] + geo["kv_new"] + geo["o"]) * by}
    kv = kv_read * geo["cache"] + kv_write * geo["cache"]
    if np.any(np.asarray(kv) > 0):
        b["kv_cache"] = kv * by
    label = span_label(a, span)
    name = "attention" if span is None or n_spans == 1 else f"attention.{a.local}"
    sinks = ", sinks" if a.sinks else ""
    attrs = {"attention": geo.get("kind", "global" if span is None else label), "role": "heads"}
    if attention_dtype(dt) != dt:                       # a 4-bit float model: its cache in dt, its math in FP8
        attrs["kv_dtype"] = dt
    attrs.update(_kernel_attrs(a, sh, geo, pairs, attention_dtype(dt), attrs.get("kv_dtype", dt), span))
    if geo.get("kind") != "mla":      # the new K/V read and the cache written: a TP past the KV heads replicates them
        attrs["kv_new_share"] = geo["kv_new"] / (geo["q"] + geo["kv_new"] + geo["o"])     # (``parallel.kvheads``)
        if "kv_cache" in b:                            # inference writes each token's K/V: kv_write = tokens
            attrs["kv_write_share"] = geo["cache"] / (geo["o"] + geo["cache"])
    return Op(name, "attention", flops=pairs * a.heads * 2.0 * (geo["qk"] + geo["pv"]), bytes=b,
              dtype=attention_dtype(dt), count=count, module="attn",
              vector_flops=pairs * a.heads * flopcount.SOFTMAX, shapes=f"{label}{sinks}, {geo['shape']}",
              attrs=attrs, bytes_written=t * geo["o"] * by + kv_write * geo["cache"] * by)


def _kernel_attrs(a: Arch, sh, geo: dict, pairs, dt: str, kv_dtype: str, span) -> dict:
    """An inference attention's kernel class (``gemmshape.attention_kernel``: phase, math and KV dtype, regime) and
    its shape per sequence and KV head (``gemmshape.attention_mnk``; arrays in a sweep), for grouped-query and
    multi-head latent attention (regime '_mla') in inference ({} for training and encoders); a sliding-window
    decode also states ``history``, the whole sequence (s + 1 tokens) beside the window its keys stop at, as does a
    decode TensorRT-LLM runs on its MMHA kernel (``gemmshape.window_kernel``: one query head per KV head, or over
    ``WIDE_GQA``), whose launch splits that sequence too (``core.splitkv``); a sliding-window prefill its s tokens; a
    prefill the tokens it writes to the cache (``cache_writes``, b · s: a cache writer's CTAs) and the KV heads · head
    dim each token writes (``cache_write_width``; an MLA prefill's: its one latent, ``cache_elems``, whatever the
    heads); a decode the tokens it writes, one per sequence (``cache_writes``, b: the sequences FlashAttention 2's
    grouped-query swap copies, ``efficiency.swap_copy_s``)."""
    if sh.phase not in ATTENTION_PHASES or a.encoder:
        return {}
    query = 1.0 if sh.phase == "decode" else sh.s
    keys = np.asarray(pairs, float) / (np.asarray(sh.b, float) * np.asarray(query, float))
    if geo.get("kind") == "mla":      # decode (absorbed): every head's query on the one latent; prefill: per head
        kv = 1 if sh.phase == "decode" else a.heads
        out = {"kernel": attention_kernel(sh.phase, dt, kv_dtype, "_mla"),
               "mnk": attention_mnk(query, keys, a.heads, kv, geo["qk"])}
        return {**out, **_cache_writes(sh, geo["cache"])} if sh.phase == "prefill" else out
    regime = attention_regime(span is not None and a.local != "chunk", a.heads, a.kv_heads, geo["qk"],
                              sh.phase == "decode")
    out = {"kernel": attention_kernel(sh.phase, dt, kv_dtype, regime),
           "mnk": attention_mnk(query, keys, a.heads, tiled_kv_heads(sh.phase, regime, a.heads, a.kv_heads),
                                geo["qk"])}
    mmha = window_kernel(a.heads, a.kv_heads, geo["qk"]) == "mmha"
    if sh.phase == "decode" and (regime.startswith("_window") or mmha):   # its split-KV kernel splits the whole
        s = sh.s                 # sequence, not the window (``core.splitkv``): the cached tokens and the new one
        out["history"] = float(s) + 1.0 if np.ndim(s) == 0 else np.asarray(s, float) + 1.0
    elif regime.startswith("_window"):       # a windowed prefill's whole sequence: the keys a kernel that walks every
        s = sh.s                             # key block spans (``gemmshape.GRID_KEYS``)
        out["history"] = float(s) if np.ndim(s) == 0 else np.asarray(s, float)
    if sh.phase == "prefill":
        out.update(_cache_writes(sh, a.kv_heads * geo["qk"]))
    else:                                    # a decode's tokens written, one per sequence (``efficiency.swap_copy_s``)
        t = sh.tokens
        out["cache_writes"] = float(t) if np.ndim(t) == 0 else np.asarray(t, float)
    return out


def _cache_writes(sh, width: float) -> dict:
    """A prefill's cache writes (``efficiency.cache_write_s``): the tokens it writes, one cache writer CTA each, and
    the elements each token writes (``width``)."""
    t = sh.tokens
    return {"cache_writes": float(t) if np.ndim(t) == 0 else np.asarray(t, float), "cache_write_width": float(width)}


def _cores(a: Arch, sh, dt: str, geo: dict) -> list[Op]:
    groups = a.span_groups()
    return [attention_core(a, sh, dt, span, n, len(groups), geo) for span, n in groups.items()]


# ---------------------------------------------------------------------- grouped-query attention
def gqa_ops(a: Arch, sh, dt: str) -> list[Op]:
    t, h, L = sh.tokens, a.hidden, a.layers
    ops = [linear("attn_pre_proj", t, h, a.q_dim + 2 * a.kv_dim, dt, L, a.qkv_bias, "attn", role="column")]
    if a.qkv_clip:
        ops.append(_qkv_clip(a, t * (a.q_dim + 2 * a.kv_dim), dt, L))
    if a.qk_norm:
        ops.append(_qk_norm(a, t * (a.q_dim + a.kv_dim), dt, L if a.qk_norm != "l2" else a.rope_layers))
    if a.positions == "rope":                    # partial rotary (GPT-NeoX): only rotary_dims of each head
        ops.append(_rope(a, t * (a.heads + a.kv_heads) * a.rotary_dims, dt, a.rope_layers))
    for op in ops:            # the part on K and V, which a TP past the KV heads replicates (``parallel.kvheads``)
        op.attrs["kv_share"] = a.kv_dim / (a.q_dim + a.kv_dim) if op.name.endswith(("qk_norm", "rope")) \
            else 2 * a.kv_dim / (a.q_dim + 2 * a.kv_dim)
    geo = {"qk": a.head_dim, "pv": a.head_dim, "q": a.q_dim, "kv_new": 2 * a.kv_dim, "o": a.q_dim,
           "cache": 2 * a.kv_dim, "shape": f"{a.heads} heads / {a.kv_heads} kv x {a.head_dim}"}
    ops += _cores(a, sh, dt, geo)
    ops.append(linear("attn_post_proj", t, a.q_dim, h, dt, L, a.o_bias, "attn", role="row"))
    return ops


# ---------------------------------------------------------------------- multi-head latent attention
def per_head(name: str, a: Arch, t: Num, k: int, n: int, dt: str) -> Op:
    """A matmul batched over heads: [t, k] x [k, n] for each of ``a.heads`` heads (weights heads·k·n). Its kernel
    grid is one GEMM's of M = t, K = k and N = heads·n (the heads' tiles side by side), so ``nk`` says so. Its kernel
    class (``gemmshape.mla_bmm_kernel``) is fitted on the measured BMM kernels where the calibration holds it; without
    it the op keeps its dtype's GEMM terms."""
    op = linear(name, t * a.heads, k, n, dt, a.layers, module="attn", role="heads")
    op.attrs["kernel"] = mla_bmm_kernel(dt)
    op.bytes["weights"] = a.heads * k * n * dtype_bytes(dt)
    op.attrs["nk"] = (a.heads * n, k)
    op.shapes = f"{a.heads} heads x [{k}]x[{k},{n}] per token"
    return op


def mla_ops(a: Arch, sh, dt: str) -> list[Op]:
    m, t, h, L, n = a.mla, sh.tokens, a.hidden, a.layers, a.heads
    qk, by = m.nope + m.rope, dtype_bytes(dt)
    down = linear("attn_pre_proj", t, h, (m.q_lora or n * qk) + m.cache_elems, dt, L, module="attn", role="column")
    down.attrs.update(attention="mla", tp_replicated=bool(m.q_lora))
    down.shapes += " (q and kv latents, rotary key)"
    lat = m.q_lora + m.kv_lora
    norm = elementwise("input_layernorm.latent", t * lat, dt, flopcount.RMSNORM, count=L, kind="norm",
                       weight_bytes=lat * by, module="attn", role="norm")
    norm.attrs["kernel"] = "rms_norm"
    ops = [down, norm] + ([linear("attn_pre_proj.q_up", t, m.q_lora, n * qk, dt, L, module="attn", role="column")]
                          if m.q_lora else [])
    ops.append(_rope(a, t * (n + 1) * m.rope, dt, L))
    geo = mla_geometry(m, n, sh.phase)
    if sh.phase == "decode":
        ops += [per_head("attention.q_absorb", a, t, m.nope, m.kv_lora, dt), *_cores(a, sh, dt, geo),
                per_head("attention.v_up", a, t, m.kv_lora, m.v_dim, dt)]
    else:
        ops += [linear("attn_pre_proj.kv_up", t, m.kv_lora, n * (m.nope + m.v_dim), dt, L, module="attn",
                       role="column"),
                *_cores(a, sh, dt, geo)]
    ops.append(linear("attn_post_proj", t, n * m.v_dim, h, dt, L, module="attn", role="row"))
    return ops


def mla_geometry(m, n: int, phase: str) -> dict:
    """An MLA attention core's per-pair dims and per-token traffic (``attention_core``'s ``geo``) for ``n`` heads:
    decode absorbed (over the latent), prefill per head."""
    if phase == "decode":
        return {"qk": m.cache_elems, "pv": m.kv_lora, "q": n * m.cache_elems, "kv_new": m.cache_elems,
                "o": n * m.kv_lora, "cache": m.cache_elems, "kind": "mla",
                "shape": f"absorbed, {n} heads over the latent {m.kv_lora}+{m.rope}"}
    qk = m.nope + m.rope
    return {"qk": qk, "pv": m.v_dim, "q": n * qk, "kv_new": n * (qk + m.v_dim), "o": n * m.v_dim,
            "cache": m.cache_elems, "kind": "mla", "shape": f"{n} heads x {m.nope}+{m.rope} / v {m.v_dim}"}


SUBLAYERS = {"gqa": gqa_ops, "mla": mla_ops}


def sublayer(a: Arch) -> str:
    return "mla" if a.mla else "gqa"


def working_elems(a: Arch) -> int:
    """Elements per token the attention sublayer holds at once: normed input, its projections, output."""
    if not a.mla:
        return a.hidden + a.q_dim + 2 * a.kv_dim + a.q_dim
    m = a.mla
    return (a.hidden + m.q_lora + m.cache_elems + a.heads * (m.nope + m.rope) + a.heads * (m.nope + m.v_dim)
            + a.heads * m.v_dim)
