"""The host term of an eager training framework: the CPU that issues the kernels (the law's L_lat at work).

Megatron-Core runs a training step eagerly: the host issues every kernel of a layer, one launch after another,
and the device runs them as they arrive. Where the host issues faster than the device computes, it runs ahead
and its time hides under the device's; where it does not, the device waits. A dropless mixture-of-experts layer
adds a wait of its own: the host needs the number of tokens each expert receives before it can issue the
all-to-all and the grouped expert GEMMs, so it copies the counts to the host and synchronises (Megatron-Core
core_v0.15.0, the version Megatron-Bridge v0.2.0 — NeMo 25.11 — pins: ``token_dispatcher.py``
``MoEAlltoAllTokenDispatcher.preprocess`` sets the sync point "before_ep_alltoall" for EP > 1,
``_maybe_dtoh_and_synchronize`` waits on the D2H event; ``experts.py`` ``TEGroupedMLP.forward`` reads
``tokens_per_expert.tolist()`` for Transformer Engine's GroupedLinear, which launches one GEMM, and in FP8 one
quantize, per local expert). After that sync the device has drained, so the part of the layer the host issues
next (the dispatch, the experts, the combine) runs at the slower of the two, and the host cannot have run ahead
into it. The backward needs no counts (the splits are kept on the host) and has no sync.

Per micro-batch on a stage of R layers, with per layer: host time a (the MoE part after the sync) and b (the
rest), device time d_a and d_b:

    forward, MoE layer (a sync):   max(a + b, a + d_b, d_a + d_b) + sync_s       (the two parts in order)
    forward, no sync / backward:   max(host, device) over the whole pass         (the host runs ahead)
    exposed  = (forward + backward as above) − (device forward + device backward)

Host time = kernels × ``op_s`` + Transformer Engine module calls × ``module_s`` + each per-expert GEMM that
Transformer Engine's GroupedLinear issues as its own cuBLASLt call the rest of its measured cost
(``STREAMED_GEMM_OPS``, TransformerEngine PR #3134); the per-device costs and the CPU that pays them come from
the hardware file's ``[host]`` table (``ironlaw.machine.hostcpu``). The kernel counts per layer (``CALLS``) are
read off the framework's code, never fitted.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable

import numpy as np

from ..core.graph import Op
from ..core.registry import registrar

VERSION = ("Megatron-Core core_v0.15.0 (Megatron-LM 0d8e0714, pinned by Megatron-Bridge v0.2.0, the NeMo 25.11 "
           "container) with Transformer Engine modules")
SCOPES = ("attn", "moe_router", "moe_preprocess", "full", "full_iteration")   # Megatron-Core's cuda_graph_scope
# values modelled here. "full": each transformer layer's forward and backward captured whole (the graphs
# ``transformer/cuda_graphs.py`` ``CudaGraphManager`` records per TransformerLayer), replayed as one launch per
# layer and pass. "full_iteration": the forward and backward of every micro-batch captured as one graph
# (``full_cuda_graph.py`` ``FullCudaGraphWrapper``, cuda_graph_impl "local": "1 CUDA graph for whole iteration
# excluding optimizer", ``transformer_config.py``), replayed once per step: no launch inside the step is the
# host's; what stays outside is the optimizer step (timed on the device) and each micro-batch's inputs copied
# into the graph's static buffers before the replay (``StaticBufferLoader``), issued while the device runs the
# previous step's optimizer. Neither captures a layer whose host waits on the device (a dropless MoE layer's
# split sizes): ``LAYER_SCOPES`` are refused on models with routed experts (``parallel.plan``).
LAYER_SCOPES = ("full", "full_iteration")
BACKWARD_PARTS = frozenset({"bwd", "wgrad"})   # name parts of the backward's collectives (``parallel.experts``, ``tp``)


@dataclass(frozen=True)
class Calls:
    """What the host issues for one part of a layer and micro-batch."""
    fwd: float = 0.0           # kernels in the forward
    bwd: float = 0.0           # kernels in the backward
    modules: float = 0.0       # Transformer Engine module calls (forward; the backward runs as many autograd nodes)
    quantize: float = 0.0      # tensors a low-precision recipe quantizes in each pass: a linear's input (forward)
                               # and output gradient (backward), ``QUANTIZE_KERNELS`` kernels each
    streamed_fwd: float = 0.0  # of the forward's kernels, per-expert GEMMs issued each as its own cuBLASLt call
    streamed_bwd: float = 0.0  # … and of the backward's (``STREAMED_GEMM_OPS`` eager ops of host time each)

    def __add__(self, o: "Calls") -> "Calls":
        return Calls(*(getattr(self, f.name) + getattr(o, f.name) for f in fields(Calls)))

    def scaled(self, f: float) -> "Calls":
        return Calls(*(getattr(self, k.name) * f for k in fields(Calls)))


# Kernels per layer and micro-batch, read off Megatron-Core core_v0.15.0 (megatron/core/transformer/) with the
# Transformer Engine layer spec and the fusions Megatron-Bridge's performance recipes set (bias_activation_fusion,
# moe_router_fusion, moe_permute_fusion, moe_grouped_gemm):
# attention  forward: TELayerNormColumnParallelLinear (norm, QKV GEMM), fused RoPE of q and k, TEDotProductAttention
#            (cuDNN), TERowParallelLinear (GEMM), fused bias-dropout-add = 7; backward: bias-dropout-add, the
#            projection's dgrad and wgrad, attention (dO·O and the cuDNN kernel), RoPE of q and k, QKV dgrad and
#            wgrad, the norm = 10
ATTENTION = Calls(fwd=7, bwd=10, modules=3, quantize=2)
# dense MLP  forward: TELayerNormColumnParallelLinear (norm, fc1), fused bias-SwiGLU, TERowParallelLinear (fc2),
#            bias-dropout-add = 5; backward: bias-dropout-add, fc2 dgrad and wgrad, SwiGLU, fc1 dgrad and wgrad,
#            norm = 7
MLP = Calls(fwd=5, bwd=7, modules=2, quantize=2)
# MoE before its sync (moe_layer.py router_and_preprocess; token_dispatcher.py MoEAlltoAllTokenDispatcher):
#   router     pre-MLP TENorm, the gating GEMM, the fused top-k with its score function, the forced balanced
#              routing map and the auxiliary loss (2 + 2) = 6 forward; backward: the norm, gating dgrad and
#              wgrad, top-k, the loss (2) = 6
ROUTER = Calls(fwd=6, bwd=6, modules=1)
#   preprocess routing_map.sum, the input splits, the all-gather of the counts over the EP group, the local
#              slice, two sums, the splits over TP, then the D2H copies of tokens_per_expert, input and output
#              splits, output_splits_tp and num_out_tokens on the side stream and the event (6) = 13; the fused
#              permute of tokens and probabilities (TE v2.9 ``moe_permute_with_probs``: three Triton passes of
#              ``make_row_id_map`` and ``permute_with_mask_map``, 4): 17 forward, the permute's backward
#              (``unpermute_with_mask_map``) 1
PREPROCESS = Calls(fwd=17, bwd=1)
# MoE after its sync, without the per-expert GEMMs: the all-to-alls of tokens and probabilities (2), the sort
#   by local expert (TE v2.9 fused ``moe_sort_chunks_by_index_with_probs``: ``make_chunk_sort_map`` and
#   ``sort_chunks_by_map``, 2), the weighted bias-SwiGLU, the sort back (2), the combine all-to-all, the fused
#   unpermute, bias-dropout-add = 10 forward; backward: bias-dropout-add, unpermute, the all-to-all, the sort, the
#   SwiGLU, the sort of tokens and probabilities (one ``sort_chunks_by_map`` on the kept map), their all-to-alls
#   (2) = 8; two GroupedLinear modules
DISPATCH = Calls(fwd=10, bwd=8, modules=2)
# per local expert (TE GroupedLinear: one GEMM each for fc1 and fc2 forward, a dgrad and a wgrad each backward;
# in FP8/MXFP8 a quantize of each expert's input and output gradient, tex.split_quantize)
EXPERT = Calls(fwd=2, bwd=4, quantize=2, streamed_fwd=2, streamed_bwd=4)
# Transformer Engine's GroupedLinear (v2.9, ``general_grouped_gemm`` → ``nvte_multi_tensor_gemm``) runs each local
# expert's GEMM as its own cuBLASLt call on one of 4 streams: per GEMM the matmul and layout descriptors, the
# heuristic query and the launch, so a GEMM costs the host more than one eager op. Measured: NVIDIA/
# TransformerEngine PR #3134 (2026-06; SM100; ``benchmarks/linear/benchmark_grouped_linear.py
# --compare-nvfp4-grouped-gemm``, torch.utils.benchmark wall clock), TN fprop of 8 experts × 128 rows, N = K = 2048,
# the GEMMs alone ("pure": operands pre-swizzled): TE's multi-stream path 0.267 ms per call, CUTLASS's single
# launch of the same 8 GEMMs 0.069 ms. Each GEMM is 1.07 GFLOP, a few µs of device time, so the calls are
# host-bound and the 0.198 ms between them is the host's: 24.75 µs per expert GEMM, one eager launch included.
# The PR names no host; the benchmark script's own profiles are DGX B200's, so the x86 DGX B200 host is assumed
# and the cost is carried as a multiple of that host's ``[host] op_s`` (7.22 µs, the catalog's) to every host.
STREAMED_GEMM_S = (0.267e-3 - 0.069e-3) / 8
STREAMED_GEMM_OPS = STREAMED_GEMM_S / 7.22e-6
# Transformer Engine's padding of the routed rows for quantized expert GEMMs, alltoall dispatcher only
#   (``dispatcher``): Megatron-Core's TEGroupedMLP.forward pads the rows and their probabilities
#   (``Fp8Padding``) and unpads fc2's output (``Fp8Unpadding``); TE v2.9 makes each one
#   ``fused_multi_row_padding`` / ``fused_multi_row_unpadding`` launch, and the backward the reverse copy of each
#   gradient: 3 forward, 3 backward. HybridEP writes the padded layout in its dispatch, so flex pays none.
PADDING = Calls(fwd=3, bwd=3)
# the routed experts' fc2 bias applied outside the GEMM (``grouped_mlp``; experts with biases, e.g. gpt-oss):
#   per local expert ``b * p`` and the add forward, then one ``cat``; backward the mul's two products and their
#   two sums per local expert (the cat and the add hand back views)
BIAS = Calls(fwd=2, bwd=4)
BIAS_CAT = Calls(fwd=1)
# the clamped GLU's input (``grouped_mlp``; gpt-oss): two clamps and the cat forward; the clamps' masks and
#   ``where``s (2 + 4) and the chunk's cat backward
CLAMP = Calls(fwd=3, bwd=7)
# TP collectives per layer (tp > 1): with sequence parallelism an all-gather and a reduce-scatter per sublayer
# forward, and in the backward those two and the re-gather of the column GEMM's input; else an all-reduce
# kernels per quantized tensor (Transformer Engine 2.x): FP8 current scaling an amax, the amax reduction, the scale
# and the cast (4); MXFP8 one fused block-scaled cast; NVFP4 the amax pass over the tensor and its Hadamard
# transform, then the cast (2, ``nvfp4``)
QUANTIZE_KERNELS = {"fp8": 4.0, "mxfp8": 1.0, "fp4": 2.0}
# RoPE unfused under YaRN (``rope_unfused``; gpt-oss), beyond ATTENTION's two fused kernels: per tensor (q, k)
#   forward cos, sin, their scaling and casts (6), the two products, the negation, the rotate's cat, the sum and
#   the final cat (6); backward the two products, the negation, the chunk's cat, the sum of the two paths and the
#   slice's zeros and copy (7)
UNFUSED_ROPE = Calls(fwd=2 * 12 - 2, bwd=2 * 7 - 2)
# FP8 dot-product attention (``fp8_attention``): a current-scaling quantize of Q, K and V in the forward and of
# dO in the backward (Transformer Engine v2.8 ``FusedAttnFunc``), ``QUANTIZE_KERNELS["fp8"]`` kernels each
FP8_ATTENTION = Calls(fwd=QUANTIZE_KERNELS["fp8"], bwd=QUANTIZE_KERNELS["fp8"])
TP_SP = Calls(fwd=4, bwd=6)
TP_AR = Calls(fwd=2, bwd=2)


@dataclass(frozen=True)
class LayerHost:
    """Host seconds per layer and micro-batch, and the kernels behind them."""
    before_s: float            # forward up to the MoE sync (a layer without one: its whole forward)
    after_s: float             # forward after the sync: dispatch, experts, combine (0 without a sync)
    bwd_s: float               # backward
    kernels: float             # kernels issued, forward and backward
    syncs: float               # device→host synchronisations (forward)


def _graphed(c: Calls, on: bool) -> Calls:
    """A part captured in a CUDA graph replays as one launch per pass."""
    return Calls(fwd=1.0, bwd=1.0) if on else c


def seconds(c: Calls, cpu, precision: str | None) -> tuple[float, float, float]:
    """(forward s, backward s, kernels) of the calls on ``cpu``; ``precision``: the linears' low-precision
    recipe (None: bf16)."""
    q = c.quantize * QUANTIZE_KERNELS[precision] if precision else 0.0
    f, b = c.fwd + q, c.bwd + q
    gemm = (STREAMED_GEMM_OPS - 1.0) * cpu.op_s              # a streamed GEMM's host time beyond its launch
    return (f * cpu.op_s + c.streamed_fwd * gemm + c.modules * cpu.module_s,
            b * cpu.op_s + c.streamed_bwd * gemm + c.modules * cpu.module_s, f + b)


def _attention(meta: dict, graphed: tuple) -> Calls:
    """A layer's attention part: its kernels, the unfused rotary's, FP8 attention's quantizes; one launch per pass
    where it is captured."""
    c = ATTENTION + _rope(meta) + (FP8_ATTENTION if meta.get("fp8_attention") is not None else Calls())
    return _graphed(c, "attn" in graphed)


def _rope(meta: dict) -> Calls:
    """The unfused rotary's extra kernels where Megatron-Core runs it unfused (a YaRN factor other than 1)."""
    return UNFUSED_ROPE if abs(meta.get("rope_mscale", 1.0) - 1.0) > 1e-9 else Calls()


