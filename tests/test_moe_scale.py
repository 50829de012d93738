"""MoE at scale: redundant expert slots (--redundant-experts: EP need not divide the experts) and wide EP over
nodes; activation offload to host memory (--offload-activations)."""
from __future__ import annotations

import pytest

from conftest import run_cli
from ironlaw.core.errors import IronlawError
from ironlaw.machine import hardware
from ironlaw.models import parallel, precision, workloads

DSV3 = dict(gpus=288, nodes=4, ep=72, pp=4, global_batch=576, zero=1, recompute="full")


def _graph(spec="deepseek-v3", seq=4096, dtype="mxfp8"):
    g = workloads.resolve(workloads.Request(spec, phase="train", batch=1, seq=seq, dtype="bf16"))
    return precision.lower(g, dtype, True) if dtype else g


def _step(g, on="gb200", **opts):
    hw = hardware.get(on)
    return parallel.train_step(g, hw, parallel.make_plan(opts, g, hw))


def test_ep_need_not_divide_the_experts_with_redundant_slots():
    g, hw = _graph(), hardware.get("gb200")
    with pytest.raises(IronlawError, match="--ep 72 does not divide the 256 experts of deepseek-v3; "
                                           "--redundant-experts N adds slots"):
        parallel.make_plan(DSV3, g, hw)
    plan = parallel.make_plan({**DSV3, "redundant_experts": 32}, g, hw)
    assert plan.redundant_experts == 32
    with pytest.raises(IronlawError, match=r"--ep 72 does not divide the 256 experts \+ 16 redundant"):
        parallel.make_plan({**DSV3, "redundant_experts": 16}, g, hw)
    for bad, msg in ((-1, "a count of extra expert slots"), (300, "more than the 256 experts"),
                     (True, "a count of extra expert slots")):
        with pytest.raises(IronlawError, match=msg):
            parallel.make_plan({**DSV3, "redundant_experts": bad}, g, hw)
    with pytest.raises(IronlawError, match="add --ep > 1"):
        parallel.make_plan({"gpus": 8, "redundant_experts": 8}, g, hw)


def test_redundant_slots_hold_more_weights_and_share_the_rows():
    g = _graph()
    st = _step(g, **DSV3, redundant_experts=32)
    ref = _step(g, **{**DSV3, "ep": 64, "gpus": 256, "global_batch": 512})        # 4 experts per rank, no replicas
    # (256 + 32) / 72 = 4 slots per rank, as (256 + 0) / 64: the same expert weights per rank
    held, held0 = parallel.plan_shards(g, st.plan), parallel.plan_shards(g, ref.plan)
    assert held.expert == pytest.approx(held0.expert) and held.dense == pytest.approx(held0.dense)
    # each slot's kernel runs tokens · k · ep / (E + N) rows: 4096 · 8 · 72 / 288 = 8192, as 4096 · 8 · 64 / 256
    up = {s: next(op for op in x.per_microbatch.graph.ops if op.name == "mlp_up_proj" and op.module == "experts")
          for s, x in (("red", st), ("ref", ref))}
    assert up["red"].eta_scale == pytest.approx(up["ref"].eta_scale)
    assert any("256 + 32 slots, 4 per rank over EP 72" in n for n in st.notes)


def test_wide_ep_over_nodes_runs_its_all_to_all_between_nodes():
    g = _graph("qwen3-30b-a3b")
    wide = _step(g, on="b200", gpus=32, nodes=4, ep=32, global_batch=32, zero=1, recompute="full")
    one = _step(g, on="b200", gpus=32, nodes=4, ep=8, global_batch=32, zero=1, recompute="full")
    ops = {k: [op for op in s.per_microbatch.graph.ops if op.module == "ep"] for k, s in (("wide", wide), ("one", one))}
    assert ops["wide"] and all(op.group[:2] == (32, 4) for op in ops["wide"])
    assert ops["one"] and all(op.group[:2] == (8, 1) for op in ops["one"])
    # the same bytes per rank leave the node over InfiniBand instead of NVLink: slower
    t = {k: sum(r["time_s"] for r in s.per_microbatch.rows() if r["module"] == "ep") for k, s in (("wide", wide),
                                                                                                   ("one", one))}
    assert t["wide"] > 2 * t["one"]


