"""Capture a Hugging Face transformers model from its config: no weights, no network.

``build('path/config.json', req)`` reads the config, builds the model with ``from_config`` on
``meta`` (nothing allocated, no download: ``HF_HUB_OFFLINE=1``), and records one step on fake
tensors of the target device:
    prefill           input_ids [batch, seq]; K,V kept in the cache; logits of the last token only
    infer             input_ids [batch, seq], no cache, logits of every token
    decode            one new token per sequence against a static KV cache holding ``seq`` tokens
    train             forward with labels (the model's own loss), backward and one AdamW step
"""
from __future__ import annotations

import json
import logging
import os
import re
from contextlib import contextmanager
from pathlib import Path

from ...core.errors import IronlawError, unknown
from ...core.graph import DTYPE_BYTES, TORCH_NAMES

# The analytic builder's defaults (models.workloads.transformer.DEFAULT_SEQ): the same config, captured or built,
# is priced at the same length when --seq is not given
DEFAULT_SEQ = {"decoder": 1024, "encoder": 512}


def load_config(path: str):
    """A transformers config from a config.json file (or a folder holding one)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    if not p.is_file():
        raise IronlawError(f"hf: no such config file '{path}'; give a config.json (a model folder's config)")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise IronlawError(f"hf: cannot read '{p}' as JSON: {_one_line(e)}") from None
    if not isinstance(data, dict) or "model_type" not in data:
        raise IronlawError(f"hf: '{p}' has no 'model_type'; it is not a transformers config.json")
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    mt = data.pop("model_type")
    if mt not in CONFIG_MAPPING:
        raise unknown(f"transformers model_type in '{p}' (transformers {transformers.__version__})", mt,
                      list(CONFIG_MAPPING.keys()))
    try:
        return transformers.AutoConfig.for_model(mt, **data)
    except Exception as e:
        raise IronlawError(f"hf: transformers cannot build a '{mt}' config from '{p}': {_one_line(e)}") from None


def model_class(cfg):
    """The class named in the config's ``architectures``, else the auto class for causal LM / base model."""
    import transformers
    for name in getattr(cfg, "architectures", None) or []:
        cls = getattr(transformers, name, None)
        if cls is not None:
            return cls
    for auto in ("AutoModelForCausalLM", "AutoModelForImageClassification", "AutoModel"):
        try:
            return getattr(transformers, auto)._model_mapping[type(cfg)]
        except (KeyError, AttributeError):
            continue
    raise IronlawError(f"hf: transformers has no model class for config type '{type(cfg).__name__}'")


def build_model(cfg, dtype: str):
    import torch
    if dtype not in TORCH_NAMES:
        raise IronlawError(f"hf capture: dtype '{dtype}' has no torch equivalent here; use one of "
                           f"{', '.join(TORCH_NAMES)}")
    cls = model_class(cfg)
    try:
        with torch.device("meta"):
            model = cls._from_config(cfg, dtype=getattr(torch, TORCH_NAMES[dtype]))
    except Exception as e:
        raise IronlawError(f"hf: transformers cannot build {cls.__name__} from this config: {_one_line(e)}") from None
    return model.eval()


def build(path: str, req):
    """Graph of the HF model whose config is at ``path`` (see the module doc for the phases)."""
    import numpy as np
    for what, v in (("batch", req.batch), ("seq", req.seq)):
        if v is not None and np.ndim(v) > 0:
            raise IronlawError(f"hf capture records one configuration; give one --{what}, not an array")
    cfg = load_config(path)
    if getattr(cfg, "is_encoder_decoder", False):      # its forward needs decoder inputs too: refused, by name
        raise IronlawError(f"hf: '{path}' is an encoder-decoder model ({cfg.model_type}); the capture runs one "
                           f"stack's forward (decoder-only LLMs, encoders, image models), not a "
                           f"sequence-to-sequence pair")
    dtype = req.dtype or "bf16"
    if dtype not in DTYPE_BYTES:
        raise unknown("dtype", dtype, DTYPE_BYTES)
    with transformers_said() as said:
        model = build_model(cfg, dtype)
        g = _capture(model, cfg, path, req, dtype)
    if said:
        g.meta["notes"] = list(g.meta.get("notes", [])) + said
    return g


