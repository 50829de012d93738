"""One engine step of in-flight batching as a Graph: the batch's decode tokens and the prompt tokens admitted.

    linear layers, norms, activations   one pass over all T tokens of the step (decode + prompt): the weights
                                        are read once per step, the GEMMs run with M = T
    attention*.decode                   each generating sequence reads its own KV cache (``context`` tokens;
                                        every attention op of the model: global, windowed, chunked)
    attention*.prefill                  the prompt tokens' causal pairs (a chunk of a prompt of ``prompt``
                                        tokens carries its share of the prompt's pairs) and their KV writes
    lm_head, final_norm                 the decode tokens and the last token of each prompt finished here

Quantized checkpoints as ModelOpt writes them (the published TensorRT-LLM table ran them): the linear layers
in ``dtype`` (fp8, fp4), the token embedding and the LM head in bf16 (hf_quant_config exclude_modules
["lm_head"]; embeddings are not quantized), the activations between kernels and the TP all-reduce in bf16.
The engine's constants (``ServingConstants``) become the device's calibration for the law: a GEMM's η follows
its M (``gemmshape.gemm_eta``), attention its own η, every byte the HBM streaming η; no per-op launch cost
inside the law. The routed experts' grouped GEMM (``GROUPED_GEMM``) is a kernel class of its own: it streams
the weights of every expert the step's tokens touch, once per step, at its own fraction of the HBM bandwidth
(``expert_stream_eta``), and runs their tokens' FLOPs at its own flat fraction of the matrix peak
(``expert_gemm_eta``; fitted on H100 FP8, carried to another GPU and dtype by the share of its datasheet peak its
measured GEMM kernels sustain: ``expertcarry``), the one after the other (serial share 1: time = weights/(BW·η_w) + FLOPs/(peak·η_c)), so
below peak·η_c / (2·BW·η_w) rows per expert (one-byte weights) its time is mostly the weights' streaming and
follows the HBM bandwidth of the device. With constants that say so (``moe_tables``) and where the device's
own calibration holds the MoE layer fitted on measured kernel tables (``moe_grouped_gemm.<dtype>`` and
``moe_rows.<dtype>``, measure/calibrate/moefit.py), the routed experts' GEMMs run at that table instead (its
compute and streaming η, its launch latency) and the routed rows' permute, activation and combine
(``MOE_ROWS``) at its fraction of the HBM bandwidth. The constants fitted end to end on H100 (``FITTED``) keep
their own expert terms: they were fitted together with them; swapping the tables in without refitting the rest
moves the H200 MoE cells from a 13.0% to a 36.9% median, and refitting the rest with them takes H100's
leave-one-model-out to 23–33% (docs/accuracy.md, "The routed experts on the kernel tables, cell by cell"). On the
tables' rows class, the combine of the all-gather exchange writes a row for every pooled token, as the class was
fitted (``parallel.pooled_combine``). Those cells all ran their MoE
layers under expert parallelism and attention DP; where the layer runs on one GPU (TP 1) the engine prices the
routed experts on the device's measured layer instead (``expertcarry.one_gpu_layer``); with a level constant
(``expert_layer_scale``, a what-if FITTED leaves off) an expert-parallel layer runs on it too, its time times the
constant (``expertcarry.measured_layer``). A decode-only step
replays a CUDA graph; a step that carries prompt tokens runs eagerly, the host launching its kernels one by
one, and lasts at least ``launches · launch_s`` (``host_floor_s``). Under the overlap scheduler the host's own
work for a step (its launches, the executor's fixed and per-request Python) runs beside the device's step, and the
step lasts the longer of the two (``HostStep``, on the device's named host CPU). The tensor-parallel all-reduces run on
TensorRT-LLM's own all-reduce op where the device measures it (``trtllm_allreduce``), NCCL's curve elsewhere.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, replace

from ...core.errors import IronlawError
from ...core.gemmshape import attention_kernel, attention_kernel_parts, gemv_m_half_max
from ...core.graph import Graph, Op, attention_dtype, dtype_bytes
from ..precision import WEIGHT_ONLY_MOE, moe_recipe
from .kvcache import default_kv_dtype


GROUPED_GEMM = "moe_grouped_gemm"      # the kernel class of the routed experts' GEMMs (one GEMM per expert)
MOE_ROWS = "moe_rows"                  # the routed rows' own kernels: permute, activation, combine
MOE_ROUTER = "moe_router"              # the router's top-k where it runs on PyTorch (``on_router``)
ROUTED_ROLES = ("permute", "activation", "combine")    # … by op role (``attrs["role"]``), in module "experts"
BF16_ROLES = ("head", "embedding")     # the ops whose weights a ModelOpt checkpoint keeps in bf16


def is_head(op: Op) -> bool:
    """An op of the step's head, run on the head tokens only: the output layer (role ``head``) and the norm
    before it (the one norm outside the layers, whose ops the builder marks ``per_layer``)."""
    role = op.attrs.get("role")
    return role == "head" or (role == "norm" and not op.attrs.get("per_layer"))
HALF = "bf16"
TRTLLM_TABLE_HIDDEN = 8192             # widest hidden size TensorRT-LLM's all-reduce strategy table covers
QUANTIZED_MATMUL_DTYPES = ("fp8", "fp4", "int8", "int4")
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
    from ...machine.calibration import Calibration
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
    back with no gap, at 1 as if each ran alone."""
    if cal is None or not cal.provenance:
        return table
    def own(p: dict) -> dict:
        return {k: (v * latency_share if k == "latency_s" else v) for k, v in p.items()}
    gemm = {dt: own(p) for dt, p in cal.shape("matmul").items() if f"gemm {dt}" in cal.provenance}
    attention = {k: own(p) for k, p in cal.kernel.items() if k.startswith("attention_") and "eta_max" in p}
    if not gemm and not attention:
        return table
    return {**table, "matmul": {**table["matmul"], **gemm}, "kernel": {**table["kernel"], **attention},
            "fitted": tuple(table["fitted"]) + tuple(k for k in cal.provenance if not k.startswith("moe "))}


