"""The engine's constants (``ServingConstants``) and the device as the law sees it inside the engine
(``engine_hw``): the constants as its calibration, the device's kernel-fitted GEMM and attention terms in
place (``kernel_terms``) and, where the constants say so, its fitted MoE tables."""
from __future__ import annotations

from dataclasses import dataclass, replace

from ....core.errors import IronlawError
from ....core.gemmshape import gemv_m_half_max
from ....core.graph import dtype_bytes
from .moe import GROUPED_GEMM, fitted_moe, scaled_moe
from .mla_module import PREFIX as MODULE_PREFIX


# the per-core speed figure of the CPU the engine constants were fitted on (DGX H100: 2 × Xeon Platinum 8480C): the
# host time of one torch.nn.Linear forward, 13.48 us, NVIDIA/TransformerEngine issue #2053 (machine/catalog/h100.toml
# [host] linear_s)
FIT_HOST_LINEAR_S = 13.48e-6


# the published TensorRT-LLM runs' cuda_graph_config batch sizes (enable_padding)
CUDA_GRAPH_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 1024, 2048, 4096, 8192)


@dataclass(frozen=True)
class ServingConstants:
    gemm_eta: float            # top fraction of the matrix peak a GEMM reaches
    gemm_m_half: float         # tokens (GEMM M) at which a GEMM reaches half of gemm_eta
    memory_eta: float          # fraction of HBM bandwidth a streaming kernel reaches
    attention_eta: float       # fraction of the matrix peak FlashAttention-style kernels reach
    step_s: float              # fixed runtime cost per engine step (scheduler, sampler, host), seconds
    source: str
    expert_gemm_eta: float | None = None  # fraction of the matrix peak the routed experts' grouped GEMM runs
                                          # its FLOPs at, whatever its rows per expert (None: gemm_eta)
    reserve_bytes: float = 0.0  # runtime memory per GPU beside weights, workspace and KV (CUDA context and
                                # graph pools, communication buffers): not free for the KV cache
    launch_s: float = 0.0       # host seconds per kernel an eager (not CUDA-graph) step launches
    expert_stream_eta: float | None = None  # fraction of HBM bandwidth the grouped GEMM streams the touched
                                            # experts' weights at (None: memory_eta)
    moe_tables: bool = False    # the routed experts on the device's fitted MoE kernel tables where it has them
    expert_layer_scale: float | None = None  # a level constant: an expert-parallel routed layer on the device's
                                             # measured MoE layer (its shape in rows, EP and dtype), its time
                                             # times this (``expertcarry.measured_layer``); None: the expert η
    cuda_graph_batches: tuple = CUDA_GRAPH_BATCHES  # the decode batches the engine captures as CUDA graphs
    mixed_steps: bool = True    # a step carries decode and prompt tokens together (chunked prefill mixed into
                                # the decode batch); False: the engine runs a prompt's chunk as a batch of its
                                # own and the decode batch after it (SGLang without --enable-mixed-chunk)
    trtllm_allreduce: bool = True  # TP all-reduces on TensorRT-LLM's own all-reduce op where the device
                                   # measures it (``trtllm_allreduce``); False: NCCL's curve everywhere
    vllm_allreduce: bool = False   # TP all-reduces on vLLM's own all-reduce where the device measures it
                                   # (``own_allreduce``)
    sglang_allreduce: bool = False  # TP all-reduces on SGLang's own all-reduce where the device measures it
                                    # (``own_allreduce``)
    block_tokens: int = 32      # KV-cache block (page) in tokens: a request reserves whole blocks
                                # (TensorRT-LLM KvCacheConfig.tokens_per_block default 32)
    host_step_s: float = 0.0    # the executor's host seconds per step on the fit's host CPU (scheduling, input
                                # preparation, sampling, response handling: Python), overlapped with the device
    host_sequence_s: float = 0.0  # … and per request the step carries (the loops over scheduled requests)
    host_prompt_s: float = 0.0  # … and per prompt the step admits (a context request's own setup and first token)
    host_linear_s: float = FIT_HOST_LINEAR_S  # the fit host's per-core speed figure (``hostcpu.HostCPU.linear_s``):
                                              # another host runs the same work in host_* × its linear_s / this
    piecewise_tokens: int = 0   # a step with prompt tokens of up to this many tokens replays piecewise CUDA graphs
                                # around its attention (vLLM V1: its largest capture size); 0: it runs eagerly
    kernel_latency_share: float = 0.0  # the share of a kernel-table class's fixed seconds per call (its fitted
                                       # ``latency_s``) a kernel still pays inside the engine's step (``kernel_terms``)
    reserve_holds_workspace: bool = False  # the runtime reserve (``reserve_bytes``) holds the activation workspace
                                           # too: the KV cache is what weights and the reserve leave (SGLang)
    expert_serial: float = 1.0  # share of min(weights' streaming, FLOPs) the grouped GEMM pays on top of the larger
                                # (1: the one after the other, FITTED's form; 0: overlapped, as a pipelined kernel
                                # streams one tile's weights beside another's MMAs: ``efficiency.composed``)
    pad_on_dummy: bool = False  # under attention DP, a CUDA-graph padded step's padding rows all on the k experts of
                                # the one dummy request TensorRT-LLM pads with (``parallel.dummy_padding``), not
                                # spread like real tokens: a what-if (FITTED's expert η were fitted without it)
    chunked_kv_whole: bool = True  # a chunked-attention layer (Llama 4) keeps the KV of every token of the request,
                                   # not of its chunk alone (TensorRT-LLM: ``engine.kv_sequence_bytes``); False:
                                   # of the chunk alone, as the analytic cache counts it (vLLM, SGLang: as before)
    cuda_graphs: bool = True    # a decode-only step replays a captured CUDA graph (padded to ``cuda_graph_batches``);
                                # False: every step runs eagerly on its own batch (TensorRT-LLM's C++ executor as
                                # NVIDIA's MLPerf harness runs it: ``runtime``)
    runtime: str = "pytorch"    # the executor that launches the step's kernels (``runtime.RUNTIMES``): its
                                # host cost per kernel is ``launch_s``
    host_serial: bool = False   # the executor's per-step Python work (host_step_s, host_sequence_s, host_prompt_s)
                                # runs between the device's steps, not beside them (vLLM V1 without async
                                # scheduling: ``frameworks.VLLM_HOST``); False: overlapped (TensorRT-LLM's and
                                # SGLang's overlap schedulers). Kernel launches overlap the device either way
    prefill_cap_tokens: int = 0  # prompt tokens one request prefills in a step at most (vLLM's
                                 # long_prefill_token_threshold: ``frameworks.Scheduler.long_prefill_tokens``);
                                 # 0: none, a prompt is chunked only where the step's token budget runs out
    framework_moe: str = ""     # vLLM, SGLang: the framework whose own kernel tables time its fused-MoE layer
    own_moe: tuple = ()         # … the expert formats they time it in (``machine.engines.EngineKernels.moe``): a
                                # routed layer TP shards runs on it (``expertcarry.tp_layer``); (): none
    mla_bmm_half: bool = False  # MLA's per-head decode products (``attention.q_absorb``, ``attention.v_up``) in
                                # bf16 whatever the checkpoint's dtype (vLLM: ``checkpoint.half_mla_bmm``)
    mla_module: bool = False    # an MLA model's attention module priced whole on the framework's module class where
                                # the device's calibration holds it (vLLM, SGLang: ``step.mla_module``)

    def grouped_gemm(self) -> dict:
        """The grouped GEMM's own table: flat η on its FLOPs, its weights' own streaming η, ``expert_serial`` of the
        shorter of the two paid after the longer."""
        eta_c = self.gemm_eta if self.expert_gemm_eta is None else self.expert_gemm_eta
        eta_w = self.memory_eta if self.expert_stream_eta is None else self.expert_stream_eta
        if not 0.0 <= self.expert_serial <= 1.0:
            raise IronlawError(f"expert_serial must be a share in [0, 1], got {self.expert_serial:g}")
        return {"eta_max": eta_c, "m_half": 0.0, "nk_half": 0.0, "streamed": eta_w,
                "serial": self.expert_serial}

    def gemm_table(self, hw, dtype: str) -> dict:
        """The constants' GEMM table on ``hw`` in ``dtype`` (a device or dtype without kernel tables):
        η = gemm_eta · M/(M + m_half), ``gemm_m_half`` bounded by the small-M rule the kernel-fitted classes obey
        (``gemmshape.gemv_m_half_max``): a GEMV streams its weights at ``memory_eta`` of the device memory's
        bandwidth, and a device with few FLOPs per byte does not bind it on its matrix units."""
        bw_Bps = hw.memory[hw.device_tier].bw_Bps
        top = gemv_m_half_max(hw.peak_flops[dtype], bw_Bps, self.gemm_eta, self.memory_eta, dtype_bytes(dtype))
        return {"eta_max": self.gemm_eta, "m_half": min(self.gemm_m_half, top), "nk_half": 1.0}

    def calibration(self, hw) -> dict:
        grouped = self.grouped_gemm()
        return {"source": self.source, "fitted": ("TensorRT-LLM perf-overview.md H100 cells",),
                "matmul": {dt: self.gemm_table(hw, dt) for dt in hw.peak_flops}, "kernel": {GROUPED_GEMM: grouped},
                "compute": {"attention": self.attention_eta},
                "memory": {"streamed": self.memory_eta, "produced": self.memory_eta},
                "latency_s": {"default": 0.0}}


