"""What an op is to parallelism: its role (``attrs["role"]``, set by the builders and by capture), its pass and
its sublayer, as the sharding rules, the overlap rules and the expert all-to-alls read them; a micro-batch's
compute by pass.
"""
from __future__ import annotations

from ...core import passes
from ...core.graph import Op


def base_name(name: str) -> str:
    return name.split(".")[0]


is_backward = passes.is_backward_op          # the builders' ``….backward`` or a captured linear's dgrad/wgrad


def role(op: Op) -> str:
    return op.attrs.get("role", "")


def sublayer(op: Op) -> str:
    """The sublayer a linear belongs to: attention or MLP (its experts' included); a captured linear's is the one
    capture tells (``attrs["sublayer"]``: whether its split reaches an attention op)."""
    return op.attrs.get("sublayer") or ("attn" if op.module == "attn" else "mlp")


def compute_s_by_pass(rows: list[dict]) -> tuple[float, float]:
    """(forward, backward) seconds of the non-collective rows of a micro-batch (recomputed ops count as
    forward)."""
    fwd = sum(r["time_s"] for r in rows if r["kind"] != "collective" and not passes.is_backward(r["name"]))
    bwd = sum(r["time_s"] for r in rows if r["kind"] != "collective" and passes.is_backward(r["name"]))
    return fwd, bwd
