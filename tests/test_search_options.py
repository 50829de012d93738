"""`ironlaw search` takes analyze's training-step options (LoRA, FP8 attention, CUDA graphs, the activation offload,
the exposed parameter gather, serial composition, the network calibration, builder options) and serve's memory
fraction, and prices every layout with them as analyze and serve price one; an option that cannot apply to a
search, and every analyze option compare cannot take, is refused in one line naming why."""
import random

import numpy as np
import pytest

import ironlaw
from ironlaw.machine import hardware
from ironlaw.machine.network.topology import nodes_for
from ironlaw.models.search import fast, space, train

from conftest import one_line_error, run_cli

SMALL = ("search", "llama3-8b", "--on", "h100", "--gpus", "8", "--global-batch", "64", "--pp", "1", "--format",
         "json")


def _best(r) -> dict:
    assert r.rc == 0, r.err
    return r.json()["top"][0]


def test_a_lora_search_ranks_layouts_with_the_adapters_priced():
    """`search --lora-rank 16` was refused as an unknown option: every layout is now the LoRA fine-tune's (frozen
    base, the adapters' gradients and optimizer), so the best layout holds less and steps faster than the full
    fine-tune's, and is the step analyze prices for that layout with the same adapters."""
    full, lora = _best(run_cli(*SMALL)), run_cli(*SMALL, "--lora-rank", "16")
    best = _best(lora)
    assert best["memory_per_gpu_bytes"] < full["memory_per_gpu_bytes"] and best["time_s"] < full["time_s"]
    assert any(n.startswith("LoRA rank 16 on linear_qkv, linear_proj") for n in lora.json()["step_options"])
    one = ironlaw.analyze("llama3-8b", on="h100", phase="train", gpus=8, global_batch=64, seq=4096, lora_rank=16,
                          **{k: best[k] for k in ("tp", "pp", "dp", "micro_batch", "recompute", "zero")})
    assert one.step_s == pytest.approx(best["time_s"], rel=1e-9)
    assert one.memory.total_bytes == pytest.approx(best["memory_per_gpu_bytes"], rel=1e-9)


def test_fp8_attention_changes_the_searchs_best_time_on_b200():
    """`search --fp8-attention` was refused: on a B200 every layout's attention now runs at the FP8 kernels'
    measured speedup, after its quantizes, and the best step is faster."""
    args = ("search", "llama3-8b", "--on", "b200", "--gpus", "8", "--global-batch", "64", "--tp", "1", "--pp", "1",
            "--format", "json")
    bf16, fp8 = _best(run_cli(*args)), _best(run_cli(*args, "--fp8-attention"))
    assert fp8["time_s"] < bf16["time_s"]


def test_cuda_graphs_and_serial_composition_reach_every_layout():
    """`--cuda-graph` (refused before) takes the host's launches off GPT-2's short steps on a B200, and `--serial`
    (no such option before) composes every layout's terms serially, as analyze's: both change the best step."""
    args = ("search", "gpt2", "--on", "b200", "--gpus", "2", "--global-batch", "4", "--seq", "256", "--format", "json")
    eager, graphed = _best(run_cli(*args)), _best(run_cli(*args, "--cuda-graph", "attn"))
    assert graphed["time_s"] < eager["time_s"] and graphed["breakdown"]["host_exposed_s"] < eager["breakdown"][
        "host_exposed_s"]
    assert _best(run_cli(*SMALL, "--serial"))["time_s"] > _best(run_cli(*SMALL))["time_s"]


def test_the_serving_search_takes_the_engines_memory_fraction():
    """`search --phase serve --memory-fraction 0.5` was refused: each layout's engine keeps half the device, so
    the best layout's offline batch (its sequences in flight) and memory shrink, and the notes say so."""
    args = ("search", "llama3-8b", "--phase", "serve", "--on", "h100", "--gpus", "1", "--dtype", "fp8")
    whole, half = run_cli(*args, "--format", "json"), run_cli(*args, "--memory-fraction", "50%", "--format", "json")
    assert half.rc == 0, half.err
    assert half.json()["top"][0]["concurrency"] < whole.json()["top"][0]["concurrency"]
    assert half.json()["top"][0]["memory_per_gpu_bytes"] < whole.json()["top"][0]["memory_per_gpu_bytes"]
    assert half.json()["settings"]["memory_fraction"] == 0.5
    assert "memory fraction: 0.5 on every layout's engine" in run_cli(*args, "--memory-fraction", "0.5").out


