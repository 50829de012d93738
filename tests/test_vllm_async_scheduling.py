"""vLLM's async scheduling (``serve --async-scheduling``, the library's ``async_scheduling``): the engine's host work
overlapped with the device's step instead of added to it (``frameworks.VLLM_HOST_ASYNC``); refused in one line on the
engines that overlap by default and under pipeline parallelism, which vLLM refuses."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from conftest import run_cli
from ironlaw import api
from ironlaw.core.errors import IronlawError
from ironlaw.models.serving import frameworks as fw
from ironlaw.models.serving.engine import FITTED

OFFLINE = dict(prompt=128, output=32, requests=64, max_throughput=True, engine="vllm")


def _with_host(monkeypatch, host_s: float) -> None:
    """vLLM's executor work per step at ``host_s`` (in whichever ordering the run has); the carried value is 0."""
    carried = fw.constants
    monkeypatch.setattr(fw, "constants", lambda eng, base: replace(carried(eng, base), host_step_s=host_s)
                        if eng.name == "vllm" else carried(eng, base))


def test_async_scheduling_selects_the_overlapped_ordering_and_names_its_source():
    serial, overlapped = fw.select("vllm", "h100"), fw.select("vllm", "h100", async_scheduling=True)
    assert fw.constants(serial, FITTED).host_serial and not fw.constants(overlapped, FITTED).host_serial
    assert overlapped.scheduler.to_dict()["host_overlap"] is True
    line = next(x for x in overlapped.lines(offline=True) if x.startswith("host: "))
    assert line.startswith("host: overlapped with the device, given (--async-scheduling)")
    for source in ("AsyncScheduler", "step_with_batch_queue", "AsyncGPUModelRunnerOutput", "sampler stay"):
        assert source in line
    assert fw.select("vllm", "h100", async_scheduling=False).scheduler == serial.scheduler


def test_async_scheduling_hides_the_host_work_the_serial_engine_adds(monkeypatch):
    """With a host term (4 ms a step) the serial engine adds it to every step, the async one hides it under the
    device's step; with the carried 0 the two orderings price the same."""
    carried = [api.serve("llama3-8b", "h100", async_scheduling=a, **OFFLINE).time_s for a in (False, True)]
    assert carried[0] == pytest.approx(carried[1])
    _with_host(monkeypatch, 4e-3)
    serial = api.serve("llama3-8b", "h100", **OFFLINE)
    overlapped = api.serve("llama3-8b", "h100", async_scheduling=True, **OFFLINE)
    assert overlapped.time_s < serial.time_s
    assert overlapped.to_dict()["engine"]["scheduler"]["host_overlap"] is True
    online = [api.serve("llama3-8b", "h100", prompt=256, output=32, concurrency=8, engine="vllm",
                        async_scheduling=a) for a in (False, True)]
    assert online[1].estimate.itl_s < online[0].estimate.itl_s
    assert online[1].engine.scheduler.host_overlap and not online[0].engine.scheduler.host_overlap


@pytest.mark.parametrize("kw, said", [
    (dict(engine="sglang"), "SGLang overlaps its scheduler with the device by default"),
    (dict(), "TensorRT-LLM's PyTorch executor overlaps its host work"),
    (dict(engine="vllm", max_throughput=True, pp=2), "--async-scheduling with --pp 2: vLLM refuses"),
])
def test_async_scheduling_is_refused_where_the_engine_has_no_such_knob(kw, said):
    with pytest.raises(IronlawError) as e:
        api.serve("llama3-8b", "h100", async_scheduling=True, **kw)
    assert said in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(IronlawError, match="async_scheduling.*True or False"):
        api.serve("llama3-8b", "h100", engine="vllm", async_scheduling="yes")


def test_cli_flag_reaches_the_engine_and_refuses_in_one_line():
    ok = run_cli("serve", "llama3-8b", "--on", "h100", "--engine", "vllm", "--async-scheduling")
    assert ok.rc == 0 and "host: overlapped with the device, given (--async-scheduling)" in ok.out.replace("\n", " ")
    bad = run_cli("serve", "llama3-8b", "--on", "h100", "--engine", "sglang", "--async-scheduling")
    assert bad.rc == 2 and len(bad.err.strip().splitlines()) == 1 and "SGLang overlaps" in bad.err
    assert "--async-scheduling" in run_cli("serve", "--help").out


def test_the_host_what_if_gives_async_vllm_the_same_work_overlapped(monkeypatch):
    root = Path(__file__).resolve().parents[1]
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    import vllm_host_whatif as whatif
    patched = whatif.serial_host(4e-3)(fw.select("vllm", "h100", async_scheduling=True), FITTED)
    assert patched.host_step_s == 4e-3 and not patched.host_serial
