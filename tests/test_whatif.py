"""What-if transforms, the stream critical path and `ironlaw compare`.

Small hand-built graphs on a hand-made device are checked against arithmetic done by hand; the
built-in workloads reproduce the textbook's examples (sparsity both ways, int8 weights).
"""
import math

import numpy as np
import pytest

from ironlaw.law import critical_path as cpm
from ironlaw.machine import hardware
from ironlaw.law import law
from ironlaw.models import whatif, workloads
from ironlaw.core.errors import IronlawError
from ironlaw.core.graph import Graph, Op
from ironlaw.models.whatif.compare import compare

S = "estimate: test device"


def device(sparse=True, **over):
    d = {
        "schema": "ironlaw.hardware/1", "name": "toy", "title": "toy device", "kind": "gpu",
        "compute": {"bf16": {"peak_flops": 100e12, "source": S}, "int8": {"peak_flops": 200e12, "source": S}},
        "vector": {"peak_flops": 10e12, "source": S},
        "memory": [
            {"name": "sram", "role": "cache", "capacity_bytes": 1e6, "bw_Bps": 10e12, "source": S},
            {"name": "hbm", "role": "device", "capacity_bytes": 100e9, "bw_Bps": 1e12, "source": S},
            {"name": "host", "role": "host", "capacity_bytes": 1000e9, "bw_Bps": 10e9, "source": S},
        ],
        "latency": {"op_s": 1e-6, "source": S},
        "efficiency": {"matmul": 0.5, "other": 0.25, "memory": 1.0, "source": S},
        "features": {"sparsity_2_4": sparse, "source": S},
    }
    d.update(over)
    return hardware.parse_hardware(d, "toy")


def gemv(k=8192, n=8192, tokens=1):
    """y = x·W for ``tokens`` rows, bf16: weights k·n·2 bytes."""
    w = k * n * 2.0
    op = Op("proj", "matmul", flops=2.0 * tokens * k * n,
            bytes={"weights": w, "activations": tokens * (k + n) * 2.0}, bytes_written=tokens * n * 2.0)
    return Graph("toy", "infer", "bf16", [op], footprint={"weights": w, "activations": tokens * (k + n) * 2.0})


def builtin(spec, **kw):
    hw = hardware.get(kw.pop("on", "h100"))
    g = workloads.resolve(workloads.Request(spec, device="cuda", **kw))
    return law.predict(g, hw)


# ---------------------------------------------------------------- parsing and bad input
def test_parse_steps_and_parameters():
    steps = whatif.parse("sparsity=0.9,format=bitmap; quant=int8,target=weights+activations")
    assert [s.transform.name for s in steps] == ["sparsity", "quant"]
    assert steps[0].params["sparsity"] == 0.9 and steps[0].params["format"] == "bitmap"
    assert steps[1].params["target"] == {"weights", "activations"}
    assert whatif.parse("flash-attention")[0].params == {"on": True}


@pytest.mark.parametrize("text, needle", [
    ("sparsty=0.9", "did you mean: sparsity"),
    ("sparsity=0.9,fromat=csr", "did you mean: format"),
    ("sparsity=0.9,format=coo", "unknown what-if sparsity: format 'coo'"),
    ("sparsity=1.0", "density = 1 − sparsity in (0, 1]"),
    ("sparsity=1.5", "density = 1 − sparsity in (0, 1]"),
    ("sparsity=-0.2", "density = 1 − sparsity in (0, 1]"),
    ("sparsity,density=0", "must be in (0, 1]"),
    ("sparsity,density=1.2", "must be in (0, 1]"),
    ("sparsity=abc", "fraction of zero weights"),
    ("quant=int3", "unknown what-if quant: dtype 'int3'"),
    ("quant=int8,target=weigths", "did you mean: weights"),
    ("batch=0", "must be in [1"),
    ("batch=2.5", "whole number"),
    ("fusion=everything", "unknown what-if fusion: scope"),
    ("flash-attention=maybe", "takes no value"),
    ("", "empty"),
])
def test_bad_what_if_is_one_clear_error(text, needle):
    with pytest.raises(IronlawError) as e:
        whatif.parse(text)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_2_4_needs_the_device_feature():
    g = gemv()
    whatif.apply(g, device(sparse=True), ["sparsity=2:4"])
    with pytest.raises(IronlawError, match="2:4 sparse tensor cores; toy has none"):
        whatif.apply(g, device(sparse=False), ["sparsity=2:4"])
    with pytest.raises(IronlawError, match="t4 has none"):
        whatif.apply(g, hardware.get("t4"), ["sparsity=2:4"])


