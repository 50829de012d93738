"""The kernel fitter's class-keyed rules (``kernelfit.rules``): each is read through ``rules.holds``, and each names
frameworks, ops, regimes and GPUs that exist, so that a rule whose key is misspelt fails here instead of applying to
no class."""
from types import SimpleNamespace

import pytest

from ironlaw.machine import hardware
from ironlaw.measure.calibrate import kernelfit, moefit
from ironlaw.measure.calibrate.kernelfit import rules

REGIMES = set(kernelfit.vocabulary.REGIMES) | {""}
OPS = set(kernelfit.OPS)
FRAMEWORKS = set(kernelfit.FRAMEWORKS)
# rule -> what its keys are made of, in order
BY_CLASS = ("framework", "op", "regime")
KEYS = {"WARM_THROUGH_CLASSES": BY_CLASS, "WRITE_CLASSES": BY_CLASS, "SWAP_CLASSES": BY_CLASS,
        "UNIT_WAVE_CLASSES": BY_CLASS, "KEY_BLOCK_CLASSES": BY_CLASS, "HEAD_CTA_CLASSES": BY_CLASS,
        "HEAD_DIM_LATENCY": BY_CLASS, "HEAD_DIM_LATENCY_GPUS": BY_CLASS, "GROUP_LATENCY": BY_CLASS,
        "WRITE_CACHE_CLASSES": ("framework", "op", "kernel_class"),
        "CHUNK_CLASSES": ("framework", "kernel_class"), "HEAD_DIM_LATENCY_CLASSES": ("framework", "kernel_class"),
        "FA3_SPLIT_CLASSES": ("framework", "kernel_class"), "GROUP_FASTEST_CLASSES": ("framework", "kernel_class"),
        "UNIT_WAVE_GPU_CLASSES": ("framework", "kernel_class"), "KEY_WALK_CLASSES": ("framework", "kernel_class"),
        "SPLIT_CLASSES": ("op", "regime"), "WALK_WAVES": ("op", "regime"), "COARSE": ("op", "regime"),
        "P90_CHOICE_CLASSES": ("op", "regime"), "WALK_CLASSES": ("op", "regime"),
        "RESIDENT_CONTEXT": ("op",), "FP8_CONTEXT": ("op",), "GRID_RIDGE_CLASSES": ("op",),
        "GROUP_SPLIT": ("framework",), "MAIN_BACKEND_CLASSES": ("framework", "regime"),
        "HEAD_DIM_BACKEND_CLASSES": ("framework", "op"), "HEAD_DIM_BACKEND_GPU_CLASSES": ("framework", "op", "gpu"),
        "FLOOR_CONTEXT_CLASSES": ("framework", "kernel_class"), "TILE_S_CLASSES": ("framework", "kernel_class"),
        "PLAN_SPLIT_CLASSES": ("framework", "kernel_class"), "CAUSAL_BLOCK_CLASSES": ("framework", "kernel_class"),
        "PLAN_CHUNK_CLASSES": ("framework", "kernel_class"), "FA2_SPLIT_CLASSES": ("framework", "kernel_class"),
        "FA3_SM8X_SPLIT_CLASSES": ("framework", "kernel_class"), "TILE_COST_CLASSES": ("framework", "kernel_class"),
        "GLOBAL_WINDOW_ROWS": ("framework", "op"),
        "M_SWITCH_GEMMS": ("framework", "dtype"), "M_PAST_GEMMS": ("framework", "dtype"),
        "N_SWITCH_GEMMS": ("framework", "dtype"),
        "SPIKY_GEMMS": ("framework", "dtype"), "WRITTEN_ONCE_OPS": ("op",),
        "FINE_GEMMS": ("framework", "dtype"), "REPLAY_CACHE_OPS": ("op",), "REPLAY_L2": ("gpu",),
        "REPLAY_L2_SOURCE": ("gpu",), "MOE_CROSS_CHECK": ("dtype",), "MOE_CROSS_REFERENCE": ("gpu",),
        "CARRIED_GEMM": ("gpu",), "CARRIED_GEMM_SOURCE": ("gpu",), "ATTENTION_ROWS_OF": ("gpu",),
        "ROTATED_MOE_FRAMEWORKS": ("framework",), "OVERLAP_FLOOR": ("framework", "op"),
        "MOE_WEIGHT_ONLY": ("framework", "dtype"), "MOE_PAIRS": ("framework", "moe_dtype"),
        "MOE_PAIRS_MARLIN": ("framework", "moe_dtype"), "MOE_GROUPED_ROUTING": ("framework",),
        "MOE_UNALIGNED_K": ("framework", "moe_dtype"), "MOE_M_BLOCK": ("framework", "moe_dtype"),
        "MODULE_APART_OPS": ("framework", "op")}
