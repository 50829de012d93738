"""The probe's built-in reference runs: small models that `ironlaw probe` times end to end and per op
(as `ironlaw validate` does) and fits the profile's [calibration] on, so a fresh profile is calibrated
from its first use.

Together they hold the op classes a CPU fit needs beyond the micro-benchmarks:
    decoder prefill   GEMMs at prefill shapes (x @ W, GPT-2's Conv1D layout), causal attention, layer norm,
                      GELU, embedding gathers, the Hugging Face front end's time between ops
    decoder decode    GEMVs streaming the weights (batch 1) and x @ W GEMMs of a few rows streaming them
                      (batch 4: past the library's GEMV path, the weights packed), decode attention against a
                      KV cache
    cnn               dense 7×7 / 3×3 / 1×1 and depthwise convolutions from high resolution and few channels
                      to 4×4 and many, batch norm, ReLU, max and average pooling, the plain-torch front
                      end's time between ops
    mlp               x @ Wᵀ GEMMs (nn.Linear's layout) at a small batch
They are deliberately not the models of ``benchmarks/accuracy.py`` (GPT-2, BERT-Small, ResNets, the
examples' MLP), whose cases then stay never fitted. Weights are random; nothing is downloaded.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
DECODER_CONFIG = HERE / "reference_decoder.json"


@dataclass(frozen=True)
class Reference:
    spec: str                   # a validate spec
    batch: int
    seq: int | None
    phase: str | None
    repeats: int


def references(quick: bool) -> list[Reference]:
    """The runs, cheapest first; ``quick`` keeps one per front end (the framework term needs both) at fewer
    repeats."""
    factory = f"py:{HERE / 'references.py'}"
    if quick:
        return [Reference(f"{factory}:cnn", 1, None, None, 3), Reference(f"hf:{DECODER_CONFIG}", 1, 128, "decode", 3)]
    return [Reference(f"{factory}:cnn", 1, None, None, 5), Reference(f"hf:{DECODER_CONFIG}", 1, 128, "decode", 5),
            Reference(f"hf:{DECODER_CONFIG}", 4, 128, "decode", 5),
            Reference(f"{factory}:mlp", 4, None, None, 7), Reference(f"hf:{DECODER_CONFIG}", 1, 96, "prefill", 3)]


def mlp(batch: int = 4, width: int = 1536, depth: int = 3):
    """nn.Linear (x @ Wᵀ) and ReLU: 7 MB of fp32 weights per layer, past a core's L2."""
    import torch
    from torch import nn
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 16)), (torch.randn(batch, width),)


def cnn(batch: int = 1, size: int = 128):
    """A small image classifier holding the convolution shapes CNNs are made of: a 7×7 stem; an inverted
    residual at high resolution (1×1 from few channels, depthwise 3×3, 1×1 back); max pooling; dense 3×3
    convolutions at 32×32; 1×1 and depthwise stages at 16×16 and 8×8; dense 3×3 convolutions over many channels
    at 4×4 (a late stage's small M); batch norm and ReLU after each convolution; global average pooling; a
    linear head."""
    import torch
    from torch import nn

    def conv(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1):
        return [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout),
                nn.ReLU(inplace=True)]
    layers = [*conv(3, 32, 7, 2), *conv(32, 96, 1), *conv(96, 96, 3, groups=96), *conv(96, 32, 1),
              nn.MaxPool2d(3, 2, 1), *conv(32, 64, 3), *conv(64, 64, 3), *conv(64, 128, 1, 2),
              *conv(128, 128, 3, groups=128), *conv(128, 256, 1),
              *conv(256, 256, 3, 2, groups=256), *conv(256, 256, 1),
              *conv(256, 512, 3, 2), *conv(512, 512, 3),
              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 100)]
    return nn.Sequential(*layers), (torch.randn(batch, 3, size, size),)