def fitted_moe(hw) -> dict:
    """The device calibration's MoE kernel tables fitted on measured kernel tables (module docstring)."""
    kernels = hw.calibration.kernel if hw.calibration is not None else {}
    return {k: dict(v) for k, v in kernels.items() if k.startswith((GROUPED_GEMM + ".", MOE_ROWS + ".", MOE_ROUTER + "."))}


def scaled_moe(kernels: dict, scale: float | None) -> dict:
    """The measured MoE layer's classes (``fitted_moe``) with their time times ``scale`` (None or 1: as they
    are): every η of the class divided by it, its fixed seconds multiplied (``expertcarry.measured_layer``)."""
    if scale is None or scale == 1.0:
        return kernels
    if not scale > 0.0:
        raise IronlawError(f"expert_layer_scale must be a positive factor, got {scale!r}")
    eta = ("eta_max", "streamed", "memory")
    return {k: {n: (v / scale if n in eta else v * scale if n in ("latency_s", "expert_s", "token_s") else v)
                for n, v in p.items()}
            for k, p in kernels.items()}


def moe_kernels(hw, dtype: str, recipe: str | None = None) -> tuple[str, str | None, str | None]:
    """(the routed GEMMs' kernel class, the routed rows' one or None, the weight format they stand in for or None)
    for experts in ``dtype`` on ``hw``; a weight format of its own (``recipe``: ``precision.moe_recipe``,
    block-scaled FP8) on its classes where ``hw`` has them fitted, else on the dtype's, the third entry then naming
    the format they are carried to (``grouped`` marks the ops, ``law.coverage`` states it)."""
    fitted = fitted_moe(hw)
    carried = recipe
    if recipe and f"{GROUPED_GEMM}.{recipe}" in fitted:
        dtype, carried = recipe, None
    gemm, rows = f"{GROUPED_GEMM}.{dtype}", f"{MOE_ROWS}.{dtype}"
    return (gemm, rows if rows in fitted else None, carried) if gemm in fitted else (GROUPED_GEMM, None, None)


def with_kv(g: Graph, kv_dtype: str | None) -> Graph:
    """``g`` with its KV cache in ``kv_dtype``, or where that is None in the checkpoint's default for the model's
    dtype (``default_kv_dtype``: FP8 for 8- and 4-bit floats)."""
    kv = kv_dtype or default_kv_dtype(g.dtype)
    return g if kv == g.dtype else with_kv_dtype(g, kv)


def scale_class(g: Graph, cls: str, factor: float) -> Graph:
    """``g`` with the traffic and footprint of one byte class (``"kv_cache"``, ``"weights"`` …) times ``factor``
    (``g`` itself at 1)."""
    if factor == 1.0:
        return g
    out = copy.copy(g)
    out.ops = []
    for op in g.ops:
        o = copy.copy(op)
        o.bytes = {k: (v * factor if k == cls else v) for k, v in op.bytes.items()}
        out.ops.append(o)
    out.footprint = {k: (v * factor if k == cls else v) for k, v in g.footprint.items()}
    out.meta = dict(g.meta)
    return out


def with_kv_dtype(g: Graph, kv_dtype: str) -> Graph:
    """KV cache stored in ``kv_dtype`` (fp8 KV halves its traffic and footprint against bf16), attention run in
    ``graph.attention_dtype``."""
    out = copy.copy(scale_class(g, "kv_cache", dtype_bytes(kv_dtype) / dtype_bytes(g.dtype)))
    att = attention_dtype(g.dtype, kv_dtype)
    out.ops = [_with_dtype(op, att, kv_dtype) if op.kind == "attention" else op for op in out.ops]
    return out


def _with_dtype(op, dtype: str, kv_dtype: str):
    """An attention op computing in ``dtype`` on a cache held in ``kv_dtype``."""
    o = copy.copy(op)
    o.dtype = dtype
    o.attrs = {**op.attrs, "kv_dtype": kv_dtype}
    parts = attention_kernel_parts(str(op.attrs.get("kernel", "")))
    if parts is not None:                                   # its kernel class names both dtypes
        o.attrs["kernel"] = attention_kernel(parts[0], dtype, kv_dtype, parts[1])
    return o


