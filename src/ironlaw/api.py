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
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

# the names of analyze's parallel options, in the order the CLI passes them on
PARALLEL = ("gpus", "nodes", "tp", "pp", "cp", "dp", "ep", "global_batch", "micro_batch", "interleave", "recompute",
            "zero", "fsdp", "expert_imbalance", "tp_comm_overlap", "overlap_p2p", "grad_fp32", "moe_a2a_overlap",
            "cuda_graph", "redundant_experts", "offload_activations", "sequence_parallel", "param_gather_exposed",
            "moe_dispatcher")


def _front_door(fn):
    """``fn`` with a keyword it does not take refused as one line (``UnknownOption``: an IronlawError and a
    TypeError, as Python's own), naming the nearest it takes; a builder's keywords (``**builder_options``) are
    checked by ``_builder``."""
    import inspect
    sig = inspect.signature(fn)
    takes = [n for n, p in sig.parameters.items() if p.kind == p.KEYWORD_ONLY]
    open_ = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if not open_:
            bad = [k for k in kwargs if k not in sig.parameters]
            if bad:
                from .core.errors import UnknownOption, suggest
                raise UnknownOption(f"{fn.__name__}() got an unexpected keyword argument '{bad[0]}'"
                                    f"{suggest(bad[0], takes)}")
        return fn(*args, **kwargs)
    return call


@_front_door
def analyze(spec: str, on="h100", *, batch=1, seq=None, phase: Optional[str] = None, dtype: Optional[str] = None,
            serial: bool = False, gpus: Optional[int] = None, nodes: Optional[int] = None, tp: Optional[int] = None,
            pp: Optional[int] = None, dp: Optional[int] = None, cp: Optional[int] = None, ep: Optional[int] = None,
            expert_imbalance: Optional[float] = None, global_batch: Optional[int] = None,
            micro_batch: Optional[int] = None, interleave: Optional[int] = None, sequence_parallel: bool = False,
            tp_comm_overlap: bool = False, overlap_p2p: bool = False, grad_fp32: bool = False,
            moe_a2a_overlap: bool = False, cuda_graph: Optional[str] = None, redundant_experts: Optional[int] = None,
            moe_dispatcher: Optional[str] = None,
            offload_activations: Optional[int] = None, recompute: Optional[str] = None, zero: Optional[int] = None,
            fsdp: bool = False, param_gather_exposed: bool = False, plot: Optional[str] = None, capture: bool = False, network: Optional[str] = None,
            options: Optional[dict] = None, price_per_gpu_hour: Optional[float] = None,
            grid_gco2_per_kwh: Optional[float] = None, train_tokens: Union[str, float, None] = None,
            mtbf_gpu_hours: Optional[float] = None, checkpoint_s: Optional[float] = None,
            restart_s: Optional[float] = None, html: Optional[str] = None, **builder_options):
    """``ironlaw analyze``: an :class:`~ironlaw.models.analysis.Analysis` (an Estimate with the energy of its
    step); with ``phase="train"`` and any parallel option, a :class:`~ironlaw.models.training.Training` step.
    ``batch`` and ``seq`` may be numpy arrays: the estimate then holds one value per configuration.
    ``train_tokens`` (``"15T"`` or a number; ``phase="train"``) adds the whole run (``.run``): wall time,
    GPU-hours, energy, cost, carbon and interruptions (``mtbf_gpu_hours``, ``checkpoint_s``, ``restart_s``).
    ``html``: also write its report to that file (the training step's timeline for a Training)."""
    from .core.errors import IronlawError
    from .models import analysis

    given = dict(locals())
    par = _parallel(given)
    cost = _run_inputs(given, phase)
    opts = {**par, **_builder("analyze", spec, options, builder_options), **_capture(spec, capture)}
    if micro_batch is not None:
        from .machine.network.topology import check_count
        if check_count(micro_batch, "--micro-batch") != batch and not (getattr(batch, "ndim", 0) == 0 and batch == 1):
            raise IronlawError(f"--micro-batch {micro_batch} and --batch {batch} contradict each other (--micro-batch "
                               f"sets the batch); give one of them")
    if plot:
        from .report.plot import check_path
        check_path(plot)                     # fail before the analysis, not after it
    from .report import pages
    pages.check(html)
    if par and phase == "train":
        if plot:
            raise IronlawError("--plot draws one device's estimate; it does not combine with parallel options")
        if not (getattr(batch, "ndim", 0) == 0 and batch == 1):
            raise IronlawError(f"--batch {batch} is one device's batch; a training step on many devices takes "
                               f"--micro-batch (sequences per micro-batch) and --global-batch")
        from .models import training
        step = training.train(spec, _device(on, network), seq, dtype, _composition(serial), opts, cost)
        if html:
            pages.train_step(html, step)
        return step
    hw = _device(on, network)
    est = analysis.predict(spec, hw, batch if micro_batch is None else micro_batch, seq, phase, dtype, _composition(serial), opts)
    if plot:
        from .report.plot import save
        save(est, plot)
    res = analysis.analysis(est, price_per_gpu_hour, grid_gco2_per_kwh, cost)
    if html:
        pages.estimate(html, res)
    return res


