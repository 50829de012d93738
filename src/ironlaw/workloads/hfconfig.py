"""Hugging Face ``config.json`` -> ``Arch``: the few numbers an analytic transformer builder needs.

Read without torch or transformers. Supported layouts (``model_type``):
    llama, mistral, qwen2   decoder, RMSNorm, RoPE, SwiGLU MLP, grouped-query attention
    mixtral                 the same with a top-k mixture of SwiGLU experts and a router
    gpt2                    decoder, LayerNorm, learned positions, fused QKV with bias, GELU-tanh MLP
    bert                    encoder (post-norm), learned positions and token types, GELU MLP, pooler
Anything else is ``Unsupported``: the ``hf:`` prefix hands it to graph capture (torch).

Parameter counts follow the Hugging Face modules exactly (``LlamaForCausalLM``, ``GPT2LMHeadModel``,
``MixtralForCausalLM``, ``BertModel`` with its pooler): embeddings, per-layer projections with the
biases each layout has, norm gains (and biases for LayerNorm), the untied LM head.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from ..errors import IronlawError

LLAMA_LIKE = ("llama", "mistral", "qwen2", "mixtral")
SUPPORTED = LLAMA_LIKE + ("gpt2", "bert")
MAX_DIM = 1 << 24


class Unsupported(Exception):
    """A config this module cannot describe analytically (the caller may capture it instead)."""


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
    inter: int
    vocab: int
    max_pos: int | None       # None: no stated limit
    positions: str            # "rope" | "learned"
    norm: str                 # "rms" | "layer"
    act: str                  # "silu" | "gelu_new" | "gelu"
    glu: bool                 # gated MLP (gate and up projections)
    tied: bool                # LM head shares the token embedding
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    post_norm: bool = False   # BERT: norm after the residual add
    experts: int = 0          # 0: dense MLP
    top_k: int = 0
    type_vocab: int = 0       # BERT token-type embeddings
    pooler: bool = False
    sliding_window: int | None = None
    dropout: float = 0.0      # training dropout probability of the residual/MLP paths
    attn_dropout: float = 0.0  # training dropout probability of the attention probabilities

    # ------------------------------------------------------------------ parameter counts (exact)
    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def norm_params(self) -> int:
        return self.hidden * (2 if self.norm == "layer" else 1)

    def attn_params(self) -> int:
        h = self.hidden
        p = h * (self.q_dim + 2 * self.kv_dim) + self.q_dim * h
        return p + (self.q_dim + 2 * self.kv_dim if self.qkv_bias else 0) + (h if self.o_bias else 0)

    def expert_params(self) -> int:
        """One MLP (a dense layer's, or one expert's)."""
        h, i = self.hidden, self.inter
        if self.glu:
            return 3 * h * i + (2 * i + h if self.mlp_bias else 0)
        return 2 * h * i + (i + h if self.mlp_bias else 0)

    def router_params(self) -> int:
        return self.hidden * self.experts if self.experts else 0

    def layer_params(self, active: bool = False) -> int:
        n_mlp = (self.top_k if active else self.experts) if self.experts else 1
        return self.attn_params() + n_mlp * self.expert_params() + self.router_params() + 2 * self.norm_params

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
        return 0 if (self.tied or self.encoder) else self.vocab * self.hidden

    def final_norm_params(self) -> int:
        return 0 if self.post_norm else self.norm_params

    def pooler_params(self) -> int:
        return self.hidden * self.hidden + self.hidden if self.pooler else 0

    def params(self, active: bool = False) -> int:
        """All parameters, or (``active``) those one token touches: the routed top-k experts only."""
        return (self.embedding_params() + self.layers * self.layer_params(active) + self.final_norm_params()
                + self.head_params() + self.pooler_params())

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
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        hint = " (a Hub id? download its config.json and pass the file)" if str(path).count("/") == 1 else ""
        raise IronlawError(f"{p}: no such config file{hint}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise IronlawError(f"{p}: cannot read config file: {e.__class__.__name__}") from None
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as e:
        raise IronlawError(f"{p}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    if not isinstance(cfg, dict):
        raise IronlawError(f"{p}: expected a JSON object (a Hugging Face config), got {type(cfg).__name__}")
    return cfg


def model_type(cfg: dict) -> str:
    mt = cfg.get("model_type")
    if isinstance(mt, str) and mt:
        return mt.lower()
    arch = cfg.get("architectures")
    if isinstance(arch, list) and arch and isinstance(arch[0], str):
        a = arch[0].lower()
        for t in ("mixtral", "mistral", "qwen2", "llama", "gpt2", "bert"):
            if a.startswith(t):
                return t
        return a
    return ""


def parse(cfg: dict, where: str, name: str | None = None) -> Arch:
    """Arch of a HF config dict; IronlawError naming ``where`` and the field; Unsupported otherwise."""
    mt = model_type(cfg)
    if not mt:
        raise IronlawError(f"{where}: missing field 'model_type' (or 'architectures'); cannot tell the architecture")
    if mt not in SUPPORTED:
        raise Unsupported(mt)
    f = _Fields(cfg, where)
    name = name or str(cfg.get("_name_or_path") or Path(where).parent.name or mt)
    if mt in LLAMA_LIKE:
        h, heads = f.int("hidden_size"), f.int("num_attention_heads")
        kv = f.int("num_key_value_heads", heads)
        hd = f.int("head_dim", None) or _div(h, heads, where, "hidden_size", "num_attention_heads")
        if heads % kv:
            raise IronlawError(f"{where}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv}")
        act = f.str("hidden_act", "silu")
        if act not in ("silu", "swish"):
            raise Unsupported(f"{mt} with hidden_act={act}")
        experts = f.int("num_local_experts") if mt == "mixtral" else 0
        top_k = f.int("num_experts_per_tok") if mt == "mixtral" else 0
        if top_k > experts:
            raise IronlawError(f"{where}: num_experts_per_tok {top_k} exceeds num_local_experts {experts}")
        bias = f.bool("attention_bias", False)
        return Arch(name, mt, False, h, f.int("num_hidden_layers"), heads, kv, hd, f.int("intermediate_size"),
                    f.int("vocab_size"), f.int("max_position_embeddings", None), "rope", "rms", "silu", True,
                    f.bool("tie_word_embeddings", False), qkv_bias=bias or mt == "qwen2", o_bias=bias,
                    mlp_bias=f.bool("mlp_bias", False), experts=experts, top_k=top_k,
                    sliding_window=f.int("sliding_window", None) if f.bool("use_sliding_window", mt != "qwen2") else None)
    if mt == "gpt2":
        h, heads = f.int("n_embd"), f.int("n_head")
        act = f.str("activation_function", "gelu_new")
        if act not in ("gelu_new", "gelu_pytorch_tanh", "gelu"):
            raise Unsupported(f"gpt2 with activation_function={act}")
        return Arch(name, mt, False, h, f.int("n_layer"), heads, heads, _div(h, heads, where, "n_embd", "n_head"),
                    f.int("n_inner", None) or 4 * h, f.int("vocab_size"), f.int("n_positions"), "learned", "layer",
                    "gelu" if act == "gelu" else "gelu_new", False, f.bool("tie_word_embeddings", True),
                    True, True, True, dropout=f.float("resid_pdrop", 0.1),
                    attn_dropout=f.float("attn_pdrop", 0.1))
    # bert
    h, heads = f.int("hidden_size"), f.int("num_attention_heads")
    act = f.str("hidden_act", "gelu")
    if act not in ("gelu", "gelu_new", "gelu_pytorch_tanh"):
        raise Unsupported(f"bert with hidden_act={act}")
    if f.str("position_embedding_type", "absolute") != "absolute":
        raise Unsupported("bert with relative position embeddings")
    return Arch(name, mt, True, h, f.int("num_hidden_layers"), heads, heads, _div(h, heads, where, "hidden_size",
                "num_attention_heads"), f.int("intermediate_size"), f.int("vocab_size"),
                f.int("max_position_embeddings"), "learned", "layer", "gelu" if act == "gelu" else "gelu_new", False,
                True, True, True, True, post_norm=True, type_vocab=f.int("type_vocab_size", 2), pooler=True,
                dropout=f.float("hidden_dropout_prob", 0.1),
                attn_dropout=f.float("attention_probs_dropout_prob", 0.1))


def _div(a: int, b: int, where: str, na: str, nb: str) -> int:
    if a % b:
        raise IronlawError(f"{where}: {na} {a} is not a multiple of {nb} {b}")
    return a // b


_MISSING = object()


class _Fields:
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
