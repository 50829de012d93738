"""Fused attention (``scaled_dot_product_attention``) at a few prefill and decode shapes.

The model runs' own attention calls come in a few shapes (each repeated per layer), too few to pin the
attention shape model's five parameters; these rows add prefill shapes (causal, as a decoder; full, as an
encoder) and decode shapes (one query against a cache), none of them a shape of the accuracy benchmark's
cases.

Every row reads its inputs cold, from main memory: each call takes the next copy of Q, K and V (a decode
row: of K and V, its cache) from a pool larger than the last cache level (``pool.ColdPool``, one buffer for
every cold row of a probe run), as a model's attention does: timed hot, the same tensors every call run at
the cache's rate, faster than any model's own calls (benchmarks/accuracy.py shows the decode cases).

FLOPs and bytes are not computed here: the capture recorder records the call on the same tensors, so
a row carries exactly what a captured model's attention op would (FLOPs from torch's own formula, for a
causal mask over the pairs the kernel computes — on a CPU every pair below 512 keys; bytes per class, K
and V of a decode row as KV cache).
"""
from __future__ import annotations

from ...core.errors import IronlawError
from ...core.graph import TORCH_NAMES
from .pool import ColdPool
from .timing import Budget, stable

# (batch, heads, query length, key/value length, head dim, causal); the first rows are the quick grid
GRID = {"fp32": [(1, 12, 192, 192, 64, True), (6, 12, 1, 160, 64, False), (3, 8, 80, 80, 64, False),
                 (1, 12, 384, 384, 64, True), (1, 12, 1, 768, 64, False), (12, 12, 1, 48, 64, False),
                 (2, 8, 160, 160, 64, False)]}
QUICK = {"fp32": 2}


def shapes(dtype: str, quick: bool) -> list[tuple[int, int, int, int, int, bool]]:
    grid = GRID.get(dtype, [])
    return grid[:QUICK.get(dtype, 0)] if quick else grid


def _module(causal: bool):
    import torch
    import torch.nn.functional as F

    class SDPA(torch.nn.Module):
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return SDPA()


def measure(dtype: str, b: int, h: int, sq: int, skv: int, d: int, causal: bool, budget: Budget,
            device: str = "cpu", pool: ColdPool | None = None) -> dict:
    """One SDPA call timed; with a ``pool``, on other inputs each call (Q, K and V; a decode row's K and V)."""
    import torch
    from ...models.capture import recorder
    dt = getattr(torch, TORCH_NAMES[dtype])
    q = torch.randn(b, h, sq, d, device=device, dtype=dt)
    k = torch.randn(b, h, skv, d, device=device, dtype=dt)
    v = torch.randn(b, h, skv, d, device=device, dtype=dt)
    mod = _module(causal)
    decode = sq == 1
    recs = recorder.capture(mod, (q, k, v), real=True, device=device, kv_cache=(k, v) if decode else None).records
    att = [r for r in recs if r.kind == "attention"]
    if len(att) != 1:
        raise IronlawError(f"probe: scaled_dot_product_attention ran {len(att)} attention kernels here, expected one")
    byts: dict[str, float] = {}
    for cls_bytes in (att[0].bytes_read, att[0].bytes_written):
        for c, n in cls_bytes.items():
            byts[c] = byts.get(c, 0.0) + float(n)
    if pool is not None:
        inputs = pool.cycle([(b, h, skv, d)] * 2 if decode else [(b, h, sq, d), (b, h, skv, d), (b, h, skv, d)], dt)

        def call():
            return mod(q, *inputs()) if decode else mod(*inputs())
    else:
        def call():
            return mod(q, k, v)
    with torch.no_grad():
        st = stable(call, budget, device)
    row = {"dtype": dtype, "batch": b, "heads": h, "q_len": sq, "kv_len": skv, "head_dim": d, "causal": causal,
           "time_s": st.time_s, "cv": st.cv, "flops": float(att[0].flops), "act_bytes": byts.get("activations", 0.0),
           "_ok": st.ok, "_tries": st.tries}
    if byts.get("kv_cache"):
        row["kv_bytes"] = byts["kv_cache"]
    if pool is not None:
        row["inputs"] = "cold"
    return row
