"""NVIDIA's published DGX-H100 pre-training throughput (NeMo Megatron-Bridge 25.11 performance summary;
tests/data/nemo_megatron_bridge_25.11_dgx_h100.csv) and ironlaw's prediction of one of its rows, shared by
tests/test_nemo_reference.py (what must hold) and benchmarks/nemo_h100.py (the table).

Each row is predicted with its published layout (GPUs, precision, global and micro batch, sequence, FSDP, TP,
PP, CP, VP, EP) on the h100 catalog entry (DGX H100: 8 GPUs per node on NVLink 4, 8 × 400 Gb/s InfiniBand),
nothing fitted per row. What the table does not print comes from Megatron-Bridge's performance recipes
(scripts/performance, 25.11) and Megatron-LM's defaults, the same for every row:
    sequence parallel           whenever TP > 1 (WorkloadBaseConfig.sequence_parallel)
    TP communication overlap    whenever TP > 1 (the recipes' userbuffers configs for H100)
    stage sends overlapped      with interleaving (Megatron-LM's overlap_p2p_comm for the interleaved schedule)
    distributed optimizer       ZeRO-1 when the row is not FSDP (Megatron-Bridge's use_distributed_optimizer)
    bf16 gradients              every model's set_*_common_configs sets grad_reduce_in_fp32 = False
    expert all-to-all overlap   Qwen3-30B-A3B's H100 recipe sets moe_a2a_overlap (overlap_moe_expert_parallel_comm
                                with delay_wgrad_compute: the all-to-alls beside another micro-batch's compute)
    no activation recomputation (gpt-oss's recompute_modules ["layernorm", "moe_act"] are inert: its recipe
                                leaves recompute_granularity unset, and Megatron-Core reads the modules only
                                under "selective", transformer_config.py / experts.py at 0d8e0714)
The MoE rows print layouts their own recipes do not run (``RECIPE``): the 25.11 recipes (Megatron-Bridge
v0.2.0, the 25.11 release, scripts/performance/configs/{gpt_oss,qwen3}/workload_base_configs.py) set
micro-batch 1 for both and VP 12 for Qwen3-30B-A3B, where the table prints MBS 4 / GA 2 (gpt-oss: GA 2 is
not GBS / (MBS · DP) = 8 for its own layout; both columns are the DGX-B200 row's) and MBS 2 / VP 24 (Qwen3:
the 25.09 table's H100 layout). The 26.02 summary republishes both H100 rows with the recipes' layouts
(gpt-oss MBS 1, PP 4, EP 8: 5,993 tokens/s/GPU; Qwen3 MBS 1, PP 2, VP 12, EP 8: 5,113) at the 25.11
throughput within 7%. Each row is predicted with its recipe's layout; ``printed`` gives the table's.

The same page's DGX-GB300, DGX-GB200 and DGX-B200 rows (``BLACKWELL``) are held out: each is predicted with
the layout the table prints and the same rules, on the catalog entry of its system (datasheets and the kernel
tables its [calibration] was fitted on), except where the row's own recipe contradicts the print
(``HELD_RECIPE``: the DGX-B200 gpt-oss-120b row's EP).
"""
from __future__ import annotations

import csv
from pathlib import Path

from ironlaw.models import parallel, workloads
from ironlaw.models.analysis import training_graph

DATA = Path(__file__).parent / "data"
TABLE = DATA / "nemo_megatron_bridge_25.11_dgx_h100.csv"
TUNED = DATA / "megatron_bridge_qwen3_30b_h100_tuned.csv"
BLACKWELL = DATA / "nemo_megatron_bridge_25.11_blackwell.csv"
TOKENDROP = DATA / "nemo_megatron_bridge_25.09_tokendrop.csv"     # the same layouts run token-drop in 25.09
LAYOUT = ("system", "model", "gpus", "micro_batch", "tp", "pp", "vp", "ep")
NVL_JOB_DOMAIN = 64      # GPUs of a job per NVL72 rack, assumed (the page does not say how its jobs are placed):
                         # held-out rows of 256 GPUs on GB200/GB300 run as 4 NVLink domains of 64
