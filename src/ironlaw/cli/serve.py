"""`ironlaw serve SPEC --on HW --prompt 1024 --output 256 --concurrency 32`: LLM serving estimates."""
from __future__ import annotations

from typing import Optional

import typer

from .common import app, check_format, emit_json, emit_lines, say_written
from .serve_throughput import expert_lines, lengths_lines
from .options import FLOAT, FRACTION, Format, MemoryFraction


KV_HELP = ("max-throughput: share of free memory for KV (0.95 or 95%; 0.95 as the published TensorRT-LLM runs; its own "
           "default is 0.90)")

LENGTHS_HELP = ("a file of per-request lengths in place of --prompt/--output: a CSV whose header names "
                "the columns prompt and output (tokens; other columns read past, # lines comments) or JSON Lines of "
                "{\"prompt\": P, \"output\": O}; --requests cycles them (a part spread evenly over the file). "
                "Priced at the mix's token-weighted decode context, its prompts' attention pairs, KV reserved per "
                "request by its own length")

ASYNC_HELP = ("--engine vllm: vLLM's --async-scheduling (SchedulerConfig.async_scheduling, off by default): the "
              "scheduler, input preparation and output handling of a step overlap the device's previous step "
              "(the step lasts the longer of device and host work) instead of adding to it; the logits and sampler "
              "stay in the device's step. Refused with --engine trtllm or sglang (both overlap by default) and "
              "with --pp > 1 (vLLM refuses it)")


EP_HELP = ("max-throughput: expert-parallel degree (MoE; equals --tp): with --attention-dp TensorRT-LLM's recipe, "
           "without it (--engine vllm|sglang) EP under TP attention")


