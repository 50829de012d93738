"""A sliding-window prefill on a kernel that walks every key block of the sequence (SGLang's and vLLM's Triton
prefill) beside one that skips the blocks outside the window: the class's grid may read the whole sequence's keys
(``grid_keys = "sequence"``), the fit keeps it where its loss is lower, and the law reads it at prediction."""
import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.core.graph import Graph  # noqa: E402
from ironlaw.law.efficiency import grid_coords, kernel_coords  # noqa: E402
from ironlaw.machine import engines, hardware  # noqa: E402
from ironlaw.machine.calibration import SCHEMA, Calibration, check  # noqa: E402
from ironlaw.measure.calibrate import kernelfit, kerneltable  # noqa: E402
from ironlaw.measure.calibrate.fitcore import Problem  # noqa: E402

WINDOW = 128
NAME = "attention_context_bf16_kv_bf16_window"


def _rows(framework_source: dict) -> "pd.DataFrame":
    """Windowed context rows in the tables' columns, per head dim the kernel ``framework_source`` names."""
    out = []
    for hd, src in framework_source.items():
        for b in (1, 2, 4, 8):
            for s in (16, 64, 256, 512, 1024, 2048, 4096, 8192):
                for h, kv in ((8, 8), (16, 8), (32, 8), (32, 4), (48, 4), (64, 4), (64, 1)):
                    out.append({"device": "NVIDIA B200", "batch_size": b, "isl": s, "num_heads": h,
                                "num_key_value_heads": kv, "head_dim": hd, "window_size": WINDOW,
                                "attn_dtype": "bfloat16", "kv_cache_dtype": "bfloat16", "step": 0,
                                "kernel_source": src, "latency_s": 1e-3})
    return pd.DataFrame(out)


def _group(framework: str):
    rows = _rows({64: "trtllm_mha", 192: "triton"})
    t = kerneltable.KernelTable("context_attention", "b200", "NVIDIA B200", framework, "0.5.14", "x.parquet", rows)
    (g,) = kernelfit.groups([t])
    return g


def _walking(hw, g, shape):
    """``g``'s rows timed as the shape model prices them at head dim 64, and at head dim 192 as a kernel whose
    masked blocks each cost a fifth of a computed one: (window keys + (causal keys - window keys) / 5) / window keys."""
    cal = {"schema": SCHEMA, "source": "derived: test", "fitted": [g.name], "kernel": {NAME: shape}}
    prob = Problem(hw, kernelfit.observations(g, g.rows, hw), weighting="per_case")
    s = g.rows.isl.to_numpy(float)
    causal, window = (s + 1.0) / 2.0, np.minimum((s + 1.0) / 2.0, float(WINDOW))
    walk = np.where(g.rows.head_dim.to_numpy() == 192, (window + (causal - window) / 5.0) / window, 1.0)
    lat = shape["latency_s"]
    rows = g.rows.assign(latency_s=lat + (prob.times(cal) - lat) * walk)
    return kernelfit.Group(g.name, g.key, g.op, g.table, rows), cal


def _errors(hw, g, cal, table):
    p = Problem(hw, kernelfit.observations(g, g.rows, hw), weighting="per_case")
    return p.times({**cal, "kernel": {NAME: table}}) / p.meas - 1.0


def test_a_walking_kernels_window_rows_are_fitted_over_the_whole_sequence():
    """Head dim 192's rows grow with the sequence at a fixed window: a grid over the window's keys follows them only
    where the query rows per KV head (M) happen to tell the sequence apart (its N is the window at every long row);
    over the sequence's keys it follows them all, and the fit keeps that one."""
    hw = hardware.get("b200")
    g = _group("sglang")
    shape = {k: v for k, v in engines.load("b200", "sglang")["kernel"][NAME].items()
             if k not in ("grid_nodes", "grid_log", "grid_keys")}
    g, cal = _walking(hw, g, shape)
    walked = kernelfit.grid.fit_grid(hw, g, g.rows, shape)
    plain = kernelfit.grid.fit_grid(hw, g, g.rows, shape, walk=False)
    assert walked["grid_keys"] == "sequence" and "grid_keys" not in plain
    long = g.rows.isl.to_numpy() >= 2048
    e_walk, e_plain = (np.abs(_errors(hw, g, cal, t)) for t in (walked, plain))
    p90 = lambda e: float(np.percentile(e, 90))  # noqa: E731
    assert p90(e_walk[long]) < 0.05 < 0.2 < p90(e_plain[long])      # (here: 1.7% and 42%)
    assert p90(e_walk[~long]) < 0.05


def test_every_frameworks_window_class_tries_the_sequence_and_a_global_class_keeps_its_keys():
    """The rule is the context window classes' of ``WALK_FRAMEWORKS`` — vLLM's, SGLang's and TensorRT-LLM's (its L40S
    window prefill follows the sequence too; the fit chooses per class) — and a global class states no whole
    sequence."""
    assert all(kernelfit.rules.walks(_group(f)) for f in ("sglang", "vllm", "trtllm"))
    assert not kernelfit.rules.walks(_group("aiter"))
    g = _group("sglang")
    glob = kernelfit.Group(g.name, ("kernel", "attention_context_bf16_kv_bf16"), g.op, g.table, g.rows)
    assert not kernelfit.rules.walks(glob)


def test_the_law_reads_the_sequences_keys_only_for_a_walking_class():
    """``efficiency.kernel_coords``: N of a windowed prefill op of a ``grid_keys = "sequence"`` class is (s + 1) / 2
    keys of its s tokens; the same op of a class without it keeps the window's keys, as does every op without a
    whole sequence stated."""
    hw = hardware.get("b200")
    g = _group("sglang")
    rows = g.rows[(g.rows.isl == 4096) & (g.rows.head_dim == 192)].iloc[:1]
    ops = [o.op for o in kernelfit.observations(g, rows, hw)]
    assert ops[0].attrs["history"] == 4096.0
    cols = Graph("attention", "prefill", "bf16", ops).columns()
    base = {"schema": SCHEMA, "source": "derived: test", "fitted": [g.name]}
    shape = {"eta_max": 0.5, "latency_s": 1e-6}
    n_plain = kernel_coords(Calibration.of({**base, "kernel": {NAME: shape}}), cols)[1]
    n_walk = kernel_coords(Calibration.of({**base, "kernel": {NAME: {**shape, "grid_keys": "sequence"}}}), cols)[1]
    assert float(np.ravel(n_plain)[0]) == pytest.approx(float(np.ravel(grid_coords(cols)[1])[0]))
    assert float(np.ravel(n_plain)[0]) < WINDOW + 1
    assert float(np.ravel(n_walk)[0]) == pytest.approx(4097.0 / 2.0)


def test_an_unknown_grid_keys_is_refused():
    table = engines.load("b200", "sglang")
    shape = {**table["kernel"][NAME], "grid_keys": "window"}
    with pytest.raises(IronlawError, match="grid_keys: must be one of sequence, got 'window'"):
        check({**table, "kernel": {**table["kernel"], NAME: shape}}, "calibration")
