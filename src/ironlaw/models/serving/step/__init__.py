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
step lasts the longer of the two (``HostStep``, on the device's named host CPU); an engine whose executor runs
serially with the device (``ServingConstants.host_serial``: vLLM V1 without async scheduling) adds its Python work
to the step, its launches still beside the device (``HostStep.step_s``). The tensor-parallel all-reduces run on
TensorRT-LLM's own all-reduce op where the device measures it (``trtllm_allreduce``), NCCL's curve elsewhere.

One concept a module, each importing only those below it (the "inside step" import contract): ``run`` (the engine
run: ``EngineRun``, ``padded``, ``step_seconds``, ``priced``, ``graph_seconds``) < ``graph`` (the step's graph and
its KV dtype), ``host`` (the host's launches and work, ``charged_s``), ``collectives`` (the TP collectives as the
engine runs them), ``runtime`` (TensorRT-LLM's executor: the constants under its C++ runtime) < ``constants`` (``ServingConstants``, ``engine_hw``, ``kernel_terms``) < ``checkpoint`` (the
weights as the checkpoint stores them), ``moe`` (the routed experts on the fitted MoE kernel classes),
``mla_module`` (under vLLM and SGLang an MLA model's whole attention module as one op on the framework's module
class, where the device's engine file holds it: ``run.module_step``).
"""
from .checkpoint import (BF16_ROLES, HALF, StoredExperts, checkpoint_experts, expert_weights, half_mla_bmm, modelopt,
                         routed_weight_bytes, stored_bytes_per_param, stored_weight_bytes, unquantized_weight_bytes)
from .collectives import (TRTLLM_TABLE_HIDDEN, engine_collectives, half_collectives, own_allreduce, sglang_allreduce,
                          trtllm_allreduce, vllm_allreduce)
from .constants import CUDA_GRAPH_BATCHES, FIT_HOST_LINEAR_S, ServingConstants, engine_hw, kernel_terms
from .graph import build, is_head, scale_class, scaled, step_graph, with_kv, with_kv_dtype
from .host import HostStep, bottleneck, charged_s, host_floor_s, host_launches, host_step, launches, piecewise
from .moe import (GROUPED_GEMM, MOE_ROUTER, MOE_ROWS, ROUTED_ROLES, blocked_rows, fitted_moe, grouped, moe_kernels,
                  on_router, on_table_rows, scaled_moe, unaligned_down)
from .run import EngineRun, graph_seconds, padded, priced, step_seconds

__all__ = [
    "BF16_ROLES", "CUDA_GRAPH_BATCHES", "EngineRun", "FIT_HOST_LINEAR_S", "GROUPED_GEMM", "HALF", "HostStep",
    "MOE_ROUTER", "MOE_ROWS", "ROUTED_ROLES", "ServingConstants", "StoredExperts", "TRTLLM_TABLE_HIDDEN",
    "blocked_rows", "bottleneck", "build", "charged_s", "checkpoint_experts",
    "engine_collectives", "engine_hw", "expert_weights", "fitted_moe", "graph_seconds", "grouped", "half_collectives",
    "half_mla_bmm",
    "host_floor_s", "host_launches", "host_step", "is_head", "kernel_terms", "launches", "modelopt", "moe_kernels",
    "on_router", "on_table_rows", "padded", "piecewise", "priced", "routed_weight_bytes", "scale_class", "scaled",
    "scaled_moe", "step_graph", "step_seconds", "stored_bytes_per_param", "stored_weight_bytes", "trtllm_allreduce",
    "unaligned_down", "unquantized_weight_bytes", "with_kv", "with_kv_dtype", "own_allreduce", "vllm_allreduce",
    "sglang_allreduce",
]