@_front_door
def train(spec: str, on="h100", *, seq=None, dtype: Optional[str] = None, serial: bool = False,
          gpus: Optional[int] = None, nodes: Optional[int] = None, tp: Optional[int] = None, pp: Optional[int] = None,
          dp: Optional[int] = None, cp: Optional[int] = None, ep: Optional[int] = None,
          expert_imbalance: Optional[float] = None, global_batch: Optional[int] = None,
          micro_batch: Optional[int] = None, interleave: Optional[int] = None, sequence_parallel: bool = False,
          tp_comm_overlap: bool = False, overlap_p2p: bool = False, grad_fp32: bool = False,
          moe_a2a_overlap: bool = False, cuda_graph: Optional[str] = None, redundant_experts: Optional[int] = None,
          moe_dispatcher: Optional[str] = None,
          offload_activations: Optional[int] = None, recompute: Optional[str] = None, zero: Optional[int] = None,
          fsdp: bool = False, param_gather_exposed: bool = False, capture: bool = False, network: Optional[str] = None, options: Optional[dict] = None,
          price_per_gpu_hour: Optional[float] = None, grid_gco2_per_kwh: Optional[float] = None,
          train_tokens: Union[str, float, None] = None, mtbf_gpu_hours: Optional[float] = None,
          checkpoint_s: Optional[float] = None, restart_s: Optional[float] = None, html: Optional[str] = None,
          **builder_options):
    """One training step on many devices (``ironlaw analyze SPEC --phase train --gpus N --tp … --pp …``): a
    :class:`~ironlaw.models.training.Training` (``time_s``, ``mfu``, ``breakdown``, ``memory``, ``plan``, the
    step's ``energy`` …; with ``train_tokens``, the whole ``run``); ``html``: also write its report (the step's
    timeline) to that file."""
    from .models import training

    given = dict(locals())
    cost = _run_inputs(given, "train")
    from .report import pages
    pages.check(html)
    opts = {**_parallel(given), **_builder("train", spec, options, builder_options), **_capture(spec, capture)}
    step = training.train(spec, _device(on, network), seq, dtype, _composition(serial), opts, cost)
    if html:
        pages.train_step(html, step)
    return step


