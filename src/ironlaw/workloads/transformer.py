"""Analytic transformers without torch: decoders (Llama/Mistral/Qwen2 with GQA, Mixtral MoE, GPT-2)
and encoders (BERT), built from a Hugging Face config (``hfconfig.Arch``).

Phases (``--seq`` is tokens per sequence; ``b`` = batch, ``s`` = seq, ``T`` = tokens in flight):
    infer    encoder forward, or decoder forward over the whole sequence (scoring): LM head over all
             T = b·s tokens, no KV cache. Default for encoders (BERT: seq 512).
    prefill  decoder forward over the prompt: writes the KV cache, LM head over the last token of each
             sequence only (what a serving engine computes). Default for decoders (seq 1024).
    decode   ONE new token per sequence, ``--seq`` = context already in the KV cache: attention reads
             the cached K,V of s tokens (and appends one); the LM head runs over b tokens.
    train    forward (LM head + cross-entropy over all tokens) + backward + one AdamW step.

Op conventions (one row per op; identical layers share a row with count = n_layers; names follow
vidur's per-op profile of Llama-3-8B so measured and predicted rows join: fused QKV = attn_pre_proj,
fused gate+up = mlp_up_proj):
- matmuls: 2·T·k·n FLOPs (+T·n for a bias); read input and weights, write output (``common.linear``).
- attention (kind "attention"), FlashAttention-style: 4·d_head·n_heads FLOPs per (query, key) pair for
  QKᵀ and PV on the matrix unit, plus ``flopcount.SOFTMAX`` per score as ``vector_flops`` (the fused softmax
  runs on the vector unit); the score matrix is never written: it reads Q, K, V and
  writes O. Causal decoders count only the pairs a causal kernel computes, s·(s+1)/2 per sequence
  (the same convention as Kaplan et al. 2020's C_fwd = 2N + 2·n_layer·n_ctx·d_attn); a sliding window
  caps keys per query; encoders count the full s². Decode reads the KV cache as class "kv_cache";
  prefill writes it there.
- backward: ``common.backward`` (2× forward FLOPs) except attention, whose FlashAttention backward runs
  five matmuls to the forward's two (2.5×) and the softmax twice, and embeddings (a scatter-add of
  T·h per table).
- non-matmul ops count FLOPs per element; a transcendental (exp, tanh, erf) counts as
  ``flopcount.TRANSCENDENTAL`` (GPUs run it on special-function units; a CPU as a polynomial of a few FMAs).
- dropout (training, where the config has a residual/hidden dropout probability: GPT-2, BERT): one op
  after the embeddings and after each of the two sublayers' output projections, before the residual add
  (as HF and Megatron place them); it reads x, writes y and a one-byte keep mask, DROPOUT_FLOPS per
  element (the RNG draw, compare, scale); its backward reads the gradient and the mask. Dropout on the
  attention probabilities is fused into the FlashAttention kernel (SDPA's dropout_p) and costs no traffic.
- ``attrs["kernel"]`` names the kernel where one op class has a specific one (RMSNorm: rms_norm, SiLU
  GLU: silu_and_mul, RoPE: rotary_embedding, one-table embedding, residual add), so a calibration
  fitted on that kernel (``[calibration.kernel]``) applies to it and not to every op of its kind.
Footprint: weights (all experts), kv_cache (prefill/decode: 2·layers·kv_heads·head_dim·s·b·bytes),
activations (inference: the live working set of one layer or of the LM head, whichever is larger;
training: what autograd saves for the backward without recomputation) and the training classes.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .. import flopcount
from ..errors import IronlawError
from ..graph import Graph, Num, Op, dtype_bytes
from . import Request, builtin, check_phase, prefix
from . import hfconfig
from .common import backward, elementwise, linear, optimizer_step, training_footprint
from .hfconfig import Arch

CONFIG_DIR = Path(__file__).parent / "configs"
DECODER_PHASES = ("prefill", "decode", "infer", "train")
ENCODER_PHASES = ("infer", "train")
DEFAULT_SEQ = {"decoder": 1024, "encoder": 512}

ROPE_FLOPS = 3.0                                            # x·cos + rotate(x)·sin
DROPOUT_FLOPS = 3.0                                         # uniform draw, compare with p, scale by 1/(1−p)
MASK_BYTES = 1.0                                            # the keep mask saved for the backward (bool)
ACT_FLOPS = {"silu": flopcount.SILU, "gelu_new": flopcount.GELU_TANH, "gelu": flopcount.GELU_ERF}
BUILTIN_NAMES = {"gpt2": "GPT-2 124M (learned positions, tied embeddings, GELU-tanh)",
                 "bert-base": "BERT-base uncased encoder with pooler (110M)",
                 "bert-large": "BERT-large uncased encoder with pooler (335M)",
                 "llama3-8b": "Llama-3-8B (GQA 32/8 heads, RoPE, SwiGLU)",
                 "llama3-70b": "Llama-3-70B (GQA 64/8 heads, RoPE, SwiGLU)",
                 "mixtral-8x7b": "Mixtral-8x7B (8 SwiGLU experts, top-2; 46.7B total, 12.9B active)"}


# ---------------------------------------------------------------------- shape of one phase
class _Shape:
    """Token counts of a phase; every field may be a numpy array over configurations."""

    def __init__(self, a: Arch, phase: str, b: Num, s: Num):
        self.phase, self.b, self.s = phase, b, s
        w = a.sliding_window
        if phase == "decode":
            keys = s + 1.0 if w is None else np.minimum(s + 1.0, w)
            self.tokens, self.pairs = b, b * keys                   # one query per sequence
            self.kv_read, self.kv_write = b * (keys - 1.0), b
        else:
            self.tokens = b * s
            if a.encoder:
                self.pairs = b * s * s
            elif w is None:
                self.pairs = b * s * (s + 1.0) / 2
            else:
                self.pairs = b * np.where(s <= w, s * (s + 1.0) / 2, w * (w + 1.0) / 2 + (s - w) * w)
            self.kv_read, self.kv_write = 0.0, (b * s if phase == "prefill" else 0.0)
        self.head_tokens = b if phase in ("prefill", "decode") or a.encoder else self.tokens


# ---------------------------------------------------------------------- ops
def _kernel(op: Op, kernel: str | None) -> Op:
    if kernel:
        op.attrs["kernel"] = kernel
    return op


def _norm(name: str, a: Arch, tokens: Num, dt: str, count: int) -> Op:
    per = flopcount.RMSNORM if a.norm == "rms" else flopcount.LAYERNORM
    return _kernel(elementwise(name, tokens * a.hidden, dt, per, count=count, kind="norm",
                               weight_bytes=a.norm_params * dtype_bytes(dt)), "rms_norm" if a.norm == "rms" else None)


def _dropout(name: str, elems: Num, dt: str, count: int, module: str = "") -> Op:
    op = elementwise(name, elems, dt, DROPOUT_FLOPS, count=count, module=module)
    op.bytes["activations"] = op.bytes["activations"] + MASK_BYTES * elems
    op.bytes_written = op.bytes_written + MASK_BYTES * elems
    return op


def _train_dropout(a: Arch, sh: "_Shape") -> bool:
    return sh.phase == "train" and a.dropout > 0


def _add(name: str, elems: Num, dt: str, count: int) -> Op:
    return _kernel(elementwise(name, elems, dt, 1.0, inputs=2, count=count), "add")


def _act(a: Arch, elems: Num, dt: str, count: int, module: str) -> Op:
    act = ACT_FLOPS[a.act] + (1.0 if a.glu else 0.0)
    op = elementwise("mlp_act", elems, dt, act, inputs=2 if a.glu else 1, count=count, module=module)
    return _kernel(op, "silu_and_mul" if a.glu and a.act == "silu" else None)


def _embedding(a: Arch, sh: _Shape, dt: str) -> Op:
    tables = 1 + (a.positions == "learned") + (a.type_vocab > 0)
    by = dtype_bytes(dt)
    rows = sh.tokens * a.hidden
    op = Op("embedding", "embedding", flops=(tables - 1) * rows,
            bytes={"weights": tables * rows * by, "activations": rows * by}, dtype=dt,
            module="embeddings", shapes=f"{tables} table(s) x [{a.vocab},{a.hidden}]", bytes_written=rows * by)
    return _kernel(op, "embedding" if tables == 1 else None)          # one lookup; more tables add adds


def _attention(a: Arch, sh: _Shape, dt: str, count: int) -> Op:
    by = dtype_bytes(dt)
    t = sh.tokens
    flops = sh.pairs * a.heads * 4.0 * a.head_dim                           # QKᵀ and PV on the matrix unit
    b = {"activations": t * (2 * a.q_dim + 2 * a.kv_dim) * by}           # read Q, K, V of new tokens; write O
    kv_tokens = sh.kv_read + sh.kv_write
    if np.any(np.asarray(kv_tokens) > 0):
        b["kv_cache"] = 2.0 * a.kv_dim * kv_tokens * by
    kind = "full" if a.encoder else ("causal" if a.sliding_window is None else f"window {a.sliding_window}")
    return Op("attention", "attention", flops=flops, bytes=b, dtype=dt, count=count, module="attn",
              vector_flops=sh.pairs * a.heads * flopcount.SOFTMAX,               # the fused softmax
              shapes=f"{kind}, {a.heads} heads / {a.kv_heads} kv x {a.head_dim}",
              bytes_written=t * a.q_dim * by + 2.0 * a.kv_dim * sh.kv_write * by)


def _mlp(a: Arch, sh: _Shape, dt: str, L: int) -> list[Op]:
    t, h, i = sh.tokens, a.hidden, a.inter
    up_n = 2 * i if a.glu else i
    if not a.experts:
        return [linear("mlp_up_proj", t, h, up_n, dt, L, a.mlp_bias, "mlp"),
                _act(a, t * i, dt, L, "mlp"),
                linear("mlp_down_proj", t, i, h, dt, L, a.mlp_bias, "mlp")]
    by, k, e = dtype_bytes(dt), a.top_k, a.experts
    routed = t * k                                                  # token-expert assignments
    touched = e * (1.0 - (1.0 - k / e) ** t)                        # distinct experts hit (uniform routing)
    up = linear("mlp_up_proj", routed, h, up_n, dt, L, a.mlp_bias, "experts")
    up.bytes["weights"] = touched * (h * up_n + (up_n if a.mlp_bias else 0)) * by
    down = linear("mlp_down_proj", routed, i, h, dt, L, a.mlp_bias, "experts")
    down.bytes["weights"] = touched * (i * h + (h if a.mlp_bias else 0)) * by
    up.shapes = down.shapes = f"{k} of {e} experts per token"
    return [linear("moe_router", t, h, e, dt, L, module="router"),
            elementwise("moe_topk", t * e, dt, flopcount.SOFTMAX + 1.0, count=L, kind="softmax", module="router"),
            up, _act(a, routed * i, dt, L, "experts"), down,
            elementwise("moe_combine", t * h, dt, 2.0 * k, inputs=k, count=L, module="experts")]


def _layer(a: Arch, sh: _Shape, dt: str) -> list[Op]:
    t, h, L = sh.tokens, a.hidden, a.layers
    qkv = linear("attn_pre_proj", t, h, a.q_dim + 2 * a.kv_dim, dt, L, a.qkv_bias, "attn")
    rope = [_kernel(elementwise("attn_rope", t * (a.q_dim + a.kv_dim), dt, ROPE_FLOPS, inputs=2, count=L,
                                module="attn"), "rotary_embedding")] if a.positions == "rope" else []
    drop = _train_dropout(a, sh)
    attn = [qkv, *rope, _attention(a, sh, dt, L), linear("attn_post_proj", t, a.q_dim, h, dt, L, a.o_bias, "attn"),
            *([_dropout("attn_dropout", t * h, dt, L, "attn")] if drop else []), _add("attn_residual_add", t * h, dt, L)]
    mlp = _mlp(a, sh, dt, L) + ([_dropout("mlp_dropout", t * h, dt, L, "mlp")] if drop else []) + \
        [_add("mlp_residual_add", t * h, dt, L)]
    if a.post_norm:
        return attn + [_norm("attn_layernorm", a, t, dt, L)] + mlp + [_norm("mlp_layernorm", a, t, dt, L)]
    return [_norm("input_layernorm", a, t, dt, L)] + attn + [_norm("post_attention_layernorm", a, t, dt, L)] + mlp


def forward_ops(a: Arch, sh: _Shape, dt: str) -> list[Op]:
    ops = [_embedding(a, sh, dt)]
    if _train_dropout(a, sh):
        ops.append(_dropout("embedding_dropout", sh.tokens * a.hidden, dt, 1, "embeddings"))
    if a.post_norm:
        ops.append(_norm("embedding_layernorm", a, sh.tokens, dt, 1))
    ops += _layer(a, sh, dt)
    if a.pooler:
        ops += [linear("pooler_dense", sh.head_tokens, a.hidden, a.hidden, dt, 1, True, "pooler"),
                elementwise("pooler_tanh", sh.head_tokens * a.hidden, dt, flopcount.TRANSCENDENTAL, module="pooler")]
    if not a.encoder:
        ops += [_norm("final_norm", a, sh.tokens, dt, 1),
                linear("lm_head", sh.head_tokens, a.hidden, a.vocab, dt, 1, module="lm_head")]
    if sh.phase == "train" and not a.encoder:
        by, n = dtype_bytes(dt), sh.tokens * a.vocab
        ops.append(Op("cross_entropy", "softmax", flops=n * (flopcount.SOFTMAX + 1.0),
                      bytes={"activations": n * by + 4.0 * sh.tokens}, dtype=dt, module="loss",
                      shapes=f"[…,{a.vocab}]", bytes_written=4.0 * sh.tokens))
    return ops


# ---------------------------------------------------------------------- memory
def _layer_elems_per_token(a: Arch) -> tuple[float, float]:
    """(live working set, saved for backward) elements per token in one layer."""
    h, i, m = a.hidden, a.inter, (a.top_k or 1)
    up_n = 2 * i if a.glu else i
    attn = h + a.q_dim + 2 * a.kv_dim + a.q_dim                      # normed x, Q K V, O
    moe = (a.experts + 2 * m * h) if a.experts else 0                # router logits, permuted in/out copies
    mlp = h + m * (up_n + i) + moe                                   # normed x, up output, act output
    live = h + max(attn, mlp)                                        # + the residual stream
    saved = 2 * h + attn + mlp                                       # norm inputs, projection and act inputs
    return live, saved


def kv_cache_bytes(a: Arch, b: Num, s: Num, dt: str) -> Num:
    """K and V of every layer for ``s`` tokens of ``b`` sequences."""
    return 2.0 * a.layers * a.kv_dim * s * b * dtype_bytes(dt)


def _footprint(a: Arch, sh: _Shape, dt: str, params: int) -> dict[str, Num]:
    by = dtype_bytes(dt)
    live, saved = _layer_elems_per_token(a)
    head = sh.head_tokens * (a.vocab if not a.encoder else a.hidden) + sh.tokens * a.hidden
    if sh.phase == "train":
        lse = 4.0 * a.heads * sh.tokens * a.layers                   # fp32 log-sum-exp rows of FlashAttention
        masks = (2 * a.layers + 1) * sh.tokens * a.hidden * MASK_BYTES if _train_dropout(a, sh) else 0.0
        return training_footprint(params, dt, (a.layers * saved * sh.tokens + head) * by + lse + masks)
    fp = {"weights": params * by, "activations": np.maximum(live * sh.tokens, head) * by}
    if sh.phase in ("prefill", "decode"):
        fp["kv_cache"] = kv_cache_bytes(a, sh.b, sh.s, dt)
    return fp


# ---------------------------------------------------------------------- the builder
def _num(x: Num) -> Num:
    return float(x) if np.ndim(x) == 0 else np.asarray(x, dtype=float)


def _seq(a: Arch, req: Request, phase: str) -> Num:
    limit = a.max_pos if a.positions == "learned" else None
    if limit and phase == "decode":
        limit -= 1                                                   # the new token takes position s
    if req.seq is None:
        s = DEFAULT_SEQ["encoder" if a.encoder else "decoder"]
        return min(s, limit) if limit else s
    if limit and np.any(np.asarray(req.seq) > limit):
        top = int(np.max(req.seq))
        raise IronlawError(f"--seq {top} exceeds the {a.max_pos} learned positions of {a.name}"
                           f"{' (decode appends one token)' if phase == 'decode' else ''}; use --seq <= {limit}")
    return req.seq


def build(a: Arch, req: Request, name: str) -> Graph:
    """The Graph of ``a`` for the request's phase, batch, seq and dtype (arrays broadcast)."""
    phases = ENCODER_PHASES if a.encoder else DECODER_PHASES
    phase = check_phase(req, phases, "infer" if a.encoder else "prefill", name)
    dt = req.dtype or "bf16"
    by = dtype_bytes(dt)
    b, s = _num(req.batch), _num(_seq(a, req, phase))
    sh = _Shape(a, phase, b, s)
    fwd = forward_ops(a, sh, dt)
    params, active = a.params(), a.params(active=True)
    fwd_flops = sum(((op.flops + op.vector_flops) * op.count for op in fwd), 0.0)
    ops, uncounted = fwd, {}
    if phase == "train":
        bwd = backward(fwd)
        op_by_name = {op.name: op for op in fwd}
        for op in bwd:
            if op.kind == "attention":                               # FlashAttention backward: 5 matmuls vs 2,
                fw = op_by_name[op.name[:-len(".backward")]]         # and the softmax recomputed and differentiated
                op.flops, op.vector_flops = 2.5 * fw.flops, 2.0 * fw.vector_flops
            elif op.kind == "embedding":
                op.flops = sh.tokens * a.hidden * (1 + (a.positions == "learned") + (a.type_vocab > 0))
            elif op.name.endswith("_dropout.backward"):               # dy·mask/(1−p): reads dy and the mask,
                fw = op_by_name[op.name[:-len(".backward")]]         # writes dx: the forward's traffic
                op.flops, op.bytes = fw.flops / DROPOUT_FLOPS, dict(fw.bytes)
        ops = fwd + bwd + [optimizer_step(params, dt)]
    meta = {"batch": req.batch, "seq": s if np.ndim(s) else int(s), "tokens": sh.tokens, "params": params,
            "active_params": active, "model_flops": fwd_flops * (3.0 if phase == "train" else 1.0),
            "arch": a.model_type, "layers": a.layers, "hidden": a.hidden, "heads": a.heads,
            "kv_heads": a.kv_heads, "head_dim": a.head_dim, "vocab": a.vocab,
            "attention_pairs": "full" if a.encoder else "causal",
            "attention_dropout": a.attn_dropout if phase == "train" else 0.0, "frontend": "transformers"}
    if a.experts:
        meta.update(experts=a.experts, experts_per_token=a.top_k)
    if phase in ("prefill", "decode"):
        meta["kv_cache_bytes"] = kv_cache_bytes(a, b, s, dt)
    if a.max_pos and a.positions == "rope" and np.any(np.asarray(s) > a.max_pos):
        meta["note"] = f"seq beyond max_position_embeddings ({a.max_pos}): RoPE extrapolation, cost only"
    g = Graph(name, phase, dt, ops, footprint=_footprint(a, sh, dt, params), meta=meta, uncounted_ops=uncounted)
    g.meta["weight_bytes"] = params * by
    return g


