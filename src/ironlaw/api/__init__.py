"""The library's front door: one function per command of the CLI, taking the command's options as keywords (the
flag's name, underscores for dashes) and returning a typed result whose ``.to_dict()`` is that command's
``--format json`` document. The CLI parses, calls one of these, and prints.

    import ironlaw
    est = ironlaw.analyze("llama3-8b", on="h100", phase="decode", seq=1024, batch=8, tp=2, gpus=2)
    # est.to_dict() == `ironlaw analyze llama3-8b --on h100 --phase decode --seq 1024 --batch 8 --tp 2 --gpus 2
    #                   --format json`

Options that only shape the printed text (``--format``, the ``--top`` of analyze and compare) stay with the CLI.
An option a function does not take is a TypeError. A workload's builder options (``--opt KEY=VALUE``) go in
``options={...}`` or as named keywords, checked against the ones its builder takes.

How the options are read (``options``) and the measuring and writing commands' results (``results``) are this
package's two modules; the functions are here.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, Union

from .options import (SEARCH_SERVE, SEARCH_TRAIN, StepOptions, builder, check_on, check_search_phase, composition,
                      device, front_door, grid, keywords_of, other_phase, run_inputs, scenario_options, strings,
                      takes_step_options, engine_on, runtime_on, wide_ep)

RESULTS = ("Fit", "KernelCalibration", "Probe", "Report", "Validation")   # ``results``' classes, read from here too


def __getattr__(name: str):
    """The measuring and writing commands' result classes (``RESULTS``), imported when first asked for: a
    prediction does not load them."""
    if name in RESULTS:
        from . import results
        return getattr(results, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@front_door
@takes_step_options
def analyze(spec: str, on="h100", *, batch=1, phase: Optional[str] = None, plot: Optional[str] = None, **keywords):
    """``ironlaw analyze``: an :class:`~ironlaw.models.analysis.Analysis` (an Estimate with the energy of its
    step); with ``phase="train"`` and any parallel option, a :class:`~ironlaw.models.training.Training` step.
    ``batch`` and ``seq`` may be numpy arrays: the estimate then holds one value per configuration.
    ``train_tokens`` (``"15T"`` or a number; ``phase="train"``) adds the whole run (``.run``): wall time,
    GPU-hours, energy, cost, carbon and interruptions (``mtbf_gpu_hours``, ``checkpoint_s``, ``restart_s``).
    ``html``: also write its report to that file (the training step's timeline for a Training). The keywords
    besides ``batch``, ``phase`` and ``plot`` are :class:`~ironlaw.api.options.StepOptions`' (``train``'s too)."""
    from ..core.errors import IronlawError
    from ..models import analysis

    o, named = StepOptions.of(keywords)
    cost = o.run(phase)
    opts = o.plan("analyze", spec, named, keywords_of(analyze))
    if o.micro_batch is not None:
        from ..machine.network.topology import check_count
        if check_count(o.micro_batch, "--micro-batch") != batch and not (getattr(batch, "ndim", 0) == 0 and batch == 1):
            raise IronlawError(f"--micro-batch {o.micro_batch} and --batch {batch} contradict each other (--micro-batch "
                               f"sets the batch); give one of them")
    if plot:
        from ..report.plot import check_path
        check_path(plot)                     # fail before the analysis, not after it
    from ..report import pages
    pages.check(o.html)
    if o.parallel() and phase == "train":
        if plot:
            raise IronlawError("--plot draws one device's estimate; it does not combine with parallel options")
        if not (getattr(batch, "ndim", 0) == 0 and batch == 1):
            raise IronlawError(f"--batch {batch} is one device's batch; a training step on many devices takes "
                               f"--micro-batch (sequences per micro-batch) and --global-batch")
        return _train_step(spec, on, o, opts, cost)
    hw = device(on, o.network)
    est = analysis.predict(spec, hw, batch if o.micro_batch is None else o.micro_batch, o.seq, phase, o.dtype,
                           composition(o.serial), opts)
    if o.network is not None and not any(op.kind == "collective" for op in est.graph.ops):
        raise IronlawError(f"--network {o.network} calibrates collectives; {est.graph.name} {est.graph.phase} on one "
                           f"device runs none: add --tp N --gpus N (or a collective spec) or drop --network")
    if _train_spills(est, batch):            # the step `--micro-batch B --global-batch B` takes: refused or alike
        step = analyze(spec, on, phase="train", **{**keywords, "micro_batch": int(batch), "global_batch": int(batch)})
        if plot:
            raise IronlawError(f"--plot draws one device's estimate; {spec}'s training step does not fit "
                               f"{hw.name}'s memory, so it is the parallel step's (--micro-batch {int(batch)})")
        return step
    if plot:
        from ..report.plot import save
        save(est, plot)
    res = analysis.analysis(est, o.price_per_gpu_hour, o.grid_gco2_per_kwh, cost)
    if o.html:
        pages.estimate(o.html, res)
    return res


def _train_spills(est, batch) -> bool:
    """A transformer's training step on one device (a scalar ``batch``) whose footprint exceeds the device's memory.
    Frameworks do not page a transformer's weights, gradients, optimizer state or activations to host memory by
    themselves (that is ``--offload-activations``, on the parallel step), so the one-device door answers as
    ``--micro-batch B --global-batch B`` does: the fit check's refusal with its hint, or that step where its
    memory plan (recomputation, sharding) fits. A recommender's tables stay priced in host memory."""
    import numpy as np
    from ..models import train_fit
    return np.ndim(batch) == 0 and bool(np.any(train_fit.spills(est)))


