"""The training step of many layouts at once: ``parallel.train_step``'s formulas as numpy array math.

``parallel.train_step`` builds and predicts a graph per layout (tens of milliseconds). A search groups the
layouts by what changes the per-device graph — (tp, sequence parallel, cp, ep) — and for each group:

1. resolves the model ONCE with every micro-batch of the group as an array axis, splits it into pipeline
   stages with ``parallel._stage_ops`` (pp = 1, and pp = 2 for the first and last stage) for each recompute
   mode, shards it with ``parallel.tp_shard`` and predicts each op's time per invocation with ``law.predict``
   (an op's time does not depend on how often it runs nor on its neighbours);
2. evaluates the rest — pp, dp, micro-batch, interleave, recompute, ZeRO — per layout as array math over
   those per-op times: a stage's micro-batch is (layers per stage) × Σ layer ops + the stage's other ops;
   the bubble, send/recv, ZeRO gathers and the optimizer follow ``train_step``'s formulas; the gradient
   reduction's exposed part replays ``critical_path``'s schedule of the slowest stage (the gradient
   collective of each layer on the network stream, tensor-parallel collectives waiting for it) as a
   vectorised recurrence over the repeated layer block.

The arithmetic is the same as ``train_step``'s, in a different order: the two agree to floating-point
rounding (tests/test_search.py checks ≤ 1e-9 relative on random layouts and the top of the ranking). One
case differs from the graph path and is flagged instead of approximated: a layout whose whole per-device
footprint fits in half the last cache level (``law.resident_limit_bytes``: toy models) would have its ops
read from cache; such rows come back with ``exact`` set and are predicted with ``train_step`` itself.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .. import law, parallel
from ..graph import Graph, dtype_bytes
from ..network.collectives import collective_time
from .space import RECOMPUTE


@dataclass
class Context:
    """What every group of one search shares (plain data: it travels to worker processes)."""
    spec: str
    hw: object
    gpus: int
    nodes: int
    global_batch: int
    seq: int
    dtype: str | None
    composition: str = "overlap"

    @property
    def gpus_per_node(self) -> int:
        return self.gpus // self.nodes


@dataclass
class StageTable:
    """One stage's ops (sharded) with their per-invocation times over the group's micro-batches."""
    t: np.ndarray               # (n_ops, n_mb) seconds per invocation
    count: np.ndarray           # (n_ops,) invocations in the list as built
    layer: np.ndarray           # (n_ops,) bool: repeated once per layer of the stage
    segs: list                  # the repeated block holding the gradient sync: ('c'|'n'|'G', op indices)
    tail: list                  # ('c'|'n', op indices) after that block, once
    layer_grads: np.ndarray     # (n_mb,) gradient bytes of one layer (the per-layer reduction)
    other_grads: np.ndarray     # (n_mb,) gradient bytes outside the layers (the last reduction)
    all_grads_one: np.ndarray   # (n_mb,) every backward op's gradients once (a stage of one layer)

    def per_layer(self) -> np.ndarray:
        """(n_mb,) one layer's ops, once."""
        return self.t[self.layer].sum(axis=0)

    def rest(self) -> np.ndarray:
        """(n_mb,) the stage's ops outside the layers (embedding; final norm, head and loss)."""
        return (self.t[~self.layer] * self.count[~self.layer, None]).sum(axis=0)


def _graph(ctx: Context, mbs: np.ndarray) -> Graph:
    from .. import workloads
    return workloads.resolve(workloads.Request(ctx.spec, phase="train", batch=mbs.astype(float), seq=ctx.seq,
                                               dtype=ctx.dtype, device="cuda" if ctx.hw.kind == "gpu" else "cpu"))


def _segments(ops, idx) -> list:
    """Consecutive non-collective ops merged into one compute segment; each collective its own."""
    out: list = []
    for i in idx:
        if ops[i][0]:
            out.append(("n", [i]))
        elif out and out[-1][0] == "c":
            out[-1][1].append(i)
        else:
            out.append(("c", [i]))
    return out


