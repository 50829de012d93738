"""The critical path of one step over three streams: compute, memory copy (prefetch), network.

The law composes each op on its own (``max(data, compute) + latency``) and sums the ops in
program order. This module schedules the same ops on a DAG with separate streams, so that work
of one op can hide behind *another* op — and only where it really does:

- compute   the device's kernel stream: each op runs in program order for
            ``max(local data + copy not yet done, compute) + latency`` (serial: the sum), where
            "local data" is traffic served by caches and device memory.
- memory    the copy engine: traffic of data that lives beyond device memory (spilled weights,
            embedding tables on the host, …) is a copy task. Without prefetch it is issued when its
            op starts (and then the op's time equals the law's exactly); with ``prefetch_depth=k``
            it may be issued when the op k places earlier starts. Copies queue on one stream, so
            prefetch hides copies only behind ops whose compute leaves the link idle.
- network   collectives. Blocking by default (in program order, like the law). With
            ``overlap_comm``, the gradient collectives of a training step (those after the first
            backward op, or ``attrs['grad_sync']``) run asynchronously on the network stream from the
            moment their producer finishes; only the optimizer step (ops touching optimizer state)
            and the end of the step wait for them.

Ops with ``count`` > 1 are expanded: a run of consecutive ops sharing a count is one repeated
block (a layer), repeated in order, so prefetch of layer l+1 overlaps layer l. With no prefetch
and no overlapped collectives, the critical path equals ``Estimate.total_s`` (tested).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .efficiency import composed, floored
from ..core import passes
from ..core.errors import IronlawError
from ..core.units import fmt_time

STREAMS = ("compute", "memory", "network")
# the streams as the text names them: the "compute" stream runs every kernel, whatever binds it (a bandwidth-bound
# op is on it too), so the text does not call it compute beside a bandwidth bottleneck
STREAM_TEXT = {"compute": "kernel stream", "memory": "copy engine", "network": "network"}
MAX_NODES = 2_000_000


@dataclass
class Task:
    """One op invocation, with its per-invocation terms split by where the work happens."""
    name: str
    local_s: float = 0.0        # data from caches and device memory
    spill_s: float = 0.0        # data from tiers beyond device memory (a copy)
    compute_s: float = 0.0
    latency_s: float = 0.0
    network_s: float = 0.0
    collective: bool = False
    grad_sync: bool = False     # a gradient collective (may overlap the backward when overlap_comm)
    waits_for_grads: bool = False   # the optimizer step: waits for every overlapped collective
    repeat: int = 0
    serial: float = 0.0         # share of min(data, compute) not overlapped (a calibrated CPU GEMM)
    epilogue: float = 0.0       # share of the data stored after the compute (a GPU GEMM's epilogue)
    floor_s: float = 0.0        # seconds the call takes at least, its work overlapping them (``efficiency.floored``)
    floor_share: float = 0.0    # share of the shorter of floor and work not overlapped


@dataclass
class Segment:
    op: str
    stream: str
    start_s: float
    end_s: float
    repeat: int = 0


@dataclass
class CriticalPath:
    time_s: float
    law_s: float                      # the law's per-op composition summed in program order
    busy_s: dict[str, float]
    path: list[Segment]
    prefetch_depth: int = 0
    overlap_comm: bool = False
    composition: str = "overlap"
    nodes: int = 0

    @property
    def hidden_s(self) -> float:
        """Work the cross-op schedule hides, relative to the law's op-by-op sum."""
        h = self.law_s - self.time_s
        return 0.0 if abs(h) <= 1e-9 * max(self.law_s, 1e-300) else h

    def on_path_s(self) -> dict[str, float]:
        out = {s: 0.0 for s in STREAMS}
        for seg in self.path:
            out[seg.stream] += seg.end_s - seg.start_s
        return out

    def summary(self, top: int = 10) -> list[dict]:
        """Ops on the path grouped by (op, stream): how often and how many seconds."""
        agg: dict[tuple, dict] = {}
        for seg in self.path:
            a = agg.setdefault((seg.op, seg.stream), {"op": seg.op, "stream": seg.stream, "times": 0, "seconds": 0.0})
            a["times"] += 1
            a["seconds"] += seg.end_s - seg.start_s
        return sorted(agg.values(), key=lambda a: -a["seconds"])[:top]

    def to_dict(self, full_path: bool = True) -> dict:
        d = {"time_s": self.time_s, "law_s": self.law_s, "hidden_s": self.hidden_s,
             "composition": self.composition, "prefetch_depth": self.prefetch_depth,
             "overlap_comm": self.overlap_comm, "nodes": self.nodes, "busy_s": dict(self.busy_s),
             "on_path_s": self.on_path_s(), "summary": self.summary()}
        if full_path:
            d["path"] = [{"op": s.op, "stream": s.stream, "repeat": s.repeat, "start_s": s.start_s,
                          "end_s": s.end_s} for s in self.path]
        return d

    def text(self, top: int = 8) -> str:
        on = self.on_path_s()
        lines = [f"critical path {fmt_time(self.time_s)} (law, op by op: {fmt_time(self.law_s)}; "
                 f"hidden by overlap across ops: {fmt_time(max(self.hidden_s, 0.0))})",
                 "  on the path: " + ", ".join(f"{STREAM_TEXT[s]} {fmt_time(on[s])}" for s in STREAMS if on[s] > 0),
                 "  streams busy: " + ", ".join(f"{STREAM_TEXT.get(s, s)} {fmt_time(v)}"
                                                for s, v in self.busy_s.items() if v > 0)]
        for a in self.summary(top):
            lines.append(f"  {a['op'][:44]:44s} {STREAM_TEXT.get(a['stream'], a['stream']):13s} ×{a['times']:<5d} "
                         f"{fmt_time(a['seconds'])}")
        return "\n".join(lines)