@front_door
@takes_step_options
def train(spec: str, on="h100", **keywords):
    """One training step on many devices (``ironlaw analyze SPEC --phase train --gpus N --tp … --pp …``): a
    :class:`~ironlaw.models.training.Training` (``time_s``, ``mfu``, ``breakdown``, ``memory``, ``plan``, the
    step's ``energy`` …; with ``train_tokens``, the whole ``run``); ``html``: also write its report (the step's
    timeline) to that file. The keywords are :class:`~ironlaw.api.options.StepOptions`' (``analyze``'s too)."""
    o, named = StepOptions.of(keywords)
    cost = o.run("train")
    from ..report import pages
    pages.check(o.html)
    return _train_step(spec, on, o, o.plan("train", spec, named, keywords_of(train)), cost)


def _train_step(spec: str, on, o: StepOptions, opts: dict, cost):
    """One training step (``models.training.train``) and, with ``html``, its report."""
    from ..models import training
    from ..report import pages
    step = training.train(spec, device(on, o.network), o.seq, o.dtype, composition(o.serial), opts, cost)
    if o.html:
        pages.train_step(o.html, step)
    return step


def _same_file(a, b) -> bool:
    """Two devices read from one hardware file (an alias, or the path of a catalog entry): a calibrated copy of
    h100 (``calibrate --kernels … --out my.toml``) keeps the name h100 and is another device."""
    from pathlib import Path
    return a.name == b.name and Path(a.path).resolve() == Path(b.path).resolve()


@front_door
def compare(spec: str, on="h100", *, what_if: Union[str, Sequence[str]] = (), vs_hardware: Optional[str] = None,
            batch=1, seq=None, phase: Optional[str] = None, dtype: Optional[str] = None, serial: bool = False,
            options: Optional[dict] = None, **builder_options):
    """``ironlaw compare``: before and after a what-if (``"quant=int8,target=weights"``, ``"fusion=elementwise"``
    …) or on other hardware; a :class:`~ironlaw.models.whatif.compare.Comparison`."""
    from ..core.errors import IronlawError
    from ..models import analysis
    from ..models.whatif.compare import compare as run

    opts = builder("compare", spec, options, builder_options, keywords_of(compare))
    steps = strings(what_if)
    if not steps and not vs_hardware:
        from ..models.whatif import names
        raise IronlawError("compare needs --what-if \"…\" or --vs-hardware HW (transforms: "
                           + ", ".join(names()) + ")")
    if vs_hardware is not None and not steps and _same_file(device(vs_hardware), device(on)):
        raise IronlawError(f"--vs-hardware {vs_hardware} is the device --on {on} already names: the 'after' case would "
                           f"be the 'before' one; name another device or add --what-if \"…\"")
    if vs_hardware is not None:
        from ..models.whatif import parse
        if any(st.transform.name == "hardware" for text in steps for st in parse(text)):
            raise IronlawError(f"--vs-hardware {vs_hardware} and the what-if hardware= both name the 'after' device; "
                               f"give one of them")
    hw = device(on)
    graph = analysis.graph_of(spec, hw, batch, seq, phase, dtype, opts)
    before = analysis.on_device(graph, hw, composition(serial))
    from ..models.priced import priced
    return run(before, steps, vs_hardware, graph=graph, prepare=priced)


@front_door
def sweep(spec: str, on: Union[str, Sequence[str]] = "h100", *, batch: Union[str, Sequence[int]] = "1,2,4,...,1024",
          seq: Union[str, Sequence[int], None] = None, phase: Optional[str] = None, dtype: Optional[str] = None,
          what_if: Union[str, Sequence[str]] = (), serial: bool = False, plot: Optional[str] = None,
          price_per_gpu_hour: Optional[float] = None, grid_gco2_per_kwh: Optional[float] = None):
    """``ironlaw sweep``: batch (× seq) on one or more devices (``on="h100,b200"`` or a list); a
    :class:`~ironlaw.models.sweep.Sweep` with time, throughput, bottleneck and ridge points."""
    from ..machine.hardware import listed
    from ..models import sweep as sw

    names = listed(check_on(on, many=True))
    if plot:
        from ..core.files import check_plot
        check_plot(plot, (".png", ".svg", ".pdf"))              # fail before the sweep
    res = sw.run(spec, names, grid(batch), grid(seq), phase, dtype, strings(what_if), composition(serial),
                 usd_per_device_hour=price_per_gpu_hour, gco2_per_kwh=grid_gco2_per_kwh)
    if plot:
        from ..report.sweep import save
        save(res, plot)
    return res


