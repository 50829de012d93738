"""`ironlaw search MODEL --phase train|serve --on HW --gpus N …`: the best layouts, ranked."""
from __future__ import annotations

from typing import Optional

import typer

from .common import app, check_format, console, emit_json, say_written
from .options import (FLOAT, CudaGraph, FP8Attention, Format, LoraRank, LoraTargets, MemoryFraction, Network,
                      OffloadActivations, On, Opt, ParamGatherExposed, RecomputeLayers, RecomputeMethod,
                      RedundantExperts, RunCost, Serial, Spec, parse_opts, with_run_cost)

PHASE_HELP = ("train | serve (serve: an attention-DP/EP layout whose MoE workspace, every rank's max_num_tokens, does "
              "not fit is tried at smaller budgets, down to its max batch: 'tokN' in its row, --max-num-tokens N in "
              "its re-run)")


@app.command(short_help="Every parallel layout that fits, predicted and ranked.")
@with_run_cost
def search(
    spec: Spec,
    phase: str = typer.Option("train", "--phase", help=PHASE_HELP),
    on: On = "h100",
    gpus: int = typer.Option(8, "--gpus", help="devices in all"),
    nodes: Optional[int] = typer.Option(None, "--nodes", help="nodes (default: whole nodes of the catalog's size)"),
    global_batch: Optional[int] = typer.Option(None, "--global-batch", help="train: sequences per optimizer step "
                                               "(default 1024)"),
    seq: Optional[int] = typer.Option(None, "--seq", help="train: sequence length (default 4096)"),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="fp32 | tf32 | bf16 | fp16 | fp8 | int8 | int4 | fp4 "
                                        "(NVFP4) | mxfp8 | mxfp4 (default: train: the workload's own; serve: the "
                                        "workload's own and fp8 where the device computes in it, ranked together)"),
    top: int = typer.Option(5, "--top", help="layouts to show"),
    tp: Optional[int] = typer.Option(None, "--tp", help="fix the tensor-parallel degree"),
    pp: Optional[int] = typer.Option(None, "--pp", help="fix the pipeline-parallel degree"),
    cp: Optional[int] = typer.Option(None, "--cp", help="fix the context-parallel degree"),
    dp: Optional[int] = typer.Option(None, "--dp", help="fix the data-parallel degree"),
    ep: Optional[int] = typer.Option(None, "--ep", help="fix the expert-parallel degree"),
    micro_batch: Optional[int] = typer.Option(None, "--micro-batch", help="fix the micro-batch"),
    interleave: Optional[int] = typer.Option(None, "--interleave", help="fix the virtual pipeline stages"),
    recompute: Optional[str] = typer.Option(None, "--recompute", help="fix recomputation: none | selective | full"),
    recompute_layers: RecomputeLayers = None, recompute_method: RecomputeMethod = None,
    zero: Optional[int] = typer.Option(None, "--zero", help="fix the ZeRO stage 0 | 1 | 2 | 3"),
    sequence_parallel: Optional[bool] = typer.Option(None, "--sequence-parallel/--no-sequence-parallel",
                                                     help="fix sequence parallelism on or off"),
    tp_comm_overlap: Optional[bool] = typer.Option(None, "--tp-comm-overlap/--no-tp-comm-overlap",
                                                   help="train: TP collectives pipelined with the GEMMs where "
                                                        "sequence parallel (default: on)"),
    overlap_p2p: Optional[bool] = typer.Option(None, "--overlap-p2p/--no-overlap-p2p",
                                               help="train: stage sends overlapped where the schedule interleaves "
                                                    "(default: on)"),
    grad_fp32: Optional[bool] = typer.Option(None, "--grad-fp32/--no-grad-fp32", help="train: gradients reduced in "
                                             "fp32 (default: bf16, as Megatron-Bridge's recipes)"),
    moe_a2a_overlap: Optional[bool] = typer.Option(None, "--moe-a2a-overlap/--no-moe-a2a-overlap",
                                                   help="train: expert all-to-alls beside another micro-batch's "
                                                        "compute (default: off)"),
    expert_imbalance: Optional[float] = typer.Option(None, "--expert-imbalance", click_type=FLOAT,
                                                     help="train: hottest expert's load / mean (default 1)"),
    moe_dispatcher: Optional[str] = typer.Option(None, "--moe-dispatcher", help="train: Megatron-Core's token "
                                                 "dispatcher on the layouts with EP > 1: alltoall (default) | flex "
                                                 "(HybridEP: permute, exchange and sort fused) | deepep (flex on "
                                                 "DeepEP: its measured dispatch/combine)"),
    redundant_experts: RedundantExperts = None, cuda_graph: CudaGraph = None, fp8_attention: FP8Attention = False,
    lora_rank: LoraRank = None, lora_targets: LoraTargets = None,
    offload_activations: OffloadActivations = None, param_gather_exposed: ParamGatherExposed = False,
    serial: Serial = False, network: Network = None, opt: Opt = [],
    prompt: Optional[int] = typer.Option(None, "--prompt", help="serve: prompt tokens per request (default 1024)"),
    output: Optional[int] = typer.Option(None, "--output", help="serve: generated tokens per request (default 256)"),
    slo: Optional[str] = typer.Option(None, "--slo", help="serve: latency targets, e.g. 'ttft=2s,itl=50ms' "
                                                          "(without: offline max throughput)"),
    serve_engine: Optional[str] = typer.Option(None, "--serve-engine", help="serve: the serving framework whose "
                                               "kernels and scheduler limits price every layout, as `serve "
                                               "--engine`: trtllm | vllm | sglang (default: each device's, trtllm "
                                               "on NVIDIA GPUs, vllm on AMD and Intel GPUs)"),
    memory_fraction: MemoryFraction = None,
    engine: str = typer.Option("local", "--engine", help="where the search runs: local | pool | ray"),
    workers: Optional[int] = typer.Option(None, "--workers", help="worker processes (a local pool; Ray CPUs)"),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (with --engine ray)"),
    rank: str = typer.Option("tokens-per-gpu", "--rank", help="serve: tokens-per-gpu | usd-per-million-tokens"),
    prices: Optional[str] = typer.Option(None, "--price", "--prices", help="serve: USD per GPU-hour by device, e.g. "
                                         "h100=2.5,b200=5 (default: law.power's sourced rates)"),
    cost: RunCost = RunCost(),
    fmt: Format = "text",
    html: Optional[str] = typer.Option(None, "--html", help="also write a report: the ranked layouts, why the best "
                                       "wins (one self-contained HTML file)"),
):
    """Every valid layout that fits, predicted and ranked by tokens/s per GPU, with what binds each. A training
    step's options (--cuda-graph, --fp8-attention, --lora-rank, --offload-activations, --param-gather-exposed,
    --serial, --network, --opt) price every layout as analyze prices one; --memory-fraction every serving layout's
    engine as serve's."""
    from .. import api
    from ..api.options import keywords_for
    check_format(fmt)
    res = api.search(spec, quiet=fmt == "json", options=parse_opts(opt) or None,
                     **keywords_for(api.search, locals()), **cost.api_kwargs())
    if fmt == "json":
        emit_json(res.to_dict())
    else:
        show(res, fmt)
    say_written(fmt, html=html)


