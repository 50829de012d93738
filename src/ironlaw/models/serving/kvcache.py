"""The KV-cache dtypes: the checkpoint's when none is given (``default_kv_dtype``), and those a serving engine can
store on a device (``serve --kv-dtype``; ``check``, ``dtypes``).

The engines ironlaw models keep the cache in the model's own dtype, in FP8, or in NVFP4 (``fp4`` here), and in
nothing else:

- TensorRT-LLM: ``KvCacheConfig(dtype=...)`` takes ``auto`` (the model's), ``fp8`` and ``nvfp4`` (TensorRT-LLM
  docs, features/quantization.html, "FP8 KV Cache" and "NVFP4 KV Cache"; PR NVIDIA/TensorRT-LLM#11487 adds
  ``trtllm-serve --kv_cache_dtype auto|fp8|nvfp4``).
- NVFP4 KV cache is a Blackwell format: "a new KV format that enables significant performance gains on NVIDIA
  Blackwell GPUs" (NVIDIA technical blog, "Optimizing Inference for Long Context and Large Batch Sizes with NVFP4
  KV Cache", 2025-12-08). Here a device stores it where its catalog entry has an ``fp4`` tensor-core rate
  (B200, B300, GB200, GB300 …), i.e. never on Hopper or Ampere.
- vLLM (``--kv-cache-dtype auto|fp8|fp8_e4m3|fp8_e5m2``, ``nvfp4`` from v0.21) and SGLang (``--kv-cache-dtype
  auto|fp8_e5m2|fp8_e4m3|fp4_e2m1``, docs.sglang.io advanced_features/quantized_kv_cache) offer no more.

No engine stores an int4, int8 or MX-format KV cache, so those are errors, never a silent fallback.

Where each engine stores an FP8 cache (``check_with_engine``):

- TensorRT-LLM only on devices with FP8 arithmetic (Ada SM 89, Hopper, Blackwell): its support matrix
  (docs/source/reference/support-matrix.md, "Precision") lists FP8 for Hopper and Ada Lovelace and none for
  Ampere (SM 80, SM 86). The A100 MLA generation table aiconfigurator-core 0.12.0 collected on TensorRT-LLM 1.0
  with kv_cache_dtype fp8 has the bf16 rows' latencies (median ratio 1.000 over 2,534 pairs, 50 ms both at batch
  1024 and 16k tokens), i.e. no cache read at half the bytes. Here: a device whose catalog entry has no ``fp8``
  rate (A100, V100, T4, MI250X …).
- vLLM stores FP8 on Ampere too and converts it to 16 bits inside attention: vllm-project/vllm issue #3965 and
  #4827 (the cache is quantised and upconverted for compute, no FP8 hardware needed), PR #24577 (FP8 KV cache for
  the FlashInfer and Triton backends off SM 100, run on A100 at twice the KV tokens).
- SGLang likewise: ``--kv-cache-dtype fp8_e4m3|fp8_e5m2`` (docs.sglang.io advanced_features/quantized_kv_cache)
  on its FlashInfer and Triton attention backends, which dequantise the cache inside the kernel."""
from __future__ import annotations

from ...core.errors import IronlawError
from ...machine.engines import NAMES

# the cache dtype NVIDIA's ModelOpt checkpoints state in hf_quant_config.json (kv_cache_quant_algo), which TensorRT-LLM
# and vLLM (kv_cache_dtype "auto") take: FP8 in the NVFP4 ones (nvidia/Llama-3.3-70B-Instruct-FP4: quant_algo NVFP4,
# kv_cache_quant_algo FP8, group_size 16) and in the FP8 ones (TensorRT-LLM's accuracy tests assert
# kv_cache_quant_algo == FP8 for the Llama 4 FP8 checkpoints: tests/integration/defs/accuracy/test_llm_api_pytorch.py)
FP8_KV_DTYPES = ("fp8", "mxfp8", "fp4", "mxfp4")


def default_kv_dtype(dtype: str) -> str:
    """The KV-cache dtype of a model run in ``dtype`` when none is given: FP8 for 8- and 4-bit floats
    (``FP8_KV_DTYPES``: the checkpoints' kv_cache_quant_algo), bf16 for int4 (weight-only 4-bit integers keep
    16-bit activations and cache), else ``dtype`` itself."""
    if dtype in FP8_KV_DTYPES:
        return "fp8"
    return "bf16" if dtype == "int4" else dtype


# the model's own dtype ("auto"), FP8, and NVFP4 where the device has FP4 tensor cores
KV_DTYPES = ("fp32", "bf16", "fp16", "fp8", "fp4")
NEEDS_DEVICE = ("fp4",)


