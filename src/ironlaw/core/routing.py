"""How a mixture-of-experts router spreads a step's tokens over the expert-parallel ranks: the busiest rank's load.

An expert-parallel MoE layer lasts as long as its busiest rank (the ranks meet again at the combine), so what
prices the layer is that rank's routed rows R and the distinct local experts U its tokens reach. Two routings, as
NVIDIA's aiconfigurator collector times TensorRT-LLM's fused MoE (collector/helper.py, Apache-2.0):

    balanced          token j's k picks go to the experts (j·s/t + m·s) mod E, s = ⌈E/k⌉ (t < s), else
                      (j + m·s) mod E (``balanced_logits``); the rank owns experts 0 … E/ep − 1; through a
                      group-limited router (vLLM's and SGLang's DeepSeek-V3 rows) ``grouped_balanced_local``
    power_law_<α>     each expert's load drawn from a power law of exponent α on [1, 0.8·tokens] (on [0.01, 2]
                      when tokens·k ≤ E), scaled and rounded to tokens·k rows, the most loaded rank's experts
                      swapped onto the measured rank (``power_law_logits_v3``); the draw is unseeded there, so
                      the expectation over ``DRAWS`` draws (seeded here) is what is used

aiconfigurator's serving model prices the MoE layer on the ``power_law_1.2`` rows by default
(aiconfigurator-core 0.12.0, sdk/config.py: ``workload_distribution`` "power_law"; sdk/models/moe.py: the alpha
1.2), its stand-in for the load real routers put on the busiest rank. numpy only (on the prediction path).
"""
from __future__ import annotations

import functools
import math

import numpy as np

DRAWS = 64                # power-law routings drawn per row shape (seeded: the expectation is what is used)
ROUTINGS = ("balanced", "power_law_<alpha>")


