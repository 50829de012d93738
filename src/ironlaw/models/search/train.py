"""``ironlaw search MODEL --phase train``: the fastest layouts of a training run, ranked by tokens/s per GPU.

Every valid layout (``space``) is evaluated by the fast path (``fast``: ``parallel.train_step``'s formulas as
array math, per group of layouts that share a per-device graph) on the chosen engine (``engines``); the best
``top`` are predicted again with ``parallel.train_step`` itself, and those numbers — step time, MFU, what binds,
memory — are the ones reported. The two must agree (``AGREE_REL``): a disagreement is a bug, never a result.
"""
from __future__ import annotations

import time

import numpy as np

from ...core.errors import IronlawError
from ...machine.hardware import UNIT_NAMES
from .. import dispatcher, workloads
from ..parallel import recompute
from . import engines, fast, space

AGREE_REL = 1e-6         # fast path vs train_step on the reported rows; the same arithmetic, reordered
MAX_EXACT = 512          # rows the fast path leaves to train_step (footprints that would sit in cache)


SETTINGS = {"tp_comm_overlap": True, "overlap_p2p": True, "grad_fp32": False, "expert_imbalance": 1.0,
            "moe_a2a_overlap": False, "moe_dispatcher": dispatcher.DEFAULT, "cuda_graph": (), "fp8_attention": False,
            "offload_layers": 0, "param_gather_exposed": False, "recompute_layers": None, "recompute_method": None,
            "redundant_experts": 0}
# the step options of ``analyze`` the search applies to every layout, under ``settings``' names
STEP_SETTINGS = ("cuda_graph", "fp8_attention", "offload_layers", "param_gather_exposed")


def graph(spec: str, hw, seq: int, dtype: str | None, micro_batch=1, options: dict | None = None):
    """The training graph train_step takes (``--dtype fp8|mxfp8``: built in bf16, its GEMMs lowered; ``options``:
    the build's, LoRA's and the builder's)."""
    ctx = fast.Context(spec, hw, 1, 1, 1, seq, dtype, graph_options=dict(options or {}))
    return fast.training_graph(ctx, np.asarray(micro_batch, dtype=float))


def training_model(spec: str, hw, seq: int, dtype: str | None, options: dict | None = None):
    try:
        g = graph(spec, hw, seq, dtype, options=options)
    except IronlawError:
        _check_transformer(spec, workloads.resolve(workloads.Request(spec)).meta)   # the reason, not --seq's
        raise
    if g.phase != "train":
        raise IronlawError(f"{spec}: has no training phase to search")
    _check_transformer(spec, g.meta)
    return g


def _check_transformer(spec: str, meta: dict) -> None:
    """A layout search splits a transformer's layers and heads; another model (a CNN, a kernel) is refused as
    such, before the search's own --seq or --phase train is held against it."""
    if "layers" not in meta or "heads" not in meta or "hidden" not in meta or meta["layers"] < 2:
        raise IronlawError(f"{spec}: a layout search needs a transformer built by ironlaw (layers and heads "
                           f"known); use `ironlaw analyze --phase train --dp N` for other models")


def plan_options(row: dict, gpus: int, nodes: int, global_batch: int, settings: dict) -> dict:
    """A candidate as ``parallel.make_plan`` options (the CLI's own names). The settings apply where they can:
    TP communication overlap with sequence parallelism, overlapped stage sends with interleaving, the token
    dispatcher with expert parallelism (``fast.dispatcher_of``)."""
    sp, v = row["sequence_parallel"], row["interleave"]
    return {"gpus": gpus, "nodes": nodes, "global_batch": global_batch, "tp": row["tp"], "pp": row["pp"],
            "cp": row["cp"], "dp": row["dp"], "ep": row["ep"], "micro_batch": row["micro_batch"], "interleave": v,
            "recompute": row["recompute"], "recompute_layers": row.get("recompute_layers"),
            "recompute_method": settings["recompute_method"] if row.get("recompute_layers") else None,
            "zero": row["zero"], "sequence_parallel": sp,
            "tp_comm_overlap": bool(settings["tp_comm_overlap"] and sp),
            "overlap_p2p": bool(settings["overlap_p2p"] and v > 1), "grad_fp32": bool(settings["grad_fp32"]),
            "expert_imbalance": settings["expert_imbalance"] if row["ep"] > 1 else 1.0,
            "moe_a2a_overlap": bool(settings["moe_a2a_overlap"] and row["ep"] > 1),
            "moe_dispatcher": fast.dispatcher_of(settings, row["ep"]), "cuda_graph": settings["cuda_graph"],
            "fp8_attention": bool(settings["fp8_attention"]), "offload_layers": settings["offload_layers"],
            "param_gather_exposed": bool(settings["param_gather_exposed"] and row["zero"] == 1),
            "redundant_experts": settings["redundant_experts"] if row["ep"] > 1 else 0}