def _shard(g: Graph, ops: list, key: tuple, ctx: Context) -> Graph:
    tp, sp, _cp, ep = key
    G = ctx.gpus_per_node
    sg = Graph(g.name, "train", g.dtype, ops, meta=dict(g.meta), uncounted_ops=dict(g.uncounted_ops))
    return parallel.tp_shard(sg, tp, bool(sp), parallel.group(1, tp, G), ep, parallel.group(tp, ep, G))


def _occurrences(ops) -> list[tuple[str, int]]:
    """(name, how many ops of that name came before): the same op in every stage list built from one model."""
    seen: dict[str, int] = {}
    out = []
    for op in ops:
        out.append((op.name, seen.get(op.name, 0)))
        seen[op.name] = seen.get(op.name, 0) + 1
    return out


@dataclass
class Predicted:
    """Per-invocation time of every op of the model on one stage with full recomputation: a superset of the
    ops of every stage list and recompute mode of the group, predicted in ONE ``law.predict`` call."""
    index: dict
    t: np.ndarray               # (n_ops, n_mb)
    collective: np.ndarray      # (n_ops,) bool: runs on the network stream (critical_path's rule)
    grads: np.ndarray           # (n_ops, n_mb) gradient bytes each op writes (an embedding's grow with tokens)


def predicted(g: Graph, key: tuple, ctx: Context) -> Predicted:
    sg = _shard(g, parallel._stage_ops(g, parallel.Plan(recompute="full"))[0][0], key, ctx)
    # any footprint that fits device memory and not the cache places every class in device memory, as the
    # fitting layouts of train_step do (the rows that would sit in cache are re-predicted exactly)
    sg.footprint = {"weights": ctx.hw.memory[ctx.hw.device_tier].capacity_bytes}
    est = law.predict(sg, ctx.hw, ctx.composition)
    n = len(sg.ops)
    net = np.asarray(est.network_s).reshape(n, -1)
    coll = np.array([op.kind == "collective" or bool(np.any(net[i] > 0)) for i, op in enumerate(sg.ops)])
    index = {k: i for i, k in enumerate(_occurrences(sg.ops))}
    t = np.asarray(est.op_time_s, dtype=float).reshape(n, -1)
    grads = np.zeros(t.shape)
    for i, op in enumerate(sg.ops):
        if "gradients" in op.bytes:
            grads[i] = op.bytes["gradients"]
    return Predicted(index, t, coll, grads)


def _table(sg: Graph, ref: Predicted, keep: np.ndarray) -> StageTable:
    """The ops of ``sg`` (one stage with the whole model, sharded) that ``keep`` selects, in order."""
    idx = np.array([ref.index[k] for k in _occurrences(sg.ops)])[keep]
    ops = [op for op, k in zip(sg.ops, keep) if k]
    t, n = ref.t[idx], len(ops)
    count = np.array([op.count for op in ops], dtype=float)
    layer = count == sg.meta["layers"]
    bwd = np.array([op.name.endswith(".backward") for op in ops])
    coll = [(bool(ref.collective[i]),) for i in idx]
    grads = ref.grads[idx]
    lb = np.nonzero(layer & bwd)[0]
    segs, tail = [], []
    if lb.size:
        pos = int(lb.max())
        a, b = pos, pos + 1
        while a > 0 and layer[a - 1]:
            a -= 1
        while b < n and layer[b]:
            b += 1
        segs = _segments(coll, range(a, pos + 1)) + [("G", [])] + _segments(coll, range(pos + 1, b))
        tail = _segments(coll, range(b, n))
    return StageTable(t, count, layer, segs, tail, grads[layer & bwd].sum(axis=0),
                      (grads * count[:, None])[~layer & bwd].sum(axis=0), grads[bwd].sum(axis=0))