SPECS = {"llama3-8b": "llama3-8b", "llama3-70b": "llama3-70b",
         "llama3.1-405b": "hf:" + str(DATA / "llama3.1-405b-config.json"),
         "gpt-oss-120b": "gpt-oss-120b", "qwen3-30b-a3b": "qwen3-30b-a3b", "deepseek-v3": "deepseek-v3",
         "qwen3-235b-a22b": "qwen3-235b-a22b"}
DENSE = ("llama3-8b", "llama3-70b", "llama3.1-405b")
# layers whose activations the held-out rows' recipes offload to host memory (Megatron-Bridge v0.2.0
# scripts/performance/configs/llama3/workload_base_configs.py, LLAMA3_70B_GB300_FP8_CS and _GB200_FP8_CS: MBS 2,
# Megatron-FSDP, cpu_offloading_num_layers 20 and 40): the rows' printed layout is the recipe's
OFFLOAD = {("gb300", "llama3-70b", "fp8"): 20, ("gb200", "llama3-70b", "fp8"): 40}
# a held-out row whose printed layout its own recipe contradicts: the DGX-B200 gpt-oss-120b row prints EP 8, but
# the recipe it ran (Megatron-Bridge scripts/performance/configs/gpt_oss/gpt_oss_workload_base_configs.py at the
# table's commit 00b7660b, GPT_OSS_120B_PRETRAIN_CONFIG_B200_BF16_BASE_CONFIG: the only 64-GPU gpt-oss recipe with
# the row's MBS 4, GBS 512 and so GA 2) sets expert_model_parallel_size=64, as the GB200 and GB300 rows print;
# the printed 8 is the base config's (and the H100 row's). EP 64 on DGX-B200 spans 8 nodes: the expert
# all-to-all leaves the NVLink domain for InfiniBand (ironlaw analyze ... --ep 8 is the printed layout)
HELD_RECIPE = {("b200", "gpt-oss-120b", "bf16"): {"ep": 64}}
RECIPE = {"gpt-oss-120b": {"micro_batch": 1}, "qwen3-30b-a3b": {"micro_batch": 1, "vp": 12, "moe_a2a_overlap": True}}
# The held-out MoE rows' performance configs at the table's commit 00b7660b (Megatron-Bridge
# scripts/performance/configs/{qwen/qwen3,deepseek/deepseek,gpt_oss/gpt_oss}_workload_base_configs.py, the
# *_PRETRAIN_CONFIG_<SYSTEM>_<PRECISION>_BASE_CONFIG of each row; WorkloadBaseConfig's defaults where a config is
# silent: TP, PP, EP, MBS 1, no VP): their layout, and what the print does not show — the token dispatcher
# ("flex": moe_flex_dispatcher_backend="hybridep", Megatron-Core's flex dispatcher with HybridEP's fused
# permute + all-to-all kernels, which Megatron-Bridge's apply_flex_dispatcher_backend allows on GB200/GB300 only;
# else the model providers' "alltoall", Megatron-Core's MoEAlltoAllTokenDispatcher over NCCL), the CUDA-graph
# scopes (cuda_graph_impl "transformer_engine"), the expert all-to-all overlap (moe_a2a_overlap) and the
# recomputed modules. The dispatcher is the same in every config of a system and model (all precisions, every
# GB200/GB300 Qwen3 and DeepSeek-V3 config sets HybridEP, no gpt-oss config does), so each held-out row runs
# its config's (``options``). So are the CUDA-graph scopes (``recipe_graph``, ``--cuda-graph``): each system and
# model's configs set the same ones in every precision (DeepSeek-V3 one config for all; gpt-oss one BF16 config), but
# GB200 Qwen3-30B-A3B, whose FP8-MX config (the row's precision, and its layout is the printed one) leaves out "attn".
# The other settings only where the config's layout is the printed one (``config_matches``: else the row ran another
# configuration), and even there they are not applied (docs/accuracy.md, Blackwell: what they would change).
HELD_CONFIG = {
    ("gb300", "qwen3-30b-a3b"): dict(gpus=8, ep=8, global_batch=512, micro_batch=8, dispatcher="flex",
                                     cuda_graph=("moe_router", "moe_preprocess")),
    ("gb200", "qwen3-30b-a3b"): dict(gpus=8, ep=8, global_batch=512, micro_batch=4, dispatcher="flex",
                                     cuda_graph=("moe_router", "moe_preprocess")),
    ("b200", "qwen3-30b-a3b"): dict(gpus=8, ep=8, global_batch=512, cuda_graph=("moe_router", "moe_preprocess")),
    ("gb300", "qwen3-235b-a22b"): dict(gpus=64, tp=2, ep=64, global_batch=1024, micro_batch=4,
                                       dispatcher="flex", cuda_graph=("moe_router", "moe_preprocess")),
    ("gb200", "qwen3-235b-a22b"): dict(gpus=64, pp=8, ep=8, global_batch=1024, dispatcher="flex",
                                       cuda_graph=("attn", "moe_router", "moe_preprocess")),
    ("b200", "qwen3-235b-a22b"): dict(gpus=64, pp=8, vp=4, ep=8, global_batch=1024, moe_a2a_overlap=True),
    ("gb300", "deepseek-v3"): dict(gpus=256, pp=4, vp=4, ep=64, global_batch=2048, dispatcher="flex",
                                   cuda_graph=("attn", "moe_router", "moe_preprocess"), recompute=("moe_act",)),
    ("gb200", "deepseek-v3"): dict(gpus=256, pp=4, vp=4, ep=64, global_batch=2048, dispatcher="flex",
                                   cuda_graph=("moe_router", "moe_preprocess"), recompute=("mla_up_proj",)),
    ("b200", "deepseek-v3"): dict(gpus=256, pp=16, ep=8, global_batch=2048, recompute=("mla_up_proj",)),
    ("gb300", "gpt-oss-120b"): dict(gpus=64, ep=64, global_batch=512, micro_batch=4,
                                    cuda_graph=("attn", "moe_router", "moe_preprocess")),
    ("gb200", "gpt-oss-120b"): dict(gpus=64, ep=64, global_batch=512, micro_batch=4,
                                    recompute=("layernorm", "moe_act")),
    ("b200", "gpt-oss-120b"): dict(gpus=64, ep=64, global_batch=512, micro_batch=4,
                                   recompute=("layernorm", "moe_act")),
}
CONFIG_LAYOUT = dict(gpus=1, tp=1, pp=1, vp=1, ep=1, global_batch=1, micro_batch=1)       # WorkloadBaseConfig
# The CUDA graphs of the dense held-out rows' recipes, by (system, model): Megatron-Bridge
# scripts/performance/configs/llama/llama3_workload_base_configs.py at the table's commit 00b7660b sets
# cuda_graph_impl "local", cuda_graph_scope "full_iteration" (Megatron-Core's FullCudaGraphWrapper, the forward and
# backward of every micro-batch one graph: ``--cuda-graph full_iteration``) in every Llama 3 8B pre-training config
# of DGX-GB300, GB200 and B200 (BF16, FP8-CS, and FP8-MX, which is the FP8-CS config), at the lines given. GB300's
# FP8-CS config runs MBS 4 where the print says 2; the scope is the same in every config of the system and model,
# so it is the row's (as the dispatcher, ``HELD_CONFIG``). No other scored row's config sets a graph: not the
# Llama 3 70B and Llama 3.1 405B ones (llama3_/llama31_workload_base_configs.py: the FP8-CS, FP8-MX and B200 configs
# set none, WorkloadBaseConfig's None keeps the recipe's "none"), not a DGX-H100 one (the 8B, 70B, 405B, gpt-oss and
# the Qwen3-30B-A3B FP8-CS configs set none; the table's Qwen3 row is FP8), not the 26.02 NVFP4 rows and their
# MXFP8/FP8 siblings (v0.3.0, 21b02e0c: llama3_workload_base_configs.py:225-230, 256-264 LLAMA3_70B_*_NVFP4_V2 set
# cuda_graph_impl "none", the FP8_MX_V2 ones none; llama31_workload_base_configs.py:108-117 and 245-250 set "none"
# for 405B NVFP4, the FP8_CS_V2 and FP8_MX_V2 configs none).
DENSE_GRAPH = {("gb300", "llama3-8b"): ("full_iteration", "llama3_workload_base_configs.py:150-155, 158-163, 165"),
               ("gb200", "llama3-8b"): ("full_iteration", "llama3_workload_base_configs.py:174-179, 182-187, 189"),
               ("b200", "llama3-8b"): ("full_iteration", "llama3_workload_base_configs.py:199-204, 207-212, 215")}
