"""vLLM runs MLA's per-head decode products in bf16 whatever the checkpoint's dtype (``step.half_mla_bmm``:
vllm/v1/attention/backends/mla/common.py ``MLACommonImpl.process_weights_after_loading``), on its own measured
``mla bmm bf16`` class; TensorRT-LLM and SGLang keep the checkpoint's."""
from types import SimpleNamespace

import pytest

from ironlaw.models.serving import engine, frameworks, step
from ironlaw.models.workloads.attention import per_head


def _bmm(dtype: str, name="attention.q_absorb", k=128, n=512):
    return per_head(name, SimpleNamespace(heads=16, layers=61), 4, k, n, dtype)


def test_an_fp8_product_runs_in_bf16_on_its_class_with_bf16_weights():
    op = _bmm("fp8")
    half = step.half_mla_bmm(op)
    assert (half.dtype, half.attrs["kernel"]) == ("bf16", "mla_bmm_bf16")
    assert half.bytes["weights"] == pytest.approx(2 * op.bytes["weights"])
    assert (op.dtype, op.attrs["kernel"]) == ("fp8", "mla_bmm_fp8")          # the op given is left as it was


def test_other_ops_and_bf16_products_are_returned_as_they_are():
    bf16 = _bmm("bf16", "attention.v_up", 512, 128)
    assert step.half_mla_bmm(bf16) is bf16
    other = SimpleNamespace(dtype="fp8", attrs={"kernel": "attention_generation_bf16_kv_bf16_mla"})
    assert step.half_mla_bmm(other) is other


@pytest.mark.parametrize("name, half", [("vllm", True), ("sglang", False)])
def test_only_vllm_constants_say_so(name, half):
    assert frameworks.constants(frameworks.select(name, "h200", 8), engine.FITTED).mla_bmm_half is half
    assert engine.FITTED.mla_bmm_half is False


def test_vllm_decode_step_prices_the_products_on_bf16():
    """Op by op (the module class off: ``step.mla_module`` prices the products inside the whole module)."""
    from dataclasses import replace
    eng = frameworks.select("vllm", "h200", 8)
    c = replace(frameworks.constants(eng, engine.FITTED), mla_module=False)
    run = engine.engine_run("deepseek-r1", eng.hw, 228, 213, 4, tp=8, kv_dtype="bf16", constants=c).run
    _, est = step.step_seconds(run, 4, 0.0, 0.0, pad=True)
    bmm = [op for op in est.graph.ops if op.name in ("attention.q_absorb", "attention.v_up")]
    assert len(bmm) == 2 and {(op.dtype, op.attrs["kernel"]) for op in bmm} == {("bf16", "mla_bmm_bf16")}