@app.command(short_help="Serve an LLM: TTFT, inter-token latency, tokens/s, KV cache.")
def serve(
    spec: str = typer.Argument(..., help="a decoder LLM: llama3-8b, mixtral-8x7b, hf:config.json …"),
    on: str = typer.Option("h100", "--on", help="hardware: a catalog name or a .toml file"),
    prompt: Optional[int] = typer.Option(None, "--prompt", help="prompt tokens per request (default 1024)"),
    output: Optional[int] = typer.Option(None, "--output", help="generated tokens per request (default 256)"),
    lengths: Optional[str] = typer.Option(None, "--lengths", help=LENGTHS_HELP),
    concurrency: int = typer.Option(1, "--concurrency", help="sequences in flight (continuous batching)"),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="weights and compute dtype (default: the model's)"),
    kv_dtype: Optional[str] = typer.Option(None, "--kv-dtype", help="KV-cache dtype: bf16, fp16, fp8 (TensorRT-LLM: "
                                           "GPUs with FP8 only), or fp4 (NVFP4, Blackwell only) (default: --dtype; fp8 for 8- and 4-bit float models, as "
                                           "their checkpoints)"),
    page_tokens: Optional[int] = typer.Option(None, "--page-tokens", help="KV page size in tokens; 0 = no paging "
                                              "(on a GPU: the engine's own block, TensorRT-LLM 32, vLLM 16, SGLang "
                                              "1; elsewhere default 16)"),
    max_seq: Optional[int] = typer.Option(None, "--max-seq", help="without paging: tokens reserved per sequence"),
    chunk: Optional[int] = typer.Option(None, "--chunk", help="chunked prefill: prompt tokens per step"),
    tp: int = typer.Option(1, "--tp", help="tensor-parallel devices"),
    serial: bool = typer.Option(False, "--serial/--overlap", help="compose terms serially or overlapped"),
    max_throughput: bool = typer.Option(False, "--max-throughput",
                                        help="offline max throughput, as `trtllm-bench throughput` measures it"),
    ep: int = typer.Option(1, "--ep", help=EP_HELP),
    attention_dp: bool = typer.Option(False, "--attention-dp", help="max-throughput: attention data parallel (MoE)"),
    pp: int = typer.Option(1, "--pp", help="max-throughput: pipeline stages"),
    kv_fraction: Optional[float] = typer.Option(None, "--kv-fraction", click_type=FRACTION, help=KV_HELP),
    memory_fraction: MemoryFraction = None,
    max_batch: Optional[int] = typer.Option(None, "--max-batch", help="max-throughput: sequences in flight "
                                            "(TensorRT-LLM max_batch_size, vLLM max_num_seqs, SGLang "
                                            "max_running_requests)"),
    max_num_tokens: Optional[int] = typer.Option(None, "--max-num-tokens", help="max-throughput: the step token "
                                                 "budget (TensorRT-LLM max_num_tokens, vLLM max_num_batched_tokens: "
                                                 "decode and prompt tokens together; SGLang chunked_prefill_size: "
                                                 "a prefill batch's tokens)"),
    requests: Optional[int] = typer.Option(None, "--requests", help="max-throughput: requests queued"),
    expert_imbalance: float = typer.Option(1.0, "--expert-imbalance", click_type=FLOAT, help="max-throughput: busiest expert rank's "
                                           "load over the mean (1.0 = balanced)"),
    moe_routing: Optional[str] = typer.Option(None, "--moe-routing", help="max-throughput: the router's load on the "
                                              "busiest expert rank per step: balanced | power_law_<alpha> (the "
                                              "kernel collector's routings; default: none, experts drawn "
                                              "uniformly at random, times --expert-imbalance)"),
    moe_dispatcher: Optional[str] = typer.Option(None, "--moe-dispatcher", help="max-throughput: TensorRT-LLM's "
                                                 "strategy for the expert exchange, timed by the GPU's measured "
                                                 "curves: deepep (DeepEP high-throughput) | deepep-ll (DeepEP "
                                                 "low-latency, ≤ 256 tokens per rank) | nvlink-one-sided | "
                                                 "nvlink-two-sided (MNNVL all-to-all, GB200) (default: the engine's "
                                                 "all-gather/reduce-scatter, MNNVL all-to-all on NVL72)"),
    redundant_experts: int = typer.Option(0, "--redundant-experts", help="max-throughput: extra expert slots for "
                                          "replicas of hot experts (EPLB), so that --ep divides experts + N "
                                          "(DeepSeek's 256 + 32 over 72)"),
    speculative: Optional[str] = typer.Option(None, "--speculative", help="method=draft,draft=M,tokens=K,acceptance=A"),
    prefix_hit: Optional[float] = typer.Option(None, "--prefix-hit", click_type=FRACTION,
                                              help="share of prompt tokens served from cache (0.5 or 50%)"),
    disaggregate: Optional[str] = typer.Option(None, "--disaggregate", help="prefill=GPUS,decode=GPUS: two pools"),
    slo: Optional[str] = typer.Option(None, "--slo", help="ttft=2s,itl=50ms: the most concurrency meeting both"),
    sweep_concurrency: bool = typer.Option(False, "--sweep-concurrency", help="tokens/s per GPU vs per user"),
    plot: Optional[str] = typer.Option(None, "--plot", help="with --sweep-concurrency: draw it (.svg, .png)"),
    price: Optional[float] = typer.Option(None, "--price-per-gpu-hour", click_type=FLOAT, help="USD per GPU-hour (default: sourced)"),
    grid: Optional[float] = typer.Option(None, "--grid-gco2-per-kwh", click_type=FLOAT, help="gCO2/kWh (default 481, Ember 2023)"),
    engine: Optional[str] = typer.Option(None, "--engine", help="serving framework: trtllm (NVIDIA GPUs only) | "
                                         "vllm | sglang (its kernels and its scheduler's defaults; default: "
                                         "trtllm on NVIDIA GPUs, vllm on AMD and Intel GPUs)"),
    release: Optional[str] = typer.Option(None, "--release", help="engine release whose kernels price the steps, "
                                          "its MoE layer too: 1.0 (default: the catalog's, TensorRT-LLM 1.3.0rc20)"),
    runtime: Optional[str] = typer.Option(None, "--runtime", help="TensorRT-LLM's executor, whose host launches the "
                                          "kernels: pytorch (default; the engine constants' fit) | cpp (the C++ "
                                          "executor over a TensorRT engine, as NVIDIA's MLPerf harness runs it: no "
                                          "CUDA graphs, a measured C++ launch per kernel); --engine trtllm only"),
    async_scheduling: bool = typer.Option(False, "--async-scheduling", help=ASYNC_HELP),
    fmt: Format = "text",
    html: Optional[str] = typer.Option(None, "--html", help="also write a report: the steps, their rooflines, the "
                                       "concurrency frontier (one self-contained HTML file)"),
):
    """Time to first token, inter-token latency, tokens/s and KV capacity of serving an LLM."""
    from .. import api
    from ..api.options import keywords_for

    check_format(fmt)
    res = api.serve(spec, on, price_per_gpu_hour=price, grid_gco2_per_kwh=grid, **keywords_for(api.serve, locals()))
    prompt, output = (1024 if prompt is None else prompt), (256 if output is None else output)   # api.serve's
    _show(res, fmt, spec, tp, prompt, output, concurrency, max_throughput, sweep_concurrency, memory_fraction)
    say_written(fmt, plot=plot, html=html)


