"""A GEMM kernel-table row is timed with the weights as its collector cycled them
(``kernelfit.collector.COLLECTOR_COPIES``, ``as_collected``): distinct copies called in turn, so the weights stay in the
last cache level between calls only where all the copies fit it together. That is the measurement's condition, set on
the table's ops by the fitter; a prediction's GEMM reads its weights from device memory unless the whole workload fits
(``law.resident_ops``)."""
import numpy as np
import pytest

pytest.importorskip("pandas")
import pandas as pd  # noqa: E402

from ironlaw.core.graph import Graph  # noqa: E402
from ironlaw.law import law  # noqa: E402
from ironlaw.machine import hardware  # noqa: E402
from ironlaw.machine.cache import repeated_limit_bytes  # noqa: E402
from ironlaw.measure.calibrate import kernelfit  # noqa: E402
from ironlaw.measure.calibrate.kerneltable import KernelTable  # noqa: E402
from ironlaw.models import workloads  # noqa: E402

MiB = 2.0 ** 20
L40S_L2 = 96 * MiB
DRAM = "gddr6"     # L40S device memory (catalog l40s.toml)


def group(framework: str, version: str, dtype: str = "bf16", rows=None, operands: str = "memory") -> kernelfit.Group:
    table = KernelTable("gemm", "l40s", "NVIDIA L40S", framework, version, "gemm_perf.parquet", rows)
    return kernelfit.Group(f"gemm {dtype}", ("matmul", dtype), "gemm", table, rows, operands=operands)


def test_the_tensorrt_llm_collector_spans_the_l2_with_one_to_five_copies():
    copies = kernelfit.collector.COLLECTOR_COPIES["trtllm"]
    assert [copies("1.3.0rc20", "bf16", w * MiB, L40S_L2) for w in (200, 96, 72, 48, 32, 20, 16, 1)] == \
        [1, 1, 2, 2, 3, 5, 5, 5]
    assert copies("1.0.0rc3", "bf16", 96 * MiB, L40S_L2) == 5           # the 1.0 line's tables: five, always


def test_the_vllm_and_sglang_collectors_cycle_six_copies():
    assert kernelfit.collector.COLLECTOR_COPIES["vllm"]("0.24.0", "bf16", 96 * MiB, L40S_L2) == 6
    assert kernelfit.collector.COLLECTOR_COPIES["vllm"]("0.24.0", "fp4", 96 * MiB, L40S_L2) == 1
    assert kernelfit.collector.COLLECTOR_COPIES["sglang"]("0.5.14", "fp8", 1 * MiB, L40S_L2) == 6
    assert kernelfit.collector.COLLECTOR_COPIES["sglang"]("0.5.6.post2", "fp8", 1 * MiB, L40S_L2) == 5
    release = kernelfit.vocabulary.release
    assert release("1.3.0rc20") == (1, 3, 0) and release("0.5.6.post2") == (0, 5, 6)


@pytest.mark.parametrize("framework, version, n, k, warm", [
    ("trtllm", "1.3.0rc20", 8192, 6144, True),      # 96 MiB, one copy: the whole L2
    ("trtllm", "1.3.0rc20", 4096, 6144, True),      # 48 MiB, two copies: the whole L2
    ("trtllm", "1.3.0rc20", 6144, 6144, False),     # 72 MiB, two copies: 144 MiB
    ("trtllm", "1.3.0rc20", 1024, 1024, True),      # 2 MiB, five copies
    ("vllm", "0.24.0", 8192, 6144, False),          # six copies of 96 MiB
    ("sglang", "0.5.14", 4096, 2048, True),         # 16 MiB, six copies: the whole L2
    ("sglang", "0.5.14", 4096, 2304, False),        # 18 MiB, six copies: 108 MiB
])
def test_a_row_is_warm_where_all_its_copies_fit_the_l2(framework, version, n, k, warm):
    assert kernelfit.collector.warm_weights(group(framework, version), n * k, L40S_L2) is warm


def _rows(*shapes):
    return pd.DataFrame({"m": [s[0] for s in shapes], "n": [s[1] for s in shapes], "k": [s[2] for s in shapes],
                         "latency_s": [1e-4] * len(shapes)})


def _weight_tiers(hw, op) -> dict:
    """Bytes of ``op`` the law reads from each of ``hw``'s tiers."""
    placed = law.place(Graph("row", "infer", op.dtype, [op]), hw)
    return {t.name: float(placed.traffic[i].sum()) for i, t in enumerate(hw.memory) if placed.traffic[i].sum() > 0}


