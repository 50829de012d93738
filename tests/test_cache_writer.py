"""A prefill's cache writer, one CTA per token written (``write_s``, ``efficiency.cache_write_s``): the law adds
write_s · tokens · min(KV heads · head dim, 512) / SMs, the op states the tokens it writes and the KV heads · head
dim each one writes (on its GPU, under tensor parallelism too; an MLA prefill its one latent), the fitter recovers the
cost on vLLM's prefill rows (one head per KV head, grouped-query and sliding-window) only, gives it to SGLang's H200
and TensorRT-LLM's RTX PRO 6000 FP8-cache MLA prefill and to no other MLA class, and a calibration file's value is
checked."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.core.gemmshape import WRITE_CTA_THREADS, WRITE_S_MAX  # noqa: E402
from ironlaw.machine import calibration, hardware  # noqa: E402
from ironlaw.measure.calibrate import fitcore, kernelfit, kerneltable  # noqa: E402
from ironlaw.measure.calibrate.kernelfit import shapefit  # noqa: E402

DATA = Path(__file__).parent / "data" / "kernel_tables"
WRITE_S = 1e-9        # vLLM 0.24.0's H100 FP8-cache prefill: ~1 ns per writer thread per SM (docs/accuracy.md)
CLASS = "context attention bf16, KV bf16, one head per KV head"
GQA_CLASS = "context attention bf16, KV bf16"


def h100_class(name: str):
    """H100's prefill class ``name`` (the extract's TensorRT-LLM rows), and the same rows standing in for a vLLM table."""
    hw = hardware.get("h100")
    gs = kernelfit.groups(kerneltable.read(DATA / "h100_sxm", ops=("context_attention",), framework="trtllm"))
    g = next(x for x in gs if x.name == name)
    return hw, g, replace(g, table=replace(g.table, framework="vllm"))


@pytest.fixture(scope="module")
def h100_mha():
    """H100's one-head prefill class."""
    return h100_class(CLASS)


