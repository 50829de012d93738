"""Which serving framework runs the model: ``serve --engine trtllm|vllm|sglang``.

Each framework prices its steps with the kernels it runs (``machine.engines``: the GEMM and attention terms
fitted on that framework's kernel tables) and forms its batches under its scheduler's defaults, read from its
source:

    vLLM (vllm-project/vllm, V1 engine; the source at commit 99d7eb5, the v0.11 line):
        max_num_batched_tokens, max_num_seqs   vllm/engine/arg_utils.py EngineArgs._set_default_args: on a GPU
                      of ≥ 70 GiB that is not an A100, 16384 tokens and 1024 sequences for the LLM class
                      (offline: ``vllm bench throughput``), 8192 and 1024 for the OpenAI server (``vllm serve``);
                      on others 8192/256 and 2048/256; max_num_seqs at most max_num_batched_tokens
        chunked prefill   always on for generative models (same function): prompt chunks ride the decode batch
                      within max_num_batched_tokens
        long_prefill_token_threshold   vllm/config/scheduler.py SchedulerConfig, default 0: no cap; where set, V1's
                      vllm/v1/core/sched/scheduler.py Scheduler.schedule gives each request at most that many new
                      tokens a step (a prompt over ⌈prompt / threshold⌉ steps, any number of prompts part-prefilled
                      at once); max_num_partial_prefills / max_long_partial_prefills (default 1) are V0's only, V1
                      refuses other values (``check_long_prefill``; a run sets the threshold through
                      ``ironlaw.serve(..., long_prefill_token_threshold=N)``)
        CUDA graphs   vllm/config/vllm.py VllmConfig._set_cudagraph_sizes: the largest captured batch
                      min(2 · max_num_seqs, 512, max_num_batched_tokens); the sizes 1, 2, 4, then every 8 below
                      256, every 16 from 256
        KV cache      vllm/config/cache.py CacheConfig: gpu_memory_utilization 0.9 of the device memory for
                      weights, activations and KV; block_size 16 tokens on CUDA (vllm/platforms/cuda.py)
        host          serial with the device (``VLLM_HOST``): async_scheduling off, EngineCore.step schedules,
                      executes and updates one after another; overlapped under pipeline parallelism, and with
                      ``serve --async-scheduling`` (``VLLM_HOST_ASYNC``, ``check_async_scheduling``)
    SGLang (sgl-project/sglang, python/sglang/srt/server_args.py ServerArgs, the v0.5 line):
        chunked_prefill_size, cuda_graph_max_bs   _handle_gpu_memory_settings by device memory: < 20 GiB
                      2048 and 8; < 35 GiB 2048 and 24 (80 from TP 4); < 60 GiB 4096 and 32 (160 from TP 4);
                      < 160 GiB 8192 and 256 (512 from TP 4); else 16384 and 512
        mem_fraction_static   (memory − reserved) / memory, reserved = 512 MiB + 1.5 MiB · max(chunk, 2048)
                      + 2 MiB · cuda_graph_max_bs + TP·PP/8 GiB, at least 10 GiB on devices over 60 GiB; the
                      KV pool is what weights leave of memory · mem_fraction_static (model_runner
                      profile_max_num_token: rest = free after loading − free at start · (1 − fraction)), so
                      the reserve holds the activations and nothing else is taken for them
        CUDA graphs   _generate_cuda_graph_batch_sizes: 1, 2, 4, 8, 12, every 8 from 16 to 256, every 16 to
                      512, every 32 beyond, up to cuda_graph_max_bs
        max_running_requests   the model runner's min(max(KV tokens / context length · 512, 2048), 4096),
                      at most KV tokens / 2: 2048 unless the KV pool holds over 4 context lengths
        page size     1 token (server_args.page_size default)
        prefill batch  no per-request cap: PrefillAdder (managers/schedule_policy.py) fills one prefill batch up to
                      chunked_prefill_size (and max_prefill_tokens, 16384, at or above every default chunk),
                      chunking one request at a time
        mixing        enable_mixed_chunk off: a prompt chunk runs as a prefill batch of its own, the decode
                      batch after it (``step.ServingConstants.mixed_steps``)
        host          overlapped with the device (``SGLANG_HOST``): disable_overlap_schedule off,
                      Scheduler.event_loop_overlap
    TensorRT-LLM   ``engine`` (trtllm-bench's limits) and ``step`` as they are: the default, unchanged.

``serve --memory-fraction F`` (F in (0, 1]) sets each engine's own memory knob in place of its default:
    vLLM          gpu_memory_utilization, the share of device memory for weights, activations and KV
                  (vllm/config/cache.py CacheConfig, default 0.9): the scheduler's ``memory_fraction``
    SGLang        mem_fraction_static, the share of device memory for weights and the KV pool (server_args.py
                  ServerArgs._handle_gpu_memory_settings: its default by device memory and TP, above)
    TensorRT-LLM  free_gpu_memory_fraction, the KV cache's share of the memory free after weights and the
                  activation workspace (tensorrt_llm/llmapi/llm_args.py KvCacheConfig, default 0.9; ironlaw's
                  default 0.95, the published trtllm-bench runs' kv_cache_free_gpu_mem_fraction, which
                  ``--kv-fraction`` also sets: ``trtllm_kv_fraction``)

A release (``serve --engine trtllm --release 1.0``): the kernels of that TensorRT-LLM release
(``machine.engines.RELEASES``; the published perf overview's cells ran the 1.0 line) in place of the catalog's
(1.3.0rc20, the default). Where the release's tables carry the fused-MoE layer (``EngineKernels.moe``), the
routed experts' GEMMs and their rows are priced on it (``step.ServingConstants.moe_tables``: the fitted
``moe_grouped_gemm.<dtype>`` and ``moe_rows.<dtype>`` classes) instead of the end-to-end expert constants
(``engine.FITTED`` expert_gemm_eta, expert_stream_eta), which were fitted on H100 against a different kernel; a
dtype the release's MoE tables lack keeps those constants, and the engine line names them.

The per-step host constants (``step_s``, ``launch_s``) and the expert-GEMM terms were fitted end to end on
TensorRT-LLM's published H100 results only; no vLLM or SGLang end-to-end results are fitted here, so those
frameworks carry TensorRT-LLM's, and their engine line says so. The executor's own work per step is carried too
(0), ordered as each framework orders it (``Scheduler.host_overlap``: serial under vLLM, added to the device's step,
unless ``async_scheduling`` is given; overlapped under SGLang), and the ``host:`` line says which. Published vLLM and SGLang runs are scored, not
fitted, by benchmarks/vllm_sglang_published.py (docs/accuracy.md).
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, fields, replace

from ...core.errors import IronlawError
from ...machine.engines import (DEFAULT, NAMES, check_engine, check_release, default_for, default_note, moe_dtypes,
                                with_engine)
from .throughput import ThroughputEstimate

MIB, GIB = 2.0**20, 2.0**30
VLLM_SOURCE = "vllm-project/vllm at commit 99d7eb5 (v0.11 line)"
VLLM_GRAPHS = "vllm/config/vllm.py VllmConfig._set_cudagraph_sizes (max_graph_size from max_num_seqs)"
SGLANG_SOURCE = "sgl-project/sglang python/sglang/srt/server_args.py (v0.5 line)"
VLLM_LONG_PREFILL = ("vllm/config/scheduler.py SchedulerConfig.long_prefill_token_threshold default 0 (no cap; "
                     "vllm/v1/core/sched/scheduler.py Scheduler.schedule caps each request's new tokens per step at "
                     "it where > 0)")
SGLANG_PREFILL = ("no per-request cap: python/sglang/srt/managers/schedule_policy.py PrefillAdder caps the prefill "
                  "batch (chunked_prefill_size, max_prefill_tokens 16384) and chunks one request at a time")
VLLM_HOST = ("serial with the device: vllm/config/scheduler.py SchedulerConfig.async_scheduling default False at "
             "v0.10 and the v0.11 line (made automatic by vllm-project/vllm PR #27614, after them), so "
             "vllm/v1/engine/core.py EngineCore.step schedules, runs execute_model (input preparation, launches, "
             "sampling, the sampled tokens read back) and update_from_output one after another; "
             "step_with_batch_queue keeps batches in flight only under pipeline parallelism")
VLLM_HOST_ASYNC = ("overlapped with the device, given (--async-scheduling): vllm/config/scheduler.py "
                   "SchedulerConfig.async_scheduling True runs vllm/v1/core/sched/async_scheduler.py AsyncScheduler "
                   "(a request's next step scheduled on a placeholder for the token still being sampled) under "
                   "vllm/v1/engine/core.py EngineCore.step_with_batch_queue (the executor's max_concurrent_batches 2): "
                   "step n+1 is scheduled, prepared and launched while the device runs step n, whose sampled tokens "
                   "feed n+1 on the device (gpu_model_runner.py AsyncGPUModelRunnerOutput: their copy to the host "
                   "on a side stream) and whose update_from_output follows; the logits and the sampler stay in the "
                   "device's step, before n+1's forward")
VLLM_HOST_PP = ("overlapped with the device: pipeline parallelism runs vllm/v1/engine/core.py "
                "EngineCore.step_with_batch_queue, a batch scheduled while others run")
SGLANG_HOST = ("overlapped with the device: python/sglang/srt/server_args.py ServerArgs.disable_overlap_schedule "
               "default False, so managers/scheduler.py Scheduler.event_loop_overlap launches batch n and processes "
               "batch n−1's results while it runs; the wait on n−1's sampled tokens is the serial remainder (step_s)")
HOST_WORK = ("its per-step Python work carried from the TensorRT-LLM fit (host_step_s, host_sequence_s, host_prompt_s; "
             "no published per-step measurement of {name}'s host time found: docs/how-it-models.md)")
CARRIED = ("per-step host constants (step_s, launch_s) and expert-GEMM terms carried from the TensorRT-LLM H100 fit "
           "(no {name} end-to-end results fitted)")


@dataclass(frozen=True)
class Scheduler:
    """A framework's scheduler limits and defaults on one device, each with its source."""
    engine: str
    max_num_seqs: int               # sequences running at once
    max_num_batched_tokens: int     # tokens one step carries (vLLM) / prompt tokens one prefill chunk (SGLang)
    mixed_steps: bool               # chunked prefill rides the decode batch
    cuda_graph_batches: tuple       # captured decode batch sizes
    block_tokens: int               # KV block (vLLM) / page (SGLang) in tokens
    memory_fraction: float          # of device memory for weights and KV (and vLLM's activations)
    sources: dict                   # field -> where the framework sets it
    long_prefill_tokens: int = 0    # prompt tokens one request prefills per step at most (0: no cap)
    host_overlap: bool = True       # the executor's per-step work runs beside the device's step (False: serial)

    def given(self, max_num_seqs=None, max_num_batched_tokens=None, memory_fraction=None,
              long_prefill_tokens=None) -> "Scheduler":
        """These limits where the run was given them (``serve --max-batch``, ``--max-num-tokens``,
        ``--memory-fraction``, the library's ``long_prefill_token_threshold``), each source saying so; the
        framework's defaults otherwise. vLLM derives its CUDA-graph capture sizes from the first two
        (``vllm_graph_sizes``), so given limits re-derive those too."""
        out, sources = self, dict(self.sources)
        for key, value, flag, kind in (("max_num_seqs", max_num_seqs, "--max-batch", int),
                                       ("max_num_batched_tokens", max_num_batched_tokens, "--max-num-tokens", int),
                                       ("memory_fraction", memory_fraction, "--memory-fraction", float),
                                       ("long_prefill_tokens", long_prefill_tokens, "long_prefill_token_threshold",
                                        int)):
            if value is not None:
                out, sources[key] = replace(out, **{key: kind(value)}), f"given ({flag})"
        if self.engine == "vllm" and (max_num_seqs is not None or max_num_batched_tokens is not None):
            out = replace(out, cuda_graph_batches=vllm_graph_sizes(out.max_num_seqs, out.max_num_batched_tokens))
            sources["cuda_graph_batches"] = f"{VLLM_GRAPHS} from the limits given"
        return replace(out, sources=sources)

    def line(self) -> str:
        vllm = self.engine == "vllm"
        mixing = "chunked prefill mixed into decode" if self.mixed_steps else "prefill batches apart from decode"

        def given(key: str) -> str:
            return " (given)" if self.sources[key].startswith("given") else ""
        cap = (f", long_prefill_token_threshold {self.long_prefill_tokens}{given('long_prefill_tokens')}"
               if self.long_prefill_tokens else "")
        return (f"scheduler: {'max_num_seqs' if vllm else 'max_running_requests'} {self.max_num_seqs}"
                f"{given('max_num_seqs')}, "
                f"{'max_num_batched_tokens' if vllm else 'chunked_prefill_size'} {self.max_num_batched_tokens}"
                f"{given('max_num_batched_tokens')}{cap}, "
                f"{mixing}, CUDA graphs up to {self.cuda_graph_batches[-1]}, {'block' if vllm else 'page'} "
                f"{self.block_tokens}, memory fraction {self.memory_fraction:g}{given('memory_fraction')} "
                f"({VLLM_SOURCE if vllm else SGLANG_SOURCE})")

    def host_line(self) -> str:
        """One line: whether the executor's per-step host work overlaps the device's step, and its source."""
        return (f"host: {self.sources['host_overlap']}; "
                f"{HOST_WORK.format(name='vLLM' if self.engine == 'vllm' else 'SGLang')}")

    def to_dict(self) -> dict:
        return {f.name: (list(getattr(self, f.name)) if f.name == "cuda_graph_batches" else getattr(self, f.name))
                for f in fields(self)}


