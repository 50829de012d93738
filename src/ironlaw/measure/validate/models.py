"""What `ironlaw validate` runs: a spec turned into a model that can be captured on fake tensors
(nothing allocated) and then built for real with random weights.

    py:file.py:factory     the factory (on meta for the capture, for real afterwards)
    hf:config.json         transformers ``from_config`` (no weights downloaded, HF_HUB_OFFLINE=1)
    gpt2, bert-base, …     the built-in transformer configs (``workloads/configs``), through transformers
    resnet18 … resnet152   ``examples/resnet.py`` (layer for layer torchvision's ResNet)
    mlp                    ``examples/mlp.py``
    mobilenet              ``examples/mobilenet.py`` (MobileNetV2's architecture, 224×224)

Phases: ``infer`` (default; a decoder scores every token, no cache), ``prefill`` (a decoder fills a KV
cache and computes the last token's logits), ``decode`` (one new token per sequence against a
``StaticCache`` already holding ``--seq`` tokens; every timed step rewinds the cache to the same
length, so repeats run the same kernels).
"""
from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ...core.errors import IronlawError, unknown

REPO = Path(__file__).resolve().parents[4]
EXAMPLES = REPO / "examples"
RESNETS = {"resnet18": ("BasicBlock", [2, 2, 2, 2]), "resnet34": ("BasicBlock", [3, 4, 6, 3]),
           "resnet50": ("Bottleneck", [3, 4, 6, 3]), "resnet101": ("Bottleneck", [3, 4, 23, 3]),
           "resnet152": ("Bottleneck", [3, 8, 36, 3])}
DEFAULT_SEQ = 128
PHASES = ("infer", "prefill", "decode")


@dataclass
class Step:
    """One call to time: ``module(*args, **kwargs)``; ``before`` runs untimed before each call."""
    module: object
    args: tuple
    kwargs: dict
    before: Callable[[], None] | None = None

    def __call__(self):
        return self.module(*self.args, **self.kwargs)


@dataclass
class Runnable:
    name: str
    phase: str
    batch: int
    seq: int | None
    fake: Callable[[], object]          # () -> recorder.Capture on fake tensors (allocates nothing)
    real: Callable[[], Step]            # () -> Step with real tensors and random weights
    meta: dict = field(default_factory=dict)


def check_phase(phase: str | None) -> None:
    """A phase validate runs (``PHASES``) or None, else one line; train is predicted, not measured."""
    if phase is not None and phase not in PHASES:
        if phase == "train":
            raise IronlawError(f"validate times forward passes ({', '.join(PHASES)}); a training step is predicted, "
                               f"not measured: ironlaw analyze SPEC --on HW --phase train")
        raise unknown("validate phase", phase, PHASES)


def resolve(spec: str, batch: int, seq: int | None, phase: str | None) -> Runnable:
    if not isinstance(spec, str) or not spec.strip():
        raise IronlawError("validate: empty spec; give py:file.py:factory, hf:config.json or a built-in name")
    for what, v in (("batch", batch), ("seq", seq)):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1 or v > 1 << 20):
            raise IronlawError(f"validate: --{what} must be a positive whole number, got {v!r}")
    check_phase(phase)
    spec = spec.strip()
    head, _, arg = spec.partition(":")
    if head == "py" and arg:
        return _py(spec, arg, batch, seq, phase)
    if head == "hf" and arg:
        p = Path(arg)
        return _hf(f"hf:{p.parent.name if p.name == 'config.json' else p.stem}", arg, batch, seq, phase)
    key = spec.lower()
    if key in RESNETS:
        return _resnet(key, batch, phase)
    if key == "mlp":
        return _py(key, f"{EXAMPLES / 'mlp.py'}:mlp", batch, seq, phase)
    if key == "mobilenet":
        return _py(key, f"{EXAMPLES / 'mobilenet.py'}:mobilenet_v2", batch, seq, phase)
    from ...models.workloads.transformer import CONFIG_DIR
    if (CONFIG_DIR / f"{key}.json").is_file():
        return _hf(key, str(CONFIG_DIR / f"{key}.json"), batch, seq, phase)
    known = list(RESNETS) + ["mlp", "mobilenet"] + sorted(p.stem for p in CONFIG_DIR.glob("*.json"))
    raise IronlawError(f"{unknown('workload to run', spec, known, listed=known)}; validate runs these, which have a "
                       f"torch equivalent, and py:file.py:factory or hf:config.json for others")


