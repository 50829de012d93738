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


# gpt-oss-120b by hand: every weight but the routed experts' in bf16, those 4.25 bits (MXFP4) apiece
ROUTED = 128 * 36 * 3 * 2880 * 2880
OVERRIDE = "--dtype bf16; the checkpoint stores them in mxfp4"


def stored_bytes(params: float) -> float:
    return (params - ROUTED) * 2.0 + ROUTED * 4.25 / 8


def test_cli_serve_stores_the_experts_as_the_checkpoint_does_and_fits_one_h100(cli):
    """OpenAI: gpt-oss-120b runs on one 80 GB GPU; in bf16 (218 GiB of weights) it does not."""
    d = json.loads(cli("serve", "gpt-oss-120b", "--on", "h100", "--format", "json").out)
    assert d["expert_weight_dtype"] == "mxfp4" and d["expert_math_dtype"] == "bf16"
    assert d["expert_weight_source"] == SOURCE
    params = build(phase="decode", seq=16).meta["params"]
    assert 116e9 < params < 118e9                                   # OpenAI's model card: 117B parameters
    weights = d["capacity"]["weights_bytes"]
    assert weights == pytest.approx(stored_bytes(params))
    assert 60e9 < weights < 66e9                                    # the published checkpoint: ~61-65 GB of files
    cap = d["capacity"]
    assert cap["kv_budget_bytes"] > 10 * 2**30 and cap["max_concurrency"] > 100
    r = cli("serve", "gpt-oss-120b", "--on", "h100")
    assert r.rc == 0, r.err
    flat = " ".join(r.out.split())
    assert f"routed experts' weights: mxfp4, weight-only: math in bf16 after dequantizing (from {SOURCE})" in flat
    r = cli("serve", "gpt-oss-120b", "--on", "h100", "--dtype", "bf16")
    assert r.rc == 2 and "does not fit on h100 at --tp 1 in bf16: weights 218 GiB" in r.err
    plain = json.loads(cli("serve", "llama3-8b", "--on", "h100", "--format", "json").out)
    assert "expert_weight_dtype" not in plain


def test_cli_serve_max_throughput_fits_one_h100_and_an_explicit_dtype_wins(cli):
    r = cli("serve", "gpt-oss-120b", "--on", "h100", "--max-throughput", "--format", "json")
    assert r.rc == 0, r.err
    d = r.json()
    assert d["expert_weight_dtype"] == "mxfp4" and d["expert_weight_source"] == SOURCE and d["dtype"] == "bf16"
    params = build(phase="decode", seq=16).meta["params"]
    assert d["memory_per_gpu"]["weights_bytes"] == pytest.approx(stored_bytes(params))
    wide = cli("serve", "gpt-oss-120b", "--on", "b200", "--tp", "2", "--max-throughput", "--dtype", "bf16",
               "--format", "json").json()
    assert wide["expert_weight_dtype"] == "bf16" and wide["expert_weight_source"] == OVERRIDE
    assert "expert_math_dtype" not in wide
    assert wide["memory_per_gpu"]["weights_bytes"] == pytest.approx(params * 2.0 / 2)
    r = cli("serve", "gpt-oss-120b", "--on", "b200", "--tp", "2", "--max-throughput", "--dtype", "bf16")
    assert r.rc == 0 and f"routed experts' weights: bf16 (from {OVERRIDE})" in " ".join(r.out.split())


def test_serve_streams_the_stored_experts_each_decode_step():
    """The decode step reads the touched experts' weights at 4.25 bits, not 16: a one-sequence step on two B200s
    (where the bf16 model fits too) moves fewer bytes and takes less time, the rest of the step unchanged."""
    import ironlaw
    narrow = ironlaw.serve("gpt-oss-120b", on="b200", tp=2).estimate
    wide = ironlaw.serve("gpt-oss-120b", on="b200", tp=2, dtype="bf16").estimate
    def routed_weights(est):
        return sum(float(o.bytes["weights"]) * o.count for o in est.decode.graph.ops
                   if o.attrs.get("expert") == "routed" and o.kind == "matmul")
    assert routed_weights(narrow) == pytest.approx(routed_weights(wide) * 4.25 / 16)
    assert narrow.decode.graph.meta["expert_weight_dtype"] == "mxfp4"
    assert narrow.itl_s < wide.itl_s
    others = lambda est: sum(float(o.bytes.get("weights", 0.0)) * o.count for o in est.decode.graph.ops  # noqa: E731
                             if o.attrs.get("expert") != "routed")
    assert others(narrow) == pytest.approx(others(wide))


