"""Workload specs -> Graphs.

A spec is a built-in name (``llama3-8b``, ``resnet50`` …) or ``prefix:argument``
(``hf:config.json``, ``gemm:M,N,K``, ``py:file.py:factory`` …). Builders are small functions
filed in two registries; adding a workload touches nothing else.
"""
from __future__ import annotations

import re

from ...core.errors import IronlawError, unknown
from ...core.graph import PHASES, Graph
from .registry import (BUILTINS, MAX_BATCH, MAX_SEQ, PREFIX_OPTIONS, PREFIXES, RUN_OPTIONS,  # noqa: F401
                       TORCH_PREFIXES, Builtin, Request, check_options, builtin, check_grid, check_phase, check_size,
                       prefix)


# the modules that file builders in the registries, in the order they are imported: a spec's module is found by
# importing them in this order until one has filed it (most specs are language models, the second), so a registry
# lists its names in the same order however far the imports went
MODULES = ("micro", "transformer", "resnet", "dlrm", "collective")


def load_all() -> None:
    """Import every workload module: each files its builders in the registries."""
    for _ in _loading():
        pass


def load_for(key: str) -> None:
    """Import the workload modules (``MODULES``, in order) until one has filed ``key`` (a built-in name, or a
    spec's prefix followed by ':'), all of them if none does."""
    head = key.split(":", 1)[0] if ":" in key else None
    for _ in _loading():
        if key in BUILTINS or (head is not None and head in PREFIXES):
            return


def _loading():
    """Import ``MODULES`` in order, yielding before each import and once all are imported."""
    import importlib
    for name in MODULES:
        yield
        importlib.import_module(f".{name}", __name__)
    yield


def _load_torch_prefixes(head: str = "", arg: str = "") -> None:
    """The spec formats that capture through torch or onnx; a file such a spec names that does not exist is said
    first (``external``'s own words), whether or not PyTorch is installed."""
    from pathlib import Path
    path = arg.rpartition(":")[0] if head == "py" else arg if head == "onnx" else ""
    if path and not Path(path).is_file():
        raise IronlawError(f"py:{arg}: no such file '{path}'" if head == "py" else f"onnx:{arg}: no such file")
    try:
        from . import external  # noqa: F401
    except ImportError as e:
        raise IronlawError(f"this spec needs PyTorch to capture the model ({e}); "
                           "install it with `pip install torch==2.13.0`") from None


# weight formats ironlaw does not train in: 4-bit and integer training recipes (NVFP4 with stochastic rounding and
# Hadamard transforms, int8 training) are not modelled, and a graph built in them throughout would be wrong
NOT_TRAINED_IN = ("fp4", "mxfp4", "int8", "int4")


def _file_hint(spec: str) -> str | None:
    """For a file given without its spec prefix (``model.onnx``, ``config.json``, ``net.py``, ``net.py:make``),
    the spec to type instead; None for anything else (a spec with a known prefix included)."""
    if spec.partition(":")[0].lower() in (*PREFIXES, *TORCH_PREFIXES):
        return None
    path, _, factory = spec.strip().partition(".py:") if ".py:" in spec else (spec.strip(), "", "")
    if factory and not factory.startswith(("/", "\\")):
        return f"for a PyTorch module give the spec prefix, py:{path}.py:{factory}"
    low = spec.strip().lower()
    if low.endswith(".py"):
        return (f"for a PyTorch module give the spec prefix and the function that returns (module, args), "
                f"py:{spec.strip()}:FACTORY")
    for ext, head, what in ((".json", "hf", "a Hugging Face config"), (".onnx", "onnx", "an ONNX model")):
        if low.endswith(ext):
            return f"for {what} give the spec prefix, {head}:{spec.strip()}"
    from pathlib import Path
    if Path(spec.strip()).is_dir() and (Path(spec.strip()) / "config.json").is_file():
        return f"a folder; for its Hugging Face config give hf:{Path(spec.strip()) / 'config.json'}"
    return None


HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")     # a Hugging Face Hub model id: owner/name


def _hub_hint(spec: str) -> str:
    """For a Hugging Face Hub id (``meta-llama/Llama-3.1-8B``) that is no file here: how to give the model, since
    ironlaw reads no network; '' for anything else."""
    from pathlib import Path
    if not HUB_ID.fullmatch(spec) or Path(spec).exists():
        return ""
    return ("; a Hugging Face model id is not downloaded (ironlaw reads no network): save its config.json and give "
            "hf:PATH/config.json")


