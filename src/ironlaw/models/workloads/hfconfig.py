"""Hugging Face ``config.json`` -> ``Arch``: the few numbers an analytic transformer builder needs.

Read without torch or transformers; one small reader per ``model_type`` lives in ``families`` (the
layouts it knows are listed there). Anything else is ``Unsupported``: the ``hf:`` prefix hands it to
graph capture (torch).

Parameter counts follow the Hugging Face modules exactly (``LlamaForCausalLM``, ``GPT2LMHeadModel``,
``MixtralForCausalLM``, ``BertModel`` with its pooler, ``Qwen3MoeForCausalLM``, ``DeepseekV3ForCausalLM``,
``DeepseekV2ForCausalLM``, ``GptOssForCausalLM``, ``GemmaForCausalLM``, ``Gemma2ForCausalLM``, ``PhiForCausalLM``,
``Phi3ForCausalLM``,
``Qwen2MoeForCausalLM``, ``GPTNeoXForCausalLM``, ``OlmoForCausalLM``, ``Olmo2ForCausalLM``, the text models of
Llama 4 and Gemma 3): embeddings, per-layer projections with the biases each layout has, norm gains (and biases for
LayerNorm), routers, shared experts, the untied LM head (and its bias, Phi).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import IronlawError
from ...core.files import read_text

MAX_DIM = 1 << 24
# architecture class-name prefixes -> model_type, for configs without one (longer prefixes first)
ARCH_PREFIXES = (("qwen3moe", "qwen3_moe"), ("qwen2moe", "qwen2_moe"), ("gptneox", "gpt_neox"), ("olmo2", "olmo2"),
                 ("olmo", "olmo"), ("qwen3", "qwen3"), ("deepseekv3", "deepseek_v3"),
                 ("deepseekv2", "deepseek_v2"), ("gptoss", "gpt_oss"), ("llama4", "llama4"), ("gemma3", "gemma3"),
                 ("gemma2", "gemma2"), ("gemmafor", "gemma"), ("phi3", "phi3"), ("phifor", "phi"),
                 ("mixtral", "mixtral"), ("mistral", "mistral"), ("qwen2_5_vl", "qwen2_5_vl"), ("qwen2_vl", "qwen2_vl"),
                 ("qwen2", "qwen2"), ("llama", "llama"),
                 ("gpt2", "gpt2"), ("bert", "bert"))


class Unsupported(Exception):
    """A config this module cannot describe analytically (the caller may capture it instead)."""


@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention (DeepSeek-V2/V3): queries and keys/values pass through low-rank latents;
    the cache holds the ``kv_lora`` latent and one shared ``rope`` key per token."""
    q_lora: int               # 0: queries projected straight from the hidden state
    kv_lora: int
    nope: int                 # per-head query/key dims without rotary embedding
    rope: int                 # per-head rotary dims (the rotary key is shared by all heads)
    v_dim: int                # per-head value dims

    @property
    def cache_elems(self) -> int:
        """Elements one token adds to one layer's cache: the latent and the shared rotary key."""
        return self.kv_lora + self.rope