@front_door
def serve(spec: str, on="h100", *, prompt: Optional[int] = None, output: Optional[int] = None, concurrency: int = 1,
          dtype: Optional[str] = None, kv_dtype: Optional[str] = None, page_tokens: Optional[int] = None,
          max_seq: Optional[int] = None, chunk: Optional[int] = None, tp: int = 1, serial: bool = False,
          max_throughput: bool = False, ep: int = 1, attention_dp: bool = False, pp: int = 1,
          kv_fraction: Optional[float] = None, max_batch: Optional[int] = None, max_num_tokens: Optional[int] = None,
          requests: Optional[int] = None, expert_imbalance: float = 1.0, speculative: Optional[str] = None,
          prefix_hit: Optional[float] = None, disaggregate: Optional[str] = None, slo: Optional[str] = None,
          sweep_concurrency: bool = False, plot: Optional[str] = None, price_per_gpu_hour: Optional[float] = None,
          grid_gco2_per_kwh: Optional[float] = None, html: Optional[str] = None, engine: Optional[str] = None,
          release: Optional[str] = None, moe_routing: Optional[str] = None, moe_dispatcher: Optional[str] = None,
          redundant_experts: int = 0, memory_fraction: Optional[float] = None, runtime: Optional[str] = None,
          lengths: Optional[str] = None, long_prefill_token_threshold: Optional[int] = None, async_scheduling: bool = False):
    """``ironlaw serve``: a :class:`~ironlaw.models.serving.features.options.Serving` (TTFT, ITL, tokens/s, KV
    capacity and every feature asked for; on a GPU every step priced by the serving engine's step model, as
    ``max_throughput`` prices its own, elsewhere on the device's calibration: ``.estimate.step_model`` says which);
    with ``max_throughput=True`` the offline scenario's :class:`~ironlaw.models.serving.frameworks.EngineThroughput`
    (``lengths``: per-request lengths from a file, ``models.serving.lengths``); with ``sweep_concurrency=True`` a
    :class:`~ironlaw.models.serving.features.options.Frontier`. ``html``: also write its report to that file (the
    steps, their rooflines, the concurrency frontier). ``engine``: the serving framework, trtllm, vllm or sglang
    — its kernels and its scheduler's defaults (``ironlaw.models.serving.frameworks``); None: TensorRT-LLM on an
    NVIDIA GPU, vLLM on an AMD or Intel GPU, where TensorRT-LLM does not run (``machine.engines.default_for``).
    ``release``: the framework release whose kernels price the steps (TensorRT-LLM "1.0", the published perf
    overview's; default the catalog's, 1.3.0rc20; ``ironlaw.machine.engines.RELEASES``). ``moe_routing``
    (max-throughput): the router's load on the busiest expert rank, per step (``ironlaw.core.routing``: balanced,
    power_law_<alpha>; default uniform rows, times ``expert_imbalance``). ``moe_dispatcher``,
    ``redundant_experts`` (max-throughput): TensorRT-LLM's wide-EP exchange and EPLB's slots (``wide_ep``).
    ``memory_fraction``: the engine's own memory knob, in (0, 1] (``ironlaw.models.serving.frameworks``).
    ``runtime``: TensorRT-LLM's executor, "pytorch" (None) or "cpp" (``ironlaw.models.serving.step.runtime``).
    vLLM's ``long_prefill_token_threshold`` (no CLI flag; prompt tokens a request takes a step), ``async_scheduling``
    (its host overlapped with the device; refused elsewhere, ``frameworks.check_async_scheduling``)."""
    from ..machine import engines, hardware
    from ..models.serving import frameworks, lengths as mixes, online
    from ..models.serving.features import energy, options as feat
    from ..report import pages
    pages.check(html)
    if engine is not None:
        engines.check_release(engines.check_engine(engine), release)
    check_on(on)
    vllm = scenario_options(dict(locals()))                  # vLLM's scheduler knobs (VllmKnobs)
    engine, named = engine_on(engine, release, hardware.get(on) if isinstance(on, str) else on, kv_dtype)
    runtime = runtime_on(runtime, engine)
    from ..models import workloads
    workloads.check_serves(spec, "serve")
    prompt, output, requests, mix = mixes.given(lengths, prompt, output, requests)
    if max_throughput:
        energy.check(price_per_gpu_hour, grid_gco2_per_kwh)
        kw = dict(tp=tp, pp=pp, ep=ep, attention_dp=attention_dp, dtype=dtype, kv_dtype=kv_dtype,
                  max_batch=max_batch, max_num_tokens=max_num_tokens, requests=requests,
                  expert_imbalance=expert_imbalance, routing=moe_routing, **mix)
        kw.update({} if kv_fraction is None else {"kv_fraction": kv_fraction})   # absent: 0.95, not given
        kw.update(wide_ep(engine, moe_dispatcher, redundant_experts, named))
        est = energy.with_energy(frameworks.max_throughput(spec, on, prompt, output, engine, kw, 0.95, release,
                                                           memory_fraction, runtime, *vllm),
                                 price_per_gpu_hour, grid_gco2_per_kwh)
        if html:
            pages.serve_offline(html, est, kw)
        return est
    feats = feat.checked(speculative, prefix_hit, disaggregate, slo, sweep_concurrency, plot, price_per_gpu_hour,
                          grid_gco2_per_kwh)
    kw = dict(dtype=dtype, kv_dtype=kv_dtype, page_tokens=page_tokens, max_seq=max_seq, chunk=chunk, tp=tp,
              composition=composition(serial), **mix)
    eng, given = frameworks.online_engine(engine, on, tp, release, memory_fraction, concurrency, chunk, runtime, *vllm)
    kw.update(given)
    own = eng.scheduler is not None or eng.release is not None
    est = online.estimate(spec, eng.hw if own else on, prompt, output, concurrency, **kw)
    if sweep_concurrency:
        res = feat.frontier(est, kw, feats)
        if own:                                   # the default's frontier stays the report page's document
            res.doc["engine"] = eng.to_dict(offline=False)
        if plot:
            from ..report.frontier import save
            save(res.to_dict(), plot)
        if html:
            pages.serve_online(html, est, kw, feats, frontier=res)
        return res
    res = feat.run(est, kw, feats)
    res.engine = eng
    if html:
        pages.serve_online(html, est, kw, feats, serving=res)
    return res


