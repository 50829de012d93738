"""The CPU GEMM model, each piece against arithmetic done by hand or against a measurement (2-vCPU EPYC and Xeon
VMs, torch 2.13): packing (serial), the GEMV path (gemv_m per weight layout), a GEMM table's own
weight η, cache residency of a small workload, the usable size of a shared cache, and the cold-GEMM
rows of the probe."""
import numpy as np
import pytest

from ironlaw.machine import cache, calibration, hardware
from ironlaw.measure.calibrate import calibrate
from ironlaw.law import efficiency, law
from ironlaw.core.errors import IronlawError
from ironlaw.core.graph import Graph, Op
from ironlaw.measure.calibrate import build
from ironlaw.measure.probe import gemm as gemm_probe

S = "estimate: test"
PEAK, DRAM, LLC = 400e9, 25e9, 50e9
LLC_BYTES = 64e6


def cpu(cal: dict | None = None):
    doc = {"schema": "ironlaw.hardware/1", "name": "toycpu", "title": "toy cpu", "kind": "cpu",
           "compute": {"fp32": {"peak_flops": PEAK, "source": S}},
           "vector": {"peak_flops": 30e9, "source": S},
           "memory": [{"name": "l3", "role": "cache", "capacity_bytes": LLC_BYTES, "bw_Bps": LLC, "source": S},
                      {"name": "dram", "role": "device", "capacity_bytes": 16e9, "bw_Bps": DRAM, "source": S}],
           "latency": {"op_s": 1e-12, "source": S},          # negligible next to the µs below
           "efficiency": {"other": 1.0, "memory": 1.0, "matmul": 1.0, "source": S}}
    if cal:
        doc["calibration"] = cal
    return hardware.parse_hardware(doc, "toycpu")


def table(**mm) -> dict:
    return {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["test"],
            "matmul": {"fp32": {"eta_max": 1.0, "m_half": 0.0, "nk_half": 0.0, **mm}},
            "memory": {"streamed": 1.0, "produced": 1.0}}


def linear(m, n, k, **attrs):
    return Op(f"mm {m}", "matmul", flops=2.0 * m * n * k, bytes={"activations": 4.0 * (m * k + m * n),
                                                                   "weights": 4.0 * n * k},
              dtype="fp32", attrs=attrs)


def times(hw, ops, footprint=None):
    g = Graph("t", "infer", "fp32", ops, footprint=footprint or {"weights": 1e9})   # 1 GB: not cache-resident
    return np.asarray(law.predict(g, hw).op_time_s, float).reshape(-1)


def test_packing_adds_weight_traffic_to_compute_for_gemms_not_gemvs():
    m, n, k = 8, 4096, 1024
    d = (4.0 * n * k) / DRAM + 4.0 * (m * k + m * n) / LLC          # weights from DRAM, activations from L3
    c = 2.0 * m * n * k / PEAK
    over = times(cpu(table()), [linear(m, n, k)])[0]
    packed = times(cpu(table(serial=1.0)), [linear(m, n, k)])[0]
    assert over == pytest.approx(max(d, c))
    assert packed == pytest.approx(max(d, c) + min(d, c))
    gemv = times(cpu(table(serial=1.0)), [linear(1, n, k)])[0]      # a GEMV streams the matrix once
    assert gemv == pytest.approx(max(4.0 * n * k / DRAM + 4.0 * (k + n) / LLC, 2.0 * n * k / PEAK))


def test_gemv_path_follows_the_weight_layout():
    """MKL on an EPYC VM: x @ Wᵀ at M = 2 runs like M = 1 (GEMV path), x @ W at M = 2 like a GEMM."""
    hw = cpu(table(serial=1.0, gemv_m=2))
    nt, kn = times(hw, [linear(2, 4096, 1024), linear(2, 4096, 1024, weights_kn=True)])
    d = 4.0 * 4096 * 1024 / DRAM + 4.0 * (2 * 1024 + 2 * 4096) / LLC
    c = 2.0 * 2 * 4096 * 1024 / PEAK
    assert nt == pytest.approx(max(d, c))                             # GEMV: overlapped
    assert kn == pytest.approx(d + c)                                 # GEMM: packed