@dataclass(frozen=True)
class StoredExperts:
    """The routed experts' weights as the checkpoint stores them, narrower than the engine's dtype (gpt-oss: MXFP4,
    4.25 bits a weight, their GEMMs weight-only in the engine's dtype after dequantizing), and where that came from.
    The engine stores them so where no --dtype is given (``checkpoint_experts``); a --dtype given stores every
    weight in it, as ``analyze`` does (``workloads.transformer.in_checkpoint_format``)."""
    dtype: str
    source: str


def checkpoint_experts(spec: str, hw, dtype: str | None) -> StoredExperts | None:
    """The routed experts as ``spec``'s checkpoint stores them when ``dtype`` (the user's --dtype) is None and the
    checkpoint stores them narrower than the model's dtype; None otherwise (a dtype given wins)."""
    if dtype is not None:
        return None
    from .. import workloads
    meta = workloads.resolve(workloads.Request(spec, phase="decode", batch=1, seq=1,
                                               device="cuda" if hw.kind == "gpu" else "cpu")).meta
    if not meta.get("expert_math_dtype"):
        return None
    return StoredExperts(meta["expert_weight_dtype"], meta["expert_weight_source"])


def build(spec: str, phase: str, batch: int, seq: int, dtype: str, kv_dtype: str, hw,
          experts: StoredExperts | None = None) -> Graph:
    """The workload graph of one phase in ``dtype``, its KV cache in ``kv_dtype``, its routed experts' weights
    stored as ``experts`` says where given (``StoredExperts``)."""
    from .. import workloads
    from ..workloads.transformer import with_checkpoint_experts
    g = workloads.resolve(workloads.Request(spec, phase=phase, batch=int(batch), seq=int(seq), dtype=dtype,
                                            device="cuda" if hw.kind == "gpu" else "cpu"))
    if g.phase != phase or "kv_cache_bytes" not in g.meta:
        raise IronlawError(f"{spec}: serving needs a decoder LLM with prefill and decode phases")
    if experts is not None:
        g = with_checkpoint_experts(g, experts.dtype, experts.source)
    return with_kv_dtype(g, kv_dtype)


def routed_weight_bytes(meta: dict, dtype: str) -> float:
    """Bytes one routed expert weight is stored in: the checkpoint's format where the graph keeps it
    (``StoredExperts``: gpt-oss MXFP4, 4.25 bits), else ``dtype``'s."""
    return dtype_bytes(meta.get("expert_weight_dtype", dtype))


def stored_weight_bytes(meta: dict, dtype: str) -> float:
    """The model's weights in ``dtype``, its routed experts as stored (``routed_weight_bytes``), the ModelOpt
    checkpoint's bf16 embedding and LM head left out (``unquantized_weight_bytes``)."""
    return float(meta["params"]) * stored_bytes_per_param(meta, dtype)


def stored_bytes_per_param(meta: dict, dtype: str) -> float:
    """Mean bytes per weight of the model as stored (``stored_weight_bytes``): ``dtype``'s, less the routed experts'
    share of what their narrower format saves (exactly ``dtype``'s for any other model)."""
    share = float(meta.get("routed_expert_weights", 0.0)) / float(meta["params"])
    return dtype_bytes(dtype) - share * (dtype_bytes(dtype) - routed_weight_bytes(meta, dtype))


def expert_weights(meta: dict) -> dict:
    """The routed experts' weight dtype, its source and, stored narrower than they compute in, their math dtype,
    where the checkpoint states a format for them (gpt-oss): the serve output's fields."""
    return {k: meta[k] for k in ("expert_weight_dtype", "expert_weight_source", "expert_math_dtype") if k in meta}


def scaled(op, factor: float, name: str | None = None):
    """``op`` doing ``factor`` times its work (FLOPs and traffic) on the same weights."""
    o = copy.copy(op)
    o.name = name or op.name
    o.flops = op.flops * factor
    o.vector_flops = op.vector_flops * factor
    o.bytes = {k: (v if k == "weights" else v * factor) for k, v in op.bytes.items()}
    o.bytes_written = op.bytes_written * factor
    if "cache_writes" in op.attrs:               # the tokens an attention writes to the cache (a prefill's, a decode's)
        o.attrs = {**op.attrs, "cache_writes": op.attrs["cache_writes"] * factor}
    return o


def modelopt(op, dtype: str):
    """An op as a ModelOpt checkpoint runs it: activations in bf16; embedding and LM head weights in bf16."""
    by = dtype_bytes(dtype)
    if by >= dtype_bytes(HALF):
        return op
    o = copy.copy(op)
    o.bytes = dict(op.bytes)
    if "activations" in o.bytes:
        o.bytes["activations"] = op.bytes["activations"] * dtype_bytes(HALF) / by
    o.bytes_written = op.bytes_written * dtype_bytes(HALF) / by
    if op.attrs.get("role") in BF16_ROLES:
        o.dtype = HALF
        if "weights" in o.bytes:
            o.bytes["weights"] = op.bytes["weights"] * dtype_bytes(HALF) / by
    return o


