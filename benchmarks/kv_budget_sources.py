"""What TensorRT-LLM v1.0 keeps out of its KV cache, term by term from its code, against what the Hopper MoE cells need.

    python benchmarks/kv_budget_sources.py                 # H100 and H200 MoE cells (TP > 1, attention DP)
    python benchmarks/kv_budget_sources.py --gpu h200      # one GPU
    python benchmarks/kv_budget_sources.py --no-needed     # the sourced terms only (skips the KV-fraction scan)

The question: the perf overview's MoE cells read, on the measured fused-MoE layer, as if the run's KV cache were
smaller than ironlaw's by an absolute amount per GPU (``moe_implied_memory.py``: ~20 GiB for Qwen3-235B-A22B on
H100). Is that amount in the memory TensorRT-LLM's own sizing leaves out? The PyTorch backend of the v1.0 line
sizes its KV cache once (NVIDIA/TensorRT-LLM, Apache-2.0; tensorrt_llm/_torch/pyexecutor/py_executor_creator.py,
``create_py_executor``; _util.py, ``KvCacheCreator``):

    1. load the weights, build a temporary KV cache just large enough for the dummy requests
       (``_get_token_num_for_estimation``), create a PyExecutor, whose constructor runs ``model_engine.warmup``
       (torch.compile / autotuner passes, then CUDA-graph capture: model_engine.py, ``PyTorchModelEngine.warmup``);
    2. ``torch.cuda.reset_peak_memory_stats``, run the dummy context requests (``_create_dummy_context_requests``:
       ``max_num_tokens`` tokens in requests of min(max_num_tokens, max_seq_len - 1), repeated ``tp_size`` times under
       attention DP), ``torch.cuda.empty_cache``;
    3. peak = torch's allocated peak + (device memory in use - torch's allocated), KV bytes =
       (device total - peak + the temporary KV cache) x free_gpu_memory_fraction
       (``KvCacheCreator.estimate_max_tokens`` / ``_cal_max_tokens``), device total as cudaMemGetInfo reports it.

ironlaw's rule (``engine.memory``): KV = 0.95 x (catalog capacity - weights - the workspace of one profiling step
at max_num_tokens, every rank's rows pooled in the MoE: ``engine.workspace_bytes``). The same structure; what can
differ is each term. Per cell, printed in GiB per GPU:

    total      catalog capacity - the device total as the driver reports it (H200: the probe of
               benchmarks/runs/h200-probe-2026-12-04.toml, 150,109,880,320 B; H100: 79.22 GiB, the total that
               vLLM's memory profile prints on an 80 GB GPU, vllm-project/vllm pull request 10511)
    ws         ironlaw's profiling-step workspace (``memory()['workspace_bytes']``)
    moe        the fused MoE's live set in TensorRT-LLM's dummy step: the CUTLASS runner's workspace at
               dp x max_num_tokens rows (cpp/tensorrt_llm/kernels/mixtureOfExperts/moe_kernels.cu,
               ``CutlassMoeFCRunner::getWorkspaceDeviceBufferSizes``, FP8 per-tensor: ``cutlass_moe_workspace``),
               the all-gathered FP8 input, the BF16 output, and the rank's own hidden states
               (tensorrt_llm/_torch/modules/fused_moe/fused_moe_cutlass.py, ``CutlassFusedMoE``: no chunking,
               ``moe_max_num_tokens`` defaults to max_num_tokens x dp)
    graphs     the CUDA-graph pool resident at the measurement: 0 unless the temporary KV cache holds the largest
               graph batch. ``warmup`` captures the batch sizes largest first and returns at the first one whose
               dummy requests the KV cache cannot hold ("No KV cache space!"), and the temporary cache holds only
               the dummy requests' blocks (``graphs_captured``); where it does hold it, the pool is one decode step
               at that batch: the MoE at dp x batch rows and the batch's BF16 logits
    excess     what the sourced terms keep out beyond ironlaw's, signed: total + (moe - ws) + graphs
    KV x       the KV cache the sourced terms leave, over ironlaw's: 1 - excess / (ironlaw's free memory)
    needed     the absolute reserve per GPU at which the cell, on the measured fused-MoE layer at the router's
               skew (``moe_implied_memory.py``, routing power_law_1.2), is no faster than published (0.0: already
               slow at ironlaw's KV; "—": no reserve reaches it)

Not counted (no sourced size for TensorRT-LLM): the CUDA context, NCCL's buffers and the custom all-reduce
workspace, the part of step 3's "device memory in use - torch's allocated" that is not a CUDA graph. vLLM's
profile on the same 80 GB GPU puts its whole non-torch memory at 1.79 GiB (TP 1) and 3.58 GiB (TP 2) (the pull
request above), an order of magnitude below the needed reserves. Nothing is fitted or stored; the source was read
on the v1.0 line (the perf overview's "NEW for v1.0" tables) in public mirrors of NVIDIA/TensorRT-LLM.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import trtllm_h100 as h100  # noqa: E402

GIB = 2.0 ** 30
TOKENS_PER_BLOCK = 32          # KvCacheConfig.tokens_per_block default
EXTRA_TOKENS = 2               # _get_token_num_for_estimation: 1 generated token + 1 for the overlap scheduler
FP8, BF16, I32, F32 = 1, 2, 4, 4
# the device total cudaMemGetInfo reports (module docstring)
DRIVER_TOTAL_BYTES = {"h200": 150109880320.0, "h100": 79.22 * GIB}
CONFIGS = h100.ROOT / "src/ironlaw/models/workloads/configs"


@dataclass(frozen=True)
class Experts:
    hidden: int
    inter: int                 # one routed expert's intermediate size
    experts: int
    top_k: int
    vocab: int


def experts_of(model: str) -> Experts:
    """The routed experts' shape from the model's HF config (src/ironlaw/models/workloads/configs)."""
    from ironlaw.models.workloads import families
    path = CONFIGS / f"{model}.json"
    a = families.parse(json.loads(path.read_text()), str(path))
    return Experts(a.hidden, a.expert_inter, a.experts, a.top_k, a.vocab)


def cutlass_moe_workspace(rows: int, e: Experts) -> float:
    """Bytes of CutlassMoeFCRunner's workspace for ``rows`` tokens, FP8 per-tensor weights and activations, gated
    activation: per expanded row (rows x top-k) four int32 index arrays and an FP32 final scale, the overlapped GEMM
    inputs max(FP8 permuted input, BF16 fc2 output, FP8 fc1 result) and outputs max(BF16 GLU result, BF16 fc2
    output); the sorter and per-expert arrays are a few MiB and left out."""
    n = rows * e.top_k
    inputs = max(n * e.hidden * FP8, n * e.hidden * BF16, n * e.inter * FP8)
    outputs = max(n * 2 * e.inter * BF16, n * e.hidden * BF16, n * e.inter * FP8)
    return n * (4 * I32 + F32) + inputs + outputs


def moe_live_bytes(rows_per_rank: int, dp: int, e: Experts) -> float:
    """The fused MoE's live set at one step of ``rows_per_rank`` tokens on each of ``dp`` ranks: the workspace, the
    all-gathered FP8 input and BF16 output of every rank's rows, and the rank's own BF16 residual and normed input."""
    pooled = dp * rows_per_rank
    return cutlass_moe_workspace(pooled, e) + pooled * e.hidden * (FP8 + BF16) + 2 * rows_per_rank * e.hidden * BF16


def estimation_blocks(max_num_tokens: int, max_seq_len: int, tp: int) -> int:
    """Blocks of the temporary KV cache: the dummy requests (max_num_tokens tokens in requests of
    min(max_num_tokens, max_seq_len - 1)), ``tp`` copies under attention DP, each request in whole blocks of its
    tokens + EXTRA_TOKENS."""
    size, left, blocks = min(max_num_tokens, max_seq_len - 1), max_num_tokens, 0
    while left > 0:
        n = min(size, left)
        blocks += math.ceil((n + EXTRA_TOKENS) / TOKENS_PER_BLOCK)
        left -= n
    return blocks * tp


def largest_graph_batch(max_batch: int, max_num_tokens: int) -> int:
    """The largest CUDA-graph batch: the overview's list (1 … 8192) cut at min(max batch, max_num_tokens), with
    padding on, that bound itself (model_engine.py, ``_filter_cuda_graph_batch_sizes``)."""
    return min(max_batch, max_num_tokens)


def graphs_captured(max_batch: int, max_num_tokens: int, max_seq_len: int, tp: int) -> bool:
    """Whether warmup captures any CUDA graph on the temporary KV cache: it starts at the largest batch and stops at
    the first whose requests find fewer free blocks than the batch."""
    return estimation_blocks(max_num_tokens, max_seq_len, tp) >= largest_graph_batch(max_batch, max_num_tokens)


def graph_pool_bytes(batch: int, dp: int, e: Experts) -> float:
    """One decode step at ``batch`` sequences per rank: the MoE's live set at dp x batch rows and the BF16 logits."""
    return moe_live_bytes(batch, dp, e) + batch * e.vocab * BF16


