"""A GEMV's fixed cost per stored weight row (``gemv_row``, ``gemv_row_kn``): measured by the probe, charged by
the law on GEMVs whose weights come from device memory, and the N and K that tell an op's row length.

Measured on a 2-vCPU AMD EPYC VM (torch 2.13, cold M = 1, equal bytes, four rounds), µs per MB of weights by
row length: x @ W (rows of N) 256: 143, 768: 80, 1024: 69, 4096: 62, 8192: 53; x @ Wᵀ (rows of K) 256: 154,
768: 95, 1024: 73, 4096: 61, 8192: 54 — GPT-2's c_proj (x @ W, N = 768) runs 1.3× slower per byte than its
c_fc (N = 3072)."""
import math

import numpy as np
import pytest

from ironlaw.measure.calibrate import calibrate, fitcore
from ironlaw.machine import calibration
from ironlaw.core.errors import IronlawError
from ironlaw.core.gemmshape import row_factor
from ironlaw.measure.calibrate import build
from ironlaw.measure.validate.compare import row_attrs

from test_cpu_gemm_model import DRAM, LLC, cpu, linear, table, times

# the means above over the fastest of the probe's lengths (4096)
US_PER_MB_KN = {256: 143.0, 768: 80.0, 1024: 69.0, 4096: 62.0}
ROWS_KN = [[n, round(t / 62.0, 4)] for n, t in sorted(US_PER_MB_KN.items())]
F = dict(ROWS_KN)


def cold(m, n, k, us_per_mb, layout="nt"):
    return {"dtype": "fp32", "m": m, "n": n, "k": k, "weights": "cold", "time_s": us_per_mb * 4e-6 * n * k / 1e6,
            "cv": 0.01, **({"layout": "kn"} if layout == "kn" else {})}