def vllm_graph_sizes(max_num_seqs: int, max_num_batched_tokens: int) -> tuple:
    """The decode batches vLLM captures as CUDA graphs for these scheduler limits (``VLLM_GRAPHS``): 1, 2, 4, then
    every 8 below 256 and every 16 from 256, up to min(2 · max_num_seqs, 512, max_num_batched_tokens)."""
    top = min(2 * max_num_seqs, 512, max_num_batched_tokens)
    return tuple([b for b in (1, 2, 4) if b <= top] + list(range(8, min(top + 1, 256), 8))
                 + list(range(256, top + 1, 16)))


def vllm(hw, offline: bool, pp: int = 1) -> Scheduler:
    """vLLM's V1 defaults on ``hw`` at ``pp`` pipeline stages (module docstring)."""
    big = hw.memory[hw.device_tier].capacity_bytes >= 70 * GIB and not hw.name.startswith("a100")
    tokens = (16384 if offline else 8192) if big else (8192 if offline else 2048)
    seqs = min(1024 if big else 256, tokens)
    where = "vllm/engine/arg_utils.py EngineArgs._set_default_args"
    return Scheduler("vllm", seqs, tokens, True, vllm_graph_sizes(seqs, tokens), 16, 0.9, {
        "max_num_seqs": f"{where} ({'LLM class' if offline else 'OpenAI server'}, "
                        f"{'≥ 70 GiB, not A100' if big else 'other GPUs'})",
        "max_num_batched_tokens": where, "mixed_steps": f"{where}: chunked prefill always on (V1)",
        "cuda_graph_batches": VLLM_GRAPHS,
        "block_tokens": "vllm/platforms/cuda.py (block_size 16 when unset)",
        "memory_fraction": "vllm/config/cache.py CacheConfig.gpu_memory_utilization",
        "long_prefill_tokens": VLLM_LONG_PREFILL, "host_overlap": VLLM_HOST_PP if pp > 1 else VLLM_HOST},
        host_overlap=pp > 1)


