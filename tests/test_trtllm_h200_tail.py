"""benchmarks/trtllm_h200.py --tail: the H200 cells past the p90 goal, grouped by what sets their batch, and the
pairs of cells whose published ratio no prediction in the model's ratio can meet within the goal; and
trtllm_h100.py --experts, which refits the routed experts' η with the engine's constants."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import trtllm_h100 as h100  # noqa: E402
import trtllm_h200 as h200  # noqa: E402


def row(model, isl, osl, limit, error=0.0, batch=1504, published=1000.0, predicted=1000.0):
    return {"model": model, "tp": 8, "isl": isl, "osl": osl, "limit": limit, "error": error, "batch": batch,
            "per_rank": batch // 8, "graph_max": 8192, "published": published, "predicted": predicted}


def test_each_cell_falls_in_the_group_of_what_sets_its_batch():
    assert h200.group_of(row("llama3.1-8b", 128, 2048, "requests")) == "dense"
    assert h200.group_of(row("qwen3-235b-a22b", 128, 2048, "requests")) == "MoE, every request in flight"
    assert h200.group_of(row("qwen3-235b-a22b", 20000, 2000, "kv_memory")) == "MoE, long prompts"
    assert h200.group_of(row("llama4-scout", 1000, 1000, "kv_memory")) == "MoE, KV-bound batch"
    assert h200.group_of(row("llama4-scout", 128, 128, "max_batch")) == "MoE, KV-bound batch"


@pytest.mark.parametrize("published, predicted", [((42821, 28026), (31554, 27465)), ((1.0, 2.0), (3.0, 1.0))])
def test_the_pair_floor_is_the_least_max_error_and_is_reached(published, predicted):
    floor = h200.pair_floor(published, predicted)
    q = (predicted[0] / predicted[1]) / (published[0] / published[1])
    x, y = 2 * q / (1 + q), 2 / (1 + q)                  # the two predictions over their published values
    assert x / y == pytest.approx(q)
    assert 100 * abs(x - 1) == pytest.approx(floor) and 100 * abs(y - 1) == pytest.approx(floor)
    for s in (0.9, 0.95, 1.05, 1.1):                     # any other scale of the same ratio does worse
        assert max(abs(s * x - 1), abs(s * y - 1)) * 100 > floor
    assert h200.pair_floor(published, published) == pytest.approx(0.0)


def test_pairs_are_one_models_cells_with_every_request_in_flight_at_one_batch():
    rows = [row("qwen3-235b-a22b", 128, 2048, "requests", batch=3000, published=42821, predicted=31554),
            row("qwen3-235b-a22b", 500, 2000, "requests", batch=3000, published=28026, predicted=27465),
            row("qwen3-235b-a22b", 128, 4096, "requests", batch=1504),          # another batch
            row("llama4-maverick", 500, 2000, "kv_memory", batch=3000),         # its batch is the KV cache's
            row("llama3.1-8b", 128, 2048, "requests", batch=3000)]              # dense
    pairs = h200.same_batch_pairs(rows)
    assert [(a["isl"], b["isl"]) for a, b, _ in pairs] == [(128, 500)]
    assert pairs[0][2] == pytest.approx(14.2, abs=0.05)          # 42,821 / 28,026 published against 1.149


def test_the_tail_lists_only_cells_past_the_goal_largest_first(capsys):
    rows = [row("qwen3-235b-a22b", 128, 2048, "requests", error=-26.3, batch=3000),
            row("llama4-scout", 20000, 2000, "kv_memory", error=30.9, batch=180),
            row("llama3.1-8b", 128, 128, "max_batch", error=10.7)]
    h200.print_tail(rows, on_h100={("qwen3-235b-a22b", 128, 2048): -1.9})
    out = capsys.readouterr().out
    tail = out.split("per group")[0]
    assert tail.index("20000/2000") < tail.index("128/2048") and "128/128" not in tail
    assert "375->384" in tail and "-1.9%" in tail                  # 3000 over 8 ranks, padded to the next graph
    assert re.search(r"MoE, long prompts\s+1\s+\+30\.9%\s+1\n", out)        # cells, signed median, past it


def test_experts_names_are_fittable_constants():
    assert set(h100.EXPERTS) <= set(h100.NAMES) and all(k in h100.BOUNDS for k in h100.EXPERTS)


def test_kv_need_is_the_share_of_the_rank_s_budget_all_its_requests_take():
    """Qwen3-235B-A22B 128/2048 on H200 (EP 8, attention DP): 3,000 requests, 375 a rank, each reserving
    ⌈2,176 / 32⌉ blocks; the KV cache holds them all (every request in flight) at about three quarters of it."""
    cell = next(c for c in h100.cells(h200.CSV) if (c["model"], c["isl"], c["osl"]) == ("qwen3-235b-a22b", 128, 2048))
    est = h100.predict({**cell, "spec": h100.spec_for(cell["model"])}, "h200")
    need = h200.kv_need(est)
    assert need == pytest.approx(375 * est.memory["kv_bytes_per_sequence"] / est.memory["kv_budget_bytes"])
    assert est.batch_limit == "requests" and 0.6 < need < 0.85


def test_the_need_table_splits_the_request_bound_cells_at_need_split(capsys):
    rows = [{**row("qwen3-235b-a22b", 128, 2048, "requests", error=-26.6), "kv_need": 0.76},
            {**row("qwen3-235b-a22b", 1000, 2000, "requests", error=-18.8), "kv_need": 0.53},
            {**row("qwen3-235b-a22b", 500, 2000, "requests", error=-3.2), "kv_need": 0.88},
            {**row("llama4-scout", 1000, 1000, "kv_memory", error=-25.9), "kv_need": 1.41},   # KV-bound: not listed
            {**row("llama3.1-8b", 128, 2048, "requests", error=2.9), "kv_need": 0.5}]         # dense: not listed
    h200.print_need(rows)
    out = capsys.readouterr().out.splitlines()
    listed = [ln for ln in out if "KV need 0." in ln and "error" in ln]
    assert [ln.split()[1] for ln in listed] == ["1000/2000", "128/2048", "500/2000"]
    assert re.search(r"below 0\.85\s+2 cells, signed median\s+-22\.7%", "\n".join(out))
    assert re.search(r"at or above 0\.85\s+1 cells, signed median\s+-3\.2%", "\n".join(out))


def _runs(model, gpu, x, p, third_x=None, n=3000):
    """The three ``batch_split`` cells of one batch: decode step x at the pair's mean context (1,500), the third
    cell's (1,152) ``third_x``, p seconds per prompt token; published output tokens/s as N·OSL / run."""
    out = []
    for (i, o), step in zip((*h200.SPLIT_PAIR, h200.SPLIT_THIRD), (x, x, third_x if third_x is not None else x)):
        out.append({"model": model, "gpu": gpu, "isl": i, "osl": o, "published": n * o / (o * step + n * i * p)})
    return out


