"""Today's LLM families as built-ins and through ``hf:config.json``: parameter counts against the figures
their publishers give, KV-cache bytes per token against hand counts, and the attention/MoE features each
family has (qk-norm, MLA, routed + shared experts, sliding windows, chunked attention, sinks)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ironlaw.errors import IronlawError
from ironlaw.workloads import Request, catalog, resolve
from ironlaw.workloads import transformer as T

DATA = Path(__file__).parent / "data" / "llm_configs"

# name: (published total, published active or None, where the figure is published). Counts are of the text
# model as its checkpoint stores it (embeddings and an untied LM head included).
PUBLISHED = {
    "llama3.1-8b": (8.03e9, None, "HF model page meta-llama/Llama-3.1-8B, safetensors 'Model size 8.03B params'"),
    "llama3.1-70b": (70.6e9, None, "HF model page meta-llama/Llama-3.1-70B, 'Model size 70.6B params'"),
    "llama3.3-70b": (70.6e9, None, "HF model page meta-llama/Llama-3.3-70B-Instruct, 'Model size 70.6B params'"),
    "llama3.1-405b": (405.9e9, None, "HF model page meta-llama/Llama-3.1-405B, 'Model size 406B params' "
                                     "(405.9B in the safetensors index)"),
    "qwen3-8b": (8.2e9, None, "Qwen/Qwen3-8B model card: 'Number of Parameters: 8.2B'"),
    "qwen3-32b": (32.8e9, None, "Qwen/Qwen3-32B model card: 'Number of Parameters: 32.8B'"),
}


def build(spec, **kw):
    return resolve(Request(spec, **kw))


def op(g, name):
    hits = [o for o in g.ops if o.name == name]
    assert hits, f"{g.name} has no op {name}: {[o.name for o in g.ops]}"
    return hits[0]


# ---------------------------------------------------------------------- parameter counts
@pytest.mark.parametrize("name", list(PUBLISHED))
def test_total_params_within_half_percent_of_published(name):
    total, _, _ = PUBLISHED[name]
    g = build(name, phase="decode", seq=16)
    assert g.meta["params"] == pytest.approx(total, rel=0.005)


@pytest.mark.parametrize("name", [n for n, (_, act, _) in PUBLISHED.items() if act])
def test_active_params_within_half_percent_of_published(name):
    _, active, _ = PUBLISHED[name]
    assert build(name, phase="decode", seq=16).meta["active_params"] == pytest.approx(active, rel=0.005)


def test_dense_counts_are_exact():
    """The Llama 3.1 and Qwen3 totals to the parameter (the safetensors indexes' totals)."""
    exact = {"llama3.1-8b": 8_030_261_248, "llama3.1-70b": 70_553_706_496, "llama3.1-405b": 405_853_388_800,
             "qwen3-8b": 8_190_735_360, "qwen3-32b": 32_762_123_264}
    for name, n in exact.items():
        assert T.builtin_arch(name).params() == n, name


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_hf_config_copy_builds_like_the_builtin(name):
    g = build(f"hf:{DATA / (name + '.json')}", phase="decode", batch=4, seq=512)
    b = build(name, phase="decode", batch=4, seq=512)
    assert g.meta["params"] == b.meta["params"]
    assert g.footprint["kv_cache"] == b.footprint["kv_cache"]
    assert [o.name for o in g.ops] == [o.name for o in b.ops]


def test_workloads_list_names_every_family():
    names = {r["name"] for r in catalog()}
    assert set(PUBLISHED) <= names


# ---------------------------------------------------------------------- KV cache per token
KV_PER_TOKEN = {   # bytes per token at bf16, by hand: layers x (K and V) x kv_heads x head_dim x 2 bytes
    "llama3.1-8b": 32 * 2 * 8 * 128 * 2,      # 131,072
    "llama3.1-70b": 80 * 2 * 8 * 128 * 2,     # 327,680
    "llama3.1-405b": 126 * 2 * 8 * 128 * 2,   # 516,096
    "qwen3-8b": 36 * 2 * 8 * 128 * 2,         # 147,456
    "qwen3-32b": 64 * 2 * 8 * 128 * 2,        # 262,144
}


@pytest.mark.parametrize("name", list(KV_PER_TOKEN))
def test_kv_bytes_per_token_against_hand_count(name):
    for s in (100, 4096):
        g = build(name, phase="decode", batch=2, seq=s)
        assert g.footprint["kv_cache"] == 2 * s * KV_PER_TOKEN[name]


# ---------------------------------------------------------------------- features
def test_qwen3_qk_norm_and_decoupled_head_dim():
    a = T.builtin_arch("qwen3-32b")
    assert (a.hidden // a.heads, a.head_dim, a.q_dim) == (80, 128, 8192)     # head_dim is not hidden/heads
    g = build("qwen3-32b", phase="prefill", batch=1, seq=64)
    qk = op(g, "attn_rope.qk_norm")
    assert qk.kind == "norm" and qk.count == 64
    assert qk.bytes["weights"] == 2 * 128 * 2                                # a gain of head_dim on q and on k
    assert qk.flops == 64 * (64 * 128 + 8 * 128) * 4.0                       # RMSNorm over every q and k head
    # the qk-norm gains are counted: two of head_dim per layer
    assert a.attn_params() == 5120 * (8192 + 2 * 1024) + 8192 * 5120 + 2 * 128


@pytest.mark.torch
def test_qwen3_params_match_transformers_modules():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cfg = {"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "head_dim": 96, "vocab_size": 1000}
    p = _write_tmp({"model_type": "qwen3", **cfg})
    c = transformers.AutoConfig.for_model("qwen3", **cfg)
    with torch.device("meta"):
        m = transformers.AutoModelForCausalLM.from_config(c)
    assert sum(x.numel() for x in m.parameters()) == build(f"hf:{p}", phase="decode", seq=8).meta["params"]


def _write_tmp(cfg: dict) -> Path:
    import tempfile
    d = Path(tempfile.mkdtemp())
    (d / "config.json").write_text(json.dumps(cfg))
    return d / "config.json"


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_analyze_decode_on_h100(name):
    import ironlaw
    est = ironlaw.analyze(name, on="h100", phase="decode", seq=2048, batch=8)
    g = build(name, phase="decode", seq=2048, batch=8)
    # a decode step reads at least every weight a batch of 8 touches and the whole KV cache once
    assert float(est.time_s) * 3.35e12 >= 2 * g.meta["active_params"] + g.footprint["kv_cache"]


def test_cli_analyze_and_list(cli):
    r = cli("analyze", "qwen3-8b", "--on", "h100", "--phase", "decode", "--format", "json")
    assert r.rc == 0, r.err
    assert r.json()["time_s"] > 0
    r = cli("workloads", "list")
    assert r.rc == 0 and all(n in r.out for n in PUBLISHED)