# Partial activation recomputation (``--recompute full --recompute-layers N``, Megatron-Core's block method): the
# layers per pipeline stage the row's recipe recomputes, by (system, model, precision). Megatron-Bridge
# scripts/performance/configs/llama/llama3_workload_base_configs.py:229-233 at the table's commit 00b7660b (and
# configs/llama3/workload_base_configs.py:229-233 at v0.2.0): LLAMA3_8B_PRETRAIN_CONFIG_H100_FP8_CS_BASE_CONFIG sets
# recompute_num_layers=5, which utils/overrides.py _set_recompute_overrides turns into recompute_granularity "full",
# recompute_method "block". No other scored row's config sets it at 00b7660b (the 70B H100 LoRA config is not a
# pre-training row), nor the 26.02 rows' V2 configs at v0.3.0 (llama31_workload_base_configs.py:283-288:
# LLAMA31_405B_PRETRAIN_CONFIG_GB200_NVFP4_V2 sets recompute_num_layers=None over its V1's 1).
RECOMPUTE_LAYERS = {("h100", "llama3-8b", "fp8"): 5}
# FP8 attention: no scored row's recipe sets it. Megatron-Bridge's MixedPrecisionConfig defaults
# fp8_dot_product_attention and fp8_multi_head_attention to False (src/megatron/bridge/training/mixed_precision.py:53-54
# at 00b7660b and at v0.3.0), no precision preset, performance config or override (scripts/performance at both
# commits: no fp8_dot_product_attention, fp8_multi_head_attention, NVTE_FP8_DPA or fp8_dpa) turns either on, so
# every row runs its attention in bf16 (``options``: fp8_attention False).
FP8_ATTENTION = False
# the MXFP8 recipes that turn the distributed optimizer's parameter all-gather overlap off ("keeping this enabled
# causes NaN grad norm": Megatron-Bridge v0.2.0 scripts/performance/configs, llama3_70b_{gb300,gb200,b200},
# llama31_405b_{gb300,gb200,b200}, deepseek_v3_{gb300,gb200}, qwen3_235b_a22b_b200 _config): the gather runs
# after the step (--param-gather-exposed); every other recipe keeps Megatron-Bridge's overlap_param_gather
PARAM_GATHER_EXPOSED = {("gb300", "llama3-70b"), ("gb200", "llama3-70b"), ("b200", "llama3-70b"),
                        ("gb300", "llama3.1-405b"), ("gb200", "llama3.1-405b"), ("b200", "llama3.1-405b"),
                        ("gb300", "deepseek-v3"), ("gb200", "deepseek-v3"), ("b200", "qwen3-235b-a22b")}
