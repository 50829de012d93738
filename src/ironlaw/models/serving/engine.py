"""What a TensorRT-LLM engine settles at before it runs: its limits, its KV cache and its batch.

    engine limits   ``trtllm-bench throughput`` without --max_batch_size / --max_num_tokens sets them from the
                    requests it estimates the KV cache holds over all GPUs (tensorrt_llm/bench/build/tuning.py,
                    calc_engine_setting and finetune_setting, NVIDIA/TensorRT-LLM, Apache-2.0):
                        kv_requests = f · (GPUs · memory − params · bytes) / (kv bytes per token · (ISL + OSL))
                        (kv bytes per token over max(tp, kv_heads) heads; memory and sizes in GiB)
                        bs  = min(kv_requests, 4096) / pp, rounded up: to 32 (at least 64) below 256, to 128 below
                              1024, to 256 above
                        tok = min(bs · (1 + ISL/OSL), 32768), rounded up: to 256 (at least 2048) below 4096,
                              to 512 below 8192, to 1024 above; then, chunked prefill being off (trtllm-bench's
                              default), at least ISL + bs (benchmark/utils/general.py, get_settings)
    KV cache        ``kv_fraction`` (kv_cache_free_gpu_mem_fraction, default 0.95) of the memory FREE once the
                    weights and the activation workspace of one max_num_tokens step are in place; under attention
                    DP an MoE layer's workspace holds every rank's max_num_tokens (``profiled_tokens``; with a
                    DeepEP dispatcher, the rows a rank receives: ``received_tokens``)
    batch           the KV cache holds B = ⌊KV tokens / (⌈(ISL + OSL) / 32⌉ · 32)⌋ sequences: the scheduler
                    reserves each request's whole prompt and output in 32-token blocks (TensorRT-LLM's
                    defaults: capacity policy GUARANTEED_NO_EVICT, tokens_per_block 32), in every layer, a
                    chunked-attention layer's included (``kv_sequence_bytes``); the batch is the smaller
                    of B and the engine's max batch size, and names which one set it.
    requests        the perf-overview's dataset size for its ISL/OSL pairs (docs/source/performance/
                    perf-overview.md, "$num_requests"), else 1,500.
    KV dtype        without --kv-dtype, the checkpoint's (``kvcache.default_kv_dtype``): FP8 for a model in an 8-
                    or 4-bit float, as NVIDIA's quantized checkpoints state it.
    one engine      ``engine_run``: the limits, the memory per GPU (``memory``: weights, the workspace of one
                    max_num_tokens step, the KV budget and what one request reserves) and the ``step.EngineRun``
                    that ``step.step_seconds`` prices a step on, with the constants fitted on the H100 cells
                    (``FITTED``): what both ``serve`` modes (``online``, ``throughput``) run on.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from ...core.errors import IronlawError
from ...core.gemmshape import GPU_M_HALF
from ...core.graph import Graph, dtype_bytes
from ...core.units import fmt_size
from .kvcache import FP8_KV_DTYPES
from .step import (EngineRun, ServingConstants, StoredExperts, build, engine_hw, routed_weight_bytes,
                   stored_bytes_per_param, stored_weight_bytes, unquantized_weight_bytes)

GIB = 2.0**30
# the published runs' kv_cache_free_gpu_mem_fraction (perf-overview.md: "in many cases … 0.95"; also trtllm-bench's
# calc_engine_setting default); TensorRT-LLM's own KvCacheConfig default is 0.90
KV_FRACTION = 0.95
TOKENS_PER_BLOCK = 32              # TensorRT-LLM KvCacheConfig.tokens_per_block default
BATCH_CAP, TOKENS_CAP = 4096, 32768          # trtllm-bench finetune_setting caps
# perf-overview.md, "Preparing a Dataset": $num_requests per (ISL, OSL)
PERF_OVERVIEW_REQUESTS = {(128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (1000, 2000): 1500,
                          (2048, 128): 3000, (2048, 2048): 1500, (5000, 500): 1500, (1000, 1000): 3000,
                          (500, 2000): 3000, (20000, 2000): 1000}
DEFAULT_REQUESTS = 1500


@dataclass(frozen=True)
class Limits:
    max_batch: int
    max_num_tokens: int
    source: str                    # "trtllm-bench" (its heuristic) or "given"


def _round_batch(raw: float) -> int:
    if raw < 256:
        return max(64, 32 * math.ceil(raw / 32))
    if raw < 1024:
        return 128 * math.ceil(raw / 128)
    return 256 * math.ceil(raw / 256)


def _round_tokens(raw: float) -> int:
    if raw < 4096:
        return max(2048, 256 * math.ceil(raw / 256))
    if raw < 8192:
        return 512 * math.ceil(raw / 512)
    return 1024 * math.ceil(raw / 1024)


def engine_limits(params: float, weight_bytes_per_param: float, kv_bytes_per_token_all_heads: float,
                  memory_bytes: float, gpus: int, pp: int, prompt: int, output: int, kv_fraction: float,
                  max_batch: int | None = None, max_num_tokens: int | None = None,
                  longest_prompt: int | None = None) -> Limits:
    """max_batch_size and max_num_tokens as trtllm-bench sets them (module docstring) unless given; a mix of
    lengths gives its mean ``prompt`` and ``output`` and its ``longest_prompt`` (trtllm-bench's avg_isl, avg_osl
    and max_isl)."""
    if max_batch is not None and max_num_tokens is not None:
        return Limits(max_batch, max_num_tokens, "given")
    engine = params * weight_bytes_per_param / GIB
    cache = (gpus * memory_bytes / GIB - engine) * kv_fraction
    kv_requests = max(cache, 0.0) / (kv_bytes_per_token_all_heads / GIB * (prompt + output))
    raw_bs = min(kv_requests, BATCH_CAP) / pp
    raw_tok = min(raw_bs * (1 + prompt / output), TOKENS_CAP)
    batch = max_batch if max_batch is not None else _round_batch(raw_bs)
    tokens = max_num_tokens if max_num_tokens is not None else unchunked(_round_tokens(raw_tok),
                                                                         longest_prompt or prompt, batch)
    return Limits(batch, tokens, "given" if max_batch is not None or max_num_tokens is not None else "trtllm-bench")


def unchunked(max_num_tokens: int, prompt: int, max_batch: int) -> int:
    """trtllm-bench's max_num_tokens with chunked prefill off (its default; the perf-overview runs pass no
    --enable_chunked_prefill): at least the longest prompt plus a decode token for every sequence of the max
    batch, so that a whole prompt fits in one step beside the decode batch (tensorrt_llm/bench/benchmark/utils/
    general.py, get_settings: ``max(max_num_tokens, dataset_metadata.max_isl + max_batch_size)``)."""
    return max(max_num_tokens, prompt + max_batch)


def blocks_tokens(prompt: int, output: int, block: int = TOKENS_PER_BLOCK) -> int:
    """Tokens of KV cache the scheduler reserves for one request (whole blocks, 32 tokens unless given)."""
    return math.ceil((prompt + output) / block) * block


def settle_batch(kv_budget_bytes: float, kv_bytes_per_sequence: float, prompt: int, output: int,
                 max_batch: int) -> tuple[int, str]:
    """(sequences in flight, what set it: "kv_memory" or "max_batch") on one attention rank; a sequence holds
    the KV of ``blocks_tokens(prompt, output)`` tokens (``kv_bytes_per_sequence``)."""
    fit = int(kv_budget_bytes // kv_bytes_per_sequence)
    if fit < 1:
        raise IronlawError(f"the KV cache ({fmt_size(kv_budget_bytes)} left for it) cannot hold one request of "
                           f"{prompt} + {output} tokens; use more --tp, a larger --memory-fraction or a shorter request")
    return (fit, "kv_memory") if fit < max_batch else (max_batch, "max_batch")


def requests_for(prompt: int, output: int) -> int:
    return PERF_OVERVIEW_REQUESTS.get((prompt, output), DEFAULT_REQUESTS)


# fitted by benchmarks/trtllm_h100.py --fit to the 52 H100 cells of TensorRT-LLM perf-overview.md (dense and MoE):
# mean |log(predicted/published)| minimised over all of them at once. step_s, launch_s and kernel_latency_share
# are refitted with the H100's kernel-fitted GEMM and attention terms in place (``step.kernel_terms``, under the
# law's η ≤ 1 bound), trtllm-bench's unchunked token budget, prompts admitted k to a step and the KV cache sized
# after the profiling step: 10 µs per step (its lower bound), 109 µs per kernel launched outside a CUDA graph and
# 0.2775 of the kernel tables' fixed seconds per call. The other six keep the values of the
# earlier fit of all eight on the same cells; gemm_eta,
# gemm_m_half and attention_eta price only devices (and dtypes) without kernel tables. The executor's host work
# per step and per request (host_step_s, host_sequence_s: ``step.HostStep``) is off (0) here; ``python
# benchmarks/trtllm_h100.py --fit --host`` fits it on the same H100 cells (docs/accuracy.md, "host"). So is its
# work per admitted prompt (host_prompt_s): ``--fit --prompt-host`` puts it at its lower bound (docs/accuracy.md).
FITTED = ServingConstants(gemm_eta=0.6906, gemm_m_half=GPU_M_HALF, memory_eta=0.9377, attention_eta=0.3264,
                          step_s=1.005e-5, launch_s=1.089e-4, expert_gemm_eta=0.1827, expert_stream_eta=0.3288,
                          kernel_latency_share=0.2775,
                          source="fitted by benchmarks/trtllm_h100.py to the H100 cells of TensorRT-LLM "
                                 "perf-overview.md (Llama 3.1 8B, 3.3 70B, 3.1 405B, Qwen3-235B-A22B, Llama 4 "
                                 "Maverick and Scout; FP8)")
MAX_TOKENS = 1 << 22


@dataclass
class Layout:
    tp: int = 1
    pp: int = 1
    ep: int = 1
    attention_dp: bool = False
    expert_imbalance: float = 1.0
    routing: str | None = None     # the router's load on the busiest expert rank (``core.routing``), per step;
                                   # None: uniform routing, times ``expert_imbalance``
    dispatcher: str | None = None  # the expert exchange: a DeepEP strategy (``parallel.DISPATCHERS``); None: the
                                   # engine's default (``parallel.exchange``)
    redundant_experts: int = 0     # extra expert slots holding replicas of hot experts (EPLB), over the EP group

    @property
    def gpus(self) -> int:
        return self.tp * self.pp

    @property
    def dp(self) -> int:
        """Attention replicas: each runs its own sequences (attention data parallelism over the TP group)."""
        return self.tp if self.attention_dp else 1


# ---------------------------------------------------------------------- inputs and memory
def whole_tokens(x, what: str) -> int:
    """``x`` as a count of tokens (a whole number, numpy's included, from 1 to ``MAX_TOKENS``), else an error."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < 1 or x > MAX_TOKENS:
        raise IronlawError(f"{what} must be a whole number between 1 and {MAX_TOKENS:,}, got {x!r}")
    return int(x)


def check_inputs(prompt, output, kv_fraction, requests, max_batch, max_num_tokens, imbalance) -> None:
    whole_tokens(prompt, "--prompt")
    whole_tokens(output, "--output")
    if not (isinstance(kv_fraction, (int, float)) and 0.0 < kv_fraction <= 1.0):
        raise IronlawError(f"--kv-fraction must be in (0, 1], got {kv_fraction!r}")
    for v, what in ((requests, "--requests"), (max_batch, "--max-batch"), (max_num_tokens, "--max-num-tokens")):
        if v is not None:
            whole_tokens(v, what)
    if not (isinstance(imbalance, (int, float)) and 1.0 <= imbalance <= 64.0):
        raise IronlawError(f"--expert-imbalance must be between 1.0 (balanced) and 64, got {imbalance!r}")


def check_routing(routing: str | None, imbalance: float) -> None:
    """A routing (``core.routing``) is a known name and is not given beside an expert imbalance."""
    if routing is None:
        return
    from ...core.routing import ROUTINGS, routing_of
    if not isinstance(routing, str) or routing_of(routing) is None:
        raise IronlawError(f"unknown MoE routing {routing!r} (known: {', '.join(ROUTINGS)}, alpha > 1)")
    if imbalance != 1.0:
        raise IronlawError(f"--expert-imbalance {imbalance} and routing '{routing}' both set the busiest expert "
                           "rank's load: give one")


def check_context(spec: str, meta: dict, prompt: int, output: int) -> None:
    """A request of ``prompt`` + ``output`` tokens fits the model's context (``context_tokens``: what vLLM takes
    for max_model_len, TensorRT-LLM for max_seq_len); an engine refuses a longer one."""
    ctx = meta.get("context_tokens")
    if ctx and prompt + output > ctx:
        raise IronlawError(f"--prompt {prompt} + --output {output} = {prompt + output:,} tokens exceed the {ctx:,}-token "
                           f"context of {spec} (the positions its config states); an engine refuses such a request")


def _check_layout(spec: str, meta: dict, lay: Layout, framework: str = "") -> None:
    """One line where the layout cannot be served; ``framework``: vLLM's or SGLang's name where the engine runs EP
    under TP attention (``serving.tpexperts``), empty for TensorRT-LLM."""
    experts = int(meta.get("experts", 0) or 0)
    if lay.attention_dp and not experts:
        raise IronlawError(f"--attention-dp needs a mixture-of-experts model; {spec} is dense (use --tp alone)")
    if lay.ep > 1 and not experts:
        raise IronlawError(f"--ep {lay.ep} needs a mixture-of-experts model; {spec} is dense")
    if (lay.routing is not None or lay.expert_imbalance != 1.0) and not experts:
        what = (f"--moe-routing {lay.routing}" if lay.routing is not None
                else f"--expert-imbalance {lay.expert_imbalance:g}")
        raise IronlawError(f"{what} loads the routed experts; {spec} is dense")
    _check_redundant(spec, experts, lay)
    if lay.dispatcher is not None:
        from .parallel import check_dispatcher_name
        check_dispatcher_name(lay)
    if experts and (experts + lay.redundant_experts) % lay.ep:
        what = (f"{experts} + {lay.redundant_experts} redundant expert slots" if lay.redundant_experts
                else f"{experts} experts")
        raise IronlawError(f"--ep {lay.ep} does not divide the {what} of {spec}; use a divisor of "
                           f"{experts + lay.redundant_experts}"
                           f"{' or --redundant-experts N so that it does' if not lay.redundant_experts else ''}")
    from .tpexperts import check_ep_under_tp
    check_ep_under_tp(lay, framework)
    if lay.attention_dp and lay.ep != lay.tp:
        raise IronlawError(f"--attention-dp shards the experts over the TP group, so --ep equals --tp: use --tp "
                           f"{lay.ep} --ep {lay.ep}" + (f" or --tp {lay.tp} --ep {lay.tp}" if lay.tp > 1 else ""))
    if meta["layers"] % lay.pp:
        raise IronlawError(f"--pp {lay.pp} does not divide the {meta['layers']} layers of {spec}")


def _check_redundant(spec: str, experts: int, lay: Layout) -> None:
    """``--redundant-experts N``: a whole number of slots, at most the experts, over an EP group, under uniform
    routing (a named routing's busiest rank is drawn over the experts alone: ``core.routing``)."""
    r = lay.redundant_experts
    if not r:
        return
    if isinstance(r, bool) or not isinstance(r, int) or r < 0:
        raise IronlawError(f"--redundant-experts is a count of extra expert slots (≥ 0), got {r!r}")
    if not experts or lay.ep == 1:
        raise IronlawError(f"--redundant-experts {r} spreads replicas of hot experts over an EP group: "
                           f"{'add --ep > 1 with --attention-dp' if experts else f'{spec} is dense'}")
    if r > experts:
        raise IronlawError(f"--redundant-experts {r} is more than the {experts} experts of {spec}")
    if lay.routing is not None:
        raise IronlawError(f"--moe-routing {lay.routing} draws the busiest rank over the {experts} experts alone; "
                           f"with --redundant-experts use --expert-imbalance")


def _weights_per_gpu(meta: dict, lay: Layout, dtype: str) -> float:
    """Weight bytes per GPU: ``dtype``'s, the routed experts as the graph stores them (``step.routed_weight_bytes``:
    gpt-oss's MXFP4 where no --dtype is given), the ModelOpt checkpoint's bf16 embedding and LM head."""
    by = dtype_bytes(dtype)
    params = float(meta["params"])
    extra = unquantized_weight_bytes(meta, dtype)
    if meta.get("experts") and lay.attention_dp:
        e, k = meta["experts"], meta.get("experts_per_token", 1)
        expert = (params - float(meta["active_params"])) * e / max(e - k, 1)
        slots = (e + lay.redundant_experts) / e                   # redundant slots hold replicas' weights
        routed_by = routed_weight_bytes(meta, dtype)
        return ((params - expert) * by + extra + expert * slots * routed_by / lay.ep) / lay.pp
    from ..parallel import replicated_kv_weight_bytes
    replicas = replicated_kv_weight_bytes(meta, lay.tp, by)      # a KV head on several ranks (``parallel.kvheads``)
    return (stored_weight_bytes(meta, dtype) + extra) / (lay.tp * lay.pp) + replicas / lay.pp


def _in_dtype(meta: dict, dtype: str) -> str:
    """``dtype``, and the routed experts' stored dtype where it differs (gpt-oss: "bf16, routed experts mxfp4")."""
    experts = meta.get("expert_weight_dtype", dtype)
    return dtype if experts == dtype else f"{dtype}, routed experts {experts}"


def _pooled(meta: dict, lay: Layout, max_num_tokens: int) -> str:
    """Where the MoE's pooled rows make the workspace (``profiled_tokens``): the token budget that sizes them."""
    pooled = profiled_tokens(meta, lay, max_num_tokens)
    if pooled <= max_num_tokens:
        return ""
    return (f" (the workspace holds the experts' rows of {pooled:,} tokens, {lay.dp} ranks' max_num_tokens "
            f"{max_num_tokens:,} as the exchange receives them: {SHRINKS})")


SHRINKS = "a smaller --max-num-tokens shrinks it"


class WorkspaceRefusal(IronlawError):
    """``memory``'s refusal where the weights and the reserve fit and the MoE's pooled workspace
    (``profiled_tokens``: every rank's max_num_tokens as the exchange receives them) does not, or
    ``workspace_bytes``'s where those rows are more than a step is built for, so a smaller token budget may fit;
    ``limits``: the engine's (``prepare`` fills them in)."""

    def __init__(self, message: str, limits: "Limits | None" = None):
        super().__init__(message)
        self.limits = limits


def memory(spec: str, hw, meta: dict, lay: Layout, dtype: str, kv_dtype: str, kv_fraction: float,
           max_num_tokens: int, workspace_bytes: float, kv_sequence_bytes: float, seq: tuple[int, int],
           reserve_bytes: float = 0.0, block: int = TOKENS_PER_BLOCK, reserve_holds_workspace: bool = False) -> dict:
    """Per GPU: weights, activation workspace, KV budget and the KV one request reserves (``kv_sequence_bytes``:
    the builder's cache of prompt + output tokens in whole blocks, every layer's own kind — global, windowed,
    chunked, latent — split over TP's key/value heads, not for a latent cache every TP rank holds whole
    (``parallel.kv_cache_split``), and over PP's stages). ``reserve_holds_workspace``: the runtime's reserve
    already holds the activations (SGLang sizes its KV pool as memory · mem_fraction_static − weights), so the
    workspace is not taken again."""
    from ..parallel import kv_cache_split
    cap = hw.memory[hw.device_tier].capacity_bytes
    weights = _weights_per_gpu(meta, lay, dtype)
    free = cap - weights - reserve_bytes - (0.0 if reserve_holds_workspace else workspace_bytes)
    where = f"{lay.gpus} × {hw.name}" if lay.gpus > 1 else hw.name
    if free <= 0:
        pooled_only = (not reserve_holds_workspace and cap - weights - reserve_bytes > 0
                       and profiled_tokens(meta, lay, max_num_tokens) > max_num_tokens)
        held = ("" if reserve_holds_workspace else f" + workspace {fmt_size(workspace_bytes)}") + (
            f" + the {fmt_size(reserve_bytes)} the memory fraction holds back" if reserve_bytes > 0 else "")
        raise (WorkspaceRefusal if pooled_only else IronlawError)(
                           f"{spec} does not fit on {where} at --tp {lay.tp}{f' --pp {lay.pp}' if lay.pp > 1 else ''}"
                           f" in {_in_dtype(meta, dtype)}: weights {fmt_size(weights)}{held} per GPU exceed its "
                           f"{fmt_size(cap)} by {fmt_size(-free)}; use a larger --tp (or --pp, with --max-throughput), "
                           f"{'a larger --memory-fraction, ' if reserve_bytes > 0 else ''}or a smaller --dtype"
                           f"{_pooled(meta, lay, max_num_tokens)}")
    kv_seq = kv_sequence_bytes / (1 if lay.attention_dp else kv_cache_split(meta, lay.tp)) / lay.pp
    kv_tok = kv_seq / blocks_tokens(*seq, block)
    return {"device_memory_bytes": cap, "weights_bytes": weights, "workspace_bytes": workspace_bytes,
            "reserve_bytes": reserve_bytes, "reserve_holds_workspace": reserve_holds_workspace, "free_bytes": free,
            "kv_fraction": kv_fraction, "kv_budget_bytes": kv_fraction * free,
            "kv_bytes_per_token": kv_tok, "kv_bytes_per_sequence": kv_seq, "max_num_tokens": max_num_tokens}


def profiled_tokens(meta: dict, lay: Layout, max_num_tokens: int) -> int:
    """Tokens of the profiling step whose peak memory the KV cache is sized after: ``max_num_tokens`` on each
    rank, and, for an MoE model under attention DP, the tokens the fused MoE gathers from every rank.
    TensorRT-LLM's ``KvCacheCreator`` runs dummy context requests of ``max_num_tokens`` tokens and, with
    attention DP, replicates them ``tp_size`` times so that every rank runs a full step
    (``_create_dummy_context_requests``: ``requests = requests * self._mapping.tp_size``); ``estimate_max_tokens``
    then gives the KV cache ``fraction`` of what that step's peak (torch and non-torch) leaves. The CUTLASS fused
    MoE all-gathers the ranks' tokens and runs them unchunked unless ``moe_max_num_tokens`` is set (its default
    is ``max_num_tokens`` × dp size: tensorrt_llm/_torch/modules/fused_moe/fused_moe_cutlass.py,
    ``CutlassFusedMoE.__init__``), so its workspace (permuted rows, fc1/fc2 outputs) holds dp × max_num_tokens
    rows (NVIDIA/TensorRT-LLM, Apache-2.0, the v1.0 line). The all-to-all exchanges on a multi-node NVLink domain
    (MNNVL, NVLinkOneSided/TwoSided) receive into ep × max_num_tokens rows, padded (``_mnnvl_utils``:
    ``local_token_allocation_count = max_token_count_per_rank * ep_size``; NVLinkOneSided's workspace holds
    ``[ep_size, max_tokens]`` tokens), and the MoE runner sizes its buffers by k × those rows
    (``CutlassMoeFCRunner::getWorkspaceDeviceBufferSizes``: ``num_moe_inputs = k * num_rows``): the same pool.
    Where the tokens are not pooled whole (``received_tokens``) the pool is what a rank receives."""
    if not meta.get("experts") or lay.dp == 1:
        return max_num_tokens
    return received_tokens(meta, lay, max_num_tokens) if lay.dispatcher in RECEIVED_ONLY else max_num_tokens * lay.dp


RECEIVED_ONLY = ("deepep", "deepep-ll")      # the exchanges that hand a rank only its own rows (``received_tokens``)


def received_tokens(meta: dict, lay: Layout, max_num_tokens: int) -> int:
    """Tokens whose rows one rank's MoE runs in the profiling step, each rank sending ``max_num_tokens``, for the
    DeepEP exchanges (``--moe-dispatcher``), in tokens of k routed rows each (the unit ``workspace_bytes`` builds):
        deepep     DeepEP's normal dispatch hands a rank each token once that routes to any of its s slots
                   (``Buffer.dispatch``: ``recv_x`` of the received count; TensorRT-LLM's ``DeepEP.dispatch``,
                   fused_moe/communication/deep_ep.py): dp · T · (1 − (1 − s/S)^k) of the S = E + R slots,
                   uniform routing, in expectation
        deepep-ll  the low-latency buffer holds ``[s, ep · T, hidden]`` rows, run as top-1 (fused_moe_wide_ep.py:
                   "x shape: [#local experts, EP size * deep_ep_max_num_tokens, hidden_size]", "fake top_k=1"):
                   s · ep · T rows, s · ep · T / k tokens
    DeepEP's own NVLink/RDMA buffers are sized by its config, not the batch (deep_ep_utils.py ``reserve``), and
    left out: they are fixed and small beside these rows."""
    k = int(meta.get("experts_per_token", 1))
    slots = int(meta["experts"]) + int(lay.redundant_experts)
    local = slots // lay.ep
    if lay.dispatcher == "deepep-ll":
        return math.ceil(local * lay.ep * max_num_tokens / k)
    return math.ceil(lay.dp * max_num_tokens * (1.0 - (1.0 - local / slots) ** k))


def workspace_bytes(spec: str, hw, meta: dict, lay: Layout, dtype: str, kv_dtype: str, max_num_tokens: int) -> float:
    """Activation workspace per GPU of the profiling step (``profiled_tokens``), 16-bit between kernels. Under
    attention DP the larger of one rank's step (its LM head included) and one layer's live set at the MoE's
    pooled rows: the experts' permuted input and output and fc1's gated output per routed row, which exceed
    attention's working set on the built-in MoE models (a prefill of one sequence: one row of logits). Pooled rows
    past ``workloads.MAX_SEQ`` are refused (``WorkspaceRefusal``: a smaller budget shrinks them)."""
    from ..workloads import MAX_SEQ
    ws = float(build(spec, "decode", max_num_tokens, 1, dtype, kv_dtype, hw).footprint["activations"])
    pooled = profiled_tokens(meta, lay, max_num_tokens)
    if pooled > MAX_SEQ:               # past the longest step a model is built for (workloads.MAX_SEQ)
        raise WorkspaceRefusal(f"{spec} at --tp {lay.tp}: the MoE workspace holds the experts' rows of {pooled:,} "
                               f"tokens, {lay.dp} ranks' max_num_tokens {max_num_tokens:,} as the exchange receives "
                               f"them, past the {MAX_SEQ:,} tokens a step is built for: {SHRINKS}")
    if pooled > max_num_tokens:        # one layer's live set at the gathered rows; the LM head stays per rank
        ws = max(ws, float(build(spec, "prefill", 1, pooled, dtype, kv_dtype, hw).footprint["activations"]))
    return ws * max(dtype_bytes("bf16") / dtype_bytes(dtype), 1.0)


def kv_sequence_bytes(spec: str, hw, meta: dict, dtype: str, kv_dtype: str, tokens: int,
                      constants: ServingConstants) -> float:
    """KV bytes one request of ``tokens`` (whole blocks) reserves over all heads and layers. The analytic cache
    holds min(s, c) tokens in a chunked-attention layer (Llama 4: chunks of c = 8192); TensorRT-LLM keeps all s
    (``constants.chunked_kv_whole``): its KV cache manager gives every layer the same attention window,
    max_seq_len, unless ``kv_cache_config.max_attention_window`` lists several (variable sliding window), and the
    chunk reaches only the attention kernel's mask ("Chunked attention is applied to context requests only":
    tensorrt_llm/_torch/modules/attention.py, ``Attention.__init__``; the KV cache manager built in
    tensorrt_llm/_torch/pyexecutor/_util.py, ``KvCacheCreator._create_kv_cache_manager``; NVIDIA/TensorRT-LLM,
    Apache-2.0, the v1.0 line). The perf-overview and trtllm-bench set no max_attention_window."""
    kv = float(build(spec, "decode", 1, tokens, dtype, kv_dtype, hw).footprint["kv_cache"])
    if not constants.chunked_kv_whole:
        return kv
    per_token_layer = float(meta["kv_elems_per_token_layer"]) * dtype_bytes(kv_dtype)
    for span, layers in meta.get("layer_spans", {}).items():
        if span.startswith("chunk "):
            kv += layers * max(tokens - int(span.split()[1]), 0) * per_token_layer
    return kv


# ---------------------------------------------------------------------- the engine one step is priced on
def prepare(spec, hw, lay: Layout, dtype, kv_dtype, prompt, output, kv_fraction, max_batch, max_num_tokens,
            constants: ServingConstants, experts: StoredExperts | None = None, lengths=None):
    """(meta, limits, memory) after every check that needs the model, its routed experts' weights stored as
    ``experts`` says where given (``step.StoredExperts``). ``lengths`` (``serving.lengths.Lengths``, its mean
    ``prompt`` and ``output`` given): every request checked against the context, the KV a sequence in flight
    reserves its mix's (``Lengths.weighted``), trtllm-bench's unchunked budget its longest prompt's."""
    meta = build(spec, "decode", 1, 1, dtype, kv_dtype, hw, experts).meta
    if lengths is None:
        check_context(spec, meta, prompt, output)
    else:
        from .lengths import check_context as check_each
        check_each(lengths, spec, meta.get("context_tokens"))
    _check_layout(spec, meta, lay, constants.framework_moe)
    kv_all = 2.0 * meta["layers"] * max(lay.tp, meta["kv_heads"]) * meta["head_dim"] * dtype_bytes(kv_dtype)
    cap = hw.memory[hw.device_tier].capacity_bytes
    limits = engine_limits(float(meta["params"]), stored_bytes_per_param(meta, dtype), kv_all, cap, lay.gpus, lay.pp, prompt,
                           output, kv_fraction, max_batch, max_num_tokens,
                           None if lengths is None else max(lengths.prompts))
    block = constants.block_tokens

    def kv_of(tokens: int) -> float:
        return kv_sequence_bytes(spec, hw, meta, dtype, kv_dtype, tokens, constants)
    kv_seq = kv_of(blocks_tokens(prompt, output, block)) if lengths is None else lengths.weighted(kv_of, block)
    try:
        ws = workspace_bytes(spec, hw, meta, lay, dtype, kv_dtype, limits.max_num_tokens)
        mem = memory(spec, hw, meta, lay, dtype, kv_dtype, kv_fraction, limits.max_num_tokens, ws, kv_seq,
                     (prompt, output), constants.reserve_bytes, block, constants.reserve_holds_workspace)
    except WorkspaceRefusal as e:
        raise WorkspaceRefusal(str(e), limits) from None
    if lengths is not None:
        mem["kv_bytes_per_token"] = mem["kv_bytes_per_sequence"] / lengths.weighted(float, block)
        _check_longest(lengths, kv_of, mem, kv_seq, block)
    return meta, limits, mem


def _check_longest(lengths, kv_of, mem: dict, kv_seq: float, block: int) -> None:
    """The longest request of ``lengths`` fits the KV cache on its own (one line naming its line of the file);
    ``kv_seq``: the mix's KV per sequence before ``memory`` split it over the GPUs."""
    i = lengths.longest()
    need = kv_of(blocks_tokens(lengths.prompts[i], lengths.outputs[i], block)) * mem["kv_bytes_per_sequence"] / kv_seq
    if need > mem["kv_budget_bytes"]:
        raise IronlawError(f"{lengths.where(i)}: the KV cache ({fmt_size(mem['kv_budget_bytes'])} left for it) "
                           f"cannot hold this request of {lengths.prompts[i]} + {lengths.outputs[i]} tokens "
                           f"({fmt_size(need)}); use more --tp, a larger --memory-fraction or shorter requests")


def engine_of(spec, hw, lay: Layout, dtype, kv_dtype, seq: tuple[int, int], meta: dict, limits, mem: dict,
              per_engine: int, constants: ServingConstants, experts: StoredExperts | None = None) -> EngineRun:
    """The engine as ``step.step_seconds`` prices it, ``per_engine`` sequences per rank and micro-batch, its
    routed experts' weights stored as ``experts`` says where given."""
    from ..parallel import kv_cache_split
    kv_in_use = per_engine * lay.pp * mem["kv_bytes_per_sequence"]
    split = 1 if lay.attention_dp else lay.tp                 # the TP shard divides what it is given by tp
    kv_split = 1 if lay.attention_dp else kv_cache_split(meta, lay.tp)      # … and the KV cache by this
    footprint = {"weights": mem["weights_bytes"] * split, "kv_cache": kv_in_use * kv_split,
                 "activations": mem["workspace_bytes"]}
    if meta.get("experts"):                             # the routed experts' compute η at this GPU's ceiling
        from ..precision import moe_recipe
        from .expertcarry import carried, measured_layer, one_gpu_layer, tp_layer
        recipe = moe_recipe(Graph(spec, "decode", dtype, [], meta=meta))
        constants = tp_layer(constants, hw, dtype, lay, recipe)
        constants = carried(measured_layer(one_gpu_layer(constants, hw, dtype, lay), hw, dtype, lay), hw, dtype)
    return EngineRun(spec, hw, engine_hw(hw, constants), lay, dtype, kv_dtype, seq[0], seq[1], footprint, constants,
                     graph_ceiling(limits, constants), experts)


def graph_ceiling(limits, constants: ServingConstants) -> int:
    """The largest decode batch a CUDA graph may be captured for (``EngineRun.max_batch``): min(max_batch_size,
    max_num_tokens) where the token budget caps a step's decode tokens too (TensorRT-LLM, vLLM); max_batch_size
    alone where it caps only the prefill batches (SGLang, ``ServingConstants.mixed_steps`` False:
    ``throughput.budget_tokens``)."""
    if not constants.mixed_steps:
        return limits.max_batch
    return min(limits.max_batch, limits.max_num_tokens)


@dataclass
class Engine:
    """One engine holding a given number of sequences: what its steps are priced on and what it holds."""
    run: EngineRun
    limits: Limits
    memory: dict                     # per GPU (``memory``)
    max_sequences: int               # the sequences of prompt + output tokens its KV cache holds


def engine_run(spec: str, hw, prompt: int, output: int, batch: int, *, tp: int = 1, dtype: str | None = None,
               kv_dtype: str | None = None, kv_fraction: float = KV_FRACTION, max_batch: int | None = None,
               max_num_tokens: int | None = None, constants: ServingConstants = FITTED, lengths=None) -> Engine:
    """The Engine (``--tp``, no PP, dense attention) holding ``batch`` sequences of ``prompt`` + ``output``
    tokens, with the limits and memory ``max_throughput`` derives for the same inputs: what the online mode's
    steps are priced on. More sequences than the KV cache holds is an error naming the limit."""
    from ...machine import hardware
    from ...machine.network.topology import check_count
    hw = hardware.get(hw) if isinstance(hw, str) else hw
    check_inputs(prompt, output, kv_fraction, None, max_batch, max_num_tokens, 1.0)
    whole_tokens(batch, "--concurrency")
    lay = Layout(check_count(tp, "--tp"))
    from .kvcache import dtypes
    from .step import checkpoint_experts
    experts = checkpoint_experts(spec, hw, dtype)
    dtype, kv_dtype = dtypes(hw, dtype, kv_dtype, spec)
    meta, limits, mem = prepare(spec, hw, lay, dtype, kv_dtype, prompt, output, kv_fraction, max_batch,
                                max_num_tokens, constants, experts, lengths)
    fit, _ = settle_batch(mem["kv_budget_bytes"], mem["kv_bytes_per_sequence"], prompt, output, MAX_TOKENS)
    if batch > fit:
        where = f"{hw.name}{f' (per device of --tp {tp})' if tp > 1 else ''}"
        kept = (f"{kv_fraction:g} of the memory left after weights {fmt_size(mem['weights_bytes'])} and workspace "
                f"{fmt_size(mem['workspace_bytes'])}, the engine's kv_cache_free_gpu_mem_fraction"
                if constants.reserve_bytes == 0 else
                f"what is left after weights {fmt_size(mem['weights_bytes'])} and the runtime's "
                f"{fmt_size(constants.reserve_bytes)} (activations included)" if constants.reserve_holds_workspace else
                f"what is left after weights {fmt_size(mem['weights_bytes'])}, workspace "
                f"{fmt_size(mem['workspace_bytes'])} and the runtime's {fmt_size(constants.reserve_bytes)}")
        fixes = "lower --concurrency or use --tp" if kv_dtype in FP8_KV_DTYPES else \
            "lower --concurrency, use --kv-dtype fp8, or --tp"
        raise IronlawError(f"--concurrency {batch} exceeds the KV-cache capacity of {where}: {fit} sequences of "
                           f"{blocks_tokens(prompt, output, constants.block_tokens)} tokens fit in the "
                           f"{fmt_size(mem['kv_budget_bytes'])} the engine keeps for KV ({kept}; "
                           f"{fmt_size(mem['kv_bytes_per_token'])}/token in {kv_dtype}); {fixes}")
    limits = _holding(limits, batch, max_batch)
    run = engine_of(spec, hw, lay, dtype, kv_dtype, (prompt, output), meta, limits, mem, batch, constants, experts)
    return Engine(run if lengths is None else lengths.on(run), limits, mem, fit)


def _holding(limits: Limits, batch: int, max_batch: int | None) -> Limits:
    """``limits`` of an engine serving ``batch`` sequences at once: trtllm-bench sizes max_batch_size for its
    offline run; a server is set up to hold the sequences it serves, so where that heuristic falls below
    ``batch`` the max batch size is ``batch`` (the limits ``--max-throughput --max-batch batch`` runs on: the
    same max_num_tokens, whose workspace the KV budget already left out). A max batch size given, or a step
    token budget below ``batch``, that cannot hold the batch is an error."""
    if batch > limits.max_batch and max_batch is not None:
        raise IronlawError(f"--concurrency {batch} exceeds the engine's max batch size {limits.max_batch}, given; "
                           f"the scheduler holds no more sequences in flight")
    if batch > limits.max_num_tokens:
        raise IronlawError(f"--concurrency {batch} exceeds the engine's {limits.max_num_tokens:,} tokens per step "
                           f"(max_num_tokens{', given' if limits.source == 'given' else ''}): one decode step "
                           f"carries a token per sequence")
    if batch <= limits.max_batch:
        return limits
    return Limits(batch, limits.max_num_tokens, f"{limits.source}; max batch size raised to the concurrency")