def engine_hw(hw, constants: ServingConstants):
    """``hw`` as the law sees it inside a serving engine: the constants as its calibration, no launch cost, and
    the device's own kernel-fitted GEMM and attention terms where its calibration has them (``kernel_terms``)."""
    from ....machine.calibration import Calibration
    table = kernel_terms(constants.calibration(hw), hw.calibration, constants.kernel_latency_share)
    if constants.moe_tables:
        table["kernel"] = {**table["kernel"], **scaled_moe(fitted_moe(hw), constants.expert_layer_scale)}
    return replace(hw, op_latency_s=0.0, calibration=Calibration.of(table))


def kernel_terms(table: dict, cal, latency_share: float = 0.0) -> dict:
    """``table`` (the engine constants' calibration) with the device's terms fitted on measured kernels
    (``ironlaw calibrate --kernels``): each GEMM dtype whose shape table names its kernel data
    (``[calibration.provenance."gemm <dtype>"]``) replaces the constants' GEMM η, and the attention kernel
    classes (``gemmshape.attention_kernel``) price the attention ops they name in place of ``attention_eta``.
    Their fixed ``latency_s`` counts at ``latency_share`` (``ServingConstants.kernel_latency_share``): timed
    alone, a kernel pays its launch, prologue, tail and (FP8) activation quantization each call; inside the engine
    the step replays a CUDA graph whose kernels start under their predecessors' tails (programmatic dependent
    launch, TensorRT-LLM's default from Hopper on) and the quantization is fused into the norm before, so a step
    pays only part of that fixed cost per kernel — an engine constant no kernel table times (fitted on the H100
    cells by benchmarks/trtllm_h100.py): at 0 every dense cell's step is priced as if its kernels ran back to
    back with no gap, at 1 as if each ran alone. A whole MLA module's class (``mla_module``) keeps its fixed
    seconds whole: its table timed the module's kernels replayed together as one CUDA graph, as the step runs them."""
    if cal is None or not cal.provenance:
        return table
    def own(p: dict) -> dict:
        return {k: (v * latency_share if k == "latency_s" else v) for k, v in p.items()}
    gemm = {dt: own(p) for dt, p in cal.shape("matmul").items() if f"gemm {dt}" in cal.provenance}
    attention = {k: own(p) for k, p in cal.kernel.items() if k.startswith("attention_") and "eta_max" in p}
    attention.update({k: p for k, p in cal.kernel.items() if k.startswith(MODULE_PREFIX) and "eta_max" in p})
    if not gemm and not attention:
        return table
    return {**table, "matmul": {**table["matmul"], **gemm}, "kernel": {**table["kernel"], **attention},
            "fitted": tuple(table["fitted"]) + tuple(k for k in cal.provenance if not k.startswith("moe "))}