def check_step_settings(settings: dict, g, hw, fixed: dict) -> dict:
    """``settings`` with the step options ``analyze`` takes (``STEP_SETTINGS``) checked by the functions that check
    them there, before any layout is priced: ``--cuda-graph`` (``parallel.graph_scopes``, read as a tuple),
    ``--fp8-attention`` (``fp8_attention.lower``: the device's FP8 attention classes, the model's attention),
    ``--offload-activations`` (``offload.check`` against the layers of a stage of the largest pipeline the search
    may pick, ``offload.host_tier``), ``--param-gather-exposed`` (the distributed optimizer's: ZeRO-1 layouts,
    so not with another ZeRO stage fixed). Each applies where it can: FP8 attention and CUDA graphs to every
    layout, the offload to the layouts whose stages hold N layers, the exposed gather to the ZeRO-1 layouts."""
    from .. import fp8_attention, offload, parallel
    from ..parallel.plan import check_param_gather
    out = dict(settings, cuda_graph=parallel.graph_scopes(settings["cuda_graph"] or (), g))
    if out["fp8_attention"]:
        fp8_attention.lower(g, hw, 1)
    if out["offload_layers"]:
        offload.check(out["offload_layers"], g.meta["layers"] / fixed.get("pp", 1))
        offload.host_tier(hw)
    check_param_gather(bool(out["param_gather_exposed"]), fixed.get("zero"))
    check_recompute_layers(out, g, fixed)
    return out


def check_recompute_layers(settings: dict, g, fixed: dict) -> None:
    """``--recompute-layers N`` and ``--recompute-method`` as ``recompute.check`` checks them for ``analyze``,
    with ``--recompute full`` fixed: N at most the layers of the largest model chunk a layout may have (the
    fixed pp and interleave's; layouts whose chunks hold fewer are left out). Without N the search chooses it per
    layout (the block method), so a method alone is refused as there."""
    n = settings["recompute_layers"]
    if n is not None and fixed.get("recompute") is None:
        raise IronlawError(f"--recompute-layers {n} fixes how many layers full recomputation re-runs; add "
                           f"--recompute full (without --recompute-layers the search chooses them per layout)")
    recompute.check({"recompute_layers": n, "recompute_method": settings["recompute_method"]},
                    fixed.get("recompute") or "none", g, fixed.get("pp", 1), fixed.get("interleave", 1))


def _check_chunks(n: int | None, c: dict, L: int) -> None:
    """``--recompute-layers N`` that no candidate's model chunk holds (the degrees fixed leave only pipelines too
    deep for it): one line naming the most, not a search that finds nothing to fit."""
    if n is None:
        return
    most = int(np.max(np.ceil(L / (c["pp"] * c["interleave"]))))
    if n > most:
        raise IronlawError(f"--recompute-layers {n} is more than the {most} layers of the largest model chunk of "
                           f"any layout these options leave; use at most {most}")


def step_notes(settings: dict, g, hw, composition: str) -> list[str]:
    """One line for each step option that prices every layout (none for the defaults): the LoRA adapters
    (``lora.note``), FP8 attention, CUDA graphs (on a device naming no host CPU: that they change nothing,
    ``no_host_note``), the activation offload, the exposed parameter gather, serial composition."""
    from ...machine.hostcpu import of
    from ..parallel.step import no_host_note
    out = []
    if "lora_rank" in g.meta:
        from ..lora import note
        out.append(note(g.meta))
    if settings["fp8_attention"]:
        out.append("attention in FP8 on every layout (--fp8-attention, Transformer Engine's fp8_dpa), at the "
                   f"speedup of {hw.name}'s FP8 context attention kernels at each micro-batch")
    if settings["cuda_graph"]:
        parts = ",".join(settings["cuda_graph"])
        out.append(f"CUDA graphs on every layout: {parts} (--cuda-graph)" if of(hw) is not None else
                   no_host_note(hw.name, settings["cuda_graph"]))
    if settings["offload_layers"]:
        out.append(f"activations of {settings['offload_layers']} layers per stage offloaded to host memory "
                   f"(--offload-activations) on every layout; layouts whose stages hold fewer layers are left out")
    if settings["param_gather_exposed"]:
        out.append("the distributed optimizer's parameter all-gather after the step on the ZeRO-1 layouts "
                   "(--param-gather-exposed)")
    if settings["recompute_layers"] is not None:
        out.append(f"full recomputation of {settings['recompute_layers']} layers per model chunk "
                   f"({settings['recompute_method'] or 'block'}, --recompute-layers) on every layout; layouts whose "
                   f"chunks hold fewer layers are left out")
    if settings["redundant_experts"]:
        out.append(f"{settings['redundant_experts']} redundant expert slots (EPLB's replicas of hot experts, "
                   f"--redundant-experts) over the EP group of every layout with EP > 1: ep divides the "
                   f"{g.meta['experts']} + {settings['redundant_experts']} slots")
    if composition == "serial":
        out.append("data, compute and latency composed serially (--serial)")
    return out


