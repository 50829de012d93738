"""Generation-attention kernel classes of the serving frameworks' tables: each head dim of a class timed by one
backend, the table's main one wherever it times that head dim."""
import pytest

pd = pytest.importorskip("pandas")

from ironlaw.measure.calibrate import kernelfit, kerneltable  # noqa: E402


def _rows(head_dim, heads, kv_heads, source, latency_s, window=0):
    """Decode rows in the tables' columns: one per batch and cached length."""
    return pd.DataFrame([{"device": "NVIDIA B200", "batch_size": b, "step": s, "num_heads": heads,
                          "num_key_value_heads": kv_heads, "head_dim": head_dim, "window_size": window,
                          "attn_dtype": "bfloat16", "kv_cache_dtype": "bfloat16", "kernel_source": source,
                          "latency_s": latency_s} for b in (1, 8, 64) for s in (1, 1023, 65535)])


def _groups(rows):
    t = kerneltable.KernelTable("generation_attention", "b200", "NVIDIA B200", "sglang", "0.5.14", "x.parquet", rows)
    return {g.name: g for g in kernelfit.groups([t])}


def test_a_head_dim_the_main_backend_times_keeps_its_rows_alone():
    """SGLang's collector runs Qwen3.5 (head dim 256, 6 heads per KV head) on Triton on B200 beside trtllm_mha's head
    dim 256 of other models: no shape is timed twice, yet the class's head dim 256 keeps trtllm_mha's rows only, and
    the provenance counts those left out."""
    main = pd.concat([_rows(128, 8, 1, "trtllm_mha", 2e-5), _rows(256, 8, 2, "trtllm_mha", 3e-5)])
    other = _rows(256, 6, 1, "triton", 2e-3)
    g = _groups(pd.concat([main, other], ignore_index=True))["generation attention bf16, KV bf16"]
    assert len(g.rows) == len(main) and set(g.rows.kernel_source) == {"trtllm_mha"}
    assert f"{len(other)} rows of other backends at head dims trtllm_mha times left out" in g.timed


def test_a_head_dim_only_another_backend_times_stays():
    """Head dim 192 runs on Triton alone (MiMo-V2 on SGLang 0.5.14, Blackwell): its rows stay, with no note."""
    main = _rows(128, 8, 1, "trtllm_mha", 2e-5)
    only = _rows(192, 8, 1, "triton", 5e-5)
    g = _groups(pd.concat([main, only], ignore_index=True))["generation attention bf16, KV bf16"]
    assert len(g.rows) == len(main) + len(only) and "head dims" not in g.timed


def test_each_class_keeps_its_own_head_dims():
    """A backend that times a head dim in one class (the sliding-window rows) and not in another keeps its rows in
    the class where the main backend does not time that head dim."""
    main = _rows(256, 8, 2, "trtllm_mha", 3e-5)
    window = _rows(256, 8, 2, "triton", 4e-5, window=1024)
    gs = _groups(pd.concat([main, window], ignore_index=True))
    assert set(gs["generation attention bf16, KV bf16"].rows.kernel_source) == {"trtllm_mha"}
    assert set(gs["generation attention bf16, KV bf16, sliding window"].rows.kernel_source) == {"triton"}


def test_a_context_table_and_a_one_backend_table_are_as_they_were():
    """The rule is generation attention's: a context table's rows and a table of one backend pass unchanged."""
    rows = pd.concat([_rows(256, 8, 2, "trtllm_mha", 3e-5), _rows(256, 6, 1, "triton", 2e-3)], ignore_index=True)
    rows = rows.assign(regime="")
    assert len(kernelfit.rows.one_backend_per_head_dim(rows, "context_attention")) == len(rows)
    single = rows[rows.kernel_source == "triton"]
    assert len(kernelfit.rows.one_backend_per_head_dim(single, "generation_attention")) == len(single)


def _class(rows, framework="sglang"):
    t = kerneltable.KernelTable("generation_attention", "l40s", "NVIDIA L40S", framework, "0.5.14", "x.parquet", rows)
    return {g.name: g for g in kernelfit.groups([t])}


def test_flashinfers_16_bit_decode_grid_steps_2x_in_heads_per_kv_head():
    """SGLang's FlashInfer backend decodes a bf16 cache on tensor cores from 4 heads per KV head and on its CUDA-core
    kernel below (``should_use_tensor_core``): that grouped-query class's grid takes a node every 2× in M; an FP8
    cache (tensor cores throughout), a class without FlashInfer's rows, another framework's table or another regime
    keep ``GRID_STEPS``."""
    rows = pd.concat([_rows(128, h, 1, "flashinfer", 2e-5) for h in (2, 3, 4, 8)] + [_rows(64, 8, 1, "triton", 3e-5)],
                     ignore_index=True)
    steps = kernelfit.grid.GRID_STEPS["generation_attention"]
    g = _class(rows)["generation attention bf16, KV bf16"]
    assert kernelfit.grid.group_switch_steps(g, "") == (kernelfit.grid.GROUP_SWITCH_M_STEP,) + steps[1:]
    assert kernelfit.grid.GROUP_SWITCH_M_STEP < steps[0]
    fp8 = _class(rows.assign(kv_cache_dtype="fp8"))["generation attention bf16, KV fp8"]
    assert kernelfit.grid.group_switch_steps(fp8, "") is None
    fa3 = _class(rows.assign(kernel_source="fa3"))["generation attention bf16, KV bf16"]
    assert kernelfit.grid.group_switch_steps(fa3, "") is None
    vllm = _class(rows, framework="vllm")["generation attention bf16, KV bf16"]
    assert kernelfit.grid.group_switch_steps(vllm, "") is None
    assert kernelfit.grid.group_switch_steps(g, "_window") is None      # held out worse on it (docs/accuracy.md)
    assert kernelfit.grid.group_switch_steps(g, "_wide") is None        # over 32 heads per KV head: on tensor cores


