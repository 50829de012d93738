"""The per-op law on a hand-made device, checked against arithmetic done by hand."""
import numpy as np
import pytest

from ironlaw.machine import hardware
from ironlaw.law import law
from ironlaw.core.errors import IronlawError
from ironlaw.core.graph import Graph, Op

S = "estimate: test device"


def device(**over):
    d = {
        "schema": "ironlaw.hardware/1", "name": "toy", "title": "toy device", "kind": "gpu",
        "compute": {"bf16": {"peak_flops": 100e12, "source": S}, "fp32": {"peak_flops": 10e12, "source": S}},
        "vector": {"peak_flops": 10e12, "source": S},
        "memory": [
            {"name": "sram", "role": "cache", "capacity_bytes": 10e6, "bw_Bps": 10e12, "source": S},
            {"name": "hbm", "role": "device", "capacity_bytes": 1e9, "bw_Bps": 1e12, "source": S},
            {"name": "host", "role": "host", "capacity_bytes": 100e9, "bw_Bps": 10e9, "source": S},
        ],
        "latency": {"op_s": 1e-6, "source": S},
        "efficiency": {"matmul": 0.5, "other": 0.25, "memory": 0.8, "source": S},
    }
    d.update(over)
    return hardware.parse_hardware(d, "toy")


def graph(ops, footprint=None):
    return Graph("toy", "infer", "bf16", ops, footprint=footprint or {})


def test_compute_bound_matmul_time_is_flops_over_peak_eta_plus_latency():
    hw = device()
    op = Op("mm", "matmul", flops=1e12, bytes={"weights": 1e6}, dtype="bf16")
    est = law.predict(graph([op], {"weights": 1e6}), hw)
    assert est.time_s == pytest.approx(1e12 / (100e12 * 0.5) + 1e-6)
    assert est.bottleneck()["resource"] == "compute"


def test_bandwidth_bound_time_and_tier():
    hw = device()
    op = Op("gemv", "matmul", flops=1e6, bytes={"weights": 500e6}, dtype="bf16")
    est = law.predict(graph([op], {"weights": 500e6}), hw)
    assert est.time_s == pytest.approx(500e6 / (1e12 * 0.8) + 1e-6)
    b = est.bottleneck()
    assert (b["resource"], b["tier"]) == ("bandwidth", "hbm")


def test_latency_bound_many_tiny_ops():
    hw = device()
    ops = [Op("relu", "elementwise", flops=1e3, bytes={"activations": 8e3}, count=100)]
    est = law.predict(graph(ops), hw)
    assert est.bottleneck()["resource"] == "latency"
    assert est.term("latency_s") == pytest.approx(100e-6)


def test_small_activations_read_from_cache_large_from_device_memory():
    hw = device()
    small = Op("add", "elementwise", flops=0.0, bytes={"activations": 1e6})
    big = Op("add", "elementwise", flops=0.0, bytes={"activations": 100e6})
    e = law.predict(graph([small, big], {"activations": 101e6}), hw)
    rows = e.rows()
    assert rows[0]["tier"] == "sram" and rows[1]["tier"] == "hbm"
    assert rows[0]["data_s"] == pytest.approx(1e6 / (10e12 * 0.8))


def test_spill_is_capacity_bound_and_charged_at_host_bandwidth():
    hw = device()
    op = Op("lookup", "embedding", flops=0.0, bytes={"tables": 1e9})
    est = law.predict(graph([op], {"tables": 2e9}), hw)   # 1 GB fits in hbm, 1 GB spills to host
    b = est.bottleneck()
    assert (b["resource"], b["tier"]) == ("capacity", "host")
    expected = 0.5e9 / (1e12 * 0.8) + 0.5e9 / (10e9 * 0.8)
    assert est.term("data_s") == pytest.approx(expected)


def test_does_not_fit_anywhere_is_infinite():
    hw = device()
    op = Op("lookup", "embedding", bytes={"tables": 1.0})
    est = law.predict(graph([op], {"tables": 1e12}), hw)
    assert est.time_s == float("inf") and not bool(est.placement.fits)


def test_serial_is_sum_overlap_is_max():
    hw = device()
    op = Op("mm", "matmul", flops=1e12, bytes={"weights": 8e9 * 0.0 + 4e8}, dtype="bf16")
    g = graph([op], {"weights": 4e8})
    c, d, l = 1e12 / 50e12, 4e8 / 0.8e12, 1e-6
    assert law.predict(g, hw, "serial").time_s == pytest.approx(c + d + l)
    assert law.predict(g, hw, "overlap").time_s == pytest.approx(max(c, d) + l)


def test_missing_dtype_is_an_error_not_a_fallback():
    hw = device()
    op = Op("mm", "matmul", flops=1e9, bytes={"weights": 1e6}, dtype="fp8")
    with pytest.raises(IronlawError, match="no fp8"):
        law.predict(graph([op]), hw)


def test_vectorized_configs_match_scalar_runs():
    hw = device()
    b = np.array([1.0, 8.0, 64.0, 512.0])
    op = Op("mm", "matmul", flops=2 * b * 4096 * 4096, bytes={"weights": 2 * 4096 * 4096 + 0 * b,
                                                             "activations": 4 * b * 4096})
    vec = law.predict(graph([op], {"weights": 2 * 4096 * 4096, "activations": 4 * b * 4096}), hw)
    for i, bi in enumerate(b):
        op1 = Op("mm", "matmul", flops=2 * bi * 4096 * 4096, bytes={"weights": 2 * 4096 * 4096, "activations": 4 * bi * 4096})
        one = law.predict(graph([op1], {"weights": 2 * 4096 * 4096, "activations": 4 * bi * 4096}), hw)
        assert vec.time_s[i] == pytest.approx(one.time_s)


@pytest.mark.parametrize("bad", [
    {"compute": {"bf16": {"peak_flops": -1, "source": S}}},
    {"compute": {"bf17": {"peak_flops": 1e12, "source": S}}},
    {"compute": {"bf16": {"peak_flops": 1e12}}},
    {"compute": {"bf16": {"peak_flops": 1e12, "source": "trust me"}}},
    {"latency": {"op_s": 0, "source": S}},
    {"colour": "red"},
    {"memory": [{"name": "hbm", "role": "device", "capacity_bytes": 1e9, "bw_Bps": 1e12, "source": S},
                {"name": "sram", "role": "cache", "capacity_bytes": 1e6, "bw_Bps": 1e13, "source": S}]},
    {"memory": [{"name": "hbm", "role": "device", "capacity_bytes": "80 GB/s", "bw_Bps": 1e12, "source": S}]},
])
def test_malformed_hardware_is_refused(bad):
    with pytest.raises(IronlawError):
        device(**bad)
