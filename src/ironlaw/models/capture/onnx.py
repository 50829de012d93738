"""ONNX files as an optional input format: one graph op per ONNX node, FLOPs from shapes.

``onnx.shape_inference`` gives every tensor's shape; a symbolic first dimension is the batch. Each node
gets a FLOP formula by op type (one small function per type, as in ``formulas``); traffic is its inputs
read and outputs written, initializers counted as weights. Types without a formula are listed in
``uncounted_ops``. Note: exporters fold BatchNorm into Conv, so the node list is an inference graph.
"""
from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

from ...core import flopcount as fc
from ...core.errors import IronlawError
from ...core.graph import Graph, Op

ELEM_BYTES = {1: 4, 2: 1, 3: 1, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 16: 2}       # onnx.TensorProto types
ELEM_DTYPE = {1: "fp32", 10: "fp16", 16: "bf16", 11: "fp64", 3: "int8", 2: "int8"}
NO_WORK = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Shape", "Constant", "Dropout"}
COPY = {"Concat", "Transpose", "Slice", "Split", "Expand", "Pad", "Cast", "Tile", "Gather", "GatherElements"}
ELEMENTWISE_1 = {"Add", "Sub", "Mul", "Div", "Relu", "Neg", "Abs", "Max", "Min", "Sqrt", "Reciprocal", "Where",
                 "Equal", "Less", "Greater", "Not", "And", "Or", "Clip", "LeakyRelu", "Floor", "Ceil", "Pow"}
ELEMENTWISE_COST = {"Sigmoid": fc.SIGMOID, "HardSigmoid": 2, "HardSwish": 3, "Gelu": fc.GELU_ERF,     # ironlaw.core.flopcount
                    "Softplus": fc.SOFTPLUS, "Elu": fc.ELU, "Exp": fc.TRANSCENDENTAL, "Log": fc.TRANSCENDENTAL,
                    "Tanh": fc.TRANSCENDENTAL, "Erf": fc.TRANSCENDENTAL, "Sin": fc.TRANSCENDENTAL,
                    "Cos": fc.TRANSCENDENTAL}
NORM_COST = {"LayerNormalization": fc.LAYERNORM, "GroupNormalization": fc.LAYERNORM,
             "InstanceNormalization": fc.LAYERNORM, "BatchNormalization": fc.BATCHNORM_EVAL}
KIND = {"MatMul": "matmul", "Gemm": "matmul", "Conv": "conv", "ConvTranspose": "conv", "Softmax": "softmax",
        "LogSoftmax": "softmax", "LayerNormalization": "norm", "BatchNormalization": "norm",
        "InstanceNormalization": "norm", "GroupNormalization": "norm", "MaxPool": "pool", "AveragePool": "pool",
        "GlobalAveragePool": "pool", "GlobalMaxPool": "pool", "ReduceMean": "reduction", "ReduceSum": "reduction",
        "ReduceMax": "reduction", "Gather": "embedding"}


def _attr(node, name, default=None):
    import onnx
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def flops(node, ins: list, outs: list) -> float | None:
    """FLOPs of one node from its input and output shapes (lists of ints), None without a formula."""
    t, out = node.op_type, (outs[0] if outs else [])
    n_out = math.prod(out) if out else 0
    if t in NO_WORK or t in COPY:
        return 0.0
    if t == "MatMul":
        return 2.0 * n_out * ins[0][-1]
    if t == "Gemm":
        k = ins[0][0] if _attr(node, "transA", 0) else ins[0][-1]
        return 2.0 * n_out * k
    if t in ("Conv", "ConvTranspose"):
        w = ins[1]                                    # [Cout, Cin/groups, k...]
        per_out = math.prod(w[1:])
        return 2.0 * (n_out if t == "Conv" else math.prod(ins[0])) * per_out
    if t in ELEMENTWISE_1:
        return float(n_out)
    if t == "Gelu" and _attr(node, "approximate", b"none") in (b"tanh", "tanh"):
        return fc.GELU_TANH * n_out
    if t in ELEMENTWISE_COST:
        return float(ELEMENTWISE_COST[t] * n_out)
    if t in ("Softmax", "LogSoftmax"):
        return (fc.SOFTMAX if t == "Softmax" else fc.LOG_SOFTMAX) * n_out
    if t in NORM_COST:
        return NORM_COST[t] * math.prod(ins[0])
    if t in ("MaxPool", "AveragePool"):
        return float(n_out * math.prod(_attr(node, "kernel_shape", [1])))
    if t in ("GlobalAveragePool", "GlobalMaxPool") or KIND.get(t) == "reduction":
        return float(math.prod(ins[0]))
    return None