def test_native_int8_compute_needs_the_device_dtype():
    g = gemv(tokens=4096)
    with pytest.raises(IronlawError, match="a100 has no fp8 matrix unit"):
        whatif.apply(g, hardware.get("a100"), ["quant=fp8,target=weights+activations"])


def test_parallel_degree_on_one_graph_is_tensor_parallel_inference():
    with pytest.raises(IronlawError, match="a plan of many devices, not a what-if on one graph"):
        whatif.apply(gemv(), device(), ["dp=2"])
    # tensor-parallel inference: the per-device graph, with its all-reduces on the network stream
    c = compare(builtin("llama3-70b", phase="decode", batch=1, seq=1024), ["tp=8"])
    assert c.shortens_critical_path and c.after.term("network_s") > 0
    assert "network" in {s.stream for s in c.cp_after.path}
    assert c.cp_after.time_s == pytest.approx(float(c.after.total_s), rel=1e-9)


# ---------------------------------------------------------------- transforms, by hand
def test_weight_only_int8_halves_weight_bytes_and_adds_dequantization():
    hw, g = device(), gemv()
    g2, _ = whatif.apply(g, hw, ["quant=int8"])
    op = g2.ops[0]
    elems = 8192 * 8192
    assert op.bytes["weights"] == pytest.approx(elems * (1.0 + 2.0 / 128))     # int8 + fp16 scale per 128
    assert op.dtype == "bf16"                                                  # compute stays in bf16
    assert op.vector_flops == pytest.approx(2.0 * elems)                       # one dequant per element (M=1)
    assert g2.footprint["weights"] == pytest.approx(elems * (1.0 + 2.0 / 128))
    e0, e1 = law.predict(g, hw), law.predict(g2, hw)
    # bandwidth-bound GEMV: time follows the bytes; dequant (2·elems / 10 TFLOP/s·0.25) hides under them
    assert e1.term("data_s") / e0.term("data_s") == pytest.approx(0.5 * (1 + 2 / 128), rel=1e-3)
    assert e1.term("compute_s") == pytest.approx(2.0 * 8192 * 8192 / 100e12 / 0.5 + 2.0 * elems / (10e12 * 0.25))


@pytest.mark.parametrize("on, batch", [("h100", 1), ("h100", 8), ("b200", 1)])
def test_weight_only_quant_keeps_the_matrix_units_time(on, batch):
    # the calibrated GEMV η grows with M; halving the weight bytes must not read as twice the rows
    hw = hardware.get(on)
    g = workloads.resolve(workloads.Request("llama3-8b", phase="decode", batch=batch, seq=1024, device="cuda"))
    for dtype in ("int8", "int4"):
        g2, _ = whatif.apply(g, hw, [f"quant={dtype},target=weights"])
        e0, e1 = law.predict(g, hw), law.predict(g2, hw)
        dequant = sum(op.vector_flops * op.count for op in g2.ops) - sum(op.vector_flops * op.count for op in g.ops)
        assert dequant > 0
        vector_s = dequant / (hw.vector_flops * hw.eta("elementwise"))
        assert e1.term("compute_s") == pytest.approx(e0.term("compute_s") + vector_s, rel=1e-9), dtype
        assert e1.term("data_s") < 0.6 * e0.term("data_s")


def test_native_int8_runs_at_the_int8_peak():
    hw, g = device(), gemv(tokens=65536)                                      # compute-bound GEMM
    g2, _ = whatif.apply(g, hw, ["quant=int8,target=weights+activations"])
    assert g2.ops[0].dtype == "int8" and g2.ops[0].vector_flops == 0
    e0, e1 = law.predict(g, hw), law.predict(g2, hw)
    assert e1.term("compute_s") == pytest.approx(e0.term("compute_s") / 2)    # 200 vs 100 TFLOP/s


