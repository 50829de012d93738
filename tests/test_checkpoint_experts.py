"""gpt-oss's checkpoint stores its routed experts in MXFP4 (config.json quantization_config quant_method mxfp4, the
rest in bf16): with no --dtype, inference prices those weights at 4.25 bits, their GEMMs weight-only in bf16."""
from __future__ import annotations

import json

import pytest

from ironlaw.core.graph import DTYPE_BYTES
from ironlaw.core.weightonly import DEQUANT_FLOPS
from ironlaw.models.workloads import Request, resolve

SOURCE = "gpt-oss-120b's checkpoint (built-in config gpt-oss-120b.json: quantization_config quant_method mxfp4)"


def build(**kw):
    return resolve(Request("gpt-oss-120b", **kw))


def routed(g):
    return [o for o in g.ops if o.attrs.get("expert") == "routed" and o.kind == "matmul"]


def test_mxfp4_is_4_25_bits():
    assert DTYPE_BYTES["mxfp4"] == pytest.approx(4.25 / 8)


def test_checkpoint_experts_are_stored_in_mxfp4_and_computed_in_bf16():
    g, wide = build(phase="decode", seq=1024), build(phase="decode", seq=1024, dtype="bf16")
    experts = g.meta["routed_expert_weights"]
    assert experts == 128 * 36 * 3 * 2880 * 2880
    assert g.dtype == "bf16" and g.meta["expert_weight_dtype"] == "mxfp4" and g.meta["expert_math_dtype"] == "bf16"
    assert g.meta["expert_weight_source"] == SOURCE
    saved = experts * (2.0 - 4.25 / 8)
    assert g.footprint["weights"] == pytest.approx(wide.footprint["weights"] - saved)
    assert g.meta["weight_bytes"] == pytest.approx(g.footprint["weights"])
    assert g.footprint["weights"] / 2**30 < 64                        # OpenAI: runs on one 80 GB GPU
    for o, w in zip(routed(g), routed(wide)):
        assert o.dtype == "bf16" and o.attrs["weight_dtype"] == "mxfp4"
        assert o.bytes["weights"] == pytest.approx(w.bytes["weights"] * 4.25 / 16)
        elems = w.bytes["weights"] / 2.0
        assert o.vector_flops == pytest.approx(w.vector_flops + DEQUANT_FLOPS * elems)   # decode: M < one tile
        assert o.flops == w.flops
    others = [(o, w) for o, w in zip(g.ops, wide.ops) if o.attrs.get("expert") != "routed"]
    assert others and all(o.bytes == w.bytes and o.dtype == w.dtype for o, w in others)


@pytest.mark.parametrize("on, batch", [("h100", 1), ("h100", 64), ("b200", 64)])
def test_mxfp4_experts_keep_the_bf16_matrix_time(on, batch):
    # weight-only: the experts' GEMMs keep their bf16 rate (η read at their own M, not at bytes ÷ 2); only the
    # dequantization is added, on the vector unit
    from ironlaw.law import law
    from ironlaw.machine import hardware
    hw = hardware.get(on)
    g, wide = (build(phase="decode", batch=batch, seq=1024, device="cuda", **kw) for kw in ({}, {"dtype": "bf16"}))
    e, ew = law.predict(g, hw), law.predict(wide, hw)
    dequant = sum(o.attrs.get("dequant_flops", 0.0) * o.count for o in g.ops)
    assert dequant > 0
    vector_s = dequant / (hw.vector_flops * hw.eta("elementwise"))
    assert e.term("compute_s") == pytest.approx(ew.term("compute_s") + vector_s, rel=1e-9)


def test_an_explicit_dtype_wins_and_is_stated():
    g = build(phase="decode", seq=16, dtype="bf16")
    assert g.footprint["weights"] == pytest.approx(g.meta["params"] * 2.0)
    assert g.meta["expert_weight_dtype"] == "bf16"
    assert g.meta["expert_weight_source"] == "--dtype bf16; the checkpoint stores them in mxfp4"
    assert all("weight_dtype" not in o.attrs for o in routed(g))


def test_training_keeps_the_dtype_it_trains_in():
    g = build(phase="train", seq=16)
    assert "expert_weight_dtype" not in g.meta and all("weight_dtype" not in o.attrs for o in routed(g))


def test_a_model_without_an_expert_format_is_unchanged():
    g = resolve(Request("qwen3-30b-a3b", phase="decode", seq=16))
    assert "expert_weight_dtype" not in g.meta


@pytest.mark.parametrize("hw", ["h100", "b200"])
def test_cli_analyze_states_the_expert_dtype_and_fits_one_gpu(cli, hw):
    r = cli("analyze", "gpt-oss-120b", "--phase", "decode", "--on", hw)
    assert r.rc == 0, r.err
    assert f"routed experts' weights: mxfp4, weight-only: math in bf16 after dequantizing (from {SOURCE})" in r.out
    assert "capacity (host-dram)-bound" not in r.out and "spill to" not in r.out
    d = json.loads(cli("analyze", "gpt-oss-120b", "--phase", "decode", "--on", hw, "--format", "json").out)
    assert d["workload"]["expert_weight_dtype"] == "mxfp4" and d["workload"]["expert_weight_source"] == SOURCE
    assert d["footprint"]["fits"] is True


SERVED = "serving prices every weight in bf16; the checkpoint stores the routed experts in mxfp4, which `ironlaw analyze`"


def test_cli_serve_states_that_it_prices_the_experts_in_its_dtype(cli):
    r = cli("serve", "gpt-oss-120b", "--on", "h100", "--max-throughput")
    assert r.rc == 2 and "the checkpoint stores its routed experts in mxfp4; serving prices every weight in bf16" in r.err
    d = json.loads(cli("serve", "gpt-oss-120b", "--on", "b200", "--tp", "2", "--format", "json").out)
    assert d["expert_weight_dtype"] == "bf16" and d["expert_weight_source"].startswith(SERVED)
    r = cli("serve", "gpt-oss-120b", "--on", "b200", "--tp", "2", "--max-throughput")
    assert r.rc == 0 and "routed experts' weights: bf16 (serving prices every weight in bf16" in r.out.replace("\n", " ")
    plain = json.loads(cli("serve", "llama3-8b", "--on", "h100", "--format", "json").out)
    assert "expert_weight_dtype" not in plain


def test_a_wider_quant_what_if_names_the_checkpoint_and_the_way_out(cli):
    r = cli("compare", "gpt-oss-120b", "--phase", "decode", "--on", "h100", "-w", "quant=fp8")
    assert r.rc == 2 and f"already mxfp4 (narrower), as {SOURCE} stores them" in r.err
    assert "or start from the unquantized model with --dtype bf16" in r.err
    r = cli("compare", "gpt-oss-120b", "--phase", "decode", "--on", "h100", "--dtype", "bf16", "-w", "quant=fp8")
    assert r.rc == 0, r.err
