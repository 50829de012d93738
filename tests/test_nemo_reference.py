"""Training steps against NVIDIA's published DGX-H100 pre-training throughput (NeMo Megatron-Bridge 25.11,
tests/data/nemo_megatron_bridge_25.11_dgx_h100.csv, Apache-2.0): every row with its published layout, nothing
fitted per row (tests/nemo_ref.py says what the recipes set that the table does not print, and which MoE
layouts it prints that the recipes do not run). Goal: median |error| of tokens/s per GPU ≤ 8%, max ≤ 20%
(benchmarks/nemo_h100.py prints the table); the MoE rows miss it (docs/accuracy.md, known misses)."""
from __future__ import annotations

import numpy as np
import pytest

from ironlaw.machine import hardware
from ironlaw.core.errors import IronlawError
from nemo_ref import DENSE, RECIPE, predict, recipe, table


def test_the_table_is_consistent():
    """Model TFLOP/s over tokens/s is the model's FLOPs per token (51.5 GFLOP for Llama 3 8B at seq 8192:
    6·N plus causal attention, NeMo's formula); gradient accumulation is GBS / (MBS · DP) with DP = GPUs /
    (TP·PP·CP) — except gpt-oss-120b, whose row prints GA 2 where its layout (PP 4, DP 16, MBS 4, GBS 512)
    gives 8; the prediction follows the layout."""
    rows = table()
    assert len(rows) == 5 and set(RECIPE) == {r["model"] for r in rows} - set(DENSE)
    for r in rows:
        dp = r["gpus"] // (r["tp"] * r["pp"] * r["cp"])
        assert dp * r["tp"] * r["pp"] * r["cp"] == r["gpus"] and dp % r["ep"] == 0
        ga = r["global_batch"] // (r["micro_batch"] * dp)
        assert (ga == r["ga"]) == (r["model"] != "gpt-oss-120b"), r["model"]
        rr = recipe(r)                          # the recipe's layout divides the batch too
        assert rr["global_batch"] % (rr["micro_batch"] * dp) == 0 and rr["micro_batch"] <= r["micro_batch"]
    per_token = {r["model"]: r["model_tflops_per_gpu"] * 1e12 / r["tokens_per_s_per_gpu"] for r in rows}
    assert per_token["llama3-8b"] == pytest.approx(51.5e9, rel=0.002)


@pytest.fixture(scope="module")
def predicted():
    hw = hardware.get("h100")
    return {r["model"]: (r, predict(r, hw)) for r in table()}


def test_model_flops_per_token_match_nvidias(predicted):
    """ironlaw's model FLOPs (parallel.MODEL_FLOPS) and NVIDIA's (model TFLOP/s ÷ tokens/s) agree."""
    for name, (r, st) in predicted.items():
        if name not in DENSE:                   # NVIDIA's formula counts gpt-oss's GLU up-projection as one GEMM
            continue
        ours = st.flops.model_per_step / st.flops.tokens_per_step
        theirs = r["model_tflops_per_gpu"] * 1e12 / r["tokens_per_s_per_gpu"]
        assert ours == pytest.approx(theirs, rel=0.02), name


def test_the_8b_fp8_recipe_recomputes_5_layers(predicted):
    """Llama 3 8B FP8's H100 recipe sets recompute_num_layers 5 (``nemo_ref.RECOMPUTE_LAYERS``): its step
    recomputes 5 of the 32 layers' forward (block), no other row recomputes."""
    for name, (r, st) in predicted.items():
        p = st.plan
        want = ("full", 5) if name == "llama3-8b" else ("none", None)
        assert (p.recompute, p.recompute_layers, p.recompute_method) == (*want, "block"), name


