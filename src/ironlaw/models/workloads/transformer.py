"""Analytic transformers without torch: decoders (Llama/Mistral/Qwen2/Qwen3 with GQA, the MoE families
Mixtral, Qwen2-MoE, Qwen3-MoE, DeepSeek-V3 with MLA, gpt-oss, Llama 4, Gemma 2/3, GPT-NeoX, OLMo, OLMo-2, GPT-2) and
encoders (BERT), built
from a Hugging Face config (``hfconfig.Arch``, read by ``families``).

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
- the attention sublayer (GQA or MLA, global / sliding-window / chunked layers) is built in ``attention``;
  layers that differ keep one op per kind with its own count: ``attention`` (global) beside
  ``attention.window`` / ``attention.chunk``; a dense MLP beside MoE layers is ``mlp_*.dense``; the
  always-on shared expert is ``mlp_*.shared`` (module "shared_experts", ``attrs["expert"] = "shared"``);
  the routed experts keep Mixtral's names and module "experts" (``attrs["expert"] = "routed"``), one grouped
  GEMM whose weights are the experts the tokens touch, so its M (FLOPs / 2·weights) is the tokens·k/E rows
  each expert runs; ``moe_permute`` gathers the routed rows before them, ``moe_combine`` sums them back. The part
  of a name before the first dot is the op whose tensor-parallel rule applies.
Footprint: weights (all experts; DeepSeek's MTP modules are not loaded), kv_cache (prefill/decode: per
layer, s tokens of 2·kv_heads·head_dim (MLA: kv_lora + rope) elements, local layers their span only),
activations (inference: the live working set of one layer or of the LM head, whichever is larger;
training: what autograd saves for the backward without recomputation) and the training classes.
"""
from __future__ import annotations

import copy
import json
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from ...core import flopcount
from ...core.errors import IronlawError
from ...core.graph import DTYPE_BYTES, MATRIX_KINDS, Graph, Num, Op, dtype_bytes
from ...core.weightonly import store_weights, weight_dtype
from .registry import Request, builtin, check_phase, prefix
from . import families, hfconfig
from .attention import ROPE_FLOPS, SUBLAYERS, kv_cache_bytes, sublayer, working_elems
from .common import backward, elementwise, linear, optimizer_step, training_footprint
from .hfconfig import Arch

CONFIG_DIR = Path(__file__).parent / "configs"
DECODER_PHASES = ("prefill", "decode", "infer", "train")
ENCODER_PHASES = ("infer", "train")
DEFAULT_SEQ = {"decoder": 1024, "encoder": 512}

DROPOUT_FLOPS = 3.0                                         # uniform draw, compare with p, scale by 1/(1−p)
MASK_BYTES = 1.0                                            # the keep mask saved for the backward (bool)
ACT_FLOPS = {"silu": flopcount.SILU, "gelu_new": flopcount.GELU_TANH, "gelu": flopcount.GELU_ERF,
             # gpt-oss: clamp gate (1) and up (2), gate·α, sigmoid, ·gate, up + 1 (the product is the GLU's)
             "swiglu_oai": 6.0 + flopcount.SIGMOID}