@_front_door
def compare(spec: str, on="h100", *, what_if: Union[str, Sequence[str]] = (), vs_hardware: Optional[str] = None,
            batch=1, seq=None, phase: Optional[str] = None, dtype: Optional[str] = None, serial: bool = False,
            options: Optional[dict] = None, **builder_options):
    """``ironlaw compare``: before and after a what-if (``"quant=int8,target=weights"``, ``"fusion=elementwise"``
    …) or on other hardware; a :class:`~ironlaw.models.whatif.compare.Comparison`."""
    from .core.errors import IronlawError
    from .models import analysis
    from .models.whatif.compare import compare as run

    opts = _builder("compare", spec, options, builder_options)
    steps = _strings(what_if)
    if not steps and not vs_hardware:
        from .models.whatif import names
        raise IronlawError("compare needs --what-if \"…\" or --vs-hardware HW (transforms: "
                           + ", ".join(names()) + ")")
    if vs_hardware is not None:
        from .models.whatif import parse
        if any(st.transform.name == "hardware" for text in steps for st in parse(text)):
            raise IronlawError(f"--vs-hardware {vs_hardware} and the what-if hardware= both name the 'after' device; "
                               f"give one of them")
    before = analysis.predict(spec, _device(on), batch, seq, phase, dtype, _composition(serial), opts)
    return run(before, steps, vs_hardware)


@_front_door
def sweep(spec: str, on: Union[str, Sequence[str]] = "h100", *, batch: Union[str, Sequence[int]] = "1,2,4,...,1024",
          seq: Union[str, Sequence[int], None] = None, phase: Optional[str] = None, dtype: Optional[str] = None,
          what_if: Union[str, Sequence[str]] = (), serial: bool = False, plot: Optional[str] = None,
          price_per_gpu_hour: Optional[float] = None, grid_gco2_per_kwh: Optional[float] = None):
    """``ironlaw sweep``: batch (× seq) on one or more devices (``on="h100,b200"`` or a list); a
    :class:`~ironlaw.models.sweep.Sweep` with time, throughput, bottleneck and ridge points."""
    from .core.errors import IronlawError
    from .models import sweep as sw

    names = [h.strip() for h in on.split(",")] if isinstance(_check_on(on, many=True), str) else list(on)
    if not all(names):
        raise IronlawError(f"--on '{on}': empty hardware name in the list")
    if plot:
        from .core.files import check_plot
        check_plot(plot, (".png", ".svg", ".pdf"))              # fail before the sweep
    res = sw.run(spec, names, _grid(batch), _grid(seq), phase, dtype, _strings(what_if), _composition(serial),
                 usd_per_device_hour=price_per_gpu_hour, gco2_per_kwh=grid_gco2_per_kwh)
    if plot:
        from .report.sweep import save
        save(res, plot)
    return res


