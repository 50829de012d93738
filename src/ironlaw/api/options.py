"""The front door's shared readings of the options: unknown keywords, the options of one step (``StepOptions``:
``analyze``'s and ``train``'s), builder and run-cost options, each phase's and scenario's own options, ``on=``,
grids."""
from __future__ import annotations

import dataclasses
import functools
import inspect
from dataclasses import dataclass
from typing import NamedTuple, Optional, Sequence, Union


def front_door(fn):
    """``fn`` with a keyword it does not take refused as one line (``UnknownOption``: an IronlawError and a
    TypeError, as Python's own), naming the nearest it takes; a builder's keywords (``**builder_options``) are
    checked by ``builder``. A dtype, phase or engine name is read in any case (``spelled``)."""
    import inspect
    sig = inspect.signature(fn)
    takes = [n for n, p in sig.parameters.items() if p.kind == p.KEYWORD_ONLY]
    open_ = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    switches = {n for n, p in sig.parameters.items() if isinstance(p.default, bool)}

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if not open_:
            bad = [k for k in kwargs if k not in sig.parameters]
            if bad:
                from ..core.errors import UnknownOption, suggest
                raise UnknownOption(f"{fn.__name__}() got an unexpected keyword argument '{bad[0]}'"
                                    f"{cli_only(bad[0], fn.__name__, takes) or suggest(bad[0], takes)}")
        check_switches(kwargs, switches)
        check_positions(fn.__name__, sig, args, kwargs)
        return fn(*args, **spelled(kwargs))
    return call


def check_positions(name: str, sig, args: tuple, kwargs: dict) -> None:
    """Arguments that do not bind to ``sig`` (too many by position, one required left out) as one line
    (``UnknownOption``: an IronlawError and Python's TypeError), naming what goes by position and what by
    keyword."""
    try:
        sig.bind(*args, **kwargs)
    except TypeError as e:
        from ..core.errors import UnknownOption
        by_position = [n for n, p in sig.parameters.items() if p.kind == p.POSITIONAL_OR_KEYWORD]
        keyword = next((n for n, p in sig.parameters.items() if p.kind == p.KEYWORD_ONLY), None)
        takes = (f"it takes {', '.join(by_position)} by position and every other option by its keyword"
                 if by_position else "it takes every option by its keyword")
        raise UnknownOption(f"{name}(): {e}; {takes}" + (f" ({keyword}=…)" if keyword else "")) from None


def check_switches(kwargs: dict, switches) -> None:
    """A switch (a keyword whose default is True or False: ``serial``, ``max_throughput`` …) given anything but a
    bool is one line: ``serial="no"`` would read as true."""
    for k in switches:                 # numpy's bool is one too (its type is named bool_ or bool)
        if k in kwargs and not isinstance(kwargs[k], bool) and type(kwargs[k]).__name__ not in ("bool_", "bool"):
            from ..core.errors import IronlawError
            raise IronlawError(f"{k}= is a switch, True or False, got {kwargs[k]!r}")


# the keywords whose values are names users type in any case (FP8, Decode, VLLM, Full), each with the test of a
# known name (its module imported only when the keyword is given)
def _dtype(v: str) -> bool:
    from ..core.graph import DTYPE_BYTES
    return v in DTYPE_BYTES


def dtype_aliases() -> dict:
    """A dtype's other names, as users type them: torch's (bfloat16, float16, float32, float64) and NVIDIA's NVFP4."""
    from ..core.graph import TORCH_NAMES
    return {**{torch: ours for ours, torch in TORCH_NAMES.items()}, "nvfp4": "fp4"}


def _engine(v: str) -> bool:
    from ..machine.engines import ENGINES
    return v in (*ENGINES, "local", "pool", "ray")


def _phase(v: str) -> bool:
    from ..core.graph import PHASES
    return v in (*PHASES, *SEARCH_PHASES)


def _dispatcher(v: str) -> bool:
    from ..models.dispatcher import DISPATCHERS as TRAINING
    from ..models.serving.parallel import DISPATCHERS as SERVING
    return v in (*TRAINING, *SERVING)


def _framework(v: str) -> bool:
    from ..measure.calibrate.kernelfit.vocabulary import FRAMEWORKS
    return v in FRAMEWORKS


def _recompute(v: str) -> bool:
    from ..models.search.space import RECOMPUTE
    return v in RECOMPUTE


