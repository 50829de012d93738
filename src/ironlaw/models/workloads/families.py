"""One reader per Hugging Face ``model_type``: config fields -> ``Arch`` (the registry ``FAMILIES``).

    llama, mistral, qwen2,  decoder, RMSNorm, RoPE, SwiGLU MLP, grouped-query attention (Phi-3's fused qkv_proj and
    phi3                    gate_up_proj hold the same weights)
    mixtral                 the same with a top-k mixture of SwiGLU experts and a router
    qwen3                   Llama-like, RMSNorm on each head's q and k (qk-norm), head_dim apart from hidden/heads
    qwen3_moe               qwen3 with top-k routed experts of ``moe_intermediate_size``, no shared expert
    deepseek_v3             multi-head latent attention, leading dense layers, routed + shared experts,
                            multi-token-prediction modules (``num_nextn_predict_layers``)
    deepseek_v2             the same layout (DeepSeek-V2, V2-Lite, V2.5): softmax router without the score-correction
                            bias, queries projected straight from the hidden state where ``q_lora_rank`` is null
    gpt_oss                 alternating sliding-window / global attention, attention sinks, biases everywhere,
                            top-k experts with a clamped SwiGLU
    llama4                  text model: chunked local attention with a NoPE global layer every 4th, routed top-1
                            + shared expert, MoE every ``interleave_moe_layer_step`` layers, dense layers between
    gemma3                  text model: 5 sliding-window layers to 1 global, qk-norm, four norms per layer,
                            GeGLU, tied embeddings, the embedding times sqrt(hidden) as Gemma 1's
    gemma                   Gemma 1 (Gemma-2B, 7B): the llama layout with head_dim 256 apart from hidden/heads, GeGLU
                            (tanh GELU; a legacy ``hidden_act`` "gelu" means it, as transformers reads it), the
                            embedding's output times sqrt(hidden), tied head, RMSNorm scaled by (1 + w) (the same
                            hidden gains per norm)
    gemma2                  sliding-window and global layers alternating (the first slides), four norms per layer,
                            GeGLU, tied embeddings, the embedding times sqrt(hidden); its attention and final logit soft-capping (a tanh per
                            score and per logit) are not counted
    qwen2_moe               qwen2 attention (q, k, v biases), top-k routed experts of ``moe_intermediate_size`` and
                            a shared expert of ``shared_expert_intermediate_size`` whose output a sigmoid gate scales
                            (``shared_expert_gate``, a [hidden, 1] linear; Qwen1.5-MoE, Qwen2-57B-A14B)
    gpt_neox                LayerNorm, fused QKV and every linear with bias, GELU MLP, untied head; rotary on
                            ``rotary_pct`` of each head's dims (Pythia, GPT-NeoX-20B: 0.25) and, with
                            ``use_parallel_residual``, attention and MLP both on the layer's input:
                            x + attn(ln1(x)) + mlp(ln2(x)) (the same ops, the second norm reads x)
    olmo                    the llama layout with LayerNorm that has no gain and no bias (OLMo-7B, OLMo-1B);
                            ``clip_qkv`` clamps q, k and v
    olmo2                   llama-like, RMSNorm on each sublayer's output before the residual add (no input norm)
                            and one RMSNorm over all heads' q and one over all k (OLMo-2)
    phi                     Phi-1/1.5/2: attention and MLP in parallel on one LayerNorm, x + attn(ln(x)) + mlp(ln(x));
                            rotary on ``partial_rotary_factor`` of each head (Phi-2: 0.4, 32 of 80 dims), biases on
                            every linear, GELU MLP (not gated), untied head with a bias
    gpt2                    decoder, LayerNorm, learned positions, fused QKV with bias, GELU-tanh MLP
    bert                    encoder (post-norm), learned positions and token types, GELU MLP, pooler
Multimodal configs (llama4, gemma3) nest the text model under ``text_config``; Qwen2-VL and Qwen2.5-VL
(qwen2_vl, qwen2_5_vl: the qwen2 layout) keep it at the top level or, as transformers 5 writes them, under
``text_config``. Their vision towers are not modelled.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from ...core.errors import IronlawError
from .hfconfig import MLA, Arch, Unsupported, context_tokens, exact_div, Fields, model_type, yarn_concentration

FAMILIES: dict[str, Callable[[Fields, str, str], Arch]] = {}
NESTED = ("llama4", "gemma3")                   # multimodal wrappers: the text model is under text_config
QWEN_VL = ("qwen2_vl", "qwen2_5_vl")            # the text model at the top level, or under text_config
ACTS = {"silu": "silu", "swish": "silu", "gelu_pytorch_tanh": "gelu_new", "gelu_new": "gelu_new", "gelu": "gelu",
        "gelu_fast": "gelu_new"}            # gelu_fast: the tanh approximation (transformers' FastGELUActivation)
WINDOW, GLOBAL = "sliding_attention", "full_attention"
TOPK_METHOD = {"deepseek_v3": "noaux_tc", "deepseek_v2": "greedy"}   # transformers' config defaults
# fields the published Gemma 2 configs leave at transformers' Gemma2Config defaults
GEMMA_DEFAULTS = {"tie_word_embeddings": True, "head_dim": 256}        # transformers' GemmaConfig defaults
GEMMA2_DEFAULTS = {"tie_word_embeddings": True, "hidden_activation": "gelu_pytorch_tanh", "sliding_window": 4096}
# fields the published Gemma 3 configs leave at transformers' Gemma3TextConfig defaults
GEMMA3_DEFAULTS = {"vocab_size": 262_208, "sliding_window_pattern": 6, "hidden_activation": "gelu_pytorch_tanh",
                   "tie_word_embeddings": True, "max_position_embeddings": 131_072, "sliding_window": 4096}


def family(*model_types: str):
    def deco(fn):
        for t in model_types:
            FAMILIES[t] = fn
        return fn
    return deco


def text_config(cfg: dict, mt: str, where: str) -> dict:
    """The dict that holds the language model's fields (``text_config`` of a multimodal wrapper)."""
    if mt in QWEN_VL:
        return cfg["text_config"] if isinstance(cfg.get("text_config"), dict) else cfg
    if mt not in NESTED:
        return cfg
    tc = cfg.get("text_config")
    if not isinstance(tc, dict):
        raise IronlawError(f"{where}: a {mt} config keeps its text model under 'text_config', which is "
                           f"{'missing' if tc is None else 'not an object'}")
    return tc