# ---------------------------------------------------------------- plain torch modules
def _infer_only(what: str, phase: str | None) -> str:
    if phase not in (None, "infer"):
        raise IronlawError(f"{what} has no phase '{phase}'; a plain torch model runs 'infer' "
                           "(prefill/decode need a transformers config: hf:config.json)")
    return "infer"


def _capture_module(module, args, kwargs):
    from ...models.capture import recorder
    return recorder.capture(module, args, kwargs, real=False)


def _py(name: str, arg: str, batch: int, seq: int | None, phase: str | None) -> Runnable:
    import torch

    from ...models.workloads.external import check_return, factory_kwargs, load_factory

    what = name if name.startswith("py:") else f"py:{arg}"
    phase = _infer_only(what, phase)
    fn = load_factory(arg)
    kw = factory_kwargs(fn, batch, seq, what)
    try:                              # on meta only: nothing is allocated before the footprint is checked
        with torch.device("meta"):
            module, args, kwargs = check_return(fn(**kw), what)
    except IronlawError:
        raise
    except Exception as e:
        raise IronlawError(f"{what}: the factory does not build on the meta device ({e.__class__.__name__}: "
                           f"{str(e)[:200]}); validate builds it there first to check its footprint before "
                           "allocating anything — create tensors without an explicit device") from None

    def real() -> Step:
        try:
            out = fn(**kw)
        except Exception as e:
            raise IronlawError(f"{what}: the factory raised {e.__class__.__name__}: {e}") from None
        m, a, k = check_return(out, what)
        if any(t.is_meta for t in m.parameters()):
            raise IronlawError(f"{what}: the factory returned meta parameters; validate needs real ones")
        return Step(m.eval(), tuple(a), dict(k))
    return Runnable(name, phase, batch, seq, lambda: _capture_module(module.eval(), args, kwargs), real,
                    {"factory": arg, **kw})


def _examples_module(file: str):
    p = EXAMPLES / file
    if not p.is_file():
        raise IronlawError(f"validate: {p} is missing; the built-in CNNs run the plain-torch definitions there")
    name = f"ironlaw_examples_{p.stem}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, p)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules[name] = mod
    return sys.modules[name]


def _resnet(name: str, batch: int, phase: str | None) -> Runnable:
    import torch
    phase = _infer_only(name, phase)
    mod = _examples_module("resnet.py")
    block, layers = RESNETS[name]

    def build(device: str):
        with torch.device(device):
            m = mod.ResNet(getattr(mod, block), layers).eval()
            x = torch.randn(batch, 3, 224, 224)
        return m, x
    m_meta, x_meta = build("meta")
    return Runnable(name, phase, batch, None, lambda: _capture_module(m_meta, (x_meta,), {}),
                    lambda: Step(*(lambda m, x: (m, (x,), {}))(*build("cpu"))),
                    {"image_size": 224, "definition": "examples/resnet.py"})