def _rows(res) -> tuple[list[str], list[list[str]]]:
    from ..core.units import fmt_num, fmt_size, fmt_time
    from ..report.search_report import layout, recompute_zero
    train = res.phase == "train"
    offline = res.setup.get("scenario") == "max-throughput"        # no latencies: MFU and the time for all requests
    several = len(res.setup.get("devices", ())) > 1                 # one table over devices: name each row's
    # across devices or by cost: the device and USD per million output tokens in place of memory and what binds
    usd = several or res.setup.get("rank_by") == "usd-per-million-tokens"
    unit = res.setup.get("device_unit", "GPU")
    head = ["#"] + ([unit] if several else []) + ["layout"] + (["rc/z"] if train else []) + \
        [f"tok/s/{unit}", "ITL" if not (train or offline) else "MFU",
         "step" if train else "all reqs" if offline else "TTFT"] + (["$/Mtok"] if usd else [f"mem/{unit}", "binds"])
    rows = []
    for e in res.top:
        extra = [recompute_zero(e)] if train else []
        t1 = f"{100 * e['mfu']:.1f}%" if train or offline else fmt_time(e["itl_s"])
        t2 = fmt_time(e["time_s"]) if train or offline else fmt_time(e["ttft_s"])
        cost = [_usd(e.get("usd_per_million_output_tokens"))] if usd else []
        rows.append([str(e["rank"])] + ([e["hardware"]] if several else [])
                    + [layout(e)] + extra
                    + [fmt_num(e["tokens_per_s_per_gpu"]), t1, t2]
                    + (cost or [fmt_size(e["memory_per_gpu_bytes"]), e["bottleneck"]["resource"]]))
    return head, rows


