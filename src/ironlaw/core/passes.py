"""The pass of a training step an op runs in, told by its name: the builders name a forward op's backward
``<name>.backward`` (``models.workloads.common.backward``), a forward op run again before the backward under
activation recomputation ``<name>.recompute`` (``models.parallel.with_recompute``, ``whatif`` recompute), and
the optimizer step ``optimizer.<rule>`` (``optimizer_step``); every other op runs in the forward. These name
the pass, not the op's kind: a backward matmul is a matmul.

    passes.of("layer.qkv.backward")   → Pass.BACKWARD
    passes.backward_of("layer.qkv")   → "layer.qkv.backward";  passes.forward_of("layer.qkv.backward") → "layer.qkv"
"""
from __future__ import annotations

from enum import Enum


class Pass(Enum):
    FORWARD = "forward"
    BACKWARD = "backward"
    RECOMPUTE = "recompute"
    OPTIMIZER = "optimizer"


SUFFIX = {Pass.BACKWARD: ".backward", Pass.RECOMPUTE: ".recompute"}
OPTIMIZER = "optimizer"                # the optimizer step's first name part
# a captured graph labels an op of the backward or the optimizer step "<aten name> (<pass>)"
# (``models.capture.graph.to_graph``): "aten::_scaled_dot_product_flash_attention_backward (backward)"
CAPTURED = {Pass.BACKWARD: " (backward)", Pass.OPTIMIZER: " (optimizer)"}


def of(name: str) -> Pass:
    """The pass of the op called ``name``."""
    for p, suffix in SUFFIX.items():
        if name.endswith(suffix):
            return p
    for p, suffix in CAPTURED.items():
        if name.endswith(suffix):
            return p
    return Pass.OPTIMIZER if is_optimizer(name) else Pass.FORWARD


def is_backward(name: str) -> bool:
    return name.endswith(SUFFIX[Pass.BACKWARD]) or name.endswith(CAPTURED[Pass.BACKWARD])


def is_backward_op(op) -> bool:
    """An op of the backward: the builders' ``….backward``, a captured op's ``… (backward)`` (attention's,
    elementwise ones'), or a captured linear's dgrad or wgrad, which capture names after the module and marks
    ``attrs["grad"]`` (``models.capture.graph``)."""
    return is_backward(op.name) or "grad" in op.attrs


def is_optimizer(name: str) -> bool:
    return name.split(".")[0] == OPTIMIZER or name.endswith(CAPTURED[Pass.OPTIMIZER])


def backward_of(name: str) -> str:
    """The backward op's name of the forward op ``name``."""
    return name + SUFFIX[Pass.BACKWARD]


def recompute_of(name: str) -> str:
    """The name of the forward op ``name`` run again before the backward."""
    return name + SUFFIX[Pass.RECOMPUTE]


def forward_of(name: str) -> str:
    """The forward op's name of a backward or recomputed op (``name`` itself otherwise)."""
    suffix = next((s for s in (*SUFFIX.values(), CAPTURED[Pass.BACKWARD]) if name.endswith(s)), None)
    return name[:-len(suffix)] if suffix else name
