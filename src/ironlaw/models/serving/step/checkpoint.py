"""The weights as the checkpoint stores them: a ModelOpt checkpoint's bf16 activations, embedding and LM head
(``modelopt``, ``unquantized_weight_bytes``), and routed experts stored narrower than the engine's dtype
(``StoredExperts``, ``checkpoint_experts``, the stored weight bytes)."""
from __future__ import annotations

import copy
from dataclasses import dataclass

from ....core.graph import dtype_bytes


BF16_ROLES = ("head", "embedding")     # the ops whose weights a ModelOpt checkpoint keeps in bf16
HALF = "bf16"


@dataclass(frozen=True)
class StoredExperts:
    """The routed experts' weights as the checkpoint stores them, narrower than the engine's dtype (gpt-oss: MXFP4,
    4.25 bits a weight, their GEMMs weight-only in the engine's dtype after dequantizing), and where that came from.
    The engine stores them so where no --dtype is given (``checkpoint_experts``); a --dtype given stores every
    weight in it, as ``analyze`` does (``workloads.transformer.in_checkpoint_format``)."""
    dtype: str
    source: str


def checkpoint_experts(spec: str, hw, dtype: str | None) -> StoredExperts | None:
    """The routed experts as ``spec``'s checkpoint stores them when ``dtype`` (the user's --dtype) is None and the
    checkpoint stores them narrower than the model's dtype; None otherwise (a dtype given wins)."""
    if dtype is not None:
        return None
    from ... import workloads
    meta = workloads.resolve(workloads.Request(spec, phase="decode", batch=1, seq=1,
                                               device="cuda" if hw.kind == "gpu" else "cpu")).meta
    if not meta.get("expert_math_dtype"):
        return None
    return StoredExperts(meta["expert_weight_dtype"], meta["expert_weight_source"])


def routed_weight_bytes(meta: dict, dtype: str) -> float:
    """Bytes one routed expert weight is stored in: the checkpoint's format where the graph keeps it
    (``StoredExperts``: gpt-oss MXFP4, 4.25 bits), else ``dtype``'s."""
    return dtype_bytes(meta.get("expert_weight_dtype", dtype))


def stored_weight_bytes(meta: dict, dtype: str) -> float:
    """The model's weights in ``dtype``, its routed experts as stored (``routed_weight_bytes``), the ModelOpt
    checkpoint's bf16 embedding and LM head left out (``unquantized_weight_bytes``)."""
    return float(meta["params"]) * stored_bytes_per_param(meta, dtype)


def stored_bytes_per_param(meta: dict, dtype: str) -> float:
    """Mean bytes per weight of the model as stored (``stored_weight_bytes``): ``dtype``'s, less the routed experts'
    share of what their narrower format saves (exactly ``dtype``'s for any other model)."""
    share = float(meta.get("routed_expert_weights", 0.0)) / float(meta["params"])
    return dtype_bytes(dtype) - share * (dtype_bytes(dtype) - routed_weight_bytes(meta, dtype))


def expert_weights(meta: dict) -> dict:
    """The routed experts' weight dtype, its source and, stored narrower than they compute in, their math dtype,
    where the checkpoint states a format for them (gpt-oss): the serve output's fields."""
    return {k: meta[k] for k in ("expert_weight_dtype", "expert_weight_source", "expert_math_dtype") if k in meta}


def modelopt(op, dtype: str):
    """An op as a ModelOpt checkpoint runs it: activations in bf16; embedding and LM head weights in bf16."""
    by = dtype_bytes(dtype)
    if by >= dtype_bytes(HALF):
        return op
    o = copy.copy(op)
    o.bytes = dict(op.bytes)
    if "activations" in o.bytes:
        o.bytes["activations"] = op.bytes["activations"] * dtype_bytes(HALF) / by
    o.bytes_written = op.bytes_written * dtype_bytes(HALF) / by
    if op.attrs.get("role") in BF16_ROLES:
        o.dtype = HALF
        if "weights" in o.bytes:
            o.bytes["weights"] = op.bytes["weights"] * dtype_bytes(HALF) / by
    return o


def half_mla_bmm(op):
    """An MLA per-head decode product (``attention.q_absorb``, ``attention.v_up``: kernel ``mla_bmm_<dtype>``) as
    vLLM runs it: on bf16 copies of W_UK and W_UV whatever the checkpoint's dtype, its BMMs in 16 bits
    (vllm/v1/attention/backends/mla/common.py ``MLACommonImpl.process_weights_after_loading``: kv_b_proj
    dequantized by ``get_and_maybe_dequant_weights``, "we currently do not have quantized bmm's", then ``torch.bmm``
    in the decode forward; vllm-project/vllm at 99d7eb5, the v0.11 line). Any other op is returned as it is."""
    from ....core.gemmshape import mla_bmm_kernel
    by = dtype_bytes(op.dtype)
    if not str(op.attrs.get("kernel", "")).startswith("mla_bmm_") or by >= dtype_bytes(HALF):
        return op
    o = copy.copy(op)
    o.dtype = HALF
    o.attrs = {**op.attrs, "kernel": mla_bmm_kernel(HALF)}
    o.bytes = dict(op.bytes)
    if "weights" in o.bytes:
        o.bytes["weights"] = op.bytes["weights"] * dtype_bytes(HALF) / by
    return o


def unquantized_weight_bytes(meta: dict, dtype: str) -> float:
    """Extra bytes of a ModelOpt checkpoint's bf16 embedding and LM head over ``dtype``."""
    by = dtype_bytes(dtype)
    if by >= dtype_bytes(HALF):
        return 0.0
    return 2.0 * meta["vocab"] * meta["hidden"] * (dtype_bytes(HALF) - by)