def test_gemv_time_follows_the_matrix_not_m():
    hw = cpu(table(gemv_m=2, gemv_eta=0.01))                          # compute-bound GEMVs
    t1, t2 = times(hw, [linear(1, 4096, 1024), linear(2, 4096, 1024)])
    assert t2 == pytest.approx(t1, rel=0.01)


def test_a_gemm_table_gives_its_weights_their_own_eta():
    m, n, k = 64, 4096, 1024
    hw = cpu({**table(serial=1.0, streamed=0.5)})
    act, w = 4.0 * (m * k + m * n), 4.0 * n * k
    eta = (act + w) / (act / 1.0 + w / 0.5)          # one η per op: the byte-weighted reuse patterns
    d = w / (DRAM * eta) + act / (LLC * eta)
    c = 2.0 * m * n * k / PEAK
    assert times(hw, [linear(m, n, k)])[0] == pytest.approx(d + c)
    # a kind's memory η is its activations': the weights of a conv keep the streamed rate
    conv = Op("conv", "conv", flops=1.0, bytes={"activations": 1e6, "weights": 1e6}, dtype="fp32")
    cal = table()
    cal["memory"]["kind"] = {"conv": 0.1}
    t = times(cpu(cal), [conv])[0]
    eta = 2e6 / (1e6 / 0.1 + 1e6 / 1.0)
    # the weights in device memory: the slower of the kernel's rate in the cache (η·LLC) and DRAM at the
    # plain patterns' η (efficiency.slow_tier_eta)
    assert t == pytest.approx(1e6 / (LLC * eta) + max(1e6 / (LLC * eta), 1e6 / (DRAM * 1.0)))
    assert t < 0.6 * (1e6 / (LLC * 0.1) + 1e6 / (DRAM * 0.1))     # not the kind's 0.1 on the weights too


def test_a_workload_that_fits_the_last_cache_reads_its_weights_from_there():
    op = linear(4, 1024, 1024)
    small = times(cpu(), [op], footprint={"weights": 4.0 * 1024 * 1024})
    big = times(cpu(), [op], footprint={"weights": 1e9})
    assert small[0] == pytest.approx(op.total_bytes / LLC)
    assert big[0] == pytest.approx(4.0 * 1024 * 1024 / DRAM + 4.0 * (4 * 1024 * 2) / LLC)
    # the fit sees the same placement through op.attrs['resident']
    resident = Op(op.name, op.kind, flops=op.flops, bytes=op.bytes, dtype="fp32", attrs={"resident": True})
    assert times(cpu(), [resident])[0] == pytest.approx(small[0])


def test_a_shared_cache_is_as_large_as_the_copies_that_still_ran_at_its_rate():
    """A Xeon VM: sysfs says 480 MiB of L3, copies of 216 and 336 MiB run at DRAM speed."""
    mib = 2 ** 20
    rows = [{"level": "l3", "bytes": s * mib, "time_s": s * mib / bw}
            for s, bw in ((48, 57e9), (72, 56.8e9), (96, 54e9), (144, 46.7e9), (216, 35.6e9), (336, 29.7e9))]
    kept, cap = build.effective_cache(rows, 55e9, 0.0)
    assert cap == 144 * mib and len(kept) == 4
    calm = [dict(r, time_s=r["bytes"] / 55e9) for r in rows]
    assert build.effective_cache(calm, 55e9, 0.0) == (calm, None)     # every size kept the rate: the OS's


def test_gemv_m_is_read_off_the_cold_rows():
    def row(m, t, layout=None):
        r = {"dtype": "fp32", "m": m, "n": 4096, "k": 1024, "time_s": t, "cv": 0.01, "flops_per_s": 1.0,
             "weights": "cold"}
        return {**r, "layout": layout} if layout else r
    probe = {"gemm": [row(1, 0.60e-3), row(2, 0.63e-3), row(4, 1.14e-3), row(8, 1.50e-3),
                      row(1, 0.59e-3, "kn"), row(2, 1.06e-3, "kn")]}
    assert build.gemv_m(probe, "fp32") == 2
    assert build.gemv_m(probe, "fp32", "kn") == 1
    assert build.gemv_tables(probe) == {"fp32": {"gemv_m": 2, "gemv_pass": 0.05}}
    assert build.gemv_m({"gemm": []}, "fp32") is None


