"""Physical invariants of the byte and FLOP formulas, and that nothing is silently zero."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from ironlaw.models.capture import capture_graph, record  # noqa: E402


def by_name(recs, name):
    return [r for r in recs if r.name == name]


def test_views_move_nothing_and_a_view_of_a_weight_is_weight_traffic():
    lin = torch.nn.Linear(16, 8)
    recs = record(lin, (torch.randn(4, 16),), real=False)
    (t,) = by_name(recs, "aten::t")
    assert t.no_work and t.flops == 0 and t.total_bytes == 0
    (mm,) = by_name(recs, "aten::addmm")
    assert mm.bytes_read == {"weights": (16 * 8 + 8) * 4, "activations": 4 * 16 * 4}   # W through its t() view, b, x
    assert mm.bytes_written == {"activations": 4 * 8 * 4}
    assert mm.param_bytes == (16 * 8 + 8) * 4


def test_embedding_reads_only_the_rows_it_gathers():
    emb = torch.nn.Embedding(1000, 16)
    idx = torch.tensor([[1, 5, 7, 7, 9]])
    (r,) = by_name(record(emb, (idx,), real=False), "aten::embedding")
    assert r.bytes_read["weights"] == 5 * 16 * 4          # not the 1000-row table
    assert r.bytes_written["activations"] == 5 * 16 * 4


def test_broadcast_inputs_are_read_once():
    class Scale(torch.nn.Module):
        def forward(self, x, s):
            return x * s.expand_as(x)
    (mul,) = by_name(record(Scale(), (torch.randn(64, 32), torch.randn(1, 32)), real=False), "aten::mul")
    assert mul.bytes_read["activations"] == (64 * 32 + 32) * 4


def test_in_place_ops_read_and_write_their_destination_once():
    class F(torch.nn.Module):
        def forward(self, x):
            y = x + 1
            return y.relu_()
    (relu,) = by_name(record(F(), (torch.randn(10, 10),), real=False), "aten::relu_")
    assert relu.bytes_read == {"activations": 400} and relu.bytes_written == {"activations": 400}


def test_an_op_without_a_formula_is_listed_not_zero():
    class FFT(torch.nn.Module):
        def forward(self, x):
            return torch.fft.rfft(x).abs()
    g = capture_graph(FFT(), (torch.randn(8, 64),))
    assert g.uncounted_ops and all(n.startswith("aten::") for n in g.uncounted_ops)
    assert sum(g.uncounted_ops.values()) >= 1
    recs = record(FFT(), (torch.randn(8, 64),), real=False)
    assert any(r.flops is None for r in recs)


def test_graph_keeps_the_work_and_drops_only_views():
    m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.LayerNorm(8))
    x = torch.randn(3, 8)
    recs = record(m, (x,), real=False)
    g = capture_graph(m, (x,), name="mlp")
    assert len(g.ops) + g.meta["views"] == len(recs)
    assert g.flops == sum(r.flops for r in recs)
    assert g.bytes == sum(r.total_bytes for r in recs)
    assert [op.kind for op in g.ops] == ["matmul", "elementwise", "norm"]
    assert g.ops[0].module == "0" and g.ops[0].name == "aten::addmm"


def test_meta_module_is_captured_on_fake_cpu_tensors():
    with torch.device("meta"):
        m = torch.nn.Linear(4096, 4096)
    x = torch.empty(2, 4096, device="meta")
    (mm,) = by_name(record(m, (x,), real=False), "aten::addmm")
    assert mm.flops == 2 * 2 * 4096 * 4096


def test_batch_norm_on_running_statistics_is_a_scale_and_a_shift():
    # eval: 2 FLOPs per element, as the built-in ResNet counts it; training computes the batch's statistics
    bn, x = torch.nn.BatchNorm2d(8), torch.randn(2, 8, 5, 5)
    norms = lambda: [r for r in record(bn, (x,), real=False) if r.kind == "norm"]  # noqa: E731
    (train,) = norms()
    bn.eval()
    (infer,) = norms()
    assert infer.flops == 2 * x.numel() and train.flops == 5 * x.numel()


def test_grouped_mm_counts_its_flops_and_reads_the_groups_its_rows_reach():
    """``torch._grouped_mm`` runs transformers' MoE experts (one matrix per expert, rows split by ``offs``): a
    matmul of 2·M·K·N FLOPs, never an uncounted op; M rows reach at most M of the G expert matrices, so a
    3-row step over 8 experts reads 3 of them (a decode token's top-k experts are distinct)."""
    if not hasattr(torch, "_grouped_mm"):
        pytest.skip("this torch has no _grouped_mm")

    class Experts(torch.nn.Module):
        def __init__(self, g=8, k=16, n=32):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(g, k, n, dtype=torch.bfloat16))

        def forward(self, x, offs):
            return torch._grouped_mm(x, self.w, offs=offs)

    x, offs = torch.randn(3, 16, dtype=torch.bfloat16), torch.tensor([1, 1, 2, 2, 3, 3, 3, 3], dtype=torch.int32)
    (r,) = by_name(record(Experts(), (x, offs), real=False), "aten::_grouped_mm")
    assert r.kind == "matmul" and r.flops == 2 * 3 * 16 * 32
    assert r.bytes_read["weights"] == 3 * 16 * 32 * 2
    assert r.bytes_written == {"activations": 3 * 32 * 2}
    g = capture_graph(Experts(), (x, offs))
    assert not g.uncounted_ops
    wide = torch.randn(64, 16, dtype=torch.bfloat16)                        # more rows than groups: all 8 read
    (r,) = by_name(record(Experts(), (wide, offs * 21), real=False), "aten::_grouped_mm")
    assert r.bytes_read["weights"] == 8 * 16 * 32 * 2 and r.flops == 2 * 64 * 16 * 32