def _routing(v: str) -> bool:
    from ..core.routing import routing_of
    return routing_of(v) is not None


def _rank(v: str) -> bool:
    from ..models.search.serve import RANKS
    return v in RANKS


def _stat(v: str) -> bool:
    from ..measure.validate import STATS
    return v in STATS


NAMED = {"dtype": _dtype, "kv_dtype": _dtype, "phase": _phase, "engine": _engine, "serve_engine": _engine,
         "moe_dispatcher": _dispatcher, "framework": _framework, "recompute": _recompute, "moe_routing": _routing,
         "rank": _rank, "stat": _stat}


def spelled(kwargs: dict) -> dict:
    """``kwargs`` with each name-valued keyword (``NAMED``: dtype, phase, engine …) whose value is a known name in
    another case (or with spaces around it) in lower case: ``dtype="FP8"`` is ``"fp8"``, a dtype's other name its
    own (``dtype_aliases``: ``"bfloat16"`` is ``"bf16"``); a name known in no case stays as given, so that its
    refusal quotes it as typed."""
    for k, v in kwargs.items():
        if not isinstance(v, str) or k not in NAMED:
            continue
        name = v.strip().lower()
        if k in ("dtype", "kv_dtype"):
            name = dtype_aliases().get(name, name)
        if v != name and NAMED[k](name):
            kwargs = {**kwargs, k: name}
    return kwargs


# search: each phase's own options and their defaults (an option left None is not given)
SEARCH_TRAIN = {"global_batch": 1024, "seq": 4096, "tp_comm_overlap": True, "overlap_p2p": True, "grad_fp32": False,
                "moe_a2a_overlap": False, "expert_imbalance": 1.0, "moe_dispatcher": None, "nodes": None,
                "micro_batch": None, "interleave": None, "recompute": None, "zero": None,
                "sequence_parallel": None, "cuda_graph": None, "fp8_attention": False, "lora_rank": None,
                "lora_targets": None, "offload_activations": None, "param_gather_exposed": False, "serial": False,
                "network": None, "options": None, "recompute_layers": None, "recompute_method": None}
SEARCH_SERVE = {"prompt": 1024, "output": 256, "slo": None, "rank": "tokens-per-gpu", "prices": None,
                "serve_engine": None, "memory_fraction": None}
# search's switches whose default is off: False is not given
SEARCH_SWITCHES = ("fp8_attention", "param_gather_exposed", "serial")
# search's keywords whose flag is not --KEYWORD
SEARCH_FLAGS = {"prices": "--price", "options": "--opt", "offload_activations": "--offload-activations"}


SEARCH_PHASES = ("train", "serve")


def check_search_phase(phase) -> str:
    """``phase`` if ``search`` takes it (``SEARCH_PHASES``), else one line: a phase of one graph (``prefill``,
    ``decode``, ``infer``) says that the serving search ranks prefill and decode together and that ``analyze``
    prices one phase of one layout; any other name, the nearest known."""
    from ..core.errors import IronlawError, unknown
    from ..core.graph import PHASES
    if phase in SEARCH_PHASES:
        return phase
    if phase in PHASES:
        raise IronlawError(f"search --phase takes {' | '.join(SEARCH_PHASES)}, got '{phase}': --phase serve ranks "
                           f"serving layouts (prefill and decode together); one {phase} step of one layout: "
                           f"ironlaw analyze SPEC --on HW --phase {phase}")
    raise unknown("search phase", phase, SEARCH_PHASES)


def other_phase(given: dict, options: dict, belongs: str) -> None:
    """One line for a search option of the other phase (it would be ignored)."""
    from ..core.errors import IronlawError
    for k, default in options.items():
        v = given[k]
        if v is not None and not (k == "rank" and v == default) and not (k in SEARCH_SWITCHES and v is False) \
                and not (k == "options" and not v):
            flag = SEARCH_FLAGS.get(k, "--" + k.replace("_", "-"))
            raise IronlawError(f"{flag} belongs to the {belongs}")


class VllmKnobs(NamedTuple):
    """``serve``'s vLLM scheduler keywords as the framework takes them, in order (``frameworks.online_engine``,
    ``frameworks.max_throughput``: ``long_prefill_tokens``, ``async_scheduling``; checked there against the engine)."""
    long_prefill_tokens: Optional[int]
    async_scheduling: bool


