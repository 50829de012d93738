"""`ironlaw validate`: run the real model here, measure it end to end and per op, predict it with
this machine's profile, and reconcile the two.

    doc = validate.run("resnet50", batch=1, on="local")      # an ironlaw.validate/1 document
    doc2 = validate.repredict(doc, other_hw)                  # same measurements, another prediction
    doc3 = validate.merge([round1, round2, round3], hw)       # one case measured at several times

Steps: resolve the spec to a runnable model (``models``); capture it on fake tensors (nothing
allocated) — that graph is what the law predicts; refuse if its footprint does not fit this
machine's memory; build it for real with random weights; pin threads; warm up; time end to end and
per op (``measure``); join predicted and measured rows by op key and score them (``compare``).

Document (``SCHEMA``)::

    schema, workload {name, spec, phase, batch, seq, footprint, …},
    hardware {name, path, calibrated, fitted, held_out}, case {threads, repeats, warmup, op_repeats, stat,
           machine {before, after, against} (the machine's speed against the probe rows of the profile
           ``against`` names, ``probe.moment``; null without probe rows; merged rounds: the first's before, the
           last's after, and rounds [{before, after}]), …},
    total {predicted_s, measured_s, spread_s, error, naive_s, naive_error, uncalibrated_s, uncalibrated_error,
           ops_measured_s, views_measured_s, framework_measured_s (end to end − Σ ops), framework_paired_s (the
           same, paired run by run: end-to-end run i minus the ops of recorded run i, median), framework_predicted_s,
           ops, views},
    spread {median_s, p25_s, p75_s, min_s, max_s, cv, spread_s, samples_s}       (end to end)
    by_kind {kind: {ops, predicted_s, measured_s, spread_s, error}}           (+ 'framework')
    ops [{index, name, kind, module, shapes, dtype, count, flops, bytes{class}, predicted_s, data_s, compute_s,
          latency_s, bound, measured_s, median_s, min_s, measured_cv, spread_s, error}]
    score {ops_within_25pct_time_share, ops_within_2x_count_share, n_ops}
The HTML report reads ``total`` and ``by_kind`` (``ironlaw report … --validate FILE``); ``ironlaw.measure.calibrate.fit``
reads the ops. A file may also hold several cases: {"schema": …, "cases": [case documents]}.
"""
from __future__ import annotations

import math
import platform
import statistics
import time

from ...core.errors import IronlawError

SCHEMA = "ironlaw.validate/1"
STATS = ("median", "min")


