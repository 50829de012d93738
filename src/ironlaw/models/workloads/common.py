"""Shared pieces of the analytic builders: op constructors and the training expansion.

Conventions every builder follows (so that graphs compose and compare):
- FLOPs are floating-point operations (a multiply-accumulate is 2 FLOPs), never MACs.
- ``Op.bytes`` is traffic per invocation (read + written) split by storage class; ``footprint``
  is resident bytes per class. Values may be numpy arrays over configurations (sweeps).
- Identical layers are one op with ``count`` = number of layers.
- ``meta`` carries: batch, seq (where meaningful), params (int, exact), model_flops (the
  forward FLOPs, ×3 for training), tokens (where meaningful).
- Training = forward ops + backward ops (``backward``) + one optimizer step (``optimizer_step``);
  mixed precision AdamW: weights and gradients in the compute dtype, fp32 master weights and two
  fp32 moments in the optimizer state (12 bytes per parameter).
"""
from __future__ import annotations

from ...core.graph import Num, Op, dtype_bytes
from ...core import passes

OPTIMIZER_BYTES_PER_PARAM = 12.0      # fp32 master copy + Adam m + Adam v
CARRIED_ATTRS = ("per_layer", "expert", "attention", "role", "stage")   # what a backward op keeps of its forward's
#                                                                         attrs
# AdamW per parameter: read master, m, v, grad; write master, m, v and the low-precision weight copy
ADAM_FLOPS_PER_PARAM = 12.0


def linear(name: str, tokens: Num, k: int, n: int, dtype: str, count: int = 1, bias: bool = False,
           module: str = "", weight_dtype: str | None = None, role: str = "") -> Op:
    """y[tokens, n] = x[tokens, k] · W[k, n] (+ b): 2·tokens·k·n FLOPs. ``role``: what the op is to
    parallelism (``ironlaw.models.parallel.SHARDING``), kept in ``attrs["role"]``."""
    b = dtype_bytes(dtype)
    wb = dtype_bytes(weight_dtype or dtype)
    flops = 2.0 * tokens * k * n + (tokens * n if bias else 0.0)
    return Op(name, "matmul", flops=flops,
              bytes={"activations": (tokens * k + tokens * n) * b, "weights": (k * n + (n if bias else 0)) * wb},
              dtype=dtype, count=count, module=module, shapes=f"[{dim(tokens)},{k}]x[{k},{n}]",
              bytes_written=tokens * n * b, attrs={"nk": (n, k)} | ({"role": role} if role else {}))


def elementwise(name: str, elems: Num, dtype: str, flops_per_elem: float = 1.0, inputs: int = 1,
                count: int = 1, kind: str = "elementwise", weight_bytes: Num = 0.0, module: str = "",
                role: str = "") -> Op:
    """An op that reads ``inputs`` tensors of ``elems`` elements and writes one (``role``: as ``linear``'s)."""
    b = dtype_bytes(dtype)
    by = {"activations": (inputs + 1) * elems * b}
    if weight_bytes:
        by["weights"] = weight_bytes
    return Op(name, kind, flops=flops_per_elem * elems, bytes=by, dtype=dtype, count=count, module=module,
              shapes=f"[{dim(elems)}]", bytes_written=elems * b, attrs={"role": role} if role else {})


def backward(fwd: list[Op], grad_dtype: str | None = None) -> list[Op]:
    """Backward ops of ``fwd`` (in reverse order).

    matmul/conv/attention: grad wrt input and grad wrt weight, 2× the forward FLOPs; they read the
    output gradient, the saved input and the weights, and write the input gradient and the weight
    gradient. Other ops: about 2× the forward FLOPs and activation traffic; their weights (norm
    gains, embedding rows) produce gradients of the same size. An op marked ``attrs["graph_input"]`` (a
    first conv or linear that reads the model's input, which needs no gradient) computes only its weight
    gradient: 1× the forward FLOPs, reading the output gradient and the saved input (autograd skips the
    input-gradient product: in a capture of torchvision's ResNet-18 training step the stem conv's backward
    has its forward's FLOPs, every other conv's twice).
    """
    out = []
    for op in reversed(fwd):
        act = op.bytes.get("activations", 0.0)
        w = op.bytes.get("weights", 0.0)
        gscale = (dtype_bytes(grad_dtype) / dtype_bytes(op.dtype)) if grad_dtype else 1.0
        by = {"activations": 2.0 * act}
        if w is not None and (not isinstance(w, float) or w > 0):
            by["weights"] = w
            by["gradients"] = w * gscale
        for cls in ("tables", "kv_cache"):
            if cls in op.bytes:
                by[cls] = op.bytes[cls]
        input_grad = not op.attrs.get("graph_input")
        if not input_grad:
            by["activations"] = act
        out.append(Op(passes.backward_of(op.name), op.kind, flops=(2.0 if input_grad else 1.0) * op.flops, bytes=by,
                      dtype=op.dtype, count=op.count, module=op.module, shapes=op.shapes,
                      bytes_written=act if input_grad else by.get("gradients", 0.0),
                      attrs={k: op.attrs[k] for k in CARRIED_ATTRS if k in op.attrs}))
    return out


def optimizer_step(params: float, dtype: str, trainable_bytes_per_param: float | None = None) -> Op:
    """One fused AdamW step over ``params`` parameters (a streaming, bandwidth-bound op)."""
    b = dtype_bytes(dtype)
    by = {"optimizer": 2.0 * OPTIMIZER_BYTES_PER_PARAM * params,  # read and write master, m, v
          "gradients": b * params, "weights": b * params}          # read grads, write new weights
    return Op("optimizer.adamw", "elementwise", flops=ADAM_FLOPS_PER_PARAM * params, bytes=by, dtype="fp32",
              shapes=f"[{params:.0f}]", bytes_written=(OPTIMIZER_BYTES_PER_PARAM + b) * params)


def training_footprint(params: float, dtype: str, saved_activations: Num) -> dict[str, Num]:
    b = dtype_bytes(dtype)
    return {"weights": b * params, "gradients": b * params, "optimizer": OPTIMIZER_BYTES_PER_PARAM * params,
            "activations": saved_activations}


def dim(x: Num, grouped: bool = False) -> str:
    """A size in an op's ``shapes`` label: a whole number (``grouped``: with thousands commas), "…" for a batch or
    sequence given as an array."""
    try:
        return f"{float(x):,.0f}" if grouped else f"{float(x):.0f}"
    except TypeError:
        return "…"
