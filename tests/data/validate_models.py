"""Tiny factories for tests/test_validate.py (py: specs)."""
import torch
from torch import nn


def tiny(batch: int = 2):
    """Two linears and a GELU: a few ops, a few milliseconds on any CPU."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 16)), (torch.randn(batch, 64),)


def huge(batch: int = 1):
    """~120 GB of fp32 weights: only ever safe to build on meta. Built anywhere else it refuses to
    allocate (so a validate that builds it for real fails loudly instead of swapping the machine)."""
    if torch.empty(0).device.type != "meta":
        raise RuntimeError("huge() was asked to allocate real weights")
    return nn.Sequential(*[nn.Linear(100_000, 100_000) for _ in range(3)]), (torch.randn(batch, 100_000),)


class _Wide(nn.Module):
    """Widens its input to 64 MiB of fp32 and reduces it: an intermediate above glibc's largest mmap
    threshold (32 MiB), so the allocator takes it fresh from the OS, and gives it back, on every run."""

    def forward(self, x):
        return (x.expand(x.shape[0], 16 * 2**20 // x.shape[0]) * 2.0).sum(dim=1)


def wide(batch: int = 1):
    return _Wide(), (torch.randn(batch, 1),)