def moe_parts(meta: dict, tp: int = 1, sp: bool = False, ep: int = 1, precision: str | None = None,
              graphed: tuple = (), dispatcher: str = "alltoall") -> list[tuple[str, bool, Calls]]:
    """What the host issues for one MoE layer and micro-batch of the model ``meta`` describes, part by part:
    (part, issued after the layer's sync, its calls); ``dispatcher``: Megatron-Core's token dispatcher
    (``models.dispatcher``). An empty list for a model without experts."""
    experts = meta.get("experts", 0)
    if not experts:
        return []
    tpc = (TP_SP if sp else TP_AR) if tp > 1 else Calls()
    local = meta.get("expert_slots", experts) / ep                  # with redundant slots (EPLB): (E + N) / ep
    padded = dispatcher in ("alltoall", "deepep") and ep > 1 and precision is not None   # flex (HybridEP) pads in its kernel
    return [("attention", False, _attention(meta, graphed) + tpc.scaled(0.5)),
            ("router", False, _graphed(ROUTER, "moe_router" in graphed)),
            ("preprocess", False, _graphed(PREPROCESS, "moe_preprocess" in graphed)),
            ("dispatch", True, DISPATCH + tpc.scaled(0.5)),
            ("experts", True, EXPERT.scaled(local)),
            ("padding", True, PADDING if padded else Calls()),
            ("expert bias", True, BIAS.scaled(local) + BIAS_CAT if meta.get("expert_bias") else Calls()),
            ("expert clamp", True, CLAMP if meta.get("expert_clamp") else Calls()),
            ("shared expert", True, MLP if meta.get("shared_expert") else Calls())]