# ---------------------------------------------------------------- from an Estimate
def from_estimate(est, prefetch_depth: int | None = None, overlap_comm: bool | None = None) -> CriticalPath:
    """Schedule the ops of a single-configuration Estimate. Settings default to
    ``graph.meta['schedule']`` (set by the ``prefetch`` and ``overlap-comm`` what-ifs)."""
    if est.cols.cfg_shape != ():
        raise ValueError("critical_path.from_estimate() takes one configuration; index a sweep first")
    sched = est.graph.meta.get("schedule", {})
    depth = sched.get("prefetch_depth", 0) if prefetch_depth is None else prefetch_depth
    overlap = sched.get("overlap_comm", False) if overlap_comm is None else overlap_comm
    tasks = tasks_from_estimate(est)
    cp = schedule(tasks, est.composition, depth, overlap)
    cp.law_s = float(est.total_s)
    return cp


def _blocks(counts: list[int]) -> list[tuple[int, int, int]]:
    """(first, last+1, count) runs of consecutive ops sharing a count."""
    out, i = [], 0
    while i < len(counts):
        j = i + 1
        while j < len(counts) and counts[j] == counts[i] and counts[i] > 1:
            j += 1
        out.append((i, j, counts[i]))
        i = j
    return out


def tasks_from_estimate(est) -> list[Task]:
    g, hw = est.graph, est.hw
    dev = hw.device_tier
    local = est.data_tier_s[:dev + 1].sum(axis=0)
    spill = est.data_tier_s[dev + 1:].sum(axis=0) if dev + 1 < len(hw.memory) else np.zeros_like(local)
    counts = [int(op.count) for op in g.ops]
    if sum(counts) > MAX_NODES:
        raise IronlawError(f"critical path: {sum(counts):,} op invocations is more than {MAX_NODES:,}")
    first_bwd = next((i for i, op in enumerate(g.ops) if passes.is_backward(op.name)), len(g.ops))
    serial = np.asarray(est.terms.serial, float).reshape(len(g.ops), -1)[:, 0]
    epilogue = np.asarray(est.terms.epilogue, float).reshape(len(g.ops), -1)[:, 0]
    floor, share = (np.broadcast_to(np.asarray(x, float).reshape(-1, 1) if np.ndim(x) else float(x),
                                    (len(g.ops), 1))[:, 0] for x in (est.terms.floor_s, est.terms.floor_share))
    proto = []
    for i, op in enumerate(g.ops):
        coll = op.kind == "collective" or float(est.network_s[i]) > 0
        proto.append(Task(op.name, float(local[i]), float(spill[i]), float(est.compute_s[i]),
                          float(est.latency_s[i]), float(est.network_s[i]), coll,
                          grad_sync=coll and (bool(op.attrs.get("grad_sync")) or (g.phase == "train" and i > first_bwd)),
                          waits_for_grads="optimizer" in op.bytes, serial=float(serial[i]),
                          epilogue=float(epilogue[i]), floor_s=float(floor[i]),
                          floor_share=float(share[i])))
    tasks = []
    for a, b, n in _blocks(counts):
        for r in range(n):
            for i in range(a, b):
                t = proto[i]
                tasks.append(Task(**{**t.__dict__, "repeat": r}))
    return tasks


# ---------------------------------------------------------------- the schedule
@dataclass
class _Node:
    task: Task
    stream: str
    start: float
    end: float
    pred: tuple | None               # ('node', index) | ('copy', index) | None
    copy: tuple | None = None        # (start, end, pred) of this op's copy task
    extra: list = field(default_factory=list)


