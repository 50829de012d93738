"""A decode class's fixed latency per head dim (``latency_head_dims``, ``latency_head_dim_s``,
``efficiency.head_dim_latency_s``): the law adds it at the listed head dims only, the fitter measures it from each head
dim's fastest call on SGLang's sliding-window decode tables only, and a calibration file's values are checked."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.core.gemmshape import LATENCY_HEAD_DIM_S_MAX  # noqa: E402
from ironlaw.machine import calibration, hardware  # noqa: E402
from ironlaw.measure.calibrate import fitcore, kernelfit, kerneltable  # noqa: E402

DATA = Path(__file__).parent / "data" / "kernel_tables"
ADDED_S = 6e-6        # SGLang 0.5.14's H100 window tables: MiMo-V2's head dim 192 on FA3 ~6 µs over gpt-oss's 64


@pytest.fixture(scope="module")
def h100_window():
    """H100's sliding-window decode class of the extract (TensorRT-LLM rows, window 128 at head dims 64 and 192)."""
    hw = hardware.get("h100")
    gs = kernelfit.groups(kerneltable.read(DATA / "h100_sxm", ops=("generation_attention",), framework="trtllm"))
    g = next(x for x in gs if x.name.endswith("sliding window") and set(x.rows.head_dim) >= {64, 192})
    return hw, g