def scenario_options(g: dict) -> VllmKnobs:
    """``serve``: an option of the offline scenario without ``max_throughput``, or one of the online scenario with
    it, is refused in one line (it would be ignored); so is a concurrency with ``sweep_concurrency`` but no
    ``html`` (the sweep covers every concurrency; the report marks the given one). Both scenarios take the vLLM
    scheduler's keywords: returned as ``VllmKnobs``."""
    _refuse_other_scenario(g)
    return VllmKnobs(g["long_prefill_token_threshold"], g["async_scheduling"])


def _refuse_other_scenario(g: dict) -> None:
    """``scenario_options``'s refusals."""
    from ..core.errors import IronlawError
    from ..models.serving.frameworks import check_memory_fraction
    check_memory_fraction(g["memory_fraction"])        # both scenarios take it
    _lengths_alone(g)
    if g["max_throughput"]:
        online = (("--concurrency", g["concurrency"] != 1, " (the offline batch is --max-batch)"),
                  ("--chunk", g["chunk"] is not None, " (the offline step's tokens are --max-num-tokens)"),
                  ("--page-tokens", g["page_tokens"] is not None, ""), ("--max-seq", g["max_seq"] is not None, ""),
                  ("--serial", g["serial"], ""), ("--speculative", g["speculative"] is not None, ""),
                  ("--prefix-hit", g["prefix_hit"] is not None, ""),
                  ("--disaggregate", g["disaggregate"] is not None, ""), ("--slo", g["slo"] is not None, ""),
                  ("--sweep-concurrency", g["sweep_concurrency"], ""), ("--plot", g["plot"] is not None, ""))
        for flag, used, hint in online:
            if used:
                raise IronlawError(f"{flag} belongs to the online scenario (continuous batching at a set "
                                   f"concurrency), not to --max-throughput{hint}")
        return
    if g["sweep_concurrency"] and g["concurrency"] != 1 and not g["html"]:
        raise IronlawError(f"--concurrency {g['concurrency']} is one point; --sweep-concurrency sweeps every "
                           f"concurrency (drop one; with --html, --concurrency marks the report's current point)")
    for flag, used in (("--ep", g["ep"] != 1), ("--attention-dp", g["attention_dp"]), ("--pp", g["pp"] != 1),
                       ("--max-batch", g["max_batch"] is not None), ("--max-num-tokens", g["max_num_tokens"] is not None),
                       ("--requests", g["requests"] is not None), ("--expert-imbalance", g["expert_imbalance"] != 1.0),
                       ("--moe-routing", g["moe_routing"] is not None), ("--kv-fraction", g["kv_fraction"] is not None),
                       ("--moe-dispatcher", g["moe_dispatcher"] is not None),
                       ("--redundant-experts", g["redundant_experts"] != 0)):
        if used:
            raise IronlawError(f"{flag} belongs to the offline scenario: add --max-throughput")


def _lengths_alone(g: dict) -> None:
    """``serve --lengths`` online: the steady state prices the mix at every concurrency (``models.serving.lengths``:
    the plain estimate, --slo's goodput, --sweep-concurrency's frontier); a feature that builds its own steps at one
    length (speculative decoding, prefix hits, disaggregation) is refused beside it in one line."""
    if g["lengths"] is None or g["max_throughput"]:
        return
    from ..core.errors import IronlawError
    for flag, used in (("--speculative", g["speculative"] is not None), ("--prefix-hit", g["prefix_hit"] is not None),
                       ("--disaggregate", g["disaggregate"] is not None)):
        if used:
            raise IronlawError(f"{flag} prices its own steps at one --prompt/--output; --lengths runs the online "
                               f"steady state (with --slo, --sweep-concurrency) or --max-throughput")


def engine_on(engine: Optional[str], release: Optional[str], device, kv_dtype: Optional[str]) -> tuple[str, str]:
    """``serve``'s engine on ``device``: (the one given or the device's default, ``machine.engines.default_for``;
    how a refusal names it). TensorRT-LLM off an NVIDIA GPU, an engine named for a CPU, a release with a default
    that is not TensorRT-LLM and a KV dtype the engine cannot store there are refused in one line."""
    from ..core.errors import IronlawError
    from ..machine.engines import DEFAULT, NAMES, check_release, default_for, named, resolve
    from ..models.serving import kvcache
    if engine is None and release is not None and default_for(device) != DEFAULT:
        raise IronlawError(f"--release {release}: a TensorRT-LLM release, and {device.name} runs no TensorRT-LLM "
                           f"(its default engine is {NAMES[default_for(device)]}); leave --release out")
    given, engine = engine, resolve(engine, device)    # TensorRT-LLM: NVIDIA only, and the default there only
    check_release(engine, release)
    kvcache.check_with_engine(kv_dtype, engine, device, named(engine, given, device))
    return engine, named(engine, given, device)


