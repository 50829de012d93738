"""What Megatron-Core's ``TEGroupedMLP`` runs eagerly around its grouped GEMMs in training: the clamp of a clamped
GLU's input and the fc2 bias, weighted by each row's routing probability, added outside the GEMM.

Megatron-Core core_v0.15.0 (Megatron-LM 0d8e0714, pinned by Megatron-Bridge v0.2.0 — NeMo 25.11), experts.py and
fusions/fused_bias_geglu.py, for routed experts (gpt-oss: ``add_bias_linear``, ``activation_func_clamp_value``
7.0; the Megatron-Bridge GPT-OSS provider):

- **The clamp** (``weighted_bias_quick_geglu_impl``, before the fused weighted quick-GEGLU): fc1's output U is
  chunked, each half clamped (``x_glu.clamp(max=7)``, ``x_linear.clamp(-7, 7)``) and concatenated again, all
  eager. Forward: two clamps each read and write U/2, the cat reads and writes U (reads 2·U, writes 2·U; 3
  kernels). Autograd's backward: each clamp's ``where`` over its comparisons (PyTorch ``clamp_backward``: ``<=``
  for the first; ``>=``, ``<=``, ``logical_and_`` for the second; bool masks of 1 byte per element) and the
  chunk's backward, a cat of the two gradients (reads 4.5·U, writes 3·U; 7 kernels).
- **The fc2 bias** (``TEGroupedMLP._apply_bias``; fc2 is built with ``skip_bias_add=True``, fc1 keeps its bias in
  Transformer Engine's GEMM epilogue)::

      torch.cat([t + b * p for t, b, p in zip(split(fc2_out, tokens_per_expert), biases,
                                               split(permuted_probs, tokens_per_expert))]).to(fc2_out.dtype)

  Per local expert a ``b * p`` kernel writing a rows × hidden tensor and an add reading two and writing one; the
  cat copies every row once more (with X the bytes of fc2's output: reads 3·X, writes 3·X). With the
  probabilities in the activations' dtype (``moe_router_dtype`` unset, as in the GPT-OSS provider) the ``.to``
  is a no-op. Backward: the cat and the add hand back views and pass the gradient through, the mul computes
  ``grad · p`` summed over the rows (the bias gradient) and ``grad · b`` summed over the hidden axis (the
  probabilities' gradient): reads 4·X, writes 2·X; 4 kernels per local expert.

All memory-bound, priced by the law's data term; the host's launches are ``host.CLAMP`` and ``host.BIAS``; the
clamped copy the fused activation saves for its backward is in the activation footprint
(``workloads.transformer.mlp_elems``).
"""
from __future__ import annotations

from ..core import passes
from ..core.graph import Graph, Op, dtype_bytes

BIAS, CLAMP = "moe_expert_bias", "moe_glu_clamp"
# (bytes read, bytes written) per byte of the GEMM's output the op works on, and FLOPs per element; forward, backward
TERMS = {BIAS: ((3.0, 3.0, 2.0), (4.0, 2.0, 4.0)),
         CLAMP: ((2.0, 2.0, 1.0), (4.5, 3.0, 2.0))}
GEMM_ROLE = {BIAS: "row", CLAMP: "column"}      # fc2's output / fc1's output


def _routed(op: Op, role: str) -> bool:
    return op.module == "experts" and op.attrs.get("role") == role and op.attrs.get("expert") == "routed"


def with_eager_ops(sg: Graph) -> Graph:
    """The per-device graph ``sg`` with the clamp after each routed fc1 forward (before its backward) where the
    experts' GLU is clamped (the builder's ``attrs["clamp"]``) and the bias after each routed fc2 forward (before
    its backward) where the experts carry biases (``attrs["bias"]``); each sized by that GEMM's forward output.
    ``sg`` itself when there is neither."""
    sizes = {(name, op.name): op.bytes_written for op in sg.ops for name, flag in ((BIAS, "bias"), (CLAMP, "clamp"))
             if _routed(op, GEMM_ROLE[name]) and op.attrs.get(flag) and passes.of(op.name) is passes.Pass.FORWARD}
    if not sizes:
        return sg
    out: list[Op] = []
    for op in sg.ops:
        hits = [(name, x) for (name, fwd), x in sizes.items()
                if _routed(op, GEMM_ROLE[name]) and passes.forward_of(op.name) == fwd]
        p = passes.of(op.name)
        extra = [_eager_op(op, name, x, p) for name, x in hits]
        out += extra + [op] if p is passes.Pass.BACKWARD else [op] + extra
    return Graph(sg.name, sg.phase, sg.dtype, out, footprint=dict(sg.footprint), meta=dict(sg.meta),
                 uncounted_ops=dict(sg.uncounted_ops))


def _eager_op(gemm: Op, name: str, x: float, p: passes.Pass) -> Op:
    """The memory-bound op ``name`` beside ``gemm`` in pass ``p``; ``x``: the bytes of the GEMM's forward output."""
    fwd, bwd = TERMS[name]
    reads, writes, flops = bwd if p is passes.Pass.BACKWARD else fwd
    full = {passes.Pass.BACKWARD: passes.backward_of, passes.Pass.RECOMPUTE: passes.recompute_of}.get(p)
    dtype = gemm.dtype if dtype_bytes(gemm.dtype) >= 2.0 else "bf16"     # the GEMM's output, not its operands
    layers = {"per_layer": gemm.attrs["per_layer"]} if "per_layer" in gemm.attrs else {}
    return Op(full(name) if full else name, "elementwise", flops=flops * x / dtype_bytes(dtype),
              bytes={"activations": (reads + writes) * x}, dtype=dtype, count=gemm.count, module="experts",
              shapes=f"{name.removeprefix('moe_').replace('_', ' ')} of the routed rows", bytes_written=writes * x,
              attrs=layers | {"role": "bias" if name == BIAS else "activation", "expert": "routed"})