# ---------------------------------------------------------------------- shared pieces
def _attention(f: Fields) -> dict:
    h, heads = f.int("hidden_size"), f.int("num_attention_heads")
    kv = f.int("num_key_value_heads", heads)
    hd = f.int("head_dim", None) or exact_div(h, heads, f.where, "hidden_size", "num_attention_heads")
    if heads % kv:
        raise IronlawError(f"{f.where}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv}")
    return dict(hidden=h, heads=heads, kv_heads=kv, head_dim=hd)


def _decoder(f: Fields, mt: str, name: str, acts=("silu", "swish"), act_key: str = "hidden_act") -> dict:
    """The fields every RoPE/RMSNorm/gated-MLP decoder shares."""
    act = f.str(act_key, acts[0])
    if act not in acts:
        raise Unsupported(f"{mt} with {act_key}={act}")
    bias = f.bool("attention_bias", False)
    return dict(name=name, model_type=mt, encoder=False, **_attention(f), layers=f.int("num_hidden_layers"),
                inter=f.int("intermediate_size"), vocab=f.int("vocab_size"),
                max_pos=f.int("max_position_embeddings", None), positions="rope", norm="rms", act=ACTS[act],
                glu=True, tied=f.bool("tie_word_embeddings", False), qkv_bias=bias, o_bias=bias, mlp_bias=False,
                context=context_tokens(f.cfg, f.int("max_position_embeddings", None)),
                rope_mscale=yarn_concentration(f.cfg))