def test_unstructured_csr_and_bitmap_bytes_and_vector_unit_rate():
    hw, g = device(), gemv()
    e = 8192 * 8192
    csr, _ = whatif.apply(g, hw, ["sparsity=0.9,format=csr"])
    bmp, _ = whatif.apply(g, hw, ["sparsity=0.9,format=bitmap,index=int16"])
    assert csr.ops[0].bytes["weights"] == pytest.approx(0.1 * e * 2 + 0.1 * e * 4 + (8192 + 1) * 4, rel=1e-6)
    assert bmp.ops[0].bytes["weights"] == pytest.approx(0.1 * e * 2 + e / 8)
    op = csr.ops[0]
    assert op.flops == 0 and op.vector_flops == pytest.approx(0.1 * 2.0 * e)
    est = law.predict(csr, hw)
    # vector unit 10 TFLOP/s × 'other' efficiency 0.25 × irregular-access factor 0.5
    assert est.term("compute_s") == pytest.approx(0.1 * 2.0 * e / (10e12 * 0.25 * 0.5))
    assert csr.flops == pytest.approx(0.1 * g.flops)


def test_structured_2_4_halves_flops_at_the_dense_peak():
    hw, g = device(), gemv(tokens=65536)
    g2, _ = whatif.apply(g, hw, ["sparsity=2:4"])
    e = 8192 * 8192
    assert g2.ops[0].flops == pytest.approx(g.ops[0].flops / 2)
    assert g2.ops[0].bytes["weights"] == pytest.approx(0.5 * e * 2 + 0.5 * e * 0.25)   # values + 2-bit metadata
    assert law.predict(g2, hw).term("compute_s") == pytest.approx(law.predict(g, hw).term("compute_s") / 2, rel=1e-6)


def test_sparsity_and_quant_compose_in_either_order():
    hw, g = device(), gemv()
    a, _ = whatif.apply(g, hw, ["sparsity=0.5", "quant=int8"])
    b, _ = whatif.apply(g, hw, ["quant=int8", "sparsity=0.5"])
    assert a.ops[0].bytes["weights"] == pytest.approx(b.ops[0].bytes["weights"])
    assert a.ops[0].vector_flops == pytest.approx(b.ops[0].vector_flops)
    assert a.meta["whatif"] == ["sparsity=0.5", "quant=int8"]
    with pytest.raises(IronlawError, match="both set sparsity"):
        whatif.apply(g, hw, ["sparsity=0.5; sparsity=0.5"])


def test_elementwise_fusion_removes_launches_and_the_intermediate_tensor():
    hw = device()
    t, n = 4096, 4096
    mm = Op("proj", "matmul", flops=2.0 * t * n * n, bytes={"weights": n * n * 2.0, "activations": 2 * t * n * 2.0},
            bytes_written=t * n * 2.0)
    add = Op("residual", "elementwise", flops=t * n, bytes={"activations": 3 * t * n * 2.0}, bytes_written=t * n * 2.0)
    act = Op("act", "elementwise", flops=8.0 * t * n, bytes={"activations": 2 * t * n * 2.0}, bytes_written=t * n * 2.0)
    g = Graph("toy", "infer", "bf16", [mm, add, act])
    g2, _ = whatif.apply(g, hw, ["fusion=elementwise"])
    assert [op.name for op in g2.ops] == ["proj+residual+act"]
    assert g2.flops == pytest.approx(g.flops)                                 # work is kept …
    # … the residual is still read (one tensor); the two intermediates are neither written nor read
    assert g2.ops[0].bytes["activations"] == pytest.approx(2 * t * n * 2.0 + t * n * 2.0)
    e0, e1 = law.predict(g, hw), law.predict(g2, hw)
    assert e1.term("latency_s") == pytest.approx(1e-6)
    assert e1.time_s < e0.time_s


def test_eager_then_flash_attention_round_trip_on_llama_prefill():
    hw = hardware.get("h100")
    g = workloads.resolve(workloads.Request("llama3-8b", phase="prefill", batch=1, seq=4096, device="cuda"))
    eager, _ = whatif.apply(g, hw, ["eager-attention"])
    flash, _ = whatif.apply(eager, hw, ["flash-attention"])
    t0, te, tf = (law.predict(x, hw).time_s for x in (g, eager, flash))
    assert te > t0                                              # the score matrix costs traffic and launches
    # score matrix: heads × every (query, key) pair — eager computes the masked half too — written by QKᵀ,
    # read+written by softmax, read by ·V (bf16); flash-attention goes back to the causal pairs
    pairs = 4096 * 4096
    added = sum(op.total_bytes * op.count for op in eager.ops) - sum(op.total_bytes * op.count for op in g.ops)
    assert added == pytest.approx(32 * 32 * pairs * 4 * 2.0, rel=1e-6)
    assert sum(op.total_bytes * op.count for op in flash.ops) == pytest.approx(sum(op.total_bytes * op.count for op in g.ops))
    assert tf == pytest.approx(t0, rel=0.01)
    g2, _ = whatif.apply(g, hw, ["flash-attention"])            # already FlashAttention-style: says so
    assert any("already" in n for n in g2.meta["notes"])
    with pytest.raises(IronlawError, match="has no attention"):
        whatif.apply(gemv(), hw, ["flash-attention"])