INT = ("gpus", "global_batch", "micro_batch", "seq", "fsdp", "tp", "pp", "cp", "ep", "ga")


def table(path: Path = TABLE) -> list[dict]:
    """The rows of a published table (``TABLE``, the DGX-H100 rows; ``BLACKWELL``, the held-out ones)."""
    with path.open() as fh:
        rows = list(csv.DictReader(l for l in fh if not l.startswith("#")))
    for r in rows:
        for k in INT:
            r[k] = int(r[k])
        r["vp"] = int(r["vp"]) if r["vp"] else 1
        r["tokens_per_s_per_gpu"] = float(r["tokens_per_s_per_gpu"])
        r["model_tflops_per_gpu"] = float(r["model_tflops_per_gpu"])
    return rows


def tokendrop(row: dict) -> dict | None:
    """The 25.09 token-drop run (``TOKENDROP``) of the row's printed layout, of the row's precision, else FP8
    with per-tensor scaling; None where 25.09 ran no such layout (an H100 row, without 'system', is 'h100')."""
    with TOKENDROP.open() as fh:
        runs = list(csv.DictReader(l for l in fh if not l.startswith("#")))
    key = tuple(str({"system": "h100", **row}[k]) for k in LAYOUT)
    same = [t for t in runs if tuple(t[k] for k in LAYOUT) == key]
    pick = [t for t in same if t["precision"] == row["precision"]] or [t for t in same if t["precision"] == "fp8"]
    return {**pick[0], "tokens_per_s_per_gpu": float(pick[0]["tokens_per_s_per_gpu"])} if pick else None


def tuned() -> dict:
    """The later, tuned 16 x H100 Qwen3-30B-A3B run (``TUNED``): its layout and measured step."""
    with TUNED.open() as fh:
        r = next(csv.DictReader(l for l in fh if not l.startswith("#")))
    return {k: (v if k in ("model", "precision") else float(v) if "." in v else int(v)) for k, v in r.items()}