def _routed(f: Fields, experts_key: str, top_k_keys=("num_experts_per_tok",)) -> dict:
    """Routed experts and top-k. Qwen's ``num_experts`` is ``num_local_experts`` in a config that transformers 5
    saved (Qwen3MoeConfig's attribute_map), so either is read."""
    if experts_key == "num_experts" and f.cfg.get("num_experts") is None and f.cfg.get("num_local_experts"):
        experts_key = "num_local_experts"
    experts = f.int(experts_key)
    top_k = next((f.int(k) for k in top_k_keys if f.cfg.get(k) is not None), None)
    if top_k is None:
        top_k = f.int(top_k_keys[0])                 # raises: missing field
    if top_k > experts:
        raise IronlawError(f"{f.where}: {top_k_keys[0]} {top_k} exceeds {experts_key} {experts}")
    return dict(experts=experts, top_k=top_k)


def _spans(f: Fields, layers: int, window: int, default_global) -> tuple:
    """Per-layer span from ``layer_types`` (sliding_attention | full_attention), else ``default_global(i)``."""
    types = f.list("layer_types", layers, (WINDOW, GLOBAL))
    glob = [t == GLOBAL for t in types] if types else [default_global(i) for i in range(layers)]
    return tuple(None if g else window for g in glob)


# ---------------------------------------------------------------------- the families
@family("llama", "mistral", "qwen2", "mixtral", "phi3", *QWEN_VL)
def _llama(f: Fields, mt: str, name: str) -> Arch:
    d = _decoder(f, mt, name)
    qwen = mt in ("qwen2", *QWEN_VL)
    d.update(qkv_bias=d["qkv_bias"] or qwen, mlp_bias=f.bool("mlp_bias", False),
             sliding_window=f.int("sliding_window", None) if f.bool("use_sliding_window", not qwen) else None)
    if mt == "mixtral":
        d.update(_routed(f, "num_local_experts"))
    return Arch(**d)


def _qwen3_fields(f: Fields, mt: str, name: str) -> dict:
    d = _decoder(f, mt, name)
    if f.bool("use_sliding_window", False):          # the layers from max_window_layers on slide
        first = f.count("max_window_layers", d["layers"])
        d["spans"] = _spans(f, d["layers"], f.int("sliding_window"), lambda i: i < first)
    return {**d, "qk_norm": "rms"}


def _moe_mask(f: Fields, layers: int) -> tuple:
    """Qwen's MoE layers: every ``decoder_sparse_step``-th but those in ``mlp_only_layers``."""
    dense = f.indices("mlp_only_layers", layers) or set()
    step = f.int("decoder_sparse_step", 1)
    return tuple(i not in dense and (i + 1) % step == 0 for i in range(layers))


@family("qwen3")
def _qwen3(f: Fields, mt: str, name: str) -> Arch:
    return Arch(**_qwen3_fields(f, mt, name))


@family("qwen3_moe")
def _qwen3_moe(f: Fields, mt: str, name: str) -> Arch:
    d = _qwen3_fields(f, mt, name)
    return Arch(**d, **_routed(f, "num_experts"), moe_inter=f.int("moe_intermediate_size"),
                moe_mask=_moe_mask(f, d["layers"]))


@family("qwen2_moe")
def _qwen2_moe(f: Fields, mt: str, name: str) -> Arch:
    d = _decoder(f, mt, name)
    d.update(qkv_bias=f.bool("qkv_bias", True), o_bias=False)        # Qwen2MoeConfig's default; o_proj has none
    if f.bool("use_sliding_window", False):      # transformers' Qwen2MoeConfig: odd-numbered layers below
        last = f.count("max_window_layers", d["layers"])               # max_window_layers slide
        d["spans"] = _spans(f, d["layers"], f.int("sliding_window"), lambda i: not ((i + 1) % 2 and i < last))
    shared = f.count("shared_expert_intermediate_size", 0)
    return Arch(**d, **_routed(f, "num_experts"), moe_inter=f.int("moe_intermediate_size"), shared_inter=shared,
                shared_gate=shared > 0, moe_mask=_moe_mask(f, d["layers"]))


