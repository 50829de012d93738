"""GEMM and attention terms fitted on measured kernel tables (tests/data/kernel_tables, an extract of
aiconfigurator-core 0.12.0): held-out rows reproduced, the table stored with its provenance, and the catalog's
fitted terms used by `analyze`."""
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli

pytest.importorskip("pandas")

from ironlaw.core.gemmshape import attention_kernel  # noqa: E402
from ironlaw.law import law  # noqa: E402
from ironlaw.machine import calibration, hardware  # noqa: E402
from ironlaw.measure.calibrate import kernelfit, kerneltable  # noqa: E402
from ironlaw.models import workloads  # noqa: E402

DATA = Path(__file__).parent / "data" / "kernel_tables"
# held-out median and p90 |error| the extract's fit must reach per kind of group (docs/accuracy.md has the full
# tables' numbers per GPU; the attention groups are split by regime: window, one head per KV head, wide GQA)
# the extract holds every 40th row: a kernel grid fitted on rows that far apart interpolates coarsely (the sliding-
# window generation class: p90 71%; on the full tables the grid's held-out rows are the fitted rows' neighbours)
# the window class MMHA runs (one head per KV head, or over 32 per KV head) has 30 rows in the extract, 15 fitted:
# 12.4% / 24.8% held out there with its multi-block launch (split_kv = "mmha"), 62% / 94% with no fit
# (docs/accuracy.md has the full tables' numbers)
BOUNDS = {"generation attention bf16, KV bf16, sliding window, MMHA kernel": (0.15, 0.30),
          "gemm": (0.10, 0.35), "context attention": (0.15, 0.45), "generation attention": (0.30, 0.75)}
GROUPS = 10                 # gemm bf16, 4 regimes of context and 5 of generation attention (bf16, KV bf16: the
                            # sliding window split into its XQA and MMHA kernels)


@pytest.fixture(scope="module")
def h100_fit():
    hw = hardware.get("h100")
    gs = kernelfit.groups(kerneltable.read(DATA / "h100_sxm", ops=kernelfit.OPS, framework="trtllm"))
    return hw, gs, kernelfit.fit(hw, gs, date="2026-12-05", origin="extract", license="Apache-2.0")


def test_fitted_terms_reproduce_held_out_rows(h100_fit):
    hw, gs, cal = h100_fit
    scores = {s.group: s for s in kernelfit.score(hw, cal, gs)}
    assert len(scores) == GROUPS
    for name, s in scores.items():
        med, p90 = next(b for k, b in BOUNDS.items() if name.startswith(k))
        assert s.median_abs_err <= med and s.p90_abs_err <= p90, s
    neutral = kernelfit.score(hw, {"schema": calibration.SCHEMA, "source": "derived: none", "fitted": ["none"]}, gs)
    assert all(s.median_abs_err > scores[s.group].median_abs_err for s in neutral)   # the fit is what helps


def test_table_and_provenance(h100_fit):
    hw, gs, cal = h100_fit
    calibration.check(cal, "calibration")
    assert set(cal["matmul"]) == {"bf16"}
    assert set(cal["kernel"]) >= {attention_kernel("prefill", "bf16", "bf16"), attention_kernel("decode", "bf16", "bf16"),
                                  attention_kernel("decode", "fp8", "bf16")}      # FP8 math: derived from bf16's
    for g in gs:
        p = cal["provenance"][g.name]
        assert p["rows_fitted"] + p["rows_held_out"] == len(g.rows) and p["license"] == "Apache-2.0"
        assert p["table"].startswith(g.table.path) and p["date"] == "2026-12-05"
    assert "latency_s" in cal["matmul"]["bf16"]
    with pytest.raises(Exception, match="rows_fitted"):
        calibration.check({**cal, "provenance": {"x": {**p, "rows_fitted": -1}}}, "calibration")


def _analyze_s(spec: str, hw, dtype: str) -> float:
    g = workloads.resolve(workloads.Request(spec, phase="infer", dtype=dtype, device="cuda"))
    return float(law.predict(g, hw).time_s)