def _show(res, fmt: str, spec: str, tp: int, prompt: int, output: int, concurrency: int, max_throughput: bool,
          sweep_concurrency: bool, memory_fraction=None) -> None:
    """Print the serve result: its document (json), the offline table, the frontier, or the online lines."""
    if fmt == "json":
        emit_json(res.to_dict())
    elif max_throughput:
        from .serve_throughput import show
        show(res, spec, prompt, output, fmt)
    elif sweep_concurrency:
        head, *rest = res.lines(md=fmt == "md")
        emit_lines([head] + _engine_lines(res.doc) + rest, fmt)
    else:
        emit_lines(_online_lines(res, spec, tp, prompt, output, concurrency, memory_fraction), fmt)


def _online_lines(res, spec: str, tp: int, prompt: int, output: int, concurrency: int,
                  memory_fraction=None) -> list[str]:
    """The online serve's text: the step model, TTFT and inter-token latency, the bottlenecks, the KV capacity (with
    a given ``memory_fraction``, what its reserve holds)."""
    from ..core.units import fmt_num, fmt_size, fmt_time
    est, d, more = res.estimate, res.to_dict(), res.lines
    cap = d["capacity"]
    sizes = f"prompt {prompt}, output {output}" if d.get("lengths") is None else \
        f"prompt {est.prompt}, output {est.output} (the means of {d['lengths']['source']})"
    lines = [f"{spec} on {est.hw.name}{f' × {tp} (tensor parallel)' if tp > 1 else ''}: {sizes}, concurrency "
             f"{concurrency}, {d['dtype']}, KV {est.kv_dtype}{f', chunked prefill {est.chunk}' if est.chunk else ''}"] + \
        lengths_lines(d.get("lengths")) + _engine_lines(d) + expert_lines(d) + [
             f"steps: {d['step_model']['name']} step model ({d['step_model']['rule']})",
             *(f"note: {n}" for n in d.get("notes") or ()),
             f"TTFT {fmt_time(d['ttft_s'])} · inter-token {fmt_time(d['itl_s'])} · {fmt_num(d['tokens_per_s'])} tokens/s "
             f"({_per_device(d)}{fmt_num(d['tokens_per_s_per_sequence'])} per sequence) · request "
             f"{fmt_time(d['request_latency_s'])}",
             d["ttft_why"], d["itl_why"],
             f"decode step {fmt_time(d['decode_step_s'])}: {d['decode_bottleneck']['resource']}-bound — "
             f"{d['decode_bottleneck']['why']}",
             *([f"decode step, host: {d['decode_host']['why']}"] if "decode_host" in d else []),
             f"prefill {fmt_time(d['prefill_s'])}: {d['prefill_bottleneck']['resource']}-bound",
             *([f"prefill step, host: {d['prefill_host']['why']}"] if "prefill_host" in d else []),
             f"capacity: {fmt_size(cap['device_memory_bytes'])} − weights {fmt_size(cap['weights_bytes'])} − reserve "
             f"{fmt_size(cap['reserve_bytes'])} = KV {fmt_size(cap['kv_budget_bytes'])} at "
             f"{fmt_size(cap['kv_bytes_per_token'])}/token → {fmt_num(cap['max_concurrency'])} sequences of "
             f"{fmt_num(cap['tokens_reserved_per_sequence'])} tokens{' (paged)' if cap['paged'] else ''}",
             *([f"reserve: {cap['reserve_source']}"] if memory_fraction is not None else [])] + more
    return lines


def _per_device(d: dict) -> str:
    """On several devices, that tokens/s is theirs together and what one device serves."""
    from ..core.units import fmt_num
    n = d["devices"]
    return "" if n == 1 else f"all {n} devices; {fmt_num(d['tokens_per_s_per_device'])} per device, "


def _engine_lines(d: dict) -> list[str]:
    """The engine's lines under the head: none for the default (TensorRT-LLM at the catalog's release), else whose
    kernels and limits."""
    e = d.get("engine") or {}
    if e.get("name", "trtllm") == "trtllm" and "release" not in e and "runtime" not in e:
        return []
    from ..models.serving.frameworks import lines_of
    return lines_of(d["engine"])
