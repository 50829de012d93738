"""Partial activation recomputation, ``--recompute full --recompute-layers N [--recompute-method block|uniform]``
(Megatron-Core's recompute_num_layers, per model chunk: ``ironlaw.models.parallel.recompute``): the step's time
and FLOPs grow linearly in N from no recomputation to full, its activation memory falls, and bad values are
refused in one line."""
from __future__ import annotations

import pytest

from conftest import one_line_error, run_cli
from ironlaw.machine import hardware
from ironlaw.models import parallel, workloads

BASE = dict(gpus=8, pp=2, global_batch=8, zero=1)           # llama3-8b: 32 layers, 16 per stage


@pytest.fixture(scope="module")
def steps():
    """Steps of llama3-8b (seq 2048) on 8 H100 at pp 2: no recomputation, full, and block N = 0, 4, 8, 16."""
    g = workloads.resolve(workloads.Request("llama3-8b", phase="train", batch=1, seq=2048))
    hw = hardware.get("h100")

    def step(**o):
        return parallel.train_step(g, hw, parallel.make_plan(BASE | o, g))
    out = {"none": step(), "full": step(recompute="full")}
    out.update({n: step(recompute="full", recompute_layers=n) for n in (0, 4, 8, 16)})
    out.update({f"uniform{n}": step(recompute="full", recompute_layers=n, recompute_method="uniform") for n in (1, 4)})
    return out


def test_time_and_flops_grow_linearly_in_n_from_none_to_full(steps):
    """N = 0 is no recomputation, N = the 16 layers of a stage is full; between, each recomputed layer adds
    the same forward: FLOPs exactly, the micro-batch's time within 1%."""
    none, full = steps["none"], steps["full"]
    for got, want in ((steps[0], none), (steps[16], full)):
        assert got.flops.hardware_per_step == pytest.approx(want.flops.hardware_per_step, rel=1e-12)
        assert got.breakdown.microbatch_s == pytest.approx(want.breakdown.microbatch_s, rel=1e-9)
    span_f = full.flops.hardware_per_step - none.flops.hardware_per_step
    span_t = full.breakdown.microbatch_s - none.breakdown.microbatch_s
    assert span_f > 0 and span_t > 0
    for n in (4, 8):
        f = steps[n].flops.hardware_per_step - none.flops.hardware_per_step
        t = steps[n].breakdown.microbatch_s - none.breakdown.microbatch_s
        assert f == pytest.approx(span_f * n / 16, rel=1e-9)
        assert t == pytest.approx(span_t * n / 16, rel=0.01)


def test_memory_falls_as_more_layers_keep_only_their_input(steps):
    """Activations per device: none at N = 0, full's at N = 16, falling in between, each recomputed layer
    trading its activations for its input. Uniform recomputes every layer (full's FLOPs) in groups of N: N = 1
    is full; N = 4 keeps 4 inputs per stage where full keeps 16 but rebuilds 4 layers at once where full
    rebuilds 1 (A: every layer's activations, I: every layer's input, over the model's 32 layers)."""
    act = {k: s.memory.activations_bytes for k, s in steps.items()}
    assert act[0] == pytest.approx(act["none"], rel=1e-12) and act[16] == pytest.approx(act["full"], rel=1e-12)
    assert act["none"] > act[4] > act[8] > act[16]
    assert act[4] - act[8] == pytest.approx(act[8] - act[16] - (act[4] - act[8]), rel=1e-9)      # linear in N
    for n in (1, 4):
        assert steps[f"uniform{n}"].flops.hardware_per_step == pytest.approx(steps["full"].flops.hardware_per_step)
    assert act["uniform1"] == pytest.approx(act["full"], rel=1e-12)
    A = act["none"]
    I = A - 4 * (act[4] - act[8])                      # 4 more layers recomputed: 4/16 of (A − I) less
    assert act["uniform4"] == pytest.approx(act["full"] + (3 * A - 24 * I) / 32, rel=1e-9)


