"""The `ironlaw` command. Each verb lives in its own module, named as the verb, and registers itself on ``app``
when imported; `ironlaw VERB …` imports only VERB's module (a cold start reads one verb's options, not all of
them), `ironlaw --help` and anything else all of them (``load``), as does reading ``ironlaw.cli.app``.

Errors: an IronlawError (bad input) prints one line on stderr and exits 2 — with
``--format json`` it also prints ``{"error": …}`` on stdout. Anything else is a bug: exit 1
with a short message; ``--debug`` shows the traceback.
"""
from __future__ import annotations

import gc
import json
import os
import re
import sys

import typer

from ..core.errors import IronlawError
from . import common
from .common import FORMATS, check_format, console, emit_json, emit_lines  # noqa: F401

# the verbs, in the order `ironlaw --help` lists them; each one's module has its name
VERBS = ("analyze", "hardware", "workloads", "contract", "compare", "sweep", "report", "serve", "validate", "fit",
         "probe", "search", "calibrate")


def load(verbs: tuple[str, ...] = VERBS) -> None:
    """Import the modules of ``verbs``: each registers its command on ``common.app``."""
    import importlib
    for v in verbs:
        importlib.import_module(f"{__name__}.{v}")


def verbs_of(argv: list[str]) -> tuple[str, ...]:
    """The verbs a command line needs: its verb alone, or all of them for help, a typo or no verb."""
    verb = next((a for a in argv if not a.startswith("-")), None)
    return (verb,) if verb in VERBS else VERBS