@family("deepseek_v3", "deepseek_v2")
def _deepseek_v3(f: Fields, mt: str, name: str) -> Arch:
    d = _decoder(f, mt, name)
    mla = MLA(f.count("q_lora_rank", 0), f.int("kv_lora_rank"), f.int("qk_nope_head_dim"),
              f.int("qk_rope_head_dim"), f.int("v_head_dim"))
    first, freq = f.count("first_k_dense_replace", 0), f.int("moe_layer_freq", 1)
    moe_inter = f.int("moe_intermediate_size")
    d.update(kv_heads=d["heads"], head_dim=mla.nope + mla.rope)        # unabsorbed: every head its own K and V
    return Arch(**d, mla=mla, **_routed(f, "n_routed_experts"), moe_inter=moe_inter,
                shared_inter=f.count("n_shared_experts", 0) * moe_inter,
                moe_mask=tuple(i >= first and i % freq == 0 for i in range(d["layers"])),
                router_bias=f.str("topk_method", TOPK_METHOD[mt]) == "noaux_tc",   # e_score_correction_bias
                mtp_layers=f.count("num_nextn_predict_layers", 0))


@family("gpt_oss")
def _gpt_oss(f: Fields, mt: str, name: str) -> Arch:
    d = _decoder(f, mt, name)
    bias = f.bool("attention_bias", True)           # GptOssConfig's default
    d.update(act="swiglu_oai", mlp_bias=True, qkv_bias=bias, o_bias=bias)   # clamped SwiGLU, biased experts
    q = f.cfg.get("quantization_config")
    fmt = q.get("quant_method") if isinstance(q, dict) else None
    return Arch(**d, **_routed(f, "num_local_experts", ("num_experts_per_tok", "experts_per_token")),
                spans=_spans(f, d["layers"], f.int("sliding_window"), lambda i: i % 2 == 1),
                sinks=True, router_bias=True, expert_dtype=fmt if isinstance(fmt, str) else None)


@family("llama4", "llama4_text")
def _llama4(f: Fields, mt: str, name: str) -> Arch:
    d = _decoder(f, mt, name)
    L, expert_inter = d["layers"], d["inter"]
    step = f.int("interleave_moe_layer_step", 1)
    moe = f.indices("moe_layers", L)
    moe = set(range(step - 1, L, step)) if moe is None else moe
    rope = (f.list("no_rope_layers", L, (0, 1)) if f.cfg.get("no_rope_layers") else None) or \
        [int((i + 1) % f.int("no_rope_layer_interval", 4) != 0) for i in range(L)]
    chunk = f.int("attention_chunk_size", None)
    return Arch(**{**d, "inter": f.int("intermediate_size_mlp")}, **_routed(f, "num_local_experts"),
                moe_inter=expert_inter, shared_inter=expert_inter, moe_mask=tuple(i in moe for i in range(L)),
                rope_mask=tuple(bool(r) for r in rope), spans=tuple(chunk if r else None for r in rope) if chunk else (),
                local="chunk", qk_norm="l2" if f.bool("use_qk_norm", False) else "")


@family("gemma3", "gemma3_text")
def _gemma3(f: Fields, mt: str, name: str) -> Arch:
    f = Fields({**GEMMA3_DEFAULTS, **f.cfg}, f.where)
    act_key = "hidden_activation" if f.cfg.get("hidden_activation") else "hidden_act"
    d = _decoder(f, mt, name, ("gelu_pytorch_tanh", "gelu_new", "gelu"), act_key)
    d["context"] = d["max_pos"]          # its rope_scaling stretches the global layers within max_position_embeddings
    pattern = f.int("sliding_window_pattern", 6)
    return Arch(**d, qk_norm="rms", sandwich_norm=True, embed_scale=True,
                spans=_spans(f, d["layers"], f.int("sliding_window"), lambda i: (i + 1) % pattern == 0))