def rerun_lines(command: str, width: int) -> list[str]:
    """'re-run: ironlaw analyze …' in lines of at most ``width`` columns, each but the last ending in ' \\' (a
    shell's continuation: the lines paste as one command); a flag stays with its value, and one longer than a
    line keeps a line of its own."""
    import shlex
    if not command:
        return []
    units: list[str] = []
    for word in (shlex.quote(w) for w in shlex.split(command)):
        if word.startswith("--") or not units:
            units.append(word)
        else:
            units[-1] += " " + word
    lines, cur = [], "re-run:"
    for unit in units:
        if len(cur) + 1 + len(unit) + 2 > width and cur != "re-run:":
            lines.append(cur + " \\")
            cur = "  " + unit
        else:
            cur = f"{cur} {unit}"
    return lines + [cur]


def _usd(x) -> str:
    return "-" if x is None else f"{x:,.3f}" if x < 10 else f"{x:,.1f}"


def _framework(settings: dict) -> str:
    """'vLLM', or 'TensorRT-LLM on h100, vLLM on mi300x' where the ranked devices ran their own defaults (a device
    off a GPU: 'none', its own steps)."""
    from ..models.serving.frameworks import NAMES
    if settings["serve_engine"] != "per-device":
        return NAMES[settings["serve_engine"]]
    return ", ".join(f"{NAMES.get(e, 'none (its own steps)')} on {hw}" for hw, e in settings["serve_engines"].items())


def _notes(res) -> list[str]:
    """Below a serving table: what the ranking is by, the prices used, and each device skipped and why; below a
    training table: the token dispatcher where it is not the default and the step options given."""
    if res.phase != "serve":
        d = res.setup.get("settings", {}).get("moe_dispatcher", "alltoall")
        return ([] if d == "alltoall" else [f"token dispatcher: {d} (DeepEP/HybridEP) on the layouts with EP > 1"]) \
            + list(res.setup.get("step_options", []))
    s = res.setup
    out = [f"serving framework: {_framework(s['settings'])} (--serve-engine; its kernels and scheduler limits)"
           if s.get("device_unit", "GPU") in ("GPU", "device") else
           f"serving framework: none (a {s['device_unit']}'s steps are priced on its own calibration; --serve-engine "
           f"prices GPUs)"]
    if s["settings"].get("memory_fraction") is not None:
        out.append(f"memory fraction: {s['settings']['memory_fraction']:g} on every layout's engine "
                   f"(--memory-fraction)")
    if s.get("rank_by") == "usd-per-million-tokens":
        out.append("ranked by USD per million output tokens ($/Mtok, lowest first)")
    seen = {}
    costed = len(s.get("devices", ())) > 1 or s.get("rank_by") == "usd-per-million-tokens"
    for e in res.top if costed else ():
        if "price_source" in e:
            seen.setdefault(e["hardware"], e["price_source"] if e.get("usd_per_gpu_hour") is None
                            else f"{e['hardware']} ${e['usd_per_gpu_hour']:g}/GPU-h ({e['price_source']})")
    out += [f"price: {v}" for v in seen.values()]
    out += [f"skipped {k['hardware']}: {k['reason']}" for k in s.get("skipped", [])]
    return out


