"""The analytic ResNet family against torchvision's and timm's published counts, and its place on the
silicon contract (ResNet-50 at batch 1 on an H100 is latency-bound)."""
import csv
from pathlib import Path

import numpy as np
import pytest

import ironlaw
from ironlaw.machine import hardware
from ironlaw.core.errors import IronlawError
from ironlaw.models.workloads import Request, resolve

DATA = Path(__file__).parent / "data"
NAMES = {"ResNet18_Weights": "resnet18", "ResNet34_Weights": "resnet34", "ResNet50_Weights": "resnet50",
         "ResNet101_Weights": "resnet101", "ResNet152_Weights": "resnet152"}


def _rows(name):
    with open(DATA / name) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


TORCHVISION = {NAMES[r["enum"]]: (int(r["num_params"]), float(r["_ops_GFLOPS"])) for r in _rows("torchvision_resnet_meta.csv")}
TIMM = [(r["model"], int(r["infer_img_size"]), float(r["infer_gmacs"]), float(r["infer_macts"]))
        for r in _rows("timm_resnet_gmacs.csv")]


def graph(spec, **kw):
    opts = kw.pop("options", {})
    return resolve(Request(spec, options=opts, **kw))


def conv_fc_macs(g):
    return sum(op.flops * op.count for op in g.ops if op.kind in ("conv", "matmul")) / 2.0


def test_reference_covers_the_whole_family():
    assert set(TORCHVISION) == {"resnet18", "resnet34", "resnet50", "resnet101", "resnet152"}


@pytest.mark.parametrize("arch", sorted(TORCHVISION))
def test_params_exact_and_macs_within_1pct_of_torchvision(arch):
    params, gmacs = TORCHVISION[arch]
    g = graph(arch)
    assert g.meta["params"] == params
    assert conv_fc_macs(g) / 1e9 == pytest.approx(gmacs, rel=0.01)
    # FLOPs are not MACs: the whole forward is about twice torchvision's _ops (norm/relu/pool add < 3%)
    assert g.flops == pytest.approx(2 * gmacs * 1e9, rel=0.03)
    assert g.meta["model_flops"] == pytest.approx(g.flops)


def test_resnet50_literal_params():
    assert graph("resnet50").meta["params"] == 25_557_032


@pytest.mark.parametrize("arch,image,gmacs,macts", TIMM)
def test_other_image_sizes_and_activation_counts_match_timm(arch, image, gmacs, macts):
    g = graph(arch, dtype="fp32", options={"image": image})
    # timm counts norm/activation MACs too (+0.5% at 224): 1% still separates a wrong spatial size
    assert conv_fc_macs(g) / 1e9 == pytest.approx(gmacs, rel=0.01)
    # timm's infer_macts = output elements of the convs and the fc, per image; ours = bytes written / 4
    outs = sum(op.bytes_written * op.count for op in g.ops if op.kind in ("conv", "matmul")) / 4.0
    assert outs / 1e6 == pytest.approx(macts, rel=0.005, abs=0.006)


def test_op_kinds_and_shared_rows():
    g = graph("resnet50")
    kinds = {op.kind for op in g.ops}
    assert kinds == {"conv", "norm", "elementwise", "pool", "matmul"}
    # torchvision's ResNet-50 forward: 53 convs, 53 BNs, 49 ReLUs, 16 adds, 2 pools, 1 fc = 174 kernels
    assert sum(op.count for op in g.ops if op.kind == "conv") == 53
    assert sum(op.count for op in g.ops if op.kind == "norm") == 53
    assert sum(op.count for op in g.ops if op.name.endswith(("relu", "relu1", "relu2", "relu3"))) == 49
    assert sum(op.count for op in g.ops if op.name.endswith("add")) == 16
    assert sum(op.count for op in g.ops) == 174
    assert len(g.ops) < 174                      # identical blocks share a row


def test_train_is_forward_backward_optimizer():
    gi, gt = graph("resnet50", batch=8), graph("resnet50", batch=8, phase="train")
    macs = TORCHVISION["resnet50"][1] * 1e9
    assert gt.meta["model_flops"] == pytest.approx(3 * 2 * macs * 8, rel=0.01)
    fwd = sum(op.flops * op.count for op in gi.ops)
    # backward = 2x forward for every op (matrix and not), plus one AdamW step
    assert gt.flops == pytest.approx(3 * fwd + 12 * 25_557_032, rel=0.02)
    assert any(op.name == "optimizer.adamw" for op in gt.ops)
    fp = gt.footprint
    assert fp["optimizer"] == 12 * 25_557_032 and fp["weights"] == 2 * 25_557_032
    # saved activations: at least every conv output once (timm: 11.11 M elements per image at 224)
    assert fp["activations"] > 8 * 11.11e6 * 2


