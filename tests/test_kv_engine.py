"""An FP8 KV cache where the serving engine has none: TensorRT-LLM stores FP8 only on GPUs with FP8 arithmetic,
vLLM and SGLang store it anywhere and dequantise it in attention (``models.serving.kvcache`` cites each)."""
import pytest

from conftest import one_line_error, run_cli


def test_trtllm_refuses_an_fp8_cache_on_a100_naming_what_works():
    line = one_line_error(run_cli("serve", "llama3-8b", "--on", "a100", "--kv-dtype", "fp8"))
    assert line.startswith("ironlaw: error: --kv-dtype fp8 with the default engine on a100 (TensorRT-LLM): "
                           "TensorRT-LLM"), line
    assert "a100 lacks" in line and "--engine vllm" in line and "--engine sglang" in line
    assert line.endswith("or --kv-dtype bf16")


def test_max_throughput_and_a_release_are_refused_alike():
    for extra in (("--max-throughput",), ("--release", "1.0")):
        line = one_line_error(run_cli("serve", "llama3-8b", "--on", "a100", "--kv-dtype", "fp8", *extra))
        assert "TensorRT-LLM stores an FP8 KV cache only on a GPU with FP8 arithmetic" in line, (extra, line)


def test_a_device_without_bf16_is_pointed_at_fp16():
    line = one_line_error(run_cli("serve", "llama3-8b", "--on", "v100", "--dtype", "fp16", "--kv-dtype", "fp8"))
    assert "v100 lacks" in line and line.endswith("or --kv-dtype fp16")


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_vllm_and_sglang_keep_an_fp8_cache_on_a100(engine):
    import ironlaw
    res = ironlaw.serve("llama3-8b", "a100", kv_dtype="fp8", engine=engine)
    assert res.estimate.kv_dtype == "fp8"
    bf16 = ironlaw.serve("llama3-8b", "a100", kv_dtype="bf16", engine=engine)
    assert res.estimate.capacity["kv_bytes_per_token"] == bf16.estimate.capacity["kv_bytes_per_token"] / 2


def test_the_library_refuses_as_the_cli_does_and_hopper_keeps_it():
    import ironlaw
    from ironlaw.core.errors import IronlawError
    with pytest.raises(IronlawError, match="a100 lacks"):
        ironlaw.serve("llama3-8b", "a100", kv_dtype="fp8")
    with pytest.raises(IronlawError, match="a100 lacks"):
        ironlaw.serve("llama3-8b", "a100", kv_dtype="fp8", max_throughput=True)
    assert ironlaw.serve("llama3-8b", "h100", kv_dtype="fp8").estimate.kv_dtype == "fp8"
    assert ironlaw.serve("llama3-8b", "l40s", kv_dtype="fp8").estimate.kv_dtype == "fp8"
