"""Invariants of the law, the schedule and the what-if transforms, over random graphs (hypothesis).

Physical facts that hold whatever the numbers: overlapping never takes longer than running in
series; a faster memory or a faster unit never makes anything slower; more work never takes less
time; a transform that changes nothing changes nothing; a transform that only shrinks some terms
cannot save more than those terms' share of the time; every time is finite and positive.
"""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ironlaw.law import critical_path as cpm
from ironlaw.machine import hardware
from ironlaw.law import law
from ironlaw.models import whatif
from ironlaw.core.graph import Graph, Op

KINDS = ("matmul", "conv", "attention", "elementwise", "norm", "softmax", "embedding", "pool", "reduction", "copy")
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
H100 = hardware.get("h100")
A100 = hardware.get("a100")

# FLOP and byte counts are whole numbers: 0, or at least 1 (sub-1 floats are not a workload)
pos = st.one_of(st.just(0.0), st.floats(min_value=1.0, max_value=1e13))
big = st.one_of(st.just(0.0), st.floats(min_value=1.0, max_value=1e15))


@st.composite
def ops(draw):
    kind = draw(st.sampled_from(KINDS))
    by = {c: draw(pos) for c in draw(st.sets(st.sampled_from(("weights", "activations", "kv_cache")), max_size=3))}
    return Op(f"op{draw(st.integers(0, 999))}", kind, flops=draw(big), bytes=by,
              dtype=draw(st.sampled_from(("bf16", "fp32", "fp16"))), count=draw(st.integers(1, 80)),
              bytes_written=0.0)


@st.composite
def graphs(draw):
    os_ = draw(st.lists(ops(), min_size=1, max_size=12))
    fp = {"weights": draw(st.floats(0, 60e9)), "activations": draw(st.floats(0, 10e9))}
    return Graph("random", "infer", "bf16", os_, footprint=fp)


# The law's invariants hold at fixed efficiencies. A calibrated profile's GEMM-shape η reads the
# matrix shape from the op's bytes (gemmshape.gemm_dims), so there bytes are shape information as well
# as traffic: a 1-FLOP matmul that gains one weight byte gains η and runs faster. Monotonicity in bytes
# and FLOPs and the share bound are therefore checked with the calibration stripped; finiteness,
# overlap <= serial and faster-hardware-is-never-slower also on the calibrated devices.
FIXED_ETA = [replace(H100, extra={}, calibration=None), replace(A100, extra={}, calibration=None)]
devices = st.sampled_from([H100, A100] + FIXED_ETA)
fixed_eta = st.sampled_from(FIXED_ETA)
scales = st.floats(min_value=1.0, max_value=100.0)


def scaled_bw(hw, k):
    return replace(hw, memory=tuple(replace(t, bw_Bps=t.bw_Bps * k) for t in hw.memory))


def scaled_peak(hw, k):
    return replace(hw, peak_flops={d: v * k for d, v in hw.peak_flops.items()}, vector_flops=hw.vector_flops * k)


def total(g, hw, comp="overlap"):
    return float(law.predict(g, hw, comp).total_s)


@SETTINGS
@given(graphs(), devices)
def test_times_finite_positive_and_overlap_never_slower_than_serial(g, hw):
    o, s = law.predict(g, hw, "overlap"), law.predict(g, hw, "serial")
    assert np.all(np.isfinite(o.op_time_s)) and np.all(o.op_time_s > 0)
    assert np.all(o.op_time_s <= s.op_time_s * (1 + 1e-12))
    assert 0 < float(o.total_s) <= float(s.total_s) * (1 + 1e-12)


@SETTINGS
@given(graphs(), devices, scales, st.sampled_from(("overlap", "serial")))
def test_more_bandwidth_or_more_peak_is_never_slower(g, hw, k, comp):
    t = total(g, hw, comp)
    assert total(g, scaled_bw(hw, k), comp) <= t * (1 + 1e-12)
    assert total(g, scaled_peak(hw, k), comp) <= t * (1 + 1e-12)


@SETTINGS
@given(graphs(), fixed_eta, st.integers(0, 11), scales, st.sampled_from(("flops", "weights", "activations")))
def test_more_work_or_more_bytes_is_never_faster(g, hw, i, k, what):
    i %= len(g.ops)
    op = g.ops[i]
    if what == "flops":
        bigger = replace(op, flops=op.flops * k)
    else:
        bigger = replace(op, bytes={**op.bytes, what: op.bytes.get(what, 0.0) * k + 1.0})
    g2 = replace(g, ops=g.ops[:i] + [bigger] + g.ops[i + 1:])
    for comp in ("overlap", "serial"):
        assert total(g2, hw, comp) >= total(g, hw, comp) * (1 - 1e-12)