def runtime_on(runtime: Optional[str], engine: str) -> str:
    """``serve``'s TensorRT-LLM executor (``models.serving.step.runtime``): the one given, or the default (the PyTorch
    executor) where None; an unknown one, or one given with another engine, refused in one line."""
    from ..models.serving.step.runtime import DEFAULT_RUNTIME, check_runtime
    return check_runtime(DEFAULT_RUNTIME if runtime is None else runtime, engine)


def wide_ep(engine: str, moe_dispatcher: Optional[str], redundant_experts: int, named: Optional[str] = None) -> dict:
    """``serve --max-throughput``'s wide-EP options as the offline run takes them: ``moe_dispatcher``, TensorRT-LLM's
    strategy for the expert exchange under attention DP with EP — ``"deepep"`` (DeepEP's high-throughput kernels),
    ``"deepep-ll"`` (its low-latency kernels), ``"nvlink-one-sided"`` or ``"nvlink-two-sided"`` (the MNNVL all-to-all
    kernels), timed by the device's measured curves (None: the engine's all-gather/reduce-scatter, or the MNNVL
    all-to-all on an NVL72 domain); ``redundant_experts``, EPLB's extra expert slots over the EP group
    (``ironlaw.models.serving.parallel``). Refused in one line with another engine (its tables are TensorRT-LLM's:
    ``machine.engines.check_wide_ep``)."""
    if moe_dispatcher is None and not redundant_experts:
        return {}
    from ..machine.engines import check_wide_ep
    check_wide_ep(engine, moe_dispatcher, redundant_experts, named)
    return {"dispatcher": moe_dispatcher, "redundant_experts": redundant_experts}


@dataclass(frozen=True)
class StepOptions:
    """The keywords ``analyze`` and ``train`` share: the step's sequence, dtype and composition, the plan of a run on
    many devices (``ironlaw.models.plan_options`` owns which of these the plan reads), the run's price, grid, tokens
    and interruptions, the builder's ``options``, capture, the network calibration and the report file. Each
    function takes them as keywords (``takes_step_options``); ``of`` reads them, ``run`` and ``plan`` check them."""
    seq: object = None
    dtype: Optional[str] = None
    serial: bool = False
    gpus: Optional[int] = None
    nodes: Optional[int] = None
    tp: Optional[int] = None
    pp: Optional[int] = None
    cp: Optional[int] = None
    dp: Optional[int] = None
    ep: Optional[int] = None
    global_batch: Optional[int] = None
    micro_batch: Optional[int] = None
    interleave: Optional[int] = None
    recompute: Optional[str] = None
    recompute_layers: Optional[int] = None
    recompute_method: Optional[str] = None
    zero: Optional[int] = None
    fsdp: bool = False
    expert_imbalance: Optional[float] = None
    tp_comm_overlap: bool = False
    overlap_p2p: bool = False
    grad_fp32: bool = False
    moe_a2a_overlap: bool = False
    cuda_graph: Optional[str] = None
    redundant_experts: Optional[int] = None
    offload_activations: Optional[int] = None
    sequence_parallel: bool = False
    param_gather_exposed: bool = False
    moe_dispatcher: Optional[str] = None
    fp8_attention: bool = False
    lora_rank: Optional[int] = None
    lora_targets: Optional[str] = None
    capture: bool = False
    network: Optional[str] = None
    options: Optional[dict] = None
    price_per_gpu_hour: Optional[float] = None
    grid_gco2_per_kwh: Optional[float] = None
    train_tokens: Union[str, float, None] = None
    mtbf_gpu_hours: Optional[float] = None
    checkpoint_s: Optional[float] = None
    restart_s: Optional[float] = None
    html: Optional[str] = None

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def of(cls, keywords: dict) -> tuple["StepOptions", dict]:
        """The step options among ``keywords`` and the rest (the builder's named options)."""
        names = cls.names()
        return (cls(**{k: v for k, v in keywords.items() if k in names}),
                {k: v for k, v in keywords.items() if k not in names})

    def parallel(self) -> dict:
        """The plan options given (None and False are not given), in this class's order; the plan calls
        ``--offload-activations`` ``offload_layers``."""
        from ..models.plan_options import OPTION_NAMES
        out = {}
        for k in self.names():
            name, v = ("offload_layers" if k == "offload_activations" else k), getattr(self, k)
            if name in OPTION_NAMES and v is not None and v is not False:
                out[name] = v
        return out

    def run(self, phase: Optional[str]):
        """The run's inputs (``run_inputs``), checked before any work."""
        return run_inputs({k: getattr(self, k) for k in self.names()}, phase)

    def plan(self, fn: str, spec: str, named: dict, keywords: Sequence[str] = ()) -> dict:
        """The options the model reads: the plan's, the builder's (``options`` and ``named``, checked against the
        builder's own) and capture's (checked against ``spec``)."""
        return {**self.parallel(), **builder(fn, spec, self.options, named, keywords),
                **capture_option(spec, self.capture)}