# the tuned run's CUDA graphs: Transformer Engine's, scopes moe_router and moe_preprocess (Megatron-Bridge
# src/megatron/bridge/recipes/qwen/h100/qwen3_moe.py:213-214, qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config, at the
# PR's merge d398aaca2; its perf_recipes wrapper keeps them); no FP8 attention (BF16)
TUNED_GRAPH = ("moe_router", "moe_preprocess")


def predict_tuned(hw):
    """ironlaw's step of the tuned run, its layout as the file gives it."""
    r = tuned()
    opts = dict(gpus=r["gpus"], tp=r["tp"], pp=r["pp"], cp=r["cp"], ep=r["ep"], global_batch=r["global_batch"],
                micro_batch=r["micro_batch"], zero=1, moe_a2a_overlap=bool(r["moe_a2a_overlap"]),
                moe_dispatcher="flex",                 # the file's HybridEP dispatcher (ironlaw.models.dispatcher)
                cuda_graph=TUNED_GRAPH)
    g = training_graph(SPECS[r["model"]], hw, r["seq"], r["precision"], opts)
    return parallel.train_step(g, hw, parallel.make_plan(opts, g, hw))


def available(row: dict) -> bool:
    """Whether ironlaw can build the row's model (a built-in name, or a config in tests/data)."""
    spec = SPECS[row["model"]]
    return spec.startswith("hf:") or spec in {w["name"] for w in workloads.catalog()}


def held_config(row: dict) -> dict | None:
    """The performance config of a held-out MoE row (``HELD_CONFIG``) over WorkloadBaseConfig's defaults; None
    for a dense or a DGX-H100 row."""
    c = HELD_CONFIG.get((row.get("system"), row["model"]))
    if c is None:
        return None
    return {**CONFIG_LAYOUT, "dispatcher": "alltoall", "cuda_graph": (), "moe_a2a_overlap": False,
            "recompute": (), **c}


def config_matches(row: dict) -> bool:
    """Whether the row's layout (as predicted, ``options``) is its config's: then the config is what it ran."""
    c, o = held_config(row), options(row)
    return c is not None and all(c[k] == (o["interleave"] if k == "vp" else o[k]) for k in CONFIG_LAYOUT)


def recipe_graph(row: dict) -> tuple:
    """The CUDA-graph scopes the row's recipe captures: a dense held-out row's (``DENSE_GRAPH``), a held-out MoE
    row's config's (``HELD_CONFIG``), () for every other row (eager)."""
    dense = DENSE_GRAPH.get((row.get("system"), row["model"]))
    if dense:
        return (dense[0],)
    c = held_config(row)
    return tuple(c["cuda_graph"]) if c else ()


def recipe(row: dict) -> dict:
    """The row with the layout its 25.11 recipe runs (``RECIPE``; the printed one for the dense rows)."""
    return {**row, **RECIPE.get(row["model"], {})}


