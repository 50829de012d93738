"""Megatron-Core's token dispatcher in a training step (ironlaw.models.dispatcher): the all-to-all dispatcher's
sorts of the routed rows by local expert, none for the flex (DeepEP/HybridEP) one, the option's errors, and the
held-out rows' dispatchers (tests/nemo_ref.HELD_CONFIG)."""
from __future__ import annotations

import pytest
from conftest import run_cli
from ironlaw.core.errors import IronlawError
from ironlaw.machine import hardware
from ironlaw.models import dispatcher, host, parallel, precision, workloads


def _step(spec="qwen3-30b-a3b", on="b200", **opts):
    hw = hardware.get(on)
    g = workloads.resolve(workloads.Request(spec, phase="train", batch=1, seq=4096, dtype="bf16"))
    g = precision.lower(g, "mxfp8", hw.features.get("fp8_any_layout", False))
    return parallel.train_step(g, hw, parallel.make_plan({"gpus": 8, "global_batch": 64, **opts}, g, hw))


def _sorts(st):
    return [op for op in st.per_microbatch.graph.ops if op.attrs.get("role") == "sort"]


def test_alltoall_sorts_every_routed_row_twice_per_pass_and_exchanges_the_probabilities():
    st = _step(ep=8)
    sorts = _sorts(st)
    names = [op.name for op in sorts]
    assert names == ["moe_sort_chunks", "moe_unsort_chunks", "moe_unsort_chunks.backward",
                     "moe_sort_chunks.backward"]
    ops = st.per_microbatch.graph.ops
    dispatch = next(op for op in ops if op.name == "ep.alltoall.dispatch")
    # each sort reads and writes what the all-to-all carries: the routed rows (4096 tokens × top-8 × 2048 × 2 B)
    assert dispatch.network_bytes == pytest.approx(4096 * 8 * 2048 * 2)
    for op in sorts:
        assert op.bytes["activations"] == pytest.approx(2 * dispatch.network_bytes)
        assert op.count == dispatch.count == 48 and op.module == "experts"
    # the forward's sort follows the dispatch, its unsort precedes the combine
    i = [op.name for op in ops]
    assert i.index("moe_sort_chunks") == i.index("ep.alltoall.probs") + 1 == i.index("ep.alltoall.dispatch") + 2
    assert i.index("moe_unsort_chunks") == i.index("ep.alltoall.combine") - 1
    assert i.index("moe_unsort_chunks.backward") == i.index("ep.alltoall.dispatch.bwd") + 1
    # the probabilities' own all-to-all (fp32, one per routed row) with the forward's dispatch and, in the
    # backward, with the dispatch's backward (after the experts' backward)
    probs = [op for op in ops if op.name.startswith("ep.alltoall.probs")]
    assert [op.name for op in probs] == ["ep.alltoall.probs", "ep.alltoall.probs.bwd"]
    assert all(op.network_bytes == pytest.approx(4096 * 8 * 4) for op in probs)
    assert i.index("ep.alltoall.probs.bwd") > i.index("ep.alltoall.combine.bwd")
    # issued after the MoE layer's sync in the forward; backward ops are the backward's
    assert host.after_sync(sorts[0]) and host.after_sync(sorts[1]) and host.backward(sorts[2].name)


def test_flex_fuses_the_sorts_and_the_probabilities_exchange_and_saves_their_time():
    a2a, flex = _step(ep=8), _step(ep=8, moe_dispatcher="flex")
    assert not _sorts(flex) and flex.plan.moe_dispatcher == "flex" and a2a.plan.moe_dispatcher == "alltoall"
    assert not any(op.name.startswith("ep.alltoall.probs") for op in flex.per_microbatch.graph.ops)
    assert any("sorts the routed rows by local expert" in n for n in a2a.notes)
    assert not any("sorts the routed rows" in n for n in flex.notes)
    copies_s = sum(r["time_s"] for r in a2a.per_microbatch.rows()
                   if r["name"].startswith(("moe_sort", "moe_unsort", "ep.alltoall.probs", "moe_quant_")))
    assert copies_s > 0
    t_a2a, t_flex = a2a.breakdown.microbatch_s, flex.breakdown.microbatch_s
    assert t_a2a > t_flex
    assert t_a2a - t_flex <= copies_s * 1.0001                     # hidden host time may absorb part of it


def _pads(st):
    return [op for op in st.per_microbatch.graph.ops if op.attrs.get("role") == "pad"]