def test_throughput_against_nemo_h100(predicted):
    """The dense rows (Llama 3 8B with FSDP, 70B with TP 4 × PP 8 × VP 5, Llama 3.1 405B with CP 2 on 1024
    GPUs). The MoE rows are printed by benchmarks/nemo_h100.py once their models are built in."""
    err = {name: st.tokens_per_s_per_gpu / r["tokens_per_s_per_gpu"] - 1 for name, (r, st) in predicted.items()
           if name in DENSE}
    assert len(err) == 3
    assert np.median(np.abs(list(err.values()))) <= 0.08, err
    assert all(abs(e) <= 0.20 for e in err.values()), err
    for name, (r, st) in predicted.items():
        assert st.memory.total_bytes <= 80 * 2**30, name        # every recipe's layout fits


def test_moe_rows_are_bounded_by_the_device(predicted):
    """The MoE rows' published throughput is below ironlaw's device-side prediction, not above it: the 25.11
    eager MoE layers (alltoall dispatcher, dropless, no CUDA graphs) take 16-19 ms per layer and micro-batch of
    4,096 tokens whatever their FLOPs (gpt-oss 2x Qwen3's), the host-bound regime Megatron-LM's MoE guide names
    (docs/accuracy.md, known misses). The host term (ironlaw.models.host) counts the MoE layers' device→host
    syncs and kernel launches at the measured launch costs; it does not close the gap."""
    for name in RECIPE:
        r, st = predicted[name]
        assert st.tokens_per_s_per_gpu > r["tokens_per_s_per_gpu"], name
        assert any("device→host syncs" in n for n in st.notes), name       # the host term says what it counts
    assert not any("device→host syncs" in n for name in DENSE for n in predicted[name][1].notes)


def test_host_parts_add_up_to_the_steps_host_issue(predicted):
    """``nemo_ref.host_parts`` (``--host-counts``) is the step's own host term, part by part: on Qwen3-30B-A3B,
    every layer an MoE layer, the parts' seconds are the step's host issue per layer and micro-batch; at the
    measured x86 cost per launch the host would have to take 5× longer per launch to make the published layer."""
    from nemo_ref import host_parts, layer_s
    r, st = predicted["qwen3-30b-a3b"]
    hw = hardware.get("h100")
    parts = host_parts(st, hw)
    per = st.plan.microbatches * st.per_microbatch.graph.meta["layers"] / st.plan.pp
    assert sum(p[3] for p in parts) == pytest.approx(st.breakdown.host_issue_s / per, rel=1e-9)
    launches = sum(p[2] for p in parts)
    assert dict((p[0], p[2]) for p in parts)["padding"] == 6            # FP8 experts, alltoall dispatcher
    implied, _ = layer_s(r, st)
    assert implied / launches > 5 * hw.extra["host"].op_s               # the negative result in docs/accuracy.md


def test_no_sync_structure_explains_the_alltoall_rows(predicted):
    """Item 2 of the host term, bounded: were the host never ahead of the device (a sync after every kernel,
    forward and backward), a layer would take ironlaw's device time plus the host's whole issue time at the
    catalog's [host] costs. Both DGX-H100 MoE rows (alltoall dispatcher) take longer than that, so no
    placement of syncs explains them at the measured per-launch costs (docs/accuracy.md, "The sync window")."""
    from nemo_ref import host_parts, layer_s, serial_bound_s
    hw = hardware.get("h100")
    for name in RECIPE:
        r, st = predicted[name]
        implied, ours = layer_s(r, st)
        bound = serial_bound_s(st, hw)
        assert bound == pytest.approx(ours + sum(p[3] for p in host_parts(st, hw)), rel=1e-9)
        assert ours < bound < implied, name


def test_rows_allow_grace_a_smaller_launch_cost_ratio_than_the_catalog():
    """If the host explains the x86 alltoall Qwen3-30B-A3B row (DGX-B200, MBS 1), each counted launch costs
    44 us there (the router and the dispatcher's preprocessing captured in CUDA graphs, as the configs set them);
    the Grace rows of the same model (flex, MBS 4) cannot be host-bound beyond their published layer, which bounds
    Grace's cost per launch: the ratio the rows allow is about 1.3, the catalog's
    (TransformerEngine issue #2053, one Linear's host time) 2.75. The contradiction docs/accuracy.md reports."""
    from nemo_ref import BLACKWELL, grace_over_x86, launch_cost_ratio
    rows = [r for r in table(BLACKWELL) if r["model"] == "qwen3-30b-a3b"]
    assert sorted(r["system"] for r in rows) == ["b200", "gb200", "gb300"]
    runs = [(r["system"], r, predict(r, hardware.get(r["system"])), hardware.get(r["system"])) for r in rows]
    need, bound, ratio = launch_cost_ratio(runs)
    assert need == pytest.approx(43.9e-6, rel=0.05) and bound == pytest.approx(58.1e-6, rel=0.05)
    assert ratio < 1.5 < 2.5 < grace_over_x86()


