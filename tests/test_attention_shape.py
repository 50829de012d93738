"""Fused attention on a CPU: its rate follows the key length (the ops state N = keys, K = head dim, and are fitted
with the GEMM shape model), and a decode step's KV cache is walked at the kind's own η, as a prefill's K and V —
or, once the attention table is fitted with decode rows, at the table's own ``streamed`` η (a decode step reads
its cache cold; a prefill's K and V were just produced)."""
import numpy as np
import pytest

from ironlaw.measure.calibrate import calibrate, fit, fitcore
from ironlaw.law import efficiency
from ironlaw.machine import calibration
from ironlaw.core.graph import Graph, Op
from ironlaw.measure.calibrate import build
from ironlaw.measure.validate.compare import row_attrs


def test_attention_states_its_key_length_and_head_dim():
    """CPU flash attention's rate grows with the key length (one run on a 2-vCPU EPYC VM: 19 GFLOP/s with 32
    keys, 100 with 256): a captured or probed attention op states N = keys, K = head dim, and M follows from its FLOPs."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    from ironlaw.models.capture import record
    from ironlaw.models.capture.graph import op_attrs
    from ironlaw.core.gemmshape import gemm_dims

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
    cal = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["test"],
           "memory": {"streamed": 1.0, "produced": 1.0, "kind": {"attention": 0.5}}}
    decode = Op("sdpa", "attention", flops=1e6, bytes={"activations": 1e4, "kv_cache": 9e6}, dtype="fp32",
                attrs={"nk": (513, 64)})
    gemv = Op("mm", "matmul", flops=2e6, bytes={"activations": 1e4, "weights": 4e6}, dtype="fp32")
    cols = Graph("d", "infer", "fp32", [decode, gemv]).columns()
    eta = np.ravel(efficiency.memory_eta(calibration.Calibration.of(cal), cols, np.ones(2)))
    assert eta[0] == pytest.approx(0.5)                          # activations and KV cache alike
    assert eta[1] == pytest.approx(1.0)                          # other kinds' weights keep 'streamed'


def attention_op(b, h, q, keys, d=64):
    act = 4.0 * b * h * d * (2 * q if q == 1 else 2 * q + 2 * keys)     # q and out (+ K and V in a prefill)
    byts = {"activations": act, **({"kv_cache": 4.0 * 2 * b * h * keys * d} if q == 1 else {})}
    return Op(f"sdpa {b}x{h} {q}→{keys}", "attention", flops=4.0 * b * h * q * keys * d, bytes=byts, dtype="fp32",
              attrs={"nk": (keys, d)})


def test_the_fit_gives_a_decode_steps_kv_cache_its_own_eta_and_attention_its_own_latency():
    """Prefill calls whose K and V stream at the kind's η 1.0 and decode calls whose KV cache streams at 0.4
    (a 2-vCPU Xeon VM: decode rows timed hot at 32–49 GB/s of KV, cold ones and the models' own calls at 15–19),
    each call with a fixed 20 µs: the fitted attention table recovers the KV cache's η and the latency with the
    shape, and every call's time with them. One η for both cannot: it misses the decode calls or the prefill
    ones."""
    from test_cpu_gemm_model import cpu
    shapes = [(1, 12, 32, 32), (1, 12, 128, 128), (2, 12, 96, 96), (8, 12, 64, 64), (1, 12, 256, 256),
              (1, 8, 384, 384), (1, 12, 1, 129), (8, 12, 1, 129), (4, 12, 1, 1001), (32, 12, 1, 33),
              (16, 12, 1, 65), (1, 12, 1, 513)]
    ops = [attention_op(*s) for s in shapes]
    true = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["test"],
            "memory": {"kind": {"attention": 1.0}}, "latency_s": {"attention": 20e-6},
            "attention": {"fp32": {"eta_max": 0.5, "m_half": 8.0, "nk_half": 40.0, "k_half": 16.0, "streamed": 0.4}}}
    probe = fitcore.Problem(cpu(), [calibrate.Observation(o, 1.0, "validate:synthetic", 0.01) for o in ops])
    times = probe.times(true)
    prob = fitcore.Problem(cpu(), [calibrate.Observation(o, t, f"validate:{i % 3}", 0.01)
                                for i, (o, t) in enumerate(zip(ops, times))])
    start = {"schema": calibration.SCHEMA, "source": "measured: test", "fitted": ["test"]}
    cal = fit.fit_kinds(prob, start)
    assert cal["attention"]["fp32"]["streamed"] == pytest.approx(0.4, rel=0.1)
    assert cal["latency_s"]["attention"] == pytest.approx(20e-6, rel=0.25)
    err = prob.times(cal) / prob.meas - 1
    decode = np.array([s[2] == 1 for s in shapes])
    assert np.all(np.abs(err[decode]) < 0.1), err      # (the 32-key prefill, the smallest op, weighs least: √time)
    assert np.median(np.abs(err)) < 0.02, err
    one = {**true, "attention": {"fp32": {k: v for k, v in true["attention"]["fp32"].items() if k != "streamed"}}}
    assert np.all(prob.times(one)[decode] / prob.meas[decode] < 0.6)    # the kind's η on the cache: far too fast