@front_door
def search(spec: str, *, phase: str = "train", on="h100", gpus: int = 8, nodes: Optional[int] = None,
           global_batch: Optional[int] = None, seq: Optional[int] = None, dtype: Optional[str] = None, top: int = 5,
           tp: Optional[int] = None, pp: Optional[int] = None, cp: Optional[int] = None, dp: Optional[int] = None,
           ep: Optional[int] = None, micro_batch: Optional[int] = None, interleave: Optional[int] = None,
           recompute: Optional[str] = None, zero: Optional[int] = None, sequence_parallel: Optional[bool] = None,
           tp_comm_overlap: Optional[bool] = None, overlap_p2p: Optional[bool] = None,
           grad_fp32: Optional[bool] = None, moe_a2a_overlap: Optional[bool] = None,
           expert_imbalance: Optional[float] = None, moe_dispatcher: Optional[str] = None,
           prompt: Optional[int] = None, output: Optional[int] = None,
           slo: Optional[str] = None, serve_engine: Optional[str] = None, engine: str = "local",
           workers: Optional[int] = None,
           address: Optional[str] = None, quiet: bool = True, rank: str = "tokens-per-gpu",
           prices: Union[str, dict, None] = None, price_per_gpu_hour: Optional[float] = None,
           grid_gco2_per_kwh: Optional[float] = None, train_tokens: Union[str, float, None] = None,
           mtbf_gpu_hours: Optional[float] = None, checkpoint_s: Optional[float] = None,
           restart_s: Optional[float] = None, html: Optional[str] = None, serial: bool = False,
           cuda_graph: Optional[str] = None, fp8_attention: bool = False, lora_rank: Optional[int] = None,
           lora_targets: Optional[str] = None, offload_activations: Optional[int] = None,
           param_gather_exposed: bool = False, network: Optional[str] = None, options: Optional[dict] = None,
           memory_fraction: Optional[float] = None, recompute_layers: Optional[int] = None,
           recompute_method: Optional[str] = None, redundant_experts: Optional[int] = None):
    """``ironlaw search``: every valid layout that fits, predicted and ranked by tokens/s per GPU; a
    :class:`~ironlaw.models.search.SearchResult`. A layout option given fixes it; ``quiet=False`` shows progress.
    Each reported layout carries its ``energy`` and, training with ``train_tokens``, its whole ``run``.
    Serving: ``on="h100,h200,b200"`` (or a list) searches several devices in one ranking; ``rank`` is
    ``"tokens-per-gpu"`` or ``"usd-per-million-tokens"``; ``prices`` (``"h100=2.5,b200=5"`` or a dict, USD per
    GPU-hour) or, for one device, ``price_per_gpu_hour`` override the sourced defaults. ``html``: also write its report to that file (the ranked
    layouts, why the best wins). ``moe_dispatcher`` (training): ``"alltoall"`` (default), ``"flex"`` or ``"deepep"``, priced on
    the layouts with EP > 1 as ``analyze`` prices it. An option of the other phase is refused (training:
    ``global_batch`` 1024, ``seq`` 4096 and the overlap, gradient and expert options; serving: ``prompt`` 1024,
    ``output`` 256, ``slo``, ``rank``, ``prices``, ``serve_engine``; None takes the default named).
    ``serve_engine`` (serving): the framework whose kernels and scheduler limits price every layout, ``"trtllm"``,
    ``"vllm"`` or ``"sglang"``, as ``serve(engine=…)`` (None: each device's default, as ``serve``'s);
    ``engine`` is where the search runs: ``"local"``, ``"pool"`` or ``"ray"``. ``analyze``'s step options price
    every training layout as ``analyze`` prices one: ``serial``, ``cuda_graph``, ``fp8_attention``, ``lora_rank``
    and ``lora_targets`` (LoRA fine-tuning), ``offload_activations`` (on the layouts whose stages hold that many
    layers), ``param_gather_exposed`` (on the ZeRO-1 layouts), ``network`` and the builder's ``options``;
    ``recompute_layers`` (with ``recompute="full"``; else the fewest of each layout's that fit, block method) and
    ``recompute_method`` as ``analyze``'s;
    ``memory_fraction`` (serving) is ``serve``'s, each layout's engine at that memory share; ``redundant_experts``
    EPLB's slots on every layout with EP > 1 (its degrees divide experts + slots), as ``analyze``/``serve``'s."""
    from ..core.errors import IronlawError

    check_search_phase(phase)
    cost = run_inputs(dict(locals()), phase)
    from ..report import pages
    pages.check(html)
    check_on(on, many=phase == "serve")

    fixed = dict(tp=tp, pp=pp, cp=cp, dp=dp, ep=ep, micro_batch=micro_batch, interleave=interleave,
                 recompute=recompute, zero=zero, sequence_parallel=sequence_parallel)
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 1000:
        raise IronlawError(f"--top must be between 1 and 1000, got {top!r}")
    from ..machine.engines import ENGINES
    if engine in ENGINES:
        raise IronlawError(f"--engine {engine}: search's --engine is where the search runs (local | pool | ray); "
                           f"the serving framework is --serve-engine {engine} (with --phase serve)")
    given = dict(locals())
    if phase == "train":
        other_phase(given, SEARCH_SERVE, "serving search (--phase serve)")
        if isinstance(on, (list, tuple)) or (isinstance(on, str) and "," in on):
            raise IronlawError(f"--on {on}: the training search takes one device; several are searched in one "
                               f"ranking with --phase serve")
        res = _search_train(spec, given, fixed, cost)
    else:
        if engine != "local" or workers or address:
            raise IronlawError("--engine/--workers/--address: the serving search runs in one process")
        other_phase(given, SEARCH_TRAIN, "training search (--phase train)")
        from ..models import workloads
        workloads.check_serves(spec, "search --phase serve")
        prompt, output = (1024 if prompt is None else prompt), (256 if output is None else output)
        from ..models.search import serve as run
        res = run.search(spec, on, gpus, prompt, output, slo, dtype, top, fixed, quiet=quiet, rank=rank,
                         prices=prices, price_per_gpu_hour=price_per_gpu_hour, cost=cost, engine=serve_engine,
                         memory_fraction=memory_fraction, redundant_experts=redundant_experts or 0)
    from ..models.search import rerun
    res.rerun = rerun.command(res, given)
    if html:
        pages.search(html, res)
    return res