def test_catalog_gemm_terms_are_used_by_analyze():
    """B200 NVFP4 GEMMs of the extract (rows of the table the catalog's terms were fitted on, every other row
    held out there): `analyze gemm:M,N,K --on b200 --dtype fp4` lands near them."""
    hw = hardware.get("b200")
    assert "fp4" in hw.calibration.shape("matmul") and "gemm fp4" in hw.calibration.provenance
    rows = kerneltable.read(DATA / "b200_sxm", ops=("gemm",), gpu="b200")[0].rows
    rows = rows[(rows.m >= 64) & (rows.n >= 1024) & (rows.k >= 1024)]        # LLM-sized GEMMs
    pred = np.array([_analyze_s(f"gemm:{r.m},{r.n},{r.k}", hw, "fp4") for r in rows.itertuples()])
    err = np.abs(pred / rows.latency_s.to_numpy() - 1.0)
    assert np.median(err) <= 0.06, np.median(err)     # the table's held-out fp4 class: 2–3% (docs/accuracy.md)
    assert "grid_log" in hw.calibration.shape("matmul")["fp4"]              # the kernel grid is what gets it there
    bare = np.array([_analyze_s(f"gemm:{r.m},{r.n},{r.k}", calibration.without_calibration(hw), "fp4")
                     for r in rows.itertuples()])
    assert np.median(np.abs(bare / rows.latency_s.to_numpy() - 1.0)) > 2 * np.median(err)
    r = run_cli("analyze", "gemm:4096,4096,4096", "--on", "b200", "--dtype", "fp4", "--format", "json")
    assert r.rc == 0, r.err
    assert r.json()["time_s"] == pytest.approx(_analyze_s("gemm:4096,4096,4096", hw, "fp4"), rel=1e-6)


def test_attention_ops_name_their_kernel_class():
    g = workloads.resolve(workloads.Request("llama3-8b", phase="decode", batch=4, seq=1000, dtype="bf16",
                                            device="cuda"))
    att = [op for op in g.ops if op.kind == "attention"][0]
    assert att.attrs["kernel"] == attention_kernel("decode", "bf16", "bf16")
    assert att.attrs["mnk"] == (4.0, 1001.0, 128.0)         # 32 heads on 8 KV heads, 1000 cached keys + 1
    from ironlaw.models.serving.online import with_kv_dtype
    fp8 = [op for op in with_kv_dtype(g, "fp8").ops if op.kind == "attention"][0]
    assert fp8.attrs["kernel"] == attention_kernel("decode", "bf16", "fp8")


def test_calibrate_writes_a_profile_that_on_uses(tmp_path, shared_kernel_fits):
    out = tmp_path / "h100-kernels.toml"
    r = run_cli("calibrate", "--kernels", str(DATA / "h100_sxm" / "gemm"), "--gpu", "h100", "--out", str(out),
                "--format", "json", timeout=600)
    assert r.rc == 0, r.err
    doc = r.json()
    from ironlaw.core import schemas
    schemas.validate(doc)
    assert [s["group"] for s in doc["held_out"]] == ["gemm bf16"] and doc["saved"] == str(out)
    hw = hardware.get(str(out))
    assert [c["group"] for c in doc["gemm_forms"]] == ["gemm bf16"]        # the form each GEMM class took
    assert doc["gemm_forms"][0]["form"] == hw.calibration.provenance["gemm bf16"]["gemm_form"]
    assert hw.name == "h100" and hw.calibration.provenance["gemm bf16"]["table"].startswith("trtllm/1.3.0rc20/")
    a = run_cli("analyze", "gemm:2048,4096,4096", "--on", str(out), "--format", "json")
    assert a.rc == 0, a.err
    assert a.json()["time_s"] == pytest.approx(_analyze_s("gemm:2048,4096,4096", hw, "bf16"), rel=1e-6)


