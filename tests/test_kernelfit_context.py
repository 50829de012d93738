"""Context-attention kernel classes of the serving frameworks' tables: one backend per shape, a split that fits and
holds out every head dim, a grid node per head dim, and a grid solved until the law's η bound is accounted for."""
from pathlib import Path

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from ironlaw.core.gemmshape import grid_factor  # noqa: E402
from ironlaw.machine import calibration, hardware  # noqa: E402
from ironlaw.measure.calibrate import kernelfit, kerneltable  # noqa: E402
from ironlaw.measure.calibrate.fitcore import Problem  # noqa: E402

DATA = Path(__file__).parent / "data" / "kernel_tables"


def _rows(head_dims=(128, 256), sources=("trtllm_mha",), isl=(16, 64, 256, 1024), latency=lambda r: 0.1):
    """Context-attention rows in the tables' columns: per batch, sequence and backend, one row per head dim."""
    out = []
    for src in sources:
        for b in (1, 4):
            for s in isl:
                for hd in head_dims:
                    r = {"device": "NVIDIA B200", "batch_size": b, "isl": s, "num_heads": 64, "num_key_value_heads": 1,
                         "head_dim": hd, "window_size": 0, "attn_dtype": "bfloat16", "kv_cache_dtype": "bfloat16",
                         "step": 0, "kernel_source": src}
                    out.append({**r, "latency_s": latency(r)})
    return pd.DataFrame(out)


def test_a_shape_timed_by_two_backends_keeps_the_main_backends_row():
    """SGLang 0.5.14's Blackwell tables time some shapes on TRT-LLM's MHA kernels (its default there) and again on
    FlashInfer or Triton; the class keeps one time per shape, the backend timing most of the table."""
    main = _rows(head_dims=(64, 128, 256), latency=lambda r: 1e-3)
    alt = _rows(head_dims=(128,), sources=("flashinfer",), latency=lambda r: 2e-3)
    rows = pd.concat([main, alt], ignore_index=True)
    kept = kernelfit.rows.one_backend(rows, "context_attention")
    assert len(kept) == len(main) and set(kept.kernel_source) == {"trtllm_mha"}
    t = kerneltable.KernelTable("context_attention", "b200", "NVIDIA B200", "sglang", "0.5.14", "x.parquet", rows)
    (g,) = kernelfit.groups([t])
    key = list(kernelfit.vocabulary.SHAPE_COLUMNS["context_attention"])
    assert not g.rows.duplicated(key).any() and (g.rows.latency_s == 1e-3).all()
    # a shape only another backend times stays (head dim 192 runs on Triton alone)
    only = _rows(head_dims=(192,), sources=("triton",), latency=lambda r: 5e-3)
    assert len(kernelfit.rows.one_backend(pd.concat([main, only], ignore_index=True), "context_attention")) == \
        len(main) + len(only)


def test_the_split_fits_and_holds_out_every_head_dim():
    """Blocks of two head dims per batch and sequence: the even/odd split would fit head dim 128 and hold out 256
    only (vLLM and SGLang tables); the split then alternates within each head dim. A table whose even/odd split
    already puts each head dim on both sides (TensorRT-LLM's) keeps it."""
    rows = kernelfit.sorted_rows(_rows(), "context_attention")
    plain = rows.iloc[np.arange(len(rows)) % 2 == 1]
    assert set(plain.head_dim) == {256}                     # what the plain split did
    fit_rows, held = kernelfit.split(rows, "context_attention")
    assert set(fit_rows.head_dim) == set(held.head_dim) == {128, 256}
    assert len(fit_rows) + len(held) == len(rows) and not set(fit_rows.index) & set(held.index)
    mixed = kernelfit.sorted_rows(_rows(head_dims=(64, 128, 256)), "context_attention")
    fit3, held3 = kernelfit.split(mixed, "context_attention")
    assert list(held3.index) == list(mixed.index[1::2])     # balanced enough: the even/odd split as before
    assert list(kernelfit.split(rows)[1].index) == list(plain.index)    # other ops keep even/odd