def show(res, fmt: str) -> None:
    from ..core.units import counted, fmt_time
    s = res.setup
    unit = s.get("device_unit", "GPU")
    what = (f"{counted(s['gpus'], unit)} on {counted(s['nodes'], 'node')}, global batch {s['global_batch']} × seq {s['seq']}"
            if res.phase == "train" else f"up to {counted(s['gpus'], unit)}{' each' if len(s.get('devices', ())) > 1 else ''}, "
                                         f"prompt {s['prompt']}, output {s['output']}")
    kv = ", ".join(dict.fromkeys(e["kv_dtype"] for e in res.top if "kv_dtype" in e))
    title = (f"{res.spec} · {res.phase} · {res.dtype}{f' (KV {kv})' if kv else ''} on {res.hardware}: {what}; "
             f"{res.candidates_evaluated:,} layouts evaluated, {res.fits:,} fit"
             f"{' the targets' if s.get('slo') else ''} ({fmt_time(res.search_s)}, {res.engine})")
    head, rows = _rows(res)
    slots = any(e.get("redundant_experts") for e in res.top)
    if fmt == "md":
        print(title + "\n\n| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        print("\n".join("| " + " | ".join(r) + " |" for r in rows))
        print("\n" + "\n".join(_cost_lines(res) + ([f"re-run: `{res.rerun}`"] if res.rerun else [])))
        notes = _notes(res)
        if notes:
            print("\n" + "\n".join(f"- {n}" for n in notes))
        return
    from rich import box
    from rich.table import Table
    c = console()
    c.print(title)
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True, show_edge=False)
    for h in head:
        t.add_column(h, justify="left" if h in ("layout", "binds", "rc/z", s.get("device_unit", "GPU")) else "right",
                     no_wrap=h != "layout")         # a layout wider than the terminal wraps at a space
    for r in rows:
        t.add_row(*r)
    c.print(t)
    c.print(legend(res.phase == "train", any(e.get("ep", 1) > 1 for e in res.top),
                   any(e.get("attention_dp") for e in res.top), slots,
                   any(e.get("max_num_tokens") for e in res.top)),
            markup=False)
    for e in res.top[:1]:
        c.print(f"#1 binds: {e['bottleneck']['why']}", markup=False)
    for line in rerun_lines(res.rerun, c.width):
        c.print(line, markup=False, soft_wrap=True)

    for line in _cost_lines(res) + _notes(res):
        c.print(line, markup=False)


def _cost_lines(res) -> list[str]:
    """The best layout's energy, cost and carbon per token and, with --train-tokens, its whole run."""
    from ..core.units import fmt_num
    from ..models import run_cost
    e = res.top[0]
    d = e.get("energy")
    if d is None:
        return [f"#1 energy: {e.get('hardware', res.hardware)} states no power (tdp_w and idle_w in its hardware file)"]
    unit = "output token" if "joules_per_output_token" in d else "token"
    key = unit.replace(" ", "_")
    usd = d[f"usd_per_million_{key}s"]
    out = [f"#1 energy: {fmt_num(d[f'joules_per_{key}'])} J per {unit}; per million: "
           + (f"${fmt_num(usd)} (${d['usd_per_gpu_hour']:g}/GPU-h), " if usd is not None else "")
           + f"{fmt_num(d[f'gco2_per_million_{key}s'])} g CO2"]
    return out + ["#1 " + line.lstrip() if i == 0 else line for i, line in enumerate(run_cost.text(e.get("run")))]


def legend(train: bool, ep: bool, adp: bool = False, slots: bool = False, budget: bool = False) -> str:
    """The line under the table that reads its layout strings (``slots``: ep's '+N', redundant expert slots;
    ``budget``: 'tokN', a step token budget the search chose)."""
    ep_text = " · ep expert-parallel" + (" (+N: redundant expert slots)" if slots else "") if ep else ""
    if train:
        return ("layout: tp tensor-parallel (sp: sequence parallel) · pp pipeline stages (/v: virtual stages) · "
                "cp context-parallel · dp data-parallel" + ep_text
                + " · mb micro-batch; rc/z: recomputation (- none, sel selective, full, fN:c: N of a chunk's c layers in full) "
                  "/ ZeRO stage")
    return ("layout: tp tensor-parallel · pp pipeline stages" + ep_text
            + (" · adp attention data-parallel over the tp GPUs" if adp else "")
            + " · weight dtype · ×N sequences in flight per replica"
            + (" · tokN: step token budget (--max-num-tokens) below trtllm-bench's, whose MoE workspace would not "
               "fit" if budget else ""))