def _context(head_dim, heads, kv_heads, source, latency_s, dtype="fp8", window=0):
    """Prefill rows in the tables' columns: one per batch and length, computing in ``dtype`` on an FP8 cache."""
    return pd.DataFrame([{"device": "NVIDIA GB200", "batch_size": b, "isl": s, "num_heads": heads,
                          "num_key_value_heads": kv_heads, "head_dim": head_dim, "window_size": window,
                          "attn_dtype": dtype, "kv_cache_dtype": "fp8", "kernel_source": source,
                          "latency_s": latency_s} for b in (1, 8, 64) for s in (16, 1024, 16384)])


def _context_groups(rows, gpu="gb200", framework="sglang"):
    t = kerneltable.KernelTable("context_attention", gpu, "x", framework, "0.5.14", "x.parquet", rows)
    return {g.name: g for g in kernelfit.groups([t])}


def test_sglang_s_blackwell_fp8_prefill_keeps_the_main_backend_s_head_dims_alone():
    """SGLang 0.5.14's GB200 FP8 prefill times head dim 256 on trtllm_mha and Qwen3.5's 6 heads on one KV head on
    Triton (``HEAD_DIM_BACKEND_CLASSES``): the FP8 class keeps trtllm_mha's rows there; the bf16-math FP8-cache class,
    a sliding-window class, another GPU's and another framework's tables keep every row."""
    main = pd.concat([_context(128, 8, 1, "trtllm_mha", 2e-5), _context(256, 8, 2, "trtllm_mha", 3e-5)])
    other = _context(256, 6, 1, "triton", 2e-3)
    rows = pd.concat([main, other], ignore_index=True)
    g = _context_groups(rows)["context attention fp8, KV fp8"]
    assert len(g.rows) == len(main) and set(g.rows.kernel_source) == {"trtllm_mha"}
    assert f"{len(other)} rows of other backends at head dims trtllm_mha times left out" in g.timed
    bf16 = pd.concat([main, other.assign(attn_dtype="bfloat16")], ignore_index=True)
    assert set(_context_groups(bf16)["context attention bf16, KV fp8"].rows.kernel_source) == {"triton"}
    window = pd.concat([main, other.assign(window_size=1024)], ignore_index=True)
    assert set(_context_groups(window)["context attention fp8, KV fp8, sliding window"].rows.kernel_source) == \
        {"triton"}
    for gs in (_context_groups(rows, gpu="h100"), _context_groups(rows, framework="vllm")):
        assert len(gs["context attention fp8, KV fp8"].rows) == len(rows)


def test_sglang_s_rtx_pro_6000_bf16_prefill_keeps_flashinfer_s_head_dim_128_alone():
    """SGLang's collector runs Llama 4 (5 heads per KV head × 128) on Triton on RTX PRO 6000, the other models' head
    dim 128 on FlashInfer (``HEAD_DIM_BACKEND_GPU_CLASSES``): both bf16-math classes keep FlashInfer's rows there and
    Triton's head dim 64, which FlashInfer does not time; the FP8-math class, L40S's table, B200's and vLLM's keep every
    row."""
    main = pd.concat([_context(128, h, 1, "flashinfer", 2e-5, dtype="bfloat16") for h in (4, 8)]
                     + [_context(256, 8, 2, "flashinfer", 3e-5, dtype="bfloat16")])
    llama4 = _context(128, 40, 8, "triton", 2e-4, dtype="bfloat16")
    only = _context(64, 8, 1, "triton", 3e-5, dtype="bfloat16")
    rows = pd.concat([main, llama4, only], ignore_index=True)
    for kv, name in (("bfloat16", "bf16"), ("fp8", "fp8")):
        g = _context_groups(rows.assign(kv_cache_dtype=kv), gpu="rtx-pro-6000")[f"context attention bf16, KV {name}"]
        assert len(g.rows) == len(main) + len(only)
        assert set(g.rows[g.rows.head_dim == 128].kernel_source) == {"flashinfer"}
        assert f"{len(llama4)} rows of other backends at head dims flashinfer times left out" in g.timed
    fp8 = _context_groups(rows.assign(attn_dtype="fp8"), gpu="rtx-pro-6000")["context attention fp8, KV fp8"]
    assert len(fp8.rows) == len(rows)
    for gpu, framework in (("l40s", "sglang"), ("b200", "sglang"), ("rtx-pro-6000", "vllm")):
        assert len(_context_groups(rows, gpu, framework)["context attention bf16, KV fp8"].rows) == len(rows)
