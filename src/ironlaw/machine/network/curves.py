"""Measured collective curves inside one node: NCCL's own time model, fitted per collective and group size.

NCCL's tuner (src/graph/tuning.cc) predicts a collective's time for each protocol (LL, LL128, Simple) as a
latency plus the bytes over that protocol's bandwidth, and runs the fastest. A curve keeps that form:

    T(n) = min over its lines i of  α_i + f(p) · n / B_i

with ``n`` the message bytes as nccl-tests count them (collectives.py), ``f(p)`` the bus factor (all-reduce
2(p−1)/p, NCCL's or TensorRT-LLM's own (``allreduce-trtllm``, the same form fitted on its measured table); all-gather, reduce-scatter, all-to-all (p−1)/p), so each ``B_i`` is a bus bandwidth. The lines are
fitted on measured kernel tables (measure/calibrate/commfit.py) and stored per device in its hardware file:

    [[network.curve]]
    collective = "allreduce"      # allreduce | allgather | reducescatter | alltoall | allreduce-trtllm | allreduce-vllm |
                                  # allreduce-sglang |
                                  # alltoall-deepep-dispatch | alltoall-deepep-combine |
                                  # alltoall-deepep-ll-dispatch | alltoall-deepep-ll-combine
    gpus = 8                      # ranks, all on one node
    alpha_s = [2.5e-05, 2.7e-05, 9.0e-05]
    bus_Bps = [1.7e10, 3.4e11, 7.6e11]
    rows = 11                     # measured sizes the lines were fitted on
    from_bytes = [0, 0, 262144]   # optional: the message size from which each line applies

A curve with ``from_bytes`` is an engine's dispatch by size (an engine's own all-reduce changing kernel at fixed
message sizes, not where one is faster: measure/calibrate/commswitch.py): its sizes fall into regimes, each from
one of those sizes up to the next, and a size takes the fastest of the lines of its own regime only. Its lines
are then (α, B, from_bytes) triples; a curve without it keeps (α, B) pairs, one regime from 0.

A group on one node of a size the file has no curve for takes the curve of the nearest measured size
below it (else above), its lines' α and bus bandwidth unchanged and the bus factor of its own size: a
ring's bus bandwidth does not depend on its length, only its hop count does (an estimate between
measured sizes, never checked against a measurement).
"""
from __future__ import annotations

import math

import numpy as np

from ...core.errors import IronlawError, unknown

# TensorRT-LLM's own all-reduce op as its engine runs a tensor-parallel all-reduce (``AllReduce`` with strategy
# AUTO: its one-shot/two-shot custom kernels over NVLink peer memory up to the workspace and the strategy table,
# NCCL beyond; cpp/tensorrt_llm/thop/allreduceOp.cpp ``selectImplementation``), measured as one curve
TRTLLM_ALLREDUCE = "allreduce-trtllm"
# vLLM's tensor-parallel all-reduce as its engine runs it inside a captured CUDA graph
# (vllm/distributed/communication_op.py ``tensor_model_parallel_all_reduce``: its custom all-reduce over NVLink
# peer memory where the message fits it, NCCL otherwise), measured as one curve: aiconfigurator-core 0.12.0's
# ``comm/vllm/<version>/custom_allreduce_perf`` tables, vllm_graph rows (benchmarks/kernel_comm.py)
VLLM_ALLREDUCE = "allreduce-vllm"
# SGLang's, the same way (its JIT custom all-reduce up to 16 MiB, NCCL beyond): ``comm/sglang/<version>/
# custom_allreduce_perf``, sglang_graph rows (benchmarks/kernel_comm.py, measure/calibrate/commswitch.py)
SGLANG_ALLREDUCE = "allreduce-sglang"
OWN_ALLREDUCE = (TRTLLM_ALLREDUCE, VLLM_ALLREDUCE, SGLANG_ALLREDUCE)  # an engine's own all-reduce op: NCCL's where
                                                                      # not measured