@SETTINGS
@given(graphs(), st.sampled_from([H100, A100]))          # as the catalog has them: hardware=NAME reloads it
def test_identity_transforms_change_nothing(g, hw):
    t0 = law.predict(g, hw).op_time_s
    for steps in ([], [f"hardware={hw.name}"]):
        g2, hw2 = whatif.apply(g, hw, steps)
        assert np.array_equal(law.predict(g2, hw2).op_time_s, t0)


@SETTINGS
@given(graphs(), fixed_eta, st.floats(0.0, 1.0), st.sets(st.integers(0, 11), min_size=1))
def test_shrinking_some_terms_saves_at_most_their_share(g, hw, f, picked):
    """Scale the bytes of some ops by f: the time saved is at most the data time of those ops,
    so speedup <= 1 / (1 - share); where their data was not binding (overlap), nothing is saved."""
    picked = {i % len(g.ops) for i in picked}
    g2 = replace(g, ops=[replace(op, bytes={c: b * f for c, b in op.bytes.items()}) if i in picked else op
                         for i, op in enumerate(g.ops)])
    for comp in ("overlap", "serial"):
        e, e2 = law.predict(g, hw, comp), law.predict(g2, hw, comp)
        t, t2 = float(e.total_s), float(e2.total_s)
        share = sum(float(e.data_s[i]) * g.ops[i].count for i in picked) / t
        assert t2 <= t * (1 + 1e-12)
        assert t / t2 <= 1.0 / max(1.0 - share, 1e-300) * (1 + 1e-9)
        if comp == "overlap":
            slack = [i for i in picked if float(e.compute_s[i]) >= float(e.data_s[i])]
            for i in slack:                       # data was hidden under compute: that op does not speed up
                assert float(e2.op_time_s[i]) == pytest.approx(float(e.op_time_s[i]), rel=1e-12)


@SETTINGS
@given(graphs(), fixed_eta)
def test_fusion_saves_at_most_the_share_of_what_it_touches(g, hw):
    g = replace(g, ops=[replace(op, bytes_written=op.bytes.get("activations", 0.0) / 3) for op in g.ops])
    g2, _ = whatif.apply(g, hw, ["fusion=elementwise"])
    e, e2 = law.predict(g, hw), law.predict(g2, hw)
    touched = [i for i, op in enumerate(g.ops) if op.kind == "elementwise"]
    # fusion touches the elementwise ops (all their terms) and the write of each producer's output
    producers = {i - 1 for i in touched if i > 0} - set(touched)
    share = (sum(float(e.op_total_s[i]) for i in touched)
             + sum(float(e.data_s[i]) * g.ops[i].count for i in producers)) / float(e.total_s)
    assert float(e.total_s) / float(e2.total_s) <= 1.0 / max(1.0 - share, 1e-300) * (1 + 1e-9)
    assert float(g2.flops) == pytest.approx(float(g.flops), rel=1e-9)


@st.composite
def tasks(draw):
    out = []
    for r in range(draw(st.integers(1, 25))):
        coll = draw(st.booleans())
        ms = st.floats(0.0, 5e-3)
        out.append(cpm.Task(f"t{r}", local_s=draw(ms), spill_s=draw(ms) if draw(st.booleans()) else 0.0,
                            compute_s=draw(ms), latency_s=draw(st.floats(0.0, 1e-5)),
                            network_s=draw(ms) if coll else 0.0, collective=coll, grad_sync=coll,
                            waits_for_grads=draw(st.booleans())))
    return out


@settings(max_examples=150, deadline=None)
@given(tasks(), st.integers(0, 4), st.sampled_from(("overlap", "serial")))
def test_schedule_overlap_never_slower_and_default_equals_the_law(ts, k, comp):
    base = cpm.schedule(ts, comp)
    assert base.time_s == pytest.approx(base.law_s, rel=1e-9, abs=1e-15)
    assert cpm.schedule(ts, comp, prefetch_depth=k).time_s <= base.time_s * (1 + 1e-9) + 1e-15
    assert cpm.schedule(ts, comp, prefetch_depth=k, overlap_comm=True).time_s <= base.time_s * (1 + 1e-9) + 1e-15
    cp = cpm.schedule(ts, comp, prefetch_depth=k, overlap_comm=True)
    assert cp.time_s >= max(cp.busy_s.values()) * (1 - 1e-9) - 1e-15      # no stream does more than the path
    if cp.path:
        assert cp.path[-1].end_s == pytest.approx(cp.time_s)
