"""The MLPerf Training extract (tests/data/mlperf_training_v5.0_v5.1_llama31.csv) parses and every row builds a
valid training command; not an accuracy gate (benchmarks/mlperf_training.py scores the rows, docs/accuracy.md)."""
from __future__ import annotations

import json

import pytest

from conftest import run_cli
from mlperf_train_ref import LORA_TABLE, MODELS, TABLE, block_rates, command, dp, predict, samples_per_s, table


def test_the_extract_is_consistent():
    """Each row's layout divides its GPUs and global batch; its throughput is its samples/s at its sequence
    over its GPUs; its precision, GPU and model are ones ironlaw prices; the header names both origins."""
    rows = table()
    assert len(rows) == 52
    head = "".join(l for l in TABLE.open() if l.startswith("#"))
    assert "0fdc28f013256aea84fa36fdaf1e0fa46094b18c" in head and "441d65f4445cd59687466533fd9f55399136e7a4" in head
    for r in rows:
        d = dp(r)
        assert d * r["tp"] * r["pp"] * r["cp"] == r["gpus"], r["system"]
        assert r["global_batch"] % (d * r["micro_batch"]) == 0, r["system"]
        per_gpu = r["samples_per_s"] * r["seq"] / r["gpus"]
        assert r["tokens_per_s_per_gpu"] == pytest.approx(per_gpu, rel=1e-4, abs=1)      # both printed rounded
        assert r["dtype"] in ("fp8", "fp4") and r["benchmark"] in MODELS and r["runs"] >= 3
        assert r["release"] in ("5.0", "5.1") and r["config"].startswith(r["submitter"] + "/benchmarks/")


def test_each_row_builds_a_valid_command():
    """Three rows' commands (an 8B row with CP in one NVL72 domain and its whole step in a CUDA graph, a 405B FP8
    row over NVL72 domains with TP overlap, an 8B row with FP8 attention) run through the CLI (exit 0) and give
    the step the benchmark's builder gives; together they use every option any row's command uses."""
    from ironlaw.machine import hardware
    rows, seen = table(), {}
    for r in rows:
        seen.setdefault((r["benchmark"], r["dtype"], r["cp"] > 1, "--nodes" in command(r)), r)
    fp8_attention = next(r for r in rows if "--fp8-attention" in command(r))
    ran: set = set()
    for r in (seen[("llama3.1-8b", "fp8", True, False)], seen[("llama3.1-405b", "fp8", True, True)], fp8_attention):
        cmd = command(r).split()
        assert cmd[:2] == ["ironlaw", "analyze"]
        res = run_cli(*cmd[1:], "--format", "json")
        assert res.rc == 0, (command(r), res.err)
        st = predict(r, hardware.get(r["gpu"]))
        assert res.json()["time_s"] == pytest.approx(st.time_s, rel=1e-6), command(r)
        ran |= {w for w in cmd if w.startswith("--")}
    used = {w for r in rows for w in command(r).split() if w.startswith("--")}
    assert used <= ran, used - ran


def test_the_lora_extract_is_consistent_and_its_rows_run():
    """The Llama 2 70B LoRA rows: the same checks as the pre-training extract's (FP8 throughout, 8,192 tokens per
    sample); a row's command runs ``--lora-rank 16`` through the CLI (exit 0) to the step its builder gives."""
    from ironlaw.machine import hardware
    rows = table(LORA_TABLE)
    assert len(rows) == 45
    for r in rows:
        assert dp(r) * r["tp"] * r["pp"] * r["cp"] == r["gpus"], r["system"]
        assert r["global_batch"] % (dp(r) * r["micro_batch"]) == 0, r["system"]
        assert r["tokens_per_s_per_gpu"] == pytest.approx(r["samples_per_s"] * r["seq"] / r["gpus"], rel=1e-4, abs=1)
        assert (r["benchmark"], r["dtype"], r["seq"]) == ("llama2-70b-lora", "fp8", 8192) and r["runs"] >= 3
        assert r["config"].startswith(r["submitter"] + "/benchmarks/llama2_70b_lora/")
    r = next(r for r in rows if r["system"] == "nyx_n1_ngc25.04_nemo")
    cmd = command(r).split()
    assert "--lora-rank" in cmd and "--fp8-attention" in cmd
    res = run_cli(*cmd[1:], "--format", "json")
    assert res.rc == 0, res.err
    assert res.json()["time_s"] == pytest.approx(predict(r, hardware.get(r["gpu"])).time_s, rel=1e-6)


