"""Megatron-Core's routed experts with biases: the fc2 bias, weighted by each row's routing probability, added
outside the grouped GEMM.

Megatron-Core (core_v0.15.0, Megatron-LM 0d8e0714, pinned by Megatron-Bridge v0.2.0 — NeMo 25.11) builds
``TEGroupedMLP``'s fc2 with ``skip_bias_add=True`` (experts.py ``TEGroupedMLP.__init__``; fc1 keeps its bias in
Transformer Engine's GEMM epilogue) and adds the returned per-expert bias in ``TEGroupedMLP._apply_bias``:

    torch.cat([t + b * p for t, b, p in zip(split(fc2_out, tokens_per_expert), biases,
                                             split(permuted_probs, tokens_per_expert))]).to(fc2_out.dtype)

so that each routed row gets its expert's bias times the row's probability (the combine sums the rows without
the probabilities; they were applied in the activation). Per local expert that is one ``b * p`` kernel writing a
rows × hidden tensor and one add reading two and writing one; the ``cat`` copies every row once more. With the
probabilities in the activations' dtype (``moe_router_dtype`` unset, as in the gpt-oss provider) the ``.to`` is a
no-op. Autograd's backward: the ``cat`` hands back views and the add passes its gradient through, while the
``mul`` computes ``grad · p`` and sums it over the rows (the bias gradient) and ``grad · b`` summed over the
hidden axis (the probabilities' gradient): two rows × hidden products written and read back.

In the law's terms, per MoE layer and micro-batch, with X the bytes of fc2's output on the device (the routed
rows × hidden): forward reads 3·X and writes 3·X, backward reads 4·X and writes 2·X, all memory-bound. The host
issues 2 kernels per local expert and the ``cat`` forward, 4 per local expert backward (``host.BIAS_*``).
Only models whose routed experts carry biases (gpt-oss: ``add_bias_linear``) pay it.
"""
from __future__ import annotations

from ..core import passes
from ..core.graph import Graph, Op, dtype_bytes

NAME = "moe_expert_bias"
# × the bytes of fc2's output (rows × hidden): (read, written, FLOPs per element)
FWD = (3.0, 3.0, 2.0)      # b·p written; t and b·p read, t + b·p written; the cat reads and writes every row
BWD = (4.0, 2.0, 4.0)      # grad·p and grad·b written and read back by their sums; the gradient read twice


def _routed_fc2(op: Op) -> bool:
    return op.module == "experts" and op.attrs.get("role") == "row" and op.attrs.get("expert") == "routed"


def with_bias(sg: Graph) -> Graph:
    """The per-device graph ``sg`` with ``_apply_bias`` after each routed fc2 forward (and recompute) whose experts
    carry biases (the builder's ``attrs["bias"]``) and before its backward (autograd reaches it first), sized by
    that fc2's forward output; ``sg`` itself when no routed fc2 has a bias."""
    written = {op.name: op.bytes_written for op in sg.ops
               if _routed_fc2(op) and op.attrs.get("bias") and passes.of(op.name) is passes.Pass.FORWARD}
    if not written:
        return sg
    out: list[Op] = []
    for op in sg.ops:
        x = written.get(passes.forward_of(op.name)) if _routed_fc2(op) else None
        if x is None:
            out.append(op)
        elif passes.of(op.name) is passes.Pass.BACKWARD:
            out += [_bias_op(op, passes.backward_of(NAME), x, BWD), op]
        else:
            rec = passes.of(op.name) is passes.Pass.RECOMPUTE
            out += [op, _bias_op(op, passes.recompute_of(NAME) if rec else NAME, x, FWD)]
    return Graph(sg.name, sg.phase, sg.dtype, out, footprint=dict(sg.footprint), meta=dict(sg.meta),
                 uncounted_ops=dict(sg.uncounted_ops))


def _bias_op(fc2: Op, name: str, x: float, terms: tuple[float, float, float]) -> Op:
    """The memory-bound op of ``_apply_bias`` beside ``fc2``; ``x``: the bytes of fc2's forward output."""
    reads, writes, flops = terms
    layers = {"per_layer": fc2.attrs["per_layer"]} if "per_layer" in fc2.attrs else {}
    dtype = fc2.dtype if dtype_bytes(fc2.dtype) >= 2.0 else "bf16"     # the GEMM's output, not its operands
    elems = x / dtype_bytes(dtype)
    return Op(name, "elementwise", flops=flops * elems, bytes={"activations": (reads + writes) * x},
              dtype=dtype, count=fc2.count, module="experts", shapes="fc2 bias × probability per routed row",
              bytes_written=writes * x, attrs=layers | {"role": "bias", "expert": "routed"})
