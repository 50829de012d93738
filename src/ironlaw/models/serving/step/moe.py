"""The routed experts of a served step on the device's fitted MoE kernel classes: the classes' names, the
calibration's fitted MoE tables (``fitted_moe``, ``scaled_moe``), the classes an expert dtype runs on
(``moe_kernels``) and the op rewrites that put a step's routed ops on them (``grouped``, ``blocked_rows``,
``unaligned_down``, ``on_table_rows``, ``on_router``)."""
from __future__ import annotations

import copy

from ....core.errors import IronlawError
from ...precision import WEIGHT_ONLY_MOE


GROUPED_GEMM = "moe_grouped_gemm"      # the kernel class of the routed experts' GEMMs (one GEMM per expert)
MOE_ROWS = "moe_rows"                  # the routed rows' own kernels: permute, activation, combine
MOE_ROUTER = "moe_router"              # the router's top-k where it runs on PyTorch (``on_router``)
ROUTED_ROLES = ("permute", "activation", "combine")    # … by op role (``attrs["role"]``), in module "experts"


def fitted_moe(hw) -> dict:
    """The device calibration's MoE kernel tables fitted on measured kernel tables (the package
    docstring, ``serving.step``)."""
    kernels = hw.calibration.kernel if hw.calibration is not None else {}
    return {k: dict(v) for k, v in kernels.items() if k.startswith((GROUPED_GEMM + ".", MOE_ROWS + ".", MOE_ROUTER + "."))}


def scaled_moe(kernels: dict, scale: float | None) -> dict:
    """The measured MoE layer's classes (``fitted_moe``) with their time times ``scale`` (None or 1: as they
    are): every η of the class divided by it, its fixed seconds multiplied (``expertcarry.measured_layer``)."""
    if scale is None or scale == 1.0:
        return kernels
    if not scale > 0.0:
        raise IronlawError(f"expert_layer_scale must be a positive factor, got {scale!r}")
    eta = ("eta_max", "streamed", "memory")
    return {k: {n: (v / scale if n in eta else v * scale if n in ("latency_s", "expert_s", "token_s") else v)
                for n, v in p.items()}
            for k, p in kernels.items()}


def moe_kernels(hw, dtype: str, recipe: str | None = None) -> tuple[str, str | None, str | None]:
    """(the routed GEMMs' kernel class, the routed rows' one or None, the weight format they stand in for or None)
    for experts in ``dtype`` on ``hw``; a weight format of its own (``recipe``: ``precision.moe_recipe``,
    block-scaled FP8) on its classes where ``hw`` has them fitted, else on the dtype's, the third entry then naming
    the format they are carried to (``grouped`` marks the ops, ``law.coverage`` states it)."""
    fitted = fitted_moe(hw)
    carried = recipe
    if recipe and f"{GROUPED_GEMM}.{recipe}" in fitted:
        dtype, carried = recipe, None
    gemm, rows = f"{GROUPED_GEMM}.{dtype}", f"{MOE_ROWS}.{dtype}"
    return (gemm, rows if rows in fitted else None, carried) if gemm in fitted else (GROUPED_GEMM, None, None)


def blocked_rows(op, cal, gathered_rows, slots: float, tokens=None):
    """A routed GEMM on a grouped-GEMM class that pads each expert's rows to an M block (its ``m_block``,
    ``core.routing.M_BLOCKS``: the fit counted the padded rows' FLOPs, ``moefit.terms``) with its compute η scaled by
    rows / padded rows (``eta_scale``): R = its FLOPs / (2·N·K), spread over the U experts whose weights it streams,
    the block picked from the ``gathered_rows`` token-expert rows over the rank's ``slots`` experts and the layer's
    ``tokens``; any other op as it is."""
    rule = ((cal.kernel or {}).get(op.attrs.get("kernel", ""), {}) if cal is not None else {}).get("m_block")
    if not rule or op.kind != "matmul" or op.attrs.get("expert") != "routed" or "nk" not in op.attrs:
        return op
    import numpy as np

    from ....core.routing import block_m, padded_rows
    from ....core.weightonly import elem_bytes
    n, k = (float(v) for v in op.attrs["nk"])
    rows = np.asarray(op.flops, float) / (2.0 * n * k)
    touched = np.asarray(op.bytes.get("weights", 0.0), float) / (n * k * elem_bytes(op))
    pad = padded_rows(rows, touched, block_m(rule, np.maximum(gathered_rows, 1.0), max(slots, 1.0), tokens))
    o = copy.copy(op)
    o.eta_scale = op.eta_scale * np.where(pad > 0, rows / np.maximum(pad, 1e-30), 1.0)
    return o


def on_table_rows(op, hw, meta: dict, tokens):
    """A routed GEMM on a measured MoE class whose grouped GEMM pads each expert's rows to an M block
    (``blocked_rows``) for the step's ``tokens`` picking ``experts_per_token`` experts each over the rank's
    expert slots; any other op as it is."""
    if op.kind != "matmul" or op.attrs.get("expert") != "routed":
        return op
    import numpy as np

    from ...dispatcher import local_experts
    gathered = np.asarray(tokens, float) * float(meta.get("experts_per_token", 0.0))
    return blocked_rows(op, hw.calibration, gathered, local_experts(meta), np.asarray(tokens, float))