# ---------------------------------------------------------------------- registries
def builtin_arch(name: str) -> Arch:
    path = CONFIG_DIR / f"{name}.json"
    return hfconfig.parse(json.loads(path.read_text(encoding="utf-8")), f"built-in config {path.name}", name)


def _register(name: str, description: str) -> None:
    encoder = name.startswith("bert")

    @builtin(name, description, ENCODER_PHASES if encoder else DECODER_PHASES, "encoder" if encoder else "llm")
    def _build(req: Request) -> Graph:
        return build(builtin_arch(name), req, name)


for _n, _d in BUILTIN_NAMES.items():
    _register(_n, _d)


@prefix("hf", "hf:path/to/config.json — a Hugging Face config (llama, mistral, qwen2, mixtral, gpt2, bert "
              "analytic; others captured with torch)")
def hf(arg: str, req: Request) -> Graph:
    path = arg.strip()
    if not path:
        raise IronlawError("hf: needs a path to a Hugging Face config.json, e.g. hf:models/llama/config.json")
    if req.options.get("capture"):
        return _capture(path, req, "capture requested")
    cfg = hfconfig.load_json(path)
    file = Path(path).expanduser()
    file = file / "config.json" if file.is_dir() else file
    try:
        arch = hfconfig.parse(cfg, str(file), file.stem if file.stem != "config" else None)
    except hfconfig.Unsupported as e:
        return _capture(path, req, f"architecture '{e}' has no analytic builder")
    return build(arch, req, f"hf:{path}")


def _capture(path: str, req: Request, why: str) -> Graph:
    try:
        from ..capture.hf import build as capture_build
        return capture_build(path, req)
    except ImportError:
        raise IronlawError(f"{path}: {why}; it needs torch+transformers capture "
                           f"(pip install 'ironlaw[torch]'), which is not available") from None
