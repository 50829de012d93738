"""Transformer Engine's FP8 dot-product attention in a training step (``--fp8-attention``: Megatron-Core's and
NeMo's ``fp8_dot_product_attention``, Transformer Engine's recipe flag ``fp8_dpa``).

What the kernels do (NVIDIA/TransformerEngine v2.8, ``transformer_engine/pytorch/attention/dot_product_attention/
backends.py`` ``FusedAttnFunc``, with the current-scaling recipe the FP8 and NVFP4 training recipes give their
attention: ``dot_product_attention.py`` ``DotProductAttention.init_fp8_metadata``, ``NVTE_DPA_FP8_RECIPE``
"Float8CurrentScaling", and ``NVTE_DPA_FP8CS_O_in_F16`` = 1, the default, which the MLPerf Training v5.1 NeMo
configs set too, ``config_common_fp8attn.sh``):
- forward: ``combine_and_quantize`` casts Q, K and V to FP8 (E4M3) with ``QKV_quantizer``, a current-scaling
  quantizer (an amax pass over the bf16 tensor, then the cast: 2 + 2 bytes read, 1 written per element;
  ``precision.CAST_READ_BYTES``), then ``fused_attn_fwd`` on the FP8 backend computes QKᵀ and PV in FP8, S
  quantized inside the kernel by ``S_quantizer``'s scale, and returns O in bf16 (current scaling: no O quantize);
- backward: ``dO_quantizer`` casts dO to FP8 (E5M2, the same two passes), ``fused_attn_bwd`` takes the saved FP8
  Q, K, V, O in bf16 and dO in FP8, quantizes dP inside the kernel (``dP_quantizer``) and returns dQ, dK, dV in
  bf16 (no dequantize).
So the attention's products run at the FP8 rate, with one quantize of Q, K, V (forward) and one of dO (backward)
per layer and micro-batch: ``casts``, memory-bound ops of their own, and for the host the kernels of two
current-scaling quantizes more (``host.FP8_ATTENTION``).

The rate: ironlaw's training attention runs at the device's attention η on the bf16 peak ([efficiency]
``attention``, carried from measured context attention), its softmax on the vector unit. The FP8 kernel's whole
time is that time over the speedup of the FP8 context attention class over the bf16 one (``CLASSES``:
aiconfigurator-core's TensorRT-LLM context_attention tables, fitted into the catalog's ``[calibration]``) at
the step's micro-batch and sequence, the same model's heads and head dim (``speedup``; the op keeps its bf16
dtype and FLOPs, ``Op.eta_scale`` carries the speedup): what FP8 math buys the FMHA on that device, measured,
where the datasheet doubles the peak. No FP8 backward is tabled; the backward takes the forward's speedup. A
device without an FP8 matrix peak, or whose catalog entry has no FP8 context attention class to price it from,
is refused.
Not modelled: the saved Q, K, V kept in FP8 instead of bf16 (a smaller footprint), and the attention's traffic,
kept at bf16's (the products bind it).
"""
from __future__ import annotations

import copy

import numpy as np

from ..core.errors import IronlawError
from ..core.graph import Graph, Op
from .precision import CAST_READ_BYTES

DTYPE = "fp8"
CLASSES = ("attention_context_bf16_kv_bf16", "attention_context_fp8_kv_fp8")     # bf16, FP8 context attention
WRITE_BYTES = 1.0                         # the FP8 copy, one per element


def unpriced(hw) -> str:
    """Why ``--fp8-attention`` cannot be priced on ``hw`` (the catalog entry, its serving kernel classes
    included): no FP8 matrix peak, or no FP8 context attention class; '' where it can."""
    if DTYPE not in hw.peak_flops:
        return (f"--fp8-attention runs attention's products in FP8; {hw.name} has no FP8 matrix peak (it has "
                f"{', '.join(hw.peak_flops)}): drop the flag")
    kernels = (hw.calibration.table().get("kernel", {}) if hw.calibration is not None else {})
    missing = [c for c in CLASSES if c not in kernels]
    if missing:
        return (f"--fp8-attention is priced from measured FP8 context attention ({CLASSES[1]}, beside "
                f"{CLASSES[0]}); {hw.name}'s catalog entry has no {missing[0]}: drop the flag")
    return ""


def require(hw) -> None:
    """Refuse ``--fp8-attention`` on ``hw`` where it cannot be priced (``unpriced``)."""
    why = unpriced(hw)
    if why:
        raise IronlawError(why)