@_front_door
def serve(spec: str, on="h100", *, prompt: int = 1024, output: int = 256, concurrency: int = 1,
          dtype: Optional[str] = None, kv_dtype: Optional[str] = None, page_tokens: Optional[int] = None,
          max_seq: Optional[int] = None, chunk: Optional[int] = None, tp: int = 1, serial: bool = False,
          max_throughput: bool = False, ep: int = 1, attention_dp: bool = False, pp: int = 1,
          kv_fraction: float = 0.95, max_batch: Optional[int] = None, max_num_tokens: Optional[int] = None,
          requests: Optional[int] = None, expert_imbalance: float = 1.0, speculative: Optional[str] = None,
          prefix_hit: Optional[float] = None, disaggregate: Optional[str] = None, slo: Optional[str] = None,
          sweep_concurrency: bool = False, plot: Optional[str] = None, price_per_gpu_hour: Optional[float] = None,
          grid_gco2_per_kwh: Optional[float] = None, html: Optional[str] = None, engine: str = "trtllm",
          release: Optional[str] = None, moe_routing: Optional[str] = None):
    """``ironlaw serve``: a :class:`~ironlaw.models.serving.features.options.Serving` (TTFT, ITL, tokens/s, KV
    capacity and every feature asked for; on a GPU every step priced by the serving engine's step model, as
    ``max_throughput`` prices its own, elsewhere on the device's calibration: ``.estimate.step_model`` says which);
    with ``max_throughput=True`` the offline scenario's
    :class:`~ironlaw.models.serving.frameworks.EngineThroughput`; with ``sweep_concurrency=True`` a
    :class:`~ironlaw.models.serving.features.options.Frontier`. ``html``: also write its report to that file (the
    steps, their rooflines, the concurrency frontier). ``engine``: the serving framework, trtllm (default),
    vllm or sglang — its kernels and its scheduler's defaults (``ironlaw.models.serving.frameworks``).
    ``release``: the framework release whose kernels price the steps (TensorRT-LLM "1.0", the published perf
    overview's; default the catalog's, 1.3.0rc20; ``ironlaw.machine.engines.RELEASES``). ``moe_routing``
    (max-throughput): the router's load on the busiest expert rank, per step (``ironlaw.core.routing``: balanced,
    power_law_<alpha>; default uniform rows, times ``expert_imbalance``)."""
    from .core.errors import IronlawError
    from .machine.engines import check_engine, check_release
    from .models.serving import frameworks, online
    from .models.serving.features import options as feat
    from .report import pages

    pages.check(html)
    check_engine(engine)
    check_release(engine, release)
    _check_on(on)
    _scenario_options(dict(locals()))
    if max_throughput:
        from .models.serving.features import energy
        energy.check(price_per_gpu_hour, grid_gco2_per_kwh)
        kw = dict(tp=tp, pp=pp, ep=ep, attention_dp=attention_dp, dtype=dtype, kv_dtype=kv_dtype,
                  kv_fraction=kv_fraction, max_batch=max_batch, max_num_tokens=max_num_tokens, requests=requests,
                  expert_imbalance=expert_imbalance, routing=moe_routing)
        est = energy.with_energy(frameworks.max_throughput(spec, on, prompt, output, engine, kw, 0.95, release),
                                 price_per_gpu_hour, grid_gco2_per_kwh)
        if html:
            pages.serve_offline(html, est, kw)
        return est
    feats = feat.checked(speculative, prefix_hit, disaggregate, slo, sweep_concurrency, plot, price_per_gpu_hour,
                          grid_gco2_per_kwh)
    kw = dict(dtype=dtype, kv_dtype=kv_dtype, page_tokens=page_tokens, max_seq=max_seq, chunk=chunk, tp=tp,
              composition=_composition(serial))
    eng = frameworks.select(engine, on, tp, release=release)
    if eng.scheduler is not None:
        kw.update(frameworks.online_kwargs(eng, concurrency, chunk))
    elif eng.release is not None:
        kw.update(frameworks.release_kwargs(eng))
    own = eng.scheduler is not None or eng.release is not None
    est = online.estimate(spec, eng.hw if own else on, prompt, output, concurrency, **kw)
    if sweep_concurrency:
        res = feat.frontier(est, kw, feats)
        if own:                                   # the default's frontier stays the report page's document
            res.doc["engine"] = eng.to_dict(offline=False)
        if plot:
            from .report.frontier import save
            save(res.to_dict(), plot)
        if html:
            pages.serve_online(html, est, kw, feats, frontier=res)
        return res
    res = feat.run(est, kw, feats)
    res.engine = eng
    if html:
        pages.serve_online(html, est, kw, feats, serving=res)
    return res