@family("gemma2")
def _gemma2(f: Fields, mt: str, name: str) -> Arch:
    f = Fields({**GEMMA2_DEFAULTS, **f.cfg}, f.where)
    act_key = "hidden_activation" if f.cfg.get("hidden_activation") else "hidden_act"
    d = _decoder(f, mt, name, ("gelu_pytorch_tanh", "gelu_new", "gelu"), act_key)
    return Arch(**d, sandwich_norm=True, embed_scale=True,
                spans=_spans(f, d["layers"], f.int("sliding_window"), lambda i: i % 2 == 1))


@family("gemma")
def _gemma(f: Fields, mt: str, name: str) -> Arch:
    """transformers' GemmaConfig reads a legacy ``hidden_act`` "gelu" (the released configs') as the tanh GELU
    (configuration_gemma.py; 4.x's GemmaMLP read ``hidden_activation``, tanh when it was unset)."""
    cfg = {**GEMMA_DEFAULTS, **f.cfg}
    act_key = "hidden_activation" if cfg.get("hidden_activation") else "hidden_act"
    if act_key == "hidden_act" and cfg.get("hidden_act", "gelu") == "gelu":
        cfg["hidden_act"] = "gelu_pytorch_tanh"
    d = _decoder(Fields(cfg, f.where), mt, name, ("gelu_pytorch_tanh", "gelu_new", "gelu"), act_key)
    return Arch(**d, embed_scale=True)


@family("phi")
def _phi(f: Fields, mt: str, name: str) -> Arch:
    if f.bool("qk_layernorm", False):
        raise Unsupported("phi with qk_layernorm")          # a LayerNorm per head on q and k: not modelled
    act = f.str("hidden_act", "gelu_new")
    if act not in ("gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh"):
        raise Unsupported(f"phi with hidden_act={act}")
    at, max_pos = _attention(f), f.int("max_position_embeddings", None)
    return Arch(name, mt, False, at["hidden"], f.int("num_hidden_layers"), at["heads"], at["kv_heads"],
                at["head_dim"], f.int("intermediate_size"), f.int("vocab_size"), max_pos, "rope", "layer",
                ACTS[act], False, f.bool("tie_word_embeddings", False), True, True, True,
                rotary_frac=_rotary_frac(f, 0.5), parallel_residual=True, shared_norm=True, head_bias=True,
                context=context_tokens(f.cfg, max_pos), dropout=f.float("resid_pdrop", 0.0),
                attn_dropout=f.float("attention_dropout", 0.0))


def _rotary_frac(f: Fields, default: float = 0.25) -> float:
    """The rotating share of each head (``rotary_pct``; transformers 5 saves ``partial_rotary_factor``, also under
    ``rope_parameters``); ``default``: GPTNeoXConfig's 0.25, PhiConfig's 0.5."""
    rp = f.cfg.get("rope_parameters")
    keys = [k for k in ("rotary_pct", "partial_rotary_factor") if f.cfg.get(k) is not None]
    frac = f.float(keys[0], None) if keys else float((rp if isinstance(rp, dict) else {}).get(
        "partial_rotary_factor", default))
    if not 0 < frac <= 1:
        raise IronlawError(f"{f.where}: field '{keys[0] if keys else 'partial_rotary_factor'}' must be in (0, 1], "
                           f"got {frac:g}")
    return frac


