"""FLOP and byte formulas per aten op: one small function per op, filed by a decorator.

Shaped like ``torch.utils.flop_counter``: ``@formula(aten.add, aten.sub, kind="elementwise")``
files a function ``f(args, kwargs, out) -> flops`` for each op packet. Matrix ops (mm, addmm, bmm,
convolution, CUDA attention …) reuse torch's own ``flop_registry`` so their FLOPs equal
``FlopCounterMode`` exactly; everything else is counted here.

Conventions
- FLOPs are floating-point operations (a multiply-accumulate is 2), as in torch's registry; like
  torch, ``addmm`` does not count the bias add. Attention counts QKᵀ and PV over the query-key
  pairs the kernel computes: all of them (= torch's count), or, when the call says ``is_causal``,
  the lower triangle (GPU flash kernels skip the masked blocks; torch's count ignores this) or the
  key blocks torch's CPU kernel runs (``cpu_causal_fraction``: every pair below 512 keys).
- Elementwise ops, norms and softmax count per element with ``ironlaw.core.flopcount``, the convention the
  built-in workloads use too: the arithmetic steps of the textbook definition, an elementary function
  evaluated in software (exp, log, tanh, erf, sin …) counting TRANSCENDENTAL (4) steps, sqrt, rsqrt and
  reciprocal one: ``sigmoid`` = 1/(1+exp(-x)) = 7, ``silu`` = 7, ``gelu`` = 8 (erf form) or 12 (tanh
  form), layer norm 7, RMS norm 4, batch norm 5 (training) or 2 (running statistics), softmax 8; a
  backward counts twice its forward (softmax's: 3).
- Bytes: by default an op reads every distinct element of its tensor inputs (a broadcast input is
  read once) and writes its outputs. A byte formula (``@bytes_rule``) overrides that where the
  default is wrong: a gather reads only the rows it picks, ``copy_``/``fill_`` do not read the
  destination. Views and allocations move no bytes and do no work (``NO_WORK``).
An op without a FLOP formula is *uncounted*: the capture lists it with its count, never as zero.
"""
from __future__ import annotations

import math
from typing import Callable

import torch
from torch.utils.flop_counter import flop_registry as TORCH_FLOPS, sdpa_backward_flop_count, sdpa_flop_count

from ...core import flopcount as fc

aten = torch.ops.aten

FLOPS: dict = {}          # op packet -> f(args, kwargs, out) -> flops
KIND: dict = {}           # op packet -> ironlaw.core.graph.KINDS member
BYTES: dict = {}          # op packet -> f(args, kwargs, out) -> (reads, writes): lists of (tensor, elements)


def formula(*packets, kind: str):
    def deco(fn: Callable) -> Callable:
        for p in packets:
            if p in FLOPS:
                raise RuntimeError(f"duplicate FLOP formula for {p}")
            FLOPS[p] = fn
            KIND[p] = kind
        return fn
    return deco


def bytes_rule(*packets):
    def deco(fn: Callable) -> Callable:
        for p in packets:
            BYTES[p] = fn
        return fn
    return deco


def _packets(*names: str) -> list:
    """Op packets by name, skipping those this torch build lacks."""
    return [getattr(aten, n) for n in names if hasattr(aten, n)]


def numel(x) -> int:
    return x.numel() if isinstance(x, torch.Tensor) else 0


def distinct_elements(t: torch.Tensor) -> int:
    """Elements a kernel must touch: a dimension with stride 0 (expand/broadcast) is read once."""
    n = 1
    for size, stride in zip(t.shape, t.stride()):
        if stride != 0:
            n *= size
    return n if t.numel() else 0


