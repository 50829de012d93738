"""vLLM's MLA attention module priced whole (``serving.step.mla_module``): one op carrying every projection, the
BMMs and the attention core, fitted as its own kernel class on the framework's mla_*_module tables
(``kernelfit.rows.module_groups``) and put in place of the step's op-by-op module under vLLM and SGLang."""
from dataclasses import replace

import pytest

from ironlaw.machine.calibration import Calibration
from ironlaw.models.serving import engine, frameworks, step
from ironlaw.models.serving.step.constants import kernel_terms
from ironlaw.models.serving.step.mla_module import ModuleShape, module_op
from ironlaw.models.workloads.hfconfig import MLA

V3 = MLA(q_lora=1536, kv_lora=512, nope=128, rope=64, v_dim=128)
PROJECTIONS = ("attn_pre_proj", "attn_pre_proj.q_up", "attn_pre_proj.kv_up", "attention.q_absorb",
               "attention.v_up", "attn_post_proj", "input_layernorm.latent", "attn_rope")


def test_module_op_carries_each_projection_once_and_names_its_class():
    op = module_op(V3, 7168, ModuleShape(16, 4, 334, "decode", "fp8", "bf16"))
    gemms = 7168 * 2112 + 1536 * 16 * 192 + 16 * 128 * 7168        # down (replicated), q_b_proj, o_proj, fp8
    bmms = 16 * (128 * 512 + 512 * 128) * 2                          # W_UK, W_UV per head, bf16
    assert op.bytes["weights"] == pytest.approx(gemms + bmms)
    assert op.attrs["kernel"] == "mla_module_decode_fp8_kv_bf16" and op.kind == "attention"
    fp8_kv = module_op(V3, 7168, ModuleShape(16, 4, 334, "decode", "fp8", "fp8"))
    assert fp8_kv.bytes["kv_cache"] == pytest.approx(op.bytes["kv_cache"] / 2)
    prefill = module_op(V3, 7168, ModuleShape(16, 1, 512, "prefill", "bf16", "bf16"))
    assert prefill.bytes["weights"] == pytest.approx(2 * (gemms + 512 * 16 * 256))    # kv_b_proj, no BMMs


def _run(name: str, **over):
    eng = frameworks.select(name, "h200", 8)
    if name == "trtllm":                      # TensorRT-LLM's engine: the fitted constants as they are
        return engine.engine_run("deepseek-r1", eng.hw, 228, 213, 4, tp=8, kv_dtype="bf16").run
    c = replace(frameworks.constants(eng, engine.FITTED), **over)
    return engine.engine_run("deepseek-r1", eng.hw, 228, 213, 4, tp=8, kv_dtype="bf16", constants=c,
                             max_batch=eng.scheduler.max_num_seqs).run


def _attn(est) -> list:
    return [op for op in est.graph.ops if op.module == "attn" and op.kind != "collective"]


def test_vllm_step_prices_the_module_once_not_its_projections_too():
    run = _run("vllm")
    _, est = step.step_seconds(run, 4, 0.0, 0.0, pad=True)
    assert [op.name for op in _attn(est)] == ["attention.module.decode"]
    assert not {op.name for op in est.graph.ops} & set(PROJECTIONS)
    assert "mla_module_decode_fp8_kv_bf16" in est.graph.meta["mla_module"]
    _, mixed = step.step_seconds(run, 4, 512.0, 1.0, pad=False)
    assert sorted(op.name for op in _attn(mixed)) == ["attention.module.decode", "attention.module.prefill"] + \
        ["attention.module.prefill.gemm"] * 4                   # H200's fp8 / bf16 prefill class is fitted apart
    assert not {op.name for op in mixed.graph.ops} & set(PROJECTIONS)


def test_without_the_constant_or_under_trtllm_the_step_is_op_by_op():
    for run in (_run("vllm", mla_module=False), _run("trtllm")):
        _, est = step.step_seconds(run, 4, 0.0, 0.0, pad=True)
        names = {op.name for op in _attn(est)}
        assert "attn_pre_proj" in names and "attn_post_proj" in names and "mla_module" not in est.graph.meta
        assert not any(n.startswith("attention.module") for n in names)


