"""`ironlaw search` chooses how many layers full recomputation re-runs (``--recompute full --recompute-layers N``,
``ironlaw.models.parallel.recompute``): per layout the fewest of each model chunk's layers whose memory fits (the
block method), priced by the fast path as ``train_step`` prices them; ``--recompute-layers`` fixes N and
``--recompute-method`` the method, refused as ``analyze`` refuses them."""
import numpy as np
import pytest

import ironlaw
from ironlaw.core.errors import IronlawError

from conftest import one_line_error, run_cli
from test_search import _check_sample

# llama3-8b at seq 8192 on 8 H100, one layout: micro-batch 2 holds 80.8 GiB with 4 of its 32 layers recomputed
ONE = dict(gpus=8, global_batch=64, seq=8192, tp=1, pp=1, dp=8, micro_batch=2, zero=3)
ARGS = ("search", "llama3-8b", "--on", "h100", "--gpus", "8", "--global-batch", "64", "--seq", "8192", "--format",
        "json")


def _flags(**o) -> list[str]:
    return [x for k, v in o.items() if k not in ("gpus", "global_batch", "seq")
            for x in (f"--{k.replace('_', '-')}", str(v))]


def _analyze(**o):
    return ironlaw.analyze("llama3-8b", on="h100", phase="train", **{**ONE, **o})


def test_the_search_recomputes_the_fewest_layers_that_fit():
    """With --recompute full the layout does not fit without recomputation and fits with all 32 layers
    recomputed; the search takes 5 (4 do not fit), steps faster than full recomputation of every layer, and is
    the step analyze prices with --recompute-layers 5, time and memory to 1e-6."""
    r = run_cli(*ARGS, *_flags(**ONE), "--recompute", "full")
    assert r.rc == 0, r.err
    best = r.json()["top"][0]
    assert (best["recompute"], best["recompute_layers"], best["chunk_layers"]) == ("full", 5, 32)
    one = _analyze(recompute="full", recompute_layers=5)
    assert one.step_s == pytest.approx(best["time_s"], rel=1e-6)
    assert one.memory.total_bytes == pytest.approx(best["memory_per_gpu_bytes"], rel=1e-6)
    assert best["time_s"] < _analyze(recompute="full").step_s
    with pytest.raises(IronlawError, match="more than the 79.6 GiB"):
        _analyze(recompute="full", recompute_layers=4)
    text = run_cli(*ARGS[:-2], *_flags(**ONE), "--recompute", "full")
    assert text.rc == 0 and "f5:32/3" in text.out


def test_a_layout_that_fits_without_recomputation_keeps_none():
    """At micro-batch 1 the layout fits without recomputation: its full-recomputation row is not ranked beside it
    (it would recompute the fewest layers, one, for nothing)."""
    r = run_cli(*ARGS, *_flags(**{**ONE, "micro_batch": 1}))
    assert r.rc == 0, r.err
    doc = r.json()
    assert (doc["candidates_evaluated"], doc["fits"]) == (3, 2)
    assert [e["recompute"] for e in doc["top"]] == ["none", "selective"]


def test_the_fast_path_prices_partial_recomputation_as_train_step():
    """Random layouts of a tight search (pipelines, interleaving, context and sequence parallelism, ZeRO) whose
    full recomputation re-runs some but not all of a chunk's layers: the fast path's time, memory and every
    breakdown term are train_step's with that --recompute-layers."""
    c, res = _check_sample("llama3-8b", 8, 64, 8192, 3, seed=11, recompute="full",
                           must=lambda r: 0 < r["recompute_layers"] < 32 // (r["pp"] * r["interleave"]))
    partial = (c["recompute"] == 2) & res["fits"] & (res["recompute_layers"] * c["pp"] * c["interleave"] < 32)
    assert np.any(partial & (c["pp"] > 1)) and np.any(partial & (c["pp"] == 1))


def test_recompute_layers_fixes_n_and_skips_smaller_chunks():
    """--recompute-layers 20 (unknown to search before) fixes N on every layout: only layouts whose chunks hold 20
    layers are ranked (pp 1 of 32 layers), and the notes say why the others are left out; with the uniform
    method the #1 layout is analyze's step with the same flags."""
    r = run_cli(*ARGS, "--tp", "2", "--recompute", "full", "--recompute-layers", "20")
    assert r.rc == 0, r.err
    doc = r.json()
    assert {(e["pp"], e["recompute_layers"]) for e in doc["top"]} == {(1, 20)}
    assert any("layouts whose chunks hold fewer layers are left out" in n for n in doc["step_options"])
    u = run_cli(*ARGS, *_flags(**ONE), "--recompute", "full", "--recompute-layers", "4", "--recompute-method",
                "uniform")
    best = u.json()["top"][0]
    assert (best["recompute_layers"], best["recompute_method"]) == (4, "uniform")
    one = _analyze(recompute="full", recompute_layers=4, recompute_method="uniform")
    assert one.step_s == pytest.approx(best["time_s"], rel=1e-6)
    assert one.memory.total_bytes == pytest.approx(best["memory_per_gpu_bytes"], rel=1e-6)


@pytest.mark.parametrize("extra", [("--recompute", "selective", "--recompute-layers", "4"),
                                   ("--recompute", "full", "--recompute-method", "uniform"),
                                   ("--recompute", "full", "--recompute-layers", "4", "--recompute-method", "diag"),
                                   ("--recompute", "full", "--recompute-layers", "40"),
                                   ("--recompute", "full", "--recompute-layers", "0", "--recompute-method",
                                    "uniform")])
def test_refusals_are_analyzes(extra):
    """Each bad combination is refused in analyze's own line."""
    got = run_cli(*ARGS, "--tp", "1", "--pp", "1", *extra)
    want = run_cli("analyze", "llama3-8b", "--on", "h100", "--phase", "train", "--seq", "8192",
                   *_flags(**ONE), *extra)
    assert got.rc == want.rc == 2
    assert one_line_error(got) == one_line_error(want)


def test_recompute_layers_needs_full_fixed_and_belongs_to_training():
    """--recompute-layers without --recompute full fixed, more than any layout's chunk holds, or in a serving
    search, is refused in one line."""
    r = run_cli(*ARGS, "--recompute-layers", "4")
    assert r.rc == 2 and "add --recompute full" in one_line_error(r)
    deep = run_cli(*ARGS, "--tp", "1", "--cp", "1", "--dp", "2", "--recompute", "full", "--recompute-layers", "9")
    assert "more than the 8 layers of the largest model chunk" in one_line_error(deep)          # pp 4 left
    s = run_cli("search", "llama3-8b", "--phase", "serve", "--recompute-layers", "4")
    assert s.rc == 2 and "--recompute-layers belongs to the training search" in one_line_error(s)