def blocked_rows(op, cal, gathered_rows, slots: float):
    """A routed GEMM on a grouped-GEMM class that pads each expert's rows to an M block (its ``m_block``,
    ``core.routing.M_BLOCKS``: the fit counted the padded rows' FLOPs, ``moefit.terms``) with its compute η scaled by
    rows / padded rows (``eta_scale``): R = its FLOPs / (2·N·K), spread over the U experts whose weights it streams,
    the block picked from the ``gathered_rows`` token-expert rows over the rank's ``slots`` experts; any other op as
    it is."""
    rule = ((cal.kernel or {}).get(op.attrs.get("kernel", ""), {}) if cal is not None else {}).get("m_block")
    if not rule or op.kind != "matmul" or op.attrs.get("expert") != "routed" or "nk" not in op.attrs:
        return op
    import numpy as np

    from ...core.routing import block_m, padded_rows
    from ...core.weightonly import elem_bytes
    n, k = (float(v) for v in op.attrs["nk"])
    rows = np.asarray(op.flops, float) / (2.0 * n * k)
    touched = np.asarray(op.bytes.get("weights", 0.0), float) / (n * k * elem_bytes(op))
    pad = padded_rows(rows, touched, block_m(rule, np.maximum(gathered_rows, 1.0), max(slots, 1.0)))
    o = copy.copy(op)
    o.eta_scale = op.eta_scale * np.where(pad > 0, rows / np.maximum(pad, 1e-30), 1.0)
    return o


def on_table_rows(op, hw, meta: dict, tokens):
    """A routed GEMM on a measured MoE class whose grouped GEMM pads each expert's rows to an M block
    (``blocked_rows``) for the step's ``tokens`` picking ``experts_per_token`` experts each over the rank's
    expert slots; any other op as it is."""
    if op.kind != "matmul" or op.attrs.get("expert") != "routed":
        return op
    import numpy as np

    from ..dispatcher import local_experts
    gathered = np.asarray(tokens, float) * float(meta.get("experts_per_token", 0.0))
    return blocked_rows(op, hw.calibration, gathered, local_experts(meta))


def on_router(op, hw, meta: dict, gemm: str):
    """The router's top-k (``moe_topk``) on the measured layer's router class (``moe_router.<dtype>``, the dtype of the
    routed GEMMs' class ``gemm``) where the device's calibration holds one and the model routes on PyTorch's top-k
    (``core.routing.torch_router``: more experts or a larger top-k than the release's router kernel takes;
    measure/calibrate/moefit.py, ``per_router``); any other op as it is."""
    if op.name != "moe_topk" or "." not in gemm or hw.calibration is None:
        return op
    from ...core.routing import torch_router
    kernel = f"{MOE_ROUTER}.{gemm.rsplit('.', 1)[1]}"
    if kernel not in hw.calibration.kernel or not torch_router(meta.get("experts", 0), meta.get("experts_per_token", 0)):
        return op
    o = copy.copy(op)
    o.attrs = {**op.attrs, "kernel": kernel}
    return o


def grouped(op, gemm: str = GROUPED_GEMM, rows: str | None = None, carried: str | None = None):
    """A routed expert's matmul runs as TensorRT-LLM's grouped GEMM (its own kernel class, ``gemm``); with a
    fitted MoE layer the routed rows' permute, activation and combine run as ``rows``. ``carried``: the weight
    format (``moe_kernels``) whose classes the device lacks, these standing in for them: each op names the class
    it stands in for (``attrs["kernel_for"]``, read by ``law.coverage``). On a class fitted on weight-only rows
    (``precision.WEIGHT_ONLY_MOE``: gpt-oss's MXFP4 experts) the op's dequantization FLOPs (``core.weightonly``)
    leave its vector work: the measured layer's time holds them. Its combine writes a row for every token the ranks
    pool under attention DP (``attrs["pooled_write"]``), as the rows class was fitted."""
    if op.kind == "matmul" and op.attrs.get("expert") == "routed":
        kernel = gemm
    elif rows and op.module == "experts" and op.attrs.get("role") in ROUTED_ROLES:
        kernel = rows
    else:
        return op
    o = copy.copy(op)
    o.attrs = {**op.attrs, "kernel": kernel}
    if kernel == rows and op.attrs.get("role") == "combine":
        o.attrs["pooled_write"] = True          # fitted at the layer's pooled tokens (``parallel.pooled_combine``)
    if carried:
        o.attrs["kernel_for"] = f"{kernel.rsplit('.', 1)[0]}.{carried}"
    elif kernel.rsplit(".", 1)[-1] in WEIGHT_ONLY_MOE and "dequant_flops" in op.attrs:
        o.vector_flops = op.vector_flops - op.attrs["dequant_flops"]    # the measured layer times its dequantization
    return o


def unquantized_weight_bytes(meta: dict, dtype: str) -> float:
    """Extra bytes of a ModelOpt checkpoint's bf16 embedding and LM head over ``dtype``."""
    by = dtype_bytes(dtype)
    if by >= dtype_bytes(HALF):
        return 0.0
    return 2.0 * meta["vocab"] * meta["hidden"] * (dtype_bytes(HALF) - by)