def tables(g: Graph, key: tuple, rc: str, ctx: Context, need_pp: bool, ref: Predicted) -> dict[str, StageTable]:
    """'P' (the whole model on one stage) and, when pipelines are searched, 'F'/'L' (first/last stage).

    ``parallel._stage_ops`` puts the layers and the embedding on the first stage and the layers and the rest
    on the last, the recomputed forward right before each stage's first backward op: in both cases that is
    the one-stage list without the other stage's ops, in the same order — so the stage lists are masks over
    the one-stage list (layer ops then run L/pp times instead of L)."""
    sg = _shard(g, parallel._stage_ops(g, parallel.Plan(recompute=rc))[0][0], key, ctx)
    every = np.ones(len(sg.ops), dtype=bool)
    out = {"P": _table(sg, ref, every)}
    if need_pp:
        L = sg.meta["layers"]
        layer = np.array([op.count == L for op in sg.ops])
        first = np.array([parallel._base(op.name) in parallel.FIRST_STAGE for op in sg.ops])
        out["F"] = _table(sg, ref, layer | first)
        out["L"] = _table(sg, ref, layer | ~first)
    return out


def memory(g: Graph, c: dict, mbi: np.ndarray, sp: bool) -> dict[str, np.ndarray]:
    """``parallel._memory`` per row: weights, gradients, optimizer state and activations per device."""
    meta, by = g.meta, dtype_bytes(g.dtype)
    params = float(meta["params"])
    expert = 0.0
    if meta.get("experts"):
        e, k = meta["experts"], meta.get("experts_per_token", 1)
        expert = (params - float(meta.get("active_params", params))) * e / max(e - k, 1)
    tp, pp, dp, ep, v, zero = (c[k].astype(float) for k in ("tp", "pp", "dp", "ep", "interleave", "zero"))
    p_dev = (params - expert) / (tp * pp) + expert / (tp * pp * ep)
    n_mb = int(mbi.max()) + 1
    act = np.broadcast_to(np.asarray(g.footprint.get("activations", 0.0), dtype=float), (n_mb,))[mbi]
    a = parallel.ACT_SPLIT_FRACTION
    tp_factor = 1.0 / tp if sp else (1 - a) + a / tp
    inflight = 1.0 + np.where(v > 1, (pp - 1) / (pp * v), 0.0)
    L = meta["layers"]
    tokens = np.broadcast_to(np.asarray(meta["tokens"], dtype=float), (n_mb,))[mbi]
    inputs = L * tokens * meta["hidden"] * by
    full = inputs * ((1.0 / tp) if sp else 1.0) * inflight + act / L * tp_factor
    act_dev = np.where(c["recompute"] == RECOMPUTE.index("full"), full, act * tp_factor * inflight)
    return {"weights": p_dev * by / np.where(zero >= 3, dp, 1.0),
            "gradients": p_dev * by / np.where(zero >= 2, dp, 1.0),
            "optimizer": 12.0 * p_dev / np.where(zero >= 1, dp, 1.0),
            "activations": act_dev, "params_per_device": p_dev}


def _coll(ctx: Context, kind: str, nbytes: np.ndarray, grp: tuple) -> np.ndarray:
    a, b = collective_time(kind, nbytes, parallel._topology(ctx.hw, grp))
    return a + b


def _by_degree(values: np.ndarray, fn) -> np.ndarray:
    """fn(degree, mask) → array for the rows of each distinct degree, assembled in row order."""
    out = np.zeros(values.shape)
    for d in np.unique(values):
        m = values == d
        out[m] = fn(int(d), m)
    return out


def _exposed(tab: StageTable, layers: int, t_ops: np.ndarray, g: np.ndarray, g_rest: np.ndarray,
             has_rest: np.ndarray) -> np.ndarray:
    """``_replay``'s result in closed form (no loop over layers) for the usual block: collectives only
    before the gradient sync in the layer block, none after the block. With C one layer's ops, p the
    compute after the sync in the block, T the ops after the block:
      a tensor-parallel collective in the block: each of the layers−1 syncs but the last delays the next
        layer's first collective by max(0, g − compute before it); the last sync ends g − p − T after the
        compute does;
      none: the syncs queue on the network stream, issued one layer apart; the last ends at
        max(C − p + layers·g, layers·C − p + g)."""
    d = {i: t_ops[idx].sum(axis=0) for i, (k, idx) in enumerate(tab.segs) if k != "G"}
    gpos = next(i for i, (k, _) in enumerate(tab.segs) if k == "G")
    C = sum(d.values())
    p = sum((d[i] for i in d if i > gpos), 0.0)
    T = sum((t_ops[idx].sum(axis=0) for _, idx in tab.tail), 0.0)
    rest = np.where(has_rest, g_rest, 0.0)
    first_n = next((i for i, (k, _) in enumerate(tab.segs) if k == "n"), None)
    if first_n is not None:
        c_pre = p + sum((d[i] for i in range(first_n)), 0.0)
        delay = (layers - 1) * np.maximum(g - c_pre, 0.0)
        return delay + np.where(has_rest, np.maximum(g - p - T, 0.0) + rest, np.maximum(g - p - T, 0.0))
    tc_end = layers * C + T
    tn = np.maximum(C - p + layers * g, layers * C - p + g)
    end = np.where(has_rest, np.maximum(tc_end, tn) + rest, np.maximum(tc_end, tn))
    return np.maximum(end - tc_end, 0.0)


