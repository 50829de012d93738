"""What each captured op is to tensor parallelism: the op roles the builders set (``parallel.SHARDING``),
read off the data flow of one recorded step.

Megatron pairs a block's linears: a column-parallel linear (input whole on every rank, output split over TP:
q/k/v, gate/up) opens a split, the ops between work on their share (attention by heads, the activation by
columns), and a row-parallel linear (input split, output reduced: o, down) closes it. Capture sees the same
thing by position in the data flow, without reading names:

    forward, in order    a linear (a matmul with a parameter as its matrix) whose input is whole → ``column``;
                         one whose input descends from a column's output → ``row`` (its output is whole again);
                         an op reading a split tensor → ``heads`` (attention) or ``activation``, its output split;
                         an embedding lookup → ``embedding``; any other op → ``replicated`` (norms, residuals:
                         the full hidden state on every rank)
    unclosed columns     a column whose split never reaches a row: the model's last linear is its output layer
                         (``head``, vocabulary-parallel as Megatron's), any other leaves its ops without a role
    backward             each linear's dgrad and wgrad (the matmuls its module runs) keep its role; the
                         row's dgrad opens a split, the column's closes it, the ops between are split
    optimizer            ``optimizer``: the update of each rank's share of the weights

Where the flow cannot be split this way — a split tensor added to a whole one of the same size (a column's output
joining the residual stream), or anything downstream of such an op — the op gets no role, and the capture's notes
say how many: tensor parallelism refuses such a graph rather than guess.
"""
from __future__ import annotations

from dataclasses import dataclass, field

NONE = ""                        # no role: the capture cannot tell


@dataclass
class _Flow:
    """Storage keys of split tensors (each with the column records they descend from) and of unknown ones."""
    split: dict = field(default_factory=dict)      # key -> frozenset of opening record indices
    unknown: set = field(default_factory=set)
    attention: set = field(default_factory=set)    # columns whose split an attention op reads


@dataclass
class Roles:
    """What capture tells of each record (by index): its role (none: cannot tell), which gradient a linear's
    backward matmul computes ('dgrad' | 'wgrad'), the sublayer of each linear ('attn' | 'mlp': its split
    reaches an attention op or not), and the notes for the graph."""
    role: dict
    grad: dict
    sublayer: dict
    notes: list
    linear: dict = field(default_factory=dict)     # index of a linear's matmul -> the module of its linear


def _linear_fwd(r) -> bool:
    return r.phase == "forward" and r.weight_nk is not None and r.kind == "matmul"


def _origins(r, flow: _Flow) -> frozenset:
    return frozenset().union(*(flow.split[k] for k, _ in r.act_in if k in flow.split))


def _view(r, flow: _Flow) -> None:
    """A view or an allocation (no kernel): a view of a split tensor is split, of an unknown one unknown."""
    if any(k in flow.unknown for k, _ in r.act_in):
        flow.unknown.update(r.out_keys)
    elif any(k in flow.split for k, _ in r.act_in):
        origins = _origins(r, flow)
        for k in r.out_keys:
            flow.split[k] = origins


def _propagate(r, flow: _Flow, roles: dict, strict: bool = True) -> None:
    """A non-linear op: split if it reads a split tensor, else replicated; unknown if it reads an unknown tensor
    or (``strict``: the forward) mixes a split tensor with a whole one of the same size. A backward op reading a
    split tensor saved by the forward works on its share, whatever gradient it reads with it."""
    acts = r.act_in
    origins = _origins(r, flow)
    size = max((n for _, n in acts), default=0)
    mixed = strict and bool(origins) and any(k not in flow.split and n >= size for k, n in acts)
    if any(k in flow.unknown for k, _ in acts) or mixed:
        roles[r.index] = NONE
        flow.unknown.update(r.out_keys)
        return
    if origins:
        roles[r.index] = "heads" if r.kind == "attention" else "activation"
        if r.kind == "attention":
            flow.attention |= origins
        for k in r.out_keys:
            flow.split[k] = origins
        return
    roles[r.index] = "embedding" if r.kind == "embedding" else "replicated"
    for k in r.out_keys:                               # an in-place write of a whole tensor over a split one
        flow.split.pop(k, None)


def _linear(r, flow: _Flow, roles: dict) -> frozenset:
    """A forward linear: row if its input is split (its output whole again), else column (its output split);
    returns the columns a row closes."""
    ins = [k for k, _ in r.act_in]
    if any(k in flow.unknown for k in ins):
        roles[r.index] = NONE
        flow.unknown.update(r.out_keys)
        return frozenset()
    if any(k in flow.split for k in ins):
        roles[r.index] = "row"
        closes = _origins(r, flow)
        for k in r.out_keys:
            flow.split.pop(k, None)
        return closes
    roles[r.index] = "column"
    for k in r.out_keys:
        flow.split[k] = frozenset([r.index])
    return frozenset()