def step_graph(spec: str, hw, dtype: str, kv_dtype: str, *, gemm_tokens: int, decode: int, context: int,
               prompt: int, prefill_tokens: float, head_tokens: float, moe_tables: bool = False,
               experts: StoredExperts | None = None) -> Graph:
    """The step's graph on one attention rank (unsharded): see the module docstring; the routed experts' weights
    stored as ``experts`` says where given."""
    T = max(int(round(gemm_tokens)), 1)
    tok = build(spec, "decode", T, 1, dtype, kv_dtype, hw, experts)
    parts: dict[str, list] = {op.name: [] for op in tok.ops if op.kind == "attention"}
    if decode >= 1:                                  # every attention op (global, windowed, chunked) of the model
        for op in build(spec, "decode", decode, context, dtype, kv_dtype, hw).ops:
            if op.kind == "attention":
                parts[op.name].append(scaled(op, 1.0, op.name + ".decode"))
    if prefill_tokens > 0:
        for op in build(spec, "prefill", 1, prompt, dtype, kv_dtype, hw).ops:
            if op.kind == "attention":
                parts[op.name].append(scaled(op, prefill_tokens / prompt, op.name + ".prefill"))
    ops = []
    for op in tok.ops:
        if op.kind == "attention":
            ops.extend(parts[op.name])
        elif is_head(op):
            ops.append(scaled(op, head_tokens / T))
        else:
            ops.append(op)
    kernels = moe_kernels(hw, dtype, moe_recipe(tok)) if moe_tables else (GROUPED_GEMM, None)
    ops = [on_router(on_table_rows(grouped(modelopt(op, dtype), *kernels), hw, tok.meta, T), hw, tok.meta, kernels[0])
           for op in ops]
    meta = dict(tok.meta)
    meta.update(tokens=T, decode_sequences=decode, prefill_tokens=prefill_tokens)
    return Graph(f"{spec} step: {decode} decoding + {prefill_tokens:.0f} prompt tokens", "decode", dtype, ops,
                 footprint=dict(tok.footprint), meta=meta)


def launches(g: Graph) -> int:
    """Kernels one step of ``g`` launches: every op once per layer it runs in."""
    return int(sum(op.count for op in g.ops))


def host_floor_s(g: Graph, constants: ServingConstants, eager: bool) -> float:
    """The least time an eager step takes: the host launches its kernels one after another."""
    return host_launches(g, constants, eager) * constants.launch_s


def piecewise(g: Graph, constants: ServingConstants) -> bool:
    """Whether a step with prompt tokens replays piecewise CUDA graphs (``ServingConstants.piecewise_tokens``):
    vLLM V1 pads a step of up to its largest capture size in tokens to a captured size and replays the graphs
    between its attention layers, whatever its mix of prompt and decode tokens (vllm/v1/worker/gpu_model_runner.py
    ``_determine_batch_execution_and_padding``: ``pad_for_cudagraph``; vllm/config/compilation.py ``CUDAGraphMode``
    FULL_AND_PIECEWISE, the V1 default: piecewise graphs for prefill and mixed batches)."""
    return 0 < float(g.meta.get("tokens", 0.0)) <= constants.piecewise_tokens


def host_launches(g: Graph, constants: ServingConstants, eager: bool) -> int:
    """The launches the host pays for a step: none for a replayed graph; for piecewise graphs each attention
    kernel (run eagerly between the pieces) and each piece (one more than the attention layers); else every
    kernel (``launches``)."""
    if not eager:
        return 0
    if piecewise(g, constants):
        attention = int(sum(op.count for op in g.ops if op.kind == "attention"))
        return 2 * attention + 1
    return launches(g)