def layers(meta: dict, cpu, tp: int = 1, sp: bool = False, ep: int = 1, precision: str | None = None,
           graphed: tuple = (), dispatcher: str = "alltoall") -> tuple[LayerHost, LayerHost]:
    """(a dense layer, an MoE layer) of the model ``meta`` describes, on ``cpu`` (``machine.hostcpu.HostCPU``)."""
    tpc = (TP_SP if sp else TP_AR) if tp > 1 else Calls()
    dense = _graphed(_attention(meta, graphed) + MLP + tpc, "full" in graphed)
    fd, bd, kd = seconds(dense, cpu, precision)
    dense_h = LayerHost(fd, 0.0, bd, kd, 0.0)
    parts = moe_parts(meta, tp, sp, ep, precision, graphed, dispatcher)
    if not parts:
        return dense_h, dense_h
    pre, post = Calls(), Calls()
    for _, after, calls in parts:
        pre, post = (pre, post + calls) if after else (pre + calls, post)
    f1, b1, k1 = seconds(pre, cpu, precision)
    f2, b2, k2 = seconds(post, cpu, precision)
    return dense_h, LayerHost(f1, f2, b1 + b2, k1 + k2, 1.0)


def exposed_s(dense: LayerHost, moe: LayerHost, sync_s: float, n_dense, n_moe, fwd_after, fwd_rest, bwd):
    """Seconds per micro-batch the host adds to the device's time: ``n_dense`` and ``n_moe`` layers on the
    stage; the device's forward seconds after the MoE syncs (``fwd_after``: the dispatch, experts and combine
    of every MoE layer) and the rest of the forward (``fwd_rest``), its backward seconds ``bwd`` (arrays of
    one shape, or floats)."""
    n_dense, n_moe = np.asarray(n_dense, dtype=float), np.asarray(n_moe, dtype=float)
    layers = n_dense + n_moe
    db = fwd_rest / np.maximum(layers, 1e-30)                          # device per layer before the sync
    da = fwd_after / np.maximum(n_moe, 1e-30)                          # … and after it
    a, b = moe.after_s, moe.before_s
    segment = np.maximum(np.maximum(a + b, a + db), da + db) + sync_s
    fwd = np.where(n_moe > 0, n_moe * segment + n_dense * np.maximum(dense.before_s, db),
                   np.maximum(n_dense * dense.before_s, fwd_rest))
    back = np.maximum(n_dense * dense.bwd_s + n_moe * moe.bwd_s, bwd)
    return np.maximum(fwd + back - (fwd_after + fwd_rest + bwd), 0.0)


