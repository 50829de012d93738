"""``ironlaw search --redundant-experts N``: EPLB's extra expert slots on every layout with expert parallelism,
whose degrees divide the experts + N (not only the experts), priced as ``analyze``/``serve`` price one layout."""
from __future__ import annotations

import shlex

import pytest

from conftest import one_line_error, run_cli

# Mixtral's 8 experts + 4 slots = 12 on 6 GB200s: EP 3 and 6 divide the slots, not the experts
TRAIN = ("search", "mixtral-8x7b", "--on", "gb200", "--gpus", "6", "--global-batch", "12", "--seq", "1024",
         "--tp", "1", "--pp", "1", "--micro-batch", "1", "--zero", "3", "--recompute", "full")
# DeepSeek-V3's 256 experts + 32 slots = 288 on 12 GB200s: EP 12 divides the slots, not the experts
SERVE = ("search", "deepseek-v3", "--phase", "serve", "--on", "gb200", "--gpus", "12", "--tp", "12", "--dtype",
         "fp8")


def _rerun(doc: dict) -> dict:
    r = run_cli(*shlex.split(doc["rerun"])[1:], "--format", "json")
    assert r.rc == 0, r.err
    return r.json()


def test_the_training_search_takes_ep_degrees_that_divide_the_experts_and_slots():
    """EP 6 and 3 divide 8 + 4 slots, not Mixtral's 8 experts: the search ranks them, each with the slots, and its
    re-run (``analyze … --redundant-experts 4``) gives the #1's step time exactly."""
    r = run_cli(*TRAIN, "--redundant-experts", "4", "--top", "3", "--format", "json")
    assert r.rc == 0, r.err
    doc = r.json()
    assert [e["ep"] for e in doc["top"]] == [6, 3, 2]
    assert all(e["redundant_experts"] == 4 for e in doc["top"])
    assert "--ep 6" in doc["rerun"] and doc["rerun"].endswith("--redundant-experts 4")
    assert _rerun(doc)["step_s"] == pytest.approx(doc["time_s"], rel=1e-9)


def test_the_slots_change_the_training_step_as_analyze_prices_them():
    """The fast path prices the slots as train_step does: the same layout with 4 slots holds more expert weights
    than without them (EP 2 divides 8 and 8 + 4 alike)."""
    base = run_cli(*TRAIN, "--ep", "2", "--format", "json").json()["top"][0]
    slots = run_cli(*TRAIN, "--ep", "2", "--redundant-experts", "4", "--format", "json").json()["top"][0]
    assert "redundant_experts" not in base and slots["redundant_experts"] == 4
    assert slots["memory_per_gpu_bytes"] > base["memory_per_gpu_bytes"]


def test_the_serving_search_holds_the_slots_on_its_expert_parallel_layouts():
    """EP 12 divides DeepSeek-V3's 256 + 32 slots, not its 256 experts: without the slots the search has no
    layout of 12 (--tp 12 is refused); with them, it ranks the attention-DP/EP one, and ``serve …
    --redundant-experts 32`` re-runs it to the same throughput."""
    assert "--tp 12: serving needs a divisor of the 128 heads" in one_line_error(run_cli(*SERVE))
    r = run_cli(*SERVE, "--redundant-experts", "32", "--format", "json")
    assert r.rc == 0, r.err
    doc = r.json()
    best = doc["top"][0]
    assert (best["ep"], best["attention_dp"], best["redundant_experts"]) == (12, True, 32)
    assert doc["rerun"].endswith("--redundant-experts 32")
    again = _rerun(doc)
    assert again["moe"]["placement"]["redundant_slots"] == 32
    assert again["output_tokens_per_s_per_gpu"] == pytest.approx(best["tokens_per_s_per_gpu"], rel=1e-9)
    assert again["time_s"] == pytest.approx(doc["time_s"], rel=1e-9)


def test_the_table_shows_the_slots_within_80_columns():
    """'ep12+32' in the serving table (and the legend says what +N is); in the training table, one column too
    wide for its widest layout, that layout wraps at a space onto a second line: every layout keeps its slots and
    no cell is cut."""
    out = run_cli(*SERVE, "--redundant-experts", "32", env={"COLUMNS": "80"}).out
    assert "tp12 ep12+32 adp fp8" in out and "+N: redundant" in " ".join(out.split())
    assert "…" not in out and max(len(ln) for ln in out.splitlines()) <= 80
    out = run_cli(*TRAIN, "--redundant-experts", "4", env={"COLUMNS": "80"}).out
    assert "…" not in out and max(len(ln) for ln in out.splitlines()) <= 80
    assert "tp1 pp1 dp6 ep6+4 mb1" in out and "cp2 dp3 ep3+4" in out and "+N: redundant" in " ".join(out.split())
    assert "4 redundant expert slots" in " ".join(out.split())


@pytest.mark.parametrize("args, said", [
    (TRAIN + ("--redundant-experts", "-1"), "--redundant-experts is a count of extra expert slots (≥ 0), got -1"),
    (("search", "llama3-8b", "--on", "h100", "--gpus", "8", "--redundant-experts", "8"),
     "--redundant-experts 8: llama3-8b is dense"),
    (("search", "mixtral-8x7b", "--on", "h100", "--gpus", "8", "--redundant-experts", "1"),
     "--redundant-experts 1: no expert-parallel degree the layouts take (2, 4, 8) divides the 8 + 1 = 9 expert "
     "slots; --redundant-experts 2 makes 10 slots"),
    (TRAIN + ("--ep", "1", "--redundant-experts", "4"), "--redundant-experts 4 spreads replicas of hot experts"),
    (TRAIN + ("--redundant-experts", "9"), "--redundant-experts 9 is more than the 8 experts"),
    (SERVE + ("--redundant-experts", "-1"), "--redundant-experts is a count of extra expert slots (≥ 0), got -1"),
    (("search", "qwen3-30b-a3b", "--phase", "serve", "--on", "h100", "--gpus", "8", "--redundant-experts", "3"),
     "--redundant-experts 3: no expert-parallel degree within one node (2 to 8) divides the 128 + 3 = 131 expert "
     "slots"),
    (SERVE + ("--redundant-experts", "32", "--serve-engine", "vllm"),
     "--redundant-experts 32: --moe-dispatcher and --redundant-experts price TensorRT-LLM's wide-EP strategies "
     "(its measured tables); --serve-engine vllm is not modelled with them"),
    (SERVE + ("--redundant-experts", "32", "--slo", "ttft=2s,itl=50ms"),
     "--redundant-experts 32 belongs to the offline max-throughput scenario"),
    (("search", "llama3-8b", "--phase", "serve", "--on", "h100", "--gpus", "8", "--redundant-experts", "8"),
     "--redundant-experts 8: llama3-8b is dense"),
])
def test_redundant_experts_that_cannot_apply_are_refused_in_one_line(args, said):
    line = one_line_error(run_cli(*args))
    assert said in line, line