def test_eager_attention_in_training_is_eager_both_ways():
    """GPT-2 training (attn_pdrop 0.1): eager attention runs QKᵀ, softmax, dropout on P, ·V forward and
    their eager backward (·V's and QKᵀ's two GEMMs each: 2× the forward GEMM FLOPs, not FlashAttention's
    2.5× with the recompute); the backward keeps P, P' and the mask: Korthikanti et al. 2022's 5·a·s²·b
    bytes per layer (16-bit). flash-attention undoes it exactly, footprint included."""
    hw = hardware.get("a100")
    b, s, a, L = 4, 1024, 12, 12
    g = workloads.resolve(workloads.Request("gpt2", phase="train", batch=b, seq=s, device="cuda"))
    eager, _ = whatif.apply(g, hw, ["eager-attention"])
    names = [op.name for op in eager.ops if op.name.startswith("attention")]
    assert names == ["attention.qk", "attention.softmax", "attention.dropout", "attention.av", "attention.av.backward",
                     "attention.dropout.backward", "attention.softmax.backward", "attention.qk.backward"]
    by = {op.name: op for op in eager.ops}
    fwd_gemm = by["attention.qk"].flops + by["attention.av"].flops
    assert by["attention.qk.backward"].flops + by["attention.av.backward"].flops == pytest.approx(2 * fwd_gemm)
    assert fwd_gemm == pytest.approx(2 * 2 * 64 * a * b * s * s)              # every pair, both GEMMs
    added = eager.footprint["activations"] - g.footprint["activations"]
    assert added == pytest.approx(L * 5 * a * s * s * b)
    assert by["attention.dropout"].bytes["activations"] == pytest.approx(a * b * s * s * (2 + 2 + 1))
    flash, _ = whatif.apply(eager, hw, ["flash-attention"])
    assert [op.name for op in flash.ops] == [op.name for op in g.ops]
    assert flash.footprint == pytest.approx(g.footprint)
    assert law.predict(flash, hw).time_s == pytest.approx(law.predict(g, hw).time_s, rel=1e-12)
    assert law.predict(eager, hw).time_s > 1.3 * law.predict(g, hw).time_s
    # no attention dropout (Llama): P alone is kept, 2·a·s²·b per layer; and TP splits the s² ops by heads
    g = workloads.resolve(workloads.Request("llama3-8b", phase="train", batch=1, seq=1024, device="cuda"))
    eager, _ = whatif.apply(g, hw, ["eager-attention"])
    assert not any(op.name.startswith("attention.dropout") for op in eager.ops)
    assert eager.footprint["activations"] - g.footprint["activations"] == pytest.approx(32 * 2 * 32 * 1024 * 1024)
    from ironlaw.models import parallel
    sh = {op.name: op for op in parallel.tp_shard(eager, 4).ops}
    assert sh["attention.softmax.backward"].flops == pytest.approx(
        {op.name: op for op in eager.ops}["attention.softmax.backward"].flops / 4)


def test_full_recompute_costs_a_forward_pass_and_frees_activations():
    hw = hardware.get("h100")
    g = workloads.resolve(workloads.Request("llama3-8b", phase="train", batch=1, seq=2048, device="cuda"))
    g2, _ = whatif.apply(g, hw, ["recompute=full"])
    fwd = sum((op.flops + op.vector_flops) * op.count for op in g.ops if not op.name.endswith(".backward") and op.count > 1)
    assert g2.flops - g.flops == pytest.approx(fwd)
    # 6·N·tokens → about 8·N·tokens (the layers are ~94% of Llama-3-8B's parameters)
    assert 1.25 < g2.flops / g.flops < 1.34
    assert g2.footprint["activations"] < g.footprint["activations"] / 5
    with pytest.raises(IronlawError, match="training graphs"):
        whatif.apply(gemv(), hw, ["recompute=full"])