def test_quantized_experts_pay_transformer_engines_padding_copies_on_the_alltoall_path():
    """TEGroupedMLP pads each local expert's rows for the FP8/MXFP8 GEMMs and unpads the output (TE v2.9
    Fp8Padding / Fp8Unpadding), forward and backward; HybridEP pads inside its dispatch, bf16 needs no padding."""
    st = _step(ep=8)
    pads, ops = _pads(st), st.per_microbatch.graph.ops
    assert [op.name for op in pads] == ["moe_quant_pad", "moe_quant_unpad", "moe_quant_unpad.backward",
                                        "moe_quant_pad.backward"]
    dispatch = next(op for op in ops if op.name == "ep.alltoall.dispatch")
    for op in pads:                                                # bf16 rows in, padded rows out
        assert op.bytes["activations"] == pytest.approx(2 * 4096 * 8 * 2048 * 2) and op.count == 48
    i = [op.name for op in ops]
    # in after the sort, before the first expert GEMM; out after the last, before the sort back
    assert i.index("moe_sort_chunks") + 1 == i.index("moe_quant_pad") < i.index("mlp_up_proj")
    assert i.index("mlp_down_proj") < i.index("moe_quant_unpad") == i.index("moe_unsort_chunks") - 1
    assert i.index("moe_quant_unpad.backward") < i.index("mlp_down_proj.backward")
    assert i.index("mlp_up_proj.backward") < i.index("moe_quant_pad.backward") < i.index("ep.alltoall.combine.bwd")
    assert host.after_sync(pads[0]) and host.after_sync(pads[1])
    assert any("pads each local expert's rows" in n for n in st.notes)
    pad_s = sum(r["time_s"] for r in st.per_microbatch.rows() if r["name"].startswith("moe_quant_"))
    assert pad_s > 0 and dispatch.network_bytes > 0
    assert not _pads(_step(ep=8, moe_dispatcher="flex"))           # HybridEP writes the padded layout
    one = _step(spec="mixtral-8x7b", ep=8, zero=3)                 # one local expert: no sort, still padded
    assert not _sorts(one) and len(_pads(one)) == 4


def test_bf16_experts_need_no_padding():
    hw = hardware.get("b200")
    g = workloads.resolve(workloads.Request("qwen3-30b-a3b", phase="train", batch=1, seq=4096, dtype="bf16"))
    st = parallel.train_step(g, hw, parallel.make_plan({"gpus": 8, "global_batch": 64, "ep": 8}, g, hw))
    assert _sorts(st) and not _pads(st)
    assert not any("pads each local expert's rows" in n for n in st.notes)


def test_no_sorts_without_expert_parallelism_or_with_one_local_expert():
    assert not _sorts(_step(zero=3))                               # ep 1: no all-to-all
    st = _step(spec="mixtral-8x7b", ep=8, zero=3)                  # 8 experts over EP 8: one each
    assert dispatcher.local_experts(st.per_microbatch.graph.meta) == 1 and not _sorts(st)


def test_option_errors_are_one_line():
    with pytest.raises(IronlawError, match="takes alltoall, flex or deepep"):
        dispatcher.check("allgather", 8)
    with pytest.raises(IronlawError, match="add --ep > 1"):
        dispatcher.check("flex", 1)
    args = ("analyze", "qwen3-30b-a3b", "--phase", "train", "--on", "gb200", "--gpus", "8", "--ep", "8",
            "--global-batch", "64", "--moe-dispatcher")
    bad = run_cli(*args, "hybridep")
    assert bad.rc == 2 and bad.err.strip().count("\n") == 0 and "got 'hybridep'" in bad.err
    assert "Traceback" not in bad.err
    ok = run_cli(*args, "flex")
    assert ok.rc == 0, ok.err
    assert "(ep 8, flex dispatcher)" in ok.out


def test_held_out_rows_run_their_configs_dispatcher():
    """Every GB200/GB300 Qwen3 and DeepSeek-V3 config sets HybridEP (flex), no gpt-oss and no DGX-B200 config
    does; the configs whose layout is the printed one are the ones the rows ran."""
    from nemo_ref import BLACKWELL, DENSE, config_matches, held_config, options, table
    rows = [r for r in table(BLACKWELL) if r["model"] not in DENSE]
    assert all(held_config(r) is not None for r in rows)
    for r in rows:
        flex = r["system"] != "b200" and r["model"] != "gpt-oss-120b"
        assert (options(r).get("moe_dispatcher") == "flex") == flex, (r["system"], r["model"])
    matched = {(r["system"], r["model"]) for r in rows if config_matches(r)}
    assert matched == {("gb200", "qwen3-30b-a3b"), ("b200", "qwen3-30b-a3b"), ("b200", "deepseek-v3"),
                       ("b200", "gpt-oss-120b")}
