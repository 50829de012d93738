"""ironlaw search: the candidate space, the fast path against parallel.train_step, the engines, the CLI.

The fast path (ironlaw.models.search.fast) re-orders train_step's arithmetic; it must agree with train_step to
floating-point rounding (REL) on every layout, here on seeded random samples of three models that exercise
the branches: dense GQA with and without tensor-parallel collectives (the two closed forms of the gradient
overlap), a mixture of experts with expert parallelism, and GPT-2 (biases, dropout, learned positions) with
stages of one layer (pp = layers).
"""
import json
import random

import numpy as np
import pytest

from ironlaw.machine import hardware
from ironlaw.core.errors import IronlawError
from ironlaw.machine.network.collectives import collective_time
from ironlaw.machine.network.topology import nodes_for
from ironlaw.models.search import engines, fast, space, train

from conftest import run_cli

REL = 1e-9
H100 = hardware.get("h100")
KEYS = ("time_s", "memory_per_gpu_bytes", "mfu")


def _space(spec, gpus, gbs, seq, dtype=None, settings=None, **fixed):
    g = train.graph(spec, H100, seq, dtype)
    m = g.meta
    s = space.Space(gpus, gbs, seq, m["layers"], m["heads"], m.get("kv_heads", m["heads"]), m.get("experts", 0),
                    fixed, gpus_per_node=gpus // nodes_for(H100, gpus))
    ctx = fast.Context(spec, H100, gpus, nodes_for(H100, gpus), gbs, seq, g.meta.get("precision", g.dtype),
                       settings={**train.SETTINGS, **(settings or {})})
    return space.enumerate_space(s), ctx


def _fast(c, ctx):
    return train.evaluate_all(ctx, c)


def _check_sample(spec, gpus, gbs, seq, n, seed, must=None, dtype=None, settings=None, **fixed):
    c, ctx = _space(spec, gpus, gbs, seq, dtype, settings, **fixed)
    res = _fast(c, ctx)
    fits = np.nonzero(res["fits"])[0]
    rng = random.Random(seed)
    pick = rng.sample(list(fits), min(n, fits.size))
    if must is not None:                        # rows that exercise a branch the sample may miss
        pick += [int(i) for i in fits if must(train.row_of(c, int(i)))][:3]
    graphs: dict = {}
    for i in pick:
        row = train.row_of(c, int(i))
        st = train.exact(ctx, row, graphs)
        got = {"time_s": st.step_s, "memory_per_gpu_bytes": st.memory.total_bytes, "mfu": st.mfu}
        for k in KEYS:
            assert res[k][i] == pytest.approx(got[k], rel=REL), (row, k)
        for k in ("microbatch_s", "pipeline_bubble_s", "pipeline_p2p_s", "dp_grad_exposed_s",
                  "zero_param_gather_s", "optimizer_s", "cp_ring_exposed_s", "fsdp_exposed_s"):
            assert res[k][i] == pytest.approx(getattr(st.breakdown, k), rel=REL, abs=1e-15), (row, k)
    return c, res


def test_fast_path_matches_train_step_on_mixed_dense_and_moe_layers():
    """DeepSeek-V3: 3 dense layers, 58 MoE layers with a shared expert, MLA; its TP collectives run in some
    layers only, and count as layer ops in both paths (tensor parallelism, pipelines of 61 uneven layers,
    with and without interleaving)."""
    _check_sample("deepseek-v3", 256, 512, 4096, 4, seed=3, dtype="fp8",
                  must=lambda r: r["tp"] == 2 and r["pp"] > 1)
    c, res = _check_sample("deepseek-v3", 256, 512, 4096, 2, seed=4, dtype="fp8",
                           must=lambda r: r["pp"] > 1 and r["interleave"] > 1)
    assert np.any((c["pp"] == 4) & (c["interleave"] == 4) & res["fits"])     # 61 layers in 16 uneven chunks


def test_fast_path_matches_train_step_on_uneven_stages():
    """Llama 3 8B's 32 layers on pp 5: 7 per stage, 4 on the last (parallel.stage_layers)."""
    c, res = _check_sample("llama3-8b", 40, 40, 2048, 6, seed=5, must=lambda r: r["pp"] == 5)
    assert np.any((c["pp"] == 5) & res["fits"])


def test_space_counts_and_divisibility():
    c, _ = _space("llama3-70b", 1024, 1024, 8192)
    n = len(c["tp"])
    assert n > 5000
    assert np.all(c["tp"] * c["pp"] * c["cp"] * c["dp"] == 1024)
    assert np.all(8 % c["tp"] == 0)                                   # 8 key/value heads
    chunks = c["pp"] * c["interleave"]
    assert np.all((80 % chunks == 0) | ((c["pp"] > 1) & (82 % chunks == 0)))   # embedding, loss as layers
    assert np.all(8192 % (2 * c["cp"]) == 0) and set(np.unique(c["cp"])) > {1}
    assert np.all(1024 % (c["micro_batch"] * c["dp"]) == 0)
    assert np.all((c["sequence_parallel"] == 0) | (c["tp"] > 1))
    assert np.all((c["zero"] == 0) | (c["dp"] * c["cp"] > 1))
    m = 1024 // (c["micro_batch"] * c["dp"])
    assert np.all((c["interleave"] == 1) | ((c["pp"] > 1) & (m % c["pp"] == 0)))
    rows = {tuple(int(c[k][i]) for k in space.COLUMNS) for i in range(n)}
    assert len(rows) == n                                              # no layout twice


def test_fast_path_matches_train_step_dense():
    _check_sample("llama3-8b", 16, 128, 8192, 20, 1, must=lambda r: r["tp"] == 1 and r["dp"] > 1)


def test_fast_path_matches_train_step_moe():
    _check_sample("mixtral-8x7b", 32, 64, 4096, 15, 2, must=lambda r: r["ep"] > 1)


def test_fast_path_matches_train_step_moe_a2a_overlap():
    _check_sample("mixtral-8x7b", 32, 64, 4096, 10, 7, must=lambda r: r["ep"] > 1 and r["pp"] > 1,
                  settings={"moe_a2a_overlap": True})


def test_fast_path_matches_train_step_moe_flex_dispatcher():
    _check_sample("qwen3-30b-a3b", 16, 64, 4096, 6, 8, must=lambda r: r["ep"] in (2, 4) and r["pp"] > 1,
                  settings={"moe_dispatcher": "flex"})


def test_fast_path_matches_train_step_one_layer_stages():
    _check_sample("gpt2", 24, 48, 1024, 12, 3, must=lambda r: r["pp"] == 12 and r["dp"] > 1)


def test_fast_path_matches_train_step_fp8_cp_uneven_stages():
    """Llama 3.1 405B in FP8 with context parallelism on 1,024 GPUs: 126 layers on pp 8 put the embedding and the
    loss in a layer's place (first and last stage 15 layers, the middle ones 16)."""
    c, res = _check_sample("llama3.1-405b", 1024, 512, 8192, 10, 4, dtype="fp8", tp=8, pp=8,
                           must=lambda r: r["cp"] > 1 and r["zero"] == 3)
    assert set(np.unique(c["cp"])) >= {1, 2}


def test_fast_path_matches_train_step_moe_fp8():
    _check_sample("qwen3-30b-a3b", 16, 512, 4096, 10, 5, dtype="fp8", must=lambda r: r["ep"] == 8)


def test_fast_path_matches_train_step_alternating_attention():
    """gpt-oss-120b: its windowed and global attention ops run on half the layers each (count L/2): a stage
    holds them in proportion (fractional counts on pp 4) and critical_path repeats whole invocations."""
    _check_sample("gpt-oss-120b", 64, 512, 4096, 8, 6,
                  must=lambda r: r["pp"] == 2 and r["recompute"] != "none" and r["cp"] > 1)
    _check_sample("gpt-oss-120b", 64, 512, 4096, 2, 7, must=lambda r: r["pp"] == 4 and r["tp"] > 1 and r["dp"] > 1)


def test_closed_form_overlap_equals_the_replayed_schedule():
    """fast.exposed_closed_form (closed form) against fast.exposed_replayed (the schedule, repetition by
    repetition) on both block kinds: with tensor-parallel collectives in the layer (tp 4) and without (tp 1)."""
    rng = np.random.default_rng(0)
    for tp in (1, 4):
        c, ctx = _space("llama3-8b", 16, 128, 4096, tp=tp)
        g = fast.training_graph(ctx, np.array([1.0, 2.0]))
        key = (tp, 0, 1, 1)
        tab = fast.tables(g, key, "selective", ctx, False, fast.predicted(g, key, ctx))["P"]
        for layers in (2, 7, 32):
            sy = tab.sync(layers)
            assert fast.has_closed_form(sy)
            assert any(k == "n" for k, _ in sy.segs) == (tp > 1)
            n = 64
            t = tab.t[:, rng.integers(0, 2, n)]
            g_layer = t[tab.layer].sum(axis=0) * rng.uniform(0.05, 3.0, n)    # hidden … far longer than a layer
            g_rest = g_layer * rng.uniform(0.0, 2.0, n)
            has = rng.uniform(size=n) > 0.3
            a = fast.exposed_closed_form(sy, t, g_layer, g_rest, has)
            b = fast.exposed_replayed(sy, t, g_layer, g_rest, has)
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-15)


