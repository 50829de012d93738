"""Options that several verbs share, defined once (typer ``Annotated`` aliases).

    def analyze(spec: Spec, on: On = "h100", batch: Batch = 1, seq: Seq = None, …)
"""
from __future__ import annotations

from typing import Annotated, List, Optional

import typer

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
Price = Annotated[Optional[float], typer.Option("--price-per-gpu-hour", help="USD per device-hour (default: a sourced "
                                                                             "cloud rate where ironlaw.law.power has one)")]
Grid = Annotated[Optional[float], typer.Option("--grid-gco2-per-kwh", help="grid carbon intensity (default: world "
                                                                           "average 481, Ember 2023)")]
TrainTokens = Annotated[Optional[str], typer.Option("--train-tokens", help="train: price the whole run of this many "
                                                                           "tokens, e.g. 15T (K, M, B, T suffixes)")]
MtbfGpuHours = Annotated[Optional[float], typer.Option("--mtbf-gpu-hours", help="with --train-tokens: GPU-hours per "
                                                       "interruption, per GPU (default: Llama 3's, 50,677)")]
CheckpointS = Annotated[Optional[float], typer.Option("--checkpoint-s", help="with --train-tokens: seconds to write "
                                                      "a checkpoint (gives lost work and goodput)")]
RestartS = Annotated[Optional[float], typer.Option("--restart-s", help="with --checkpoint-s: seconds to restart "
                                                   "after an interruption (default: --checkpoint-s)")]