def sglang(hw, tp: int = 1, pp: int = 1) -> Scheduler:
    """SGLang's defaults on ``hw`` at ``tp`` × ``pp`` (module docstring)."""
    mem = hw.memory[hw.device_tier].capacity_bytes / MIB
    tiers = ((20, 2048, 8, 8), (35, 2048, 24, 80), (60, 4096, 32, 160), (160, 8192, 256, 512))
    chunk, graph_bs = next(((c, small if tp < 4 else large) for gib, c, small, large in tiers if mem < gib * 1024),
                           (16384, 512))
    reserved = 512 + max(chunk, 2048) * 1.5 + graph_bs * 2 + tp * pp / 8 * 1024
    if mem > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    frac = round((mem - reserved) / mem, 3)
    sizes = [1, 2, 4, 8, 12] + list(range(16, 257, 8)) + list(range(272, 512, 16)) + list(range(512, graph_bs + 1, 32))
    where = "python/sglang/srt/server_args.py ServerArgs"
    return Scheduler("sglang", 2048, chunk, False, tuple(b for b in sizes if b <= graph_bs), 1, frac, {
        "max_num_seqs": "model runner: min(max(KV tokens / context length · 512, 2048), 4096) — its floor",
        "max_num_batched_tokens": f"{where}._handle_gpu_memory_settings (chunked_prefill_size)",
        "mixed_steps": f"{where}.enable_mixed_chunk default False",
        "cuda_graph_batches": f"{where}._generate_cuda_graph_batch_sizes (cuda_graph_max_bs {graph_bs})",
        "block_tokens": f"{where}.page_size default 1",
        "memory_fraction": f"{where}._handle_gpu_memory_settings (mem_fraction_static)",
        "long_prefill_tokens": SGLANG_PREFILL, "host_overlap": SGLANG_HOST})


