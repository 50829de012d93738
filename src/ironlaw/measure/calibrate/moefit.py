"""Fit the routed experts' grouped GEMM (the law's MoE kernel class) on measured MoE-layer tables.

A row of aiconfigurator's ``moe_perf`` table times one rank's whole MoE layer — TensorRT-LLM's fused MoE:
routing, the permute of the routed rows, the gated up-projection, the activation, the down-projection and the
weighted combine — for ``num_tokens`` tokens routed over ``num_experts`` experts, the rank holding
``num_experts / moe_ep_size`` of them with ``inter_size / moe_tp_size`` of each. Per device and weight
dtype the law's own terms of that layer are fitted:

    T = L + U·W_e / (BW·η_w) + F / (P·η_c) + A / (BW·η_a) + G / BW
        L     fixed seconds per layer (the layer's kernel launches inside one CUDA graph)
        U     local experts the tokens reach; W_e the bytes of one expert's three matrices (its share)
        F     2·R·h·3·i' FLOPs of the R routed rows on the rank (gated: 2i' up, i' down)
        A     the bytes the permute, the activation and the combine move, as the law's graph counts them
              (moe_permute 2·R·h, the routed mlp_act 3·R·i', moe_combine (R + t)·h; bf16); on a kernel whose
              intermediates span every token-expert pair of the step (``PAIR_KERNELS``: vLLM's and SGLang's Triton
              and vLLM's Marlin fused MoE under EP) also the pairs routed to other ranks' experts (``pairs_bytes``)
        G     the grouped GEMMs' own rows in and out (R·(2h + 3i'), bf16), at the full bandwidth: the law
              times them at its streaming η, close to 1
with BW the catalog's HBM bandwidth and P its dense matrix peak in the weight dtype. The rows (R, U) are the
collector's own routing, not an estimate: the ``balanced`` rows route token j's k picks to the experts
(j·s/t + m·s) mod E, s = ⌈E/k⌉ (t < s), else (j + m·s) mod E (aiconfigurator collector/helper.py
balanced_logits, Apache-2.0), and the rank owns experts 0 … E/ep − 1 (where the collector timed those logits
through a group-limited router, vLLM's and SGLang's rows of DeepSeek-V3's shape, as that router re-routed them:
``terms``' ``groups``); the ``power_law_<α>`` rows (the only
routing the 1.0-line tables of aiconfigurator 0.8.0 hold) draw each expert's load from a power law and put the
most loaded rank first (``core.routing.power_law_local``: the draw is unseeded, so the expectation over ``DRAWS`` draws). L, 1/η_w, 1/η_c and 1/η_a come from
least relative squares (reweighted against outliers, each η at most 1; 1.5 for the weights, which L2 may
serve) on the fit half of the layer shapes; numpy only. The routed rows' FLOPs and their traffic both grow
with R, and the tables cannot tell them apart: on every GPU and dtype η_c runs into its bound 1 and η_a
(0.2–0.6, far below streaming: the permute gathers rows, the combine sums k of them per token) carries the
per-row cost. ``kernels`` gives the fit as the law's kernel classes (models/serving/step/moe.py):
``moe_grouped_gemm.<dtype>`` (η_c, η_w, not overlapped, L split over its two GEMMs) and ``moe_rows.<dtype>``
(η_a for the permute, the routed activation and the combine; ``latency_s`` 0: the layer's fixed cost L is the
grouped GEMMs', and a kernel class without its own latency would pay the device's default per op on top of it).

Block-scaled FP8 (``fp8_block``: DeepSeek-V3/R1's recipe, 128 × 128 weight blocks with an fp32 scale each, the
activations quantized per token in 1 × 128 groups before each GEMM) is a weight format of its own, not a dtype:
its layers run on the FP8 tensor cores (``COMPUTE_DTYPE``), stream one byte per weight plus the scales
(``weight_bytes``) and pay the per-group activation quantization, which the fit's η_a carries with the rows'
other traffic. Its rows are fitted as the classes ``moe_grouped_gemm.fp8_block`` / ``moe_rows.fp8_block``; a
model whose checkpoint is block-scaled (``models.precision.moe_recipe``) runs on them.

Weight-only MXFP4 (``w4a16_mxfp4``: gpt-oss's checkpoint, its experts' weights 4 bits and one 8-bit scale per 32
values, the activations bf16) is another: its GEMMs dequantize each weight they load and run on the bf16 tensor
cores, stream 4.25 bits a weight, and the fitted η carry the dequantization (the tables time it inside the
layer). Its rows (TensorRT-LLM's ``moe_torch_flow``, gpt-oss's layer shapes alone) are fitted as
``moe_grouped_gemm.w4a16_mxfp4`` / ``moe_rows.w4a16_mxfp4``; a model whose routed experts are stored in MXFP4 with
bf16 math runs on them. On Hopper that layer is TensorRT-LLM's Triton MoE (the collector's ``moe_backend`` "triton"
below SM 100), whose router runs the top-k and, under EP, prunes and compacts the routing one program per token of
the step, routed to the rank or not (tensorrt_llm/_torch/modules/fused_moe/fused_moe_triton.py, ``TritonEPRouter``):
its rows are fitted with T += L_t·t (``fit``'s ``per_token``), stored as ``token_s`` on ``moe_rows.<dtype>`` and paid
by the combine, the op that states the layer's tokens (``efficiency.token_setup_s``).

A cost per expert the rows reach (``fit``'s ``per_touched``, T += L_u·U; stored as ``touched_s`` on the grouped GEMMs,
``efficiency.touched_setup_s``) and per token: on Blackwell's CUTLASS classes the two lower every class's held-out
median and p90 (benchmarks/kernel_moe.py ``--touched``), and the classes that meet the goal with them store them
(``STORED_TOUCHED`` there: block-scaled FP8 on Blackwell, DeepGEMM's per-token copy and per-expert M blocks; and
``OWN_KEY``: the CUTLASS classes that meet it on the rows of their own autotuner key, ``shared_tuning``); the
TensorRT-LLM 1.0 release files store them.

The down GEMM of vLLM's and SGLang's Triton fused MoE where inter/TP is not a multiple of 16 (``fit``'s
``per_unaligned``): its K is the row stride of its activations and of w2, which Triton's JIT then compiles as
divisible by 1, and its loads along K are not vectorized (``core.routing.TRITON_K_ALIGN``): T += c_k · (W + F)/3 at
η = 1 on those rows (``terms``' last column), stored as ``unaligned_k`` on the grouped GEMMs and added to the routed
GEMM whose K is unaligned (``serving.step.unaligned_down``), on the classes of ``kernelfit.rules.MOE_UNALIGNED_K``.

The router's top-k on PyTorch (``fit``'s ``per_router``, ``terms``' ``router_above``): TensorRT-LLM 1.0's renormalize
router runs its own top-k kernel up to 128 experts and top-8 and PyTorch's ``torch.topk`` and ``softmax`` above
(``core.routing.torch_router``), which the layer's time holds: T += [torch] · (L_r + D_r / (BW·η_r)), D_r the router
logits' bytes as the law's ``moe_topk`` op moves them (t·E bf16 elements read and written). Stored as the kernel class
``moe_router.<dtype>`` (``latency_s`` L_r, ``memory`` η_r), which prices the ``moe_topk`` op of a layer that routes
on PyTorch (models/serving/step/moe.py ``on_router``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.graph import dtype_bytes
from ...core.routing import (DRAWS, PAIR_KERNELS, balanced_local, block_m, grouped_balanced_local,  # noqa: F401
                             padded_rows, pairs_bytes, power_law_local, routing_of, torch_router, uniform_local,
                             unaligned)

HALF_BYTES = 2.0          # activations between the MoE kernels: bf16
FP8_BLOCK = "fp8_block"   # block-scaled FP8 weights (the tables' moe_dtype; DeepSeek-V3's quantization_config)
WEIGHT_BLOCK = 128 * 128  # weights per fp32 scale of the block-scaled format (weight_block_size [128, 128])
W4A16_MXFP4 = "w4a16_mxfp4"   # MXFP4 weights, bf16 activations (the tables' moe_dtype; gpt-oss's checkpoint)
# the routing of ROCm/aiter's fused-MoE tuner (each token's k experts uniform at random: core.routing.uniform_local);
# a table's routing here, not a serving option (core.routing.ROUTINGS)
UNIFORM = "uniform"
# the weights' stream bound η_w of a table whose collector replays the same experts' weights call after call
# (aiconfigurator's MoE collectors): an expert re-read from the L2 may beat HBM
STREAM_MAX = 1.5
COMPUTE_DTYPE = {FP8_BLOCK: "fp8", W4A16_MXFP4: "bf16"}  # a weight format -> the tensor-core dtype its GEMMs run in
STORED_DTYPE = {W4A16_MXFP4: "mxfp4"}   # a weight-only format -> the dtype its weights are stored in


def compute_dtype(dtype: str) -> str:
    """The dtype whose matrix peak a layer of weight format ``dtype`` runs at."""
    return COMPUTE_DTYPE.get(dtype, dtype)


def weight_bytes(dtype: str) -> float:
    """Bytes per expert weight of ``dtype`` (block-scaled FP8: one byte and its share of the block's fp32 scale;
    weight-only MXFP4: 4.25 bits)."""
    return 1.0 + 4.0 / WEIGHT_BLOCK if dtype == FP8_BLOCK else dtype_bytes(STORED_DTYPE.get(dtype, dtype))


@dataclass(frozen=True)
class MoeFit:
    latency_s: float          # L
    eta_stream: float         # η_w: fraction of HBM bandwidth the experts' weights stream at
    eta_compute: float        # η_c: fraction of the matrix peak the routed rows' FLOPs run at
    eta_rows: float           # η_a: fraction of HBM bandwidth the permute, activation and combine reach
    rows: int                 # measured rows fitted
    expert_s: float = 0.0     # L_e: seconds per local expert slot (``fit``'s per_expert; 0: not fitted)
    token_s: float = 0.0      # L_t: seconds per token of the layer's input (``fit``'s per_token; 0: not fitted)
    touched_s: float = 0.0    # L_u: seconds per expert the rows reach (``fit``'s per_touched; 0: not fitted)
    router_s: float = 0.0     # L_r: fixed seconds of the router's PyTorch top-k (``fit``'s per_router; 0: not fitted)
    router_eta: float = 0.0   # η_r: fraction of HBM bandwidth its logits move at (0: not fitted)
    unaligned_k: float = 0.0  # c_k: the down GEMM's extra seconds per its W/BW + F/P where inter/TP is unaligned
                              # (``fit``'s per_unaligned; 0: not fitted)


def terms(rows: dict, dtype: str, peak_flops: float, bw_Bps: float, routing: str = "balanced",
          m_block: str | None = None, router_above: tuple | None = None, pairs: str | None = None,
          groups: np.ndarray | None = None) -> np.ndarray:
    """Per row the columns [1, U·W_e/BW, F/P, A/BW, G/BW] (seconds at η = 1), the rank's expert slots E/ep, the
    tokens t the layer takes in, the experts U its rows reach (counts: ``fit``'s per-expert, per-token and
    per-touched terms), whether the router runs PyTorch's top-k and its logits' bytes D_r/BW there
    (``router_above``: the router kernel's largest experts and top-k, ``core.routing.torch_router``; None: 0) and,
    last, the down GEMM's weights and FLOPs (a third of W and F, at η = 1) on rows whose inter/TP is not a multiple
    of ``core.routing.TRITON_K_ALIGN`` (``unaligned``; ``fit``'s per_unaligned), 0 on the others, of arrays ``rows``
    (num_tokens, hidden_size, inter_size, topk, num_experts, moe_tp_size, moe_ep_size), routed as ``routing`` (the
    table's distribution: balanced, or power_law_<α>; ``UNIFORM``: aiter's tables, the expectation of
    ``core.routing.uniform_local``); ``m_block`` (``core.routing.M_BLOCKS``): F counts each touched expert's rows
    padded to the M block the kernel picks for the row's tokens; ``pairs`` (``PAIR_KERNELS``): A adds ``pairs_bytes`` of that kernel (the
    layer's ops run over every token-expert pair of the step, routed to the rank or not); ``groups``: per row (expert
    groups, groups kept per token) of the group-limited router the collector ran on a ``balanced`` row inside the
    timed layer (``kernelfit.rules.grouped_routing``; (0, 0): plain top-k), whose R and U are
    ``core.routing.grouped_balanced_local``'s."""
    route = uniform_local if routing == UNIFORM else routing_of(routing)
    if route is None:
        from ...core.errors import IronlawError
        raise IronlawError(f"unknown MoE routing '{routing}' (known: balanced, power_law_<alpha>, {UNIFORM})")
    t, h = np.asarray(rows["num_tokens"], float), np.asarray(rows["hidden_size"], float)
    i = np.asarray(rows["inter_size"], float) / np.asarray(rows["moe_tp_size"], float)
    cache: dict = {}
    grouped = (np.zeros((len(t), 2), int) if groups is None or routing != "balanced"
               else np.asarray(groups, int).reshape(-1, 2))
    keys = zip(*(np.asarray(rows[c], int) for c in ("num_tokens", "num_experts", "topk", "moe_ep_size")),
               grouped[:, 0], grouped[:, 1])
    ru = np.array([cache.setdefault(key, grouped_balanced_local(*key) if key[4] else route(*key[:4]))
                   for key in keys], float).reshape(-1, 2)
    r, u = ru[:, 0], ru[:, 1]
    w = u * 3.0 * h * i * weight_bytes(dtype)
    local = np.asarray(rows["num_experts"], float) / np.asarray(rows["moe_ep_size"], float)
    if m_block:
        r_pad = padded_rows(r, u, block_m(m_block, t * np.asarray(rows["topk"], float), local, t))
    f = 2.0 * (r_pad if m_block else r) * h * 3.0 * i
    a = HALF_BYTES * (2.0 * r * h + 3.0 * r * i + (r + t) * h)
    if pairs:
        a = a + pairs_bytes(pairs, t * np.asarray(rows["topk"], float), r, h, i)
    g = HALF_BYTES * r * (2.0 * h + 3.0 * i)
    torch = (torch_router(rows["num_experts"], rows["topk"], router_above) if router_above
             else np.zeros_like(t, bool)).astype(float)
    logits = torch * 2.0 * HALF_BYTES * t * np.asarray(rows["num_experts"], float)
    down = unaligned(i) * (w / bw_Bps + f / peak_flops) / 3.0
    return np.stack([np.ones_like(t), w / bw_Bps, f / peak_flops, a / bw_Bps, g / bw_Bps, local, t, u, torch,
                     logits / bw_Bps, down], 1)


def fit(x: np.ndarray, time_s: np.ndarray, iters: int = 20, per_expert: bool = False,
        exact: bool = False, per_token: bool = False, per_touched: bool = False, per_router: bool = False,
        stream_max: float = STREAM_MAX, per_unaligned: bool = False) -> MoeFit:
    """L, η_w, η_c, η_a of T = x·[L, 1/η_w, 1/η_c, 1/η_a, 1] (``terms``), least relative squares, each ≥ 0,
    the η at most 1 (``stream_max`` for the weights' stream: an expert re-read from L2 may beat HBM, 1 where the
    rows' weights cannot come from a cache, ``kernelfit.rules.ROTATED_MOE_FRAMEWORKS``); ``per_expert``: also
    L_e, seconds per expert slot of the rank (T gains L_e·E/ep), ≥ 0; ``per_token``: also L_t, seconds per token the
    layer takes in, routed to the rank or not (T gains L_t·t), ≥ 0; ``per_touched``: also L_u, seconds per expert the
    rank's rows reach (T gains L_u·U), ≥ 0; ``per_router``: also L_r and 1/η_r of the router's PyTorch top-k (T gains
    [torch]·(L_r + D_r/(BW·η_r)), ``terms``), L_r ≥ 0, η_r at most 1; ``per_unaligned``: also c_k, the down GEMM's
    extra seconds per second of its weights and FLOPs at η = 1 where its K = inter/TP is unaligned (T gains c_k ·
    ``terms``' last column: Triton's loads of those rows not vectorized, ``core.routing.TRITON_K_ALIGN``), ≥ 0. Each reweighted step solves the unbounded problem and clips it to the
    bounds; ``exact``: solves it under the bounds (``bounded_lstsq``) instead."""
    t = np.asarray(time_s, float)
    cols = [0, 1, 2, 3] + ([5] if per_expert else []) + ([6] if per_token else []) + ([7] if per_touched else []) \
        + ([8, 9] if per_router else []) + ([10] if per_unaligned else [])
    lower = [0.0, 1 / stream_max, 1.0, 1.0] + [0.0] * (per_expert + per_token + per_touched) + [0.0, 1.0] * per_router \
        + [0.0] * per_unaligned
    X = x[:, cols]
    w = np.ones_like(t)
    y = 1 - x[:, 4] / t
    for _ in range(iters):
        if exact:
            c = bounded_lstsq(X / t[:, None] * w[:, None], y * w, np.array(lower))
        else:
            c, *_ = np.linalg.lstsq(X / t[:, None] * w[:, None], y * w, rcond=None)
            c = np.maximum(c, lower)
        w = 1 / np.sqrt(np.maximum(np.abs((X @ c + x[:, 4]) / t - 1), 0.02))
    extra = dict(zip([5, 6, 7, 8, 9, 10], [0.0] * 6)) | {j: float(v) for j, v in zip(cols[4:], c[4:])}
    return MoeFit(float(c[0]), float(1 / c[1]), float(1 / c[2]), float(1 / c[3]), len(t), extra[5], extra[6], extra[7],
                  extra[8], 1 / extra[9] if extra[9] else 0.0, extra[10])


def bounded_lstsq(a: np.ndarray, y: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """argmin |a·c − y|² subject to c ≥ ``lower``: every choice of the coefficients held at their bound (2^n for
    the layer's four or five terms), the others solved freely, the feasible solution of least residual."""
    import itertools
    n = a.shape[1]
    best, best_c = np.inf, np.asarray(lower, float)
    for held in itertools.product((False, True), repeat=n):
        c = np.asarray(lower, float).copy()
        free = [j for j in range(n) if not held[j]]
        if free:
            rest = y - a[:, [j for j in range(n) if held[j]]] @ c[[j for j in range(n) if held[j]]]
            sol, *_ = np.linalg.lstsq(a[:, free], rest, rcond=None)
            if np.any(sol < c[free]):
                continue
            c[free] = sol
        res = float(np.sum((a @ c - y) ** 2))
        if res < best:
            best, best_c = res, c
    return best_c


def kernels(f: MoeFit, dtype: str, m_block: str | None = None) -> dict:
    """The fit as [calibration.kernel] entries of the law's MoE kernel classes (module docstring); L, L_e
    (``expert_s``, where fitted) and L_u (``touched_s``, where fitted: each GEMM streams the same U experts,
    ``efficiency.touched_setup_s``) split over the two grouped GEMMs, L_t (``token_s``, where fitted) on the routed
    rows' class (``efficiency.token_setup_s``: paid by the op that states the layer's tokens, the combine), the router's
    PyTorch top-k (where fitted) as ``moe_router.<dtype>`` (its L_r and η_r), c_k (``unaligned_k``, where fitted) on
    the grouped GEMMs whole: the law adds it to the one whose K is unaligned (``serving.step.unaligned_down``); ``m_block``
    where the fit padded the rows (``terms``): the law pads them the same way (``models.serving.step.blocked_rows``)."""
    gemm = {"eta_max": round(f.eta_compute, 4), "m_half": 0.0, "nk_half": 0.0, "streamed": round(f.eta_stream, 4),
            "serial": 1.0, "latency_s": float(f"{f.latency_s / 2:.4g}")}
    if f.expert_s:
        gemm["expert_s"] = float(f"{f.expert_s / 2:.4g}")
    if f.touched_s:
        gemm["touched_s"] = float(f"{f.touched_s / 2:.4g}")
    if f.unaligned_k:
        gemm["unaligned_k"] = float(f"{f.unaligned_k:.4g}")
    if m_block:
        gemm["m_block"] = m_block
    rows = {"memory": round(f.eta_rows, 4), "latency_s": 0.0}
    if f.token_s:
        rows["token_s"] = float(f"{f.token_s:.4g}")
    out = {f"moe_grouped_gemm.{dtype}": gemm, f"moe_rows.{dtype}": rows}
    if f.router_eta:
        out[f"moe_router.{dtype}"] = {"memory": float(f"{f.router_eta:.4g}"), "latency_s": float(f"{f.router_s:.4g}")}
    return out


def predict_s(f: MoeFit, x: np.ndarray) -> np.ndarray:
    router = f.router_s * x[:, 8] + x[:, 9] / f.router_eta if f.router_eta else 0.0     # (``terms``' columns 8, 9)
    return (f.latency_s + x[:, 1] / f.eta_stream + x[:, 2] / f.eta_compute + x[:, 3] / f.eta_rows + x[:, 4]
            + f.expert_s * x[:, 5] + f.token_s * x[:, 6] + f.touched_s * x[:, 7] + router
            + (f.unaligned_k * x[:, 10] if f.unaligned_k else 0.0))


CASE = ("topk", "num_experts", "moe_tp_size", "moe_ep_size")     # what a layer shape fixes beyond its tuning key


def tuning_keys(rows: dict) -> list[tuple]:
    """Per row its autotuner cache key beyond the dtype: (hidden, inter/TP, local experts)."""
    h = np.asarray(rows["hidden_size"])
    i = np.asarray(rows["inter_size"]) // np.asarray(rows["moe_tp_size"])
    local = np.asarray(rows["num_experts"]) // np.asarray(rows["moe_ep_size"])
    return list(zip(h.tolist(), i.tolist(), local.tolist()))


def shared_tuning(rows: dict, table: dict | None = None) -> np.ndarray:
    """Per row of ``rows``, whether its autotuner cache file is one that another collected case of ``table`` (every
    row of the same dtype, whatever its kernel or routing; None: ``rows``) writes or loads. aiconfigurator's collector
    tunes TensorRT-LLM's fused MoE into one cache file per (dtype, hidden, inter/TP, local experts), and a case that
    finds a file loads it instead of tuning (collector/trtllm/collect_moe.py, ``run_moe_torch``: ``cache_path``,
    ``glob.glob(f"{cache_path}*")``; the cases shuffled first, run by one worker per GPU). So a key is shared where
    the table holds another case of it — another top-k, expert count or TP/EP, the non-gated layer, or on SM 100 the
    min-latency NVFP4 layer (``kernel_source`` moe_torch_flow_min_latency, another runner whose tactics the file holds
    in place of the CUTLASS one's) — or where its local expert count's digits begin another key's of the same hidden
    and inter/TP (the glob of 1 local expert matches the files of 16 and 128): of such cases all but one run tactics
    tuned for another case, or the autotuner's fallback tactic where the file holds none for their runner."""
    table = rows if table is None else table
    cases: dict = {}
    kernels = np.asarray(table.get("kernel_source", np.zeros(len(table["topk"]))))
    extra = [np.asarray(table[c]) for c in CASE] + [kernels]
    for key, case in zip(tuning_keys(table), zip(*extra)):
        cases.setdefault(key, set()).add(case)
    by_width: dict = {}
    for h, i, local in cases:
        by_width.setdefault((h, i), []).append(str(local))
    def shared(key):
        h, i, local = key
        return len(cases.get(key, ())) > 1 or any(o != str(local) and o.startswith(str(local))
                                                  for o in by_width.get((h, i), ()))
    memo: dict = {}
    return np.array([memo.setdefault(k, shared(k)) for k in tuning_keys(rows)], bool)


def shape_ratios(rows: dict, reference: dict) -> np.ndarray:
    """Per row of ``rows``, the median over the token counts both tables time of its layer shape's rows' time over
    those of the same shape and tokens on ``reference`` (another GPU's table of the same kernel and dtype); NaN where
    the reference does not time the shape."""
    cols = ("hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size", "num_tokens")
    ref = dict(zip(zip(*(np.asarray(reference[c]).tolist() for c in cols)),
                   np.asarray(reference["latency_s"], float)))
    ratios: dict = {}
    for key, lat in zip(zip(*(np.asarray(rows[c]).tolist() for c in cols)), np.asarray(rows["latency_s"], float)):
        if key in ref:
            ratios.setdefault(key[:-1], []).append(lat / ref[key])
    median = {shape: float(np.median(r)) for shape, r in ratios.items()}
    return np.array([median.get(key, np.nan) for key in zip(*(np.asarray(rows[c]).tolist() for c in cols[:-1]))])


def agrees(rows: dict, reference: dict, ratio: float) -> np.ndarray:
    """Per row of ``rows``, whether its layer shape runs within ``ratio`` of the same shape on ``reference``
    (``shape_ratios`` at most ``ratio``); a shape the reference does not time does not agree."""
    r = shape_ratios(rows, reference)
    return np.where(np.isnan(r), False, r <= ratio)


def shape_split(rows: dict) -> np.ndarray:
    """The fit half: every other layer shape (all columns but num_tokens) in sorted order; the other shapes,
    every token count of them, are scored."""
    keys = list(zip(*(np.asarray(rows[c]) for c in ("hidden_size", "inter_size", "topk", "num_experts",
                                                     "moe_tp_size", "moe_ep_size"))))
    order = {k: j for j, k in enumerate(sorted(set(keys)))}
    return np.array([order[k] % 2 == 0 for k in keys])