@dataclass(frozen=True)
class HostStep:
    """The host's work for one engine step, on the device's host CPU (``hostcpu``: its ``[host]`` table).

    TensorRT-LLM's PyTorch executor with the overlap scheduler (tensorrt_llm/_torch/pyexecutor/py_executor.py,
    ``PyExecutor._executor_loop_overlap``, NVIDIA/TensorRT-LLM, Apache-2.0) schedules step n, launches its forward
    on the previous step's sampled tokens still on the device (``_forward_step(scheduled_batch,
    previous_tensors_device)``), and only then updates step n−1's requests and sends their responses
    (``_update_requests(previous_batch.sample_state)``, ``_process_previous_batch``): the host's Python work for
    one step runs while the device runs another. The step lasts the longer of the two — the law's ``L_lat`` at
    work: when the host takes longer than the device, the host is the critical path.

        host = launches · launch_s (an eager step's kernels; a replayed CUDA graph: none)
             + speed · (host_step_s + host_sequence_s · sequences + host_prompt_s · prompts)
        speed = linear_s of this host / linear_s of the fit's (``ServingConstants.host_linear_s``)

    The launch floor keeps the fitted ``launch_s`` on every host, as it did before the executor's work had a
    term (so that the executor's terms at zero leave every prediction as it was); the per-core speed scales
    the executor's own work.

    A step that carries prompt tokens runs eagerly: TensorRT-LLM captures CUDA graphs for generation-only batches
    (tensorrt_llm/_torch/pyexecutor/model_engine.py ``_maybe_get_cuda_graph``: a batch with context requests
    runs without one), SGLang for decode batches (python/sglang/srt/model_executor/model_runner.py
    ``ModelRunner.forward``: a graph only where ``forward_mode.is_cuda_graph()``, decode and target-verify). vLLM V1
    replays piecewise graphs around its attention for any step of up to its largest capture size in tokens
    (``piecewise``): its host launches the attention kernels and the graphs. The line says so, and what the term
    is: kernels · ``launch_s``, a constant fitted end to end
    on TensorRT-LLM's H100 throughput cells (``engine.FITTED``), not a measured launch. On a short prompt it is most
    of the TTFT: Llama-3.1-8B's 355 kernels × 109 µs = 38.7 ms. This project's own H200 run of Llama-3.1-8B's shapes
    in eager PyTorch (tests/data/h200_llama8b_measured.json) took 26–40 ms per decode step against 7.6–26 ms
    replayed as one graph: an eager host of that order.
    """
    cpu: str                  # the host CPU the device's hardware file names
    launch_s: float           # the eager step's kernel launches (0 for a replayed CUDA graph)
    python_s: float           # the executor's per-step and per-request work on this host
    sequences: float          # requests the step carries
    speed: float              # this host's seconds per unit of the fit host's (> 1: slower)
    stated: bool              # False: the hardware file states no ``linear_s``; the fit host's speed is carried
    prompts: float = 0.0      # prompts the step admits (context requests)
    eager: bool = True        # False: the step replays one captured CUDA graph (no launches)
    kernels: int = 0          # the kernels an eager step launches (piecewise: its attention kernels and graphs)
    per_launch_s: float = 0.0  # host seconds per launch (``ServingConstants.launch_s``)
    piecewise: bool = False   # the step replays piecewise graphs around its attention (vLLM V1)

    @property
    def time_s(self) -> float:
        return self.launch_s + self.python_s

    def why(self, device_s: float) -> str:
        """One line: what the host does in the step, against the device's time for it."""
        from ...core.units import fmt_time
        speed = (f"{self.speed:.2f}× the fit host's time (linear_s)" if self.stated else
                 "no linear_s stated: the fit host's speed carried")
        who = "the host binds" if self.time_s > device_s else "hidden under the device's"
        how = ("piecewise CUDA graphs around attention: attention kernels and graphs" if self.piecewise else
               "eager, as a step with prompt tokens runs: kernels")
        launches = (f"launches {fmt_time(self.launch_s)} ({how}, {self.kernels:,} × {fmt_time(self.per_launch_s)}, "
                    f"launch_s fitted on TensorRT-LLM's H100 throughput cells)" if self.eager else
                    "launches 0 s (one replayed CUDA graph)")
        return (f"{fmt_time(self.time_s)} of host work per step on {self.cpu}: {launches} + executor "
                f"{fmt_time(self.python_s)} ({self.sequences:,.0f} request{'' if round(self.sequences) == 1 else 's'}, {speed}) vs {fmt_time(device_s)} on "
                f"the device: {who} (overlap scheduler)")


def host_step(run, g: Graph, eager: bool, sequences: float, prompts: float = 0.0) -> HostStep:
    """The host's work for the step ``g`` carrying ``sequences`` requests, ``prompts`` of them admitted in it
    (``HostStep``)."""
    from ...machine.hostcpu import of
    c = run.constants
    cpu = of(run.hw)
    stated = cpu is not None and cpu.linear_s is not None
    speed = cpu.linear_s / c.host_linear_s if stated else 1.0
    name = cpu.cpu if cpu is not None else f"{run.hw.name}'s host (not named)"
    python = speed * (c.host_step_s + c.host_sequence_s * sequences + c.host_prompt_s * prompts)
    n = host_launches(g, c, eager)
    return HostStep(name, n * c.launch_s, python, float(sequences), speed, stated, float(prompts), eager, n,
                    c.launch_s if eager else 0.0, eager and piecewise(g, c))


def charged_s(est, constants: ServingConstants) -> float:
    """The seconds the engine charges a priced step ``est`` (``priced``): the longer of the device's law time
    and the host's work, plus the fixed ``step_s``."""
    return max(float(est.time_s), est.graph.meta["host"].time_s) + constants.step_s


def bottleneck(est) -> dict:
    """{'resource', 'tier', 'why'} of a priced engine step: the law's, or the host where its work outlasts the
    device's (``HostStep``)."""
    host = est.graph.meta.get("host")
    if host is not None and host.time_s > float(est.time_s):
        return {"resource": "host", "tier": None, "why": host.why(float(est.time_s))}
    return est.bottleneck()


def half_collectives(g: Graph) -> Graph:
    """TP all-reduces carry bf16 activations whatever the weights' dtype."""
    by = dtype_bytes(g.dtype)
    if by >= dtype_bytes(HALF):
        return g
    ops = [replace(op, network_bytes=op.network_bytes * dtype_bytes(HALF) / by)
           if op.kind == "collective" and op.module == "tp" else op for op in g.ops]
    return Graph(g.name, g.phase, g.dtype, ops, footprint=dict(g.footprint), meta=dict(g.meta),
                 uncounted_ops=dict(g.uncounted_ops))