BUILTIN_NAMES = {"gpt2": "GPT-2 124M (learned positions, tied embeddings, GELU-tanh)",
                 "bert-base": "BERT-base uncased encoder with pooler (110M)",
                 "bert-large": "BERT-large uncased encoder with pooler (335M)",
                 "llama2-70b": "Llama-2-70B (GQA 64/8 heads, RoPE, SwiGLU, 4K context; MLPerf's LoRA base)",
                 "llama3-8b": "Llama-3-8B (GQA 32/8 heads, RoPE, SwiGLU)",
                 "llama3-70b": "Llama-3-70B (GQA 64/8 heads, RoPE, SwiGLU)",
                 "mixtral-8x7b": "Mixtral-8x7B (8 SwiGLU experts, top-2; 46.7B total, 12.9B active)",
                 "llama3.1-8b": "Llama-3.1-8B (GQA 32/8 heads, RoPE, SwiGLU, 128K context)",
                 "llama3.1-70b": "Llama-3.1-70B (GQA 64/8 heads, RoPE, SwiGLU, 128K context)",
                 "llama3.3-70b": "Llama-3.3-70B-Instruct (the Llama-3.1-70B shape)",
                 "llama3.1-405b": "Llama-3.1-405B (GQA 128/8 heads, 126 layers)",
                 "qwen3-8b": "Qwen3-8B (GQA 32/8 heads x 128, qk-norm)",
                 "qwen3-32b": "Qwen3-32B (GQA 64/8 heads x 128, qk-norm)",
                 "qwen3-30b-a3b": "Qwen3-30B-A3B (128 experts, top-8; qk-norm)",
                 "qwen3-235b-a22b": "Qwen3-235B-A22B (128 experts, top-8; qk-norm)",
                 "deepseek-v3": "DeepSeek-V3 (MLA, 3 dense + 58 MoE layers: 256 routed top-8 + 1 shared; MTP apart; "
                                "FP8 checkpoint: inference defaults to fp8)",
                 "deepseek-r1": "DeepSeek-R1 (the DeepSeek-V3 architecture, FP8 checkpoint)",
                 "gpt-oss-20b": "gpt-oss-20b (32 experts top-4, sliding window 128 / global alternating, sinks)",
                 "gpt-oss-120b": "gpt-oss-120b (128 experts top-4, sliding window 128 / global alternating, sinks)",
                 "llama4-scout": "Llama-4-Scout-17B-16E text model (16 experts top-1 + shared, chunked attention)",
                 "llama4-maverick": "Llama-4-Maverick-17B-128E text model (128 experts top-1 + shared on every "
                                    "other layer, chunked attention)",
                 "gemma3-27b": "Gemma-3-27B text model (5 sliding-window 1024 : 1 global, qk-norm, tied)"}
ALIASES = {"deepseek-r1": "deepseek-v3"}              # the same architecture and config values


# ---------------------------------------------------------------------- shape of one phase
class _Shape:
    """Token counts of a phase; every field may be a numpy array over configurations."""

    def __init__(self, a: Arch, phase: str, b: Num, s: Num):
        self.phase, self.b, self.s = phase, b, s
        self.tokens = b if phase == "decode" else b * s             # decode: one query per sequence
        self.head_tokens = b if phase in ("prefill", "decode") or a.encoder else self.tokens


# ---------------------------------------------------------------------- ops
def _kernel(op: Op, kernel: str | None) -> Op:
    if kernel:
        op.attrs["kernel"] = kernel
    return op


def _norm(name: str, a: Arch, tokens: Num, dt: str, count: int) -> Op:
    per = flopcount.RMSNORM if a.norm == "rms" else flopcount.LAYERNORM
    return _kernel(elementwise(name, tokens * a.hidden, dt, per, count=count, kind="norm",
                               weight_bytes=a.norm_params * dtype_bytes(dt), role="norm"),
                   "rms_norm" if a.norm == "rms" else None)


def _dropout(name: str, elems: Num, dt: str, count: int, module: str = "") -> Op:
    op = elementwise(name, elems, dt, DROPOUT_FLOPS, count=count, module=module, role="dropout")
    op.bytes["activations"] = op.bytes["activations"] + MASK_BYTES * elems
    op.bytes_written = op.bytes_written + MASK_BYTES * elems
    return op


def _train_dropout(a: Arch, sh: "_Shape") -> bool:
    return sh.phase == "train" and a.dropout > 0


def _add(name: str, elems: Num, dt: str, count: int) -> Op:
    return _kernel(elementwise(name, elems, dt, 1.0, inputs=2, count=count, role="residual"), "add")


def _act(a: Arch, elems: Num, dt: str, count: int, module: str) -> Op:
    act = ACT_FLOPS[a.act] + (1.0 if a.glu else 0.0)
    op = elementwise("mlp_act", elems, dt, act, inputs=2 if a.glu else 1, count=count, module=module,
                     role="activation")
    return _kernel(op, "silu_and_mul" if a.glu and a.act == "silu" else None)


