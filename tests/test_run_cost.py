"""Cost and energy in every mode, and the whole training run: the price flag is honoured on a parallel training
step, max-throughput serving prints its energy and cost, ``--train-tokens`` prices a run with its interruptions
(Llama 3's failure rate, Daly's checkpoint interval), and every new flag's bad input is one line and exit 2."""
from __future__ import annotations

import math

import pytest

from conftest import run_cli
from ironlaw.core.errors import IronlawError
from ironlaw.core.schemas import validate
from ironlaw.models import interruptions

TRAIN = ("analyze", "llama3-8b", "--phase", "train", "--on", "h100", "--gpus", "8", "--tp", "2", "--global-batch", "64")
MAX_TP = ("serve", "llama3.1-8b", "--on", "h100", "--dtype", "fp8", "--prompt", "2048", "--output", "2048",
          "--max-throughput")


def test_the_llama3_failure_rate_gives_back_its_419_interruptions():
    """The default rate is Meta's: 54 days on 16,384 H100s meet 419 unexpected interruptions, one every ~3.1 h."""
    it = interruptions.of_run(54 * 86400.0, 16384)
    assert it.expected == pytest.approx(419)
    assert it.job_mtbf_s / 3600 == pytest.approx(3.09, abs=0.01)
    assert "arXiv:2407.21783" in it.mtbf_source and it.goodput == 1.0 and it.wall_s == it.work_s


def test_dalys_interval_minimises_the_expected_wall_time_and_young_is_its_first_term():
    work, m = 30 * 86400.0, 3 * 3600.0
    for delta in (10.0, 60.0, 600.0):
        tau = interruptions.daly_interval_s(delta, m)
        best = min(interruptions.daly_wall_s(work, t, delta, delta, m) for t in
                   (tau * f for f in (0.5, 0.7, 0.8, 0.9, 0.95, 1.05, 1.1, 1.25, 1.5, 2.0)))
        assert interruptions.daly_wall_s(work, tau, delta, delta, m) <= best * (1 + 1e-4)
    assert interruptions.daly_interval_s(1.0, m) == pytest.approx(math.sqrt(2 * 1.0 * m), rel=0.01)
    assert interruptions.daly_interval_s(3 * m, m) == m            # a checkpoint longer than 2M: τ = M


def test_the_wall_time_is_work_checkpoints_restarts_and_redone_work():
    it = interruptions.of_run(10 * 86400.0, 16384, checkpoint_s=60.0)
    assert it.work_s + it.checkpointing_s + it.restarting_s + it.redone_s == pytest.approx(it.wall_s)
    assert it.goodput == pytest.approx(it.work_s / it.wall_s) and 0.85 < it.goodput < 0.95   # Llama 3: "> 90%"
    assert it.restart_s == 60.0 and it.expected == pytest.approx(it.wall_s / it.job_mtbf_s)
    free = interruptions.of_run(10 * 86400.0, 16384, checkpoint_s=0.0)           # free checkpoints, instant restarts
    assert free.wall_s == pytest.approx(free.work_s) and free.redone_s == pytest.approx(0.0)
    slower = interruptions.of_run(10 * 86400.0, 16384, mtbf_gpu_hours=5000.0, checkpoint_s=60.0)
    assert slower.goodput < it.goodput
    with pytest.raises(IronlawError, match="--restart-s needs --checkpoint-s"):
        interruptions.of_run(1.0, 8, restart_s=5.0)


def test_a_parallel_training_step_honours_the_price_and_prints_its_energy():
    r = run_cli(*TRAIN, "--price-per-gpu-hour", "2.5", "--format", "json")
    assert r.rc == 0, r.err
    d = r.json()
    e = d["energy"]
    validate(d)
    tokens = d["flops"]["tokens_per_step"]
    assert e["usd_per_gpu_hour"] == 2.5 and e["price_source"] == "given: --price-per-gpu-hour"
    assert e["usd_per_million_tokens"] == pytest.approx(8 * 2.5 * d["step_s"] / 3600 / tokens * 1e6)
    assert e["devices"] == 8 and e["idle_w"] < e["power_w_per_device"] <= e["tdp_w"]
    assert e["joules"] == pytest.approx(8 * e["power_w_per_device"] * d["step_s"])
    text = run_cli(*TRAIN, "--price-per-gpu-hour", "2.5")
    assert text.rc == 0 and "energy per step" in text.out and "per million tokens" in text.out
    assert run_cli(*TRAIN, "--format", "json").json()["energy"]["usd_per_gpu_hour"] == 4.916     # sourced default


def test_max_throughput_serving_carries_its_energy_and_cost():
    r = run_cli(*MAX_TP, "--price-per-gpu-hour", "2", "--format", "json")
    assert r.rc == 0, r.err
    d = r.json()
    validate(d)
    e = d["energy"]
    tokens = d["requests"] * d["output_tokens"]
    assert e["usd_per_million_output_tokens"] == pytest.approx(2 * d["time_s"] / 3600 / tokens * 1e6)
    assert e["joules_per_output_token"] == pytest.approx(e["mean_power_w_per_device"] * d["time_s"] / tokens)
    assert e["idle_w"] < e["mean_power_w_per_device"] <= e["tdp_w"]
    text = run_cli(*MAX_TP, "--price-per-gpu-hour", "2")
    assert "energy per output token" in text.out and "$" in text.out and "g CO2" in text.out