def test_top_is_exact_and_ranked():
    r = train.search("llama3-8b", "h100", 64, 256, 4096, top=5)
    assert r.check["max_rel_diff"] <= train.AGREE_REL
    tps = [e["tokens_per_s_per_gpu"] for e in r.top]
    assert tps == sorted(tps, reverse=True)
    best = np.max(r.results["tokens_per_s_per_gpu"][r.results["fits"]])
    assert r.top[0]["tokens_per_s_per_gpu"] == pytest.approx(best, rel=1e-9)
    for e in r.top:
        assert e["memory_per_gpu_bytes"] <= H100.memory[H100.device_tier].capacity_bytes
        assert e["tokens_per_s_per_gpu"] == pytest.approx(256 * 4096 / (e["time_s"] * 64), rel=1e-12)


def test_fixed_knobs_narrow_the_space():
    r = train.search("llama3-8b", "h100", 64, 256, 4096, top=3, fixed={"tp": 2, "recompute": "full"})
    assert all(e["tp"] == 2 and e["recompute"] == "full" for e in r.top)
    full = train.search("llama3-8b", "h100", 64, 256, 4096, top=1)
    assert r.candidates_evaluated < full.candidates_evaluated


def _small():
    return dict(spec="llama3-8b", on="h100", gpus=32, global_batch=64, seq=4096, top=5)