@_front_door
def search(spec: str, *, phase: str = "train", on="h100", gpus: int = 8, nodes: Optional[int] = None,
           global_batch: Optional[int] = None, seq: Optional[int] = None, dtype: Optional[str] = None, top: int = 5,
           tp: Optional[int] = None, pp: Optional[int] = None, cp: Optional[int] = None, dp: Optional[int] = None,
           ep: Optional[int] = None, micro_batch: Optional[int] = None, interleave: Optional[int] = None,
           recompute: Optional[str] = None, zero: Optional[int] = None, sequence_parallel: Optional[bool] = None,
           tp_comm_overlap: Optional[bool] = None, overlap_p2p: Optional[bool] = None,
           grad_fp32: Optional[bool] = None, moe_a2a_overlap: Optional[bool] = None,
           expert_imbalance: Optional[float] = None, moe_dispatcher: Optional[str] = None,
           prompt: Optional[int] = None, output: Optional[int] = None,
           slo: Optional[str] = None, serve_engine: str = "trtllm", engine: str = "local",
           workers: Optional[int] = None,
           address: Optional[str] = None, quiet: bool = True, rank: str = "tokens-per-gpu",
           prices: Union[str, dict, None] = None, price_per_gpu_hour: Optional[float] = None,
           grid_gco2_per_kwh: Optional[float] = None, train_tokens: Union[str, float, None] = None,
           mtbf_gpu_hours: Optional[float] = None, checkpoint_s: Optional[float] = None,
           restart_s: Optional[float] = None, html: Optional[str] = None):
    """``ironlaw search``: every valid layout that fits, predicted and ranked by tokens/s per GPU; a
    :class:`~ironlaw.models.search.SearchResult`. A layout option given fixes it; ``quiet=False`` shows progress.
    Each reported layout carries its ``energy`` and, training with ``train_tokens``, its whole ``run``.
    Serving: ``on="h100,h200,b200"`` (or a list) searches several devices in one ranking; ``rank`` is
    ``"tokens-per-gpu"`` or ``"usd-per-million-tokens"``; ``prices`` (``"h100=2.5,b200=5"`` or a dict, USD per
    GPU-hour) or, for one device, ``price_per_gpu_hour`` override the sourced defaults. ``html``: also write its report to that file (the ranked
    layouts, why the best wins). ``moe_dispatcher`` (training): ``"alltoall"`` (default) or ``"flex"``, priced on
    the layouts with EP > 1 as ``analyze`` prices it. An option of the other phase is refused (training:
    ``global_batch`` 1024, ``seq`` 4096 and the overlap, gradient and expert options; serving: ``prompt`` 1024,
    ``output`` 256, ``slo``, ``rank``, ``prices``, ``serve_engine``; None takes the default named).
    ``serve_engine`` (serving): the framework whose kernels and scheduler limits price every layout, ``"trtllm"`` (default), ``"vllm"`` or ``"sglang"``, as ``serve(engine=…)``;
    ``engine`` is where the search runs: ``"local"``, ``"pool"`` or ``"ray"``."""
    from .core.errors import IronlawError, unknown

    cost = _run_inputs(dict(locals()), phase)
    from .report import pages
    pages.check(html)
    _check_on(on, many=phase == "serve")

    fixed = dict(tp=tp, pp=pp, cp=cp, dp=dp, ep=ep, micro_batch=micro_batch, interleave=interleave,
                 recompute=recompute, zero=zero, sequence_parallel=sequence_parallel)
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 1000:
        raise IronlawError(f"--top must be between 1 and 1000, got {top!r}")
    from .machine.engines import ENGINES
    if engine in ENGINES:
        raise IronlawError(f"--engine {engine}: search's --engine is where the search runs (local | pool | ray); "
                           f"the serving framework is --serve-engine {engine} (with --phase serve)")
    given = dict(locals())
    if phase == "train":
        _other_phase(given, SEARCH_SERVE, "serving search (--phase serve)")
        if isinstance(on, (list, tuple)) or (isinstance(on, str) and "," in on):
            raise IronlawError(f"--on {on}: the training search takes one device; several are searched in one "
                               f"ranking with --phase serve")
        from .models.search import train as run
        d = {k: v if given[k] is None else given[k] for k, v in SEARCH_TRAIN.items()}
        settings = {k: d[k] for k in ("tp_comm_overlap", "overlap_p2p", "grad_fp32", "expert_imbalance",
                                      "moe_a2a_overlap")}
        res = run.search(spec, on, gpus, d["global_batch"], d["seq"], dtype, nodes, top, fixed, engine, workers,
                         address, quiet=quiet, settings={**settings, "moe_dispatcher": moe_dispatcher}, cost=cost)
    elif phase == "serve":
        if engine != "local" or workers or address:
            raise IronlawError("--engine/--workers/--address: the serving search runs in one process")
        _other_phase(given, SEARCH_TRAIN, "training search (--phase train)")
        prompt, output = (1024 if prompt is None else prompt), (256 if output is None else output)
        from .models.search import serve as run
        res = run.search(spec, on, gpus, prompt, output, slo, dtype, top, fixed, quiet=quiet, rank=rank,
                         prices=prices, price_per_gpu_hour=price_per_gpu_hour, cost=cost, engine=serve_engine)
    else:
        raise unknown("search phase", phase, ("train", "serve"))
    if html:
        pages.search(html, res)
    return res