@dataclass(frozen=True)
class Arch:
    name: str
    model_type: str
    encoder: bool
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    inter: int                # the dense MLP's intermediate size (and Mixtral's experts')
    vocab: int
    max_pos: int | None       # None: no stated limit
    positions: str            # "rope" | "learned"
    norm: str                 # "rms" | "layer" | "nonparam" (OLMo: LayerNorm without gain or bias)
    act: str                  # "silu" | "gelu_new" | "gelu" | "swiglu_oai"
    glu: bool                 # gated MLP (gate and up projections)
    tied: bool                # LM head shares the token embedding
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    post_norm: bool = False   # BERT: norm after the residual add
    experts: int = 0          # routed experts per MoE layer; 0: dense MLP
    top_k: int = 0
    type_vocab: int = 0       # BERT token-type embeddings
    pooler: bool = False
    sliding_window: int | None = None
    dropout: float = 0.0      # training dropout probability of the residual/MLP paths
    attn_dropout: float = 0.0  # training dropout probability of the attention probabilities
    qk_norm: str = ""         # "rms": a gain of head_dim on q and k (Qwen3, Gemma 3); "l2": no weights (Llama 4);
    #                           "rms_full": one RMSNorm over all heads' q, one over all k (OLMo-2: q_dim + kv_dim)
    mla: MLA | None = None
    moe_inter: int = 0        # a routed expert's intermediate size (0: ``inter``)
    shared_inter: int = 0     # the always-on shared expert(s) together (0: none)
    moe_mask: tuple = ()      # per layer, True where the MLP is a mixture of experts; (): all (when experts)
    spans: tuple = ()         # per layer, None (global attention) or the local span; (): ``sliding_window``
    local: str = "window"     # local layers: "window" (sliding) or "chunk" (Llama 4: fixed chunks)
    rope_mask: tuple = ()     # per layer, False where the layer has no rotary embedding (Llama 4 NoPE); (): all
    sinks: bool = False       # a learned sink logit per head in the softmax (gpt-oss)
    router_bias: bool = False  # a bias (or DeepSeek's score-correction bias) per expert in the router
    sandwich_norm: bool = False  # norms after attention and after the MLP too (Gemma 3): four per layer
    mtp_layers: int = 0       # DeepSeek multi-token-prediction modules (counted apart from the main model)
    expert_dtype: str | None = None  # the released checkpoint's expert weight format (gpt-oss: mxfp4)
    context: int | None = None  # tokens one sequence may span when served (``context_tokens``); None: max_pos
    rope_mscale: float = 1.0  # YaRN's concentration factor on cos and sin (``yarn_concentration``); 1: none
    rotary_frac: float = 1.0  # share of each head's dims that rotate (GPT-NeoX rotary_pct: 0.25)
    parallel_residual: bool = False  # GPT-NeoX: x + attn(ln1(x)) + mlp(ln2(x)), both norms on the layer's input
    output_norm: bool = False  # OLMo-2: each sublayer's output normed before the residual add, no input norm
    shared_gate: bool = False  # Qwen2-MoE: sigmoid(x·w_g) (a [hidden, 1] linear) scales the shared expert's output
    qkv_clip: bool = False    # OLMo clip_qkv: q, k and v clamped to [-c, c]
    shared_norm: bool = False  # Phi: one LayerNorm feeds attention and MLP, x + attn(ln(x)) + mlp(ln(x))
    head_bias: bool = False   # Phi: the LM head has a bias (vocab elements)
    embed_scale: bool = False  # Gemma: the embedding's output multiplied by sqrt(hidden), one product per element

    # ------------------------------------------------------------------ layer patterns
    def layer_spans(self) -> tuple:
        return self.spans or (self.sliding_window,) * self.layers

    def span_groups(self) -> dict:
        """{span: layers}: None is global attention, an int the window (or chunk) of local layers."""
        out: dict = {}
        for w in self.layer_spans():
            out[w] = out.get(w, 0) + 1
        return out

    @property
    def moe_layers(self) -> int:
        if not self.experts:
            return 0
        return sum(self.moe_mask) if self.moe_mask else self.layers

    @property
    def rope_layers(self) -> int:
        return sum(self.rope_mask) if self.rope_mask else self.layers

    # ------------------------------------------------------------------ parameter counts (exact)
    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def norm_params(self) -> int:
        return self.hidden * {"layer": 2, "rms": 1, "nonparam": 0}[self.norm]

    @property
    def rotary_dims(self) -> int:
        """Per head, the dims RoPE rotates (HF GPTNeoXAttention: ``int(head_size * rotary_pct)``)."""
        return int(self.head_dim * self.rotary_frac)

    @property
    def expert_inter(self) -> int:
        return self.moe_inter or self.inter

    def kv_elems_per_token(self) -> int:
        """Cache elements one token adds to one layer: K and V, or MLA's latent and rotary key."""
        return self.mla.cache_elems if self.mla else 2 * self.kv_dim

    def attn_params(self) -> int:
        if self.mla:
            return self._mla_params()
        h = self.hidden
        p = h * (self.q_dim + 2 * self.kv_dim) + self.q_dim * h
        p += (self.q_dim + 2 * self.kv_dim if self.qkv_bias else 0) + (h if self.o_bias else 0)
        qk_norm = {"rms": 2 * self.head_dim, "rms_full": self.q_dim + self.kv_dim}.get(self.qk_norm, 0)
        return p + qk_norm + (self.heads if self.sinks else 0)

    def _mla_params(self) -> int:
        m, h, n = self.mla, self.hidden, self.heads
        qk = m.nope + m.rope
        q = m.q_lora * (h + 1 + n * qk) if m.q_lora else h * n * qk        # down, latent norm, up
        kv = h * m.cache_elems + m.kv_lora + m.kv_lora * n * (m.nope + m.v_dim)
        return q + kv + n * m.v_dim * h

    def mlp_params(self, inter: int) -> int:
        """One MLP of intermediate size ``inter`` (a dense layer's, or one expert's)."""
        h, i = self.hidden, inter
        if self.glu:
            return 3 * h * i + (2 * i + h if self.mlp_bias else 0)
        return 2 * h * i + (i + h if self.mlp_bias else 0)

    def expert_params(self) -> int:
        return self.mlp_params(self.expert_inter)

    def router_params(self) -> int:
        e = self.experts
        return self.hidden * e + (e if self.router_bias else 0)

    def moe_params(self, active: bool = False) -> int:
        """One MoE layer's MLP: the routed experts (the top-k of them if ``active``), router, shared expert."""
        n = self.top_k if active else self.experts
        shared = self.mlp_params(self.shared_inter) + self.hidden * self.shared_gate if self.shared_inter else 0
        return n * self.expert_params() + self.router_params() + shared

    def layer_norm_params(self) -> int:
        per = 4 if self.sandwich_norm else 1 if self.shared_norm else 2           # OLMo-2's two are on the outputs
        return per * self.norm_params

    def layers_params(self, active: bool = False) -> int:
        """All decoder (or encoder) layers together."""
        moe = self.moe_layers
        return (self.layers * (self.attn_params() + self.layer_norm_params()) + moe * self.moe_params(active)
                + (self.layers - moe) * self.mlp_params(self.inter))

    def embedding_params(self) -> int:
        h = self.hidden
        p = self.vocab * h
        if self.positions == "learned":
            p += self.max_pos * h
        if self.type_vocab:
            p += self.type_vocab * h
        if self.post_norm:
            p += self.norm_params             # BERT's embedding LayerNorm
        return p

    def head_params(self) -> int:
        if self.encoder:
            return 0
        return (0 if self.tied else self.vocab * self.hidden) + (self.vocab if self.head_bias else 0)

    def final_norm_params(self) -> int:
        return 0 if self.post_norm else self.norm_params

    def pooler_params(self) -> int:
        return self.hidden * self.hidden + self.hidden if self.pooler else 0

    def params(self, active: bool = False) -> int:
        """All parameters, or (``active``) those one token touches: the routed top-k experts only.
        DeepSeek's multi-token-prediction modules are not in it (``mtp_params``)."""
        return (self.embedding_params() + self.layers_params(active) + self.final_norm_params()
                + self.head_params() + self.pooler_params())

    def mtp_params(self) -> int:
        """DeepSeek-V3's multi-token-prediction modules as its checkpoint stores them: two input norms, the
        projection of [embedding; hidden] (2h -> h), one MoE decoder layer, the head's norm, and copies of
        the embedding and the LM head."""
        h = self.hidden
        layer = self.attn_params() + self.layer_norm_params() + self.moe_params()
        return self.mtp_layers * (3 * h + 2 * h * h + layer + 2 * self.vocab * h)

    def active_compute_params(self) -> int:
        """Active parameters without the lookup-only embedding table: those a token multiplies by
        (what OpenAI and DeepSeek publish as "active"; Meta and Qwen include the embedding)."""
        return self.params(active=True) - self.lookup_only_params()

    def lookup_only_params(self) -> int:
        """Parameters that are only gathered, never multiplied (embedding tables not tied to the head)."""
        p = self.embedding_params() - (self.norm_params if self.post_norm else 0)
        return p - (self.vocab * self.hidden if self.tied else 0)