def speedup(meta: dict, hw, micro_batch: int) -> float:
    """The FP8 context attention class's speedup over the bf16 one on ``hw`` (its full catalog entry): the
    law's time of the same model's prefill attention at ``micro_batch`` sequences of the graph's sequence, bf16
    over FP8 (an array of micro-batches gives one speedup each)."""
    from ..law import law
    from . import workloads
    t = {}
    for dt in ("bf16", DTYPE):
        pg = workloads.resolve(workloads.Request(meta["spec"], phase="prefill", batch=micro_batch, seq=meta["seq"],
                                                 dtype=dt, device="cuda"))
        att = [op for op in pg.ops if op.kind == "attention"]
        t[dt] = np.asarray(law.predict(Graph(pg.name, "prefill", dt, att, meta=dict(pg.meta)), hw).time_s, dtype=float)
    rate = t["bf16"] / t[DTYPE]
    return float(rate) if rate.ndim == 0 else rate


def casts(att: Op, meta: dict, bwd: bool) -> Op:
    """The quantize before attention ``att``: Q, K and V in the forward, dO in the backward."""
    per_token = meta["head_dim"] * (meta["heads"] + (0 if bwd else 2 * meta["kv_heads"]))
    elems = meta["tokens"] * per_token
    what = "dO" if bwd else "Q, K and V"
    return Op(f"fp8_cast.attention{'.backward' if bwd else ''}", "elementwise", flops=2.0 * elems,
              bytes={"activations": (CAST_READ_BYTES[DTYPE] + WRITE_BYTES) * elems}, dtype=att.dtype,
              count=att.count, module=att.module, shapes=f"FP8 quantize of {what} (current scaling)",
              bytes_written=WRITE_BYTES * elems,
              attrs={"tp_split": True, "role": "cast",
                     **{k: att.attrs[k] for k in ("per_layer",) if k in att.attrs}})


def lower(g: Graph, hw_catalog, micro_batch: int) -> Graph:
    """``g``'s training step with FP8 attention: each attention op (forward and backward) at ``speedup`` times its
    bf16 rate (``Op.eta_scale``: its products and its softmax, as the measured kernels' whole time), after its
    quantize (``casts``); ``hw_catalog``: the catalog entry whose kernel classes give the speedup."""
    require(hw_catalog)
    if "spec" not in g.meta or "heads" not in g.meta or g.meta.get("attention") != "gqa":
        raise IronlawError(f"--fp8-attention prices the grouped-query attention of a transformer ironlaw builds; "
                           f"{g.name} has {g.meta.get('attention', 'no such attention')}")
    rate = speedup(g.meta, hw_catalog, micro_batch)
    ops: list[Op] = []
    for op in g.ops:
        if op.kind != "attention":
            ops.append(op)
            continue
        new = copy.copy(op)
        new.eta_scale = op.eta_scale * rate
        new.shapes = f"{op.shapes}, FP8 math (Transformer Engine fp8_dpa)"
        ops += [casts(op, g.meta, op.name.endswith(".backward")), new]
    return Graph(g.name, g.phase, g.dtype, ops, footprint=dict(g.footprint), meta=dict(g.meta, fp8_attention=rate),
                 uncounted_ops=dict(g.uncounted_ops))


NOTE = ("attention in FP8 (--fp8-attention, Transformer Engine's fp8_dpa): at {rate:.2f}× the bf16 attention's rate, "
        "the speedup of {hw}'s FP8 context attention kernels over its bf16 ones at this micro-batch and sequence (the "
        "backward at the forward's), after a quantize of Q, K, V (forward) and of dO (backward); per micro-batch the "
        "faster products save {saved} and the quantizes take {casts}: {net}")


def note(rate: float, hw_name: str, rows: list[dict], composition: str) -> str:
    """What ``--fp8-attention`` did to one micro-batch, from its priced ``rows`` (``lower``'s ops): the attention
    ops' time saved against their bf16 rate (their compute ``rate`` times longer; ``composition`` as the law's:
    overlap, the longer of data and compute; serial, their sum) and the quantizes' time."""
    from ..core.units import fmt_time
    saved = 0.0
    for r in rows:
        if r["kind"] == "attention":
            c, d = r["compute_s"], r["data_s"]
            saved += c * (rate - 1.0) if composition == "serial" else max(d, c * rate) - max(d, c)
    casts = sum(r["time_s"] for r in rows if r["name"].startswith("fp8_cast.attention"))
    net = (f"the step {'gains' if saved > casts else 'loses'} {fmt_time(abs(saved - casts))} per micro-batch"
           + ("" if saved > casts else " (at this sequence the quantizes outweigh the faster products)"))
    return NOTE.format(rate=rate, hw=hw_name, saved=fmt_time(saved), casts=fmt_time(casts), net=net)