def _search_train(spec: str, given: dict, fixed: dict, cost):
    """``search``'s training search, its keywords ``given``: the defaults of those left out (``SEARCH_TRAIN``),
    the overlap, gradient, expert and step options as the search's settings, LoRA and the builder's options as
    the model's build, the network calibration on the device."""
    from ..models.search import train as run
    d = {k: v if given[k] is None else given[k] for k, v in SEARCH_TRAIN.items()}
    settings = {k: d[k] for k in ("tp_comm_overlap", "overlap_p2p", "grad_fp32", "expert_imbalance",
                                  "moe_a2a_overlap", "cuda_graph", "fp8_attention", "param_gather_exposed")}
    settings.update(moe_dispatcher=given["moe_dispatcher"], offload_layers=given["offload_activations"],
                    recompute_layers=given["recompute_layers"], recompute_method=given["recompute_method"],
                    redundant_experts=given["redundant_experts"])
    build = {**builder("search", spec, given["options"], {}),
             **{k: given[k] for k in ("lora_rank", "lora_targets") if given[k] is not None}}
    on = given["on"] if given["network"] is None else device(given["on"], given["network"])
    return run.search(spec, on, given["gpus"], d["global_batch"], d["seq"], given["dtype"], given["nodes"],
                      given["top"], fixed, given["engine"], given["workers"], given["address"], quiet=given["quiet"],
                      settings=settings, cost=cost, composition=composition(given["serial"]), options=build)


