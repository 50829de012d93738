"""One buffer larger than the last cache level that cold rows carve their rotating operand copies from.

A cold row (a GEMM's weights, attention's Q, K and V or its KV cache) takes the next copy each call, so
its operands come from main memory every time, as a model's do. The buffer is allocated and filled once
per dtype and shared by every cold row of a probe run: a pool per row would cost a fill of twice the last
cache level for each row (on a CPU with 480 MB of L3, 960 MB each).
"""
from __future__ import annotations

import itertools
from typing import Callable


class ColdPool:
    """``nbytes`` of operand copies for cold rows, allocated on first use (per dtype, the last one kept)."""

    def __init__(self, nbytes: float, device: str = "cpu"):
        self.nbytes, self.device, self._buf = float(nbytes), device, None

    def copies(self, shapes: list[tuple[int, ...]], dtype) -> list[tuple]:
        """As many copies of a set of tensors of ``shapes`` as the pool holds (at least 2): per copy a tuple of
        contiguous views into the one buffer, all of them distinct memory."""
        import torch
        elem = torch.tensor([], dtype=dtype).element_size()
        sizes = [int(torch.Size(s).numel()) for s in shapes]
        per = sum(sizes)
        count = max(2, int(self.nbytes // (per * elem)))
        if self._buf is None or self._buf.dtype != dtype or self._buf.numel() < per * count:
            self._buf = None                     # the old one goes before the new one is allocated
            self._buf = torch.empty(max(per * count, int(self.nbytes // elem)), device=self.device,
                                    dtype=dtype).uniform_(-1.0, 1.0)
        out = []
        for i in range(count):
            start, views = i * per, []
            for shape, n in zip(shapes, sizes):
                views.append(self._buf[start:start + n].view(shape))
                start += n
            out.append(tuple(views))
        return out

    def cycle(self, shapes: list[tuple[int, ...]], dtype) -> Callable[[], tuple]:
        """A function that returns the next copy of ``copies(shapes, dtype)`` each call, round and round."""
        it = itertools.cycle(self.copies(shapes, dtype))
        return lambda: next(it)

    def release(self) -> None:
        """Hand the buffer back (the next ``copies`` allocates it again)."""
        self._buf = None
