"""Sliding-window generation runs one of two TensorRT-LLM kernels, each its own kernel class: XQA for 2 to 32 query
heads per KV head at a head dim its JIT kernels take (a multiple of 16 up to 256), the MMHA fallback otherwise (``gemmshape.window_kernel``); the fitter
groups the tables' rows and the decode op names its class by the same rule."""

import pytest

from attention_cases import decode_case
from ironlaw.core.gemmshape import attention_kernel, attention_kernel_parts, attention_regime, window_kernel
from ironlaw.machine import hardware
from ironlaw.models import workloads


@pytest.mark.parametrize("heads, kv_heads, head_dim, kernel", [
    (64, 8, 64, "xqa"), (32, 8, 128, "xqa"), (2, 1, 64, "xqa"), (128, 4, 64, "xqa"), (16, 8, 256, "xqa"),    # 2 … 32 per KV head
    (8, 8, 128, "mmha"),            # vanilla MHA: supportConfigCommon refuses it
    (128, 2, 64, "mmha"),           # 64 per KV head: over the 32 supportConfigHMMA / QGMMA take
    (32, 8, 192, "xqa"),            # head dim 192: a multiple of 16 up to 256, split as XQA in the 1.3.0rc20 tables
    (8, 8, 192, "mmha"), (8, 1, 200, "mmha"), (8, 1, 288, "mmha")])   # MHA; not a multiple of 16; over 256
def test_the_window_kernel_follows_xqas_dispatch(heads, kv_heads, head_dim, kernel):
    assert window_kernel(heads, kv_heads, head_dim) == kernel
    want = "_window" if kernel == "xqa" else "_window_mmha"
    assert attention_regime(True, heads, kv_heads, head_dim, generation=True) == want
    assert attention_regime(True, heads, kv_heads, head_dim) == "_window"       # context attention: one class
    name = attention_kernel("decode", "bf16", "fp8", want)
    assert attention_kernel_parts(name) == ("decode", want)


def _rows():
    out = []
    for h, kv, d in ((32, 8, 64), (8, 8, 64), (32, 8, 192), (8, 8, 192), (64, 1, 128), (32, 8, 128)):
        for w in (0, 128):
            for b in (1, 8):
                for s in (127, 1023):
                    out.append({"device": "NVIDIA H100 80GB HBM3", "batch_size": b, "step": s, "isl": 1,
                                "num_heads": h, "num_key_value_heads": kv, "head_dim": d, "window_size": w,
                                "attn_dtype": "bfloat16", "kv_cache_dtype": "bfloat16", "kernel_source": "default",
                                "latency_s": 1e-5})
    return out


def test_the_fitter_groups_window_rows_by_the_kernel_they_run():
    pd = pytest.importorskip("pandas")
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    t = kerneltable.KernelTable("generation_attention", "h100", "NVIDIA H100 80GB HBM3", "trtllm", "1.3.0rc20",
                                "x.parquet", pd.DataFrame(_rows()))
    shapes = {g.key[1]: {(int(r.num_heads), int(r.num_key_value_heads), int(r.head_dim))
                         for r in g.rows.itertuples()} for g in kernelfit.groups([t])}
    assert shapes["attention_generation_bf16_kv_bf16_window"] == {(32, 8, 64), (32, 8, 128), (32, 8, 192)}
    assert shapes["attention_generation_bf16_kv_bf16_window_mmha"] == {(8, 8, 64), (8, 8, 192), (64, 1, 128)}
    names = {g.key[1]: g.name for g in kernelfit.groups([t])}
    assert names["attention_generation_bf16_kv_bf16_window_mmha"].endswith("sliding window, MMHA kernel")


def _window_op(kv_heads: int, phase="decode"):
    """Llama 3 8B's 32 heads × 128 on ``kv_heads`` KV heads, window 128, 8 sequences of 1,023 tokens."""
    return decode_case(32, kv_heads, 8, 1023, 128, phase, sliding_window=128)[2]