def test_the_gap_per_local_expert_is_additive_on_the_x86_alltoall_rows():
    """Read per kernel the host issues for each local expert (MXFP8: 6 GEMMs and 4 quantizes), the DGX-B200
    alltoall rows' miss is one cost, 29-36 us, on 16 and 32 local experts alike and on device layers of 3.9 to
    16.7 ms, where a host that overlapped the device would leave a gap shrinking as the device's layer grows; the
    flex rows of Qwen3-30B-A3B on GB200/GB300 leave at most 15 us. The host term's own cost of such a kernel,
    17.7 us on x86 (GroupedLinear's cuBLASLt calls at TransformerEngine PR #3134's 24.75 us, the quantizes at one
    eager op), is half of it even were none of it overlapped (docs/accuracy.md, "The gap per local expert")."""
    from nemo_ref import BLACKWELL, expert_gap
    picks = {("b200", "qwen3-30b-a3b"), ("b200", "qwen3-235b-a22b"), ("b200", "deepseek-v3"),
             ("gb200", "qwen3-30b-a3b"), ("gb300", "qwen3-30b-a3b")}
    rows = [r for r in table(BLACKWELL) if (r["system"], r["model"]) in picks]
    assert len(rows) == len(picks)
    for r in rows:
        hw = hardware.get(r["system"])
        local, k, gap, per, cost = expert_gap(r, predict(r, hw), hw)
        assert k == 10 and local in (16, 32) and gap > 0, r["model"]
        if r["system"] == "b200":
            assert 25e-6 < per < 40e-6 and per > 1.5 * cost, r["model"]
            assert cost == pytest.approx((6 * 24.75 + 4 * 7.22) / 10 * 1e-6, rel=1e-3)
        else:
            assert per < 16e-6, r["system"]


def test_tuned_qwen3_run_on_16_h100():
    """A later Megatron-Bridge recipe for Qwen3-30B-A3B on 16 H100 (tests/data/megatron_bridge_qwen3_30b_h100_tuned.csv:
    EP 16 over two nodes, BF16, the all-to-alls overlapped, the router in CUDA graphs) measured 20.15 s per step:
    with the host out of the way the MoE step is the device's, and ironlaw's lands within 10% (HybridEP, its
    dispatcher, moves each token across nodes once; ironlaw's all-to-all is NCCL's). Model FLOPs agree too."""
    from nemo_ref import predict_tuned, tuned
    r, st = tuned(), predict_tuned(hardware.get("h100"))
    assert st.step_s == pytest.approx(r["step_s"], rel=0.10)
    nvidia = r["model_tflops_per_gpu"] * 1e12 * r["step_s"] * r["gpus"] / st.flops.tokens_per_step
    assert st.flops.model_per_step / st.flops.tokens_per_step == pytest.approx(nvidia, rel=0.02)


def test_printed_gpt_oss_layout_does_not_fit():
    """gpt-oss-120b as the table prints it (MBS 4, PP 4: 4 micro-batches of 16,384 tokens in flight on the
    first stage, 9 layers each) needs ~99 GB of activations alone: refused in one line, by how much."""
    r = next(r for r in table() if r["model"] == "gpt-oss-120b")
    with pytest.raises(IronlawError, match=r"needs .* GiB per device, .* more than the 79.6 GiB of h100 .*activations"):
        predict(r, hardware.get("h100"), printed=True)


