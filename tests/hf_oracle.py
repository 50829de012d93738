"""transformers' own modules as the oracle of a config's parameters and FLOPs: the model a config.json builds, on the
meta device (no weights allocated)."""
from __future__ import annotations

import json

import pytest

from ironlaw.models.workloads import transformer as T


def stored_config(name: str) -> dict:
    """The built-in ``name``'s stored config.json, its ``_source`` dropped."""
    cfg = json.loads((T.CONFIG_DIR / f"{name}.json").read_text())
    cfg.pop("_source")
    return cfg


def meta_model(cfg: dict):
    """transformers' model of ``cfg`` (a config.json's fields, ``model_type`` among them) on the meta device: BERT's
    encoder, every other type's causal LM."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cfg = dict(cfg)
    mt = cfg.pop("model_type")
    c = transformers.AutoConfig.for_model(mt, **cfg)
    with torch.device("meta"):
        return (transformers.AutoModel if mt == "bert" else transformers.AutoModelForCausalLM).from_config(c)