def balanced_local(tokens: int, experts: int, k: int, ep: int) -> tuple[int, int]:
    """(routed rows, distinct experts) that land on rank 0 under the collector's balanced routing."""
    s = math.ceil(experts / k)
    j, m = np.arange(tokens)[:, None], np.arange(k)[None, :]
    picks = (j + m * s) % experts if tokens >= s else np.floor(j * s / tokens + m * s).astype(int) % experts
    local = picks[picks < experts // ep]
    return int(local.size), int(np.unique(local).size)


@functools.lru_cache(maxsize=4096)
def grouped_balanced_local(tokens: int, experts: int, k: int, ep: int, n_group: int, topk_group: int
                           ) -> tuple[int, int]:
    """(routed rows, distinct experts) that land on rank 0 when the collector's balanced logits (``balanced_local``'s
    picks) pass through a group-limited top-k router of ``n_group`` expert groups, ``topk_group`` kept per token
    (DeepSeek-V3's noaux_tc routing; the bias zero). Each group scores the sum of its two best experts; the kept
    groups are the best, a tie going to the lower group index, then the token's k best experts within them, a tie
    going to the lower expert index (vLLM csrc/moe/grouped_topk_kernels.cu, ``group_idx_and_topk_idx_kernel``,
    its stable ``WarpSelect``). A token's picked experts outrank the rest, so where its picks put the same count in
    every group the kept groups are the first ``topk_group`` for every token, and the picks that fall outside them
    are replaced by the lowest-index unpicked experts of those groups."""
    s, size = math.ceil(experts / k), experts // n_group
    j, m = np.arange(tokens)[:, None], np.arange(k)[None, :]
    picks = (j + m * s) % experts if tokens >= s else np.floor(j * s / tokens + m * s).astype(int) % experts
    hot = np.zeros((tokens, experts), bool)
    hot[np.arange(tokens)[:, None], picks] = True
    per_group = np.sort(hot.reshape(tokens, n_group, size), axis=2)[:, :, -2:].sum(axis=2)
    order = np.argsort(-per_group, axis=1, kind="stable")[:, :topk_group]
    kept = np.zeros((tokens, n_group), bool)
    kept[np.arange(tokens)[:, None], order] = True
    score = np.where(np.repeat(kept, size, axis=1), hot.astype(float), -1.0)
    chosen = np.argsort(-score, axis=1, kind="stable")[:, :k]
    local = chosen[chosen < experts // ep]
    return int(local.size), int(np.unique(local).size)


def uniform_local(tokens: int, experts: int, k: int, ep: int) -> tuple[float, float]:
    """(routed rows, distinct experts reached) on one of ``ep`` ranks, expected, when each token picks ``k`` distinct
    experts uniformly at random (the top-k of i.i.d. random scores: ROCm/aiter's fused-MoE tuner,
    csrc/ck_gemm_moe_2stages_codegen/gemm_moe_tune.py ``generate_data``, scores ``torch.randn``): t·k/ep rows, and
    each of the rank's E/ep experts missed by all t tokens with probability (1 − k/E)^t."""
    t, e, kk, n = float(tokens), float(experts), float(k), float(ep)
    return t * kk / n, e / n * (1.0 - (1.0 - kk / e) ** t)


def power_law_local(tokens: int, experts: int, k: int, ep: int, alpha: float, draws: int = DRAWS,
                    seed: int = 0) -> tuple[float, float]:
    """(routed rows, distinct experts with rows) on the busiest rank under the collector's power-law routing of
    exponent ``alpha`` (module docstring): the rank a kernel-table row times, averaged over ``draws`` draws."""
    rows, used, _ = power_law_ranks(tokens, experts, k, ep, alpha, draws, seed)
    return rows, used


@functools.lru_cache(maxsize=4096)
def power_law_ranks(tokens: int, experts: int, k: int, ep: int, alpha: float, draws: int = DRAWS,
                    seed: int = 0) -> tuple[float, float, float]:
    """(routed rows and distinct experts with rows on the rank with the most rows, the most distinct experts with
    rows on any rank) under the power-law routing of exponent ``alpha``, averaged over ``draws`` draws."""
    rng = np.random.default_rng(seed)
    lo, hi = (1.0, 0.8 * tokens) if tokens * k > experts else (0.01, 2.0)
    a = 1.0 - alpha
    x = ((hi ** a - lo ** a) * rng.random((draws, experts)) + lo ** a) ** (1.0 / a)
    rows, used, widest = [], [], []
    for load in x:
        n = np.round(load / load.sum() * tokens * k).astype(int)
        _fix_total(n, tokens * k)
        rank = n.reshape(ep, experts // ep)
        top = rank[int(np.argmax(rank.sum(1)))]
        rows.append(top.sum())
        used.append(np.count_nonzero(top))
        widest.append(np.count_nonzero(rank, axis=1).max())
    return float(np.mean(rows)), float(np.mean(used)), float(np.mean(widest))


def _fix_total(n: np.ndarray, total: int) -> None:
    """The collector's rounding fix, in place: the missing rows go one each to the most loaded experts in turn,
    the surplus comes one each off the least loaded (off the most loaded where one is empty)."""
    delta = total - int(n.sum())
    order = np.argsort(-n, kind="stable")
    for j in range(abs(delta)):
        if delta > 0:
            n[order[j % len(order)]] += 1
        else:
            e = order[-(j % len(order)) - 1]
            n[e if n[e] > 0 else int(np.argmax(n))] -= 1


def routing_of(name: str):
    """The rows-and-experts function (tokens, experts, k, ep) -> (R, U) of a routing's name (balanced,
    power_law_<α> with α > 1), or None for a name it does not know."""
    if name == "balanced":
        return balanced_local
    if name.startswith("power_law_"):
        try:
            alpha = float(name[len("power_law_"):])
        except ValueError:
            return None
        if not (alpha > 1.0 and math.isfinite(alpha)):
            return None
        return lambda t, e, k, ep: power_law_local(t, e, k, ep, alpha)
    return None


def slowest_rank(name: str, tokens: float, experts: int, k: int, ep: int) -> tuple[float, float]:
    """(routed rows, distinct local experts reached) that bound the slowest of ``ep`` ranks when ``tokens`` tokens
    (the ranks' pooled tokens, rounded to a whole number, at least 1) pick ``k`` of ``experts`` under routing
    ``name``; an unknown name is an error. An expert-parallel layer lasts as long as its slowest rank (they meet
    at the combine): the most rows any rank computes and the most experts any rank streams (under a skewed routing
    not always the same rank: the pair bounds that rank from above, and equals it where one term dominates — the
    rows in prompt-heavy steps, the weights in decode steps of wide experts)."""
    route = routing_of(name)
    if route is None:
        from .errors import IronlawError
        raise IronlawError(f"unknown MoE routing '{name}' (known: {', '.join(ROUTINGS)}, alpha > 1)")
    t, e, kk, n = max(1, int(round(tokens))), int(experts), int(k), int(ep)
    if name == "balanced":
        return route(t, e, kk, n)
    rows, _, widest = power_law_ranks(t, e, kk, n, float(name[len("power_law_"):]))
    return rows, widest


def dummy_rank_experts(experts: int, k: int, ep: int) -> float:
    """How many of one token's ``k`` distinct experts the busiest of ``ep`` ranks hosts, expected over the token's
    picks (uniform over the ``experts``, E/ep to a rank): exact, from the k-subsets whose every rank holds at most
    m of them, the coefficient of x^k in (sum over j <= m of C(E/ep, j) x^j)^ep. Where every token of a group is the
    same token (a CUDA-graph padded step's padding: one replicated request), the whole group lands on these k
    experts, and the busiest rank computes all of its rows for this many of them."""
    e, kk, n = int(experts), int(k), int(ep)
    if n < 1 or e % n or not 1 <= kk <= e:
        from .errors import IronlawError
        raise IronlawError(f"expected experts a rank hosts: need 1 <= k <= experts and experts a multiple of the "
                           f"ranks, got k={kk}, experts={e}, ranks={n}")
    per = e // n

    def subsets(m: int) -> int:          # k-subsets with at most m experts on every rank
        poly = [1]
        for _ in range(n):
            poly = [sum(poly[i - j] * math.comb(per, j) for j in range(min(m, per, i) + 1) if i - j < len(poly))
                    for i in range(min(len(poly) + per, kk + 1))]
        return poly[kk] if len(poly) > kk else 0
    total = math.comb(e, kk)
    return float(sum(1.0 - subsets(m) / total for m in range(min(kk, per))))


# TensorRT-LLM 1.0's renormalize router (tensorrt_llm/_torch/modules/fused_moe/routing.py,
# ``RenormalizeMoeRoutingMethod.apply``, the router aiconfigurator 0.8.0's collector times the fused MoE with) runs
# its own top-k kernel (``renorm_moe_routing_op``) up to 128 experts and top-8, and above either falls back to
# PyTorch's ``torch.topk`` and ``softmax`` over the router logits (later releases raise the limits to 512 and 16)
TORCH_ROUTER_ABOVE = (128, 8)


def torch_router(experts, topk, above: tuple = TORCH_ROUTER_ABOVE):
    """Whether a layer of ``experts`` experts picking ``topk`` each routes on PyTorch's top-k (``above``: the
    router kernel's largest experts and top-k)."""
    return (np.asarray(experts) > above[0]) | (np.asarray(topk) > above[1])


# The M blocks a grouped MoE GEMM may pad each expert's rows to (a kernel class's ``m_block``): "triton", OpenAI's
# triton_kernels ``matmul_ogs`` on NVIDIA GPUs (triton_kernels/matmul_ogs_details/opt_flags.py,
# ``make_default_opt_flags_nvidia``: block_m = max(16, min(next_power_of_2(tokens_per_expt), 128)), tokens_per_expt
# = the gathered rows // the experts of the routing, at least 1) — TensorRT-LLM's Triton MoE (gpt-oss on Hopper),
# whose router gathers every token's k picks (t·k rows) over the rank's local experts. "fused_moe" and
# "fused_moe_fp8_block": vLLM's and SGLang's Triton ``fused_moe_kernel`` on the config ``get_default_config`` gives a
# layer without a tuned config file (vllm/model_executor/layers/fused_moe/fused_moe.py; SGLang's
# fused_moe_triton/fused_moe_triton_config.py): BLOCK_SIZE_M 16 where the layer's tokens are at most the rank's local
# experts, else 64 (bf16, vLLM's per-tensor FP8); 64 at every token count (block-scaled FP8); ``moe_align_block_size``
# pads each expert's rows to whole blocks (``FUSED_MOE_BLOCK_M``: (at most the local experts, above))
FUSED_MOE_BLOCK_M = {"fused_moe": (16.0, 64.0), "fused_moe_fp8_block": (64.0, 64.0)}
M_BLOCKS = ("triton",) + tuple(FUSED_MOE_BLOCK_M)
TRITON_BLOCK_M = (16.0, 128.0)


def block_m(rule: str, gathered_rows, local_experts, tokens=None):
    """The M block of rule ``rule`` (``M_BLOCKS``) for ``gathered_rows`` token-expert rows over ``local_experts``;
    ``tokens``: the layer's tokens, which the ``FUSED_MOE_BLOCK_M`` rules pick the block by (required there)."""
    from .errors import IronlawError
    if rule not in M_BLOCKS:
        raise IronlawError(f"unknown M block rule '{rule}' (known: {', '.join(M_BLOCKS)})")
    if rule in FUSED_MOE_BLOCK_M:
        if tokens is None:
            raise IronlawError(f"M block rule '{rule}' picks its block by the layer's tokens: none given")
        small, large = FUSED_MOE_BLOCK_M[rule]
        return np.where(np.asarray(tokens, float) <= np.asarray(local_experts, float), small, large)
    lo, hi = TRITON_BLOCK_M
    per = np.maximum(1.0, np.floor(np.asarray(gathered_rows, float) / np.maximum(local_experts, 1.0)))
    return np.clip(2.0 ** np.ceil(np.log2(per)), lo, hi)


def padded_rows(rows, touched, block):
    """The rows a grouped GEMM computes when each of ``touched`` experts' share of ``rows`` is padded to whole M blocks
    of ``block`` rows (the rows spread evenly, as the balanced routing spreads them)."""
    u = np.maximum(np.asarray(touched, float), 1.0)
    return np.where(np.asarray(rows, float) > 0, u * np.ceil(np.asarray(rows, float) / u / block) * block, 0.0)


# The divisibility Triton's JIT specializes an integer kernel argument on (a value divisible by 16 is compiled as
# such; any other as divisible by 1): vLLM's and SGLang's ``fused_moe_kernel`` take the down GEMM's K = inter/TP as
# the row stride of its activation rows (``stride_am``) and of w2 (``stride_bn``, w2 stored [E, hidden, inter/TP]),
# so a K that is not a multiple of it leaves the compiler no alignment to vectorize the K-contiguous loads of A and B
# (vllm/model_executor/layers/fused_moe/fused_moe.py and SGLang's fused_moe_triton/fused_moe_triton_kernels.py,
# ``fused_moe_kernel`` and ``invoke_fused_moe_kernel``); the law's ``unaligned_k`` prices it (``unaligned``)
TRITON_K_ALIGN = 16


def unaligned(k) -> np.ndarray:
    """Whether a GEMM's K is not a multiple of ``TRITON_K_ALIGN`` (its K-contiguous rows unaligned)."""
    return np.mod(np.asarray(k, float), TRITON_K_ALIGN) != 0


# kernel -> (elements per i', per h) a token-expert pair routed to another rank's experts moves (bf16) in a fused-MoE
# layer whose intermediates span every pair of the step under EP (``pairs_bytes``; a measured class states its kernel
# as ``pairs`` on its routed rows, measure/calibrate/moefit.py ``terms``). "triton": vLLM's and SGLang's Triton fused
# MoE, ``moe_align_block_size`` maps other ranks' experts to −1 through the ``expert_map`` and ``fused_moe_kernel``
# writes zeros to those blocks' rows of both GEMMs' outputs (``write_zeros_to_output``: 2·i' up, h down), the
# activation runs on the whole M·top-k gate-up cache (3·i': 2·i' read, i' written) and the top-k sum reads every down
# row (h) (vllm/model_executor/layers/fused_moe/fused_moe.py; SGLang's python/sglang/srt/layers/moe/fused_moe_triton/
# fused_moe_triton_kernels.py, ``fused_moe_kernel`` under ``filter_expert``). "marlin": vLLM's Marlin MoE, whose
# align drops the invalid experts (``ignore_invalid_experts``) so its gate-up GEMM writes no zeros, but the
# activation spans the whole cache (3·i'), the down output is zeroed (``output.zero_()`` under an ``expert_map``, h)
# and summed over top-k (h) (vllm/model_executor/layers/fused_moe/fused_marlin_moe.py, ``_fused_marlin_moe``)
PAIR_KERNELS = {"triton": (5.0, 2.0), "marlin": (3.0, 2.0)}
PAIR_BYTES = 2.0          # the intermediates between the fused MoE's kernels: bf16


def pairs_bytes(kernel: str, pairs, local_rows, hidden, inter):
    """The bytes a fused-MoE layer whose intermediates span every token-expert pair of the step moves beyond its own
    routed rows, for each of the ``pairs`` − ``local_rows`` pairs routed to another rank's experts (bf16):
    ``PAIR_KERNELS[kernel]`` = (elements per i', per h), ``inter`` the rank's i'. 0 where every pair is local (EP 1)."""
    per_i, per_h = PAIR_KERNELS[kernel]
    return PAIR_BYTES * np.maximum(np.asarray(pairs, float) - local_rows, 0.0) * (per_i * inter + per_h * hidden)