def test_held_out_blackwell_dense_rows():
    """The DGX-GB300, GB200 and B200 rows of the same page (nemo_ref.BLACKWELL), held out: their layouts as
    printed, each system's catalog entry (datasheets; GEMM and attention η carried from H100's by the measured
    kernel ceilings, benchmarks/carry_eta.py), nothing fitted on them. Every dense row ironlaw predicts stays
    within 14%, the median within 6% (benchmarks/nemo_blackwell.py prints the table). The FSDP
    Llama 3 70B rows run as their recipes do, offloading 40 (GB200) and 20 (GB300) layers' activations to Grace
    memory (nemo_ref.OFFLOAD), both predicted (GB300's Grace share, 236 GB, is smaller than its 288 GiB of HBM:
    the catalog's tier order allows a host tier below the device)."""
    from nemo_ref import BLACKWELL
    err = {}
    for r in table(BLACKWELL):
        if r["model"] not in DENSE:
            continue
        st = predict(r, hardware.get(r["system"]))
        err[(r["system"], r["model"], r["precision"])] = st.tokens_per_s_per_gpu / r["tokens_per_s_per_gpu"] - 1
    assert len(err) == 12
    for system in ("gb200", "gb300"):
        assert abs(err[(system, "llama3-70b", "fp8")]) <= 0.25
    assert np.median(np.abs(list(err.values()))) <= 0.06, err
    assert all(abs(e) <= 0.14 for e in err.values()), err


def test_every_held_out_row_is_predicted():
    """All 26 DGX-GB300, GB200 and B200 rows are predicted: the GB300 Llama 3 70B row offloads to its Grace
    share, the DeepSeek-V3 BF16 GB200 row fits once the routed tokens are saved once (not twice), and the
    DGX-B200 gpt-oss-120b row runs its recipe's EP 64 (nemo_ref.HELD_RECIPE), which the print gives as 8."""
    from nemo_ref import BLACKWELL, command, options
    rows = table(BLACKWELL)
    steps = [predict(r, hardware.get(r["system"])) for r in rows]
    assert len(steps) == 26 and all(st.tokens_per_s_per_gpu > 0 for st in steps)
    oss = next(r for r in rows if (r["system"], r["model"]) == ("b200", "gpt-oss-120b"))
    assert oss["ep"] == 8 and options(oss)["ep"] == 64 and "--ep 64" in command(oss)
    assert options(oss, printed=True)["ep"] == 8


def test_token_drop_runs_are_the_same_models_and_layouts():
    """tests/data/nemo_megatron_bridge_25.09_tokendrop.csv: each 25.09 token-drop run nemo_ref.tokendrop pairs
    with a 25.11 row has the row's model FLOPs per token (NVIDIA's TFLOP/s ÷ tokens/s, within 3%: same model,
    same sequence); the B200 and H100 Qwen3-30B-A3B pairs ran about twice as fast token-drop (no device→host
    sync per MoE layer) as dropless, the GB200 pair (HybridEP, MBS 4) as fast."""
    from nemo_ref import BLACKWELL, tokendrop
    pairs = {}
    for r in table(BLACKWELL) + table():
        t = tokendrop(r)
        if t is None:
            continue
        ours = r["model_tflops_per_gpu"] / r["tokens_per_s_per_gpu"]
        theirs = float(t["model_tflops_per_gpu"]) / t["tokens_per_s_per_gpu"]
        assert theirs == pytest.approx(ours, rel=0.03), (r.get("system"), r["model"])
        pairs[(r.get("system", "h100"), r["model"])] = t["tokens_per_s_per_gpu"] / r["tokens_per_s_per_gpu"]
    assert len(pairs) == 5
    assert pairs[("b200", "qwen3-30b-a3b")] > 1.8 and pairs[("h100", "qwen3-30b-a3b")] > 1.8
    assert pairs[("gb200", "qwen3-30b-a3b")] == pytest.approx(1.0, abs=0.02)