def _cal(g, table: dict) -> dict:
    return {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": [g.name], "kernel": {g.key[1]: table}}


def _writer_threads(rows) -> np.ndarray:
    """Per row, the tokens written × each one's CTA's threads (min(KV heads · head dim, 512))."""
    tokens = (rows.batch_size * rows.isl).to_numpy(float)
    return tokens * np.minimum((rows.num_key_value_heads * rows.head_dim).to_numpy(float), WRITE_CTA_THREADS)


def test_write_s_adds_per_token_and_writer_thread(h100_mha):
    hw, g, _ = h100_mha
    prob = fitcore.Problem(hw, kernelfit.observations(g, g.rows, hw), weighting="per_case")
    table = hw.calibration.table()["kernel"][g.key[1]]
    added = prob.times(_cal(g, {**table, "write_s": WRITE_S})) - prob.times(_cal(g, table))
    assert np.allclose(added, WRITE_S * _writer_threads(g.rows) / hw.sms, rtol=1e-9, atol=1e-15)


@pytest.fixture(scope="module")
def h100_gqa():
    """H100's grouped-query prefill class."""
    return h100_class(GQA_CLASS)


def test_a_grouped_query_prefill_s_writer_has_one_thread_per_kv_head_element(h100_gqa):
    """Its M folds the query heads per KV head into the rows: the writer's threads are the KV heads · head dim the
    op states (``cache_write_width``), not the query heads'."""
    hw, g, _ = h100_gqa
    assert (g.rows.num_heads > g.rows.num_key_value_heads).all()
    prob = fitcore.Problem(hw, kernelfit.observations(g, g.rows, hw), weighting="per_case")
    table = hw.calibration.table()["kernel"][g.key[1]]
    added = prob.times(_cal(g, {**table, "write_s": WRITE_S})) - prob.times(_cal(g, table))
    assert np.allclose(added, WRITE_S * _writer_threads(g.rows) / hw.sms, rtol=1e-9, atol=1e-15)


def test_the_fit_recovers_the_writer_on_vllm_s_grouped_query_prefill(h100_gqa):
    hw, g, as_vllm = h100_gqa
    rows = g.rows.assign(latency_s=g.rows.latency_s + WRITE_S * _writer_threads(g.rows) / hw.sms)
    table = kernelfit.classfit.fit_class(hw, replace(as_vllm, rows=rows), kernelfit.split(rows, g.op)[0])
    plain = kernelfit.classfit.fit_class(hw, as_vllm, kernelfit.split(g.rows, g.op)[0])
    assert table["write_s"] - plain["write_s"] == pytest.approx(WRITE_S, rel=0.3)


def test_a_rank_writes_its_own_kv_heads():
    """qwen3-30b-a3b (4 KV heads × 128): TP 2 writes 2 heads a token on each rank, TP 8 (each head on two ranks)
    one."""
    from ironlaw.models import parallel
    from ironlaw.models.workloads import Request, resolve
    g = resolve(Request("qwen3-30b-a3b", phase="prefill", batch=2, seq=64, dtype="bf16"))
    width = lambda s: next(o for o in s.ops if o.kind == "attention").attrs["cache_write_width"]  # noqa: E731
    assert (width(g), width(parallel.tp_shard(g, 2)), width(parallel.tp_shard(g, 8))) == (512, 256, 128)


def test_a_prefill_states_the_tokens_it_writes_and_a_decode_one_per_sequence(h100_mha):
    _, g, _ = h100_mha
    r = next(g.rows.itertuples())
    assert kernelfit.ops.attention_op(r, g).attrs["cache_writes"] == r.batch_size * r.isl
    assert kernelfit.ops.attention_op(r, g).attrs["cache_write_width"] == r.num_key_value_heads * r.head_dim
    gs = kernelfit.groups(kerneltable.read(DATA / "h100_sxm", ops=("generation_attention",), framework="trtllm"))
    d = gs[0]
    r = d.rows.iloc[len(d.rows) // 2]
    attrs = kernelfit.ops.attention_op(next(d.rows.iloc[[len(d.rows) // 2]].itertuples()), d).attrs
    assert attrs["cache_writes"] == r.batch_size and "cache_write_width" not in attrs


def test_the_fit_recovers_the_writer_on_vllm_s_one_head_prefill_not_tensorrt_llm_s(h100_mha):
    """The extract's rows with 1 ns per writer thread per SM added, fitted as vLLM's table: write_s within 30% of it
    (the rows as measured hold some of their own); fitted as TensorRT-LLM's (``WRITE_CLASSES``) the class has no
    write_s."""
    hw, g, as_vllm = h100_mha
    rows = g.rows.assign(latency_s=g.rows.latency_s + WRITE_S * _writer_threads(g.rows) / hw.sms)
    table = kernelfit.classfit.fit_class(hw, replace(as_vllm, rows=rows), kernelfit.split(rows, g.op)[0])
    plain = kernelfit.classfit.fit_class(hw, as_vllm, kernelfit.split(g.rows, g.op)[0])
    assert table["write_s"] - plain["write_s"] == pytest.approx(WRITE_S, rel=0.3)
    assert "write_s" not in kernelfit.classfit.fit_class(hw, replace(g, rows=rows), kernelfit.split(rows, g.op)[0])


@pytest.mark.parametrize("bad", [-1e-9, 2 * WRITE_S_MAX, "1ns", True])
def test_a_write_s_out_of_range_is_refused(h100_mha, bad):
    hw, g, _ = h100_mha
    table = {**hw.calibration.table()["kernel"][g.key[1]], "write_s": bad}
    with pytest.raises(IronlawError, match="write_s"):
        calibration.check(_cal(g, table), "calibration")


def test_a_device_without_sms_cannot_place_the_writer(h100_mha):
    hw, g, _ = h100_mha
    prob = fitcore.Problem(replace(hw, sms=None), kernelfit.observations(g, g.rows.iloc[:3], hw),
                             weighting="per_case")
    table = {**hw.calibration.table()["kernel"][g.key[1]], "write_s": WRITE_S}
    with pytest.raises(IronlawError, match="write_s"):
        prob.times(_cal(g, table))


def test_a_step_s_share_of_a_prefill_writes_its_own_tokens(h100_gqa):
    """A served step prices its prompt tokens as the model's prefill op scaled to them (``step.scaled``): the
    tokens it writes scale with them."""
    from ironlaw.models.serving.step import scaled
    _, g, _ = h100_gqa
    op = kernelfit.ops.attention_op(next(g.rows.itertuples()), g)
    assert scaled(op, 0.25).attrs["cache_writes"] == pytest.approx(op.attrs["cache_writes"] * 0.25)
    assert scaled(op, 0.25).attrs["cache_write_width"] == op.attrs["cache_write_width"]


@pytest.fixture(scope="module")
def h200_mla():
    """H200's context MLA class (the extract's TensorRT-LLM rows), and the same rows standing in for SGLang's
    FP8-cache class (``kernelfit.rules.WRITE_CACHE_CLASSES``)."""
    hw = hardware.get("h200")
    gs = kernelfit.groups(kerneltable.read(DATA / "h200_sxm", ops=("context_mla",), framework="trtllm"))
    g = next(x for x in gs if x.name == "context mla bf16, KV bf16")
    fp8 = replace(g, key=("kernel", "attention_context_bf16_kv_fp8_mla"), table=replace(g.table, framework="sglang"),
                  rows=g.rows.assign(kv_cache_dtype="fp8"))
    return hw, g, fp8


def test_an_mla_prefill_writes_its_one_latent_whatever_its_heads(h200_mla):
    """The latent a token writes is kv_lora + rope (576 for DeepSeek-V3) at any heads per GPU; a decode writes none
    here."""
    _, g, _ = h200_mla
    assert g.rows.num_heads.nunique() > 1
    for r in g.rows.itertuples():
        attrs = kernelfit.ops.mla_op(r, g).attrs
        assert attrs["cache_writes"] == r.batch_size * r.isl
        assert attrs["cache_write_width"] == kernelfit.vocabulary.MLA_DIMS.kv_lora + kernelfit.vocabulary.MLA_DIMS.rope
    gs = kernelfit.groups(kerneltable.read(DATA / "h200_sxm", ops=("generation_mla",), framework="trtllm"))
    assert "cache_writes" not in kernelfit.ops.mla_op(next(gs[0].rows.itertuples()), gs[0]).attrs


def test_the_writer_is_fitted_on_sglang_s_fp8_cache_mla_prefill_on_its_gpus_only(h200_mla):
    """``with_write_cost`` adds write_s to SGLang's H200 FP8-cache context MLA class, not to the bf16-cache one, not
    to TensorRT-LLM's, not on another GPU."""
    _, g, fp8 = h200_mla
    names = lambda x: [n for n, _ in shapefit.with_write_cost(x, (("eta_max", 1.0),), [[0.5]])[0]]  # noqa: E731
    assert names(fp8) == ["eta_max", "write_s"]
    assert names(replace(fp8, key=g.key)) == ["eta_max"]
    assert names(replace(fp8, table=g.table)) == ["eta_max"]
    assert names(replace(fp8, table=replace(fp8.table, gpu="h100"))) == ["eta_max"]


def _assert_writer_per_token(hw, group, table):
    """The seconds ``table``'s write_s adds to each of ``group``'s MLA prefill rows on ``hw``: write_s × tokens × the
    latent's 512 writer threads / SMs, whatever the row's heads."""
    prob = fitcore.Problem(hw, kernelfit.observations(group, group.rows, hw), weighting="per_case")
    plain = {k: v for k, v in table.items() if k != "write_s"}
    added = prob.times(_cal(group, table)) - prob.times(_cal(group, plain))
    tokens = (group.rows.batch_size * group.rows.isl).to_numpy(float)
    assert np.allclose(added, table["write_s"] * tokens * WRITE_CTA_THREADS / hw.sms, rtol=1e-9, atol=1e-15)


def test_sglang_s_h200_fp8_cache_mla_prefill_pays_its_writer_per_token_whatever_its_heads(h200_mla):
    """The engine file's class states write_s, and the law adds write_s · tokens · 512 / SMs to each of its ops: the
    same per token at 1 and at 16 heads."""
    from ironlaw.machine import engines
    hw, _, fp8 = h200_mla
    table = engines.load("h200", "sglang")["kernel"][fp8.key[1]]
    assert 0.0 < table["write_s"] <= WRITE_S_MAX
    _assert_writer_per_token(hw, fp8, table)


def _window_group(framework: str, gpu: str, kv_dtype: str):
    """Windowed prefill rows (window 128, grouped and one-head) of ``framework``'s table on ``gpu``, as one class."""
    pd = pytest.importorskip("pandas")
    rows = pd.DataFrame([{"device": gpu, "batch_size": b, "isl": s, "num_heads": h, "num_key_value_heads": kv,
                          "head_dim": 128, "window_size": 128, "attn_dtype": "bfloat16", "kv_cache_dtype": kv_dtype,
                          "step": 0, "kernel_source": "vllm_flash_attn_fa3", "latency_s": 1e-3}
                         for b in (1, 8, 64) for s in (256, 2048, 8192) for h, kv in ((4, 4), (16, 4), (32, 8))])
    t = kerneltable.KernelTable("context_attention", gpu, gpu, framework, "0.24.0", "x.parquet", rows)
    (g,) = kernelfit.groups([t])
    return g


def test_vllm_s_window_prefill_is_fitted_with_the_writer_sglang_s_and_tensorrt_llm_s_not():
    """vLLM's collector times ``do_kv_cache_update`` for its windowed rows as for the others (``WRITE_CLASSES``)."""
    names = lambda x: [n for n, _ in shapefit.with_write_cost(x, (("eta_max", 1.0),), [[0.5]])[0]]  # noqa: E731
    assert names(_window_group("vllm", "h200", "bfloat16")) == ["eta_max", "write_s"]
    assert names(_window_group("sglang", "h200", "bfloat16")) == ["eta_max"]
    assert names(_window_group("trtllm", "h200", "bfloat16")) == ["eta_max"]


@pytest.mark.parametrize("gpu, kv_dtype", [("h100", "fp8"), ("h200", "bfloat16"), ("h200", "fp8"),
                                           ("l40s", "fp8"), ("rtx-pro-6000", "fp8")])
def test_vllm_s_window_prefill_pays_its_writer_per_token_and_kv_head_element(gpu, kv_dtype):
    """The engine file's window class states write_s, and the law adds write_s · tokens · min(KV heads · head dim,
    512) / SMs to each windowed prefill op of it: the KV heads the op writes, not its query heads."""
    from ironlaw.machine import engines
    hw = hardware.get(gpu)
    g = _window_group("vllm", gpu, kv_dtype)
    table = engines.load(gpu, "vllm")
    own = table["kernel"][g.key[1]]
    assert 0.0 < own["write_s"] <= WRITE_S_MAX
    prob = fitcore.Problem(hw, kernelfit.observations(g, g.rows, hw), weighting="per_case")
    cal = {**table, "fitted": [g.name], "kernel": {g.key[1]: own}}
    plain = {**cal, "kernel": {g.key[1]: {k: v for k, v in own.items() if k != "write_s"}}}
    added = prob.times(cal) - prob.times(plain)
    assert np.allclose(added, own["write_s"] * _writer_threads(g.rows) / hw.sms, rtol=1e-9, atol=1e-15)


def test_tensorrt_llm_s_rtx_pro_6000_fp8_cache_mla_prefill_is_fitted_with_the_writer(h200_mla):
    """``WRITE_CACHE_CLASSES`` gives TensorRT-LLM's FP8-cache context MLA class the writer on RTX PRO 6000 only."""
    _, g, fp8 = h200_mla
    trt = replace(fp8, table=replace(g.table, gpu="rtx-pro-6000"))
    names = lambda x: [n for n, _ in shapefit.with_write_cost(x, (("eta_max", 1.0),), [[0.5]])[0]]  # noqa: E731
    assert names(trt) == ["eta_max", "write_s"]
    assert names(replace(trt, key=g.key)) == ["eta_max"]
    assert names(replace(trt, table=g.table)) == ["eta_max"]


def test_rtx_pro_6000_fp8_cache_mla_prefill_pays_its_writer_per_token_whatever_its_heads(h200_mla):
    """The catalog's RTX PRO 6000 class states write_s; the law adds write_s · tokens · 512 / SMs to each op."""
    _, g, fp8 = h200_mla
    hw = hardware.get("rtx-pro-6000")
    trt = replace(fp8, table=replace(g.table, gpu="rtx-pro-6000"))
    table = hw.calibration.table()["kernel"][trt.key[1]]
    assert 0.0 < table["write_s"] <= WRITE_S_MAX
    _assert_writer_per_token(hw, trt, table)