def storable(hw) -> tuple[str, ...]:
    """The KV-cache dtypes ``hw`` can hold: ``KV_DTYPES``, less NVFP4 where the device has no FP4 rate."""
    return tuple(d for d in KV_DTYPES if d not in NEEDS_DEVICE or d in hw.peak_flops)


# the engines' own names of an FP8 KV cache (vLLM's and SGLang's --kv-cache-dtype choices), one byte an element
FP8_FORMATS = ("fp8_e4m3", "fp8_e5m2")


def check(kv_dtype: str | None, hw) -> None:
    """``--kv-dtype`` refused (one line, exit 2) when no engine stores a KV cache in it on ``hw``; None (the
    checkpoint's default) passes. vLLM's and SGLang's FP8 formats (``FP8_FORMATS``) name --kv-dtype fp8, which
    prices either."""
    if kv_dtype is None:
        return
    can = ", ".join(storable(hw))
    if kv_dtype in FP8_FORMATS:
        raise IronlawError(f"--kv-dtype {kv_dtype}: vLLM's and SGLang's name of an FP8 KV cache (--kv-cache-dtype); "
                           f"ironlaw prices either format as --kv-dtype fp8 (one byte an element)")
    if kv_dtype not in KV_DTYPES:
        raise IronlawError(f"--kv-dtype {kv_dtype}: no serving engine ironlaw models (TensorRT-LLM, vLLM, SGLang) "
                           f"stores a KV cache in {kv_dtype}; on {hw.name} it can be {can}")
    if kv_dtype not in storable(hw):
        raise IronlawError(f"--kv-dtype {kv_dtype}: an NVFP4 KV cache needs FP4 tensor cores (Blackwell), which "
                           f"{hw.name} lacks; on {hw.name} it can be {can}")


# engine -> the KV dtypes it stores only where the device has that rate (module docstring)
NEEDS_RATE = {"trtllm": ("fp8",)}


def check_with_engine(kv_dtype: str | None, engine: str, hw, named: str | None = None) -> None:
    """``--kv-dtype`` refused (one line, exit 2) where ``engine`` cannot store a cache in it on the GPU ``hw``,
    naming what works there: the engines that can and ``--kv-dtype bf16``. None, a device the engine step model
    does not price (kind not 'gpu') and a dtype ``check`` refuses pass here. ``named``: how the refusal names the
    engine (default ``--engine ENGINE``; ``machine.engines.named``)."""
    if kv_dtype is None or hw.kind != "gpu" or kv_dtype in hw.peak_flops:
        return
    if kv_dtype not in NEEDS_RATE.get(engine, ()):
        return
    can = [f"--engine {e} ({NAMES[e]})" for e in NAMES if kv_dtype not in NEEDS_RATE.get(e, ())]
    own = "bf16" if "bf16" in hw.peak_flops else "fp16"
    who = named or f"--engine {engine}"
    who = who if who.startswith("--") else "with " + who
    raise IronlawError(f"--kv-dtype {kv_dtype} {who}: {NAMES[engine]} stores an {kv_dtype.upper()} KV "
                       f"cache only on a GPU with {kv_dtype.upper()} arithmetic (Ada, Hopper, Blackwell), which "
                       f"{hw.name} lacks; use {' or '.join(can)}, which store it and dequantise it in attention, "
                       f"or --kv-dtype {own}")


def model_dtype(spec: str, hw) -> str:
    """The dtype the workload ``spec`` is built in when none is given (its checkpoint's: DeepSeek-V3/R1 FP8); one
    ``hw`` lacks is refused naming the checkpoint."""
    from .. import workloads
    from ...law.law import check_default_dtype
    g = workloads.resolve(workloads.Request(spec, phase="decode", batch=1, seq=1,
                                            device="cuda" if hw.kind == "gpu" else "cpu"))
    check_default_dtype(g, hw, g.dtype)
    return g.dtype


def dtypes(hw, dtype: str | None, kv_dtype: str | None, spec: str | None = None) -> tuple[str, str]:
    """An engine's compute dtype (default the checkpoint's, ``model_dtype``, or bf16 without a ``spec``; one
    ``hw`` cannot compute in is an error, not a fallback) and its KV-cache dtype (``check``ed; default the
    checkpoint's, ``default_kv_dtype``)."""
    dtype = dtype or (model_dtype(spec, hw) if spec else "bf16")
    hw.peak(dtype)
    check(kv_dtype, hw)
    return dtype, kv_dtype or default_kv_dtype(dtype)
