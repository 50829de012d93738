"""The routed experts' compute η carried from the H100 fit to another GPU and dtype by its measured GEMM ceiling.

``engine.FITTED``'s ``expert_gemm_eta`` is a share of the datasheet matrix peak, fitted end to end on H100's FP8
cells. A GPU's tensor cores need not sustain the same share of their datasheet peak in another dtype: the kernel
tables measure NVIDIA's own NVFP4 GEMMs on B200 at about 0.39 of the 9 PFLOP/s FP4 peak where they are
compute-bound, H100's FP8 GEMMs at about 0.62 of theirs (aiconfigurator-core 0.12.0, TensorRT-LLM 1.3.0rc20
``gemm_perf``; docs/accuracy.md). So the experts' compute η on a device is the fit's, times the device's
**ceiling** in the experts' dtype over H100's in FP8 — the rule ``measure/calibrate/carry.py`` carries
training's matmul η by:

    η_c(gpu, dtype) = expert_gemm_eta · ceiling(gpu, dtype) / ceiling(h100, fp8)

The ceiling is read off the device's own kernel-fitted GEMM term (``[calibration.matmul.<dtype>]`` and its
grid, which ``calibrate --kernels`` fits on measured tables and whose provenance names them): the median, over
the compute-bound shapes of carry.py's rule (M ≥ 8192, N and K ≥ 4096: ``SHAPES``), of the GEMM's FLOPs ÷
(the law's time for it × the datasheet peak), priced as the engine prices a GEMM (``step.engine_hw``) without
the tables' fixed seconds per call (a ceiling is a rate; so it depends on the device alone). H100's
FP8 cells therefore keep their η exactly (ratio 1). A device or dtype without a kernel-fitted GEMM keeps the
fit's share of its datasheet peak, as before; so does the experts' streaming η (``expert_stream_eta``, a share
of the HBM bandwidth), as carry.py keeps ``memory``. The measured MoE layer (``moe_tables``) is not touched.

A MoE layer on one GPU runs on that measured layer instead, where the device has it (``one_gpu_layer``): the
end-to-end η were fitted on cells whose layers ran under expert parallelism and attention DP.
"""
from __future__ import annotations

import statistics
from dataclasses import replace
from functools import lru_cache

REFERENCE = ("h100", "fp8")        # the GPU and dtype engine.FITTED's expert η were fitted on
SHAPES = tuple((m, n, k) for m in (8192, 16384) for n in (4096, 8192, 16384) for k in (4096, 8192, 16384))
_CEILINGS: dict = {}               # (device, dtype, peak, memory, the dtype's GEMM term) -> ceiling


def gemm_ceiling(hw, dtype: str) -> float | None:
    """Median share of ``hw``'s datasheet ``dtype`` peak its kernel-fitted GEMM term sustains over ``SHAPES``;
    None where ``hw`` has no GEMM of ``dtype`` fitted on measured kernels. Kept per device and GEMM term (a
    prediction prices many steps on one device), keyed by what the ceiling reads."""
    cal = hw.calibration
    term = sorted(cal.shape("matmul").get(dtype, {}).items()) if cal is not None else None
    key = (hw.name, dtype, hw.peak_flops.get(dtype), repr(hw.memory), repr(term),
           repr(cal.provenance.get(f"gemm {dtype}")) if cal is not None else None)
    if key not in _CEILINGS:
        if len(_CEILINGS) > 64:
            _CEILINGS.clear()
        _CEILINGS[key] = _ceiling(hw, dtype)
    return _CEILINGS[key]


def _ceiling(hw, dtype: str) -> float | None:
    import numpy as np
    from ...core.graph import Graph, Op, dtype_bytes
    from ...law.law import predict
    from .step import ServingConstants, engine_hw
    cal = hw.calibration
    if cal is None or f"gemm {dtype}" not in cal.provenance or dtype not in hw.peak_flops:
        return None
    b = dtype_bytes(dtype)
    ops = [Op(f"gemm {m}x{n}x{k}", "matmul", flops=2.0 * m * n * k,
              bytes={"activations": (m * k + m * n) * b, "weights": k * n * b}, dtype=dtype,
              bytes_written=m * n * b, attrs={"nk": (n, k)}) for m, n, k in SHAPES]
    big = max(SHAPES, key=lambda s: s[0] * s[2] + s[0] * s[1] + s[1] * s[2])
    m, n, k = big
    g = Graph("gemm ceiling", "infer", dtype, ops,
              footprint={"activations": (m * k + m * n) * b, "weights": k * n * b})
    rate = ServingConstants(1.0, 1.0, 1.0, 1.0, 0.0, "the device's kernel-fitted GEMM terms, no fixed seconds")
    est = predict(g, engine_hw(hw, rate))
    flops = np.array([op.flops for op in ops])
    return float(statistics.median(flops / (np.asarray(est.op_time_s).reshape(len(ops)) * hw.peak(dtype))))  # numpy.ma: slow import


