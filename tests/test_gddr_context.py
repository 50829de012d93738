"""Prefill rows on the GDDR GPUs (L40S, RTX PRO 6000): the rows whose query, keys, values and output fit the L2 are
read from it, as the collector's repeated calls run them, and their grids are pulled harder toward factor 1."""
import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from ironlaw.machine import calibration, hardware  # noqa: E402
from ironlaw.measure.calibrate import kernelfit, kerneltable  # noqa: E402
from ironlaw.measure.calibrate.fitcore import Problem  # noqa: E402


def _group(gpu: str, batches=(8, 16, 32, 64), window: int = 0, framework: str = "sglang"):
    """A context class of ``gpu`` on ``framework``'s table: 96 query heads on one KV head × 128, 128 tokens per
    sequence, at ``batches`` (RTX PRO 6000's SGLang 0.5.14 rows at these shapes: 26.8, 43.5, 140, 285 µs)."""
    rows = pd.DataFrame([{"device": gpu, "batch_size": b, "isl": 128, "num_heads": 96, "num_key_value_heads": 1,
                          "head_dim": 128, "window_size": window, "attn_dtype": "bfloat16",
                          "kv_cache_dtype": "bfloat16", "step": 0, "kernel_source": "flashinfer",
                          "latency_s": 1e-4} for b in batches])
    t = kerneltable.KernelTable("context_attention", gpu, gpu, framework, "0.5.14", "x.parquet", rows)
    (g,) = kernelfit.groups([t])
    return g


def _warm(g, hw) -> list[bool]:
    return [bool(o.op.attrs.get("warm_activations")) for o in kernelfit.observations(g, g.rows, hw)]


def test_rows_that_fit_the_l2_are_read_from_it_on_the_gddr_gpus_only():
    """RTX PRO 6000 (128 MiB L2): 16 sequences (97 MiB of query and output) fit, 32 (194 MiB) do not; the same rows of
    an HBM GPU's table, and TensorRT-LLM's, keep their device-memory reads (``RESIDENT_CONTEXT`` names the GDDR GPUs
    alone, ``RESIDENT_CONTEXT_FRAMEWORKS`` vLLM and SGLang)."""
    rtx = hardware.get("rtx-pro-6000")
    assert _warm(_group("rtx-pro-6000"), rtx) == [True, True, False, False]
    l40s = hardware.get("l40s")                       # 96 MiB: 8 sequences (48.5 MiB) fit, 16 do not
    assert _warm(_group("l40s"), l40s) == [True, False, False, False]
    h100 = hardware.get("h100")
    assert _warm(_group("h100"), h100) == [False] * 4
    assert _warm(_group("rtx-pro-6000", framework="trtllm"), rtx) == [False] * 4    # TensorRT-LLM's keep their fit


def test_the_law_prices_the_l2_edge_as_a_jump():
    """With its rows warm where they fit, a bandwidth-bound class's time at the L2's edge grows by more than the
    twice its bytes: 32 sequences over 16 on RTX PRO 6000 (measured 3.2×), as the GDDR7 against the L2 prices them."""
    hw = hardware.get("rtx-pro-6000")
    g = _group("rtx-pro-6000", batches=(16, 32))
    p = Problem(hw, kernelfit.observations(g, g.rows, hw), weighting="per_case")
    cal = {"schema": calibration.SCHEMA, "source": "test", "fitted": [g.name],
           g.key[0]: {g.key[1]: {"eta_max": 1.0, "m_half": 0.0, "nk_half": 0.0, "k_half": 0.0, "streamed": 1.0,
                                 "latency_s": 0.0}}}
    t16, t32 = p.times(cal)
    assert t32 / t16 > 2.5
    moved = np.asarray(p.placed.traffic)
    cache, dev = 0, hw.device_tier
    assert moved[cache, 0].sum() > 0 and moved[dev, 0].sum() == 0     # 16 sequences: all from the L2
    assert moved[dev, 1].sum() > 0                                      # 32: from the GDDR7


def test_the_gddr_prefill_grids_are_pulled_harder_but_their_windows():
    """``grid_ridge``: the hard pull for vLLM's and SGLang's prefill classes of the GDDR GPUs without a window; every
    other class, the sliding-window ones of those GPUs and TensorRT-LLM's included, keeps ``GRID_RIDGE``."""
    assert kernelfit.grid.grid_ridge(_group("rtx-pro-6000")) == kernelfit.grid.GRID_RIDGE_HARD
    assert kernelfit.grid.grid_ridge(_group("l40s", framework="vllm")) == kernelfit.grid.GRID_RIDGE_HARD
    assert kernelfit.grid.grid_ridge(_group("h100")) == kernelfit.grid.GRID_RIDGE
    assert kernelfit.grid.grid_ridge(_group("l40s", window=128)) == kernelfit.grid.GRID_RIDGE
    assert kernelfit.grid.grid_ridge(_group("l40s", framework="trtllm")) == kernelfit.grid.GRID_RIDGE
    assert kernelfit.grid.GRID_RIDGE_HARD > kernelfit.grid.GRID_RIDGE