def __getattr__(name: str):
    """``app`` (and the sub-apps) with every verb registered."""
    if name in ("app", "hardware_app", "workloads_app"):
        load()
        return getattr(common, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# verbs that time the machine: their BLAS keeps the threads its user configured
MEASURING_VERBS = ("probe", "validate")


def one_blas_thread(verbs: tuple[str, ...], environ) -> None:
    """Ask numpy's OpenBLAS for one thread unless the user chose a number or a verb measures the machine.
    OpenBLAS starts a thread per core (up to 64 in numpy's wheels) when numpy is imported; the commands multiply
    small arrays, so those threads only cost start-up time, the more the more cores the host has. numpy is not
    imported before this runs."""
    if not set(verbs) & set(MEASURING_VERBS):
        environ.setdefault("OPENBLAS_NUM_THREADS", "1")


# verbs that answer at once from the catalog and the models (no measuring, fitting or searching)
ONE_SHOT_VERBS = ("analyze", "hardware", "workloads", "contract", "compare", "report", "serve")


def pause_collector(verbs: tuple[str, ...]) -> bool:
    """Pause Python's cyclic garbage collector for a command that answers at once (``ONE_SHOT_VERBS``, or none
    named: help, a typo); True where this paused it (``main`` turns it back on). The modules a cold `ironlaw
    analyze` imports and the catalog it reads leave some 30,000 objects that live to the end; the collector's 74
    passes over the young ones freed 367 objects and cost about 10 ms of its ~200 ms of CPU, 6-7 ms of it after
    ``main`` starts (the imports of ironlaw and typer come first). A capture through torch, `analyze hf:gpt2
    --capture`, peaks at the same 360 MB either way. A command that may run long (probe, validate, fit,
    calibrate, search, sweep) keeps the collector on."""
    if not gc.isenabled() or not (verbs == VERBS or set(verbs) <= set(ONE_SHOT_VERBS)):
        return False
    gc.disable()
    return True


def formats_spelled(argv: list[str]) -> list[str]:
    """``argv`` with a ``--format`` value that names a format in another case (JSON, Md) in lower case."""
    out = list(argv)
    for i, a in enumerate(out):
        if a == "--format" and i + 1 < len(out) and out[i + 1].lower() in FORMATS:
            out[i + 1] = out[i + 1].lower()
        elif a.startswith("--format=") and a[len("--format="):].lower() in FORMATS:
            out[i] = a.lower()
    return out


def _wants_json(argv: list[str]) -> bool:
    for i, a in enumerate(argv):
        if a == "--format" and i + 1 < len(argv) and argv[i + 1] == "json":
            return True
        if a == "--format=json":
            return True
    return False


def _is_usage_error(e: Exception) -> bool:
    # typer may vendor click; match the class by name rather than importing click
    return any(c.__name__ == "ClickException" for c in type(e).__mro__) and hasattr(e, "format_message")


# the serving engines' own flags (vllm serve / vllm bench, python -m sglang.launch_server / bench_serving,
# trtllm-bench), which a user of them types first, and serve's option for each
ENGINE_FLAGS = {
    ("--tensor-parallel-size", "--tp-size", "--tp_size"): "tensor parallelism is --tp N",
    ("--pipeline-parallel-size", "--pp-size", "--pp_size"): "pipeline stages are --pp N (with --max-throughput)",
    ("--gpu-memory-utilization", "--mem-fraction-static", "--kv_cache_free_gpu_mem_fraction"):
        "the engine's memory knob is --memory-fraction F",
    ("--kv-cache-dtype",): "the KV cache's dtype is --kv-dtype D (fp8 for vLLM's fp8, fp8_e4m3 or fp8_e5m2)",
    ("--max-num-seqs", "--max-running-requests", "--max_batch_size"):
        "sequences in flight are --max-batch N with --max-throughput, --concurrency N online",
    ("--max-num-batched-tokens", "--max_num_tokens", "--chunked-prefill-size"):
        "the step token budget is --max-num-tokens N (with --max-throughput); a prompt chunk a step online, "
        "--chunk N",
    ("--max-model-len", "--context-length", "--max_seq_len"):
        "a request is --prompt N + --output M tokens, refused beyond the model's context",
    ("--quantization",): "the weights' and GEMMs' dtype is --dtype D (fp8, fp4, int8, …)",
    ("--input-len", "--random-input-len", "--isl"): "a request's prompt is --prompt N tokens",
    ("--output-len", "--random-output-len", "--osl"): "a request's output is --output N tokens",
    ("--num-prompts",): "requests queued are --requests N (with --max-throughput)",
    ("--model", "--model-path"): "the model is the first argument: ironlaw serve SPEC --on HW",
    ("--enable-expert-parallel", "--ep-size", "--ep_size"):
        "expert parallelism is --ep N equal to --tp (with --max-throughput): without --attention-dp vLLM's and "
        "SGLang's EP under TP attention (--engine vllm|sglang), with it TensorRT-LLM's recipe",
    ("--enable-dp-attention",): "attention data parallelism is --attention-dp (with --max-throughput)",
}

# Megatron-LM's (and NeMo's) training flags and analyze's and search's option for each
MEGATRON_FLAGS = {
    ("--tensor-model-parallel-size",): "tensor parallelism is --tp N",
    ("--pipeline-model-parallel-size",): "pipeline stages are --pp N",
    ("--context-parallel-size",): "context parallelism is --cp N",
    ("--expert-model-parallel-size",): "expert parallelism is --ep N",
    ("--virtual-pipeline-model-parallel-size",): "virtual pipeline stages per device are --interleave N",
    ("--micro-batch-size",): "sequences per micro-batch are --micro-batch N",
    ("--global-batch-size",): "sequences per optimizer step are --global-batch N",
    ("--seq-length",): "the sequence length is --seq N",
    ("--recompute-granularity",): "activation recomputation is --recompute selective|full",
    ("--recompute-num-layers",): "the layers recomputed in full are --recompute-layers N (with --recompute full)",
    ("--use-distributed-optimizer",): "the distributed optimizer is --zero 1 (optimizer states sharded over "
                                      "the data-parallel ranks)",
    ("--fp8-format",): "FP8 training is --dtype fp8",
}

# (command, option) → where the option lives: an option another command takes, given to one that takes none
OPTION_ELSEWHERE = {
    **{("serve", flag): text for flags, text in ENGINE_FLAGS.items() for flag in flags},
    **{(command, flag): text for flags, text in MEGATRON_FLAGS.items() for flag in flags
       for command in ("analyze", "search")},
    ("serve", "--phase"): "serve runs a workload's prefill and decode together; one phase alone: "
                          "ironlaw analyze SPEC --on HW --phase decode",
    ("serve", "--gpus"): "its GPUs are its layout, --tp N (with --max-throughput also --pp and --ep); every "
                         "layout of N GPUs ranked: ironlaw search SPEC --phase serve --on HW --gpus N",
    ("serve", "--seq"): "a request's tokens are --prompt N and --output M",
    ("serve", "--batch"): "sequences in flight are --concurrency N (with --max-throughput, the engine's "
                          "--max-batch N)",
    **{("serve", rate): "it runs a closed loop of --concurrency N requests in flight (the benchmark clients' "
                        "--max-concurrency); an open arrival rate is not modelled: the requests/s N sustains is its "
                        "tokens/s over --output (Little's law), and --slo ttft=2s,itl=50ms finds the most "
                        "concurrency meeting the targets" for rate in ("--rate", "--request-rate", "--qps")},
    ("serve", "--max-concurrency"): "requests in flight are --concurrency N",
    ("analyze", "--prompt"): "its sequence is --seq N (the prompt with --phase prefill, the tokens already in "
                             "the KV cache with --phase decode); a request's prompt and output: "
                             "ironlaw serve SPEC --on HW --prompt N --output M",
    ("analyze", "--output"): "one phase of one graph has no output tokens; a request's prompt and output: "
                             "ironlaw serve SPEC --on HW --prompt N --output M",
    ("analyze", "--concurrency"): "it prices one batch, --batch N; requests in flight: "
                                  "ironlaw serve SPEC --on HW --concurrency N",
    ("analyze", "--engine"): "it prices with the device's catalog calibration (on NVIDIA GPUs fitted on "
                             "TensorRT-LLM's kernels); a serving framework's kernels: "
                             "ironlaw serve SPEC --on HW --engine vllm|sglang|trtllm",
    ("sweep", "--engine"): "it sweeps analyze's estimate; a serving framework's frontier: "
                           "ironlaw serve SPEC --on HW --engine vllm --sweep-concurrency",
    ("report", "--out"): "it writes its HTML page with --html FILE.html",
    ("analyze", "--out"): "its HTML page is --html FILE.html, its JSON --format json (to stdout)",
    ("serve", "--out"): "its HTML page is --html FILE.html, its JSON --format json (to stdout)",
    ("search", "--out"): "its HTML page is --html FILE.html, its JSON --format json (to stdout)",
    ("report", "--format"): "it writes one HTML file (--html FILE.html); the same estimate as JSON or Markdown: "
                            "ironlaw analyze SPEC --on HW --format json|md",
    ("compare", "--html"): "its page is report's what-if section: ironlaw report SPEC --on HW --html FILE.html "
                           "--what-if … (or --vs-hardware HW)",
    ("sweep", "--html"): "it draws its curves with --plot FILE.svg|.png; one point's page: "
                         "ironlaw report SPEC --on HW --html FILE.html",
    ("contract", "--html"): "one workload's page: ironlaw report SPEC --on HW --html FILE.html",
    ("search", "--fsdp"): "FSDP is ZeRO stage 3, one of the stages it ranks: --zero 3 fixes it",
    ("search", "--batch"): "a training layout's sequences per micro-batch are --micro-batch N (it ranks every one "
                           "unless fixed), per optimizer step --global-batch N; serving: ranked by the search",
    ("search", "--plot"): "its page is --html FILE.html (the ranked layouts, why the best wins); one layout's "
                          "roofline: ironlaw analyze SPEC --on HW --plot FILE.svg",
    ("search", "--capture"): "it splits the layers and heads of the transformer ironlaw builds from the config; a "
                             "captured graph has only the ops torch ran: ironlaw analyze hf:config.json --capture",
    ("search", "--kv-fraction"): "its engines' memory knob is --memory-fraction (TensorRT-LLM's "
                                 "free_gpu_memory_fraction, the KV cache's share, as serve's --kv-fraction)",
    ("search", "--kv-dtype"): "it ranks each weight dtype with the KV cache dtype its checkpoints store (--dtype "
                              "fixes the dtype); one layout with another: ironlaw serve SPEC --on HW --tp N "
                              "--kv-dtype D",
    ("search", "--release"): "it prices each device's catalog kernels (--serve-engine names the framework); one "
                             "layout on a release's: ironlaw serve SPEC --on HW --tp N --release R",
    ("search", "--max-throughput"): "--phase serve without --slo ranks the layouts at offline max throughput "
                                    "already; with --slo, at the most concurrency meeting the targets",
    ("search", "--attention-dp"): "it ranks the attention data-parallel layouts of a MoE model beside the others "
                                  "(adp in the layout column)",
    ("analyze", "--memory-fraction"): "it checks the workload's own footprint against the device's memory, with "
                                      "no serving engine's share; an engine's: ironlaw serve SPEC --on HW "
                                      "--memory-fraction F",
    ("sweep", "--memory-fraction"): "it sweeps analyze's estimate, with no serving engine's memory share; an "
                                    "engine's frontier: ironlaw serve SPEC --on HW --memory-fraction F "
                                    "--sweep-concurrency",
    ("serve", "--fp8-attention"): "its attention reads the KV cache in --kv-dtype (fp8: the engine's FP8 "
                                  "attention kernels); --fp8-attention is a training step's: ironlaw analyze SPEC "
                                  "--phase train --on HW --gpus N --fp8-attention",
    ("search", "--concurrency"): "the serving search ranks layouts at offline max throughput, or at the most "
                                 "concurrency meeting --slo; one concurrency: ironlaw serve SPEC --on HW "
                                 "--concurrency N",
}

# compare weighs one device's estimate of one graph before and after: the options of a training step on many devices
# (a plan's, ``plan_options.OPTION_NAMES``) and of a whole run's cost are analyze's, refused naming why
COMPARE_PLAN = ("it weighs one device's estimate of one graph before and after (--what-if, --vs-hardware); {flag} "
                "plans a training step on many devices: predict each case with ironlaw analyze SPEC --phase train "
                "--on HW --gpus N … {flag} … --format json")
COMPARE_COST = ("its verdict is the step's time; energy, cost and a whole run's: ironlaw analyze SPEC --on HW {flag} "
                "…, once per case")
COMPARE_OTHER = {"--capture": "it weighs the graph ironlaw builds from the config; a captured one: "
                              "ironlaw analyze hf:config.json --capture, once per case",
                 "--network": "one device's graph runs no collectives of a plan; a plan's on another calibration: "
                              "ironlaw analyze SPEC --phase train --gpus N --tp … --network NAME, once per case",
                 "--plot": "its page is report's what-if section: ironlaw report SPEC --on HW --html FILE.html "
                           "--what-if …"}


def _compare_elsewhere(command, option) -> str:
    """Why ``compare`` takes no ``option`` of analyze's (``COMPARE_PLAN``, ``COMPARE_COST``, ``COMPARE_OTHER``);
    '' for another command or option."""
    if command != "compare" or not option:
        return ""
    from ..models.plan_options import OPTION_NAMES, flag
    from .options import RUN_COST
    if option in {flag(k) for k in OPTION_NAMES}:
        return COMPARE_PLAN.format(flag=option)
    cost = {"--price-per-gpu-hour", "--grid-gco2-per-kwh", *("--" + k.replace("_", "-") for k, _ in RUN_COST[2:])}
    if option in cost:
        return COMPARE_COST.format(flag=option)
    return COMPARE_OTHER.get(option, "")


# (command, option) → what the command expects: an option or argument it cannot run without, left out ("*": any
# command; COMMAND in the text stands for the command's name)
OPTION_MISSING = {
    ("report", "html"): "report writes one HTML file, named with --html (an option, not a second argument): "
                        "ironlaw report SPEC --on HW --html FILE.html",
    ("show", "name"): "hardware show takes a device's name: ironlaw hardware show h100 (every name: "
                      "ironlaw hardware list)",
    ("fit", "runs"): "fit takes the files validate wrote: ironlaw fit RUN.json … [--hold-out RUN.json …] "
                     "(each from ironlaw validate SPEC --on local --out RUN.json)",
    ("*", "spec"): "COMMAND needs a workload: ironlaw COMMAND SPEC …, SPEC a built-in such as llama3-8b (every "
                   "one: ironlaw workloads list), hf:PATH/config.json or py:FILE.py:FACTORY",
    ("calibrate", "kernels"): "calibrate fits on measured kernel tables, named with --kernels: "
                              "ironlaw calibrate --kernels DIR [--gpu NAME] [--out FILE.toml]",
}


def _usage_message(e: Exception) -> str:
    """A usage error's message; a group called without its command (click's message is then the group's whole
    help) names its commands instead. A sentence said twice in a row is said once: click and typer each add
    "Did you mean 'show'?" to a mistyped subcommand; one with no near name gets the group's commands. An option
    the command lacks that another takes says where (``OPTION_ELSEWHERE``); an option it needs, left out, what
    the command expects (``OPTION_MISSING``)."""
    ctx = getattr(e, "ctx", None)
    command, option = getattr(ctx, "info_name", None), getattr(e, "option_name", None)
    elsewhere = OPTION_ELSEWHERE.get((command, option)) or (
        _compare_elsewhere(command, option) if type(e).__name__ == "NoSuchOption" else "")
    if elsewhere:
        return f"{ctx.info_name} takes no {e.option_name}: {elsewhere}"
    name = getattr(getattr(e, "param", None), "name", None)
    missing = OPTION_MISSING.get((getattr(ctx, "info_name", None), name)) or OPTION_MISSING.get(("*", name))
    if missing and type(e).__name__ == "MissingParameter":
        return missing.replace("COMMAND", str(getattr(ctx, "info_name", "")))
    swept = _list_given(e, getattr(ctx, "info_name", None), name)
    if swept:
        return swept
    if type(e).__name__ == "NoArgsIsHelpError" and ctx is not None and hasattr(ctx.command, "list_commands"):
        path = ctx.command_path
        return (f"missing a command: {path} COMMAND, one of {', '.join(ctx.command.list_commands(ctx))}; "
                f"`{path} --help` says what each does")
    said: list[str] = []
    for sentence in re.split(r"(?<=[.?!])\s+", e.format_message().strip()):
        if not said or sentence != said[-1]:
            said.append(sentence)
    text = " ".join(said)
    option = getattr(e, "option_name", None)
    takers = _commands_taking(option) if type(e).__name__ == "NoSuchOption" and option \
        and "Did you mean one of" not in text else []
    if takers:                         # an option of other commands: say which, not click's "Did you mean '--help'?"
        text = (text.replace(" Did you mean '--help'?", "")
                + f" {option} is an option of {', '.join(takers)} (`ironlaw COMMAND --help` lists each one's)")
    if text.startswith("No such command") and "Did you mean" not in text and hasattr(ctx, "command") \
            and hasattr(ctx.command, "list_commands"):
        text += f" {ctx.command_path} takes: {', '.join(ctx.command.list_commands(ctx))}"
    return text


def _list_given(e: Exception, command, name) -> str:
    """For a list of values given to a command's one --batch or --seq (``analyze … --batch 1,2,4``): that it takes
    one, and the sweep that takes the list (search: one search per value); '' otherwise."""
    if type(e).__name__ != "BadParameter" or name not in ("batch", "seq") \
            or command not in ("analyze", "compare", "report", "search"):
        return ""
    given = re.search(r"'([^']*)' is not a valid integer", e.format_message())
    if not given or "," not in given.group(1):
        return ""
    v = given.group(1)
    if command == "search":
        return f"--{name} {v}: search takes one {name} and searches the layouts for it; run one search per value"
    return (f"--{name} {v}: {command} takes one {name}; a list is swept: ironlaw sweep SPEC --on HW --{name} {v} "
            f"(or ironlaw.analyze(…, {name}=numpy array))")


def _commands_taking(option: str) -> list[str]:
    """The commands (``hardware show`` for a subcommand) that take ``option``, in ``VERBS``' order."""
    import typer.main
    load()
    out = []

    def walk(cmd, path):
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, f"{path} {name}".strip())
        if any(option in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ())) for p in cmd.params):
            out.append(path)
    try:
        walk(typer.main.get_command(common.app), "")
    except Exception:                  # noqa: BLE001 (a hint only: the usage error is said without it)
        return []
    rank = {verb: i for i, verb in enumerate(VERBS)}     # the app lists commands as their modules were imported
    return sorted(out, key=lambda path: rank.get(path.split(" ")[0], len(VERBS)))


