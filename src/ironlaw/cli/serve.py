"""`ironlaw serve SPEC --on HW --prompt 1024 --output 256 --concurrency 32`: LLM serving estimates."""
from __future__ import annotations

from typing import Optional

import typer

from .common import app, check_format, emit_json, emit_lines


@app.command()
def serve(
    spec: str = typer.Argument(..., help="a decoder LLM: llama3-8b, mixtral-8x7b, hf:config.json …"),
    on: str = typer.Option("h100", "--on", help="hardware: a catalog name or a .toml file"),
    prompt: int = typer.Option(1024, "--prompt", help="prompt tokens per request"),
    output: int = typer.Option(256, "--output", help="generated tokens per request"),
    concurrency: int = typer.Option(1, "--concurrency", help="sequences in flight (continuous batching)"),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="weights and compute dtype (default: the model's)"),
    kv_dtype: Optional[str] = typer.Option(None, "--kv-dtype", help="KV-cache dtype, e.g. fp8 (default: --dtype)"),
    page_tokens: int = typer.Option(16, "--page-tokens", help="KV page size in tokens; 0 = no paging"),
    max_seq: Optional[int] = typer.Option(None, "--max-seq", help="without paging: tokens reserved per sequence"),
    chunk: Optional[int] = typer.Option(None, "--chunk", help="chunked prefill: prompt tokens per step"),
    tp: int = typer.Option(1, "--tp", help="tensor-parallel devices"),
    serial: bool = typer.Option(False, "--serial/--overlap", help="compose terms serially or overlapped"),
    fmt: str = typer.Option("text", "--format", help="text | json | md"),
):
    """Time to first token, inter-token latency, tokens/s and KV capacity of serving an LLM."""
    from .. import serving
    from ..units import fmt as f, fmt_time

    check_format(fmt)
    est = serving.estimate(spec, on, prompt, output, concurrency, dtype=dtype, kv_dtype=kv_dtype,
                           page_tokens=page_tokens, max_seq=max_seq, chunk=chunk, tp=tp,
                           composition="serial" if serial else "overlap")
    d = est.to_dict()
    if fmt == "json":
        emit_json(d)
        return
    cap = d["capacity"]
    lines = [f"{spec} on {est.hw.name}{f' × {tp} (tensor parallel)' if tp > 1 else ''}: prompt {prompt}, output "
             f"{output}, concurrency {concurrency}, KV {est.kv_dtype}"
             f"{f', chunked prefill {chunk}' if chunk else ''}",
             f"TTFT {fmt_time(d['ttft_s'])} · inter-token {fmt_time(d['itl_s'])} · {d['tokens_per_s']:.1f} tokens/s "
             f"({d['tokens_per_s_per_sequence']:.1f} per sequence) · request {fmt_time(d['request_latency_s'])}",
             f"decode step {fmt_time(d['decode_step_s'])}: {d['decode_bottleneck']['resource']}-bound — "
             f"{d['decode_bottleneck']['why']}",
             f"prefill {fmt_time(d['prefill_s'])}: {d['prefill_bottleneck']['resource']}-bound",
             f"capacity: {f(cap['device_memory_bytes'], 'B')} − weights {f(cap['weights_bytes'], 'B')} − reserve "
             f"{f(cap['reserve_bytes'], 'B')} = KV {f(cap['kv_budget_bytes'], 'B')} at "
             f"{f(cap['kv_bytes_per_token'], 'B')}/token → {cap['max_concurrency']} sequences of "
             f"{cap['tokens_reserved_per_sequence']} tokens{' (paged)' if cap['paged'] else ''}"]
    emit_lines(lines, fmt)