def test_predictions_import_neither_pandas_nor_pyarrow():
    import subprocess
    import sys
    code = ("import sys\nfrom ironlaw.law import law\nfrom ironlaw.machine import hardware\n"
            "from ironlaw.models import workloads\n"
            "g = workloads.resolve(workloads.Request('llama3-8b', phase='decode', batch=8, seq=512, device='cuda'))\n"
            "law.predict(g, hardware.get('b200'))\n"
            "assert not {'pandas', 'pyarrow'} & set(sys.modules), sorted({'pandas', 'pyarrow'} & set(sys.modules))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_a_device_without_tables_says_its_numbers_are_the_datasheets(cli):
    r = cli("analyze", "llama3-8b", "--phase", "decode", "--batch", "8", "--seq", "1024", "--on", "mi250x")
    assert r.rc == 0, r.err
    assert "datasheet only: mi250x has no measured kernel tables" in " ".join(r.out.split())
    j = cli("analyze", "gemm:4096,4096,4096", "--on", "mi250x", "--format", "json").json()
    assert "no measured kernel tables" in j["calibration_coverage"]["note"]


def test_mla_classes_fitted_and_carried_by_deepseek_attention():
    """MLA kernel tables (extract of H200's): a class per phase fitted and held out, the FP8-math classes derived,
    and DeepSeek-V3's attention ops named by those classes, with their shape per sequence."""
    hw = hardware.get("h200")
    gs = kernelfit.groups(kerneltable.read(DATA / "h200_sxm", ops=("context_mla", "generation_mla"), framework="trtllm"))
    want = {attention_kernel(p, "bf16", "bf16", "_mla") for p in ("prefill", "decode")}
    assert {g.key[1] for g in gs} == want
    cal = kernelfit.fit(hw, gs, date="2026-12-05", origin="extract", license="Apache-2.0")
    for s in kernelfit.score(hw, cal, gs):
        assert s.median_abs_err <= 0.15 and s.p90_abs_err <= 0.45, s
    assert {attention_kernel(p, "fp8", "bf16", "_mla") for p in ("prefill", "decode")} <= set(cal["kernel"])
    for phase in ("prefill", "decode"):
        g = workloads.resolve(workloads.Request("deepseek-v3", phase=phase, dtype="bf16", device="cuda", batch=4, seq=1024))
        att = [op for op in g.ops if op.kind == "attention"]
        assert att and all(op.attrs["kernel"] == attention_kernel(phase, "bf16", "bf16", "_mla") for op in att)
        m, n, k = att[0].attrs["mnk"]
        assert k == (576 if phase == "decode" else 192) and m == (128 if phase == "decode" else 1024)
    prov = hardware.get("h200").calibration.provenance                   # the catalog's, from the full tables
    assert {"context mla bf16, KV bf16", "generation mla bf16, KV fp8"} <= set(prov)
    assert prov["generation mla bf16, KV fp8"]["table"].endswith("generation_mla_perf.parquet (NVIDIA H200)")


def test_attention_grid_counts_the_nodes_its_rows_reach_and_keeps_every_head_dim():
    # context rows with one head per KV head: M (query rows) = 2·N (keys per query) on every row, so of a 4×4×…
    # plane only the diagonal holds rows; head dims 64/128/256 each run a kernel of their own
    rng = np.random.default_rng(0)
    n = np.exp(rng.uniform(0.0, np.log(8192.0), 600))
    k = rng.choice([64.0, 128.0, 256.0], 600)
    units = np.exp(rng.uniform(np.log(2.0), np.log(512.0), 600))
    coords = (2.0 * n, n, k, units)
    nodes = kernelfit.grid.fit_nodes("context_attention", coords, 600)
    assert nodes[2] == [64.0, 128.0, 256.0]                          # the head dim is never coarsened
    every = int(np.prod([len(a) for a in nodes]))
    assert kernelfit.grid.reached_count(nodes, coords) < every / 1.5            # much of the plane holds no row ...
    folded = kernelfit.grid.without_values("context_attention", nodes, coords)   # the head dims' nodes not counted
    assert 600 >= kernelfit.grid.GRID_ROWS_PER_NODE * kernelfit.grid.reached_count(*folded)
    assert 600 < kernelfit.grid.GRID_ROWS_PER_NODE * every                 # ... so counting every node coarsens
    # too few rows: the steps are squared, never the head dim's
    few = kernelfit.grid.fit_nodes("context_attention", tuple(c[:120] for c in coords), 120)
    assert few[2] == [64.0, 128.0, 256.0]
    assert 120 >= kernelfit.grid.GRID_ROWS_PER_NODE * kernelfit.grid.reached_count(
        *kernelfit.grid.without_values("context_attention", few, tuple(c[:120] for c in coords)))
    assert sum(len(a) for a in few) < sum(len(a) for a in nodes)


def test_attention_grid_reproduces_a_step_between_head_dims():
    # a kernel switch at head dim 128 that a grid with nodes at 64 and 256 only would average away
    rng = np.random.default_rng(1)
    rows = 800
    n = np.exp(rng.uniform(0.0, np.log(4096.0), rows))
    k = rng.choice([64.0, 128.0, 256.0], rows)
    coords = (4.0 * n, n, k, np.full(rows, 8.0))
    y = np.where(k == 128.0, np.log(1.5), 0.0)                      # measured 1.5× the model at head dim 128 only
    nodes = kernelfit.grid.fit_nodes("context_attention", coords, rows)
    cols = kernelfit.grid.reached_nodes(nodes, coords)
    coef = np.zeros(int(np.prod([len(a) for a in nodes])))
    coef[cols] = kernelfit.grid.grid_solve(nodes, coords, y, cols)
    p = {"grid_nodes": nodes, "grid_log": " ".join(str(int(round(100 * c))) for c in coef)}
    from ironlaw.core.gemmshape import grid_factor
    f = grid_factor(p, *coords)
    assert np.median(np.abs(f[k == 128.0] / 1.5 - 1)) < 0.03 and np.median(np.abs(f[k != 128.0] - 1)) < 0.03


def test_a_calibration_fitted_in_parts_names_each_table_once():
    """Refitting some tables (``kernel_tables.py --op``) merges the fitter's clause: one per origin, every table
    file either part fitted, other clauses once; merging a source with itself changes nothing."""
    k = kernelfit.KERNEL_SOURCE
    base = f"derived: {k} (aic (NVIDIA): a.parquet (t 1); g.parquet (t 1)); the MoE layer (moefit; aic)"
    new = f"derived: {k} (aic (NVIDIA): a.parquet (t 1); m.parquet (t 1))"
    out = kernelfit.merged_source(base, new)
    assert out == (f"derived: {k} (aic (NVIDIA): a.parquet (t 1); g.parquet (t 1); m.parquet (t 1)); "
                   "the MoE layer (moefit; aic)")
    assert kernelfit.merged_source(out, out) == out
    other = kernelfit.merged_source(out, f"derived: {k} (mine: x.csv (t 2))")
    assert other.count(k) == 2 and other.endswith("(mine: x.csv (t 2))")


def test_generation_rows_whose_cache_fits_the_l2_are_priced_there():
    """The collector re-reads one KV cache call after call: a generation row whose cache fits the last cache level
    is marked resident and priced at that tier, as the law prices a resident op; larger rows, other tables and a
    device without a cache level keep device memory."""
    from ironlaw.core.graph import Graph
    from ironlaw.machine.cache import repeated_limit_bytes
    hw = hardware.get("h100")
    gs = {g.name: g for g in kernelfit.groups(kerneltable.read(DATA / "h100_sxm", ops=kernelfit.OPS,
                                                                 framework="trtllm"))}
    g = gs["generation attention bf16, KV bf16"]
    obs = kernelfit.observations(g, g.rows, hw)
    byts = np.array([sum(o.op.bytes.values()) for o in obs])
    cache = np.array([o.op.bytes["kv_cache"] for o in obs])
    marked = np.array([bool(o.op.attrs.get("resident")) for o in obs])
    limit = repeated_limit_bytes(hw)
    assert limit == 50 * 2**20 and marked.any() and (~marked).any()
    assert np.array_equal(marked, cache <= limit)                  # the cache the calls re-read decides
    plain = kernelfit.observations(g, g.rows)                     # without a device: as measured
    assert not any(o.op.attrs.get("resident") for o in plain)
    i = int(np.flatnonzero(marked & (byts > 0.5 * limit))[0])      # the probe's own fraction would miss it
    l2 = next(k for k, t in enumerate(hw.memory) if t.role == "cache")
    kv = obs[i].op.bytes["kv_cache"]
    for op, tier, moved in ((obs[i].op, l2, byts[i]), (plain[i].op, hw.device_tier, kv)):
        est = law.predict(Graph("row", "decode", "bf16", [op]), hw)
        assert np.asarray(est.traffic_bytes)[tier].sum() == pytest.approx(moved)
    ctx = gs["context attention bf16, KV bf16"]
    assert not any(o.op.attrs.get("resident") for o in kernelfit.observations(ctx, ctx.rows, hw))
    b200 = hardware.get("b200")                                    # no cache level in its catalog file
    assert repeated_limit_bytes(b200) is None
    assert not any(o.op.attrs.get("resident") for o in kernelfit.observations(g, g.rows, b200))


def test_generation_mla_split_holds_out_every_head_count_between_fitted_ones():
    """MLA's heads per GPU (128 / TP) come 8 to a batch and sequence length: the even/odd split must fit and hold out
    each head count (sorted with the heads last it held out 2, 8, 32 and 128, the last beyond every fitted row), and
    the grid keeps a node per head count."""
    gs = kernelfit.groups(kerneltable.read(DATA / "h200_sxm", ops=("generation_mla",), framework="trtllm"))
    (g,) = gs
    fit_rows, held = kernelfit.split(g.rows)
    assert set(held.num_heads) <= set(fit_rows.num_heads) and set(held.num_heads) == set(g.rows.num_heads)
    assert set(held.step) <= set(fit_rows.step)
    m = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0] * 8)
    rng = np.random.default_rng(1)
    coords = (m, np.exp(rng.uniform(0.0, np.log(131072.0), m.size)), np.full(m.size, 576.0),
              np.exp(rng.uniform(0.0, np.log(2048.0), m.size)))
    nodes = kernelfit.grid.fit_nodes("generation_mla", coords, 200)     # few rows: the other axes coarsen, heads do not
    assert list(nodes[0]) == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]
    assert len(nodes[1]) < len(kernelfit.grid.fit_nodes("generation_mla", coords, 100_000)[1])