def takes_step_options(fn):
    """``fn`` (``def f(spec, …, **keywords)``) shown with ``StepOptions``' fields as its keyword-only parameters,
    before ``**builder_options``: ``inspect.signature``, ``help`` and ``front_door``'s suggestions list them."""
    sig = inspect.signature(fn)
    own = [p for p in sig.parameters.values() if p.kind != p.VAR_KEYWORD]
    step = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.type)
            for f in dataclasses.fields(StepOptions)]
    rest = inspect.Parameter("builder_options", inspect.Parameter.VAR_KEYWORD)
    fn.__signature__ = sig.replace(parameters=own + step + [rest])
    return fn


def keywords_for(fn, local: dict) -> dict:
    """The keyword-only options of ``fn`` (a front-door function) among a command's local names: the CLI names
    each option as the function does, so one call passes them all; the names it does not take (``--format``'s)
    stay out."""
    takes = [n for n, p in inspect.signature(fn).parameters.items() if p.kind == p.KEYWORD_ONLY]
    return {k: local[k] for k in takes if k in local}


def capture_option(spec, capture: bool) -> dict:
    """``{"capture": True}`` for an hf: spec asked to be captured; --capture on any other spec is refused (it would
    be ignored: built-in names are built analytically, py: modules always captured)."""
    if not capture:
        return {}
    if not (isinstance(spec, str) and spec.strip().startswith("hf:")):
        from ..core.errors import IronlawError
        raise IronlawError(f"--capture applies to hf: specs (a Hugging Face config captured through transformers "
                           f"and torch); {spec} is not one")
    return {"capture": True}


# keywords a user brings from elsewhere, and the front door's name for the same thing (`--on h100` is on="h100")
SYNONYMS = {"hardware": "on", "device": "on", "gpu": "on"}
# command-line options with no keyword, and what the library gives instead
FORMAT_HINT = " (--format is the command line's: the result's .to_dict() is its --format json document)"
CLI_ONLY = {"format": FORMAT_HINT, "fmt": FORMAT_HINT,
            "top": " (--top is the command line's: the rows its text prints; the result holds every op, an "
                   "estimate's .top_ops(N) the N slowest)",
            "overlap": " (--overlap is the command line's default, --serial its other choice: serial=True composes "
                       "the terms serially)",
            "opt": " (--opt KEY=VALUE is the command line's: here a builder option is a keyword of its own, "
                   "image=288, or options={'image': 288})",
            **{rate: " (serve runs a closed loop of concurrency=N requests in flight; an open arrival rate is not "
                     "modelled: the requests/s N sustains is its tokens_per_s over output (Little's law), and "
                     "slo='ttft=2s,itl=50ms' finds the most concurrency meeting the targets)"
               for rate in ("rate", "request_rate", "qps")}}
# where a CLI_ONLY hint holds: the functions whose command has the option (--top), or the keyword it points to
CLI_ONLY_WHERE = {"top": ("analyze", "train", "compare", "validate"), "overlap": ("serial",), "opt": ("options",),
                  "rate": ("serve",), "request_rate": ("serve",), "qps": ("serve",)}