def check_dispatcher(settings: dict, spec: str, experts: int, fixed_ep: int | None) -> None:
    """``--moe-dispatcher``: a name ``dispatcher.check`` knows; flex applies to the layouts with EP > 1, so it is
    refused only where no layout has any: EP fixed to 1, or a model without experts."""
    name = settings["moe_dispatcher"]
    dispatcher.check(name, 2 if fixed_ep is None else fixed_ep)
    if name != dispatcher.DEFAULT and not experts:
        raise IronlawError(f"--moe-dispatcher {name} exchanges the routed tokens of MoE layers; {spec} has no experts")


def check_expert_settings(settings: dict, spec: str, experts: int) -> None:
    """``--expert-imbalance`` and ``--moe-a2a-overlap`` shape the routed experts; on a model without any, no
    layout reads them, so they are refused as ``analyze`` and ``serve`` refuse them."""
    given = [flag for flag, on in (("--expert-imbalance", settings["expert_imbalance"] != 1.0),
                                   ("--moe-a2a-overlap", bool(settings["moe_a2a_overlap"]))) if on]
    if given and not experts:
        raise IronlawError(f"{given[0]} shapes the routed experts of MoE layers; {spec} has no experts")


def row_of(c: dict, i: int) -> dict:
    """Candidate ``i`` of the columns ``c``; with the fast path's ``recompute_layers`` column, the layers of each
    chunk its full recomputation re-runs (None without full recomputation)."""
    r = {k: int(c[k][i]) for k in space.COLUMNS}
    r["recompute"] = space.RECOMPUTE[r["recompute"]]
    r["sequence_parallel"] = bool(r["sequence_parallel"])
    if "recompute_layers" in c:
        r["recompute_layers"] = int(c["recompute_layers"][i]) if r["recompute"] == "full" else None
    return r


def exact(ctx: fast.Context, row: dict, graphs: dict):
    """``parallel.train_step`` of one candidate (graphs cached by micro-batch)."""
    from .. import parallel
    mb = row["micro_batch"]
    if mb not in graphs:
        graphs[mb] = fast.training_graph(ctx, np.asarray(mb, dtype=float))
    g = graphs[mb]
    plan = parallel.make_plan(plan_options(row, ctx.gpus, ctx.nodes, ctx.global_batch, {**SETTINGS, **ctx.settings}),
                              g, ctx.hw)
    return parallel.train_step(g, ctx.catalog, plan, ctx.composition)


def _tasks(c: dict) -> tuple[list, list]:
    """One task per graph group: each resolves and predicts its graph once and is vectorised inside."""
    tasks, rows = [], []
    for key, idx in space.groups(c):
        tasks.append((key, {k: v[idx] for k, v in c.items()}))
        rows.append(idx)
    return tasks, rows


def evaluate_all(ctx: fast.Context, c: dict, engine: str = "local", workers: int | None = None,
                 address: str | None = None, quiet: bool = True) -> dict[str, np.ndarray]:
    """The fast path over every candidate on ``engine``; columns in candidate order. The layers each row's full
    recomputation re-runs, which the fast path chooses, join ``c`` as its column ``recompute_layers``
    (``row_of``)."""
    from ...core import progress
    tasks, rows = _tasks(c)
    n = len(c["tp"])
    with progress.task(f"evaluating {n:,} layouts", total=n, quiet=quiet) as step:
        results = engines.run(ctx, tasks, engine, workers, address, step)
    out = engines.assemble(n, rows, results)
    c["recompute_layers"] = out["recompute_layers"]
    return out