def _cal(g, table: dict) -> dict:
    return {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": [g.name], "kernel": {g.key[1]: table}}


def _plain(hw, g) -> dict:
    return {k: v for k, v in hw.calibration.table()["kernel"][g.key[1]].items()
            if k not in ("latency_head_dims", "latency_head_dim_s")}


def added_at(g, at: int):
    """``g``'s rows with ADDED_S more at head dim ``at``."""
    return g.rows.assign(latency_s=g.rows.latency_s + np.where(g.rows.head_dim == at, ADDED_S, 0.0))


def fit_measures_added(g, added, at: int) -> dict:
    """The head-dim fit of ``added`` (``g``'s class with ``added_at(g, at)`` rows, as some framework's table), checked
    to keep ADDED_S more at ``at`` than the same class fitted on ``g``'s own rows; returned."""
    plain = kernelfit.launches.head_dim_latency(replace(added, rows=g.rows), g.rows)
    own = kernelfit.launches.head_dim_latency(added, added.rows)
    before = dict(zip(plain.get("latency_head_dims", []), plain.get("latency_head_dim_s", [])))
    after = dict(zip(own["latency_head_dims"], own["latency_head_dim_s"]))
    assert after[at] - before.get(at, 0.0) == pytest.approx(ADDED_S, rel=0.05)
    return own


def test_the_law_adds_the_seconds_at_the_listed_head_dim_only(h100_window):
    hw, g = h100_window
    prob = fitcore.Problem(hw, kernelfit.observations(g, g.rows, hw), weighting="per_case")
    table = _plain(hw, g)
    own = {**table, "latency_head_dims": [192], "latency_head_dim_s": [ADDED_S]}
    added = prob.times(_cal(g, own)) - prob.times(_cal(g, table))
    at = (g.rows.head_dim == 192).to_numpy()
    assert at.any() and (~at).any()
    assert np.allclose(added[at], ADDED_S, rtol=1e-9) and np.allclose(added[~at], 0.0, atol=1e-15)


def test_the_fit_measures_a_head_dim_s_fastest_call_on_sglang_s_window_classes_only(h100_window, monkeypatch):
    """The extract's window rows with 6 µs added at head dim 192, fitted as SGLang's table: the seconds the fit keeps
    at 192 exceed those of the rows as measured by those 6 µs (each head dim's fastest call against the class's);
    fitted as TensorRT-LLM's table on a GPU ``HEAD_DIM_LATENCY_GPUS`` does not name, the class keeps one fixed latency
    (``HEAD_DIM_LATENCY``); and the added rows hold
    out better with the head dims' seconds than fitted as SGLang's without them."""
    hw, g = h100_window
    rows = added_at(g, 192)
    sglang = replace(g, table=replace(g.table, framework="sglang"), rows=rows)
    shifted = fit_measures_added(g, sglang, 192)
    assert kernelfit.launches.head_dim_latency(replace(g, table=replace(g.table, gpu="b200"), rows=rows), rows) == {}
    fit_rows = kernelfit.split(rows, g.op)[0]
    own = kernelfit.classfit.fit_class(hw, sglang, fit_rows)
    assert own["latency_head_dims"] == shifted["latency_head_dims"]
    monkeypatch.setattr(kernelfit.launches, "HEAD_DIM_LATENCY_GPUS", {})
    assert "latency_head_dims" not in kernelfit.classfit.fit_class(hw, replace(g, rows=rows), fit_rows)
    monkeypatch.setattr(kernelfit.launches, "HEAD_DIM_LATENCY", set())
    one = kernelfit.classfit.fit_class(hw, sglang, fit_rows)
    assert "latency_head_dims" not in one
    (s,), (s0,) = (kernelfit.score(hw, _cal(g, t), [sglang]) for t in (own, one))
    assert s.median_abs_err < s0.median_abs_err, (s, s0)


def test_tensorrt_llm_s_window_decode_takes_a_head_dim_s_latency_on_hopper_only(h100_window, monkeypatch):
    """TensorRT-LLM's sliding-window decode on XQA (``HEAD_DIM_LATENCY_GPUS``): on H100 the fitter measures each head
    dim's fastest call over the class's fastest, as for SGLang's; on a GPU the table does not name (B200), and on H100
    with the table emptied, the class keeps one fixed latency."""
    hw, g = h100_window
    fastest = g.rows.groupby("head_dim")["latency_s"].min()
    slower = {int(d): float(f"{x:.4g}") for d, x in (fastest - fastest.min()).items() if x > 0.0}
    got = kernelfit.launches.head_dim_latency(g, g.rows, hw)
    assert slower and dict(zip(got["latency_head_dims"], got["latency_head_dim_s"])) == slower
    assert kernelfit.launches.head_dim_latency(replace(g, table=replace(g.table, gpu="b200")), g.rows) == {}
    fit_rows = kernelfit.split(g.rows, g.op)[0]
    assert kernelfit.classfit.fit_class(hw, g, fit_rows)["latency_head_dims"] == got["latency_head_dims"]
    monkeypatch.setattr(kernelfit.launches, "HEAD_DIM_LATENCY_GPUS", {})
    assert kernelfit.launches.head_dim_latency(g, g.rows, hw) == {}
    assert "latency_head_dims" not in kernelfit.classfit.fit_class(hw, g, fit_rows)


@pytest.mark.parametrize("bad", [
    {"latency_head_dims": [192]},
    {"latency_head_dim_s": [ADDED_S]},
    {"latency_head_dims": [192, 256], "latency_head_dim_s": [ADDED_S]},
    {"latency_head_dims": [192], "latency_head_dim_s": [-1e-9]},
    {"latency_head_dims": [192], "latency_head_dim_s": [2 * LATENCY_HEAD_DIM_S_MAX]},
    {"latency_head_dims": [0], "latency_head_dim_s": [ADDED_S]},
    {"latency_head_dims": [], "latency_head_dim_s": []},
    {"latency_head_dims": [192], "latency_head_dim_s": ["6us"]},
])
def test_a_head_dim_latency_out_of_form_is_refused(h100_window, bad):
    hw, g = h100_window
    with pytest.raises(IronlawError, match="latency_head_dim"):
        calibration.check(_cal(g, {**_plain(hw, g), **bad}), "calibration")


def test_sglang_s_one_head_decode_has_a_latency_per_head_dim_on_the_listed_gpus_only():
    """The extract's one-head decode rows with 6 µs added at their largest head dim (as Triton's head dim 192 beside
    FlashInfer's on L40S and RTX PRO 6000), as SGLang's table: on L40S (``HEAD_DIM_LATENCY_GPUS``) the class measures
    those seconds at that head dim; on H100 it keeps one fixed latency."""
    gs = kernelfit.groups(kerneltable.read(DATA / "h100_sxm", ops=("generation_attention",), framework="trtllm"))
    g = next(x for x in gs if x.name.endswith("one head per KV head"))
    top = int(g.rows.head_dim.max())
    assert g.rows.head_dim.nunique() > 1
    rows = added_at(g, top)
    on = lambda gpu: replace(g, table=replace(g.table, framework="sglang", gpu=gpu), rows=rows)  # noqa: E731
    fit_measures_added(g, on("l40s"), top)
    assert kernelfit.launches.head_dim_latency(on("h100"), rows) == {}


def test_sglang_s_one_head_prefill_has_a_latency_per_head_dim_in_the_keyed_classes_only():
    """The extract's one-head prefill rows with 6 µs added at their largest head dim, as SGLang's B200 table of the
    bf16-math FP8-cache class (``HEAD_DIM_LATENCY_CLASSES``: FlashInfer at head dim 128, Triton at 192 and 256): the
    class measures those seconds at that head dim; the same rows as H100's table, or as B200's bf16-cache class, keep
    one fixed latency."""
    gs = kernelfit.groups(kerneltable.read(DATA / "h100_sxm", ops=("context_attention",), framework="trtllm"))
    g = next(x for x in gs if x.name == "context attention bf16, KV bf16, one head per KV head")
    top = int(g.rows.head_dim.max())
    assert g.rows.head_dim.nunique() > 1
    rows = added_at(g, top)
    fp8 = ("kernel", "attention_context_bf16_kv_fp8_mha")
    on = lambda gpu, key=fp8: replace(g, key=key, rows=rows,  # noqa: E731
                                      table=replace(g.table, framework="sglang", gpu=gpu))
    fit_measures_added(g, on("b200"), top)
    assert kernelfit.launches.head_dim_latency(on("h100"), rows) == {}
    assert kernelfit.launches.head_dim_latency(on("b200", g.key), rows) == {}
    assert kernelfit.launches.head_dim_latency(replace(on("b200"), table=replace(on("b200").table, framework="vllm")),
                                      rows) == {}


@pytest.mark.parametrize("gpu", ["b200", "b300", "gb200", "gb300"])
def test_sglang_s_blackwell_one_head_fp8_cache_prefill_is_stored_with_flashinfer_s_and_triton_s_latency(gpu):
    """The engine files hold the fitted seconds at FlashInfer's head dim 128 and Triton's 192 over Triton's 256, the
    class's fastest (aiconfigurator-core 0.12.0's B200 table, 1-64 tokens: 16.5-18.6, 15.2-20.7, 11.6-12.5 µs)."""
    from ironlaw.machine import engines
    table = engines.load(gpu, "sglang")["kernel"]["attention_context_bf16_kv_fp8_mha"]
    got = dict(zip(table["latency_head_dims"], table["latency_head_dim_s"]))
    assert set(got) == {128, 192} and all(2e-6 < s < 1e-5 for s in got.values()), got


def test_sglang_s_b200_fp8_cache_one_head_decode_has_a_latency_per_head_dim_there_only():
    """The extract's one-head decode rows with 6 µs added at their largest head dim, as SGLang's B200 table of the
    FP8-cache class (``HEAD_DIM_LATENCY_CLASSES``): the class measures those seconds there; as B300's table, or as
    B200's bf16-cache class, it keeps one fixed latency. The B200 engine file holds each other head dim's seconds over
    head dim 64's one-CTA call (12.5-13.1 µs against at least 14.5): TRT-LLM-gen's 128, 256 and 512 about 2 µs,
    Triton's 192 more."""
    from ironlaw.machine import engines
    gs = kernelfit.groups(kerneltable.read(DATA / "h100_sxm", ops=("generation_attention",), framework="trtllm"))
    g = next(x for x in gs if x.key[1] == "attention_generation_bf16_kv_bf16_mha")
    top = int(g.rows.head_dim.max())
    rows = added_at(g, top)
    fp8 = ("kernel", "attention_generation_bf16_kv_fp8_mha")
    on = lambda gpu, key=fp8: replace(g, key=key, rows=rows,  # noqa: E731
                                      table=replace(g.table, framework="sglang", gpu=gpu))
    fit_measures_added(g, on("b200"), top)
    assert kernelfit.launches.head_dim_latency(on("b300"), rows) == {}
    assert kernelfit.launches.head_dim_latency(on("b200", g.key), rows) == {}
    table = engines.load("b200", "sglang")["kernel"][fp8[1]]
    got = dict(zip(table["latency_head_dims"], table["latency_head_dim_s"]))
    assert 64 not in got and set(got) >= {128, 256} and all(1.5e-6 < got[d] < 2.5e-6 for d in (128, 256, 512)), got
    assert 2.5e-6 < got[192] < 5e-6, got
