"""Defects a new user meets on first contact: wrong defaults, options that were ignored or refused for the wrong
reason, and bad input that did not end in one line. Each test failed before its fix."""
import pytest

from conftest import one_line_error, run_cli


# ------------------------------------------------------------------ DeepSeek-V3/R1 ship FP8
@pytest.mark.parametrize("name", ["deepseek-v3", "deepseek-r1"])
def test_deepseek_inference_defaults_to_its_fp8_checkpoint(name):
    """The built-in DeepSeek-V3/R1 (block-scaled FP8 checkpoints, quantization_config in their config) were priced
    in bf16 with no --dtype: twice the weight bytes, a 157 GiB decode that spilled to host memory on 8 H200s."""
    import ironlaw
    kw = dict(on="h200", phase="decode", batch=8, tp=8)
    est = ironlaw.analyze(name, **kw)
    assert est.graph.dtype == "fp8"
    assert est.time_s == pytest.approx(ironlaw.analyze(name, dtype="fp8", **kw).time_s)
    assert ironlaw.analyze(name, dtype="bf16", **kw).graph.dtype == "bf16"
    assert ironlaw.serve(name, on="h200", tp=8, max_throughput=True).dtype == "fp8"
    assert ironlaw.analyze("llama3-8b", on="h200", phase="decode").graph.dtype == "bf16"


@pytest.mark.parametrize("argv", [["analyze", "deepseek-r1", "--phase", "decode", "--tp", "8"],
                                  ["serve", "deepseek-v3", "--tp", "8"],
                                  ["serve", "deepseek-v3", "--tp", "8", "--max-throughput"]])
def test_a_checkpoint_dtype_the_device_lacks_is_refused_naming_the_checkpoint(argv):
    line = one_line_error(run_cli(*argv, "--on", "a100"))
    assert "checkpoint (built-in config deepseek-v3.json: quantization_config) is fp8" in line, line
    assert "a100 has no fp8" in line and "--dtype" in line, line
    r = run_cli(*argv, "--on", "a100", "--dtype", "bf16")      # 1.3 TB of bf16 weights: served by 8 A100s or not
    assert "checkpoint" not in r.err and (r.rc == 0 or "does not fit" in r.err), r.err