def test_dtype_scales_bytes_not_flops():
    a, b = graph("resnet18", batch=4), graph("resnet18", batch=4, dtype="fp32")
    assert a.flops == pytest.approx(b.flops)
    assert b.bytes == pytest.approx(2 * a.bytes)


def test_batch_sweep_is_one_graph_of_arrays():
    batches = np.array([1, 8, 64, 256])
    est = ironlaw.analyze("resnet50", on="h100", batch=batches, phase="train")
    assert est.total_s.shape == (4,)
    for i, b in enumerate(batches):
        one = ironlaw.analyze("resnet50", on="h100", batch=int(b), phase="train")
        assert est.total_s[i] == pytest.approx(one.time_s, rel=1e-12)
    assert np.all(np.diff(est.total_s) > 0)


def test_resnet50_batch1_on_h100_is_latency_bound():
    from ironlaw.machine.calibration import without_calibration     # the datasheet's 5 µs per op, every op
    hw = without_calibration(hardware.get("h100"))
    est = ironlaw.analyze("resnet50", on=hw, batch=1)
    b = est.bottleneck()
    assert b["resource"] == "latency"
    assert est.term("latency_s") == pytest.approx(174 * hw.op_latency_s)
    # the ops' own work: 8.18 GFLOP at the conv peak is ~14 µs, far below 174 launches
    assert est.term("compute_s") < 0.05 * est.term("latency_s")


def test_resnet50_train_b256_compute_term_is_6_macs_per_image_over_peak():
    hw = hardware.get("h100")
    est = ironlaw.analyze("resnet50", on=hw, batch=256, phase="train")
    conv = [r for r in est.rows() if r["kind"] == "conv"]
    macs_conv = TORCHVISION["resnet50"][1] * 1e9 - 2048 * 1000        # torchvision total minus the fc
    assert sum(r["compute_s"] for r in conv) == pytest.approx(6 * macs_conv * 256 / (hw.peak("bf16") * hw.eta("conv")),
                                                               rel=0.01)
    assert est.bottleneck()["resource"] in ("compute", "bandwidth")


def test_resnet50_train_b256_on_h100_is_hbm_bound_not_compute():
    # issue 2 expected 'compute' (the textbook's claim). The per-op law says HBM bandwidth: BN/ReLU/add
    # move ~87 GB per step and the 1x1 convs of layers 1-2 have 51-102 FLOP/B, below the H100 ridge.
    # Outside evidence sides with the law: the same graph predicts NVIDIA's published eager-PyTorch
    # A100 AMP training throughput within 15% (tests/test_resnet_reference.py).
    est = ironlaw.analyze("resnet50", on="h100", batch=256, phase="train")
    b = est.bottleneck()
    assert (b["resource"], b["tier"]) == ("bandwidth", "hbm3")
    assert est.term("data_s") > 2 * est.term("compute_s")


def test_cli_resnet50_batch1_latency(cli):
    r = cli("analyze", "resnet50", "--batch", "1", "--on", "h100", "--format", "json")
    assert r.rc == 0, r.err
    d = r.json()
    assert d["bottleneck"]["resource"] == "latency"
    assert d["workload"]["params"] == 25_557_032
    assert {row["kind"] for row in d["ops"]} <= {"conv", "norm", "elementwise", "pool", "matmul"}


@pytest.mark.parametrize("kw,words", [
    (dict(seq=128), "--seq"),
    (dict(options={"image": 0}), "image"),
    (dict(options={"image": 224.5}), "image"),
    (dict(options={"image": np.array([224, 256])}), "image"),
    (dict(options={"imgsz": 224}), "imgsz"),
    (dict(phase="decode"), "decode"),
    (dict(batch=0), "batch"),
])
def test_bad_input_is_one_clear_error(kw, words):
    with pytest.raises(IronlawError, match=words):
        graph("resnet50", **kw)