@_front_door
def probe(*, out: Optional[str] = None, quick: bool = False, threads: Optional[int] = None, max_cv: float = 0.15,
          rounds: int = 1, references: bool = True, strict: bool = False, progress=None):
    """``ironlaw probe``: micro-benchmark this machine, time the reference models (with ``references``), fit the
    calibration on them and save the profile (``out``, else a new file that ``on="local"`` reads); a
    :class:`Probe`. A probe that fails its checks (a row that stays noisy, a lost core, a threefold drift) is saved
    marked with them (``Probe.unsteady``), every prediction on it carrying the wider range; ``strict`` refuses it
    and saves nothing. ``progress(done, total, label)`` is called as it goes (the CLI's bar)."""
    from .machine import profile
    from .measure import probe as probe_mod
    from .measure.calibrate import build, selfcal

    rows = probe_mod.run(quick=quick, threads=threads, max_cv=max_cv, progress=progress, rounds=rounds,
                         refuse=strict)
    # selfcal fits the rows and the reference runs together, so the rows' own fit is skipped then
    doc = build.profile(rows, calibrate_fit=not references)
    if references:
        doc = selfcal.calibrate(doc, quick, progress=progress)
    return Probe(str(profile.save(doc, out)), doc, strict)


@_front_door
def validate(spec: str, *, batch: int = 1, seq: Optional[int] = None, phase: Optional[str] = None, on: str = "local",
             repeats: int = 5, warmup: int = 2, threads: Optional[int] = None, out: Optional[str] = None):
    """``ironlaw validate``: run the model here (torch), predict it with the profile ``on``; a
    :class:`Validation` of measured against predicted, per op and end to end. ``out`` also writes the document."""
    from .measure import validate as v

    if out is not None:
        from .core.files import check_output
        check_output(out, "--out", (".json",))                # fail before the (long) run
    res = Validation(v.run(spec, batch=batch, seq=seq, phase=phase, on=on, repeats=repeats, warmup=warmup,
                           threads=threads))
    if out:
        _write_json(out, res.to_dict())
    return res


@_front_door
def fit(runs: Union[str, Sequence[str]], *, hold_out: Union[str, Sequence[str], None] = None, on: str = "local",
        stat: str = "median", save: bool = False):
    """``ironlaw fit``: fit the profile's [calibration] from ``ironlaw validate --out`` documents, score the fitted
    and the held-out runs apart; a :class:`Fit`. ``save`` writes the calibration into the probe profile."""
    from .core.errors import IronlawError
    from .machine import calibration, hardware
    from .measure import validate as v
    from .measure.calibrate import fit as fitter
    from .report.inputs import read_json

    if stat not in v.STATS:
        raise IronlawError(f"--stat must be one of {', '.join(v.STATS)}, got '{stat}'")
    hw = hardware.get(on)

    def load(paths):
        return [c for p in _strings(paths or [], "runs") for c in v.cases_of(read_json(p, "validate"), p)]
    fitted, held = load(runs), load(hold_out)
    cal = fitter.fit(hw, fitted, held_out=held, stat=stat)
    hw_cal = calibration.with_calibration(hw, cal)
    saved = None
    if save:
        if "probe" not in hw.extra:
            raise IronlawError(f"--save: {hw.path} is not a probe profile (no [probe] table); calibrate a profile "
                               "written by `ironlaw probe` (--on local)")
        saved = str(fitter.save(hw.path, cal))
    return Fit(hw.name, cal, saved, fitter.score(hw_cal, fitted, stat), fitter.score(hw_cal, held, stat))