def _closed_form(tab: StageTable) -> bool:
    """Whether ``_exposed`` applies: no collective after the sync in the block nor after the block."""
    gpos = next(i for i, (k, _) in enumerate(tab.segs) if k == "G")
    return all(k == "c" for k, _ in tab.segs[gpos + 1:]) and all(k == "c" for k, _ in tab.tail)


def _replay(tab: StageTable, layers: int, t_mb_ops: np.ndarray, g_layer: np.ndarray,
            g_rest: np.ndarray, has_rest: np.ndarray) -> np.ndarray:
    """Exposed seconds of the gradient reduction: ``critical_path``'s schedule of the stage from the start of
    its repeated layer block (everything before it is blocking and ends with both streams idle).

    ``t_mb_ops`` (n_ops, n_rows): each op's time for each row; ``g_layer``/``g_rest``: one per-layer and the
    final reduction per row. Compute ops advance the compute stream; a (tensor-parallel) collective starts
    when both streams are free and holds both; a gradient collective starts when both are free and holds only
    the network stream."""
    if not tab.segs:
        return np.zeros(t_mb_ops.shape[1])
    dur = [(k, t_mb_ops[idx].sum(axis=0) if idx else None) for k, idx in tab.segs]
    tail = [(k, t_mb_ops[idx].sum(axis=0)) for k, idx in tab.tail]
    tc = np.zeros(t_mb_ops.shape[1])
    tn = tc.copy()
    for _ in range(layers):
        for k, d in dur:
            if k == "c":
                tc = tc + d
            elif k == "n":
                tc = np.maximum(tc, tn) + d
                tn = tc
            else:
                tn = np.maximum(tc, tn) + g_layer
    for k, d in tail:
        if k == "c":
            tc = tc + d
        else:
            tc = np.maximum(tc, tn) + d
            tn = tc
    tn = np.where(has_rest, np.maximum(tc, tn) + g_rest, tn)
    no_grads = layers * sum(d for k, d in dur if d is not None) + sum((d for _, d in tail), 0.0)
    return np.maximum(np.maximum(tc, tn) - no_grads, 0.0)