@dataclass(frozen=True)
class Engine:
    """What ``serve --engine`` changes: the kernels (``hw``), the scheduler (None: TensorRT-LLM's own path)."""
    name: str
    hw: object                       # the device with the framework's kernel terms
    kernels: object                  # machine.engines.EngineKernels
    scheduler: Scheduler | None
    runtime: str = "pytorch"         # TensorRT-LLM's executor (``step.runtime.RUNTIMES``): who launches the kernels
    tp: int = 1                      # tensor-parallel GPUs: the group its TP all-reduce runs over

    @property
    def release(self) -> str | None:
        """The framework release named (``serve --release``), None: its default."""
        return self.kernels.release

    def constants(self, base):
        """``base`` (the TensorRT-LLM-fitted ServingConstants) with the routed experts on the release's fused-MoE
        tables where it carries them (module docstring), under the engine's runtime (``step.runtime``)."""
        from .step.runtime import with_runtime
        return with_runtime(self._release_constants(base), self.runtime)

    def _release_constants(self, base):
        """``base`` with the routed experts on the release's fused-MoE tables where it carries them."""
        if not self.kernels.moe:
            return base
        key = (id(base), self.release, self.kernels.source)
        hit = _CONSTANTS.get(key)
        if hit is None or hit[0] is not base:      # one object per base and release: the engine's caches see it
            hit = _CONSTANTS[key] = (base, replace(base, moe_tables=True, source=f"{base.source}; routed experts on "
                                                   f"TensorRT-LLM {self.release}'s fused-MoE tables "
                                                   f"({self.kernels.source})"))
        return hit[1]

    def lines(self, offline: bool) -> list[str]:
        default = self.scheduler is None and self.release is None and self.runtime == "pytorch"
        note = default_note(self.hw) if self.name == default_for(self.hw) else None
        head = f"engine: {NAMES[self.name]}" + (" (default)" if default else f" ({note})" if note else "")
        out = [head + " — " + self.kernels.line()]
        if self.release is not None:
            dts = sorted({k.split(".", 1)[1] for k in self.kernels.moe})
            out.append(f"routed experts: on the {self.release} fused-MoE tables ({', '.join(dts)}); other dtypes "
                       f"on the H100-fitted expert constants" if dts else
                       f"routed experts: on the H100-fitted expert constants ({self.release}'s tables have no "
                       f"MoE layer here)")
        if self.runtime != "pytorch":
            from .step.runtime import CPP_LAUNCH_SOURCE, NAMES as RUNTIME_NAMES
            out.append(f"runtime: {RUNTIME_NAMES[self.runtime]} prices the host: every step eager, no CUDA graphs "
                       f"(NVIDIA's MLPerf harness's executor config), each kernel at the {CPP_LAUNCH_SOURCE}")
        if self.scheduler:
            out.append(self.scheduler.line())
            out.append(self.scheduler.host_line())
            if self.tp > 1:
                from .step.collectives import allreduce_line
                out.append(allreduce_line(self.hw, self.name, NAMES[self.name], self.tp))
            if offline:
                out.append(CARRIED.format(name=NAMES[self.name]))
        return out

    def to_dict(self, offline: bool) -> dict:
        d = {"name": self.name, "summary": self.lines(offline), "kernels": self.kernels.to_dict(),
             "scheduler": self.scheduler.to_dict() if self.scheduler else None,
             "host_constants": ("fitted on TensorRT-LLM H100 results" if self.scheduler is None
                                else CARRIED.format(name=NAMES[self.name])) if offline else None}
        if self.release is not None:           # the default's document stays as it was
            d.update(release=self.release, versions=list(self.kernels.versions),
                     routed_experts=("moe tables" if self.kernels.moe else "fitted expert constants"))
        if self.runtime != "pytorch":
            d["runtime"] = self.runtime
        return d