def test_calibrate_prints_its_text_report(tmp_path, shared_kernel_fits):
    out = tmp_path / "h100-kernels.toml"
    r = run_cli("calibrate", "--kernels", str(DATA / "h100_sxm" / "gemm"), "--gpu", "h100", "--out", str(out),
                timeout=600)
    assert r.rc == 0, r.err
    assert "held-out rows" in r.out and "gemm bf16" in r.out and f"wrote {out}" in r.out
    assert "gemm bf16: stream form" in r.out or "gemm bf16: half form" in r.out


def test_wide_prefill_tiles_each_query_head_on_its_own():
    """Over 32 heads per KV head a context kernel's M is the query tokens of one head, its heads a grid of CTAs
    (units = sequences × heads × 2: QKᵀ and PV); up to 32, and in decode, the heads sharing a KV head stay grouped."""
    import types
    from ironlaw.core.gemmshape import grid_units, tiled_kv_heads
    assert tiled_kv_heads("prefill", "_wide", 64, 1) == 64
    assert tiled_kv_heads("decode", "_wide", 64, 1) == 1 and tiled_kv_heads("prefill", "", 32, 1) == 1
    g = types.SimpleNamespace(op="context_attention", timed="")
    for heads, op_name, phase, m_want, units_want in ((64, "context_attention", "prefill", 512.0, 2 * 64 * 2),
                                                     (32, "context_attention", "prefill", 512.0 * 32, 2 * 1 * 2),
                                                     (64, "generation_attention", "decode", 64.0, 2 * 1 * 2)):
        g.op = op_name
        row = types.SimpleNamespace(attn_dtype="bfloat16", kv_cache_dtype="bfloat16", num_heads=heads,
                                    num_key_value_heads=1, batch_size=2, isl=512, step=512, head_dim=128,
                                    window_size=0)
        op = kernelfit.ops.attention_op(row, g)
        m, n, k = op.attrs["mnk"]
        assert op.attrs["kernel"].endswith("_wide") == (heads > 32)
        assert m == m_want and k == 128.0
        assert float(grid_units(op.flops, m, n, k)) == pytest.approx(units_want, rel=0.01)


