"""vLLM's per-request prefill cap (its long_prefill_token_threshold) as a scheduler property: off by vLLM's default,
a library keyword of ``ironlaw.serve`` where a run sets it (the MLPerf L40S submission's 256), refused on engines
without it; SGLang's scheduler has no per-request cap."""
from __future__ import annotations

import pytest

from ironlaw import api
from ironlaw.core.errors import IronlawError
from ironlaw.machine import hardware
from ironlaw.models.serving import frameworks, throughput

SPEC = "llama3.1-8b"
OFFLINE = dict(prompt=1000, output=100, dtype="fp8", max_throughput=True, engine="vllm", requests=3000)


def test_no_request_is_capped_by_default_and_each_scheduler_names_its_source():
    for offline in (True, False):
        s = frameworks.vllm(hardware.get("h100"), offline)
        assert s.long_prefill_tokens == 0 and "long_prefill_token_threshold default 0" in s.sources["long_prefill_tokens"]
    g = frameworks.sglang(hardware.get("h100"))
    assert g.long_prefill_tokens == 0 and "PrefillAdder" in g.sources["long_prefill_tokens"]
    given = frameworks.vllm(hardware.get("h100"), True).given(long_prefill_tokens=256)
    assert given.long_prefill_tokens == 256 and given.sources["long_prefill_tokens"].startswith("given")
    assert "long_prefill_token_threshold 256 (given)" in given.line()
    assert "long_prefill_token_threshold" not in frameworks.vllm(hardware.get("h100"), True).line()


def test_a_capped_prompt_takes_a_step_per_cap_however_much_budget_is_left():
    assert throughput.context_steps(871, 128, 512, 16384) == 1
    assert throughput.context_steps(871, 128, 512, 16384, cap=256) == 4           # ⌈871 / 256⌉
    assert throughput.context_steps(871, 128, 512, 16384, cap=1024) == 1          # a cap above the prompt: none
    assert throughput.context_steps(871, 128, 512, 1024, cap=512) == 2
    # the one-wave ramp admits whole prompts a step; a cap that splits them leaves it to the steady state
    assert throughput.ramp(871, 128, 16, 16384) is not None
    assert throughput.ramp(871, 128, 16, 16384, cap=256) is None


def test_offline_vllm_prices_the_threshold_given():
    default = api.serve(SPEC, "h100", **OFFLINE)
    capped = api.serve(SPEC, "h100", long_prefill_token_threshold=256, **OFFLINE)
    assert default.steady["context_steps"] == 1 and capped.steady["context_steps"] == 4
    assert capped.constants.prefill_cap_tokens == 256 and default.constants.prefill_cap_tokens == 0
    d = capped.to_dict()["engine"]
    assert d["scheduler"]["long_prefill_tokens"] == 256
    assert any("long_prefill_token_threshold 256 (given)" in line for line in d["summary"])
    # a request spends 3 more steps prefilling: fewer finish per step at the same batch
    assert capped.steady["requests_per_step"] < default.steady["requests_per_step"]


def test_online_vllm_chunks_each_prompt_at_the_threshold():
    default = api.serve(SPEC, "h100", prompt=2048, output=128, concurrency=16, engine="vllm")
    capped = api.serve(SPEC, "h100", prompt=2048, output=128, concurrency=16, engine="vllm",
                       long_prefill_token_threshold=256)
    assert default.estimate.chunk == 8192 - 16 and capped.estimate.chunk == 256
    assert capped.estimate.ttft_s > default.estimate.ttft_s


def test_a_given_chunk_above_the_threshold_is_refused_not_lowered():
    """A --chunk the threshold would cut (vLLM prefills at most the threshold of a request a step) is one line naming
    both values as given; a chunk within it runs as given."""
    with pytest.raises(IronlawError) as e:
        api.serve(SPEC, "h100", prompt=2048, output=128, concurrency=16, engine="vllm", chunk=2048,
                  long_prefill_token_threshold=256)
    assert "--chunk 2048 is more than long_prefill_token_threshold 256" in str(e.value) and "\n" not in str(e.value)
    within = api.serve(SPEC, "h100", prompt=2048, output=128, concurrency=16, engine="vllm", chunk=128,
                       long_prefill_token_threshold=256)
    assert within.estimate.chunk == 128


@pytest.mark.parametrize("kw,says", [
    (dict(engine="trtllm"), "TensorRT-LLM has no such limit"),
    (dict(engine="sglang"), "SGLang has no such limit"),
    (dict(engine="vllm", long=0), "whole number of tokens ≥ 1, got 0"),
    (dict(engine="vllm", long=2.5), "whole number of tokens ≥ 1, got 2.5"),
    (dict(engine="vllm", long=True), "got True"),
])
def test_a_threshold_no_engine_can_run_is_one_line(kw, says):
    long = kw.pop("long", 256)
    with pytest.raises(IronlawError) as e:
        api.serve(SPEC, "h100", prompt=1000, output=100, long_prefill_token_threshold=long, **kw)
    assert says in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(IronlawError):
        api.serve(SPEC, "h100", long_prefill_token_threshold=long, **{**OFFLINE, **kw})
