"""`ironlaw search MODEL --phase serve`: mixture-of-experts layouts (TP × EP × attention DP × PP), expert
parallelism within latency targets, and one ranking across devices by tokens/s per GPU or USD per million
output tokens, with the devices that cannot serve skipped and their reasons."""
from __future__ import annotations

import pytest

from conftest import run_cli

import ironlaw
from ironlaw.law import power
from ironlaw.models.search import serve
from ironlaw.models.serving import throughput as st

MOE = "qwen3-30b-a3b"            # 128 experts, 4 key/value heads: TP 8 holds one on each of two ranks


def search_json(*args: str) -> dict:
    r = run_cli("search", *args, "--phase", "serve", "--format", "json")
    assert r.rc == 0, r.err
    return r.json()


def test_attention_dp_with_ep_goes_past_the_key_value_heads():
    """Past 4 key/value heads: TP 8 holding each KV head on two ranks, or attention DP 8 with EP 8 running each
    rank's attention whole."""
    d = search_json(MOE, "--on", "h100", "--gpus", "8", "--top", "40")
    wide = [e for e in d["top"] if e["tp"] == 8 and e["attention_dp"]]
    assert wide and all(e["ep"] == 8 and e["dp"] == 8 for e in wide)
    assert any(e["tp"] == 8 and e["dp"] == 1 for e in d["top"] if not e["attention_dp"])
    assert all(e["tp"] in (1, 2, 4, 8) for e in d["top"] if not e["attention_dp"])
    e = wide[0]
    est = st.max_throughput(MOE, "h100", 1024, 256, tp=8, pp=e["pp"], ep=8, attention_dp=True, dtype=e["dtype"])
    assert e["tokens_per_s_per_gpu"] == pytest.approx(est.output_tokens_per_s / (8 * e["pp"]), rel=1e-12)


def test_a_fixed_ep_searches_attention_dp_over_that_group():
    d = search_json(MOE, "--on", "h100", "--gpus", "8", "--ep", "4")
    assert d["top"] and all(e["ep"] == 4 and e["tp"] == 4 and e["attention_dp"] for e in d["top"])


@pytest.mark.parametrize("args,msg", [
    (["--ep", "3"], "--ep 3: the serving search runs expert parallelism with attention data parallelism"),
    (["--ep", "4", "--tp", "2"], "--ep 4: the serving search runs expert parallelism"),
    (["--tp", "3", "--ep", "1"], "--tp 3: serving needs a divisor of the"),
])
def test_cli_bad_moe_layout(args, msg):
    r = run_cli("search", MOE, "--phase", "serve", "--on", "h100", "--gpus", "8", *args)
    assert r.rc == 2 and msg in r.err and len(r.err.strip().splitlines()) == 1, r.err


def test_expert_parallelism_within_latency_targets():
    """--slo on a MoE model: EP layouts are searched (today only TP was), each row meets the targets, and its
    TTFT and ITL are those of the max-throughput engine's steady state at its batch."""
    d = search_json(MOE, "--on", "h100", "--gpus", "8", "--slo", "ttft=1s,itl=20ms", "--top", "8")
    assert d["scenario"] == "latency targets" and d["slo"] == {"ttft_s": 1.0, "itl_s": 0.02}
    assert all(e["ttft_s"] <= 1.0 and e["itl_s"] <= 0.02 for e in d["top"])
    ep = [e for e in d["top"] if e["ep"] > 1]
    assert ep and all(e["attention_dp"] and e["latency_from"] == "max-throughput steady state" for e in ep)
    tps = [e["tokens_per_s_per_gpu"] for e in d["top"]]
    assert tps == sorted(tps, reverse=True)


def test_steady_state_latencies_follow_the_engine():
    """The step times serve_latency reads back are the ones the engine charged: weighted by the steady state's
    shares they give its mean step; ITL is that mean (times pp), TTFT a mixed step and the step in flight."""
    from ironlaw.models.search.serve_latency import latencies, step_times
    for kw in (dict(tp=4, ep=4, attention_dp=True), dict(tp=2, pp=2), dict(tp=4, ep=4, attention_dp=True,
                                                                            max_batch=8)):
        est = st.max_throughput(MOE, "h100", 1024, 256, dtype="fp8", **kw)
        s = est.steady
        times = step_times(est)
        mixed = times[0][0]
        decode = times[1][0] if s["mixed_step_share"] < 1.0 else 0.0
        assert times[0][1] and s["step_s"] == pytest.approx(s["mixed_step_share"] * mixed
                                                            + (1 - s["mixed_step_share"]) * decode, rel=1e-9)
        ttft, itl = latencies(est)
        pp = kw.get("pp", 1)
        assert itl == pytest.approx(pp * s["step_s"]) and ttft == pytest.approx(pp * (mixed + s["step_s"]))