def trtllm_allreduce(g: Graph, hw) -> Graph:
    """The tensor-parallel all-reduces of ``g`` as TensorRT-LLM's engine runs them: its own ``AllReduce`` op
    (tensorrt_llm/_torch/distributed/ops.py, strategy AUTO), which picks its custom one-shot/two-shot kernels
    over NVLink peer memory while the message fits the custom workspace and its strategy table names one, and
    NCCL otherwise (cpp/tensorrt_llm/thop/allreduceOp.cpp ``AllreduceOp::selectImplementation`` and
    ``ifFallbackToNCCL``; cpp/tensorrt_llm/common/customAllReduceUtils.h ``getMaxRequiredWorkspaceSize``,
    ``selectStrategyLookUpTable``; NVIDIA/TensorRT-LLM, Apache-2.0). The device's measured curve of that op
    (collective ``allreduce-trtllm``: its table holds TensorRT-LLM's AUTO choice as it ran, benchmarks/
    kernel_comm.py) times a group on one node that it measures at that size; any other group keeps NCCL's.
    The strategy table covers hidden sizes 128–8192 (``selectStrategyLookUpTable``: index log2(hidden) − 7 < 7);
    a model with a wider hidden state (Llama 3.1 405B: 16384) falls outside it and runs NCCL_SYMMETRIC, NCCL's
    all-reduce. The measured table was collected at hidden 4096 (aiconfigurator collector/collect_all_reduce.py,
    ``token_dim``), so inside the table's range the crossover to NCCL is the one measured at that width."""
    from ...machine.network.calibration import for_hardware
    from ...machine.network.curves import TRTLLM_ALLREDUCE
    if int(g.meta.get("hidden", 0)) > TRTLLM_TABLE_HIDDEN:
        return g
    curves = for_hardware(hw).curves
    def own(op) -> bool:
        return (op.kind == "collective" and op.module == "tp" and op.collective == "allreduce"
                and op.group[1] == 1 and (TRTLLM_ALLREDUCE, int(op.group[0])) in curves)
    if not any(own(op) for op in g.ops):
        return g
    ops = [replace(op, collective=TRTLLM_ALLREDUCE) if own(op) else op for op in g.ops]
    return Graph(g.name, g.phase, g.dtype, ops, footprint=dict(g.footprint), meta=dict(g.meta),
                 uncounted_ops=dict(g.uncounted_ops))


# ---------------------------------------------------------------------- pricing one step (both ``serve`` modes)
def padded(batch: int, largest: int, sizes: tuple = CUDA_GRAPH_BATCHES) -> int:
    """The captured CUDA-graph batch a decode step of ``batch`` sequences is padded to: the next size of the
    list ``sizes``, capped at the largest capturable one (min(max_batch_size, max_num_tokens, the list's last);
    TensorRT-LLM pads to it when a listed size exceeds it: _filter_cuda_graph_batch_sizes); beyond it the step
    runs unpadded."""
    largest = min(largest, sizes[-1])
    if batch > largest:
        return batch
    return min(next((b for b in sizes if b >= batch), batch), largest)


@dataclass
class EngineRun:
    """What prices one engine step, whichever mode forms the batch (``engine.engine_run`` builds it)."""
    spec: str
    hw: object                       # as the user named it (links, memory)
    law_hw: object                   # with the serving constants as its calibration (``engine_hw``)
    lay: object                      # engine.Layout: tp, pp, ep, attention_dp
    dtype: str
    kv_dtype: str
    prompt: int
    output: int
    footprint: dict                  # per engine, unsharded: weights, kv_cache, activations
    constants: ServingConstants
    max_batch: int                   # the largest captured CUDA-graph batch: min(max_batch_size, max_num_tokens)
    experts: StoredExperts | None = None  # the routed experts as the checkpoint stores them (no --dtype given)