def sourced(cell: dict, est) -> dict:
    """The sourced non-KV terms of one cell against ironlaw's (bytes per GPU)."""
    e = experts_of(cell["model"])
    mem, tp = est.memory, cell["tp"]
    mnt, batch, seq = mem["max_num_tokens"], est.limits.max_batch, cell["isl"] + cell["osl"]
    captured = graphs_captured(batch, mnt, seq, tp)
    graphs = graph_pool_bytes(largest_graph_batch(batch, mnt), tp, e) if captured else 0.0
    total = mem["device_memory_bytes"] - DRIVER_TOTAL_BYTES[cell["gpu"]]
    moe = moe_live_bytes(mnt, tp, e)
    excess = total + (moe - mem["workspace_bytes"]) + graphs
    return {"mnt": mnt, "max_batch": batch, "blocks": estimation_blocks(mnt, seq, tp), "captured": captured,
            "total": total, "ws": mem["workspace_bytes"], "moe": moe, "graphs": graphs, "excess": excess,
            "kv_ratio": 1.0 - excess / mem["free_bytes"]}


def needed_reserve(cell: dict, routing: str) -> float | None:
    import moe_implied_memory as mi
    r = mi.row(cell, routing, mi.PUBLISHED_FRACTION, True)
    return r["reserve_gib"]