@family("gpt_neox")
def _gpt_neox(f: Fields, mt: str, name: str) -> Arch:
    h, heads = f.int("hidden_size"), f.int("num_attention_heads")
    act = f.str("hidden_act", "gelu")
    if act not in ("gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh"):
        raise Unsupported(f"gpt_neox with hidden_act={act}")
    bias, max_pos = f.bool("attention_bias", True), f.int("max_position_embeddings", None)
    return Arch(name, mt, False, h, f.int("num_hidden_layers"), heads, heads,
                exact_div(h, heads, f.where, "hidden_size", "num_attention_heads"), f.int("intermediate_size"),
                f.int("vocab_size"), max_pos, "rope", "layer", ACTS[act], False, f.bool("tie_word_embeddings", False),
                bias, bias, True, rotary_frac=_rotary_frac(f),
                parallel_residual=f.bool("use_parallel_residual", True), context=context_tokens(f.cfg, max_pos),
                dropout=f.float("hidden_dropout", 0.0), attn_dropout=f.float("attention_dropout", 0.0))


@family("olmo")
def _olmo(f: Fields, mt: str, name: str) -> Arch:
    d = _decoder(f, mt, name)
    clip = f.cfg.get("clip_qkv")
    if clip is not None and not f.float("clip_qkv", None) > 0:
        raise IronlawError(f"{f.where}: field 'clip_qkv' must be a positive bound (or null), got {clip!r}")
    return Arch(**{**d, "norm": "nonparam"}, qkv_clip=clip is not None)


@family("olmo2")
def _olmo2(f: Fields, mt: str, name: str) -> Arch:
    return Arch(**_decoder(f, mt, name), qk_norm="rms_full", output_norm=True)


@family("gpt2")
def _gpt2(f: Fields, mt: str, name: str) -> Arch:
    h, heads = f.int("n_embd"), f.int("n_head")
    act = f.str("activation_function", "gelu_new")
    if act not in ("gelu_new", "gelu_pytorch_tanh", "gelu"):
        raise Unsupported(f"gpt2 with activation_function={act}")
    return Arch(name, mt, False, h, f.int("n_layer"), heads, heads, exact_div(h, heads, f.where, "n_embd", "n_head"),
                f.int("n_inner", None) or 4 * h, f.int("vocab_size"), f.int("n_positions"), "learned", "layer",
                "gelu" if act == "gelu" else "gelu_new", False, f.bool("tie_word_embeddings", True),
                True, True, True, dropout=f.float("resid_pdrop", 0.1), attn_dropout=f.float("attn_pdrop", 0.1))


@family("bert")
def _bert(f: Fields, mt: str, name: str) -> Arch:
    h, heads = f.int("hidden_size"), f.int("num_attention_heads")
    act = f.str("hidden_act", "gelu")
    if act not in ("gelu", "gelu_new", "gelu_pytorch_tanh"):
        raise Unsupported(f"bert with hidden_act={act}")
    if f.str("position_embedding_type", "absolute") != "absolute":
        raise Unsupported("bert with relative position embeddings")
    return Arch(name, mt, True, h, f.int("num_hidden_layers"), heads, heads,
                exact_div(h, heads, f.where, "hidden_size", "num_attention_heads"), f.int("intermediate_size"),
                f.int("vocab_size"), f.int("max_position_embeddings"), "learned", "layer",
                "gelu" if act == "gelu" else "gelu_new", False, True, True, True, True, post_norm=True,
                type_vocab=f.int("type_vocab_size", 2), pooler=True, dropout=f.float("hidden_dropout_prob", 0.1),
                attn_dropout=f.float("attention_probs_dropout_prob", 0.1))


def parse(cfg: dict, where: str, name: str | None = None) -> Arch:
    """Arch of a HF config dict; IronlawError naming ``where`` and the field; Unsupported otherwise."""
    mt = model_type(cfg)
    if not mt:
        raise IronlawError(f"{where}: missing field 'model_type' (or 'architectures'); cannot tell the architecture")
    if mt not in FAMILIES:
        raise Unsupported(mt)
    name = name or str(cfg.get("_name_or_path") or Path(where).parent.name or mt)
    return FAMILIES[mt](Fields(text_config(cfg, mt, where), where), mt, name)
