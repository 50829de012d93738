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
