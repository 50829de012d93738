"""Context kernels that run FP8 math on an FP8 KV cache whatever the model's dtype (``kernelfit.rules.FP8_CONTEXT``):
the fitter gives those TensorRT-LLM classes ``math = "fp8"``, and the law bounds their ops' compute at the FP8 peak
(``efficiency.with_variants``), not at the bf16 one the op's own dtype would."""
from collections import namedtuple
from dataclasses import replace

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.core.gemmshape import attention_kernel  # noqa: E402
from ironlaw.core.graph import Graph  # noqa: E402
from ironlaw.law import efficiency, law  # noqa: E402
from ironlaw.machine import calibration, hardware  # noqa: E402
from ironlaw.machine.calibration import Calibration  # noqa: E402
from ironlaw.measure.calibrate import kernelfit  # noqa: E402
from ironlaw.measure.calibrate.kerneltable import KernelTable  # noqa: E402

CLASS = attention_kernel("prefill", "bf16", "fp8")
Row = namedtuple("Row", "batch_size isl num_heads num_key_value_heads head_dim window_size attn_dtype "
                        "kv_cache_dtype latency_s")
# a compute-bound prefill: 4 sequences of 16,384 tokens, 20 heads on 4 KV heads of 128
LONG = Row(4, 16384, 20, 4, 128, 0, "bfloat16", "fp8", 0.0)
SHAPE = {"eta_max": 1.0, "m_half": 0.0, "nk_half": 0.0, "k_half": 0.0, "streamed": 1.0, "latency_s": 0.0}


def _table(gpu: str, version: str = "1.3.0rc20", framework: str = "trtllm") -> KernelTable:
    rows = pd.DataFrame([LONG._asdict()])
    return KernelTable("context_attention", gpu, "dev", framework, version, "x.parquet", rows)


def _group(gpu: str, **kw) -> kernelfit.Group:
    return kernelfit.Group("context attention bf16, KV fp8", ("kernel", CLASS), "context_attention",
                           _table(gpu, **kw), None)


def _time(hw, table: dict) -> float:
    cal = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"], "kernel": {CLASS: table}}
    hw = replace(hw, calibration=Calibration.of(cal))
    op = kernelfit.ops.attention_op(LONG, _group(hw.name))
    return float(np.ravel(law.timed(law.place(Graph("t", "prefill", "bf16", [op]), hw), hw).op_time_s)[0])


def test_a_class_that_runs_fp8_math_is_bounded_at_the_fp8_peak():
    """At η 1 a bf16 op of a class with math = "fp8" takes its matrix FLOPs over the FP8 peak: B300 4.5 against
    2.25 PFLOP/s, half their time in the same class without it (its softmax's vector work unchanged)."""
    hw = hardware.get("b300")
    plain, fp8 = _time(hw, SHAPE), _time(hw, {**SHAPE, "math": "fp8"})
    flops = kernelfit.ops.attention_op(LONG, _group("b300")).flops
    assert plain - fp8 == pytest.approx(flops * (1.0 / hw.peak("bf16") - 1.0 / hw.peak("fp8")), rel=1e-3)


def test_the_fitter_names_fp8_math_only_where_the_kernel_runs_it():
    """TensorRT-LLM 1.3's bf16-math FP8-cache context classes on SM 9.0-10.3 (and context MLA on RTX PRO 6000 too);
    not L40S's or RTX PRO 6000's context attention, nor another framework's, nor the 1.0 release's."""
    for gpu in ("b300", "gb300", "h100"):
        assert kernelfit.launches.kernel_math(hardware.get(gpu), _group(gpu)) == {"math": "fp8"}
    for gpu in ("l40s", "rtx-pro-6000"):
        assert kernelfit.launches.kernel_math(hardware.get(gpu), _group(gpu)) == {}
    b300 = hardware.get("b300")
    assert kernelfit.launches.kernel_math(b300, _group("b300", framework="vllm")) == {}
    assert kernelfit.launches.kernel_math(b300, _group("b300", version="1.0.0rc6")) == {}
    bf16 = replace(_group("b300"), key=("kernel", attention_kernel("prefill", "bf16", "bf16")))
    assert kernelfit.launches.kernel_math(b300, bf16) == {}
    mla = replace(_group("rtx-pro-6000"), op="context_mla",
                  key=("kernel", attention_kernel("prefill", "bf16", "fp8", "_mla")))
    assert kernelfit.launches.kernel_math(hardware.get("rtx-pro-6000"), mla) == {"math": "fp8"}


def test_an_unknown_math_dtype_is_refused():
    cal = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"],
           "kernel": {CLASS: {**SHAPE, "math": "fp9"}}}
    with pytest.raises(IronlawError, match="fp9"):
        calibration.check(cal, "calibration")


def test_the_derived_fp8_mla_prefill_keeps_an_fp8_math_class_eta():
    """An FP8 model's MLA prefill takes the bf16 class: rescaled to the FP8 peak where that class computes in bf16,
    as it is where it computes in FP8 already (the same kernel either way)."""
    hw = hardware.get("b300")
    src, dst = (attention_kernel("prefill", m, "fp8", "_mla") for m in ("bf16", "fp8"))
    for math, eta in (({}, 0.4 * hw.peak("bf16") / hw.peak("fp8")), ({"math": "fp8"}, 0.4)):
        cal = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"],
               "kernel": {src: {**SHAPE, "eta_max": 0.4, **math}}}
        kernelfit.dispatch.derived_generation(hw, cal)
        assert cal["kernel"][dst]["eta_max"] == pytest.approx(eta, rel=1e-3) and "math" not in cal["kernel"][dst]


def test_the_fp8_math_multiplies_only_its_class():
    hw = hardware.get("b300")
    cal = Calibration.of({"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"],
                          "kernel": {CLASS: {**SHAPE, "math": "fp8"}}})
    op = kernelfit.ops.attention_op(LONG, _group("b300"))
    other = kernelfit.ops.attention_op(LONG._replace(kv_cache_dtype="bfloat16"), _group("b300"))
    _, math = efficiency.with_variants(cal, Graph("t", "prefill", "bf16", [op, other]).columns(), hw)
    assert np.ravel(math).tolist() == [pytest.approx(2.0), 1.0]


def test_the_catalog_stores_fp8_math_wherever_the_rule_names_it():
    """Every catalog GPU of ``kernelfit.rules.FP8_CONTEXT`` holds its TensorRT-LLM 1.3 bf16-math FP8-cache context
    classes (each regime of context attention, and context MLA) fitted with ``math = "fp8"``; the GPUs the rule leaves
    out (L40S; RTX PRO 6000's context attention) hold them without it."""
    for gpu in ("h100", "h200", "b200", "gb200", "b300", "gb300", "l40s", "rtx-pro-6000"):
        kernels = hardware.get(gpu).calibration.table()["kernel"]
        assert attention_kernel("prefill", "bf16", "fp8") in kernels, gpu
        for op, regimes in (("context_attention", ("", "_mha", "_wide", "_window")), ("context_mla", ("_mla",))):
            for regime in regimes:
                name = attention_kernel("prefill", "bf16", "fp8", regime)
                if name not in kernels:
                    continue
                want = "fp8" if gpu in kernelfit.rules.FP8_CONTEXT[op] else None
                assert kernels[name].get("math") == want, (gpu, name)