def _embedding(a: Arch, sh: _Shape, dt: str) -> Op:
    tables = 1 + (a.positions == "learned") + (a.type_vocab > 0)
    by = dtype_bytes(dt)
    rows = sh.tokens * a.hidden
    op = Op("embedding", "embedding", flops=(tables - 1) * rows,
            bytes={"weights": tables * rows * by, "activations": rows * by}, dtype=dt,
            module="embeddings", shapes=f"{tables} table(s) x [{a.vocab},{a.hidden}]", bytes_written=rows * by,
            attrs={"role": "embedding"})
    return _kernel(op, "embedding" if tables == 1 else None)          # one lookup; more tables add adds


def _mlp_ops(a: Arch, t: Num, inter: int, dt: str, count: int, variant: str = "", module: str = "mlp") -> list[Op]:
    """A (gated) MLP of ``inter`` over ``t`` tokens in ``count`` layers; ``variant`` suffixes the op names."""
    up_n = 2 * inter if a.glu else inter
    ops = [linear("mlp_up_proj" + variant, t, a.hidden, up_n, dt, count, a.mlp_bias, module, role="column"),
           _act(a, t * inter, dt, count, module), linear("mlp_down_proj" + variant, t, inter, a.hidden, dt, count,
                                                          a.mlp_bias, module, role="row")]
    ops[1].name += variant
    return ops


def _permute(t: Num, k: int, h: int, dt: str, L: int) -> Op:
    """The gather of every token's hidden state into its k experts' rows (expert order) before the grouped
    GEMMs: reads t·k rows of ``h`` (each token's row once per chosen expert) and writes the t·k-row copy; no
    arithmetic. The way back, the unpermute and the probability-weighted sum, is ``moe_combine``."""
    rows = t * k * h
    op = elementwise("moe_permute", rows, dt, 0.0, count=L, module="experts", role="permute")
    op.attrs["expert"] = "routed"
    return op


def _moe(a: Arch, sh: _Shape, dt: str, L: int) -> list[Op]:
    """Router, the permute of the routed tokens, the routed experts (module "experts", as Mixtral's), the shared
    expert, the unpermute and weighted combine."""
    t, h, i = sh.tokens, a.hidden, a.expert_inter
    up_n = 2 * i if a.glu else i
    by, k, e = dtype_bytes(dt), a.top_k, a.experts
    routed = t * k                                                  # token-expert assignments
    touched = e * (1.0 - (1.0 - k / e) ** t)                        # distinct experts hit (uniform routing)
    up, act, down = _mlp_ops(a, routed, i, dt, L, module="experts")
    up.bytes["weights"] = touched * (h * up_n + (up_n if a.mlp_bias else 0)) * by
    down.bytes["weights"] = touched * (i * h + (h if a.mlp_bias else 0)) * by
    up.shapes = down.shapes = f"{k} of {e} experts per token"
    for op in (up, act, down):
        op.attrs["expert"] = "routed"
    if a.mlp_bias:
        down.attrs["bias"] = True                                   # fc2's bias (``models.grouped_mlp``)
    if a.act == "swiglu_oai":
        up.attrs["clamp"] = True                                    # the clamped GLU's input (``models.grouped_mlp``)
    shared = _mlp_ops(a, t, a.shared_inter, dt, L, ".shared", "shared_experts") if a.shared_inter else []
    shared += _shared_gate(a, t, dt, L) if a.shared_inter and a.shared_gate else []
    for op in shared:
        op.attrs["expert"] = "shared"
    return [linear("moe_router", t, h, e, dt, L, a.router_bias, module="router", role="router"),
            elementwise("moe_topk", t * e, dt, flopcount.SOFTMAX + 1.0, count=L, kind="softmax", module="router",
                        role="router"),
            _permute(t, k, h, dt, L), up, act, down, *shared, _combine(t, k, h, dt, L)]


def _combine(t: Num, k: int, h: int, dt: str, L: int) -> Op:
    """The unpermute and probability-weighted sum of each token's k expert rows, stating the tokens the layer takes
    in (``attrs["tokens"]``: a routed-rows class with a cost per token pays it here, ``efficiency.token_setup_s``)."""
    op = elementwise("moe_combine", t * h, dt, 2.0 * k, inputs=k, count=L, module="experts", role="combine")
    op.attrs["tokens"] = t
    return op


