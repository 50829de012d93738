"""TensorRT-LLM's XQA MLA decode kernel (SM 12.0, 128 heads on an FP8 cache) as a kernel class of its own: the fitter
splits those rows off on the GPUs that run it (``kernelfit.rules.XQA_MLA_GPUS``), the parent class names it as its
``variant`` at M = 128 (``efficiency.with_variants``), and a walking class's CTAs run in waves over the SMs
(``key_ctas``, ``efficiency.walk_s``), its walk the op's time floor."""
from collections import namedtuple
from dataclasses import replace

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.core.gemmshape import KEY_WALK_FREE, XQA_MLA_HEADS, attention_kernel  # noqa: E402
from ironlaw.core.graph import Graph  # noqa: E402
from ironlaw.law import efficiency, law  # noqa: E402
from ironlaw.machine import calibration, hardware  # noqa: E402
from ironlaw.machine.calibration import Calibration  # noqa: E402
from ironlaw.measure.calibrate import kernelfit  # noqa: E402
from ironlaw.measure.calibrate.kerneltable import KernelTable  # noqa: E402

PARENT = attention_kernel("decode", "bf16", "fp8", "_mla")
VARIANT = attention_kernel("decode", "fp8", "fp8", "_mla_xqa")
Row = namedtuple("Row", "batch_size num_heads tp_size step mla_dtype kv_cache_dtype latency_s")


def _table(gpu: str) -> KernelTable:
    rows = [dict(batch_size=b, num_heads=h, tp_size=128 // h, step=s, mla_dtype="bfloat16", kv_cache_dtype=kv,
                 latency_s=1e-5 * (1 + s / 1000)) for b in (1, 8) for h in (64, 128) for s in (127, 4095)
            for kv in ("bfloat16", "fp8")]
    return KernelTable("generation_mla", gpu, "dev", "trtllm", "1.3.0rc20", "x.parquet", pd.DataFrame(rows))


def test_the_128_head_fp8_rows_split_off_only_where_xqa_mla_runs():
    names = {g.name: g for g in kernelfit.groups([_table("rtx-pro-6000")])}
    xqa = names["generation mla bf16, KV fp8, XQA MLA kernel"]
    assert xqa.key == ("kernel", VARIANT) and set(xqa.rows.num_heads) == {XQA_MLA_HEADS}
    assert set(names["generation mla bf16, KV fp8"].rows.num_heads) == {64}
    assert set(names["generation mla bf16, KV bf16"].rows.num_heads) == {64, 128}
    others = [g.name for g in kernelfit.groups([_table("h200")])]
    assert others == ["generation mla bf16, KV bf16", "generation mla bf16, KV fp8"]


