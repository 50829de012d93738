"""onnx: specs: FLOPs from an ONNX graph's inferred shapes, weights from its initializers."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")          # the spec prefixes live beside the torch ones
onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from ironlaw import IronlawError  # noqa: E402
from ironlaw.models import workloads


def write_model(path, extra_node=None):
    import numpy as np
    w = numpy_helper.from_array(np.zeros((64, 32), dtype=np.float32), "W")
    b = numpy_helper.from_array(np.zeros((32,), dtype=np.float32), "B")
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Add", ["h", "B"], ["a"]),
             helper.make_node("Relu", ["a"], ["y0"])]
    nodes.append(extra_node or helper.make_node("Identity", ["y0"], ["y"]))
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 32])], initializer=[w, b])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_onnx_matmul_flops_and_weight_bytes(tmp_path):
    p = write_model(tmp_path / "m.onnx")
    g = workloads.resolve(workloads.Request(f"onnx:{p}", batch=8))
    mm = [op for op in g.ops if op.name == "onnx::MatMul"][0]
    assert mm.flops == 2 * 8 * 64 * 32
    assert mm.bytes["weights"] == 64 * 32 * 4
    assert g.meta["params"] == 64 * 32 + 32 and g.footprint["weights"] == (64 * 32 + 32) * 4
    assert g.flops == 2 * 8 * 64 * 32 + 8 * 32 + 8 * 32
    assert g.uncounted_ops == {}


def test_onnx_node_without_a_formula_is_listed(tmp_path):
    p = write_model(tmp_path / "m.onnx", helper.make_node("Det", ["y0"], ["y"]))
    g = workloads.resolve(workloads.Request(f"onnx:{p}"))
    assert g.uncounted_ops == {"onnx::Det": 1}


def test_onnx_bad_files(tmp_path):
    with pytest.raises(IronlawError, match="no such file"):
        workloads.resolve(workloads.Request(f"onnx:{tmp_path}/nope.onnx"))
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a protobuf at all")
    with pytest.raises(IronlawError, match="cannot read as an ONNX model"):
        workloads.resolve(workloads.Request(f"onnx:{bad}"))