def _same(a, b):
    assert [{k: v for k, v in e.items() if k != "rank"} for e in a.top] == \
        [{k: v for k, v in e.items() if k != "rank"} for e in b.top]
    for k in ("time_s", "memory_per_gpu_bytes", "fits"):
        np.testing.assert_array_equal(a.results[k], b.results[k])


def test_engines_local_and_pool_agree():
    one = train.search(**_small())
    two = train.search(**_small(), workers=2)
    assert two.engine == "pool"
    _same(one, two)


def test_engine_ray_agrees_with_local():
    try:
        import ray
    except ImportError as e:
        pytest.skip(f"ray does not import ({e}); pip install 'ironlaw[scale]' to run this test")
    one = train.search(**_small())
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        on_ray = train.search(**_small(), engine="ray")
    finally:
        ray.shutdown()
    assert on_ray.engine == "ray"
    _same(one, on_ray)


def test_ray_missing_is_one_line(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_ray(name, *a, **k):
        if name == "ray":
            raise ImportError("no ray here")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(IronlawError, match=r"pip install 'ironlaw\[scale\]'"):
        engines.ray_module()


def test_cli_json_schema():
    r = run_cli("search", "llama3-8b", "--on", "h100", "--gpus", "64", "--global-batch", "256", "--seq", "4096",
                "--top", "3", "--format", "json")
    assert r.rc == 0, r.err
    d = json.loads(r.out)
    assert d["schema"] == "ironlaw.search/1"
    assert d["candidates_evaluated"] >= d["fits"] > 0 and len(d["top"]) == 3
    for e in d["top"]:
        for k in ("tp", "pp", "cp", "dp", "ep", "micro_batch", "interleave", "recompute", "zero", "sequence_parallel",
                  "time_s", "tokens_per_s_per_gpu", "mfu", "bottleneck", "memory_per_gpu_bytes"):
            assert k in e
        assert e["tp"] * e["pp"] * e["cp"] * e["dp"] == 64
    assert d["time_s"] == d["top"][0]["time_s"]


def test_cli_text_fits_80_columns():
    r = run_cli("search", "llama3-8b", "--on", "h100", "--gpus", "64", "--global-batch", "256", "--seq", "4096",
                env={"COLUMNS": "80"})
    assert r.rc == 0, r.err
    assert max(len(line) for line in r.out.splitlines()) <= 80
    assert "tok/s/GPU" in r.out and "binds" in r.out


def test_serve_search_meets_the_slo():
    from ironlaw.models.search import serve
    r = serve.search("llama3-8b", "h100", 8, 1024, 256, slo="ttft=1s,itl=20ms", top=5)
    assert r.top and all(e["itl_s"] <= 0.020 and e["ttft_s"] <= 1.0 for e in r.top)
    tps = [e["tokens_per_s_per_gpu"] for e in r.top]
    assert tps == sorted(tps, reverse=True)
    assert r.top[0]["tokens_per_s_per_gpu"] == pytest.approx(r.top[0]["output_tokens_per_s"] / r.top[0]["tp"])


def test_serve_search_max_throughput_ranks_layouts_per_gpu():
    """Without --slo: serving_throughput.max_throughput over tp × pp × dtype, ranked per GPU of the layout."""
    from ironlaw.models.serving import throughput as serving_throughput
    from ironlaw.models.search import serve
    r = serve.search("llama3-8b", "h100", 4, 1024, 256, top=20)
    assert r.setup["scenario"] == "max-throughput" and r.top
    tps = [e["tokens_per_s_per_gpu"] for e in r.top]
    assert tps == sorted(tps, reverse=True)
    assert all(e["tp"] * e["pp"] <= 4 and 4 % (e["tp"] * e["pp"]) == 0 for e in r.top)
    e = r.top[0]
    est = serving_throughput.max_throughput("llama3-8b", "h100", 1024, 256, tp=e["tp"], pp=e["pp"], dtype=e["dtype"])
    assert e["tokens_per_s_per_gpu"] == pytest.approx(est.output_tokens_per_s / (e["tp"] * e["pp"]), rel=1e-12)


BAD = [
    (["--gpus", "8", "--tp", "3"], "does not divide --gpus 8"),
    (["--gpus", "8", "--tp", "2", "--pp", "2", "--dp", "4"], "= 16 devices, but --gpus is 8"),
    (["--gpus", "24", "--cp", "3", "--seq", "4096"], "--cp 3 does not divide --seq 4096"),
    (["--gpus", "8", "--ep", "2"], "no experts"),
    (["--gpus", "8", "--global-batch", "7", "--dp", "2"], "global batch"),
    (["--gpus", "8", "--engine", "spark"], "unknown engine"),
    (["--gpus", "8", "--phase", "infer"], "search --phase takes train | serve"),
]


@pytest.mark.parametrize("args,msg", BAD)
def test_cli_bad_input(args, msg):
    r = run_cli("search", "llama3-8b", "--on", "h100", "--seq", "4096", *args)
    assert r.rc == 2 and msg in r.err and len(r.err.strip().splitlines()) == 1, r.err


def test_cli_ep_not_dividing_experts():
    r = run_cli("search", "mixtral-8x7b", "--on", "h100", "--gpus", "24", "--global-batch", "48", "--seq", "4096",
                "--ep", "3")
    assert r.rc == 2 and "--ep 3 does not divide the 8 experts" in r.err, r.err


def test_cli_nothing_fits_names_the_shortfall():
    r = run_cli("search", "llama3-70b", "--on", "h100", "--gpus", "8", "--global-batch", "8", "--seq", "8192")
    assert r.rc == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert "no layout of llama3-70b fits" in r.err and "more than its" in r.err


def test_cli_serve_slo_out_of_reach():
    r = run_cli("search", "llama3-70b", "--phase", "serve", "--on", "h100", "--gpus", "8", "--slo", "itl=1us")
    assert r.rc == 2 and "no serving layout meets --slo" in r.err, r.err


def test_fast_path_reduces_the_experts_over_the_expert_data_parallel_group():
    """Qwen3-30B-A3B on 8 GPUs: at EP 8 = DP each expert lives on one rank, so ZeRO-2's gather after the step
    moves the dense parameters alone (``parallel.shards``); at EP 4 and 2 the experts' gradients and shards follow
    over groups of 2 and 4. The fast path agrees with train_step on both, FSDP's gathers included."""
    from ironlaw.models import parallel
    c, ctx = _space("qwen3-30b-a3b", 8, 8, 512, tp=1, pp=1, cp=1, micro_batch=1, recompute="none")
    res = _fast(c, ctx)
    graphs: dict = {}
    first = {}                                                  # one row of each (ep, zero)
    for i in np.nonzero(res["fits"])[0]:
        first.setdefault((int(c["ep"][i]), int(c["zero"][i])), int(i))
    cases = ((8, 2), (4, 2), (8, 3), (2, 3))
    assert set(first) >= set(cases)
    for i in (first[k] for k in cases):
        row = train.row_of(c, i)
        st = train.exact(ctx, row, graphs)
        assert res["time_s"][i] == pytest.approx(st.step_s, rel=REL), row
        for k in ("dp_grad_exposed_s", "zero_param_gather_s", "fsdp_exposed_s", "optimizer_s"):
            assert res[k][i] == pytest.approx(getattr(st.breakdown, k), rel=REL, abs=1e-15), (row, k)
        if row["ep"] == 8 and row["zero"] == 2:
            held = parallel.plan_shards(graphs[1], st.plan)
            dp = parallel.group_topology(ctx.hw, parallel.groups(st.plan, 8)["dp"])
            assert res["zero_param_gather_s"][i] == pytest.approx(
                sum(collective_time("allgather", held.dense * 2.0, dp)), rel=REL)