def _stage_times(tabs: dict, c: dict, mbi: np.ndarray, L: int):
    """(t_mb, stage) per row: one micro-batch on the slowest stage — 'P' when pp = 1, else the slower of the
    first ('F') and last ('L') stage, the first on a tie (as ``max`` picks in train_step)."""
    pp = c["pp"]
    t_mb = (L * tabs["P"].per_layer() + tabs["P"].rest())[mbi]
    stage = np.full(pp.shape, "P", dtype="<U1")
    many = pp > 1
    if np.any(many):
        R, i = (L // pp[many]).astype(float), mbi[many]
        tf = R * tabs["F"].per_layer()[i] + tabs["F"].rest()[i]
        tl = R * tabs["L"].per_layer()[i] + tabs["L"].rest()[i]
        t_mb[many] = np.maximum(tf, tl)
        stage[many] = np.where(tf >= tl, "F", "L")
    return t_mb, stage


def _dp_coll(ctx: Context, c: dict, kind: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """α+β of each row's gradient collective over its data-parallel group (stride tp, size dp); 0 for dp = 1."""
    tp, G = int(c["tp"][0]), ctx.gpus_per_node
    out = np.zeros(nbytes.shape)
    for d in np.unique(c["dp"]):
        if d == 1:
            continue
        grp = parallel.group(tp, int(d), G)
        for k in np.unique(kind):
            m = (c["dp"] == d) & (kind == k)
            if np.any(m):
                out[m] = _coll(ctx, str(k), nbytes[m], grp)
    return out


def _grad_exposed(ctx: Context, tabs: dict, c: dict, mbi, stage, L: int) -> np.ndarray:
    """Exposed data-parallel gradient reduction per row (0 where dp = 1); ``tabs[recompute][stage]``."""
    kind = np.where(c["zero"] < 2, "allreduce", "reducescatter")
    lay, rest, one = np.zeros(mbi.shape), np.zeros(mbi.shape), np.zeros(mbi.shape)
    for r, by_stage in tabs.items():
        for s, tab in by_stage.items():
            m = (stage == s) & (c["recompute"] == r)
            lay[m], rest[m], one[m] = tab.layer_grads[mbi[m]], tab.other_grads[mbi[m]], tab.all_grads_one[mbi[m]]
    g_layer, g_rest = _dp_coll(ctx, c, kind, lay), _dp_coll(ctx, c, kind, rest)
    # one layer per stage: the reduction of all the stage's gradients is its last op, all of it exposed
    out = np.where(L // c["pp"] == 1, _dp_coll(ctx, c, kind, one), 0.0)
    for r, by_stage in tabs.items():
        for s, tab in by_stage.items():
            sel = (stage == s) & (c["recompute"] == r) & (c["dp"] > 1)
            for pp in np.unique(c["pp"][sel]):
                rows = np.nonzero(sel & (c["pp"] == pp))[0]
                if L // int(pp) == 1:
                    continue
                if not tab.segs:
                    continue
                fn = _exposed if _closed_form(tab) else _replay
                out[rows] = fn(tab, L // int(pp), tab.t[:, mbi[rows]], g_layer[rows], g_rest[rows], rest[rows] > 0)
    return out


def _p2p(ctx: Context, c: dict, tokens: np.ndarray, hidden: int, by: float, sp: bool) -> np.ndarray:
    """Stage-to-stage send/recv per step (``train_step``'s pipeline_p2p_s)."""
    tp, G = int(c["tp"][0]), ctx.gpus_per_node
    full = tokens * hidden * by

    def per_dp(d: int, m: np.ndarray) -> np.ndarray:
        grp = parallel.group(tp * d, 2, G)
        if ctx.nodes > 1 and grp[1] == 1:
            grp = (2, 2, min(tp * d, G))
        t = _coll(ctx, "sendrecv", full[m] / tp, grp)
        if tp > 1 and not sp:
            t = t + _coll(ctx, "allgather", full[m], parallel.group(1, tp, G))
        return t
    out = np.zeros(tokens.shape)
    many = c["pp"] > 1
    if np.any(many):
        out[many] = _by_degree(c["dp"][many], lambda d, m: per_dp(d, np.nonzero(many)[0][m]))
    return out


def _zero_gathers(ctx: Context, c: dict, grad_bytes, t_mb, m) -> np.ndarray:
    """ZeRO-2's gather of the updated shards; ZeRO-3's parameter gathers, prefetched (train_step's rule)."""
    tp, G, out = int(c["tp"][0]), ctx.gpus_per_node, np.zeros(t_mb.shape)
    for z in (2, 3):
        rows = np.nonzero((c["zero"] == z) & (c["dp"] > 1))[0]
        if rows.size == 0:
            continue
        kind = "reducescatter"
        for d in np.unique(c["dp"][rows]):
            r = rows[c["dp"][rows] == d]
            grp = parallel.group(tp, int(d), G)
            ag = _coll(ctx, "allgather", grad_bytes[r], grp)
            if z == 2:
                out[r] = ag
            else:
                bucket = _coll(ctx, kind, np.minimum(parallel.GRAD_BUCKET_BYTES, grad_bytes[r]), grp)
                out[r] = 2.0 * m[r] * np.maximum(ag - t_mb[r], np.minimum(bucket, ag))
    return out


def _optimizer(ctx: Context, g: Graph, opt_params: np.ndarray) -> np.ndarray:
    """The optimizer step per row: one ``law.predict`` over the distinct shard sizes (AdamW is linear in them)."""
    from ..workloads.common import optimizer_step
    if not any(op.name.split(".")[0] == "optimizer" for op in g.ops):
        return np.zeros(opt_params.shape)
    u, inv = np.unique(opt_params, return_inverse=True)
    one = optimizer_step(1.0, g.dtype)
    op = replace(one, flops=one.flops * u, bytes={k: v * u for k, v in one.bytes.items()},
                 bytes_written=one.bytes_written * u)
    og = Graph("optimizer", "train", g.dtype, [op], footprint={"optimizer": 12.0 * u})
    return np.asarray(law.predict(og, ctx.hw, ctx.composition).total_s, dtype=float).reshape(-1)[inv.reshape(-1)]


def evaluate(ctx: Context, key: tuple, c: dict) -> dict[str, np.ndarray]:
    """Step time, memory and throughput of the rows ``c`` (columns of ``space``) that share ``key``
    (tp, sequence_parallel, cp, ep). Rows that do not fit memory come back with their memory and fits=False
    (their time is computed too, and ignored)."""
    from ..law import resident_limit_bytes
    mbs, mbi = np.unique(c["micro_batch"], return_inverse=True)
    mbi = mbi.reshape(-1)
    g = _graph(ctx, mbs)
    meta, by, L = g.meta, dtype_bytes(g.dtype), int(g.meta["layers"])
    sp = bool(key[1])
    mem = memory(g, c, mbi, sp)
    need = mem["weights"] + mem["gradients"] + mem["optimizer"] + mem["activations"]
    cap = ctx.hw.memory[ctx.hw.device_tier].capacity_bytes
    limit = resident_limit_bytes(ctx.hw)
    t_mb = np.zeros(need.shape)
    stage = np.full(need.shape, "P", dtype="<U1")
    ref = predicted(g, key, ctx)
    tabs = {}
    for r in np.unique(c["recompute"]):
        rows = np.nonzero(c["recompute"] == r)[0]
        sub = {k: v[rows] for k, v in c.items()}
        tabs[r] = tables(g, key, RECOMPUTE[int(r)], ctx, bool(np.any(sub["pp"] > 1)), ref)
        t_mb[rows], stage[rows] = _stage_times(tabs[r], sub, mbi[rows], L)
    exposed = _grad_exposed(ctx, tabs, c, mbi, stage, L)
    tokens_mb = np.broadcast_to(np.asarray(meta["tokens"], dtype=float), mbs.shape)[mbi]
    m = ctx.global_batch // (c["micro_batch"] * c["dp"])
    v, pp = c["interleave"].astype(float), c["pp"].astype(float)
    bubble = (pp - 1) / v * t_mb
    p2p = 2.0 * v * m * _p2p(ctx, c, tokens_mb, meta["hidden"], by, sp)
    grad_bytes = mem["params_per_device"] * by
    zero_s = _zero_gathers(ctx, c, grad_bytes, t_mb, m)
    opt_params = mem["params_per_device"] / np.where(c["zero"] >= 1, c["dp"], 1)
    opt_s = _optimizer(ctx, g, opt_params)
    step = m * t_mb + bubble + p2p + exposed + zero_s + opt_s
    model_flops = np.broadcast_to(np.asarray(meta["model_flops"], dtype=float), mbs.shape)[mbi] * m * c["dp"]
    tokens = tokens_mb * m * c["dp"]
    return {"time_s": step, "memory_per_gpu_bytes": need, "fits": need <= cap,
            "tokens_per_s_per_gpu": tokens / (step * ctx.gpus),
            "mfu": model_flops / (step * ctx.hw.peak(g.dtype) * ctx.gpus),
            "exact": (need <= limit) if limit is not None else np.zeros(need.shape, dtype=bool),
            "microbatch_s": t_mb, "pipeline_bubble_s": bubble, "pipeline_p2p_s": p2p, "dp_grad_exposed_s": exposed,
            "zero_param_gather_s": zero_s, "optimizer_s": opt_s}