def test_a_gemv_path_that_rereads_its_weights_ends_where_the_packed_gemm_begins():
    """An EPYC VM's probe (x @ W, 16 MiB fp32 weights): M = 1, 2, 4 in 850, 1410, 2486 µs — M = 2 is
    1.66× M = 1 (beyond GEMV_SAME) but far below the packed GEMM at M = 4; x @ Wᵀ's M = 2 (2042 µs) is
    already at its packed level (M = 4: 2203, M = 8: 1995) and is no GEMV."""
    def row(m, t, layout):
        return {"dtype": "fp32", "m": m, "n": 4096, "k": 1024, "time_s": t * 1e-6, "cv": 0.01,
                "flops_per_s": 1.0, "weights": "cold", "layout": layout}
    probe = {"gemm": [row(1, 1050, "nt"), row(2, 2042, "nt"), row(4, 2203, "nt"), row(8, 1995, "nt"),
                      row(1, 850, "kn"), row(2, 1410, "kn"), row(4, 2486, "kn")]}
    assert build.gemv_m(probe, "fp32", "kn") == 2
    assert build.gemv_pass(probe, "fp32", "kn") == pytest.approx(1410 / 850 - 1)
    assert build.gemv_m(probe, "fp32", "nt") == 1 and build.gemv_pass(probe, "fp32", "nt") is None
    assert build.gemv_tables(probe) == {"fp32": {"gemv_m_kn": 2, "gemv_pass_kn": round(1410 / 850 - 1, 4)}}
    # the largest M has nothing larger to be below: it is on the path only if it ran like M = 1
    probe["gemm"] = probe["gemm"][:6]
    assert build.gemv_m(probe, "fp32", "kn") == 1


def test_cold_weight_pool_overflows_the_last_cache_within_bounds():
    assert gemm_probe.cold_pool_bytes(480 * 2 ** 20) == 960 * 2 ** 20
    assert gemm_probe.cold_pool_bytes(1 * 2 ** 20) == gemm_probe.COLD_MIN_BYTES
    assert gemm_probe.cold_pool_bytes(10 * 2 ** 30) == gemm_probe.COLD_MAX_BYTES
    full = gemm_probe.cold_shapes("fp32", quick=False)
    assert [s[3] for s in full].count("kn") == 10
    # M = 1 at five lengths of the stored weight rows per layout (x @ Wᵀ: K, x @ W: N), 256 to 16384
    for layout, length in (("nt", 2), ("kn", 1)):
        assert sorted(s[length] for s in full if s[0] == 1 and s[3] == layout) == [256, 768, 1024, 4096, 16384]
    assert gemm_probe.cold_shapes("fp16", quick=True) == []


@pytest.mark.parametrize("edit, field", [
    (lambda p: p.update(serial=1.5), "calibration.matmul.fp32.serial"),
    (lambda p: p.update(streamed=0.0), "calibration.matmul.fp32.streamed"),
    (lambda p: p.update(gemv_m=-2), "calibration.matmul.fp32.gemv_m"),
    (lambda p: p.update(gemv_m_kn="two"), "calibration.matmul.fp32.gemv_m_kn"),
    (lambda p: p.update(m_half_nt=-1.0), "calibration.matmul.fp32.m_half_nt"),
    (lambda p: p.update(streamed_kn=0.0), "calibration.matmul.fp32.streamed_kn"),
    (lambda p: p.update(gemv_pass_kn=3.0), "calibration.matmul.fp32.gemv_pass_kn"),
    (lambda p: p.update(gemv_pass=-0.1), "calibration.matmul.fp32.gemv_pass"),
])
def test_new_table_fields_are_checked(edit, field):
    cal = table()
    edit(cal["matmul"]["fp32"])
    with pytest.raises(IronlawError, match=field.replace(".", r"\.")):
        calibration.check(cal, "calibration")