def test_the_lora_rows_whose_configs_recompute_21_layers_run_it():
    """The rows whose config sets ACG=full ACM=block ACL=21 (every MI300X row, MangoBoost's two-node MI325X) run
    ``--recompute full --recompute-layers 21``; the rest recompute nothing. One such row's command runs through
    the CLI to its builder's step, slower than the same row without the recomputation."""
    from dataclasses import replace
    from ironlaw.machine import hardware
    from ironlaw.models import parallel
    from ironlaw.models.analysis import training_graph
    from mlperf_train_ref import options
    rows = table(LORA_TABLE)
    again = [r for r in rows if r["recompute_layers"]]
    assert {r["recompute_layers"] for r in again} == {21} and len(again) == 11
    assert {r["system"] for r in again if r["gpu"] != "mi300x"} == {"MI325X-LLMBoost-GPUBoost-2node"}
    assert all(r["recompute_layers"] for r in rows if r["gpu"] == "mi300x")
    r = next(r for r in again if r["system"] == "MI300X_EPYC_9575F_pytorch")
    cmd = command(r).split()
    assert cmd[cmd.index("--recompute-layers") - 2:cmd.index("--recompute-layers") + 2] == [
        "--recompute", "full", "--recompute-layers", "21"]
    res = run_cli(*cmd[1:], "--format", "json")
    assert res.rc == 0, res.err
    hw = hardware.get(r["gpu"])
    st = predict(r, hw)
    assert res.json()["time_s"] == pytest.approx(st.time_s, rel=1e-6)
    g = training_graph(MODELS[r["benchmark"]], hw, r["seq"], r["dtype"], options(r))
    plain = parallel.train_step(g, hw, replace(st.plan, recompute="none", recompute_layers=None))
    assert st.time_s > plain.time_s


def _event(t_ms: int, key: str, samples: int | None = None) -> str:
    meta = {"file": "logging.py", "lineno": 1} | ({"samples_count": samples} if samples is not None else {})
    return ":::MLLOG " + json.dumps({"namespace": "", "time_ms": t_ms, "event_type": "POINT_IN_TIME", "key": key,
                                     "value": None, "metadata": meta})


def test_throughput_counts_training_blocks_only():
    """A block's rate is its samples over block_start → block_stop: the evaluation between blocks, the
    initialization before the first and a block without an evaluation after it do not count, a rank prefix
    before ``:::MLLOG`` does not hide a line; the row's rate
    is the median over files of each file's median block."""
    log = "\n".join([_event(0, "init_start"), _event(50_000, "run_start"),
                     _event(60_000, "block_start", 1200), _event(70_000, "block_stop", 1200),
                     _event(70_000, "eval_start", 1200), _event(90_000, "eval_stop", 1200),      # 20 s of eval
                     "0: " + _event(90_000, "block_start", 1200), _event(102_000, "block_stop", 1200),
                     _event(102_000, "eval_start", 2400), _event(103_000, "block_start", 2400),
                     _event(104_000, "block_stop", 2400), "unrelated line"])
    assert block_rates(log) == pytest.approx([120.0, 100.0])
    other = log.replace('"time_ms": 102000', '"time_ms": 100000')        # its second block takes 10 s
    assert samples_per_s([log, other, other]) == pytest.approx(120.0)


def _benchmark():
    """benchmarks/mlperf_training.py as a module."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    import mlperf_training
    return mlperf_training


def test_the_cp_send_rate_what_if_floors_the_rings_sends():
    """``--steps --cp-send-rate R``: the 512-GPU GB200 8B row (TP 2 · CP 4, one micro-batch) sends K and V of
    2,048 tokens, 2 · 512 · 2,048 · 2 B = 4 MiB, in 3 steps per attention, once forward and twice backward over
    32 layers: at 1 GB/s every send outlasts its attention and the step grows by 3 · 96 · 4 MiB / 1 GB/s less
    3/4 of the attention's time; at the link's rate it does not grow, and between the two it grows as R falls."""
    from ironlaw.machine import hardware
    bench = _benchmark()
    row = next(r for r in table() if r["system"] == "tyche_ngpu512_ngc25.09_nemo" and r["benchmark"] == "llama3.1-8b")
    assert (row["tp"], row["cp"], row["micro_batch"], row["seq"]) == (2, 4, 1, 8192) and bench.capped(row)
    st = predict(row, hardware.get(row["gpu"]))
    assert st.breakdown.microbatches == 1 and st.breakdown.pipeline_bubble_s == 0.0
    attention = sum(x["time_s"] for x in st.per_microbatch.rows() if x["kind"] == "attention")
    assert bench.ring_slower_s(row, st, 1.0) == pytest.approx(3 * 96 * 4 * 2 ** 20 / 1e9 - 0.75 * attention, rel=1e-9)
    assert bench.ring_slower_s(row, st, 1e4) == 0.0
    assert 0.0 < bench.ring_slower_s(row, st, 50.0) < bench.ring_slower_s(row, st, 25.0)
    assert bench.error_at(row, st, 25.0) < st.tokens_per_s_per_gpu / row["tokens_per_s_per_gpu"] - 1


def test_the_cp_send_rate_what_if_is_refused_alone_and_at_a_bad_rate(monkeypatch, capsys):
    """``--cp-send-rate`` is a what-if of ``--steps`` at a rate > 0: one line and exit 2 otherwise."""
    bench = _benchmark()
    for argv, says in ((["--cp-send-rate", "25"], "add --steps"), (["--steps", "--cp-send-rate", "0"], "> 0"),
                       (["--steps", "--cp-send-rate", "nan"], "> 0")):
        monkeypatch.setattr("sys.argv", ["mlperf_training.py", *argv])
        assert bench.main() == 2
        err = capsys.readouterr().err
        assert says in err and err.count("\n") == 1
