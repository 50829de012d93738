"""The optimizer step on a device's shard of the parameters and the low-precision weight copies it leaves.
"""
from __future__ import annotations

import numpy as np

from ...core import passes
from ...core.graph import Graph, Op


def plan_optimizer_s(g: Graph, hw, p_dev: float, opt_params: float, composition: str) -> float:
    """The optimizer step on the ``opt_params`` parameters the device steps (``DeviceMemory.optimizer_params``: with
    ZeRO its shard, the experts' over the expert-data-parallel group) and the low-precision weight copies it leaves
    (``param_quantize_s``) of the ``p_dev`` it holds."""
    return float(step_optimizer_s(g, hw, np.asarray([p_dev], dtype=float), np.asarray([opt_params], dtype=float),
                                  composition)[0])


def step_optimizer_s(g: Graph, hw, p_dev: np.ndarray, shard: np.ndarray, composition: str) -> np.ndarray:
    """``plan_optimizer_s`` of each device holding ``p_dev`` parameters, ``shard`` of them its optimizer's (arrays:
    one layout per element)."""
    if "trainable_params" in g.meta:                 # LoRA: the frozen base weights' FP8 copies are never redone
        return optimizer_s(g, hw, shard, composition)
    return optimizer_s(g, hw, shard, composition) + param_quantize_s(g, hw, p_dev, shard, composition)


def param_quantize_s(g: Graph, hw, p_dev: np.ndarray, shard: np.ndarray, composition: str) -> np.ndarray:
    """Seconds per step of the low-precision weight copies of a device holding ``p_dev`` parameters of which
    ``shard`` are its optimizer's (``precision.param_step_bytes``): one memory-bound op through the law."""
    from ...law import law
    from ..precision import param_step_bytes, WIDE
    b = param_step_bytes(g.meta, np.asarray(p_dev, dtype=float), np.asarray(shard, dtype=float))
    if not np.any(b):
        return np.zeros(np.shape(b))
    op = Op("param_quantize", "elementwise", bytes={"weights": b}, dtype=WIDE, bytes_written=0.5 * b)
    og = Graph("param_quantize", "train", g.dtype, [op])
    return np.asarray(law.predict(og, hw, composition).total_s, dtype=float).reshape(-1)


def optimizer_s(g: Graph, hw, opt_params: np.ndarray, composition: str) -> np.ndarray:
    """The optimizer step of each of ``opt_params`` (the parameters of a device's shard) when ``g`` has one:
    one ``law.predict`` over the distinct shard sizes (AdamW is linear in them)."""
    from dataclasses import replace
    from ...law import law
    from ..workloads.common import optimizer_step
    if not any(passes.is_optimizer(op.name) for op in g.ops):
        return np.zeros(opt_params.shape)
    u, inv = np.unique(opt_params, return_inverse=True)
    one = optimizer_step(1.0, g.dtype)
    op = replace(one, flops=one.flops * u, bytes={k: v * u for k, v in one.bytes.items()},
                 bytes_written=one.bytes_written * u)
    og = Graph("optimizer", "train", g.dtype, [op], footprint={"optimizer": 12.0 * u})
    return np.asarray(law.predict(og, hw, composition).total_s, dtype=float).reshape(-1)[inv.reshape(-1)]
