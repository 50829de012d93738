"""Turn op records into an ironlaw Graph: one Op per op that does work, traffic split by class.

Views and allocations (no kernel, no traffic) are left out of the graph's ops — their count is in
``meta['views']`` — while the records keep them, so that records join one-to-one with
``torch.profiler``. ``meta['record_index']`` maps each graph op back to its record.
"""
from __future__ import annotations

from collections import Counter

from ...core.gemmshape import attention_nk, conv_groups, conv_nk
from ...core.graph import DTYPE_BYTES, TORCH_NAMES, Graph, Op
from .roles import attach

TORCH_DTYPES = {**{t: d for d, t in TORCH_NAMES.items()},
                "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "int8": "int8", "uint8": "int8"}


def ironlaw_dtype(torch_dtype: str, default: str) -> str:
    return TORCH_DTYPES.get(torch_dtype, default)


def op_dtype(rec, default: str) -> str:
    """The first floating dtype an op touches (indices and masks do not set the compute dtype)."""
    for d in rec.in_dtypes + rec.out_dtypes:
        if d.startswith(("float", "bfloat")):
            return ironlaw_dtype(d, default)
    return default


def shapes_text(rec) -> str:
    ins = ",".join("[" + ",".join(str(s) for s in sh) + "]" for sh in rec.in_shapes[:3])
    return ins + ("…" if len(rec.in_shapes) > 3 else "")


def op_attrs(r) -> dict:
    """What the law needs beyond FLOPs and bytes: x @ W's layout; the GEMM N and K of a product with a weight
    matrix, of a forward convolution and of a forward fused attention (key length, head dim)."""
    attrs = {"weights_kn": True} if r.weights_kn else {}
    if r.weight_nk:
        attrs["nk"] = r.weight_nk
    if r.kind == "attention" and r.phase == "forward" and len(r.in_shapes) > 1:
        nk = attention_nk(r.in_shapes[1])
        if nk:
            attrs["nk"] = nk
    if r.kind == "conv" and r.phase == "forward" and len(r.in_shapes) > 1:
        nk = conv_nk(r.in_shapes[1])
        if nk:
            attrs["nk"] = nk
        attrs.update(conv_groups(r.in_shapes[0], r.in_shapes[1]))
    return attrs


def role_attrs(r, roles) -> dict:
    """The op's role (``capture.roles``; none where capture cannot tell) and, for a linear's matmuls, the linear
    they belong to (its module), its sublayer and, in the backward, which gradient each computes."""
    attrs = {"role": roles.role[r.index]} if roles.role.get(r.index) else {}
    if r.index in roles.linear:
        attrs.update(linear=roles.linear[r.index], sublayer=roles.sublayer[r.index])
    if r.index in roles.grad:
        attrs["grad"] = roles.grad[r.index]
    return attrs


def to_graph(cap, name: str, phase: str, dtype: str, meta: dict | None = None) -> Graph:
    ops, index, views = [], [], 0
    uncounted: Counter = Counter()
    roles = attach(cap.records)
    for r in cap.records:
        if r.flops is None:
            uncounted[r.name] += 1
        if r.no_work:
            views += 1
            continue
        traffic: dict[str, float] = {}
        for part in (r.bytes_read, r.bytes_written):
            for c, b in part.items():
                traffic[c] = traffic.get(c, 0.0) + b
        dt = op_dtype(r, dtype)
        if dt not in DTYPE_BYTES:
            dt = dtype
        label = r.name if r.phase == "forward" else f"{r.name} ({r.phase})"
        ops.append(Op(label, r.kind, flops=float(r.flops or 0.0), bytes=traffic, dtype=dt, module=r.module,
                      shapes=shapes_text(r), bytes_written=float(sum(r.bytes_written.values())),
                      attrs=op_attrs(r) | role_attrs(r, roles)))
        index.append(r.index)
    fwd_flops = sum(r.flops or 0.0 for r in cap.records if r.phase == "forward")
    m = {"params": cap.params, "captured": True, "capture_device": cap.device, "views": views,
         "record_index": index, "forward_flops": fwd_flops,
         "model_flops": fwd_flops * (3.0 if phase == "train" else 1.0)}
    notes = list(cap.notes) + roles.notes + list((meta or {}).get("notes", []))     # the caller's add to the capture's
    m.update(meta or {})
    if notes:
        m["notes"] = notes
    return Graph(name, phase, dtype, ops, footprint=dict(cap.footprint), meta=m, uncounted_ops=dict(uncounted))
