"""The published vLLM / SGLang serving rows (tests/data/vllm_sglang_gpustack_perflab.csv, gpustack/gpustack
docs/performance-lab, Apache-2.0) and the benchmark that scores them (benchmarks/vllm_sglang_published.py):
every row names its origin, its numbers agree with each other as the page printed them, the loader reads every
row, and every row the benchmark prices goes through ``ironlaw.serve``."""
from __future__ import annotations

import csv
import math
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import vllm_sglang_published as bench  # noqa: E402

COMMIT = "1f37f1b8bd79c6b424a0cb55c7abd08a5c2132dc"


@pytest.fixture(scope="module")
def scored() -> list[dict]:
    return bench.scored()


def raw_rows() -> list[dict]:
    with open(bench.CSV, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def test_header_names_origin_license_and_client():
    head = "".join(line for line in open(bench.CSV) if line.startswith("#"))
    assert "gpustack/gpustack" in head and COMMIT in head and "Apache-2.0" in head
    assert "vllm bench serve" in head and "--seed 42" in head


def test_every_row_names_its_origin_and_configuration():
    rows = raw_rows()
    assert len(rows) >= 60
    for r in rows:
        assert r["source_url"].startswith(f"https://github.com/gpustack/gpustack/blob/{COMMIT}/docs/performance-lab/")
        assert r["source_url"].endswith(f"/{r['gpu']}.md"), r["row"]          # the page of the row's GPU
        assert r["license"] == "Apache-2.0" and r["source_date"] == "2026-01-06" and r["source_section"]
        assert r["framework"] in ("vllm", "sglang", "trtllm")
        assert re.fullmatch(r"v\d+\.\d+\.\d+(\.post\d+|rc\d+)?", r["version"]), r["version"]
        cmd = r["serve_command"]
        assert cmd.startswith({"vllm": "vllm serve", "sglang": "python3 -m sglang.launch_server",
                               "trtllm": "trtllm-serve"}[r["framework"]])
        assert r["checkpoint"] in cmd
        assert r["dataset"] in ("random", "sharegpt", "sharegpt-concurrency-4")
        assert (r["dataset"] == "random") == bool(r["isl"]) == bool(r["osl"])
        assert r["modelled"] == "yes" or r["modelled"].startswith("no: ")


def test_numbers_agree_as_printed():
    """Throughputs are the page's (input + output) / duration and output / duration, to its rounding; random rows
    carry num_prompts × isl input tokens (the tokenizer's round trip moves a few) and at most num_prompts × osl
    output tokens."""
    for r in raw_rows():
        n, tin, tout, dur = int(r["num_prompts"]), int(r["input_tokens"]), int(r["output_tokens"]), float(r["duration_s"])
        assert float(r["total_tok_s"]) == pytest.approx((tin + tout) / dur, rel=2e-3), r["row"]
        assert float(r["output_tok_s"]) == pytest.approx(tout / dur, rel=2e-3), r["row"]
        if r["dataset"] == "random":
            assert tin == pytest.approx(n * int(r["isl"]), rel=0.01), r["row"]
            assert tout <= n * int(r["osl"]), r["row"]


def test_loader_reads_every_row():
    raw = raw_rows()
    rows = bench.load()
    assert len(rows) == len(raw)
    assert [r["row"] for r in rows] == list(range(1, len(raw) + 1))
    for r in rows:
        assert r["prompt"] == round(r["input_tokens"] / r["num_prompts"]) and r["output"] >= 1
        assert r["model"] in bench.SPECS


def test_every_modelled_row_is_priced(scored):
    rows = scored
    priced = [r for r in rows if r["err"] is not None]
    assert len(priced) == sum(r["modelled"] == "yes" for r in rows)
    assert {r["framework"] for r in priced} == {"vllm", "sglang", "trtllm"}
    assert {r["gpu"] for r in priced} == {"h100", "h200", "a100"}
    for r in priced:
        assert math.isfinite(r["pred"]) and r["pred"] > 0


def test_vllm_budget_is_the_servers():
    """A row without --max-num-batched-tokens runs vLLM's OpenAI-server default (8192 on an 80 GiB H100), not the
    offline LLM class's 16384; SGLang's and TensorRT-LLM's rows leave the budget to the engine."""
    rows = {r["row"]: r for r in bench.load()}
    vllm_default = next(r for r in rows.values() if r["framework"] == "vllm" and not r["max_num_batched_tokens"]
                        and r["gpu"] == "h100")
    given = next(r for r in rows.values() if r["max_num_batched_tokens"])
    assert bench.server_budget(vllm_default) == 8192
    assert bench.server_budget(given) == int(given["max_num_batched_tokens"])
    assert bench.server_budget(next(r for r in rows.values() if r["framework"] == "sglang")) is None


def test_pairs_match_page_model_and_workload(scored):
    rows = scored
    by_row = {r["row"]: r for r in rows}
    pairs = bench.pairs(rows)
    assert pairs
    for p in pairs:
        r, c = by_row[p["row"]], by_row[p["control"]]
        assert c["framework"] == "trtllm" and r["framework"] != "trtllm"
        for k in ("source_url", "model", "dtype", "tp", "dataset", "isl", "osl"):
            assert r[k] == c[k]
        assert p["published"] == pytest.approx(r["total_tok_s"] / c["total_tok_s"])


def test_accuracy_doc_states_the_current_summary(scored):
    """docs/accuracy.md's summary table of this benchmark is what the benchmark prints now."""
    doc = (ROOT / "docs/accuracy.md").read_text()
    section = doc.split("## vLLM and SGLang serving against published results", 1)[1].split("\n## ", 1)[0]
    assert "python benchmarks/vllm_sglang_published.py" in section
    for label, errs in bench.groups(scored):
        s = bench.errors(errs)
        line = (f"| {label} | {s.n} | {100 * s.median_abs:.1f}% | {100 * s.p90_abs:.1f}% | "
                f"{100 * s.signed_median:+.1f}% |")
        assert line in section, line


def test_accuracy_doc_states_every_priced_row(scored):
    """Each priced row's ironlaw tokens/s and error in docs/accuracy.md's per-row tables are what the benchmark
    prices now (the tables are regenerated, not left behind a refit)."""
    doc = (ROOT / "docs/accuracy.md").read_text()
    section = doc.split("## vLLM and SGLang serving against published results", 1)[1].split("\n## ", 1)[0]
    lines = section.splitlines()
    for r in (r for r in scored if r["pred"] is not None):
        cells = f"| {r['pred']:,.0f} | {100 * r['err']:+.1f}% |"
        assert any(line.startswith(f"| {r['row']} | ") and cells in line for line in lines), (r["row"], cells)


def test_latency_runs_are_priced_at_their_concurrency_apart_from_the_summary(scored):
    """A run at --max-concurrency C (dataset sharegpt-concurrency-C) is priced through ``ironlaw.serve`` at that
    concurrency, without max_throughput: C streams, each running N / C requests back to back; it stays out of the
    summary's groups, and docs/accuracy.md states its error as the benchmark prints it."""
    import ironlaw
    rows = bench.latency_rows()
    assert [r["row"] for r in rows] == [41]
    r = rows[0]
    assert r["concurrency"] == 4 and r["prompt"] == 228 and r["output"] == 213
    est = ironlaw.serve("deepseek-r1", "h200", prompt=228, output=213, concurrency=4, tp=8, dtype="fp8",
                        kv_dtype="bf16", engine="vllm").estimate
    assert r["pred"] == pytest.approx(100 * (228 + 213) / (100 / 4 * est.request_latency_s))
    assert r["itl_s"] == pytest.approx(est.itl_s)
    assert r["err"] == pytest.approx(r["pred"] / r["total_tok_s"] - 1.0)
    assert next(s for s in scored if s["row"] == 41)["err"] is None              # not in the summary's groups
    doc = " ".join((ROOT / "docs/accuracy.md").read_text().split())        # the paragraph's lines joined
    assert f"row 41, {100 * r['err']:+.1f}%" in doc


def test_async_scheduling_rows_parse_and_each_has_its_serial_twin():
    """Rows 85-89: gpt-oss-20b/h100's vLLM runs with --async-scheduling; rows 90-100: the page gpt-oss-20b/a100, its
    vLLM runs serial and async and its SGLang run; appended (the rows before keep their numbers), each async run
    beside the serial run of the same page, model, weights and workload; the header does not list the flag as left
    out."""
    rows = {r["row"]: r for r in bench.load()}
    assert [n for n, r in rows.items() if bench.async_scheduling(r)] == [85, 86, 87, 88, 89, 96, 97, 98, 99, 100]
    twins = {a["row"]: s["row"] for a, s in bench.async_twins(list(rows.values()))}
    assert twins == {85: 46, 86: 48, 87: 49, 88: 50, 89: 51, 96: 90, 97: 92, 98: 93, 99: 94, 100: 95}
    assert rows[85]["source_section"] == "2. Async scheduling in vLLM" and rows[85]["duration_s"] == 21.39
    assert rows[89]["total_tok_s"] == 32611.91 and rows[89]["num_prompts"] == 1000
    assert rows[100]["gpu"] == "a100" and rows[100]["duration_s"] == 5.23 and rows[91]["framework"] == "sglang"
    head = "".join(line for line in open(bench.CSV) if line.startswith("#"))
    assert "--async-scheduling: rows 85-89" in head and "Left out: results with --async-scheduling" not in head


def test_an_async_row_is_priced_with_async_scheduling(monkeypatch):
    """The benchmark prices a row whose command adds --async-scheduling with ``async_scheduling=True``, the others
    without."""
    import ironlaw
    seen = []

    class Est:
        time_s = 1.0
    monkeypatch.setattr(ironlaw, "serve", lambda *a, **kw: seen.append(kw["async_scheduling"]) or Est())
    rows = {r["row"]: r for r in bench.load()}
    bench.predict(rows[85])
    bench.predict(rows[46])
    assert seen == [True, False]
