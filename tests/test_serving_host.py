"""The serving engine's host term (models/serving/step.HostStep): the executor's host work per step and per request,
overlapped with the device's step; carried between host CPUs by their per-core speed figure (hostcpu linear_s);
zero by default, so that every prediction stays as it was until the constants are refitted."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import run_cli
from ironlaw.core.errors import IronlawError
from ironlaw.machine import hardware
from ironlaw.machine.hostcpu import check
from ironlaw.models.serving import throughput as st
from ironlaw.models.serving.step import FIT_HOST_LINEAR_S, bottleneck, charged_s, launches

GOOD = {"cpu": "x", "op_s": "7 us", "module_s": 0, "sync_s": "1 us", "source": "measured: x"}
SLOW = replace(st.FITTED, host_sequence_s=1e-4)          # 100 us per request on the fit host: binds at 128/128


def _qwen(on: str, constants=st.FITTED):
    return st.max_throughput("qwen3-30b-a3b", on, 128, 128, dtype="fp4", kv_dtype="fp8", kv_fraction=0.95,
                             constants=constants)


def test_linear_s_is_optional_checked_and_named_in_the_error():
    assert check(GOOD, "t").linear_s is None
    assert check({**GOOD, "linear_s": "13.48 us"}, "t").linear_s == pytest.approx(13.48e-6)
    for bad, msg in (({**GOOD, "linear_s": "0 us"}, "t.linear_s: a host call takes some time"),
                     ({**GOOD, "linear_s": "2 s"}, "outside 0 to 10 ms"), ({**GOOD, "linear_s": "5 GB"}, "t.linear_s"),
                     ({**GOOD, "speed": 1}, "unknown field 'speed'; fields: .*linear_s")):
        with pytest.raises(IronlawError, match=msg):
            check(bad, "t")


def test_catalog_speed_figures_and_their_sources():
    host = {n: hardware.get(n).extra["host"] for n in ("h100", "h200", "b200", "gb200", "gb300", "b300")}
    assert host["h100"].linear_s == pytest.approx(FIT_HOST_LINEAR_S)          # the fit's host is DGX H100's
    assert host["h200"].linear_s == pytest.approx(13.48e-6)
    assert host["gb200"].linear_s == host["gb300"].linear_s == pytest.approx(37.08e-6)   # Grace, TE #2053
    assert host["b200"].linear_s == pytest.approx(13.48e-6 * 3.8 / 4.0, rel=1e-3)        # 8570 by max boost
    assert host["b300"].linear_s is None                                      # not stated: says so, see below
    for n in ("h100", "b200", "gb200"):
        assert "#2053" in host[n].source and "linear_s" in host[n].source
    assert "4.0 GHz" in host["b200"].source
    assert hardware.get("gb200").to_dict()["host"]["linear_s"] == pytest.approx(37.08e-6)


def test_default_constants_leave_the_step_as_it_was():
    """The executor's terms are zero in FITTED: a step is the law's time or the launch floor, plus step_s."""
    est = st.max_throughput("llama3-8b", "h100", 128, 128, dtype="fp8")
    c = est.constants
    assert c.host_step_s == 0.0 and c.host_sequence_s == 0.0 and c.host_prompt_s == 0.0
    for n, e in est.steps:
        h = e.graph.meta["host"]
        assert h.python_s == 0.0
        assert h.launch_s == pytest.approx(launches(e.graph) * c.launch_s if e.graph.meta["eager"] else 0.0)
        assert charged_s(e, c) == max(float(e.time_s), h.launch_s) + c.step_s
    assert est.steady["host_bound_share"] == 0.0


def test_a_host_slower_than_the_device_sets_the_step():
    """Under the overlap scheduler the step lasts the longer of device and host: a host cost above the device's
    step sets the time, one below it changes nothing."""
    quiet = replace(st.FITTED, launch_s=0.0)                  # no eager step's launches outlast its device time
    base, slow = _qwen("b200", quiet), _qwen("b200", SLOW)
    hidden = _qwen("b200", replace(quiet, host_sequence_s=1e-9))
    assert hidden.time_s == pytest.approx(base.time_s, rel=1e-12)
    assert slow.steady["host_bound_share"] == 1.0
    for n, e in slow.steps:
        h = e.graph.meta["host"]
        assert h.time_s > float(e.time_s)
        assert charged_s(e, SLOW) == pytest.approx(h.time_s + SLOW.step_s)
        assert h.python_s == pytest.approx(h.speed * 1e-4 * h.sequences)
    assert slow.output_tokens_per_s < 0.8 * base.output_tokens_per_s
    assert slow.to_dict()["step_bottleneck"]["resource"] == "host"
    assert "host work per step" in slow.to_dict()["step_bottleneck"]["why"]
    assert "Xeon Platinum 8570" in bottleneck(slow.steps[0][1])["why"]


def test_grace_pays_its_speed_ratio_the_x86_host_does_not():
    """The same Blackwell GPU behind a Grace host (GB200) and an x86 one (DGX B200): with the same host constants
    the per-request work costs each host its linear_s; the ratio is TE #2053's 37.08 / 12.81."""
    b, g = _qwen("b200", SLOW), _qwen("gb200", SLOW)
    hb, hg = b.steps[0][1].graph.meta["host"], g.steps[0][1].graph.meta["host"]
    assert hb.stated and hg.stated and "Grace" in hg.cpu
    assert hg.speed / hb.speed == pytest.approx(37.08 / (13.48 * 3.8 / 4.0), rel=1e-3)
    assert hg.python_s / hg.sequences == pytest.approx(hb.python_s / hb.sequences * hg.speed / hb.speed)
    assert g.output_tokens_per_s < 0.5 * b.output_tokens_per_s