def _stage(g: Graph, lay) -> Graph:
    """One pipeline stage: the layers' ops at layers/pp, plus the send of the step's activations onward."""
    if lay.pp == 1:
        return g
    from ...core.graph import Op
    L = g.meta["layers"]
    ops = [replace(op, count=L // lay.pp) if op.count == L else op for op in g.ops]
    nbytes = float(g.meta["tokens"]) * g.meta["hidden"] * dtype_bytes("bf16") / (lay.tp if lay.tp > 1 else 1)
    ops.append(Op("pp.send", "collective", network_bytes=nbytes, dtype=g.dtype, module="pp",
                  collective="sendrecv", group=(2, 1), shapes="stage to stage"))
    return Graph(g.name, g.phase, g.dtype, ops, footprint=dict(g.footprint), meta=dict(g.meta),
                 uncounted_ops=dict(g.uncounted_ops))


def step_seconds(run: EngineRun, decode: int, prefill_tokens: float, contexts: float, pad: bool):
    """(seconds, Estimate) of one engine step: ``decode`` sequences generating, ``prefill_tokens`` prompt tokens,
    ``contexts`` prompts finishing their prefill in it. A padded (decode-only) step replays a CUDA graph; any
    other runs eagerly and lasts at least the host's launches of its kernels (``host_floor_s``). An engine that
    does not mix (``ServingConstants.mixed_steps`` False) runs the prompt tokens as a step of their own, then the
    decode batch: the two steps' seconds add up. The one pricing of a step under both ``serve`` modes: the online
    steady state and the max-throughput waves."""
    if not run.constants.mixed_steps and decode >= 1 and prefill_tokens > 0:      # a prefill batch, then decode
        t_pre, est = step_seconds(run, 0, prefill_tokens, contexts, pad=False)
        return t_pre + step_seconds(run, decode, 0.0, 0.0, pad=True)[0], est
    return _one_step(run, decode, prefill_tokens, contexts, pad)


def _one_step(run: EngineRun, decode: int, prefill_tokens: float, contexts: float, pad: bool):
    """(seconds, Estimate) of one step carrying all of ``decode`` and ``prefill_tokens`` (``step_seconds``)."""
    from .. import parallel
    gemm = padded(decode, run.max_batch, run.constants.cuda_graph_batches) if pad else decode + prefill_tokens
    g = step_graph(run.spec, run.hw, run.dtype, run.kv_dtype, gemm_tokens=gemm, decode=decode,
                   context=run.prompt + run.output // 2, prompt=run.prompt, prefill_tokens=prefill_tokens,
                   head_tokens=(gemm if pad else decode + contexts), moe_tables=run.constants.moe_tables,
                   experts=run.experts)
    g.footprint = dict(run.footprint)
    if run.lay.attention_dp:
        from .parallel import shard_attention_dp
        g = shard_attention_dp(g, run.hw, run.lay, run.constants.pad_on_dummy)
    elif run.lay.tp > 1:
        g = parallel.shard_inference(g, run.hw, {"tp": run.lay.tp, "gpus": run.lay.tp})
    prompts = max(contexts, 1.0) if prefill_tokens > 0 else 0.0
    t, est = priced(run, _stage(engine_collectives(run, g), run.lay), eager=not pad, sequences=decode + prompts,
                    prompts=prompts)
    if float(est.placement.spilled_bytes) > 0 or not bool(est.placement.fits):
        raise RuntimeError(f"serving step of {run.spec} spills past device memory: the capacity check missed it")
    return t, est


def priced(run: EngineRun, g: Graph, eager: bool, sequences: float, prompts: float = 0.0):
    """(seconds, Estimate) of the engine step ``g`` (sharded, staged, its collectives in bf16) carrying
    ``sequences`` requests, ``prompts`` of them admitted in it: the law on the engine's calibration
    (``run.law_hw``) or the host's work for the step (``host_step``: its launches when ``eager``, the executor's
    per-step, per-request and per-prompt work), whichever is longer (the overlap scheduler), plus ``step_s``. The
    step's graph keeps its ``HostStep`` (meta ``host``)."""
    from ...law import law
    g.meta.update(eager=eager, launches=launches(g))
    est = law.predict(g, run.law_hw)
    g.meta["host"] = host_step(run, g, eager, sequences, prompts)
    return charged_s(est, run.constants), est


def graph_seconds(run: EngineRun, g: Graph):
    """(seconds, Estimate) of a step built outside ``step_graph`` (a workload graph of one phase, already
    sharded: the serving features' verify, draft and prefix-cached prefill steps) priced as ``step_seconds``
    prices its own: its ops as the checkpoint runs them (``modelopt``, the routed experts' ``grouped`` GEMM), its
    TP collectives as the engine runs them (``engine_collectives``), a prefill's final norm on each prompt's last
    token only (``is_head``), eager when it carries prompt tokens (a prefill), else one CUDA graph."""
    prefill = g.phase == "prefill"
    kernels = moe_kernels(run.hw, run.dtype, moe_recipe(g)) if run.constants.moe_tables else (GROUPED_GEMM, None)
    per_token = float(g.meta.get("batch", 1)) / float(g.meta.get("tokens", 1)) if prefill else 1.0
    ops = []
    for op in g.ops:
        if op.kind != "collective":
            op = on_router(on_table_rows(grouped(modelopt(op, g.dtype), *kernels), run.hw, g.meta, g.meta.get("tokens", 1)),
                           run.hw, g.meta, kernels[0])
            if per_token != 1.0 and is_head(op) and op.attrs.get("role") == "norm":
                op = scaled(op, per_token)
        ops.append(op)
    out = Graph(g.name, g.phase, g.dtype, ops, footprint=dict(g.footprint), meta=dict(g.meta),
                uncounted_ops=dict(g.uncounted_ops))
    n = float(g.meta.get("batch", 1))
    return priced(run, engine_collectives(run, out), eager=prefill, sequences=n, prompts=n if prefill else 0.0)


def engine_collectives(run: EngineRun, g: Graph) -> Graph:
    """``g``'s TP collectives as the engine runs them: in bf16 (``half_collectives``), the all-reduces on
    TensorRT-LLM's own op where the constants say so (``trtllm_allreduce``)."""
    g = half_collectives(g)
    return trtllm_allreduce(g, run.hw) if run.constants.trtllm_allreduce else g