@lru_cache(maxsize=1)
def reference_ceiling() -> float:
    """H100's FP8 ceiling (``gemm_ceiling``) from the catalog's ``h100`` entry."""
    from ...core.errors import IronlawError
    from ...machine import hardware
    gpu, dtype = REFERENCE
    c = gemm_ceiling(hardware.get(gpu), dtype)
    if c is None:
        raise IronlawError(f"the catalog's {gpu} has no kernel-fitted {dtype} GEMM to carry the expert η from")
    return c


def expert_ratio(hw, dtype: str) -> float:
    """``hw``'s ceiling in ``dtype`` over the reference's (1 where ``hw`` has no kernel-fitted ``dtype`` GEMM)."""
    mine = gemm_ceiling(hw, dtype)
    return 1.0 if mine is None else mine / reference_ceiling()


def carried(constants, hw, dtype: str):
    """``constants`` with ``expert_gemm_eta`` carried to ``hw`` and ``dtype`` (module docstring); unchanged where
    the constants keep no expert η of their own or price the experts on the measured MoE layer."""
    if constants.expert_gemm_eta is None or constants.moe_tables:
        return constants
    ratio = expert_ratio(hw, dtype)
    if ratio == 1.0:
        return constants
    return replace(constants, expert_gemm_eta=constants.expert_gemm_eta * ratio)


def one_gpu_layer(constants, hw, dtype: str, lay):
    """``constants`` with the routed experts on ``hw``'s measured MoE layer (``moe_tables``) where the MoE layer
    runs on one GPU (``lay.tp`` 1: every expert local, no expert-parallel exchange, no attention DP) and ``hw``
    holds that layer fitted on measured kernel tables in ``dtype``; unchanged elsewhere.

    ``expert_gemm_eta`` and ``expert_stream_eta`` were fitted end to end on H100 cells that all ran their MoE
    layers under expert parallelism with attention DP (EP = TP = 4 or 8): beside the grouped GEMM they carry what
    those layers wait on across ranks, which a one-GPU layer does not. There the measured fused-MoE layer is the
    kernel truth the house rules ask for (docs/accuracy.md, "One-GPU MoE layers on the measured layer")."""
    from .step import GROUPED_GEMM, moe_kernels
    if constants.moe_tables or constants.expert_gemm_eta is None or lay.tp != 1:
        return constants
    if moe_kernels(hw, dtype)[0] == GROUPED_GEMM:
        return constants
    return replace(constants, moe_tables=True, expert_layer_scale=None)


def tp_layer(constants, hw, dtype: str, lay, recipe: str | None = None):
    """``constants`` with the routed experts on the framework's own measured fused-MoE layer (``moe_tables``) where
    tensor parallelism shards every expert (``lay.tp`` > 1, no EP, no attention DP) and the framework's tables time
    that layer in the experts' format (``constants.own_moe``: ``dtype``, or ``recipe``, ``precision.moe_recipe``,
    where the device holds it); unchanged elsewhere (TensorRT-LLM's constants state no ``own_moe``).

    vLLM and SGLang shard each expert over the TP group unless told to use expert parallelism (vLLM
    vllm/model_executor/layers/fused_moe/config.py ``FusedMoEParallelConfig.make``: EP only with
    ``enable_expert_parallel``, default False in vllm/config/parallel.py ``ParallelConfig``; SGLang
    python/sglang/srt/layers/moe/fused_moe_triton/layer.py ``FusedMoE.__init__``: intermediate_size / moe_tp_size per
    rank, moe_tp_size = tp_size / ep_size, ``ServerArgs.ep_size`` default 1): each GPU runs the fused-MoE kernel on
    all experts at intermediate / TP, then the TP all-reduce. That is the layer the frameworks' tables time at
    ``moe_tp_size`` > 1 (aiconfigurator collector/vllm/collect_moe.py ``run_moe_torch``: ``FusedMoE`` built with
    tp_size = moe_tp_size; collector/sglang/collect_moe.py ``run_moe_torch``: inter_size // moe_tp_size), fitted
    with them (measure/calibrate/moefit.py ``terms``: i' = inter_size / moe_tp_size). The step's routed GEMMs carry
    that shape after ``parallel.tp_shard`` (N or K over TP, FLOPs and weights too). With EP = TP under TP attention
    (vLLM ``--enable-expert-parallel``, SGLang ``--ep-size``) the same fit prices each GPU's E/ep whole experts, the
    layer its tables time at ``moe_ep_size`` = EP (``serving.tpexperts``)."""
    from .step import GROUPED_GEMM, moe_kernels
    if constants.moe_tables or not constants.own_moe or lay.tp == 1 or lay.ep not in (1, lay.tp) or lay.attention_dp:
        return constants
    gemm, _, carried_to = moe_kernels(hw, dtype, recipe)
    if gemm == GROUPED_GEMM or carried_to is not None or gemm.rsplit(".", 1)[1] not in constants.own_moe:
        return constants
    return replace(constants, moe_tables=True, expert_layer_scale=None)