def test_a_cost_per_prompt_lands_on_the_steps_that_admit_prompts_at_the_hosts_speed():
    """``host_prompt_s``: each prompt a step admits costs the host that many seconds (on the fit host; Grace pays its
    linear_s ratio); a decode-only step (a CUDA graph, no prompt) pays none of it."""
    per = replace(st.FITTED, host_prompt_s=1e-3)
    for on in ("b200", "gb200"):
        est = st.max_throughput("qwen3-30b-a3b", on, 128, 2048, dtype="fp4", kv_dtype="fp8", constants=per)
        kinds = {e.graph.meta["eager"] for _, e in est.steps}
        assert kinds == {True, False}                      # both step kinds priced
        for n, e in est.steps:
            h = e.graph.meta["host"]
            assert h.prompts == (0.0 if not e.graph.meta["eager"] else pytest.approx(h.sequences - e.graph.meta[
                "decode_sequences"]))
            assert h.python_s == pytest.approx(h.speed * 1e-3 * h.prompts)
            assert (h.prompts > 0) == e.graph.meta["eager"]


def test_a_host_without_a_speed_figure_carries_the_fit_hosts_and_says_so():
    e = st.max_throughput("llama3-8b", "b300", 128, 128, dtype="fp8", constants=SLOW).steps[0][1]
    h = e.graph.meta["host"]
    assert not h.stated and h.speed == 1.0
    assert "no linear_s stated" in h.why(float(e.time_s))


def test_the_benchmark_fast_path_prices_the_host_term_as_the_model_does():
    """benchmarks/trtllm_h100.py fits the host terms on its per-op arrays: they must time a cell as the model."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    import trtllm_h100 as h100
    cell = {"model": "llama3.1-8b", "spec": "llama3-8b", "tp": 1, "isl": 128, "osl": 128, "published": 1.0}
    terms = h100.CellTerms(h100.predict(cell), cell)
    for a, b, p in ((0.0, 0.0, 0.0), (5e-3, 0.0, 0.0), (2e-3, 40e-6, 0.0), (0.0, 0.0, 3e-3)):
        c = replace(st.FITTED, host_step_s=a, host_sequence_s=b, host_prompt_s=p)
        assert terms.time(vars(c)) == pytest.approx(h100.predict(cell, constants=c).time_s, rel=1e-9)


def test_serve_text_and_json_show_the_host(tmp_path):
    r = run_cli("serve", "llama3-8b", "--on", "gb200", "--prompt", "128", "--output", "128", "--concurrency", "64")
    assert r.rc == 0, r.err
    assert "decode step, host:" in r.out and "Grace" in r.out and "overlap scheduler" in r.out
    r = run_cli("serve", "llama3-8b", "--on", "gb200", "--prompt", "128", "--output", "128", "--concurrency", "64",
                "--format", "json")
    import json
    d = json.loads(r.out)["decode_host"]
    assert d["speed"] == pytest.approx(37.08 / 13.48, rel=1e-3) and d["sequences"] == 64 and d["speed_stated"]
    r = run_cli("serve", "llama3-8b", "--on", "gb200", "--dtype", "fp8", "--prompt", "128", "--output", "128",
                "--max-throughput")
    assert "host per step" in r.out and "2.75× the fit host's time" in r.out


def test_a_host_bound_online_step_names_the_host_and_matches_the_schema():
    pytest.importorskip("jsonschema")
    from ironlaw.core import schemas
    from ironlaw.models.serving import online
    est = online.estimate("llama3-8b", "gb200", 128, 128, 256, constants=SLOW)
    d = est.to_dict()
    assert d["decode_bottleneck"]["resource"] == "host" and "Grace" in d["decode_bottleneck"]["why"]
    assert d["decode_host"]["host_s"] == pytest.approx(256 * 1e-4 * 37.08 / 13.48, rel=1e-3)
    assert d["decode_step_s"] == pytest.approx(d["decode_host"]["host_s"] + SLOW.step_s)
    schemas.validate(d)


def test_online_serve_states_the_host_term_of_both_steps():
    """The online decode step replays one CUDA graph (no launches); the prefill step is eager, its launches the
    host term that max-throughput's prompt-carrying steps price too: both are stated, and the host binds there."""
    import json
    r = run_cli("serve", "llama3-8b", "--on", "h100", "--format", "json")
    d = json.loads(r.out)
    dec, pre = d["decode_host"], d["prefill_host"]
    assert not dec["eager"] and dec["launch_s"] == 0.0 and pre["eager"] and pre["launch_s"] > 0.0
    assert pre["host_s"] == pytest.approx(pre["launch_s"] + pre["executor_s"])
    assert pre["host_s"] > pre["device_s"] and d["prefill_bottleneck"]["resource"] == "host"
    assert d["prefill_s"] == pytest.approx(pre["host_s"] + d["step_model"]["engine"]["constants"]["step_s"])
    out = run_cli("serve", "llama3-8b", "--on", "h100").out.replace("\n", " ")
    assert "launches 0 s (one replayed CUDA graph)" in out and "prefill step, host:" in out
    assert "(eager, as a step with prompt tokens runs: " in out and "prefill" in out and ": host-bound" in out


