"""A small MLP for the ironlaw ``py:`` spec: ``ironlaw analyze py:examples/mlp.py:mlp --on h100``."""
import torch
from torch import nn


def mlp(batch: int = 64, width: int = 1024, depth: int = 4):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.GELU()]
    return nn.Sequential(*layers, nn.Linear(width, 10)), (torch.randn(batch, width),)