def _forward(records, roles: dict, flow: _Flow) -> tuple[dict, set, dict, dict]:
    """Roles of the forward ops; (linear module or weight key -> its first record, open column indices, the
    columns each split op descends from, row index -> the columns it closes)."""
    by_module, closed, origin_of, closes = {}, set(), {}, {}
    for r in records:
        if r.phase != "forward":
            continue
        if r.no_work:
            _view(r, flow)
        elif _linear_fwd(r):
            closes[r.index] = _linear(r, flow, roles)
            closed |= closes[r.index]
            by_module.setdefault(r.module, r.index)
            by_module.setdefault(("weight", r.weight_key), r.index)
        else:
            _propagate(r, flow, roles)
            if roles[r.index] in ("heads", "activation"):
                origin_of[r.index] = _origins(r, flow)
    opened = {i for i, role in roles.items() if role == "column"}
    return by_module, opened - closed, origin_of, closes


def _unclosed(records, roles: dict, open_cols: set, origin_of: dict) -> None:
    """The model's last linear, unclosed, is its output layer (``head``); any other unclosed column and the ops
    that descend from it have no role."""
    last = max((r.index for r in records if _linear_fwd(r)), default=None)
    bad = {c for c in open_cols if c != last}
    for c in open_cols:
        roles[c] = "head" if c == last else NONE
    for i, origins in origin_of.items():
        if origins & bad:
            roles[i] = NONE


def _backward(records, roles: dict, by_module: dict, flow: _Flow) -> tuple[dict, dict]:
    """Roles of the backward and optimizer ops (``flow``: the forward's, whose split tensors the backward reads
    saved); returns (index -> 'dgrad' | 'wgrad', index -> its linear's forward record) for the linears' matmuls:
    a dgrad found by the weight it reads, a wgrad by the module the tracker puts it in."""
    grads, linear = {}, {}
    for r in records:
        if r.phase == "optimizer":
            roles[r.index] = "optimizer"
            continue
        if r.phase != "backward":
            continue
        lin = by_module.get(("weight", r.weight_key) if r.weight_key is not None else r.module)
        if r.no_work:
            _view(r, flow)
        elif r.kind == "matmul" and lin is not None:
            role = roles[r.index] = roles[lin]
            linear[r.index] = lin
            grads[r.index] = "dgrad" if r.weight_nk is not None else "wgrad"
            for k in (r.out_keys if grads[r.index] == "dgrad" else ()):
                if role == NONE:
                    flow.unknown.add(k)
                elif role == "row":                     # the gradient of a split input
                    flow.split[k] = frozenset([r.index])
                else:
                    flow.split.pop(k, None)
        else:
            _propagate(r, flow, roles, strict=False)
    return grads, linear


def _pair_wgrads(records, grads: dict, linear: dict, roles: dict) -> None:
    """A wgrad next to a dgrad in the same module (autograd runs a linear's two matmuls one after the other) is
    that dgrad's linear's: the tracker can put a sibling's backward (q's beside k's) in the wrong module."""
    mm = [r for r in records if r.index in grads]
    for a, b in zip(mm, mm[1:]):
        if a.module == b.module and {grads[a.index], grads[b.index]} == {"dgrad", "wgrad"}:
            w, d = (a, b) if grads[a.index] == "wgrad" else (b, a)
            linear[w.index] = linear[d.index]
            roles[w.index] = roles[d.index]


def attach(records) -> Roles:
    """The roles of the records of one captured step."""
    roles: dict = {}
    flow = _Flow()
    by_module, open_cols, origin_of, closes = _forward(records, roles, flow)
    _unclosed(records, roles, open_cols, origin_of)
    grads, linear = _backward(records, roles, by_module, flow)
    _pair_wgrads(records, grads, linear, roles)
    linear |= {r.index: r.index for r in records if _linear_fwd(r)}
    attn = {i for i in closes if closes[i] & flow.attention}
    module = {r.index: r.module for r in records}
    sublayer = {i: "attn" if lin in attn or any(lin in closes[j] for j in attn) else "mlp"
                for i, lin in linear.items()}
    unknown = sum(1 for r in records if not r.no_work and roles.get(r.index, NONE) == NONE)
    notes = [f"capture could not tell the tensor-parallel role of {unknown} op(s) (a split tensor joins a whole "
             f"one, or a column-parallel linear's output never reaches a row-parallel one): tensor parallelism "
             f"refuses them"] if unknown else []
    return Roles(roles, grads, sublayer, notes, {i: module[lin] for i, lin in linear.items()})


def no_role_ops(g) -> dict:
    """Op name -> count of the ops of a captured graph that capture could not give a role ({} for a graph not
    captured): what ``analyze`` lists and ``parallel.tp_shard`` refuses."""
    if not g.meta.get("captured"):
        return {}
    out: dict = {}
    for op in g.ops:
        if op.kind != "collective" and not op.attrs.get("role"):
            out[op.name] = out.get(op.name, 0) + 1
    return out
