"""Capture attaches op roles from the data flow of one step (``capture.roles``): a captured model is sharded over
tensor parallelism by the same rules as a built one, and where capture cannot tell, the op has no role and says so."""
from __future__ import annotations

import textwrap

import pytest

torch = pytest.importorskip("torch")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.models import parallel  # noqa: E402
from ironlaw.models.capture import capture_graph  # noqa: E402
from ironlaw.models.capture.roles import no_role_ops  # noqa: E402

TINY_LM = textwrap.dedent('''
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class Attention(nn.Module):
        def __init__(self, h, heads):
            super().__init__()
            self.heads = heads
            self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(h, h, bias=False) for _ in range(4))

        def forward(self, x):
            b, t, h = x.shape
            q, k, v = (p(x).view(b, t, self.heads, -1).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.o_proj(o.transpose(1, 2).reshape(b, t, h))


    class MLP(nn.Module):
        def __init__(self, h, inter):
            super().__init__()
            self.gate_proj, self.up_proj = nn.Linear(h, inter, bias=False), nn.Linear(h, inter, bias=False)
            self.down_proj = nn.Linear(inter, h, bias=False)

        def forward(self, x):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


    class Block(nn.Module):
        def __init__(self, h, heads, inter):
            super().__init__()
            self.input_layernorm, self.post_attention_layernorm = nn.RMSNorm(h), nn.RMSNorm(h)
            self.self_attn, self.mlp = Attention(h, heads), MLP(h, inter)

        def forward(self, x):
            x = x + self.self_attn(self.input_layernorm(x))
            return x + self.mlp(self.post_attention_layernorm(x))


    class TinyLM(nn.Module):
        def __init__(self, vocab=256, h=64, heads=4, inter=128, layers=2):
            super().__init__()
            self.embed_tokens = nn.Embedding(vocab, h)
            self.layers = nn.ModuleList(Block(h, heads, inter) for _ in range(layers))
            self.norm, self.lm_head = nn.RMSNorm(h), nn.Linear(h, vocab, bias=False)

        def forward(self, ids):
            x = self.embed_tokens(ids)
            for block in self.layers:
                x = block(x)
            return self.lm_head(self.norm(x))


    class Unpaired(nn.Module):
        """A linear whose output joins the residual stream unreduced: no column/row pair."""
        def __init__(self, h=32, vocab=64):
            super().__init__()
            self.emb, self.fc, self.out = nn.Embedding(vocab, h), nn.Linear(h, h), nn.Linear(h, vocab)

        def forward(self, ids):
            x = self.emb(ids)
            return self.out(x + torch.relu(self.fc(x)))


    def tiny():
        return TinyLM(), (torch.randint(0, 256, (2, 16)),)


    def unpaired():
        return Unpaired(), (torch.randint(0, 64, (2, 8)),)
''')
EXPECTED = {"q_proj": "column", "k_proj": "column", "v_proj": "column", "gate_proj": "column", "up_proj": "column",
            "o_proj": "row", "down_proj": "row", "lm_head": "head"}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    p = tmp_path_factory.mktemp("capture_roles") / "tiny_models.py"
    p.write_text(TINY_LM)
    ns: dict = {}
    exec(compile(TINY_LM, str(p), "exec"), ns)
    return p, ns


def _linears(g, backward: bool = False):
    return [op for op in g.ops if "linear" in op.attrs and ("grad" in op.attrs) == backward]