def test_each_head_dim_the_rows_hold_is_a_grid_node():
    """Head dim 192 runs a kernel of its own (Triton in vLLM 0.24.0 and SGLang 0.5.14); a grid stepping 2× from 64
    would interpolate it between 128 and 256."""
    rng = np.random.default_rng(2)
    k = rng.choice([64.0, 128.0, 192.0, 256.0, 512.0], 2000)
    n = np.exp(rng.uniform(0.0, np.log(8192.0), 2000))
    coords = (4.0 * n, n, k, np.exp(rng.uniform(np.log(2.0), np.log(512.0), 2000)))
    nodes = kernelfit.grid.fit_nodes("context_attention", coords, 2000)
    assert nodes[2] == [64.0, 128.0, 192.0, 256.0, 512.0]
    # decode alike: vLLM 0.24.0 runs head dim 192 on Triton with an FP8 cache (B200), SGLang 0.5.14 on Triton
    # everywhere; held out between nodes at 128 and 256, vLLM B200's FP8-cache rows at 192 came out 26% too fast
    assert kernelfit.grid.fit_nodes("generation_attention", coords, 2000)[2] == [64.0, 128.0, 192.0, 256.0, 512.0]
    assert kernelfit.grid.fit_nodes("generation_mla", coords, 2000)[2] != [64.0, 128.0, 192.0, 256.0, 512.0]