def options(row: dict, printed: bool = False) -> dict:
    """The plan of the row's recipe layout, or (``printed``, and every held-out row) of the layout the table
    prints; a held-out row past one NVL72 domain spreads over domains of ``NVL_JOB_DOMAIN`` GPUs."""
    r = row if printed or "system" in row else recipe(row)
    if not printed:
        r = {**r, **HELD_RECIPE.get((r.get("system"), r["model"], r["precision"]), {})}
    tp, vp = r["tp"], r["vp"]
    nodes = {"nodes": r["gpus"] // NVL_JOB_DOMAIN} if r.get("system", "").startswith("gb") and r["gpus"] > 72 else {}
    off = OFFLOAD.get((r.get("system"), r["model"], r["precision"]), 0)
    nodes.update({"offload_layers": off} if off else {})
    nodes.update({"moe_dispatcher": "flex"} if (HELD_CONFIG.get((r.get("system"), r["model"])) or {}).get(
        "dispatcher") == "flex" else {})
    o = dict(gpus=r["gpus"], **nodes, tp=tp, pp=r["pp"], cp=r["cp"], ep=r["ep"], global_batch=r["global_batch"],
                micro_batch=r["micro_batch"], interleave=vp, zero=3 if r["fsdp"] else 1,
                sequence_parallel=tp > 1, tp_comm_overlap=tp > 1, overlap_p2p=vp > 1, grad_fp32=False,
                moe_a2a_overlap="system" not in row and bool(recipe(row).get("moe_a2a_overlap", False)),
                param_gather_exposed=(r["precision"] == "mxfp8" and not r["fsdp"]
                                      and (r.get("system"), r["model"]) in PARAM_GATHER_EXPOSED),
                fp8_attention=FP8_ATTENTION)
    n = RECOMPUTE_LAYERS.get((r.get("system", "h100"), r["model"], r["precision"]))
    o.update(dict(recompute="full", recompute_layers=n) if n else {})
    return {**o, "cuda_graph": recipe_graph(row)}


def command(row: dict, printed: bool = False) -> str:
    """The ``ironlaw analyze`` line that predicts the row (with its recipe's layout, or the printed one)."""
    o = options(row, printed)
    flags = [f"--gpus {o['gpus']}", f"--tp {o['tp']}", f"--pp {o['pp']}"]
    flags += [f"--{k} {o[k]}" for k in ("cp", "ep", "interleave") if o[k] > 1]
    flags += ["--fsdp" if o["zero"] == 3 else "--zero 1"]
    flags += [f for f, on in (("--sequence-parallel", o["sequence_parallel"]), ("--tp-comm-overlap", o["tp_comm_overlap"]),
                              ("--overlap-p2p", o["overlap_p2p"]), ("--moe-a2a-overlap", o["moe_a2a_overlap"]),
                              ("--param-gather-exposed", o["param_gather_exposed"])) if on]
    spec = SPECS[row["model"]].replace(str(DATA), "tests/data")
    flags = ([f"--nodes {o['nodes']}"] if "nodes" in o else []) + flags
    flags += [f"--offload-activations {o['offload_layers']}"] if "offload_layers" in o else []
    flags += [f"--moe-dispatcher {o['moe_dispatcher']}"] if "moe_dispatcher" in o else []
    flags += [f"--cuda-graph {','.join(o['cuda_graph'])}"] if o["cuda_graph"] else []
    flags += ["--fp8-attention"] if o["fp8_attention"] else []
    flags += [f"--recompute full --recompute-layers {o['recompute_layers']}"] if "recompute_layers" in o else []
    return (f"ironlaw analyze {spec} --phase train --on {row.get('system', 'h100')} --dtype {row['precision']} "
            f"--seq {row['seq']} --global-batch {o['global_batch']} --micro-batch {o['micro_batch']} "
            + " ".join(flags))


def predict(row: dict, hw, printed: bool = False):
    """ironlaw's training step (parallel.StepEstimate) of one row on ``hw`` (recipe or printed layout)."""
    opts = options(row, printed)
    g = training_graph(SPECS[row["model"]], hw, row["seq"], row["precision"], opts)
    return parallel.train_step(g, hw, parallel.make_plan(opts, g, hw))


def layer_s(row: dict, st) -> tuple[float, float]:
    """(seconds per layer and micro-batch on a stage that the row's published tokens/s imply, ironlaw's): the
    step ÷ (micro-batches + (pp − 1)/vp) ÷ layers per stage."""
    p = st.plan
    step = st.flops.tokens_per_step / (row["tokens_per_s_per_gpu"] * p.gpus)
    layers = st.per_microbatch.graph.meta["layers"] / p.pp
    return step / (p.microbatches + (p.pp - 1) / p.interleave) / layers, st.breakdown.microbatch_s / layers


def layer_parts(st) -> dict[str, float]:
    """Seconds per layer and micro-batch of a step's parts on its slowest stage, op times summed (before the
    overlap the critical path takes): the routed and shared experts' GEMMs, attention (projections and core),
    the expert all-to-alls, the rest."""
    e = st.per_microbatch
    out = {"experts": 0.0, "attention": 0.0, "a2a": 0.0, "rest": 0.0}
    for r in e.rows():
        part = ("experts" if r["module"] in ("experts", "shared_experts") and r["kind"] == "matmul" else
                "attention" if r["module"] == "attn" and r["kind"] in ("matmul", "attention") else
                "a2a" if r["module"] == "ep" else "rest")
        out[part] += r["time_s"]
    layers = e.graph.meta["layers"] / st.plan.pp
    return {k: v / layers for k, v in out.items()}


def summary(what: str, errs: list, rows: int, goal_median: float, goal_max: float) -> str:
    """One line: how many rows were predicted, their median and largest |error| against the goals."""
    import statistics
    return (f"{what:14s} {len(errs)} of {rows} rows: median |error| {statistics.median(errs):.1%} "
            f"(goal ≤ {goal_median:.0%}), max {max(errs):.1%} (goal ≤ {goal_max:.0%})")


def host_parts(st, hw) -> list[tuple[str, bool, float, float]]:
    """What the host issues for one MoE layer and micro-batch of the step ``st`` on ``hw``, part by part
    (``host.moe_parts`` with the step's layout, recipe, CUDA-graph scopes and dispatcher): (part, issued after
    the layer's sync, kernels forward and backward, host seconds at the catalog's ``[host]`` costs)."""
    from ironlaw.models import host
    p, meta = st.plan, st.per_microbatch.graph.meta
    cpu, prec = hw.extra["host"], meta.get("precision")
    out = []
    for name, after, calls in host.moe_parts(meta, p.tp, p.sequence_parallel, p.ep, prec, p.cuda_graph,
                                             p.moe_dispatcher):
        f, b, k = host.seconds(calls, cpu, prec)
        out.append((name, after, k, f + b))
    return out


def serial_bound_s(st, hw) -> float:
    """Seconds per MoE layer and micro-batch if the host never ran ahead of the device at all: the host's issue
    time of the layer (``host_parts``, at the catalog's ``[host]`` costs) plus ironlaw's layer time, as if every
    kernel waited for its own launch. A device→host sync can only take away the host's run-ahead, so no sync
    structure (one sync per MoE layer or one after every kernel, forward and backward) makes a layer longer."""
    layers = st.per_microbatch.graph.meta["layers"] / st.plan.pp
    return sum(p[3] for p in host_parts(st, hw)) + st.breakdown.microbatch_s / layers


def launch_cost_ratio(runs: list) -> tuple[float, float, float]:
    """(the smallest per-launch cost at which an x86 alltoall row's host alone takes its published layer, the
    smallest upper bound a Grace flex row puts on Grace's per-launch cost — its host cannot take longer than its
    published layer —, their ratio): the Grace ÷ x86 host cost per launch the published rows allow if the host
    explains the x86 rows, beside the catalog's (``[host] op_s``, NVIDIA/TransformerEngine issue #2053)."""
    x86, grace = [], []
    for _, r, st, hw in runs:
        k = sum(p[2] for p in host_parts(st, hw))
        per_launch = layer_s(r, st)[0] / k
        cpu = hw.extra["host"].cpu
        if "Grace" in cpu and st.plan.moe_dispatcher == "flex":
            grace.append(per_launch)
        elif "Grace" not in cpu and st.plan.moe_dispatcher == "alltoall" and r["model"] != "gpt-oss-120b":
            x86.append(per_launch)
    if not x86 or not grace:
        return float("nan"), float("nan"), float("nan")
    return min(x86), min(grace), min(grace) / min(x86)


def print_host_counts(runs: list) -> None:
    """Per MoE row (``runs``: (system name, row, step, hardware)), the host's kernels per MoE layer and micro-batch
    by part and their priced milliseconds, the layer time the published throughput implies, ironlaw's, the
    serial bound (``serial_bound_s``: host and device one after the other, no overlap at all), and the cost
    per launch at which the host alone would take the published time (published ms ÷ kernels): what a host-bound
    explanation needs, beside the catalog's ``[host] op_s``. Last, the Grace ÷ x86 cost per launch the rows
    allow (``launch_cost_ratio``) beside the catalog's."""
    print("host per MoE layer and micro-batch (forward + backward): kernels and ms at the catalog's [host] costs")
    names = [n for n, *_ in host_parts(runs[0][2], runs[0][3])] if runs else []
    print(f"{'system':6s} {'model':16s} {'disp':>8} {'local':>5} "
          + " ".join(f"{n[:10]:>10}" for n in names) + f" {'kernels':>7} {'host ms':>7} {'published':>9} "
          f"{'ironlaw':>7} {'serial':>6} {'us/launch needed':>16} {'[host] op_s':>11}")
    for system, r, st, hw in runs:
        parts = host_parts(st, hw)
        k = sum(p[2] for p in parts)
        implied, ours = layer_s(r, st)
        meta = st.per_microbatch.graph.meta
        print(f"{system:6s} {r['model']:16s} {st.plan.moe_dispatcher:>8} {meta['experts'] / st.plan.ep:5.0f} "
              + " ".join(f"{p[2]:10.0f}" for p in parts)
              + f" {k:7.0f} {sum(p[3] for p in parts) * 1e3:7.2f} {implied * 1e3:9.1f} {ours * 1e3:7.1f}"
              + f" {serial_bound_s(st, hw) * 1e3:6.1f}"
              + f" {implied / k * 1e6:16.1f} {hw.extra['host'].op_s * 1e6:11.2f}")
    need, bound, ratio = launch_cost_ratio(runs)
    if ratio == ratio:
        print(f"x86 alltoall rows (not gpt-oss) need at least {need * 1e6:.1f} us per launch for a host-bound layer; "
              f"the Grace flex rows allow Grace at most {bound * 1e6:.1f} us: Grace / x86 <= {ratio:.2f}, "
              f"where the catalog's [host] op_s (TransformerEngine issue #2053) makes it "
              f"{grace_over_x86():.2f}")


EXPERT_PARTS = ("experts", "expert bias")      # the host parts issued once per local expert (``host.moe_parts``)
MANY_EXPERTS = 8                                  # local experts from which the gap is read per expert


def expert_gap(r: dict, st, hw) -> tuple[float, float, float, float, float]:
    """(local experts, the host's kernels per local expert in one MoE layer and micro-batch — ``EXPERT_PARTS`` of
    ``host_parts`` —, the seconds the published layer takes beyond ironlaw's, that gap per per-expert kernel, the
    host term's own seconds per per-expert kernel at the catalog's ``[host]`` costs): the miss read as a cost
    added per launch the framework issues for each local expert, beside what the host term charges for it."""
    local = st.per_microbatch.graph.meta["experts"] / st.plan.ep
    parts = [p for p in host_parts(st, hw) if p[0] in EXPERT_PARTS]
    kernels = sum(p[2] for p in parts)
    implied, ours = layer_s(r, st)
    return local, kernels / local, implied - ours, (implied - ours) / kernels, sum(p[3] for p in parts) / kernels


def print_expert_gaps(runs: list) -> None:
    """Per MoE row (``runs`` as ``print_host_counts``), the gap per per-expert kernel beside the host term's own
    cost of one (``expert_gap``), then the gap's range over the rows with ``MANY_EXPERTS`` or more local experts:
    the x86 alltoall ones and the flex ones."""
    print("the published layer beyond ironlaw's, per kernel the host issues per local expert (MoE layer, micro-batch),"
          " beside the host term's own cost of one")
    print(f"{'system':6s} {'model':16s} {'prec':>5} {'disp':>8} {'local':>5} {'k/expert':>8} {'gap ms':>7} "
          f"{'gap us/kernel':>13} {'host us/kernel':>14}")
    spans: dict[str, list] = {f"x86 alltoall rows, >= {MANY_EXPERTS} local experts": [],
                              f"flex rows, >= {MANY_EXPERTS} local experts": []}
    for system, r, st, hw in runs:
        local, k, gap, per, cost = expert_gap(r, st, hw)
        print(f"{system:6s} {r['model']:16s} {r['precision']:>5} {st.plan.moe_dispatcher:>8} {local:5.0f} {k:8.1f} "
              f"{gap * 1e3:7.2f} {per * 1e6:13.1f} {cost * 1e6:14.1f}")
        x86 = "Grace" not in hw.extra["host"].cpu
        key = ("flex" if st.plan.moe_dispatcher == "flex" else "x86 alltoall" if x86 else None)
        if key and local >= MANY_EXPERTS:
            spans[f"{key} rows, >= {MANY_EXPERTS} local experts"].append(per)
    for name, v in spans.items():
        if v:
            print(f"{name}: {min(v) * 1e6:.1f} to {max(v) * 1e6:.1f} us per per-expert kernel ({len(v)} rows)")


def grace_over_x86() -> float:
    """The catalog's Grace ÷ x86 host cost per launch (``gb200`` against ``b200`` ``[host] op_s``)."""
    from ironlaw.machine import hardware
    return hardware.get("gb200").extra["host"].op_s / hardware.get("b200").extra["host"].op_s
