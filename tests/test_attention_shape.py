"""Fused attention on a CPU: its rate follows the key length (the ops state N = keys, K = head dim, and are fitted
with the GEMM shape model), and a decode step's KV cache is walked at the kind's own η, as a prefill's K and V."""
import numpy as np
import pytest

from ironlaw import calibrate
from ironlaw.graph import Graph, Op
from ironlaw.probe import build
from ironlaw.validate.compare import row_attrs


def test_attention_states_its_key_length_and_head_dim():
    """CPU flash attention's rate grows with the key length (one run here: 19 GFLOP/s with 32 keys, 100 with
    256): a captured or probed attention op states N = keys, K = head dim, and M follows from its FLOPs."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    from ironlaw.capture import record
    from ironlaw.capture.graph import op_attrs
    from ironlaw.gemmshape import gemm_dims

    class Causal(torch.nn.Module):
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    q = k = v = torch.randn(2, 3, 16, 8)
    (att,) = [r for r in record(Causal(), (q, k, v), real=False) if r.kind == "attention"]
    assert op_attrs(att)["nk"] == (16, 8)
    op = Op("sdpa", "attention", flops=att.flops, bytes={"activations": 4.0 * 4 * 2 * 3 * 16 * 8}, dtype="fp32",
            attrs={"nk": (16, 8)})
    m, n, k = (float(np.ravel(x)[0]) for x in gemm_dims(Graph("a", "infer", "fp32", [op]).columns()))
    assert (m, n, k) == (pytest.approx(att.flops / (2 * 16 * 8)), 16.0, 8.0)
    row = {"name": "aten::_scaled_dot_product_flash_attention_for_cpu", "kind": "attention",
           "shapes": "[1,12,1,64],[1,12,129,64],[1,12,129,64]…"}
    assert row_attrs(row) == {"nk": (129, 64)}                  # a decode step: 129 keys in the cache
    probed = {"attention": [{"dtype": "fp32", "batch": 1, "heads": 12, "q_len": 192, "kv_len": 192, "head_dim": 64,
                             "causal": True, "time_s": 1e-3, "cv": 0.01, "flops": 1e8, "act_bytes": 4e6}]}
    assert build.observations(probed)[0].op.attrs["nk"] == (192, 64)


def test_a_decode_steps_kv_cache_is_walked_at_the_attention_kinds_eta():
    cal = {"schema": calibrate.SCHEMA, "source": "derived: test", "fitted": ["test"],
           "memory": {"streamed": 1.0, "produced": 1.0, "kind": {"attention": 0.5}}}
    decode = Op("sdpa", "attention", flops=1e6, bytes={"activations": 1e4, "kv_cache": 9e6}, dtype="fp32",
                attrs={"nk": (513, 64)})
    gemv = Op("mm", "matmul", flops=2e6, bytes={"activations": 1e4, "weights": 4e6}, dtype="fp32")
    cols = Graph("d", "infer", "fp32", [decode, gemv]).columns()
    eta = np.ravel(calibrate.memory_eta(cal, cols, np.ones(2)))
    assert eta[0] == pytest.approx(0.5)                          # activations and KV cache alike
    assert eta[1] == pytest.approx(1.0)                          # other kinds' weights keep 'streamed'