def _capture(model, cfg, path: str, req, dtype: str):
    """The graph of one step of ``model`` (``build``'s phases)."""
    import torch

    from . import recorder
    from .graph import to_graph
    batch = int(req.batch)
    text = getattr(cfg, "vocab_size", None) is not None
    causal = type(model).__name__.endswith(("ForCausalLM", "LMHeadModel"))
    phase = req.phase or ("prefill" if causal else "infer")
    allowed = ("prefill", "decode", "train", "infer") if causal else ("infer", "train")
    if phase not in allowed:
        raise IronlawError(f"{type(model).__name__} has no phase '{phase}'; it supports: {', '.join(allowed)}")
    default = DEFAULT_SEQ["decoder" if causal else "encoder"]
    seq = int(req.seq) if req.seq is not None else min(default, getattr(cfg, "max_position_embeddings", default))
    device = "cpu" if req.device in ("cuda", "gpu") and not torch.cuda.is_available() else req.device
    meta = {"batch": batch, "seq": seq, "config": str(path), "architecture": type(model).__name__,
            "frontend": "transformers"}
    if device != req.device:
        meta["notes"] = [f"captured with {device} kernels: this torch has no {req.device}"]

    prefill = fake_mode = None
    if not text:
        size = _image_size(cfg)
        if req.seq is not None:
            raise IronlawError(f"{type(model).__name__}: --seq does not apply to an image model; drop it (its input "
                               f"is a square image of {size} pixels a side, the config's image_size)")
        kwargs = {"pixel_values": torch.zeros(batch, getattr(cfg, "num_channels", 3), size, size,
                                              dtype=next(model.parameters()).dtype, device="meta")}
        if phase == "train":
            kwargs["labels"] = torch.zeros(batch, dtype=torch.long, device="meta")
        meta.pop("seq")
        meta["image_size"] = size
    elif phase == "decode":
        from transformers import StaticCache
        fake_mode = recorder.make_fake_mode()
        with fake_mode:
            cache = StaticCache(config=cfg, max_cache_len=seq + 1)
        key = "cache" if accepts(model, "cache") else "past_key_values"      # renamed in transformers 5.x
        prefill = {"input_ids": torch.zeros(batch, seq, dtype=torch.long, device="meta"), key: cache,
                   "use_cache": True}
        kwargs = {"input_ids": torch.zeros(batch, 1, dtype=torch.long, device="meta"), key: cache,
                  "use_cache": True}
        if accepts(model, "logits_to_keep"):
            prefill["logits_to_keep"] = kwargs["logits_to_keep"] = 1
        meta["tokens"] = batch
    else:
        ids = torch.zeros(batch, seq, dtype=torch.long, device="meta")
        kwargs = {"input_ids": ids}
        if causal:
            # prefill keeps K,V in a cache and computes logits for the last token only (as generate()
            # does); infer and train score every token without a cache
            kwargs["use_cache"] = phase == "prefill"
            if phase == "prefill" and accepts(model, "logits_to_keep"):
                kwargs["logits_to_keep"] = 1
        if phase == "train":
            kwargs["labels"] = ids
        meta["tokens"] = batch * seq
    cap = recorder.capture(model, (), kwargs, real=False, phase="train" if phase == "train" else "infer",
                           device=device, prefill_kwargs=prefill, fake_mode=fake_mode)
    name = f"hf:{Path(path).parent.name if Path(path).name == 'config.json' else Path(path).stem}"
    return to_graph(cap, name, phase, dtype, meta)


FALLBACK = re.compile(r"`([^`]+)` is falling back to its reference PyTorch implementation because `([^`]+)`")


@contextmanager
def transformers_said():
    """transformers' warnings while it builds and runs the model, gathered as the graph's notes in place of its
    own stderr lines (over 80 columns, one per kernel): each kernel it ran as its reference PyTorch code for want
    of a fused package (``integrations/hub_kernels.py``: Qwen3-Next's gated delta rule without
    flash-linear-attention) in one note, since the graph then holds that code's ops; any other warning as said."""
    said: list[str] = []

    class Gather(logging.Handler):
        def emit(self, record):
            said.append(record.getMessage())
    log = logging.getLogger("transformers")
    saved, log.handlers = log.handlers, [Gather(logging.WARNING)]
    try:
        yield said
    finally:
        log.handlers = saved
        fallbacks = [m for m in (FALLBACK.search(s) for s in said) if m]
        others = [s for s in said if not FALLBACK.search(s)]
        packages = ", ".join(dict.fromkeys(m.group(2) for m in fallbacks))
        said[:] = others + ([f"transformers ran the reference PyTorch code of "
                             f"{', '.join(dict.fromkeys(m.group(1) for m in fallbacks))} ({packages} not installed "
                             f"or not for this device): the graph holds that code's ops, not the fused kernels'"]
                            if fallbacks else [])


def accepts(model, name: str) -> bool:
    import inspect
    try:
        return name in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def _image_size(cfg) -> int:
    s = getattr(cfg, "image_size", 224)
    return int(s[0] if isinstance(s, (list, tuple)) else s)


def _one_line(e: Exception) -> str:
    s = str(e).strip().splitlines()
    return f"{e.__class__.__name__}: {s[0][:240]}" if s else e.__class__.__name__