def _shared_gate(a: Arch, t: Num, dt: str, L: int) -> list[Op]:
    """Qwen2-MoE's gate on the shared expert (transformers Qwen2MoeSparseMoeBlock: ``sigmoid(shared_expert_gate(x))
    * shared_expert_output``): a [hidden, 1] linear, a sigmoid per token and a product per element of the output."""
    h = a.hidden
    return [linear("moe_shared_gate", t, h, 1, dt, L, False, "shared_experts", role="router"),
            elementwise("moe_shared_gate.scale", t * h, dt, 1.0 + flopcount.SIGMOID / h, inputs=2, count=L,
                        module="shared_experts", role="combine")]


def _mlp(a: Arch, sh: _Shape, dt: str) -> list[Op]:
    """Every layer's MLP: dense layers (``.dense`` beside MoE layers) and MoE layers."""
    moe = a.moe_layers
    dense = a.layers - moe
    ops = _mlp_ops(a, sh.tokens, a.inter, dt, dense, ".dense" if moe else "") if dense else []
    return ops + (_moe(a, sh, dt, moe) if moe else [])


def _layer(a: Arch, sh: _Shape, dt: str) -> list[Op]:
    t, h, L = sh.tokens, a.hidden, a.layers
    drop = _train_dropout(a, sh)
    attn = SUBLAYERS[sublayer(a)](a, sh, dt)
    attn += [_dropout("attn_dropout", t * h, dt, L, "attn")] if drop else []
    mlp = _mlp(a, sh, dt) + ([_dropout("mlp_dropout", t * h, dt, L, "mlp")] if drop else [])
    if a.post_norm:
        return attn + [_add("attn_residual_add", t * h, dt, L), _norm("attn_layernorm", a, t, dt, L)] + mlp + \
            [_add("mlp_residual_add", t * h, dt, L), _norm("mlp_layernorm", a, t, dt, L)]
    if a.output_norm:                                                # OLMo-2: each output normed, no input norm
        return attn + [_norm("attn_layernorm", a, t, dt, L), _add("attn_residual_add", t * h, dt, L)] + mlp + \
            [_norm("mlp_layernorm", a, t, dt, L), _add("mlp_residual_add", t * h, dt, L)]
    if a.shared_norm:                                                # Phi: one norm feeds both branches
        return [_norm("input_layernorm", a, t, dt, L)] + attn + mlp + [_add("attn_residual_add", t * h, dt, L),
                                                                      _add("mlp_residual_add", t * h, dt, L)]
    if a.parallel_residual:                                          # GPT-NeoX: both norms read the layer's input
        return [_norm("input_layernorm", a, t, dt, L)] + attn + [_norm("post_attention_layernorm", a, t, dt, L)] + \
            mlp + [_add("attn_residual_add", t * h, dt, L), _add("mlp_residual_add", t * h, dt, L)]
    if a.sandwich_norm:                                              # Gemma 3: norm each sublayer's output too
        attn.append(_norm("attn_layernorm", a, t, dt, L))
        mlp.append(_norm("mlp_layernorm", a, t, dt, L))
    return [_norm("input_layernorm", a, t, dt, L)] + attn + [_add("attn_residual_add", t * h, dt, L),
                                                             _norm("post_attention_layernorm", a, t, dt, L)] + \
        mlp + [_add("mlp_residual_add", t * h, dt, L)]


