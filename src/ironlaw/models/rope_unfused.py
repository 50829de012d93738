"""Megatron-Core's rotary embedding under YaRN scaling: the unfused chain of elementwise kernels in training.

Megatron-Core core_v0.15.0 (Megatron-LM 0d8e0714, pinned by Megatron-Bridge v0.2.0 — NeMo 25.11) applies RoPE to
the query and the key in ``Attention.forward`` with ``mscale = _yarn_get_concentration_factor_from_config(config)``
whenever the config carries ``yarn_rotary_scaling_factor`` (the GPT-OSS provider: 32, ``yarn_mscale`` unset, so
0.1·ln 32 + 1 = 1.347; ``hfconfig.yarn_concentration``). ``rope_utils.apply_rotary_pos_emb`` sends any
``mscale != 1`` to the unfused path even with ``apply_rope_fusion`` on ("mscale … is not supported by TE's fused
RoPE. Using unfused implementation."), ``_apply_rotary_pos_emb_bshd``:

    t * cos_ + _rotate_half(t) * sin_, then torch.cat((t, t_pass))      # _rotate_half: cat((-x2, x1))

Per element of q and k (T: their bytes), forward: the two products, the negation of half, the rotate's cat, the
sum and the final cat read 6.5·T and write 5.5·T (the fused kernel: T and T). Autograd's backward: grad·sin,
the negation's backward on half, the chunk's backward (a cat), grad·cos, the sum of the two paths into t, and the
slice's backward (zeros, then the copy) read 6.5·T and write 6.5·T. cos and sin of the [seq, dim] frequencies are
negligible. DeepSeek-V3's YaRN (mscale = mscale_all_dim = 1) and models without YaRN keep the fused kernel.
"""
from __future__ import annotations

from dataclasses import replace

from ..core import passes
from ..core.graph import Graph, Op, dtype_bytes

ROPE = "attn_rope"
FWD = (6.5, 5.5)           # × the bytes of q and k: (read, written)
BWD = (6.5, 6.5)
FLOPS = 3.5                # per element, each pass: two products, the sum, the negation of half


def unfused(meta: dict) -> bool:
    """Whether Megatron-Core runs the model's RoPE unfused (a YaRN concentration factor other than 1)."""
    return abs(meta.get("rope_mscale", 1.0) - 1.0) > 1e-9


def with_unfused_rope(sg: Graph) -> Graph:
    """The per-device graph ``sg`` with its rotary ops (``attn_rope`` and its backward) priced as the unfused
    chain; ``sg`` itself when the model's RoPE runs fused."""
    if not unfused(sg.meta):
        return sg
    qk = {op.name: op.bytes_written for op in sg.ops if op.name == ROPE}
    out = [_chain(op, qk[ROPE]) if passes.forward_of(op.name) == ROPE and ROPE in qk else op for op in sg.ops]
    return Graph(sg.name, sg.phase, sg.dtype, out, footprint=dict(sg.footprint), meta=dict(sg.meta),
                 uncounted_ops=dict(sg.uncounted_ops))


def _chain(op: Op, t: float) -> Op:
    """``op`` (the fused rotary of q and k, forward or backward) as the unfused chain over ``t`` bytes."""
    reads, writes = BWD if passes.of(op.name) is passes.Pass.BACKWARD else FWD
    attrs = {k: v for k, v in op.attrs.items() if k != "kernel"}       # not the fused kernel's row any more
    return replace(op, flops=FLOPS * t / dtype_bytes(op.dtype), bytes={"activations": (reads + writes) * t},
                   bytes_written=writes * t, shapes=f"{op.shapes} (unfused: YaRN mscale)", attrs=attrs)