@pytest.mark.parametrize("phase", ["infer", "train"])
def test_captured_linears_get_their_role_by_position_in_the_block(models, phase):
    """q/k/v and gate/up open a split (column), o and down close it (row), the last linear is the output layer;
    the ops between are split by heads (attention) or by columns (the activation); every op gets a role."""
    m, args = models[1]["tiny"]()
    g = capture_graph(m, args, phase=phase)
    fwd = _linears(g)
    assert len(fwd) == 2 * 7 + 1
    for op in fwd:
        assert op.attrs["role"] == EXPECTED[op.module.split(".")[-1]], op.module
        assert op.attrs["sublayer"] == ("attn" if "self_attn" in op.module else "mlp"), op.module
    by_kind = {op.kind: op.attrs["role"] for op in g.ops if "grad" not in op.attrs}
    assert by_kind["attention"] == "heads" and by_kind["embedding"] == "embedding"
    silu = next(op for op in g.ops if op.name == "aten::silu")
    assert silu.attrs["role"] == "activation"
    assert all(op.attrs["role"] == "replicated" for op in g.ops if op.module.endswith("layernorm"))
    assert no_role_ops(g) == {} and "notes" not in g.meta
    if phase == "train":
        bwd = _linears(g, backward=True)
        assert sorted(op.attrs["grad"] for op in bwd) == ["dgrad"] * 15 + ["wgrad"] * 15
        assert {op.attrs["role"] for op in bwd} == {"column", "row", "head"}
        for op in fwd:                    # each linear's dgrad (by its weight) and wgrad (beside it) are its own
            own = sorted(b.attrs["grad"] for b in bwd if b.attrs["linear"] == op.module)
            assert own == ["dgrad", "wgrad"], op.module
            assert all(b.attrs["role"] == op.attrs["role"] for b in bwd if b.attrs["linear"] == op.module)


def test_tensor_parallelism_applies_to_a_captured_model_by_its_roles(models):
    """tp_shard splits the captured linears' FLOPs and weights over TP 2, keeps the norms whole, and adds the
    all-reduces after each row-parallel forward (o, down) and each column-parallel dgrad, of the reduced tensor's
    bytes; the head needs none."""
    m, args = models[1]["tiny"]()
    g = capture_graph(m, args, phase="train")
    s = parallel.tp_shard(g, 2)
    ops = [op for op in s.ops if op.kind != "collective"]
    assert len(ops) == len(g.ops)
    for a, b in zip(g.ops, ops):
        role = a.attrs["role"]
        if role in ("column", "row", "head", "heads", "activation", "embedding"):
            assert b.flops == pytest.approx(a.flops / 2), (a.name, a.module, role)
        if role in ("column", "row", "head"):
            assert b.bytes.get("weights", 0.0) == pytest.approx(a.bytes.get("weights", 0.0) / 2)
        if role == "replicated":
            assert b.flops == a.flops and b.bytes == a.bytes, (a.name, a.module)
    colls = [(i, op) for i, op in enumerate(s.ops) if op.kind == "collective"]
    assert len(colls) == 4 + 10                       # o and down per layer; q, k, v, gate, up dgrads per layer
    for i, c in colls:
        prev = s.ops[i - 1]
        assert c.collective == "allreduce" and c.network_bytes == prev.bytes_written     # the whole reduced tensor
        assert (prev.attrs["role"], prev.attrs.get("grad")) in (("row", None), ("column", "dgrad"))
        assert c.name.endswith(prev.attrs["sublayer"])
    total = sum(op.flops for op in g.ops)
    assert sum(op.flops for op in s.ops) < 0.55 * total


def test_a_captured_model_analyzes_with_tp_through_the_front_door(models):
    import ironlaw
    path = models[0]
    one = ironlaw.analyze(f"py:{path}:tiny", on="h100")
    two = ironlaw.analyze(f"py:{path}:tiny", on="h100", tp=2, gpus=2).to_dict()
    names = [r["name"] for r in two["ops"]]
    assert names.count("tp.allreduce.fwd.attn") == 2 and names.count("tp.allreduce.fwd.mlp") == 2
    assert two["totals"]["flops"] < 0.6 * one.to_dict()["totals"]["flops"]


def test_where_capture_cannot_tell_the_op_has_no_role_and_tp_refuses_it(models):
    """A linear whose split output joins a whole tensor of its size has no row to close it: it, the ops after it
    and the linear downstream get no role; the graph's notes count them, and tensor parallelism names the first."""
    m, args = models[1]["unpaired"]()
    g = capture_graph(m, args, phase="infer")
    missing = no_role_ops(g)
    assert missing == {"aten::addmm": 2, "aten::relu": 1, "aten::add": 1}
    assert any("could not tell the tensor-parallel role of 4 op(s)" in n for n in g.meta["notes"])
    emb = next(op for op in g.ops if op.kind == "embedding")
    assert emb.attrs["role"] == "embedding"
    with pytest.raises(IronlawError, match="op 'aten::addmm' of .* no tensor-parallel rule \\(module 'fc'\\)"):
        parallel.tp_shard(g, 2)