def measured_layer(constants, hw, dtype: str, lay):
    """``constants`` with an expert-parallel routed layer (``lay.tp`` > 1) on ``hw``'s measured MoE layer in
    ``dtype`` times the level constant ``expert_layer_scale``, where the constants set one and ``hw`` holds that
    layer fitted on measured kernel tables; unchanged elsewhere (the expert η, carried by ``carried``).

    The layer's shape — how its time grows with the rows per expert, the local experts the rows reach (EP) and
    the weights' dtype — is then the device's own measured fused-MoE layer (measure/calibrate/moefit.py); the one
    number fitted end to end on H100 cells is the level: what an expert-parallel layer under attention DP waits
    on beyond the isolated kernel the collector times (docs/accuracy.md, "The expert term's shape from the
    measured MoE layer")."""
    from .step import GROUPED_GEMM, moe_kernels
    if constants.moe_tables or constants.expert_layer_scale is None or lay.tp == 1:
        return constants
    if moe_kernels(hw, dtype)[0] == GROUPED_GEMM:
        return constants
    return replace(constants, moe_tables=True)


def notes(run, ests) -> list[str]:
    """What a serving run (``run``: its ``EngineRun``, the constants as ``engine_of`` carried them; ``ests``: its
    steps' estimates) carried to price its routed experts without measurements of their own, one line each:
    the expert η unscaled where the model routes experts and the device has no kernel-fitted GEMM in their dtype
    (``carried``), and
    block-scaled FP8 experts on per-tensor FP8 MoE classes (``step.moe_kernels``; ``law.coverage`` says it per
    estimate)."""
    c, hw, dtype = run.constants, run.hw, run.dtype
    out = []
    routed = any(op.attrs.get("expert") == "routed" for e in ests for op in e.graph.ops)
    if routed and c.expert_gemm_eta is not None and not c.moe_tables and gemm_ceiling(hw, dtype) is None:
        gpu, ref = REFERENCE
        out.append(f"the routed experts' compute η ({c.expert_gemm_eta:.3g} of the datasheet {dtype} peak) is "
                   f"{gpu}'s {ref} fit carried to {hw.name} unscaled: {hw.name} has no {dtype} GEMM fitted on "
                   f"measured kernels to scale it by")
    carried_for = sorted({(op.attrs["kernel_for"], op.attrs.get("kernel", "")) for e in ests for op in e.graph.ops
                          if op.attrs.get("kernel_for")})
    for want, used in carried_for:
        out.append(f"{want} priced on {used}: {hw.name} has no {want} fitted on measured kernel tables")
    if routed and c.framework_moe and run.lay.tp > 1 and not run.lay.attention_dp:
        out.append(tp_note(c, hw, dtype, run.lay.tp, ests, run.lay.ep))
    return out


def tp_note(c, hw, dtype: str, tp: int, ests, ep: int = 1) -> str:
    """What prices a routed layer TP shards under vLLM or SGLang (``tp_layer``), or EP = TP shards under TP attention
    (``serving.tpexperts``): the framework's fused-MoE fit at the sharded shape, or why the expert η instead."""
    from ..precision import moe_recipe
    fw, fmt = c.framework_moe, moe_recipe(ests[0].graph) or dtype
    head = (f"routed experts: TP {tp} shards every expert (intermediate / {tp} per GPU, {fw}'s default without "
            f"expert parallelism)" if ep == 1 else
            f"routed experts: EP {ep} under TP attention, whole experts, every token on each GPU, the TP all-reduce "
            f"combining ({fw}'s expert parallelism without data parallelism)")
    if c.moe_tables:
        return f"{head}, priced on {fw}'s fused-MoE fit in {fmt} at that shape"
    return (f"{head}, priced on the H100-fitted expert constants: {hw.name} has no {fw} fused-MoE fit in {fmt} "
            f"(its tables time {', '.join(c.own_moe) or 'none'})")