def test_interleaving_counts_layers_per_virtual_stage():
    """With --interleave 2 a model chunk holds 8 of a stage's 16 layers: N = 4 recomputes half of them, as
    N = 8 does without interleaving; N = 8 is full."""
    g = workloads.resolve(workloads.Request("llama3-8b", phase="train", batch=1, seq=2048))

    def flops(**o):
        return parallel.step_flops(g, parallel.make_plan(BASE | o, g))
    v2 = dict(interleave=2, recompute="full")
    assert flops(**v2, recompute_layers=4).hardware_per_step == pytest.approx(
        flops(recompute="full", recompute_layers=8).hardware_per_step)
    assert flops(**v2, recompute_layers=8).hardware_per_step == pytest.approx(
        flops(recompute="full").hardware_per_step)


CMD = ("analyze", "llama3-8b", "--on", "h100", "--gpus", "8", "--pp", "2", "--global-batch", "8")


@pytest.mark.parametrize("extra,says", [
    (("--phase", "train", "--recompute", "full", "--recompute-layers", "-1"), "(≥ 0), got -1"),
    (("--phase", "train", "--recompute", "full", "--recompute-layers", "17"), "more than the 16 layers"),
    (("--phase", "train", "--recompute", "full", "--interleave", "2", "--recompute-layers", "9"),
     "more than the 8 layers of a virtual pipeline stage"),
    (("--phase", "train", "--recompute-layers", "4"), "needs --recompute full, got --recompute none"),
    (("--phase", "train", "--recompute", "selective", "--recompute-layers", "4"), "got --recompute selective"),
    (("--phase", "train", "--recompute", "full", "--recompute-method", "uniform"), "add --recompute-layers N"),
    (("--phase", "train", "--recompute", "full", "--recompute-layers", "0", "--recompute-method", "uniform"),
     "must be ≥ 1"),
    (("--phase", "train", "--recompute", "full", "--recompute-layers", "4", "--recompute-method", "blocks"),
     "one of block, uniform"),
    (("--phase", "prefill", "--recompute-layers", "4"), "--recompute-layers shapes a training step"),
])
def test_bad_recompute_layers_are_refused_in_one_line(extra, says):
    cmd = (CMD[:4] if "prefill" in extra else (*CMD[:-2], "--global-batch", "16") if "--interleave" in extra
           else CMD)
    assert says in one_line_error(run_cli(*cmd, *extra))


def test_the_library_takes_recompute_layers_as_keywords():
    """``api.analyze(..., recompute="full", recompute_layers=N, recompute_method=...)``: the CLI's plan; a bad N is
    an IronlawError."""
    from ironlaw import api
    from ironlaw.core.errors import IronlawError
    kw = dict(phase="train", seq=2048, gpus=8, pp=2, global_batch=8, recompute="full")
    st = api.analyze("llama3-8b", "h100", **kw, recompute_layers=4, recompute_method="uniform")
    assert (st.plan.recompute_layers, st.plan.recompute_method) == (4, "uniform")
    with pytest.raises(IronlawError, match="more than the 16 layers"):
        api.analyze("llama3-8b", "h100", **kw, recompute_layers=17)


def test_a_plan_that_does_not_fit_is_told_what_every_layer_recomputed_needs():
    """A partial recomputation that does not fit: the most-sharded plan quoted is full recomputation of every
    layer (the same bytes as --recompute full alone), and the advice names dropping --recompute-layers."""
    big = ("analyze", "llama3-70b", "--phase", "train", "--on", "h100", "--gpus", "8", "--tp", "8", "--global-batch",
           "8", "--seq", "8192", "--zero", "3", "--recompute", "full")
    alone, partial = (one_line_error(run_cli(*big, *x)) for x in ((), ("--recompute-layers", "0")))
    assert "even fully sharded" in alone and alone.split("): ")[1] == partial.split("): ")[1]
    assert "(--zero 3 --recompute full without --recompute-layers)" in partial
    fits_full = ("analyze", "llama3-70b", "--phase", "train", "--on", "h100", "--gpus", "16", "--tp", "8", "--pp",
                 "2", "--global-batch", "8", "--seq", "4096", "--zero", "3", "--recompute", "full",
                 "--recompute-layers", "0")
    assert one_line_error(run_cli(*fits_full)).endswith(
        "try --zero 3, --recompute full without --recompute-layers, or larger --tp/--pp/--cp")