@dataclass
class Probe:
    """``ironlaw probe``'s result: the profile written (the catalog's format, with its [probe] rows and fitted
    [calibration]) and where."""
    path: str
    profile: dict
    strict: bool = False

    @property
    def unsteady(self) -> list[str]:
        """The checks the probe failed and was saved past (``checks.refused``); [] for a steady machine."""
        return list(self.profile["probe"].get("checks", {}).get("refused", []))

    def to_dict(self) -> dict:
        return {"schema": "ironlaw.probe-result/1", "path": self.path, "strict": self.strict,
                "unsteady": self.unsteady, "profile": self.profile}


@dataclass
class Validation:
    """``ironlaw validate``'s document (schema ironlaw.validate/1): the case, the machine, per-op and total
    measured and predicted times, their spread and the score."""
    doc: dict

    @property
    def measured_s(self) -> float:
        return self.doc["total"]["measured_s"]

    @property
    def predicted_s(self) -> float:
        return self.doc["total"]["predicted_s"]

    @property
    def error(self) -> float:
        return self.doc["total"]["error"]

    def to_dict(self) -> dict:
        return self.doc


@dataclass
class Fit:
    """``ironlaw fit``'s result: the fitted [calibration] table, where it was saved, and each run scored (fitted
    and held out) against it."""
    hardware: str
    calibration: dict
    saved: Optional[str]
    fitted: list = field(default_factory=list)
    held_out: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"schema": "ironlaw.fit/1", "hardware": self.hardware, "calibration": self.calibration,
                "saved": self.saved, **{g: [{k: v for k, v in r.items() if k != "doc"} for r in rows]
                                         for g, rows in (("fitted", self.fitted), ("held_out", self.held_out))}}


# ---------------------------------------------------------------- shared readings of the options
# search: each phase's own options and their defaults (an option left None is not given)
SEARCH_TRAIN = {"global_batch": 1024, "seq": 4096, "tp_comm_overlap": True, "overlap_p2p": True, "grad_fp32": False,
                "moe_a2a_overlap": False, "expert_imbalance": 1.0, "moe_dispatcher": None, "nodes": None,
                "micro_batch": None, "interleave": None, "recompute": None, "zero": None,
                "sequence_parallel": None}
SEARCH_SERVE = {"prompt": 1024, "output": 256, "slo": None, "rank": "tokens-per-gpu", "prices": None,
                "serve_engine": "trtllm"}


def _other_phase(given: dict, options: dict, belongs: str) -> None:
    """One line for a search option of the other phase (it would be ignored)."""
    from .core.errors import IronlawError
    for k, default in options.items():
        v = given[k]
        if v is not None and not (k in ("rank", "serve_engine") and v == default):
            flag = {"prices": "--price"}.get(k, "--" + k.replace("_", "-"))
            raise IronlawError(f"{flag} belongs to the {belongs}")


def _scenario_options(g: dict) -> None:
    """``serve``: an option of the offline scenario without ``max_throughput``, or one of the online scenario with
    it, is refused in one line (it would be ignored)."""
    from .core.errors import IronlawError
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
    for flag, used in (("--ep", g["ep"] != 1), ("--attention-dp", g["attention_dp"]), ("--pp", g["pp"] != 1),
                       ("--max-batch", g["max_batch"] is not None), ("--max-num-tokens", g["max_num_tokens"] is not None),
                       ("--requests", g["requests"] is not None), ("--expert-imbalance", g["expert_imbalance"] != 1.0),
                       ("--moe-routing", g["moe_routing"] is not None), ("--kv-fraction", g["kv_fraction"] != 0.95)):
        if used:
            raise IronlawError(f"{flag} belongs to the offline scenario: add --max-throughput")


def _parallel(given: dict) -> dict:
    """The parallel options given (None and False are not given), in the CLI's order; the plan calls
    ``--offload-activations`` ``offload_layers``."""
    out = {k: given[k] for k in PARALLEL if k in given and given[k] is not None and given[k] is not False}
    return {("offload_layers" if k == "offload_activations" else k): v for k, v in out.items()}


