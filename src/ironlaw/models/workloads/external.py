"""Workload specs for models users bring: ``py:file.py:factory``, ``torchvision:NAME``, ``timm:NAME``,
``onnx:file.onnx``. Each builds the model on ``meta`` (no weights allocated) and captures it op by
op on fake tensors (``ironlaw.models.capture``). Importing this module imports torch.
"""
from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path

import numpy as np
import torch

from ...core.errors import IronlawError, suggest
from ...core.graph import DTYPE_BYTES, TORCH_NAMES, Graph
from .registry import TORCH_PREFIXES, Request, prefix

CAPTURE_PHASES = ("infer", "prefill", "train")
TORCH_DTYPES = {d: getattr(torch, t) for d, t in TORCH_NAMES.items()}


def _one_config(req: Request) -> None:
    for what, v in (("batch", req.batch), ("seq", req.seq)):
        if v is not None and np.ndim(v) > 0:
            raise IronlawError(f"a captured model records one configuration; give one --{what}, not an array")


def _no_seq(req: Request, what: str, why: str) -> None:
    """A model whose input shape takes no sequence length refuses --seq (the run would ignore it)."""
    if req.seq is not None:
        raise IronlawError(f"{what}: --seq {req.seq} does not apply: {why}; drop --seq")


def _phase(req: Request, what: str) -> str:
    phase = req.phase or "infer"
    if phase not in CAPTURE_PHASES:
        raise IronlawError(f"{what} has no phase '{phase}'; a captured model supports: {', '.join(CAPTURE_PHASES)}"
                           " (decode needs a KV cache: use hf:config.json)")
    return phase


def capture_graph(name: str, module, args, kwargs, req: Request, meta: dict, notes: list[str]) -> Graph:
    """Capture ``module(*args, **kwargs)`` for ``req`` (phase, dtype, device) and return its Graph."""
    from ..capture import graph as cgraph
    from ..capture import recorder

    _one_config(req)
    phase = _phase(req, name)
    if req.dtype is not None:
        if req.dtype not in TORCH_DTYPES:
            raise IronlawError(f"{name}: --dtype {req.dtype} cannot be captured in torch here; "
                               f"use one of {', '.join(TORCH_DTYPES)}")
        dt = TORCH_DTYPES[req.dtype]
        module = module.to(dt)
        args = _cast(args, dt)
        kwargs = _cast(kwargs, dt)
    device = req.device
    if device in ("cuda", "gpu") and not torch.cuda.is_available():
        notes.append(f"captured with cpu kernels: this torch has no {device}")
        device = "cpu"
    cap = recorder.capture(module, args, kwargs, real=False, phase="train" if phase == "train" else "infer",
                           device=device)
    cap.notes.extend(notes)
    p = next(iter(module.parameters()), None)
    default = cgraph.ironlaw_dtype(str(p.dtype).replace("torch.", ""), "fp32") if p is not None else "fp32"
    dtype = req.dtype or default
    if dtype not in DTYPE_BYTES:
        dtype = "fp32"
    if req.dtype is None and dtype != "bf16":      # the built-ins run bf16: a module's own other dtype is said
        own = "its parameters' dtype" if p is not None else "the default of a module without parameters"
        cap.notes.append(f"captured in {dtype}, {own} (the built-in workloads run bf16: --dtype bf16 to compare)")
    return cgraph.to_graph(cap, name, phase, dtype, meta)


def _cast(x, dt):
    if isinstance(x, torch.Tensor):
        return x.to(dt) if x.is_floating_point() else x
    if isinstance(x, (list, tuple)):
        return type(x)(_cast(y, dt) for y in x)
    if isinstance(x, dict):
        return {k: _cast(v, dt) for k, v in x.items()}
    return x


# ---------------------------------------------------------------- py:file.py:factory
def load_factory(arg: str):
    path, sep, fn_name = arg.rpartition(":")
    if not sep or not path:
        raise IronlawError(f"py:{arg}: expected py:path/to/file.py:factory (a function returning (module, args) "
                           "or (module, args, kwargs))")
    p = Path(path)
    if not p.is_file():
        raise IronlawError(f"py:{arg}: no such file '{path}'")
    mod_name = f"ironlaw_user_{abs(hash(str(p.resolve())))}"
    spec = importlib.util.spec_from_file_location(mod_name, p)
    if spec is None or spec.loader is None:
        raise IronlawError(f"py:{arg}: '{path}' is not a Python file")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:
        raise IronlawError(f"py:{arg}: importing '{path}' raised {_one_line(e)}") from None
    fn = getattr(mod, fn_name, None)
    if not callable(fn):
        names = [n for n, v in vars(mod).items() if callable(v) and not n.startswith("_")
                 and getattr(v, "__module__", None) == mod_name]
        raise IronlawError(f"py:{arg}: '{path}' has no function '{fn_name}'" + (suggest(fn_name, names)
                           or (f"; it defines: {', '.join(names)}" if names else "")))
    return fn


def call_factory(fn, req: Request, what: str):
    """Call the factory on ``meta`` (nothing allocated), passing batch/seq when it takes them."""
    kw = factory_kwargs(fn, req.batch, req.seq, what)
    notes = []
    try:
        with torch.device("meta"):
            out = fn(**kw)
    except Exception as e:
        meta_error = _one_line(e)
        try:
            out = fn(**kw)
        except Exception as e2:
            raise IronlawError(f"{what}: the factory raised {_one_line(e2)}") from None
        notes.append(f"built with real weights: the factory failed on meta ({meta_error})")
    return check_return(out, what), kw, notes