def test_the_probe_reads_the_factor_per_row_length_off_its_cold_gemvs():
    rows = [cold(1, n, 4 * 2**20 // n, us, "kn") for n, us in US_PER_MB_KN.items()]
    rows += [cold(2, 4096, 1024, 70.0, "kn"), cold(1, 4096, 768, 95.0), cold(1, 4096, 1024, 73.0),
             cold(1, 8192, 1024, 75.0)]                         # x @ Wᵀ: K = 1024 twice (mean 74), K = 768
    probe = {"gemm": rows}
    assert build.gemv_row(probe, "fp32", "kn") == ROWS_KN
    assert build.gemv_row(probe, "fp32", "nt") == [[768, round(95.0 / 74.0, 4)], [1024, 1.0]]
    tables = build.gemv_tables(probe)["fp32"]
    assert tables["gemv_row_kn"] == ROWS_KN and tables["gemv_row"][1] == [1024, 1.0]
    # one length is no table; the GEMV path is still read off the shape that was timed at larger M
    assert build.gemv_row({"gemm": rows[:1] + rows[4:5]}, "fp32", "kn") is None
    assert build.gemv_m(probe, "fp32", "kn") == 2


def test_the_factor_is_interpolated_in_log_length_and_held_at_the_ends():
    p = {"gemv_row_kn": ROWS_KN, "gemv_row": [[1024, 1.2], [4096, 1.0]]}
    kn = np.array([True] * 5 + [False] * 2)
    got = row_factor(p, np.array([768, 2048, 100, 1e6, np.nan, 2048, 768]), kn)
    at_2048 = F[1024] + (1.0 - F[1024]) * (math.log(2048 / 1024) / math.log(4096 / 1024))
    assert got == pytest.approx([F[768], at_2048, F[256], 1.0, 1.0, 1.1, 1.2])
    assert row_factor({}, np.array([256.0]), np.array([True])) == pytest.approx([1.0])


def gemv(n, k, **attrs):
    return linear(1, n, k, nk=(n, k), **attrs)


def test_a_gemv_from_memory_pays_its_row_factor_and_a_cache_resident_one_does_not():
    hw = cpu(table(gemv_row_kn=ROWS_KN))
    w = 4.0 * 768 * 3072
    act = 4.0 * (3072 + 768) / LLC

    def stream(factor):
        return w * factor / DRAM + act

    c_proj, c_fc, unstated, nt = times(hw, [gemv(768, 3072, weights_kn=True), gemv(3072, 768, weights_kn=True),
                                            linear(1, 768, 3072, weights_kn=True), gemv(768, 3072)])
    assert c_proj == pytest.approx(stream(F[768]))
    at_3072 = F[1024] + (1.0 - F[1024]) * math.log(3) / math.log(4)
    assert c_fc == pytest.approx(stream(at_3072))
    assert unstated == pytest.approx(stream(1.0))               # N and K not stated: no row length, no factor
    assert nt == pytest.approx(stream(1.0))                     # x @ Wᵀ: this table times only x @ W
    (resident,) = times(hw, [gemv(768, 3072, weights_kn=True)], footprint={"weights": w})
    assert resident == pytest.approx(w / LLC + act)
    gemm = times(hw, [linear(64, 768, 3072, nk=(768, 3072), weights_kn=True)])[0]
    assert gemm == pytest.approx(times(cpu(table()), [linear(64, 768, 3072, weights_kn=True)])[0])


def test_the_fit_sees_the_same_row_cost_as_the_law():
    """calibrate's fast path (_times) and law.predict agree on a GEMV with a row factor, resident or not."""
    hw = cpu(table(gemv_row_kn=ROWS_KN))
    cal = hw.calibration.table()
    ops = [gemv(768, 3072, weights_kn=True), gemv(768, 3072, weights_kn=True, resident=True)]
    obs = [calibrate.Observation(op, 1e-3, "test") for op in ops]
    fast = fitcore.Problem(hw, obs).times(cal)
    assert fast == pytest.approx(calibrate.predicted_s(hw, obs))
    assert fast[0] > 1.2 * fast[1]


@pytest.mark.parametrize("rows", [[[768, 1.3]], [[768, 1.3], [768, 1.0]], [[768, 0.0], [4096, 1.0]],
                                  [[0, 1.3], [4096, 1.0]], [[768, 99.0], [4096, 1.0]], "fast", [[768, "x"], [4096, 1]]])
def test_a_hand_edited_row_table_is_refused_with_its_field_named(rows):
    cal = table(gemv_row=rows)
    with pytest.raises(IronlawError, match=r"calibration\.matmul\.fp32\.gemv_row:"):
        calibration.check(cal, "calibration")


def test_rows_saved_before_they_carried_n_and_k_get_them_from_their_shapes():
    c_proj = {"name": "aten::addmm", "kind": "matmul", "dtype": "fp32", "shapes": "[768],[1,3072],[3072,768]",
              "bytes": {"weights": 4.0 * (3072 * 768 + 768), "activations": 15360.0}, "weights_kn": True}
    assert row_attrs(c_proj) == {"weights_kn": True, "nk": (768, 3072)}
    lm_head = {"name": "aten::mm", "kind": "matmul", "dtype": "fp32", "shapes": "[1,768],[768,50257]",
               "bytes": {"weights": 4.0 * 768 * 50257}}
    assert row_attrs(lm_head) == {"nk": (50257, 768)}
    two_activations = {**lm_head, "bytes": {"activations": 4.0 * 768 * 50257}}
    assert row_attrs(two_activations) == {}
    # GPT-2's lm_head on the last position of a prefill: a bmm over the one weight matrix
    last = {**lm_head, "name": "aten::bmm", "shapes": "[1,1,768],[1,768,50257]"}
    assert row_attrs(last) == {"nk": (50257, 768)}
    assert row_attrs({**last, "shapes": "[4,1,768],[4,768,50257]"}) == {}     # four matrices: not one weight


def test_captured_products_with_a_weight_matrix_state_n_and_k():
    torch = pytest.importorskip("torch")
    from ironlaw.models.capture import record
    from ironlaw.models.capture.graph import op_attrs

    class Conv1D(torch.nn.Module):                              # GPT-2's: x @ W, W stored K×N
        def __init__(self, k, n):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(k, n))
            self.bias = torch.nn.Parameter(torch.zeros(n))

        def forward(self, x):
            return torch.addmm(self.bias, x, self.weight)

    model = torch.nn.Sequential(torch.nn.Linear(48, 32), Conv1D(32, 16))
    recs = [r for r in record(model, (torch.randn(1, 48),), real=False) if r.name == "aten::addmm"]
    assert [op_attrs(r) for r in recs] == [{"nk": (32, 48)}, {"weights_kn": True, "nk": (16, 32)}]
    class Square(torch.nn.Module):
        def forward(self, x):
            return torch.mm(x, x.t())

    class LastPosition(torch.nn.Module):                       # logits of the last position only, as HF's
        def __init__(self):                                     # GPT-2 computes them in a prefill
            super().__init__()
            self.head = torch.nn.Linear(48, 40, bias=False)

        def forward(self, h):
            return self.head(h[:, -1:, :])

    (last,) = [r for r in record(LastPosition(), (torch.randn(1, 5, 48),), real=False) if r.kind == "matmul"]
    assert op_attrs(last) == {"nk": (40, 48)}, last.name

    pair = [r for r in record(Square(), (torch.randn(3, 5),), real=False) if r.name == "aten::mm"]
    assert [op_attrs(r) for r in pair] == [{}]                  # two activations: no weight rows to speak of


def test_tensor_parallel_shards_state_their_own_n_and_k():
    from ironlaw.models.parallel import tp_shard
    from ironlaw.models.workloads import Request, resolve
    g = resolve(Request("llama3-8b", batch=1, seq=8, phase="prefill"))
    nk = {op.name: op.attrs["nk"] for op in tp_shard(g, 4).ops if "nk" in op.attrs}
    assert nk["mlp_up_proj"] == (2 * 14336 / 4, 4096)           # column parallel: N split
    assert nk["mlp_down_proj"] == (4096, 14336 / 4)             # row parallel: K split
    assert {op.name: op.attrs["nk"] for op in g.ops if "nk" in op.attrs}["mlp_down_proj"] == (4096, 14336)


def test_a_fit_keeps_the_measured_row_tables_and_they_survive_the_profile_file():
    import tomllib

    from ironlaw.machine.profile import dumps_table
    rows = [cold(1, n, 4 * 2**20 // n, us, "kn") for n, us in US_PER_MB_KN.items()]
    rows += [cold(m, 4096, 1024, 100.0 * m, "kn") for m in (2, 4, 8)] + [cold(1, 4096, 1024, 70.0)]
    probe = {"gemm": rows}
    cal = calibrate.fit(cpu(), build.observations(probe), "derived: test", start={"matmul": build.gemv_tables(probe)})
    assert cal["matmul"]["fp32"]["gemv_row_kn"] == ROWS_KN
    again = tomllib.loads(dumps_table({"calibration": cal}))["calibration"]
    assert calibration.check(again, "calibration")["matmul"]["fp32"]["gemv_row_kn"] == ROWS_KN