def decode_table(version: str, rows: list[tuple], gpu: str = "a100") -> kerneltable.KernelTable:
    """A TensorRT-LLM generation-attention table of ``rows`` (batch, cached tokens, heads, KV heads, head dim), bf16."""
    import pandas as pd
    frame = pd.DataFrame([dict(batch_size=b, isl=1, num_heads=h, num_key_value_heads=kv, head_dim=d, window_size=0,
                               attn_dtype="bfloat16", kv_cache_dtype="bfloat16", step=s, kernel_source="torch_flow",
                               latency_s=1e-3) for b, s, h, kv, d in rows])
    return kerneltable.KernelTable("generation_attention", gpu, "device", "trtllm", version, "x.parquet", frame)


def test_decode_rows_on_the_collectors_k_only_pool_move_half_the_cache():
    """aiconfigurator's TensorRT-LLM collector ran decode attention on a K-only cache pool before the 1.3 line: the
    grouped-query rows of those tables (A100's 1.0.0 table, the 1.0-line tables) are the op with half its cache's
    bytes; the 1.3.0rc20 tables' rows, one head per KV head (MMHA, which streams both), MLA's and a served step keep
    both keys and values."""
    shape = [(16, 65535, 16, 8, 128)]
    old, new = (kernelfit.groups([decode_table(v, shape)])[0] for v in ("1.0.0", "1.3.0rc20"))
    assert kernelfit.rules.k_only_pool(old) and not kernelfit.rules.k_only_pool(new)
    mha = kernelfit.groups([decode_table("1.0.0", [(16, 65535, 8, 8, 128)])])[0]
    assert mha.name.endswith("one head per KV head") and not kernelfit.rules.k_only_pool(mha)
    kv = 16 * 65536 * 8 * 128 * 2 * 2                                      # keys and values, bf16
    (o_old,), (o_new,) = (kernelfit.observations(g, g.rows) for g in (old, new))
    assert o_new.op.bytes["kv_cache"] == pytest.approx(kv)
    assert o_old.op.bytes["kv_cache"] == pytest.approx(kv / 2)
    assert o_old.op.bytes["activations"] == o_new.op.bytes["activations"]
    mla = kernelfit.groups(kerneltable.read(DATA / "h200_sxm", ops=("generation_mla",), framework="trtllm"))[0]
    assert not kernelfit.rules.k_only_pool(replace_version(mla, "1.0.0"))