def unaligned_down(op, hw):
    """A routed GEMM on a grouped-GEMM class with ``unaligned_k`` (c_k, measure/calibrate/moefit.py per_unaligned)
    whose K is not a multiple of ``core.routing.TRITON_K_ALIGN`` — the down GEMM where inter/TP is unaligned —
    with c_k·(W/BW + F/P) more seconds (W its weight bytes, F its FLOPs as the fit counts them: over ``eta_scale``'s
    padded rows), carried as a lower compute η: ``eta_scale`` × F/(P·η_c·s) over that plus the extra, η_c the class's
    ``eta_max``, P the op's dtype peak, BW the device tier's. Triton's JIT compiles the K stride of vLLM's and
    SGLang's ``fused_moe_kernel`` as divisible by 1 there, and the loads of A and w2 along K are not vectorized
    (``core.routing.TRITON_K_ALIGN``). Any other op as it is. Applied to the sharded step (``run.priced``: K is
    inter/TP after ``parallel.tp_shard``), the serving engines' (vLLM, SGLang) classes holding ``unaligned_k``."""
    if op.kind != "matmul" or op.attrs.get("expert") != "routed" or "nk" not in op.attrs or hw.calibration is None:
        return op
    p = (hw.calibration.kernel or {}).get(op.attrs.get("kernel", ""), {})
    c_k = float(p.get("unaligned_k", 0.0))
    import numpy as np

    from ....core.routing import unaligned
    if not c_k or not unaligned(op.attrs["nk"][1]) or op.dtype not in hw.peak_flops:
        return op
    s = np.asarray(op.eta_scale, float)
    flops = np.asarray(op.flops, float) / s                                  # the padded rows' FLOPs
    peak, bw = hw.peak(op.dtype), hw.memory[hw.device_tier].bw_Bps
    base = flops / (peak * float(p.get("eta_max", 1.0)))
    extra = c_k * (np.asarray(op.bytes.get("weights", 0.0), float) / bw + flops / peak)
    o = copy.copy(op)
    o.eta_scale = np.where(base > 0, s * base / np.maximum(base + extra, 1e-30), s)
    return o


def on_router(op, hw, meta: dict, gemm: str):
    """The router's top-k (``moe_topk``) on the measured layer's router class (``moe_router.<dtype>``, the dtype of the
    routed GEMMs' class ``gemm``) where the device's calibration holds one and the model routes on PyTorch's top-k
    (``core.routing.torch_router``: more experts or a larger top-k than the release's router kernel takes;
    measure/calibrate/moefit.py, ``per_router``); any other op as it is."""
    if op.name != "moe_topk" or "." not in gemm or hw.calibration is None:
        return op
    from ....core.routing import torch_router
    kernel = f"{MOE_ROUTER}.{gemm.rsplit('.', 1)[1]}"
    if kernel not in hw.calibration.kernel or not torch_router(meta.get("experts", 0), meta.get("experts_per_token", 0)):
        return op
    o = copy.copy(op)
    o.attrs = {**op.attrs, "kernel": kernel}
    return o


def grouped(op, gemm: str = GROUPED_GEMM, rows: str | None = None, carried: str | None = None):
    """A routed expert's matmul runs as TensorRT-LLM's grouped GEMM (its own kernel class, ``gemm``); with a
    fitted MoE layer the routed rows' permute, activation and combine run as ``rows``. ``carried``: the weight
    format (``moe_kernels``) whose classes the device lacks, these standing in for them: each op names the class
    it stands in for (``attrs["kernel_for"]``, read by ``law.coverage``). On a class fitted on weight-only rows
    (``precision.WEIGHT_ONLY_MOE``: gpt-oss's MXFP4 experts) the op's dequantization FLOPs (``core.weightonly``)
    leave its vector work: the measured layer's time holds them. Its combine writes a row for every token the ranks
    pool under attention DP (``attrs["pooled_write"]``), as the rows class was fitted."""
    if op.kind == "matmul" and op.attrs.get("expert") == "routed":
        kernel = gemm
    elif rows and op.module == "experts" and op.attrs.get("role") in ROUTED_ROLES:
        kernel = rows
    else:
        return op
    o = copy.copy(op)
    o.attrs = {**op.attrs, "kernel": kernel}
    if kernel == rows and op.attrs.get("role") == "combine":
        o.attrs["pooled_write"] = True          # fitted at the layer's pooled tokens (``parallel.pooled_combine``)
    if carried:
        o.attrs["kernel_for"] = f"{kernel.rsplit('.', 1)[0]}.{carried}"
    elif kernel.rsplit(".", 1)[-1] in WEIGHT_ONLY_MOE and "dequant_flops" in op.attrs:
        o.vector_flops = op.vector_flops - op.attrs["dequant_flops"]    # the measured layer times its dequantization
    return o