def test_a_windowed_decode_names_the_kernel_the_runtime_picks():
    assert _window_op(8).attrs["kernel"] == "attention_generation_bf16_kv_bf16_window"   # 32 heads on 8 KV heads
    op = _window_op(32)                                                      # one head per KV head
    assert op.attrs["kernel"] == "attention_generation_bf16_kv_bf16_window_mmha"
    assert op.attrs["history"] == 1024.0                                     # MMHA's class may split, too
    assert _window_op(32, "prefill").attrs["kernel"] == "attention_context_bf16_kv_bf16_window"
    g = workloads.resolve(workloads.Request("gpt-oss-20b", phase="decode", batch=8, seq=1023, dtype="bf16",
                                            device="cuda"))
    kernels = {o.name: o.attrs["kernel"] for o in g.ops if o.kind == "attention"}
    assert kernels["attention.window"].endswith("_kv_bf16_window")           # 64 heads on 8 KV heads x 64: XQA


@pytest.mark.parametrize("gpu", ["h100", "h200", "l40s", "rtx-pro-6000", "b200"])
def test_the_catalog_holds_both_window_generation_classes(gpu):
    kern = hardware.get(gpu).calibration.kernel
    for cls in ("attention_generation_bf16_kv_bf16_window", "attention_generation_bf16_kv_bf16_window_mmha"):
        assert cls in kern and kern[cls]["eta_max"] > 0


@pytest.mark.parametrize("framework", ["vllm", "sglang"])
@pytest.mark.parametrize("gpu", ["h100", "b200", "l40s"])
def test_vllm_and_sglang_time_their_own_window_classes(framework, gpu):
    """The engine files hold both window generation classes, fitted on the framework's own window rows (which of
    them runs which shape is the same rule), so the coverage line borrows neither from TensorRT-LLM; their decode
    kernels are not TensorRT-LLM's, so neither class takes its split-KV launch."""
    from ironlaw.models.serving import frameworks
    eng = frameworks.select(framework, gpu)
    kern = eng.hw.calibration.kernel
    for cls in ("attention_generation_bf16_kv_bf16_window", "attention_generation_bf16_kv_bf16_window_mmha"):
        assert framework in eng.hw.calibration.provenance[
            "generation attention bf16, KV bf16, sliding window" + (", MMHA kernel" if cls.endswith("mmha") else "")
        ]["version"]
        assert "split_kv" not in kern[cls]
    window = [g for g in eng.kernels.borrowed if g.startswith("generation attention") and "sliding window" in g]
    assert not window, window


def _blackwell_rows():
    out = []
    for h, kv, d, w, src in ((64, 1, 64, 128, "torch_flow"), (1, 1, 64, 128, "torch_flow"),
                             (8, 1, 64, 128, "torch_flow"), (1, 1, 256, 1024, "torch_flow_flashinfer"),
                             (4, 1, 256, 1024, "torch_flow_flashinfer")):
        for b in (1, 8):
            for s in (127, 1023):
                out.append({"device": "NVIDIA B200", "batch_size": b, "step": s, "isl": 1, "num_heads": h,
                            "num_key_value_heads": kv, "head_dim": d, "window_size": w, "attn_dtype": "bfloat16",
                            "kv_cache_dtype": "bfloat16", "kernel_source": src, "latency_s": 1e-5})
    return out


@pytest.mark.parametrize("framework, left", [("trtllm", 4), ("vllm", 0)])
def test_the_mmha_window_class_keeps_the_default_backends_rows(framework, left):
    """TensorRT-LLM's Blackwell tables time head dim 256, window 1024 on its FlashInfer backend (trtllm-gen's FMHA,
    Gemma4's path): the MMHA class leaves those rows out and says so; the XQA-rule class and other frameworks'
    classes keep every backend's rows."""
    pd = pytest.importorskip("pandas")
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    t = kerneltable.KernelTable("generation_attention", "b200", "NVIDIA B200", framework, "1.3.0rc20", "x.parquet",
                                pd.DataFrame(_blackwell_rows()))
    gs = {g.key[1]: g for g in kernelfit.groups([t])}
    mmha = gs["attention_generation_bf16_kv_bf16_window_mmha"]
    assert (set(mmha.rows.kernel_source) == {"torch_flow"}) == bool(left)
    assert len(mmha.rows) == 12 - left
    assert (f"{left} rows of other attention backends left out" in mmha.timed) == bool(left)
    assert set(gs["attention_generation_bf16_kv_bf16_window"].rows.kernel_source) == {"torch_flow",
                                                                                       "torch_flow_flashinfer"}
