"""A kernel class whose softmax runs beside its tensor-core work (``vector = "overlap"``): a warp-specialized
Blackwell FMHA (TRT-LLM's, as vLLM's FlashInfer backend and SGLang's ``trtllm_mha`` run it,
``kernelfit.rules.OVERLAP_KERNELS``) computes one tile's softmax while its MMA warp runs the next tile's products, so
the op's compute is the longer of the two, not their sum (``efficiency.vector_overlap``, ``law.compute_term``)."""
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

BF16_CACHE = attention_kernel("prefill", "bf16", "bf16")
SHAPE = {"eta_max": 1.0, "m_half": 1.0, "nk_half": 1.0, "k_half": 1.0, "streamed": 1.0, "latency_s": 1e-6}


def _rows(source: str, kv: str = "bfloat16", head_dim: int = 128) -> list[dict]:
    return [dict(batch_size=b, isl=s, num_heads=32, num_key_value_heads=8, head_dim=head_dim, window_size=0,
                 attn_dtype="bfloat16", kv_cache_dtype=kv, step=0, kernel_source=source, latency_s=1e-5 * s / 1024)
            for b in (1, 4) for s in (1024, 4096, 16384)]


def _table(source: str, kv: str = "bfloat16", head_dim: int = 128, framework: str = "vllm",
           rows: list | None = None) -> KernelTable:
    return KernelTable("context_attention", "b300", "NVIDIA B300", framework, "0.24.0", "x.parquet",
                       pd.DataFrame(rows or _rows(source, kv, head_dim)))


def _cal(p: dict, name: str = BF16_CACHE) -> dict:
    return {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"], "kernel": {name: p}}


def _terms(t: KernelTable, p: dict, name: str = BF16_CACHE) -> tuple[float, float, float]:
    """(matrix seconds, vector seconds, compute seconds) of the table's first row on B300 under the class ``p``."""
    hw = replace(hardware.get("b300"), calibration=Calibration.of(_cal(p, name)))
    g = kernelfit.Group("g", ("kernel", name), "context_attention", t, None)
    op = kernelfit.ops.attention_op(next(t.rows.assign(isl=16384).head(1).itertuples()), g)
    placed = law.place(Graph("t", "prefill", "bf16", [op]), hw)
    eta = float(np.ravel(efficiency.evaluate(placed.cols, hw).compute_eta)[0])
    matrix_s = op.flops / (hw.peak("bf16") * eta)
    vector_s = op.vector_flops / (hw.vector_flops * hw.eta("elementwise"))
    return matrix_s, vector_s, float(np.ravel(law.timed(placed, hw).compute_s)[0])


def test_an_overlapping_class_takes_the_longer_of_its_matrix_and_vector_work():
    t = _table("vllm_flashinfer_trtllmprefill")
    matrix_s, vector_s, added = _terms(t, SHAPE)
    assert vector_s > 0.3 * matrix_s                                  # a softmax worth overlapping
    assert added == pytest.approx(matrix_s + vector_s, rel=1e-9)
    assert _terms(t, {**SHAPE, "vector": "overlap"})[2] == pytest.approx(max(matrix_s, vector_s), rel=1e-9)


def test_the_overlap_holds_only_at_the_classs_math_head_dims():
    """An FP8-cache class naming ``math_head_dims`` runs another kernel (vLLM's Triton prefill at head dim 192) at the
    other head dims, whose softmax follows its products as before."""
    fp8 = attention_kernel("prefill", "bf16", "fp8")
    p = {**SHAPE, "math": "fp8", "math_head_dims": [64, 128], "vector": "overlap"}
    for head_dim, overlaps in ((128, True), (192, False)):
        matrix_s, vector_s, compute_s = _terms(_table("x", "fp8", head_dim), p, fp8)
        assert compute_s == pytest.approx(max(matrix_s, vector_s) if overlaps else matrix_s + vector_s, rel=1e-9)


def test_the_fitter_names_the_overlap_only_for_the_kernels_that_run_it():
    """TRT-LLM's context FMHA as vLLM's FlashInfer backend and SGLang's ``trtllm_mha`` backend run it overlaps; the
    other prefill kernels do not."""
    for source in ("vllm_flashinfer_trtllmprefill", "trtllm_mha"):
        (trtllm,) = kernelfit.groups([_table(source)])
        assert kernelfit.launches.vector_of(trtllm) == {"vector": "overlap"}
    for source in ("vllm_flash_attn_fa3", "vllm_flashinfer_fiprefill", "vllm_triton_attn", "triton", "flashinfer"):
        (other,) = kernelfit.groups([_table(source)])
        assert kernelfit.launches.vector_of(other) == {}


def test_a_class_that_runs_another_kernel_at_one_head_dim_overlaps_at_the_others_only():
    """SGLang's Blackwell bf16 class runs TRT-LLM's kernel at head dims 64 … 512 but Triton at 192: the fitter names the
    head dims of the overlap (``vector_head_dims``), and an op at 192 adds its softmax to its products."""
    rows = _rows("trtllm_mha") + _rows("trtllm_mha", head_dim=256)[:3] + _rows("triton", head_dim=192)[:3]
    (g,) = kernelfit.groups([_table("", framework="sglang", rows=rows)])
    assert kernelfit.launches.vector_of(g) == {"vector": "overlap", "vector_head_dims": [128, 256]}
    p = {**SHAPE, "vector": "overlap", "vector_head_dims": [128, 256]}
    for head_dim, overlaps in ((128, True), (192, False)):
        matrix_s, vector_s, compute_s = _terms(_table("x", head_dim=head_dim), p)
        assert compute_s == pytest.approx(max(matrix_s, vector_s) if overlaps else matrix_s + vector_s, rel=1e-9)


def test_vector_head_dims_need_vector_and_head_dims():
    with pytest.raises(IronlawError, match="it needs vector"):
        calibration.check(_cal({**SHAPE, "vector_head_dims": [128]}), "calibration")
    for bad in ([], [0], ["128"], 128):
        with pytest.raises(IronlawError, match="vector_head_dims: must be a non-empty list"):
            calibration.check(_cal({**SHAPE, "vector": "overlap", "vector_head_dims": bad}), "calibration")


def test_vector_must_name_a_known_mode():
    calibration.check(_cal({**SHAPE, "vector": "overlap"}), "calibration")
    with pytest.raises(IronlawError, match="vector: must be one of overlap"):
        calibration.check(_cal({**SHAPE, "vector": "sum"}), "calibration")