def test_the_table_row_reads_its_weights_from_the_l2_and_the_served_gemv_from_gddr6():
    hw = hardware.get("l40s")
    assert repeated_limit_bytes(hw) == L40S_L2
    rows = _rows((8, 8192, 6144), (8, 6144, 6144))
    trt = kernelfit.observations(group("trtllm", "1.3.0rc20", rows=rows, operands="copies"), rows, hw)
    assert [bool(o.op.attrs.get("resident")) for o in trt] == [True, False]
    warm = _weight_tiers(hw, trt[0].op)
    assert warm["l2"] >= 8192 * 6144 * 2 and warm.get(DRAM, 0.0) == 0.0
    # the same shape timed by vLLM's collector (six copies) and as a served model's projection: from the GDDR6
    vllm = kernelfit.observations(group("vllm", "0.24.0", rows=rows, operands="copies"), rows, hw)
    assert not any(o.op.attrs.get("resident") for o in vllm)
    served = workloads.resolve(workloads.Request("gemm:8,8192,6144", dtype="bf16"))
    assert not any(op.attrs.get("resident") for op in served.ops)
    for op in (vllm[0].op, served.ops[0]):
        assert _weight_tiers(hw, op).get(DRAM, 0.0) >= 8192 * 6144 * 2
    est = law.predict(served, hw)
    assert est.data_tier_s[[t.name for t in hw.memory].index(DRAM)].sum() > 0


def test_a_workload_that_fits_half_the_l2_is_warm_in_prediction_too():
    hw = hardware.get("l40s")
    small = workloads.resolve(workloads.Request("gemm:8,2048,2048", dtype="bf16"))      # 8 MiB of weights
    est = law.predict(small, hw)
    tiers = [t.name for t in hw.memory]
    assert est.data_tier_s[tiers.index("l2")].sum() > 0 and est.data_tier_s[tiers.index(DRAM)].sum() == 0


def test_a_framework_without_a_known_collector_fits_memory_operands():
    assert "aiter" in kernelfit.FRAMEWORKS and "aiter" not in kernelfit.collector.COLLECTOR_COPIES
    assert kernelfit.vocabulary.OPERANDS == ("memory", "copies")
    assert np.all([kernelfit.collector.COLLECTOR_WEIGHT_BYTES[d] > 0 for d in ("bf16", "fp8", "fp4")])


def test_trtllm_and_vllm_reuse_one_input_and_sglang_builds_one_per_copy():
    assert [kernelfit.collector.COLLECTOR_INPUTS[f](6) for f in ("trtllm", "vllm", "sglang")] == [1, 1, 6]
    assert 0.5 < kernelfit.collector.COLLECTOR_OUTPUT_SHARE < 1.0


@pytest.mark.parametrize("framework, version, shape, warm", [
    ("trtllm", "1.3.0rc20", (4352, 32, 8192), True),     # 68 MiB of input, five copies of 512 KiB of weights
    ("vllm", "0.24.0", (4352, 32, 8192), True),          # one input for its six copies too
    ("sglang", "0.5.14", (4352, 32, 8192), False),       # six inputs of 68 MiB
    ("trtllm", "1.3.0rc20", (2304, 12288, 32), True),    # 54 MiB of output: under three quarters of the L2
    ("trtllm", "1.3.0rc20", (3584, 12288, 32), False),   # 84 MiB of output: over
    ("trtllm", "1.3.0rc20", (8, 8192, 6144), False),     # weights warm, but one copy of 96 MiB fills the L2
])
def test_a_row_is_warm_through_where_its_collector_iteration_fits_the_l2(framework, version, shape, warm):
    rows = _rows(shape)
    assert kernelfit.collector.warm_cycle(group(framework, version), next(rows.itertuples()), L40S_L2) is warm


def test_the_table_row_reads_its_reused_input_from_the_l2_and_the_served_gemm_from_gddr6():
    hw = hardware.get("l40s")
    rows = _rows((4352, 32, 8192))
    act = 4352 * 8192 * 2
    trt = kernelfit.observations(group("trtllm", "1.3.0rc20", rows=rows, operands="copies"), rows, hw)[0].op
    assert trt.attrs.get("warm_activations") and trt.bytes["activations"] > repeated_limit_bytes(hw) / 2
    warm = _weight_tiers(hw, trt)
    assert warm["l2"] >= act and warm.get(DRAM, 0.0) == 0.0
    sgl = kernelfit.observations(group("sglang", "0.5.14", rows=rows, operands="copies"), rows, hw)[0].op
    served = workloads.resolve(workloads.Request("gemm:4352,32,8192", dtype="bf16")).ops[0]
    for op in (sgl, served):
        assert not op.attrs.get("warm_activations")
        assert _weight_tiers(hw, op).get(DRAM, 0.0) >= act
    assert law.predict(Graph("row", "infer", "bf16", [trt]), hw).time_s < \
        law.predict(Graph("row", "infer", "bf16", [served]), hw).time_s