def test_sm100_one_head_decode_rows_on_the_k_only_pool_move_half_the_cache_too():
    """On B200 and GB200 the 1.0 line decodes one head per KV head with the same trtllm-gen kernels as grouped
    queries, and those tables' one-head rows read half the cache as well; Hopper's (MMHA) and the 1.3 line's keep
    both keys and values."""
    mha = [(16, 65535, 8, 8, 128)]
    on = {(gpu, v): kernelfit.groups([decode_table(v, mha, gpu)])[0]
          for gpu in ("b200", "gb200", "h100", "h200") for v in ("1.0.0rc6", "1.3.0rc20")}
    assert all(g.name.endswith("one head per KV head") for g in on.values())
    assert {k for k, g in on.items() if kernelfit.rules.k_only_pool(g)} == {("b200", "1.0.0rc6"), ("gb200", "1.0.0rc6")}
    kv = 16 * 65536 * 8 * 128 * 2 * 2                                      # keys and values, bf16
    (o_old,), (o_new,) = (kernelfit.observations(g, g.rows) for g in (on["b200", "1.0.0rc6"], on["b200", "1.3.0rc20"]))
    assert o_old.op.bytes["kv_cache"] == pytest.approx(kv / 2) and o_new.op.bytes["kv_cache"] == pytest.approx(kv)


def replace_version(g, version: str):
    from dataclasses import replace
    return replace(g, table=replace(g.table, version=version))


def test_a_decode_whose_kv_cache_is_the_l2s_size_is_read_from_there():
    """RTX PRO 6000 (128 MiB L2): a bf16 cache of exactly 128 MiB (batch 2, 131,071 cached tokens, one KV head × 128)
    is resident though its query, output and new token take the op past 128 MiB; twice that cache is not."""
    from ironlaw.machine.cache import repeated_limit_bytes
    hw = hardware.get("rtx-pro-6000")
    limit = repeated_limit_bytes(hw)
    g = kernelfit.groups([decode_table("1.3.0rc20", [(2, 131071, 2, 1, 128), (4, 131071, 2, 1, 128)],
                                       "rtx-pro-6000")])[0]
    at, twice = kernelfit.observations(g, g.rows, hw)
    assert at.op.bytes["kv_cache"] == limit < sum(at.op.bytes.values())
    assert at.op.attrs.get("resident") and not twice.op.attrs.get("resident")
    assert kernelfit.collector.reread_bytes(at.op) == limit