def test_probe_rows_with_unknown_weights_or_layout_are_refused():
    from ironlaw.machine import profile
    probe = {"date": "2026-12-02T10:00:00+00:00", "stamp": "20261202-100000", "host": "h", "cpu": "c", "device": "c",
             "torch": "2.13.0", "threads": 2, "quick": False, "duration_s": 1.0, "max_cv": 0.15,
             "gemm": [{"dtype": "fp32", "m": 8, "n": 64, "k": 64, "time_s": 1e-5, "cv": 0.01, "flops_per_s": 1e10,
                       "weights": "cold", "layout": "kn"}]}
    profile.check_probe(probe, "probe")
    for key, bad in (("weights", "warm"), ("layout", "tn")):
        doc = {**probe, "gemm": [{**probe["gemm"][0], key: bad}]}
        with pytest.raises(IronlawError, match=rf"probe\.gemm\[0\]\.{key}"):
            profile.check_probe(doc, "probe")


def test_a_gemm_too_big_for_the_cache_pays_its_spilled_packed_copy():
    """Seen here, cold x @ Wᵀ at M = 8: 89 µs per MB of weights up to 67 MB, 114 µs per MB at 168 MB."""
    hw = cpu(table(serial=1.0, pack=0.6))
    small, big = linear(8, 4096, 1024), linear(8, 16384, 1024)      # 16.8 MB fits half of 64 MB; 67 MB does not
    assert 4.0 * 16384 * 1024 > 0.5 * LLC_BYTES > 4.0 * 4096 * 1024
    t_small, t_big = times(hw, [small, big])
    base_small, base_big = times(cpu(table(serial=1.0)), [small, big])
    assert t_small == pytest.approx(base_small)
    assert t_big == pytest.approx(base_big + 0.6 * 4.0 * 16384 * 1024 / DRAM)
    assert times(hw, [linear(1, 16384, 1024)])[0] == pytest.approx(times(cpu(table(serial=1.0)), [linear(1, 16384, 1024)])[0])


def test_the_packed_copy_spills_past_the_cache_size_the_os_reports_not_a_neighbours_share():
    """A probe taken under a neighbour's load can read the usable L3 as 14 of 32 MiB (an EPYC VM); with that
    as the spill threshold GPT-2's 7 MB weights would be priced at half the time per byte of its 9.4 MB ones,
    while in the model all of 2.4–9.4 MB run at the same time per weight byte. The BLAS blocks for the
    cache it is told of; the probe's own record of the OS's size sets the threshold."""
    hw = cpu(table(serial=1.0, pack=0.6))
    big = linear(8, 16384, 1024)                                    # 67 MB > half the 64 MB profile L3
    base = times(cpu(table(serial=1.0)), [big])[0]
    assert times(hw, [big])[0] > base * 1.1
    assert cache.pack_limit_bytes(hw) == 0.5 * LLC_BYTES        # no probe record: the profile's capacity
    hw.extra["probe"] = {"capacity": {"l3": 4 * LLC_BYTES}}         # the OS reported 256 MB
    assert cache.pack_limit_bytes(hw) == 0.5 * 4 * LLC_BYTES
    assert times(hw, [big])[0] == pytest.approx(base)


def test_x_at_w_transposed_has_its_own_m_half():
    """Measured on a 2-vCPU VM (hot, 1024×1024 weights): x @ Wᵀ 1.27× as fast as x @ W at M = 8, alike from M = 256; the
    table's m_half_nt is x @ Wᵀ's (nn.Linear), m_half stays x @ W's (the probe's torch.mm grid)."""
    from ironlaw.core.gemmshape import gemm_eta
    p = {"eta_max": 0.5, "m_half": 40.0, "m_half_nt": 20.0, "nk_half": 0.0}
    m = np.array([8.0, 8.0, 1024.0])
    eta = gemm_eta(p, m, 1024.0, 1024.0, np.array([True, False, False]))
    assert eta[0] == pytest.approx(0.5 * 8 / 48) and eta[1] == pytest.approx(0.5 * 8 / 28)
    assert eta[2] == pytest.approx(0.5 * 1024 / 1044)
    assert gemm_eta({k: v for k, v in p.items() if k != "m_half_nt"}, m, 1024.0, 1024.0, np.array([True, False, False]))[1] \
        == pytest.approx(eta[0])                            # without it both layouts share m_half