WIDTHS = (16, 5, 10, 6, 6, 7, 6, 6, 6, 6, 7, 7, 8)
HEAD = ("model", "gpu", "ISL/OSL", "mnt", "batch", "blocks", "total", "ws", "moe", "graphs", "excess", "KV x",
        "needed")


def cell_text(c: dict, s: dict, need: float | None, show_need: bool) -> str:
    g = lambda x: f"{x / GIB:.1f}"  # noqa: E731
    needed = ("—" if need is None else f"{need:.1f}") if show_need else ""
    return h100.table_row((c["model"], c["gpu"], f"{c['isl']}/{c['osl']}", s["mnt"], s["max_batch"], s["blocks"],
                           g(s["total"]), g(s["ws"]), g(s["moe"]), g(s["graphs"]), g(s["excess"]),
                           f"{s['kv_ratio']:.2f}", needed), WIDTHS)


def summary(rows: list[tuple]) -> list[str]:
    out = []
    for gpu, model in sorted({(c["gpu"], c["model"]) for c, _, _ in rows}):
        rs = [(s, n) for c, s, n in rows if (c["gpu"], c["model"]) == (gpu, model)]
        ex = [s["excess"] / GIB for s, _ in rs]
        need = [n for _, n in rs if n is not None]
        cap = sum(s["captured"] for s, _ in rs)
        span = f", needed {min(need):.1f} … {max(need):.1f} (median {statistics.median(need):.1f})" if need else ""
        kv = [s["kv_ratio"] for s, _ in rs]
        out.append(f"{gpu} {model}: {len(rs)} cells, sourced excess over ironlaw {min(ex):+.1f} … {max(ex):+.1f} GiB"
                   f" (CUDA graphs resident at the sizing in {cap}), KV x {min(kv):.2f} … {max(kv):.2f}{span}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", choices=("h100", "h200", "both"), default="both")
    ap.add_argument("--routing", default="power_law_1.2", help="the router's skew for the needed reserve")
    ap.add_argument("--no-needed", action="store_true", help="skip the needed reserve (a KV-fraction scan per cell)")
    args = ap.parse_args()
    import moe_implied_memory as mi
    print(h100.table_row(HEAD, WIDTHS))
    rows = []
    for gpu in (("h100", "h200") if args.gpu == "both" else (args.gpu,)):
        for c in mi.moe_cells(gpu):
            s = sourced(c, h100.predict(c, gpu))
            need = None if args.no_needed else needed_reserve(c, args.routing)
            rows.append((c, s, need))
            print(cell_text(c, s, need, not args.no_needed))
    print("\nGiB per GPU. total: catalog capacity - driver total; ws: ironlaw's workspace; moe: TensorRT-LLM's fused-"
          "MoE live set at dp x max_num_tokens rows; graphs: CUDA-graph pool resident at the sizing (0: warmup "
          "captured none); excess = total + moe - ws + graphs; KV x: the sourced KV over ironlaw's; needed: the "
          "reserve the measured MoE layer asks")
    print("\n".join(summary(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