def test_cli_redundant_experts():
    args = ("analyze", "deepseek-v3", "--phase", "train", "--on", "gb200", "--seq", "4096", "--dtype", "mxfp8",
            "--gpus", "288", "--nodes", "4", "--pp", "4", "--ep", "72", "--global-batch", "576", "--zero", "1",
            "--recompute", "full")
    ok = run_cli(*args, "--redundant-experts", "32", "--format", "json")
    assert ok.rc == 0 and ok.json()["plan"]["redundant_experts"] == 32
    bad = run_cli(*args)
    assert bad.rc == 2 and "--redundant-experts N adds slots" in bad.err and len(bad.err.strip().splitlines()) == 1


def _llama70(dtype="fp8"):
    g = workloads.resolve(workloads.Request("llama3-70b", phase="train", batch=2, seq=8192, dtype="bf16"))
    return precision.lower(g, dtype, True)


FSDP70 = dict(gpus=64, global_batch=256, micro_batch=2, fsdp=True)


def test_offloaded_layers_leave_device_memory_and_cost_their_unhidden_copies():
    g = _llama70()
    with pytest.raises(IronlawError, match="more than the 186 GiB of gb200"):
        _step(g, **FSDP70)
    st = _step(g, **FSDP70, offload_layers=40)
    hw = hardware.get("gb200")
    whole = parallel.plan_memory(g, parallel.make_plan(FSDP70, g, hw), 3, "none").activations_bytes
    assert st.memory.activations_bytes == pytest.approx(whole * (1 - 40 / 80))
    # by hand: each offloaded layer's activations go out and come back at the host tier's 194 GB/s, beside the
    # layer's forward and backward
    tier = next(t for t in hw.memory if t.role == "host")
    rows = st.per_microbatch.rows()
    fwd = sum(r["time_s"] for r in rows if r["kind"] != "collective" and not r["name"].endswith(".backward"))
    bwd = sum(r["time_s"] for r in rows if r["kind"] != "collective" and r["name"].endswith(".backward"))
    copy = whole / 80 / tier.bw_Bps
    expect = 40 * (max(copy - fwd / 80, 0) + max(copy - bwd / 80, 0))
    assert st.breakdown.offload_exposed_s == pytest.approx(st.plan.microbatches * expect)
    assert expect > 0 and any("offloaded to grace-lpddr5x" in n for n in st.notes)


def test_offload_refusals(tmp_path):
    g, hw = _llama70(), hardware.get("gb200")
    with pytest.raises(IronlawError, match="more than the 20 layers of a pipeline stage"):
        parallel.make_plan({**FSDP70, "pp": 4, "offload_layers": 21, "fsdp": False}, g, hw)
    with pytest.raises(IronlawError, match="a count of layers"):
        parallel.make_plan({**FSDP70, "offload_layers": -2}, g, hw)
    text = (hardware.CATALOG_DIR / "gb300.toml").read_text()             # fits in its 288 GiB, no host tier
    i = text.index('[[memory]]\nname = "grace-lpddr5x"')
    j = text.index("[[memory]]", i + 1)
    (tmp_path / "nohost.toml").write_text((text[:i] + text[j:]).replace('name = "gb300"', 'name = "nohost"', 1))
    with pytest.raises(IronlawError, match="nohost names none"):
        _step(g, on=str(tmp_path / "nohost.toml"), **FSDP70, offload_layers=20)
    r = run_cli("analyze", "llama3-70b", "--phase", "train", "--on", "gb200", "--dtype", "fp8", "--seq", "8192",
                "--gpus", "64", "--global-batch", "256", "--micro-batch", "2", "--fsdp", "--offload-activations", "81")
    assert r.rc == 2 and "--offload-activations 81 is more than the 80 layers" in r.err
