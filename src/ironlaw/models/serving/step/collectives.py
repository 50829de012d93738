"""A step's tensor-parallel collectives as the engine runs them: in bf16 (``half_collectives``), the all-reduces
on TensorRT-LLM's own op (``trtllm_allreduce``), vLLM's (``vllm_allreduce``) or SGLang's (``sglang_allreduce``) where
the device measures it (``own_allreduce``), both (``engine_collectives``)."""
from __future__ import annotations

from dataclasses import replace

from ....core.graph import Graph, dtype_bytes
from .checkpoint import HALF


TRTLLM_TABLE_HIDDEN = 8192             # widest hidden size TensorRT-LLM's all-reduce strategy table covers


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
    from ....machine.network.curves import TRTLLM_ALLREDUCE
    if int(g.meta.get("hidden", 0)) > TRTLLM_TABLE_HIDDEN:
        return g
    return own_allreduce(g, hw, TRTLLM_ALLREDUCE)


def vllm_allreduce(g: Graph, hw) -> Graph:
    """The tensor-parallel all-reduces of ``g`` as vLLM's engine runs them: ``tensor_model_parallel_all_reduce``
    (vllm/distributed/communication_op.py), which takes its custom all-reduce over NVLink peer memory where the
    message fits it (vllm/distributed/device_communicators/cuda_communicator.py ``CudaCommunicator.all_reduce``:
    ``CustomAllreduce.should_custom_ar``) and NCCL otherwise, inside the step's captured CUDA graph. The device's
    measured curve of that call (collective ``allreduce-vllm``: the collector ran vLLM's own dispatch, its rows timed
    inside a CUDA graph, benchmarks/kernel_comm.py) times a group on one node that it measures; any other group
    keeps NCCL's."""
    from ....machine.network.curves import VLLM_ALLREDUCE
    return own_allreduce(g, hw, VLLM_ALLREDUCE)


def sglang_allreduce(g: Graph, hw) -> Graph:
    """The tensor-parallel all-reduces of ``g`` as SGLang's engine runs them: ``tensor_model_parallel_all_reduce``
    (sglang/srt/distributed/parallel_state.py ``GroupCoordinator.all_reduce``), which takes its custom all-reduce over
    NVLink peer memory where ``CustomAllReduceV2.should_custom_ar`` takes the message (up to 16 MiB) and NCCL otherwise,
    inside the step's captured CUDA graph. The device's measured curve of that call (collective ``allreduce-sglang``:
    the collector ran SGLang's own dispatch, its rows timed by a CUDA graph's replay, benchmarks/kernel_comm.py) times
    a group on one node that it measures; any other group keeps NCCL's."""
    from ....machine.network.curves import SGLANG_ALLREDUCE
    return own_allreduce(g, hw, SGLANG_ALLREDUCE)


def allreduce_line(hw, engine: str, label: str, tp: int) -> str:
    """One line: what times the tensor-parallel all-reduce of ``engine`` ('vllm', 'sglang'; ``label`` its name) over
    ``tp`` GPUs of ``hw`` on one node: the engine's own measured curve where ``hw`` holds one at that group size
    (``own_allreduce``), else NCCL's, and the source of either (``network.collectives.time_source``)."""
    from ....machine.network.calibration import for_hardware
    from ....machine.network.collectives import time_source
    name = f"allreduce-{engine}"
    if (name, tp) in for_hardware(hw).curves:
        return f"TP all-reduce: {label}'s own, {time_source(hw, name, tp, 1)}"
    return (f"TP all-reduce: {hw.name} has no {label} all-reduce curve at {tp} GPUs: NCCL's, "
            f"{time_source(hw, 'allreduce', tp, 1)}")


def own_allreduce(g: Graph, hw, name: str) -> Graph:
    """``g`` with each tensor-parallel all-reduce on one node run as the collective ``name`` (an engine's own op)
    where ``hw`` holds its measured curve at that group size."""
    from ....machine.network.calibration import for_hardware
    curves = for_hardware(hw).curves
    def own(op) -> bool:
        return (op.kind == "collective" and op.module == "tp" and op.collective == "allreduce"
                and op.group[1] == 1 and (name, int(op.group[0])) in curves)
    if not any(own(op) for op in g.ops):
        return g
    ops = [replace(op, collective=name) if own(op) else op for op in g.ops]
    return Graph(g.name, g.phase, g.dtype, ops, footprint=dict(g.footprint), meta=dict(g.meta),
                 uncounted_ops=dict(g.uncounted_ops))


def engine_collectives(run, g: Graph) -> Graph:
    """``g``'s TP collectives as the engine runs them: in bf16 (``half_collectives``), the all-reduces on
    TensorRT-LLM's own op (``trtllm_allreduce``), vLLM's (``vllm_allreduce``) or SGLang's (``sglang_allreduce``) where
    the constants of ``run`` (an ``EngineRun``) say so."""
    g = half_collectives(g)
    if run.constants.trtllm_allreduce:
        return trtllm_allreduce(g, run.hw)
    if run.constants.vllm_allreduce:
        return vllm_allreduce(g, run.hw)
    return sglang_allreduce(g, run.hw) if run.constants.sglang_allreduce else g