def test_batch_and_hardware_steps_equal_a_fresh_prediction():
    hw = hardware.get("h100")
    g = workloads.resolve(workloads.Request("llama3-8b", phase="decode", batch=1, seq=1024, device="cuda"))
    g2, hw2 = whatif.apply(g, hw, ["hardware=b200", "batch=64"])
    fresh = builtin("llama3-8b", on="b200", phase="decode", batch=64, seq=1024)
    assert hw2.name == "b200"
    assert law.predict(g2, hw2).time_s == pytest.approx(fresh.time_s, rel=1e-12)
    with pytest.raises(IronlawError, match="has no batch"):
        whatif.apply(workloads.resolve(workloads.Request("gemm:64,64,64")), hw, ["batch=4"])


def test_identity_steps_change_nothing():
    hw = hardware.get("h100")
    g = workloads.resolve(workloads.Request("llama3-8b", phase="decode", batch=4, seq=512, device="cuda"))
    t0 = law.predict(g, hw).op_time_s
    for steps in ([], ["quant=bf16"], ["batch=4"], ["hardware=h100"]):
        g2, hw2 = whatif.apply(g, hw, steps)
        assert np.array_equal(law.predict(g2, hw2).op_time_s, t0), steps


# ---------------------------------------------------------------- the textbook's examples
def test_sparsity_on_compute_heavy_resnet50_training_does_not_pay():
    before = builtin("resnet50", phase="train", batch=256)
    c = compare(before, ["sparsity=0.9,format=csr"])
    vol = c.volumes()
    assert vol["O"][1] < 0.25 * vol["O"][0]                    # O falls (convs are ~all of the FLOPs) …
    assert c.index_bytes() > 0                                 # … index bytes join D_vol …
    assert not c.shortens_critical_path                        # … and the vector-unit kernels lose
    assert c.speedup < 1.0
    assert "lengthens the critical path" in c.verdict() and "vector unit" in c.verdict()


def test_sparsity_on_bandwidth_bound_llama_decode_index_traffic_eats_the_saving():
    before = builtin("llama3-8b", phase="decode", batch=1, seq=1024)
    c = compare(before, ["sparsity=0.9,format=csr"])
    b, a = c.volumes()["D_vol"]
    values_only = a - c.index_bytes()
    assert c.shortens_critical_path
    assert c.index_bytes() > 0.5 * (a - values_only + values_only * 0)      # indices: 4 B per nonzero vs 2 B of value
    assert c.index_bytes() / a > 0.6                                         # most of what is still moved is index
    assert (b - a) / b < 0.75 < (b - values_only) / b                        # the saving it would have had is gone
    assert "index traffic" in c.verdict() and before.bottleneck()["resource"] == "bandwidth"


def test_int8_weights_halve_llama_decode_traffic_but_not_resnet_training():
    llama = compare(builtin("llama3-8b", phase="decode", batch=1, seq=1024), ["quant=int8,target=weights"])
    assert llama.after.term("data_s") / llama.before.term("data_s") == pytest.approx(0.51, abs=0.03)
    assert llama.speedup > 1.4                                 # the rest is the fixed per-op launch cost
    assert llama.before.bottleneck()["resource"] == llama.after.bottleneck()["resource"] == "bandwidth"
    resnet = compare(builtin("resnet50", phase="train", batch=256), ["quant=int8,target=weights"])
    assert resnet.speedup < 1.05                               # weights are a sliver of the bytes; compute stays bf16
    native = compare(builtin("resnet50", phase="train", batch=256), ["quant=int8,target=weights+activations"])
    peak = hardware.get("h100")
    assert native.speedup <= peak.peak("int8") / peak.peak("bf16") + 1e-9    # bounded by the compute rate


# ---------------------------------------------------------------- the critical path
@pytest.mark.parametrize("spec, kw", [
    ("llama3-8b", dict(phase="decode", batch=1, seq=1024)),
    ("resnet50", dict(phase="train", batch=64)),
    ("llama3-70b", dict(phase="decode", batch=1, seq=1024)),          # weights spill to host memory
])
def test_default_schedule_equals_the_law(spec, kw):
    est = builtin(spec, **kw)
    cp = cpm.from_estimate(est)
    assert cp.time_s == pytest.approx(float(est.total_s), rel=1e-9)
    assert cp.path and cp.path[-1].end_s == pytest.approx(cp.time_s)


