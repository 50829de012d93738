"""Options that several verbs share, defined once (typer ``Annotated`` aliases), and the run-cost group
(``with_run_cost``: price, grid and the whole-run options, handed to a command as one ``RunCost``), and the
reader of ``--opt`` (``parse_opts``).

    def analyze(spec: Spec, on: On = "h100", batch: Batch = 1, seq: Seq = None, …)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Callable, List, Optional

import click
import typer

from .groups import grouped


class AsTyped(float):
    """A float option's value that prints as the user typed it: ``--price-per-gpu-hour -5`` is refused with
    "got -5", not "got -5.0" (``str``, ``repr`` and ``f"{v}"``; arithmetic gives plain floats)."""

    def __new__(cls, text: str, value: float):
        obj = super().__new__(cls, value)
        obj.text = text.strip()
        return obj

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


class _TypedFloat(click.types.FloatParamType):
    """click's FLOAT (same checks, same message on 'abc'), whose value remembers its text."""

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return super().convert(value, param, ctx)
        return AsTyped(value, super().convert(value, param, ctx))


FLOAT = _TypedFloat()   # every float option's click_type


class _Fraction(_TypedFloat):
    """A share: ``0.5`` or ``50%`` (a percentage, divided by 100); its value prints as typed. Text that is
    neither is refused naming both spellings."""
    name = "fraction"

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return super().convert(value, param, ctx)
        text = value.strip()
        number = text[:-1].strip() if text.endswith("%") else text
        try:
            v = float(number)
        except ValueError:
            self.fail(f"takes a fraction such as 0.5 or a percentage such as 50%, got {value!r}", param, ctx)
        return AsTyped(value, v / 100.0 if text.endswith("%") else v)


FRACTION = _Fraction()  # the click_type of an option that is a share of something

Spec = Annotated[str, typer.Argument(help="workload: a built-in name (see `ironlaw workloads list`), hf:config.json, "
                                          "gemm:M,N,K, py:file.py:factory …")]
On = Annotated[str, typer.Option("--on", help="hardware: a catalog name, a .toml file, or 'local' (newest probe profile)")]
Batch = Annotated[int, typer.Option("--batch", help="batch size (sequences, images, samples)")]
Seq = Annotated[Optional[int], typer.Option("--seq", help="sequence length; for decode, the context length already "
                                                          "in the KV cache")]
Phase = Annotated[Optional[str], typer.Option("--phase", help="infer | prefill | decode | train (default: the "
                                                              "workload's own)")]
DType = Annotated[Optional[str], typer.Option("--dtype", help="fp32 | tf32 | bf16 | fp16 | fp8 | int8 | int4 | fp4 "
                                                              "(NVFP4) | mxfp8 | mxfp4 (default: the workload's own)")]
Serial = Annotated[bool, typer.Option("--serial/--overlap", help="compose data, compute and latency serially (sum) "
                                                                 "or overlapped (max + latency)")]
Opt = Annotated[List[str], typer.Option("--opt", help="builder option KEY=VALUE (repeatable), e.g. image=288")]
Format = Annotated[str, typer.Option("--format", help="text | json | md")]

# a training step's options, analyze's and search's (search: applied to every layout it ranks)
OffloadActivations = Annotated[Optional[int], typer.Option(
    "--offload-activations", help="layers per stage whose saved activations wait in host memory (Megatron's "
                                  "cpu_offloading; search: on the layouts whose stages hold that many)")]
RedundantExperts = Annotated[Optional[int], typer.Option(
    "--redundant-experts", help="EPLB's extra expert slots (replicas of hot experts) on every layout with EP > 1, "
                                "as analyze's and serve's: EP degrees that divide experts + N (DeepSeek: 256 + 32 "
                                "over 72); serving: TensorRT-LLM's")]
CudaGraph = Annotated[Optional[str], typer.Option(
    "--cuda-graph", help="parts captured in CUDA graphs: attn, moe_router, moe_preprocess, full (each whole layer), "
                         "full_iteration (the whole forward-backward step) (comma-separated; default none: eager)")]
FP8Attention = Annotated[bool, typer.Option(
    "--fp8-attention", help="attention's products in FP8 with Q, K, V and dO quantized (Transformer Engine's "
                            "fp8_dpa; Megatron's fp8_dot_product_attention)")]
LoraRank = Annotated[Optional[int], typer.Option(
    "--lora-rank", help="fine-tune with LoRA adapters of this rank on attention's QKV and output projections (NeMo's "
                        "LoRA, MLPerf's llama2_70b_lora): base weights frozen, only the adapters trained (--phase "
                        "train)")]
LoraTargets = Annotated[Optional[str], typer.Option(
    "--lora-targets", help="the linears --lora-rank adapts, NeMo's names, comma-separated: linear_qkv, linear_proj, "
                           "linear_fc1, linear_fc2 (default linear_qkv,linear_proj)")]
