"""The Blackwell GPUs' MLA BMM rows (B200, GB200, B300, GB300) are fitted and scored through the L2 their collector
replays them out of (``kernelfit.rules.REPLAY_CACHE_OPS``, ``REPLAY_L2``, ``kernelfit.ops.replayed_hw``), a level
their catalog files do not state: the fit's and the held-out score's device has it, the prediction path's does not."""
import numpy as np
import pytest

pytest.importorskip("pandas")
import pandas as pd  # noqa: E402

from ironlaw.core.graph import Graph  # noqa: E402
from ironlaw.law import law  # noqa: E402
from ironlaw.machine import hardware  # noqa: E402
from ironlaw.measure.calibrate import kernelfit  # noqa: E402
from ironlaw.measure.calibrate.fitcore import Problem  # noqa: E402
from ironlaw.measure.calibrate.kerneltable import KernelTable  # noqa: E402

B200 = "NVIDIA B200"
# mla_gen_post at 128 heads × 160 tokens: 43 MB of bf16 input, weights and output (6.5 µs measured, TensorRT-LLM
# 1.3.0rc20); at 64 heads × 1,536 tokens: 134 MB, past the 132.6 MB L2 (29.0 µs, 4.6 TB/s)
ROWS = [("mla_gen_post", 128, 160), ("mla_gen_post", 64, 1536)]


def _group(gpu: str, device: str, rows: list, latency_s=1e-5) -> kernelfit.Group:
    frame = pd.DataFrame([{"op_name": o, "num_heads": h, "num_tokens": t, "latency_s": 1e-5} for o, h, t in rows])
    frame["latency_s"] = latency_s
    table = KernelTable("mla_bmm", gpu, device, "trtllm", "1.3.0rc20", "mla_bmm_perf.parquet", frame)
    return kernelfit.Group("mla bmm bf16", ("kernel", "mla_bmm_bf16"), "mla_bmm", table, frame, dtype="bf16")


def test_b200_mla_bmm_rows_read_what_fits_the_replayed_l2_from_there():
    hw = hardware.get("b200")
    g = _group("b200", B200, ROWS)
    dev = kernelfit.ops.replayed_hw(g, hw)
    cache = [t for t in dev.memory if t.role == "cache"]
    capacity, rate, _ = kernelfit.rules.REPLAY_L2["b200"]
    assert len(cache) == 1 and cache[0].capacity_bytes == capacity and cache[0].bw_Bps == rate
    warm = [bool(o.op.attrs.get("warm_activations")) for o in kernelfit.observations(g, g.rows, dev)]
    assert warm == [True, False]
    assert not any(o.op.attrs.get("warm_activations") for o in kernelfit.observations(g, g.rows, hw))
    fits = kernelfit.observations(g, g.rows.iloc[:1], dev)[0].op
    replayed = float(np.max(law.predict(Graph("row", "decode", "bf16", [fits]), dev).time_s))
    cold = float(np.max(law.predict(Graph("row", "decode", "bf16", [fits]), hw).time_s))
    assert replayed < 0.8 * cold


@pytest.mark.parametrize("gpu, device", [("b300", "NVIDIA B300 SXM6 AC"), ("gb300", "NVIDIA GB300")])
def test_blackwell_ultra_mla_bmm_rows_read_through_b300s_measured_l2(gpu, device):
    # B300's L2 as a device query reads it, 132,644,864 B, at an L1-bypassing read's measured 17 TB/s; GB300's GPU the
    # same part
    hw = hardware.get(gpu)
    g = _group(gpu, device, ROWS)
    dev = kernelfit.ops.replayed_hw(g, hw)
    cache = [t for t in dev.memory if t.role == "cache"]
    assert len(cache) == 1 and cache[0].capacity_bytes == 132_644_864 and cache[0].bw_Bps == 17e12
    assert "QuickRunCUDA" in cache[0].source and "tuning guide" not in cache[0].source
    warm = [bool(o.op.attrs.get("warm_activations")) for o in kernelfit.observations(g, g.rows, dev)]
    assert warm == [True, False]
    assert not any(t.role == "cache" for t in hw.memory)             # the prediction path: no L2 tier
    assert "132.645 MB L2" in kernelfit.fitting.replayed_from(dev, hw)


