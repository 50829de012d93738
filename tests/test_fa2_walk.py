"""vLLM's bf16-cache MMHA-rule window decode on RTX PRO 6000 (FlashAttention 2, one CTA per sequence and query head)
walks its window's keys one block after another: its fit takes ``key_s`` (``kernelfit.rules.KEY_WALK_CLASSES``), the law's
``efficiency.key_walk_s``, and the class as stored prices a long window's walk at batch 1."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ironlaw.law.law import predict
from ironlaw.machine import engines, hardware
from ironlaw.models.workloads import Request
from ironlaw.models.workloads import transformer as T

KEY = "attention_generation_bf16_kv_bf16_window_mmha"


def _group(gpu: str, key: str):
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    gs = kernelfit.groups(kerneltable.read(Path(__file__).parent / "data" / "kernel_tables" / "h100_sxm",
                                           ops=("generation_attention",), framework="trtllm"))
    g = next(x for x in gs if x.key[1].endswith("_window_mmha"))
    return replace(g, key=("kernel", key), table=replace(g.table, gpu=gpu, framework="vllm"))


def test_the_fit_walks_the_keys_on_its_own_class_only():
    """The class on RTX PRO 6000 fits ``key_s`` from each of ``KEY_S_STARTS``; on L40S, or its FP8-cache class, not."""
    pytest.importorskip("pandas")
    from ironlaw.measure.calibrate import kernelfit
    bounds, starts = (("latency_s", 1e-4),), [[5e-6]]
    own = kernelfit.shapefit.with_key_walk(_group("rtx-pro-6000", KEY), bounds, starts)
    assert own[0] == bounds + (("key_s", kernelfit.shapefit.KEY_S_MAX),)
    assert own[1] == [[5e-6, x] for x in kernelfit.shapefit.KEY_S_STARTS]
    for gpu, key in (("l40s", KEY), ("rtx-pro-6000", "attention_generation_bf16_kv_fp8_window_mmha")):
        assert kernelfit.shapefit.with_key_walk(_group(gpu, key), bounds, starts) == (bounds, starts)


def _window_s(seq: int) -> float:
    """vLLM's RTX PRO 6000 terms, one head on one KV head × 256, window 1,024, batch 1."""
    hw, _ = engines.with_engine(hardware.get("rtx-pro-6000"), "vllm")
    arch = replace(T.builtin_arch("llama3-8b"), sliding_window=1024, heads=1, kv_heads=1, head_dim=256, hidden=256)
    g = T.build(arch, Request("x", phase="decode", batch=1, seq=seq), "x")
    (i, op), = [(i, o) for i, o in enumerate(g.ops) if o.kind == "attention"]
    assert op.attrs["kernel"] == KEY
    return float(np.asarray(predict(g, hw).op_time_s).reshape(len(g.ops), -1)[i, 0])


def test_the_stored_class_prices_the_walk_over_a_long_window():
    """The table: 8.8 µs up to 63 cached tokens, 45.6 µs from 1,023 on (1,024 keys walked); the stored terms price
    the long window at least 3x the short one, within 25% of the table."""
    short, long = _window_s(63), _window_s(4095)
    assert long > 3.0 * short
    assert long == pytest.approx(45.6e-6, rel=0.25)