def forward_ops(a: Arch, sh: _Shape, dt: str) -> list[Op]:
    ops = [_embedding(a, sh, dt)]
    if a.embed_scale:                            # Gemma: the embedding times sqrt(hidden)
        ops.append(elementwise("embedding_scale", sh.tokens * a.hidden, dt, 1.0, module="embeddings",
                               role="replicated"))
    if _train_dropout(a, sh):
        ops.append(_dropout("embedding_dropout", sh.tokens * a.hidden, dt, 1, "embeddings"))
    if a.post_norm:
        ops.append(_norm("embedding_layernorm", a, sh.tokens, dt, 1))
    for o in ops:                                # the embedding's: on the first pipeline stage
        o.attrs["stage"] = "first"
    layer = _layer(a, sh, dt)
    for o in layer:                              # repeated per layer (count = the layers it runs in)
        o.attrs["per_layer"] = True
    ops += layer
    if a.pooler:
        ops += [linear("pooler_dense", sh.head_tokens, a.hidden, a.hidden, dt, 1, True, "pooler", role="pooler"),
                elementwise("pooler_tanh", sh.head_tokens * a.hidden, dt, flopcount.TRANSCENDENTAL, module="pooler",
                            role="pooler")]
    if not a.encoder:
        ops += [_norm("final_norm", a, sh.tokens, dt, 1),
                linear("lm_head", sh.head_tokens, a.hidden, a.vocab, dt, 1, a.head_bias, module="lm_head",
                       role="head")]
    if sh.phase == "train" and not a.encoder:
        by, n = dtype_bytes(dt), sh.tokens * a.vocab
        ops.append(Op("cross_entropy", "softmax", flops=n * (flopcount.SOFTMAX + 1.0),
                      bytes={"activations": n * by + 4.0 * sh.tokens}, dtype=dt, module="loss",
                      shapes=f"[…,{a.vocab}]", bytes_written=4.0 * sh.tokens, attrs={"role": "loss"}))
    return ops


# ---------------------------------------------------------------------- memory
def mlp_elems(a: Arch, saved: bool = False) -> int:
    """Elements per token an MLP holds at once (the larger of a dense and an MoE layer's); ``saved``: those it
    keeps for the backward. An MoE layer holds the routed tokens twice at once (the experts' input and output
    copies) but keeps one: the grouped fc1's input. Its output is combined without the routing weights, which
    the experts' activation applies (Megatron-Core core_v0.15.0 token_dispatcher.py
    MoEAlltoAllTokenDispatcher.token_unpermutation calls unpermute without probs; experts.py
    weighted_bias_swiglu_impl), so the fused unpermute keeps only its row map. A clamped GLU (gpt-oss) keeps fc1's
    output for the clamps' backward and the clamped copy for the fused activation's (``models.grouped_mlp``)."""
    h = a.hidden

    def gated(i: int, m: int) -> int:                                # up output and act output of m MLPs
        return m * ((2 * i if a.glu else i) + i)
    routed = (1 if saved else 2) * a.top_k * h                       # permuted in (and out) copies
    clamp = 2 * a.expert_inter * a.top_k if saved and a.act == "swiglu_oai" else 0   # the clamped copy
    dense = h + gated(a.inter, 1) if a.layers > a.moe_layers else 0
    moe = h + gated(a.expert_inter, a.top_k) + gated(a.shared_inter, 1) + a.experts + routed + clamp \
        if a.moe_layers else 0                                       # router logits
    return max(dense, moe)


def _layer_elems_per_token(a: Arch) -> tuple[float, float]:
    """(live working set, saved for backward) elements per token in one layer."""
    h = a.hidden
    attn, mlp = working_elems(a), mlp_elems(a)                      # normed x, projections, O; MLP
    live = h + max(attn, mlp)                                        # + the residual stream
    saved = 2 * h + attn + mlp_elems(a, saved=True)                 # norm inputs, projection and act inputs
    return live, saved


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
            "active_params": active, "active_compute_params": a.active_compute_params(),
            "model_flops": fwd_flops * (3.0 if phase == "train" else 1.0),
            "arch": a.model_type, "layers": a.layers, "hidden": a.hidden, "heads": a.heads,
            "kv_heads": a.kv_heads, "head_dim": a.head_dim, "vocab": a.vocab,
            "attention_pairs": "full" if a.encoder else "causal",
            "attention_dropout": a.attn_dropout if phase == "train" else 0.0, "frontend": "transformers",
            "context_tokens": a.context or a.max_pos}
    if a.experts:
        meta.update(experts=a.experts, experts_per_token=a.top_k, moe_layers=a.moe_layers,
                    shared_expert=bool(a.shared_inter), expert_bias=a.mlp_bias,
                    expert_clamp=a.act == "swiglu_oai")
    meta.update(_attention_meta(a))
    if a.rope_mscale != 1.0:
        meta["rope_mscale"] = a.rope_mscale                         # YaRN's factor (``models.rope_unfused``)
    if a.mtp_layers:
        meta.update(mtp_layers=a.mtp_layers, mtp_params=a.mtp_params())
    if a.expert_dtype:
        meta["checkpoint_expert_dtype"] = a.expert_dtype
        meta["routed_expert_weights"] = a.experts * a.moe_layers * (2 + a.glu) * a.hidden * a.expert_inter
    if phase in ("prefill", "decode"):
        meta["kv_cache_bytes"] = kv_cache_bytes(a, b, s, dt)
    if a.max_pos and a.positions == "rope" and np.any(np.asarray(s) > a.max_pos):
        meta["note"] = f"seq beyond max_position_embeddings ({a.max_pos}): RoPE extrapolation, cost only"
    g = Graph(name, phase, dt, ops, footprint=_footprint(a, sh, dt, params), meta=meta, uncounted_ops=uncounted)
    g.meta["weight_bytes"] = params * by
    return g


