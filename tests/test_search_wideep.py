"""``ironlaw search --phase serve``: a wide-EP layout refused only for the MoE's pooled workspace (every rank's
max_num_tokens as the exchange receives them) is tried at smaller step token budgets, the best that fits kept,
shown in the table and carried by its re-run."""
from __future__ import annotations

import shlex

import pytest

from conftest import one_line_error, run_cli
from ironlaw.models.search.serve import budgets

# DeepSeek-V3's 256 + 32 slots over 72 GB200s (NVL72): trtllm-bench's budget of 17,408 tokens pools 72 × 17,408
# rows in each rank's MoE workspace, more than a GPU holds
WIDE = ("search", "deepseek-v3", "--phase", "serve", "--on", "gb200", "--gpus", "72", "--ep", "72",
        "--redundant-experts", "32", "--dtype", "fp8")


def test_the_ladder_halves_down_to_the_max_batch_then_takes_it():
    assert budgets(17408, 3584) == [16384, 8192, 4096, 3584]
    assert budgets(512, 128) == [256, 128]
    assert budgets(4096, 4096) == [] and budgets(2048, 4096) == []


def test_a_wide_ep_layout_refused_for_its_workspace_is_searched_at_a_budget_that_fits():
    """EP 72 is refused at trtllm-bench's budget (``serve`` says so in one line); the search prices it at the
    ladder's budgets and keeps the fastest that fits, and ``serve … --max-num-tokens N`` re-runs it exactly."""
    said = one_line_error(run_cli("serve", "deepseek-v3", "--on", "gb200", "--tp", "72", "--ep", "72",
                                  "--attention-dp", "--max-throughput", "--dtype", "fp8", "--redundant-experts", "32"))
    assert "a smaller --max-num-tokens shrinks it" in said
    r = run_cli(*WIDE, "--format", "json")
    assert r.rc == 0, r.err
    doc = r.json()
    best = doc["top"][0]
    assert (best["ep"], best["attention_dp"]) == (72, True)
    assert best["max_num_tokens"] in budgets(17408, 3584)
    assert doc["candidates_evaluated"] == 1 + len(budgets(17408, 3584))
    assert doc["rerun"].endswith(f"--max-num-tokens {best['max_num_tokens']}")
    from ironlaw.report.search_report import render
    page = render(doc)
    assert f"tok{best['max_num_tokens']}" in page and "<b>tokN</b> step token budget" in page
    again = run_cli(*shlex.split(doc["rerun"])[1:], "--format", "json")
    assert again.rc == 0, again.err
    assert again.json()["time_s"] == pytest.approx(doc["time_s"], rel=1e-9)


def test_the_table_names_the_budget_and_its_legend():
    """At 80 columns the layout 'tp72 ep72+32 adp fp8 ×1512 tok3584' wraps its budget onto a second line: the
    slots' '+32' stays, no cell (the binding resource's) is cut."""
    out = run_cli(*WIDE, env={"COLUMNS": "80"}).out
    assert "tp72 ep72+32 adp" in out and " tok3584 " in out and " bandwidth" in out
    assert "…" not in out and max(len(ln) for ln in out.splitlines()) <= 80
    assert "tokN: step token budget (--max-num-tokens)" in " ".join(out.split())


def test_a_layout_the_defaults_fit_carries_no_budget():
    """EP 12 fits at trtllm-bench's budget: no ``max_num_tokens`` in its row, none in its re-run."""
    doc = run_cli("search", "deepseek-v3", "--phase", "serve", "--on", "gb200", "--gpus", "12", "--tp", "12",
                  "--dtype", "fp8", "--redundant-experts", "32", "--format", "json").json()
    assert "max_num_tokens" not in doc["top"][0] and "--max-num-tokens" not in doc["rerun"]


def test_where_no_budget_fits_the_refusal_names_the_ones_tried(monkeypatch):
    """Every budget refused too: the search's one line names the budgets it tried instead of advising a smaller
    --max-num-tokens (which the search has no option for)."""
    from ironlaw.models.search import serve as search_serve
    from ironlaw.models.serving.engine import SHRINKS, Limits, WorkspaceRefusal

    def refused(spec, hw, prompt, output, engine, kw, memory_fraction=None):
        raise WorkspaceRefusal(f"deepseek-v3 does not fit (the workspace …: {SHRINKS})", Limits(3584, 17408, "x"))
    monkeypatch.setattr(search_serve, "_offline", refused)
    said = one_line_error(run_cli(*WIDE))
    assert SHRINKS not in said
    assert "nor does any --max-num-tokens the search tried (16,384, 8,192, 4,096, 3,584)" in said


def test_pooled_rows_past_the_longest_step_are_a_workspace_refusal_the_search_shrinks():
    """At a 65,536-token prompt EP 72 pools 4,725,504 tokens' rows, past the longest step a model is built for:
    ``serve`` says so in one line naming --max-num-tokens (not the builder's --seq), and the search prices the
    layout at a budget that fits."""
    long = ("--prompt", "65536", "--output", "1024")
    said = one_line_error(run_cli("serve", "deepseek-v3", "--on", "gb200", "--tp", "72", "--ep", "72",
                                  "--attention-dp", "--max-throughput", "--redundant-experts", "32", *long))
    assert "rows of 4,725,504 tokens" in said and "a smaller --max-num-tokens shrinks it" in said
    doc = run_cli(*WIDE, *long, "--format", "json").json()
    assert doc["top"][0]["ep"] == 72 and doc["top"][0]["max_num_tokens"] < 65632