@front_door
def report(spec: str, html: str, on="h100", *, batch=1, seq=None, phase: Optional[str] = None,
           dtype: Optional[str] = None, serial: bool = False, what_if: Union[str, Sequence[str]] = (),
           vs_hardware: Optional[str] = None, compare: Optional[str] = None, validate: Optional[str] = None,
           frontier: Optional[str] = None, top: int = 200):
    """``ironlaw report``: one self-contained HTML page of an estimate (summary, terms, roofline of every op,
    sortable ops, footprint) written to ``html``, with a before/after section for ``what_if``/``vs_hardware`` or
    from a saved ``compare`` document, predicted against measured from a saved ``validate`` document, and the
    serving ``frontier`` from a saved ``serve --sweep-concurrency`` document; ``top`` rows in the ops table.
    A :class:`Report`."""
    from ..core import progress
    from ..core.errors import IronlawError
    from ..models import analysis
    from ..report import html as page
    from ..report import inputs

    out = page.check_output(html)                      # fail before any work
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise IronlawError(f"--top must be at least 1, got {top!r}")
    if compare and (what_if or vs_hardware):
        raise IronlawError("give either --compare FILE or --what-if/--vs-hardware, not both")
    with progress.task(f"report of {spec}", total=3) as step:
        est = analysis.predict(spec, device(on), batch, seq, phase, dtype, composition(serial))
        step(description="what-if and validation")
        cmp_doc = None
        if compare:
            cmp_doc = inputs.load_compare(compare, est)
        elif what_if or vs_hardware:
            try:
                from ..models.whatif.compare import compare as run
            except ImportError:
                raise IronlawError("--what-if is not available in this build (ironlaw.models.whatif is missing); "
                                   "use --compare FILE.json") from None
            cmp_doc = inputs.check_compare(run(est, strings(what_if), vs_hardware).to_dict(), "--what-if", est)
        val_doc = inputs.load_validation(validate, est) if validate else None
        fr_doc = None
        if frontier:
            from ..report.frontier import check
            fr_doc = inputs.check_frontier(check(inputs.read_json(frontier, "--frontier"), f"--frontier {frontier}"),
                                           f"--frontier {frontier}", est)
        step(description="drawing the report")
        text = page.render(est, compare=cmp_doc, validation_doc=val_doc, top=top, frontier_doc=fr_doc)
        step()
    page.write(out, text)
    from .results import Report
    return Report(str(out), len(text.encode()), est)


@front_door
def contract(on="h100", *, dtype: Optional[str] = None):
    """``ironlaw contract``: the silicon contract's three textbook workloads (ResNet-50 training, Llama-3-8B
    decode, DLRM-DCNv2 inference) on one device, in ``dtype`` (default: each workload's own, bf16 for the two
    networks; a device without bf16, such as the V100 and T4, takes ``dtype="fp16"``); a
    :class:`~ironlaw.models.contract.Contract`."""
    from ..models import contract as c
    return c.run(device(on), dtype)


@front_door
def probe(*, out: Optional[str] = None, quick: bool = False, threads: Optional[int] = None, max_cv: float = 0.15,
          rounds: int = 1, references: bool = True, strict: bool = False, progress=None):
    """``ironlaw probe``: micro-benchmark this machine, time the reference models (with ``references``), fit the
    calibration on them and save the profile (``out``, else a new file that ``on="local"`` reads); a
    :class:`Probe`. A probe that fails its checks (a row that stays noisy, a lost core, a threefold drift, a copy
    time that did not grow with size) is saved marked with them (``Probe.unsteady``), every prediction on it
    carrying the wider range; ``strict`` refuses it and saves nothing. ``progress(done, total, label)`` is called
    as it goes (the CLI's bar)."""
    from ..machine import profile
    from ..measure import probe as probe_mod
    from ..measure.calibrate import build, selfcal

    from ..core.errors import IronlawError
    if out is not None and not str(out).endswith(".toml"):  # fail before the (long) probe; save makes the folder
        raise IronlawError(f"--out {out}: a profile file name must end in .toml")
    rows = probe_mod.run(quick=quick, threads=threads, max_cv=max_cv, progress=progress, rounds=rounds,
                         refuse=strict)
    # selfcal fits the rows and the reference runs together, so the rows' own fit is skipped then
    doc = build.profile(rows, calibrate_fit=not references, strict=strict)
    if references:
        doc = selfcal.calibrate(doc, quick, progress=progress)
    from .results import Probe
    return Probe(str(profile.save(doc, out)), doc, strict)


