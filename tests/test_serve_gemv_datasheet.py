"""On a GPU without kernel tables, ``serve`` prices a decode step's GEMVs as ``analyze`` does: by their weights'
streaming (the small-M rule, docs/accuracy.md "A GEMV's time is its weights' streaming"). The engine constants'
half-point GEMM η, gemm_eta · M/(M + m_half), at FITTED's 179 rows leaves a GEMV ~0.4% of the matrix peak: on a
device with few FLOPs per byte of bandwidth (H20: 148 TFLOP/s bf16 over 4 TB/s) that binds a batch-1 decode step on
compute (26.5 ms, where ``analyze`` gives 6.5 ms, bandwidth-bound). ``ServingConstants.gemm_table`` bounds m_half on
such a device so a GEMV's compute stays under its streaming (``gemmshape.gemv_m_half_max``).

Tolerance: both price the step's weights streamed once, each at its own share of the device memory's bandwidth
(``analyze``: the device's [efficiency] memory; ``serve``: the engine constants' memory_eta), so the decode step
``serve`` gives is ``analyze``'s data term (D_vol/BW) times the ratio of those shares, within 10% (the KV cache,
norms and activations priced alike aside); and at most ``analyze``'s whole time, which adds each op's launch
latency where ``serve`` replays one CUDA graph."""
import pytest

import ironlaw.api as api
from ironlaw.machine import hardware
from ironlaw.models.serving.engine import FITTED

LOW_RIDGE = ('schema = "ironlaw.hardware/1"\nname = "lowridge"\ntitle = "A GPU with few FLOPs per byte"\n'
             'kind = "gpu"\n[compute.bf16]\npeak_flops = "120 TFLOP/s"\nsource = "estimate: a test device"\n'
             '[vector]\npeak_flops = "30 TFLOP/s"\nsource = "estimate: a test device"\n'
             '[[memory]]\nname = "hbm"\nrole = "device"\ncapacity_bytes = "64 GiB"\nbw_Bps = "4 TB/s"\n'
             'source = "estimate: a test device"\n[latency]\nop_s = "5 us"\nsource = "estimate: a test device"\n'
             '[efficiency]\nother = 0.8\nmemory = 0.85\nsource = "estimate: a test device"\n')


def _serve_and_analyze(on: str):
    amd = not on.endswith(".toml") and hardware.get(on).title.startswith("AMD")    # TensorRT-LLM: NVIDIA only
    step = api.serve("llama3-8b", on=on, **({"engine": "vllm"} if amd else {})).estimate
    return step, api.analyze("llama3-8b", on=on, phase="decode")


@pytest.mark.parametrize("on", ["h20", "rtx-4090", "mi250x", "custom"])
def test_a_batch_one_decode_step_streams_its_weights_under_serve_as_under_analyze(on, tmp_path):
    if on == "custom":
        path = tmp_path / "lowridge.toml"
        path.write_text(LOW_RIDGE)
        on = str(path)
    hw = hardware.get(on)
    assert hw.calibration is None or not hw.calibration.provenance     # a device without kernel tables
    step, ana = _serve_and_analyze(on)
    assert step.step_model.name == "engine"
    assert step.decode.bottleneck()["resource"] == "bandwidth"
    assert ana.bottleneck()["resource"] == "bandwidth"
    streamed_s = ana.term("data_s") * hw.efficiency["memory"] / FITTED.memory_eta
    assert step.decode_step_s == pytest.approx(streamed_s, rel=0.10)
    assert step.decode_step_s <= ana.time_s
