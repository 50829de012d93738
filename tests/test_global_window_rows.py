"""SGLang's Blackwell decode runs Llama 4's chunked layers, which aiconfigurator's collector times as a window of
8192, over the whole sequence on ``trtllm_mha``: those rows leave the window classes
(``kernelfit.rows.chunked_as_global``, ``kernelfit.rules.GLOBAL_WINDOW_ROWS``), elsewhere they stay."""
import pytest

pd = pytest.importorskip("pandas")

from ironlaw.machine import engines  # noqa: E402
from ironlaw.measure.calibrate import kernelfit  # noqa: E402
from ironlaw.measure.calibrate.kerneltable import KernelTable  # noqa: E402

WINDOW = "generation attention bf16, KV bf16, sliding window"


def _table(gpu: str, kernel: str = "trtllm_mha", framework: str = "sglang") -> KernelTable:
    """Llama 4's shape (5 heads on one KV head × 128) at windows 0 and 8192, and Gemma's head dim 256 at 1024."""
    rows = [dict(batch_size=b, isl=1, num_heads=5, num_key_value_heads=1, head_dim=128, window_size=w,
                 attn_dtype="bfloat16", kv_cache_dtype="bfloat16", step=s, kernel_source=kernel, latency_s=1e-5)
            for b in (1, 4, 16) for s in (127, 8191, 65535) for w in (0, 8192)]
    rows += [dict(batch_size=b, isl=1, num_heads=8, num_key_value_heads=4, head_dim=256, window_size=1024,
                  attn_dtype="bfloat16", kv_cache_dtype="bfloat16", step=s, kernel_source=kernel, latency_s=1e-5)
             for b in (1, 4, 16) for s in (127, 8191)]
    return KernelTable("generation_attention", gpu, f"NVIDIA {gpu.upper()}", framework, "0.5.14", "x.parquet",
                       pd.DataFrame(rows))


def _window_rows(t: KernelTable):
    (g,) = [g for g in kernelfit.groups([t]) if g.name == WINDOW]
    return g


@pytest.mark.parametrize("gpu", ["b200", "b300", "gb200", "gb300"])
def test_blackwell_trtllm_mha_rows_at_window_8192_leave_the_window_class(gpu):
    g = _window_rows(_table(gpu))
    assert set(g.rows["window_size"]) == {1024} and len(g.rows) == 6
    assert "9 rows at window 8192 its kernel times as global attention left out" in g.timed
    plain = [x for x in kernelfit.groups([_table(gpu)]) if x.name == "generation attention bf16, KV bf16"]
    assert len(plain) == 1 and set(plain[0].rows["window_size"]) == {0} and len(plain[0].rows) == 9


@pytest.mark.parametrize("gpu, kernel, framework", [("h100", "fa3", "sglang"), ("b200", "flashinfer", "sglang"),
                                                     ("b200", "trtllm_mha", "vllm")])
def test_the_rows_stay_where_the_rule_does_not_hold(gpu, kernel, framework):
    g = _window_rows(_table(gpu, kernel, framework))
    assert set(g.rows["window_size"]) == {1024, 8192} and len(g.rows) == 15


@pytest.mark.parametrize("gpu", ["b200", "b300", "gb200", "gb300"])
def test_the_engine_files_window_classes_are_fitted_without_them(gpu):
    table = engines.load(gpu, "sglang")["provenance"][f"{WINDOW}"]["table"]
    assert "rows at window 8192 its kernel times as global attention left out" in table