# DeepEP's high-throughput dispatch and combine kernels (the expert exchange of wide EP: each token's rows sent to
# the ranks of its top-k experts over NVLink peer memory, and the weighted rows summed back), measured per phase as
# one curve each on the all-to-all's bytes (tokens · top-k · hidden · 2): aiconfigurator-core 0.12.0's
# ``comm/trtllm/1.3.0rc11/moe_a2a_perf`` tables (benchmarks/kernel_deepep.py)
DEEPEP_DISPATCH, DEEPEP_COMBINE = "alltoall-deepep-dispatch", "alltoall-deepep-combine"
# the high-throughput dispatch of NVFP4 activations (TensorRT-LLM's post-quant dispatch, values and scales), its own
# curve on its own bytes: it does not move them at the bf16 curve's rate (the bf16 line is 24–48% fast on them)
DEEPEP_DISPATCH_FP4 = "alltoall-deepep-dispatch-fp4"
DEEPEP = (DEEPEP_DISPATCH, DEEPEP_COMBINE, DEEPEP_DISPATCH_FP4)
# DeepEP's low-latency dispatch and combine (the decode steps' expert exchange: CUDA-graph-safe, each token's rows
# written straight into the receiving expert's buffer, at most ``DEEPEP_LL_MAX_TOKENS`` tokens per rank), one curve
# per phase on the bytes the kernel moves (tokens · top-k · hidden · the wire dtype's bytes, scales included): the
# same tables' ``trtllm_deepep_ll`` rows, dispatch in bf16, fp8 and nvfp4, combine in bf16 (benchmarks/kernel_deepep.py)
DEEPEP_LL_DISPATCH, DEEPEP_LL_COMBINE = "alltoall-deepep-ll-dispatch", "alltoall-deepep-ll-combine"
DEEPEP_LL = (DEEPEP_LL_DISPATCH, DEEPEP_LL_COMBINE)
# TensorRT-LLM's MNNVL all-to-all kernels on a multi-node NVLink domain (GB200 NVL72: NVLinkOneSided, the first
# strategy its factory tries, and NVLinkTwoSided with its prepare step that exchanges the routing metadata), one
# curve per phase and EP size: aiconfigurator-core 0.12.0's ``gb200/comm/trtllm/1.3.0rc10/trtllm_alltoall_perf``
# (TensorRT-LLM 1.2.0rc6; DeepSeek's shape: hidden 7168, top-8, 256 experts; EP 2–32 one-sided, 2–64 two-sided)
MNNVL_ONE = ("alltoall-mnnvl-one-sided-dispatch", "alltoall-mnnvl-one-sided-combine")
MNNVL_TWO = ("alltoall-mnnvl-two-sided-prepare", "alltoall-mnnvl-two-sided-dispatch", "alltoall-mnnvl-two-sided-combine")
MNNVL = MNNVL_ONE + MNNVL_TWO
MEASURED_ONLY = DEEPEP_LL + MNNVL       # timed by their measured curve or refused, never the α-β all-to-all
DEEPEP_LABELS = {DEEPEP_DISPATCH: ("DeepEP", "dispatch"), DEEPEP_COMBINE: ("DeepEP", "combine"),
                 DEEPEP_DISPATCH_FP4: ("DeepEP", "NVFP4 dispatch"),
                 DEEPEP_LL_DISPATCH: ("DeepEP", "low-latency dispatch"),
                 DEEPEP_LL_COMBINE: ("DeepEP", "low-latency combine"),
                 **{name: ("MNNVL", name.removeprefix("alltoall-mnnvl-").replace("-sided-", "-sided "))
                    for name in MNNVL}}   # (whose kernel, which phase) of each exchange curve
DEEPEP_LL_MAX_TOKENS = 256        # tokens per rank the measured low-latency rows reach (1–256)
# bytes per hidden element a DeepEP exchange moves in each wire dtype: bf16; fp8 as TensorRT-LLM's post-quant
# dispatch sends it (per-tensor scale, no per-row scales: communication/deep_ep_low_latency.py); NVFP4 with its
# one-byte scale per 16 elements (``hidden_states_sf``, hidden / 16 bytes a row)
DEEPEP_WIRE_BYTES = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5 + 1.0 / 16}

CURVE_COLLECTIVES = ("allreduce", "allgather", "reducescatter", "alltoall") + OWN_ALLREDUCE + DEEPEP + DEEPEP_LL + MNNVL
CURVE_FIELDS = ("collective", "gpus", "alpha_s", "bus_Bps", "rows", "from_bytes")
MAX_LINES = 8
MAX_ALPHA_S = 1.0
MAX_BUS_BPS = 1e15
MAX_FROM_BYTES = float(1 << 50)


def bus_factor(collective: str, p: int) -> float:
    """Bus bytes per message byte (nccl-tests' busbw convention)."""
    return 2.0 * (p - 1) / p if collective.startswith("allreduce") else (p - 1) / p