def test_across_devices_one_ranking_skipping_a_dtype_a_device_lacks():
    d = search_json("llama3-8b", "--on", "h100,b200", "--gpus", "2", "--dtype", "fp4", "--slo", "ttft=1s,itl=20ms")
    assert d["devices"] == ["h100", "b200"] and d["hardware"] == "h100,b200"
    assert d["skipped"] == [{"hardware": "h100", "reason": d["skipped"][0]["reason"]}]
    assert "no fp4" in d["skipped"][0]["reason"]
    assert {e["hardware"] for e in d["top"]} == {"b200"}
    assert all(e["ttft_s"] <= 1.0 and e["itl_s"] <= 0.02 for e in d["top"])


def test_across_devices_by_cost_with_given_and_default_prices():
    d = search_json("llama3-8b", "--on", "h100,b200", "--gpus", "2", "--rank", "usd-per-million-tokens",
                    "--price", "b200=6.5", "--top", "30")
    assert d["rank_by"] == "usd-per-million-tokens" and d["skipped"] == []
    usd = [e["usd_per_million_output_tokens"] for e in d["top"]]
    assert usd == sorted(usd) and {e["hardware"] for e in d["top"]} == {"h100", "b200"}
    for e in d["top"]:
        rate = 6.5 if e["hardware"] == "b200" else power.PRICES_USD_PER_DEVICE_HOUR["h100"][0]
        assert e["usd_per_gpu_hour"] == rate
        assert e["usd_per_million_output_tokens"] == pytest.approx(rate / 3600 / e["tokens_per_s_per_gpu"] * 1e6)
    by_tokens = search_json("llama3-8b", "--on", "h100,b200", "--gpus", "2", "--price", "b200=6.5", "--top", "30")
    tps = [e["tokens_per_s_per_gpu"] for e in by_tokens["top"]]
    assert tps == sorted(tps, reverse=True) and by_tokens["rank_by"] == "tokens-per-gpu"


def test_ranking_by_cost_skips_a_device_without_a_price():
    d = search_json("llama3-8b", "--on", "h100,b200", "--gpus", "1", "--rank", "usd-per-million-tokens")
    assert [k["hardware"] for k in d["skipped"]] == ["b200"] and "--price b200=USD" in d["skipped"][0]["reason"]
    assert {e["hardware"] for e in d["top"]} == {"h100"}


def test_cli_text_across_devices_names_each_row_and_what_was_skipped():
    r = run_cli("search", "llama3-8b", "--phase", "serve", "--on", "h100,b200", "--gpus", "1", "--rank",
                "usd-per-million-tokens", env={"COLUMNS": "80"})
    assert r.rc == 0, r.err
    assert "$/Mtok" in r.out and "GPU" in r.out and "skipped b200: " in r.out
    assert max(len(line) for line in r.out.splitlines()) <= 80


@pytest.mark.parametrize("on,slo", [("xeon-8480", None), ("tpu-v5e", None), ("apple-m2", None),
                                    ("tpu-v5e", "ttft=10s,itl=1s")])
def test_off_a_gpu_the_engine_search_is_refused_in_one_line(on, slo):
    """The max-throughput engine is a GPU's, as `serve --max-throughput` refuses it off a GPU; a dense model
    with --slo is searched on the device's own steps instead."""
    spec = MOE if slo else "llama3-8b"
    r = run_cli("search", spec, "--phase", "serve", "--on", on, "--gpus", "1", *(["--slo", slo] if slo else []))
    assert r.rc == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert "modelled on GPUs" in r.err and f"{on} is kind " in r.err