# ---------------------------------------------------------------- transformers
def _hf(name: str, path: str, batch: int, seq: int | None, phase: str | None) -> Runnable:
    import torch
    os.environ["HF_HUB_OFFLINE"] = "1"
    from ...models.capture import hf, recorder

    cfg = hf.load_config(path)
    cfg.use_cache = True
    meta_model = hf.build_model(cfg, "fp32")
    cls = type(meta_model)
    causal = cls.__name__.endswith(("ForCausalLM", "LMHeadModel"))
    phase = phase or "infer"
    if phase != "infer" and not causal:
        raise IronlawError(f"{name} ({cls.__name__}) has no phase '{phase}'; an encoder runs 'infer'")
    if getattr(cfg, "vocab_size", None) is None:
        raise IronlawError(f"{name}: validate runs text models from a config (vision configs: use py:)")
    seq = seq or min(DEFAULT_SEQ, getattr(cfg, "max_position_embeddings", DEFAULT_SEQ))
    limit = getattr(cfg, "max_position_embeddings", None)
    need = seq + (1 if phase == "decode" else 0)          # decode adds one token after the cached ones
    if isinstance(limit, int) and need > limit:
        raise IronlawError(f"{name}: {phase} at --seq {seq} needs {need} positions but the config allows "
                           f"{limit} (max_position_embeddings); a real run would index past them — use --seq "
                           f"{limit - (1 if phase == 'decode' else 0)} or less")
    keep = {"logits_to_keep": 1} if hf.accepts(meta_model, "logits_to_keep") else {}
    key = "cache" if hf.accepts(meta_model, "cache") else "past_key_values"      # renamed in transformers 5.x

    def calls(device: str, cache_factory):
        ids = (torch.zeros if device == "meta" else _random_ids(cfg.vocab_size))
        if phase == "infer":
            kw = {"input_ids": ids(batch, seq, dtype=torch.long, device=device)}
            if causal:
                kw["use_cache"] = False
            return None, kw, None
        if phase == "prefill":
            return None, {"input_ids": ids(batch, seq, dtype=torch.long, device=device), "use_cache": True,
                          **keep}, None
        cache = cache_factory()
        pre = {"input_ids": ids(batch, seq, dtype=torch.long, device=device), key: cache, "use_cache": True,
               **keep}
        step = {"input_ids": ids(batch, 1, dtype=torch.long, device=device), key: cache, "use_cache": True, **keep}
        return pre, step, cache

    def fake():
        fm = recorder.make_fake_mode() if phase == "decode" else None
        pre, kw, _ = calls("meta", lambda: _static_cache(cfg, batch, seq, fm))
        return recorder.capture(meta_model, (), kw, real=False, prefill_kwargs=pre, fake_mode=fm)

    def real() -> Step:
        torch.manual_seed(0)
        try:
            model = cls._from_config(cfg, dtype=torch.float32).eval()
        except Exception as e:
            raise IronlawError(f"{name}: transformers cannot build {cls.__name__}: {e.__class__.__name__}: {e}") from None
        pre, kw, cache = calls("cpu", lambda: _static_cache(cfg, batch, seq, None))
        if pre is None:
            return Step(model, (), kw)
        with torch.no_grad():
            model(**pre)
        return Step(model, (), kw, before=lambda: _rewind(cache, seq))
    meta = {"seq": seq, "config": str(path), "architecture": cls.__name__, "frontend": "transformers"}
    if phase == "decode":
        meta["context"] = seq
    return Runnable(name, phase, batch, seq, fake, real, meta)


def _random_ids(vocab: int):
    import torch

    def make(*shape, dtype, device):
        return torch.randint(0, vocab, shape, dtype=dtype, device=device)
    return make


def _static_cache(cfg, batch: int, seq: int, fake_mode):
    from contextlib import nullcontext

    from transformers import StaticCache
    with fake_mode if fake_mode is not None else nullcontext():
        return StaticCache(config=cfg, max_cache_len=seq + 1)


def _rewind(cache, seq: int) -> None:
    """Put a StaticCache back to ``seq`` tokens so that the next decode step writes the same slot."""
    layers = getattr(cache, "layers", None) or []
    done = 0
    for layer in layers:
        n = getattr(layer, "cumulative_length", None)
        if n is not None and hasattr(n, "fill_"):
            n.fill_(seq)
            done += 1
    if not done:
        raise IronlawError("validate decode: this transformers' StaticCache has no cumulative_length to rewind; "
                           "cannot repeat a decode step at a fixed context length")