def test_engine_terms_keep_the_module_latency_whole():
    fitted = {"eta_max": 0.5, "m_half": 1.0, "nk_half": 1.0, "k_half": 1.0, "streamed": 0.8, "latency_s": 2e-5}
    cal = Calibration.of({"source": "test", "fitted": ["x"],
                          "kernel": {"mla_module_decode_fp8_kv_bf16": dict(fitted),
                                     "attention_generation_bf16_kv_bf16": dict(fitted)},
                          "provenance": {"x": {"table": "t"}}})
    base = {"fitted": (), "matmul": {}, "kernel": {}}
    out = kernel_terms(base, cal, 0.25)["kernel"]
    assert out["mla_module_decode_fp8_kv_bf16"]["latency_s"] == pytest.approx(2e-5)
    assert out["attention_generation_bf16_kv_bf16"]["latency_s"] == pytest.approx(5e-6)


def _table(root, framework: str, rows: list) -> None:
    pd = pytest.importorskip("pandas")
    d = root / framework / "0.24.0"
    d.mkdir(parents=True)
    cols = ("kernel_source", "kv_cache_dtype", "gemm_type", "num_heads", "batch_size", "isl", "latency")
    frame = pd.DataFrame([dict(zip(cols, r)) for r in rows])
    frame.assign(device="NVIDIA B200", mla_dtype="bfloat16", tp_size=1, step=0).to_csv(
        d / "mla_context_module_perf.csv", index=False)


def test_groups_keep_one_backend_per_shape_and_only_the_serving_frameworks(tmp_path):
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    rows = [("FLASH_ATTN", "fp8", "fp8_block", 16, 1, 1024, 0.30),
            ("TRTLLM_RAGGED", "fp8", "fp8_block", 16, 1, 1024, 0.33),
            ("TRTLLM_RAGGED", "fp8", "fp8_block", 16, 1, 2048, 0.50),
            ("FLASH_ATTN", "bfloat16", "nvfp4", 16, 1, 1024, 0.4)]
    _table(tmp_path / "v", "vllm", rows)
    gs = kernelfit.groups(kerneltable.read(tmp_path / "v", ops=("mla_context_module",), framework="vllm"))
    by = {g.key[1]: g for g in gs}
    assert set(by) == {"mla_module_prefill_fp8_kv_fp8", "mla_module_prefill_fp4_kv_bf16"}
    fp8 = by["mla_module_prefill_fp8_kv_fp8"].rows
    assert sorted(zip(fp8.kernel_source, fp8.isl)) == [("FLASH_ATTN", 1024), ("TRTLLM_RAGGED", 2048)]
    assert "1 rows of opt-in TRTLLM_RAGGED" in by["mla_module_prefill_fp8_kv_fp8"].timed
    _table(tmp_path / "t", "trtllm", rows)
    assert kernelfit.groups(kerneltable.read(tmp_path / "t", ops=("mla_context_module",), framework="trtllm")) == []


def test_module_op_less_its_projections_keeps_the_core_and_the_bmms():
    whole = module_op(V3, 7168, ModuleShape(16, 1, 512, "prefill", "fp8", "bf16"))
    core = module_op(V3, 7168, ModuleShape(16, 1, 512, "prefill", "fp8", "bf16"), gemms=False)
    gemms = 7168 * 2112 + 1536 * 16 * 192 + 16 * 128 * 7168 + 512 * 16 * 256
    assert whole.flops - core.flops == pytest.approx(2 * 512 * gemms)
    assert core.bytes["weights"] == 0 and core.attrs["kernel"] == whole.attrs["kernel"]
    decode = module_op(V3, 7168, ModuleShape(16, 4, 334, "decode", "fp8", "bf16"), gemms=False)
    assert decode.bytes["weights"] == pytest.approx(16 * (128 * 512 + 512 * 128) * 2)     # W_UK, W_UV stay


def _cal(apart_prefill: bool) -> Calibration:
    fitted = {"eta_max": 0.5, "m_half": 1.0, "nk_half": 1.0, "k_half": 1.0, "streamed": 0.8, "latency_s": 2e-5}
    return Calibration.of({"source": "test", "fitted": ["x"], "provenance": {"x": {"table": "t"}},
                           "kernel": {"mla_module_decode_fp8_kv_bf16": dict(fitted),
                                      "mla_module_prefill_fp8_kv_bf16": dict(fitted, **(
                                          {"gemms": "apart"} if apart_prefill else {}))}})