def resolve(req: Request) -> Graph:
    """Build the Graph a spec names."""
    if not isinstance(req.spec, str):
        raise IronlawError(f"workload: a spec is a string (a built-in name, hf:config.json, py:file.py:factory, "
                           f"gemm:M,N,K …), got {type(req.spec).__name__} {req.spec!r}; see `ironlaw workloads list`")
    spec = req.spec.strip()
    load_for(spec.lower())
    if not spec:
        raise IronlawError("workload: empty spec; see `ironlaw workloads list`")
    check_size(req.batch, "batch", MAX_BATCH)
    if req.seq is not None:
        check_size(req.seq, "seq", MAX_SEQ)
        check_grid(req.batch, req.seq)
    if req.phase is not None and req.phase not in PHASES:
        raise unknown("phase", req.phase, PHASES)
    if req.dtype is not None:
        from ...core.graph import DTYPE_BYTES
        if req.dtype not in DTYPE_BYTES:
            raise unknown("dtype", req.dtype, DTYPE_BYTES)
        if req.phase == "train" and req.dtype in NOT_TRAINED_IN:
            if req.dtype == "fp4":
                raise IronlawError("a training graph is not built in fp4: NVFP4 training lowers the linear GEMMs of "
                                   "a bf16 step (models.precision.lower; `analyze --phase train --dtype fp4`)")
            raise IronlawError(f"--dtype {req.dtype} training is not modelled: a training step runs in fp32, tf32, "
                               f"bf16 or fp16, or with its linear GEMMs lowered to fp8, mxfp8 or fp4 (NVFP4) "
                               f"(--dtype fp8|mxfp8|fp4); {req.dtype} serves inference (--phase prefill|decode)")
    key = spec.lower()
    if key in BUILTINS:
        check_options(req, key, BUILTINS[key].options)
        g = BUILTINS[key].build(req)
    elif (hint := _file_hint(spec)) is not None:
        raise IronlawError(f"unknown workload '{spec}': {hint}")
    elif ":" in spec:
        head, arg = spec.split(":", 1)
        if head.lower() not in PREFIXES and head.lower() in TORCH_PREFIXES:
            _load_torch_prefixes(head.lower(), arg)
            if head.lower() not in PREFIXES:
                raise IronlawError(f"the '{head}:' spec format is not available in this build of ironlaw")
        if head.lower() not in PREFIXES:
            raise unknown("workload prefix", head + ":", [p + ":" for p in (*PREFIXES, *TORCH_PREFIXES)])
        check_options(req, f"{head.lower()}: specs", PREFIX_OPTIONS[head.lower()])
        g = PREFIXES[head.lower()][1](arg, req)
    else:
        err = str(unknown("workload", spec, list(BUILTINS) + [p + ":" for p in (*PREFIXES, *TORCH_PREFIXES)]))
        listing = " (`ironlaw workloads list` names each)" if err.endswith(" more") else ""
        raise IronlawError(err + listing + _hub_hint(spec))
    g.meta.setdefault("spec", spec)
    return g


def builder_options(spec: str) -> tuple[str, ...] | None:
    """The builder options (``--opt KEY=VALUE``) the workload ``spec`` names takes; None for a spec that names
    no workload (``resolve`` says why)."""
    key = spec.strip().lower() if isinstance(spec, str) else ""
    load_for(key)
    if key in BUILTINS:
        return tuple(BUILTINS[key].options)
    head = key.split(":", 1)[0] if ":" in key else None
    if head in TORCH_PREFIXES and head not in PREFIXES:
        _load_torch_prefixes()
    return tuple(PREFIX_OPTIONS[head]) if head in PREFIXES else None


def catalog() -> list[dict]:
    load_all()
    rows = [{"name": b.name, "family": b.family, "phases": list(b.phases), "description": b.description}
            for b in BUILTINS.values()]
    usages = {p: u for p, (u, _) in PREFIXES.items()} | {p: u for p, u in TORCH_PREFIXES.items() if p not in PREFIXES}
    rows += [{"name": p + ":", "family": "spec", "phases": [], "description": u} for p, u in usages.items()]
    return rows


def check_serves(spec, command: str) -> None:
    """``serve`` and the serving search price a decoder's prompt and its tokens one by one: a built-in without a
    decode phase, or a spec of one kernel, collective or captured module (every prefix but ``hf:``), is refused by
    what serving needs, not by a ``--phase decode`` the user never typed (``resolve`` names any other problem)."""
    load_all()
    key = spec.strip().lower() if isinstance(spec, str) else ""
    if key in BUILTINS:
        phases = BUILTINS[key].phases
        if "decode" in phases:
            return
        what = f"its phases: {', '.join(phases)}"
    elif ":" in key and key.split(":", 1)[0] in (*PREFIXES, *TORCH_PREFIXES) and not key.startswith("hf:"):
        what = f"a {key.split(':', 1)[0]}: spec"
    elif key.startswith("hf:"):
        from . import transformer
        transformer.check_hf_serves(spec.strip()[3:], command)
        return
    else:
        return
    raise IronlawError(f"{command}: {spec} is no decoder LLM ({what}); serving prices a prompt's prefill and the "
                       f"decode of its tokens: give a built-in LLM (`ironlaw workloads list`) or hf:config.json")


def check_context(graph, seq, flag: str = "--seq") -> None:
    """Inference beyond the positions a model's config states (``context_tokens``: max_position_embeddings with
    its rope scaling; decode appends one token) is refused, as a serving engine refuses such a request; training
    may run longer sequences (context extension). ``flag``: how the user gave the length (``--seq``, a what-if)."""
    import numpy as np
    ctx = graph.meta.get("context_tokens")
    if seq is None or not ctx or graph.phase == "train":
        return
    top = int(np.max(seq))
    extra = 1 if graph.phase == "decode" else 0
    if top + extra > ctx:
        raise IronlawError(f"{flag} {top}{' + the decoded token' if extra else ''} exceeds the {ctx:,}-token context "
                           f"of {graph.name} (the positions its config states); use {flag} <= {ctx - extra}")