# ---------------------------------------------------------------------- which ops the host issues after the sync
# By op role (``attrs["role"]``, set by the builders and by capture, as ``parallel.SHARDING``): role → rule(op),
# whether a forward op of that role is issued after its MoE layer's sync. A role without a rule is issued before.
AFTER_SYNC: dict[str, Callable[[Op], bool]] = {}


issued_after = registrar(AFTER_SYNC, "host")     # @issued_after(*roles): the rule for ops of those roles


@issued_after("column", "row", "activation", "cast", "bias")
def _expert_part(op: Op) -> bool:
    """The experts' GEMMs, activations and quantizes (routed and shared experts: ``attrs["expert"]``); a dense
    layer's are issued before (it has no sync)."""
    return bool(op.attrs.get("expert"))


@issued_after("sort", "pad")
def _sort(op: Op) -> bool:
    """The all-to-all dispatcher's sorts of the received rows by local expert and back, and the quantized experts'
    padding copies (``dispatcher``): they follow the dispatch's all-to-all, which waits for the sync."""
    return True


@issued_after("combine")
def _combine(op: Op) -> bool:
    """The unpermute and weighted combine of the experts' outputs (the permute of the routed tokens, role
    ``permute``, is issued before the sync)."""
    return True


def after_sync(op: Op) -> bool:
    """Whether a forward op runs after its MoE layer's sync: the expert all-to-alls (the collectives of the
    expert-parallel group), the experts and the combine (``AFTER_SYNC``)."""
    if op.kind == "collective":
        return op.module == "ep"
    rule = AFTER_SYNC.get(op.attrs.get("role", ""))
    return rule is not None and rule(op)


