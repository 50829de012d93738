"""A MobileNetV2-style classifier for the ironlaw ``py:`` spec (random weights):
``ironlaw validate mobilenet --on local`` or ``ironlaw analyze py:examples/mobilenet.py:mobilenet_v2 --on h100``.

The architecture of Sandler et al. 2018, "MobileNetV2: Inverted Residuals and Linear Bottlenecks", Table 2:
a 3×3 stem, seventeen inverted residual blocks (1×1 expansion, 3×3 depthwise, 1×1 linear projection, batch
norm, ReLU6, a residual where shapes allow), a 1×1 conv to 1280 channels, global average pooling, a linear
classifier. Written here from the paper's table; 3.5 M parameters and 0.3 G multiply-adds at 224×224.
"""
import torch
from torch import nn

# (expansion t, output channels c, repeats n, first stride s): the paper's Table 2
BLOCKS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


def _conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act: bool = True) -> list:
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return layers + [nn.ReLU6(inplace=True)] if act else layers


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        layers = _conv_bn(cin, hidden, 1) if expand != 1 else []
        layers += _conv_bn(hidden, hidden, 3, stride, groups=hidden) + _conv_bn(hidden, cout, 1, act=False)
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    def __init__(self, classes: int = 1000):
        super().__init__()
        layers, cin = _conv_bn(3, 32, 3, 2), 32
        for t, c, n, s in BLOCKS:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers += _conv_bn(cin, 1280, 1)
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(1280, classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


def mobilenet_v2(batch: int = 1, size: int = 224):
    return MobileNetV2(), (torch.randn(batch, 3, size, size),)
