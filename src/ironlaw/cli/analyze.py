"""`ironlaw analyze SPEC --on HW`: the per-operator Iron Law table of one workload."""
from __future__ import annotations

from typing import Optional

import typer

from .case import Case, with_case
from .common import app, check_format, check_top, console, emit_json, say_written
from .options import (FLOAT, CudaGraph, FP8Attention, Format, LoraRank, LoraTargets, Network, OffloadActivations, On,
                      Opt, ParamGatherExposed, RecomputeLayers, RecomputeMethod, RunCost, Spec, parse_opts,
                      with_run_cost)


@app.command(short_help="Predict one workload on one device: its terms and bottleneck.")
@with_run_cost
@with_case
def analyze(
    spec: Spec,
    on: On = "h100",
    case: Case = Case(),
    fmt: Format = "text",
    top: int = typer.Option(10, "--top", help="rows in the top-ops table (text/md)"),
    gpus: Optional[int] = typer.Option(None, "--gpus", help="devices in all (collectives, parallel training)"),
    nodes: Optional[int] = typer.Option(None, "--nodes", help="nodes the devices are spread over (default 1)"),
    tp: Optional[int] = typer.Option(None, "--tp", help="tensor-parallel degree"),
    pp: Optional[int] = typer.Option(None, "--pp", help="pipeline-parallel degree"),
    dp: Optional[int] = typer.Option(None, "--dp", help="data-parallel degree (default: gpus / (tp·pp))"),
    cp: Optional[int] = typer.Option(None, "--cp", help="context-parallel degree (ring attention; 2·cp divides --seq)"),
    ep: Optional[int] = typer.Option(None, "--ep", help="expert-parallel degree (divides dp and the experts)"),
    expert_imbalance: Optional[float] = typer.Option(None, "--expert-imbalance", click_type=FLOAT, help="hottest expert's load over the mean (≥ 1; default 1: balanced)"),
    global_batch: Optional[int] = typer.Option(None, "--global-batch", help="sequences per optimizer step"),
    micro_batch: Optional[int] = typer.Option(None, "--micro-batch", help="sequences per micro-batch (sets --batch)"),
    interleave: Optional[int] = typer.Option(None, "--interleave", help="virtual pipeline stages per device"),
    sequence_parallel: bool = typer.Option(False, "--sequence-parallel", help="split norms/residuals over TP too"),
    tp_comm_overlap: bool = typer.Option(False, "--tp-comm-overlap", help="pipeline the TP all-gather/reduce-scatter with the GEMMs (needs --sequence-parallel)"),
    overlap_p2p: bool = typer.Option(False, "--overlap-p2p", help="overlap the interleaved schedule's stage sends with compute"),
    grad_fp32: bool = typer.Option(False, "--grad-fp32", help="accumulate and reduce gradients in fp32 (Megatron's main_grad)"),
    moe_a2a_overlap: bool = typer.Option(False, "--moe-a2a-overlap", help="run the expert all-to-alls beside another micro-batch's compute (needs --ep > 1)"),
    redundant_experts: Optional[int] = typer.Option(None, "--redundant-experts", help="extra expert slots for replicas of hot experts, so that --ep divides experts + N (DeepSeek's 256 + 32 over 72)"),
    offload_activations: OffloadActivations = None,
    moe_dispatcher: Optional[str] = typer.Option(None, "--moe-dispatcher", help="Megatron-Core's token dispatcher: alltoall (NCCL all-to-all, chunks sorted by local expert; default) | flex (HybridEP: permute, exchange and sort fused) | deepep (flex on DeepEP: its measured dispatch/combine kernels)"),
    cuda_graph: CudaGraph = None,
    fp8_attention: FP8Attention = False,
    lora_rank: LoraRank = None,
    lora_targets: LoraTargets = None,
    recompute: Optional[str] = typer.Option(None, "--recompute", help="activation recomputation: none | selective | full"),
    recompute_layers: RecomputeLayers = None,
    recompute_method: RecomputeMethod = None,
    zero: Optional[int] = typer.Option(None, "--zero", help="ZeRO stage 0 | 1 | 2 | 3 (3 = FSDP)"),
    fsdp: bool = typer.Option(False, "--fsdp", help="fully sharded data parallel (= --zero 3)"),
    param_gather_exposed: ParamGatherExposed = False,
    plot: Optional[str] = typer.Option(None, "--plot", help="also draw the roofline and the terms per op kind to FILE (.svg or .png)"),
    capture: bool = typer.Option(False, "--capture", help="hf: specs: capture the model through transformers + torch instead of the analytic builder"),
    network: Network = None,
    opt: Opt = [],
    cost: RunCost = RunCost(),
    html: Optional[str] = typer.Option(None, "--html", help="also write a report (one self-contained HTML file); "
                                       "with --phase train and parallel options: the step's timeline"),
):
    """Predict one workload on one device: terms, bottleneck, footprint, per-op table."""
    from .. import api
    from ..api.options import keywords_for

    check_format(fmt)
    check_top(top)
    res = api.analyze(spec, on, options=parse_opts(opt), **keywords_for(api.analyze, locals()), **case.api_kwargs(),
                      **cost.api_kwargs())
    from ..models.analysis import Analysis
    if not isinstance(res, Analysis):              # one training step on many devices (models.training.Training)
        from ._parallel import show_train_step
        show_train_step(res, fmt, top)
        return say_written(fmt, html=html)
    from ..law import power
    cost = power.line(res.energy, res.hw.name)
    if res.run is not None:
        from ..models import run_cost
        cost = "\n".join([cost] + run_cost.lines(res.run))
    if fmt == "json":
        emit_json(res.to_dict())
    elif fmt == "md":
        from ..report.markdown import render
        print(render(res, top=top) + "\n\n" + cost)
    else:
        from ..report.text import render
        render(res, top=top)
        console().print(cost, markup=False)
    say_written(fmt, plot=plot, html=html)