def test_across_devices_one_off_a_gpu_is_skipped_with_its_reason():
    d = search_json("llama3-8b", "--on", "h100,xeon-8480,tpu-v5e", "--gpus", "1")
    assert [k["hardware"] for k in d["skipped"]] == ["xeon-8480", "tpu-v5e"]
    assert all("offline max-throughput run, modelled on GPUs" in k["reason"] for k in d["skipped"])
    assert {e["hardware"] for e in d["top"]} == {"h100"}
    assert d["dtype"] == "/".join(dict.fromkeys(e["dtype"] for e in d["top"])) and "fp8" in d["dtype"]


def test_a_dense_model_within_targets_is_searched_on_a_cpu_s_own_steps():
    d = search_json("llama3-8b", "--on", "xeon-8480", "--gpus", "1", "--slo", "ttft=10s,itl=1s")
    assert d["top"] and all(e["latency_from"] == "serving.estimate" for e in d["top"])


def test_library_takes_the_same_keywords():
    res = ironlaw.search("llama3-8b", phase="serve", on=["h100", "b200"], gpus=1, rank="usd-per-million-tokens",
                         prices={"b200": 6.0, "h100": 2.0})
    assert {e["hardware"] for e in res.top} <= {"h100", "b200"} and res.setup["skipped"] == []
    assert all(e["price_source"] == "given: --price" for e in res.top)


@pytest.mark.parametrize("args,msg", [
    (["--rank", "cheapest"], "unknown --rank key 'cheapest'"),
    (["--price", "h100"], "--price expects DEVICE=USD pairs"),
    (["--price", "h100=cheap"], "--price h100=cheap: the price must be a number of USD per GPU-hour"),
    (["--price", "h100=-1"], "--price h100=-1: the price must be a non-negative number"),
    (["--price", "h100=2,h100=3"], "--price gives h100 twice"),
    (["--price", "a100=2"], "--price names a100, not searched (--on h100,b200)"),
    (["--on", "h100,,b200"], "empty hardware name"),
    (["--on", "h100,h100"], "names h100 twice"),
    (["--dtype", "mxfp4", "--on", "h100,h200"], "no device can serve llama3-8b: h100: "),
    (["--price-per-gpu-hour", "3"], "--price-per-gpu-hour prices one device; with --on h100,b200 give each its own"),
    (["--on", "h100", "--price-per-gpu-hour", "3", "--price", "h100=2"], "--price-per-gpu-hour and --price both"),
])
def test_cli_bad_serving_search_input(args, msg):
    on = [] if "--on" in args else ["--on", "h100,b200"]
    r = run_cli("search", "llama3-8b", "--phase", "serve", "--gpus", "1", *on, *args)
    assert r.rc == 2 and msg in r.err and len(r.err.strip().splitlines()) == 1, r.err


def test_one_price_per_gpu_hour_prices_one_device_only():
    with pytest.raises(ironlaw.IronlawError, match="--price-per-gpu-hour prices one device"):
        serve.search("llama3-8b", "h100,b200", 1, 1024, 256, price_per_gpu_hour=3.0)
    res = serve.search("llama3-8b", "h100", 1, 1024, 256, price_per_gpu_hour=3.0, rank="usd-per-million-tokens")
    assert res.top[0]["usd_per_gpu_hour"] == 3.0 and res.top[0]["price_source"] == "given: --price-per-gpu-hour"


@pytest.mark.parametrize("flag", [["--rank", "usd-per-million-tokens"], ["--price", "h100=2"]])
def test_cli_serving_flags_on_a_training_search(flag):
    r = run_cli("search", "llama3-8b", "--on", "h100", "--gpus", "8", *flag)
    assert r.rc == 2 and "belongs to the serving search (--phase serve)" in r.err, r.err


def test_each_row_s_energy_is_priced_as_its_device():
    """Across devices each reported layout's energy comes from its own device's prediction and price: its USD per
    million output tokens is the row's."""
    d = search_json(MOE, "--on", "h100,b200", "--gpus", "4", "--slo", "ttft=1s,itl=20ms", "--price", "b200=6",
                    "--top", "20")           # with each GPU's kernel-fitted terms the first H100 row ranks 12th
    assert {e["hardware"] for e in d["top"]} == {"h100", "b200"}
    for e in d["top"]:
        assert e["energy"]["usd_per_gpu_hour"] == e["usd_per_gpu_hour"]
        assert e["energy"]["usd_per_million_output_tokens"] == pytest.approx(e["usd_per_million_output_tokens"],
                                                                             rel=1e-6)
