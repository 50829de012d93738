"""An op's pass from its name (``ironlaw.core.passes``), as the builders and the recompute transform name them."""
from ironlaw.core import passes
from ironlaw.core.passes import Pass


def test_names_round_trip_and_tell_the_pass():
    assert passes.of("layer.qkv") is Pass.FORWARD
    assert passes.of(passes.backward_of("layer.qkv")) is Pass.BACKWARD
    assert passes.of(passes.recompute_of("layer.qkv")) is Pass.RECOMPUTE
    assert passes.of("optimizer.adamw") is Pass.OPTIMIZER and passes.of("optimizer_like.x") is Pass.FORWARD
    for p in (passes.backward_of, passes.recompute_of):
        assert passes.forward_of(p("layer.qkv")) == "layer.qkv"
    assert passes.forward_of("layer.qkv") == "layer.qkv"


def test_a_built_training_graph_and_its_recomputed_stage():
    from ironlaw.models import parallel, workloads
    g = workloads.resolve(workloads.Request("llama3-8b", phase="train", batch=1, seq=512))
    by = {p: [op.name for op in g.ops if passes.of(op.name) is p] for p in Pass}
    assert len(by[Pass.OPTIMIZER]) == 1 and not by[Pass.RECOMPUTE]
    assert {passes.forward_of(n) for n in by[Pass.BACKWARD]} <= set(by[Pass.FORWARD])
    plan = parallel.make_plan({"gpus": 1, "recompute": "selective"}, g)
    (stage,), _ = parallel.stage_ops(g, plan)
    again = [op for op in stage if passes.of(op.name) is Pass.RECOMPUTE]
    assert again and all(op.kind == "attention" for op in again)
    first_bwd = next(i for i, op in enumerate(stage) if passes.of(op.name) is Pass.BACKWARD)
    assert stage[first_bwd - len(again):first_bwd] == again         # re-run just before the backward