def test_the_split_recovers_one_batchs_decode_step_and_prompt_cost():
    cells = _runs("qwen3-235b-a22b", "b200", 0.046, 8e-6, third_x=0.044)
    (r,) = h200.batch_split(cells)
    assert r["requests"] == 3000
    assert r["decode_s"] == pytest.approx(0.046) and r["prompt_token_s"] == pytest.approx(8e-6)
    assert r["third_decode_s"] == pytest.approx(0.044)
    assert r["floor"] == pytest.approx((128 + 1024) / (1000 + 500))
    assert r["ratio"] >= r["floor"]


def test_a_third_step_shorter_than_its_context_allows_is_not_one_batch():
    cells = _runs("qwen3-235b-a22b", "h200", 0.1007, 8.5e-6, third_x=0.0685)
    (r,) = h200.batch_split(cells)
    assert r["ratio"] == pytest.approx(0.0685 / 0.1007)
    assert r["ratio"] < r["floor"]
    assert h200.batch_split(cells[:2]) == []              # no third cell: nothing to say


def test_the_published_h200_qwen3_trio_is_not_one_batch_and_b200s_is():
    cells = [{**c, "gpu": "h200"} for c in h100.cells(h200.CSV)] + h100.cells(h200.BLACKWELL_CSV)
    got = {(r["model"], r["gpu"]): r for r in h200.batch_split(cells)}
    assert got[("qwen3-235b-a22b", "h200")]["ratio"] < got[("qwen3-235b-a22b", "h200")]["floor"]
    assert got[("qwen3-235b-a22b", "b200")]["ratio"] >= got[("qwen3-235b-a22b", "b200")]["floor"]


def test_experts_alone_is_refused_beside_another_fitted_set(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["trtllm_h100.py", "--experts-alone", "--experts"])
    with pytest.raises(SystemExit) as e:
        h100.main()
    assert e.value.code == 2
    assert "--experts-alone fits the experts' η and nothing else" in capsys.readouterr().err


def test_the_dummy_padding_switch_is_a_scored_switch():
    h100.constants_arg("pad_on_dummy=1,moe_tables=0")
    try:
        assert h100.fitted().pad_on_dummy is True and h100.fitted().moe_tables is False
    finally:
        h100.defaults()
    assert h100.fitted().pad_on_dummy is False