def moe_layers(ops) -> float:
    """MoE layers among ``ops``: the count of their router's gating GEMM (role ``router``)."""
    return next((op.count for op in ops if op.attrs.get("role") == "router" and op.kind == "matmul"), 0.0)


def backward(name: str) -> bool:
    """A backward op, or a forward op recomputed in the backward: ``<op>.backward``, the backward's collectives
    (``ep.alltoall.dispatch.bwd``, ``tp.allgather.bwd.mlp``, ``tp.allgather.wgrad.mlp``: ``BACKWARD_PARTS``) and
    ``.recompute``."""
    return name.endswith(".backward") or ".recompute" in name or not BACKWARD_PARTS.isdisjoint(name.split("."))


@dataclass
class HostTerm:
    """The host term of one micro-batch on a stage."""
    cpu: str
    exposed_s: float           # seconds the device waits for the host, per micro-batch
    issue_s: float             # host seconds to issue the micro-batch's kernels
    kernels: float             # kernels issued per micro-batch
    syncs: float               # device→host synchronisations per micro-batch
    captured: bool = False     # the whole step replays as one CUDA graph ("full_iteration")

    def why(self) -> str:
        if self.captured:
            return (f"the step's forward and backward replay as one CUDA graph (--cuda-graph full_iteration): the "
                    f"host ({self.cpu}) issues no kernel inside it and the device does not wait for it")
        wait = (f", {self.syncs:.0f} device→host syncs (Megatron-Core's dropless MoE dispatcher waits for the "
                f"split sizes every MoE layer)" if self.syncs else "")
        return (f"the host ({self.cpu}) issues {self.kernels:,.0f} kernels per micro-batch in "
                f"{1e3 * self.issue_s:.1f} ms{wait}; the device waits {1e3 * self.exposed_s:.1f} ms for it")