def test_the_grid_reaches_a_slow_kernel_under_the_eta_bound():
    """Rows 4× slower than the shape model at one head dim: one least-squares pass under-corrects where the law's η
    bound holds a term at 1 (the op's time is then not proportional to the factor); the second pass reaches it."""
    hw = hardware.get("h100")
    (g,) = [g for g in kernelfit.groups(kerneltable.read(DATA / "h100_sxm", ops=("context_attention",),
                                                         framework="trtllm"))
            if g.name == "context attention bf16, KV bf16"]
    table = hw.calibration.table()["kernel"]["attention_context_bf16_kv_bf16"]
    shape = {k: v for k, v in table.items() if k not in ("grid_nodes", "grid_log")}
    shape["streamed"] = 1.5                     # the fit's bound: the bytes' η held at 1 by the law
    cal = {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": [g.name], "kernel": {g.key[1]: shape}}
    prob = Problem(hw, kernelfit.observations(g, g.rows, hw), weighting="per_case")
    slow = g.rows.head_dim.to_numpy() == 128
    lat = shape["latency_s"]                    # the grid scales the time beside the fixed latency
    rows = g.rows.assign(latency_s=lat + (prob.times(cal) - lat) * np.where(slow, 4.0, 1.0))
    g4 = kernelfit.Group(g.name, g.key, g.op, g.table, rows)

    def missed(passes):
        before = dict(kernelfit.grid.GRID_PASSES)
        kernelfit.grid.GRID_PASSES["context_attention"] = passes
        try:
            fitted = kernelfit.grid.fit_grid(hw, g4, rows, shape)
        finally:
            kernelfit.grid.GRID_PASSES.clear()
            kernelfit.grid.GRID_PASSES.update(before)
        p = Problem(hw, kernelfit.observations(g4, rows, hw), weighting="per_case")
        err = p.times({**cal, "kernel": {g.key[1]: fitted}}) / p.meas - 1.0
        return float(np.median(np.abs(err[slow])))

    assert kernelfit.grid.GRID_PASSES["context_attention"] == 2
    assert missed(2) < 0.02 and missed(1) > 0.05     # (on this extract: 1.2% and 6.9%)


def test_the_provenance_counts_the_rows_of_other_backends_left_out():
    main = _rows(head_dims=(64, 128), latency=lambda r: 1e-3)
    alt = _rows(head_dims=(128,), sources=("flashinfer",), latency=lambda r: 2e-3)
    t = kerneltable.KernelTable("context_attention", "b200", "NVIDIA B200", "sglang", "0.5.14", "x.parquet",
                                pd.concat([main, alt], ignore_index=True))
    (g,) = kernelfit.groups([t])
    assert g.timed == f"{len(alt)} rows of other backends at shapes trtllm_mha times left out"
    t1 = kerneltable.KernelTable("context_attention", "b200", "NVIDIA B200", "sglang", "0.5.14", "x.parquet", main)
    assert kernelfit.groups([t1])[0].timed == ""


def test_one_token_context_rows_on_the_decode_kernel_are_left_out():
    """vLLM's FlashInfer backend runs a request of one query token as a decode (``reorder_batch_threshold`` 1): its
    context tables' one-token rows name the decode kernel and time it, so the prefill class neither fits nor scores
    them, and its provenance counts them; a generation table's decode rows are its own."""
    rows = _rows(isl=(1, 16, 64, 256), sources=("vllm_flashinfer_trtllmprefill",), latency=lambda r: 1e-3)
    rows.loc[rows.isl == 1, "kernel_source"] = "vllm_flashinfer_trtllmdecode"
    one = int((rows.isl == 1).sum())
    t = kerneltable.KernelTable("context_attention", "b200", "NVIDIA B200", "vllm", "0.24.0", "x.parquet", rows)
    (g,) = kernelfit.groups([t])
    assert len(g.rows) == len(rows) - one > 0 and (g.rows.isl > 1).all()
    assert g.timed == f"{one} one-token rows the framework runs on its decode kernel left out"
    gen = kernelfit.rows.own_kernel(rows.assign(step=7), "generation_attention")
    assert len(gen) == len(rows)
    assert len(kernelfit.rows.own_kernel(rows.drop(columns="kernel_source"), "context_attention")) == len(rows)


def test_the_benchmark_leaves_the_skipped_classes_out():
    """``kernel_tables.py --skip-class TEXT``: the classes whose name holds TEXT are neither fitted nor stored anew
    (the sliding-window decode classes, kept as stored while the other decode classes are refitted)."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import kernel_tables
    names = ["generation attention bf16, KV bf16", "generation attention bf16, KV bf16, sliding window",
             "generation attention bf16, KV bf16, sliding window, MMHA kernel", "generation attention bf16, KV fp8"]
    gs = [kernelfit.Group(n, ("kernel", n), "generation_attention", None, None) for n in names]
    kept = [g.name for g in kernel_tables.chosen(gs, (), ("sliding window",))]
    assert kept == [names[0], names[3]]
    assert [g.name for g in kernel_tables.chosen(gs, ("KV fp8",), ("sliding window",))] == [names[3]]
    assert len(kernel_tables.chosen(gs, ())) == 4


def test_a_new_head_dim_does_not_coarsen_the_other_axes():
    """The head dims a class holds are kernels, not a resolution its rows must fill: with the same rows spread over
    five head dims instead of one, the grid keeps the other axes' nodes (``kernelfit.grid.without_values``; counted,
    vLLM H100's one-head decode class had its key and unit steps squared when head dim 192 got its node)."""
    rng = np.random.default_rng(3)
    rows = 500
    n = np.exp(rng.uniform(0.0, np.log(16384.0), rows))
    units = np.exp(rng.uniform(0.0, np.log(2048.0), rows))
    one = kernelfit.grid.fit_nodes("generation_attention", (np.ones(rows), n, np.full(rows, 128.0), units), rows)
    five = kernelfit.grid.fit_nodes("generation_attention", (np.ones(rows), n, rng.choice(
        [64.0, 128.0, 192.0, 256.0, 512.0], rows), units), rows)
    assert five[2] == [64.0, 128.0, 192.0, 256.0, 512.0]
    assert [five[i] for i in (0, 1, 3)] == [one[i] for i in (0, 1, 3)]
    # the rows still bound the other axes: a tenth of them squares their steps
    few = kernelfit.grid.fit_nodes("generation_attention", (np.ones(50), n[:50], np.full(50, 128.0), units[:50]), 50)
    assert len(few[1]) < len(one[1])