@front_door
def validate(spec: str, *, batch: int = 1, seq: Optional[int] = None, phase: Optional[str] = None, on: str = "local",
             repeats: int = 5, warmup: int = 2, threads: Optional[int] = None, out: Optional[str] = None):
    """``ironlaw validate``: run the model here (torch), predict it with the profile ``on``; a
    :class:`Validation` of measured against predicted, per op and end to end. ``out`` also writes the document."""
    from ..measure import validate as v

    if out is not None:
        from ..core.files import check_output
        check_output(out, "--out", (".json",))                # fail before the (long) run
    from .results import Validation
    res = Validation(v.run(spec, batch=batch, seq=seq, phase=phase, on=on, repeats=repeats, warmup=warmup,
                           threads=threads))
    if out:
        from ..core.files import write_json
        write_json(out, res.to_dict())
    return res


@front_door
def fit(runs: Union[str, Sequence[str]], *, hold_out: Union[str, Sequence[str], None] = None, on: str = "local",
        stat: str = "median", save: bool = False):
    """``ironlaw fit``: fit the profile's [calibration] from ``ironlaw validate --out`` documents, score the fitted
    and the held-out runs apart; a :class:`Fit`. ``save`` writes the calibration into the probe profile."""
    from ..core.errors import IronlawError
    from ..machine import calibration, hardware
    from ..measure import validate as v
    from ..measure.calibrate import fit as fitter
    from ..report.inputs import read_json

    if stat not in v.STATS:
        raise IronlawError(f"--stat must be one of {', '.join(v.STATS)}, got '{stat}'")

    def load(paths):
        return [c for p in strings(paths or [], "runs") for c in v.cases_of(read_json(p, "validate"), p)]
    if not strings(runs or [], "runs"):
        raise IronlawError("fit: no runs given; give one or more `ironlaw validate … --out RUN.json` files")
    fitted, held = load(runs), load(hold_out)          # the files the user named are read before the profile
    hw = hardware.get(on)
    if hw.kind != "cpu":                               # validate measures on this machine's CPU only
        raise IronlawError(f"fit calibrates the CPU profile its validate runs were measured on; '{on}' is a "
                           f"{hw.kind} ({hw.name}). Use --on local (the newest probe profile) or a CPU profile file")
    cal = fitter.fit(hw, fitted, held_out=held, stat=stat)
    hw_cal = calibration.with_calibration(hw, cal)
    saved = None
    if save:
        if "probe" not in hw.extra:
            raise IronlawError(f"--save: {hw.path} is not a probe profile (no [probe] table); calibrate a profile "
                               "written by `ironlaw probe` (--on local)")
        saved = str(fitter.save(hw.path, cal))
    from .results import Fit
    return Fit(hw.name, cal, saved, fitter.score(hw_cal, fitted, stat), fitter.score(hw_cal, held, stat))


def _framework_of(kernels: str) -> str:
    """The framework ``calibrate`` reads when none is given: TensorRT-LLM's tables where the folder holds them (or
    names no framework), else the one framework the folder holds (aiter's in an AMD folder); several: one line."""
    from ..core.errors import IronlawError
    from ..measure.calibrate import kernelfit, kerneltable
    have = kerneltable.frameworks_in(kernels, kernelfit.OPS)
    if not have or kernelfit.FRAMEWORKS[0] in have:
        return kernelfit.FRAMEWORKS[0]
    if len(have) > 1:
        raise IronlawError(f"{kernels}: tables of {', '.join(have)} and none of trtllm (the default); name one "
                           f"with --framework")
    return have[0]


def _check_floor(base, gs, kernels) -> None:
    """One line, before any fit, where the tables' rows run faster than the law's floor on ``base`` allows
    (``kernelfit.floor``): timed on another GPU, or ``base``'s file states too low a peak."""
    from ..core.errors import IronlawError
    from ..core.units import fmt
    from ..measure.calibrate.kernelfit.floor import FLOOR_MARGIN, below_floor
    from ..measure.calibrate.kerneltable import check_gemm_dims
    for g in gs:                     # a zero-size GEMM is refused as such (as the fit does) before it is priced
        if g.op == "gemm":
            check_gemm_dims(g.rows, g.table.path)
    b = below_floor(base, gs)
    if b is not None:
        raise IronlawError(
            f"{kernels}: {b.rows} of {b.of_rows} rows ran faster than {base.name} can (its peak FLOP/s and bandwidth "
            f"at η = 1) by over {FLOOR_MARGIN:g}x; worst {b.worst_row} of {b.worst_class}: measured "
            f"{fmt(b.worst_measured_s, 's')}, floor {fmt(b.worst_floor_s, 's')} ({b.worst_ratio:.1f}x): were they "
            f"timed on another GPU? name it with --gpu, or correct {base.name}'s peaks")