def _attention_meta(a: Arch) -> dict:
    """What serving and parallel plans read about the cache: its layout and the layers per span."""
    spans = {("global" if w is None else f"{a.local} {w}"): n for w, n in a.span_groups().items()}
    return {"attention": sublayer(a), "layer_spans": spans, "kv_elems_per_token_layer": a.kv_elems_per_token(),
            "kv_shared_by_heads": bool(a.mla),
            "kv_proj_params": 0 if a.mla else a.layers * (a.hidden + a.qkv_bias) * 2 * a.kv_dim,
            **({"mla": asdict(a.mla)} if a.mla else {})}      # MLA's dims (a module class prices)


# ---------------------------------------------------------------------- registries
def _builtin_config(name: str) -> tuple[dict, str]:
    path = CONFIG_DIR / f"{ALIASES.get(name, name)}.json"
    return json.loads(path.read_text(encoding="utf-8")), f"built-in config {path.name}"


def builtin_arch(name: str) -> Arch:
    cfg, where = _builtin_config(name)
    return families.parse(cfg, where, name)


def checkpoint_request(req: Request, cfg: dict, where: str) -> Request:
    """Inference with no --dtype runs in the checkpoint's own format (its ``quantization_config``: DeepSeek-V3/R1
    ship block-scaled FP8); training and an explicit --dtype are left as they are."""
    if req.dtype is not None or req.phase == "train":
        return req
    dtype = hfconfig.checkpoint_dtype(cfg, where)
    return replace(req, dtype=dtype) if dtype else req


def in_checkpoint_format(req: Request, cfg: dict, where: str, build_graph) -> Graph:
    """``build_graph(req)`` for the request in the checkpoint's format (``checkpoint_request``); a graph whose
    dtype came from the checkpoint says so (``meta["dtype_source"]``, named when a device lacks that dtype); one run in
    fp8 on a block-scaled FP8 checkpoint names that format (``meta["weight_format"]``: ``hfconfig.weight_format``)."""
    asked = checkpoint_request(req, cfg, where)
    g = build_graph(asked)
    if asked.dtype != req.dtype:
        g.meta["dtype_source"] = f"{_checkpoint(g.name, where)}: quantization_config)"
    fmt = hfconfig.weight_format(cfg)
    if fmt and g.dtype == "fp8":
        g.meta["weight_format"] = fmt
    experts = hfconfig.expert_format(cfg)
    if experts and req.dtype is not None:
        g.meta.update(expert_weight_dtype=weight_dtype_of_experts(g),
                      expert_weight_source=f"--dtype {req.dtype}; the checkpoint stores them in {experts}")
    elif experts and g.phase != "train":
        g = with_checkpoint_experts(g, experts, f"{_checkpoint(g.name, where)}: quantization_config "
                                                f"quant_method {experts})")
    return g


def _checkpoint(name: str, where: str) -> str:
    """'gpt-oss-20b's checkpoint (built-in config gpt-oss-20b.json', or for a config file given by its path
    ('hf:PATH', whose name is that path) 'the checkpoint (PATH', the path said once."""
    return f"the checkpoint ({where}" if where in name else f"{name}'s checkpoint ({where}"