def test_every_replayed_level_names_its_source():
    assert set(kernelfit.rules.REPLAY_L2) == set(kernelfit.rules.REPLAY_L2_SOURCE)
    assert {g for gpus in kernelfit.rules.REPLAY_CACHE_OPS.values() for g in gpus} <= set(kernelfit.rules.REPLAY_L2)


def test_gb200_reads_through_b200s_level():
    hw = hardware.get("gb200")
    dev = kernelfit.ops.replayed_hw(_group("gb200", "NVIDIA GB200", ROWS), hw)
    cache = [t for t in dev.memory if t.role == "cache"]
    assert len(cache) == 1 and (cache[0].capacity_bytes, cache[0].bw_Bps) == kernelfit.rules.REPLAY_L2["b200"][:2]
    assert "B200's" in cache[0].source and not any(t.role == "cache" for t in hw.memory)


def test_the_catalog_and_every_other_class_keep_their_device():
    b200 = hardware.get("b200")
    assert not any(t.role == "cache" for t in b200.memory)          # the prediction path: no L2 tier
    assert kernelfit.rules.holds(kernelfit.rules.REPLAY_CACHE_OPS, "mla_bmm", "b200")
    gemm = kernelfit.Group("gemm bf16", ("matmul", "bf16"), "gemm", _group("b200", B200, ROWS).table, None)
    assert kernelfit.ops.replayed_hw(gemm, b200) is b200
    h100 = hardware.get("h100")                                      # states its own L2: kept
    assert kernelfit.ops.replayed_hw(_group("h100", "NVIDIA H100 80GB HBM3", ROWS), h100) is h100


def test_the_held_out_score_and_the_provenance_read_through_it():
    hw = hardware.get("b200")
    cal = hw.calibration.table()
    rows = [(p, h, t) for p in ("mla_gen_pre", "mla_gen_post") for h in (32, 128) for t in (64, 160, 384, 1536)]
    g = _group("b200", B200, rows)
    dev = kernelfit.ops.replayed_hw(g, hw)
    timed = Problem(dev, kernelfit.observations(g, g.rows, dev), weighting="per_case").times(cal)
    g = _group("b200", B200, rows, latency_s=timed)                  # rows timed as the replayed device prices them
    assert float(np.max(kernelfit.scoring.held_errors(hw, cal, g))) < 1e-9
    note = kernelfit.fitting.replayed_from(dev, hw)
    assert "132.645 MB L2" in note and "REPLAY_L2" in note
    assert kernelfit.fitting.replayed_from(hw, hw) == ""


def test_the_rate_scan_keeps_the_least_fit_row_loss_and_restores_the_stated_level(monkeypatch, tmp_path):
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import replay_rate
    assert replay_rate.best([(8.5, 0.0297, []), (17.5, 0.0196, []), (20.0, 0.0198, [])]) == 17.5
    stated = kernelfit.rules.REPLAY_L2["b200"]
    assert [r[0] for r in replay_rate.scan(tmp_path, "b200_sxm", (10.0, 20.0))] == [10.0, 20.0]   # no table read
    seen = []

    def failing_fit(hw, gs):
        seen.append(kernelfit.rules.REPLAY_L2["b200"][1])
        raise RuntimeError("fit")
    monkeypatch.setattr(kernelfit, "groups", lambda tables: ["a class"])
    monkeypatch.setattr(kernelfit, "fit", failing_fit)
    with pytest.raises(RuntimeError):
        replay_rate.scan(tmp_path, "b200_sxm", (10.0,))
    assert seen == [10e12]                                             # fitted at the scanned rate
    assert kernelfit.rules.REPLAY_L2["b200"] == stated                 # and the stated level restored