# ---------------------------------------------------------------------- reading
def load_json(path: str | Path) -> dict:
    """The config dict of ``path`` (a config.json, or a directory that holds one)."""
    p = Path(path).expanduser()
    if p.is_dir():
        if not (p / "config.json").is_file():
            raise IronlawError(f"{p}: is a directory without a config.json; pass the path of a Hugging Face config.json")
        p = p / "config.json"
    hint = " (a Hub id? download its config.json and pass the file)" if str(path).count("/") == 1 else ""
    text = read_text(p, "config file", hint)
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as e:
        raise IronlawError(f"{p}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    if not isinstance(cfg, dict):
        raise IronlawError(f"{p}: expected a JSON object (a Hugging Face config), got {type(cfg).__name__}")
    return cfg


# a quantized checkpoint's ``quantization_config`` -> the dtype it serves in: transformers' quant_method names
# (``fp8``: DeepSeek-V3's and Qwen3-FP8's block-scaled FP8; ``fbgemm_fp8``), NVIDIA ModelOpt's quant_algo, and
# llm-compressor's ``compressed-tensors`` with 8-bit float weights and activations in every group (W8A8 FP8)
QUANT_METHODS = {"fp8": "fp8", "fbgemm_fp8": "fp8"}
MODELOPT_ALGOS = {"FP8": "fp8", "NVFP4": "fp4", "MXFP8": "mxfp8"}
EXPERTS_ONLY = ("mxfp4",)   # gpt-oss: the experts' weight format alone (Arch.expert_dtype); openai/gpt-oss-120b README
# on Hugging Face: "MXFP4 quantization" of the MoE weights lets gpt-oss-120b run on a single 80GB GPU (H100, MI300X)


def weight_format(cfg: dict) -> str | None:
    """The block-scaled weight format a checkpoint's FP8 is (``fp8_block``: transformers' ``quant_method`` fp8 with a
    ``weight_block_size``, DeepSeek-V3/R1's [128, 128] and Qwen3-FP8's), None for any other; the dtype stays fp8
    (``checkpoint_dtype``), the format picks the MoE kernel classes fitted on block-scaled rows."""
    q = cfg.get("quantization_config")
    if not isinstance(q, dict) or QUANT_METHODS.get(q.get("quant_method")) != "fp8":
        return None
    return "fp8_block" if q.get("weight_block_size") else None


def expert_format(cfg: dict) -> str | None:
    """The format a checkpoint stores its routed experts alone in (``EXPERTS_ONLY``: gpt-oss's ``quant_method``
    mxfp4, the rest of the model in bf16), None for any other."""
    q = cfg.get("quantization_config")
    method = q.get("quant_method") if isinstance(q, dict) else None
    return method if method in EXPERTS_ONLY else None


def checkpoint_dtype(cfg: dict, where: str) -> str | None:
    """The dtype a quantized checkpoint's config states (``quantization_config``) for inference; None for an
    unquantized one or one whose experts alone are quantized. A format ironlaw does not build is one line."""
    q = cfg.get("quantization_config")
    if q is None:
        return None
    method = q.get("quant_method") if isinstance(q, dict) else None
    if method in EXPERTS_ONLY:
        return None
    if method in QUANT_METHODS:
        return QUANT_METHODS[method]
    algo = q.get("quant_algo") if method == "modelopt" else None
    if algo in MODELOPT_ALGOS:
        return MODELOPT_ALGOS[algo]
    if method == "compressed-tensors" and _w8a8_float(q):
        return "fp8"
    said = f"quant_method '{method}'" + (f", quant_algo '{algo}'" if algo else "")
    raise IronlawError(f"{where}: a quantized checkpoint (quantization_config {said}) in a format ironlaw does not "
                       f"build; give --dtype (bf16 prices the unquantized model, fp8 an FP8 one)")


def _w8a8_float(q: dict) -> bool:
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        return False
    for g in groups.values():
        parts = [g.get("weights"), g.get("input_activations")] if isinstance(g, dict) else [None]
        if not all(isinstance(x, dict) and x.get("num_bits") == 8 and x.get("type") == "float" for x in parts):
            return False
    return True


def rope_scaling(cfg: dict) -> dict | None:
    """The config's RoPE scaling: ``rope_scaling``, or ``rope_parameters`` where transformers 5 writes it (a
    config saved by ``save_pretrained`` under transformers >= 5 keeps no ``rope_scaling``; a model with layer types
    keeps one dict per type there, the global layers' under ``full_attention``)."""
    rs = cfg.get("rope_scaling")
    if isinstance(rs, dict):
        return rs
    rp = cfg.get("rope_parameters")
    if isinstance(rp, dict) and isinstance(rp.get("full_attention"), dict):
        rp = rp["full_attention"]
    return rp if isinstance(rp, dict) else None


def context_tokens(cfg: dict, max_pos: int | None) -> int | None:
    """The tokens a served sequence (prompt + output) may span, as vLLM derives max_model_len from a config
    (vllm/config.py ``_get_and_verify_max_len``): max_position_embeddings, times ``rope_scaling``'s factor for a
    scaling that stretches the positions (linear, dynamic; yarn: original_max_position_embeddings × factor);
    llama3, longrope and su scalings already state the long context in max_position_embeddings."""
    rs = rope_scaling(cfg)
    if max_pos is None or rs is None:
        return max_pos
    kind = rs.get("rope_type", rs.get("type", "default"))
    factor = rs.get("factor", 1.0)
    if kind in ("su", "longrope", "llama3", "default") or not isinstance(factor, (int, float)) or factor < 1:
        return max_pos
    base = rs.get("original_max_position_embeddings", max_pos) if kind == "yarn" else max_pos
    return int(base * factor) if isinstance(base, int) else max_pos


def yarn_concentration(cfg: dict) -> float:
    """YaRN's attention ("concentration") factor that multiplies the rotary cos and sin, as Megatron-Core
    core_v0.15.0 computes it (``yarn_rotary_pos_embedding._yarn_get_concentration_factor``): with ``mscale`` and
    ``mscale_all_dim`` both given, (0.1·m·ln s + 1) / (0.1·m_all·ln s + 1) (DeepSeek-V3: 1.0 / 1.0 → 1); with
    either missing, 0.1·ln s + 1 (gpt-oss, factor 32: 1.347). 1 without YaRN scaling."""
    rs = rope_scaling(cfg)
    if rs is None or rs.get("rope_type", rs.get("type")) != "yarn":
        return 1.0
    s = rs.get("factor", 1.0)
    if not isinstance(s, (int, float)) or s <= 1:
        return 1.0

    def mscale(m: float) -> float:
        return 0.1 * m * math.log(s) + 1.0
    m, m_all = rs.get("mscale"), rs.get("mscale_all_dim")
    if isinstance(m, (int, float)) and isinstance(m_all, (int, float)):
        return mscale(m) / mscale(m_all)
    return mscale(1.0)


def model_type(cfg: dict) -> str:
    mt = cfg.get("model_type")
    if isinstance(mt, str) and mt:
        return mt.lower()
    arch = cfg.get("architectures")
    if isinstance(arch, list) and arch and isinstance(arch[0], str):
        a = arch[0].lower()
        for prefix, t in ARCH_PREFIXES:
            if a.startswith(prefix):
                return t
        return a
    return ""


def exact_div(a: int, b: int, where: str, na: str, nb: str) -> int:
    if a % b:
        raise IronlawError(f"{where}: {na} {a} is not a multiple of {nb} {b}")
    return a // b


_MISSING = object()


class Fields:
    """Typed reads of config fields; a missing or ill-typed field names the file and the field."""

    def __init__(self, cfg: dict, where: str):
        self.cfg, self.where = cfg, where

    def _get(self, key: str, default):
        v = self.cfg.get(key, _MISSING)
        if v is _MISSING or (v is None and default is not _MISSING):
            if default is _MISSING:
                raise IronlawError(f"{self.where}: missing field '{key}'")
            return default
        return v

    def int(self, key: str, default=_MISSING):
        v = self._get(key, default)
        if v is None or v is default:
            return v
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v != int(v) \
                or not 0 < v <= MAX_DIM * 64:
            raise IronlawError(f"{self.where}: field '{key}' must be a positive whole number, got {v!r}")
        return int(v)

    def count(self, key: str, default=_MISSING) -> int:
        """A whole number that may be 0 (a number of layers or experts of some kind)."""
        v = self._get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v != int(v) \
                or not 0 <= v <= MAX_DIM * 64:
            raise IronlawError(f"{self.where}: field '{key}' must be a whole number >= 0, got {v!r}")
        return int(v)

    def list(self, key: str, n: int, allowed: tuple):
        """A per-layer list of ``n`` values from ``allowed``, or None when the config has none."""
        v = self._get(key, None)
        if v is None:
            return None
        if not isinstance(v, list) or len(v) != n or any(x not in allowed for x in v):
            raise IronlawError(f"{self.where}: field '{key}' must list one of {', '.join(map(str, allowed))} for "
                               f"each of the {n} layers")
        return v

    def indices(self, key: str, n: int):
        """A list of layer indices in [0, n), as a set; None when the config has none."""
        v = self._get(key, None)
        if v is None:
            return None
        if not isinstance(v, list) or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n
                                          for i in v):
            raise IronlawError(f"{self.where}: field '{key}' must list layer indices from 0 to {n - 1}")
        return set(v)

    def float(self, key: str, default):
        v = self._get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise IronlawError(f"{self.where}: field '{key}' must be a number, got {v!r}")
        return float(v)

    def bool(self, key: str, default: bool) -> bool:
        v = self._get(key, default)
        if not isinstance(v, bool):
            raise IronlawError(f"{self.where}: field '{key}' must be true or false, got {v!r}")
        return v

    def str(self, key: str, default: str) -> str:
        v = self._get(key, default)
        if not isinstance(v, str):
            raise IronlawError(f"{self.where}: field '{key}' must be a string, got {v!r}")
        return v