def test_the_probes_hot_x_at_w_transposed_rows_set_m_half_nt():
    """Hot rows of both layouts made with known m_half (x @ W) and m_half_nt (x @ Wᵀ): the profile's own fit
    gives them back in the right order, and the observations carry each row's layout."""
    rows = []
    for m, n, k in ((8, 1024, 1024), (32, 1024, 1024), (64, 1024, 1024), (256, 1024, 1024), (1024, 1024, 1024)):
        for layout, half in (("kn", 40.0), ("nt", 10.0)):
            t = 2.0 * m * n * k / (PEAK * 0.5 * m / (m + half)) + 2e-6
            rows.append({"dtype": "fp32", "m": m, "n": n, "k": k, "time_s": t, "cv": 0.01,
                         "flops_per_s": 2.0 * m * n * k / t, **({"layout": "nt"} if layout == "nt" else {})})
    obs = build.observations({"gemm": rows, "capacity": {"l3": LLC_BYTES}})
    assert [bool(o.op.attrs.get("weights_kn")) for o in obs] == [r.get("layout") != "nt" for r in rows]
    hw = cpu()
    cal = calibrate.fit(hw, obs, source="derived: test")
    p = cal["matmul"]["fp32"]
    assert p["m_half_nt"] < 0.5 * p["m_half"]            # (m_half trades against the free per-GEMM latency)
    pred = calibrate.predicted_s(calibration.with_calibration(hw, cal), obs)
    assert np.allclose(pred, [o.time_s for o in obs], rtol=0.02)
    one = {k: v for k, v in cal["matmul"]["fp32"].items() if k != "m_half_nt"}       # one m_half for both: the
    shared = calibrate.predicted_s(calibration.with_calibration(hw, {**cal, "matmul": {"fp32": one}}), obs)
    assert max(abs(shared / np.array([o.time_s for o in obs]) - 1)) > 0.3             # small-M rows miss by 30%+


def test_x_at_w_gemms_read_their_weights_at_their_own_eta():
    """EPYC VM probes: cold x @ W at M = 4 takes 2.7–4.5× its M = 1 time, x @ Wᵀ ~2×; with x @ Wᵀ's weight η
    GPT-2's Conv1D GEMMs (x @ W) at batch 4–16 come out at 0.65–0.85 of their measured time."""
    m, n, k = 8, 4096, 1024
    hw = cpu(table(serial=1.0, streamed=0.5, streamed_kn=0.25))
    act, w = 4.0 * (m * k + m * n), 4.0 * n * k
    c = 2.0 * m * n * k / PEAK

    def gemm(eta_w):
        eta = (act + w) / (act / 1.0 + w / eta_w)
        return w / (DRAM * eta) + act / (LLC * eta) + c
    nt, kn = times(hw, [linear(m, n, k), linear(m, n, k, weights_kn=True)])
    assert nt == pytest.approx(gemm(0.5)) and kn == pytest.approx(gemm(0.25))
    # a GEMV keeps the calibration's memory.streamed (1.0 here), whatever its layout
    gemv = times(hw, [linear(1, n, k, weights_kn=True)])[0]
    assert gemv == pytest.approx(max(w / DRAM + 4.0 * (k + n) / LLC, 2.0 * n * k / PEAK))
    # without streamed_kn both layouts share streamed
    assert times(cpu(table(serial=1.0, streamed=0.5)), [linear(m, n, k, weights_kn=True)])[0] == pytest.approx(gemm(0.5))


def test_a_gemv_path_row_beyond_the_first_rereads_the_weights():
    """x @ W at M = 2 on the GEMV path, measured 1.66× its M = 1 time (gemv_pass_kn = 0.66): the second row
    adds 0.66 × the weight bytes at device memory; M = 1 and x @ Wᵀ (no pass measured) add nothing."""
    n, k = 4096, 1024
    w = 4.0 * n * k
    hw = cpu(table(gemv_m_kn=2, gemv_pass_kn=0.66))
    one, two = times(hw, [linear(1, n, k, weights_kn=True), linear(2, n, k, weights_kn=True)])
    assert one == pytest.approx(w / DRAM + 4.0 * (k + n) / LLC)
    assert two == pytest.approx(1.66 * w / DRAM + 4.0 * 2 * (k + n) / LLC)
    cols = Graph("t", "infer", "fp32", [linear(2, n, k), linear(2, n, k, weights_kn=True),
                                        linear(4, n, k, weights_kn=True)]).columns()
    assert np.allclose(efficiency.extra_weight_bytes(hw.calibration, cols, cache.pack_limit_bytes(hw)), [0.0, 0.66 * w, 0.0])


