"""Join recorded ops with ``torch.profiler`` events of a real run, by op name and order.

The recorder sees each op at the Python dispatch level; the profiler also shows what runs inside
an op (``aten::convolution`` → ``aten::mkldnn_convolution`` …) and the composite ops above it
(``aten::linear``). Keeping, in start order, the profiler events whose name the recorder uses and
which are not inside such an event yields the recorder's own sequence. Views are left out:
``reshape`` decomposes to ``aten::view`` under a dispatch mode but to ``aten::_reshape_alias``
without one, and views do no work.
"""
from __future__ import annotations


def work_records(records) -> list:
    """Records of ops that run a kernel (not views or allocations)."""
    return [r for r in records if not r.no_work]


def profiler_sequence(events, names: set[str]) -> list:
    """Top-level profiler events (FunctionEvent) whose name is in ``names``, in start order."""
    out = []
    for e in sorted(events, key=lambda e: (e.time_range.start, -e.time_range.end)):
        if e.name not in names:
            continue
        p, inside = e.cpu_parent, False
        while p is not None:
            if p.name in names:
                inside = True
                break
            p = p.cpu_parent
        if not inside:
            out.append(e)
    return out


def join(records, events) -> list[tuple]:
    """[(record, event)] pairing each work record with its profiler event; an IronlawError-free
    ValueError names the first position where the two sequences disagree."""
    recs = work_records(records)
    evs = profiler_sequence(events, {r.name for r in recs})
    for i, (r, e) in enumerate(zip(recs, evs)):
        if r.name != e.name:
            raise ValueError(f"op {i}: recorded {r.name} (record {r.index}) but the profiler shows {e.name}")
    if len(recs) != len(evs):
        raise ValueError(f"{len(recs)} recorded ops but {len(evs)} profiler events")
    return list(zip(recs, evs))