def test_analyze_lists_the_ops_capture_could_not_give_a_role(models, capsys):
    import sys

    from ironlaw.cli import main
    with pytest.raises(SystemExit) as e:
        main(["analyze", f"py:{models[0]}:unpaired", "--on", "h100"]) or sys.exit(0)
    assert e.value.code in (0, None)
    out = " ".join(capsys.readouterr().out.split())
    assert "ops without a parallel role (capture could not tell; --tp refuses them): aten::addmm×2" in out


def test_a_captured_hugging_face_llama_gets_a_role_for_every_op():
    """transformers' own Llama (rotary, grouped-query heads, its cross-entropy loss): every op of the training step
    has a role, the projections by position, and TP 2 shards it with 4 forward and 10 backward all-reduces."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    ids = torch.randint(0, 128, (2, 16))
    g = capture_graph(transformers.LlamaForCausalLM(cfg), (), {"input_ids": ids, "labels": ids}, phase="train")
    assert no_role_ops(g) == {}
    for op in _linears(g):
        assert op.attrs["role"] == EXPECTED[op.module.split(".")[-1]], op.module
    s = parallel.tp_shard(g, 2)
    assert sum(op.kind == "collective" for op in s.ops) == 4 + 10


def test_precision_lowering_refuses_a_captured_model_with_the_reason(models):
    from ironlaw.models import precision
    m, args = models[1]["tiny"]()
    g = capture_graph(m, args, phase="train", dtype="bf16")
    with pytest.raises(IronlawError, match="fp8 training of a captured model is not modelled"):
        precision.lower(g, "fp8")


def test_what_ifs_tell_a_captured_linear_s_dgrad_and_wgrad_as_backward(models):
    """One definition of a backward op (core.passes.is_backward_op): quantizing the weights of a captured training
    step saves the forward linears' weight bytes once (not again for each dgrad that reads the same weight), and
    recomputation finds the backward at the first linear's gradient."""
    from ironlaw.core import passes
    from ironlaw.machine import hardware
    from ironlaw.models import whatif
    from ironlaw.models.whatif import base
    assert base.is_backward is parallel.roles.is_backward is passes.is_backward_op
    m, args = models[1]["tiny"]()
    g = capture_graph(m, args, phase="train", dtype="bf16")
    q, _ = whatif.apply(g, hardware.get("h100"), ["quant=fp8,target=weights"])
    saved = sum((a.bytes.get("weights", 0.0) - b.bytes.get("weights", 0.0)) * a.count
                for a, b in zip(g.ops, q.ops) if "grad" not in a.attrs and not passes.is_backward(a.name))
    assert 0 < saved < g.footprint["weights"]
    assert q.footprint["weights"] == pytest.approx(g.footprint["weights"] - saved)
    r, _ = whatif.apply(g, hardware.get("h100"), ["recompute=selective"])
    first = next(i for i, op in enumerate(g.ops) if "grad" in op.attrs)          # lm_head's wgrad or dgrad
    again = [i for i, op in enumerate(r.ops) if op.name.endswith(".recompute")]
    assert again == [first, first + 1]                                          # the 2 attentions, before it


def test_the_callers_notes_join_the_captures_own(models):
    """A caller's notes (hf capture's "captured with cpu kernels") join the capture's own (the roles note of the
    unpaired linear): both are kept, the capture's first."""
    m, args = models[1]["unpaired"]()
    g = capture_graph(m, args, phase="infer", meta={"notes": ["captured with cpu kernels: this torch has no cuda"]})
    assert len(g.meta["notes"]) == 2 and "could not tell the tensor-parallel role" in g.meta["notes"][0]
    assert g.meta["notes"][1] == "captured with cpu kernels: this torch has no cuda"