def _reader_gone() -> None:
    """The reader of stdout went away (``ironlaw … | head -1``): exit quietly, as a Unix tool killed by SIGPIPE
    does (status 128 + 13), with stdout pointed at /dev/null so that the interpreter's last flush cannot raise
    BrokenPipeError again (Python docs, library/signal "Note on SIGPIPE"; SIGPIPE itself stays ignored, as
    Python sets it)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.__stdout__.fileno())
    except (OSError, AttributeError, ValueError):
        pass
    raise SystemExit(141)


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = formats_spelled([a for a in argv if a != "--debug"])
    as_json = _wants_json(argv)

    def fail(msg: str, code: int) -> None:
        msg = " ".join(str(msg).split())
        if as_json:
            sys.stdout.write(json.dumps({"schema": "ironlaw.error/1", "error": msg, "exit_code": code}) + "\n")
        sys.stderr.write(f"ironlaw: error: {msg}\n")
        raise SystemExit(code)

    verbs = verbs_of(argv)
    paused = pause_collector(verbs)
    try:
        one_blas_thread(verbs, os.environ)
        load(verbs)
        rv = common.app(args=argv, prog_name="ironlaw", standalone_mode=False)
        # typer turns Ctrl-C into Exit(130) and, outside standalone mode, *returns* exit codes
        if isinstance(rv, int) and not isinstance(rv, bool) and rv != 0:
            if rv == 130:
                fail("interrupted", 130)
            raise SystemExit(rv)
    except IronlawError as e:
        fail(str(e), 2)
    except typer.Exit as e:
        raise SystemExit(getattr(e, "exit_code", 0))
    except typer.Abort:
        fail("interrupted", 130)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except BrokenPipeError:
        _reader_gone()
    except SystemExit as e:
        if e.code == 1 and (isinstance(e.__context__, BrokenPipeError)       # rich's Console.on_broken_pipe
                            or "PacifyFlushWrapper" in type(sys.stdout).__name__):   # click's and typer's
            _reader_gone()
        raise
    except Exception as e:
        if _is_usage_error(e):            # click/typer usage errors: unknown option, bad value …
            fail(_usage_message(e), 2)
        if debug:                         # a bug in ironlaw
            raise
        fail(f"internal error: {e.__class__.__name__}: {e} (run again with --debug for the traceback)", 1)
    finally:
        if paused:
            gc.enable()
