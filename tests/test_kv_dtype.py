"""--kv-dtype a device or engine cannot store: one line, exit 2, naming what it can (models/serving/kvcache)."""
import pytest

from conftest import run_cli
from ironlaw.core.errors import IronlawError
from ironlaw.machine import hardware
from ironlaw.models.serving import kvcache, online


@pytest.mark.parametrize("argv,needle", [
    (["--kv-dtype", "fp4"], "--kv-dtype fp4: an NVFP4 KV cache needs FP4 tensor cores (Blackwell), which h100 lacks"),
    (["--kv-dtype", "int4"], "--kv-dtype int4: no serving engine"),
    (["--kv-dtype", "fp4", "--max-throughput"], "which h100 lacks"),
    (["--kv-dtype", "int4", "--engine", "vllm"], "stores a KV cache in int4"),
])
def test_kv_dtype_h100_cannot_store_is_one_line_exit_2(argv, needle):
    r = run_cli("serve", "llama3-8b", "--on", "h100", *argv)
    assert r.rc == 2, (r.rc, r.out, r.err)
    lines = [l for l in r.err.splitlines() if l.strip()]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in r.err
    assert lines[0].endswith("on h100 it can be fp32, bf16, fp16, fp8")


def test_storable_follows_the_device_fp4_rate():
    assert "fp4" not in kvcache.storable(hardware.get("h100"))
    assert "fp4" not in kvcache.storable(hardware.get("a100"))
    assert "fp4" in kvcache.storable(hardware.get("b200"))
    assert "fp8" in kvcache.storable(hardware.get("h100"))


def test_nvfp4_kv_on_blackwell_is_smaller_than_fp8():
    b200 = hardware.get("b200")
    fp8 = online.estimate("llama3-8b", b200, 1024, 256, 8, dtype="fp4", kv_dtype="fp8")
    fp4 = online.estimate("llama3-8b", b200, 1024, 256, 8, dtype="fp4", kv_dtype="fp4")
    assert fp4.kv_dtype == "fp4"
    k8, k4 = fp8.to_dict()["capacity"]["kv_bytes_per_token"], fp4.to_dict()["capacity"]["kv_bytes_per_token"]
    assert k4 == pytest.approx(k8 * 9 / 16)          # 4 bits plus one FP8 scale per 16 values, against 8 bits


def test_library_refuses_int8_kv_on_h100():
    with pytest.raises(IronlawError, match="int8"):
        online.estimate("llama3-8b", "h100", 1024, 256, 1, kv_dtype="int8")