def step_term(sg, rows: list[dict], hw, tp: int, sp: bool, ep: int, graphed: tuple = (),
              dispatcher: str = "alltoall") -> HostTerm | None:
    """The host term of one micro-batch of the stage graph ``sg`` (its law rows ``rows``) on ``hw``; None where
    the hardware file names no host (``[host]``)."""
    from ..machine.hostcpu import of
    cpu = of(hw)
    if cpu is None or "layers" not in sg.meta:
        return None
    if "full_iteration" in graphed:
        return HostTerm(cpu.cpu, 0.0, 0.0, 0.0, 0.0, captured=True)
    dense, moe = layers(sg.meta, cpu, tp, sp, ep, sg.meta.get("precision"), graphed, dispatcher)
    R = max(op.count for op in sg.ops)
    n_moe = moe_layers(sg.ops)
    after = rest = bwd = 0.0
    for op, r in zip(sg.ops, rows, strict=True):
        if backward(op.name):
            bwd += r["time_s"]
        elif after_sync(op):
            after += r["time_s"]
        else:
            rest += r["time_s"]
    n_dense = R - n_moe
    exp = float(exposed_s(dense, moe, cpu.sync_s, n_dense, n_moe, after, rest, bwd))
    issue = n_dense * (dense.before_s + dense.bwd_s) + n_moe * (moe.before_s + moe.after_s + moe.bwd_s)
    return HostTerm(cpu.cpu, exp, issue, n_dense * dense.kernels + n_moe * moe.kernels, n_moe * moe.syncs)