def factory_kwargs(fn, batch, seq, what: str) -> dict:
    """The keywords a ``py:`` factory is called with: ``batch`` and ``seq`` where it names them. A --batch other
    than 1 or a --seq given to a factory without that parameter is refused: the capture would ignore it."""
    params = inspect.signature(fn).parameters
    for name, value, given in (("batch", batch, batch != 1), ("seq", seq, seq is not None)):
        if given and name not in params:
            raise IronlawError(f"{what}: --{name} {value} does not apply: {fn.__name__}{inspect.signature(fn)} "
                               f"takes no '{name}' parameter, and ironlaw passes only batch= and seq= by name; "
                               f"drop --{name}, or give the factory a {name} parameter")
    return {**({"batch": int(batch)} if "batch" in params else {}),
            **({"seq": int(seq)} if "seq" in params and seq is not None else {})}


def check_return(out, what: str):
    if not isinstance(out, (tuple, list)) or len(out) not in (2, 3):
        raise IronlawError(f"{what}: the factory must return (module, args) or (module, args, kwargs), "
                           f"got {type(out).__name__}")
    module, args = out[0], out[1]
    kwargs = out[2] if len(out) == 3 else {}
    if not isinstance(module, torch.nn.Module):
        raise IronlawError(f"{what}: the factory's first value must be a torch.nn.Module, got {type(module).__name__}")
    if isinstance(args, torch.Tensor):
        args = (args,)
    if not isinstance(args, (tuple, list)):
        raise IronlawError(f"{what}: the factory's args must be a tuple (the model is called as module(*args)), "
                           f"got {type(args).__name__}")
    if not isinstance(kwargs, dict):
        raise IronlawError(f"{what}: the factory's kwargs must be a dict, got {type(kwargs).__name__}")
    return module, tuple(args), kwargs


@prefix("py", TORCH_PREFIXES["py"])
def py_spec(arg: str, req: Request) -> Graph:
    what = f"py:{arg}"
    _one_config(req)
    _phase(req, what)
    fn = load_factory(arg)
    (module, args, kwargs), kw, notes = call_factory(fn, req, what)
    return capture_graph(what, module, args, kwargs, req, {**kw, "factory": arg}, notes)


# ---------------------------------------------------------------- torchvision / timm
def _import_optional(name: str, what: str):
    try:
        return importlib.import_module(name)
    except Exception as e:   # not installed, or a binary that does not load beside this torch
        raise IronlawError(f"{what}: {name} does not import here ({_one_line(e)}); install a {name} built for "
                           f"torch {torch.__version__}, or use py: with a plain-torch definition "
                           "(e.g. py:examples/resnet.py:resnet50)") from None


def _image_model(what: str, req: Request, library: str, names, build, default_size) -> Graph:
    """A torchvision: or timm: model (``what``) captured on a batch × 3 × size² input: one configuration, no --seq,
    ``names(module)`` its library's models, ``build(module, name)`` one of them (built on the meta device), its
    image size --opt image_size or ``default_size(model)``."""
    _one_config(req)
    _phase(req, what)
    _no_seq(req, what, "its input is batch × 3 × image_size² (--opt image_size=N)")
    module = _import_optional(library, what)
    arg = what.split(":", 1)[1]
    known = names(module)
    if arg not in known:
        from ...core.errors import unknown
        raise unknown(f"{library} model", arg, known)
    with torch.device("meta"):
        model = build(module, arg).eval()
        size = _image_size(what, req.options.get("image_size", default_size(model)))
        x = torch.randn(int(req.batch), 3, size, size)
    return capture_graph(what, model, (x,), {}, req, {"batch": int(req.batch), "image_size": size}, [])


def _image_size(what: str, value) -> int:
    """``value`` (--opt image_size, or the library's default) as pixels a side: a whole number ≥ 1, or an error."""
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit() or int(text) < 1:
        raise IronlawError(f"{what}: option image_size must be a whole number of pixels from 1 up (the side of a "
                           f"square input), got {value!r}")
    return int(text)


@prefix("torchvision", TORCH_PREFIXES["torchvision"], options=("image_size",))
def torchvision_spec(arg: str, req: Request) -> Graph:
    return _image_model(f"torchvision:{arg}", req, "torchvision", lambda tv: tv.models.list_models(),
                        lambda tv, name: tv.models.get_model(name, weights=None), lambda model: 224)


@prefix("timm", TORCH_PREFIXES["timm"], options=("image_size",))
def timm_spec(arg: str, req: Request) -> Graph:
    return _image_model(f"timm:{arg}", req, "timm", lambda timm: timm.list_models(),
                        lambda timm, name: timm.create_model(name, pretrained=False),
                        lambda model: model.default_cfg.get("input_size", (3, 224, 224))[-1])


# ---------------------------------------------------------------- onnx
@prefix("onnx", TORCH_PREFIXES["onnx"])
def onnx_spec(arg: str, req: Request) -> Graph:
    _one_config(req)
    if (req.phase or "infer") != "infer":
        raise IronlawError(f"onnx:{arg}: an ONNX file is an inference graph; it has no phase '{req.phase}'")
    _no_seq(req, f"onnx:{arg}", "an ONNX graph's shapes are its own (--batch sets a symbolic first dimension)")
    from ..capture import onnx as onnx_capture
    return onnx_capture.build(arg, req)


def _one_line(e: Exception) -> str:
    s = str(e).strip().splitlines()
    return f"{e.__class__.__name__}: {s[0][:240]}" if s else e.__class__.__name__
