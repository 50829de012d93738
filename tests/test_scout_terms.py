"""benchmarks/trtllm_scout_terms.py: Llama 4 Scout's priced step split into terms that add up to it, and the
table look-ups it reads them against."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import trtllm_scout_terms as terms  # noqa: E402


def test_the_terms_of_a_decode_step_add_up_to_the_step():
    """Scout 128/2048 on one B200, its decode step (a CUDA graph of 640 rows): each op lands in one term, the terms
    (per layer × calls, the LM head and the rest per step) sum to the step's priced seconds, and the 36 chunked and
    12 global attention layers count as 48 decode-attention calls."""
    est = terms.h100.predict(terms.cell_of("b200", "128/2048"), "b200")
    n, e = terms.chosen_step(est, "decode")
    per, calls, ops = terms.ironlaw_terms(e)
    assert not e.graph.meta["eager"] and n > 1000
    assert calls["decode attention"] == 48 and calls["routed experts"] == 48 and calls["prefill attention"] == 0
    assert sum(per[t] * calls[t] for t in per) == pytest.approx(float(e.time_s) * 1e6, rel=1e-9)
    shape = terms.step_shape(e, 128)
    assert shape["m"] == 640 and shape["head_m"] == pytest.approx(640)
    assert sum(c for c, _ in shape["contexts"]) == 48


def test_the_step_that_carries_prompts_and_a_missing_one_are_told_apart():
    est = terms.h100.predict(terms.cell_of("gb200", "2048/128"), "gb200")
    _, e = terms.chosen_step(est, "prompt")
    assert e.graph.meta["eager"] and terms.step_shape(e, 2048)["prompts"] > 1
    with pytest.raises(ValueError, match="no llama4-scout b200 cell"):
        terms.cell_of("b200", "64/64")


def test_the_table_look_ups_interpolate_inside_and_refuse_outside():
    """GEMM rows: linear in M between rows at the same N and K; attention rows: log-bilinear over batch and
    context, exact at a row; nan outside the rows either way (the benchmark prints — there)."""
    g = pd.DataFrame({"gemm_dtype": ["nvfp4"] * 2, "m": [512, 768], "n": [5120] * 2, "k": [5120] * 2,
                      "latency": [0.020, 0.030]})
    assert terms.gemm_us(g, "nvfp4", 640, 5120, 5120) == pytest.approx(25.0)
    assert math.isnan(terms.gemm_us(g, "nvfp4", 1024, 5120, 5120))
    rows = pd.DataFrame({"batch_size": [64, 64, 128, 128], "step": [1023, 2047, 1023, 2047],
                         "latency": [0.0336, 0.052, 0.0522, 0.0889]})
    assert terms.grid_us(rows, "batch_size", "step", 128, 2047) == pytest.approx(88.9)
    mid = terms.grid_us(rows, "batch_size", "step", 90.5, 1447.5)
    assert 33.6 < mid < 88.9
    assert math.isnan(terms.grid_us(rows, "batch_size", "step", 572, 1153))


def test_the_least_batch_is_the_first_whose_rate_is_above_the_published_one():
    """A rate rising with the batch (here 30 tok/s a sequence): the published 9,000 is first passed at 301; a rate
    above it at every batch gives 1, one below it at the most gives the most."""
    assert terms.least_batch(lambda b: 30.0 * b, 9000.0, 572) == 301
    assert terms.least_batch(lambda b: 1e9, 9000.0, 572) == 1
    assert terms.least_batch(lambda b: 1.0, 9000.0, 572) == 572


def test_the_cells_rate_at_its_own_limit_is_the_benchmarks_prediction():
    """``cell_rate`` without a batch is ``trtllm_h100.predict`` (what trtllm_blackwell.py scores); a smaller batch
    is slower."""
    c = terms.cell_of("b200", "128/4096")
    est = terms.h100.predict(c, "b200")
    assert terms.cell_rate(c, None) == pytest.approx(est.output_tokens_per_s, rel=1e-12)
    assert terms.cell_rate(c, est.batch // 2) < est.output_tokens_per_s


@pytest.mark.parametrize("argv, says", [
    (["--batches", "--cell", "128/2048"], "--batches reads every cell and no table; it takes no --cell"),
    (["--model", "llama3.3-70b"], "--model is for --batches"),
    ([], "the term table needs --data DIR"),
])
def test_an_option_the_run_would_ignore_is_refused_in_one_line(monkeypatch, capsys, argv, says):
    monkeypatch.setattr(sys, "argv", ["trtllm_scout_terms.py", *argv])
    assert terms.main() == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1
