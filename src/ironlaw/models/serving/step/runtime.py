"""The executor that runs TensorRT-LLM's steps (``RUNTIMES``): its PyTorch executor (the default: what the engine
constants were fitted on) or its C++ executor running a TensorRT engine (``cpp``), and the engine constants under
each (``with_runtime``).

    pytorch   TensorRT-LLM's PyTorch backend (tensorrt_llm/_torch/pyexecutor): Python launches every kernel of a
              step that carries prompt tokens; a decode-only step replays a captured CUDA graph. The host's cost
              per launched kernel is ``engine.FITTED``'s ``launch_s``, 109 µs, fitted end to end on TensorRT-LLM's
              H100 perf-overview cells, which ran this backend.
    cpp       TensorRT-LLM's C++ executor (``tensorrt_llm.bindings.executor.Executor`` over a TensorRT engine:
              cpp/tensorrt_llm/batch_manager/trtGptModelInflightBatching.cpp schedules the step in C++ and
              enqueues the engine once per step, ``executeContext`` → TensorRT's ``enqueueV3``, whose kernels the
              TensorRT runtime launches from C++). Its CUDA graphs are off unless
              ``ExtendedRuntimePerfKnobConfig(cudaGraphMode=true)`` is passed (cpp/include/tensorrt_llm/executor/
              executor.h: ``cudaGraphMode = false``); NVIDIA's MLPerf Inference v5.1 harness passes none
              (closed/NVIDIA/code/llmlib/cores/trtllm_executor_core.py:74-102, ``TrtllmExecutorCore.__init__``:
              its ``ExecutorConfig`` sets no ``extended_runtime_perf_knob_config``; llmlib/config.py:527-528,
              ``_generate_extra_config_yaml``: "CUDA Graphs are not supported in TRT/C++ backend yet"; the
              ``use_graphs: True`` and ``cuda_graph_padding_enabled`` of the B200 Llama-3.1-8B Offline config,
              configs/B200-SXM-180GBx8/Offline/llama3_1-8b.py:40,57, reach only the PyTorch path's YAML), so every
              step, decode-only ones too, runs eagerly on its own batch, unpadded (``cuda_graphs`` False). Each
              kernel costs the host ``CPP_LAUNCH_S``. The kernels priced are the kernel tables' (the same count as
              the PyTorch step's: a TensorRT engine's own fusions are not modelled). No public figure of the C++
              executor's own per-step host work was found: the step keeps ``step_s`` and the executor's other
              host terms as the constants hold them.
"""
from __future__ import annotations

from dataclasses import replace

from ....core.errors import IronlawError
from .constants import ServingConstants

RUNTIMES = ("pytorch", "cpp")
DEFAULT_RUNTIME = "pytorch"
NAMES = {"pytorch": "TensorRT-LLM's PyTorch executor",
         "cpp": "TensorRT-LLM's C++ executor (a TensorRT engine)"}
# host seconds per kernel launched from C++ (cudaLaunchKernel / <<<>>> on a stream, no Python): "about 4-6 µs" per
# launch, measured with a C++ CUDA microbenchmark on an RTX 5070 Ti (Blackwell), driver 580.126.09, CUDA 13.0
# (susun-blog.com/blog/pegainfer-3-cuda-graph, code github.com/xiaguan/cuda-kernel-launch-lab); the middle of that
# range. Measured, not fitted: no end-to-end result sets it.
CPP_LAUNCH_S = 5.0e-6
CPP_LAUNCH_SOURCE = ("C++ kernel launch 4-6 µs measured (susun-blog.com/blog/pegainfer-3-cuda-graph, RTX 5070 Ti, "
                     "CUDA 13.0): 5 µs")


def check_runtime(runtime: str, engine: str, flag: str = "--runtime") -> str:
    """``runtime`` if known and ``engine`` runs it (TensorRT-LLM only has two executors), else one line."""
    if runtime not in RUNTIMES:
        raise IronlawError(f"{flag} {runtime!r}: unknown (known: {', '.join(RUNTIMES)})")
    if runtime != DEFAULT_RUNTIME and engine != "trtllm":
        raise IronlawError(f"{flag} {runtime}: TensorRT-LLM's C++ executor runs TensorRT engines, and the engine "
                           f"here is {engine}, whose own runtime launches its kernels; {flag} is TensorRT-LLM's "
                           f"(--engine trtllm, NVIDIA GPUs): leave it out")
    return runtime


_CACHE: dict = {}


def with_runtime(base: ServingConstants, runtime: str) -> ServingConstants:
    """``base`` under ``runtime`` (module docstring): itself for ``pytorch``; for ``cpp`` the C++ launch cost per
    kernel and no CUDA graphs. One object per base, so that the engine's caches keyed on the constants see it."""
    if runtime == DEFAULT_RUNTIME:
        return base
    hit = _CACHE.get(id(base))
    if hit is None or hit[0] is not base:
        hit = _CACHE[id(base)] = (base, replace(base, launch_s=CPP_LAUNCH_S, cuda_graphs=False, runtime=runtime,
                                                source=f"{base.source}; host launches at the {CPP_LAUNCH_SOURCE}, "
                                                       f"no CUDA graphs (TensorRT-LLM's C++ executor)"))
    return hit[1]