def cli_only(name: str, fn: str, takes) -> str:
    """The CLI_ONLY hint for the keyword ``name`` given to the function ``fn`` taking ``takes``, else ''."""
    where = CLI_ONLY_WHERE.get(name)
    return CLI_ONLY.get(name, "") if where is None or fn in where or set(where) & set(takes) else ""


def builder(fn: str, spec: str, options: Optional[dict], named: dict, keywords: Sequence[str] = ()) -> dict:
    """The builder options: ``options`` and the named keywords, these checked against the builder's own (a
    misspelt one named with the nearest of the builder's and ``keywords``, the function's own)."""
    if options is not None and not isinstance(options, dict):
        from ..core.errors import IronlawError
        raise IronlawError(f"{fn}(): options= takes a dict of builder options, {{'image': 288}} (the command line's "
                           f"--opt image=288), got {type(options).__name__} {options!r}")
    opts = dict(options or {})
    if named:
        from ..models import workloads
        accepted = workloads.builder_options(spec)
        bad = sorted(set(named) - set(accepted))
        if bad:
            takes = ", ".join(accepted) if accepted else "none"
            from ..core.errors import UnknownOption, suggest
            near = (f" (did you mean: {SYNONYMS[bad[0]]}?)" if SYNONYMS.get(bad[0]) in keywords else
                    cli_only(bad[0], fn, keywords) or suggest(bad[0], [*accepted, *keywords]))
            raise UnknownOption(f"{fn}() got an unexpected keyword argument '{bad[0]}'"
                                + (near or f" (the builder options of {spec}: {takes})"))
        opts.update(named)
    return opts


def keywords_of(fn) -> list[str]:
    """The keywords the front door's function ``fn`` takes by name (its signature, ``StepOptions``' fields too)."""
    sig = inspect.signature(fn)
    return [n for n, p in sig.parameters.items() if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]


def run_inputs(given: dict, phase: Optional[str]):
    """The run's price, grid, tokens and interruption options (``run_cost.RunInputs``), checked before any work;
    None when none is given (every consumer reads None as no input, so one device's analysis skips the import)."""
    names = ("train_tokens", "price_per_gpu_hour", "grid_gco2_per_kwh", "mtbf_gpu_hours", "checkpoint_s", "restart_s")
    if all(given.get(k) is None for k in names):
        return None
    from ..models.run_cost import RunInputs
    return RunInputs.of_flags(given.get("train_tokens"), given.get("price_per_gpu_hour"),
                              given.get("grid_gco2_per_kwh"), given.get("mtbf_gpu_hours"), given.get("checkpoint_s"),
                              given.get("restart_s"), phase)


def check_on(on, many: bool = False):
    """``on`` as given, refused in one line unless it is a hardware name, a .toml file, a Hardware or (``many``) a
    list of them."""
    from ..core.errors import IronlawError
    from ..machine.hardware import Hardware
    ok = isinstance(on, (str, Hardware)) or (many and isinstance(on, (list, tuple)) and len(on) > 0
                                               and all(isinstance(h, (str, Hardware)) for h in on))
    if not ok:
        lists = " (or a list of them)" if many else ""
        raise IronlawError(f"on= takes a hardware name, a .toml file or a Hardware{lists}, got {on!r}")
    return on


def device(on, network: Optional[str] = None):
    """The hardware ``on`` names (or is), its collectives on the network calibration ``network`` when given."""
    from ..machine import hardware
    hw = hardware.get(on) if isinstance(check_on(on), str) else on
    if network is not None:
        from ..machine.network.calibration import with_network
        hw = with_network(hw, network)
    return hw


def composition(serial: bool) -> str:
    return "serial" if serial else "overlap"


def strings(v, what: str = "--what-if") -> list[str]:
    """One text or a list of texts (what-if steps, file paths); anything else is one line."""
    if isinstance(v, str):
        return [v]
    if isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
        return list(v)
    from ..core.errors import IronlawError
    raise IronlawError(f"{what} takes a text or a list of texts, got {v!r}")


def grid(v):
    """A batch or seq grid: the CLI's text (``1,2,4,...,1024``), one int, or a sequence of ints."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    if not hasattr(v, "__iter__"):
        from ..core.errors import IronlawError
        raise IronlawError(f"a batch or seq grid is a text such as '1,2,4,...,1024', a whole number or a list of "
                           f"them, got {v!r}")
    return ",".join(str(x) for x in v)