def schedule(tasks: list[Task], composition: str = "overlap", prefetch_depth: int = 0,
             overlap_comm: bool = False) -> CriticalPath:
    if composition not in ("overlap", "serial"):
        raise IronlawError(f"composition must be overlap or serial, got '{composition}'")
    if prefetch_depth < 0:
        raise IronlawError(f"prefetch depth must be >= 0, got {prefetch_depth}")
    nodes: list[_Node] = []
    t_c = t_m = t_n = 0.0
    last_c = last_m = last_n = None          # index of the node that last used each stream
    starts: list[tuple[float, int | None]] = []   # (start, pred of that start) of stream-ordered ops
    pending: list[int] = []
    busy = {s: 0.0 for s in STREAMS}
    law_s = 0.0
    for t in tasks:
        law_s += _op_time(t, t.spill_s + t.local_s, composition)
        idx = len(nodes)
        if t.collective and t.grad_sync and overlap_comm:
            start, pred = t_c, (("node", last_c) if last_c is not None else None)
            if t_n > start:
                start, pred = t_n, ("node", last_n)
            end = start + _op_time(t, t.local_s + t.spill_s, composition)
            nodes.append(_Node(t, "network", start, end, pred))
            busy["network"] += end - start
            t_n, last_n = end, idx
            pending.append(idx)
            continue
        start, pred = t_c, (("node", last_c) if last_c is not None else None)
        if t.waits_for_grads and pending:
            j = max(pending, key=lambda k: nodes[k].end)
            if nodes[j].end > start:
                start, pred = nodes[j].end, ("node", j)
            pending.clear()
        if t.collective and t_n > start:
            start, pred = t_n, ("node", last_n)
        remaining, copy = 0.0, None
        if t.spill_s > 0:
            k = prefetch_depth
            if k == 0 or len(starts) < k:
                issue, issue_pred = (start, pred) if k == 0 else (0.0, None)
            else:
                issue, issue_pred = starts[-k]
            c_start, c_pred = (issue, issue_pred) if issue >= t_m else (t_m, ("copy", last_m))
            c_end = c_start + t.spill_s
            copy = (c_start, c_end, c_pred)
            busy["memory"] += t.spill_s
            t_m, last_m = c_end, idx
            remaining = max(0.0, c_end - start)
        dur = _op_time(t, t.local_s + remaining, composition)
        end = start + dur
        binding_copy = remaining > 0 and (composition == "serial" or t.local_s + remaining >= t.compute_s)
        stream = "network" if t.collective else "compute"
        node = _Node(t, stream, start, end, pred, copy)
        if binding_copy:
            node.pred = ("copy", idx)
        nodes.append(node)
        busy[stream] += dur - (remaining if binding_copy else 0.0)
        starts.append((start, pred))
        t_c, last_c = end, idx
        if t.collective:
            t_n, last_n = end, idx
    end_idx = max(range(len(nodes)), key=lambda k: nodes[k].end) if nodes else None
    path = _walk(nodes, end_idx)
    total = nodes[end_idx].end if nodes else 0.0
    return CriticalPath(time_s=total, law_s=law_s, busy_s=busy, path=path, prefetch_depth=prefetch_depth,
                        overlap_comm=overlap_comm, composition=composition, nodes=len(nodes))


def _op_time(t: Task, data_s: float, composition: str) -> float:
    if composition == "overlap":
        return float(floored(float(composed(data_s, t.compute_s, t.serial, t.epilogue * t.local_s)) + t.latency_s
                             + t.network_s, t.floor_s, t.floor_share))
    return float(floored(data_s + t.compute_s + t.latency_s + t.network_s, t.floor_s, t.floor_share))


def _walk(nodes: list[_Node], idx: int | None) -> list[Segment]:
    out: list[Segment] = []
    ref = ("node", idx) if idx is not None else None
    guard = 0
    while ref is not None and ref[1] is not None:
        guard += 1
        if guard > 4 * len(nodes) + 4:           # pragma: no cover - a cycle would be a bug
            raise RuntimeError("critical path walk did not terminate")
        kind, i = ref
        n = nodes[i]
        if kind == "copy":
            c_start, c_end, c_pred = n.copy
            out.append(Segment(n.task.name, "memory", c_start, c_end, n.task.repeat))
            ref = c_pred
            continue
        start = n.copy[1] if (n.pred == ("copy", i) and n.copy) else n.start   # after the copy it waited on
        out.append(Segment(n.task.name, n.stream, min(start, n.end), n.end, n.task.repeat))
        ref = n.pred
    out.reverse()
    return out
