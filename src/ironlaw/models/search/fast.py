"""The training step of many layouts at once: ``parallel.train_step``'s own formulas evaluated over arrays.

``parallel.train_step`` is the scalar evaluator: it builds and predicts a graph per layout (tens of
milliseconds). This is the batched one. It groups the layouts by what changes the per-device graph — (tp,
sequence parallel, cp, ep) — and for each group:

1. builds the model as train_step runs it (``parallel.training_graph``, ``parallel.lowered``) ONCE with every
   micro-batch of the group as an array axis, shards the whole model on one stage with full recomputation with
   train_step's ``parallel.shard``, and predicts with ONE ``law.predict`` the per-invocation time of every op:
   an op's time depends neither on how often it runs nor on its neighbours;
2. builds each recompute mode's one-stage op list with ``parallel.stage_ops`` and reads the first, middle and
   last pipeline stage as masks of it (``tables``), each op's time looked up in (1);
3. evaluates the rest — pp, dp, micro-batch, interleave, recompute, ZeRO/FSDP — per layout with the same
   functions train_step calls, on arrays (``evaluate``): ``parallel.memory_bytes``, ``stage_layers_of``,
   ``tp_overlap_add``/``tp_overlap_hidden``, ``ep_overlap_hidden``, ``cp_ring_send_s``/``cp_ring_step_exposed``,
   ``fsdp_exposed``, ``microbatch_s``, ``p2p_transfer_s``/``pipeline_p2p_s``, ``bubble_s``, ``optimizer_s``,
   ``step_s``; a stage's micro-batch is (its layers) × Σ layer ops + its other ops. What is its own: the slowest
   stage read from those sums instead of a law.predict per stage, and the data-parallel gradient reduction's
   exposed part, ``critical_path``'s schedule of the slowest stage in closed form (``exposed_closed_form``, checked
   against the layer-by-layer replay ``exposed_replayed``).

The two evaluators agree to floating-point rounding (tests/test_search.py: ≤ 1e-9 relative on random layouts of
dense, MoE, FP8 and context-parallel searches). One case is left to train_step instead of approximated: a
layout whose whole per-device footprint fits in half the last cache level (``law.resident_limit_bytes``: toy
models) has its ops read from cache; such rows come back with ``exact`` set and the search predicts them with
train_step itself.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...law import law
from .. import dispatcher, host, parallel
from ..parallel.recompute import FULL, of_rows
from ..precision import in_layers
from ...core import passes
from ...core.graph import Graph, dtype_bytes
from ...machine.network.collectives import collective_time
from .space import RECOMPUTE

STAGES = ("P", "F", "M", "L")          # pp = 1; first, middle, last stage (codes of ``evaluate``'s stage column)


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
    settings: dict = field(default_factory=dict)   # search.train.SETTINGS
    graph_options: dict = field(default_factory=dict)   # the model's build: LoRA, the builder's options
    catalog: object = None                         # ``hw`` as given (its kernel classes price --fp8-attention)

    def __post_init__(self):
        from ...machine.calibration import for_training
        self.catalog = self.hw if self.catalog is None else self.catalog
        self.hw = for_training(self.hw)           # as parallel.train_step prices a training step

    @property
    def gpus_per_node(self) -> int:
        return self.gpus // self.nodes

    def setting(self, name: str, default):
        return self.settings.get(name, default)


def training_graph(ctx: Context, mbs: np.ndarray) -> Graph:
    """The training graph of one micro-batch (every micro-batch of ``mbs`` on an array axis), as train_step takes
    it (``parallel.training_graph`` with the build's options — LoRA adapters, the builder's —, ``parallel.lowered``)."""
    g = parallel.training_graph(ctx.spec, ctx.hw, ctx.seq, ctx.dtype, ctx.graph_options,
                                micro_batch=mbs.astype(float))
    return parallel.lowered(g, ctx.hw)


def step_graph(ctx: Context, mbs: np.ndarray) -> Graph:
    """``training_graph`` as train_step runs it: with ``fp8_attention`` set, its attention at the FP8 kernels'
    speedup at each micro-batch (``fp8_attention.lower``, on the catalog entry's kernel classes)."""
    g = training_graph(ctx, mbs)
    if ctx.setting("fp8_attention", False):
        from .. import fp8_attention
        g = fp8_attention.lower(g, ctx.catalog, mbs.astype(float))
    return g


def slotted(g: Graph, ctx: Context, ep: int) -> Graph:
    """``g`` as ``parallel.train_step`` prices a layout of EP degree ``ep`` under ``--redundant-experts N``
    (``redundant_experts`` in the settings, on the layouts with ep > 1): its meta's ``expert_slots`` E + N, which
    the sharding, the grouped GEMMs' rows, the host's launches and the memory read; ``g`` itself otherwise."""
    n = ctx.setting("redundant_experts", 0)
    if not n or ep == 1:
        return g
    return Graph(g.name, g.phase, g.dtype, g.ops, footprint=dict(g.footprint), uncounted_ops=dict(g.uncounted_ops),
                 meta=dict(g.meta, expert_slots=g.meta["experts"] + n))


def slots_per_expert(meta: dict) -> float:
    """Expert slots per expert of a ``slotted`` graph's meta (``parallel.expert_slots``): (E + N) / E, else 1."""
    e = meta.get("experts", 0)
    return meta.get("expert_slots", e) / e if e else 1.0


def _shard(g: Graph, ops: list, key: tuple, ctx: Context) -> Graph:
    tp, sp, cp, ep = key
    G = ctx.gpus_per_node
    plan = parallel.Plan(tp=tp, ep=ep, cp=cp, sequence_parallel=bool(sp),
                         expert_imbalance=ctx.setting("expert_imbalance", 1.0),
                         tp_comm_overlap=bool(ctx.setting("tp_comm_overlap", True) and sp),
                         moe_dispatcher=dispatcher_of(ctx.settings, ep))
    sg = Graph(g.name, "train", g.dtype, ops, meta=dict(g.meta), uncounted_ops=dict(g.uncounted_ops))
    return parallel.shard(sg, ctx.hw, plan, {"tp": parallel.group(1, tp, G), "ep": parallel.group(tp, ep, G)})


def dispatcher_of(settings: dict, ep: int) -> str:
    """The token dispatcher a layout runs: the chosen one with expert parallelism, the default without (flex
    exchanges over an EP group; ``dispatcher.check``)."""
    return settings.get("moe_dispatcher", dispatcher.DEFAULT) if ep > 1 else dispatcher.DEFAULT


@dataclass
class Predicted:
    """Every op of the model on one stage with full recomputation, sharded, with its per-invocation time: a
    superset of the ops of every stage list and recompute mode of the group, predicted in ONE ``law.predict``."""
    sg: Graph
    t: np.ndarray               # (n_ops, n_mb)
    collective: np.ndarray      # (n_ops,) bool: runs on the network stream (critical_path's rule)
    grads: np.ndarray           # (n_ops, n_mb) gradient bytes each op writes (an embedding's grow with tokens)
    expert: np.ndarray          # (n_ops,) bool: its gradients are routed experts' (``parallel.expert_param``)
    tokens: np.ndarray          # (n_mb,) tokens per rank per micro-batch (after context parallelism)
    keep: dict                  # recompute mode → (n_ops,) bool: the ops of that mode's one-stage list


def _recompute_keep(sg: Graph) -> dict:
    """The ops each recompute mode keeps: ``parallel.stage_ops`` inserts the recomputed forward as one block before the
    first backward op, and the sharding adds its collectives inside that block; selective recomputation keeps
    the attention cores of the block, none drops it."""
    names = [op.name for op in sg.ops]
    every = np.ones(len(names), dtype=bool)
    first = next((i for i, n in enumerate(names) if passes.of(n) is passes.Pass.RECOMPUTE), None)
    if first is None:
        return {"none": every, "selective": every, "full": every}
    end = next(i for i in range(first, len(names)) if passes.is_backward(names[i]))
    block = np.zeros(len(names), dtype=bool)
    block[first:end] = True
    attn = np.array([(op.kind == "attention" or bool(op.attrs.get("cp_merge"))) and passes.of(op.name) is passes.Pass.RECOMPUTE
                     for op in sg.ops])
    return {"none": ~block, "selective": ~block | (block & attn), "full": every}


def predicted(g: Graph, key: tuple, ctx: Context) -> Predicted:
    sg = _shard(g, parallel.stage_ops(g, parallel.Plan(recompute="full"))[0][0], key, ctx)
    # any footprint that fits device memory and not the cache places every class in device memory, as the
    # fitting layouts of train_step do (the rows that would sit in cache are re-predicted exactly)
    sg.footprint = {"weights": ctx.hw.memory[ctx.hw.device_tier].capacity_bytes}
    est = law.predict(sg, ctx.hw, ctx.composition)
    n = len(sg.ops)
    net = np.asarray(est.network_s).reshape(n, -1)
    coll = np.array([op.kind == "collective" or bool(np.any(net[i] > 0)) for i, op in enumerate(sg.ops)])
    t = np.asarray(est.op_time_s, dtype=float).reshape(n, -1)
    grads = np.zeros(t.shape)
    for i, op in enumerate(sg.ops):
        if "gradients" in op.bytes:
            grads[i] = op.bytes["gradients"]
    tokens = np.broadcast_to(np.asarray(sg.meta["tokens"], dtype=float), t.shape[1:])
    expert = np.array([parallel.expert_param(op) for op in sg.ops], dtype=bool)
    return Predicted(sg, t, coll, grads, expert, tokens, _recompute_keep(sg))


@dataclass
class Sync:
    """The schedule of the data-parallel gradient reduction on a stage (``parallel.grad_sync_exposed``): the
    stage's largest op count is its layers; one reduction follows the last backward op of the layer stack
    inside ``critical_path``'s repeated block (the run of consecutive ops of that whole count), one more the
    stage's other gradients at the end."""
    layers: int                 # whole repetitions of the block (critical_path runs int(count) of each op)
    segs: list                  # the block: ('c'|'n'|'G', [(op index, 1)])
    tail: list                  # [(repetitions, block)] after it: runs of ops sharing a count, as critical_path
                                # expands them; a block is [('c'|'n', [(op index, 1)])]
    layer_grads: np.ndarray     # (n_mb,) dense bytes reduced after each repetition
    other_grads: np.ndarray     # (n_mb,) dense bytes reduced at the end
    layer_expert: np.ndarray    # (n_mb,) the routed experts' bytes reduced after each repetition
    other_expert: np.ndarray    # (n_mb,) theirs at the end
    top: float                  # the largest count itself (the law charges the per-layer reduction top times,
                                # the schedule int(top) times)


@dataclass
class StageTable:
    """One stage's ops (sharded) with their per-invocation times over the group's micro-batches; sums per layer
    of the stage (a layer op of ``count`` of the model's L layers runs count·layers/L times on a stage of
    ``layers`` layers) and over the rest (the embedding; the final norm, head and loss)."""
    t: np.ndarray               # (n_ops, n_mb) seconds per invocation
    count: np.ndarray           # (n_ops,) invocations in the one-stage list
    layer: np.ndarray           # (n_ops,) bool: in the layer stack (``precision.in_layers``)
    share: np.ndarray           # (n_ops,) a layer op's invocations per layer of a stage: count / L; else 0
    marked: np.ndarray          # (n_ops,) 1 / 0: the builder's attrs['per_layer']; -1: unmarked (a collective)
    bwd: np.ndarray             # (n_ops,) bool: a backward op
    coll: np.ndarray            # (n_ops,) bool: on the network stream
    grads: np.ndarray           # (n_ops, n_mb) gradient bytes
    expert: np.ndarray          # (n_ops,) bool: the routed experts' gradients
    sums: dict                  # name → (n_mb,): lay, rest, fwd_lay, fwd_rest, bwd_lay, bwd_rest, hid
    attention: list             # [(op index, K/V passes of its ring: 1 or 2)]
    L: int                      # the model's layers (the one-stage list holds them all)
    rc: np.ndarray              # (n_ops,) bool: in the recomputed forward (the block before the first backward op)
    _syncs: dict = field(default_factory=dict)
    _alike: dict = field(default_factory=dict)

    def counts(self, layers, share: float = 1.0) -> np.ndarray:
        """(n_ops,) each op's count on a stage of ``layers`` layers (``parallel.with_recompute``), the recomputed
        forward's at ``share`` of them (``Plan.recomputed``: a partial recomputation)."""
        L = self.L
        out = np.where(self.layer, self.count * layers / L if layers != L else self.count, self.count)
        return np.where(self.rc, out * share, out) if share != 1.0 else out

    def sync(self, layers: int, share: float = 1.0) -> Sync:
        """The reduction's schedule when the stage holds ``layers`` layers, ``share`` of them recomputed
        (memoised; one object for the shares whose recomputed ops write no gradients and sit in the repeated
        block alike — ``_sync`` reads the ops from that block on, and the gradients written)."""
        key = (layers, share)
        if key not in self._syncs:
            alike = key
            if share != 1.0 and not np.any(self.grads[self.rc]):      # the block repeats ops of the top count
                cnt = self.counts(layers, share)
                alike = (layers, (cnt[self.rc].astype(int) == int(cnt.max())).tobytes())
            if alike not in self._alike:
                self._alike[alike] = _sync(self, layers, share)
            self._syncs[key] = self._alike[alike]
        return self._syncs[key]

    def max_count(self, layers) -> np.ndarray:
        """The largest op count on a stage of ``layers`` layers (FSDP's layers)."""
        out = np.asarray(layers, dtype=float) * 0.0
        for r in np.unique(np.atleast_1d(layers)):
            out = np.where(np.asarray(layers) == r, self.counts(int(r)).max(), out)
        return out


def _runs(kinds, idx) -> list:
    """Consecutive non-collective ops merged into one compute segment; each collective its own."""
    out: list = []
    for i in idx:
        item = (i, 1.0)
        if kinds[i]:
            out.append(("n", [item]))
        elif out and out[-1][0] == "c":
            out[-1][1].append(item)
        else:
            out.append(("c", [item]))
    return out


def _sync(tab: StageTable, layers: int, share: float = 1.0) -> Sync:
    cnt = tab.counts(layers, share)
    top = float(cnt.max())
    lay = (tab.marked == 1) | ((tab.marked == -1) & (cnt == top))        # precision.in_layers(op, top)
    reps = cnt.astype(int)                                                # critical_path: int(op.count)
    lb = np.nonzero(lay & tab.bwd)[0]
    zero = np.zeros(tab.t.shape[1])
    if lb.size == 0:
        return Sync(int(top), [], [], zero, zero, zero, zero, top)
    n, pos, whole = len(cnt), int(lb.max()), int(top)
    a, b = pos, pos + 1
    while a > 0 and reps[a - 1] == whole and whole > 1:
        a -= 1
    while b < n and reps[b] == whole and whole > 1:
        b += 1
    segs = _runs(tab.coll, range(a, pos + 1)) + [("G", [])] + _runs(tab.coll, range(pos + 1, b))
    tail, i = [], b
    # runs of one count, as the critical path groups them: a run repeats as a whole
    while i < n:
        j = i + 1
        while j < n and reps[j] == reps[i] and reps[i] > 1:
            j += 1
        tail.append((int(reps[i]), _runs(tab.coll, range(i, j))))
        i = j
    written = tab.grads * cnt[:, None]
    on_layer, on_rest = lay & tab.bwd, ~lay & tab.bwd
    return Sync(whole, segs, tail, written[on_layer & ~tab.expert].sum(axis=0) / top,
                written[on_rest & ~tab.expert].sum(axis=0), written[on_layer & tab.expert].sum(axis=0) / top,
                written[on_rest & tab.expert].sum(axis=0), top)


def _sums(ops, t, count, layer, share) -> dict:
    bwd = np.array([passes.is_backward(op.name) for op in ops])
    comp = ~np.array([op.kind == "collective" for op in ops])
    tl, tc = t * share[:, None], t * count[:, None]

    def s(mask):
        return tl[mask].sum(axis=0) if np.any(mask) else np.zeros(t.shape[1])

    def r(mask):
        return tc[mask].sum(axis=0) if np.any(mask) else np.zeros(t.shape[1])
    comm: dict = {}
    gemm: dict = {}
    for i, op in enumerate(ops):                    # parallel.tp_overlap_hidden_s, per layer
        if layer[i]:
            parallel.tp_overlap_add(op, tl[i], comm, gemm)
    hid = parallel.tp_overlap_hidden(comm, gemm, np.zeros(t.shape[1]))
    ep = np.array([op.kind == "collective" and op.module == "ep" for op in ops])
    hb = np.array([host.backward(op.name) for op in ops])                  # host.step_term's split of the rows
    ha = np.array([host.after_sync(op) for op in ops], dtype=bool) & ~hb
    return {"lay": s(layer), "rest": r(~layer), "fwd_lay": s(layer & comp & ~bwd), "fwd_rest": r(~layer & comp & ~bwd),
            "bwd_lay": s(layer & comp & bwd), "bwd_rest": r(~layer & comp & bwd), "hid": hid,
            "a2a_lay": s(layer & ep), "a2a_rest": r(~layer & ep), "h_after": (s(layer & ha), r(~layer & ha)),
            "h_rest": (s(layer & ~ha & ~hb), r(~layer & ~ha & ~hb)), "h_bwd": (s(layer & hb), r(~layer & hb))}


def _table(ref: Predicted, keep: np.ndarray, L: int) -> StageTable:
    """The ops of the superset that ``keep`` selects, in order."""
    idx = np.nonzero(keep)[0]
    ops = [ref.sg.ops[i] for i in idx]
    t = ref.t[idx]
    count = np.array([op.count for op in ops], dtype=float)
    layer = np.array([in_layers(op, L) for op in ops], dtype=bool)
    share = np.where(layer, count / L, 0.0)
    marked = np.array([(1 if op.attrs["per_layer"] else 0) if "per_layer" in op.attrs else -1 for op in ops])
    bwd = np.array([passes.is_backward(op.name) for op in ops])
    attention = [(i, parallel.ring_passes(op)) for i, op in enumerate(ops) if op.kind == "attention"]
    tab = StageTable(t, count, layer, share, marked, bwd, ref.collective[idx], ref.grads[idx], ref.expert[idx],
                     _sums(ops, t, count, layer, share), attention, L, (ref.keep["full"] & ~ref.keep["none"])[idx])
    return tab


def tables(g: Graph, key: tuple, rc: str, ctx: Context, need_pp: bool, ref: Predicted) -> dict[str, StageTable]:
    """'P' (the whole model on one stage) and, when pipelines are searched, 'F', 'M', 'L' (first, middle, last).

    ``parallel.stage_ops`` puts the layer stack and the embedding on the first stage, the layer stack and the
    rest on the last, only the layer stack on a middle one, the recomputed forward right before each stage's
    first backward op: each is the one-stage list without the other stages' ops, in the same order — so every
    stage list of every recompute mode is a mask over the superset (a layer op of count c then runs c·layers/L
    times on a stage of ``layers`` layers)."""
    L = int(g.meta["layers"])
    keep = ref.keep[rc]
    out = {"P": _table(ref, keep, L)}
    if need_pp:
        layer = np.array([in_layers(op, L) for op in ref.sg.ops], dtype=bool)
        first = np.array([parallel.first_stage(op) for op in ref.sg.ops])
        out.update(F=_table(ref, keep & (layer | first), L), M=_table(ref, keep & layer, L),
                   L=_table(ref, keep & (layer | ~first), L))
    return out


def _dur(t_ops: np.ndarray, items: list) -> np.ndarray:
    return sum(t_ops[i] * m for i, m in items)


def exposed_closed_form(sy: Sync, t_ops: np.ndarray, g: np.ndarray, g_rest: np.ndarray,
                        has_rest: np.ndarray) -> np.ndarray:
    """``exposed_replayed``'s end of the schedule beyond its ops' own time, in closed form (no loop over the
    repetitions), for the usual block: collectives only before the gradient sync in the block, none after the
    block. With C one repetition's ops, p the compute after the sync in the block, T the ops after the block, n the
    repetitions:
      a (tensor-parallel) collective in the block: each of the n − 1 syncs but the last delays the next
        repetition's first collective by max(0, g − the compute before it); the last sync ends g − p − T after
        the compute does;
      none: the syncs queue on the network stream, issued one repetition apart; the last ends at
        max(C − p + n·g, n·C − p + g)."""
    layers = sy.layers
    d = {i: _dur(t_ops, items) for i, (k, items) in enumerate(sy.segs) if k != "G"}
    gpos = next(i for i, (k, _) in enumerate(sy.segs) if k == "G")
    C = sum(d.values())
    p = sum((d[i] for i in d if i > gpos), 0.0)
    T = sum((k * _dur(t_ops, items) for k, block in sy.tail for _, items in block), 0.0)
    rest = np.where(has_rest, g_rest, 0.0)
    first_n = next((i for i, (k, _) in enumerate(sy.segs) if k == "n"), None)
    if first_n is not None:
        c_pre = p + sum((d[i] for i in range(first_n)), 0.0)
        delay = (layers - 1) * np.maximum(g - c_pre, 0.0)
        return delay + np.where(has_rest, np.maximum(g - p - T, 0.0) + rest, np.maximum(g - p - T, 0.0))
    tc_end = layers * C + T
    tn = np.maximum(C - p + layers * g, layers * C - p + g)
    end = np.where(has_rest, np.maximum(tc_end, tn) + rest, np.maximum(tc_end, tn))
    return end - tc_end


def has_closed_form(sy: Sync) -> bool:
    """Whether ``exposed_closed_form`` applies: no collective after the sync in the block nor after the block."""
    gpos = next(i for i, (k, _) in enumerate(sy.segs) if k == "G")
    return all(k == "c" for k, _ in sy.segs[gpos + 1:]) and all(k == "c" for _, b in sy.tail for k, _ in b)


def exposed_replayed(sy: Sync, t_ops: np.ndarray, g_layer: np.ndarray, g_rest: np.ndarray,
            has_rest: np.ndarray) -> np.ndarray:
    """The end of the stage's schedule beyond its ops' own time: ``critical_path``'s schedule from the start of
    its repeated block (everything before it is blocking and ends with both streams idle), repetition by
    repetition. ``t_ops`` (n_ops, n_rows): each op's time for each row; ``g_layer``/``g_rest``: the per-block
    and the final reduction per row. Compute ops advance the compute stream; a (tensor-parallel) collective
    starts when both streams are free and holds both; a gradient collective starts when both are free and
    holds only the network stream."""
    dur = [(k, _dur(t_ops, items) if items else None) for k, items in sy.segs]
    tail = [(reps, [(k, _dur(t_ops, items)) for k, items in block]) for reps, block in sy.tail]
    tc = np.zeros(t_ops.shape[1])
    tn = tc.copy()
    for _ in range(sy.layers):
        for k, d in dur:
            if k == "c":
                tc = tc + d
            elif k == "n":
                tc = np.maximum(tc, tn) + d
                tn = tc
            else:
                tn = np.maximum(tc, tn) + g_layer
    for reps, block in tail:
        for _ in range(reps):
            for k, d in block:
                if k == "c":
                    tc = tc + d
                else:
                    tc = np.maximum(tc, tn) + d
                    tn = tc
    tn = np.where(has_rest, np.maximum(tc, tn) + g_rest, tn)
    no_grads = sy.layers * sum(d for k, d in dur if d is not None) + \
        sum((reps * d for reps, block in tail for _, d in block), 0.0)
    return np.maximum(tc, tn) - no_grads


def memory(g: Graph, c: dict, mbi: np.ndarray, sp: bool, grad_fp32: bool, offloaded=0.0,
           partial=FULL) -> parallel.DeviceMemory:
    """``parallel.memory_bytes`` per row: weights, gradients, optimizer state and activations per device
    (``offloaded``: the share of the activations in host memory, ``offload.fraction``; ``partial``: the full
    recomputation's shares per row, ``recompute.of_rows``)."""
    by = dtype_bytes(g.dtype)
    n_mb = int(mbi.max()) + 1
    act = np.broadcast_to(np.asarray(g.footprint.get("activations", 0.0), dtype=float), (n_mb,))[mbi] / c["cp"]
    tokens = np.broadcast_to(np.asarray(g.meta["tokens"], dtype=float), (n_mb,))[mbi]
    return parallel.memory_bytes(g.meta, by, 4.0 if grad_fp32 else by, act, tokens, c["tp"], c["pp"], c["dp"],
                                 c["ep"], c["cp"], c["interleave"], c["zero"],
                                 c["recompute"] == RECOMPUTE.index("full"), sp, slots_per_expert(g.meta),
                                 offloaded=offloaded, partial=partial)


def _offload(ctx: Context, g: Graph, c: dict, mbi: np.ndarray, sp: bool, grad_fp32: bool, p: dict | None,
             partial=FULL):
    """``--offload-activations N`` per row (``parallel.step``'s ``_offload_s``): (the device memory with the N
    layers' share in host memory, the copies' exposed seconds per micro-batch — with ``p`` None, none —, whether
    the row can offload them: N within its stage's L/pp layers and the share within the host tier)."""
    from .. import offload
    n = ctx.setting("offload_layers", 0)
    if not n:
        return memory(g, c, mbi, sp, grad_fp32, 0.0, partial), np.zeros(mbi.shape), np.ones(mbi.shape, dtype=bool)
    L = g.meta["layers"]
    tier = offload.host_tier(ctx.hw)
    share = offload.fraction(n, L, c["pp"])
    held = memory(g, c, mbi, sp, grad_fp32, 0.0, partial).activations_bytes * share
    n_mb = int(mbi.max()) + 1
    act = np.broadcast_to(np.asarray(g.footprint.get("activations", 0.0), dtype=float), (n_mb,))[mbi]
    a = parallel.ACT_SPLIT_FRACTION
    per_layer = act / c["cp"] / L * (1.0 / c["tp"] if sp else (1 - a) + a / c["tp"])
    exposed = np.zeros(mbi.shape) if p is None else \
        offload.exposed_s(n, per_layer, p["fwd"], p["bwd"], L / c["pp"], tier.bw_Bps)[1]
    return memory(g, c, mbi, sp, grad_fp32, share, partial), exposed, \
        (n <= L / c["pp"]) & (held <= tier.capacity_bytes)


def chunk_of(g: Graph, c: dict) -> np.ndarray:
    """Per row: the layers of a model chunk, L/(pp·v) (``recompute.chunk_layers``)."""
    return g.meta["layers"] / (c["pp"] * c["interleave"])


def partial_of(ctx: Context, g: Graph, c: dict, n: np.ndarray):
    """The full recomputation's shares per row with N = ``n`` (``recompute.of_rows``)."""
    return of_rows(n, ctx.setting("recompute_method", None) or "block", chunk_of(g, c))


def recompute_layers(ctx: Context, g: Graph, c: dict, mbi: np.ndarray, sp: bool, grad_fp32: bool):
    """(N per row, whether the row can take it): 0 without full recomputation; ``recompute_layers`` where given
    (rows whose chunks hold fewer layers cannot); else the fewest layers ≥ 1 of the block method whose memory
    fits. For N ≥ 1 a row's memory is affine in n = min(N, c) (``memory_bytes``: the kept inputs n/c of every
    layer's, the whole activations of the other 1 − n/c, one layer rebuilt), so from its memory at n = 1 and
    n = c, N = ⌈1 + (memory(1) − capacity)·(c − 1)/(memory(1) − memory(c))⌉, then checked at N and N − 1
    against rounding; a row that fits at N = 1 takes 1, one that fits at no N takes ⌈c⌉ (and does not fit), one
    that fits at N = 0 is left out where the space holds it without recomputation."""
    full = c["recompute"] == RECOMPUTE.index("full")
    chunk = chunk_of(g, c)
    most = np.ceil(chunk).astype(np.int64)
    fixed = ctx.setting("recompute_layers", None)
    if fixed is not None:
        return np.where(full, fixed, 0), ~full | (fixed <= most)
    if not np.any(full):
        return np.zeros(full.shape, dtype=np.int64), np.ones(full.shape, dtype=bool)

    def need(n):
        return _offload(ctx, g, c, mbi, sp, grad_fp32, None, of_rows(n, "block", chunk))[0].total_bytes
    cap = ctx.hw.memory[ctx.hw.device_tier].capacity_bytes
    m1, mc = need(np.ones(full.shape)), need(most)
    drop = m1 - mc                                                      # bytes saved by layers 2 … c
    x = np.where(drop > 0, 1.0 + (m1 - cap) * (chunk - 1.0) / np.where(drop > 0, drop, 1.0),
                 np.where(m1 <= cap, 1.0, most))
    n = np.clip(np.ceil(x), 1, most).astype(np.int64)
    n = np.where((need(n) > cap) & (n < most), n + 1, n)
    n = np.where((n > 1) & (need(np.maximum(n - 1, 1)) <= cap), n - 1, n)
    # a layout that fits without recomputation keeps none: its row without it is among these (the space lists
    # every recompute mode of a layout unless --recompute is fixed)
    same = full & (need(np.zeros(full.shape)) <= cap) if np.any(c["recompute"] == 0) else np.zeros(full.shape, bool)
    return np.where(full, n, 0), ~same


def _coll(ctx: Context, kind: str, nbytes, grp: tuple) -> np.ndarray:
    a, b = collective_time(kind, nbytes, parallel.group_topology(ctx.hw, grp))
    return a + b


KINDS = ("allreduce", "reducescatter", "allgather")


def _dp_coll(ctx: Context, c: dict, kind, nbytes: np.ndarray, experts: bool = False) -> np.ndarray:
    """α+β of each row's collective over its data-parallel group (stride tp, dp·cp ranks), or with ``experts`` over
    its expert-data-parallel group (``parallel.expert_dp_group``: stride tp·ep; no bytes, no collective); 0 for
    one rank. ``kind``: a name, or per row an index into KINDS."""
    tp, G = int(c["tp"][0]), ctx.gpus_per_node
    ep = int(c["ep"][0]) if experts else 1
    code = np.broadcast_to(np.asarray(KINDS.index(kind) if isinstance(kind, str) else kind), nbytes.shape)
    ranks = c["dp"] * c["cp"]
    out = np.zeros(nbytes.shape)
    for d in np.unique(ranks):
        grp = parallel.expert_dp_group(tp, ep, int(d), G) if experts else parallel.group(tp, int(d), G)
        if grp[0] == 1:
            continue
        at = (ranks == d) & ((nbytes > 0) if experts else True)
        for k in np.unique(code[at]):
            m = at & (code == k)
            out[m] = _coll(ctx, KINDS[int(k)], nbytes[m], grp)
    return out


def _slowest(tabs: dict, c: dict, mbi: np.ndarray, L: int, base: dict | None = None):
    """(stage code, its layers) per row: the slowest stage by its law time, the earlier one on a tie (as
    ``parallel.train_step`` keeps the first maximum over first, middle, last). ``base`` (the tables without
    recomputation): the rows recompute ``c["recompute_layers"]`` N of each chunk's layers, a stage of n layers
    min(N·v, n) of them (``recompute_share``)."""
    mid, first, last = parallel.stage_layers_of(L, c["pp"], c["interleave"])
    stage = np.zeros(mbi.shape, dtype=np.int8)                # 'P'
    R = np.full(mbi.shape, L)
    many = c["pp"] > 1
    if np.any(many):
        i, f, la, md = mbi[many], first[many], last[many], mid[many]
        v, n_rc = c["interleave"][many], c["recompute_layers"][many] if base is not None else None

        def lay(s, n):                                        # a stage of n layers: Σ per layer, times n
            if base is None:
                return n * tabs[s].sums["lay"][i]
            w = recompute_share(n_rc, v, n)
            return n * (base[s].sums["lay"][i] + w * (tabs[s].sums["lay"][i] - base[s].sums["lay"][i]))
        t = {s: lay(s, n) + tabs[s].sums["rest"][i] for s, n in (("F", f), ("L", la))}
        tm = np.where(md != f, lay("M", md), -np.inf)
        best, code, lay = t["F"], np.full(f.shape, 1, dtype=np.int8), f.copy()
        code, lay, best = np.where(tm > best, 2, code), np.where(tm > best, md, lay), np.maximum(best, tm)
        code, lay = np.where(t["L"] > best, 3, code), np.where(t["L"] > best, la, lay)
        stage[many], R[many] = code, lay
    return stage, R


def recompute_share(n: np.ndarray, v: np.ndarray, layers) -> np.ndarray:
    """Per row: the share of a stage's ``layers`` whose forward re-runs with N = ``n`` of each of its v chunks'
    layers (``Plan.recomputed(layers / v).share``, as ``parallel.stage_ops`` takes it)."""
    return of_rows(n, "block", layers / v).share


def _row_sums(tab: StageTable, i: np.ndarray, base: StageTable | None, w) -> dict:
    """The stage's sums at each row's micro-batch; with ``base`` (the stage without recomputation), its layer
    sums with ``w`` of the recomputed forward per row (``recompute_share``: every sum is a sum over ops of
    count × time; the non-layer parts are the same in both)."""
    def one(k, j=None):
        x = tab.sums[k] if j is None else tab.sums[k][j]
        if base is None:
            return x[i]
        b = base.sums[k] if j is None else base.sums[k][j]
        return b[i] + w * (x[i] - b[i])
    return {k: tuple(one(k, j) for j in range(len(v))) if isinstance(v, tuple) else one(k)
            for k, v in tab.sums.items()}


def _ring(ctx: Context, key: tuple, tab: StageTable, mdl: dict, i: np.ndarray, R: np.ndarray) -> np.ndarray:
    """``parallel.cp_ring_exposed`` per row: each attention op's count × (cp − 1) ring steps exposed."""
    tp, _, cp, _ = key
    out = np.zeros(i.shape)
    if cp > 1 and tab.attention:
        send = parallel.cp_ring_send_s(ctx.hw, mdl["meta"], tp, mdl["tokens_cp"][i], mdl["by"],
                                       parallel.group(tp, cp, ctx.gpus_per_node))
        for j, f in tab.attention:
            n = R * tab.share[j] if tab.layer[j] else tab.count[j]
            out = out + n * parallel.cp_ring_step_exposed(send, f, tab.t[j, i], cp)
    return out


def _on_stage(ctx: Context, key: tuple, tab: StageTable, mdl: dict, i: np.ndarray, R: np.ndarray,
              base: StageTable | None = None, w=None) -> dict:
    """Per row on this stage: the law's time of a micro-batch, TP overlap hidden, CP ring exposed, FSDP window;
    with ``base`` (this stage without recomputation) ``w`` of its layers' forward recomputed per row."""
    tp, sp, cp, ep = key
    s = _row_sums(tab, i, base, w)
    out = {"est": R * s["lay"] + s["rest"], "fwd": R * s["fwd_lay"] + s["fwd_rest"],
           "bwd": R * s["bwd_lay"] + s["bwd_rest"]}
    tco = ctx.setting("tp_comm_overlap", True) and bool(sp)
    out["hidden"] = R * s["hid"] if tco else np.zeros(i.shape)
    out["a2a"] = np.zeros(i.shape)
    if ep > 1 and ctx.setting("moe_a2a_overlap", False):      # parallel.ep_overlap_hidden_s
        out["a2a"] = parallel.ep_overlap_hidden(R * s["a2a_lay"] + s["a2a_rest"], out["fwd"] + out["bwd"])
    out["host"] = _host(ctx, key, s, mdl["meta"], i, R)
    out["ring"] = _ring(ctx, key, tab, mdl, i, R)
    if base is not None:                                    # linear in the recomputed ops' count
        out["ring"] = (1.0 - w) * _ring(ctx, key, base, mdl, i, R) + w * out["ring"]
    return out


def _host(ctx: Context, key: tuple, s: dict, meta: dict, i: np.ndarray, R: np.ndarray) -> np.ndarray:
    """``host.step_term`` per row: the seconds the device waits for the host in a micro-batch (0 where the device
    names no host CPU)."""
    from ...machine.hostcpu import of
    cpu = of(ctx.hw)
    if cpu is None:
        return np.zeros(i.shape)
    tp, sp, _, ep = key
    dense, moe = host.layers(meta, cpu, tp, bool(sp), ep, meta.get("precision"),
                             parallel.graph_scopes(ctx.setting("cuda_graph", ())), dispatcher_of(ctx.settings, ep))
    n_moe = R * meta.get("moe_layers", 0) / meta["layers"] if meta.get("experts") else np.zeros(R.shape)
    part = {k: R * s[k][0] + s[k][1] for k in ("h_after", "h_rest", "h_bwd")}
    return host.exposed_s(dense, moe, cpu.sync_s, R - n_moe, n_moe, part["h_after"], part["h_rest"], part["h_bwd"])


def _by_pair(idx: np.ndarray, R: np.ndarray, W: np.ndarray) -> list:
    """The rows ``idx`` split by their (layers, recomputed share), each part in row order."""
    if idx.size == 0:
        return []
    _, ri = np.unique(R[idx], return_inverse=True)
    _, wi = np.unique(W[idx], return_inverse=True)
    pair = ri.reshape(-1) * (int(wi.max()) + 1) + wi.reshape(-1)
    order = np.argsort(pair, kind="stable")
    return np.split(idx[order], np.nonzero(np.diff(pair[order]))[0] + 1)


def _grad_exposed(ctx: Context, tabs: dict, c: dict, mbi, stage, R, W, grad_scale: float) -> np.ndarray:
    """Exposed data-parallel gradient reduction per row (``parallel.grad_sync_exposed``; 0 for one data-parallel
    rank and for FSDP, which reduces per layer); ``tabs[recompute][stage code]``, ``W`` the share of the stage's
    layers recomputed (``StageTable.sync``: the recomputed ops' counts). With EP > 1 the routed
    experts' gradients follow the dense ones over the expert-data-parallel group, on the same network stream:
    their α+β adds to the reduction's."""
    kind = ((c["zero"] >= 2) | _after_step(ctx, c)).astype(np.int8)   # allreduce, or reducescatter (ZeRO-2)
    on = (c["dp"] * c["cp"] > 1) & (c["zero"] < 3)
    split = parallel.experts_apart(int(c["ep"][0]))
    lay, rest = np.zeros(mbi.shape), np.zeros(mbi.shape)
    e_lay, e_rest = np.zeros(mbi.shape), np.zeros(mbi.shape)
    by_sync: dict = {}                         # one schedule, its rows
    for r, by_stage in tabs.items():
        for code, tab in by_stage.items():
            for rows in _by_pair(np.nonzero((stage == code) & (c["recompute"] == r) & on)[0], R, W):
                sy = tab.sync(int(R[rows[0]]), float(W[rows[0]]))
                lay[rows], rest[rows] = sy.layer_grads[mbi[rows]], sy.other_grads[mbi[rows]]
                e_lay[rows], e_rest[rows] = sy.layer_expert[mbi[rows]], sy.other_expert[mbi[rows]]
                by_sync.setdefault(id(sy), (tab, sy, []))[2].append(rows)
    jobs = [(tab, sy, np.concatenate(rows)) for tab, sy, rows in by_sync.values()]
    if not split:
        lay, rest, e_lay, e_rest = lay + e_lay, rest + e_rest, np.zeros_like(e_lay), np.zeros_like(e_rest)
    n = lay.shape[0]
    c2 = {k: np.tile(c[k], 2) for k in ("tp", "dp", "cp", "ep")}
    g2 = _dp_coll(ctx, c2, np.tile(kind, 2), grad_scale * np.concatenate([lay, rest]))
    g2 = g2 + _dp_coll(ctx, c2, np.tile(kind, 2), grad_scale * np.concatenate([e_lay, e_rest]), experts=True)
    g_layer, g_rest = g2[:n], g2[n:]
    rest = rest + e_rest
    out = np.zeros(n)
    for tab, sy, rows in jobs:
        if sy.segs:
            t = tab.t[:, mbi[rows]]
            fn = exposed_closed_form if has_closed_form(sy) else exposed_replayed
            # the overlapped schedule − (the blocking schedule − the law's reduction); both schedules run
            # int(count) of each op, the law top per-layer reductions
            raw = fn(sy, t, g_layer[rows], g_rest[rows], rest[rows] > 0) + (sy.layers - sy.top) * g_layer[rows]
            out[rows] = np.maximum(raw, 0.0)
    return out


def _sharded_coll(ctx: Context, c: dict, kind: str, held: parallel.ParamShards, by: float) -> np.ndarray:
    """α+β per row of one collective of ``by`` bytes per parameter over each of ``parallel.shard_groups``: the
    dense parameters over the data-parallel group, the experts over the expert-data-parallel group (EP > 1)."""
    if not parallel.experts_apart(int(c["ep"][0])):
        return _dp_coll(ctx, c, kind, held.held * by)
    return _dp_coll(ctx, c, kind, held.dense * by) + _dp_coll(ctx, c, kind, held.expert * by, experts=True)


def _fsdp(ctx: Context, c: dict, held: parallel.ParamShards, R, fwd, bwd, by: float, grad_b: float) -> np.ndarray:
    """``parallel.fsdp_exposed_s`` per row (ZeRO-3 over dp·cp > 1 ranks; 0 otherwise); ``R``: the largest op
    count on the row's stage (its layers)."""
    on = (c["zero"] >= 3) & (c["dp"] * c["cp"] > 1)
    out = np.zeros(R.shape)
    if not np.any(on):
        return out
    ag = R * _sharded_coll(ctx, c, "allgather", held, by / R)
    rs = R * _sharded_coll(ctx, c, "reducescatter", held, grad_b / R)
    return np.where(on, parallel.fsdp_exposed(ag, rs, fwd, bwd, R), 0.0)


def _p2p(ctx: Context, c: dict, tokens: np.ndarray, hidden: int, by: float, sp: bool, t_mb, m) -> np.ndarray:
    """``parallel.pipeline_p2p_s`` per row: stage-to-stage sends, overlapped with the next chunk where the
    schedule interleaves (``overlap_p2p``) but for the warm-up and cool-down."""
    tp, cp, G = int(c["tp"][0]), int(c["cp"][0]), ctx.gpus_per_node
    full = tokens / cp * hidden * by
    one = np.zeros(tokens.shape)
    for d in np.unique(c["dp"][c["pp"] > 1]):
        rows = (c["dp"] == d) & (c["pp"] > 1)
        grp = parallel.pp_group(tp * cp * int(d), 2, G, ctx.nodes)      # rows of a pipeline: pp > 1
        one[rows] = parallel.p2p_transfer_s(ctx.hw, full[rows], tp, sp, grp, parallel.group(1, tp, G))
    v, pp = c["interleave"], c["pp"]
    return parallel.pipeline_p2p_s(one, pp, v, m, t_mb, ctx.setting("overlap_p2p", True) & (v > 1))


def _after_step(ctx: Context, c: dict) -> np.ndarray:
    """Per row: the updated parameter shards are gathered after the step (``parallel.dp_grad_sync``'s ``after``):
    ZeRO-2, and ZeRO-1 with ``param_gather_exposed``."""
    return (c["zero"] == 2) | ((c["zero"] == 1) & bool(ctx.setting("param_gather_exposed", False)))


def _zero2_gather(ctx: Context, c: dict, held: parallel.ParamShards, meta: dict, by: float) -> np.ndarray:
    """ZeRO-2 (and ZeRO-1 with ``param_gather_exposed``, at the precision's bytes per parameter,
    ``precision.param_gather_bytes``): the updated parameter shards gathered back after the step, each over its
    group."""
    from ..precision import param_gather_bytes
    on = _after_step(ctx, c) & (c["dp"] * c["cp"] > 1)
    if not np.any(on):
        return np.zeros(on.shape)
    per = np.where(c["zero"] == 1, param_gather_bytes(meta, by), by)
    return np.where(on, _sharded_coll(ctx, c, "allgather", held, per), 0.0)


def _times(ctx: Context, key: tuple, g: Graph, c: dict, mbi: np.ndarray) -> dict:
    """Per row: the slowest stage, its layers, and its per-micro-batch parts (``_on_stage``)."""
    L = int(g.meta["layers"])
    ref = predicted(g, key, ctx)
    mdl = {"meta": g.meta, "tokens_cp": ref.tokens, "by": dtype_bytes(g.dtype)}
    n = mbi.shape[0]
    out = {k: np.zeros(n) for k in ("est", "fwd", "bwd", "hidden", "a2a", "ring", "top", "host")}
    stage, R, W, tabs = np.zeros(n, dtype=np.int8), np.zeros(n, dtype=np.int64), np.ones(n), {}
    pipes, built = bool(np.any(c["pp"] > 1)), {}

    def of_mode(name: str) -> dict:
        if name not in built:
            built[name] = tables(g, key, name, ctx, pipes, ref)
        return built[name]
    block = (ctx.setting("recompute_method", None) or "block") == "block"     # uniform re-runs every layer
    for r in np.unique(c["recompute"]):
        rows = np.nonzero(c["recompute"] == r)[0]
        sub = {k: v[rows] for k, v in c.items()}
        by_name = of_mode(RECOMPUTE[int(r)])
        base = of_mode("none") if RECOMPUTE[int(r)] == "full" and block else None
        tabs[r] = {STAGES.index(s): t for s, t in by_name.items()}
        stage[rows], R[rows] = _slowest(by_name, sub, mbi[rows], L, base)
        if base is not None:                               # N of each chunk's layers: a share of the stage's
            W[rows] = recompute_share(sub["recompute_layers"], sub["interleave"], R[rows])
        for code, tab in tabs[r].items():
            m = rows[stage[rows] == code]
            if m.size:
                b = None if base is None else base[STAGES[code]]
                for k, v in _on_stage(ctx, key, tab, mdl, mbi[m], R[m], b, W[m]).items():
                    out[k][m] = v
                out["top"][m] = tab.max_count(R[m])
    return {**out, "stage": stage, "R": R, "W": W, "tabs": tabs}


def evaluate(ctx: Context, key: tuple, c: dict) -> dict[str, np.ndarray]:
    """Step time, memory and throughput of the rows ``c`` (columns of ``space``) that share ``key``
    (tp, sequence_parallel, cp, ep); train_step's breakdown names for the parts. Rows that do not fit memory
    come back with their memory and fits=False (their time is computed too, and ignored)."""
    from ...law.law import resident_limit_bytes
    mbs, mbi = np.unique(c["micro_batch"], return_inverse=True)
    mbi = mbi.reshape(-1)
    g = slotted(step_graph(ctx, mbs), ctx, key[3])
    meta, by = g.meta, dtype_bytes(g.dtype)
    grad_fp32 = bool(ctx.setting("grad_fp32", False))
    grad_b = 4.0 if grad_fp32 else by
    cap = ctx.hw.memory[ctx.hw.device_tier].capacity_bytes
    limit = resident_limit_bytes(ctx.hw)
    n_rc, takes = recompute_layers(ctx, g, c, mbi, bool(key[1]), grad_fp32)
    c = {**c, "recompute_layers": n_rc}
    p = _times(ctx, key, g, c, mbi)
    mem, off, offloads = _offload(ctx, g, c, mbi, bool(key[1]), grad_fp32, p,
                                  partial_of(ctx, g, c, np.maximum(n_rc, 1)))
    need = mem.total_bytes
    held = parallel.param_shards(meta, c["tp"], c["pp"], c["dp"], c["cp"], c["ep"],  # held.held: params_per_device
                                 slots_per_expert(meta))
    fsdp = _fsdp(ctx, c, held, p["top"], p["fwd"], p["bwd"], by, grad_b)
    _, t_mb = parallel.microbatch_s(p["est"], p["hidden"] + p["a2a"], p["ring"], fsdp, p["host"], off)
    m = ctx.global_batch // (c["micro_batch"] * c["dp"])
    v, pp = c["interleave"], c["pp"]
    tokens_mb = np.broadcast_to(np.asarray(meta["tokens"], dtype=float), mbs.shape)[mbi]
    p2p = _p2p(ctx, c, tokens_mb, meta["hidden"], by, bool(key[1]), t_mb, m)
    bubble = parallel.bubble_s(pp, v, t_mb)
    exposed = _grad_exposed(ctx, p["tabs"], c, mbi, p["stage"], p["R"], p["W"], grad_b / by)
    gather = _zero2_gather(ctx, c, held, meta, by)
    shard = np.asarray(mem.optimizer_params, dtype=float) * np.ones(np.shape(held.held))
    opt_s = parallel.step_optimizer_s(g, ctx.hw, held.held * np.ones(np.shape(shard)), shard, ctx.composition)
    step = parallel.step_s(m, t_mb, bubble, p2p, exposed, gather, opt_s, p["a2a"])
    model_flops = np.broadcast_to(np.asarray(meta["model_flops"], dtype=float), mbs.shape)[mbi] * m * c["dp"]
    peak = ctx.hw.peak(meta.get("precision", g.dtype))
    return {"time_s": step, "memory_per_gpu_bytes": need, "fits": (need <= cap) & offloads & takes,
            "recompute_layers": n_rc,
            "tokens_per_s_per_gpu": tokens_mb * m * c["dp"] / (step * ctx.gpus),
            "mfu": model_flops / (step * peak * ctx.gpus),
            "exact": (need <= limit) if limit is not None else np.zeros(need.shape, dtype=bool),
            "microbatch_s": t_mb, "pipeline_bubble_s": bubble, "pipeline_p2p_s": p2p, "dp_grad_exposed_s": exposed,
            "zero_param_gather_s": gather + m * fsdp, "cp_ring_exposed_s": m * p["ring"],
            "fsdp_exposed_s": m * fsdp, "optimizer_s": opt_s, "host_exposed_s": m * p["host"],
            "offload_exposed_s": m * off}