def _capture(spec, capture: bool) -> dict:
    """``{"capture": True}`` for an hf: spec asked to be captured; --capture on any other spec is refused (it would
    be ignored: built-in names are built analytically, py: modules always captured)."""
    if not capture:
        return {}
    if not (isinstance(spec, str) and spec.strip().startswith("hf:")):
        from .core.errors import IronlawError
        raise IronlawError(f"--capture applies to hf: specs (a Hugging Face config captured through transformers "
                           f"and torch); {spec} is not one")
    return {"capture": True}


def _builder(fn: str, spec: str, options: Optional[dict], named: dict) -> dict:
    """The builder options: ``options`` and the named keywords, these checked against the builder's own."""
    opts = dict(options or {})
    if named:
        from .models import workloads
        accepted = workloads.builder_options(spec)
        bad = sorted(set(named) - set(accepted))
        if bad:
            takes = ", ".join(accepted) if accepted else "none"
            from .core.errors import UnknownOption
            raise UnknownOption(f"{fn}() got an unexpected keyword argument '{bad[0]}' (the builder options of "
                                f"{spec}: {takes})")
        opts.update(named)
    return opts


def _run_inputs(given: dict, phase: Optional[str]):
    """The run's price, grid, tokens and interruption options (``run_cost.RunInputs``), checked before any work;
    None when none is given (every consumer reads None as no input, so one device's analysis skips the import)."""
    names = ("train_tokens", "price_per_gpu_hour", "grid_gco2_per_kwh", "mtbf_gpu_hours", "checkpoint_s", "restart_s")
    if all(given.get(k) is None for k in names):
        return None
    from .models.run_cost import RunInputs
    return RunInputs.of_flags(given.get("train_tokens"), given.get("price_per_gpu_hour"),
                              given.get("grid_gco2_per_kwh"), given.get("mtbf_gpu_hours"), given.get("checkpoint_s"),
                              given.get("restart_s"), phase)


def _check_on(on, many: bool = False):
    """``on`` as given, refused in one line unless it is a hardware name, a .toml file, a Hardware or (``many``) a
    list of them."""
    from .core.errors import IronlawError
    from .machine.hardware import Hardware
    ok = isinstance(on, (str, Hardware)) or (many and isinstance(on, (list, tuple)) and len(on) > 0
                                               and all(isinstance(h, (str, Hardware)) for h in on))
    if not ok:
        lists = " (or a list of them)" if many else ""
        raise IronlawError(f"on= takes a hardware name, a .toml file or a Hardware{lists}, got {on!r}")
    return on


def _device(on, network: Optional[str] = None):
    """The hardware ``on`` names (or is), its collectives on the network calibration ``network`` when given."""
    from .machine import hardware
    hw = hardware.get(on) if isinstance(_check_on(on), str) else on
    if network is not None:
        from .machine.network.calibration import with_network
        hw = with_network(hw, network)
    return hw


def _composition(serial: bool) -> str:
    return "serial" if serial else "overlap"


def _strings(v, what: str = "--what-if") -> list[str]:
    """One text or a list of texts (what-if steps, file paths); anything else is one line."""
    if isinstance(v, str):
        return [v]
    if isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
        return list(v)
    from .core.errors import IronlawError
    raise IronlawError(f"{what} takes a text or a list of texts, got {v!r}")


def _write_json(path: str, doc: dict) -> None:
    """Atomic (see ironlaw.core.files); the folder must exist."""
    import json

    from .core.files import check_output, write_atomic
    write_atomic(check_output(path, "--out"), json.dumps(doc, indent=1, allow_nan=False), "--out")


def _grid(v):
    """A batch or seq grid: the CLI's text (``1,2,4,...,1024``), one int, or a sequence of ints."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    if not hasattr(v, "__iter__"):
        from .core.errors import IronlawError
        raise IronlawError(f"a batch or seq grid is a text such as '1,2,4,...,1024', a whole number or a list of "
                           f"them, got {v!r}")
    return ",".join(str(x) for x in v)
