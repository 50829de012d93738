"""Reductions, norms, softmax, pooling and embedding gathers: ops whose cost is neither a GEMM nor a plain stream.

(On this kind of CPU ``max_pool2d_with_indices`` ran 18× slower than a bandwidth roofline said.)
FLOPs follow ``ironlaw.core.flopcount``, as the capture counts: sum 1 per input element, softmax 8, layer
norm 7, pooling one compare per window element of each output, a gather none (its bytes: the rows it reads
and writes plus one int64 index per row, as the capture's embedding rule counts them). Max and average
pooling are rows of their own: they calibrate the op classes pool-max and pool-avg (``graph.op_class``).
"""
from __future__ import annotations

from ...core import flopcount as fc
from .timing import Budget, stable

# name -> (kind, shape at scale 1); a case runs at two sizes (the batch dimension × 1 and × 8)
CASES = {
    "sum": ("reduction", (256, 1024)),
    "softmax": ("softmax", (256, 1024)),
    "layer_norm": ("norm", (256, 1024)),
    "max_pool2d": ("pool", (1, 64, 56, 56)),
    "avg_pool2d": ("pool", (1, 64, 56, 56)),
    "embedding": ("embedding", (2048, 256)),        # (lookups, row width) from a table of TABLE_ROWS rows
}
QUICK = ("softmax", "layer_norm", "max_pool2d", "avg_pool2d", "embedding")
TABLE_ROWS = 32768                                   # 32 MiB of fp32 rows of 256: past a 2-vCPU VM's share of L3


def cases(quick: bool) -> list[tuple[str, int]]:
    return [(c, s) for c in (QUICK if quick else CASES) for s in ((8,) if quick else (1, 8))]


def measure(name: str, scale: int, budget: Budget, device: str = "cpu", dtype: str = "fp32") -> dict:
    import torch
    import torch.nn.functional as F
    kind, shape = CASES[name]
    shape = (shape[0] * scale,) + shape[1:]
    x = torch.randn(*shape, device=device)
    n_in = x.numel()
    if name == "sum":
        fn, flops, out_elems = (lambda: x.sum(dim=-1)), 1.0 * n_in, shape[0]
    elif name == "softmax":
        fn, flops, out_elems = (lambda: torch.softmax(x, dim=-1)), fc.SOFTMAX * n_in, n_in
    elif name == "layer_norm":
        w = torch.ones(shape[-1], device=device)
        b = torch.zeros(shape[-1], device=device)
        fn, flops, out_elems = (lambda: F.layer_norm(x, (shape[-1],), w, b)), fc.LAYERNORM * n_in, n_in
    elif name == "embedding":
        table = torch.randn(TABLE_ROWS, shape[1], device=device)
        idx = torch.randint(0, TABLE_ROWS, (shape[0],), device=device)
        st = stable(lambda: F.embedding(idx, table), budget, device)
        n_out = shape[0] * shape[1]
        return {"op": name, "kind": kind, "elems": n_out, "dtype": dtype, "time_s": st.time_s, "cv": st.cv,
                "flops_per_elem": 0.0, "bytes": 2.0 * 4.0 * n_out + 8.0 * shape[0], "_ok": st.ok, "_tries": st.tries}
    else:
        pool = F.max_pool2d if name == "max_pool2d" else F.avg_pool2d
        fn = lambda: pool(x, 3, 2, 1)  # noqa: E731
        out_elems = shape[0] * shape[1] * (shape[2] // 2) * (shape[3] // 2)
        flops = 9.0 * out_elems
    st = stable(fn, budget, device)
    return {"op": name, "kind": kind, "elems": n_in, "dtype": dtype, "time_s": st.time_s, "cv": st.cv,
            "flops_per_elem": flops / n_in, "bytes": 4.0 * (n_in + out_elems), "_ok": st.ok, "_tries": st.tries}