def test_an_mla_bmm_row_reads_its_input_and_output_from_the_l2_where_all_of_it_fits():
    """L40S bf16, 8 heads, mla_gen_pre ([t,128]x[128,512] per head): at 6,144 tokens (61 MiB in all, 48 MiB of it
    written) the collector's one product called over and over reads its activations from the L2; at 12,288 tokens
    from the GDDR6, as does the same product in a served step."""
    from types import SimpleNamespace
    from ironlaw.models.workloads.attention import per_head
    hw = hardware.get("l40s")
    assert "mla_bmm" in kernelfit.rules.WARM_THROUGH_OPS

    def op(tokens):
        return per_head("attention.q_absorb", SimpleNamespace(heads=8, layers=1), tokens, 128, 512, "bf16")

    fits, over = kernelfit.collector.warm_through(kernelfit.collector.cache_resident([op(6144), op(12288)], hw), hw)
    assert fits.attrs.get("warm_activations") and not over.attrs.get("warm_activations")
    assert fits.bytes["activations"] > repeated_limit_bytes(hw) / 2          # beyond what a served op keeps there
    assert _weight_tiers(hw, fits).get(DRAM, 0.0) == 0.0
    served = op(6144)
    assert _weight_tiers(hw, served).get(DRAM, 0.0) >= served.bytes["activations"]


def test_a_generation_mla_row_reads_its_query_and_output_from_the_l2_where_all_of_it_fits():
    """L40S bf16, TensorRT-LLM's generation MLA collector replays one captured decode call on the same query, cache
    and output: 512 sequences of 64 heads at 7 cached tokens (68 MiB of query and output) read them from the L2,
    1,024 sequences of 128 heads (four times as much) from the GDDR6. The catalog's class, fitted so, prices the
    first near its measured 54 µs; the same op in a served step reads its activations from device memory."""
    from types import SimpleNamespace
    hw = hardware.get("l40s")
    assert "generation_mla" in kernelfit.rules.WARM_THROUGH_OPS
    table = KernelTable("generation_mla", "l40s", "NVIDIA L40S", "trtllm", "1.3.0rc20", "generation_mla_perf.parquet",
                        None)
    g = kernelfit.Group("generation mla bf16, KV bf16", ("kernel", "attention_generation_bf16_kv_bf16_mla"),
                        "generation_mla", table, None)

    def op(batch, heads):
        row = SimpleNamespace(mla_dtype="bfloat16", kv_cache_dtype="bfloat16", num_heads=heads, batch_size=batch,
                              step=7, isl=1)
        return kernelfit.ops.mla_op(row, g)

    collector = kernelfit.collector
    fits, over = collector.warm_through(collector.cache_resident([op(512, 64), op(1024, 128)], hw), hw)
    assert fits.attrs.get("warm_activations") and not over.attrs.get("warm_activations")
    assert fits.bytes["activations"] > repeated_limit_bytes(hw) / 2          # beyond what a served op keeps there
    timed = law.predict(Graph("row", "decode", "bf16", [fits]), hw).time_s
    assert 40e-6 < float(np.max(timed)) < 70e-6                                # measured 53.8 µs (held-out row)
    served = law.predict(Graph("row", "decode", "bf16", [op(512, 64)]), hw).time_s
    assert float(np.max(served)) > 1.3 * float(np.max(timed))


def _mla_bmm_rows(gpu: str, device: str, rows: list) -> list:
    """``kernelfit.observations`` of TensorRT-LLM 1.3.0rc20 bf16 MLA BMM rows (op_name, heads, tokens) on ``gpu``."""
    frame = pd.DataFrame([{"op_name": o, "num_heads": h, "num_tokens": t, "latency_s": 1e-5} for o, h, t in rows])
    table = KernelTable("mla_bmm", gpu, device, "trtllm", "1.3.0rc20", "mla_bmm_perf.parquet", frame)
    g = kernelfit.Group("mla bmm bf16", ("kernel", "mla_bmm_bf16"), "mla_bmm", table, frame, dtype="bf16")
    return kernelfit.observations(g, frame, hardware.get(gpu))


def test_an_mla_bmm_row_counts_its_output_once_on_the_gddr_gpus():
    """The MLA BMM collectors write every call into one output built beforehand (``WRITTEN_ONCE_OPS``): on L40S (96
    MiB L2) mla_gen_pre at 8 heads × 8,192 tokens (81 MiB, 64 MiB of it output; measured 66.7 µs, 1.27 TB/s on 864
    GB/s GDDR6) reads its activations from the L2, where the output's share of a GEMM call's would put it over; at 16
    heads × 6,144 tokens (1.27 of the L2; 0.63 TB/s) it does not. On H100 (50 MiB, whose rows fall to the HBM's rate
    from about 0.76 of it) the output keeps its share: 8 heads × 4,096 tokens (0.82 of the L2, 2.2 TB/s measured on
    3.35 TB/s HBM3) is not marked."""
    l40s = _mla_bmm_rows("l40s", "NVIDIA L40S", [("mla_gen_pre", 8, 8192), ("mla_gen_pre", 16, 6144)])
    assert [bool(o.op.attrs.get("warm_activations")) for o in l40s] == [True, False]
    h100 = _mla_bmm_rows("h100", "NVIDIA H100 80GB HBM3", [("mla_gen_pre", 8, 4096), ("mla_gen_pre", 8, 2048)])
    assert [bool(o.op.attrs.get("warm_activations")) for o in h100] == [False, True]
    assert kernelfit.rules.holds(kernelfit.rules.WRITTEN_ONCE_OPS, "mla_bmm", "l40s")
