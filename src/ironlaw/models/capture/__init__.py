"""Per-operator graphs from any PyTorch model (torch is imported only when these are called).

    record(module, args, kwargs=None, *, real)  -> list[OpRecord]   one run, op by op
    capture_graph(module, args, kwargs=None, *, phase, name) -> Graph
    hf.build(path, req) -> Graph                  a transformers config, no weights, no network

Modules: ``recorder`` (the TorchDispatchMode), ``formulas`` (FLOP/byte formulas per aten op),
``graph`` (records -> ironlaw.core.graph.Graph), ``hf`` (transformers configs), ``join`` (records with
torch.profiler events), ``onnx`` (ONNX files, an optional format without torch kernels).
"""
from __future__ import annotations


def record(module, args, kwargs=None, *, real: bool, phase: str = "infer", device: str = "cpu"):
    """Op records of ``module(*args, **kwargs)``; on real tensors each record also has ``time_s``.

    Records join one-to-one with ``torch.profiler``'s op names, and a fake run's records join a
    real run's on (index, name).
    """
    from .recorder import record as _record
    return _record(module, args, kwargs, real=real, phase=phase, device=device)


def capture_graph(module, args, kwargs=None, *, phase: str = "infer", name: str = "model", dtype: str = "fp32",
                  device: str = "cpu", meta: dict | None = None):
    """The ironlaw Graph of one step of ``module`` (phase 'infer' or 'train'), captured on fake tensors."""
    from .graph import to_graph
    from .recorder import capture
    cap = capture(module, args, kwargs, real=False, phase="train" if phase == "train" else "infer", device=device)
    return to_graph(cap, name, phase, dtype, meta)


__all__ = ["record", "capture_graph"]