def test_a_prefill_class_fitted_apart_prices_the_prompts_projections_as_gemms_beside_it():
    from ironlaw.models.serving.step.mla_module import with_module
    _, est = step.step_seconds(_run("vllm", mla_module=False), 4, 512.0, 1.0, pad=False)
    calls = [("decode", 4, 334, 1.0), ("prefill", 1, 1024, 0.5)]          # half a 1,024-token prompt
    whole, _ = with_module(est.graph, _cal(False), 16, calls, "fp8", "bf16")
    assert not [op for op in whole.ops if op.kind == "matmul" and op.module == "attn"]
    out, note = with_module(est.graph, _cal(True), 16, calls, "fp8", "bf16")
    gemms = [op for op in out.ops if op.name == "attention.module.prefill.gemm"]
    assert len(gemms) == 4 and all(op.shapes.startswith("[512,") and op.dtype == "fp8" for op in gemms)
    assert sum(op.flops for op in gemms) == pytest.approx(2 * 512 * (7168 * 2112 + 1536 * 16 * 192 + 512 * 16 * 256
                                                                      + 16 * 128 * 7168))
    prefill = next(op for op in out.ops if op.name == "attention.module.prefill")
    decode = next(op for op in out.ops if op.name == "attention.module.decode")
    assert prefill.bytes["weights"] == 0 and decode.bytes["weights"] > 0
    assert "mla_module_decode_fp8_kv_bf16 with its projections, mla_module_prefill_fp8_kv_bf16 less its projections" \
        in note and "o_proj" not in note
    _, whole_note = with_module(est.graph, _cal(False), 16, calls, "fp8", "bf16")
    assert "less its projections" not in whole_note
    assert "mla_module_prefill_fp8_kv_bf16 with its projections" in whole_note


def test_calibration_names_only_the_apart_form():
    from ironlaw.core.errors import IronlawError
    fitted = {"eta_max": 0.5, "m_half": 1.0, "nk_half": 1.0, "k_half": 1.0, "streamed": 0.8, "latency_s": 2e-5}
    from ironlaw.machine.calibration import SCHEMA, check
    table = {"schema": SCHEMA, "source": "derived: test", "fitted": ["x"]}
    check(dict(table, kernel={"mla_module_prefill_fp8_kv_bf16": dict(fitted, gemms="apart")}), "t")
    with pytest.raises(IronlawError, match="gemms"):
        check(dict(table, kernel={"mla_module_prefill_fp8_kv_bf16": dict(fitted, gemms="whole")}), "t")


def test_module_rows_fitted_apart_are_timed_less_the_projections_on_the_gemm_classes(tmp_path):
    from ironlaw.machine import hardware
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    from ironlaw.measure.calibrate.kernelfit.collector import timed_as
    from ironlaw.measure.calibrate.kernelfit.ops import observations
    _table(tmp_path / "v", "vllm", [("FLASH_ATTN", "bfloat16", "fp8_block", 16, 1, 1024, 0.30)])
    g = kernelfit.groups(kerneltable.read(tmp_path / "v", ops=("mla_context_module",), framework="vllm"))[0]
    cal = {"kernel": {g.key[1]: {"gemms": "apart"}}}
    split = timed_as(cal, g)
    assert split.module_form == "apart" and timed_as({"kernel": {}}, g).module_form == "whole"
    hw = hardware.get("h200")
    (whole,), (apart,) = observations(g, g.rows, hw), observations(split, g.rows, hw)
    assert whole.offset_s == 0 and 0 < apart.offset_s < whole.time_s
    assert apart.op.flops < whole.op.flops


def test_the_decode_module_reads_the_cache_of_the_real_sequences_not_the_graphs_padded_slots():
    """5 sequences replay vLLM's 8-slot CUDA graph; the 3 padded slots hold no cache, so the module op reads the KV
    cache of 5 sequences, as the op-by-op step's attention does."""
    run = _run("vllm")
    ops = {}
    for n, pad in ((5, True), (5, False), (8, True)):
        _, est = step.step_seconds(run, n, 0.0, 0.0, pad=pad)
        ops[n, pad] = next(op for op in est.graph.ops if op.name == "attention.module.decode")
    assert ops[5, True].bytes["kv_cache"] == pytest.approx(ops[5, False].bytes["kv_cache"])
    assert ops[5, True].bytes["kv_cache"] == pytest.approx(ops[8, True].bytes["kv_cache"] * 5 / 8)