def tensors(x) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []
    if isinstance(x, torch.Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            out.extend(tensors(y))
    elif isinstance(x, dict):
        for y in x.values():
            out.extend(tensors(y))
    return out


def out_elems(out) -> int:
    return sum(t.numel() for t in tensors(out))


# ---------------------------------------------------------------- ops that do no work
# Views alias their input; allocations reserve memory without touching it. Both are kept in the
# record list (torch.profiler shows them) but carry no FLOPs and no bytes.
NO_WORK_NAMES = ("view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "expand_as", "slice",
                 "select", "unsqueeze", "squeeze", "as_strided", "alias", "detach", "lift_fresh", "split",
                 "split_with_sizes", "chunk", "unbind", "narrow", "diagonal", "view_as", "unfold", "_reshape_alias",
                 "numpy_T", "movedim", "unflatten", "flatten", "view_as_real", "view_as_complex", "_conj", "_neg_view",
                 "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "resize_", "set_",
                 "_local_scalar_dense", "is_nonzero", "item", "result_type", "_has_compatible_shallow_copy_type",
                 "lift", "_nested_tensor_from_mask_left_aligned")
NO_WORK = set(_packets(*NO_WORK_NAMES))
for _p in NO_WORK:
    KIND[_p] = "copy"


def is_no_work(func) -> bool:
    return func._overloadpacket in NO_WORK or getattr(func, "is_view", False)


# ---------------------------------------------------------------- matrix ops: torch's registry
def _torch_formula(packet):
    fn = TORCH_FLOPS[packet]
    return lambda args, kwargs, out: float(fn(*args, **kwargs, out_val=out))


for _p in TORCH_FLOPS:
    if not isinstance(_p, torch._ops.OpOverloadPacket):
        continue
    _name = _p.__name__
    FLOPS[_p] = _torch_formula(_p)
    KIND[_p] = ("conv" if "conv" in _name else "attention" if "attention" in _name else "matmul")


# Attention kernels: torch's count (QKᵀ and PV over every query-key pair) times the fraction of
# pairs a causal kernel computes. GPU flash kernels skip the blocks above the diagonal, so with
# ``is_causal`` a query i sees keys 0..i (upper-left alignment): Σ min(i+1, s_k) pairs. The CPU flash
# kernel skips whole key blocks only (``cpu_causal_fraction``). Without ``is_causal`` this equals
# torch's FlopCounterMode exactly.
ATTENTION_KERNELS = ("_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention",
                     "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
                     "_scaled_dot_product_flash_attention_for_cpu_backward",
                     "_scaled_dot_product_flash_attention_backward",
                     "_scaled_dot_product_efficient_attention_backward",
                     "_scaled_dot_product_cudnn_attention_backward")
# op packet name -> position of ``is_causal`` among the positional arguments (from the schema)
IS_CAUSAL_AT = {n: [a.name for a in getattr(aten, n).default._schema.arguments].index("is_causal")
                for n in ATTENTION_KERNELS if hasattr(aten, n)}


def causal_fraction(s_q: int, s_k: int) -> float:
    if s_q <= 0 or s_k <= 0:
        return 1.0
    m = min(s_q, s_k)
    pairs = m * (m + 1) / 2 + (s_q - m) * s_k
    return pairs / (s_q * s_k)


CPU_KV_BLOCK = 512     # keys per block of torch's CPU flash attention


def cpu_q_block(s_q: int) -> int:
    return 256 if s_q >= 768 else 64 if s_q >= 192 else 32


def cpu_causal_fraction(s_q: int, s_k: int) -> float:
    """The share of query-key pairs torch's CPU flash attention computes with ``is_causal``: each block of
    queries (``cpu_q_block``) runs every key block (CPU_KV_BLOCK) that holds a key it may see, so below 512
    keys nothing is skipped. Measured on a 2-vCPU EPYC VM (torch 2.13, 12 heads of 64): causal takes
    0.90–1.14× the time of full attention at s = 32…512, 0.77× at 768, 0.68× at 1024, 0.62× at 2048; this
    rule gives 1, 0.78, 0.75, 0.625 (the triangle: 0.50). tests/test_capture_flops.py holds it to them."""
    if s_q <= 0 or s_k <= 0:
        return 1.0
    qb, pairs = cpu_q_block(s_q), 0
    for m in range(0, s_q, qb):
        seen = min(m + qb, s_k)
        pairs += min(-(-seen // CPU_KV_BLOCK) * CPU_KV_BLOCK, s_k) * min(qb, s_q - m)
    return pairs / (s_q * s_k)


def is_causal(packet_name: str, args, kwargs) -> bool:
    if "is_causal" in kwargs:
        return bool(kwargs["is_causal"])
    pos = IS_CAUSAL_AT.get(packet_name)
    return pos is not None and len(args) > pos and args[pos] is True


def _attention_formula(packet_name: str, full: Callable, q_at: int):
    def f(args, kwargs, out):
        flops = full(args, kwargs, out)
        if is_causal(packet_name, args, kwargs):
            q, k = args[q_at], args[q_at + 1]
            share = cpu_causal_fraction if packet_name.startswith("_scaled_dot_product_flash_attention_for_cpu") \
                else causal_fraction
            flops *= share(q.shape[-2], k.shape[-2])
        return flops
    return f


@formula(*_packets("_scaled_dot_product_flash_attention_for_cpu"), kind="attention")
def cpu_attention(args, kwargs, out):
    q, k, v = args[:3]
    return float(sdpa_flop_count(q.shape, k.shape, v.shape))


@formula(*_packets("_scaled_dot_product_flash_attention_for_cpu_backward"), kind="attention")
def cpu_attention_backward(args, kwargs, out):
    grad_out, q, k, v = args[:4]
    return float(sdpa_backward_flop_count(grad_out.shape, q.shape, k.shape, v.shape))


for _name, _pos in IS_CAUSAL_AT.items():
    if hasattr(aten, _name) and getattr(aten, _name) in FLOPS:
        FLOPS[getattr(aten, _name)] = _attention_formula(_name, FLOPS[getattr(aten, _name)],
                                                         1 if _name.endswith("backward") else 0)


# Grouped GEMM (``torch._grouped_mm``: transformers' MoE experts, one matrix per expert). ``offs`` splits one
# operand's rows (or, for 2-D × 2-D, the shared K) into groups; each output element is a K-long dot product:
#   (M, K) × (G, K, N) -> (M, N)    rows routed to groups          FLOPs 2·M·K·N
#   (G, M, K) × (G, K, N) -> (G, M, N) / (G, M, K) × (K, N) -> (M, N): likewise 2·out·K
#   (M, K) × (K, N) -> (G, M, N)    K split over the groups (the weight gradient)   FLOPs 2·M·K·N
@formula(*_packets("_grouped_mm"), kind="matmul")
def grouped_mm(args, kwargs, out):
    a, b = args[0], args[1]
    if a.dim() == 2 and b.dim() == 2:
        return 2.0 * a.shape[0] * a.shape[1] * b.shape[1]
    return 2.0 * out.numel() * a.shape[-1]


@bytes_rule(*_packets("_grouped_mm"))
def grouped_mm_bytes(args, kwargs, out):
    """Rows routed to G matrices (2-D × 3-D) read only the matrices of the groups holding rows: at most one per
    row, min(M, G) of G (the offsets' values are unknown on fake tensors; a token's top-k experts are distinct,
    so for one token this is exact, like ``embedding``'s rows). Every other layout reads its operands whole."""
    a, b = args[0], args[1]
    reads = [(t, distinct_elements(t)) for t in tensors(list(args[2:]) + list(kwargs.values()))]
    if a.dim() == 2 and b.dim() == 3:
        groups = min(a.shape[0], b.shape[0])
        return [(a, distinct_elements(a)), (b, groups * b.shape[1] * b.shape[2])] + reads, [(out, out.numel())]
    return [(a, distinct_elements(a)), (b, distinct_elements(b))] + reads, [(out, out.numel())]


# ---------------------------------------------------------------- elementwise
def per_element(cost: float):
    return lambda args, kwargs, out: cost * out_elems(out)


ELEMENTWISE_COST = (                # (FLOPs per output element, ops): a tuple, as costs repeat
    (1, ("add", "sub", "mul", "div", "neg", "abs", "relu", "relu_", "add_", "sub_", "mul_", "div_", "neg_",
        "clamp", "clamp_", "clamp_min", "clamp_min_", "clamp_max", "maximum", "minimum", "where", "masked_fill",
        "masked_fill_", "eq", "ne", "lt", "le", "gt", "ge", "logical_not", "logical_and", "logical_or",
        "bitwise_not", "bitwise_and", "bitwise_or", "hardtanh", "hardtanh_", "threshold", "threshold_",
        "threshold_backward", "sqrt", "rsqrt", "reciprocal", "sign", "floor", "ceil", "round", "trunc", "fmod",
        "remainder", "floor_divide", "square", "sgn", "leaky_relu", "leaky_relu_", "isnan", "isinf",
        "triu", "tril", "triu_", "tril_", "rsub", "copysign", "bernoulli_", "uniform_",
        "normal_", "lerp_", "_assert_async", "nan_to_num")),
    (2, ("pow", "addcmul", "addcmul_", "addcdiv", "addcdiv_", "lerp", "hardsigmoid", "hardswish",
        "leaky_relu_backward", "hardtanh_backward", "tanh_backward", "mse_loss")),
    (3, ("sigmoid_backward", "hardswish_backward")),
    (fc.TRANSCENDENTAL, ("exp", "exp_", "log", "log_", "tanh", "tanh_", "erf", "sin", "cos", "exp2", "log2", "log1p",
                        "expm1", "atan", "atan2")),
    (fc.SIGMOID, ("sigmoid", "sigmoid_")),
    (fc.SILU, ("silu", "silu_")),
    (fc.SOFTPLUS, ("softplus",)),
    (fc.ELU, ("elu",)),
    (fc.MISH, ("mish",)),
    (fc.BACKWARD * fc.SILU, ("silu_backward",)),
    (fc.BACKWARD * fc.MISH, ("mish_backward",)),
)
for _cost, _names in ELEMENTWISE_COST:
    formula(*_packets(*_names), kind="elementwise")(per_element(float(_cost)))


@formula(*_packets("gelu", "gelu_"), kind="elementwise")
def gelu(args, kwargs, out):
    tanh = kwargs.get("approximate", args[1] if len(args) > 1 else "none") == "tanh"
    return (fc.GELU_TANH if tanh else fc.GELU_ERF) * out_elems(out)


@formula(*_packets("gelu_backward"), kind="elementwise")
def gelu_backward(args, kwargs, out):
    # d/dx of gelu re-evaluates the forward plus the derivative and the product with grad: twice the forward
    tanh = kwargs.get("approximate", args[2] if len(args) > 2 else "none") == "tanh"
    return fc.BACKWARD * (fc.GELU_TANH if tanh else fc.GELU_ERF) * out_elems(out)


@formula(*_packets("_fused_adamw_", "_fused_adam_"), kind="elementwise")
def fused_adam(args, kwargs, out):
    # per parameter: m = β1·m + (1-β1)·g (3), v = β2·v + (1-β2)·g² (4), update p -= lr·(m̂/(√v̂+ε) + λ·p) (5)
    return 12.0 * sum(p.numel() for p in args[0])


@formula(*_packets("_foreach_add_", "_foreach_add", "_foreach_mul_", "_foreach_mul", "_foreach_div_",
                   "_foreach_sub_", "_foreach_lerp_", "_foreach_addcmul_", "_foreach_addcdiv_", "_foreach_sqrt",
                   "_foreach_neg", "_foreach_maximum_", "_foreach_copy_", "_foreach_zero_"), kind="elementwise")
def foreach(args, kwargs, out):
    return float(sum(t.numel() for t in args[0]))


# ---------------------------------------------------------------- norms, softmax, reductions
def per_input(cost: float):
    return lambda args, kwargs, out: cost * numel(args[0])


for _cost, _names in ((fc.LAYERNORM, ("native_layer_norm", "native_group_norm")),
                      (fc.RMSNORM, ("_fused_rms_norm", "rms_norm")),
                      (fc.BATCHNORM_TRAIN, ("_batch_norm_with_update",)),
                      (fc.BATCHNORM_EVAL, ("_native_batch_norm_legit_no_training", "_batch_norm_no_update")),
                      (fc.BACKWARD * fc.LAYERNORM, ("native_layer_norm_backward", "native_group_norm_backward")),
                      (fc.BACKWARD * fc.RMSNORM, ("_fused_rms_norm_backward",)),
                      (fc.BACKWARD * fc.BATCHNORM_TRAIN, ("native_batch_norm_backward", "batch_norm_backward"))):
    formula(*_packets(*_names), kind="norm")(per_input(_cost))


@formula(*_packets("native_batch_norm", "_native_batch_norm_legit", "batch_norm"), kind="norm")
def batch_norm(args, kwargs, out):
    """Statistics of the batch (training) or running statistics (eval), as the built-in ResNet counts them."""
    training = next((a for a in args if isinstance(a, bool)), kwargs.get("training", True))   # its first bool
    return (fc.BATCHNORM_TRAIN if training else fc.BATCHNORM_EVAL) * numel(args[0])


formula(*_packets("_softmax", "_safe_softmax", "softmax"), kind="softmax")(per_input(fc.SOFTMAX))
formula(*_packets("_log_softmax", "log_softmax"), kind="softmax")(per_input(fc.LOG_SOFTMAX))
formula(*_packets("_softmax_backward_data", "_log_softmax_backward_data"), kind="softmax")(
    per_input(fc.SOFTMAX_BACKWARD))


@formula(*_packets("sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "any", "all",
                   "norm", "linalg_vector_norm", "cumsum", "logsumexp", "topk", "sort"), kind="reduction")
def reduction(args, kwargs, out):
    return float(numel(args[0]))


@formula(*_packets("var", "std", "var_mean", "std_mean"), kind="reduction")
def variance(args, kwargs, out):
    return 3.0 * numel(args[0])


@formula(*_packets("nll_loss_forward", "nll_loss2d_forward", "nll_loss_backward", "nll_loss2d_backward"),
         kind="reduction")
def nll_loss(args, kwargs, out):
    return float(numel(args[1]))   # one pick and one add per target


@formula(*_packets("_adaptive_avg_pool2d", "adaptive_avg_pool2d", "_adaptive_avg_pool3d", "adaptive_max_pool2d",
                   "_adaptive_avg_pool2d_backward", "adaptive_max_pool2d_backward"), kind="pool")
def adaptive_pool(args, kwargs, out):
    return float(max(numel(args[0]), out_elems(out)))    # every input element enters one window sum


def _window(args, pos: int) -> int:
    k = args[pos] if len(args) > pos else 1
    return math.prod(k) if isinstance(k, (list, tuple)) else int(k)


@formula(*_packets("max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool2d", "avg_pool3d",
                   "max_pool2d", "avg_pool1d", "max_pool1d"), kind="pool")
def pool(args, kwargs, out):
    o = tensors(out)[0]
    kernel = _window(args, 1)
    if len(_as_list(args[1])) == 1 and o.dim() >= 3:
        kernel = kernel ** (o.dim() - 2)
    return float(o.numel() * kernel)      # one compare or add per window element


@formula(*_packets("max_pool2d_with_indices_backward", "avg_pool2d_backward", "max_pool3d_with_indices_backward",
                   "avg_pool3d_backward"), kind="pool")
def pool_backward(args, kwargs, out):
    return float(numel(args[0]))          # scatter each output gradient back


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


# ---------------------------------------------------------------- gathers: embedding, index
@formula(*_packets("embedding", "index_select", "gather", "index", "_embedding_bag", "embedding_bag",
                   "take_along_dim"), kind="embedding")
def gather(args, kwargs, out):
    return 0.0


@bytes_rule(*_packets("embedding"))
def embedding_bytes(args, kwargs, out):
    weight, idx = args[0], args[1]
    return [(idx, idx.numel()), (weight, out.numel())], [(out, out.numel())]


@bytes_rule(*_packets("index_select", "gather", "index", "take_along_dim"))
def gather_bytes(args, kwargs, out):
    src = args[0]
    idx = [t for t in tensors(args[1:]) if t is not src]
    return [(src, out.numel())] + [(t, distinct_elements(t)) for t in idx], [(out, out.numel())]


@formula(*_packets("embedding_dense_backward", "index_add", "index_add_", "scatter_add", "scatter_add_",
                   "index_put", "index_put_", "_index_put_impl_", "scatter", "scatter_", "index_copy",
                   "index_copy_", "masked_scatter", "masked_scatter_", "_embedding_bag_backward"), kind="embedding")
def scatter(args, kwargs, out):
    return float(max((numel(t) for t in tensors(args[1:])), default=0))   # one add per scattered element


@bytes_rule(*_packets("embedding_dense_backward"))
def embedding_backward_bytes(args, kwargs, out):
    grad, idx = args[0], args[1]
    return [(grad, grad.numel()), (idx, idx.numel())], [(out, out.numel())]


@bytes_rule(*_packets("index_put_", "_index_put_impl_", "index_copy_", "scatter_"))
def scatter_inplace_bytes(args, kwargs, out):
    dst = args[0]
    src = [t for t in tensors(args[1:])]
    n = max((t.numel() for t in src), default=0)
    return [(t, distinct_elements(t)) for t in src], [(dst, min(n, dst.numel()))]


@bytes_rule(*_packets("_fused_adamw_", "_fused_adam_"))
def fused_adam_bytes(args, kwargs, out):
    # reads params, grads, both moments (and the step counters); writes params and both moments
    params, grads, m, v = args[0], args[1], args[2], args[3]
    steps = args[5] if len(args) > 5 else []
    reads = [(t, t.numel()) for t in tensors([params, grads, m, v, steps])]
    return reads, [(t, t.numel()) for t in tensors([params, m, v])]


# ---------------------------------------------------------------- copies and fills
@formula(*_packets("_to_copy", "copy_", "clone", "contiguous", "cat", "stack", "constant_pad_nd", "fill_",
                   "zero_", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "arange", "linspace",
                   "scalar_tensor", "slice_scatter", "select_scatter", "as_strided_scatter", "_copy_from",
                   "_to_dense", "repeat", "roll", "flip", "new_zeros", "new_ones", "new_full", "randn", "rand",
                   "randint", "randn_like", "rand_like", "reflection_pad2d", "replication_pad2d", "_unsafe_index",
                   "upsample_nearest2d", "masked_select", "nonzero", "_pin_memory", "_foreach_copy",
                   "lift_fresh_copy", "tensor_split", "to"), kind="copy")
def copy(args, kwargs, out):
    return 0.0


WRITE_ONLY = set(_packets("fill_", "zero_", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like",
                          "arange", "linspace", "scalar_tensor", "new_zeros", "new_ones", "new_full", "randn", "rand",
                          "randint", "randn_like", "rand_like", "normal_", "uniform_", "bernoulli_"))


@bytes_rule(*WRITE_ONLY)
def write_only_bytes(args, kwargs, out):
    return [], [(t, t.numel()) for t in tensors(out)]


@bytes_rule(*_packets("copy_"))
def copy_bytes(args, kwargs, out):
    dst, src = args[0], args[1]
    return [(src, distinct_elements(src))], [(dst, dst.numel())]


def kind_of(func) -> str:
    return KIND.get(func._overloadpacket, "elementwise")


def flops_of(func, args, kwargs, out) -> float | None:
    """FLOPs of one call, or None when no formula is filed for the op."""
    fn = FLOPS.get(func._overloadpacket)
    if fn is None:
        return 0.0 if is_no_work(func) else None
    return float(fn(args, kwargs, out))


def traffic_of(func, args, kwargs, out) -> tuple[list, list]:
    """(reads, writes): lists of (tensor, elements) the op moves; empty for views and allocations."""
    if is_no_work(func):
        return [], []
    rule = BYTES.get(func._overloadpacket)
    if rule is not None:
        return rule(args, kwargs, out)
    reads, seen = [], set()
    for i, a in enumerate(args):
        _collect(a, reads, seen)
    for k, a in kwargs.items():
        if k != "out":
            _collect(a, reads, seen)
    writes = [(t, distinct_elements(t)) for t in tensors(out)]
    if not writes:                     # a void op (``_foreach_add_``): it writes its mutable arguments
        for a, val in zip(func._schema.arguments, args):
            if a.alias_info is not None and a.alias_info.is_write:
                writes += [(t, distinct_elements(t)) for t in tensors(val)]
    # an out= argument or a pure destination is written, not read
    if "out" in kwargs:
        outs = {id(t) for t in tensors(kwargs["out"])}
        reads = [r for r in reads if id(r[0]) not in outs]
    return reads, writes


def _collect(a, reads: list, seen: set) -> None:
    for t in tensors(a):
        if id(t) not in seen:
            seen.add(id(t))
            reads.append((t, distinct_elements(t)))