def test_serial_host_work_adds_to_the_device_step_launches_still_overlap():
    """Serial (vLLM V1 without async scheduling): the executor's work adds to the device's step, the launches of an
    eager step still run beside it; overlapped: the longer of the device and all the host's work."""
    from ironlaw.models.serving.step import HostStep
    step = HostStep("cpu", 1e-3, 2e-3, 8.0, 1.0, True)
    assert step.step_s(5e-3) == pytest.approx(5e-3)                     # overlapped: hidden under 5 ms
    assert replace(step, serial=True).step_s(5e-3) == pytest.approx(7e-3)
    assert replace(step, serial=True).step_s(0.5e-3) == pytest.approx(3e-3)   # launches outlast the device
    quiet = replace(st.FITTED, launch_s=0.0, host_sequence_s=1e-6)       # 1 us a request: hidden when overlapped
    over, serial = _qwen("b200", quiet), _qwen("b200", replace(quiet, host_serial=True))
    for (_, a), (_, b) in zip(over.steps, serial.steps):
        h = b.graph.meta["host"]
        assert h.serial and not a.graph.meta["host"].serial
        assert charged_s(b, serial.constants) == pytest.approx(float(b.time_s) + h.python_s + quiet.step_s)
    assert serial.output_tokens_per_s < over.output_tokens_per_s
    assert "serial executor: its work between device steps" in serial.steps[0][1].graph.meta["host"].why(1.0)


def test_vllm_runs_its_host_work_serially_sglang_and_pipelined_vllm_overlap_it():
    """The frameworks' own host ordering at the versions the scored rows ran, each named with its source."""
    from ironlaw.models.serving import frameworks as fw
    from ironlaw.models.serving.engine import FITTED
    got = {(e, pp): fw.select(e, "h100", pp=pp) for e, pp in (("vllm", 1), ("vllm", 2), ("sglang", 1))}
    assert fw.constants(got["vllm", 1], FITTED).host_serial
    assert not fw.constants(got["vllm", 2], FITTED).host_serial
    assert not fw.constants(got["sglang", 1], FITTED).host_serial and not FITTED.host_serial
    line = got["vllm", 1].lines(offline=False)
    assert any(x.startswith("host: serial with the device") and "async_scheduling default False" in x for x in line)
    assert any(x.startswith("host: overlapped") and "disable_overlap_schedule" in x
               for x in got["sglang", 1].lines(offline=True))
    assert got["vllm", 1].to_dict(offline=True)["scheduler"]["host_overlap"] is False


def test_the_host_what_if_sets_only_the_serial_engines_host_work(monkeypatch):
    """benchmarks/vllm_host_whatif.py: the serial engine (vLLM) gets the host time asked for, the overlapped ones
    (SGLang) keep the carried 0; a bad argument is one line and exit 2."""
    root = Path(__file__).resolve().parents[1]
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    import vllm_host_whatif as whatif
    from ironlaw.models.serving import frameworks as fw
    from ironlaw.models.serving.engine import FITTED
    patched = whatif.serial_host(4e-3)
    vllm, sglang = fw.select("vllm", "h100"), fw.select("sglang", "h100")
    assert patched(vllm, FITTED).host_step_s == 4e-3 and patched(vllm, FITTED).host_serial
    assert patched(sglang, FITTED).host_step_s == 0.0 and fw.constants(vllm, FITTED).host_step_s == 0.0
    assert whatif.main(["x"]) == 2 and whatif.main(["0.004", "no_such.py"]) == 2
