"""ResNet-50 predictions against NVIDIA's published PyTorch throughput (DeepLearningExamples).

These are eager PyTorch runs (cuDNN convs, separate BN/ReLU kernels), which is what the built-in
resnet50 graph describes. They are the outside evidence that ResNet-50 training at batch 256 on an
A100 is bound by HBM traffic of BN/ReLU/1x1 convs rather than by tensor-core compute.
"""
import csv
from pathlib import Path

import pytest

import ironlaw

DATA = Path(__file__).parent / "data" / "nvidia_dle_resnet50_pytorch.csv"
ROWS = [r for r in csv.DictReader(l for l in DATA.read_text().splitlines() if not l.startswith("#"))]
MIXED = [r for r in ROWS if r["precision"] == "mixed"]


@pytest.mark.parametrize("row", MIXED, ids=[f"{r['hardware']}-{r['phase']}-b{r['batch']}" for r in MIXED])
def test_mixed_precision_throughput_within_15_percent(row):
    est = ironlaw.analyze("resnet50", on=row["hardware"], phase=row["phase"], batch=int(row["batch"]), dtype="fp16")
    predicted = int(row["batch"]) / est.time_s
    measured = float(row["throughput_img_s"])
    assert predicted == pytest.approx(measured, rel=0.15), (predicted, measured)


def test_a100_training_is_bandwidth_bound_and_faster_with_more_bandwidth():
    est = ironlaw.analyze("resnet50", on="a100", phase="train", batch=256, dtype="fp16")
    assert est.bottleneck()["resource"] == "bandwidth"
    # the H100 has 1.64x the A100's HBM bandwidth and 3.2x its tensor peak: a bandwidth-bound step
    # should speed up by roughly the bandwidth ratio, not the compute ratio
    h100 = ironlaw.analyze("resnet50", on="h100", phase="train", batch=256, dtype="fp16")
    assert 1.4 < est.time_s / h100.time_s < 2.2


def test_tf32_training_is_known_to_be_optimistic():
    # documented gap: TF32 convs on A100 reach far less of the TF32 peak than the catalog's default
    # efficiency assumes; the prediction is faster than measured (1.46x). If this ever lands within
    # 15%, promote the row to the test above.
    row = next(r for r in ROWS if r["precision"] == "tf32")
    est = ironlaw.analyze("resnet50", on="a100", phase="train", batch=256, dtype="tf32")
    ratio = (256 / est.time_s) / float(row["throughput_img_s"])
    assert 1.15 < ratio < 2.0, ratio