def build(path: str, req) -> Graph:
    try:
        import onnx
    except ImportError:
        raise IronlawError("onnx: the onnx package does not import here; pip install onnx") from None
    p = Path(path)
    if not p.is_file():
        raise IronlawError(f"onnx:{path}: no such file")
    try:
        model = onnx.shape_inference.infer_shapes(onnx.load(str(p)))
    except Exception as e:
        raise IronlawError(f"onnx:{path}: cannot read as an ONNX model: {e.__class__.__name__}: "
                           f"{str(e).splitlines()[0][:200] if str(e) else ''}") from None
    g = model.graph
    batch = int(req.batch)
    info: dict[str, tuple[list, int]] = {}
    for v in list(g.input) + list(g.value_info) + list(g.output):
        tt = v.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else (batch if i == 0 else None)
                for i, d in enumerate(tt.shape.dim)]
        info[v.name] = (dims, tt.elem_type)
    weights = {i.name for i in g.initializer}
    for i in g.initializer:
        info[i.name] = (list(i.dims), i.data_type)
    params = sum(math.prod(i.dims) for i in g.initializer)
    weight_bytes = sum(math.prod(i.dims) * ELEM_BYTES.get(i.data_type, 4) for i in g.initializer)

    def nbytes(name):
        dims, et = info.get(name, (None, 1))
        if dims is None or any(d is None for d in dims):
            return None
        return float(math.prod(dims) * ELEM_BYTES.get(et, 4))

    ops, uncounted, unknown_shape = [], Counter(), Counter()
    dtype = req.dtype or "fp32"
    for k, node in enumerate(g.node):
        ins = [info.get(n, (None, 1))[0] for n in node.input if n]
        outs = [info.get(n, (None, 1))[0] for n in node.output if n]
        if any(s is None or any(d is None for d in s) for s in ins + outs):
            unknown_shape[node.op_type] += 1
            uncounted[f"onnx::{node.op_type}"] += 1
            continue
        f = flops(node, ins, outs)
        if f is None:
            uncounted[f"onnx::{node.op_type}"] += 1
            f = 0.0
        if node.op_type in NO_WORK:
            continue
        traffic: dict[str, float] = {}
        for n in node.input:
            if n:
                cls = "weights" if n in weights else "activations"
                traffic[cls] = traffic.get(cls, 0.0) + (nbytes(n) or 0.0)
        written = sum(nbytes(n) or 0.0 for n in node.output if n)
        traffic["activations"] = traffic.get("activations", 0.0) + written
        et = info.get(node.output[0], (None, 1))[1] if node.output else 1
        kind = KIND.get(node.op_type, "copy" if node.op_type in COPY else "elementwise")
        ops.append(Op(f"onnx::{node.op_type}", kind, flops=f, bytes=traffic, dtype=ELEM_DTYPE.get(et, dtype),
                      module=node.name or f"node{k}", shapes=",".join(str(s) for s in ins[:3]), bytes_written=written))
    meta = {"params": params, "batch": batch, "captured": True, "format": "onnx", "nodes": len(g.node)}
    if unknown_shape:
        meta["notes"] = [f"shape inference left {sum(unknown_shape.values())} node(s) without shapes: "
                         + ", ".join(unknown_shape)]
    return Graph(f"onnx:{p.name}", "infer", dtype, ops, footprint={"weights": float(weight_bytes)}, meta=meta,
                 uncounted_ops=dict(uncounted))