def test_the_fit_gives_x_at_w_its_own_weight_eta_from_the_probes_rows():
    """Probe rows (hot and cold, both layouts) made by the law with a known table: the profile's own fit
    finds x @ W's weight η below x @ Wᵀ's and predicts every row within 3%; one weight η for both misses the
    cold x @ W rows by 20% or more."""
    truth = table(serial=1.0, streamed=0.5, streamed_kn=0.25)
    truth["matmul"]["fp32"].update(eta_max=0.8, m_half=8.0)
    shapes = [(m, 1024, 1024, hot, lay) for m in (8, 32, 256) for hot in (True,) for lay in ("kn", "nt")]
    shapes += [(m, 4096, 1024, False, lay) for m in (4, 8, 32, 128) for lay in ("kn", "nt")]

    def rows(t):
        return [{"dtype": "fp32", "m": m, "n": n, "k": k, "time_s": ti, "cv": 0.01, "flops_per_s": 1.0,
                 **({} if hot else {"weights": "cold"}),
                 **({"layout": lay} if (hot and lay == "nt") or (not hot and lay == "kn") else {})}
                for (m, n, k, hot, lay), ti in zip(shapes, t)]
    probe = {"gemm": rows([1e-3] * len(shapes)), "capacity": {"l3": LLC_BYTES}}
    t = calibrate.predicted_s(cpu(truth), build.observations(probe))
    obs = build.observations({**probe, "gemm": rows(t)})
    assert [bool(o.op.attrs.get("weights_kn")) for o in obs] == [s[4] == "kn" for s in shapes]
    hw = cpu()
    cal = calibrate.fit(hw, obs, source="derived: test")
    p = cal["matmul"]["fp32"]
    assert p["streamed_kn"] < 0.75 * p["streamed"]
    assert np.allclose(calibrate.predicted_s(calibration.with_calibration(hw, cal), obs), t, rtol=0.03)
    one = {k: v for k, v in p.items() if k != "streamed_kn"}
    shared = calibrate.predicted_s(calibration.with_calibration(hw, {**cal, "matmul": {"fp32": one}}), obs)
    cold_kn = np.array([not s[3] and s[4] == "kn" for s in shapes])
    assert np.max(np.abs(shared / t - 1)[cold_kn]) > 0.2


def test_an_ops_own_memory_eta_is_its_kernel_rate_in_the_cache_not_a_share_of_dram():
    """BERT's GELU class fits memory η 0.09 on 1 MB of cached activations (batch 1, an EPYC VM); charged to
    16.8 MB of DRAM activations (batch 16) at 0.09 of DRAM bandwidth that is 5.4× their measured time. In the cache the own η applies as fitted; in DRAM the traffic runs at the slower of the kernel's
    cached rate (η·LLC) and DRAM at the plain patterns' η (produced, 1.0 here)."""
    cal = table()
    cal["op"] = {"aten::gelu": {"memory": 0.09}}

    def gelu(b):
        return Op("aten::gelu", "elementwise", flops=0.0, bytes={"activations": b}, dtype="fp32")
    small, big = 1e6, 40e6                  # the activations resident limit: half the 64 MB LLC
    t_small, t_big = times(cpu(cal), [gelu(small), gelu(big)])
    assert t_small == pytest.approx(small / (LLC * 0.09))
    assert t_big == pytest.approx(max(big / (LLC * 0.09), big / DRAM))
    assert t_big < 0.6 * big / (DRAM * 0.09)                        # not 0.09 of DRAM
    fast = {**cal, "op": {"aten::gelu": {"memory": 1.5}}}          # an own η above 1: held at the law's bound
    assert times(cpu(fast), [gelu(big)])[0] == pytest.approx(big / DRAM)    # (efficiency.within_peak)