GPU_LISTS = ("XQA_MLA_GPUS", "K_ONLY_ALL_HEADS_GPUS")
# the rules that map a key to the GPUs it holds on (``holds(rule, key, gpu)``)
GPUS_BY_KEY = ("RESIDENT_CONTEXT", "FP8_CONTEXT", "GRID_RIDGE_CLASSES", "GROUP_SPLIT", "HEAD_DIM_LATENCY_GPUS",
               "WRITE_CACHE_CLASSES", "CHUNK_CLASSES", "HEAD_DIM_LATENCY_CLASSES", "M_SWITCH_GEMMS", "M_PAST_GEMMS",
               "N_SWITCH_GEMMS",
               "SPIKY_GEMMS", "WRITTEN_ONCE_OPS", "FINE_GEMMS", "FLOOR_CONTEXT_CLASSES", "TILE_S_CLASSES",
               "PLAN_SPLIT_CLASSES", "FA3_SPLIT_CLASSES", "GROUP_FASTEST_CLASSES", "UNIT_WAVE_GPU_CLASSES",
               "KEY_WALK_CLASSES", "CAUSAL_BLOCK_CLASSES", "PLAN_CHUNK_CLASSES", "FA2_SPLIT_CLASSES", "REPLAY_CACHE_OPS",
               "FA3_SM8X_SPLIT_CLASSES", "TILE_COST_CLASSES", "GLOBAL_WINDOW_ROWS", "MOE_CROSS_CHECK",
               "OVERLAP_FLOOR", "MOE_WEIGHT_ONLY", "MOE_PAIRS", "MOE_PAIRS_MARLIN",
               "MOE_UNALIGNED_K", "MOE_M_BLOCK")


def _known(part: str, value) -> bool:
    if part == "kernel_class":
        return isinstance(value, str) and value.startswith("attention_")
    if part == "gpu":
        return value in hardware.names()
    if part == "dtype":
        return value in kernelfit.vocabulary.GEMM_DTYPES.values()
    if part == "moe_dtype":         # an MoE class's dtype: a GEMM dtype or a weight format (moefit)
        return value in {*kernelfit.vocabulary.GEMM_DTYPES.values(), moefit.FP8_BLOCK, moefit.W4A16_MXFP4}
    return value in {"framework": FRAMEWORKS, "op": OPS, "regime": REGIMES}[part]


def test_holds_reads_a_collection_of_keys_and_a_mapping_of_key_to_gpus():
    assert rules.holds({("vllm", "gemm", "")}, ("vllm", "gemm", ""))
    assert not rules.holds({("vllm", "gemm", "")}, ("sglang", "gemm", ""))
    assert rules.holds({"gemm": ("h100",)}, "gemm", "h100")
    assert not rules.holds({"gemm": ("h100",)}, "gemm", "h200")
    assert not rules.holds({"gemm": ("h100",)}, "context_attention", "h100")
    assert not rules.holds({}, "gemm", "h100") and not rules.holds(set(), "gemm")


def test_regime_of_reads_a_kernel_class_name_and_gives_a_gemm_class_the_default():
    def g(key):
        return SimpleNamespace(key=key)
    assert rules.regime_of(g(("kernel", "attention_generation_bf16_kv_bf16_window"))) == "_window"
    assert rules.regime_of(g(("kernel", "attention_generation_bf16_kv_fp8"))) == ""
    assert rules.regime_of(g(("matmul", "bf16"))) == "" and rules.regime_of(g(("matmul", "bf16")), None) is None


@pytest.mark.parametrize("name", sorted(KEYS))
def test_every_keyed_rule_names_frameworks_ops_regimes_and_gpus_that_exist(name):
    table, parts, gpus = getattr(rules, name), KEYS[name], set(hardware.names())
    assert table, f"{name} is empty"
    for key in table:
        parts_of = key if isinstance(key, tuple) else (key,)
        assert len(parts_of) == len(parts) and all(_known(p, v) for p, v in zip(parts, parts_of)), (name, key)
        if name in GPUS_BY_KEY:
            assert set(table[key]) <= gpus, (name, key, set(table[key]) - gpus)
    for name in GPU_LISTS:
        assert set(getattr(rules, name)) <= gpus, name
