"""GPT-2 (124M) built from its config through transformers — no weights, no network.

    ironlaw analyze py:examples/gpt2.py:gpt2 --on h100 --seq 128
Returns (model, args, kwargs): the model is called as ``model(*args, **kwargs)``.
"""
import os

import torch


def gpt2(batch: int = 1, seq: int = 128):
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_embd=768, n_layer=12, n_head=12, n_positions=1024, vocab_size=50257,
                     activation_function="gelu_new")   # openai-community/gpt2 config.json
    model = GPT2LMHeadModel(cfg).eval()
    ids = torch.zeros(batch, seq, dtype=torch.long)
    return model, (ids,), {"use_cache": False}
