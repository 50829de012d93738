"""Recorded ops join one-to-one with torch.profiler's ops of a real run, and fake with real records."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from ironlaw.models.capture import record  # noqa: E402
from ironlaw.models.capture.join import join, work_records  # noqa: E402
from ironlaw.models.capture.recorder import unpacked_sequences  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def resnet18():
    spec = importlib.util.spec_from_file_location("ironlaw_example_resnet_join", ROOT / "examples" / "resnet.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.resnet18(image_size=64) + ({},)


def tiny_gpt2():
    pytest.importorskip("transformers")
    from transformers import GPT2Config, GPT2LMHeadModel
    m = GPT2LMHeadModel(GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=500, bos_token_id=0,
                                   eos_token_id=0)).eval()
    return m, (torch.zeros(2, 16, dtype=torch.long),), {"use_cache": False}


def tiny_llama():
    pytest.importorskip("transformers")
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, vocab_size=500)
    return LlamaForCausalLM(cfg).eval(), (torch.zeros(2, 16, dtype=torch.long),), {"use_cache": False}


@pytest.mark.parametrize("build", [resnet18, tiny_gpt2, tiny_llama], ids=["resnet18", "gpt2", "llama"])
def test_captured_ops_join_profiler_ops_one_to_one(build):
    from torch.profiler import ProfilerActivity, profile
    m, args, kwargs = build()
    recs = record(m, args, kwargs, real=False)
    with torch.no_grad(), unpacked_sequences(), profile(activities=[ProfilerActivity.CPU]) as prof:
        m(*args, **kwargs)
    pairs = join(recs, prof.events())
    assert len(pairs) == len(work_records(recs)) > 10
    assert all(r.name == e.name and r.name.startswith("aten::") for r, e in pairs)


@pytest.mark.parametrize("build", [resnet18, tiny_llama], ids=["resnet18", "llama"])
def test_fake_and_real_records_join_on_index_and_name(build):
    m, args, kwargs = build()
    fake = record(m, args, kwargs, real=False)
    real = record(m, args, kwargs, real=True)
    assert [(r.index, r.name) for r in fake] == [(r.index, r.name) for r in real]
    assert [r.flops for r in fake] == [r.flops for r in real]
    assert all(r.time_s is None for r in fake)
    assert all(r.time_s is not None and r.time_s >= 0 for r in real)
    assert sum(r.time_s for r in real if not r.no_work) > 0


def test_join_names_the_first_disagreement():
    m, args, kwargs = resnet18()
    recs = record(m, args, kwargs, real=False)
    recs[3].name = "aten::bogus"
    from torch.profiler import ProfilerActivity, profile
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        m(*args)
    with pytest.raises(ValueError, match="recorded|profiler events"):
        join(recs, prof.events())