def curve_time(lines, collective: str, p: int, nbytes):
    """(alpha_s, beta_s) of the fastest line of ``lines`` ((α, B) pairs, or (α, B, from_bytes) triples: the
    fastest of the message size's own regime) at each message size."""
    n = np.asarray(nbytes, dtype=float)
    x = bus_factor(collective, p) * n
    shape = (-1,) + (1,) * x.ndim
    a = np.array([l[0] for l in lines]).reshape(shape)
    b = np.array([l[1] for l in lines]).reshape(shape)
    beta = x[None] / b
    cost = a + beta
    if any(len(l) > 2 for l in lines):
        cost = np.where(in_regime(lines, n), cost, np.inf)
    pick = np.argmin(cost, axis=0)[None]
    return np.take_along_axis(np.broadcast_to(a, beta.shape), pick, 0)[0], np.take_along_axis(beta, pick, 0)[0]


def in_regime(lines, nbytes: np.ndarray) -> np.ndarray:
    """(lines × sizes) whether each line's regime holds each message size: a size's regime starts at the largest
    ``from_bytes`` at or below it (the smallest one for a size below them all)."""
    start = np.array([float(l[2]) if len(l) > 2 else 0.0 for l in lines])
    starts = np.unique(start)
    at = starts[np.maximum(np.searchsorted(starts, nbytes, side="right") - 1, 0)]
    return start.reshape((-1,) + (1,) * nbytes.ndim) == at[None]


def nearest(curves: dict, collective: str, p: int):
    """The lines for ``collective`` over ``p`` ranks on one node: its own, else the nearest measured group
    size below ``p`` (else above); None where the file measures none for that collective."""
    sizes = sorted(g for c, g in curves if c == collective)
    if not sizes:
        return None
    below = [g for g in sizes if g <= p]
    return curves[(collective, below[-1] if below else sizes[0])]


def check_curves(items: object, where: str) -> dict:
    """The ``[[network.curve]]`` entries of a hardware file as {(collective, gpus): ((α, B), …)}, each
    refused field by field when hand-edited into nonsense."""
    if not isinstance(items, list) or not items:
        raise IronlawError(f"{where}: expected a non-empty list of tables ([[network.curve]])")
    out: dict = {}
    for j, c in enumerate(items):
        w = f"{where}[{j}]"
        if not isinstance(c, dict):
            raise IronlawError(f"{w}: expected a table")
        for key in c:
            if key not in CURVE_FIELDS:
                raise unknown(f"field in {w}", key, CURVE_FIELDS)
        name = c.get("collective")
        if name not in CURVE_COLLECTIVES:
            raise unknown(f"collective in {w}", str(name), CURVE_COLLECTIVES)
        p = c.get("gpus")
        if isinstance(p, bool) or not isinstance(p, int) or not 2 <= p <= 1 << 20:
            raise IronlawError(f"{w}.gpus: must be a whole number ≥ 2, got {p!r}")
        alpha, bus = _numbers(c, "alpha_s", w, MAX_ALPHA_S, True), _numbers(c, "bus_Bps", w, MAX_BUS_BPS, False)
        if len(alpha) != len(bus):
            raise IronlawError(f"{w}: alpha_s and bus_Bps must have as many entries ({len(alpha)} vs {len(bus)})")
        rows = c.get("rows", 0)
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
            raise IronlawError(f"{w}.rows: must be a whole number ≥ 0, got {rows!r}")
        if (name, p) in out:
            raise IronlawError(f"{w}: a second curve for {name} on {p} GPUs")
        if "from_bytes" in c:
            start = _numbers(c, "from_bytes", w, MAX_FROM_BYTES, True)
            if len(start) != len(alpha):
                raise IronlawError(f"{w}: from_bytes must have one entry per line ({len(start)} vs {len(alpha)})")
            out[(name, p)] = tuple(zip(alpha, bus, start))
        else:
            out[(name, p)] = tuple(zip(alpha, bus))
    return out


def _numbers(c: dict, key: str, where: str, upper: float, zero_ok: bool) -> list[float]:
    v = c.get(key)
    ok = isinstance(v, list) and 1 <= len(v) <= MAX_LINES and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
        and (x >= 0 if zero_ok else x > 0) and x <= upper for x in v)
    if not ok:
        lo = "≥ 0" if zero_ok else "> 0"
        raise IronlawError(f"{where}.{key}: must be a list of 1–{MAX_LINES} numbers {lo} and at most {upper:g}, "
                           f"got {v!r}")
    return [float(x) for x in v]