def weight_dtype_of_experts(g: Graph) -> str:
    """The dtype the routed experts' weights are stored in (the graph's unless a format says otherwise)."""
    return next((weight_dtype(op) for op in g.ops if op.attrs.get("expert") == "routed" and op.kind in MATRIX_KINDS),
                g.dtype)


def with_checkpoint_experts(g: Graph, fmt: str, source: str) -> Graph:
    """``g`` with its routed experts' weights stored in the checkpoint's ``fmt`` (gpt-oss: MXFP4, 4 bits and one
    8-bit scale per 32 values, 4.25 bits a weight) and their GEMMs computed in ``g.dtype`` after dequantizing them
    (weight-only, ``core.weightonly``); a format no wider than ``g.dtype`` is left as it is."""
    if DTYPE_BYTES[fmt] >= dtype_bytes(g.dtype):
        return g
    ops = []
    for op in g.ops:
        if op.attrs.get("expert") == "routed" and op.kind in MATRIX_KINDS and "weights" in op.bytes:
            op = copy.copy(op)
            op.bytes, op.attrs = dict(op.bytes), dict(op.attrs)
            store_weights(op, fmt, 0.0, dequantize=True)
        ops.append(op)
    saved = g.meta["routed_expert_weights"] * (dtype_bytes(g.dtype) - DTYPE_BYTES[fmt])   # all experts, stored
    fp = dict(g.footprint)
    fp["weights"] = fp["weights"] - saved
    meta = {**g.meta, "weight_bytes": g.meta["weight_bytes"] - saved, "expert_weight_dtype": fmt,
            "expert_weight_source": source, "expert_math_dtype": g.dtype}
    return Graph(g.name, g.phase, g.dtype, ops, footprint=fp, meta=meta, uncounted_ops=dict(g.uncounted_ops))


def _register(name: str, description: str) -> None:
    encoder = name.startswith("bert")

    @builtin(name, description, ENCODER_PHASES if encoder else DECODER_PHASES, "encoder" if encoder else "llm")
    def _build(req: Request) -> Graph:
        cfg, where = _builtin_config(name)
        return in_checkpoint_format(req, cfg, where, lambda r: build(families.parse(cfg, where, name), r, name))


for _n, _d in BUILTIN_NAMES.items():
    _register(_n, _d)


@prefix("hf", "hf:path/to/config.json — a Hugging Face config (llama, mistral, qwen2, phi, phi3, mixtral, "
              "qwen2_vl, qwen2_5_vl (their language models), qwen3, qwen2_moe, qwen3_moe, deepseek_v2, "
              "deepseek_v3, gpt_oss, llama4, gemma, gemma2, gemma3, gpt_neox, olmo, olmo2, gpt2, bert analytic; others "
              "captured with torch); "
              "an FP8 checkpoint's quantization_config sets the default --dtype for inference")
def hf(arg: str, req: Request) -> Graph:
    path = arg.strip()
    if not path:
        raise IronlawError("hf: needs a path to a Hugging Face config.json, e.g. hf:models/llama/config.json")
    cfg = hfconfig.load_json(path)
    file = Path(path).expanduser()
    file = file / "config.json" if file.is_dir() else file
    return in_checkpoint_format(req, cfg, str(file), lambda r: _hf_graph(path, cfg, file, r))


def check_hf_serves(path: str, command: str) -> None:
    """Serving prices a KV cache laid out by an analytic family (``families``); a config no family reads is built
    by graph capture, whose graph states no cache layout: refused here by name, before a capture of seconds."""
    cfg = hfconfig.load_json(path.strip())
    mt = hfconfig.model_type(cfg)
    if not mt or mt in families.FAMILIES:
        return
    raise IronlawError(f"{command}: hf:{path.strip()} is a '{mt}' config, which ironlaw captures with torch rather "
                       f"than building it from its fields (those it builds: {', '.join(families.FAMILIES)}); "
                       f"serving needs the KV-cache layout a built model states: `ironlaw analyze hf:{path.strip()} "
                       f"--phase decode` prices one step")


def _hf_graph(path: str, cfg: dict, file: Path, req: Request) -> Graph:
    if req.options.get("capture"):
        return _capture(path, req, "capture requested")
    try:
        arch = families.parse(cfg, str(file), file.stem if file.stem != "config" else None)
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
