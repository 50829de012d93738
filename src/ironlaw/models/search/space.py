"""The layouts a training search considers: every (tp, pp, cp, dp, ep, micro_batch, interleave, recompute, zero,
sequence_parallel) that Megatron-LM could run on the devices, as numpy columns (one row per candidate).

Valid means: tp·pp·cp·dp = the GPUs; tp divides the attention and key/value heads and the GPUs of a node (or
spans whole nodes); the context-, data- and expert-parallel groups lie on whole nodes (``tiles``), unless the user
fixes tp, pp and cp, which leaves one layout whose groups may fill their last node partly (a published one:
2,496 GB200 as 39 nodes of 64, tp 4 · pp 8 · cp 2, a data-parallel group of 78 ranks over 5 nodes);
pp·interleave divides the layers (or, with pp > 1, the layers + 2: the embedding and the loss each in a layer's
place); 2·cp divides the sequence; ep divides the data-parallel group and the experts (with ``redundant`` expert
slots, EPLB's replicas held by the layouts with ep > 1, the experts + the slots); micro_batch·dp divides
the global batch; interleave > 1 needs pp > 1 and micro-batches a multiple of pp; sequence parallelism needs
tp > 1; ZeRO needs more than one rank to shard over (dp·cp > 1: with one, every stage shards over nothing, the
same layout as ZeRO 0, so it is listed once). Degrees the user fixes narrow the space; a fixed set that cannot be valid is
an error naming the rule it breaks.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product

import numpy as np

from ...core.errors import IronlawError
from ...machine.network.topology import check_count

RECOMPUTE = ("none", "selective", "full")
COLUMNS = ("tp", "pp", "cp", "dp", "ep", "micro_batch", "interleave", "recompute", "zero", "sequence_parallel")
GROUP_KEYS = ("tp", "sequence_parallel", "cp", "ep")        # what changes the per-device graph


@dataclass
class Space:
    """The search problem: the model's shape and the user's fixed knobs."""
    gpus: int
    global_batch: int
    seq: int
    layers: int
    heads: int
    kv_heads: int
    experts: int = 0
    fixed: dict = field(default_factory=dict)
    cp_supported: bool = True
    gpus_per_node: int = 0              # 0: all on one node
    redundant: int = 0                  # extra expert slots over the EP group of each layout with ep > 1 (EPLB)

    def allowed(self, knob: str, values) -> list:
        v = self.fixed.get(knob)
        return [x for x in values if x == v] if v is not None else list(values)


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def tiles(stride: int, size: int, per_node: int) -> bool:
    """Whether a group of ``size`` ranks spaced ``stride`` apart (Megatron's order: TP fastest, then DP) lies
    on whole nodes: inside one node, one rank per node, or filling its nodes (``parallel.group``'s cases)."""
    span = stride * size
    return size == 1 or span <= per_node or stride % per_node == 0 or span % per_node == 0


def check_fixed(s: Space) -> None:
    """One clear line for fixed degrees that no layout can honour."""
    f = s.fixed
    for k in ("tp", "pp", "cp", "dp", "ep", "micro_batch", "interleave"):
        if f.get(k) is not None:
            check_count(f[k], "--" + k.replace("_", "-"))
    deg = {k: f[k] for k in ("tp", "pp", "cp", "dp") if f.get(k) is not None}
    prod = int(np.prod(list(deg.values()))) if deg else 1
    names = " × ".join(f"--{k} {v}" for k, v in deg.items())
    every = len(deg) == 4 or (len(deg) == 3 and "cp" not in deg and not s.cp_supported)
    if deg and (prod > s.gpus or (every and prod != s.gpus)):
        raise IronlawError(f"{names} = {prod} devices, but --gpus is {s.gpus}; the product of tp, pp, cp and dp "
                           f"must equal the GPUs")
    if deg and s.gpus % prod:
        raise IronlawError(f"{names if len(deg) == 1 else f'{names} = {prod}'} does not divide --gpus {s.gpus}; "
                           f"the product of tp, pp, cp and dp "
                           f"must equal the GPUs")
    if f.get("tp") and (s.heads % f["tp"] or s.kv_heads % f["tp"]):
        raise IronlawError(f"--tp {f['tp']} does not divide the {s.heads} attention heads and {s.kv_heads} "
                           f"key/value heads; use a divisor of {np.gcd(s.heads, s.kv_heads)}")
    if f.get("pp") and not splits(s.layers, f["pp"], 1):
        raise IronlawError(f"--pp {f['pp']} does not divide the {s.layers} layers (nor {s.layers + 2}, with the "
                           f"embedding and the loss in a layer's place each); use a divisor of {s.layers}")
    if f.get("cp") and s.seq % (2 * f["cp"]):
        raise IronlawError(f"--cp {f['cp']} does not divide --seq {s.seq} into 2 × cp = {2 * f['cp']} equal chunks "
                           f"(the load-balanced causal ring); use a --seq that is a multiple of {2 * f['cp']}")
    if f.get("cp", 1) > 1 and not s.cp_supported:
        raise IronlawError("--cp: this build's training step has no context parallelism; search without --cp")
    if f.get("ep", 1) > 1 and not s.experts:
        raise IronlawError(f"--ep {f['ep']}: the model has no experts; expert parallelism needs a mixture-of-experts")
    if f.get("ep") and s.experts and (s.experts + s.redundant) % f["ep"]:
        slots = f"{s.experts} + {s.redundant} = {s.experts + s.redundant} expert slots" if s.redundant else \
            f"{s.experts} experts"
        raise IronlawError(f"--ep {f['ep']} does not divide the {slots}; use a divisor of {s.experts + s.redundant}")
    if s.redundant and f.get("ep") == 1:
        raise IronlawError(f"--redundant-experts {s.redundant} spreads replicas of hot experts over the EP group; "
                           f"leave --ep 1 out or fix --ep > 1")
    if f.get("sequence_parallel") and f.get("tp") == 1:
        raise IronlawError("--sequence-parallel needs tensor parallelism (--tp > 1)")
    if f.get("recompute") is not None and f["recompute"] not in RECOMPUTE:
        raise IronlawError(f"--recompute must be one of {', '.join(RECOMPUTE)}, got '{f['recompute']}'")
    if f.get("zero") is not None and f["zero"] not in (0, 1, 2, 3):
        raise IronlawError(f"--zero must be 0, 1, 2 or 3, got {f['zero']!r}")


def _outer(s: Space, any_ep: bool = False):
    """(tp, pp, cp, dp, ep) degree tuples that multiply to the GPUs and divide what they split (``any_ep``: ep
    whether or not it divides the expert slots)."""
    n, G = s.gpus, s.gpus_per_node or s.gpus
    tps = [d for d in divisors(n) if s.heads % d == 0 and s.kv_heads % d == 0 and (G % d == 0 or d % G == 0)]
    given = all(s.fixed.get(k) is not None for k in ("tp", "pp") + (("cp",) if s.cp_supported else ()))
    for tp in s.allowed("tp", tps):
        for pp in s.allowed("pp", [d for d in divisors(n // tp) if splits(s.layers, d, 1)]):
            cps = [d for d in divisors(n // (tp * pp)) if s.seq % (2 * d) == 0 and (given or tiles(tp, d, G))] \
                if s.cp_supported else [1]
            for cp in s.allowed("cp", cps):
                dp = n // (tp * pp * cp)
                if s.fixed.get("dp") not in (None, dp) or not (given or tiles(tp, dp * cp, G)):
                    continue
                eps = [d for d in divisors(dp) if (any_ep or (s.experts + s.redundant) % d == 0)
                       and tiles(tp, d, G)] if s.experts else [1]
                for ep in s.allowed("ep", eps):
                    yield tp, pp, cp, dp, ep


def splits(layers: int, pp: int, v: int) -> bool:
    """Whether pp·v model chunks take the layers evenly, or with the embedding and the loss each in a layer's
    place (``parallel.stage_layers``: Llama 3.1 405B's 126 layers on pp 8 × interleave 8), or, on a pipeline
    depth where no interleave does either, unevenly: ⌈layers/n⌉ per chunk from the first, as Megatron's layouts
    split DeepSeek-V3's 61 layers (pp 16; pp 4 × interleave 4). The space keeps the uneven splits whose n − 1
    chunks of ⌈layers/n⌉ leave the last one at least a layer (a bound on the space: pp 8 × interleave 4 takes
    61 layers with ``ironlaw analyze``, not in the search)."""
    if pp == 1 or _even(layers, pp, v):
        return True
    if any(_even(layers, pp, u) for u in range(1, layers // pp + 1)):
        return False
    n = pp * v
    return layers - -(-layers // n) * (n - 1) >= 1


def _even(layers: int, pp: int, v: int) -> bool:
    return layers % (pp * v) == 0 or ((layers + 2) % (pp * v) == 0 and (layers + 2) // pp >= 2)


def _inner(s: Space, tp: int, pp: int, cp: int, dp: int):
    """(micro_batch, interleave, recompute, zero, sequence_parallel) rows for one outer tuple."""
    if s.global_batch % dp:
        return []
    mbs = s.allowed("micro_batch", divisors(s.global_batch // dp))
    vs = s.allowed("interleave", [v for v in range(1, s.layers + 1) if splits(s.layers, pp, v)])
    rcs = [RECOMPUTE.index(r) for r in s.allowed("recompute", RECOMPUTE)]
    zeros = s.allowed("zero", (0, 1, 2, 3) if dp * cp > 1 else (0,))
    sps = s.allowed("sequence_parallel", (False, True) if tp > 1 else (False,))
    rows = []
    for mb, v in product(mbs, vs):
        m = s.global_batch // (mb * dp)
        if v > 1 and (pp == 1 or m % pp):
            continue
        rows += [(mb, v, rc, z, int(sp)) for rc, z, sp in product(rcs, zeros, sps)]
    return rows


def enumerate_space(s: Space) -> dict[str, np.ndarray]:
    """Every valid candidate as int64 columns named as COLUMNS (recompute as an index into RECOMPUTE)."""
    check_fixed(s)
    blocks = []
    for tp, pp, cp, dp, ep in _outer(s):
        rows = _inner(s, tp, pp, cp, dp)
        if rows:
            inner = np.array(rows, dtype=np.int64)
            head = np.broadcast_to(np.array([tp, pp, cp, dp, ep], dtype=np.int64), (len(rows), 5))
            blocks.append(np.concatenate([head, inner], axis=1))
    if not blocks:
        raise IronlawError(_why_empty(s))
    a = np.concatenate(blocks)
    if s.redundant and not np.any(a[:, COLUMNS.index("ep")] > 1):
        raise IronlawError(_why_no_slots(s))
    return {k: np.ascontiguousarray(a[:, i]) for i, k in enumerate(COLUMNS)}


def _why_empty(s: Space) -> str:
    fixed = ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in s.fixed.items() if v is not None)
    return (f"no layout of {s.gpus} GPUs divides the global batch {s.global_batch}, the {s.layers} layers and "
            f"the heads{f' with {fixed}' if fixed else ''}; choose a global batch that is a multiple of the "
            f"data-parallel degree")


def _why_no_slots(s: Space) -> str:
    """``--redundant-experts N`` where no layout has an EP group whose degree divides the experts + N: the degrees
    > 1 the layouts could take, and the nearest N that one of them divides."""
    tried = sorted({ep for *_, ep in _outer(s, any_ep=True) if ep > 1})
    e, n = s.experts, s.redundant
    if not tried:
        return (f"--redundant-experts {n} spreads replicas over an EP group, and no layout of {s.gpus} GPUs here has "
                f"expert parallelism > 1 (it splits the data-parallel group); leave --redundant-experts out")
    if any((e + n) % d == 0 for d in tried):
        return (f"--redundant-experts {n}: the layouts whose EP degree divides the {e} + {n} = {e + n} expert slots "
                f"leave no micro-batch that divides the global batch {s.global_batch}; choose another --global-batch")
    near = next(r for r in range(n, e + n + max(tried)) if any((e + r) % d == 0 for d in tried))
    hint = f"; --redundant-experts {near} makes {e + near} slots" if near <= e else ""
    return (f"--redundant-experts {n}: no expert-parallel degree the layouts take ({', '.join(map(str, tried))}) "
            f"divides the {e} + {n} = {e + n} expert slots{hint}")


def groups(c: dict[str, np.ndarray]) -> list[tuple[tuple, np.ndarray]]:
    """[(key, row indices)] per distinct GROUP_KEYS value, in a fixed order (the same on every engine)."""
    code = np.zeros(len(c["tp"]), dtype=np.int64)
    for k in GROUP_KEYS:                          # one integer per key: degree − 1 < 2**20 devices, sp 0|1
        sp = k == "sequence_parallel"
        code = (code << (1 if sp else 20)) + (c[k] if sp else c[k] - 1)
    uniq, inv = np.unique(code, return_inverse=True)
    inv = inv.reshape(-1)
    order = np.argsort(inv, kind="stable")
    bounds = np.searchsorted(inv[order], np.arange(len(uniq) + 1))
    out = []
    for i in range(len(uniq)):
        rows = order[bounds[i]:bounds[i + 1]]
        out.append((tuple(int(c[k][rows[0]]) for k in GROUP_KEYS), rows))
    return out