@pytest.mark.parametrize("args, said", [
    (("--fsdp",), "search takes no --fsdp: FSDP is ZeRO stage 3, one of the stages it ranks: --zero 3 fixes it"),
    (("--redundant-experts", "32"), "--redundant-experts 32: llama3-8b is dense (no routed experts to replicate)"),
    (("--batch", "4"), "search takes no --batch: a training layout's sequences per micro-batch are --micro-batch"),
    (("--lora-targets", "linear_qkv"), "--lora-targets names the linears LoRA adapts; add --lora-rank R"),
    (("--lora-rank", "0"), "--lora-rank takes the adapters' rank, a whole number >= 1, got 0"),
    (("--cuda-graph", "mlp"), "--cuda-graph takes attn, moe_router, moe_preprocess"),
    (("--offload-activations", "40"), "--offload-activations 40 is more than the 32 layers of a pipeline stage"),
    (("--param-gather-exposed", "--zero", "2"), "--param-gather-exposed is the distributed optimizer's (--zero 1)"),
    (("--memory-fraction", "0.5"), "--memory-fraction belongs to the serving search (--phase serve)"),
    (("--phase", "serve", "--lora-rank", "16"), "--lora-rank belongs to the training search (--phase train)"),
    (("--phase", "serve", "--fp8-attention"), "--fp8-attention belongs to the training search (--phase train)"),
    (("--phase", "serve", "--memory-fraction", "1.5"), "--memory-fraction must be in (0, 1], got 1.5"),
    (("--phase", "serve", "--kv-fraction", "0.5"), "search takes no --kv-fraction: its engines' memory knob is "
                                                   "--memory-fraction"),
])
def test_a_search_option_that_cannot_apply_is_refused_naming_why(args, said):
    line = one_line_error(run_cli("search", "llama3-8b", "--on", "h100", "--gpus", "8", *args))
    assert said in line, line


def test_the_training_options_are_checked_as_analyze_checks_them():
    """The same refusals as analyze's, from the same checks: LoRA on a MoE model, FP8 attention on a device
    without FP8."""
    line = one_line_error(run_cli("search", "mixtral-8x7b", "--on", "h100", "--gpus", "8", "--lora-rank", "16"))
    assert "--lora-rank: LoRA on a mixture-of-experts model" in line, line
    line = one_line_error(run_cli("search", "llama3-8b", "--on", "a100", "--gpus", "8", "--fp8-attention"))
    assert "a100 has no FP8 matrix peak" in line, line


@pytest.mark.parametrize("flag, said", [
    (("--tp", "2"), "compare takes no --tp: it weighs one device's estimate of one graph before and after"),
    (("--lora-rank", "16"), "--lora-rank plans a training step on many devices"),
    (("--fp8-attention",), "--fp8-attention plans a training step on many devices"),
    (("--offload-activations", "2"), "--offload-activations plans a training step on many devices"),
    (("--price-per-gpu-hour", "2"), "compare takes no --price-per-gpu-hour: its verdict is the step's time"),
    (("--train-tokens", "1T"), "compare takes no --train-tokens: its verdict is the step's time"),
    (("--capture",), "compare takes no --capture: it weighs the graph ironlaw builds"),
])
def test_compare_refuses_analyzes_step_options_naming_why(flag, said):
    line = one_line_error(run_cli("compare", "llama3-8b", "--on", "h100", "--what-if", "fusion=elementwise", *flag))
    assert said in line, line


def test_the_fast_path_matches_train_step_with_the_step_options():
    """The fast path against train_step on random layouts with every step option on: LoRA with the exposed
    ZeRO-1 gather on an H100, FP8 attention with CUDA graphs and 2 layers offloaded on a GB200."""
    for on, settings, options in (("h100", {"param_gather_exposed": True}, {"lora_rank": 8}),
                                  ("gb200", {"fp8_attention": True, "cuda_graph": ("attn",), "offload_layers": 2},
                                   {})):
        hw = hardware.get(on)
        g = train.graph("llama3-8b", hw, 1024, None, options=options)
        m = g.meta
        nodes = nodes_for(hw, 16)
        c = space.enumerate_space(space.Space(16, 32, 1024, m["layers"], m["heads"], m["kv_heads"], 0, {},
                                              gpus_per_node=16 // nodes))
        ctx = fast.Context("llama3-8b", hw, 16, nodes, 32, 1024, g.dtype, settings={**train.SETTINGS, **settings},
                           graph_options=options)
        res = train.evaluate_all(ctx, c)
        fits = [int(i) for i in np.nonzero(res["fits"])[0]]
        pick = random.Random(7).sample(fits, 2) + [i for i in fits if c["zero"][i] == 1 and c["pp"][i] > 1][:1]
        graphs: dict = {}
        for i in pick:
            st = train.exact(ctx, train.row_of(c, i), graphs)
            assert res["time_s"][i] == pytest.approx(st.step_s, rel=1e-9), (on, train.row_of(c, i))
            assert res["memory_per_gpu_bytes"][i] == pytest.approx(st.memory.total_bytes, rel=1e-9)
            assert res["offload_exposed_s"][i] == pytest.approx(st.breakdown.offload_exposed_s, rel=1e-9, abs=1e-15)