def check_memory_fraction(value) -> float | None:
    """``serve --memory-fraction`` as a float in (0, 1] (None: the engine's default), else one line."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 < value <= 1.0:
        raise IronlawError(f"--memory-fraction must be in (0, 1], got {value!r} (the engine's memory knob: vLLM "
                           f"gpu_memory_utilization, SGLang mem_fraction_static, TensorRT-LLM "
                           f"free_gpu_memory_fraction)")
    return float(value)


def check_async_scheduling(value, engine: str, pp: int = 1) -> bool:
    """The library's ``async_scheduling`` (``serve --async-scheduling``) as a bool, else one line. vLLM's
    SchedulerConfig.async_scheduling (``VLLM_HOST_ASYNC``): its scheduler, input preparation and output handling
    overlap the device's step. TensorRT-LLM's PyTorch executor and SGLang overlap theirs by default (the overlap
    scheduler; ``SGLANG_HOST``), so neither has the knob; vLLM refuses it with pipeline parallelism
    (vllm/engine/arg_utils.py EngineArgs.create_engine_config: "Async scheduling is not supported with
    pipeline-parallel-size > 1"), whose batch queue overlaps the host already (``VLLM_HOST_PP``)."""
    if not isinstance(value, bool):
        raise IronlawError(f"async_scheduling must be True or False, got {value!r}")
    if not value:
        return False
    if engine != "vllm":
        why = ("SGLang overlaps its scheduler with the device by default (ServerArgs.disable_overlap_schedule False: "
               "Scheduler.event_loop_overlap)" if engine == "sglang" else
               "TensorRT-LLM's PyTorch executor overlaps its host work with the device by default (its overlap "
               "scheduler)")
        raise IronlawError(f"--async-scheduling is vLLM's (SchedulerConfig.async_scheduling); {why}: give "
                           f"--engine vllm or drop it")
    if pp > 1:
        raise IronlawError(f"--async-scheduling with --pp {pp}: vLLM refuses async scheduling with "
                           f"pipeline-parallel-size > 1 (vllm/engine/arg_utils.py), whose batch queue already "
                           f"overlaps the host with the device: drop one")
    return True


def check_long_prefill(value, engine: str) -> int | None:
    """The library's ``long_prefill_token_threshold`` as a whole number of tokens ≥ 1 (None: the engine's
    default), else one line; an engine other than vLLM has no such knob and refuses it. vLLM's V1 scheduler gives
    each request at most that many new tokens a step (``VLLM_LONG_PREFILL``), so a longer prompt is prefilled over
    ⌈prompt / threshold⌉ steps, as many prompts at once as the step's token budget holds; its
    max_num_partial_prefills and max_long_partial_prefills (default 1) are the V0 scheduler's, and V1 refuses
    other values (vllm/engine/arg_utils.py EngineArgs: "Concurrent Partial Prefill")."""
    if value is None:
        return None
    if engine != "vllm":
        raise IronlawError(f"long_prefill_token_threshold is vLLM's scheduler's (the prompt tokens one request "
                           f"takes per step); {NAMES[engine]} has no such limit: give engine='vllm' or drop it")
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise IronlawError(f"long_prefill_token_threshold must be a whole number of tokens ≥ 1, got {value!r}")
    return int(value)


def trtllm_kv_fraction(engine: str, memory_fraction: float | None, kv_fraction: float | None,
                       default: float) -> float:
    """TensorRT-LLM's free_gpu_memory_fraction for a run given ``memory_fraction`` (``--memory-fraction``) and
    ``kv_fraction`` (``--kv-fraction``, the same knob by its trtllm-bench name; None: not given, ``default``): the
    one given; both given is refused, the default's value too. On another engine ``kv_fraction`` as given
    (``offline_kwargs`` refuses it there)."""
    if memory_fraction is None or engine != DEFAULT:
        return default if kv_fraction is None else kv_fraction
    if kv_fraction is not None:
        raise IronlawError(f"--memory-fraction {memory_fraction:g} and --kv-fraction {kv_fraction:g} both set "
                           f"TensorRT-LLM's free_gpu_memory_fraction: give one")
    return memory_fraction


def select(engine: str, hw, tp: int = 1, pp: int = 1, offline: bool = False, release: str | None = None,
           memory_fraction: float | None = None, runtime: str = "pytorch",
           long_prefill_tokens: int | None = None, async_scheduling: bool = False) -> Engine:
    """The framework ``engine`` (its ``release``'s kernels where one is named: ``machine.engines.RELEASES``) on
    ``hw`` (a catalog name or Hardware); ``memory_fraction`` (vLLM, SGLang): its scheduler's memory knob given
    (module docstring; TensorRT-LLM's is the KV fraction, ``trtllm_kv_fraction``); ``runtime`` (TensorRT-LLM):
    the executor that launches its kernels (``step.runtime``); ``long_prefill_tokens`` (vLLM): its
    long_prefill_token_threshold given (``check_long_prefill``); ``async_scheduling`` (vLLM): its host work
    overlapped with the device (``check_async_scheduling``)."""
    from ...machine import hardware
    from .step.runtime import check_runtime
    check_engine(engine)
    check_release(engine, release)
    check_runtime(runtime, engine)
    long_prefill_tokens = check_long_prefill(long_prefill_tokens, engine)
    async_scheduling = check_async_scheduling(async_scheduling, engine, pp)
    hw = hardware.get(hw) if isinstance(hw, str) else hw
    hw2, cov = _with_engine(hw, engine, release)
    if release is not None and not cov.own:
        raise no_release_tables(hw.name, engine, release)
    if engine == DEFAULT:
        return Engine(engine, hw2, cov, None, runtime)
    sched = vllm(hw, offline, pp) if engine == "vllm" else sglang(hw, tp, pp)
    sched = sched.given(memory_fraction=check_memory_fraction(memory_fraction), long_prefill_tokens=long_prefill_tokens)
    if async_scheduling:
        sched = replace(sched, host_overlap=True, sources={**sched.sources, "host_overlap": VLLM_HOST_ASYNC})
    return Engine(engine, hw2, cov, sched, tp=tp)


_ENGINE_HW: dict = {}
_CONSTANTS: dict = {}


def _with_engine(hw, engine: str, release: str | None):
    """``machine.engines.with_engine``, kept per device (by name, checked equal): the merged calibration is built
    once per process, and the law's caches keyed on the device see the same object on every prediction."""
    from ...machine import engines
    key = (hw.name, engine, release, engines.ENGINE_DIR)      # the folder too: a test may point it elsewhere
    hit = _ENGINE_HW.get(key)
    if hit is None or not (hit[0] is hw or hit[0] == hw):
        hit = _ENGINE_HW[key] = (hw, *with_engine(hw, engine, release))
    return hit[1], hit[2]


def no_release_tables(gpu: str, engine: str, release: str) -> IronlawError:
    """A prediction that names a release is priced on that release's kernels or not at all: which GPUs have them."""
    from ...machine.engines import ENGINE_DIR, path
    where = path(gpu, engine, release)
    have = sorted(p.stem for p in where.parent.glob("*.toml"))
    return IronlawError(f"--release {release}: {gpu} has no {NAMES[engine]} {release} kernel tables (no "
                        f"{where.relative_to(ENGINE_DIR.parents[2])}; {', '.join(have) or 'no GPU'} "
                        f"{'has' if len(have) < 2 else 'have'} them)")


def constants(eng: Engine, base):
    """``base`` (the TensorRT-LLM-fitted ServingConstants) under ``eng``'s scheduler: its CUDA-graph sizes, its
    mixing, its KV block, the memory it keeps from the KV cache ((1 − memory fraction) of the device: vLLM's beside
    its profiled activations, SGLang's holding them), its TP all-reduce on the framework's own measured curve
    (vLLM's, SGLang's; TensorRT-LLM's own all-reduce kernel is TensorRT-LLM's), and the expert formats its own tables time the fused-MoE layer in
    (``EngineKernels.moe``): a routed layer TP shards runs on that layer (``expertcarry.tp_layer``); under vLLM,
    MLA's per-head decode products in bf16 (``step.half_mla_bmm``); under vLLM and SGLang an MLA model's attention
    module priced on the framework's own module class where the device's calibration holds it
    (``step.mla_module``)."""
    s = eng.scheduler
    cap = eng.hw.memory[eng.hw.device_tier].capacity_bytes
    return replace(base, cuda_graph_batches=s.cuda_graph_batches, mixed_steps=s.mixed_steps,
                   prefill_cap_tokens=s.long_prefill_tokens, host_serial=not s.host_overlap,
                   piecewise_tokens=s.cuda_graph_batches[-1] if eng.name == "vllm" else 0,
                   block_tokens=s.block_tokens, reserve_bytes=(1.0 - s.memory_fraction) * cap, trtllm_allreduce=False,
                   vllm_allreduce=eng.name == "vllm", sglang_allreduce=eng.name == "sglang",
                   reserve_holds_workspace=eng.name == "sglang", chunked_kv_whole=False,
                   framework_moe=NAMES[eng.name], own_moe=moe_dtypes(eng.kernels.moe), mla_bmm_half=eng.name == "vllm",
                   mla_module=eng.name in ("vllm", "sglang"),
                   source=f"{base.source}; carried to {NAMES[eng.name]} (its own end-to-end results not fitted)")


def offline_kwargs(eng: Engine, max_batch, max_num_tokens, kv_fraction: float | None) -> dict:
    """``throughput.max_throughput``'s keywords under ``eng``: the scheduler's limits unless given, the KV cache
    all of what the memory fraction leaves (``constants``); ``kv_fraction`` given (not None) is refused."""
    if kv_fraction is not None:
        raise IronlawError(f"--kv-fraction is TensorRT-LLM's kv_cache_free_gpu_mem_fraction; {NAMES[eng.name]} sizes "
                           f"its KV cache from its memory fraction ({eng.scheduler.memory_fraction:g}): give "
                           f"--memory-fraction")
    s = eng.scheduler
    return {"max_batch": s.max_num_seqs if max_batch is None else max_batch,
            "max_num_tokens": s.max_num_batched_tokens if max_num_tokens is None else max_num_tokens,
            "kv_fraction": 1.0}


def check_budget(eng: Engine, prompt: int, max_batch, max_num_tokens, block_tokens: int) -> None:
    """A step token budget given (``--max-num-tokens``) that ``eng`` cannot run, refused in one line naming it.
    vLLM refuses a max_num_batched_tokens below max_num_seqs (vllm/config/scheduler.py,
    ``SchedulerConfig._verify_args``: a step carries a token of every running sequence). TensorRT-LLM prefills a
    prompt longer than the budget in chunks of whole KV-cache blocks (its long-sequence guide, "Chunked Context":
    max_num_tokens a multiple of tokens_per_block), ``block_tokens`` each, so a budget under one block holds no
    chunk. SGLang, whose chunks and pages are single tokens, runs any budget."""
    if max_num_tokens is None:
        return
    from .engine import whole_tokens
    budget = whole_tokens(max_num_tokens, "--max-num-tokens")
    whole_tokens(prompt, "--prompt")
    if eng.name == "vllm":
        seqs = eng.scheduler.max_num_seqs if max_batch is None else whole_tokens(max_batch, "--max-batch")
        if budget < seqs:
            given = f"--max-batch {max_batch}" if max_batch is not None else f"vLLM's max_num_seqs, {seqs}"
            raise IronlawError(f"--max-num-tokens {max_num_tokens} is fewer tokens than {given}: a step carries a "
                               f"token of every running sequence, and vLLM refuses a max_num_batched_tokens below "
                               f"max_num_seqs (SchedulerConfig); give --max-num-tokens "
                               f"{seqs} or more, or --max-batch {budget} or less")
    elif eng.scheduler is None and budget < min(prompt, block_tokens):
        raise IronlawError(f"--max-num-tokens {max_num_tokens} holds no chunk of a {prompt}-token prompt: "
                           f"TensorRT-LLM prefills it in chunks of whole KV-cache blocks ({block_tokens} tokens, "
                           f"tokens_per_block); give --max-num-tokens {block_tokens} or more")


def online_kwargs(eng: Engine, concurrency: int, chunk) -> dict:
    """``online.estimate``'s keywords under ``eng`` (a GPU: the engine step model): its scheduler's limits, CUDA
    graphs, mixing and memory fraction (``constants``), the KV cache all of what that fraction leaves, its chunked
    prefill (vLLM: max_num_batched_tokens per mixed step, decode tokens and the prompt chunk together,
    ``mixed_chunk``, re-derived at each concurrency a sweep visits: ``budget_chunk``; SGLang: prompts prefilled
    apart). A concurrency over its
    running-request limit, or a device the engine step model does not price, is an error."""
    from .engine import FITTED
    from .online import ENGINE, step_model
    s = eng.scheduler
    model = step_model(eng.hw)
    if model.name != ENGINE:
        raise IronlawError(f"--engine {eng.name}: {NAMES[eng.name]} is modelled on GPUs; {model.rule}")
    if concurrency > s.max_num_seqs:
        raise IronlawError(f"--concurrency {concurrency} exceeds {NAMES[eng.name]}'s {s.max_num_seqs} running "
                           f"requests at once ({s.sources['max_num_seqs']})")
    budget = chunk is None and s.mixed_steps          # the chunk is what each concurrency's decode tokens leave
    if budget:
        mixed_chunk(eng, concurrency)
    return {"chunk": chunk, "budget_chunk": budget, "constants": constants(eng, FITTED), "kv_fraction": 1.0,
            "max_batch": max(s.max_num_seqs, concurrency), "max_num_tokens": s.max_num_batched_tokens}


def mixed_chunk(eng: Engine, concurrency: int) -> int:
    """Prompt tokens a mixed step carries beside ``concurrency`` decode tokens: what they leave of the token budget.
    vLLM schedules its running requests first and chunks a waiting prompt to the budget left
    (vllm/v1/core/sched/scheduler.py: ``num_new_tokens = min(num_new_tokens, token_budget)``)."""
    s = eng.scheduler
    room = s.max_num_batched_tokens - concurrency
    if room < 1:
        raise IronlawError(f"--concurrency {concurrency}: its decode tokens fill {NAMES[eng.name]}'s "
                           f"{s.max_num_batched_tokens} tokens per step ({s.sources['max_num_batched_tokens']}), "
                           f"leaving no room for a prompt chunk")
    return room


def online_engine(engine: str, on, tp: int, release: str | None, memory_fraction: float | None, concurrency: int,
                  chunk, runtime: str = "pytorch", long_prefill_tokens: int | None = None,
                  async_scheduling: bool = False) -> tuple[Engine, dict]:
    """``serve``'s online run: the framework (``select``) and ``online.estimate``'s keywords under it — its
    scheduler's (``online_kwargs``), its release's and runtime's (``release_kwargs``), the memory fraction given
    (``memory_kwargs``)."""
    eng = select(engine, on, tp, release=release, memory_fraction=memory_fraction, runtime=runtime,
                 long_prefill_tokens=long_prefill_tokens, async_scheduling=async_scheduling)
    kw = memory_kwargs(eng, memory_fraction)
    if eng.scheduler is not None:
        kw.update(online_kwargs(eng, concurrency, chunk))
    elif eng.release is not None or eng.runtime != "pytorch":
        kw.update(release_kwargs(eng))
    return eng, kw


def memory_kwargs(eng: Engine, memory_fraction: float | None) -> dict:
    """``online.estimate``'s keywords for a memory fraction given (``--memory-fraction``): TensorRT-LLM's KV
    fraction (vLLM's and SGLang's knob is their scheduler's: ``select``); a device the engine step model does not
    price, whose steps no framework runs, refuses it in one line."""
    if memory_fraction is None:
        return {}
    from .online import ENGINE, step_model
    model = step_model(eng.hw)
    if model.name != ENGINE:
        raise IronlawError(f"--memory-fraction sets a serving engine's memory knob; {model.rule}")
    return {"kv_fraction": memory_fraction} if eng.scheduler is None else {}


def release_kwargs(eng: Engine) -> dict:
    """``online.estimate``'s keywords under TensorRT-LLM at a named release or runtime (a GPU: the engine step
    model): their constants (``Engine.constants``); a device the engine step model does not price is an error."""
    from .engine import FITTED
    from .online import ENGINE, step_model
    model = step_model(eng.hw)
    if model.name != ENGINE:
        what = f"--release {eng.release}" if eng.release is not None else f"--runtime {eng.runtime}"
        raise IronlawError(f"{what}: TensorRT-LLM is modelled on GPUs; {model.rule}")
    return {"constants": eng.constants(FITTED)}


def lines_of(doc: dict) -> list[str]:
    """The text lines of an ``Engine.to_dict`` document."""
    return list(doc["summary"])


def limits_source(eng: Engine, given_batch, given_tokens) -> str:
    """The Limits.source of a run under ``eng``'s scheduler."""
    if given_batch is not None and given_tokens is not None:
        return "given"
    return (f"{NAMES[eng.name]} defaults ({VLLM_SOURCE if eng.name == 'vllm' else SGLANG_SOURCE})"
            + (", partly given" if given_batch is not None or given_tokens is not None else ""))


@dataclass
class EngineThroughput(ThroughputEstimate):
    """A ThroughputEstimate that names its framework: ``to_dict()["engine"]`` adds ``name``, the kernels, the
    scheduler and where the host constants come from to the limits."""
    framework: Engine = None

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["engine"] = {**d["engine"], **self.framework.to_dict(offline=True)}
        return d

    def engine_lines(self) -> list[str]:
        return self.framework.lines(offline=True)


def max_throughput(spec: str, on, prompt: int, output: int, engine: str, kw: dict,
                   default_kv_fraction: float, release: str | None = None,
                   memory_fraction: float | None = None, runtime: str = "pytorch",
                   long_prefill_tokens: int | None = None, async_scheduling: bool = False) -> EngineThroughput:
    """``serve --max-throughput --engine [--release] [--runtime] [--memory-fraction]``: TensorRT-LLM's path as it
    is (on the release's kernels where one is named, its host under the runtime named; ``memory_fraction`` its KV
    fraction), or ``throughput.max_throughput`` with the framework's kernels, limits, CUDA graphs, mixing and
    memory fraction (module docstring)."""
    from . import throughput
    from ...machine import hardware
    from .step.runtime import check_runtime
    check_engine(engine)                           # before the device, as select checks them
    check_release(engine, release)
    check_runtime(runtime, engine)
    on = hardware.get(on) if isinstance(on, str) else on      # read once: select and the run share it
    memory_fraction = check_memory_fraction(memory_fraction)
    eng = select(engine, on, kw.get("tp", 1), kw.get("pp", 1), offline=True, release=release,
                 memory_fraction=memory_fraction, runtime=runtime, long_prefill_tokens=long_prefill_tokens,
                 async_scheduling=async_scheduling)
    given_kv = kw.get("kv_fraction")               # absent: not given
    kw = {**kw, "kv_fraction": trtllm_kv_fraction(engine, memory_fraction, given_kv, default_kv_fraction)}
    from .online import ENGINE, step_model        # every engine's offline run (trtllm-bench's too) is a GPU's
    model = step_model(eng.hw)
    if model.name != ENGINE:
        what = (f"--engine {eng.name}: {NAMES[eng.name]} is modelled on GPUs" if eng.scheduler is not None else
                "--max-throughput prices trtllm-bench's offline run on the serving engine, modelled on GPUs "
                "(without it, serve prices the device's own steps)")
        raise IronlawError(f"{what}; {model.rule}")
    check_budget(eng, prompt, kw.get("max_batch"), kw.get("max_num_tokens"), throughput.FITTED.block_tokens)
    if eng.scheduler is None and eng.release is None and eng.runtime == "pytorch":
        est = throughput.max_throughput(spec, on, prompt, output, **kw)
    elif eng.scheduler is None:
        est = throughput.max_throughput(spec, on if eng.release is None else eng.hw, prompt, output,
                                        constants=eng.constants(throughput.FITTED), **kw)
    else:
        given = (kw.get("max_batch"), kw.get("max_num_tokens"))
        from .engine import whole_tokens
        for value, flag in zip(given, ("--max-batch", "--max-num-tokens")):
            if value is not None:                  # before the scheduler derives its CUDA graphs from them
                whole_tokens(value, flag)
        kw2 = {**kw, **offline_kwargs(eng, *given, given_kv)}
        eng = replace(eng, scheduler=eng.scheduler.given(*given))    # its CUDA graphs as the limits given set them
        est = throughput.max_throughput(spec, eng.hw, prompt, output, constants=constants(eng, throughput.FITTED),
                                        **kw2)
        est.limits = replace(est.limits, source=limits_source(eng, *given))
    return EngineThroughput(**{f.name: getattr(est, f.name) for f in fields(est)}, framework=eng)
