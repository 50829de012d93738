"""One FLOP convention for the non-matmul ops across every route into a graph (``ironlaw.core.flopcount``).

A calibration fitted on captured ops (``validate``) predicts built-in graphs (``analyze``): its per-class
rates carry over only if both count an op's FLOPs alike. These tests compare the routes per op kind; the
totals (matmul-dominated) hid a 14% norm and a 25-60% transcendental difference before.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from ironlaw.core import flopcount as fc
from ironlaw.models import workloads

torch = pytest.importorskip("torch")

from test_capture_flops import example  # noqa: E402  (loads examples/*.py)

DATA = Path(__file__).parent / "data"


def by_kind(g) -> dict[str, float]:
    d: dict[str, float] = defaultdict(float)
    for op in g.ops:
        d[op.kind] += op.flops * op.count
    return d


class _Wrap(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


@pytest.mark.parametrize("phase", ["infer", "train"])
def test_resnet18_batch_norm_flops_equal_the_builtin(phase):
    from ironlaw.models.capture import capture_graph
    m, args = example("resnet").resnet18(batch=2)
    captured = by_kind(capture_graph(m.train() if phase == "train" else m, args, phase=phase))
    builtin = by_kind(workloads.resolve(workloads.Request("resnet18", batch=2, phase=phase)))
    assert captured["norm"] == pytest.approx(builtin["norm"], rel=1e-6)
    assert captured["conv"] == pytest.approx(builtin["conv"], rel=1e-6)


def test_gpt2_norm_and_elementwise_flops_equal_the_analytic_builder():
    pytest.importorskip("transformers")
    from ironlaw.models.capture import hf
    cfg = DATA / "gpt2_config.json"
    req = dict(seq=64, phase="infer", batch=2)
    analytic = by_kind(workloads.resolve(workloads.Request(f"hf:{cfg}", **req)))
    captured = by_kind(hf.build(str(cfg), workloads.Request(f"hf:{cfg}", **req)))
    assert captured["norm"] == pytest.approx(analytic["norm"], rel=1e-6)     # 25 layer norms of 7 FLOPs
    # eager GELU-tanh runs as pow, mul, add, mul, tanh, add, mul, mul: 12 FLOPs, as the built-in's fused
    # op; the residual adds are the same; the capture adds the mask and position arithmetic (< 1%)
    assert captured["elementwise"] == pytest.approx(analytic["elementwise"], rel=0.01)


def _captured_per_element(fn, x) -> float:
    from ironlaw.models.capture import record
    recs = [r for r in record(fn, (x,), real=False) if r.flops]
    assert len(recs) == 1, [r.name for r in recs]
    return recs[0].flops / x.numel()


@pytest.mark.parametrize("op", ["tanh", "exp", "gelu", "silu"])
def test_probe_vector_rows_count_as_the_capture(op):
    from ironlaw.measure.probe import vector
    fn = {"tanh": torch.tanh, "exp": torch.exp, "gelu": torch.nn.functional.gelu,
          "silu": torch.nn.functional.silu}[op]
    assert _captured_per_element(_Wrap(fn), torch.randn(64)) == vector.OPS[op][0]


def test_capture_counts_layer_norm_and_softmax_as_flopcount():
    x = torch.randn(8, 64)
    ln = _Wrap(lambda t: torch.nn.functional.layer_norm(t, (64,), torch.ones(64), torch.zeros(64)))
    assert _captured_per_element(ln, x) == fc.LAYERNORM
    assert _captured_per_element(_Wrap(lambda t: torch.softmax(t, dim=-1)), x) == fc.SOFTMAX


@pytest.mark.parametrize("name,first", [("resnet50", "conv1"), ("dlrm-dcnv2", "dense_arch.0.linear")])
def test_a_first_layer_on_the_model_input_computes_no_input_gradient(name, first):
    g = workloads.resolve(workloads.Request(name, batch=4, phase="train"))
    ops = {op.name: op for op in g.ops}
    fwd, bwd = ops[first], ops[first + ".backward"]
    assert bwd.flops == fwd.flops                       # the weight gradient only
    later = next(op for op in g.ops if op.kind == fwd.kind and op.name != first and not op.name.endswith("backward"))
    assert ops[later.name + ".backward"].flops == 2 * later.flops