RecomputeLayers = Annotated[Optional[int], typer.Option(
    "--recompute-layers", help="with --recompute full: N layers per pipeline stage (per virtual stage with "
                               "--interleave) recompute their forward, the rest keep their activations (Megatron's "
                               "recompute_num_layers; search: fixed on every layout, else chosen per layout: the "
                               "fewest that fit)")]
RecomputeMethod = Annotated[Optional[str], typer.Option(
    "--recompute-method", help="which layers --recompute-layers N recomputes: block (the first N of each stage; "
                               "default) | uniform (every layer, in groups of N)")]
ParamGatherExposed = Annotated[bool, typer.Option(
    "--param-gather-exposed", help="the distributed optimizer's (--zero 1) parameter all-gather runs after the step "
                                   "instead of under the next forward (Megatron's overlap_param_gather off; "
                                   "search: on its ZeRO-1 layouts)")]
Network = Annotated[Optional[str], typer.Option(
    "--network", help="collectives' calibration: default (sourced estimates, ports add up) | a100-vidur (fitted to "
                      "vidur's NCCL runs); default: the hardware file's [network]")]

MEMORY_HELP = ("the engine's memory knob, 0.9 or 90%: vLLM gpu_memory_utilization (default 0.9), SGLang "
               "mem_fraction_static (default: its rule by memory and TP), TensorRT-LLM free_gpu_memory_fraction, the "
               "KV cache's share of the memory free after weights (default 0.95, as the published runs; --kv-fraction)")
MemoryFraction = Annotated[Optional[float], typer.Option("--memory-fraction", click_type=FRACTION, help=MEMORY_HELP)]


def parse_opts(items: list[str]) -> dict:
    """``--opt`` (``Opt``): its KEY=VALUE pairs; values that read as numbers become numbers."""
    from ..core.errors import IronlawError

    out: dict = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise IronlawError(f"--opt expects KEY=VALUE, got '{item}'")
        v: object = value.strip()
        for conv in (int, float):
            try:
                v = conv(value)
                break
            except ValueError:
                pass
        if key.strip() in out:
            raise IronlawError(f"--opt {key.strip()} given twice ({out[key.strip()]!r} and {v!r}); give it once")
        out[key.strip()] = v
    return out


Price = Annotated[Optional[float], typer.Option("--price-per-gpu-hour", click_type=FLOAT, help="USD per device-hour (default: a sourced "
                                                                             "cloud rate where ironlaw.law.power has one)")]
Grid = Annotated[Optional[float], typer.Option("--grid-gco2-per-kwh", click_type=FLOAT, help="grid carbon intensity (default: world "
                                                                           "average 481, Ember 2023)")]
TrainTokens = Annotated[Optional[str], typer.Option("--train-tokens", help="train: price the whole run of this many "
                                                                           "tokens, e.g. 15T (K, M, B, T suffixes)")]
MtbfGpuHours = Annotated[Optional[float], typer.Option("--mtbf-gpu-hours", click_type=FLOAT, help="with --train-tokens: GPU-hours per "
                                                       "interruption, per GPU (default: Llama 3's, 50,677)")]
CheckpointS = Annotated[Optional[float], typer.Option("--checkpoint-s", click_type=FLOAT, help="with --train-tokens: seconds to write "
                                                      "a checkpoint (gives lost work and goodput)")]
RestartS = Annotated[Optional[float], typer.Option("--restart-s", click_type=FLOAT, help="with --checkpoint-s: seconds to restart "
                                                   "after an interruption (default: --checkpoint-s)")]


RUN_COST = (("price", Price), ("grid", Grid), ("train_tokens", TrainTokens), ("mtbf_gpu_hours", MtbfGpuHours),
            ("checkpoint_s", CheckpointS), ("restart_s", RestartS))


@dataclass(frozen=True)
class RunCost:
    """The run-cost options of one command line, under the names ``api.analyze`` and ``api.search`` take."""
    price: Optional[float] = None
    grid: Optional[float] = None
    train_tokens: Optional[str] = None
    mtbf_gpu_hours: Optional[float] = None
    checkpoint_s: Optional[float] = None
    restart_s: Optional[float] = None

    def api_kwargs(self) -> dict:
        return {"price_per_gpu_hour": self.price, "grid_gco2_per_kwh": self.grid, "train_tokens": self.train_tokens,
                "mtbf_gpu_hours": self.mtbf_gpu_hours, "checkpoint_s": self.checkpoint_s, "restart_s": self.restart_s}


def with_run_cost(command: Callable) -> Callable:
    """``command`` with its ``cost: RunCost`` parameter shown to typer as the six ``RUN_COST`` options (same
    flags, help and place in ``--help``); typer calls it with them, ``command`` gets them as one ``RunCost``
    (``groups.grouped``, as the workload case's options)."""
    return grouped(command, "cost", tuple((name, kind, None) for name, kind in RUN_COST), RunCost)