@front_door
def calibrate(kernels: str, *, gpu: Optional[str] = None, framework: Optional[str] = None,
              out: Optional[str] = None):
    """``ironlaw calibrate --kernels DIR``: fit a GPU's GEMM and attention terms on measured kernel tables
    (aiconfigurator-core's layout and columns, or a user's own in the same columns) on their even rows, score the
    held-out rows, and (``out``) write the calibrated hardware profile that ``on=out`` then uses; a
    :class:`KernelCalibration`. Each GEMM class takes the form, half-point or stream, that holds out better on its
    own rows (``kernelfit.forms.chosen_form``); the profile's provenance and ``gemm_forms`` say which, with both scores.
    ``gpu``: the catalog GPU or hardware .toml whose tables to fit and the profile to start from (needed where the
    tables name several GPUs, or one the catalog lacks). ``framework``: whose tables to read where the folder holds
    several (None: trtllm's, else the one framework the folder holds); a table that names none is refused with it (the
    framework's rules key on the table's own framework and version). The result's ``framework`` is the one the tables
    name (their framework column or ``<framework>/<version>/`` folder), else "unstated"."""
    from ..core.errors import IronlawError
    from ..machine import hardware
    from ..machine.engines import check_kernels_run_on, check_profile_framework
    from ..measure.calibrate import kernelfit, kerneltable

    from os import PathLike
    if not isinstance(kernels, (str, PathLike)) or not str(kernels).strip():
        raise IronlawError(f"--kernels takes a folder or a file of kernel tables, got {kernels!r}")
    if out is not None and not str(out).endswith(".toml"):
        raise IronlawError(f"--out {out}: a hardware profile's file name must end in .toml")
    if framework is not None and framework not in kernelfit.FRAMEWORKS:
        from ..core.errors import suggest
        raise IronlawError(f"--framework must be one of {', '.join(kernelfit.FRAMEWORKS)}, got '{framework}'"
                           + suggest(framework, kernelfit.FRAMEWORKS))
    check_profile_framework(framework, out)
    if gpu is not None:              # a name the catalog lacks is refused, with the nearest ones, before any table is read
        check_kernels_run_on(framework, hardware.get(gpu), None, given=True)
    tables = kerneltable.read(kernels, ops=kernelfit.OPS, gpu=gpu, framework=framework or _framework_of(kernels))
    unnamed = [t for t in tables if not t.framework]
    if framework is not None and unnamed:            # the option would change nothing of the fit: refused
        raise IronlawError(f"--framework {framework}: {unnamed[0].path} names no framework (no framework and version "
                           f"columns, no <framework>/<version>/ folder above it), so nothing of {framework}'s "
                           f"applies to its fit; drop --framework, or add the columns")
    gpus = sorted({t.gpu for t in tables})
    if len(gpus) > 1:
        raise IronlawError(f"{kernels}: tables of {len(gpus)} GPUs ({', '.join(gpus)}); name one with --gpu")
    base = hardware.get(gpu if gpu is not None else gpus[0])
    for t in tables:
        check_kernels_run_on(t.framework, base, t.path, given=framework is not None)
        kerneltable.check_attention_dims(t)
        kerneltable.check_gemm_unit(t, base)
    origin, license = kernelfit.origin_of(kernels)
    gs, left_out = kernelfit.groups(tables), kernelfit.skipped(tables)
    if not gs and left_out:
        raise IronlawError(f"{kernels}: no rows to fit; left out " + "; ".join(
            f"{k['rows']} {k['gemm_dtype']} row{'s' if k['rows'] != 1 else ''} ({k['why']})" for k in left_out))
    for g in gs:                       # every class is fitted on its even rows and scored on its odd ones
        if g.op == "gemm" and g.dtype and g.dtype not in base.peak_flops:
            raise IronlawError(f"{g.table.path}: {len(g.rows)} rows of {g.name}, but "
                               f"{base.lacks(g.dtype).split('; ')[0]}: drop them, or name the GPU they were timed "
                               f"on with --gpu")
        if min(len(part) for part in kernelfit.split(g.rows, g.op)) == 0:
            raise IronlawError(f"{g.table.path}: {g.name} has {len(g.rows)} row{'s' if len(g.rows) != 1 else ''}; a "
                               f"kernel class is fitted on its even rows and scored on its odd ones: give it at "
                               f"least 2 rows, or drop it")
    _check_floor(base, gs, kernels)
    new = kernelfit.fit(base, gs, origin=origin, license=license, gemm_fill="auto")
    table = kernelfit.merged(base.calibration.table() if base.calibration is not None else None, new)
    scores = kernelfit.score(base, table, gs)
    saved = None
    if out:
        from ..machine.profile import copy_with_table
        if not base.path or not Path(base.path).is_file():
            raise IronlawError(f"{base.name}: no hardware file to start the profile from; give --gpu FILE.toml")
        saved = str(copy_with_table(Path(base.path), Path(out), "calibration", table))
    from .results import KernelCalibration
    named = sorted({t.framework for t in tables if t.framework})
    return KernelCalibration(base.name, ", ".join(named) or "unstated", len(gs), scores, table, saved,
                             kernelfit.form_choices(new), left_out, kerneltable.assumptions(tables))