def run(spec: str, batch: int = 1, seq: int | None = None, phase: str | None = None, on: str = "local",
        repeats: int = 5, warmup: int = 2, threads: int | None = None, op_repeats: int | None = None,
        budget_s: float | None = None, hw=None, stat: str = "median") -> dict:
    from ...machine import hardware
    from ...models.capture.graph import to_graph
    from . import measure, models

    if stat not in STATS:
        raise IronlawError(f"validate: stat must be one of {', '.join(STATS)}, got {stat!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:     # before anything is captured
        raise IronlawError(f"validate: --warmup must be a whole number of runs, 0 or more, got {warmup!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise IronlawError(f"validate: --repeats must be a positive whole number, got {repeats!r}")
    models.check_phase(phase)                          # before the profile: a phase no probe would make valid
    try:
        import torch  # noqa: F401
    except ImportError:
        raise IronlawError("ironlaw validate runs the model in PyTorch; install it with "
                           "`pip install torch==2.13.0`") from None
    t_start = time.perf_counter()
    r = models.resolve(spec, batch, seq, phase)        # before the profile: a model file the user mistyped
    hw = hw or hardware.get(on)
    if hw.kind != "cpu":
        raise IronlawError(f"validate runs the model on this machine's CPU; '{on}' is a {hw.kind} ({hw.name}). "
                           "Use --on local (the newest probe profile) or a CPU profile file")
    cap = r.fake()
    meta = {"batch": r.batch, **r.meta, "spec": spec}
    graph = to_graph(cap, r.name, r.phase, "fp32", meta)
    memory = measure.check_fits(f"{r.name} in {graph.dtype} (as validate runs it)", graph.footprint, hw)
    threads = measure.pin_threads(threads if threads is not None else _profile_threads(hw))
    before = _speed_now(hw)
    step = r.real()
    m = measure.run(step, cap.records, repeats, warmup, op_repeats, budget_s)
    after = _speed_now(hw)

    out_shapes = {rec.index: [list(s) for s in rec.out_shapes] for rec in m["records"]}
    measured = []
    for i in graph.meta["record_index"]:
        s = m["op_s"][i]
        measured.append({"index": i, "median_s": s.median_s, "min_s": s.min_s, "cv": s.cv, "spread_s": s.iqr_s,
                         "out_shapes": out_shapes.get(m["pairs"][i], [])})
    views = {"median_s": m["views"].median_s, "min_s": m["views"].min_s, "gap": m["gap"].to_dict()}
    import torch
    head = {
        "workload": {"name": r.name, "spec": spec, "phase": r.phase, "dtype": "fp32",
                     "footprint": {k: float(v) for k, v in graph.footprint.items()},
                     **{k: v for k, v in meta.items() if _plain(v)}},
        "case": {"threads": threads, "repeats": len(m["e2e"].samples_s), "warmup": warmup,
                 "page_faults_per_run": m["faults"], "page_bytes": measure.page_bytes(),
                 "op_repeats": len(next(iter(m["op_s"].values())).samples_s) if m["op_s"] else 0,
                 "torch": torch.__version__, "host": platform.node(), "memory": memory,
                 "machine": {"before": before, "after": after, "against": hw.path or hw.name}, "wall_s": time.perf_counter() - t_start},
        "uncounted_ops": dict(graph.uncounted_ops),
    }
    return reconcile(graph, hw, m["e2e"].to_dict(), measured, views, head, stat)


def reconcile(graph, hw, spread: dict, measured: list[dict], views: dict, head: dict, stat: str = "median") -> dict:
    """The document: ``graph`` predicted on ``hw`` against the measured end to end and per op."""
    from ...law import law, timerange
    from ...machine.calibration import without_calibration
    from ...law.fresh import fresh_memory_max_s
    from . import compare

    est = law.predict(graph, hw)
    rows = compare.op_rows(est, measured, stat)
    kinds = compare.by_kind(rows)
    e2e = spread["min_s"] if stat == "min" else spread["median_s"]
    ops_measured = sum(r["measured_s"] for r in rows)
    fw_pred = compare.framework_s(hw, est.cols.frontend) * len(graph.ops)
    fw_meas = e2e - ops_measured
    if fw_pred > 0 or fw_meas > 0:
        kinds["framework"] = {"ops": 0, "predicted_s": fw_pred, "measured_s": max(fw_meas, 0.0),
                              "spread_s": spread["spread_s"], "error": fw_pred / fw_meas - 1.0 if fw_meas > 0 else None}
    predicted = float(est.time_s)
    naive = float(compare.naive_times(graph, hw).sum())
    uncal = float(law.predict(graph, without_calibration(hw)).time_s)
    cal = hw.calibration
    faulted, fresh_s = _fresh_memory(head.get("case", {}), hw)
    return {
        "schema": SCHEMA,
        **{k: v for k, v in head.items() if k not in ("case",)},
        "hardware": {"name": hw.name, "path": hw.path, "calibrated": cal is not None, "probed": "probe" in hw.extra,
                     "fitted": list(cal.fitted if cal else []), "held_out": list(cal.held_out if cal else [])},
        "case": {**head.get("case", {}), "stat": stat},
        "total": {"predicted_s": predicted, "predicted_range_s": timerange.time_range(est),
                  "measured_s": e2e, "spread_s": spread["spread_s"],
                  "error": predicted / e2e - 1.0, "naive_s": naive, "naive_error": naive / e2e - 1.0,
                  "uncalibrated_s": uncal, "uncalibrated_error": uncal / e2e - 1.0,
                  "ops_measured_s": ops_measured, "views_measured_s": views.get(f"{stat}_s", 0.0),
                  "framework_measured_s": fw_meas, "framework_predicted_s": fw_pred,
                  "framework_paired_s": (views.get("gap") or {}).get("median_s"),
                  "ops": len(graph.ops), "views": int(graph.meta.get("views", 0)),
                  "faulted_bytes_per_run": faulted, "fresh_memory_s": fresh_s,
                  "fresh_memory_max_s": fresh_memory_max_s(est),
                  "fresh_memory_share": fresh_s / e2e if fresh_s is not None and e2e > 0 else None},
        "spread": spread,
        "by_kind": kinds,
        "ops": rows,
        "score": {"ops_within_25pct_time_share": compare.within_share(rows),
                  "ops_within_2x_count_share": compare.within_2x_count(rows), "n_ops": len(rows)},
    }


def _fresh_memory(case: dict, hw) -> tuple[float | None, float | None]:
    """(bytes faulted in per end-to-end run, their seconds at the profile's measured cost of fresh memory)."""
    from ...law.fresh import cost_s_per_byte
    faults, page = case.get("page_faults_per_run"), case.get("page_bytes")
    if faults is None or page is None:
        return None, None
    faulted = float(faults) * float(page)
    cost = cost_s_per_byte(hw.extra.get("probe") or {})
    return faulted, (faulted * cost if cost is not None else None)


def graph_of(doc: dict):
    """The predicted graph of a validate document, rebuilt from its op rows (for a new prediction)."""
    from ...core.graph import Graph, Op
    from .compare import row_attrs
    w = doc["workload"]
    ops = [Op(r["name"], r["kind"], flops=float(r["flops"]), bytes=dict(r["bytes"]), dtype=r["dtype"],
              count=int(r["count"]), module=r.get("module", ""), shapes=r.get("shapes", ""),
              bytes_written=bytes_written_of(r), attrs=row_attrs(r)) for r in doc["ops"]]
    meta = {k: v for k, v in w.items() if k not in ("footprint",)}
    meta["views"] = doc["total"].get("views", 0)
    return Graph(w["name"], w["phase"], w.get("dtype", "fp32"), ops, footprint=dict(w.get("footprint", {})), meta=meta)


def bytes_written_of(row: dict) -> float:
    """Bytes an op row writes: as its graph op stated them, or for a row saved before rows carried that, what
    its measured out_shapes hold at the row's dtype."""
    from ...core.graph import dtype_bytes
    if "bytes_written" in row:
        return float(row["bytes_written"])
    return float(sum(math.prod(shape) for shape in row.get("out_shapes") or []) * dtype_bytes(row["dtype"]))


def repredict(doc: dict, hw, stat: str | None = None) -> dict:
    """``doc``'s measurements against a new prediction on ``hw`` (e.g. after fitting a calibration)."""
    stat = stat or doc.get("case", {}).get("stat", "median")
    measured = [{"index": r["index"], "median_s": r["median_s"], "min_s": r["min_s"], "cv": r["measured_cv"],
                 "spread_s": r["spread_s"], "out_shapes": r.get("out_shapes", [])} for r in doc["ops"]]
    views = {f"{stat}_s": doc["total"].get("views_measured_s", 0.0)}
    if doc["total"].get("framework_paired_s") is not None:
        views["gap"] = {"median_s": doc["total"]["framework_paired_s"]}
    head = {k: doc[k] for k in ("workload", "case", "uncounted_ops") if k in doc}
    return reconcile(graph_of(doc), hw, doc["spread"], measured, views, head, stat)


def merge(docs: list[dict], hw, stat: str | None = None) -> dict:
    """One case measured in several rounds, at different times, as one document predicted on ``hw``.

    On a shared machine a neighbour's burst hits whatever runs at that moment; measuring every case in
    a few short rounds spreads it over all of them instead of ruining one. End-to-end samples are
    pooled; per op the median of the rounds' medians and the least of their minimums; the page faults
    per run, the median of the rounds'. The rounds must be the same case (same ops, in order).
    """
    from .measure import Spread
    if not docs:
        raise IronlawError("validate: nothing to merge")
    first = docs[0]
    key = [(r["index"], r["name"]) for r in first["ops"]]
    for d in docs[1:]:
        if d["workload"] != first["workload"] or [(r["index"], r["name"]) for r in d["ops"]] != key:
            raise IronlawError("validate: only rounds of the same case (same workload, same ops) can be merged")
    spread = Spread.of([x for d in docs for x in d["spread"]["samples_s"]]).to_dict()
    measured = []
    for i, r in enumerate(first["ops"]):
        rows = [d["ops"][i] for d in docs]
        med = statistics.median(x["median_s"] for x in rows)
        between = Spread.of([x["median_s"] for x in rows]).cv              # rounds disagreeing is spread too
        measured.append({"index": r["index"], "median_s": med, "min_s": min(x["min_s"] for x in rows),
                         "cv": max(statistics.median(x["measured_cv"] for x in rows), between),
                         "spread_s": statistics.median(x["spread_s"] for x in rows), "out_shapes": r.get("out_shapes", [])})
    stat = stat or first.get("case", {}).get("stat", "median")
    views = {f"{stat}_s": statistics.median(d["total"].get("views_measured_s", 0.0) for d in docs)}
    gaps = [d["total"].get("framework_paired_s") for d in docs]
    if all(g is not None for g in gaps):
        views["gap"] = {"median_s": statistics.median(gaps)}
    faults = [d.get("case", {}).get("page_faults_per_run") for d in docs]
    rounds = [d.get("case", {}).get("machine") or {} for d in docs]
    machine = {"before": rounds[0].get("before"), "after": rounds[-1].get("after"),   # the first round's, the last's
               "against": rounds[0].get("against"),
               "rounds": [{"before": m.get("before"), "after": m.get("after")} for m in rounds]}
    case = {**first.get("case", {}), "machine": machine, "repeats": len(spread["samples_s"]), "rounds": len(docs),
            "page_faults_per_run": statistics.median(faults) if all(f is not None for f in faults) else None,
            "wall_s": sum(d.get("case", {}).get("wall_s", 0.0) for d in docs)}
    head = {"case": case, **{k: first[k] for k in ("workload", "uncounted_ops") if k in first}}
    return reconcile(graph_of(first), hw, spread, measured, views, head, stat)


def cases_of(doc: dict, where: str = "validate document") -> list[dict]:
    """The case documents in ``doc`` (one case, or {'cases': […]}), checked for the schema."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise IronlawError(f"{where}: schema must be '{SCHEMA}' (from `ironlaw validate --format json`), "
                           f"got {doc.get('schema') if isinstance(doc, dict) else type(doc).__name__!r}")
    cases = doc["cases"] if "cases" in doc else [doc]
    for i, c in enumerate(cases):
        for key in ("workload", "total", "spread", "ops"):
            if not isinstance(c, dict) or key not in c:
                raise IronlawError(f"{where}: case {i} has no '{key}'; not a validate case document")
    return cases


def _speed_now(hw) -> dict | None:
    """The machine's speed now against the profile's probe rows (``probe.moment``); None without them."""
    from ..probe.moment import speed_now
    return speed_now(hw.extra["probe"]) if isinstance(hw.extra.get("probe"), dict) else None


def _profile_threads(hw) -> int | None:
    t = (hw.extra.get("probe") or {}).get("threads")
    return int(t) if isinstance(t, int) and not isinstance(t, bool) and t > 0 else None


def _plain(v) -> bool:
    return isinstance(v, (str, int, float, bool)) or (isinstance(v, list) and all(isinstance(x, str) for x in v))


__all__ = ["run", "reconcile", "repredict", "merge", "graph_of", "cases_of", "SCHEMA", "STATS"]