def _fill_exact(ctx: fast.Context, c: dict, res: dict, graphs: dict) -> None:
    """Rows flagged ``exact`` (footprint small enough to sit in cache) predicted by train_step itself."""
    idx = np.nonzero(res["exact"] & res["fits"])[0]
    if idx.size > MAX_EXACT:
        raise IronlawError(f"{idx.size} layouts of this model fit in the last cache level; a layout search "
                           f"is for models that need many devices — fix some degrees (e.g. --tp 1 --pp 1)")
    for i in idx:
        st = exact(ctx, row_of(c, int(i)), graphs)
        res["time_s"][i] = st.step_s
        res["tokens_per_s_per_gpu"][i] = st.flops.tokens_per_step / (st.step_s * ctx.gpus)
        res["mfu"][i] = st.mfu


def nothing_fits(ctx: fast.Context, c: dict, res: dict) -> IronlawError:
    """The refusal where no candidate of ``c`` fits: the smallest footprint, every degree it spreads over."""
    from ...core.units import fmt_size
    cap = ctx.hw.memory[ctx.hw.device_tier].capacity_bytes
    i = int(np.argmin(res["memory_per_gpu_bytes"]))
    r = row_of(c, i)
    need = float(res["memory_per_gpu_bytes"][i])
    degrees = ", ".join(f"{k} {r[k]}" for k in ("tp", "pp", "cp", "ep", "dp") if k in ("tp", "pp", "dp") or r[k] > 1)
    return IronlawError(                  # every degree the layout spreads over, their product the GPUs
        f"no layout of {ctx.spec} fits on {ctx.gpus} × {ctx.hw.name}: the smallest footprint ({degrees}, "
        f"micro-batch {r['micro_batch']}, recompute {r['recompute']}, ZeRO {r['zero']}) "
        f"needs {fmt_size(need)} per GPU, {fmt_size(need - cap)} more than its {fmt_size(cap)}; "
        f"use more GPUs or a smaller --seq")


def _entry(rank: int, row: dict, st, ctx: fast.Context, L: int) -> dict:
    """A reported layout: its columns, with full recomputation the layers of a model chunk (``chunk_layers``,
    the most ``recompute_layers`` can be) and the method; train_step's numbers."""
    p = st.plan
    full = row["recompute"] == "full"
    return {"rank": rank, **row, "recompute_method": p.recompute_method if full else None,
            "chunk_layers": recompute.chunk_most(L, p.pp, p.interleave) if full else None,
            "tp_comm_overlap": p.tp_comm_overlap, "overlap_p2p": p.overlap_p2p,
            "moe_dispatcher": p.moe_dispatcher if p.ep > 1 else None,
            **({"redundant_experts": p.redundant_experts} if p.redundant_experts else {}), "time_s": st.step_s,
            "tokens_per_s_per_gpu": st.flops.tokens_per_step / (st.step_s * ctx.gpus), "mfu": st.mfu,
            "bottleneck": dict(st.bottleneck), "memory_per_gpu_bytes": st.memory.total_bytes,
            "breakdown": st.breakdown.to_dict()}