def test_prefetch_hides_copies_only_behind_compute():
    # A: 1 ms of compute, nothing to copy; B: 1 ms copy from host, 0.1 ms compute — repeated
    tasks = []
    for r in range(5):
        tasks += [cpm.Task("A", compute_s=1e-3, repeat=r), cpm.Task("B", spill_s=1e-3, compute_s=1e-4, repeat=r)]
    law_cp, pre = cpm.schedule(tasks), cpm.schedule(tasks, prefetch_depth=1)
    assert law_cp.time_s == pytest.approx(5 * 2e-3)
    assert pre.time_s == pytest.approx(5 * 1.1e-3)                 # each copy hides behind the A before it
    assert {s.stream for s in pre.path} == {"compute"}
    # nothing to hide behind: every op is copy-bound, the copy stream is the path
    busy = [cpm.Task("B", spill_s=1e-3, compute_s=1e-4, repeat=r) for r in range(5)]
    assert cpm.schedule(busy, prefetch_depth=2).time_s == pytest.approx(cpm.schedule(busy).time_s)
    assert "memory" in {s.stream for s in cpm.schedule(busy, prefetch_depth=2).path}


def test_gradient_all_reduce_overlaps_the_backward_only_as_far_as_it_hides():
    def step(ar_s):
        t = [cpm.Task("fwd", compute_s=2e-3)]
        for i in range(4):
            t += [cpm.Task(f"bwd{i}", compute_s=1e-3), cpm.Task(f"allreduce{i}", network_s=ar_s, collective=True,
                                                              grad_sync=True)]
        return t + [cpm.Task("adamw", local_s=2e-4, waits_for_grads=True)]
    serial, over = cpm.schedule(step(5e-4)), cpm.schedule(step(5e-4), overlap_comm=True)
    assert serial.time_s == pytest.approx(2e-3 + 4 * 1.5e-3 + 2e-4)
    assert over.time_s == pytest.approx(2e-3 + 4e-3 + 5e-4 + 2e-4)   # only the last bucket is exposed
    slow = cpm.schedule(step(3e-3), overlap_comm=True)               # network-bound: the path runs on the network
    assert slow.time_s == pytest.approx(2e-3 + 1e-3 + 4 * 3e-3 + 2e-4)
    assert [s.stream for s in slow.path].count("network") == 4


def test_prefetch_what_if_on_a_spilled_workload_reports_the_path():
    before = builtin("llama3-70b", phase="decode", batch=1, seq=1024)
    c = compare(before, ["prefetch=2"])
    assert c.cp_after.time_s <= c.cp_before.time_s
    assert c.cp_after.busy_s["memory"] > 0.95 * c.cp_after.time_s    # the PCIe copy stream is saturated …
    assert c.speedup < 1.05                                         # … so prefetch hides next to nothing
    d = c.to_dict()
    assert d["critical_path_after"]["path"][0]["stream"] in ("compute", "memory")


# ---------------------------------------------------------------- the CLI
def test_cli_compare_json_document(cli):
    r = cli("compare", "llama3-8b", "--on", "h100", "--phase", "decode", "--seq", "1024",
            "--what-if", "quant=int8,target=weights", "--format", "json")
    assert r.rc == 0, r.err
    d = r.json()
    assert d["schema"] == "ironlaw.compare/1"
    assert d["before"]["schema"] == d["after"]["schema"] == "ironlaw.estimate/1"
    assert d["speedup"] == pytest.approx(d["time_before_s"] / d["time_after_s"])
    assert d["shortens_critical_path"] is True
    assert d["bottleneck_before"]["resource"] == "bandwidth"
    assert d["verdict"].startswith("shortens the critical path")


def test_cli_compare_text_and_vs_hardware(cli):
    r = cli("compare", "resnet50", "--phase", "train", "--batch", "256", "--vs-hardware", "b200")
    assert r.rc == 0, r.err
    assert "verdict:" in r.out and "b200" in r.out and "critical path" in r.out


@pytest.mark.parametrize("args, needle", [
    (["--what-if", "sparsty=0.9"], "did you mean: sparsity"),
    (["--what-if", "sparsity=1.0"], "(0, 1]"),
    (["--on", "t4", "--dtype", "fp16", "--what-if", "sparsity=2:4"], "t4 has none"),
    ([], "needs --what-if"),
])
def test_cli_compare_bad_input_exit_2(cli, args, needle):
    r = cli("compare", "llama3-8b", "--phase", "decode", *args)
    assert r.rc == 2 and needle in r.err and r.err.count("\n") == 1