def _op(heads: int, batch: int = 1, step: int = 32767, group=None):
    g = group or kernelfit.Group("g", ("kernel", PARENT), "generation_mla", _table("rtx-pro-6000"), None)
    return kernelfit.ops.mla_op(Row(batch, heads, 128 // heads, step, "bfloat16", "fp8", 0.0), g)


def _cal(parent: dict, variant: dict) -> dict:
    return {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"],
            "kernel": {PARENT: parent, VARIANT: variant}}


SHAPE = {"eta_max": 0.5, "m_half": 1.0, "nk_half": 100.0, "k_half": 1.0, "streamed": 0.8, "latency_s": 5e-6}


def _times(hw, cal: dict, ops: list) -> np.ndarray:
    hw = replace(hw, calibration=Calibration.of(cal))
    return np.asarray(law.timed(law.place(Graph("t", "decode", "bf16", ops), hw), hw).op_time_s, float).reshape(-1)


def test_the_parent_names_its_variant_at_128_heads_only():
    """At 128 heads the op is priced as the variant (its own, much faster shape table); at 64 as the parent; and the
    variant's FP8 math doubles the compute η of a bf16 op that runs it (RTX PRO 6000: 1,000 against 500 TFLOP/s)."""
    hw = hardware.get("rtx-pro-6000")
    slow, fast = dict(SHAPE, eta_max=0.05, streamed=0.05), dict(SHAPE, eta_max=1.0, streamed=1.0)
    linked = _cal({**slow, "variant": VARIANT, "variant_m": XQA_MLA_HEADS, "variant_dtype": "fp8"}, fast)
    plain = _cal(slow, fast)
    t128, t64 = (_times(hw, c, [_op(128), _op(64)]) for c in (linked, plain))
    assert t128[0] < 0.3 * t64[0] and t128[1] == pytest.approx(t64[1], rel=1e-12)
    cols = Graph("t", "decode", "bf16", [_op(128)]).columns()
    _, math = efficiency.with_variants(Calibration.of(linked), cols, hw)
    assert np.ravel(math)[0] == pytest.approx(hw.peak("fp8") / hw.peak(cols.dtypes[0]))


def test_the_walk_runs_in_waves_over_the_sms_and_floors_the_op():
    """key_ctas CTAs per grid unit in waves over the 188 SMs: one wave up to 188 CTAs, then one more per 188; the
    walk's seconds, waves · (cta_s + key_s · (keys − 64)), are the op's time where they exceed its data and math."""
    hw = hardware.get("rtx-pro-6000")
    walk = {**SHAPE, "eta_max": 1.0, "streamed": 1.0, "latency_s": 1e-6, "key_s": 2e-8, "cta_s": 1e-5,
            "key_ctas": kernelfit.rules.WALK_WAVES[("generation_mla", "_mla_xqa")][0]["key_ctas"]}
    cal = Calibration.of(_cal(SHAPE, walk))
    ops = [_op(128, batch=b, group=kernelfit.Group("g", ("kernel", VARIANT), "generation_mla", _table("rtx-pro-6000"),
                                                  None)) for b in (1, 47, 48, 94, 95)]
    cols = Graph("t", "decode", "fp8", ops).columns()
    keys = 32768.0
    per_wave = 1e-5 + 2e-8 * (keys - KEY_WALK_FREE)
    w = np.ravel(efficiency.walk_s(cal, cols, hw.sms))     # 4 CTAs per sequence: 4, 188, 192, 376, 380 CTAs
    assert w == pytest.approx(per_wave * np.array([1, 1, 2, 2, 3]), rel=2e-3)
    t = _times(hw, _cal(SHAPE, walk), ops)
    assert t[0] == pytest.approx(per_wave + 1e-6, rel=5e-3)       # the softmax's vector work on top, a few µs
    assert t[1] == pytest.approx(t[0], rel=0.05) and t[2] > 1.8 * t[0] and t[4] > 2.7 * t[0]
    with pytest.raises(IronlawError, match="sms"):
        efficiency.walk_s(cal, cols, None)


@pytest.mark.parametrize("bad, match", [
    ({"variant": VARIANT}, "come together"),
    ({"variant": VARIANT, "variant_m": 128}, "come together"),
    ({"variant": "attention_nothing", "variant_m": 128, "variant_dtype": "fp8"}, "variant"),
    ({"variant": VARIANT, "variant_m": 0, "variant_dtype": "fp8"}, "variant_m"),
    ({"variant": VARIANT, "variant_m": 128, "variant_dtype": "fp7"}, "variant_dtype"),
    ({"key_ctas": 1.0}, "needs key_s"),
    ({"key_s": 1e-8, "cta_s": 1e-6}, "needs key_ctas"),
    ({"key_s": 1e-8, "key_ctas": 1.0, "cta_s": 1.0}, "cta_s"),
])
def test_a_variant_or_a_walk_in_waves_out_of_shape_is_refused(bad, match):
    with pytest.raises(IronlawError, match=match):
        calibration.check(_cal({**SHAPE, **bad}, dict(SHAPE)), "calibration")


def test_deepseek_v3_decode_on_rtx_pro_6000_runs_the_xqa_mla_class():
    """DeepSeek-V3 in FP8 on one RTX PRO 6000 (128 heads per GPU), 8 sequences at 4,095 cached tokens: its decode
    attention on an FP8 cache is priced as the XQA MLA class, within 10% of the 85.0 µs aiconfigurator-core 0.12.0's
    TensorRT-LLM 1.3.0rc20 table times for that shape (245 µs before the class; docs/accuracy.md)."""
    from ironlaw.models.serving import step
    hw = hardware.get("rtx-pro-6000")
    g = step.build("deepseek-v3", "decode", 8, 4095, "fp8", "fp8", hw)
    (i,) = [i for i, op in enumerate(g.ops) if op.kind == "attention"]
    cols = g.columns()
    named, _ = efficiency.with_variants(hw.calibration, cols, hw)
    assert named.kernels[i] == VARIANT
    t = float(np.ravel(law.timed(law.place(g, hw), hw).op_time_s[i])[0])
    assert t == pytest.approx(85.0e-6, rel=0.10)