def search(spec: str, on, gpus: int, global_batch: int, seq: int, dtype: str | None = None,
           nodes: int | None = None, top: int = 5, fixed: dict | None = None, engine: str = "local",
           workers: int | None = None, address: str | None = None, quiet: bool = True, settings: dict | None = None,
           cost=None, composition: str = "overlap", options: dict | None = None):
    """Rank every valid training layout of ``spec`` on ``gpus`` devices of ``on`` by tokens/s per GPU.

    ``settings`` (``SETTINGS``, Megatron-Bridge's performance recipes by default): TP communication overlap
    wherever sequence parallelism is on, stage sends overlapped wherever the schedule interleaves, gradients
    kept and reduced in bf16 (the recipes' grad_reduce_in_fp32 = False), the experts' load imbalance (1:
    balanced), the expert all-to-alls beside another micro-batch's compute (off; Qwen3's H100 recipes set
    it: ``moe_a2a_overlap``) and Megatron-Core's token dispatcher (``moe_dispatcher``: alltoall, or flex — HybridEP
    or DeepEP — on the layouts with EP > 1, ``check_dispatcher``); ``analyze``'s step options ``STEP_SETTINGS``
    (``check_step_settings``: CUDA graphs, FP8 attention, the activation offload, the exposed parameter gather).
    ``options``: the model's build (``lora_rank``/``lora_targets``: LoRA adapters, ``ironlaw.models.lora``; the
    builder's own); ``composition``: the law's, "overlap" or "serial". Each reported layout carries its step's
    ``energy`` and, with ``cost.tokens`` (``run_cost.RunInputs``), the whole training ``run``
    (``ironlaw.models.run_cost``)."""
    from ...machine import hardware
    from .. import parallel, run_cost
    from ...machine.network.topology import build as build_topology, check_count, nodes_for
    from . import SearchResult
    hw = hardware.get(on) if isinstance(on, str) else on
    gpus = check_count(gpus, "--gpus")
    global_batch, seq = check_count(global_batch, "--global-batch"), check_count(seq, "--seq")
    if not 1 <= top <= 1000:
        raise IronlawError(f"--top must be between 1 and 1000, got {top}")
    engines.check(engine, workers, address)
    nodes = nodes_for(hw, gpus, nodes)
    build_topology(hw, gpus, nodes)                              # devices per node the fabric can join
    g = training_model(spec, hw, seq, dtype, options)
    m = g.meta
    red = parallel.check_redundant_slots((settings or {}).get("redundant_experts") or 0, g)
    sp = space.Space(gpus, global_batch, seq, int(m["layers"]), int(m["heads"]), int(m.get("kv_heads", m["heads"])),
                     int(m.get("experts", 0) or 0), {k: v for k, v in (fixed or {}).items() if v is not None},
                     gpus_per_node=gpus // nodes, redundant=red)
    t0 = time.perf_counter()
    c = space.enumerate_space(sp)
    settings = {**SETTINGS, **{k: v for k, v in (settings or {}).items() if v is not None}}
    unknown_keys = set(settings) - set(SETTINGS)
    if unknown_keys:
        raise IronlawError(f"search: unknown settings {sorted(unknown_keys)}; known: {sorted(SETTINGS)}")
    f = settings["expert_imbalance"]
    if isinstance(f, bool) or not isinstance(f, (int, float)) or not 1.0 <= f <= parallel.MAX_IMBALANCE:
        raise IronlawError(f"--expert-imbalance is the hottest expert's load over the mean, from 1 (balanced) to "
                           f"{parallel.MAX_IMBALANCE:g}; got {f!r}")
    check_dispatcher(settings, spec, int(m.get("experts", 0) or 0), sp.fixed.get("ep"))
    dispatcher.check_device(settings["moe_dispatcher"], hw)
    check_expert_settings(settings, spec, int(m.get("experts", 0) or 0))
    settings = check_step_settings(settings, g, hw, sp.fixed)
    _check_chunks(settings["recompute_layers"], c, int(m["layers"]))
    precision = g.meta.get("precision", g.dtype)
    ctx = fast.Context(spec, hw, gpus, nodes, global_batch, seq, precision, composition, settings,
                       dict(options or {}))
    res = evaluate_all(ctx, c, engine, workers, address, quiet)
    fits = res["fits"]
    if not np.any(fits):
        raise nothing_fits(ctx, c, res)
    graphs: dict = {}
    _fill_exact(ctx, c, res, graphs)
    idx = np.nonzero(fits)[0]
    order = idx[np.lexsort((idx, -res["tokens_per_s_per_gpu"][idx]))]
    search_s = time.perf_counter() - t0
    entries, worst = [], 0.0
    for rank, i in enumerate(order[:top], 1):
        row = row_of(c, int(i))
        st = exact(ctx, row, graphs)
        worst = max(worst, abs(st.step_s - float(res["time_s"][i])) / st.step_s)
        entries.append(_entry(rank, row, st, ctx, int(m["layers"])))
        entries[-1].update(run_cost.of_train_step(st, cost or run_cost.RunInputs()))
    if worst > AGREE_REL:
        raise RuntimeError(f"search: the fast path and train_step disagree by {worst:.2e} (relative) on the "
                           f"top layouts; this is a bug in ironlaw.models.search.fast")
    used = "pool" if engine == "local" and (workers or 1) > 1 else engine
    setup = {"gpus": gpus, "nodes": nodes, "global_batch": global_batch, "seq": seq}
    setup["settings"] = {k: v for k, v in settings.items() if v or k != "redundant_experts"}   # where given
    setup["step_options"] = step_notes(settings, g, hw, composition)
    setup["device_unit"] = UNIT_NAMES[hw.kind]
    return SearchResult("train", spec, hw.name, precision, setup, len(c["tp"]), int(fits.sum()), entries, used,
                        search_s, {"rows": len(entries), "max_rel_diff": worst}, columns=c, results=res)