def test_qwen3_30b_alltoall_rows_run_their_recipes():
    """The Qwen3-30B-A3B rows that miss most (DGX-B200 MXFP8, DGX-H100 FP8) are predicted with what their 25.11
    recipes set (Megatron-Bridge 00b7660b: qwen3_workload_base_configs.py, qwen3_llm_pretrain.py
    set_qwen3_common_configs, utils/overrides.py; the Qwen3MoEModelProvider the bridge builds: alltoall dispatcher,
    grouped GEMM, permute fusion; docs/accuracy.md, "Recipe check"): B200 at its printed layout (the config's
    EP 8, MBS 1, GBS 512, no VP), the alltoall dispatcher, no expert all-to-all overlap, no recomputation;
    DGX-H100 at its recipe's MBS 1, PP 2 x VP 12 with the all-to-all overlap."""
    from nemo_ref import BLACKWELL, config_matches, held_config, options
    b200 = next(r for r in table(BLACKWELL) if (r["system"], r["model"]) == ("b200", "qwen3-30b-a3b"))
    cfg, opts = held_config(b200), options(b200)
    assert config_matches(b200) and cfg["dispatcher"] == "alltoall" and cfg["recompute"] == ()
    assert "moe_dispatcher" not in opts and not opts["moe_a2a_overlap"]
    assert (opts["ep"], opts["micro_batch"], opts["interleave"], opts["global_batch"]) == (8, 1, 1, 512)
    h100 = next(r for r in table() if r["model"] == "qwen3-30b-a3b")
    o = options(h100)
    assert (o["micro_batch"], o["pp"], o["interleave"], o["ep"]) == (1, 2, 12, 8) and o["moe_a2a_overlap"]
    st = predict(b200, hardware.get("b200"))
    assert st.plan.recompute == "none" and st.plan.ep == 8 and st.plan.micro_batch == 1


def test_rows_run_the_cuda_graphs_and_attention_their_recipes_set():
    """What each row's Megatron-Bridge config sets that the table does not print (nemo_ref.DENSE_GRAPH,
    HELD_CONFIG, FP8_ATTENTION): every DGX-GB300, GB200 and B200 Llama 3 8B config captures the whole step
    (cuda_graph_impl "local", scope "full_iteration"), so those rows leave no host term; the held-out MoE rows run
    their config's Transformer Engine scopes (attn, moe_router, moe_preprocess); no other dense row, no DGX-H100
    row and no 26.02 NVFP4 row (cuda_graph_impl "none") captures any; no row's recipe turns FP8 attention on. The
    tuned 16 x H100 Qwen3 recipe captures the router and the dispatcher's preprocessing (nemo_ref.TUNED_GRAPH)."""
    from nemo_ref import BLACKWELL, DATA, TUNED_GRAPH, command, options, predict_tuned
    graphs = {(r["system"], r["model"], r["precision"]): options(r)["cuda_graph"] for r in table(BLACKWELL)}
    assert {k for k, v in graphs.items() if v == ("full_iteration",)} == {
        (s, "llama3-8b", p) for s in ("gb300", "gb200", "b200") for p in ("fp8", "mxfp8")}
    assert graphs[("gb300", "deepseek-v3", "bf16")] == ("attn", "moe_router", "moe_preprocess")
    assert graphs[("gb200", "qwen3-30b-a3b", "mxfp8")] == ("moe_router", "moe_preprocess")
    assert graphs[("b200", "qwen3-235b-a22b", "mxfp8")] == () and graphs[("gb200", "llama3-70b", "fp8")] == ()
    eager = table() + table(DATA / "megatron_bridge_26.02_nvfp4.csv")
    assert all(options(r, printed=True)["cuda_graph"] == () for r in eager)
    assert not any(options(r)["fp8_attention"] for r in table(BLACKWELL) + eager)
    b200 = next(r for r in table(BLACKWELL) if (r["system"], r["model"], r["precision"]) == ("b200", "llama3-8b", "fp8"))
    assert "--cuda-graph full_iteration" in command(b200)
    st = predict(b200, hardware.get("b200"))
    assert st.plan.cuda_graph == ("full_iteration",) and st.breakdown.host_issue_s == 0
    assert predict_tuned(hardware.get("h100")).plan.cuda_graph == TUNED_GRAPH == ("moe_router", "moe_preprocess")