def test_search_serves_the_checkpoints_experts_on_one_h100():
    import ironlaw
    r = ironlaw.search("gpt-oss-120b", phase="serve", on="h100", gpus=1)
    best = r.top[0]
    assert best["dtype"] == "bf16" and best["expert_weight_dtype"] == "mxfp4" and best["tp"] == 1


def test_a_wider_quant_what_if_names_the_checkpoint_and_the_way_out(cli):
    r = cli("compare", "gpt-oss-120b", "--phase", "decode", "--on", "h100", "-w", "quant=fp8")
    assert r.rc == 2 and f"already mxfp4 (narrower), as {SOURCE} stores them" in r.err
    assert "or start from the unquantized model with --dtype bf16" in r.err
    r = cli("compare", "gpt-oss-120b", "--phase", "decode", "--on", "h100", "--dtype", "bf16", "-w", "quant=fp8")
    assert r.rc == 0, r.err


def test_mxfp4_experts_run_on_the_weight_only_moe_class_where_fitted():
    """B200 and H100 hold the MoE layer fitted on TensorRT-LLM's weight-only MXFP4 rows (moe_grouped_gemm.w4a16_mxfp4):
    the routed GEMMs run there, their dequantization inside the measured layer; the RTX PRO 6000 has no such rows,
    so its bf16 classes stand in and say so."""
    from ironlaw.machine import hardware
    from ironlaw.models.precision import moe_recipe
    from ironlaw.models.serving.step import StoredExperts, moe_kernels, step_graph
    g = build(phase="decode", seq=16)
    assert moe_recipe(g) == "w4a16_mxfp4" and moe_recipe(build(phase="decode", seq=16, dtype="bf16")) is None
    b200, rtx = hardware.get("b200"), hardware.get("rtx-pro-6000")
    assert moe_kernels(b200, "bf16", "w4a16_mxfp4") == ("moe_grouped_gemm.w4a16_mxfp4", "moe_rows.w4a16_mxfp4", None)
    assert moe_kernels(hardware.get("h100"), "bf16", "w4a16_mxfp4")[0] == "moe_grouped_gemm.w4a16_mxfp4"
    assert moe_kernels(rtx, "bf16", "w4a16_mxfp4") == ("moe_grouped_gemm.bf16", "moe_rows.bf16", "w4a16_mxfp4")
    experts = StoredExperts("mxfp4", SOURCE)
    args = dict(gemm_tokens=64, decode=64, context=1024, prompt=1024, prefill_tokens=0.0, head_tokens=64.0,
                moe_tables=True, experts=experts)
    on = [o for o in step_graph("gpt-oss-120b", b200, "bf16", "bf16", **args).ops
          if o.attrs.get("expert") == "routed" and o.kind == "matmul"]
    assert on and all(o.attrs["kernel"] == "moe_grouped_gemm.w4a16_mxfp4" and "kernel_for" not in o.attrs for o in on)
    plain = [o for o in build(phase="decode", seq=1024, batch=64).ops
             if o.attrs.get("expert") == "routed" and o.kind == "matmul"]
    assert all(o.vector_flops == pytest.approx(p.vector_flops - p.attrs["dequant_flops"]) for o, p in zip(on, plain))
    stand = [o for o in step_graph("gpt-oss-120b", rtx, "bf16", "bf16", **args).ops
             if o.attrs.get("expert") == "routed" and o.kind == "matmul"]
    assert all(o.attrs["kernel_for"] == "moe_grouped_gemm.w4a16_mxfp4" for o in stand)
    assert all(o.vector_flops == p.vector_flops for o, p in zip(stand, plain))


def test_a_config_given_by_path_names_its_path_once():
    """``analyze hf:PATH/gpt-oss-20b.json`` names the checkpoint's source with its path once: 'the checkpoint
    (PATH: quantization_config …)'."""
    from pathlib import Path
    path = Path(__file__).parent / "data" / "llm_configs" / "gpt-oss-20b.json"
    g = resolve(Request(f"hf:{path}", phase="decode", seq=1024))
    assert g.meta["expert_weight_source"] == f"the checkpoint ({path}: quantization_config quant_method mxfp4)"
