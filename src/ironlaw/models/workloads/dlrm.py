"""DLRM (TorchRec architecture), built analytically: embedding tables, bottom/top MLPs, interaction.

Two configurations, both from mlcommons/training ``recommendation_v2/torchrec_dlrm/README.MD``
(commit 3e2f7317, Apache-2.0):
- ``dlrm-dcnv2``: the MLPerf DLRMv2 benchmark — 26 tables (204,184,588 rows, capped at 40M), dim 128,
  multi-hot lookups (214 rows per sample), DCNv2 interaction (3 low-rank cross layers, rank 512).
- ``dlrm-torchrec-1hot``: the TorchRec example whose A100 training rec/s the README reports —
  one-hot lookups, uncapped tables (91.1 GB), pairwise-dot interaction.

Assumptions (stated, not hidden):
- Tables are stored in ``table_dtype`` (default fp32, as in the reference); the MLPs run in the
  request dtype (default bf16 for dlrm-dcnv2). Tables are storage class "tables".
- All 26 lookups are one fused kernel (FBGEMM table-batched embedding, as TorchRec runs them):
  one "embedding" op reading batch × Σ multi-hot × dim × table bytes of rows (512-byte gathers at
  fp32) and summing each bag (sum pooling).
- Rows are touched uniformly (the MLPerf synthetic multi-hot data is drawn uniformly), so lookup
  traffic lands on the tiers in proportion to where the table bytes live; expected distinct rows
  per step = Σ_t R_t·(1 − (1 − 1/R_t)^(batch·hot_t)).
- Training: the tables' optimizer is fused into the embedding backward (FBGEMM TBE) and updates only
  the rows the batch touched. ``table_optimizer``: "adagrad" (default: the MLPerf reference passes
  torch.optim.Adagrad to apply_optimizer_in_backward → FBGEMM EXACT_ADAGRAD, one fp32 accumulator
  per element), "rowwise-adagrad" (one fp32 per row) or "sgd" (no state). The optimizer state is
  stored with the rows (same placement), so it is counted in class "tables". The dense MLPs use
  mixed-precision AdamW (``common.optimizer_step``; the reference runs Adagrad there — a
  difference of ~8 bytes per dense parameter, < 0.2% of a step's traffic).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core import flopcount
from ...core.errors import IronlawError, unknown
from ...core.graph import Graph, Num, Op, dtype_bytes
from .registry import Request, builtin, check_phase
from .common import backward, dim, elementwise, linear, optimizer_step, training_footprint

SOURCE = "mlcommons/training recommendation_v2/torchrec_dlrm/README.MD (commit 3e2f7317), Apache-2.0"
PHASES = ("infer", "train")
INDEX_BYTES = 8.0                      # int64 indices (TorchRec KeyedJaggedTensor default)
TABLE_OPTIMIZERS = {                   # name -> (state bytes per row element, per row; update FLOPs per element)
    "adagrad": (4.0, 0.0, 5.0),
    "rowwise-adagrad": (0.0, 4.0, 4.0),
    "sgd": (0.0, 0.0, 2.0),
}
TABLE_DTYPES = ("fp32", "fp16", "bf16", "int8")


@dataclass(frozen=True)
class DLRMConfig:
    name: str
    rows: tuple[int, ...]              # rows per table (one table per sparse feature)
    hot: tuple[int, ...]               # lookups per sample per table (multi-hot size)
    dim: int
    dense_in: int
    bottom: tuple[int, ...]            # DenseArch layer sizes (ReLU after each)
    top: tuple[int, ...]               # OverArch layer sizes (ReLU after all but the last)
    interaction: str                   # "dcn" | "dot"
    dcn_layers: int = 0
    dcn_rank: int = 0
    dtype: str = "bf16"                # default dtype of the MLPs
    description: str = ""

    @property
    def features(self) -> int:
        return len(self.rows)

    @property
    def over_in(self) -> int:
        f = self.features
        if self.interaction == "dcn":
            return (f + 1) * self.dim
        return self.dim + (f + 1) * f // 2   # dense + upper triangle of (F+1)x(F+1) dot products


DLRM_DCNV2 = DLRMConfig(
    name="dlrm-dcnv2",
    rows=(40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000, 3067956, 405282, 10, 2209, 11938,
          155, 4, 976, 14, 40000000, 40000000, 40000000, 590152, 12973, 108, 36),
    hot=(3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1),
    dim=128, dense_in=13, bottom=(512, 256, 128), top=(1024, 1024, 512, 256, 1),
    interaction="dcn", dcn_layers=3, dcn_rank=512, dtype="bf16",
    description="MLPerf DLRMv2: 26 tables, 204M rows x 128 (fp32, 105 GB), multi-hot, DCNv2 cross layers",
)

DLRM_TORCHREC_1HOT = DLRMConfig(
    name="dlrm-torchrec-1hot",
    rows=(45833188, 36746, 17245, 7413, 20243, 3, 7114, 1441, 62, 29275261, 1572176, 345138, 10, 2209, 11267,
          128, 4, 974, 14, 48937457, 11316796, 40094537, 452104, 12606, 104, 35),
    hot=(1,) * 26, dim=128, dense_in=13, bottom=(512, 256, 128), top=(1024, 1024, 512, 256, 1),
    interaction="dot", dtype="tf32",
    description="TorchRec DLRM example (MLPerf README's measured A100 runs): one-hot, 178M rows (91 GB), dot interaction",
)

CONFIGS = {c.name: c for c in (DLRM_DCNV2, DLRM_TORCHREC_1HOT)}


def dense_params(cfg: DLRMConfig) -> int:
    """Parameters of the MLPs and the cross layers (everything but the tables)."""
    n, fan_in = 0, cfg.dense_in
    for out in cfg.bottom:
        n += fan_in * out + out
        fan_in = out
    if cfg.interaction == "dcn":
        d = cfg.over_in
        n += cfg.dcn_layers * (2 * d * cfg.dcn_rank + d)    # V (d->r), W (r->d), bias (d)
    fan_in = cfg.over_in
    for out in cfg.top:
        n += fan_in * out + out
        fan_in = out
    return n


def table_rows(cfg: DLRMConfig) -> int:
    return sum(cfg.rows)


def distinct_rows(cfg: DLRMConfig, batch: Num) -> Num:
    """Expected rows touched per step when each of batch·hot_t lookups picks a row of table t uniformly."""
    total = 0.0
    for r, h in zip(cfg.rows, cfg.hot):
        n = np.asarray(batch, dtype=float) * h
        miss = np.exp(n * np.log1p(-1.0 / r)) if r > 1 else 0.0
        total = total + r * (1.0 - miss)
    return total if np.ndim(total) else float(total)


def _mlp(name: str, batch: Num, fan_in: int, sizes: tuple[int, ...], dtype: str, relu_last: bool) -> list[Op]:
    ops = []
    for i, out in enumerate(sizes):
        ops.append(linear(f"{name}.{i}.linear", batch, fan_in, out, dtype, bias=True, module=f"{name}.{i}"))
        if relu_last or i < len(sizes) - 1:
            ops.append(elementwise(f"{name}.{i}.relu", batch * out, dtype, module=f"{name}.{i}"))
        fan_in = out
    return ops


def _lookup(cfg: DLRMConfig, batch: Num, table_dtype: str) -> Op:
    tb = dtype_bytes(table_dtype)
    per_sample = sum(cfg.hot)
    out_bytes = batch * cfg.features * cfg.dim * 4.0          # TBE pools in fp32 (output_dtype default)
    return Op(f"embedding_bag x{cfg.features} (fused TBE)", "embedding", flops=batch * per_sample * cfg.dim,
              bytes={"tables": batch * per_sample * cfg.dim * tb,
                     "activations": batch * per_sample * INDEX_BYTES + out_bytes},
              dtype=table_dtype, module="sparse_arch",
              shapes=f"{per_sample} rows/sample x {cfg.dim} x {table_dtype} ({cfg.dim * tb:.0f}-byte gathers)",
              bytes_written=out_bytes)


def _lookup_backward(cfg: DLRMConfig, batch: Num, table_dtype: str, opt: str) -> Op:
    """Embedding backward fused with the table optimizer: read pooled grads, update the touched rows."""
    tb = dtype_bytes(table_dtype)
    per_elem, per_row, flops_per_elem = TABLE_OPTIMIZERS[opt]
    rows = distinct_rows(cfg, batch)
    row_bytes = cfg.dim * tb + cfg.dim * per_elem + per_row
    grads = batch * cfg.features * cfg.dim * 4.0
    return Op(f"embedding_bag.backward+{opt}", "embedding",
              flops=batch * sum(cfg.hot) * cfg.dim + rows * cfg.dim * flops_per_elem,
              bytes={"tables": 2.0 * rows * row_bytes,                    # read and write each touched row
                     "activations": grads + batch * sum(cfg.hot) * INDEX_BYTES},
              dtype=table_dtype, module="sparse_arch", shapes=f"~{dim(rows, grouped=True)} distinct rows updated",
              bytes_written=rows * row_bytes)


def _interaction(cfg: DLRMConfig, batch: Num, dtype: str) -> list[Op]:
    b = dtype_bytes(dtype)
    f1, d = cfg.features + 1, cfg.dim
    cat = Op("interaction.cat", "copy", bytes={"activations": 2.0 * batch * f1 * d * b}, dtype=dtype,
             module="inter_arch", shapes=f"[{dim(batch, grouped=True)},{f1},{d}]", bytes_written=batch * f1 * d * b)
    if cfg.interaction == "dot":
        tri = f1 * (f1 - 1) // 2
        bmm = Op("interaction.bmm", "matmul", flops=2.0 * batch * f1 * f1 * d,
                 bytes={"activations": batch * (2 * f1 * d + f1 * f1) * b}, dtype=dtype, module="inter_arch",
                 shapes=f"[{dim(batch, grouped=True)},{f1},{d}]x[{d},{f1}]", bytes_written=batch * f1 * f1 * b)
        flat = Op("interaction.triu_cat", "copy", bytes={"activations": 2.0 * batch * (tri + d) * b}, dtype=dtype,
                  module="inter_arch", shapes=f"[{dim(batch, grouped=True)},{tri + d}]",
                  bytes_written=batch * (tri + d) * b)
        return [cat, bmm, flat]
    n, r, L = cfg.over_in, cfg.dcn_rank, cfg.dcn_layers
    return [cat,
            linear("crossnet.V", batch, n, r, dtype, count=L, module="crossnet"),
            linear("crossnet.W", batch, r, n, dtype, count=L, module="crossnet"),
            # x_{l+1} = x_0 * (W V x_l + b) + x_l: reads x_0, W V x_l, x_l
            elementwise("crossnet.cross", batch * n, dtype, flops_per_elem=3.0, inputs=3, count=L,
                        weight_bytes=n * b, module="crossnet")]


def build(cfg: DLRMConfig, req: Request) -> Graph:
    name = cfg.name
    if req.seq is not None:
        raise IronlawError(f"{name}: --seq does not apply to DLRM (a sample is one row of 13 dense and "
                           f"{cfg.features} sparse features); drop it")
    phase = check_phase(req, PHASES, "infer", name)
    dtype = req.dtype or cfg.dtype
    table_dtype = req.options.get("table_dtype", "fp32")
    if table_dtype not in TABLE_DTYPES:
        raise unknown(f"table_dtype of {name}", str(table_dtype), TABLE_DTYPES)
    opt = req.options.get("table_optimizer", "adagrad")
    if opt not in TABLE_OPTIMIZERS:
        raise unknown(f"table_optimizer of {name}", str(opt), TABLE_OPTIMIZERS)
    if phase == "train" and table_dtype == "int8":
        raise IronlawError(f"{name}: int8 tables are for inference; train with table_dtype fp32, fp16 or bf16")
    B, b, tb = req.batch, dtype_bytes(dtype), dtype_bytes(table_dtype)

    lookup = _lookup(cfg, B, table_dtype)
    bottom = _mlp("dense_arch", B, cfg.dense_in, cfg.bottom, dtype, relu_last=True)
    bottom[0].attrs["graph_input"] = True            # the dense features need no gradient
    dense = (bottom
             + _interaction(cfg, B, dtype)
             + _mlp("over_arch", B, cfg.over_in, cfg.top, dtype, relu_last=False)
             + [elementwise("sigmoid" if phase == "infer" else "bce_with_logits", B * cfg.top[-1], dtype,
                            flopcount.SIGMOID if phase == "infer" else flopcount.BCE_WITH_LOGITS, module="loss")])
    n_dense, n_rows = dense_params(cfg), table_rows(cfg)
    table_bytes = n_rows * cfg.dim * tb
    fwd_flops = sum((op.flops * op.count for op in [lookup] + dense), 0.0)
    meta = {"batch": B, "params": int(n_dense + n_rows * cfg.dim), "dense_params": int(n_dense),
            "table_params": int(n_rows * cfg.dim), "table_rows": int(n_rows), "table_bytes": table_bytes,
            "table_dtype": table_dtype, "lookups_per_sample": int(sum(cfg.hot)), "interaction": cfg.interaction}
    live = [op.bytes.get("activations", 0.0) for op in [lookup] + dense]
    if phase == "infer":
        ops = [lookup] + dense
        footprint = {"weights": n_dense * b, "tables": table_bytes, "activations": _max(live)}
        meta["model_flops"] = fwd_flops
    else:
        per_elem, per_row, _ = TABLE_OPTIMIZERS[opt]
        state = n_rows * (cfg.dim * per_elem + per_row)
        ops = [lookup] + dense + backward(dense) + [_lookup_backward(cfg, B, table_dtype, opt),
                                                    optimizer_step(n_dense, dtype)]
        saved = sum((op.bytes_written * op.count for op in [lookup] + dense), 0.0)
        footprint = training_footprint(n_dense, dtype, saved)
        footprint["tables"] = table_bytes + state
        meta.update(model_flops=3.0 * fwd_flops, table_optimizer=opt, table_optimizer_bytes=state,
                    distinct_rows_per_step=distinct_rows(cfg, B))
    return Graph(name, phase, dtype, ops, footprint=footprint, meta=meta)


def _max(values: list) -> Num:
    out = values[0]
    for v in values[1:]:
        out = np.maximum(out, v)
    return out



def _register(cfg: DLRMConfig) -> None:
    @builtin(cfg.name, cfg.description + " (options: table_dtype, table_optimizer)", PHASES, "recsys",
             options=("table_dtype", "table_optimizer"))
    def _build(req: Request, cfg=cfg) -> Graph:
        return build(cfg, req)


for _c in CONFIGS.values():
    _register(_c)