def test_the_whole_training_run_from_train_tokens():
    r = run_cli(*TRAIN, "--train-tokens", "15T", "--checkpoint-s", "60", "--price-per-gpu-hour", "2.5",
                "--format", "json")
    assert r.rc == 0, r.err
    d = r.json()
    validate(d)
    run, e = d["run"], d["energy"]
    assert run["tokens"] == 15e12 and run["steps"] == math.ceil(15e12 / d["flops"]["tokens_per_step"])
    it = run["interruptions"]
    assert it["work_s"] == pytest.approx(run["steps"] * d["step_s"])
    assert run["wall_s"] == pytest.approx(it["wall_s"]) and run["wall_s"] > it["work_s"]
    assert run["gpu_hours"] == pytest.approx(8 * run["wall_s"] / 3600) and run["usd"] == pytest.approx(2.5 * run["gpu_hours"])
    busy, idle = it["work_s"] + it["redone_s"], it["checkpointing_s"] + it["restarting_s"]
    assert run["energy_j"] == pytest.approx(8 * (e["power_w_per_device"] * busy + e["idle_w"] * idle))
    assert run["energy_mwh"] == pytest.approx(run["energy_j"] / 3.6e9)
    assert run["tco2"] == pytest.approx(run["energy_mwh"] * 1e3 * 481 / 1e6)
    assert it["expected"] == pytest.approx(run["wall_s"] * 8 / (interruptions.LLAMA3_MTBF_GPU_HOURS * 3600))
    assert 0 < it["goodput"] < 1 and it["interval_s"] > 0
    text = run_cli(*TRAIN, "--train-tokens", "15T", "--checkpoint-s", "60").out
    for word in ("training run: 15T tokens", "GPU-hours", "MWh", "t CO2", "interruptions", "goodput"):
        assert word in text
    one = run_cli("analyze", "llama3-8b", "--phase", "train", "--on", "b200", "--seq", "2048", "--train-tokens", "1B",
                  "--format", "json").json()                # one device: the estimate carries the run too
    validate(one)
    assert one["run"]["steps"] == math.ceil(1e9 / 2048) and one["run"]["gpus"] == 1


def test_search_ranks_layouts_with_their_energy_and_run():
    r = run_cli("search", "llama3-8b", "--on", "h100", "--gpus", "16", "--global-batch", "64", "--seq", "4096",
                "--top", "2", "--train-tokens", "1T", "--mtbf-gpu-hours", "1000", "--format", "json")
    assert r.rc == 0, r.err
    d = r.json()
    validate(d)
    for e in d["top"]:
        assert e["energy"]["joules_per_token"] > 0 and e["run"]["tokens"] == 1e12
        assert e["run"]["interruptions"]["mtbf_gpu_hours"] == 1000
    s = run_cli("search", "llama3-8b", "--phase", "serve", "--on", "h100", "--gpus", "2", "--slo", "itl=50ms",
                "--price-per-gpu-hour", "2", "--format", "json").json()
    validate(s)
    assert all(e["energy"]["usd_per_gpu_hour"] == 2 for e in s["top"])
    text = run_cli("search", "llama3-8b", "--on", "h100", "--gpus", "16", "--global-batch", "64", "--top", "1",
                   "--train-tokens", "1T").out
    assert "#1 energy:" in text and "#1 training run: 1T tokens" in text


@pytest.mark.parametrize("args, words", [
    (("--train-tokens", "15X"), "cannot read '15X'"),
    (("--train-tokens", "0"), "must be positive, got '0'"),
    (("--train-tokens", "15T", "--mtbf-gpu-hours", "0"), "--mtbf-gpu-hours must be a positive number"),
    (("--train-tokens", "15T", "--checkpoint-s", "-5"), "--checkpoint-s must be a non-negative number"),
    (("--train-tokens", "15T", "--restart-s", "5"), "--restart-s needs --checkpoint-s"),
    (("--checkpoint-s", "60",), "add --train-tokens"),
    (("--price-per-gpu-hour", "-1",), "--price-per-gpu-hour must be a non-negative"),
])
def test_bad_run_flags_are_one_line_and_exit_2(args, words):
    r = run_cli(*TRAIN, *args)
    assert r.rc == 2 and words in r.err and len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err


def test_train_tokens_need_the_training_phase():
    r = run_cli("analyze", "llama3-8b", "--phase", "decode", "--on", "h100", "--train-tokens", "1T")
    assert r.rc == 2 and "--train-tokens prices a training run: add --phase train (got --phase decode)" in r.err
    r = run_cli("search", "llama3-8b", "--phase", "serve", "--on", "h100", "--gpus", "2", "--train-tokens", "1T")
    assert r.rc == 2 and "add --phase train" in r.err
